//! Starting a thread of execution and waiting for its value, one at a time.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// roving: the root strand of a two-core pool spawns a strand and joins
/// it, `n` times.
pub fn strand(n: u64) -> Duration {
    crate::harness::on_roving(2, move || {
        let start = Instant::now();
        for i in 0..n {
            let child = roving::strand::spawn(move || black_box(i)).expect("a fibre for the child");
            assert_eq!(child.join().expect("the root strand may join"), i);
        }
        start.elapsed()
    })
}

/// std: `thread::spawn` and `join`, `n` times.
pub fn std_thread(n: u64) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        assert_eq!(std::thread::spawn(move || black_box(i)).join().unwrap(), i);
    }
    start.elapsed()
}

/// tokio: inside a task on a two-worker runtime, `tokio::spawn` a task and
/// await its handle, `n` times.
pub fn tokio(n: u64) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async move {
        tokio::spawn(async move {
            let start = Instant::now();
            for i in 0..n {
                assert_eq!(tokio::spawn(async move { black_box(i) }).await.unwrap(), i);
            }
            start.elapsed()
        })
        .await
        .unwrap()
    })
}
