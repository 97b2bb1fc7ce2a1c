//! When a core may sleep, and who wakes it: the protocol of seed 004
//! (Rayon's sleep module), with Rabid's mailbox sentinels for work that is
//! addressed to one core.
//!
//! # States
//!
//! A core is *active* while it runs tasks, *idle* while it searches, and
//! *sleeping* once it is committed to waiting. Idle and sleeping together
//! are *inactive*. The pool keeps the counts of inactive and sleeping cores
//! and the jobs event counter (JEC) in one word ([`counters`]); each core
//! also has a state word here, `AWAKE` or `ASLEEP`, which is how a waker
//! claims one particular sleeper.
//!
//! # Falling asleep ([`Sleep::no_work_found`])
//!
//! 1. Search `rounds_until_sleepy` times (the caller's search between calls).
//! 2. Get sleepy: make the JEC even and remember it. Search once more.
//! 3. Arm the inbound mailboxes: swap the wake sentinel into each. Anything
//!    they held is work: back to step 2's search.
//! 4. If the JEC moved, back to step 2's search. Otherwise count one more
//!    sleeper, with a compare-exchange that also checks the JEC.
//! 5. Store `ASLEEP` in the core's state word. Fence (seq-cst).
//! 6. Final check: the injector, the mailboxes, and whether the pool is
//!    stopping. Anything there: cancel the sleep (below) and search.
//! 7. Wait until the state word is `AWAKE` again, re-checking step 6's
//!    conditions after every return from the wait, spurious or not.
//!
//! To cancel a sleep, the core compare-exchanges its own state from
//! `ASLEEP` to `AWAKE` and, only if that succeeds, takes itself off the
//! sleeping count. If it fails, a waker claimed it first and has already
//! taken it off.
//!
//! # Waking
//!
//! - **Work for anyone** ([`Sleep::new_jobs`], after a push to the injector
//!   or a core's steal list): if the work came from outside the pool, fence
//!   (seq-cst) first. Make the JEC odd if it was even, in the same
//!   operation that reads the counts. If there are at least as many idle
//!   (awake) cores as new jobs, wake nobody: they will find the work.
//!   Otherwise wake up to the shortfall, at most the sleeping count.
//! - **Work for one core** ([`Sleep::wake`]): a sender whose push replaced a
//!   mailbox sentinel wakes that core.
//! - To wake a core, fence (seq-cst), then compare-exchange its state from
//!   `ASLEEP` to `AWAKE`; the winner takes it off the sleeping count and
//!   rings its doorbell (`ring`, which is `platform::wake`). Decrementing at
//!   the waker, not the sleeper, lets the next poster see the new count at
//!   once.
//!
//! # Why no wake-up is lost (proof sketch)
//!
//! *Injected work.* A poster P does PushJob; Fence; ReadCounters. A sleeper
//! S does IncSleepers (step 4); StoreAsleep; Fence; ReadInjector (steps
//! 5-6). Seq-cst fences are totally ordered. If P's fence comes first,
//! S's read of the injector sees the job and S does not sleep. If S's fence
//! comes first, P reads the counters after S's increment and its claim
//! reads `ASLEEP` (or a later value), so if P decides to wake anyone it can
//! claim S. P decides not to wake only if some core is idle and awake; that
//! core is before step 4, and P's JEC update makes its step-4 check fail
//! (or, if the JEC wrapped around to the same value, its step-6 injector
//! read happens after P's push in the fence order and sees the job).
//!
//! *Work in a mailbox.* Arming (step 3) and pushing are read-modify-writes
//! of the mailbox head, so one comes first. If the push does, the arm takes
//! the task. If the arm does, the sender sees the sentinel and tries to
//! claim S. Its claim fails only if S is already awake (someone else
//! claimed it, or S has not yet stored `ASLEEP`). In the second case the
//! sender's push, fence and claim, and S's store, fence and step-6/7 reads,
//! form a store-load pattern closed by seq-cst fences: the claim read the
//! state before S's store, so S's fence follows the sender's in the fence
//! order, and S's later read of the head sees the push.
//!
//! *Stopping.* The pool's stop flag is written, then every core is claimed;
//! the same store-load argument makes a core that was not yet `ASLEEP` see
//! the flag at step 6 or 7 (the same fence argument).
//!
//! *Spurious returns* of the platform wait are harmless: step 7 re-checks.
//! `tests/loom_mailbox.rs` model-checks the sentinel. `tests/loom_sleep.rs`
//! models steps 1-7 against an injecting thread with two cores, but does
//! not pass under loom 0.7.2 yet (see that file), so it is not yet part of
//! `make loom`.

pub mod counters;

use crate::sync::{AtomicU32, CachePadded, Ordering::SeqCst, fence, spin_hint};
use alloc::boxed::Box;
use counters::{AtomicCounters, Counters};

const AWAKE: u32 = 0;
const ASLEEP: u32 = 1;

/// What the sleep protocol needs from the core that is falling asleep.
pub trait Sleeper {
    /// Step 3: swap the wake sentinel into every inbound mailbox, keeping
    /// whatever was there. Returns whether that was any work.
    fn arm_inbound(&mut self) -> bool;
    /// Step 6: whether the injector holds work.
    fn has_injected_jobs(&self) -> bool;
    /// Steps 6-7: whether a mailbox received work or the pool is stopping.
    fn should_wake(&self) -> bool;
    /// Called once per sleep, after the final check passed, before the
    /// first wait.
    fn committed(&mut self);
    /// Waits for the doorbell; may return spuriously.
    fn wait(&mut self);
}

