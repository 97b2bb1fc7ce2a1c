//! Failures: what a strand that panicked, or broke a rule of the strand
//! tree, leaves behind for whoever joins it (a failure in a child is
//! raised again in the parent that joins it).
//!
//! A panic never takes its core down. On the host the strand's entry
//! catches the unwind; on bare metal (`panic = "abort"`, no unwinding) the
//! kernel's panic handler calls [`fail_running`], which records the
//! failure and abandons the strand's stack. Either way the message and the
//! place of the panic are kept, and the strand finishes *failed*.

use super::StrandId;
use super::control::Header;
use crate::pool::shared::Shared;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use core::fmt;

/// Why a strand failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// Its code panicked.
    Panicked,
    /// It returned from a scope (or its body) while strands it anchored
    /// there were still alive. They were cancelled and waited for.
    ReturnWithLiveStrands {
        /// How many were alive when it returned.
        live: usize,
    },
    /// Its pool deadlocked: every core asleep, no deadline armed, and
    /// these strands waiting on each other. [`Failure::deadlock`] has the
    /// report.
    Deadlock {
        /// How many strands were waiting.
        waiting: usize,
    },
    /// It was cancelled while it computed, in a pool with a time slice,
    /// and neither blocked nor reached a
    /// [`checkpoint`](super::checkpoint) within a slice: it was stopped
    /// at a preemption point and its stack abandoned (`docs/preemption.md`).
    /// The cancel's intended effect, so it is never passed up.
    Interrupted,
}

/// Where a panic happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// Source file.
    pub file: String,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

impl From<&core::panic::Location<'_>> for Location {
    fn from(location: &core::panic::Location<'_>) -> Self {
        Self { file: String::from(location.file()), line: location.line(), column: location.column() }
    }
}

/// A strand's failure: what happened, where, and in which strand.
///
/// It reaches whoever joins the strand as
/// [`JoinError::Failed`](super::JoinError::Failed). A failure nobody joins
/// goes up the strand tree, cancelling each strand it passes, to the root
/// of the pool, whose [`run`](crate::Pool::run) returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    kind: FailureKind,
    message: String,
    location: Option<Location>,
    strand: Option<StrandId>,
    others: usize,
    deadlock: Option<Box<crate::pool::Deadlock>>,
    origin: Origin,
}

/// The pool a strand failed in, kept with a failure that waits in the
/// strand's handle: a handle dropped in another domain returns the failure
/// there. Not part of what a failure *is*: every two origins compare equal.
#[derive(Clone, Default)]
struct Origin(Option<Weak<Shared>>);

impl PartialEq for Origin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Origin {}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Origin")
    }
}

impl Failure {
    pub(crate) fn new(
        kind: FailureKind,
        message: String,
        location: Option<Location>,
        strand: Option<StrandId>,
    ) -> Self {
        Self { kind, message, location, strand, others: 0, deadlock: None, origin: Origin::default() }
    }

    /// The failure of a pool whose strands deadlocked, with the report.
    #[cfg(not(loom))]
    pub(crate) fn deadlocked(report: crate::pool::Deadlock) -> Self {
        let kind = FailureKind::Deadlock { waiting: report.waiting.len() };
        let message = alloc::format!("{report}");
        Self { deadlock: Some(Box::new(report)), ..Self::new(kind, message, None, None) }
    }

    /// For [`FailureKind::Deadlock`]: who waited on what.
    pub fn deadlock(&self) -> Option<&crate::pool::Deadlock> {
        self.deadlock.as_deref()
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// The panic message, or a description of the broken rule.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Where the panic happened, when that is known.
    pub fn location(&self) -> Option<&Location> {
        self.location.as_ref()
    }

    /// The strand that failed first, if it was a strand.
    pub fn strand(&self) -> Option<StrandId> {
        self.strand
    }

    /// How many further failures arrived at the same place before this one
    /// was handled; only the first is kept whole.
    pub fn others(&self) -> usize {
        self.others
    }

    /// Remembers the pool the strand failed in (`Origin`).
    pub(crate) fn set_origin(&mut self, pool: Weak<Shared>) {
        self.origin = Origin(Some(pool));
    }

    /// The pool the strand failed in, if it is still there.
    pub(crate) fn origin(&mut self) -> Option<Arc<Shared>> {
        self.origin.0.take().and_then(|pool| pool.upgrade())
    }

    /// Counts one more failure that met this one on its way up.
    pub(crate) fn absorb(&mut self, other: &Failure) {
        self.others += 1 + other.others;
    }

    /// Counts `more` failures that are not kept as [`Failure`]s (a task's
    /// panic on the host, a job settled without its type) behind this one.
    pub(crate) fn count_others(&mut self, more: usize) {
        self.others += more;
    }

    /// Keeps `failure` in `slot`: whole if the slot is empty, else counted
    /// by the failure already there.
    pub(crate) fn keep(slot: &mut Option<Box<Failure>>, failure: Box<Failure>) {
        match slot {
            Some(first) => first.absorb(&failure),
            None => *slot = Some(failure),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.strand, self.kind) {
            (_, FailureKind::Deadlock { .. }) => f.write_str("the pool")?,
            (Some(strand), _) => write!(f, "strand {strand}")?,
            (None, _) => f.write_str("a task")?,
        }
        match self.kind {
            FailureKind::Panicked => f.write_str(" panicked")?,
            FailureKind::ReturnWithLiveStrands { live } => {
                write!(f, " returned with {live} live strand(s), which were cancelled")?
            }
            FailureKind::Deadlock { .. } => f.write_str(" deadlocked")?,
            FailureKind::Interrupted => f.write_str(" was cancelled while computing and stopped")?,
        }
        if let Some(location) = &self.location {
            write!(f, " at {location}")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if self.others > 0 {
            write!(f, " (and {} more failure(s))", self.others)?;
        }
        Ok(())
    }
}

impl core::error::Error for Failure {}

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
    use core::sync::atomic::Ordering::SeqCst;
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
pub fn fail_running(info: &core::panic::PanicInfo<'_>) {
    let Some(me) = super::scheduler::current() else { return };
    // SAFETY: the running strand's own header.
    let header = unsafe { me.as_ref() };
    let failure = Box::new(Failure::new(
        FailureKind::Panicked,
        alloc::format!("{}", info.message()),
        info.location().map(Location::from),
        Some(header.id),
    ));
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
    if header.flags.fetch_or(FINISHING, core::sync::atomic::Ordering::SeqCst) & FINISHING != 0 {
        return failure;
    }
    let mut failure = failure;
    // SAFETY: the running strand, failing; its stack is still here.
    let others = unsafe { crate::join::abandon(me, &failure) };
    failure.count_others(others);
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
    use core::sync::atomic::Ordering::Relaxed;
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
                if crate::strand::scheduler::current().is_some() || crate::pool::Pool::current().is_some() {
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
        1 + payload.downcast_ref::<Raised>().map_or(0, |raised| raised.0.others)
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
                failure.others += pending;
                return failure;
            }
            Err(payload) => payload,
        };
        // SAFETY: the running strand's header.
        let strand = unsafe { header.as_ref() }.id;
        let mut failure = panicked(&*payload, Some(strand));
        failure.others = pending;
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
