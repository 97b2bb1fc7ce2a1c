//! Time: the TSC is the tick counter all cores share; each core's deadline
//! is its local APIC's one-shot timer. Both are calibrated once at boot
//! against the PIT (channel 2, gate-controlled, no interrupt), the one
//! clock every PC has at a known rate; the PIT is not used after that.

use super::apic;
use crate::boot_info::{BootInfo, boot_info};
use x86_64::instructions::port::Port;

/// The PIT's input clock.
const PIT_HZ: u64 = 1_193_182;
/// The calibration window: 10 ms.
const WINDOW_DIVISOR: u64 = 100;
/// Counts for the window.
const WINDOW_COUNTS: u16 = (PIT_HZ / WINDOW_DIVISOR) as u16;

/// The counter all cores share (the invariant TSC).
pub(crate) fn ticks() -> u64 {
    // SAFETY: RDTSC only reads the time-stamp counter. LFENCE keeps it
    // from being executed ahead of earlier instructions.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
}

/// The cycle counter: the TSC, which all cores share (under QEMU with
/// `-icount shift=0` it counts instructions).
pub(crate) fn cycles() -> u64 {
    ticks()
}

/// TSC ticks per second, as calibrated at boot.
pub(crate) fn hz() -> u64 {
    boot_info().arch.tsc_hz
}

/// Measures the TSC's and the APIC timer's rates over 10 ms of PIT time.
/// Boot core, its local APIC enabled, before anything else runs.
pub(super) fn calibrate(info: &mut BootInfo) {
    let mut control = Port::<u8>::new(0x61);
    let mut command = Port::<u8>::new(0x43);
    let mut channel2 = Port::<u8>::new(0x42);
    // SAFETY: the PC's PIT and its gate at port 0x61 (speaker off); nothing
    // else uses them.
    let (tsc, apic_counts) = unsafe {
        let gate = (control.read() & !0x02) & !0x01;
        control.write(gate);
        command.write(0b1011_0000); // channel 2, low then high byte, mode 0
        channel2.write(WINDOW_COUNTS as u8);
        channel2.write((WINDOW_COUNTS >> 8) as u8);
        apic::timer_start_masked();
        let tsc0 = ticks();
        let apic0 = apic::timer_remaining();
        control.write(gate | 0x01); // start counting
        while control.read() & 0x20 == 0 {
            core::hint::spin_loop();
        }
        let tsc1 = ticks();
        let apic1 = apic::timer_remaining();
        apic::timer_stop();
        control.write(gate);
        (tsc1 - tsc0, u64::from(apic0 - apic1))
    };
    info.arch.tsc_hz = (tsc * WINDOW_DIVISOR).max(1);
    info.arch.apic_timer_hz = (apic_counts * WINDOW_DIVISOR).max(1);
}

/// Interrupts this core when the TSC reaches `deadline`.
pub(crate) fn arm(deadline: u64) {
    let arch = &boot_info().arch;
    let delta = deadline.saturating_sub(ticks());
    let counts = u128::from(delta) * u128::from(arch.apic_timer_hz) / u128::from(arch.tsc_hz);
    apic::timer_start(counts.clamp(1, u128::from(u32::MAX)) as u32);
}

/// Stops this core's timer.
pub(crate) fn disarm() {
    apic::timer_stop();
}
