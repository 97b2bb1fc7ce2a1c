//! More strands than fibres: 500 strands, each keeping a table on its
//! stack, sleep and pass results through a bounded channel on 64 fibres.
//! While they sleep, most of them are not resident on any fibre: their
//! stacks wait on the heap (copy-swap), and `strand::usage` shows how much
//! that takes. Every table is checked when its strand wakes.
//!
//! `cargo run -p roving-examples --bin strands` (QEMU virt, 4 cores)
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::time::Duration;
use roving::sync::channel;
use roving::{Pool, strand};
use roving_examples as _;
use roving_kernel::println;

const STRANDS: u64 = 500;

/// Builds a table of squares on the stack, sleeps (so other strands take
/// the fibre and this stack is copied away), then sums the table.
fn squares_after_a_nap(seed: u64) -> u64 {
    let mut table = [0u64; 64];
    for (i, slot) in table.iter_mut().enumerate() {
        *slot = (seed + i as u64) * (seed + i as u64);
    }
    strand::sleep(Duration::from_millis(50)).expect("a strand may sleep");
    table.iter().sum()
}

fn main() {
    let pool = Pool::new().expect("a pool of every core");
    pool.run(|| {
        let (results, inbox) = channel::bounded(16).expect("memory for a channel");
        let workers: Vec<_> = (0..STRANDS)
            .map(|seed| {
                let results = results.clone();
                strand::spawn(move || results.send((seed, squares_after_a_nap(seed))).expect("main listens"))
                    .expect("a fibre, or room on one")
            })
            .collect();
        drop(results);
        strand::sleep(Duration::from_millis(10)).expect("main is a strand");
        let usage = strand::usage();
        println!(
            "strands: {STRANDS} strands asleep on {} fibres; their saved stacks take {} bytes ({} per strand)",
            usage.fibres_in_use,
            usage.saved_stack_bytes,
            usage.saved_stack_bytes / STRANDS as usize
        );
        let mut received = 0;
        while let Ok((seed, sum)) = inbox.recv() {
            let expected: u64 = (seed..seed + 64).map(|n| n * n).sum();
            assert_eq!(sum, expected, "strand {seed}'s table changed while it slept");
            received += 1;
        }
        for worker in workers {
            worker.join().expect("main is a strand");
        }
        println!("strands: all {received} tables came back intact");
    })
    .expect("the pool runs");
}

roving_kernel::entry!(main);
