//! When a core may sleep, and who wakes it: idle cores count themselves,
//! get sleepy and sleep under a jobs event counter that no announced job
//! gets past, and the mailboxes' wake sentinels cover work addressed to
//! one core.
//!
//! # States
//!
//! A core is *active* while it runs tasks, *idle* while it searches, and
//! *sleeping* once it has counted itself as a sleeper; a sleeping core is
//! still counted idle. The pool keeps the count of sleeping cores and the
//! jobs event counter (JEC) in one word ([`counters`]), and the count of
//! idle cores in one word per group of cores ([`idle_count`]). Each core
//! also has a state word here, which is how a waker reaches one particular
//! core:
//!
//! | state         | meaning                                    | left by             |
//! |---------------|--------------------------------------------|---------------------|
//! | `AWAKE`       | searching or running tasks                 | the core (step 4)   |
//! | `REGISTERING` | counting itself as a sleeper (step 4)      | the core, or a nudge|
//! | `NUDGED`      | a waker sent it back to searching          | the core            |
//! | `ASLEEP`      | committed to sleep (steps 5-7)             | a claim, or a cancel|
//! | `CLAIMED`     | a waker is taking it off the sleeping count| that waker          |
//!
//! # Falling asleep ([`SleepState::no_work_found`])
//!
//! 0. Search up to [`QUIET_ROUNDS`] times without telling anyone: the core
//!    still counts as active. Count it idle, in its group's word, as the
//!    last of those rounds ends, before the pause after it.
//! 1. Search until `rounds_until_sleepy` rounds have passed, the quiet
//!    ones included (the caller's search between calls).
//! 2. Get sleepy: make the JEC even and remember it. Search once more.
//! 3. Arm the inbound mailboxes: swap the wake sentinel into each. Anything
//!    they held is work: back to step 2's search.
//! 4. Store `REGISTERING`. If the JEC moved, store `AWAKE` and go back to
//!    step 2's search. Otherwise count one more sleeper, with a
//!    compare-exchange that also checks the JEC.
//! 5. Compare-exchange the state from `REGISTERING` to `ASLEEP`. If that
//!    fails, a waker nudged the core: it takes itself off the sleeping
//!    count, stores `AWAKE` and searches. Fence (seq-cst).
//! 6. Final check: the injector, the mailboxes, and whether the pool is
//!    stopping. Anything there: cancel the sleep (below) and search.
//! 7. Wait until the state word is `AWAKE` again, re-checking step 6's
//!    conditions after every return from the wait, spurious or not. A
//!    pool's core also re-checks its own queues there: an interrupt handler
//!    on that core may have queued work for it during the wait
//!    (`crate::pool`'s idle wait), and nothing else would wake it for that.
//!
//! Most idle spells of a busy pool are short: a core runs out of work and
//! a message arrives a few hundred nanoseconds later. Counting a spell in
//! and out costs two read-modify-writes of a shared word, and its line
//! crosses between cores each time. Step 0 keeps the shortest spells off
//! every shared word, and the longer ones write only their group's idle
//! count, which the group's cores read after each task; the pool-wide
//! counters word is written when a core gets sleepy, sleeps or is woken,
//! and when a job is announced to a sleepy pool. A quiet core is busy as
//! far as wakers know. That can only cost extra wake-ups (a waker that
//! sees no idle core wakes a sleeper for work the quiet core may take
//! first) and work offered a few rounds later (offers go only to cores
//! counted idle), never a lost one: see the proof below.
//!
//! To cancel a sleep, the core compare-exchanges its own state from
//! `ASLEEP` to `AWAKE` and, only if that succeeds, takes itself off the
//! sleeping count. If it fails, a waker claimed it first and takes it off;
//! the core waits, as in step 7, until that waker has stored `AWAKE`.
//!
//! Claims are numbered per core. The winner of a claim, alone between
//! `CLAIMED` and `AWAKE`, counts it beside the state word; the core reads
//! the count once it sees `AWAKE` ([`Sleeper::claimed`]). The trace pairs
//! a wake-up with the sleep it ended by that number: the waker's record
//! and the sleeper's are taken on different cores in either order, so
//! their times alone cannot.
//!
//! # Waking
//!
//! - **Work for anyone** ([`SleepState::new_jobs`], after a push to the injector
//!   or a core's steal list): if the work came from outside the pool, fence
//!   (seq-cst) first. Make the JEC odd if it was even, in the same
//!   operation that reads the sleeping count. If nobody sleeps, wake
//!   nobody. Otherwise read the idle counts, group by group, until they
//!   show as many idle awake cores (idle minus sleeping) as new jobs: then
//!   wake nobody, as they will find the work. Otherwise wake up to the
//!   shortfall, at most the sleeping count.
//! - **Work for one core** ([`SleepState::wake`]): a sender whose push replaced a
//!   mailbox sentinel wakes that core.
//! - To wake a core, fence (seq-cst), then read its state word:
//!   - `ASLEEP`: claim it (compare-exchange to `CLAIMED`); the winner takes
//!     it off the sleeping count, stores `AWAKE`, and only then rings its
//!     doorbell (`ring`, which is `platform::wake`). Decrementing at the
//!     waker, not the sleeper, lets the next poster see the new count at
//!     once.
//!   - `REGISTERING`: nudge it (compare-exchange to `NUDGED`). It is not
//!     waiting yet, so there is nothing to ring; step 5 sends it back to
//!     searching, and it takes itself off the count.
//!   - anything else: it is awake already; this waker did not wake it.
//!
//! Every write of a state word is a read-modify-write (a swap where a store
//! would do), so each word's writes form one chain. loom otherwise lets a
//! long run of plain stores and exchanges on one word read values no
//! seq-cst machine could, and reported deadlocks that were not there.
//!
//! `CLAIMED` is why the sleeping count never counts a core twice. A core
//! can leave its wait without its doorbell (a spurious return, or another
//! core's event on aarch64, where SEV reaches every core). If the claim
//! stored `AWAKE` directly, the core could leave, run tasks and count its
//! next sleep before its waker took the last one off: the count would
//! include it twice while some other core (that waker) runs tasks. Pool
//! quiescence reads "every core is asleep" off that count, and a QEMU run
//! whose waker's vCPU was descheduled in that window stopped the pool with
//! tasks still queued on the waker. With `CLAIMED`, a core is counted only
//! from its own increment until its decrement (by itself or its waker), and
//! it runs nothing in between, so the count is at most the number of cores
//! that run nothing.
//!
//! A lock per core, held by the sleeper from its count to its wait, would
//! close the window between counting a sleeper and blocking; `REGISTERING`
//! closes it without a lock. Without it, a waker can count a core that
//! has not yet stored `ASLEEP`, fail to claim it and give up, and for work
//! on a steal list nothing in the final check would notice. The loom model
//! of offered work (`tests/loom_sleep.rs`) found exactly that.
//!
//! # Why no wake-up is lost (proof sketch)
//!
//! Every atomic access in the protocol (the counters, the idle counts, the
//! state words, the list heads, the stop flag) is seq-cst, so executions are interleavings
//! of those accesses in one total order; the fences are kept for the
//! orderings a future weakening would need. Suppose a job J is pushed (P)
//! and announced (A) by a waker W, and later every core is asleep, waiting,
//! never to be claimed, while J is still queued. Look at each core C's last
//! sleep: its last search Q, its JEC snapshot G, its counting R, and its
//! store of `REGISTERING` (before R) and of `ASLEEP` (after R, succeeded).
//!
//! - Q comes before P, or Q would have found J.
//! - R comes before A. If G came after A, then Q (after G) came after P. If
//!   A fell between G and R, then at R the JEC differed from the snapshot
//!   (A made it odd, or found it odd, which only happens if someone moved
//!   it after G), so R would have failed.
//! - So A reads every core counted as sleeping. W then reads the idle
//!   counts. However their words are read (one group at a time, not as a
//!   snapshot), each core adds at most one to their sum, so the sum is at
//!   most the number of cores, which is the sleeping count A read: W sees
//!   no core idle and awake. W wants to wake one core, and tries each in
//!   turn. Each try comes after C's R, so C's
//!   state is `REGISTERING` (the nudge succeeds, so C's step 5 fails), or
//!   `ASLEEP` (the claim succeeds, so C was claimed). Both contradict the
//!   choice of C's last sleep.
//!
//! Quiet rounds (step 0) come before G, so they do not enter the argument:
//! a quiet core's last sleep is preceded by its count as idle, its G, its
//! Q and its R like any other, and until it is counted, W's read of the
//! idle counts sees it as active. Seeing a core as active only ever makes
//! W wake more cores, never fewer. The offers' test
//! ([`SleepState::anyone_idle`]) misses the idle cores of other groups that
//! are not yet sleepy; it decides only whether work is offered, never
//! whether an offer is announced, so it costs delay, not wake-ups.
//!
//! The JEC is a 32-bit counter; if exactly 2^32 announcements fell between
//! one core's G and R, its R would succeed wrongly. For injected work the
//! final check of step 6 still sees the injector (its read comes after the
//! core's fence, which follows W's in the fence order whenever W's try read
//! the state before `ASLEEP`); steal lists are left to the owner, which
//! searches its own list.
//!
//! *Work in a mailbox.* Arming (step 3) and pushing are read-modify-writes
//! of the mailbox head, so one comes first. If the push does, the arm takes
//! the task. If the arm does, the sender sees the sentinel and tries the
//! core's state. `REGISTERING` or `ASLEEP`: nudged or claimed, it searches.
//! `AWAKE`: the core has not yet stored `REGISTERING` (or stopped sleeping
//! for another reason and will search again), so its step-6 read of the
//! mailbox comes after the push and sees it.
//!
//! *Stopping.* The pool's stop flag is written, then every core is tried,
//! and the same argument makes a core that was `AWAKE` see the flag at step
//! 6 or 7.
//!
//! *Spurious returns* of the platform wait are harmless: step 7 re-checks.
//!
//! `tests/loom_mailbox.rs` model-checks the sentinel, and
//! `tests/loom_sleep.rs` steps 1-7 with two cores and an injected or an
//! offered job, in `make loom`.

