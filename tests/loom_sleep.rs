//! loom models of the sleep protocol (src/sleep.rs) with two cores and one
//! job. The job reaches the pool the two ways a job for any core can:
//!
//! - **injected**: a thread outside the pool pushes it onto the injector
//!   while both cores search, get sleepy and fall asleep. The final check
//!   before sleeping looks at the injector, and the fences order it against
//!   the push.
//! - **offered**: a busy core pushes it onto its own steal list and
//!   announces it, while the other core falls asleep. The final check does
//!   not look at steal lists (nor does Rayon's at deques); only the jobs
//!   event counter stands between that job and a lost wake-up.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_sleep`
//!
//! An announcement that finds the JEC odd already is a plain load, which
//! loom treats as an acquire load outside any total order (the fences are
//! all it honours), so it would report lost wake-ups that a seq-cst
//! machine cannot have. The JEC starts even, and each model announces
//! once, so every announcement here is a read-modify-write.
//!
//! Each runs with both cores counting themselves idle in one word, as in a
//! pool of up to 16 cores; the first two also run with a word per core, as
//! in the different groups of a larger pool, where the waker adds the
//! idle counts up one word at a time after its announcement.
//!
//! A third model checks the sleeping count itself: a core whose waits
//! return at once (spurious returns, or another core's event) is woken
//! while it sleeps, and must never be counted twice. Pool quiescence trusts
//! that count; a core counted twice once let a QEMU run stop its pool while
//! the waker still held queued tasks. That model fails if a claim stores
//! `AWAKE` before the waker has taken the core off the count.
//!
//! Checked: the job runs exactly once, and no wake-up is lost. A core's
//! doorbell is loom's own `park`/`unpark`, so a waiting core is blocked
//! until a waker rings it. If every core that could run the job were asleep
//! while it waited, and the thread that made it had finished, every thread
//! would be blocked, which loom reports as a deadlock. The core that runs
//! the job then stops the model's pool the way `Pool` does: a stop flag,
//! then every sleeper claimed and rung.
//!
//! The models fail as they must when the job is not announced, and were
//! also checked against hand-planted mutations of src/sleep.rs: without the
//! JEC comparison, or without the nudge of a `REGISTERING` core, the
//! offered model deadlocks. (The offered model is how the missing
//! `REGISTERING` state was found: a waker counted a core that had not yet
//! stored `ASLEEP`, failed to claim it, and gave up.)
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use loom::thread::{self, Thread};
use roving::loom_api::{
    Action, AtomicList, BlockCache, IdleState, Outcome, Roused, SleepState, Sleeper, Task, TaskQueue,
};
use std::ptr::NonNull;

const CORES: usize = 2;

/// Never called: the model counts jobs, it does not run them.
unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("the model does not run tasks");
}

/// How the job reaches the pool.
#[derive(Clone, Copy)]
enum Source {
    /// Pushed onto the injector from outside, and announced.
    Injected,
    /// Pushed onto core 0's steal list by core 0, and announced.
    Offered,
    /// Pushed onto the injector and never announced: a planted bug.
    Unannounced,
}

struct Pool {
    sleep: SleepState,
    injector: AtomicList,
    /// Core 0's steal list.
    offered: AtomicList,
    ran: AtomicUsize,
    stopped: AtomicBool,
}

/// Every core's doorbell.
#[derive(Clone)]
struct Doorbells([Thread; CORES]);

impl Doorbells {
    fn ring(&self, core: usize) {
        self.0[core].unpark();
    }
}

impl Pool {
    /// With zero search rounds a core counts itself idle and gets sleepy
    /// at its first empty search and sleeps at the second, which keeps the
    /// state space small; one round adds a quiet round first (`sleep`'s
    /// step 0), in which the core searches without being counted. Idle
    /// cores are counted in one word per `idle_group` cores: 1 puts each
    /// core in a word of its own, which a waker reads one at a time.
    fn new(search_rounds: u32, idle_group: usize) -> Self {
        Self {
            sleep: SleepState::with_idle_groups(CORES, search_rounds, idle_group),
            injector: AtomicList::new(),
            offered: AtomicList::new(),
            ran: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        }
    }

