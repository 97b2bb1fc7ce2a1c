//! The kernel's two per-core interrupts (the wake-up and the timer
//! deadline), on whichever controller the board has: a GIC the kernel
//! drives (`gic.rs`), or the board's own [`InterruptChip`].

use super::{cpu, gic, timer};
use crate::board::{InterruptChip, InterruptController, Pending, board};
use crate::cores::CoreLocal;

/// The board's own controller, if it has one instead of a GIC.
fn chip() -> Option<&'static dyn InterruptChip> {
    match board().interrupts {
        InterruptController::Board(chip) => Some(chip),
        InterruptController::FromDeviceTree
        | InterruptController::GicV2 { .. }
        | InterruptController::LocalApic => None,
    }
}

/// Whether a controller is running, so an interrupt can end a deep
/// (`WFI`) sleep.
pub(super) fn available() -> bool {
    chip().is_some() || gic::available()
}

/// Controller set-up on the boot core, then its per-core part.
pub(super) fn init_primary() {
    if chip().is_none() {
        gic::init_primary();
    }
    init_this_core();
}

/// Routes the wake-up and the timer to the calling core.
pub(super) fn init_this_core() {
    match chip() {
        Some(chip) => chip.init_core(cpu::hw_id()),
        None => gic::init_this_core(),
    }
    timer::init_this_core();
}

/// Raises the wake-up interrupt on `target`. The caller has made the ring
/// it announces visible (DSB) first.
pub(super) fn send_wake(target: &CoreLocal) {
    match chip() {
        Some(chip) => chip.send_wake(target.hw_id()),
        None => gic::send_wake(target),
    }
}

/// Handles every pending interrupt of the calling core. Called from the
/// IRQ vector.
pub(super) fn handle_irq() {
    match chip() {
        Some(chip) => handle(chip.acknowledge(cpu::hw_id())),
        None => gic::handle_irq(),
    }
    // A WFE that this interrupt raced with must not sleep through it.
    aarch64_cpu::asm::sevl();
}

/// Handles one acknowledged interrupt (or, from a board's chip, all that
/// were pending at once).
pub(super) fn handle(pending: Pending) {
    if pending.timer {
        timer::on_interrupt();
    }
    if let Some(me) = crate::cores::current() {
        me.count_interrupt(!pending.other);
    }
}

/// The controller's name, for the boot banner.
pub(super) fn name(out: &mut impl core::fmt::Write) -> core::fmt::Result {
    match chip() {
        Some(chip) => out.write_str(chip.name()),
        None => gic::name(out),
    }
}

/// Device lines that can be bound (`crate::interrupts`): a GIC's SPIs; a
/// board's own controller has none yet.
pub(crate) fn device_lines() -> Option<core::ops::Range<u32>> {
    if chip().is_some() { None } else { gic::device_lines() }
}

pub(crate) use gic::{disable_line, enable_line, is_kernel_line, pend_line};
