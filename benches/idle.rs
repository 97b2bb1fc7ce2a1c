//! What a mostly idle scheduler costs: the CPU time all its threads burn
//! while it runs one small job every `period`, per job, against tokio's;
//! and the cost of parking a thread and unparking it, which bounds how
//! long an idle core should spin before it parks.
//!
//! `cargo bench -p roving-bench --target host-tuple --bench idle -- [quick]`

mod harness;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::thread;
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::args().any(|arg| arg == "quick");
    let (jobs, trips, samples) = if quick { (200, 2_000, 3) } else { (1_000, 20_000, 5) };
    println!("roving-bench idle: median of {samples} rounds after a warm-up round");

    println!("\npark + unpark: ns per pair (two threads waking each other, {trips} round trips)");
    harness::compare(samples, 2 * trips, &[("std thread::park + Thread::unpark", &|| park_pairs(trips))]);

    for period in [Duration::from_millis(1), Duration::from_millis(10)] {
        let jobs = if period > Duration::from_millis(1) { jobs / 10 } else { jobs };
        println!(
            "\nidle: CPU time (all threads) per job, one job every {} ms, {jobs} jobs, two cores (in ns)",
            period.as_millis()
        );
        let rows = harness::compare(
            samples,
            jobs,
            &[
                ("roving, a strand sleeping then spawning", &|| roving(period, jobs)),
                ("tokio, a task sleeping then spawning", &|| tokio(period, jobs)),
            ],
        );
        harness::ratios(&rows, &["tokio, a task sleeping then spawning"]);
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

/// roving: the root strand of a two-core pool sleeps `period`, then
/// spawns a small task, `jobs` times. Returns the CPU time used.
fn roving(period: Duration, jobs: u64) -> Duration {
    harness::on_roving(2, move || {
        let before = process_cpu_time();
        for job in 0..jobs {
            roving::strand::sleep(period).expect("a strand may sleep");
            roving::pool::spawn_task(move || {
                black_box(job);
            })
            .unwrap_or_else(|_| panic!("the pool takes the job"));
        }
        process_cpu_time() - before
    })
}

/// tokio: a task on a two-worker runtime sleeps `period`, then spawns a
/// small task, `jobs` times. Returns the CPU time used.
fn tokio(period: Duration, jobs: u64) -> Duration {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
    runtime.block_on(async move {
        tokio::spawn(async move {
            let before = process_cpu_time();
            for job in 0..jobs {
                tokio::time::sleep(period).await;
                tokio::spawn(async move {
                    black_box(job);
                });
            }
            process_cpu_time() - before
        })
        .await
        .unwrap()
    })
}