    fn stop(&self, doorbells: &Doorbells) {
        self.stopped.store(true, SeqCst);
        self.sleep.wake_all(|core| doorbells.ring(core));
    }

    /// One search, as `pool/worker.rs` does it: the injector, then
    /// stealing. Returns whether it ran the job.
    fn search(&self, doorbells: &Doorbells) -> bool {
        let mut taken = TaskQueue::new();
        // SAFETY: taken chains are ours.
        let found = unsafe {
            taken.append_reversed(self.injector.take_all()) + taken.append_reversed(self.offered.take_all())
        };
        if found == 0 {
            return false;
        }
        while let Some(job) = taken.pop_front() {
            // SAFETY: made by `make_job` and leaked; ours now.
            drop(unsafe { Box::from_raw(job.as_ptr()) });
            self.ran.fetch_add(1, SeqCst);
        }
        self.stop(doorbells);
        true
    }
}

/// What the protocol sees of a model core: like the pool's, its final check
/// looks at the injector and the stop flag, but not at steal lists.
struct Core<'a> {
    pool: &'a Pool,
}

impl Sleeper for Core<'_> {
    fn arm_inbound(&mut self) -> bool {
        false // this model has no mailboxes (loom_mailbox.rs covers them)
    }

    fn has_injected_jobs(&self) -> bool {
        self.pool.injector.has_tasks()
    }

    fn should_wake(&self) -> bool {
        self.pool.stopped.load(SeqCst)
    }

    fn committed(&mut self) {}

    fn wait(&mut self) {
        thread::park();
    }
}

/// An idle core's loop: search, and sleep when the protocol says so.
fn idle_core(pool: &Pool, me: usize, doorbells: &Doorbells) {
    let mut idle: IdleState = pool.sleep.start_looking(me);
    while !pool.stopped.load(SeqCst) {
        if pool.search(doorbells) {
            pool.sleep.work_found(idle);
            idle = pool.sleep.start_looking(me);
            continue;
        }
        pool.sleep.no_work_found(&mut idle, me, &mut Core { pool });
    }
    // Only the core that ran the job stops the pool, after counting it.
    assert_eq!(pool.ran.load(SeqCst), 1, "the job ran exactly once");
}

fn make_job() -> NonNull<Task> {
    NonNull::from(Box::leak(Box::new(Task::new(not_run))))
}

/// The outside thread of the injected models.
fn inject(pool: &Pool, announce: bool, doorbells: &Doorbells) {
    // SAFETY: the job is new and ours to give.
    let _ = unsafe { pool.injector.push(make_job()) };
    if announce {
        pool.sleep.new_jobs(1, None, 0, |core| doorbells.ring(core), |_, _| ());
    }
}

/// Core 0 of the offered model: busy (never idle), it offers the job and
/// goes on with other work, which the model ends there.
fn offer(pool: &Pool, doorbells: &Doorbells) {
    // SAFETY: the job is new and ours to give.
    let _ = unsafe { pool.offered.push(make_job()) };
    pool.sleep.new_jobs(1, Some(0), 1, |core| doorbells.ring(core), |_, _| ());
}

fn model(source: Source, search_rounds: u32, idle_group: usize) {
    loom::model(move || {
        let pool = Arc::new(Pool::new(search_rounds, idle_group));
        // The main thread is core 0, or the outside thread's stand-in.
        let first = thread::current();
        let second = {
            let (pool, first) = (pool.clone(), first.clone());
            thread::spawn(move || idle_core(&pool, 1, &Doorbells([first, thread::current()])))
        };
        let doorbells = Doorbells([first, second.thread().clone()]);
        // No joins: loom's `join` blocks on the same per-thread state as
        // `park`, so a doorbell rung late would wake it. Each core checks
        // the job on its way out instead, and loom runs every thread to its
        // end.
        drop(second);
        match source {
            Source::Injected | Source::Unannounced => {
                let outside = {
                    let (pool, doorbells) = (pool.clone(), doorbells.clone());
                    let announce = matches!(source, Source::Injected);
                    thread::spawn(move || inject(&pool, announce, &doorbells))
                };
                drop(outside);
                idle_core(&pool, 0, &doorbells);
            }
            Source::Offered => offer(&pool, &doorbells),
        }
    });
}

