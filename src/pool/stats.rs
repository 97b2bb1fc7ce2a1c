//! Per-core counters: written only by their core, readable by anyone.

use crate::atomics::unmodelled::{AtomicU64, Ordering::Relaxed};

/// What one core of a pool has done, from [`Pool::stats`](super::Pool::stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CoreStats {
    /// Tasks this core ran.
    pub tasks_run: u64,
    /// Tasks this core posted to a core's mailbox (another core's, or its own).
    pub sent: u64,
    /// Tasks this core took from its inbound mailboxes.
    pub received: u64,
    /// Tasks this core took from its lists of the forwarding mesh
    /// ([`Mailboxes::Mesh`](super::Mailboxes::Mesh)) and passed on to
    /// other cores. A task carried past this core while it slept, by the
    /// core that held it, is counted nowhere.
    pub forwarded: u64,
    /// Tasks this core spawned for any core of the pool.
    pub spawned: u64,
    /// Tasks this core took from the injector (work from outside the pool).
    pub injected: u64,
    /// Tasks this core stole from another core's steal list.
    pub stolen: u64,
    /// Tasks this core offered to idle cores on its steal list.
    pub offered: u64,
    /// Times this core went to sleep.
    pub sleeps: u64,
    /// Of those, times it moved on to the deep idle tier.
    pub deep_sleeps: u64,
    /// Sleeping cores this core woke.
    pub wakeups: u64,
    /// Tasks this core discarded unrun because the pool was shut down.
    pub discarded: u64,
    /// Strands this core's timer took off it at the end of their time
    /// slice ([`Config::time_slice`](super::Config::time_slice)).
    pub preempted: u64,
    /// Times this core ran out of work and started searching.
    pub idle_spells: u64,
    /// Of those, spells long enough to be counted idle, each with two
    /// writes of the idle count this core shares with its group of
    /// cores (the short ones are kept off it: `docs/design.md`).
    pub counted_idle_spells: u64,
    /// Read-modify-writes of the pool-wide sleep counters word made for
    /// this core: getting sleepy, counting its sleeps in and out (a
    /// waker's share included) and announcing the jobs it made. Every core
    /// of the pool writes that word and reads it after each task, so on a
    /// machine with many cores this is the figure to watch.
    pub shared_sleep_writes: u64,
}

/// The live counters behind [`CoreStats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) tasks_run: AtomicU64,
    pub(crate) sent: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) forwarded: AtomicU64,
    pub(crate) spawned: AtomicU64,
    pub(crate) injected: AtomicU64,
    pub(crate) stolen: AtomicU64,
    pub(crate) offered: AtomicU64,
    pub(crate) sleeps: AtomicU64,
    pub(crate) deep_sleeps: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) discarded: AtomicU64,
    pub(crate) preempted: AtomicU64,
}

/// Adds `n` to a counter that only the calling core writes: a load and a
/// store, no read-modify-write.
#[inline]
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed) + n, Relaxed);
}

impl Counters {
    pub(crate) fn snapshot(&self) -> CoreStats {
        CoreStats {
            tasks_run: self.tasks_run.load(Relaxed),
            sent: self.sent.load(Relaxed),
            received: self.received.load(Relaxed),
            forwarded: self.forwarded.load(Relaxed),
            spawned: self.spawned.load(Relaxed),
            injected: self.injected.load(Relaxed),
            stolen: self.stolen.load(Relaxed),
            offered: self.offered.load(Relaxed),
            sleeps: self.sleeps.load(Relaxed),
            deep_sleeps: self.deep_sleeps.load(Relaxed),
            wakeups: self.wakeups.load(Relaxed),
            discarded: self.discarded.load(Relaxed),
            preempted: self.preempted.load(Relaxed),
            idle_spells: 0,
            counted_idle_spells: 0,
            shared_sleep_writes: 0,
        }
    }
}
