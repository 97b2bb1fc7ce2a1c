//! The watch for cores that stop answering: a core stuck with its
//! interrupts masked (a strand spinning in a critical section, a driver
//! polling a device that never answers) holds whatever is queued for it,
//! and the strand it runs, for ever.
//!
//! # The rule
//!
//! While some core of the pool is awake and another sleeps, one sleeping
//! core is the pool's *watcher* (the first to commit to sleep while
//! another core was awake). It wakes every *scan* (an eighth of the
//! pool's bound, [`scan_of`]) and looks at every other member that is
//! awake:
//!
//! 1. A core whose *heartbeat* (tasks run and sleeps, from its counters)
//!    moved since the last look is busy: nothing more.
//! 2. One whose heartbeat has not moved for a scan gets a *ping*: roving
//!    asks the platform for its timer interrupt (`request_tick_on`), whose
//!    call into roving (`preempt::on_tick`) counts an answer in the core's
//!    turn record. A long task that answers is looked at again later.
//! 3. One whose ping has gone unanswered for the pool's bound (it is
//!    sent again at every scan meanwhile, in case one is lost)
//!    ([`Config::silent_core_after`](super::Config::silent_core_after),
//!    1 s by default on bare metal) is *silent*: the watcher posts a task
//!    that takes it out of the pool (`super::take_out`).
//!
//! Only a pool on a platform that can preempt watches: the answer is its
//! timer interrupt's call into roving, which other platforms never make.
//!
//! A core that answers nothing for the bound has had its interrupts
//! masked all that time: a timer interrupt is taken as soon as they are
//! unmasked. So the bound is how long a core may keep them masked before
//! it is given up; the core is found within the bound plus two scans
//! (a quarter of the bound) of its last task starting, once a core of the
//! pool is asleep to watch.
//! A pool whose every other core is busy has no watcher: its busy cores
//! would not take the silent core's work before they idle anyway.
//!
//! The watcher gives the role up when it wakes for work; the next core
//! to commit to sleep while another is awake takes it. Its records (one
//! per core) stay with the pool, so a ping outlives a change of watcher.

