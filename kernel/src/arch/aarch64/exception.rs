//! Exception entry: the vector table and the dispatch to handlers.
//!
//! Work runs with IRQs open, so an IRQ may interrupt any code outside the
//! short masked sections (`crate::masking`). Its handler runs with IRQs
//! masked and returns to the interrupted code, all of whose registers the
//! vectors keep. Every other exception is a fault: a strand or an async
//! task that takes one fails alone (`crate::fault`), and anywhere else it
//! is reported and the run ends (except a semihosting call trapping inside
//! a probe; see `semihosting.rs`).
//!
//! Kernel code and strands run on SP_EL0 (`boot.s` selects it), and the
//! vectors run on SP_EL1, a small stack of each core's own: an exception
//! from normal code is taken at the "SP_EL0" entries, and one from inside a
//! handler at the "SP_ELx" entries. A strand that overflows into its guard
//! page thus faults onto a working stack.

use super::frame::{FRAME_SIZE, Frame, Vector};
use super::{fault, irq, semihosting};
use aarch64_cpu::registers::{ESR_EL1, Readable, VBAR_EL1, Writeable};
use core::arch::global_asm;

global_asm!(
    include_str!("vectors.s"),
    frame_size = const FRAME_SIZE,
    handler = sym handle_exception,
);

unsafe extern "C" {
    static _roving_vectors: u8;
}

/// Points VBAR_EL1 at the vector table. Touches no memory.
pub(super) fn install() {
    let table = &raw const _roving_vectors as u64;
    VBAR_EL1.set(table);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// What the IRQ vector does after its entry, for a core that took no
/// exception: interrupts masked, in its own loop (not a strand), so there
/// is nothing to preempt.
pub(super) fn serve_irq_in_place() {
    crate::cores::as_interrupt_handler(irq::handle_irq);
    super::preempt::after_interrupt_outside_strands();
}

/// Called by the vectors with the entry number and the saved state.
extern "C" fn handle_exception(kind: u64, frame: &mut Frame) {
    match Vector::of(kind) {
        Vector::Irq if kind / 4 <= 1 => {
            crate::cores::as_interrupt_handler(irq::handle_irq);
            // Only code on SP_EL0 (kernel code and strands, entry 1) may be
            // preempted; a handler's own stack never is.
            super::preempt::after_interrupt(kind == 1, frame);
        }
        Vector::Synchronous if semihosting::recover_probe(ESR_EL1.get(), frame) => {}
        // From code on SP_EL0 (a strand or task), or from a device's
        // handler on SP_EL1: it fails alone.
        Vector::Synchronous if (kind == 0 || kind == 4) && fault::contain(kind, frame) => {}
        vector => fault::report_and_exit(vector, kind, frame),
    }
}
