//! The mutexes async tasks hold, so that a task that fails on bare metal
//! does not leave their waiters waiting for ever.
//!
//! # The problem
//!
//! A task's guard ([`AsyncMutexGuard`](crate::sync::AsyncMutexGuard)) is
//! `Send`: it lives in the task's future across awaits, and may be sent
//! to another task, which may drop it. When a task's poll panics on bare
//! metal nothing unwinds: its future is kept, not dropped, so a guard in
//! it is never dropped and its mutex never unlocked. Unlocking it for the
//! failed task is not sound either: the guard may have been sent to a
//! task that is still using it, and nothing can tell where it went.
//!
//! # What is done instead: refusal
//!
//! Each lock taken by a task's poll is listed under that task (`list`).
//! When the task fails (`refuse_all`), each mutex still listed is
//! *refused*: poisoned, every waiter woken with `Poisoned`, and every
//! later locker refused with `Poisoned` at once instead of queued. The
//! lock itself stays held by the abandoned guard, so whatever that guard
//! is, and wherever it went, it keeps the only access to the value. If
//! the guard does live on in another task and is dropped, the refusal
//! ends with it: the mutex is unlocked, poisoned, as a failed strand's is.
//!
//! A listed mutex also tells a task that awaits a lock it already holds:
//! that wait would never end, and gets `WouldDeadlock` (`holds`).
//!
//! # The lists
//!
//! One doubly linked list per shard, the shard picked by the task; the
//! links are fields of the mutexes' blocks ([`Core`]), and a block's
//! `task` names the task it is listed under (null: none). Both change only
//! under the shard's lock, so whoever drops a guard (any task, on any
//! core) can read `task` first, take that task's shard, and see whether
//! it is still listed. A listed block is held, so it is never freed while
//! listed ([`Core::retire`] frees only an unlocked block).
//!
//! A task is named by the address of its [`TaskLocks`], inside its header,
//! a strand (polling in `block_on`) by its header's: compared, never
//! followed. So that a freed task's address cannot be
//! mistaken for a new task's, a task that ends normally takes its name
//! off every block still listed under it (`forget_all`): those are guards
//! it sent away, which are their new owners' business.
//!
//! # Lock order
//!
//! A shard's lock, then a block's waiters' lock (`refuse_all`); nothing
//! takes them the other way round.

use super::Core;
use crate::atomics::CachePadded;
use crate::atomics::unmodelled::{AtomicBool, Ordering::*};
use crate::spin_lock::SpinLock;
use crate::strand::control::{Header, flags};
use crate::task::Task;
use core::ptr::{self, NonNull};

/// Per async task: whether it ever listed a lock. Part of its header,
/// whose address names the task here.
pub(crate) struct TaskLocks {
    /// Written and read only by the task's poller (under its `RUNNING`).
    listed: AtomicBool,
}

impl TaskLocks {
    pub(crate) const fn new() -> Self {
        Self { listed: AtomicBool::new(false) }
    }
}

/// Who polls a lock future: an async task, or a strand in `block_on`. A
/// lock it takes is listed under it, named by an address of its own (the
/// task's [`TaskLocks`], the strand's header).
#[derive(Clone, Copy)]
pub(crate) enum Poller<'a> {
    Task(&'a TaskLocks),
    Strand(&'a Header),
}

impl Poller<'_> {
    fn name(self) -> *mut () {
        match self {
            Self::Task(locks) => ptr::from_ref(locks).cast_mut().cast(),
            Self::Strand(header) => ptr::from_ref(header).cast_mut().cast(),
        }
    }

    /// Notes that it listed a lock, so that its end looks at its list.
    fn mark_listed(self) {
        match self {
            Self::Task(locks) => locks.listed.store(true, Relaxed),
            Self::Strand(header) => {
                header.flags.fetch_or(flags::ASYNC_LOCKED, Relaxed);
            }
        }
    }

    fn ever_listed(self) -> bool {
        match self {
            Self::Task(locks) => locks.listed.load(Relaxed),
            Self::Strand(header) => header.flags.load(Relaxed) & flags::ASYNC_LOCKED != 0,
        }
    }
}

/// The [`TaskLocks`] of the async task whose header is `task`: an async
/// task's header is its [`Task`], then its `TaskLocks` (the executor
/// checks the layout when it compiles).
///
/// # Safety
///
/// `task` is the header of an async task that stays live for `'a`.
pub(crate) unsafe fn of_task<'a>(task: NonNull<Task>) -> &'a TaskLocks {
    // SAFETY: the field right after the `Task` (contract).
    unsafe { task.byte_add(size_of::<Task>()).cast::<TaskLocks>().as_ref() }
}

const SHARDS: usize = 64;

/// The head of one shard's list.
struct Shard {
    head: *const Core,
}

// SAFETY: the list links blocks that are `Sync` and never freed while
// listed; its lock guards it.
unsafe impl Send for Shard {}

static LISTS: [CachePadded<SpinLock<Shard>>; SHARDS] =
    [const { CachePadded(SpinLock::new(Shard { head: ptr::null() })) }; SHARDS];

fn shard(name: *mut ()) -> &'static SpinLock<Shard> {
    // Names are addresses in allocations at least 16 bytes apart: skip the
    // low bits, then mix, so neighbours spread over the shards.
    let mixed = (name.addr() >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    &LISTS[mixed >> (usize::BITS - SHARDS.trailing_zeros())]
}

