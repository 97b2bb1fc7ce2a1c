//! Strands: the threads of execution user code sees.
//!
//! A strand runs a closure on a *fibre*, one of the statically allocated
//! stacks of [`fibre`]. When it blocks (on a [`sync`](crate::sync)
//! primitive, in [`sleep`], or joining another strand) it switches back to
//! its core's scheduler and the core runs other work; when it is woken, its
//! fibre is sent to the core that last ran it, through that core's mailbox,
//! and an idle core may take it from there.
//!
//! When every fibre is held, a new strand shares a fibre with others
//! (the fibre is *overloaded*): only one of them is resident at a time,
//! and switching between them copies the used part of their stacks in and
//! out. A strand costs its control block (at most
//! [`STRAND_BYTES`](sizes::STRAND_BYTES)) plus, while it is not resident,
//! the stack it really uses.
//!
//! ```
//! use roving::{Pool, platform::host::Machine, strand};
//!
//! Machine::new(2).unwrap().run(|| {
//!     let pool = Pool::new().unwrap();
//!     let sum = pool.run(|| {
//!         let children: Vec<_> = (0..10u64).map(|i| strand::spawn(move || i * i).unwrap()).collect();
//!         children.into_iter().map(|child| child.join().unwrap()).sum::<u64>()
//!     });
//!     assert_eq!(sum.unwrap(), 285);
//! }).unwrap();
//! ```
//!
//! # What to know
//!
//! - `Pool::run`'s `main` is itself a strand (the root), pinned to the
//!   core `run` was called on, so it may block.
//! - Blocking calls return [`WaitError::NotAStrand`] from plain tasks and
//!   from outside the pool; the `try_` forms work anywhere.
//! - Nothing may keep a pointer into another strand's stack while that
//!   strand is blocked: its stack may be copied away. Safe Rust cannot
//!   (blocked strands' locals are not shared without `'static` bounds);
//!   unsafe code must not.
//! - Strands form a tree. A strand spawned by a strand is its
//!   child, anchored to its body or to a [`scope`]; a frame cannot end
//!   while strands anchored to it live: they are cancelled and waited for,
//!   and returning normally with any alive is a
//!   [`FailureKind::ReturnWithLiveStrands`] failure. Strands spawned from
//!   plain tasks or from outside the pool have no parent.
//! - [`JoinHandle::cancel`] cancels a strand and its subtree: their
//!   blocking calls return [`WaitError::Interrupted`]; a [`Shield`] holds
//!   that off for cleanup. A cancel reaches a strand only where it would
//!   wait: at a call that blocks, and at [`checkpoint`]. A call that can
//!   finish at once still does in a cancelled strand (a buffered value is
//!   received, a banked permit taken, a finished strand joined), so a
//!   join or a receive that races a cancel may succeed; a strand that
//!   must stop looks at [`cancelled`]. A strand that only computes is
//!   stopped only in a pool with a time slice
//!   ([`Config::time_slice`](crate::Config::time_slice)).
//! - A panic fails its strand, never its core. [`JoinHandle::join`] gives
//!   the [`Failure`] (message, place, strand); [`raise`] passes it on
//!   unchanged. A failure nobody joins goes up the tree, cancelling as it
//!   goes, and a root's failure stops its pool: [`Pool::run`](crate::Pool::run)
//!   returns it. On the host the process's panic hook still runs first,
//!   as it does for a panic in a tokio task or a rayon job: by default it
//!   prints the message (and a backtrace, with `RUST_BACKTRACE`) even when
//!   a join later handles the failure. A program that expects strands to
//!   fail and handles them replaces the hook (`std::panic::set_hook`).
//! - A strand that overflows its stack hits the guard gap below it: a
//!   fault on bare metal with the MMU on (the report names the strand), a
//!   panic naming the strand when it next switches out otherwise.

