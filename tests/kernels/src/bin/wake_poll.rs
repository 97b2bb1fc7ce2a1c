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
//!
//! Then, in a task, an async mutex locked and unlocked [`ROUNDS`] times
//! with nobody else wanting it: the lock (the `lock_async` future's first
//! poll, which takes it, and lists it under the task so that a failed task
//! refuses it) and the guard's drop (which takes it off that list).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use roving::sync::Mutex;
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
    let samples = pool_of_core_0()
        .run(|| {
            let task = WakesItself { woke_at: None, samples: Vec::with_capacity(ROUNDS) };
            executor::spawn_async(task).expect("a running pool takes tasks").join().expect("the task ends")
        })
        .expect("the pool runs");
    let on = if cfg!(target_arch = "x86_64") { "x86_64 PC" } else { "AArch64" };
    println!(
        "wake_poll: {ROUNDS} rounds on {} of {} cores, the cycle counter ({on}; under -icount shift=0: instructions)",
        1,
        platform::core_count()
    );
    report("a task's wake plus its next poll", samples);
    let (locks, unlocks) = pool_of_core_0()
        .run(|| executor::spawn_async(lock_unlock()).expect("a task").join().expect("the task ends"))
        .expect("the pool runs");
    report("an async mutex's lock in a task, uncontended", locks);
    report("an async mutex's unlock in a task, uncontended", unlocks);
    pass("wake_poll");
}

fn pool_of_core_0() -> Pool {
    Pool::with_cores(&[0], roving::Config::new()).expect("a pool of core 0")
}

/// Locks and unlocks an async mutex nobody else wants, `ROUNDS` times:
/// the cycles of each lock and of each unlock.
async fn lock_unlock() -> (Vec<u64>, Vec<u64>) {
    let mutex = Mutex::new(0u64);
    let (mut locks, mut unlocks) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for _ in 0..ROUNDS {
        let before = cycles();
        let mut guard = mutex.lock_async().await.expect("not poisoned");
        let locked = cycles();
        *guard += 1;
        let unlocking = cycles();
        drop(guard);
        let unlocked = cycles();
        locks.push(locked - before);
        unlocks.push(unlocked - unlocking);
    }
    (locks, unlocks)
}

fn report(what: &str, mut samples: Vec<u64>) {
    samples.sort_unstable();
    let n = samples.len();
    assert!(samples[0] > 0, "{what}: a sample of 0 cycles");
    println!(
        "wake_poll: {what}: min {}, median {}, 99th percentile {}, max {}",
        samples[0],
        samples[n / 2],
        samples[n * 99 / 100],
        samples[n - 1]
    );
}

roving_kernel::entry!(main);
