//! [`Delay`]: the embedded ecosystem's delay traits, so a driver written
//! against `embedded-hal` or `embedded-hal-async` waits on roving's timers.

use super::{Instant, sleep_until};
use crate::strand::{self, WaitError};
use core::time::Duration;

/// A delay provider for drivers: `embedded_hal::delay::DelayNs` for code
/// in a strand, `embedded_hal_async::delay::DelayNs` for an async task.
///
/// - **Blocking** (`embedded_hal::delay::DelayNs`): the strand sleeps on
///   its pool's timer heap; its core runs other work meanwhile, and an
///   idle core sleeps. A cancelled strand's delay ends at once (the trait
///   cannot report it; the strand's next blocking call returns
///   `Interrupted`). Where nothing can be suspended (a plain task, code
///   outside a pool, an interrupt handler) the delay spins on the clock,
///   holding the core: keep such delays short.
/// - **Async** (`embedded_hal_async::delay::DelayNs`): the task awaits a
///   [`sleep_until`](super::sleep_until); nothing spins. It panics, as a
///   [`Sleep`](super::Sleep) does, when polled where no pool is.
///
/// A delay is never shorter than asked: deadlines round up to the next
/// tick of the machine's counter.
///
/// ```
/// use embedded_hal::delay::DelayNs;
/// use roving::{Pool, platform::host::Machine, time::{Delay, Instant}};
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let started = Instant::now();
///         Delay.delay_ms(3); // the strand sleeps; its core does not
///         assert!(started.elapsed().as_millis() >= 3);
///     }).unwrap();
/// }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delay;

/// The instant `nanos` from now (far in the future if it cannot be told).
fn deadline(nanos: u64) -> Instant {
    super::deadline_after(Duration::from_nanos(nanos))
}

impl Delay {
    fn block_until(deadline: Instant) {
        if crate::platform::in_interrupt() {
            return spin_until(deadline);
        }
        match strand::sleep_until(deadline) {
            Ok(()) | Err(WaitError::Interrupted) => {}
            // No timer entry could be made: let others run until it is time.
            Err(WaitError::OutOfMemory) => while Instant::now() < deadline && strand::yield_now().is_ok() {},
            // Not a strand: nothing to suspend.
            Err(_) => spin_until(deadline),
        }
    }
}

fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        core::hint::spin_loop();
    }
}

impl embedded_hal::delay::DelayNs for Delay {
    fn delay_ns(&mut self, ns: u32) {
        Self::block_until(deadline(u64::from(ns)));
    }

    fn delay_us(&mut self, us: u32) {
        Self::block_until(deadline(u64::from(us) * 1_000));
    }

    fn delay_ms(&mut self, ms: u32) {
        Self::block_until(deadline(u64::from(ms) * 1_000_000));
    }
}

impl embedded_hal_async::delay::DelayNs for Delay {
    async fn delay_ns(&mut self, ns: u32) {
        sleep_until(deadline(u64::from(ns))).await;
    }

    async fn delay_us(&mut self, us: u32) {
        sleep_until(deadline(u64::from(us) * 1_000)).await;
    }

    async fn delay_ms(&mut self, ms: u32) {
        sleep_until(deadline(u64::from(ms) * 1_000_000)).await;
    }
}
