//! The generic timer: the shared tick counter, and one deadline per core
//! (the EL1 virtual timer) that ends a wait. Also each core's cycle
//! counter (the PMU's PMCCNTR_EL0), for measuring short intervals.

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{CNTFRQ_EL0, CNTV_CTL_EL0, CNTV_CVAL_EL0, CNTVCT_EL0, Readable, Writeable};
use core::arch::asm;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// PMCR_EL0: E (enable the counters) and LC (the cycle counter is 64-bit).
const PMCR_E_LC: u64 = 1 | 1 << 6;
/// PMCNTENSET_EL0.C: the cycle counter counts.
const PMCNTENSET_C: u64 = 1 << 31;

/// The counter all cores share; it never goes backwards.
pub(crate) fn ticks() -> u64 {
    // The ISB keeps the read from being hoisted above earlier instructions.
    barrier::isb(barrier::SY);
    CNTVCT_EL0.get()
}

/// Ticks per second, fixed at boot by `adopt_frequency`.
static HZ: AtomicU64 = AtomicU64::new(0);

/// Ticks per second: what the firmware (or QEMU) programmed in the boot
/// core's CNTFRQ_EL0, or the device tree's figure where it left that 0.
pub(crate) fn hz() -> u64 {
    match HZ.load(Relaxed) {
        0 => CNTFRQ_EL0.get(), // before boot fixed it
        hz => hz,
    }
}

/// Fixes the counter's frequency for every core: CNTFRQ_EL0's, or the
/// tree's where that reads 0. Only the highest exception level may write
/// the register, so a kernel entered at EL2 below a firmware that left it
/// 0 cannot set it; the device tree's timer node then says, in
/// `clock-frequency`. Ends the run with a report if neither says; else
/// says whether the tree's figure was taken. Boot core, MMU on, before
/// the banner.
pub(super) fn adopt_frequency(from_tree: Option<u32>) -> bool {
    let (hz, took_tree) = match CNTFRQ_EL0.get() {
        0 => (from_tree.map_or(0, u64::from), true),
        hz => (hz, false),
    };
    if hz == 0 {
        crate::console::emergency(format_args!(
            "roving-kernel: the generic timer's frequency is unknown: CNTFRQ_EL0 is 0 (the firmware did not \
             set it) and the device tree's timer node has no clock-frequency\n"
        ));
        crate::exit(crate::exit_code::FAULT);
    }
    HZ.store(hz, Relaxed);
    took_tree
}

/// Starts with the timer off on this core, and its cycle counter running.
pub(super) fn init_this_core() {
    CNTV_CTL_EL0.write(CNTV_CTL_EL0::ENABLE::CLEAR);
    // (aarch64-cpu has no PMU registers.) MDCR_EL2, set at boot when the
    // core came through EL2, leaves every counter to EL1.
    // SAFETY: enabling this core's PMU counters changes nothing else.
    unsafe {
        asm!(
            "mrs {t}, pmcr_el0",
            "orr {t}, {t}, {e_lc}",
            "msr pmcr_el0, {t}",
            "msr pmcntenset_el0, {c}",
            "isb",
            t = out(reg) _,
            e_lc = in(reg) PMCR_E_LC,
            c = in(reg) PMCNTENSET_C,
            options(nomem, nostack, preserves_flags),
        )
    };
}

/// This core's cycle counter: processor cycles on hardware; under QEMU,
/// virtual nanoseconds, which with `-icount shift=0` is one per
/// instruction. Not synchronised between cores.
pub(crate) fn cycles() -> u64 {
    let cycles: u64;
    // SAFETY: reads this core's cycle counter (enabled by
    // `init_this_core`); the ISB keeps the read in program order.
    unsafe { asm!("isb", "mrs {}, pmccntr_el0", out(reg) cycles, options(nomem, nostack, preserves_flags)) };
    cycles
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
