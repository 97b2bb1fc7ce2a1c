//! Task storage is given back after a burst: a million tasks queued at
//! once take 64 MB of blocks, and once the cores are idle again the pool
//! holds only a few chunks per core. (Before, the blocks were kept until
//! the pool was dropped.)
#![cfg(feature = "std")]

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// The system allocator, counting the bytes asked for and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator unchanged, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, SeqCst);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, SeqCst);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const TASKS: usize = 1_000_000;

#[test]
fn a_burst_of_a_million_tasks_gives_its_storage_back_once_idle() {
    let (before, peak, after) = support::on_pool(2, || {
        let before = LIVE.load(SeqCst);
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..TASKS {
            let ran = ran.clone();
            roving::post(0, move || {
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let peak = LIVE.load(SeqCst);
        let start = Instant::now();
        while ran.load(SeqCst) < TASKS && start.elapsed() < Duration::from_secs(60) {
            roving::strand::sleep(Duration::from_millis(5)).unwrap();
        }
        // Let the cores fall asleep, which is when they trim.
        roving::strand::sleep(Duration::from_millis(50)).unwrap();
        (before, peak, LIVE.load(SeqCst))
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
