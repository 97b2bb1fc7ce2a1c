//! Talking to a semihosting host (QEMU's `-semihosting`, or a debugger):
//! the exit status, and the command line when no device tree carries one.
//!
//! A semihosting call is `HLT #0xf000`. Without a host attached (a real
//! board, no debugger) that instruction is undefined and traps. Ending the
//! run has nowhere else to go, so `exit` lets it trap and the fault path
//! stops the core. Reading the command line is only a question, so
//! [`command_line`] asks inside a probe: the synchronous exception handler
//! sees [`PROBING`] set, steps over the trapping instruction, and the call
//! returns "no answer".
//!
//! The probe runs on the boot core, MMU off, before any other core starts,
//! so its flag is a plain load and store (no exclusive access needed).

use super::frame::Frame;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Set while the boot core asks the host something it may not answer.
static PROBING: AtomicBool = AtomicBool::new(false);

/// ESR_EL1.EC of an undefined instruction: what `HLT` is without a host.
const EC_UNKNOWN: u64 = 0x00;

/// The host's command line for this program, with the program's own name
/// (its first word) removed; `None` if there is no semihosting host.
pub(super) fn command_line(out: &mut heapless::String<256>) -> Option<()> {
    let mut buffer = [MaybeUninit::<u8>::uninit(); 256];
    PROBING.store(true, Relaxed);
    let answer = semihosting::sys::arm_compat::sys_get_cmdline_uninit(&mut buffer);
    PROBING.store(false, Relaxed);
    let line = core::str::from_utf8(answer.ok()?).ok()?;
    let arguments = line.trim_start().split_once(' ').map_or("", |(_program, rest)| rest);
    crate::boot_info::push_truncated(out, arguments.trim());
    Some(())
}

/// Called for every synchronous exception: if it is a semihosting call
/// trapping inside a probe, makes the call fail (`x0 = -1`), steps over
/// it and returns `true`; the interrupted code then resumes.
pub(super) fn recover_probe(esr: u64, frame: &mut Frame) -> bool {
    if !PROBING.load(Relaxed) || (esr >> 26) & 0x3f != EC_UNKNOWN {
        return false;
    }
    frame.x[0] = u64::MAX;
    frame.elr += 4;
    true
}

/// Ends the run with `code` through the host.
pub(super) fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}
