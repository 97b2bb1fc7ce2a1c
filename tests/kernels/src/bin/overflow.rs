//! Must fail: a strand recurses until it runs off the bottom of its fibre
//! stack. The guard page below the stack is unmapped, so the first store
//! into it faults; the suite expects status 102 and a report that names the
//! strand. (Without the guard the strand would write over the stack of the
//! fibre below, or the canary check would catch it later.)
#![no_std]
#![no_main]

use core::hint::black_box;
use roving::{Pool, strand};
use roving_kernel::println;
use roving_test_kernels as _;

fn main() {
    let pool = Pool::new().expect("a pool of every core");
    let depth = pool
        .run(|| {
            let diver = strand::spawn(|| {
                let me = strand::current().expect("a strand has an id");
                println!("overflow: strand {me} recurses until its stack runs out");
                dive(0)
            })
            .expect("a fibre for the diver");
            diver.join().expect("main is a strand")
        })
        .expect("the pool runs");
    panic!("the strand returned from {depth} levels without overflowing its stack");
}

/// Takes 256 bytes of stack per level, forever (the bound is never met).
#[inline(never)]
fn dive(depth: usize) -> usize {
    let mut frame = [0u8; 256];
    frame[depth % frame.len()] = depth as u8;
    black_box(&mut frame);
    if depth == usize::MAX {
        return depth;
    }
    dive(depth + 1) + usize::from(frame[0])
}

roving_kernel::entry!(main);