pub mod counters;
pub mod idle_count;
pub mod spell_stats;
mod waking;
pub mod watch;

use crate::atomics::{AtomicU32, CachePadded, Ordering::SeqCst, fence};
use alloc::boxed::Box;
use counters::{AtomicCounters, SleepCounters};
use idle_count::IdleCount;
use spell_stats::SpellStats;

/// Searching or running tasks.
const AWAKE: u32 = 0;
/// Committed to sleep (steps 5-7): only a claim or a cancel ends it.
const ASLEEP: u32 = 1;
/// Counting itself as a sleeper (step 4): between the two stores of the
/// state word, so a waker never misses a core it has counted.
const REGISTERING: u32 = 2;
/// A waker found the core `REGISTERING` and sent it back to searching.
const NUDGED: u32 = 3;
/// A waker claimed the core and is taking it off the sleeping count; the
/// core stays in its sleep until the waker stores `AWAKE`.
const CLAIMED: u32 = 4;

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
    /// Passes the time after fruitless round `round` of searching.
    fn between_rounds(&mut self, round: u32) {
        let _ = round;
        core::hint::spin_loop();
    }
    /// The sleep that is ending was ended by a waker's claim, the core's
    /// `claim`th ([`Roused::Claimed`]), or, if the core had found work and
    /// was cancelling it, claimed before it began; not called for a sleep
    /// the core ended itself. The trace names the waker with it.
    fn claimed(&mut self, claim: u32) {
        let _ = claim;
    }
}

