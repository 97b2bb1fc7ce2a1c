//! The Pi 3's interrupt controller as the kernel sees it: the BCM2836
//! local block carries each core's wake-up and timer, and the BCM2835
//! peripheral controller carries the device lines, all of which reach
//! the core the local block routes them to.

use crate::local_interrupts::LocalInterrupts;
use crate::peripheral_interrupts::{self, PeripheralInterrupts};
use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use roving_kernel::board::{InterruptChip, Pending};

/// Both controllers.
#[derive(Debug)]
pub struct Interrupts {
    local: LocalInterrupts,
    peripheral: PeripheralInterrupts,
    /// The core (Aff0) the peripheral interrupt is routed to: core 0 from
    /// reset.
    route: AtomicU64,
}

impl Interrupts {
    /// The local block at `local` and the peripheral controller's
    /// registers at `peripheral`.
    pub const fn new(local: usize, peripheral: usize) -> Self {
        Self {
            local: LocalInterrupts::new(local),
            peripheral: PeripheralInterrupts::new(peripheral),
            route: AtomicU64::new(0),
        }
    }
}

impl InterruptChip for Interrupts {
    fn name(&self) -> &'static str {
        "BCM2836 local interrupts, BCM2835 peripheral interrupts"
    }

    fn tree_parts(&self) -> &'static [&'static str] {
        &["brcm,bcm2836-l1-intc", "brcm,bcm2836-armctrl-ic"]
    }

    fn place(&self, index: usize, base: usize) {
        match index {
            0 => self.local.place(base),
            _ => self.peripheral.place(base),
        }
    }

    fn init_core(&self, hw_id: u64) {
        self.local.init_core(hw_id);
    }

    fn send_wake(&self, hw_id: u64) {
        self.local.send_wake(hw_id);
    }

    fn acknowledge(&self, hw_id: u64) -> Pending {
        self.local.acknowledge(hw_id)
    }

    fn device_lines(&self) -> Option<Range<u32>> {
        Some(0..peripheral_interrupts::LINES)
    }

    fn shared_route(&self) -> bool {
        true
    }

    fn route_line(&self, _line: u32, hw_id: u64) {
        self.route.store(hw_id & 0x3, Relaxed);
        self.local.route_peripherals(hw_id);
    }

    fn enable_line(&self, line: u32, enabled: bool) {
        self.peripheral.set_enabled(line, enabled);
    }

    fn line_pending(&self, line: u32) -> bool {
        self.peripheral.is_pending(line)
    }

    fn next_line(&self, hw_id: u64) -> Option<u32> {
        if self.route.load(Relaxed) != hw_id & 0x3 {
            return None;
        }
        self.peripheral.next_pending()
    }
}
