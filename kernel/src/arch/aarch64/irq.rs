//! The kernel's two per-core interrupts (the wake-up and the timer
//! deadline) and the device lines (`crate::interrupts`), on whichever
//! controller the board has: a GIC the kernel drives (`gic.rs`), or the
//! board's own [`InterruptChip`].

use super::{cpu, gic, timer};
use crate::board::{InterruptChip, InterruptController, Pending, board};
use crate::cores::{self, CoreLocal};
use crate::interrupts::{self, BindError};
use core::ops::Range;

/// The board's own controller, if it has one instead of a GIC.
fn chip() -> Option<&'static dyn InterruptChip> {
    match board().interrupts {
        InterruptController::Board(chip) => Some(chip),
        InterruptController::FromDeviceTree | InterruptController::GicV2 { .. } => None,
    }
}

/// Whether a controller is running, so an interrupt can end a deep
/// (`WFI`) sleep.
pub(super) fn available() -> bool {
    chip().is_some() || gic::available()
}

/// Controller set-up on the boot core, then its per-core part.
pub(super) fn init_primary() {
    match chip() {
        Some(chip) => {
            // Where the firmware's tree put it, if it did (`dtb`).
            let parts = &crate::boot_info::boot_info().arch.chip_parts;
            for (index, part) in parts.iter().enumerate() {
                chip.place(index, part.base);
            }
        }
        None => gic::init_primary(),
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

/// Handles the calling core's pending interrupt (a board's chip: every
/// one pending). Called from the IRQ vector.
pub(super) fn handle_irq() {
    match chip() {
        Some(chip) => {
            let hw_id = cpu::hw_id();
            handle(chip.acknowledge(hw_id));
            while let Some(line) = chip.next_line(hw_id) {
                if !handle_device_line(line) {
                    // Enabled but unbound (an unbind raced with it):
                    // level-triggered, it would fire for ever.
                    chip.enable_line(line, false);
                }
                // The chip has no end of interrupt: its lines are levels.
                interrupts::ended(line);
            }
        }
        None => match gic::interface() {
            Some(gic::Interface::V2(interface)) => handle_acknowledged(&interface),
            Some(gic::Interface::V3(interface)) => handle_acknowledged(&interface),
            None => {}
        },
    }
    // A WFE that this interrupt raced with must not sleep through it.
    aarch64_cpu::asm::sevl();
}

/// Handles the interrupt the GIC's CPU interface acknowledges, if one is
/// pending: the GIC says what it is for, and this dispatches it.
///
/// One per exception, not a loop until none is pending: another pending
/// interrupt is taken again as soon as the vector returns and unmasks,
/// and the common case (one interrupt) no longer pays for a second
/// acknowledgement (a read of the CPU interface, a device access).
fn handle_acknowledged(interface: &impl gic::CpuInterface) {
    let Some(acknowledged) = interface.acknowledge() else { return };
    match acknowledged.line() {
        gic::Line::Kernel(pending) => {
            handle(pending);
            interface.end(acknowledged);
        }
        gic::Line::Device(line) => {
            handle_device_line(line);
            interface.end(acknowledged);
            interrupts::ended(line);
        }
    }
}

/// Handles one acknowledged interrupt (or, from a board's chip, all that
/// were pending at once).
fn handle(pending: Pending) {
    if pending.timer {
        timer::on_interrupt();
        if let Some(me) = crate::cores::current() {
            me.timer_fired();
        }
    }
    if let Some(me) = crate::cores::current()
        && (pending.wake || pending.timer || pending.other)
    {
        me.count_interrupt(!pending.other);
    }
}

/// Runs device `line`'s handler; returns whether one was bound.
fn handle_device_line(line: u32) -> bool {
    let ran = interrupts::dispatch(line);
    if let Some(me) = cores::current() {
        me.count_interrupt(ran);
    }
    ran
}

/// The controller's name, for the boot banner.
pub(super) fn name(out: &mut impl core::fmt::Write) -> core::fmt::Result {
    match chip() {
        Some(chip) => out.write_str(chip.name()),
        None => gic::name(out),
    }
}

/// Device lines that can be bound (`crate::interrupts`): a GIC's SPIs, or
/// the board's controller's.
pub(crate) fn device_lines() -> Option<Range<u32>> {
    match chip() {
        Some(chip) => chip.device_lines(),
        None => gic::device_lines(),
    }
}

/// Whether every device line goes to one core (the board's controller
/// says; a GIC routes each line).
pub(crate) fn shared_route() -> bool {
    chip().is_some_and(|chip| chip.shared_route())
}

/// Whether `line` is the wake-up or the timer (a GIC numbers them with
/// the device lines; a board's controller does not).
pub(crate) fn is_kernel_line(line: u32) -> bool {
    chip().is_none() && gic::is_kernel_line(line)
}

/// Every core can take device lines: a GIC routes by full affinity, and a
/// board's controller reaches each of its few cores.
pub(crate) fn can_route_to(_core: usize) -> bool {
    true
}

/// Routes device `line` to `core`.
pub(crate) fn route_line(line: u32, core: usize) {
    match chip() {
        Some(chip) => chip.route_line(line, cores::local(core).hw_id()),
        None => gic::route_line(line, core),
    }
}

/// Enables device `line`.
pub(crate) fn enable_line(line: u32) {
    match chip() {
        Some(chip) => chip.enable_line(line, true),
        None => gic::enable_line(line),
    }
}

/// Disables device `line`.
pub(crate) fn disable_line(line: u32) {
    match chip() {
        Some(chip) => chip.enable_line(line, false),
        None => gic::disable_line(line),
    }
}

/// Whether device `line` is pending (asserted, not yet taken), if the
/// controller can say; `false` if not.
pub(crate) fn line_pending(line: u32) -> bool {
    match chip() {
        Some(chip) => chip.line_pending(line),
        None => gic::line_pending(line),
    }
}

/// Makes device `line` pending, if the controller can.
pub(crate) fn pend_line(line: u32, _core: usize) -> Result<(), BindError> {
    match chip() {
        Some(chip) if chip.pend_line(line) => Ok(()),
        Some(_) => Err(BindError::CannotRaise { line }),
        None => {
            gic::pend_line(line);
            Ok(())
        }
    }
}
