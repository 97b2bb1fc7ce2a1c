//! What a mostly idle scheduler costs: the CPU time all its threads burn
//! while it runs one small job every `period`, per job, against tokio's;
//! how long each job waits from its spawn to its start (the injection
//! latency: median and 99th percentile); and the cost of parking a thread
//! and unparking it, which bounds how long an idle core should spin
//! before it parks.
//!
//! `cargo bench -p roving-bench --target host-tuple --bench idle -- [quick] [cores=2,16]`
//!
//! `cores=` lists the pool sizes (and tokio's worker counts) to run, 2 by
//! default: a machine with fewer CPUs runs the larger ones oversubscribed.

mod harness;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::thread;
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::args().any(|arg| arg == "quick");
    let cores: Vec<usize> = std::env::args()
        .find_map(|arg| arg.strip_prefix("cores=").map(str::to_owned))
        .map_or(vec![2], |list| list.split(',').map(|n| n.parse().expect("cores=N,M,...")).collect());
    let (jobs, trips, samples) = if quick { (200, 2_000, 3) } else { (1_000, 20_000, 5) };
    println!("roving-bench idle: median of {samples} rounds after a warm-up round");

    println!("\npark + unpark: ns per pair (two threads waking each other, {trips} round trips)");
    harness::compare(samples, 2 * trips, &[("std thread::park + Thread::unpark", &|| park_pairs(trips))]);

    for &cores in &cores {
        for period in [Duration::from_millis(1), Duration::from_millis(10)] {
            let jobs = if period > Duration::from_millis(1) { jobs / 10 } else { jobs };
            println!(
                "\nidle: CPU time (all threads) per job, one job every {} ms, {jobs} jobs, {cores} cores (in ns)",
                period.as_millis()
            );
            let rows = harness::compare(
                samples,
                jobs,
                &[
                    ("roving, a strand sleeping then spawning", &|| roving(cores, period, jobs, None)),
                    ("tokio, a task sleeping then spawning", &|| tokio(cores, period, jobs, None)),
                ],
            );
            harness::ratios(&rows, &["tokio, a task sleeping then spawning"]);
            let waits = Waits::new(jobs);
            roving(cores, period, jobs, Some(&waits));
            let (median, p99) = waits.percentiles();
            let tokio_waits = Waits::new(jobs);
            tokio(cores, period, jobs, Some(&tokio_waits));
            let (tokio_median, tokio_p99) = tokio_waits.percentiles();
            println!(
                "  spawn to start, one run: roving median {median} ns, 99th percentile {p99} ns ({:.1}x the median); \
                 tokio {tokio_median} ns, {tokio_p99} ns ({:.1}x)",
                p99 as f64 / median.max(1) as f64,
                tokio_p99 as f64 / tokio_median.max(1) as f64
            );
        }
    }
}

/// Each job's wait from its spawn to its start, in ns since a common
/// origin: the spawner stores the spawn time, the job the difference.
struct Waits {
    origin: Instant,
    waits: Vec<AtomicU64>,
}

impl Waits {
    fn new(jobs: u64) -> Arc<Self> {
        Arc::new(Self { origin: Instant::now(), waits: (0..jobs).map(|_| AtomicU64::new(0)).collect() })
    }

    fn now(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// The median and 99th percentile of the waits.
    fn percentiles(&self) -> (u64, u64) {
        let mut waits: Vec<u64> = self.waits.iter().map(|wait| wait.load(Relaxed)).collect();
        waits.sort_unstable();
        (waits[waits.len() / 2], waits[waits.len() * 99 / 100])
    }
}

/// What a job does: nothing much, or with `waits`, records its wait.
fn job(waits: Option<Arc<Waits>>, job: u64, spawned: u64) {
    match waits {
        Some(waits) => waits.waits[job as usize].store(waits.now() - spawned, Relaxed),
        None => _ = black_box(job),
    }
}

/// The CPU time every thread of the process has used so far.
fn process_cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the clock's value into `now`.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "the process CPU clock");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Two threads wake each other by `unpark`, each waiting in `park`, for
/// `trips` round trips (two park + unpark pairs each).
fn park_pairs(trips: u64) -> Duration {
    let turn = Arc::new(AtomicU64::new(0));
    let main = thread::current();
    let other = {
        let turn = turn.clone();
        thread::spawn(move || {
            for trip in 0..trips {
                while turn.load(Acquire) != 2 * trip + 1 {
                    thread::park();
                }
                turn.store(2 * trip + 2, Release);
                main.unpark();
            }
        })
    };
    let start = Instant::now();
    for trip in 0..trips {
        turn.store(2 * trip + 1, Release);
        other.thread().unpark();
        while turn.load(Acquire) != 2 * trip + 2 {
            thread::park();
        }
    }
    let elapsed = start.elapsed();
    other.join().unwrap();
    elapsed
}

/// roving: a strand spawned in a pool of `cores` sleeps `period`, then
/// spawns a small task, `jobs` times. Returns the CPU time used. A
/// spawned strand, like tokio's spawned task, not the root strand, which
/// is pinned to its core: each of its deadlines would wake that core as
/// well as the one watching the timers.
fn roving(cores: usize, period: Duration, jobs: u64, waits: Option<&Arc<Waits>>) -> Duration {
    let waits = waits.cloned();
    harness::on_roving(cores, move || {
        let sleeper = roving::strand::spawn(move || {
            let before = process_cpu_time();
            for index in 0..jobs {
                roving::strand::sleep(period).expect("a strand may sleep");
                let (waits, spawned) = (waits.clone(), waits.as_ref().map_or(0, |waits| waits.now()));
                roving::pool::spawn_task(move || job(waits, index, spawned))
                    .unwrap_or_else(|_| panic!("the pool takes the job"));
            }
            process_cpu_time() - before
        });
        sleeper.unwrap_or_else(|_| panic!("a place for the strand")).join().expect("the strand ends")
    })
}

/// tokio: a task on a runtime of `cores` workers sleeps `period`, then
/// spawns a small task, `jobs` times. Returns the CPU time used.
fn tokio(cores: usize, period: Duration, jobs: u64, waits: Option<&Arc<Waits>>) -> Duration {
    let waits = waits.cloned();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(cores).enable_time().build().unwrap();
    runtime.block_on(async move {
        tokio::spawn(async move {
            let before = process_cpu_time();
            for index in 0..jobs {
                tokio::time::sleep(period).await;
                let (waits, spawned) = (waits.clone(), waits.as_ref().map_or(0, |waits| waits.now()));
                tokio::spawn(async move { job(waits, index, spawned) });
            }
            process_cpu_time() - before
        })
        .await
        .unwrap()
    })
}
