//! The generic timer: the shared tick counter, and one deadline per core
//! (the EL1 virtual timer) that ends a wait.

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{CNTFRQ_EL0, CNTV_CTL_EL0, CNTV_CVAL_EL0, CNTVCT_EL0, Readable, Writeable};

/// The counter all cores share; it never goes backwards.
pub(crate) fn ticks() -> u64 {
    // The ISB keeps the read from being hoisted above earlier instructions.
    barrier::isb(barrier::SY);
    CNTVCT_EL0.get()
}

/// Ticks per second, as the firmware (or QEMU) programmed CNTFRQ_EL0.
pub(crate) fn hz() -> u64 {
    CNTFRQ_EL0.get()
}

/// Starts with the timer off on this core.
pub(super) fn init_this_core() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR);
}

/// Raises this core's timer interrupt when the counter reaches `deadline`.
pub(crate) fn arm(deadline: u64) {
    CNTV_CVAL_EL0.set(deadline);
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::CLEAR);
    barrier::isb(barrier::SY);
}

/// Turns this core's timer off.
pub(crate) fn disarm() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR);
}

/// From the IRQ handler: the timer interrupt is level-triggered, so mask it
/// until the next `arm`, or it would fire again at once.
pub(super) fn on_interrupt() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::SET + CNTV_CTL_EL0::IMASK::SET);
}