/// Lists `core`, just locked by a poll of `poller`, under it.
pub(crate) fn list(core: &Core, poller: Poller<'_>) {
    poller.mark_listed();
    let name = poller.name();
    let mut shard = shard(name).lock();
    debug_assert!(core.task.load(Relaxed).is_null(), "a lock just taken is listed under no task");
    core.task.store(name, Release);
    core.task_prev.set(ptr::null());
    core.task_next.set(shard.head);
    // SAFETY: listed blocks are live (module docs); the shard's lock
    // guards their links.
    if let Some(next) = unsafe { shard.head.as_ref() } {
        next.task_prev.set(core);
    }
    shard.head = core;
}

/// Takes `core` off its poller's list, if it is on one: its guard is
/// being dropped, wherever that is.
pub(crate) fn unlist(core: &Core) {
    let name = core.task.load(Acquire);
    if name.is_null() {
        return;
    }
    let mut shard = shard(name).lock();
    // Refused or forgotten meanwhile, under this lock: nothing to do.
    if core.task.load(Relaxed) == name {
        unlink(&mut shard, core);
    }
}

/// Whether `core` is listed under `poller`: it holds the lock (or sent
/// its guard away without its being dropped yet).
pub(crate) fn holds(core: &Core, poller: Poller<'_>) -> bool {
    core.task.load(Acquire) == poller.name()
}

/// Refuses every mutex listed under `poller`, which failed and will never
/// drop its guards (module docs).
pub(crate) fn refuse_all(poller: Poller<'_>) {
    take_all(poller, Core::refuse);
}

/// Takes `poller`'s name off every block still listed under it: it has
/// ended, and the guards left are ones it sent away.
pub(crate) fn forget_all(poller: Poller<'_>) {
    take_all(poller, |_| {});
}

fn take_all(poller: Poller<'_>, then: impl Fn(&Core)) {
    if !poller.ever_listed() {
        return;
    }
    let name = poller.name();
    let mut shard = shard(name).lock();
    let mut next = shard.head;
    // SAFETY: listed blocks are live (module docs); the lock guards links.
    while let Some(core) = unsafe { next.as_ref() } {
        next = core.task_next.get();
        if core.task.load(Relaxed) == name {
            unlink(&mut shard, core);
            then(core);
        }
    }
}

fn unlink(shard: &mut Shard, core: &Core) {
    let (prev, next) = (core.task_prev.get(), core.task_next.get());
    // SAFETY: the neighbours are listed, so live; the shard's lock (which
    // the caller holds, as `shard`) guards their links.
    unsafe {
        match prev.as_ref() {
            Some(prev) => prev.task_next.set(next),
            None => shard.head = next,
        }
        if let Some(next) = next.as_ref() {
            next.task_prev.set(prev);
        }
    }
    core.task.store(ptr::null_mut(), Release);
}

/// Refusal on the host, where a failed task's guards are dropped as its
/// panic unwinds: the refusal a failure on bare metal makes, made by hand
/// on a task that keeps its guard, as one that was sent the guard would.
#[cfg(all(test, feature = "std"))]
mod tests {
    use super::{Poller, TaskLocks, of_task, refuse_all};
    use crate::pool::polling;
    use crate::sync::{Event, Mutex, TryLockError, WaitError};
    use crate::{Pool, executor, platform::host::Machine, strand};
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::time::Duration;

    #[test]
    #[cfg_attr(miri, ignore = "a pool's strands switch stacks")]
    fn a_refused_lock_turns_every_waiter_and_locker_away_until_its_guard_is_dropped() {
        Machine::new(2)
            .unwrap()
            .run(|| {
                Pool::new()
                    .unwrap()
                    .run(|| {
                        let mutex: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
                        let release: &'static Event = Box::leak(Box::new(Event::new()));
                        let holder_name: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
                        let holder = executor::spawn_async(async move {
                            let guard = mutex.lock_async().await.unwrap();
                            let me = polling::polled_task().expect("a task's poll is marked");
                            // SAFETY: this task, polling now.
                            let locks: *const TaskLocks = unsafe { of_task(me) };
                            holder_name.store(locks.addr(), SeqCst);
                            release.wait_async().await;
                            drop(guard);
                        })
                        .unwrap();
                        while holder_name.load(SeqCst) == 0 {
                            strand::yield_now().unwrap();
                        }
                        let by_strand = strand::spawn(move || mutex.lock().map(|_| ()).err()).unwrap();
                        let by_task =
                            executor::spawn_async(async move { mutex.lock_async().await.map(|_| ()).err() })
                                .unwrap();
                        strand::sleep(Duration::from_millis(20)).unwrap();
                        // SAFETY: the holder is alive: it waits for `release`.
                        let locks = unsafe {
                            &*core::ptr::with_exposed_provenance::<TaskLocks>(holder_name.load(SeqCst))
                        };
                        refuse_all(Poller::Task(locks));
                        assert_eq!(by_strand.join().unwrap(), Some(WaitError::Poisoned));
                        assert_eq!(by_task.join().unwrap(), Some(WaitError::Poisoned));
                        assert_eq!(mutex.try_lock().err(), Some(TryLockError::Poisoned));
                        assert_eq!(mutex.lock().err(), Some(WaitError::Poisoned));
                        assert_eq!(
                            crate::block_on(mutex.lock_async()).unwrap().err(),
                            Some(WaitError::Poisoned)
                        );
                        mutex.clear_poison();
                        assert!(mutex.is_poisoned(), "refused, so still poisoned");
                        // The guard lives on in the holder: its drop ends the
                        // refusal, and the mutex is poisoned and free.
                        release.set();
                        holder.join().unwrap();
                        assert_eq!(mutex.lock().err(), Some(WaitError::Poisoned));
                        mutex.clear_poison();
                        assert_eq!(*mutex.lock().unwrap(), 0);
                    })
                    .unwrap();
            })
            .unwrap();
    }
}
