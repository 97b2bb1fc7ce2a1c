//! Async tasks and strands on one channel: strands produce readings with
//! blocking `send`, async tasks take them with `recv_async` and keep a
//! tally under one `Mutex` (`lock_async`), and a strand reads the tally
//! with a blocking `lock`. The channel is small, so both kinds wait on it
//! (strands block, tasks await), and neither holds a core while it waits.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;
use roving::sync::{Mutex, channel};
use roving::{Pool, executor, platform, strand};
use roving_examples as _;
use roving_kernel::println;

const PRODUCERS: u64 = 4;
const READINGS: u64 = 1_000;
const CONSUMERS: usize = 3;

fn main() {
    let (sum, per_task) = Pool::new()
        .expect("a pool")
        .run(|| {
            let (tx, rx) = channel::bounded::<u64>(4).expect("memory for a channel");
            let tally = Arc::new(Mutex::new(0u64));
            let producers: Vec<_> = (0..PRODUCERS)
                .map(|p| {
                    let tx = tx.clone();
                    strand::spawn(move || {
                        (0..READINGS).for_each(|n| tx.send(p * READINGS + n).expect("sent"))
                    })
                    .expect("a fibre")
                })
                .collect();
            drop(tx);
            let consumers: Vec<_> = (0..CONSUMERS)
                .map(|_| {
                    let (rx, tally) = (rx.clone(), tally.clone());
                    executor::spawn_async(async move {
                        let mut taken = 0u64;
                        while let Ok(reading) = rx.recv_async().await {
                            *tally.lock_async().await.expect("not poisoned") += reading;
                            taken += 1;
                        }
                        (taken, platform::current_core())
                    })
                    .expect("a running pool takes tasks")
                })
                .collect();
            drop(rx);
            producers.into_iter().for_each(|p| p.join().expect("a producer finishes"));
            let per_task: Vec<_> =
                consumers.into_iter().map(|c| c.join().expect("a consumer finishes")).collect();
            let sum = *tally.lock().expect("not poisoned");
            (sum, per_task)
        })
        .expect("the pool runs");
    let expected: u64 = (0..PRODUCERS * READINGS).sum();
    for (n, (taken, core)) in per_task.iter().enumerate() {
        println!("shared_channel: task {n} took {taken} readings (last on core {core:?})");
    }
    println!(
        "shared_channel: {PRODUCERS} strands sent, {CONSUMERS} tasks received; tally {sum} (expected {expected})"
    );
    roving_kernel::exit(if sum == expected { 0 } else { 1 });
}

roving_kernel::entry!(main);
