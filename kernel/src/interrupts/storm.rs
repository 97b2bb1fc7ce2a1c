//! Interrupt storms: a line that never stops firing.
//!
//! A device that its handler cannot quiet (stuck, or misconfigured) keeps
//! its line asserted, and its core does nothing but take it: the work that
//! was running there never resumes. Two rules find it; either masks the
//! line and reports it, and its core goes back to work; the other cores
//! never noticed.
//!
//! - **Nothing to do.** A line whose handler answers [`Handled::No`]
//!   [`FIRINGS`] times in a row is storming.
//! - **Nothing else ran.** A line that fires [`STALLED_FIRINGS`] times in
//!   a row within [`STALL_WINDOW_MS`], each time finding the interrupted
//!   code exactly where the firing before left it, is storming, whatever
//!   its handler answers: a handler that says [`Handled::Yes`] while its
//!   device stays asserted starves its core as surely. That bound is a
//!   rate: 10,000 firings a second, sustained, with the core running
//!   nothing in between. Under QEMU such a storm fires 20,000 to 35,000
//!   times a second, and is caught in 0.3 to 0.5 s.
//!
//! Why not the rate alone. A device that is merely busy keeps its line
//! pending too: under QEMU a serial port is fed as fast as its handler
//! drains it, so "pending again right after the handler" holds for
//! thousands of firings in a row, each with bytes to read, at a rate (5,000
//! to 20,000 a second) close to a storm's. What tells them apart is the
//! interrupted code: between two of the serial port's firings the core
//! runs the strand that reads the bytes, or goes back to sleep; in a storm
//! the interrupt is taken again as soon as the handler returns, before
//! one instruction of the interrupted code.
//!
//! "Where the firing before left it" is a fingerprint of the interrupted
//! code's program counter, stack and the general registers the interrupt
//! entry saved, and of the core's count of idle sleeps (an idle core is
//! interrupted at the same instruction, after its sleep, every time, but
//! sleeps again in between). The registers matter: a strand that raises
//! a line in a loop is stopped at the same instruction on the same stack
//! each round, but its registers (a round's count, what the last call
//! left) differ. An idle core that
//! serves its interrupts in place, with interrupts masked, gets a new
//! fingerprint for each time it does so: its idle loop ran in between.
//! Lines it serves in one go share one (on the Pi 3 a serve takes every
//! line pending, and a storm keeps one pending for ever, so the serve
//! never ends). Code whose registers come back to the same values at the
//! same instruction (a strand spinning on one instruction, `loop {}`)
//! does look stalled, so a device firing 10,000 times a second at such a
//! core for a second is taken for a storm: the bound's price.

use super::Handled;
use crate::boot_info::MAX_CORES;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Firings in a row answered [`Handled::No`] that make a storm.
pub(super) const FIRINGS: u32 = 10_000;

/// Firings in a row that found the interrupted code where the one before
/// left it, within [`STALL_WINDOW_MS`], that make a storm.
pub(super) const STALLED_FIRINGS: u32 = 10_000;

/// The time within which [`STALLED_FIRINGS`] must come.
pub(super) const STALL_WINDOW_MS: u64 = 1000;

/// Which rule found a storm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Storm {
    /// [`FIRINGS`] answers of [`Handled::No`] in a row.
    NothingToDo,
    /// [`STALLED_FIRINGS`] firings in a row with nothing else running,
    /// within this many milliseconds.
    NothingElseRan { within_ms: u64 },
}

/// Each core's fingerprint of the code its current interrupt stopped, or
/// of its current serve in place (0: none yet). Written by the core
/// itself at the interrupt's entry.
static INTERRUPTED: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// Each core's count of serves in place, for their fingerprints.
static SERVES: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// Notes where the interrupt core `core` is taking stopped its code: at
/// `pc`, on the stack at `sp`, with `registers`, after `sleeps` idle
/// sleeps.
pub(crate) fn interrupted(core: usize, pc: u64, sp: u64, registers: &[u64], sleeps: u64) {
    let fingerprint =
        registers.iter().fold(pc ^ sp.rotate_left(21) ^ sleeps.rotate_left(42), |print, &register| {
            print.rotate_left(7) ^ register
        });
    if let Some(slot) = INTERRUPTED.get(core) {
        slot.store(fingerprint | 1, Relaxed);
    }
}

/// Notes that core `core` serves its interrupts in place, stopping no
/// code (an idle core with interrupts masked): a fingerprint of its own.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))] // the PC's idle wait takes them as exceptions
pub(crate) fn served_in_place(core: usize) {
    if let (Some(slot), Some(serves)) = (INTERRUPTED.get(core), SERVES.get(core)) {
        let serve = serves.fetch_add(1, Relaxed);
        slot.store(serve.rotate_left(32) | 1, Relaxed);
    }
}

/// A line's current streaks. Touched only in the line's handler path
/// (one core at a time) and reset under the configuration lock.
pub(super) struct Streak {
    nothing_to_do: AtomicU32,
    stalled: AtomicU32,
    /// The fingerprint the last firing found.
    found: AtomicU64,
    /// When the stalled streak began, in ticks of the machine's counter.
    stalled_since: AtomicU64,
}

impl Streak {
    pub(super) const fn new() -> Self {
        Self {
            nothing_to_do: AtomicU32::new(0),
            stalled: AtomicU32::new(0),
            found: AtomicU64::new(0),
            stalled_since: AtomicU64::new(0),
        }
    }

    pub(super) fn reset(&self) {
        self.nothing_to_do.store(0, Relaxed);
        self.stalled.store(0, Relaxed);
        self.found.store(0, Relaxed);
    }
}

/// Counts one firing on core `core` answered `handled`, at `now` on a
/// counter of `hz` ticks a second; returns the storm it makes, if it
/// makes one (the streaks then start again).
pub(super) fn continues(streak: &Streak, core: usize, handled: Handled, now: u64, hz: u64) -> Option<Storm> {
    let count = match handled {
        Handled::Yes => 0,
        Handled::No => streak.nothing_to_do.load(Relaxed) + 1,
    };
    if count >= FIRINGS {
        streak.reset();
        return Some(Storm::NothingToDo);
    }
    streak.nothing_to_do.store(count, Relaxed);
    let found = INTERRUPTED.get(core).map_or(0, |slot| slot.load(Relaxed));
    let window = hz * STALL_WINDOW_MS / 1000;
    let since = streak.stalled_since.load(Relaxed);
    if found == 0 || found != streak.found.load(Relaxed) || now.wrapping_sub(since) > window {
        streak.found.store(found, Relaxed);
        streak.stalled.store(1, Relaxed);
        streak.stalled_since.store(now, Relaxed);
        return None;
    }
    let stalled = streak.stalled.load(Relaxed) + 1;
    if stalled >= STALLED_FIRINGS {
        streak.reset();
        let within_ms = now.wrapping_sub(since) * 1000 / hz.max(1);
        return Some(Storm::NothingElseRan { within_ms });
    }
    streak.stalled.store(stalled, Relaxed);
    None
}
