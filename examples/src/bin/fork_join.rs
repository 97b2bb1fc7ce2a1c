//! Fork-join: sort a million numbers with `roving::join`, splitting the
//! work in halves the way rayon does, with no strand or allocation per
//! piece. Idle cores take the halves that are offered; the result is
//! checked against a serial sort of the same numbers, and both are timed.
//!
//! `cargo run -p roving-examples --bin fork_join` (QEMU virt, 4 cores)
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use roving::time::Instant;
use roving::{Pool, join, platform};
use roving_examples as _;
use roving_kernel::println;

const NUMBERS: usize = 1 << 20;
/// Below this many numbers a piece is sorted on one core.
const GRAIN: usize = 4096;

/// Sorts `numbers`, using `scratch` (as long) for the merge.
fn merge_sort(numbers: &mut [u32], scratch: &mut [u32]) {
    if numbers.len() <= GRAIN {
        numbers.sort_unstable();
        return;
    }
    let mid = numbers.len() / 2;
    let (left, right) = numbers.split_at_mut(mid);
    let (left_scratch, right_scratch) = scratch.split_at_mut(mid);
    join(|| merge_sort(left, left_scratch), || merge_sort(right, right_scratch));
    merge(numbers, mid, scratch);
}

/// Merges the sorted halves `numbers[..mid]` and `numbers[mid..]`.
fn merge(numbers: &mut [u32], mid: usize, scratch: &mut [u32]) {
    let (mut i, mut j) = (0, mid);
    for out in scratch.iter_mut() {
        if j == numbers.len() || (i < mid && numbers[i] <= numbers[j]) {
            *out = numbers[i];
            i += 1;
        } else {
            *out = numbers[j];
            j += 1;
        }
    }
    numbers.copy_from_slice(scratch);
}

/// The same pseudo-random numbers every run (xorshift).
fn numbers() -> Vec<u32> {
    let mut x = 0x2545_f491u32;
    (0..NUMBERS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

fn main() {
    let mut expected = numbers();
    let started = Instant::now();
    expected.sort_unstable();
    let serial = started.elapsed();

    let pool = Pool::new().expect("a pool of every core");
    let (sorted, parallel) = pool
        .run(|| {
            let (mut numbers, mut scratch) = (numbers(), alloc::vec![0; NUMBERS]);
            let started = Instant::now();
            merge_sort(&mut numbers, &mut scratch);
            (numbers, started.elapsed())
        })
        .expect("the pool runs");
    assert!(sorted == expected, "the parallel sort disagrees with the serial one");
    println!(
        "fork_join: sorted {NUMBERS} numbers on {} cores in {} ms (one core, serial: {} ms); the results agree",
        platform::core_count(),
        parallel.as_millis(),
        serial.as_millis()
    );
}

roving_kernel::entry!(main);
