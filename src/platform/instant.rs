//! [`Instant`]: a point on the machine's tick counter, which the platform
//! seam provides (`crate::time` is its public home). The seam's own
//! functions take deadlines as instants.

use super::{tick_hz, ticks};
use core::ops::{Add, Sub};
use core::time::Duration;

/// A point on the machine's monotonic tick counter, shared by all cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// Now.
    pub fn now() -> Self {
        Self(ticks())
    }

    /// The instant at a raw tick count.
    pub const fn from_ticks(ticks: u64) -> Self {
        Self(ticks)
    }

    /// The raw tick count of this instant.
    pub const fn ticks(self) -> u64 {
        self.0
    }

    /// Time from `earlier` to `self`; zero if `earlier` is later.
    pub fn duration_since(self, earlier: Instant) -> Duration {
        ticks_to_duration(self.0.saturating_sub(earlier.0), tick_hz())
    }

    /// Time since this instant; zero if it is in the future.
    pub fn elapsed(self) -> Duration {
        Self::now().duration_since(self)
    }

    /// `self + duration`, or `None` if the tick counter cannot represent it.
    pub fn checked_add(self, duration: Duration) -> Option<Instant> {
        let ticks = duration_to_ticks(duration, tick_hz())?;
        self.0.checked_add(ticks).map(Instant)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    ///
    /// If the result does not fit the tick counter (centuries away at any
    /// real tick rate); use [`Instant::checked_add`] to handle that case.
    fn add(self, duration: Duration) -> Instant {
        self.checked_add(duration).expect("Instant + Duration overflows the tick counter")
    }
}

impl Sub for Instant {
    type Output = Duration;

    /// Saturating: an earlier minus a later instant is zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.duration_since(earlier)
    }
}

fn ticks_to_duration(ticks: u64, hz: u64) -> Duration {
    let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(hz);
    let secs = (nanos / 1_000_000_000) as u64;
    Duration::new(secs, (nanos % 1_000_000_000) as u32)
}

fn duration_to_ticks(duration: Duration, hz: u64) -> Option<u64> {
    // Round up, so a deadline is never earlier than asked.
    let ticks = (duration.as_nanos() * u128::from(hz)).div_ceil(1_000_000_000);
    u64::try_from(ticks).ok()
}

/// The deadline `timeout` from now (saturating far in the future).
pub(crate) fn deadline_after(timeout: core::time::Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout).unwrap_or(Instant::from_ticks(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip_at_common_rates() {
        for hz in [1_000_000_000, 62_500_000, 54_000_000, 19_200_000, 1_000] {
            for ns in [0u64, 1, 999, 1_000_000, 1_500_000_000, 86_400_000_000_000] {
                let d = Duration::from_nanos(ns);
                let ticks = duration_to_ticks(d, hz).unwrap();
                let back = ticks_to_duration(ticks, hz);
                assert!(back >= d, "rounding up must never shorten {d:?} at {hz} Hz");
                let tick = Duration::from_nanos(1_000_000_000 / hz + 1);
                assert!(back - d <= tick, "{d:?} at {hz} Hz came back as {back:?}");
            }
        }
    }

    #[test]
    fn conversion_reports_overflow() {
        assert_eq!(duration_to_ticks(Duration::MAX, 1_000_000_000), None);
    }
}
