//! The BCM2836 per-core interrupt block ("ARM local peripherals", at
//! 0x4000_0000 on the BCM2837): the only interrupt controller that sees
//! each core's generic timer, and four mailboxes per core that any core can
//! set, which make the wake-up interrupt.
//!
//! Registers (32-bit), for core n:
//! - `0x0C` GPU interrupt routing (one for all cores): bits 1:0 name the
//!   core that takes the peripheral controller's interrupt;
//! - `0x40 + 4n` timer interrupt control: bit 3 routes the virtual timer
//!   (CNTV) to core n's IRQ;
//! - `0x50 + 4n` mailbox interrupt control: bit 0 raises an IRQ while
//!   mailbox 0 is non-zero;
//! - `0x60 + 4n` IRQ source (read-only): bit 3 CNTV, bit 4 mailbox 0, bit
//!   8 the peripheral controller;
//! - `0x80 + 16n` mailbox 0 write-set: ones written are OR'd in;
//! - `0xC0 + 16n` mailbox 0 read / write-clear: ones written are cleared.

use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use roving_kernel::board::Pending;
use roving_kernel::mmio::Registers;

const GPU_ROUTING: usize = 0x0C;
const TIMER_CONTROL: usize = 0x40;
const MAILBOX_CONTROL: usize = 0x50;
const IRQ_SOURCE: usize = 0x60;
const MAILBOX0_SET: usize = 0x80;
const MAILBOX0_CLEAR: usize = 0xC0;

const CNTV_IRQ: u32 = 1 << 3;
const MAILBOX0_IRQ: u32 = 1 << 4;
const GPU_IRQ: u32 = 1 << 8;
const MAILBOX0_ENABLE: u32 = 1 << 0;
/// The one bit the kernel's wake-up sets in the target's mailbox 0.
const WAKE_BIT: u32 = 1;

/// The driver: stateless, so any core may use it at any time.
#[derive(Debug)]
pub struct LocalInterrupts {
    base: AtomicUsize,
}

impl LocalInterrupts {
    /// The block whose registers start at `base`.
    pub const fn new(base: usize) -> Self {
        Self { base: AtomicUsize::new(base) }
    }

    /// Moves the block to `base` (where the firmware's device tree puts
    /// it), before any core uses it.
    pub fn place(&self, base: usize) {
        self.base.store(base, Relaxed);
    }

    fn registers(&self) -> Registers {
        // SAFETY: `base` is the board's local block, mapped as device
        // memory; every offset used is one of its 32-bit registers, and
        // accesses only affect interrupt routing and mailboxes.
        unsafe { Registers::at(self.base.load(Relaxed)) }
    }

    fn write(&self, offset: usize, value: u32) {
        self.registers().write32(offset, value);
    }

    fn read(&self, offset: usize) -> u32 {
        self.registers().read32(offset)
    }
}

/// Core n's copy of a per-core register: `stride` bytes apart.
fn per_core(offset: usize, stride: usize, hw_id: u64) -> usize {
    offset + stride * (hw_id & 0x3) as usize
}

impl LocalInterrupts {
    /// Routes the wake-up and the timer of core `hw_id` to it as IRQs,
    /// and clears a stale wake-up.
    pub fn init_core(&self, hw_id: u64) {
        self.write(per_core(MAILBOX0_CLEAR, 16, hw_id), u32::MAX);
        self.write(per_core(MAILBOX_CONTROL, 4, hw_id), MAILBOX0_ENABLE);
        self.write(per_core(TIMER_CONTROL, 4, hw_id), CNTV_IRQ);
    }

    /// Raises the wake-up interrupt on core `hw_id`.
    pub fn send_wake(&self, hw_id: u64) {
        self.write(per_core(MAILBOX0_SET, 16, hw_id), WAKE_BIT);
    }

    /// What is pending on core `hw_id`, clearing its wake-up; the
    /// peripheral controller's interrupt is not `other` (its lines are
    /// found there).
    pub fn acknowledge(&self, hw_id: u64) -> Pending {
        let source = self.read(per_core(IRQ_SOURCE, 4, hw_id));
        let wake = source & MAILBOX0_IRQ != 0;
        if wake {
            let mailbox = per_core(MAILBOX0_CLEAR, 16, hw_id);
            self.write(mailbox, self.read(mailbox));
        }
        let known = CNTV_IRQ | MAILBOX0_IRQ | GPU_IRQ;
        Pending { wake, timer: source & CNTV_IRQ != 0, other: source & !known != 0 }
    }

    /// Sends the peripheral controller's interrupt to core `hw_id`.
    pub fn route_peripherals(&self, hw_id: u64) {
        self.write(GPU_ROUTING, (hw_id & 0x3) as u32);
    }
}
