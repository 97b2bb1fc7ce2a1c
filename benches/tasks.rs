//! Async tasks: tokio's own scheduler benchmarks (its `rt_multi_threaded`
//! set: `spawn_many`, `yield_many`, `ping_pong`, `chained_spawn`), done the
//! same way on roving's async tasks, on two cores (workers) each.
//!
//! Each workload runs inside one task (tokio) or one root strand (roving),
//! which waits for the work to end; the time is taken inside.

mod harness;

use harness::{compare, on_roving, ratios};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

const CORES: usize = 2;
const SPAWN_MANY: usize = 10_000;
const YIELD_TASKS: usize = 200;
const YIELDS: usize = 500;
const PINGS: usize = 1_000;
const CHAIN: usize = 1_000;

/// Runs `work` as a task on a fresh tokio runtime of `CORES` workers and
/// returns the time it measured.
fn in_tokio_task<W: std::future::Future<Output = Duration> + Send + 'static>(work: W) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(CORES).build().unwrap();
    runtime.block_on(async { tokio::spawn(work).await.unwrap() })
}

/// Joins roving tasks from the root strand.
fn join_all<T>(handles: Vec<roving::executor::TaskHandle<T>>) {
    for handle in handles {
        handle.join().unwrap();
    }
}

/// Awaits tokio tasks.
async fn await_all<T>(handles: Vec<tokio::task::JoinHandle<T>>) {
    for handle in handles {
        handle.await.unwrap();
    }
}

/// Spawns `SPAWN_MANY` tasks from a task; each counts itself; waits until
/// every one has.
fn spawn_many_roving() -> Duration {
    on_roving(CORES, || {
        let start = Instant::now();
        let counted = Arc::new(AtomicUsize::new(0));
        let spawner = {
            let counted = counted.clone();
            roving::spawn_async(async move {
                let handles: Vec<_> = (0..SPAWN_MANY)
                    .map(|_| {
                        let counted = counted.clone();
                        roving::spawn_async(async move {
                            counted.fetch_add(1, SeqCst);
                        })
                        .unwrap()
                    })
                    .collect();
                for handle in handles {
                    handle.await.unwrap();
                }
            })
            .unwrap()
        };
        spawner.join().unwrap();
        assert_eq!(counted.load(SeqCst), SPAWN_MANY);
        start.elapsed()
    })
}

fn spawn_many_tokio() -> Duration {
    in_tokio_task(async {
        let start = Instant::now();
        let counted = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..SPAWN_MANY)
            .map(|_| {
                let counted = counted.clone();
                tokio::spawn(async move {
                    counted.fetch_add(1, SeqCst);
                })
            })
            .collect();
        await_all(handles).await;
        assert_eq!(counted.load(SeqCst), SPAWN_MANY);
        start.elapsed()
    })
}

/// `YIELD_TASKS` tasks each yield `YIELDS` times.
fn yield_many_roving() -> Duration {
    on_roving(CORES, || {
        let start = Instant::now();
        let handles: Vec<_> = (0..YIELD_TASKS)
            .map(|_| {
                roving::spawn_async(async {
                    for _ in 0..YIELDS {
                        roving::executor::yield_now().await;
                    }
                })
                .unwrap()
            })
            .collect();
        join_all(handles);
        start.elapsed()
    })
}