pub(crate) mod cancel;
pub(crate) mod control;
pub(crate) mod deferral;
mod error;
pub(crate) mod failure;
pub mod fibre;
mod hand_off;
pub(crate) mod id;
pub(crate) mod lock;
pub(crate) mod park;
pub(crate) mod pool_ops;
mod priority;
mod report;
mod save;
pub(crate) mod scheduler;
mod scope;
pub mod sizes;
pub(crate) mod tree;
pub(crate) mod wait;

pub use cancel::{Shield, cancelled, checkpoint, shield};
pub use deferral::{PreemptionHold, hold_preemption};
pub use error::{CancelError, JoinError, SpawnError, WaitError};
pub use failure::{Failure, FailureKind, Location, fail_running, raise};
#[cfg(feature = "std")]
pub(crate) use failure::{failures_in, from_task_unwind, install_hook, resume_counting};
pub use fibre::release_quarantined as release_quarantined_fibres;
pub use id::{BlockReason, Priority, StrandId};
pub use park::{Unparker, park, park_timeout, unparker};
pub use priority::{priority, set_priority};
pub use report::StrandReport;
pub(crate) use report::reports;
pub use scope::{Scope, ScopeError, ScopedJoinHandle, scope};

use crate::atomics::unmodelled::Ordering::*;
use crate::platform::instant::Instant;
use crate::pool::domain_id::DomainId;
use crate::pool::seam::PoolRef;
use alloc::alloc::{Layout, alloc, dealloc};
use control::{ControlBlock, FINISHED, Header, Payload, Taken, flags};
use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr::{self, NonNull};
use core::time::Duration;
use wait::WaitEnd;

/// Spawns `f` as a strand of the pool the calling core works for. Spawned
/// by a strand, it is that strand's child (see the module docs on the
/// tree); [`JoinHandle::join`] waits for its value.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand};
///
/// Machine::new(2).unwrap().run(|| {
///     let answer = Pool::new().unwrap().run(|| {
///         let children: Vec<_> = (0..4u64).map(|i| strand::spawn(move || i * 10).unwrap()).collect();
///         children.into_iter().map(|child| child.join().unwrap()).sum::<u64>()
///     });
///     assert_eq!(answer.unwrap(), 60);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// [`SpawnError::NotInPool`] outside a running pool's cores; otherwise as
/// for [`Pool::spawn_strand`](crate::Pool::spawn_strand).
pub fn spawn<F, T>(f: F) -> Result<JoinHandle<T>, SpawnError<F>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // The core found here must stay ours until the strand is queued on it.
    let _deferral = deferral::defer();
    // SAFETY: we hold a deferral.
    match unsafe { scheduler::here_deferring() } {
        Some((shared, me)) => {
            // SAFETY: `me` is our core, which stays ours while we defer.
            unsafe { spawn_from(shared, Some(me), f, Placement::default()) }.map(|raw| JoinHandle { raw })
        }
        None => Err(SpawnError::NotInPool(f)),
    }
}

/// Where a new strand goes in the tree, and how it is placed.
#[derive(Clone, Copy, Default)]
pub(crate) struct Placement {
    /// Keep it on this core, on a fibre of its own.
    pub(crate) pin: Option<usize>,
    /// A pool's root strand: no parent, and its failure stops the pool.
    pub(crate) root: bool,
    /// Anchor it to this frame of this strand (a scope), rather than to
    /// the body of the strand that spawns it.
    pub(crate) scope: Option<(NonNull<Header>, *const tree::Anchor)>,
}

/// Spawns `f` on `shared`'s fibres, as `placement` says.
pub(crate) fn spawn_in<F, T>(
    shared: PoolRef<'_>,
    f: F,
    placement: Placement,
) -> Result<RawHandle<T>, SpawnError<F>>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    // The core found here must stay ours until the strand is queued on it.
    let _deferral = deferral::defer();
    // SAFETY: we hold a deferral.
    let me =
        unsafe { scheduler::here_deferring() }.filter(|(pool, _)| pool.same(shared)).map(|(_, core)| core);
    // SAFETY: `me` is our core in `shared`, if any, and stays so while we
    // defer.
    unsafe { spawn_from(shared, me, f, placement) }
}

