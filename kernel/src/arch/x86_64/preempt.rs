//! Time slices on the PC (roving's `preempt` module; `docs/preemption.md`):
//! the interrupt stub, once the handler is done, asks roving whether to
//! preempt the code it interrupted. The tick is the local APIC's one-shot
//! timer, which `request_tick` arms (`crate::platform`).

use super::frame::Frame;
use roving::platform::hooks::{self, Tick};

/// RFLAGS.IF: interrupts enabled.
const RFLAGS_IF: u64 = 1 << 9;

/// From the interrupt stub, after the handler: if the timer fired, asks
/// roving, and on [`Tick::Preempt`] sends the interrupted strand into
/// roving's entry. (Every vector runs on the core's IST stack with
/// interrupts disabled, so the interrupted code is never a handler.)
pub(super) fn after_interrupt(frame: &mut Frame) {
    if !crate::cores::take_tick() {
        return;
    }
    if hooks::on_tick() == Tick::Preempt {
        // SAFETY: roving said the interrupted code is a strand outside
        // roving's code, on its own stack; `iretq` restores `frame`.
        unsafe { send_to_entry(frame) };
    }
}

/// Makes the `iretq` of this interrupt enter roving's preemption entry
/// with the interrupted `rip, cs, rflags, rsp, ss` as an interrupt-return
/// frame below the strand's stack pointer, interrupts disabled (the
/// entry's contract, `src/preempt/entry_x86_64.rs`).
///
/// # Safety
///
/// The interrupted code runs on a stack with room below its stack pointer
/// (the kernel is built without a red zone), and `frame` is what the stub
/// returns through.
unsafe fn send_to_entry(frame: &mut Frame) {
    let words = ((frame.rsp - 5 * 8) & !15) as *mut u64;
    // SAFETY: below the interrupted stack pointer the stack is free
    // (contract), and the address is 16-byte aligned.
    unsafe {
        words.write(frame.rip);
        words.add(1).write(frame.cs);
        words.add(2).write(frame.rflags);
        words.add(3).write(frame.rsp);
        words.add(4).write(frame.ss);
    }
    frame.rsp = words as u64;
    frame.rip = hooks::entry_address() as u64;
    frame.rflags &= !RFLAGS_IF;
}
