//! Time on the platform's tick counter, and timers for async tasks.
//!
//! [`Instant`] reads the machine's monotonic tick counter. [`sleep`],
//! [`sleep_until`] and [`timeout`] are futures for async tasks, armed on
//! the pool's timer heap, the one that wakes sleeping strands
//! ([`strand::sleep`](crate::strand::sleep)): on bare metal an idle pool
//! waits for them in its timer interrupt, with no core spinning.
//! [`Delay`] gives drivers written for `embedded-hal` and
//! `embedded-hal-async` those same timers.

#[cfg(not(loom))]
mod delay;
#[cfg(not(loom))]
mod sleep;
#[cfg(not(loom))]
mod timeout;

pub use crate::platform::instant::Instant;
pub(crate) use crate::platform::instant::deadline_after;
#[cfg(not(loom))]
pub use delay::Delay;
#[cfg(not(loom))]
pub use sleep::{Sleep, sleep, sleep_until};
#[cfg(not(loom))]
pub use timeout::{Elapsed, Timeout, timeout, timeout_at};