/// [`spawn_in`] from core `me` of `shared`, or from outside it (`None`).
///
/// # Safety
///
/// `me` is right and stays right: the caller holds a deferral, or runs no
/// strand.
unsafe fn spawn_from<F, T>(
    shared: PoolRef<'_>,
    me: Option<usize>,
    f: F,
    placement: Placement,
) -> Result<RawHandle<T>, SpawnError<F>>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    crate::platform::refuse_in_handler("spawning a strand", crate::platform::HANDLERS_DO_NOT_ALLOCATE);
    #[cfg(feature = "std")]
    failure::install_hook();
    if shared.refuses_work() || shared.closing() {
        return Err(SpawnError::Stopped(f));
    }
    if !placement.root && !shared.domain().is_current() {
        return Err(SpawnError::OtherDomain(f));
    }
    if let Some(core) = placement.pin
        && !shared.is_member(core)
    {
        return Err(SpawnError::NotAMember { core, closure: f });
    }
    let layout = Layout::new::<ControlBlock<F, T>>();
    if layout.size() > sizes::STRAND_BYTES {
        return Err(SpawnError::TooLarge { bytes: layout.size(), capacity: sizes::STRAND_BYTES, closure: f });
    }
    let (parent, anchor) = match placement.scope {
        Some((owner, anchor)) => (Some(owner), anchor),
        None if placement.root => (None, ptr::null()),
        None => (scheduler::current(), ptr::null()),
    };
    // SAFETY: the layout is non-zero (it holds a header).
    let Some(memory) = NonNull::new(unsafe { alloc(layout) }.cast::<ControlBlock<F, T>>()) else {
        return Err(SpawnError::OutOfMemory(f));
    };
    let pin = placement.pin;
    let avoid = |fibre: &fibre::Fibre| held_by_ancestor(parent, fibre);
    let share: Option<&dyn Fn(&fibre::Fibre) -> bool> = if pin.is_none() { Some(&avoid) } else { None };
    let Some(acquired) = fibre::acquire(shared, share) else {
        // SAFETY: allocated above with this layout, never written.
        unsafe { dealloc(memory.as_ptr().cast(), layout) };
        return Err(SpawnError::NoFibre(f));
    };
    let fibre = acquired.fibre();
    // SAFETY: the parent (the running strand, or a scope's owner, which
    // waits for the scope) is live and adopts the strand below.
    let node = unsafe { tree::Node::new(parent, anchor) };
    let flags = if placement.root { control::flags::ROOT } else { 0 };
    // SAFETY: fresh memory for a block.
    unsafe { memory.write(ControlBlock::new(f, fibre, StrandId::next(), node, flags)) };
    let header = memory.cast::<Header>();
    let argument = header.as_ptr() as usize;
    match acquired {
        fibre::Acquired::Fresh(claimed) => {
            // SAFETY: we claimed the fibre and have not published it, so its
            // stack and state are ours.
            unsafe {
                *header.as_ref().context.get() =
                    crate::context::Context::new(fibre.stack_top(), scheduler::strand_entry, argument);
                fibre.owned().resident = header.as_ptr();
            }
            let first_core = pin.or(me).unwrap_or(0);
            claimed.publish(pin.is_some(), first_core);
        }
        fibre::Acquired::Overloaded(_) => {
            // SAFETY: the block is ours until published.
            let saved = unsafe { &mut *header.as_ref().saved.get() };
            match saved.first_frame(fibre.stack_top(), scheduler::strand_entry, argument) {
                // SAFETY: as above.
                Some(context) => unsafe { *header.as_ref().context.get() = context },
                None => {
                    fibre.strand_left();
                    // SAFETY: the block was never published; take the closure
                    // back and free the memory without running anything else.
                    let f = unsafe {
                        let Payload::Closure(f) = ptr::read((*memory.as_ptr()).payload.get()) else {
                            unreachable!()
                        };
                        ptr::drop_in_place(&raw mut (*memory.as_ptr()).header);
                        dealloc(memory.as_ptr().cast(), layout);
                        f
                    };
                    return Err(SpawnError::OutOfMemory(f));
                }
            }
        }
    }
    crate::chaos::point();
    shared.strands().spawned();
    // SAFETY: built above with a node naming `parent`; not yet runnable.
    unsafe { tree::adopt(header) };
    // SAFETY: the parent is live (as above).
    if parent.is_none_or(|parent| !unsafe { parent.as_ref() }.fibre.pool().same(shared)) {
        shared.strands().add_entry(Header::task(header));
    }
    // SAFETY: `me` as the caller's contract says.
    unsafe { scheduler::make_spawned_runnable(header, me) };
    Ok(RawHandle { header, domain: shared.domain(), _result: PhantomData })
}

