//! The BCM2835 peripheral interrupt controller (at 0x3F00_B200 on the
//! BCM2837): the VideoCore side's 64 interrupt lines (the UART is 57, the
//! system timer's compares 0-3), which reach the ARM cores as one "GPU
//! interrupt", routed to a single core by the local block.
//!
//! Registers (32-bit): `0x04`/`0x08` pending lines 0-31/32-63, `0x10`/`0x14`
//! enable (ones written are set), `0x1C`/`0x20` disable (ones written are
//! cleared). The enabled lines are mirrored here, so a pending line is
//! found with two reads whether or not the pending registers are masked
//! by the enables (QEMU's are; the datasheet's are not).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use roving_kernel::mmio::Registers;

const PENDING: [usize; 2] = [0x04, 0x08];
const ENABLE: [usize; 2] = [0x10, 0x14];
const DISABLE: [usize; 2] = [0x1C, 0x20];

/// The lines the controller has: the VideoCore's 64.
pub const LINES: u32 = 64;

/// The driver. Enabling and disabling a line is one register write, so
/// any core may do it at any time; the mirror is updated with it.
#[derive(Debug)]
pub struct PeripheralInterrupts {
    base: AtomicUsize,
    enabled: AtomicU64,
}

impl PeripheralInterrupts {
    /// The controller whose registers start at `base`.
    pub const fn new(base: usize) -> Self {
        Self { base: AtomicUsize::new(base), enabled: AtomicU64::new(0) }
    }

    /// Moves the controller to `base` (where the firmware's device tree
    /// puts it), before any core uses it.
    pub fn place(&self, base: usize) {
        self.base.store(base, Relaxed);
    }

    fn registers(&self) -> Registers {
        // SAFETY: `base` is the board's peripheral interrupt controller,
        // mapped as device memory; every offset used is one of its 32-bit
        // registers, and accesses only enable, disable or read lines.
        unsafe { Registers::at(self.base.load(Relaxed)) }
    }

    fn write(&self, offset: usize, value: u32) {
        self.registers().write32(offset, value);
    }

    fn read(&self, offset: usize) -> u32 {
        self.registers().read32(offset)
    }

    /// Enables (`true`) or disables `line` (below [`LINES`]).
    pub fn set_enabled(&self, line: u32, enabled: bool) {
        let (word, bit) = ((line / 32) as usize, 1u32 << (line % 32));
        if enabled {
            self.enabled.fetch_or(1 << line, Relaxed);
            self.write(ENABLE[word], bit);
        } else {
            self.write(DISABLE[word], bit);
            self.enabled.fetch_and(!(1 << line), Relaxed);
        }
    }

    /// The enabled lines pending now, as a bit set.
    fn pending(&self) -> u64 {
        let enabled = self.enabled.load(Relaxed);
        if enabled == 0 {
            return 0;
        }
        let low = if enabled as u32 != 0 { u64::from(self.read(PENDING[0])) } else { 0 };
        let high = if enabled >> 32 != 0 { u64::from(self.read(PENDING[1])) << 32 } else { 0 };
        (low | high) & enabled
    }

    /// Whether `line` (below [`LINES`]) is pending now, if it is enabled
    /// (QEMU masks the pending registers by the enables).
    pub fn is_pending(&self, line: u32) -> bool {
        self.pending() & (1 << line) != 0
    }

    /// The lowest enabled line pending now.
    pub fn next_pending(&self) -> Option<u32> {
        let pending = self.pending();
        (pending != 0).then(|| pending.trailing_zeros())
    }
}
