//! A pool's life: its state, stopping, winding down, and quiescence.
//!
//! `state` goes `READY` → `RUNNING` → `STOPPED`, and `STOPPED` is final.
//! Posting checks it: a closure offered to a stopped pool comes back to the
//! caller. Posts from outside the pool also count themselves in `in_flight`
//! around the check and the push, so whoever stops the pool can wait until
//! every push that saw it running has landed.
//!
//! A pool stopped while strands live first *winds down* (`WINDING`): it
//! refuses posts and spawns as if stopped, cancels every strand, and its
//! cores run only strands (fibres, and join jobs, which live on fibre
//! stacks), dropping every other task unrun. It is `STOPPED` once the
//! last strand has ended, so the strands' fibres go back to the free set
//! and their destructors run. Strands that cannot end (blocked where a
//! cancel does not reach, with nothing left to wake them) are abandoned:
//! when every core is asleep, nothing is queued and no deadline is armed,
//! the quiescence check below stops the pool anyway.
//!
//! Quiescence (no task anywhere, every core asleep) is detected by the last
//! core to fall asleep, after its final checks: it sees every list empty
//! and then the sleeping count equal to the pool size. A core asleep is
//! running nothing and its own lists are empty, so only code outside the
//! pool could add work. The detector moves `RUNNING` → `QUIESCING` (outside
//! posters wait while it is there), waits for `in_flight` to drain, checks
//! again, and then either stops the pool or goes back to `RUNNING`.
//!
//! Why the second check is enough. Call its steps: read the nudge count
//! (N0), read every list (L), read the sleep counters (C), read the nudge
//! count again (N1); stop only if the lists were empty, C counts every core
//! as sleeping, no strand is alive, and N0 = N1. No outside poster is
//! active during it, and none can start.
//!
//! - At C every core is inside a sleep: between its own increment of the
//!   sleeping count and the decrement that ends that sleep. A claimed core
//!   does not leave its sleep before its waker's decrement (`CLAIMED` in
//!   `crate::sleep`), so no core is counted twice, and a core inside a
//!   sleep runs nothing and holds nothing in its own queues. So at C no
//!   core runs a task.
//! - Suppose a task T still sits in core X's mailbox at C. L read that
//!   mailbox empty, so T was pushed after that read, by a core P that ran
//!   then and was asleep again by C. X is counted at C, so X armed its
//!   mailboxes before its increment and has not drained them since (a core
//!   drains only by searching). If the push came before that arm, the arm
//!   took T. Otherwise P found the sentinel and tried to wake X: a claim
//!   takes X off the count until it arms again (taking T); a core still
//!   `AWAKE` sees T in its final check and cancels its sleep; and a nudge
//!   bumps the nudge count before P can sleep, between N0 and N1.
//! - With the mesh, a task may also sit in a list of a hop on its way. A
//!   hop holds tasks out of the lists only while it drains, awake, and
//!   pushes them on before it can sleep: the argument above holds with
//!   P the hop. A rebuild (a core joining or leaving) moves tasks from the
//!   mesh to direct lists inside a write section, and L reads the mesh and
//!   the direct lists in one read section, so L sees them in one place or
//!   the other; the relay's pushes wake armed receivers like any push.
//! - The injector is pushed only from outside. A steal list or a LIFO
//!   slot is filled only by its owner, which searches it before it sleeps. A join slot is
//!   published by a core running the join, which waits for the job without
//!   sleeping. So at C those are empty too.
//!
//! An earlier version read no nudge count and let a claim store `AWAKE`
//! before its waker's decrement: a claimed core could run, sleep again and
//! be counted twice, and a QEMU run stopped its pool with tasks still
//! queued on the waker.

use super::shared::{Shared, ring};
use crate::atomics::unmodelled::Ordering::Relaxed;
use crate::atomics::{Ordering::SeqCst, spin_hint};
use crate::platform;
use crate::task::queue::TaskQueue;
use crate::task::{self, Action};
use core::ptr::NonNull;

pub(crate) const READY: u32 = 0;
pub(crate) const RUNNING: u32 = 1;
pub(crate) const QUIESCING: u32 = 2;
pub(crate) const STOPPED: u32 = 3;
/// Stopped for new work, its strands being cancelled and run to their end
/// (module docs).
pub(crate) const WINDING: u32 = 4;

impl Shared {
    /// Whether the cores are done: nothing runs in the pool any more.
    pub(crate) fn stopped(&self) -> bool {
        self.state.load(Relaxed) == STOPPED
    }

    /// Whether the pool takes no new work (stopped, or winding down).
    pub(crate) fn refuses_work(&self) -> bool {
        matches!(self.state.load(Relaxed), STOPPED | WINDING)
    }

    /// Whether the pool is winding down its strands.
    pub(crate) fn winding_down(&self) -> bool {
        self.state.load(Relaxed) == WINDING
    }

