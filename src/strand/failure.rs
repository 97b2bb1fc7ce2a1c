//! Failures: what a strand that panicked, or broke a rule of the strand
//! tree, leaves behind for whoever joins it (a failure in a child is
//! raised again in the parent that joins it).
//!
//! A panic never takes its core down. On the host the strand's entry
//! catches the unwind; on bare metal (`panic = "abort"`, no unwinding) the
//! kernel's panic handler calls [`fail_running`], which records the
//! failure and abandons the strand's stack. Either way the message and the
//! place of the panic are kept, and the strand finishes *failed*.

use super::control::Header;
use super::id::StrandId;
pub use crate::pool::failure::{Failure, FailureKind, Location};
use alloc::boxed::Box;
use alloc::string::String;

/// The failure of a strand that returned from a frame with `live` strands
/// still anchored there.
pub(crate) fn live_strands(strand: Option<StrandId>, live: usize) -> Box<Failure> {
    Box::new(Failure::new(
        FailureKind::ReturnWithLiveStrands { live },
        String::from("returned while strands it spawned were still running"),
        None,
        strand,
    ))
}

/// Stops the running strand `me`, cancelled while computing, at a
/// preemption point: fails it with [`FailureKind::Interrupted`] and
/// abandons its stack. Returns only if it was already finishing (then it
/// goes on finishing).
pub(crate) fn interrupt_running(me: core::ptr::NonNull<Header>) {
    use super::control::flags::{CUT_SHORT, FINISHING};
    use crate::atomics::unmodelled::Ordering::SeqCst;
    // SAFETY: the running strand's own header.
    let header = unsafe { me.as_ref() };
    // Only the strand itself marks itself finishing, so this cannot change
    // before `abandon` looks again.
    if header.flags.load(SeqCst) & FINISHING != 0 {
        return;
    }
    let failure = Box::new(Failure::new(
        FailureKind::Interrupted,
        String::from(
            "cancelled while computing; it neither blocked nor reached a checkpoint within a time slice",
        ),
        None,
        Some(header.id),
    ));
    header.flags.fetch_or(CUT_SHORT, SeqCst);
    drop(abandon(me, failure));
}

/// Fails the running strand from a panic handler: records the failure and
/// finishes the strand without returning (its stack is abandoned: values on
/// it are not dropped, and mutexes it held are poisoned and released).
/// Returns only if the caller is not a strand, or is one that already
/// failed while finishing; the panic is then the caller's to handle.
///
/// This is what a bare-metal `#[panic_handler]` calls first, so that a
/// panic stops one strand, not its core.
///
/// Making the failure allocates nothing that could panic: a panic because
/// the heap is full fails its strand too (`crate::pool::failure_reserve`).
pub fn fail_running(info: &core::panic::PanicInfo<'_>) {
    let Some(me) = super::scheduler::current() else { return };
    // SAFETY: the running strand's own header.
    let header = unsafe { me.as_ref() };
    #[cfg(not(feature = "std"))]
    let (kind, location) = crate::pool::contain::panic_kind(info.location());
    #[cfg(feature = "std")]
    let (kind, location) = (FailureKind::Panicked, info.location());
    let Some(failure) = crate::pool::failure_reserve::panic_failure(
        kind,
        format_args!("{}", info.message()),
        location,
        Some(header.id),
    ) else {
        return;
    };
    drop(abandon(me, failure));
}

/// Fails the running strand `me` with `failure` and finishes it on the
/// spot, abandoning its stack. Returns (with the failure) only if `me` was
/// already finishing: a failure while it ends its frames cannot be
/// contained.
fn abandon(me: core::ptr::NonNull<Header>, failure: Box<Failure>) -> Box<Failure> {
    use super::control::flags::FINISHING;
    // SAFETY: the running strand's own header.
    let header = unsafe { me.as_ref() };
    if header.flags.fetch_or(FINISHING, crate::atomics::unmodelled::Ordering::SeqCst) & FINISHING != 0 {
        return failure;
    }
    let mut failure = failure;
    // Its fork-join jobs are settled before its stack goes; the jobs live
    // on that stack, which is still here.
    // SAFETY: the running strand's own join stack, read in one statement.
    let was_joining = !unsafe { &*header.fibre.joins.get() }.is_empty();
    let pool = super::scheduler::here().map(|(pool, _)| pool);
    // SAFETY: the running strand's own join stack, and its stack is still
    // here (the caller abandons it only after this).
    let others = unsafe { crate::pool::fork_join::abandon_jobs(header.fibre.joins.get(), pool, &failure) };
    if was_joining {
        // The jobs no longer borrow its stack (`Header::lent`).
        header.lent.fetch_sub(1, crate::atomics::unmodelled::Ordering::SeqCst);
    }
    failure.count_others(others);
    // What is pinned on the stack keeps its memory (`fibre.rs`, Quarantine).
    if header.fibre.pool().quarantines_stopped_stacks() {
        header.fibre.quarantine();
    }
    // SAFETY: the running strand's payload; its closure was moved onto the
    // stack being abandoned.
    unsafe { Header::fail(me, failure) };
    super::scheduler::finish(me);
}

/// Fails the running strand with `failure`, unchanged: how a strand
/// passes on a failure it got from a join (it is raised again in the
/// parent). Its joiner gets `failure` itself, with the
/// original message, place and strand. Outside strands, panics with it.
pub fn raise(failure: Failure) -> ! {
    #[cfg(feature = "std")]
    if super::scheduler::current().is_some() {
        std::panic::resume_unwind(Box::new(host::Raised(failure)));
    }
    #[cfg(not(feature = "std"))]
    if let Some(me) = super::scheduler::current() {
        let failure = abandon(me, Box::new(failure));
        panic!("{failure}")
    }
    panic!("{failure}")
}

