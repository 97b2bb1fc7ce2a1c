//! A driver task fed by an interrupt: an async driver for the board's
//! clock (see `roving_examples::clock`), written as an embassy-style
//! driver is, runs as a task on roving's pool. The clock's handler, bound
//! on core 0, raises a `Signal`; the driver task awaits it (no strand, no
//! core waiting), lets the device settle through `embedded-hal-async`'s
//! `DelayNs`, and then spreads each tick's work over every core as tasks.
//! Three ticks, then the run ends.
//!
//! (QEMU's raspi4b does not connect the system timer to the GIC, so there
//! no tick comes and the example says so after three seconds.)
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::time::Duration;
use embedded_hal_async::delay::DelayNs;
use roving::sync::Signal;
use roving::time::{self, Delay, Elapsed, Instant};
use roving::{Pool, executor, platform};
use roving_examples::clock;
use roving_kernel::interrupts::{self, Handled};
use roving_kernel::println;

static TICK: Signal = Signal::new();

fn on_clock(_line: u32) -> Handled {
    clock::acknowledge();
    TICK.signal(); // interrupt-safe: wakes the driver task's waker
    Handled::Yes
}

/// The driver: generic over the delay it settles with, as a driver crate
/// for `embedded-hal-async` is.
struct ClockDriver<D> {
    delay: D,
}

impl<D: DelayNs> ClockDriver<D> {
    /// Waits for the clock's next tick; `Elapsed` if none comes in 3 s.
    async fn next_tick(&mut self) -> Result<Instant, Elapsed> {
        clock::arm();
        time::timeout(Duration::from_secs(3), TICK.wait_async())
            .await?
            .expect("the driver is the one waiter");
        self.delay.delay_us(100).await;
        Ok(Instant::now())
    }
}

/// One core's share of a tick's work: a checksum over a slice of numbers.
fn share(tick: u64, core: usize) -> u64 {
    (0..10_000u64).fold(tick ^ core as u64, |sum, n| sum.rotate_left(5) ^ n.wrapping_mul(0x9e37_79b9))
}

fn main() {
    let line = interrupts::line_of(clock::DEVICE).expect("the board names its clock's line");
    interrupts::bind(line, 0, on_clock).expect("the clock's line is free");
    println!("driver_task: {} on line {line}, handled on core 0; the driver is an async task", clock::DEVICE);
    let started = Instant::now();
    let ticks = Pool::new()
        .expect("a pool")
        .run(|| {
            let driver = executor::spawn_async(async move {
                let mut clock = ClockDriver { delay: Delay };
                let cores = platform::core_count();
                for tick in 1..=3u64 {
                    let at = match clock.next_tick().await {
                        Ok(at) => at.duration_since(started).as_millis(),
                        Err(Elapsed) => {
                            println!("driver_task: no tick within 3 s: this machine's clock does not interrupt");
                            return tick - 1;
                        }
                    };
                    let woken_on = platform::current_core().expect("a core of the pool");
                    let parts: Vec<_> = (0..cores)
                        .map(|core| {
                            executor::spawn_async_on(core, async move {
                                (platform::current_core().expect("a core"), share(tick, core))
                            })
                            .expect("a running pool takes tasks")
                        })
                        .collect();
                    let mut ran_on = Vec::new();
                    for part in parts {
                        ran_on.push(part.await.expect("a share finishes").0);
                    }
                    println!(
                        "driver_task: tick {tick} at {at} ms, the driver woken on core {woken_on}; its work ran on cores {ran_on:?}"
                    );
                }
                3
            });
            driver.expect("a running pool takes tasks").join().expect("the driver finishes")
        })
        .expect("the pool runs");
    roving_kernel::exit(if ticks == 3 { 0 } else { 1 });
}

roving_kernel::entry!(main);
