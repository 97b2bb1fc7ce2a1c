//! The part of a [`Mutex`](crate::sync::Mutex) that is not its value: the
//! lock word, the waiters and the poison flag, in one heap block that stays
//! put when the `Mutex` moves. It lives with the strands because a strand
//! lists the locks it holds and releases them when it fails, and a
//! deadlock report names a lock's holder. An async task's locks are
//! listed too, differently (`by_tasks`): its guards may move.
//!
//! # Why a separate block
//!
//! A strand that fails on bare metal is not unwound: its guards are never
//! dropped. To release what it held, every strand keeps a list of the
//! mutexes it holds (`Header::held`), and its failure walks that list. A
//! list entry must stay valid for as long as it is listed, and a guard can
//! be forgotten (`mem::forget` is safe), after which the `Mutex` may move
//! or be dropped while its holder still lists it. So the list links these
//! blocks, not `Mutex`es: a block does not move, and a `Mutex` dropped
//! while locked (only possible after a forgotten guard) leaks its block
//! instead of freeing it.
//!
//! # The held list
//!
//! Singly linked through `next_held`, head in the holder's header. Only
//! the holding strand touches it, while it runs: guards are not `Send`,
//! so a guard is dropped on the strand that locked. Guards are usually
//! dropped in reverse order, so unlinking finds its block at the head.
//!
//! # Releasing a failed strand's mutexes
//!
//! `release_held` runs on the failing strand, before it waits for its
//! children (they may need the lock to finish): it marks each block
//! poisoned, then unlocks it, handing it to the first waiter. A waiter
//! that gets a poisoned lock passes it straight on and reports
//! `Poisoned`, so every waiter hears of it.
//!
//! # Refusal
//!
//! A lock held by the guard of an async task that failed on bare metal
//! cannot be unlocked for it (`by_tasks` says why). It is *refused*
//! instead: poisoned and flagged `refused`, its waiters woken, and
//! lockers turned away with `Poisoned` while the flag is up. A waiter
//! tells a refusal from a hand-over by `refusals`, counted under the
//! waiters' lock: it reads the count when it queues, and a different
//! count once woken means it was refused, not handed the lock. (A flag
//! would not do: the guard, if it lives on elsewhere and is dropped,
//! lowers it, maybe before the refused waiter looks.)

mod by_tasks;

use super::control::Header;
use super::id::BlockReason;
use super::wait::{self, WaitQueue};
use super::{WaitError, scheduler};
use crate::atomics::unmodelled::{AtomicBool, AtomicPtr, AtomicU32, Ordering::*};
use crate::platform::instant::Instant;
use crate::spin_lock::SpinLock;
use alloc::boxed::Box;
#[cfg(not(feature = "std"))]
pub(crate) use by_tasks::refuse_all as refuse_locks;
pub(crate) use by_tasks::{Poller, TaskLocks, forget_all as forget_locks, of_task as task_locks};
use core::cell::Cell;
use core::ptr::{self, NonNull};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
/// Locked, and some strand may be waiting: unlocking must look.
const CONTENDED: u32 = 2;

/// Lock word, waiters and poison flag of one mutex.
pub(crate) struct Core {
    state: AtomicU32,
    poisoned: AtomicBool,
    waiters: SpinLock<WaitQueue>,
    /// The strand holding the lock, if a strand does (null while a plain
    /// task or outside code holds it, or while it is handed over): read by
    /// the self-deadlock check and by deadlock reports.
    holder: AtomicPtr<Header>,
    /// The next block in its holder's held list; only the holder touches it.
    next_held: Cell<*const Core>,
    /// Refused: the holder is a failed task's guard (module docs). Raised
    /// and lowered under the waiters' lock.
    refused: AtomicBool,
    /// How many times the waiters were refused; changed under their lock.
    refusals: AtomicU32,
    /// The task this block is listed under, and its neighbours in that
    /// task's shard list (`by_tasks`); changed under that shard's lock.
    task: AtomicPtr<()>,
    task_prev: Cell<*const Core>,
    task_next: Cell<*const Core>,
}

