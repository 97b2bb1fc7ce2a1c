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
    use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
    use roving_boards::board::SYSTEM_TIMER;

    const STATUS: usize = 0x00;
    const COUNTER_LOW: usize = 0x04;
    const COMPARE1: usize = 0x10;
    const MATCH1: u32 = 1 << 1;
    /// How long past a compare value a match surely happened, if it was
    /// going to (microseconds).
    const SETTLE: u32 = 10_000;
    /// The closest compare value worth trying (microseconds).
    const NEAREST: u32 = 16;

    /// Matches quieted by a handler, counted before the match is cleared.
    static QUIETED: AtomicU64 = AtomicU64::new(0);
    /// How far ahead to set the compare (microseconds): doubled whenever
    /// a write landed too close to it, so the next ones are in time, and
    /// shrunk by a quarter after each write in time, back to [`NEAREST`].
    /// Without the shrinking, a few stalls of a busy host's QEMU thread
    /// left every later match milliseconds away, and 10,000 rounds took
    /// minutes.
    static AHEAD: AtomicU32 = AtomicU32::new(NEAREST);
    /// A firing was asked for and has not matched yet.
    static ASKED: AtomicBool = AtomicBool::new(false);

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
    /// until a match surely happened if it was going to (or a handler saw
    /// it), and write again further ahead only if there was none. A busy
    /// host can hold the match back even longer, so a rewritten compare
    /// may still come after the first one's match: [`ASKED`] lets only
    /// the first match of each call count.
    pub(super) fn arm() {
        ASKED.store(true, SeqCst);
        loop {
            let ahead = AHEAD.load(SeqCst);
            let quieted = QUIETED.load(SeqCst);
            let before = read(COUNTER_LOW);
            let value = before.wrapping_add(ahead);
            // SAFETY: as in `read`; only the ARM's compare 1 is written.
            unsafe { register(COMPARE1).write_volatile(value) };
            if read(COUNTER_LOW).wrapping_sub(before) < ahead {
                AHEAD.store((ahead - ahead / 4).max(NEAREST), SeqCst);
                return;
            }
            AHEAD.store(ahead.saturating_mul(2).min(SETTLE), SeqCst);
            let matched = || read(STATUS) & MATCH1 != 0 || QUIETED.load(SeqCst) != quieted;
            while read(COUNTER_LOW).wrapping_sub(value) < SETTLE && !matched() {
                core::hint::spin_loop();
            }
            if matched() {
                return;
            }
        }
    }

    /// Clears compare 1's match, which lowers its line; whether a call to
    /// [`arm`] asked for it.
    pub(super) fn acknowledge() -> bool {
        QUIETED.fetch_add(1, SeqCst);
        // SAFETY: as in `read`; writing a one clears that match bit only.
        unsafe { register(STATUS).write_volatile(MATCH1) };
        ASKED.swap(false, SeqCst)
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

    /// As [`TestLine::fire`], but a line masked meanwhile (a storm already
    /// caught: a firing left pending by the last one) is no error.
    pub fn fire_unless_masked(self) {
        #[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
        system_timer::arm();
        #[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
        match interrupts::raise(self.line) {
            Ok(()) | Err(interrupts::BindError::Masked { .. }) => {}
            Err(other) => panic!("raising the test line: {other}"),
        }
    }

    /// From the line's handler: keeps it firing, as a device its handler
    /// cannot quiet would (on the Pi 3 the system timer's match stays
    /// asserted by itself; elsewhere the line is raised again).
    pub fn keep_firing(self) {
        #[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
        let _ = interrupts::raise(self.line);
    }

    /// Quiets the device behind the line: a handler calls this first.
    /// Returns whether the firing is one [`TestLine::fire`] asked for: on
    /// the Pi 3 a slow host can make one call match twice (see
    /// `system_timer::arm`), and a handler ignores the second.
    #[must_use = "a handler ignores a firing nobody asked for"]
    pub fn quiet(self) -> bool {
        #[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
        return system_timer::acknowledge();
        #[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
        true
    }
}

impl Default for TestLine {
    fn default() -> Self {
        Self::new()
    }
}