/// What [`SleepState::rouse`] did to a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Roused {
    /// Claimed it in its sleep: the core's `claim`th claim (wrapping; 0
    /// in builds without feature `trace`, which count no claims), which
    /// the core's [`Sleeper::claimed`] hears of, so a trace can pair
    /// the wake-up with the end of the sleep it ended. A claim may find a
    /// core whose sleep is cancelled before it begins: that ends no sleep.
    Claimed {
        /// The core's claims so far, this one included.
        claim: u32,
    },
    /// Found it counting itself as a sleeper and sent it back to
    /// searching: it ends no sleep.
    Nudged,
}

/// A core's state word, and (for the trace, and in loom's models) the
/// claims on it so far, wrapping, which only a claim's winner writes,
/// while the state is `CLAIMED`. Without feature `trace` claims are not
/// counted, so the wake-up paths cost what they did before there was a
/// trace, and every claim is number 0.
struct CoreState {
    state: AtomicU32,
    #[cfg(any(feature = "trace", loom))]
    claims: AtomicU32,
}

impl CoreState {
    fn new() -> Self {
        Self {
            state: AtomicU32::new(AWAKE),
            #[cfg(any(feature = "trace", loom))]
            claims: AtomicU32::new(0),
        }
    }

    /// Counts a claim: called by its winner alone, before `AWAKE`.
    #[inline]
    fn count_claim(&self) -> u32 {
        #[cfg(any(feature = "trace", loom))]
        {
            use crate::atomics::Ordering::Relaxed;
            let claim = self.claims.load(Relaxed).wrapping_add(1);
            self.claims.store(claim, Relaxed);
            claim
        }
        #[cfg(not(any(feature = "trace", loom)))]
        0
    }

