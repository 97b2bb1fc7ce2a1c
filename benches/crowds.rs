//! Many strands at once against as many tokio tasks: a crowd that yields,
//! pairs that pass one message each, and pairs that rally.

use std::future::Future;
use std::time::{Duration, Instant};

/// Runs `body` as a task of a two-worker tokio runtime; returns the time
/// it measured.
fn on_tokio(body: impl Future<Output = Duration> + Send + 'static) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async move { tokio::spawn(body).await.unwrap() })
}

/// Joins every strand, from the root strand.
fn join_strands<T>(strands: Vec<roving::strand::JoinHandle<T>>) {
    for strand in strands {
        strand.join().expect("the root strand may join");
    }
}

/// Awaits every task.
async fn join_tasks<T>(tasks: Vec<tokio::task::JoinHandle<T>>) {
    for task in tasks {
        task.await.unwrap();
    }
}

/// roving: `strands` strands on a two-core pool yield `yields` times each
/// (more strands than the 64 fibres, so copy-swap moves stacks).
pub fn strand_crowd_yield(strands: u64, yields: u64) -> Duration {
    crate::harness::on_roving(2, move || {
        let start = Instant::now();
        let crowd: Vec<_> = (0..strands)
            .map(|_| {
                roving::strand::spawn(move || {
                    for _ in 0..yields {
                        roving::strand::yield_now().expect("a strand may yield");
                    }
                })
                .expect("room for the strand")
            })
            .collect();
        join_strands(crowd);
        start.elapsed()
    })
}

/// tokio: as many tasks on a two-worker runtime, each calling
/// `tokio::task::yield_now` as often.
pub fn tokio_crowd_yield(tasks: u64, yields: u64) -> Duration {
    on_tokio(async move {
        let start = Instant::now();
        let crowd: Vec<_> = (0..tasks)
            .map(|_| {
                tokio::spawn(async move {
                    for _ in 0..yields {
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        join_tasks(crowd).await;
        start.elapsed()
    })
}

/// roving: `pairs` pairs of strands on a two-core pool, each pair passing
/// one number through a `bounded(1)` channel.
pub fn strand_pairs(pairs: u64) -> Duration {
    crate::harness::on_roving(2, move || {
        let start = Instant::now();
        let strands: Vec<_> = (0..pairs)
            .flat_map(|i| {
                let (sender, receiver) = roving::sync::channel::bounded::<u64>(1).expect("a channel");
                let receiving = roving::strand::spawn(move || {
                    assert_eq!(receiver.recv().expect("a number"), i);
                })
                .expect("room for the receiver");
                let sending = roving::strand::spawn(move || sender.send(i).expect("room in the channel"))
                    .expect("room for the sender");
                [receiving, sending]
            })
            .collect();
        join_strands(strands);
        start.elapsed()
    })
}

/// tokio: as many pairs of tasks passing one number through a `oneshot`.
pub fn tokio_pairs(pairs: u64) -> Duration {
    on_tokio(async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..pairs)
            .flat_map(|i| {
                let (sender, receiver) = tokio::sync::oneshot::channel::<u64>();
                let receiving = tokio::spawn(async move {
                    assert_eq!(receiver.await.unwrap(), i);
                });
                let sending = tokio::spawn(async move {
                    sender.send(i).unwrap();
                });
                [receiving, sending]
            })
            .collect();
        join_tasks(tasks).await;
        start.elapsed()
    })
}

/// roving: `pairs` pairs of strands on a two-core pool, each pair making
/// `trips` round trips over two `bounded(1)` channels, one each way.
pub fn strand_rallies(pairs: u64, trips: u64) -> Duration {
    crate::harness::on_roving(2, move || {
        let start = Instant::now();
        let strands: Vec<_> = (0..pairs)
            .flat_map(|_| {
                let (serve, served) = roving::sync::channel::bounded::<u64>(1).expect("a channel");
                let (answer, answered) = roving::sync::channel::bounded::<u64>(1).expect("a channel");
                let server = roving::strand::spawn(move || {
                    for trip in 0..trips {
                        serve.send(trip).expect("room");
                        assert_eq!(answered.recv().expect("an answer"), trip);
                    }
                })
                .expect("room for the server");
                let answerer = roving::strand::spawn(move || {
                    for _ in 0..trips {
                        answer.send(served.recv().expect("a ball")).expect("room");
                    }
                })
                .expect("room for the answerer");
                [server, answerer]
            })
            .collect();
        join_strands(strands);
        start.elapsed()
    })
}

/// tokio: as many pairs of tasks on a two-worker runtime, each making as
/// many round trips over two `mpsc` channels of capacity 1.
pub fn tokio_rallies(pairs: u64, trips: u64) -> Duration {
    on_tokio(async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..pairs)
            .flat_map(|_| {
                let (serve, mut served) = tokio::sync::mpsc::channel::<u64>(1);
                let (answer, mut answered) = tokio::sync::mpsc::channel::<u64>(1);
                let server = tokio::spawn(async move {
                    for trip in 0..trips {
                        serve.send(trip).await.unwrap();
                        assert_eq!(answered.recv().await.unwrap(), trip);
                    }
                });
                let answerer = tokio::spawn(async move {
                    for _ in 0..trips {
                        answer.send(served.recv().await.unwrap()).await.unwrap();
                    }
                });
                [server, answerer]
            })
            .collect();
        join_tasks(tasks).await;
        start.elapsed()
    })
}
