//! Interrupt storms: a line that never stops firing.
//!
//! A device that its handler cannot quiet (stuck, or misconfigured) keeps
//! its line asserted, and its core does nothing but take it: the work that
//! was running there never resumes. The rule: a line whose handler answers
//! [`Handled::No`] (nothing to do) [`FIRINGS`] times in a row is storming.
//! It is then masked and reported, and its core goes back to work; the
//! other cores never noticed.
//!
//! The handler's answer is the only reliable sign. A device that is merely
//! busy keeps its line pending too: under QEMU a serial port is fed as
//! fast as its handler drains it, so "pending again right after the
//! handler" holds for thousands of firings in a row, each with bytes to
//! read. A handler that says [`Handled::Yes`] while its device stays
//! asserted is not caught; like every handler, it must quiet its device.

use super::Handled;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Firings in a row answered [`Handled::No`] that make a storm.
pub(super) const FIRINGS: u32 = 10_000;

/// A line's current streak. Touched only in the line's handler path (one
/// core at a time) and reset under the configuration lock.
pub(super) struct Streak(AtomicU32);

impl Streak {
    pub(super) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    pub(super) fn reset(&self) {
        self.0.store(0, Relaxed);
    }
}

/// Counts one firing answered `handled`; returns whether the line is now
/// storming (the streak starts again).
pub(super) fn continues(streak: &Streak, handled: Handled) -> bool {
    let count = match handled {
        Handled::Yes => 0,
        Handled::No => streak.0.load(Relaxed) + 1,
    };
    let storming = count >= FIRINGS;
    streak.0.store(if storming { 0 } else { count }, Relaxed);
    storming
}
