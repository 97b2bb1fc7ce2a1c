//! Holding preemption off: the part of time slicing that every layer
//! needs, down to the platform seam.
//!
//! A strand inside roving's own code must not be preempted: it may hold
//! its core's private queues, be half-way into blocking, or be switching
//! away. Such code runs under a [`Deferral`], which raises the strand's
//! `no_preempt` count for as long as it lives. The count is written only by
//! the strand itself (never with a read-modify-write that a tick could
//! split: a tick only reads it, or sets it from 0 to 1 while the strand is
//! stopped in the interrupt) and read by ticks on the core that runs the
//! strand. Internal spin locks mask interrupts, so no tick lands inside
//! them at all. Why that is enough is in `crate::preempt`.
//!
//! The count lives in the strand's control block, which only the strand
//! layer knows. So that the pool and the platform seam can defer too, the
//! strand layer tells this module, as the first pool is built, how to
//! find the running strand's count and what to do after a wait ([`install`]).
//! While no pool has a time slice nothing can be preempted, and a deferral
//! costs one load and asks nothing.

use crate::atomics::unmodelled::{AtomicPtr, AtomicU8, AtomicUsize, Ordering::Acquire, Ordering::Relaxed};
use crate::atomics::unmodelled::{Ordering::Release, Ordering::SeqCst, compiler_fence};
use core::ptr::{self, NonNull};

/// How many pools with a time slice exist. While there are none, nothing
/// can be preempted and a deferral costs one load: cooperative programs
/// pay nothing else for preemption.
static PREEMPTING_POOLS: AtomicUsize = AtomicUsize::new(0);

/// Pings of silent-core watches not yet answered, with those of cores
/// given up for good (`crate::pool`'s `silent` watch): their answer comes
/// through [`on_tick`](crate::preempt::on_tick), which the platform must
/// then call.
static PINGS: AtomicUsize = AtomicUsize::new(0);

/// Whether any pool with a time slice exists, or a ping of a pool's watch
/// for silent cores waits for its answer. While neither does, no tick can
/// preempt anything and none is awaited, so a platform's interrupt exit
/// may skip asking [`on_tick`](crate::preempt::on_tick) (a tick it skips
/// is one roving asked for earlier, from a pool that has gone).
#[inline]
pub fn any_pool_preempts() -> bool {
    PREEMPTING_POOLS.load(Relaxed) != 0 || PINGS.load(Relaxed) != 0
}

/// A watch sent a ping (counted until [`pings_settled`]).
pub(crate) fn ping_sent() {
    PINGS.fetch_add(1, Relaxed);
}

/// `n` pings were answered, or their pool has gone.
pub(crate) fn pings_settled(n: usize) {
    if n > 0 {
        PINGS.fetch_sub(n, Relaxed);
    }
}

/// Counts a pool with a time slice in [`PREEMPTING_POOLS`] for as long as
/// it lives: a field of the pool, made before any of its strands exist and
/// dropped after they have all gone. So a strand of a preempting pool
/// always finds the count above 0 (its pool's creation happens before it
/// runs), and a deferral it takes is always real.
pub(crate) struct Preempting(bool);

impl Preempting {
    /// Counts the pool if it `preempts`.
    pub(crate) fn count(preempts: bool) -> Self {
        if preempts {
            PREEMPTING_POOLS.fetch_add(1, SeqCst);
        }
        Self(preempts)
    }
}

impl Drop for Preempting {
    fn drop(&mut self) {
        if self.0 {
            PREEMPTING_POOLS.fetch_sub(1, SeqCst);
        }
    }
}

/// What the strand layer tells this module ([`install`]).
pub(crate) struct Hooks {
    /// The `no_preempt` count of the strand running on the calling core,
    /// found from the stack the caller runs on (so right even if the
    /// strand moves at any instruction), or `None` outside strands.
    pub(crate) running_count: fn() -> Option<NonNull<AtomicU8>>,
    /// Called after a strand waited in `platform::wait_for_event`: asks for
    /// its time slice's tick again.
    pub(crate) after_wait: fn(),
}

static HOOKS: AtomicPtr<Hooks> = AtomicPtr::new(ptr::null_mut());

/// Tells this module how to find the running strand's count. The strand
/// layer calls it as each pool is built (the first before any strand
/// exists); every call passes the same hooks.
pub(crate) fn install(hooks: &'static Hooks) {
    if HOOKS.load(Relaxed).is_null() {
        HOOKS.store(ptr::from_ref(hooks).cast_mut(), Release);
    }
}

fn hooks() -> Option<&'static Hooks> {
    // SAFETY: only `install` stores here, a `&'static Hooks`.
    unsafe { HOOKS.load(Acquire).as_ref() }
}

/// Holds preemption off for the running strand while it lives (module
/// docs). Outside strands, and while no pool preempts, it does nothing.
#[must_use = "a deferral holds preemption off only while it lives"]
pub(crate) struct Deferral(Option<NonNull<AtomicU8>>);

/// Defers preemption of the running strand until the result is dropped.
#[inline]
pub(crate) fn defer() -> Deferral {
    if !any_pool_preempts() {
        return Deferral(None);
    }
    raise((hooks().expect("strands exist, so their layer has installed its hooks").running_count)())
}

/// Raises `count` (the running strand's, which the strand layer found
/// itself, or `None` outside strands) for as long as the result lives.
#[inline]
pub(crate) fn raise(count: Option<NonNull<AtomicU8>>) -> Deferral {
    if let Some(count) = count {
        // SAFETY: the running strand's own count, in its live header.
        let count = unsafe { count.as_ref() };
        let depth = count.load(Relaxed);
        assert!(depth < u8::MAX, "roving's own code nested 255 deep in one strand");
        count.store(depth + 1, Relaxed);
        // A tick is an interrupt on this core: keep what follows after it.
        compiler_fence(SeqCst);
    }
    Deferral(count)
}

impl Drop for Deferral {
    #[inline]
    fn drop(&mut self) {
        if let Some(count) = self.0 {
            compiler_fence(SeqCst);
            // SAFETY: the strand that raised the deferral is running (it is
            // dropping it), so its header is live.
            let count = unsafe { count.as_ref() };
            count.store(count.load(Relaxed) - 1, Relaxed);
        }
    }
}

/// After a strand waited in `platform::wait_for_event`: the platform may
/// have used the core's timer for the wait's own deadline and turned it
/// off afterwards, so the strand's tick is asked for again. Outside
/// strands, and in cooperative pools, it does nothing.
pub(crate) fn after_wait() {
    if any_pool_preempts()
        && let Some(hooks) = hooks()
    {
        (hooks.after_wait)();
    }
}