/// Where an idle core is in the protocol; owned by that core.
pub struct IdleState {
    rounds: u32,
    jobs_counter: u32,
}

/// How a call to [`Sleep::no_work_found`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still searching.
    Searching,
    /// Slept, and was woken.
    Slept,
}

/// The pool's sleep state.
pub struct Sleep {
    counters: CachePadded<AtomicCounters>,
    states: Box<[CachePadded<AtomicU32>]>,
    rounds_until_sleepy: u32,
}

impl Sleep {
    /// Sleep state for `cores` cores (at most [`counters::MAX_CORES`]).
    pub fn new(cores: usize, rounds_until_sleepy: u32) -> Self {
        assert!(cores <= counters::MAX_CORES, "the counters hold at most {} cores", counters::MAX_CORES);
        Self {
            counters: CachePadded(AtomicCounters::new()),
            states: (0..cores).map(|_| CachePadded(AtomicU32::new(AWAKE))).collect(),
            rounds_until_sleepy,
        }
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        self.counters.load()
    }

    /// The calling core found nothing to do and starts searching.
    pub fn start_looking(&self) -> IdleState {
        self.counters.add_inactive();
        IdleState { rounds: 0, jobs_counter: 0 }
    }

    /// The calling core, idle until now, found work.
    pub fn work_found(&self) {
        self.counters.sub_inactive();
    }

    /// The calling core searched once more and found nothing: count the
    /// round, get sleepy, or sleep (module documentation, steps 1-7).
    pub fn no_work_found(&self, idle: &mut IdleState, core: usize, me: &mut impl Sleeper) -> Outcome {
        if idle.rounds < self.rounds_until_sleepy {
            idle.rounds += 1;
            spin_hint();
            Outcome::Searching
        } else if idle.rounds == self.rounds_until_sleepy {
            idle.jobs_counter = self.counters.get_sleepy();
            idle.rounds += 1;
            spin_hint();
            Outcome::Searching
        } else {
            self.sleep(idle, core, me)
        }
    }

    fn sleep(&self, idle: &mut IdleState, core: usize, me: &mut impl Sleeper) -> Outcome {
        if me.arm_inbound() {
            idle.rounds = self.rounds_until_sleepy;
            return Outcome::Searching;
        }
        let mut counters = self.counters.load();
        loop {
            if counters.jobs_counter() != idle.jobs_counter {
                idle.rounds = self.rounds_until_sleepy;
                return Outcome::Searching;
            }
            // Retry with what the failed exchange read, not a fresh load,
            // which could be stale (and is, forever, under loom).
            match self.counters.try_add_sleeping(counters) {
                Ok(()) => break,
                Err(actual) => counters = actual,
            }
        }
        let state = &self.states[core];
        state.store(ASLEEP, SeqCst);
        fence(SeqCst);
        if me.has_injected_jobs() || me.should_wake() {
            self.cancel(core);
            idle.rounds = self.rounds_until_sleepy;
            return Outcome::Searching;
        }
        me.committed();
        while state.load(SeqCst) == ASLEEP {
            if me.should_wake() {
                self.cancel(core);
                break;
            }
            me.wait();
        }
        idle.rounds = 0;
        Outcome::Slept
    }

    /// The sleeper ends its own sleep, unless a waker got there first.
    fn cancel(&self, core: usize) {
        if self.states[core].compare_exchange(ASLEEP, AWAKE, SeqCst, SeqCst).is_ok() {
            self.counters.sub_sleeping();
        }
    }

    /// Wakes `core` if it is asleep: claims it, takes it off the sleeping
    /// count and rings it. Returns whether this call woke it.
    pub fn wake(&self, core: usize, ring: impl FnOnce(usize)) -> bool {
        // Orders whatever the waker published (a push, the stop flag)
        // before its read of the state word, against the sleeper's store of
        // `ASLEEP` and its fence: the store-load pattern of the proof.
        fence(SeqCst);
        if self.states[core].compare_exchange(ASLEEP, AWAKE, SeqCst, SeqCst).is_err() {
            return false;
        }
        self.counters.sub_sleeping();
        ring(core);
        true
    }

    /// Announces `jobs` new jobs for any core; wakes sleepers only if too
    /// few cores are idle and awake to take them. `injected` says the jobs
    /// came from outside the pool (the fence of the proof); `start` is where
    /// to begin looking for sleepers, to spread wake-ups. Returns how many
    /// cores it woke.
    pub fn new_jobs(&self, jobs: usize, injected: bool, start: usize, ring: impl Fn(usize)) -> usize {
        if injected {
            fence(SeqCst);
        }
        let counters = self.counters.announce_jobs();
        let (sleeping, idle) = (counters.sleeping(), counters.idle_awake());
        if sleeping == 0 || idle >= jobs {
            return 0;
        }
        let wanted = (jobs - idle).min(sleeping);
        let cores = self.states.len();
        let mut woken = 0;
        for offset in 0..cores {
            if woken == wanted {
                break;
            }
            if self.wake((start + offset) % cores, &ring) {
                woken += 1;
            }
        }
        woken
    }

    /// Wakes every sleeping core (the pool is stopping).
    pub fn wake_all(&self, ring: impl Fn(usize)) {
        for core in 0..self.states.len() {
            self.wake(core, &ring);
        }
    }
}
