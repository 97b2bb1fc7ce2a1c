//! `make bench`: roving's mailboxes against a raw atomic floor and the
//! usual channels and pools, in one run. Results go in BENCHMARKS.md.
//!
//! `cargo bench -p roving-bench --target host-tuple -- [quick]`

mod harness;
mod pingpong;
mod stream;

use harness::{compare, ratios};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counts calls into the global allocator, to show how often the task
/// path reaches it.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `main` on a fresh two-core roving pool.
fn on_roving<R: Send + 'static>(main: impl FnOnce() -> R + Send) -> R {
    harness::on_roving(2, main)
}

/// Allocator calls per task over one roving stream.
fn allocations_per_task(tasks: u64, run: impl FnOnce(u64) -> std::time::Duration) -> f64 {
    let before = ALLOCATIONS.load(Relaxed);
    run(tasks);
    (ALLOCATIONS.load(Relaxed) - before) as f64 / tasks as f64
}

fn main() {
    let (trips, tasks, samples) = harness::sizes((10_000, 100_000, 3), (50_000, 1_000_000, 11));
    harness::banner(samples);

    println!("\nping-pong: ns per round trip between two cores ({trips} round trips per sample)");
    let rows = compare(
        samples,
        trips,
        &[
            ("raw atomic (floor)", &|| pingpong::atomic_floor(trips)),
            ("roving mailbox", &|| pingpong::roving(trips)),
            ("crossbeam-channel", &|| pingpong::crossbeam(trips)),
            ("std mpsc", &|| pingpong::std_mpsc(trips)),
            ("tokio mpsc", &|| pingpong::tokio(trips)),
        ],
    );
    ratios(&rows, &["raw atomic (floor)", "crossbeam-channel"]);

    println!("\nstream: ns per task, one core to another ({tasks} tasks per sample)");
    let rows = compare(
        samples,
        tasks,
        &[
            ("roving mailbox", &|| stream::roving(tasks, 1)),
            ("roving mailbox, 48-byte closures (heap)", &|| stream::roving_heap(tasks)),
            ("roving, posted to its own core", &|| stream::roving(tasks, 0)),
            ("crossbeam-channel, boxed closures", &|| stream::crossbeam_jobs(tasks)),
            ("crossbeam-channel, numbers", &|| stream::crossbeam_numbers(tasks)),
            ("std mpsc, boxed closures", &|| stream::std_mpsc(tasks)),
            ("rayon scope spawn", &|| stream::rayon(tasks)),
            ("tokio mpsc, boxed closures", &|| stream::tokio(tasks)),
        ],
    );
    ratios(&rows, &["crossbeam-channel, boxed closures", "crossbeam-channel, numbers"]);

    println!("\nremote free: global allocator calls per task over one stream");
    println!(
        "  roving, 16-byte closures (block cache)    {:.4}",
        allocations_per_task(tasks, |n| stream::roving(n, 1))
    );
    println!(
        "  roving, 48-byte closures (heap)           {:.4}",
        allocations_per_task(tasks, stream::roving_heap)
    );
}
