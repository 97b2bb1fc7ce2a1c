//! Time slices on AArch64 (roving's `preempt` module; `docs/preemption.md`):
//! the IRQ vector, once the handler is done, asks roving whether to
//! preempt the code it interrupted. The tick is the core's one timer,
//! which `request_tick` arms (`crate::platform`).

use super::frame::Frame;
use aarch64_cpu::registers::{Readable, SP_EL0, Writeable};
use roving::platform::hooks::{self, Tick};

/// SPSR_EL1.I: IRQs masked.
const SPSR_IRQ_MASKED: u64 = 1 << 7;

/// From the IRQ vector, after the handler: if the timer fired and the
/// interrupted code ran on SP_EL0 (`preemptible`), asks roving, and on
/// [`Tick::Preempt`] sends the interrupted strand into roving's entry.
pub(super) fn after_interrupt(preemptible: bool, frame: &mut Frame) {
    if !crate::cores::take_tick() || !preemptible {
        return;
    }
    if hooks::on_tick() == Tick::Preempt {
        // SAFETY: roving said the interrupted code is a strand outside
        // roving's code; its stack pointer is SP_EL0, and the vectors
        // restore ELR and SPSR from `frame` and leave SP_EL0 as it is.
        unsafe { send_to_entry(frame) };
    }
}

/// [`after_interrupt`] where no strand was interrupted: roving still
/// hears of the tick (it asks for the core's next one), and has no strand
/// to stop.
pub(super) fn after_interrupt_outside_strands() {
    if crate::cores::take_tick() {
        let tick = hooks::on_tick();
        debug_assert!(tick == Tick::Continue, "roving preempted a core's own loop");
    }
}

/// Makes the `eret` of this IRQ enter roving's preemption entry with the
/// interrupted return address and status two words below the strand's
/// stack pointer, IRQs masked (the entry's contract,
/// `src/preempt/entry_aarch64.rs`).
///
/// # Safety
///
/// The interrupted code runs on SP_EL0, with room below its stack pointer
/// (AArch64 code keeps no red zone), and `frame` is what the vector
/// restores.
unsafe fn send_to_entry(frame: &mut Frame) {
    let stack = SP_EL0.get() - 16;
    // SAFETY: the two words below the interrupted stack pointer are free
    // (contract); the stack pointer is 16-byte aligned. One store pair: as
    // two pointer writes, the compiler went through a vector register and
    // the stack, 8 more instructions on every preemption.
    unsafe {
        core::arch::asm!(
            "stp {elr}, {spsr}, [{stack}]",
            elr = in(reg) frame.elr,
            spsr = in(reg) frame.spsr,
            stack = in(reg) stack,
            options(nostack, preserves_flags),
        );
    }
    SP_EL0.set(stack);
    frame.elr = hooks::entry_address() as u64;
    frame.spsr |= SPSR_IRQ_MASKED;
}