/// Both cores count themselves idle in one word, as in a pool of up to
/// 16 cores.
const ONE_GROUP: usize = CORES;
/// Each core counts itself idle in a word of its own, as the cores of
/// different groups of a large pool do: the waker adds the words up one at
/// a time after its announcement.
const GROUP_PER_CORE: usize = 1;

#[test]
fn an_injected_job_wakes_a_core() {
    model(Source::Injected, 0, ONE_GROUP);
}

#[test]
fn an_offered_job_wakes_a_core() {
    model(Source::Offered, 0, ONE_GROUP);
}

#[test]
fn an_injected_job_wakes_a_core_counted_in_another_group() {
    model(Source::Injected, 0, GROUP_PER_CORE);
}

#[test]
fn an_offered_job_wakes_a_core_counted_in_another_group() {
    model(Source::Offered, 0, GROUP_PER_CORE);
}

/// A core in its quiet round counts as busy, so the announcement may wake
/// nobody for it; it must still find the job before it sleeps.
#[test]
fn an_injected_job_reaches_a_quiet_core() {
    model(Source::Injected, 1, ONE_GROUP);
}

#[test]
fn an_offered_job_reaches_a_quiet_core() {
    model(Source::Offered, 1, ONE_GROUP);
}

/// The model must be able to fail: a job that is not announced (no JEC
/// update, no wake) can leave both cores asleep.
#[test]
#[should_panic(expected = "deadlock")]
fn an_unannounced_job_is_lost() {
    model(Source::Unannounced, 0, ONE_GROUP);
}

/// A core that never finds work, so it must be counted at most once; the
/// other core never sleeps.
struct Restless<'a> {
    pool: &'a Pool,
    /// The claims that ended its sleeps, as it heard of them.
    heard: &'a mut Vec<u32>,
}

impl Sleeper for Restless<'_> {
    fn arm_inbound(&mut self) -> bool {
        false
    }

    fn has_injected_jobs(&self) -> bool {
        false
    }

    fn should_wake(&self) -> bool {
        self.pool.stopped.load(SeqCst)
    }

    fn committed(&mut self) {
        let sleeping = self.pool.sleep.counters().sleeping();
        assert!(sleeping <= 1, "one sleeping core counted {sleeping} times");
    }

    /// Parks; returns at once if a ring from an earlier sleep is pending,
    /// which is the early return this model is about.
    fn wait(&mut self) {
        thread::park();
    }

    fn claimed(&mut self, claim: u32) {
        self.heard.push(claim);
    }
}

/// Core 1 sleeps, is woken, and sleeps again, while core 0 wakes it once
/// and then stops the pool. Each claim core 0 makes is numbered, and core 1
/// hears of each claim that ended one of its sleeps: never one that was
/// not made, nor one twice (the trace pairs wake-ups to sleeps by them).
#[test]
fn a_woken_core_is_never_counted_twice() {
    loom::model(|| {
        let pool = Arc::new(Pool::new(0, ONE_GROUP));
        let restless = {
            let pool = pool.clone();
            thread::spawn(move || {
                let mut heard = Vec::new();
                let mut idle = pool.sleep.start_looking(1);
                while !pool.stopped.load(SeqCst) {
                    let mut core = Restless { pool: &pool, heard: &mut heard };
                    if pool.sleep.no_work_found(&mut idle, 1, &mut core) == Outcome::Slept {
                        pool.sleep.work_found(idle);
                        idle = pool.sleep.start_looking(1);
                    }
                }
                heard
            })
        };
        let ring = |_| restless.thread().unpark();
        let mut made = Vec::new();
        let mut rouse = || {
            if let Some(Roused::Claimed { claim }) = pool.sleep.rouse(1, ring) {
                made.push(claim);
            }
        };
        rouse();
        pool.stopped.store(true, SeqCst);
        rouse();
        let heard = restless.join().unwrap();
        assert!(made.iter().enumerate().all(|(at, &claim)| claim == at as u32 + 1), "claims {made:?}");
        assert!(heard.windows(2).all(|pair| pair[0] < pair[1]), "heard {heard:?}");
        assert!(heard.iter().all(|claim| made.contains(claim)), "heard {heard:?} of claims {made:?}");
    });
}