    /// The last claim counted: read by the core after it saw `AWAKE`.
    #[inline]
    fn last_claim(&self) -> u32 {
        #[cfg(any(feature = "trace", loom))]
        return self.claims.load(crate::atomics::Ordering::Relaxed);
        #[cfg(not(any(feature = "trace", loom)))]
        0
    }
}

/// Fruitless search rounds an idle core makes before it counts itself as
/// idle in the pool's counters (step 0), at most the pool's rounds until
/// sleepy. A round of the pool's search costs some tens of nanoseconds on a
/// host with two cores; eight cover the gap in a message ping-pong between
/// cores, the commonest short idle spell.
pub const QUIET_ROUNDS: u32 = 8;

/// Where an idle core is in the protocol; owned by that core.
pub struct IdleState {
    rounds: u32,
    jobs_counter: u32,
    /// Whether the core is counted idle (step 0 is over).
    counted: bool,
    core: usize,
}

/// How a call to [`SleepState::no_work_found`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still searching.
    Searching,
    /// Slept, and was woken.
    Slept,
}

/// The pool's sleep state.
pub struct SleepState {
    counters: CachePadded<AtomicCounters>,
    idle: IdleCount,
    states: Box<[CachePadded<CoreState>]>,
    /// Nudges so far (wrapping): a nudged core is still on the sleeping
    /// count, with work waiting for it, until it sees the nudge.
    nudges: CachePadded<AtomicU32>,
    rounds_until_sleepy: u32,
    quiet_rounds: u32,
    /// Per core, then one for callers outside the pool.
    spell_stats: Box<[CachePadded<SpellStats>]>,
}

impl SleepState {
    /// The sleep state for `cores` cores (at most [`counters::MAX_CORES`]),
    /// counting idle cores by [`idle_count::GROUP`].
    pub fn new(cores: usize, rounds_until_sleepy: u32) -> Self {
        Self::with_idle_groups(cores, rounds_until_sleepy, idle_count::GROUP)
    }

    /// As [`SleepState::new`], with idle cores counted in groups of `group`
    /// (the loom models use groups of one core).
    pub fn with_idle_groups(cores: usize, rounds_until_sleepy: u32, group: usize) -> Self {
        assert!(cores <= counters::MAX_CORES, "the counters hold at most {} cores", counters::MAX_CORES);
        Self {
            counters: CachePadded(AtomicCounters::new()),
            idle: IdleCount::new(cores, group),
            states: (0..cores).map(|_| CachePadded(CoreState::new())).collect(),
            nudges: CachePadded(AtomicU32::new(0)),
            rounds_until_sleepy,
            quiet_rounds: QUIET_ROUNDS.min(rounds_until_sleepy),
            spell_stats: (0..=cores).map(|_| CachePadded(SpellStats::default())).collect(),
        }
    }

    /// Core `core`'s idle spells, counted spells and writes of the shared
    /// counters ([`SpellStats`]).
    pub fn spell_stats(&self, core: usize) -> (u64, u64, u64) {
        self.spell_stats[core].read()
    }

    /// The spell figures of `core`, or of callers outside the pool.
    fn spell_stats_of(&self, core: Option<usize>) -> &SpellStats {
        &self.spell_stats[core.unwrap_or(self.states.len())]
    }

    fn count_writes(&self, core: usize, n: u32) {
        SpellStats::add(&self.spell_stats[core].shared_writes, n.into());
    }

