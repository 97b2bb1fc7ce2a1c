//! The demo `make run` boots: every core comes online and reports in, the
//! boot core wakes each of the others from deep sleep a number of times and
//! times the round trip; then a pool of every core passes tasks around a
//! ring of cores through their mailboxes until it is quiescent. Each part
//! says what it does as it starts and ends with a summary line per core.
//!
//! The work is scaled to the cores there are, so that the demo takes about
//! as long at 256 cores as at 4 (under QEMU, where every guest core shares
//! the host's few CPUs): fewer round trips per core, and shorter journeys
//! for the tokens, as cores are added.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};
use core::time::Duration;
use roving::Pool;
use roving::platform::{self, Depth};
use roving::time::Instant;
use roving_examples as _;
use roving_kernel::{MAX_CORES, boot_info, cores, println};

/// Round trips in all, shared among the cores: core 0 rings, the core
/// answers, core 0 wakes.
const PINGS: u64 = 200;

/// Round trips per core on a machine of `count` cores: 50 at 4 cores, at
/// least 3.
fn pings_per_core(count: usize) -> u64 {
    (PINGS / count as u64).clamp(3, 50)
}

/// Per core: the last ping core 0 sent, and the last one it answered.
static PING: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static PONG: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static ROUND_TRIP_TICKS: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

fn main() {
    let count = platform::core_count();
    let pings = pings_per_core(count);
    println!("demo: core 0 is up; starting cores 1..{count}");
    for core in 1..count {
        platform::start_core(core, report_in_and_answer, core).expect("start a core");
    }
    println!("demo: part 1: core 0 wakes each core from deep sleep {pings} times and times the round trip");
    // Core 0 waits for each core to report in, then pings it.
    for core in 1..count {
        wait_until(|| PONG[core].load(SeqCst) >= 1, format_args!("core {core} to report in"));
        let start = Instant::now();
        for ping in 2..=pings + 1 {
            PING[core].store(ping, SeqCst);
            platform::wake(core).expect("core index in range");
            wait_until(|| PONG[core].load(SeqCst) == ping, format_args!("core {core} to answer ping {ping}"));
        }
        ROUND_TRIP_TICKS[core].store((Instant::now().ticks() - start.ticks()) / pings, SeqCst);
    }
    // Let the others finish their entries and park.
    for (core, ping) in PING.iter().enumerate().take(count).skip(1) {
        ping.store(u64::MAX, SeqCst);
        platform::wake(core).expect("core index in range");
    }
    wait_until(
        || (1..count).all(|core| PONG[core].load(SeqCst) == u64::MAX),
        format_args!("cores to finish"),
    );
    summary(count, pings);
    pool_ring(count);
}

/// Hops of all the tokens together, each hop a task.
const HOPS: u64 = 16_000;

/// Hops of each token on a machine of `count` cores: 4,000 (1,000 laps) at
/// 4 cores, at least 16.
fn hops_per_token(count: usize) -> u64 {
    (HOPS / count as u64).max(16)
}

/// A pool of every core: each core starts a token that travels around the
/// ring of cores, one task per hop.
fn pool_ring(count: usize) {
    fn pass_on(core: usize, hops_left: u64) {
        if hops_left > 0 {
            let next = (core + 1) % platform::core_count();
            roving::post(next, move || pass_on(next, hops_left - 1)).expect("the pool is running");
        }
    }
    let hops = hops_per_token(count);
    println!(
        "demo: part 2: a pool of {count} cores; each core starts a token that travels {hops} hops around the ring \
         of cores, each hop a task posted to the next core's mailbox"
    );
    let pool = Pool::new().expect("a pool of every core");
    let started = Instant::now();
    pool.run(|| {
        for core in 0..count {
            roving::post(core, move || pass_on(core, hops)).expect("the pool is running");
        }
    })
    .expect("the pool runs");
    let elapsed_us = started.elapsed().as_micros();
    let stats = pool.stats();
    let total: u64 = stats.iter().map(|s| s.tasks_run).sum();
    println!("demo: pool summary ({total} tasks in {elapsed_us} us; the pool stopped when quiescent)");
    for (core, s) in stats.iter().enumerate() {
        println!(
            "core {core}: {} tasks run, {} sent, {} received, {} stolen, {} sleeps ({} deep), {} wake-ups",
            s.tasks_run, s.sent, s.received, s.stolen, s.sleeps, s.deep_sleeps, s.wakeups
        );
    }
}

/// Entry of every other core.
fn report_in_and_answer(core: usize) {
    let me = platform::current_core().expect("a started core has an index");
    assert_eq!(me, core, "a core runs the entry it was started with");
    let hw_id = boot_info().cores[me];
    println!("core {me} online (hardware id {hw_id:#x})");
    PONG[me].store(1, SeqCst);
    platform::wake(0).expect("core 0 exists");
    let mut seen = 0; // the last ping answered; core 0's pings start at 2
    loop {
        let ping = PING[me].load(SeqCst);
        if ping == seen {
            platform::wait_for_event(Depth::Deep, None);
            continue;
        }
        seen = ping;
        PONG[me].store(ping, SeqCst);
        platform::wake(0).expect("core 0 exists");
        if ping == u64::MAX {
            return;
        }
    }
}

/// Waits (light tier, since an answer comes within microseconds) until
/// `done`, or panics after ten seconds: a lost wake-up fails loudly.
fn wait_until(done: impl Fn() -> bool, what: core::fmt::Arguments<'_>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "demo: timed out waiting for {what}");
        platform::wait_for_event(Depth::Light, Some(deadline));
    }
}

fn summary(count: usize, pings: u64) {
    let hz = platform::tick_hz();
    let boot = cores::report(0).and_then(|r| r.online_at).unwrap_or(0);
    println!("demo: summary ({count} cores, {pings} deep-sleep round trips each)");
    for (core, round_trip) in ROUND_TRIP_TICKS.iter().enumerate().take(count) {
        let report = cores::report(core).expect("core index in range");
        let online_us = report.online_at.map_or(0, |t| (t - boot) * 1_000_000 / hz);
        let round_trip_us = round_trip.load(SeqCst) * 1_000_000 / hz;
        println!(
            "core {core}: hardware id {:#x}, online +{online_us} us, {} rings answered, {} deep / {} light sleeps, {} interrupts, round trip {round_trip_us} us",
            report.hw_id, report.rings_answered, report.deep_sleeps, report.light_sleeps, report.interrupts,
        );
    }
}

roving_kernel::entry!(main);