use super::shared::Shared;
use super::take_out::TakeOut;
use crate::atomics::unmodelled::{AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use crate::platform::{self, instant::Instant};
use crate::protocol::own_side::Look;
use crate::spin_lock::SpinLock;
use crate::task::{self, IntoTask};
use alloc::vec::Vec;
use core::time::Duration;

/// How often the watcher looks, for a pool whose bound is `bound`: an
/// eighth of it, so a silent core is found within the bound and two
/// scans, and an idle watcher wakes eight times per bound, not more (125
/// ms apart by default), while another core is busy.
pub(crate) fn scan_of(bound: Duration) -> Duration {
    bound / 8
}

/// No core watches.
const NOBODY: usize = usize::MAX;

/// A pool's watch for silent cores (module docs).
pub(super) struct SilentWatch {
    /// The pool's bound, if it watches: only on a platform that can
    /// preempt, whose timer interrupt calls `on_tick` and so answers pings
    /// (another platform's cores would all look silent).
    bound: Option<Duration>,
    /// The watching core, or [`NOBODY`].
    watcher: AtomicUsize,
    /// When the watcher looks next, in platform ticks; [`NOT_DUE`] for
    /// never. Read without the lock by the watcher as it wakes.
    due: AtomicU64,
    /// By core.
    seen: SpinLock<Vec<Seen>>,
}

/// `due` when no look is planned.
const NOT_DUE: u64 = u64::MAX;

/// What the watch knows of one core.
#[derive(Clone, Copy, Default)]
struct Seen {
    heartbeat: u64,
    /// When the heartbeat was last seen to move, if the core was awake.
    since: Option<Instant>,
    /// The ping sent, with the core's answers before it.
    ping: Option<(u32, Instant)>,
    /// Found silent: its take-out was posted.
    given_up: bool,
    /// Its take-out found it inside roving's own code: each look checks
    /// whether it has left, and posts the take-out again if so.
    retry: bool,
}

impl SilentWatch {
    pub(super) fn new(slots: usize, bound: Option<Duration>) -> Self {
        Self {
            bound: bound.filter(|_| platform::can_preempt()),
            watcher: AtomicUsize::new(NOBODY),
            due: AtomicU64::new(NOT_DUE),
            seen: SpinLock::new(alloc::vec![Seen::default(); slots]),
        }
    }
}

impl Drop for SilentWatch {
    fn drop(&mut self) {
        let seen = self.seen.lock();
        let unanswered = seen.iter().filter(|seen| seen.ping.is_some() && !seen.given_up).count();
        crate::preempt::deferral::pings_settled(unanswered);
    }
}

impl Shared {
    /// Core `me` has committed to sleep: if the pool watches for silent
    /// cores, another member is awake and nobody watches, `me` watches.
    /// Returns whether it does (it may have watched since an earlier sleep).
    #[inline]
    pub(super) fn begin_silent_watch(&self, me: usize) -> bool {
        if self.silent_watch.bound.is_none() {
            return false;
        }
        let watcher = self.silent_watch.watcher.load(Relaxed);
        watcher == me
            || (watcher == NOBODY
                && self.sleep.counters().sleeping() < self.member_count()
                && self.begin_silent_watch_of(me))
    }

    #[cold]
    fn begin_silent_watch_of(&self, me: usize) -> bool {
        let began = self.silent_watch.watcher.compare_exchange(NOBODY, me, SeqCst, SeqCst).is_ok();
        if began && let Some(bound) = self.silent_watch.bound {
            let next = (Instant::now() + scan_of(bound)).ticks();
            let _ = self.silent_watch.due.compare_exchange(NOT_DUE, next, SeqCst, SeqCst);
        }
        began
    }

    /// When core `me`, asleep, must wake to look, if it watches.
    #[cold]
    pub(super) fn silent_watch_deadline(&self, me: usize) -> Option<Instant> {
        if self.silent_watch.watcher.load(Relaxed) != me {
            return None;
        }
        let due = self.silent_watch.due.load(Relaxed);
        (due != NOT_DUE).then(|| Instant::from_ticks(due))
    }

    /// Core `me`, which began to watch in this sleep, woke from a wait of
    /// it: if it still watches and the look is due, it looks (module docs).
    #[cold]
    pub(super) fn silent_watch_woke(&self, me: usize) {
        if self.silent_watch.watcher.load(Relaxed) == me
            && Instant::now().ticks() >= self.silent_watch.due.load(Relaxed)
        {
            self.look_for_silent_cores(me);
        }
    }

    /// Core `me`, which watched in its sleep, woke for work: it stops
    /// watching, if it still did.
    #[cold]
    pub(super) fn end_silent_watch(&self, me: usize) {
        if self.silent_watch.watcher.load(Relaxed) == me {
            self.silent_watch.watcher.store(NOBODY, SeqCst);
        }
    }

    #[cold]
    fn look_for_silent_cores(&self, me: usize) {
        let Some(bound) = self.silent_watch.bound else { return };
        let now = Instant::now();
        let mut silent = Vec::new();
        let mut retries = Vec::new();
        {
            let mut records = self.silent_watch.seen.lock();
            if now.ticks() < self.silent_watch.due.load(SeqCst) {
                return;
            }
            self.silent_watch.due.store((now + scan_of(bound)).ticks(), SeqCst);
            for core in (0..self.slots).filter(|&core| core != me) {
                let seen = &mut records[core];
                if seen.retry && self.cores[core].turn.own_side.look() == Look::Taken {
                    seen.retry = false;
                    retries.push(core);
                }
                if seen.given_up || !self.is_member(core) {
                    continue;
                }
                if let Some(silent_for) = self.look_at(core, seen, now, bound) {
                    seen.given_up = true;
                    silent.push((core, silent_for));
                }
            }
            if self.sleep.counters().sleeping() >= self.member_count() {
                // Every member asleep: nothing left to watch until one wakes.
                self.silent_watch.due.store(NOT_DUE, SeqCst);
                self.silent_watch.watcher.store(NOBODY, SeqCst);
            }
        }
        for (core, silent_for) in silent {
            self.post_take_out(TakeOut { core, silent_for }, true);
        }
        for core in retries {
            self.post_take_out(TakeOut { core, silent_for: bound }, false);
        }
    }

    /// A take-out found core `core` inside roving's own code: the watch
    /// looks again at each scan.
    pub(super) fn silent_watch_retry(&self, core: usize) {
        self.silent_watch.seen.lock()[core].retry = true;
    }

    /// One look at `core` (module docs, the rule's three steps): how long
    /// it has been silent, if it is.
    fn look_at(&self, core: usize, seen: &mut Seen, now: Instant, bound: Duration) -> Option<Duration> {
        let stats = &self.cores[core].stats;
        let heartbeat = stats.tasks_run.load(Relaxed).wrapping_add(stats.sleeps.load(Relaxed));
        let answered = self.cores[core].turn.answered.load(Relaxed);
        let awake = self.sleep.is_awake(core);
        if !awake || heartbeat != seen.heartbeat {
            self.settle_ping(seen);
            *seen = Seen { heartbeat, since: awake.then_some(now), ..Seen::default() };
            return None;
        }
        match seen.ping {
            Some((before, _)) if answered != before => {
                self.settle_ping(seen);
                seen.since = Some(now);
            }
            Some((_, at)) => {
                let silent_for = now.duration_since(at);
                if silent_for >= bound {
                    // Its ping stays counted: a taken-out core that
                    // answers at last must reach roving (`on_tick`).
                    return Some(silent_for);
                }
                // Again at every scan: an interrupt may end without
                // asking roving (one that interrupted a handler), and a
                // ping lost so must not make a live core look silent.
                platform::request_tick_on(core);
            }
            None => {
                let since = *seen.since.get_or_insert(now);
                if now.duration_since(since) >= scan_of(bound) {
                    seen.ping = Some((answered, now));
                    crate::preempt::deferral::ping_sent();
                    platform::request_tick_on(core);
                }
            }
        }
        None
    }

    fn settle_ping(&self, seen: &mut Seen) {
        if seen.ping.take().is_some() {
            crate::preempt::deferral::pings_settled(1);
        }
    }

    /// Posts a take-out as a task (`first`: not a retry): the watcher is in
    /// its sleep, and the take-out moves work.
    fn post_take_out(&self, take_out: TakeOut, first: bool) {
        let Some(shared) = self.this.upgrade() else { return };
        let core = take_out.core;
        match task::closure::Closure(move || shared.take_out(take_out, first)).into_task(None) {
            Ok(task) => self.inject(task, None),
            // Without memory for the task, the watcher's own core does it
            // when it next looks: the record is cleared for that.
            Err(_) => self.silent_watch.seen.lock()[core].given_up = false,
        }
    }

    /// Called on core `me` by its timer interrupt's call into roving: it
    /// answers any ping (module docs). A core taken out of the pool that
    /// answers at last parks here, touching nothing of the pool.
    #[inline]
    pub(crate) fn answer_ping(&self, me: usize) {
        let turn = &self.cores[me].turn;
        turn.answered.store(turn.answered.load(Relaxed).wrapping_add(1), Relaxed);
        if turn.own_side.is_evicted() {
            super::own_lists::park_taken_out(me);
        }
    }
}