    /// Whether core `core` is awake: searching or running tasks, in no
    /// step of a sleep.
    pub fn is_awake(&self, core: usize) -> bool {
        use crate::atomics::Ordering::Relaxed;
        self.states[core].state.load(Relaxed) == AWAKE
    }

    /// A snapshot of the counters.
    #[inline]
    pub fn counters(&self) -> SleepCounters {
        self.counters.load()
    }

    /// Whether some core may be idle or asleep, for `core` to decide
    /// whether to offer work: a core of its group counted idle (sleepers
    /// are counted idle too, so with one group that is exact), or, with
    /// several groups, a core anywhere asleep or sleepy. A core of another
    /// group that is idle but not yet sleepy is missed until it gets
    /// sleepy, some tens of rounds later; and a core that got sleepy and
    /// then found work in its mailboxes leaves the JEC saying "sleepy"
    /// until the next announcement, which the first offer makes.
    #[inline]
    pub fn anyone_idle(&self, core: usize) -> bool {
        if self.idle.in_group_of(core) > 0 {
            return true;
        }
        if !self.idle.has_groups() {
            return false;
        }
        let counters = self.counters.load();
        counters.sleeping() > 0 || counters.jec_is_sleepy()
    }

    /// How many nudges wakers have sent (wrapping). Pool quiescence reads
    /// it around its other checks: a core nudged between them is counted
    /// as sleeping while work waits for it (`crate::pool`'s shared state).
    pub fn nudges(&self) -> u32 {
        self.nudges.load(SeqCst)
    }

    /// The calling core, `core`, found nothing to do and starts searching.
    /// It is counted as idle only after [`QUIET_ROUNDS`] fruitless rounds.
    pub fn start_looking(&self, core: usize) -> IdleState {
        SpellStats::add(&self.spell_stats[core].idle_spells, 1);
        let mut idle = IdleState { rounds: 0, jobs_counter: 0, counted: false, core };
        if self.quiet_rounds == 0 {
            self.count_idle(&mut idle);
        }
        idle
    }

    /// The calling core, idle until now, found work.
    pub fn work_found(&self, idle: IdleState) {
        if idle.counted {
            self.idle.sub(idle.core);
        }
    }

    fn count_idle(&self, idle: &mut IdleState) {
        self.idle.add(idle.core);
        idle.counted = true;
        SpellStats::add(&self.spell_stats[idle.core].counted_spells, 1);
    }

