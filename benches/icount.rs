//! One-core workloads for counting instructions on the host
//! (`benches/host-icount`, under valgrind): a pool of one core runs one
//! operation `n` times, on one thread, so the count is the same on every
//! run and two sizes' difference, divided by their difference in `n`,
//! is the cost of one operation with the set-up taken out.
//!
//!     roving-icount WORKLOAD N
//!
//! Workloads: `join` (fork-join, fib: N is fib's argument, and the joins
//! number fib(N + 1) - 1), `spawn_async` (spawn an async task, then await
//! its handle), `post` (a task posted to the pool's one core), `strand`
//! (spawn a strand and join it), `yield` (a strand's `yield_now`).

use roving::{Pool, join, platform::host::Machine, strand};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn run(workload: &str, n: u64) {
    match workload {
        "join" => _ = black_box(fib(black_box(n))),
        "spawn_async" => {
            let handles: Vec<_> =
                (0..n).map(|i| roving::spawn_async(async move { i }).expect("spawned")).collect();
            for handle in handles {
                roving::block_on(handle).expect("awaited").expect("completed");
            }
        }
        "post" => {
            let done = Arc::new(AtomicU64::new(0));
            for _ in 0..n {
                let done = done.clone();
                roving::spawn_task(move || _ = done.fetch_add(1, Relaxed)).expect("posted");
            }
            while done.load(Relaxed) < n {
                strand::yield_now().expect("yielded");
            }
        }
        "strand" => {
            for i in 0..n {
                black_box(strand::spawn(move || i).expect("spawned").join().expect("joined"));
            }
        }
        "yield" => {
            for _ in 0..n {
                strand::yield_now().expect("yielded");
            }
        }
        other => panic!("no workload {other:?}: join, spawn_async, post, strand or yield"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().expect("usage: roving-icount WORKLOAD N");
    let n: u64 = args.next().expect("usage: roving-icount WORKLOAD N").parse().expect("N is a number");
    Machine::new(1)
        .expect("a machine of one core")
        .run(move || {
            let pool = Pool::new().expect("a pool");
            pool.run(move || run(&workload, n)).expect("the run ends");
        })
        .expect("the machine runs");
}
