//! What tracing costs on bare metal, and whether a board's trace agrees
//! with its counters.
//!
//! `benches/bare-metal` runs this kernel on one core under QEMU with
//! `-icount shift=0,align=off,sleep=off`, where the cycle counter advances
//! by one per instruction, built without and with feature `trace`: the
//! difference per task, over the events each task recorded, is the cost
//! of an event. Two loads on a pool of core 0:
//!
//! - **posts**: [`ROUNDS`] tasks, each posting the next to its own core;
//! - **yields**: two strands that yield to each other [`ROUNDS`] times.
//!
//! With the feature it then runs work on a pool of every core (posts
//! across cores, spawned tasks that fan out and are stolen, strands that
//! wait at a gate, timed sleeps), and fails unless each core's trace, which
//! must have lost nothing, counts exactly what its `CoreStats` count.
//! `make trace-check` runs that at 4 cores on virt and the PC; the QEMU
//! suite runs the kernel without the feature, once, to keep it working.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::sync::Arc;
use roving::{Pool, platform};
use roving_kernel::{cycles, println};
use roving_test_kernels::pass;

/// Tasks, and yields, per load.
const ROUNDS: usize = 2000;

/// Events the pool's rings have taken so far, kept or overwritten.
#[cfg(feature = "trace")]
fn recorded(pool: &Pool) -> u64 {
    pool.trace().iter().map(|core| core.events.len() as u64 + core.lost).sum()
}

#[cfg(not(feature = "trace"))]
fn recorded(_: &Pool) -> u64 {
    0
}

/// Each task posts the next to core 0 until `left` runs out.
fn post_chain(left: usize, done: Arc<roving::sync::Event>) {
    if left == 0 {
        done.set();
        return;
    }
    roving::post(0, move || post_chain(left - 1, done)).expect("core 0 takes posts");
}

/// Runs `load` on `pool` and prints its instructions and events per unit.
fn measure(pool: &Pool, name: &str, units: &str, load: fn()) {
    let before = recorded(pool);
    let start = cycles();
    load();
    let took = cycles() - start;
    let events = recorded(pool) - before;
    println!(
        "trace_cost: {name}: {ROUNDS} {units}, {} cycles per one, {}.{:02} events per one (feature trace {})",
        took / ROUNDS as u64,
        events / ROUNDS as u64,
        events * 100 / ROUNDS as u64 % 100,
        if cfg!(feature = "trace") { "on" } else { "off" }
    );
}

fn posts() {
    let done = Arc::new(roving::sync::Event::new());
    post_chain(ROUNDS, done.clone());
    done.wait().expect("the chain ends");
}

fn yields() {
    let strands: alloc::vec::Vec<_> = (0..2)
        .map(|_| {
            roving::strand::spawn(|| {
                for _ in 0..ROUNDS / 2 {
                    roving::strand::yield_now().expect("a strand yields");
                }
            })
            .expect("a strand starts")
        })
        .collect();
    for strand in strands {
        strand.join().expect("the strand ends");
    }
}

fn main() {
    let on = if cfg!(target_arch = "x86_64") { "x86_64 PC" } else { "AArch64" };
    println!(
        "trace_cost: on core 0 of {} cores, the cycle counter ({on}; under -icount shift=0: instructions)",
        platform::core_count()
    );
    let pool = Pool::with_cores(&[0], roving::Config::new()).expect("a pool of core 0");
    pool.run(|| {
        let pool = Pool::current().expect("on the pool");
        measure(&pool, "posts", "tasks", posts);
        measure(&pool, "yields", "yields", yields);
    })
    .expect("the pool runs");
    drop(pool);
    #[cfg(feature = "trace")]
    agrees::with_the_counters();
    pass("trace_cost");
}

/// On every core: the trace against the counters.
#[cfg(feature = "trace")]
mod agrees {
    use super::*;
    use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use core::time::Duration;
    use roving::CoreStats;
    use roving::trace::{Counted, EVENTS_PER_CORE};

    /// Chains of posts that hop across cores, tasks that fan out, strands at
    /// a gate.
    fn workload() {
        const CHAINS: usize = 4;
        let cores = platform::core_count();
        let hops = Arc::new((AtomicUsize::new(0), roving::sync::Event::new()));
        type Hops = Arc<(AtomicUsize, roving::sync::Event)>;
        fn hop(left: usize, cores: usize, hops: Hops) {
            if left > 0 {
                roving::post(left % cores, move || hop(left - 1, cores, hops)).expect("a core takes posts");
            } else if hops.0.fetch_add(1, SeqCst) + 1 == CHAINS {
                hops.1.set();
            }
        }
        fn fan_out(depth: u32) {
            if depth > 0 {
                for _ in 0..2 {
                    roving::spawn_task(move || fan_out(depth - 1)).expect("the pool takes tasks");
                }
            }
        }
        for round in 0..CHAINS {
            let hops = hops.clone();
            roving::post(round % cores, move || hop(50, cores, hops)).expect("a core takes posts");
            roving::spawn_task(|| fan_out(5)).expect("the pool takes tasks");
            roving::strand::sleep(Duration::from_millis(2)).expect("main sleeps");
        }
        let gate = Arc::new(roving::sync::Event::new());
        let strands: alloc::vec::Vec<_> = (0..40)
            .map(|_| {
                let gate = gate.clone();
                roving::strand::spawn(move || {
                    gate.wait().expect("the gate opens");
                    roving::strand::yield_now().expect("a strand yields");
                })
                .expect("a strand starts")
            })
            .collect();
        gate.set();
        for strand in strands {
            strand.join().expect("the strand ends");
        }
        hops.1.wait().expect("every chain of hops ends");
    }

    pub(super) fn with_the_counters() {
        let pool = roving_test_kernels::every_core_pool();
        pool.run(workload).expect("the pool runs");
        let (stats, traces) = (pool.stats(), pool.trace());
        let mut events = 0;
        for (core, (stats, trace)) in stats.iter().zip(&traces).enumerate() {
            assert_eq!(trace.lost, 0, "core {core} lost events (its ring holds {EVENTS_PER_CORE})");
            assert_eq!(trace.counted(), Counted::from(stats), "core {core}: the trace against {stats:?}");
            events += trace.events.len();
        }
        let total = |field: fn(&CoreStats) -> u64| stats.iter().map(field).sum::<u64>();
        println!(
            "trace_cost: {} cores' traces agree with their counters: {events} events, {} tasks, {} sleeps, {} wake-ups",
            traces.len(),
            total(|s| s.tasks_run),
            total(|s| s.sleeps),
            total(|s| s.wakeups)
        );
    }
}

roving_kernel::entry!(main);