    /// The calling core searched once more and found nothing: count the
    /// round, get sleepy, or sleep (module documentation, steps 1-7).
    pub fn no_work_found(&self, idle: &mut IdleState, core: usize, me: &mut impl Sleeper) -> Outcome {
        // The rounds are bounded, so this is not `atomics::spin_hint`: under
        // loom that yields, and loom never runs a yielding thread while
        // another can run, which would hide every interleaving in which a
        // core falls asleep while others are busy.
        if !idle.counted && idle.rounds >= self.quiet_rounds {
            self.count_idle(idle);
        }
        if idle.rounds < self.rounds_until_sleepy {
            idle.rounds += 1;
            // Counted before the pause that follows its last quiet round,
            // not after: on a host with more threads than CPUs that pause
            // may hand the thread's CPU away for a time slice, and a busy
            // core offers its surplus only to cores counted idle.
            if !idle.counted && idle.rounds >= self.quiet_rounds {
                self.count_idle(idle);
            }
            me.between_rounds(idle.rounds);
            Outcome::Searching
        } else if idle.rounds == self.rounds_until_sleepy {
            let (jobs_counter, attempts) = self.counters.get_sleepy();
            idle.jobs_counter = jobs_counter;
            self.count_writes(core, attempts);
            idle.rounds += 1;
            me.between_rounds(idle.rounds);
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
        let state = &self.states[core].state;
        crate::chaos::point();
        state.swap(REGISTERING, SeqCst);
        crate::chaos::point();
        let mut counters = self.counters.load();
        loop {
            if counters.jobs_counter() != idle.jobs_counter {
                // Searching again, so a nudge (if any) is answered.
                state.swap(AWAKE, SeqCst);
                idle.rounds = self.rounds_until_sleepy;
                return Outcome::Searching;
            }
            // Retry with what the failed exchange read, not a fresh load,
            // which could be stale (and is, forever, under loom).
            self.count_writes(core, 1);
            match self.counters.try_add_sleeping(counters) {
                Ok(()) => break,
                Err(actual) => counters = actual,
            }
        }
        if state.compare_exchange(REGISTERING, ASLEEP, SeqCst, SeqCst).is_err() {
            // Nudged: a waker counted on this core and left the count to it.
            state.swap(AWAKE, SeqCst);
            self.counters.sub_sleeping();
            self.count_writes(core, 1);
            idle.rounds = self.rounds_until_sleepy;
            return Outcome::Searching;
        }
        crate::chaos::point();
        fence(SeqCst);
        // Work seen now cancels the sleep before it starts (step 6).
        let cancelled = me.has_injected_jobs() || me.should_wake();
        if !cancelled {
            me.committed();
        }
        let mut ending = cancelled;
        loop {
            match state.load(SeqCst) {
                AWAKE => {
                    // Only a claim's waker stores `AWAKE` while this core
                    // sleeps, after its count of the claim (acquired here).
                    me.claimed(self.states[core].last_claim());
                    // The waker's write of the counters, counted here on
                    // this core's own line rather than by the waker, whose
                    // add would move that line to it on every wake-up.
                    self.count_writes(core, 1);
                    break;
                }
                ASLEEP if ending || me.should_wake() => {
                    if state.compare_exchange(ASLEEP, AWAKE, SeqCst, SeqCst).is_ok() {
                        self.counters.sub_sleeping();
                        self.count_writes(core, 1);
                        break;
                    }
                    // A waker claimed it first: wait for its `AWAKE`.
                    ending = true;
                }
                // `CLAIMED` too: the waker rings after it stores `AWAKE`.
                _ => me.wait(),
            }
        }
        if cancelled {
            idle.rounds = self.rounds_until_sleepy;
            Outcome::Searching
        } else {
            idle.rounds = 0;
            Outcome::Slept
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A core that finds nothing and never sleeps in these tests.
    struct Searching;

    impl Sleeper for Searching {
        fn arm_inbound(&mut self) -> bool {
            true
        }
        fn has_injected_jobs(&self) -> bool {
            false
        }
        fn should_wake(&self) -> bool {
            true
        }
        fn committed(&mut self) {}
        fn wait(&mut self) {}
    }

    /// Runs `rounds` fruitless search rounds of `core`.
    fn search(sleep: &SleepState, idle: &mut IdleState, core: usize, rounds: u32) {
        for _ in 0..rounds {
            assert_eq!(sleep.no_work_found(idle, core, &mut Searching), Outcome::Searching);
        }
    }

    #[test]
    fn an_idle_core_is_seen_by_its_group_at_once_and_by_the_others_once_sleepy() {
        let sleep = SleepState::with_idle_groups(32, 10, 8);
        // Work announced: the JEC is odd, nobody is sleepy.
        let mut woken = 0;
        sleep.new_jobs(1, Some(0), 1, |_| unreachable!("nobody sleeps"), |_, _| woken += 1);
        assert_eq!(woken, 0);
        assert!(!sleep.anyone_idle(0));
        let mut idle = sleep.start_looking(20);
        search(&sleep, &mut idle, 20, QUIET_ROUNDS - 1);
        assert!(!sleep.anyone_idle(21), "still quiet");
        search(&sleep, &mut idle, 20, 1);
        assert!(
            sleep.anyone_idle(21) && sleep.anyone_idle(16),
            "counted idle in its group as its last quiet round ends"
        );
        assert!(!sleep.anyone_idle(0) && !sleep.anyone_idle(31), "not yet seen by other groups");
        search(&sleep, &mut idle, 20, 11 - QUIET_ROUNDS);
        assert!(sleep.anyone_idle(0) && sleep.anyone_idle(31), "sleepy, so seen by every group");
        sleep.work_found(idle);
        // Getting sleepy is one compare-exchange, retried if it fails
        // spuriously (Miri makes weak ones fail at times).
        let (spells, counted, writes) = sleep.spell_stats(20);
        assert_eq!((spells, counted), (1, 1), "one spell, counted");
        assert!(writes >= 1, "getting sleepy writes the pool-wide word");
    }
}