fn yield_many_tokio() -> Duration {
    in_tokio_task(async {
        let start = Instant::now();
        let handles: Vec<_> = (0..YIELD_TASKS)
            .map(|_| {
                tokio::spawn(async {
                    for _ in 0..YIELDS {
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        await_all(handles).await;
        start.elapsed()
    })
}

/// `PINGS` times: a task spawns a task that answers it (the answer comes
/// back through the spawned task's handle, a one-shot channel).
fn ping_pong_roving() -> Duration {
    on_roving(CORES, || {
        let start = Instant::now();
        let handles: Vec<_> = (0..PINGS)
            .map(|i| {
                roving::spawn_async(async move {
                    let pong = roving::spawn_async(async move { black_box(i) }).unwrap();
                    assert_eq!(pong.await.unwrap(), i);
                })
                .unwrap()
            })
            .collect();
        join_all(handles);
        start.elapsed()
    })
}

/// As [`ping_pong_roving`], the answer sent over roving's channel (one
/// value of room), as tokio's goes over its oneshot.
fn ping_pong_roving_channel() -> Duration {
    on_roving(CORES, || {
        let start = Instant::now();
        let handles: Vec<_> = (0..PINGS)
            .map(|i| {
                roving::spawn_async(async move {
                    let (answer, answered) = roving::sync::channel::bounded(1).unwrap();
                    drop(
                        roving::spawn_async(async move { answer.send_async(black_box(i)).await.unwrap() })
                            .unwrap(),
                    );
                    assert_eq!(answered.recv_async().await.unwrap(), i);
                })
                .unwrap()
            })
            .collect();
        join_all(handles);
        start.elapsed()
    })
}

fn ping_pong_tokio() -> Duration {
    in_tokio_task(async {
        let start = Instant::now();
        let handles: Vec<_> = (0..PINGS)
            .map(|i| {
                tokio::spawn(async move {
                    let (answer, answered) = tokio::sync::oneshot::channel();
                    tokio::spawn(async move { answer.send(black_box(i)).unwrap() });
                    assert_eq!(answered.await.unwrap(), i);
                })
            })
            .collect();
        await_all(handles).await;
        start.elapsed()
    })
}

/// A task spawns a task, which spawns a task, `CHAIN` deep; the last ends
/// the chain.
fn chained_spawn_roving() -> Duration {
    fn link(left: usize) -> roving::executor::TaskHandle<()> {
        roving::spawn_async(async move {
            if left > 0 {
                drop(link(left - 1));
            } else {
                black_box(left);
            }
        })
        .unwrap()
    }
    on_roving(CORES, || {
        let start = Instant::now();
        let pool = roving::Pool::current().unwrap();
        drop(link(CHAIN));
        while pool.live_tasks() > 0 {
            roving::strand::yield_now().unwrap();
        }
        start.elapsed()
    })
}

fn chained_spawn_tokio() -> Duration {
    fn link(left: usize, done: tokio::sync::oneshot::Sender<()>) {
        tokio::spawn(async move {
            if left > 0 {
                link(left - 1, done);
            } else {
                done.send(()).unwrap();
            }
        });
    }
    in_tokio_task(async {
        let start = Instant::now();
        let (done, finished) = tokio::sync::oneshot::channel();
        link(CHAIN, done);
        finished.await.unwrap();
        start.elapsed()
    })
}

fn main() {
    let groups: [(&str, u64, &[harness::Contender]); 4] = [
        (
            "spawn_many: 10,000 tasks spawned from a task (per task)",
            SPAWN_MANY as u64,
            &[("roving spawn_async", &spawn_many_roving), ("tokio spawn", &spawn_many_tokio)],
        ),
        (
            "yield_many: 200 tasks yield 500 times (per yield)",
            (YIELD_TASKS * YIELDS) as u64,
            &[("roving yield_now", &yield_many_roving), ("tokio yield_now", &yield_many_tokio)],
        ),
        (
            "ping_pong: 1,000 tasks each answered by a task it spawns (per ping)",
            PINGS as u64,
            &[
                ("roving handle as answer", &ping_pong_roving),
                ("roving channel, send_async/recv_async", &ping_pong_roving_channel),
                ("tokio oneshot", &ping_pong_tokio),
            ],
        ),
        (
            "chained_spawn: a chain of 1,000 tasks each spawning the next (per task)",
            CHAIN as u64,
            &[("roving spawn_async", &chained_spawn_roving), ("tokio spawn", &chained_spawn_tokio)],
        ),
    ];
    for (title, ops, contenders) in groups {
        println!("{title}, {CORES} cores");
        let rows = compare(15, ops, contenders);
        ratios(&rows, &[contenders[contenders.len() - 1].0]);
    }
}