#[cfg(feature = "std")]
pub(crate) use host::{failures_in, from_task_unwind, from_unwind, install_hook, resume_counting};

#[cfg(feature = "std")]
mod host {
    use super::*;
    use crate::atomics::unmodelled::Ordering::Relaxed;
    use std::cell::RefCell;

    std::thread_local! {
        /// The place and message of the last panic on this thread inside a
        /// strand, left by the hook for the strand's entry to pick up.
        static LAST: RefCell<Option<(Option<Location>, String)>> = const { RefCell::new(None) };
    }

    /// Chains a panic hook that notes where a strand panicked (the unwind
    /// payload carries only the message). The previous hook still runs.
    pub(crate) fn install_hook() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                // In a strand, or in an async task's poll on a core.
                if crate::strand::scheduler::current().is_some()
                    || crate::pool::handle::Pool::current().is_some()
                {
                    let message = info.payload_as_str().map(String::from).unwrap_or_default();
                    LAST.with(|last| {
                        *last.borrow_mut() = Some((info.location().map(Location::from), message))
                    });
                }
                previous(info);
            }));
        });
    }

    /// The unwind payload of [`raise`]: a failure passed on unchanged.
    pub(super) struct Raised(pub(super) Failure);

    /// How many failures an unwind payload stands for: one, plus those a
    /// raised failure had absorbed.
    pub(crate) fn failures_in(payload: &(dyn core::any::Any + Send)) -> usize {
        1 + payload.downcast_ref::<Raised>().map_or(0, |raised| raised.0.others())
    }

    /// Goes on unwinding with `payload` unchanged, counting `others` more
    /// failures that met it (the other half of a `join`): in a strand, the
    /// count goes into the failure the strand ends with. (If the strand
    /// catches the unwind and fails later, that failure carries the count.)
    pub(crate) fn resume_counting(
        strand: Option<core::ptr::NonNull<Header>>,
        payload: Box<dyn core::any::Any + Send>,
        others: usize,
    ) -> ! {
        if let Some(strand) = strand {
            // SAFETY: the running strand's header.
            let pending = &unsafe { strand.as_ref() }.unwinding_others;
            let more = u8::try_from(others).unwrap_or(u8::MAX);
            let _ = pending.fetch_update(Relaxed, Relaxed, |count| Some(count.saturating_add(more)));
        }
        std::panic::resume_unwind(payload)
    }

    /// The failure of a strand whose closure unwound with `payload`.
    pub(crate) fn from_unwind(
        header: core::ptr::NonNull<Header>,
        payload: Box<dyn core::any::Any + Send>,
    ) -> Box<Failure> {
        // SAFETY: the running strand's header.
        let pending = usize::from(unsafe { header.as_ref() }.unwinding_others.swap(0, Relaxed));
        let payload = match payload.downcast::<Raised>() {
            Ok(raised) => {
                let mut failure = Box::new(raised.0);
                failure.count_others(pending);
                return failure;
            }
            Err(payload) => payload,
        };
        // SAFETY: the running strand's header.
        let strand = unsafe { header.as_ref() }.id;
        let mut failure = panicked(&*payload, Some(strand));
        failure.count_others(pending);
        failure
    }

    /// The failure of an async task whose poll unwound with `payload`.
    pub(crate) fn from_task_unwind(payload: Box<dyn core::any::Any + Send>) -> Box<Failure> {
        match payload.downcast::<Raised>() {
            Ok(raised) => Box::new(raised.0),
            Err(payload) => panicked(&*payload, None),
        }
    }

    /// A panic's failure: its message, and where the hook saw it happen.
    fn panicked(payload: &(dyn core::any::Any + Send), strand: Option<StrandId>) -> Box<Failure> {
        let noted = LAST.with(|last| last.borrow_mut().take());
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| String::from(*s))
            .or_else(|| payload.downcast_ref::<String>().cloned());
        let (location, noted_message) = noted.unwrap_or_default();
        Box::new(Failure::new(FailureKind::Panicked, message.unwrap_or(noted_message), location, strand))
    }
}

/// Fails strand `me`, which runs on core `core` of its pool, on its
/// behalf: the core stopped answering and was taken out of the pool
/// (`crate::pool`'s `take_out`), so the strand never runs again. Its
/// joiner gets [`FailureKind::CoreSilent`], mutexes it held are poisoned
/// and released as for a failed strand, and it leaves the tree, so the
/// frame it was spawned in can end. Its stack, its fibre and its control
/// block stay as they are: the silent core may still be running on them.
/// Returns `false`, doing nothing, if the strand was already finishing.
///
/// # Safety
///
/// `me` is the strand core `core` was running when it was taken out,
/// and that core touches none of the strand's state again (it parks at
/// its next interrupt or call into the pool's queues).
pub(crate) unsafe fn lose(me: core::ptr::NonNull<Header>, core: usize) -> bool {
    use super::control::flags::FINISHING;
    use crate::atomics::unmodelled::Ordering::SeqCst;
    // SAFETY: the strand's header, live while it is not released, which
    // only its core's loop does once it has finished (it never will).
    let header = unsafe { me.as_ref() };
    if header.flags.fetch_or(FINISHING, SeqCst) & FINISHING != 0 {
        return false;
    }
    let failure = Box::new(Failure::new(
        FailureKind::CoreSilent { core },
        String::from("its core kept interrupts masked past the pool's bound and was taken out of the pool"),
        None,
        Some(header.id),
    ));
    // SAFETY: the strand will not touch its lock list or its payload again
    // (contract), so we stand in for it as it finishes.
    unsafe {
        super::lock::release_held(me, true);
        Header::fail(me, failure);
    }
    super::scheduler::publish_end(me);
    true
}
