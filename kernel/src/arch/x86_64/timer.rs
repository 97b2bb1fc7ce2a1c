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
    // LFENCE keeps RDTSC from being executed ahead of earlier
    // instructions. As an instruction, not the intrinsic: the kernel is
    // built without SSE2, so `_mm_lfence` could not be inlined and cost a
    // call on every read of the clock.
    // SAFETY: LFENCE only orders, and RDTSC only reads the time-stamp
    // counter.
    unsafe {
        core::arch::asm!("lfence", options(nostack, preserves_flags));
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

/// Windows wanted at boot; the median of those within `TOLERANCE_PPM`
/// counts.
const WINDOWS: usize = 3;
/// Windows tried before calibration settles for the most precise it got:
/// a quarter of a second of PIT time at most, spent only when the boot
/// core keeps losing its CPU (three windows, 30 ms, otherwise).
const ATTEMPTS: usize = 25;
/// How far a window's ends may be uncertain, in millionths of it.
pub(super) const TOLERANCE_PPM: u64 = 2000;

/// Measures the TSC's and the APIC timer's rates over 10 ms of PIT time.
/// Boot core, its local APIC enabled, before anything else runs.
///
/// Each end of a window is known only between two TSC reads: the start
/// lies between the last read before the count is loaded (QEMU's PIT
/// counts from the load) and the first after the gate opens (a real PIT
/// counts from the gate); the end between the last poll that saw the
/// PIT's output low and the first that saw it high. If the core lost its
/// CPU at either end (a virtual machine's vCPU on a busy host), that span
/// is wide, and the window is measured again. Once, a single unchecked
/// window under load gave the TSC as 13.92 MHz instead of 2.6 GHz, and
/// every deadline came 188 times too early; another gave 3.1 GHz.
pub(super) fn calibrate(info: &mut BootInfo) {
    let mut precise: heapless::Vec<Window, WINDOWS> = heapless::Vec::new();
    let mut best: Option<Window> = None;
    for _ in 0..ATTEMPTS {
        // SAFETY: the PC's PIT and its gate at port 0x61, and this core's
        // APIC timer; nothing else uses them, and only the boot core runs.
        let Some(window) = (unsafe { measure_window() }) else { continue };
        if window.uncertainty_ppm() <= TOLERANCE_PPM {
            let _ = precise.push(window);
            if precise.is_full() {
                break;
            }
        } else if best.is_none_or(|best| window.uncertainty_ppm() < best.uncertainty_ppm()) {
            best = Some(window);
        }
    }
    precise.sort_unstable_by_key(|window| window.tsc_hz);
    let chosen = precise.get(precise.len() / 2).copied().or(best);
    let Some(window) = chosen else {
        crate::console::emergency(format_args!(
            "roving-kernel: cannot calibrate the TSC: in {ATTEMPTS} tries, the PIT's 10 ms window was always over \
             before it could be timed\n"
        ));
        crate::exit(crate::exit_code::FAULT);
    };
    info.arch.tsc_hz = window.tsc_hz.max(1);
    info.arch.apic_timer_hz = window.apic_hz.max(1);
    info.arch.apic_counts_per_tick_q32 = counts_per_tick_q32(info.arch.apic_timer_hz, info.arch.tsc_hz);
    info.arch.calibration_ppm = window.uncertainty_ppm();
}

/// One calibration window's rates, and how uncertain its ends were.
#[derive(Clone, Copy, Debug)]
struct Window {
    tsc_hz: u64,
    apic_hz: u64,
    /// TSC ticks the window lasted.
    ticks: u64,
    /// TSC ticks either end could be off by, together.
    slack: u64,
}

impl Window {
    fn uncertainty_ppm(&self) -> u64 {
        self.slack.saturating_mul(1_000_000) / self.ticks.max(1)
    }
}

/// The APIC timer read between two TSC reads.
struct Stamp {
    before: u64,
    apic: u32,
    after: u64,
}

fn stamp() -> Stamp {
    let before = ticks();
    let apic = apic::timer_remaining();
    Stamp { before, apic, after: ticks() }
}

/// One window of 10 ms of PIT time; `None` if it was over before it was
/// timed.
///
/// # Safety
///
/// Boot core alone, before anything else uses the PIT or the APIC timer.
unsafe fn measure_window() -> Option<Window> {
    let mut control = Port::<u8>::new(0x61);
    let mut command = Port::<u8>::new(0x43);
    let mut channel2 = Port::<u8>::new(0x42);
    // SAFETY: the PIT's channel 2 and its gate (speaker off), per this
    // function's contract.
    unsafe {
        let gate = (control.read() & !0x02) & !0x01;
        control.write(gate);
        command.write(0b1011_0000); // channel 2, low then high byte, mode 0
        channel2.write(WINDOW_COUNTS as u8);
        apic::timer_start_masked();
        let start = stamp();
        channel2.write((WINDOW_COUNTS >> 8) as u8); // QEMU's PIT counts from here
        control.write(gate | 0x01); // a real one from here
        let started = ticks();
        let mut low_before = started;
        let high_after = loop {
            let before = ticks();
            if control.read() & 0x20 != 0 {
                break ticks();
            }
            low_before = before;
        };
        let end = stamp();
        apic::timer_end_masked();
        control.write(gate);
        if low_before == started {
            return None; // over before the first poll
        }
        // Each end as the middle of its span, the slack their half-widths.
        let ticks = (low_before + high_after) / 2 - (start.after + started) / 2;
        let slack = (high_after - low_before) / 2 + (started - start.after) / 2;
        let tsc_hz = ticks * PIT_HZ / u64::from(WINDOW_COUNTS);
        // The APIC timer over the span between its two reads, in TSC time.
        let apic_ticks = (end.before + end.after) / 2 - (start.before + start.after) / 2;
        let apic_slack = (end.after - end.before) / 2 + (start.after - start.before) / 2;
        let counts = u128::from(start.apic - end.apic);
        let apic_hz = (counts * u128::from(tsc_hz) / u128::from(apic_ticks.max(1))) as u64;
        Some(Window { tsc_hz, apic_hz, ticks, slack: slack + apic_slack })
    }
}

/// Interrupts this core when the TSC reaches `deadline`.
pub(crate) fn arm(deadline: u64) {
    let per_tick = boot_info().arch.apic_counts_per_tick_q32;
    apic::timer_start(counts_for(deadline.saturating_sub(ticks()), per_tick));
}

/// `apic_hz / tsc_hz` in 32.32 fixed point (saturating: an APIC timer
/// 2^32 times faster than the TSC is no real machine).
fn counts_per_tick_q32(apic_hz: u64, tsc_hz: u64) -> u64 {
    u64::try_from((u128::from(apic_hz) << 32) / u128::from(tsc_hz.max(1))).unwrap_or(u64::MAX)
}

/// The APIC timer's start count for `delta` TSC ticks: at least 1 (0
/// would stop the timer), at most the counter's width.
fn counts_for(delta: u64, per_tick_q32: u64) -> u32 {
    let counts = (u128::from(delta) * u128::from(per_tick_q32)) >> 32;
    counts.clamp(1, u128::from(u32::MAX)) as u32
}

/// Stops this core's timer.
pub(crate) fn disarm() {
    apic::timer_stop();
}