/// Whether `fibre` runs `parent` or one of its ancestors. A child must not
/// share such a fibre: an ancestor waiting for it there may be unable to
/// leave (its stack lent to scoped children), and the child could never
/// become resident.
fn held_by_ancestor(parent: Option<NonNull<Header>>, fibre: &fibre::Fibre) -> bool {
    let mut strand = parent;
    while let Some(header) = strand {
        // SAFETY: ancestors are live while a descendant is being spawned
        // (each waits for its subtree at its end).
        let header = unsafe { header.as_ref() };
        if ptr::eq(header.fibre, fibre) {
            return true;
        }
        strand = header.tree.parent();
    }
    false
}

/// The running strand's id, or `None` outside strands.
pub fn current() -> Option<StrandId> {
    // SAFETY: the running strand's header is live.
    scheduler::current().map(|header| unsafe { header.as_ref() }.id)
}

/// Lets the core run its other work, then continues.
///
/// Work already queued on the core goes first. When there is none, the
/// strand continues at once, without a switch, as if the core had taken
/// it straight back; every few dozen turns the core still stops to look at
/// its mailboxes, timers and the pool's state, as it does between any
/// tasks. Other cores' work is not waited for: a strand that yields in a
/// loop to wait for something should block on it instead.
///
/// ```
/// use roving::{Config, Pool, platform::host::Machine, strand};
/// use std::sync::{Arc, Mutex};
///
/// Machine::new(1).unwrap().run(|| {
///     let order = Arc::new(Mutex::new(Vec::new()));
///     let seen = order.clone();
///     Pool::with_config(Config::new().cores(1)).unwrap().run(move || {
///         let strands: Vec<_> = ["a", "b"].into_iter().map(|name| {
///             let seen = seen.clone();
///             strand::spawn(move || for _ in 0..2 {
///                 seen.lock().unwrap().push(name);
///                 strand::yield_now().unwrap();
///             }).unwrap()
///         }).collect();
///         strands.into_iter().for_each(|s| s.join().unwrap());
///     }).unwrap();
///     // On one core, the two strands take turns (the newer one first).
///     let order = order.lock().unwrap();
///     assert_eq!(order.len(), 4);
///     assert!(order.windows(2).all(|pair| pair[0] != pair[1]), "{order:?}");
/// }).unwrap();
/// ```
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside strands.
pub fn yield_now() -> Result<(), WaitError> {
    crate::platform::refuse_in_handler("strand::yield_now", crate::platform::HANDLERS_WAKE);
    if scheduler::yield_running() { Ok(()) } else { Err(WaitError::NotAStrand) }
}

