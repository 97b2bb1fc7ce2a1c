//! Many strands at once against as many tokio tasks: a crowd that yields,
//! and pairs that pass one message each.

use std::time::{Duration, Instant};

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
        for strand in crowd {
            strand.join().expect("the root strand may join");
        }
        start.elapsed()
    })
}

/// tokio: as many tasks on a two-worker runtime, each calling
/// `tokio::task::yield_now` as often.
pub fn tokio_crowd_yield(tasks: u64, yields: u64) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async move {
        tokio::spawn(async move {
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
            for task in crowd {
                task.await.unwrap();
            }
            start.elapsed()
        })
        .await
        .unwrap()
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
        for strand in strands {
            strand.join().expect("the root strand may join");
        }
        start.elapsed()
    })
}

/// tokio: as many pairs of tasks passing one number through a `oneshot`.
pub fn tokio_pairs(pairs: u64) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async move {
        tokio::spawn(async move {
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
            for task in tasks {
                task.await.unwrap();
            }
            start.elapsed()
        })
        .await
        .unwrap()
    })
}