    /// Stops the pool: final. With strands alive it winds down first
    /// (module docs). Returns whether this call stopped it.
    pub(crate) fn stop(&self) -> bool {
        self.stop_publishing(|| {})
    }

    /// Stops the pool as [`stop`](Self::stop) does, and runs `publish`
    /// once, after the pool refuses work and before its strands are
    /// cancelled. A failure that stops the pool publishes itself there
    /// (a broken future): a strand waiting for it is woken by it, so it
    /// learns the cause rather than the wind-down's cancel, and whoever
    /// sees the failure also sees the pool refusing work.
    pub(crate) fn stop_publishing(&self, publish: impl FnOnce()) -> bool {
        loop {
            let state = self.state.load(SeqCst);
            let next = match state {
                STOPPED | WINDING => {
                    publish();
                    return false;
                }
                // A quiescence check ends soon, in `RUNNING` or `STOPPED`.
                QUIESCING => {
                    spin_hint();
                    continue;
                }
                RUNNING if self.strands.live() > 0 => WINDING,
                _ => STOPPED,
            };
            if self.state.compare_exchange(state, next, SeqCst, SeqCst).is_ok() {
                publish();
                if next == WINDING {
                    self.strands.cancel_all();
                }
                self.sleep.wake_all(ring);
                self.actor_ends.stopped();
                return true;
            }
        }
    }

    /// A strand of this pool ended (it no longer counts as live); the last
    /// one ends a wind-down.
    pub(crate) fn strand_ended(&self) {
        if self.strands.ended() && self.state.compare_exchange(WINDING, STOPPED, SeqCst, SeqCst).is_ok() {
            self.sleep.wake_all(ring);
        }
    }

    /// Called by a core that has just committed to sleep: if it is the last
    /// and nothing is queued anywhere, stop the pool, or, if strands still
    /// live with no deadline armed, look into a deadlock (module docs, and
    /// `super::deadlock`).
    ///
    /// Runs with interrupts masked: while the state is `QUIESCING`, a
    /// handler that posts (or wakes a strand) from outside waits for it,
    /// and must not do so on the core that holds it.
    pub(crate) fn check_quiescence(&self) {
        crate::platform::masked(|| self.check_quiescence_masked());
    }

    pub(super) fn check_quiescence_masked(&self) {
        if self.winding_down() {
            self.abandon_stuck_strands();
            return;
        }
        // Every core that falls asleep comes here, and reading every list
        // costs a load per pair of cores with direct mailboxes: only the
        // core that finds every member asleep reads them. (A filter, not
        // the check: if a core falls asleep after this read, it comes here
        // itself, and the check below decides.)
        if self.sleep.counters().sleeping() != self.member_count() || !self.looks_idle() {
            return;
        }
        if !self.stops_when_quiescent.load(Relaxed) || !self.may_settle() {
            if self.waits_beside_other_pools() {
                // Strands of several pools may wait on each other.
                self.check_across_pools();
            }
            return;
        }
        let deadlocked = self.with_posters_held(RUNNING, || {
            if self.looks_idle() && self.nothing_lives() {
                return (true, false);
            }
            (false, self.looks_idle() && self.may_settle() && !self.deadlock_pending.swap(true, SeqCst))
        });
        if deadlocked == Some(true) {
            self.post_deadlock_check();
        }
    }

    /// The second check of the module docs: moves the state `from` →
    /// `QUIESCING` (outside posters wait), lets the posts in flight land,
    /// and asks `decide` whether to stop. The state is then `STOPPED`
    /// (every core woken) or `from` again. Returns what `decide` returned
    /// beside that, or `None` if the state was not `from`.
    pub(super) fn with_posters_held<R>(&self, from: u32, decide: impl FnOnce() -> (bool, R)) -> Option<R> {
        self.state.compare_exchange(from, QUIESCING, SeqCst, SeqCst).ok()?;
        self.wait_for_outside_posts();
        let (stop, value) = decide();
        if stop {
            self.state.store(STOPPED, SeqCst);
            self.sleep.wake_all(ring);
            self.actor_ends.stopped();
        } else {
            self.state.store(from, SeqCst);
        }
        Some(value)
    }

    /// Winding down, every core asleep, nothing queued and no deadline
    /// armed: the strands still alive cannot end, so the pool stops
    /// without them. The same two checks as for quiescence, with outside
    /// posters (here only woken fibres) held off between them.
    pub(super) fn abandon_stuck_strands(&self) {
        let stuck = || self.looks_idle() && self.timers.is_empty();
        if stuck() && self.with_posters_held(WINDING, || (stuck(), ())).is_some() {
            let left = self.strands.live();
            if left > 0 && self.state.load(SeqCst) == STOPPED {
                crate::diag::warn(format_args!(
                    "a stopping pool abandoned {left} strands that could not end (shielded waits?)"
                ));
            }
        }
    }

