//! Interrupt storms: a line that never stops firing.
//!
//! A device that its handler cannot quiet (stuck, or misconfigured) keeps
//! its line asserted, and its core does nothing but take it: the work that
//! was running there never resumes. Two rules catch it; either masks the
//! line and reports it, and its core goes back to work (the other cores
//! never noticed).
//!
//! 1. **Nothing to do.** A line whose handler answers [`Handled::No`]
//!    [`FIRINGS`] times in a row is storming.
//! 2. **Never quiet.** A handler may answer [`Handled::Yes`] and still
//!    leave its device asserting the line (it dealt with the wrong thing,
//!    or wrongly says it did). So at every [`CHECK_EVERY`]th firing
//!    answered `Yes`, once the controller has ended the interrupt, the
//!    kernel asks the controller whether the line is pending again
//!    already: then the core will take it again before it runs one
//!    instruction of the code it interrupted. [`PENDING_CHECKS`] such
//!    checks in a row that find it pending (65,536 firings, each of them
//!    answered `Yes`, with the interrupted code starved at every 16th) are
//!    a storm.
//!
//! Why not a rate alone: a busy device may rightly fire as fast as its
//! handler drains it (under QEMU a serial port is fed that fast, and a
//! strand may raise a line in a loop), and a loaded host slows a real
//! storm down to any rate. What separates the two is whether the code the
//! interrupt stopped ever runs again: a device that is merely busy lets go
//! of its line now and then, and the next check resets the count. A device
//! that keeps its core, with data, for 65,536 firings in a row is taken
//! for a storm too: that is the bound. A controller that cannot say
//! whether a line is pending (`InterruptChip::line_pending` answers
//! `false` by default) has only the first rule.

use super::Handled;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Firings in a row answered [`Handled::No`] that make a storm.
pub(super) const FIRINGS: u32 = 10_000;

/// Of the firings answered [`Handled::Yes`], every how many the line is
/// checked for being pending again.
pub(super) const CHECK_EVERY: u64 = 16;

/// Checks in a row finding the line pending again that make a storm.
pub(super) const PENDING_CHECKS: u32 = 4_096;

/// A line's current streaks. Touched only in the line's handler path (one
/// core at a time) and reset under the configuration lock.
pub(super) struct Streak {
    nothing_to_do: AtomicU32,
    pending_again: AtomicU32,
}

impl Streak {
    pub(super) const fn new() -> Self {
        Self { nothing_to_do: AtomicU32::new(0), pending_again: AtomicU32::new(0) }
    }

    pub(super) fn reset(&self) {
        self.nothing_to_do.store(0, Relaxed);
        self.pending_again.store(0, Relaxed);
    }
}

/// Counts one firing answered `handled` (rule 1); returns whether the line
/// is now storming (the streak starts again).
pub(super) fn continues(streak: &Streak, handled: Handled) -> bool {
    let count = match handled {
        Handled::Yes => 0,
        Handled::No => streak.nothing_to_do.load(Relaxed) + 1,
    };
    let storming = count >= FIRINGS;
    streak.nothing_to_do.store(if storming { 0 } else { count }, Relaxed);
    storming
}

/// Whether firing number `fired` (counted from 0 since the line was
/// bound), answered [`Handled::Yes`], is one to check (rule 2).
pub(super) fn check_due(fired: u64) -> bool {
    fired % CHECK_EVERY == CHECK_EVERY - 1
}

/// Counts one check of rule 2, which found the line `pending` again;
/// returns whether the line is now storming (the streak starts again).
pub(super) fn checked(streak: &Streak, pending: bool) -> bool {
    let count = if pending { streak.pending_again.load(Relaxed) + 1 } else { 0 };
    let storming = count >= PENDING_CHECKS;
    streak.pending_again.store(if storming { 0 } else { count }, Relaxed);
    storming
}
