//! Device interrupt lines: bind a handler to a line, routed to one core.
//!
//! A bound handler runs on its core when the line fires, inside the
//! kernel's interrupt handling (`roving::platform::in_interrupt` is true
//! there), with interrupts masked. It may call roving's interrupt-safe
//! operations (`roving::sync::Signal::signal`, `Event::set`,
//! `Semaphore::release`), which is how a device's interrupt wakes a strand.
//!
//! Lines are the controller's numbers. So far only a GIC's shared
//! peripheral interrupts can be bound; on other controllers (the PC's
//! I/O APIC, the Raspberry Pi 3's) [`bind`] says
//! [`BindError::NoController`]. Checked under QEMU virt with GICv2 and
//! GICv3 at 1 to 8 cores. Work runs with interrupts open, so a line's
//! handler runs as soon as it fires, whatever its core is doing, unless
//! the core is inside one of the kernel's short masked sections.

use crate::arch;
use crate::boot_info::MAX_CORES;
use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

/// What runs when a line fires: the line's number.
pub type Handler = fn(u32);

/// The most lines a controller may have (a GIC's 1020).
pub const MAX_LINES: usize = 1020;

static HANDLERS: [AtomicUsize; MAX_LINES] = [const { AtomicUsize::new(0) }; MAX_LINES];

/// The line each core's bound handler is running for (`NONE`: none), so a
/// panic in a handler is reported with its line.
static HANDLING: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(NONE) }; MAX_CORES];
const NONE: u32 = u32::MAX;

/// The line whose bound handler `core` is running, if it is in one.
pub(crate) fn handling(core: usize) -> Option<u32> {
    HANDLING.get(core).map(|line| line.load(Relaxed)).filter(|&line| line != NONE)
}

/// Why a line could not be bound, unbound or raised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BindError {
    /// This board's interrupt controller has no device lines the kernel
    /// can bind yet.
    NoController,
    /// The controller has no such line (or it is not a device line).
    NoSuchLine {
        /// The line asked for.
        line: u32,
        /// Lines the controller has.
        lines: u32,
    },
    /// The line is one the kernel itself uses (the wake-up or the timer).
    KernelLine {
        /// The line asked for.
        line: u32,
    },
    /// A handler is already bound to the line.
    AlreadyBound {
        /// The line asked for.
        line: u32,
    },
    /// No handler is bound to the line.
    NotBound {
        /// The line asked for.
        line: u32,
    },
    /// There is no such core.
    NoSuchCore {
        /// The core asked for.
        core: usize,
    },
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoController => {
                f.write_str("this board's interrupt controller has no bindable device lines yet")
            }
            Self::NoSuchLine { line, lines } => {
                write!(f, "no device line {line} (the controller has {lines})")
            }
            Self::KernelLine { line } => write!(f, "line {line} is the kernel's own (wake-up or timer)"),
            Self::AlreadyBound { line } => write!(f, "line {line} already has a handler"),
            Self::NotBound { line } => write!(f, "line {line} has no handler"),
            Self::NoSuchCore { core } => write!(f, "no core {core}"),
        }
    }
}

impl core::error::Error for BindError {}

fn check(line: u32) -> Result<&'static AtomicUsize, BindError> {
    let lines = arch::device_lines().ok_or(BindError::NoController)?;
    if arch::is_kernel_line(line) {
        return Err(BindError::KernelLine { line });
    }
    if !lines.contains(&line) {
        return Err(BindError::NoSuchLine { line, lines: lines.end });
    }
    Ok(&HANDLERS[line as usize])
}

/// Binds `handler` to `line`, routes the line to `core` and enables it.
///
/// # Errors
///
/// [`BindError`] says why; nothing changed then.
pub fn bind(line: u32, core: usize, handler: Handler) -> Result<(), BindError> {
    let slot = check(line)?;
    if core >= crate::cores::count() {
        return Err(BindError::NoSuchCore { core });
    }
    if slot.compare_exchange(0, handler as usize, SeqCst, SeqCst).is_err() {
        return Err(BindError::AlreadyBound { line });
    }
    arch::enable_line(line, core);
    Ok(())
}

/// Disables `line` and unbinds its handler. A firing already under way on
/// its core may still run the handler once.
///
/// # Errors
///
/// [`BindError::NotBound`], or as for [`bind`].
pub fn unbind(line: u32) -> Result<(), BindError> {
    let slot = check(line)?;
    arch::disable_line(line);
    if slot.swap(0, SeqCst) == 0 {
        return Err(BindError::NotBound { line });
    }
    Ok(())
}

/// Makes `line` pending, as if its device had raised it: for tests, and
/// for software that wants a handler run on the line's core.
///
/// # Errors
///
/// [`BindError::NotBound`], or as for [`bind`].
pub fn raise(line: u32) -> Result<(), BindError> {
    if check(line)?.load(SeqCst) == 0 {
        return Err(BindError::NotBound { line });
    }
    arch::pend_line(line);
    Ok(())
}

/// Starts or stops timing how long each core keeps interrupts masked, and
/// how long each handler runs; [`cores::report`](crate::cores::report)
/// shows the longest of each. Starting clears what was recorded. Off by
/// default: it costs two cycle-counter reads per masked section.
pub fn measure_masking(on: bool) {
    crate::masking::measure(on);
}

/// Runs the handler bound to `line`, if any; returns whether one ran.
/// Called by the controller code with the line acknowledged.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))] // the PC binds no lines yet
pub(crate) fn dispatch(line: u32) -> bool {
    let Some(slot) = HANDLERS.get(line as usize) else { return false };
    let handler = slot.load(SeqCst);
    if handler == 0 {
        return false;
    }
    // SAFETY: only `bind` stores a non-zero value, and it stores a
    // `Handler`.
    let handler: Handler = unsafe { core::mem::transmute::<usize, Handler>(handler) };
    let me = crate::cores::current().and_then(|core| HANDLING.get(core.index));
    let outer = me.map(|slot| slot.swap(line, Relaxed));
    handler(line);
    if let (Some(slot), Some(outer)) = (me, outer) {
        slot.store(outer, Relaxed);
    }
    true
}