/// Blocks the calling strand for at least `duration`; its core runs other
/// work, or sleeps, meanwhile.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand, time::Instant};
/// use core::time::Duration;
///
/// Machine::new(1).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let start = Instant::now();
///         strand::sleep(Duration::from_millis(5)).unwrap();
///         assert!(start.elapsed() >= Duration::from_millis(5));
///     }).unwrap();
/// }).unwrap();
/// ```
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside strands; [`WaitError::OutOfMemory`]
/// if the deadline could not be recorded; [`WaitError::Interrupted`] if
/// the strand is cancelled.
pub fn sleep(duration: Duration) -> Result<(), WaitError> {
    let deadline = Instant::now().checked_add(duration).ok_or(WaitError::OutOfMemory)?;
    sleep_until(deadline)
}

/// Blocks the calling strand until `deadline`.
///
/// # Errors
///
/// As for [`sleep`].
pub fn sleep_until(deadline: Instant) -> Result<(), WaitError> {
    match wait::block(BlockReason::Sleeping, 0, Some(deadline), |_| true)? {
        WaitEnd::Interrupted => Err(WaitError::Interrupted),
        WaitEnd::TimedOut | WaitEnd::Signalled => Ok(()),
    }
}

/// What strands hold right now, over every pool: see [`usage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Fibres held by pools (each has at least one strand on it).
    pub fibres_in_use: usize,
    /// Heap bytes of saved stacks: the stacks of strands that are not
    /// resident on their fibre, plus each fibre's one spare save area.
    pub saved_stack_bytes: usize,
    /// Fibres quarantined: each held a strand that was stopped
    /// without unwinding while it had the fibre to itself, and its stack is
    /// kept as the strand left it ([`Config::reuse_stopped_stacks`](crate::Config::reuse_stopped_stacks)).
    pub fibres_quarantined: usize,
}

/// What strands hold right now, for memory budgets and leak checks. The
/// counts are read one after the other while strands may run, so they are
/// exact only when the strands are quiet.
pub fn usage() -> Usage {
    Usage {
        fibres_in_use: fibre::claimed(),
        saved_stack_bytes: save::held_bytes(),
        fibres_quarantined: fibre::quarantined(),
    }
}

/// Owns a strand's result: [`join`](JoinHandle::join) waits for it. A
/// handle is consumed by joining, so a strand cannot be joined twice.
///
/// Dropping the handle detaches the strand: it runs on, still a child of
/// the strand that spawned it (whose end waits for it). If it fails, its
/// failure goes up the tree as if nobody had been told: see [`Failure`].
/// A handle dropped after its strand failed hands the failure to the
/// strand dropping it; dropped in another [domain](crate::domain), where it
/// is inert, it returns the failure to the strand's own pool instead.
pub struct JoinHandle<T> {
    raw: RawHandle<T>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn from_raw(raw: RawHandle<T>) -> Self {
        Self { raw }
    }

    handle_queries!();

    /// Waits for the strand to finish and returns its value.
    ///
    /// # Errors
    ///
    /// - [`JoinError::Failed`] if the strand failed (panicked, or returned
    ///   with live children); the failure is handled by this call.
    /// - [`JoinError::Interrupted`] (with the handle) if the *caller* was
    ///   cancelled while waiting;
    /// - [`JoinError::NotAStrand`] (with the handle) if the caller is not
    ///   a strand and the strand has not finished.
    pub fn join(self) -> Result<T, JoinError<Self>> {
        RawHandle::join(self, |handle| &handle.raw, |handle| handle.raw)
    }

    /// The strand's value if it has finished, or the handle back in
    /// [`JoinError::Running`].
    ///
    /// # Errors
    ///
    /// [`JoinError::Running`], or [`JoinError::Failed`] as for
    /// [`join`](JoinHandle::join).
    pub fn try_join(self) -> Result<T, JoinError<Self>> {
        self.try_join_here()
    }

    /// The root's outcome for its [`Domain`](crate::domain::Domain)
    /// handle, from any domain, once it has finished.
    pub(crate) fn outcome(self) -> Option<Result<T, Failure>> {
        self.is_finished().then(|| self.raw.into_result())
    }

