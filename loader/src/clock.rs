//! Time from the generic timer's counter, which runs from reset at every
//! exception level, with the MMU off and no interrupts.

use aarch64_cpu::registers::{CNTFRQ_EL0, CNTPCT_EL0, Readable};

use crate::board::FALLBACK_TIMER_HZ;

/// A point in time, in counter ticks.
#[derive(Clone, Copy)]
pub struct Instant(u64);

/// The counter's ticks per second (the board's crystal if the firmware
/// left CNTFRQ_EL0 unset).
fn ticks_per_second() -> u64 {
    match CNTFRQ_EL0.get() {
        0 => FALLBACK_TIMER_HZ,
        hz => hz,
    }
}

impl Instant {
    /// Now.
    pub fn now() -> Self {
        Self(CNTPCT_EL0.get())
    }

    /// `ms` milliseconds after this instant.
    pub fn after_ms(self, ms: u64) -> Self {
        self.after_us(ms * 1000)
    }

    /// `us` microseconds after this instant.
    pub fn after_us(self, us: u64) -> Self {
        Self(self.0 + ticks_per_second() * us / 1_000_000)
    }

    /// Spins until this instant.
    pub fn wait(self) {
        while !self.has_passed() {
            core::hint::spin_loop();
        }
    }

    /// Whether this instant has come.
    pub fn has_passed(self) -> bool {
        CNTPCT_EL0.get() >= self.0
    }
}
