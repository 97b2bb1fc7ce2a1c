//! Fork-join cases shared by the host tests (`tests/join.rs`) and the QEMU
//! kernel `join`. Only `core` and roving: it builds for bare metal.
#![allow(dead_code)]

extern crate alloc;

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use roving::{join, platform};

/// Elements in [`parallel_sum`].
pub const ELEMENTS: u64 = 100_000_000;
/// The element at `i`: `i % 1000`, so the sum has a closed form.
fn element(i: u64) -> u64 {
    i % 1000
}
/// The sum of [`ELEMENTS`] elements: 10^5 blocks of 0 + 1 + ... + 999.
pub const SUM: u64 = 499_500 * (ELEMENTS / 1000);

/// Bit `c` set: core `c` ran a leaf of [`parallel_sum`].
pub static LEAF_CORES: AtomicU64 = AtomicU64::new(0);

/// The sum of elements `lo..hi`, split in halves with `join` down to
/// `grain` elements.
pub fn parallel_sum(lo: u64, hi: u64, grain: u64) -> u64 {
    if hi - lo <= grain {
        if let Some(core) = platform::current_core() {
            LEAF_CORES.fetch_or(1 << (core % 64), Relaxed);
        }
        return (lo..hi).map(element).sum();
    }
    let mid = lo + (hi - lo) / 2;
    let (left, right) = join(|| parallel_sum(lo, mid, grain), || parallel_sum(mid, hi, grain));
    left + right
}

/// Fibonacci with a `join` at every level above `cutoff`.
pub fn fib(n: u32, cutoff: u32) -> u64 {
    if n <= cutoff {
        return fib_serial(n);
    }
    let (a, b) = join(|| fib(n - 1, cutoff), || fib(n - 2, cutoff));
    a + b
}

fn fib_serial(n: u32) -> u64 {
    if n < 2 { u64::from(n) } else { fib_serial(n - 1) + fib_serial(n - 2) }
}

/// fib(32).
pub const FIB_32: u64 = 2_178_309;

/// Distinct cores that ran a leaf of the last [`parallel_sum`].
pub fn leaf_cores() -> u32 {
    LEAF_CORES.swap(0, Relaxed).count_ones()
}

static B_STARTED: AtomicU64 = AtomicU64::new(0);
static B_ENDED: AtomicU64 = AtomicU64::new(0);

fn spin_for(limit: core::time::Duration, until: impl Fn() -> bool) {
    let start = roving::time::Instant::now();
    while !until() && start.elapsed() < limit {
        core::hint::spin_loop();
    }
}

/// A pool's `main`: a strand's `a` panics inside a join while another core
/// may be running its `b`. The strand fails with a's message, and only
/// after `b` ended (its job was on the failed strand's stack). Returns
/// the failure's message.
pub fn a_fails_inside_a_join() -> roving::strand::Failure {
    use core::time::Duration;
    let strand = roving::strand::spawn(|| {
        join(
            || {
                // Give an idle core time to take `b`.
                spin_for(Duration::from_millis(200), || B_STARTED.load(Relaxed) != 0);
                panic!("a failed inside a join")
            },
            || {
                B_STARTED.store(1, Relaxed);
                spin_for(Duration::from_millis(50), || false);
                B_ENDED.store(1, Relaxed);
            },
        )
    })
    .expect("spawn");
    let failure = match strand.join() {
        Err(roving::strand::JoinError::Failed(failure)) => failure,
        other => panic!("expected the strand's failure, got {other:?}"),
    };
    let (started, ended) = (B_STARTED.load(Relaxed), B_ENDED.load(Relaxed));
    assert!(started == ended, "b was running on another core when the strand's failure was reported");
    // The pool goes on: join still works.
    assert_eq!(fib(16, 2), 987);
    failure
}

/// Spins in `a` until `until` or `limit`, joining nothing all the while:
/// each join offers this strand's oldest job again, should it not have
/// been offered when its own join began (no core was idle then).
fn spin_offering(limit: core::time::Duration, until: impl Fn() -> bool) {
    spin_for(limit, || {
        join(|| (), || ());
        until()
    });
}

static T_B_RUNNING: AtomicU64 = AtomicU64::new(0);
static S_B_STARTED: AtomicU64 = AtomicU64::new(0);
static S_ENDED: AtomicU64 = AtomicU64::new(0);
static BUSY: AtomicU64 = AtomicU64::new(0);

/// A pool's `main` on at least 3 cores: both halves of a strand's join
/// fail, and its failure is `a`'s with `b`'s counted in `others`. `b` is
/// taken by another strand waiting in its own join, so on bare metal too
/// (where a panic outside strands stops the machine) it fails in a strand:
///
/// - strand T, pinned to core 1, joins: its `b` runs on core 2 until S
///   has ended, so T waits in its join, taking other strands' jobs;
/// - the other cores above 2 are kept busy, so only T takes jobs;
/// - strand S, pinned to core 0, joins: T takes its `b`, which panics,
///   and then S's `a` panics.
pub fn both_halves_fail_inside_a_join() -> roving::strand::Failure {
    use core::time::Duration;
    use roving::strand::{JoinError, JoinHandle};
    let limit = Duration::from_secs(5);
    let pool = roving::Pool::current().expect("a pool's main");
    let cores = pool.cores();
    assert!(cores.len() >= 3, "needs 3 cores, has {}", cores.len());
    for flag in [&T_B_RUNNING, &S_B_STARTED, &S_ENDED, &BUSY] {
        flag.store(0, Relaxed);
    }
    let ended = || S_ENDED.load(Relaxed) != 0;
    let busy: alloc::vec::Vec<JoinHandle<()>> = cores[3..]
        .iter()
        .map(|&core| {
            let busy = move || {
                BUSY.fetch_add(1, Relaxed);
                spin_for(limit, ended);
            };
            pool.spawn_strand_on(core, busy).expect("spawn")
        })
        .collect();
    // Every core above 2 busy before any job is offered.
    spin_for(limit, || BUSY.load(Relaxed) == busy.len() as u64);
    let t = pool
        .spawn_strand_on(cores[1], move || {
            join(
                || spin_offering(limit, || T_B_RUNNING.load(Relaxed) != 0),
                || {
                    T_B_RUNNING.store(1, Relaxed);
                    spin_for(limit, ended);
                },
            )
        })
        .expect("spawn");
    spin_for(limit, || T_B_RUNNING.load(Relaxed) != 0);
    let s = pool
        .spawn_strand_on(cores[0], move || {
            join(
                || {
                    spin_offering(limit, || S_B_STARTED.load(Relaxed) != 0);
                    panic!("a failed, and so did b")
                },
                || {
                    S_B_STARTED.store(1, Relaxed);
                    panic!("b failed too")
                },
            )
        })
        .expect("spawn");
    let failure = match s.join() {
        Err(JoinError::Failed(failure)) => failure,
        other => panic!("expected the strand's failure, got {other:?}"),
    };
    S_ENDED.store(1, Relaxed);
    // T fails on bare metal (the panic in the `b` it ran was its own
    // strand's), not on the host (its join caught it for S): either way
    // it ends.
    let _ = t.join();
    busy.into_iter().for_each(|strand| strand.join().expect("a busy strand"));
    failure
}