    fn try_join_here(self) -> Result<T, JoinError<Self>> {
        if !self.raw.domain.is_current() {
            return Err(JoinError::OtherDomain(self));
        }
        if self.is_finished() {
            self.raw.into_result().map_err(JoinError::Failed)
        } else {
            Err(JoinError::Running(self))
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle").field("id", &self.id()).field("finished", &self.is_finished()).finish()
    }
}

/// The queries every strand handle answers, for a type with a `raw:
/// RawHandle<T>` field.
macro_rules! handle_queries {
    () => {
        /// The strand's id.
        pub fn id(&self) -> $crate::strand::StrandId {
            self.raw.header().id
        }

        /// Whether the strand has finished (so joining would not block).
        pub fn is_finished(&self) -> bool {
            self.raw.is_finished()
        }

        /// Why the strand is blocked, if it is.
        pub fn block_reason(&self) -> $crate::strand::BlockReason {
            self.raw.header().reason()
        }

        /// Cancels the strand and every strand it spawned: their blocking
        /// calls return [`WaitError::Interrupted`](crate::strand::WaitError::Interrupted).
        /// Join it to know they have all ended.
        ///
        /// # Errors
        ///
        /// [`CancelError::Finished`](crate::strand::CancelError::Finished)
        /// if it had already finished.
        pub fn cancel(&self) -> Result<(), $crate::strand::CancelError> {
            self.raw.cancel()
        }
    };
}
use handle_queries;

/// What [`JoinHandle`] and [`ScopedJoinHandle`] share: one reference to a
/// strand's control block and the right to its result.
pub(crate) struct RawHandle<T> {
    header: NonNull<Header>,
    /// The strand's domain: the handle works only there.
    domain: DomainId,
    _result: PhantomData<T>,
}

// SAFETY: the handle only moves the result (`T: Send`) to its holder.
unsafe impl<T: Send> Send for RawHandle<T> {}
// SAFETY: `&RawHandle` only reads atomics.
unsafe impl<T: Send> Sync for RawHandle<T> {}

impl<T> RawHandle<T> {
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the handle holds a reference to the block.
        unsafe { self.header.as_ref() }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.header().joiner.load(Acquire) == FINISHED
    }

    pub(crate) fn cancel(&self) -> Result<(), CancelError> {
        if !self.domain.is_current() {
            return Err(CancelError::OtherDomain { strand: self.header().id });
        }
        // `DONE` is set before the joiner is told (`scheduler::finish`).
        if self.header().flags.load(SeqCst) & flags::DONE != 0 {
            return Err(CancelError::Finished { strand: self.header().id });
        }
        tree::cancel(self.header());
        Ok(())
    }

