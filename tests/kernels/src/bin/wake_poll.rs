//! A wake plus a poll of an async task, counted in instructions for
//! `BENCHMARKS.md`: `benches/bare-metal` runs this kernel under QEMU with
//! `-icount shift=0,align=off,sleep=off`, where the cycle counter advances
//! by one per instruction. (The QEMU suite runs it once without `-icount`,
//! to keep it working.)
//!
//! A task on a one-core pool wakes itself and returns `Pending`,
//! [`ROUNDS`] times; each sample runs from just before the wake to the
//! first statement of the next poll: the waker's work, the end of the
//! poll, the queue, and the start of the next poll. embassy-executor
//! reports 79 cycles for the same on an nRF52840.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use roving::{Pool, executor, platform};
use roving_kernel::{cycles, println};
use roving_test_kernels::pass;

const ROUNDS: usize = 1000;

/// Wakes itself `ROUNDS` times, timing each wake to the next poll.
struct WakesItself {
    woke_at: Option<u64>,
    samples: Vec<u64>,
}

impl Future for WakesItself {
    type Output = Vec<u64>;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Vec<u64>> {
        let polled_at = cycles();
        if let Some(woke_at) = self.woke_at.take() {
            self.samples.push(polled_at - woke_at);
        }
        if self.samples.len() == ROUNDS {
            return Poll::Ready(core::mem::take(&mut self.samples));
        }
        self.woke_at = Some(cycles());
        context.waker().wake_by_ref();
        Poll::Pending
    }
}

fn main() {
    let pool = Pool::with_cores(&[0], roving::Config::new()).expect("a pool of core 0");
    let mut samples = pool
        .run(|| {
            let task = WakesItself { woke_at: None, samples: Vec::with_capacity(ROUNDS) };
            executor::spawn_async(task).expect("a running pool takes tasks").join().expect("the task ends")
        })
        .expect("the pool runs");
    samples.sort_unstable();
    let n = samples.len();
    assert!(samples[0] > 0, "a sample of 0 cycles");
    let on = if cfg!(target_arch = "x86_64") { "x86_64 PC" } else { "AArch64" };
    println!(
        "wake_poll: {ROUNDS} rounds on {} of {} cores, the cycle counter ({on}; under -icount shift=0: instructions)",
        1,
        platform::core_count()
    );
    println!(
        "wake_poll: a task's wake plus its next poll: min {}, median {}, 99th percentile {}, max {}",
        samples[0],
        samples[n / 2],
        samples[n * 99 / 100],
        samples[n - 1]
    );
    pass("wake_poll");
}

roving_kernel::entry!(main);