// SAFETY: `next_held` is touched only by the holding strand (module docs),
// `task_prev` and `task_next` only under their shard's lock (`by_tasks`);
// the rest is atomics and a lock.
unsafe impl Sync for Core {}
// SAFETY: as above.
unsafe impl Send for Core {}

/// Who holds a lock: the strand whose held list has it, or nobody listed
/// (a plain task, or code outside the pool, which cannot fail alone).
pub(crate) type Holder = Option<NonNull<Header>>;

impl Core {
    /// A new unlocked block, or `None` if memory ran out.
    pub(crate) fn allocate() -> Option<NonNull<Core>> {
        let layout = core::alloc::Layout::new::<Core>();
        // SAFETY: `Core` has a non-zero size.
        let block = NonNull::new(unsafe { alloc::alloc::alloc(layout) }.cast::<Core>())?;
        let core = Core {
            state: AtomicU32::new(UNLOCKED),
            poisoned: AtomicBool::new(false),
            waiters: SpinLock::new(WaitQueue::new()),
            holder: AtomicPtr::new(ptr::null_mut()),
            next_held: Cell::new(ptr::null()),
            refused: AtomicBool::new(false),
            refusals: AtomicU32::new(0),
            task: AtomicPtr::new(ptr::null_mut()),
            task_prev: Cell::new(ptr::null()),
            task_next: Cell::new(ptr::null()),
        };
        // SAFETY: fresh memory with `Core`'s layout.
        unsafe { block.as_ptr().write(core) };
        Some(block)
    }

    /// Frees `block` if it is unlocked; otherwise leaves it, because a
    /// forgotten guard's holder may still list it (module docs).
    ///
    /// # Safety
    ///
    /// `block` came from [`Core::allocate`], and its mutex is being
    /// dropped: nothing but a held list can reach it any more.
    pub(crate) unsafe fn retire(block: NonNull<Core>) {
        // SAFETY: live until freed below.
        let core = unsafe { block.as_ref() };
        // Taking the lock waits out a failing holder still releasing it.
        let unlocked = {
            let _waiters = core.waiters.lock();
            core.state.load(Acquire) == UNLOCKED
        };
        if unlocked {
            // SAFETY: allocated as a `Box<Core>` would be, and unreachable.
            drop(unsafe { Box::from_raw(block.as_ptr()) });
        }
    }