    /// Waits until the strand has finished. `Err` says why it could not:
    /// `Interrupted` (the caller was cancelled) or anything else (the
    /// caller cannot block).
    pub(crate) fn wait(&self) -> Result<(), WaitEnd> {
        if self.is_finished() {
            return Ok(());
        }
        let target = self.header;
        let registered = core::cell::Cell::new(None);
        let woken = wait::block(BlockReason::Join, target.as_ptr().expose_provenance(), None, |me| {
            // SAFETY: the handle keeps the target alive; `me` is running.
            let (slot, me_ref) = unsafe { (&target.as_ref().joiner, me.as_ref()) };
            // The finishing strand signals us after it may have seen us
            // leave; this reference keeps our header alive for that call.
            me_ref.acquire();
            if slot.compare_exchange(ptr::null_mut(), me.as_ptr(), AcqRel, Acquire).is_ok() {
                registered.set(Some(me));
                true
            } else {
                // SAFETY: the reference taken just above.
                unsafe { Header::release(me) };
                false
            }
        });
        match woken {
            Ok(WaitEnd::Interrupted) => {
                // Not registered: it had finished before we could wait.
                let Some(me) = registered.get() else { return Ok(()) };
                let slot = &self.header().joiner;
                if slot.compare_exchange(me.as_ptr(), ptr::null_mut(), AcqRel, Acquire).is_ok() {
                    // SAFETY: withdrawn before the strand finished, so the
                    // reference we lent it is ours again.
                    unsafe { Header::release(me) };
                    return Err(WaitEnd::Interrupted);
                }
                // It finished as we were interrupted: the join succeeded.
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(_) => Err(WaitEnd::Signalled),
        }
    }

    /// Joins the strand that `handle` (which owns `raw`) owns: its value,
    /// or why not, with the handle back where it may be joined again.
    pub(crate) fn join<H>(
        handle: H,
        raw: impl Fn(&H) -> &Self,
        into_raw: impl FnOnce(H) -> Self,
    ) -> Result<T, JoinError<H>> {
        if !raw(&handle).domain.is_current() {
            return Err(JoinError::OtherDomain(handle));
        }
        match raw(&handle).wait() {
            Ok(()) => into_raw(handle).into_result().map_err(JoinError::Failed),
            Err(WaitEnd::Interrupted) => Err(JoinError::Interrupted(handle)),
            Err(_) => Err(JoinError::NotAStrand(handle)),
        }
    }

    /// The result of a finished strand, consuming the handle.
    pub(crate) fn into_result(self) -> Result<T, Failure> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the strand finished (acquire of `FINISHED`); the result
        // is a `T`, taken once because the handle is consumed.
        let taken = unsafe { Header::take_result::<T>(this.header) };
        // SAFETY: the handle's reference, given up.
        unsafe { Header::release(this.header) };
        match taken {
            Taken::Value(value) => Ok(value),
            Taken::Failed(failure) => Err(*failure),
        }
    }
}

impl<T> Drop for RawHandle<T> {
    /// Detaches the strand. If it already finished with a failure, the
    /// failure goes to the strand dropping the handle, as if it had failed
    /// itself (outside strands, to the pool; outside pools it is raised as
    /// a panic): a failure is never dropped silently. In another domain it
    /// goes back to the strand's pool (`return_to_origin`).
    fn drop(&mut self) {
        let before = self.header().flags.fetch_or(flags::HANDLE_GONE, SeqCst);
        let failure = if before & flags::DONE != 0 {
            // SAFETY: the strand finished before we left: the result is ours.
            unsafe { Header::take_failure(self.header) }
        } else {
            None
        };
        // Stopped by a cancel: what the canceller asked for, not news.
        let failure = failure.filter(|failure| failure.kind() != FailureKind::Interrupted);
        // SAFETY: the handle's reference, given up.
        unsafe { Header::release(self.header) };
        match failure {
            Some(failure) if self.domain.is_current() => pass_to_caller(failure),
            Some(failure) => return_to_origin(failure),
            None => {}
        }
    }
}

/// A failure whose handle was dropped in another domain, where it is inert
/// data: it goes back to the pool the strand failed in, as a failure
/// nobody handled there (tearing its domain down). If that pool has gone,
/// its domain has ended and nobody is left to hand it to.
fn return_to_origin(mut failure: alloc::boxed::Box<Failure>) {
    if let Some(pool) = failure.origin() {
        pool.pool_ref().fail(Some(failure));
    }
}

/// Hands a failure nobody claimed to the running strand, its pool, or,
/// outside pools, raises it.
fn pass_to_caller(failure: alloc::boxed::Box<Failure>) {
    if let Some(me) = scheduler::current() {
        // SAFETY: the running strand's header.
        tree::pass_up(unsafe { me.as_ref() }, failure);
    } else if let Some((shared, _)) = scheduler::here() {
        shared.fail(Some(failure));
    } else {
        panic!("a failed strand's handle was dropped outside any pool: {failure}");
    }
}
