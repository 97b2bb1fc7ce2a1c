//! Resizing a pool under load, shared by the host tests
//! (`tests/pool_resize.rs`) and the QEMU kernel `resize`. Only `core`,
//! `alloc` and roving: it builds for bare metal.
#![allow(dead_code)]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::strand::{self, JoinHandle};
use roving::{Pool, PostError, free_cores};

/// Tasks that flow through the pool, in [`CHAINS`] chains.
pub const TASKS: usize = 100_000;
/// Chains of tasks running at once; each task starts the next of its chain.
pub const CHAINS: usize = 100;
/// Strands that flow through the pool.
pub const STRANDS: usize = 1_000;

/// What happened, for [`check`].
pub struct Outcome {
    /// Per task and per strand: how many times it ran.
    pub task_runs: Vec<u8>,
    pub strand_runs: Vec<u8>,
    /// The pool's cores after each step: all, then 1, then 3 (or all, on
    /// a smaller machine).
    pub sizes: [usize; 3],
    /// Free cores while the pool had 1 core.
    pub free_at_one: usize,
    /// Posts a leaving core refused, whose closures came back and were
    /// spawned instead.
    pub refused: usize,
}

struct Counts {
    tasks: [AtomicU8; TASKS],
    strands: [AtomicU8; STRANDS],
    tasks_done: AtomicUsize,
    refused: AtomicUsize,
}

static COUNTS: Counts = Counts {
    tasks: [const { AtomicU8::new(0) }; TASKS],
    strands: [const { AtomicU8::new(0) }; STRANDS],
    tasks_done: AtomicUsize::new(0),
    refused: AtomicUsize::new(0),
};

fn counts() -> &'static Counts {
    &COUNTS
}

/// Task `id` of a chain: counts itself, then starts task `id + CHAINS`,
/// every other time posted to a chosen core (which may have left the
/// pool: the refused closure comes back and is spawned instead).
fn task(pool: Pool, id: usize) {
    let counts = counts();
    counts.tasks[id].fetch_add(1, SeqCst);
    counts.tasks_done.fetch_add(1, SeqCst);
    let next = id + CHAINS;
    if next >= TASKS {
        return;
    }
    let step = {
        let pool = pool.clone();
        move || task(pool, next)
    };
    if id.is_multiple_of(2) {
        let core = id / CHAINS % 4;
        match roving::post(core, step) {
            Ok(()) => {}
            Err(error @ (PostError::NotAMember { .. } | PostError::NoSuchCore { .. })) => {
                counts.refused.fetch_add(1, SeqCst);
                roving::spawn_task(error.into_inner()).expect("the pool is running");
            }
            Err(error) => panic!("post failed: {error}"),
        }
    } else {
        roving::spawn_task(step).expect("the pool is running");
    }
}

/// Strand `id`: yields and sleeps a little, then counts itself.
fn strand_body(id: usize) {
    for _ in 0..2 {
        strand::yield_now().expect("not cancelled");
        strand::sleep(Duration::from_micros(200)).expect("not cancelled");
    }
    counts().strands[id].fetch_add(1, SeqCst);
}

fn spawn_strands(range: core::ops::Range<usize>) -> Vec<JoinHandle<()>> {
    range.map(|id| strand::spawn(move || strand_body(id)).expect("a strand")).collect()
}

fn wait_for_tasks(at_least: usize) {
    while counts().tasks_done.load(SeqCst) < at_least {
        strand::sleep(Duration::from_micros(500)).expect("not cancelled");
    }
}

/// The root strand of a pool of every core (4 in the proof):
/// starts the flow, resizes the pool to 1 core and then to 3 (at most all)
/// while it runs, and waits for all of it.
pub fn resize_under_load(pool: &Pool) -> Outcome {
    let counts = counts();
    let mut sizes = [pool.core_count(), 0, 0];
    for chain in 0..CHAINS {
        let pool2 = pool.clone();
        roving::spawn_task(move || task(pool2, chain)).expect("the pool is running");
    }
    let mut strands = spawn_strands(0..STRANDS / 2);
    wait_for_tasks(TASKS / 5);
    pool.resize(1).expect("shrink to 1 core");
    sizes[1] = pool.core_count();
    let free_at_one = free_cores().len();
    strands.extend(spawn_strands(STRANDS / 2..STRANDS));
    wait_for_tasks(TASKS / 2);
    pool.resize(3.min(sizes[0])).expect("grow to 3 cores");
    sizes[2] = pool.core_count();
    wait_for_tasks(TASKS);
    for handle in strands {
        handle.join().expect("a strand finished");
    }
    Outcome {
        task_runs: counts.tasks.iter().map(|n| n.load(SeqCst)).collect(),
        strand_runs: counts.strands.iter().map(|n| n.load(SeqCst)).collect(),
        sizes,
        free_at_one,
        refused: counts.refused.load(SeqCst),
    }
}

/// Every task and strand ran exactly once, and the sizes were as asked.
pub fn check(outcome: &Outcome, machine_cores: usize) {
    let sizes = [machine_cores, 1, 3.min(machine_cores)];
    assert_eq!(outcome.sizes, sizes, "pool sizes before, after shrinking, after growing");
    assert_eq!(outcome.free_at_one, machine_cores - 1, "the 3 cores that left are free");
    let twice = |runs: &[u8]| runs.iter().filter(|&&n| n > 1).count();
    let never = |runs: &[u8]| runs.iter().filter(|&&n| n == 0).count();
    assert_eq!((never(&outcome.task_runs), twice(&outcome.task_runs)), (0, 0), "tasks never run, run twice");
    assert_eq!(
        (never(&outcome.strand_runs), twice(&outcome.strand_runs)),
        (0, 0),
        "strands never run, run twice"
    );
}

/// Run by the root of a pool of core 0 alone: builds a pool of every other
/// (free) core, starts it, runs strands in it (one pinned to its last
/// core), leaves 2 strands per core blocked in long sleeps, and destroys
/// it. Returns which cores the strands ran on (by core index) and the free
/// cores afterwards.
pub fn start_and_destroy(machine_cores: usize) -> (Vec<bool>, Vec<usize>) {
    let others: Vec<usize> = (1..machine_cores).collect();
    assert_eq!(free_cores(), others, "every core but the root's is free");
    let extra = Pool::with_cores(&others, roving::Config::new()).expect("a pool of the free cores");
    extra.start().expect("the free cores start");
    assert!(free_cores().is_empty());
    let mut ran_on = vec![false; machine_cores];
    for _ in 0..4 * others.len() {
        let core = extra.spawn_strand(|| roving::platform::current_core().unwrap()).unwrap().join().unwrap();
        ran_on[core] = true;
    }
    let last = *others.last().unwrap();
    let pinned = extra.spawn_strand_on(last, || roving::platform::current_core().unwrap()).unwrap();
    assert_eq!(pinned.join().unwrap(), last, "a pinned strand runs on its core");
    let sleepers: Vec<_> = (0..2 * others.len())
        .map(|_| extra.spawn_strand(|| strand::sleep(Duration::from_secs(3600))).unwrap())
        .collect();
    strand::sleep(Duration::from_millis(5)).unwrap();
    extra.destroy().expect("destroy the pool");
    for sleeper in sleepers {
        assert_eq!(sleeper.join().unwrap(), Err(strand::WaitError::Interrupted));
    }
    (ran_on, free_cores())
}
