//! The pool under QEMU: 100,000 tasks hop between random pairs of cores in
//! bursts. Between bursts one core holds a gap task for a few milliseconds
//! while every other core falls asleep (the deep tier after 1 ms), and the
//! next burst must wake them through their mailboxes. Every task must run
//! exactly once on the core it was posted to (count and checksum per core);
//! the run must end by quiescence with nothing discarded. It prints what
//! the idle spells cost the pool's sleep counters.
//!
//! With `roving.idle_ms=N`, the pool then idles for N ms before it stops,
//! for `tests/qemu/idle-cpu` to measure: every core but one sleeps in the
//! pool (the deep tier after 1 ms), and one core runs a task that waits
//! out the window in the deep tier with a timer deadline (roving has no
//! timers of its own yet), after which the pool is quiescent and stops.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};
use core::time::Duration;
use roving::platform;
use roving::platform::Depth;
use roving::time::Instant;
use roving_kernel::{MAX_CORES, println};
use roving_test_kernels::{self as _, bootarg_u64, expected_cores, pass, sleep_until};

const BURSTS: u64 = 20;
const SEEDS: u64 = 50;
const HOPS: u64 = 100; // tasks per chain, the seed included
const TASKS: u64 = BURSTS * SEEDS * HOPS;
const GAP: Duration = Duration::from_millis(3);

static SENT: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static SENT_SUM: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static RAN: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static RAN_SUM: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static WRONG_CORE: AtomicU64 = AtomicU64::new(0);
static CHAINS_DONE: AtomicU64 = AtomicU64::new(0);

fn xorshift(mut x: u32) -> u32 {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x
}

fn send(core: usize, burst: u64, id: u64, left: u64, rng: u32) {
    SENT[core].fetch_add(1, SeqCst);
    SENT_SUM[core].fetch_add(id, SeqCst);
    roving::post(core, move || hop(core, burst, id, left, rng)).expect("the pool is running");
}

fn start_burst(burst: u64) {
    let cores = platform::core_count();
    let mut rng = 0x2545_f491 ^ burst as u32;
    for seed in 0..SEEDS {
        rng = xorshift(rng);
        send(rng as usize % cores, burst, (burst * SEEDS + seed) * HOPS, HOPS - 1, rng);
    }
}

fn hop(core: usize, burst: u64, id: u64, left: u64, rng: u32) {
    if platform::current_core() != Some(core) {
        WRONG_CORE.fetch_add(1, SeqCst);
    }
    RAN[core].fetch_add(1, SeqCst);
    RAN_SUM[core].fetch_add(id, SeqCst);
    let cores = platform::core_count();
    if left > 0 {
        let rng = xorshift(rng);
        send(rng as usize % cores, burst, id + 1, left - 1, rng);
        return;
    }
    let done = CHAINS_DONE.fetch_add(1, SeqCst) + 1;
    if done == BURSTS * SEEDS {
        let idle = Duration::from_millis(bootarg_u64("roving.idle_ms", 0));
        if idle > Duration::ZERO {
            roving::post(0, move || idle_window(cores, idle)).expect("the pool is running");
        }
    } else if done == (burst + 1) * SEEDS {
        // The burst is over: one core waits out the gap, then starts the next.
        let holder = (burst as usize + 1) % cores;
        roving::post(holder, move || {
            let until = Instant::now() + GAP;
            while Instant::now() < until {
                core::hint::spin_loop();
            }
            start_burst(burst + 1);
        })
        .expect("the pool is running");
    }
}

/// Holds one core in a timed deep wait while the others sleep in the pool.
fn idle_window(cores: usize, idle: Duration) {
    println!("idle: all {cores} cores idle after the stress (pool running) for {} ms", idle.as_millis());
    sleep_until(Depth::Deep, Instant::now() + idle);
}

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let pool = roving_test_kernels::every_core_pool();
    let started = Instant::now();
    pool.run(|| start_burst(0)).expect("the pool runs");
    let elapsed = started.elapsed();
    assert_eq!(WRONG_CORE.load(SeqCst), 0, "tasks ran on a core they were not posted to");
    let mut total = 0;
    for core in 0..cores {
        let (sent, ran) = (SENT[core].load(SeqCst), RAN[core].load(SeqCst));
        assert_eq!(ran, sent, "core {core}: ran {ran} of the {sent} tasks posted to it");
        assert_eq!(RAN_SUM[core].load(SeqCst), SENT_SUM[core].load(SeqCst), "core {core}: checksum");
        total += ran;
    }
    assert_eq!(total, TASKS);
    let stats = pool.stats();
    for (core, s) in stats.iter().enumerate() {
        println!(
            "core {core}: {} run, {} sent, {} received, {} stolen, {} sleeps ({} deep), {} wake-ups, {} discarded",
            s.tasks_run, s.sent, s.received, s.stolen, s.sleeps, s.deep_sleeps, s.wakeups, s.discarded
        );
        assert_eq!(s.discarded, 0, "a quiescent stop discards nothing");
    }
    if cores > 1 {
        let sleeps: u64 = stats.iter().map(|s| s.sleeps).sum();
        assert!(sleeps >= BURSTS - 1, "cores should sleep in every gap, slept {sleeps} times");
    }
    // Through the forwarding mesh, each hop past the first forwards.
    let forwarded: u64 = stats.iter().map(|s| s.forwarded).sum();
    let received: u64 = stats.iter().map(|s| s.received).sum();
    println!(
        "pool: {forwarded} forwards for {received} tasks received ({} per 100)",
        forwarded * 100 / received.max(1)
    );
    if cores >= 3 && roving_kernel::boot_info().bootarg("roving.mailboxes") == Some("ring") {
        assert!(forwarded > 0, "on a ring of {cores} cores nothing was forwarded");
    }
    // What idle spells cost the pool's sleep counters: the idle counts by
    // group, and the pool-wide word.
    let spells: u64 = stats.iter().map(|s| s.idle_spells).sum();
    let counted: u64 = stats.iter().map(|s| s.counted_idle_spells).sum();
    let sleeps: u64 = stats.iter().map(|s| s.sleeps).sum();
    let writes: u64 = stats.iter().map(|s| s.shared_sleep_writes).sum();
    println!(
        "sleep counters: {spells} idle spells, {counted} counted, {sleeps} sleeps, {writes} pool-wide writes ({} per 100 tasks)",
        writes * 100 / TASKS
    );
    assert!(counted <= spells, "more spells counted than there were");
    // Each sleep is counted in and out of the pool-wide word.
    assert!(writes >= 2 * sleeps, "{writes} pool-wide writes for {sleeps} sleeps");
    let wakeups: u64 = stats.iter().map(|s| s.wakeups).sum();
    println!(
        "pool: {sleeps} sleeps and {wakeups} wake-ups for {TASKS} tasks ({} and {} per 100)",
        sleeps * 100 / TASKS,
        wakeups * 100 / TASKS
    );
    println!("pool: {TASKS} tasks in {} ms", elapsed.as_millis());
    pass("pool");
}

roving_kernel::entry!(main);
