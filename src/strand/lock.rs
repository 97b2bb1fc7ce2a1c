//! The part of a [`Mutex`](crate::sync::Mutex) that is not its value: the
//! lock word, the waiters and the poison flag, in one heap block that stays
//! put when the `Mutex` moves. It lives with the strands because a strand
//! lists the locks it holds and releases them when it fails, and a
//! deadlock report names a lock's holder.
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

use super::control::Header;
use super::id::BlockReason;
use super::wait::{self, WaitQueue};
use super::{WaitError, scheduler};
use crate::atomics::unmodelled::{AtomicBool, AtomicPtr, AtomicU32, Ordering::*};
use crate::platform::instant::Instant;
use crate::spin_lock::SpinLock;
use alloc::boxed::Box;
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
}

// SAFETY: `next_held` is touched only by the holding strand (module docs);
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

    pub(crate) fn clear_poison(&self) {
        self.poisoned.store(false, Release);
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
        let woken =
            wait::block(BlockReason::Mutex, ptr::from_ref(self).expose_provenance(), deadline, |me| {
                let mut waiters = self.waiters.lock();
                // Announce a waiter; if the holder left meanwhile, it is ours.
                if self.contend() {
                    return false;
                }
                // SAFETY: we stay live until we leave the queue (below or by
                // being handed the lock).
                unsafe { waiters.push_back(me) };
                true
            })?;
        match woken.error() {
            // Handed over by `unlock`, or it was free when we registered.
            None => Ok(()),
            Some(error) => {
                self.waiters.lock().leave();
                Err(error)
            }
        }
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

    /// As [`Core::hold`] for a holder that is no strand's (an async task's
    /// guard, which may move between cores and is listed nowhere).
    pub(crate) fn hold_unlisted(&self) -> Result<(), WaitError> {
        if self.is_poisoned() {
            self.unlock();
            return Err(WaitError::Poisoned);
        }
        Ok(())
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
