//! Words shared by every architecture's fault report.

use crate::backtrace::Registers;
use crate::cores::CoreLocal;
use core::cell::UnsafeCell;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};
use roving::platform::hooks::GuardHit;

/// A fault in a fibre's guard page, in words, as a line of its own (nothing
/// if the fault was not in one).
pub(crate) struct Overflow(pub Option<GuardHit>);

impl core::fmt::Display for Overflow {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Some(hit) = self.0 else { return Ok(()) };
        match hit.strand {
            Some(strand) => {
                write!(
                    f,
                    "\n    stack overflow: strand {strand} ran off the bottom of fibre {}'s stack",
                    hit.fibre
                )
            }
            None => {
                write!(
                    f,
                    "\n    stack overflow into the guard page of fibre {} (no strand resident)",
                    hit.fibre
                )
            }
        }
    }
}

/// The faulting core's index, or why it has none.
pub(crate) struct Core(pub Option<usize>);

impl core::fmt::Display for Core {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(index) => write!(f, "{index}"),
            None => write!(f, "? (before per-core data)"),
        }
    }
}

// A synchronous fault (an abort, an undefined instruction; on the PC a
// page fault, general protection fault, invalid opcode or divide error)
// in a strand or in an async task's poll is the same failure as a panic
// there: nothing but that strand or task has to stop. So the
// architecture's exception handler asks [`can_fail_alone`], keeps the
// fault's words and registers in the core's record ([`record`]) and
// returns, not to the faulting instruction, but into [`fail_after_fault`]
// on the faulting code's own stack, as if that instruction had called it.
// That function panics with the words, and the panic handler fails the
// strand or task as it would for any panic, reporting the fault, with a
// backtrace from the faulting registers, instead of a panic's location.
// A fault in a device's interrupt handler takes the same road, and the
// panic handler ends the handler alone (`crate::interrupts`). Anywhere
// else (boot, a plain task, the scheduler's loop, the kernel's own
// interrupts, a stack overflow, a fault while one is being failed) the
// fault ends the run with the full report, as before.

/// How many bytes of a contained fault's words are kept.
const FAULT_WORDS: usize = 320;

/// A core's record: no fault in it.
const FREE: u8 = 0;
/// Written by the exception handler, for [`fail_after_fault`].
const RECORDED: u8 = 1;
/// [`fail_after_fault`] is panicking with it, for the panic handler.
const FAILING: u8 = 2;

/// One core's contained fault: written by its exception handler, read by
/// the code its exception returns into, on the same core.
pub(crate) struct ContainedFault {
    /// [`FREE`], [`RECORDED`] or [`FAILING`]; only the core changes it.
    state: AtomicU8,
    words: UnsafeCell<heapless::String<FAULT_WORDS>>,
    registers: UnsafeCell<Registers>,
}

// SAFETY: the record is written only by its core's exception handler
// while `state` is FREE, and read only by that core afterwards (comment
// above); no other core touches it.
unsafe impl Sync for ContainedFault {}

impl ContainedFault {
    pub(crate) const fn new() -> Self {
        Self {
            state: AtomicU8::new(FREE),
            words: UnsafeCell::new(heapless::String::new()),
            registers: UnsafeCell::new(Registers { pc: 0, sp: 0, fp: 0, lr: None }),
        }
    }
}

impl core::fmt::Debug for ContainedFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ContainedFault").field("state", &self.state.load(Relaxed)).finish_non_exhaustive()
    }
}

/// Whether a fault the calling core just took, in the code it stopped
/// (whose stack pointer is `stack_pointer`), can fail that code alone: a
/// strand or an async task's poll outside any interrupt handler, or a
/// device's handler that the dispatcher runs under a catch point, with no
/// panic or other fault of this core's under way. For the exception
/// handler, before it changes anything.
pub(crate) fn can_fail_alone(core: &CoreLocal, stack_pointer: usize) -> bool {
    use roving::platform::hooks;
    if core.panicking.load(Relaxed) || core.fault.state.load(Relaxed) != FREE {
        return false;
    }
    if crate::cores::in_interrupt() {
        return hooks::running_handler();
    }
    hooks::strand_at(stack_pointer).is_some() || hooks::running_task()
}

/// Keeps a fault [`can_fail_alone`] allowed, its words and the registers
/// the faulting code had, for the calling core's [`fail_after_fault`];
/// returns the argument to hand it.
pub(crate) fn record(
    core: &'static CoreLocal,
    registers: Registers,
    words: core::fmt::Arguments<'_>,
) -> usize {
    // SAFETY: this core's exception handler, while the record is FREE
    // (`can_fail_alone`): nothing else reads or writes it now.
    let (kept, kept_registers) = unsafe { (&mut *core.fault.words.get(), &mut *core.fault.registers.get()) };
    kept.clear();
    let _ = Truncating(kept).write_fmt(words);
    *kept_registers = registers;
    core.fault.state.store(RECORDED, Relaxed);
    core::ptr::from_ref(core) as usize
}

/// Where a contained fault's exception returns to, on the faulting code's
/// stack, with the core's record ([`record`]'s answer): panics with the
/// fault's words, which fails the strand or task that faulted.
///
/// # Safety
///
/// Entered only by an exception return that [`record`] prepared, on the
/// core whose record `core` is.
pub(crate) unsafe extern "C" fn fail_after_fault(core: &'static CoreLocal) -> ! {
    // Copied out: the panic handler frees the record before the failure
    // is made from the message.
    // SAFETY: written by this core's exception handler, which returned
    // here; FAILING keeps any later fault out of it until it is freed.
    let words: heapless::String<FAULT_WORDS> = unsafe { (*core.fault.words.get()).clone() };
    core.fault.state.store(FAILING, Relaxed);
    roving::platform::hooks::next_panic_is_fault();
    panic!("{words}")
}

/// For the panic handler: if this panic is a contained fault's, the
/// registers the faulting code had (it is then reported as that fault,
/// from there, without the location of the `panic!` that carries it).
/// Frees the record.
pub(crate) fn take_failing(core: &CoreLocal) -> Option<Registers> {
    if core.fault.state.load(Relaxed) != FAILING {
        return None;
    }
    // SAFETY: this core's record, FAILING: written before, by this core.
    let registers = unsafe { *core.fault.registers.get() };
    core.fault.state.store(FREE, Relaxed);
    Some(registers)
}

/// Writes as much as fits, and drops the rest.
struct Truncating<'a>(&'a mut heapless::String<FAULT_WORDS>);

impl core::fmt::Write for Truncating<'_> {
    fn write_str(&mut self, text: &str) -> core::fmt::Result {
        for c in text.chars() {
            if self.0.push(c).is_err() {
                break;
            }
        }
        Ok(())
    }
}
