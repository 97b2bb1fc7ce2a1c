//! A device line a test kernel can make fire on demand, on every board.
//!
//! Where the controller can raise a line in software (a GIC, and the PC,
//! where a raise is the line's vector sent as an IPI) it is the
//! controller's last line, which no device of these boards uses. The
//! Raspberry Pi 3's controller cannot, so there it is a real device: the
//! system timer's compare 1, set to fire a few microseconds from now. Its
//! line stays asserted until the handler quiets it ([`TestLine::quiet`]).

use roving_kernel::interrupts;

/// See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct TestLine {
    /// The line.
    pub line: u32,
}

#[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
mod system_timer {
    use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
    use roving_boards::board::SYSTEM_TIMER;

    const STATUS: usize = 0x00;
    const COUNTER_LOW: usize = 0x04;
    const COMPARE1: usize = 0x10;
    const MATCH1: u32 = 1 << 1;
    /// How long past a compare value a match surely happened, if it was
    /// going to (microseconds).
    const SETTLE: u32 = 10_000;

    /// Matches quieted by a handler, counted before the match is cleared.
    static QUIETED: AtomicU64 = AtomicU64::new(0);
    /// How far ahead to set the compare (microseconds): doubled whenever
    /// a write landed too close to it, so later ones are in time.
    static AHEAD: AtomicU32 = AtomicU32::new(8);

    fn register(offset: usize) -> *mut u32 {
        (SYSTEM_TIMER + offset) as *mut u32
    }

    fn read(offset: usize) -> u32 {
        // SAFETY: a system timer register, mapped as device memory with
        // the rest of the peripherals; reading has no effect.
        unsafe { register(offset).read_volatile() }
    }

    /// Compare 1 matches once, a few microseconds from now.
    ///
    /// It matches only when the counter equals it, so a compare value the
    /// counter had passed when the write landed waits 2^32 us. If the
    /// counter read after the write is still short of the value, the
    /// write was in time. Otherwise it may or may not have been: wait
    /// until a match surely happened if it was going to, look for it, and
    /// write again further ahead only if there was none.
    pub(super) fn arm() {
        loop {
            let ahead = AHEAD.load(SeqCst);
            let quieted = QUIETED.load(SeqCst);
            let before = read(COUNTER_LOW);
            let value = before.wrapping_add(ahead);
            // SAFETY: as in `read`; only the ARM's compare 1 is written.
            unsafe { register(COMPARE1).write_volatile(value) };
            if read(COUNTER_LOW).wrapping_sub(before) < ahead {
                return;
            }
            AHEAD.store(ahead.saturating_mul(2).min(SETTLE), SeqCst);
            while read(COUNTER_LOW).wrapping_sub(value) < SETTLE {
                core::hint::spin_loop();
            }
            if read(STATUS) & MATCH1 != 0 || QUIETED.load(SeqCst) != quieted {
                return;
            }
        }
    }

    /// Clears compare 1's match, which lowers its line.
    pub(super) fn acknowledge() {
        QUIETED.fetch_add(1, SeqCst);
        // SAFETY: as in `read`; writing a one clears that match bit only.
        unsafe { register(STATUS).write_volatile(MATCH1) };
    }
}

impl TestLine {
    /// This board's test line.
    pub fn new() -> Self {
        #[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
        let line = interrupts::line_of("system timer 1").expect("the Pi 3 names its system timer's line");
        #[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
        let line = interrupts::lines().expect("the board has device lines").end - 1;
        Self { line }
    }

    /// Makes the line fire once, soon.
    pub fn fire(self) {
        #[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
        system_timer::arm();
        #[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
        interrupts::raise(self.line).expect("the test line is bound and can be raised");
    }

    /// Quiets the device behind the line: a handler calls this first.
    pub fn quiet(self) {
        #[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
        system_timer::acknowledge();
    }
}

impl Default for TestLine {
    fn default() -> Self {
        Self::new()
    }
}
