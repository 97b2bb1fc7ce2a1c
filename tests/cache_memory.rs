//! Task storage is given back after a burst: a million tasks queued at
//! once take 64 MB of blocks, and once the cores are idle again the pool
//! holds only a few chunks per core. (Before, the blocks were kept until
//! the pool was dropped.)
#![cfg(feature = "std")]

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

const TASKS: usize = 1_000_000;

#[test]
fn a_burst_of_a_million_tasks_gives_its_storage_back_once_idle() {
    let (before, peak, after) = support::on_pool(2, || {
        let before = counting_alloc::live();
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..TASKS {
            let ran = ran.clone();
            roving::post(0, move || {
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let peak = counting_alloc::live();
        let start = Instant::now();
        while ran.load(SeqCst) < TASKS && start.elapsed() < Duration::from_secs(60) {
            roving::strand::sleep(Duration::from_millis(5)).unwrap();
        }
        // Let the cores fall asleep, which is when they trim.
        roving::strand::sleep(Duration::from_millis(50)).unwrap();
        (before, peak, counting_alloc::live())
    });
    let mb = |bytes: isize| bytes as f64 / (1 << 20) as f64;
    assert!(peak - before > 50 << 20, "the burst held {:.1} MB", mb(peak - before));
    assert!(
        after - before < 1 << 20,
        "after the burst the pool still held {:.1} MB more than before it (peak {:.1} MB)",
        mb(after - before),
        mb(peak - before)
    );
}
