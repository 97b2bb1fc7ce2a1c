//! The waker's side of the sleep protocol (`crate::sleep`'s spec): waking
//! one core, announcing jobs to a pool whose cores may sleep, and waking
//! every core when the pool stops.

use super::spell_stats::SpellStats;
use super::{ASLEEP, AWAKE, CLAIMED, NUDGED, REGISTERING, Roused, SleepState};
use crate::atomics::{Ordering::SeqCst, fence};

impl SleepState {
    /// Wakes `core` if it is asleep or falling asleep: claims it, takes it
    /// off the sleeping count and rings it, or nudges it back to searching.
    /// Returns whether this call did either.
    pub fn wake(&self, core: usize, ring: impl FnOnce(usize)) -> bool {
        self.rouse(core, ring).is_some()
    }

    /// As [`SleepState::wake`], saying which it did, or `None` if neither.
    pub fn rouse(&self, core: usize, ring: impl FnOnce(usize)) -> Option<Roused> {
        // Orders whatever the waker published (a push, the stop flag)
        // before its read of the state word, against the sleeper's store of
        // `ASLEEP` and its fence: the store-load pattern of the proof.
        fence(SeqCst);
        let core_state = &*self.states[core];
        let state = &core_state.state;
        let mut seen = ASLEEP;
        loop {
            let next = match seen {
                ASLEEP => CLAIMED,
                REGISTERING => NUDGED,
                _ => return None,
            };
            match state.compare_exchange(seen, next, SeqCst, SeqCst) {
                Ok(_) if next == CLAIMED => {
                    crate::chaos::point();
                    // (Its count in the sleeper's statistics is the
                    // sleeper's to add, on waking.)
                    self.counters.sub_sleeping();
                    let claim = core_state.count_claim();
                    crate::chaos::point();
                    state.swap(AWAKE, SeqCst);
                    ring(core);
                    return Some(Roused::Claimed { claim });
                }
                Ok(_) => {
                    self.nudges.fetch_add(1, SeqCst);
                    return Some(Roused::Nudged);
                }
                Err(actual) => seen = actual,
            }
        }
    }

    /// Announces `jobs` new jobs for any core; wakes sleepers only if too
    /// few cores are idle and awake to take them. `from` is the pool core
    /// that made them, or `None` if they came from outside the pool (the
    /// fence of the proof); `start` is where to begin looking for sleepers,
    /// to spread wake-ups. Calls `on_woken` with each core it woke, and
    /// how.
    #[inline]
    pub fn new_jobs(
        &self,
        jobs: usize,
        from: Option<usize>,
        start: usize,
        ring: impl Fn(usize),
        on_woken: impl FnMut(usize, Roused),
    ) {
        if from.is_none() {
            fence(SeqCst);
        }
        crate::chaos::point();
        let (counters, attempts) = self.counters.announce_jobs();
        if attempts != 0 {
            SpellStats::add(&self.spell_stats_of(from).shared_writes, attempts.into());
        }
        let sleeping = counters.sleeping();
        if sleeping != 0 {
            self.wake_for_jobs(jobs, sleeping, start, ring, on_woken);
        }
    }

    /// The rest of [`SleepState::new_jobs`] when cores sleep: wakes as many as
    /// the idle cores that are awake leave the jobs without. Out of line,
    /// so that the common case (nobody sleeps) saves no registers.
    #[inline(never)]
    fn wake_for_jobs(
        &self,
        jobs: usize,
        sleeping: usize,
        start: usize,
        ring: impl Fn(usize),
        mut on_woken: impl FnMut(usize, Roused),
    ) {
        // Sleeping cores are counted idle too. The sum is no snapshot, but
        // never more than the cores there are (`idle_count`).
        let idle = self.idle.up_to(start, sleeping + jobs).saturating_sub(sleeping);
        if idle >= jobs {
            return;
        }
        let wanted = (jobs - idle).min(sleeping);
        let cores = self.states.len();
        let mut woken = 0;
        for offset in 0..cores {
            if woken == wanted {
                break;
            }
            let core = (start + offset) % cores;
            if let Some(roused) = self.rouse(core, &ring) {
                on_woken(core, roused);
                woken += 1;
            }
        }
    }

    /// Wakes every sleeping core (the pool is stopping).
    pub fn wake_all(&self, ring: impl Fn(usize)) {
        for core in 0..self.states.len() {
            self.wake(core, &ring);
        }
    }
}