    /// Whether an idle pool would settle now: stop (no strand lives), or
    /// be deadlocked (strands live, none has a deadline, nothing outside
    /// the pool may wake them, and no deadlock is being handled already).
    pub(super) fn may_settle(&self) -> bool {
        self.nothing_lives()
            || (self.timers.is_empty()
                && self.outside_waits.load(SeqCst) == 0
                && !platform::interrupts_bound()
                && !self.deadlock_pending.load(SeqCst)
                && !super::core_owners::another_pool_runs(self.slots, self))
    }

    /// Strands live and wait with no deadline armed while another pool
    /// holds cores of the machine: `super::deadlock`'s check across pools
    /// is worth making.
    fn waits_beside_other_pools(&self) -> bool {
        self.strands.live() > 0
            && self.timers.is_empty()
            && !self.deadlock_pending.load(SeqCst)
            && super::core_owners::another_pool_runs(self.slots, self)
    }

    /// Whether the pool is still while work waits in it: every core
    /// asleep but `awake` of them (the one checking, from a task), nothing
    /// queued, no deadline armed, strands or async tasks alive, running.
    /// What a deadlock check, a check across pools and a quiet spell ask.
    pub(super) fn still(&self, awake: usize) -> bool {
        self.sleep.counters().sleeping() + awake >= self.member_count()
            && self.lists_empty()
            && self.timers.is_empty()
            && !self.nothing_lives()
            && self.state.load(SeqCst) == RUNNING
    }

    /// No strand and no async task lives: a pool with nothing queued
    /// would stop.
    pub(super) fn nothing_lives(&self) -> bool {
        self.strands.live() == 0 && self.async_tasks.count() == 0
    }

    /// The checks of the module docs, in their order, but for the strands.
    pub(super) fn looks_idle(&self) -> bool {
        let nudges = self.sleep.nudges();
        self.lists_empty()
            && self.sleep.counters().sleeping() == self.member_count()
            && self.sleep.nudges() == nudges
    }

    pub(super) fn lists_empty(&self) -> bool {
        !self.injector.has_tasks()
            && !self.has_turns()
            && self.inbound.is_empty(self.worker_core().unwrap_or(0))
            && self.cores.iter().all(|core| !core.steal.has_tasks())
            && self.cores.iter().all(|core| !core.lifo.is_occupied())
            && !self.any_job_published()
    }

    /// Waits until no outside post is between its state check and its push.
    pub(crate) fn wait_for_outside_posts(&self) {
        while self.in_flight.load(SeqCst) != 0 {
            spin_hint();
        }
    }

    /// Discards every task left in any list or local queue, on the calling
    /// core with `me`'s cache. Returns how many.
    ///
    /// # Safety
    ///
    /// No core is running this pool, and no outside post is in flight.
    pub(crate) unsafe fn discard_everything(&self, me: usize) -> u64 {
        let mut leftovers = TaskQueue::new();
        for core in 0..self.slots {
            if self.cores[core].turn.own_side.is_evicted() {
                // Taken out for not answering: what its lists held was
                // taken then, and the core may yet come back to them.
                continue;
            }
            // SAFETY: no core runs (contract).
            let local = unsafe { self.local(core) };
            if let Some(task) = self.cores[core].lifo.take() {
                // SAFETY: taken from the slot, so ours.
                unsafe { leftovers.push_back(task) };
            }
            while let Some(task) = local.queue.pop_front().or_else(|| local.pinned.pop_front()) {
                // SAFETY: popped, so ours.
                unsafe { leftovers.push_back(task) };
            }
        }
        while let Some(task) = self.take_turn() {
            // SAFETY: taken from the turns, so ours.
            unsafe { leftovers.push_back(task) };
        }
        // SAFETY: no core runs (contract).
        unsafe { self.inbound.take_everything(&mut leftovers) };
        for list in self.cores.iter().map(|core| &*core.steal).chain(core::iter::once(&*self.injector)) {
            // SAFETY: a taken chain is ours.
            unsafe { leftovers.append_reversed(list.take_all()) };
        }
        let count = leftovers.len() as u64;
        // SAFETY: no core runs, so `me`'s local is ours; the tasks are ours.
        let cache = NonNull::from(&mut unsafe { self.local(me) }.cache);
        while let Some(task) = leftovers.pop_front() {
            // SAFETY: the task is ours; `cache` belongs to this pool.
            unsafe { task::Task::call(task, Action::Discard, cache) };
        }
        // Async tasks waiting for a wake are in no queue: the pool's list
        // has them. With the queues empty, nothing else polls them.
        // SAFETY: no core runs and no post is in flight (contract).
        count + unsafe { self.async_tasks.tear_down() } as u64
    }
}