    /// The strand holding the lock, if a strand does and it is not being
    /// handed over.
    pub(crate) fn holder(&self) -> Option<NonNull<Header>> {
        NonNull::new(self.holder.load(Acquire))
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Acquire)
    }

    /// Clears the poison, unless the lock is refused: then lockers are
    /// still turned away, and the poison says why.
    pub(crate) fn clear_poison(&self) {
        let _waiters = self.waiters.lock();
        if !self.refused.load(Relaxed) {
            self.poisoned.store(false, Release);
        }
    }

    /// Takes the lock if it is free; never blocks.
    pub(crate) fn try_acquire(&self) -> bool {
        self.state.compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed).is_ok()
    }

    /// Takes the lock, blocking the strand until `deadline`. On success
    /// the lock is held but not yet listed (see [`Core::hold`]).
    /// Locks it for the calling strand, blocking while another holds it,
    /// and lists it as held (see [`Core::hold`]). Outside strands it is
    /// refused whether or not it is held, so the mistake shows in the
    /// first test, not only under load.
    pub(crate) fn lock(&self, deadline: Option<Instant>) -> Result<Holder, WaitError> {
        let me = scheduler::current().ok_or(WaitError::NotAStrand)?;
        self.acquire(me, deadline)?;
        self.hold(Some(me))
    }

    fn acquire(&self, me: NonNull<Header>, deadline: Option<Instant>) -> Result<(), WaitError> {
        if self.try_acquire() {
            return Ok(());
        }
        if self.holder.load(Acquire) == me.as_ptr() {
            // Waiting for ourselves would never end.
            return Err(WaitError::WouldDeadlock);
        }
        // The refusal count when we queued; `None`: refused at once.
        let mut queued_at = None;
        let woken =
            wait::block(BlockReason::Mutex, ptr::from_ref(self).expose_provenance(), deadline, |me| {
                let mut waiters = self.waiters.lock();
                queued_at = self.refusal_count();
                // Refused, or (announcing a waiter) the holder left
                // meanwhile, so the lock is ours: nothing to wait for.
                if queued_at.is_none() || self.contend() {
                    return false;
                }
                // SAFETY: we stay live until we leave the queue (below or by
                // being handed the lock).
                unsafe { waiters.push_back(me) };
                true
            })?;
        match woken.error() {
            // Handed over by `unlock`, or it was free when we registered,
            // unless it was refused.
            None if queued_at.is_some_and(|count| self.refusals.load(Acquire) == count) => Ok(()),
            None => Err(WaitError::Poisoned),
            Some(error) => {
                self.waiters.lock().leave();
                Err(error)
            }
        }
    }

    /// Whether lockers are turned away (module docs).
    pub(crate) fn is_refused(&self) -> bool {
        self.refused.load(Acquire)
    }

    /// Refuses the lock: its holder is a failed task's guard, never to be
    /// dropped (module docs). Poisons it and wakes every waiter, refused.
    fn refuse(&self) {
        let mut waiters = self.waiters.lock();
        self.poisoned.store(true, Release);
        self.refused.store(true, Release);
        self.refusals.fetch_add(1, Release);
        waiters.wake_all();
    }

    /// Under the waiters' lock, for a strand or task queueing to wait: the
    /// refusal count to compare once woken, or `None` if the lock is
    /// refused now.
    pub(crate) fn refusal_count(&self) -> Option<u32> {
        (!self.refused.load(Relaxed)).then(|| self.refusals.load(Relaxed))
    }

    /// Under the waiters' lock: whether waiters were refused since the
    /// count was `count`.
    pub(crate) fn refused_since(&self, count: u32) -> bool {
        self.refusals.load(Relaxed) != count
    }

    /// Completes an acquisition by `holder`, the calling strand if it is
    /// one: a poisoned lock is passed straight on (`Poisoned`); otherwise
    /// it is listed as held by that strand, which is returned.
    pub(crate) fn hold(&self, holder: Holder) -> Result<Holder, WaitError> {
        if self.is_poisoned() {
            self.unlock();
            return Err(WaitError::Poisoned);
        }
        if let Some(me) = holder {
            self.holder.store(me.as_ptr(), Release);
            // SAFETY: the running strand's own list (module docs).
            unsafe {
                let head = &mut *me.as_ref().held.get();
                self.next_held.set(*head);
                *head = self;
            }
        }
        Ok(holder)
    }

    /// Ends a hold: unlists the lock from its holder, marks it poisoned if
    /// the holder is unwinding from a panic, and unlocks it.
    pub(crate) fn let_go(&self, holder: Holder) {
        if let Some(holder) = holder {
            self.holder.store(ptr::null_mut(), Release);
            // SAFETY: guards are not `Send`, so `holder` is the running
            // strand, and this block is in its list.
            unsafe { self.unlist(holder) };
        }
        #[cfg(feature = "std")]
        if std::thread::panicking() {
            self.poisoned.store(true, Release);
        }
        self.unlock();
    }

    /// # Safety
    ///
    /// `holder` is the running strand and lists this block.
    unsafe fn unlist(&self, holder: NonNull<Header>) {
        // SAFETY: the caller's contract; listed blocks are live.
        unsafe {
            let mut link: *mut *const Core = holder.as_ref().held.get();
            while !ptr::eq(*link, self) {
                debug_assert!(!(*link).is_null(), "a held mutex is in its holder's list");
                link = (**link).next_held.as_ptr();
            }
            *link = self.next_held.get();
        }
    }

    /// Unlocks, handing the lock to the first waiter if there is one. The
    /// last access to the block on every path (see `retire`).
    #[inline]
    pub(crate) fn unlock(&self) {
        if self.state.compare_exchange(LOCKED, UNLOCKED, Release, Relaxed).is_err() {
            self.unlock_contended();
        }
    }

    /// [`unlock`](Self::unlock) with waiters: out of line, so that the
    /// uncontended path saves no registers for it.
    #[cold]
    #[inline(never)]
    fn unlock_contended(&self) {
        self.hand_on(&mut self.waiters.lock());
    }

    /// Unlocks with the waiters' lock held (`waiters` is what it guards):
    /// hands the lock to the first waiter, or leaves it free.
    pub(crate) fn hand_on(&self, waiters: &mut WaitQueue) {
        if waiters.wake_one() {
            // Handed over: the lock stays held, by the waiter just woken.
            if waiters.is_empty() {
                self.state.store(LOCKED, Release);
            }
        } else {
            self.state.store(UNLOCKED, Release);
        }
    }

    /// Under the waiters' lock: announces a waiter, and takes the lock if
    /// its holder left meanwhile (returns whether it did).
    pub(crate) fn contend(&self) -> bool {
        self.state.swap(CONTENDED, Acquire) == UNLOCKED
    }

    /// The waiters, and the lock guarding them.
    pub(crate) fn waiters(&self) -> &SpinLock<WaitQueue> {
        &self.waiters
    }

    /// As [`Core::hold`] for a holder that is no strand: an async task's
    /// guard, which may move between cores and tasks. Listed under
    /// `poller`, the task (or strand) whose poll took it, if a poll did
    /// (`by_tasks`).
    pub(crate) fn hold_for_task(&self, poller: Option<Poller<'_>>) -> Result<(), WaitError> {
        if self.is_poisoned() {
            self.unlock();
            return Err(WaitError::Poisoned);
        }
        if let Some(poller) = poller {
            by_tasks::list(self, poller);
        }
        Ok(())
    }

    /// Ends a hold by an async task's guard: off its task's list, the
    /// refusal (if any) over with it, and unlocked as
    /// [`let_go`](Self::let_go) does.
    pub(crate) fn let_go_for_task(&self) {
        by_tasks::unlist(self);
        if self.refused.load(Acquire) {
            // The refused lock's one holder is this guard (module docs).
            let _waiters = self.waiters.lock();
            self.refused.store(false, Release);
        }
        self.let_go(None);
    }

    /// Whether `poller`'s guard holds the lock (or one it sent away that
    /// is not yet dropped): its waiting for it would never end.
    pub(crate) fn held_by(&self, poller: Poller<'_>) -> bool {
        by_tasks::holds(self, poller)
    }
}

/// Poisons and unlocks every mutex the strand `me` still holds: its guards
/// will never be dropped (module docs). With `poison` false (a strand that
/// ended normally after forgetting guards) the locks stay held, as a
/// forgotten guard leaves them, and the list is just cleared.
///
/// # Safety
///
/// `me` is the running strand, which is finishing.
pub(crate) unsafe fn release_held(me: NonNull<Header>, poison: bool) {
    // Locks its polls took (`block_on` of `Mutex::lock_async`): refused if
    // it failed, their guards then never dropped; forgotten if not.
    // SAFETY: the running strand's header (contract).
    let poller = Poller::Strand(unsafe { me.as_ref() });
    if poison {
        by_tasks::refuse_all(poller);
    } else {
        by_tasks::forget_all(poller);
    }
    // SAFETY: the running strand's own list.
    let mut next = unsafe { core::mem::replace(&mut *me.as_ref().held.get(), ptr::null()) };
    // SAFETY: listed blocks are never freed while listed (module docs).
    while let Some(core) = unsafe { next.as_ref() } {
        next = core.next_held.get();
        if poison {
            core.holder.store(ptr::null_mut(), Release);
            core.poisoned.store(true, Release);
            core.unlock();
        }
    }
}
