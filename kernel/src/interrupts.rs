//! Device interrupt lines: bind a handler to a line, route it to a core,
//! mask it and unmask it.
//!
//! A bound handler runs on the core its line is routed to, as soon as the
//! line fires, whatever that core is doing (work runs with interrupts
//! open; only the kernel's short masked sections hold a handler off). It
//! runs on the core's exception stack with interrupts masked, and
//! `roving::platform::in_interrupt` is true there. Its job is to quiet
//! the device and wake whoever does the work, with roving's
//! interrupt-safe operations (`roving::sync::Signal::signal`,
//! `Event::set`, `Semaphore::release`, `roving::strand::Unparker::unpark`,
//! an actor's `InterruptSender`): see `docs/interrupts.md`.
//!
//! Lines are the controller's numbers:
//!
//! | board | controller | lines | [`raise`] |
//! |---|---|---|---|
//! | QEMU virt | GICv2 or GICv3 | shared peripheral interrupts, 32 and up | yes, through the distributor |
//! | Raspberry Pi 4 | GIC-400 | shared peripheral interrupts (the VideoCore's start at 96) | yes |
//! | Raspberry Pi 3 | BCM2835 peripheral controller | its 64 peripheral interrupts; all reach the cores through one route | no ([`BindError::CannotRaise`]) |
//! | PC | I/O APIC(s) | global system interrupts | yes, as an IPI with the line's vector (the I/O APIC itself cannot) |
//!
//! The board names its devices' lines ([`line_of`]); ISA devices on the PC
//! are mapped through the ACPI MADT's interrupt source overrides. The
//! kernel's own interrupts (the wake-up and the timer) are not device
//! lines, and the console's line, which the kernel binds for serial input,
//! can be routed and masked but not bound again.
//!
//! A line that keeps firing while its handler finds nothing to do, or that
//! is pending again every time its handler returns, is an interrupt storm:
//! it is masked and reported (`storm.rs` has the rules).
//! A handler that panics or takes a synchronous fault ends alone: the
//! panic (or fault) is reported with its core and line, the line is
//! masked ([`LineStatus::failed`]), and the code it interrupted goes on.

mod storm;

use crate::board::{Line, board};
use crate::boot_info::MAX_CORES;
use crate::{arch, cores, masking};
use core::fmt;
use core::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst,
};
use spin::Mutex;

/// What runs when a line fires: it gets the line's number, quiets its
/// device and says whether the device had anything to report.
pub type Handler = fn(u32) -> Handled;

/// What a [`Handler`] found when its line fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// Its device had something to report, and the handler dealt with it.
    Yes,
    /// Its device had nothing to report: the line fired for nothing. Many
    /// of these in a row are an interrupt storm (`storm.rs`).
    No,
}

/// The most lines a controller may have (a GIC's 1020).
pub const MAX_LINES: usize = 1020;

/// Line flags.
const KERNEL: u8 = 1;
const MASKED: u8 = 2;
const STORMED: u8 = 4;
const FAILED: u8 = 8;
/// The flags that keep a line from firing its handler.
const HELD_OFF: u8 = MASKED | STORMED | FAILED;

/// One line's binding. `handler` is read by the line's handler path
/// without a lock; every change holds `CONFIG`.
struct LineState {
    /// The bound [`Handler`] as an address; 0 if unbound.
    handler: AtomicUsize,
    core: AtomicUsize,
    flags: AtomicU8,
    fired: AtomicU64,
    streak: storm::Streak,
    /// Set by the line's dispatch for [`ended`]: check whether the line is
    /// pending again (`storm.rs`, rule 2).
    check: AtomicBool,
}

impl LineState {
    const fn new() -> Self {
        Self {
            handler: AtomicUsize::new(0),
            core: AtomicUsize::new(0),
            flags: AtomicU8::new(0),
            fired: AtomicU64::new(0),
            streak: storm::Streak::new(),
            check: AtomicBool::new(false),
        }
    }

    fn bound(&self) -> bool {
        self.handler.load(SeqCst) != 0
    }
}

static LINES: [LineState; MAX_LINES] = [const { LineState::new() }; MAX_LINES];

/// Serialises binding, routing and masking (always with interrupts
/// masked: a storm masks its line from a handler).
static CONFIG: Mutex<()> = Mutex::new(());

/// Lines bound by programs (not the kernel's own): while any is, roving
/// counts on handlers to wake strands (`Platform::interrupts_bound`).
static PROGRAM_LINES: AtomicUsize = AtomicUsize::new(0);

/// Whether a program has bound a line.
pub(crate) fn programs_bound() -> bool {
    PROGRAM_LINES.load(Relaxed) > 0
}

/// The line each core's bound handler is running for (`NONE`: none), so a
/// panic in a handler is reported with its line.
static HANDLING: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(NONE) }; MAX_CORES];
const NONE: u32 = u32::MAX;

/// The line whose bound handler `core` is running, if it is in one.
pub(crate) fn handling(core: usize) -> Option<u32> {
    HANDLING.get(core).map(|line| line.load(Relaxed)).filter(|&line| line != NONE)
}

/// Why a line could not be bound, routed, masked or raised. Nothing
/// changed when one is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BindError {
    /// This board's interrupt controller has no device lines.
    NoController,
    /// The controller has no such line (or it is not a device line).
    NoSuchLine {
        /// The line asked for.
        line: u32,
        /// Lines end here (device lines are below it).
        lines: u32,
    },
    /// The line is one the kernel itself uses: the wake-up, the timer, or
    /// the console's (serial input), which may be routed and masked but
    /// not bound.
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
    /// The controller cannot deliver device lines to this core: the PC's
    /// I/O APIC names a core by an 8-bit APIC id, and this core's x2APIC
    /// id is larger. Bind to a core with a smaller id.
    Unreachable {
        /// The core asked for.
        core: usize,
    },
    /// The controller cannot make this line pending in software (the
    /// Raspberry Pi 3's); only its device can.
    CannotRaise {
        /// The line asked for.
        line: u32,
    },
    /// The line is masked (by [`mask`], or as a storm): raising it now
    /// would be lost or held back, depending on the controller.
    Masked {
        /// The line asked for.
        line: u32,
    },
    /// Every line of this controller reaches the cores through one route
    /// (the Raspberry Pi 3's), and other bound lines go to another core:
    /// bind to that core, or [`route`] one of them (which moves them all).
    SharedRoute {
        /// The line asked for.
        line: u32,
        /// The core the bound lines go to.
        core: usize,
    },
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoController => f.write_str("this board's interrupt controller has no device lines"),
            Self::NoSuchLine { line, lines } => {
                write!(f, "no device line {line} (the controller's lines end at {lines})")
            }
            Self::KernelLine { line } => {
                write!(f, "line {line} is the kernel's own (the wake-up, the timer or the console)")
            }
            Self::AlreadyBound { line } => write!(f, "line {line} already has a handler"),
            Self::NotBound { line } => write!(f, "line {line} has no handler"),
            Self::NoSuchCore { core } => write!(f, "no core {core}"),
            Self::Unreachable { core } => {
                write!(
                    f,
                    "the interrupt controller cannot deliver device lines to core {core} (its APIC id is past 254)"
                )
            }
            Self::Masked { line } => write!(f, "line {line} is masked; unmask it first"),
            Self::CannotRaise { line } => {
                write!(f, "this controller cannot raise line {line} in software; only its device can")
            }
            Self::SharedRoute { line, core } => write!(
                f,
                "line {line}: this controller routes every line to one core, and bound lines go to core {core}"
            ),
        }
    }
}

impl core::error::Error for BindError {}

/// A line's binding, as [`status`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineStatus {
    /// The line.
    pub line: u32,
    /// The core it is routed to.
    pub core: usize,
    /// Masked, by [`mask`], because it stormed, or because its handler
    /// failed.
    pub masked: bool,
    /// Masked by the kernel as an interrupt storm; [`unmask`] clears it.
    pub stormed: bool,
    /// Masked by the kernel because its handler panicked or faulted;
    /// [`unmask`] clears it.
    pub failed: bool,
    /// Bound by the kernel itself (the console's line).
    pub kernel: bool,
    /// Times its handler has run.
    pub fired: u64,
}

/// The state of device line `line`, if the controller has it.
fn device_line(line: u32) -> Result<&'static LineState, BindError> {
    let lines = arch::device_lines().ok_or(BindError::NoController)?;
    if arch::is_kernel_line(line) {
        return Err(BindError::KernelLine { line });
    }
    if !lines.contains(&line) {
        return Err(BindError::NoSuchLine { line, lines: lines.end });
    }
    LINES.get(line as usize).ok_or(BindError::NoSuchLine { line, lines: lines.end })
}

/// A bound line's state.
fn bound_line(line: u32) -> Result<&'static LineState, BindError> {
    let state = device_line(line)?;
    if !state.bound() {
        return Err(BindError::NotBound { line });
    }
    Ok(state)
}

fn check_core(core: usize) -> Result<(), BindError> {
    if core >= cores::count() {
        Err(BindError::NoSuchCore { core })
    } else if !arch::can_route_to(core) {
        Err(BindError::Unreachable { core })
    } else {
        Ok(())
    }
}

/// On a controller with one route for every line, the core the other
/// bound lines go to, if that is not `core`.
fn shared_route_elsewhere(line: u32, core: usize) -> Option<usize> {
    if !arch::shared_route() {
        return None;
    }
    LINES
        .iter()
        .enumerate()
        .filter(|&(other, state)| other != line as usize && state.bound())
        .map(|(_, state)| state.core.load(Relaxed))
        .find(|&other| other != core)
}

fn configure<R>(f: impl FnOnce() -> R) -> R {
    masking::locked(&CONFIG, |()| f())
}

/// Binds `handler` to `line`, routes the line to `core` and enables it.
///
/// # Errors
///
/// [`BindError`] says why; nothing changed then.
pub fn bind(line: u32, core: usize, handler: Handler) -> Result<(), BindError> {
    bind_as(line, core, handler, 0)
}

/// [`bind`] for the kernel's own use: the line is then a kernel line.
pub(crate) fn bind_kernel(line: u32, core: usize, handler: Handler) -> Result<(), BindError> {
    bind_as(line, core, handler, KERNEL)
}

fn bind_as(line: u32, core: usize, handler: Handler, flags: u8) -> Result<(), BindError> {
    let state = device_line(line)?;
    check_core(core)?;
    configure(|| {
        if state.bound() {
            return Err(if state.flags.load(Relaxed) & KERNEL != 0 {
                BindError::KernelLine { line }
            } else {
                BindError::AlreadyBound { line }
            });
        }
        if let Some(other) = shared_route_elsewhere(line, core) {
            return Err(BindError::SharedRoute { line, core: other });
        }
        arch::route_line(line, core);
        state.core.store(core, Relaxed);
        state.flags.store(flags, Relaxed);
        state.fired.store(0, Relaxed);
        state.streak.reset();
        state.check.store(false, Relaxed);
        state.handler.store(handler as usize, SeqCst);
        if flags & KERNEL == 0 {
            PROGRAM_LINES.fetch_add(1, Relaxed);
        }
        arch::enable_line(line);
        Ok(())
    })
}

/// Disables `line` and unbinds its handler. A firing already under way on
/// its core may still run the handler once.
///
/// # Errors
///
/// [`BindError::NotBound`], [`BindError::KernelLine`] for the console's
/// line, or as for [`bind`].
pub fn unbind(line: u32) -> Result<(), BindError> {
    let state = bound_line(line)?;
    configure(|| {
        if state.flags.load(Relaxed) & KERNEL != 0 {
            return Err(BindError::KernelLine { line });
        }
        if state.handler.load(SeqCst) == 0 {
            return Err(BindError::NotBound { line });
        }
        arch::disable_line(line);
        state.handler.store(0, SeqCst);
        PROGRAM_LINES.fetch_sub(1, Relaxed);
        Ok(())
    })
}

/// Routes bound `line` to `core`. On a controller with one route for every
/// line (the Raspberry Pi 3's) this moves every bound line there.
///
/// # Errors
///
/// [`BindError::NotBound`], [`BindError::NoSuchCore`], or as for [`bind`].
pub fn route(line: u32, core: usize) -> Result<(), BindError> {
    let state = bound_line(line)?;
    check_core(core)?;
    configure(|| {
        arch::route_line(line, core);
        state.core.store(core, Relaxed);
        if arch::shared_route() {
            LINES.iter().filter(|other| other.bound()).for_each(|other| other.core.store(core, Relaxed));
        }
    });
    Ok(())
}

/// Masks bound `line`: it stays bound but does not fire until [`unmask`].
///
/// # Errors
///
/// [`BindError::NotBound`], or as for [`bind`].
pub fn mask(line: u32) -> Result<(), BindError> {
    let state = bound_line(line)?;
    configure(|| {
        arch::disable_line(line);
        state.flags.fetch_or(MASKED, Relaxed);
    });
    Ok(())
}

/// Unmasks bound `line`, which also clears a storm the kernel found on it,
/// or its handler's failure.
///
/// # Errors
///
/// [`BindError::NotBound`], or as for [`bind`].
pub fn unmask(line: u32) -> Result<(), BindError> {
    let state = bound_line(line)?;
    configure(|| {
        state.flags.fetch_and(!HELD_OFF, Relaxed);
        state.streak.reset();
        arch::enable_line(line);
    });
    Ok(())
}

/// Makes bound `line` pending, as if its device had raised it: for tests,
/// and for software that wants the line's handler run on its core.
///
/// # Errors
///
/// [`BindError::NotBound`], [`BindError::Masked`],
/// [`BindError::CannotRaise`] where the controller cannot (the Raspberry
/// Pi 3), or as for [`bind`].
pub fn raise(line: u32) -> Result<(), BindError> {
    let state = bound_line(line)?;
    if state.flags.load(Relaxed) & HELD_OFF != 0 {
        return Err(BindError::Masked { line });
    }
    arch::pend_line(line, state.core.load(Relaxed))
}

/// How `line` is bound.
///
/// # Errors
///
/// [`BindError::NotBound`], or as for [`bind`].
pub fn status(line: u32) -> Result<LineStatus, BindError> {
    let state = match device_line(line) {
        Err(BindError::KernelLine { .. }) => return Err(BindError::KernelLine { line }),
        other => other?,
    };
    if !state.bound() {
        return Err(BindError::NotBound { line });
    }
    Ok(status_of(line, state))
}

fn status_of(line: u32, state: &LineState) -> LineStatus {
    let flags = state.flags.load(Relaxed);
    LineStatus {
        line,
        core: state.core.load(Relaxed),
        masked: flags & HELD_OFF != 0,
        stormed: flags & STORMED != 0,
        failed: flags & FAILED != 0,
        kernel: flags & KERNEL != 0,
        fired: state.fired.load(Relaxed),
    }
}

/// The device lines the controller has (`None`: no controller with any).
pub fn lines() -> Option<core::ops::Range<u32>> {
    arch::device_lines()
}

/// Every bound line, lowest first.
pub fn bound() -> impl Iterator<Item = LineStatus> {
    let lines = arch::device_lines().unwrap_or(0..0);
    LINES
        .iter()
        .enumerate()
        .filter(move |&(line, state)| lines.contains(&(line as u32)) && state.bound())
        .map(|(line, state)| status_of(line as u32, state))
}

/// The line of the device the board calls `device` ("console" is the
/// console UART's), if the board names one and the controller has it.
pub fn line_of(device: &str) -> Option<u32> {
    let board = board();
    let line = if device == "console" {
        board.console_line?
    } else {
        board.device_lines.iter().find(|named| named.device == device)?.line
    };
    resolve(line)
}

/// The controller's number for `line`.
pub(crate) fn resolve(line: Line) -> Option<u32> {
    match line {
        Line::Number(number) => Some(number),
        #[cfg(target_arch = "x86_64")]
        Line::Isa(irq) => arch::isa_line(irq),
    }
}

/// Starts or stops timing how long each core keeps interrupts masked, and
/// how long each handler runs; [`cores::report`]
/// shows the longest of each. Starting clears what was recorded. Off by
/// default: it costs two cycle-counter reads per masked section.
pub fn measure_masking(on: bool) {
    masking::measure(on);
}

/// Runs the handler bound to `line`, if any; returns whether the line is
/// bound. Called by the controller code with the line acknowledged. A
/// firing of a masked line (one already on its way when the line was
/// masked, or on the PC a raise, which bypasses the I/O APIC) is dropped.
pub(crate) fn dispatch(line: u32) -> bool {
    let Some(state) = LINES.get(line as usize) else { return false };
    let handler = state.handler.load(SeqCst);
    if handler == 0 {
        return false;
    }
    if state.flags.load(Relaxed) & HELD_OFF != 0 {
        return true;
    }
    // SAFETY: only `bind_as` stores a non-zero value, and it stores a
    // `Handler`.
    let handler: Handler = unsafe { core::mem::transmute::<usize, Handler>(handler) };
    let fired = state.fired.fetch_add(1, Relaxed);
    let me = cores::current().map(|core| core.index);
    let slot = me.and_then(|core| HANDLING.get(core));
    let outer = slot.map(|slot| slot.swap(line, Relaxed));
    #[cfg(feature = "trace")]
    roving::platform::hooks::interrupt_begins(line);
    // Whether the interrupted code was writing a line: a handler that
    // fails holding the console must let it go, but not the line's owner's.
    let console_was_held = me.is_some_and(crate::console::held_by);
    // A handler that panics (or faults) ends here, with `None`, and the
    // code it interrupted goes on (`roving::platform::hooks`).
    let handled = match me {
        Some(core) => roving::platform::hooks::catching_handler(core, || handler(line)),
        None => Some(handler(line)),
    };
    #[cfg(feature = "trace")]
    roving::platform::hooks::interrupt_ends(line);
    if let (Some(slot), Some(outer)) = (slot, outer) {
        slot.store(outer, Relaxed);
    }
    match handled {
        Some(handled) if storm::continues(&state.streak, handled) => stormed(line, state, Storm::NothingToDo),
        Some(Handled::Yes) if storm::check_due(fired) => state.check.store(true, Relaxed),
        Some(_) => {}
        None => {
            if let Some(core) = me.filter(|_| !console_was_held) {
                // It may have failed in the middle of a line of its own.
                crate::console::let_go_for(core);
            }
            failed(line, state);
        }
    }
    true
}

/// Called by the controller code once it has ended the interrupt of
/// `line` that [`dispatch`] ran: if the dispatch asked for it, checks
/// whether the line is pending again already (`storm.rs`, rule 2).
#[inline]
pub(crate) fn ended(line: u32) {
    let Some(state) = LINES.get(line as usize) else { return };
    if !state.check.load(Relaxed) {
        return;
    }
    state.check.store(false, Relaxed);
    if storm::checked(&state.streak, arch::line_pending(line)) {
        stormed(line, state, Storm::NeverQuiet);
    }
}

/// Which of `storm.rs`'s rules a storm broke.
enum Storm {
    NothingToDo,
    NeverQuiet,
}

/// Masks a line whose handler failed (the panic handler reported why):
/// its device was left as the handler found it, still asserting the line
/// perhaps, and the handler would fail again.
fn failed(line: u32, state: &LineState) {
    configure(|| {
        arch::disable_line(line);
        state.flags.fetch_or(FAILED, Relaxed);
    });
    log::error!(
        target: "roving_kernel",
        "interrupt line {line} masked: its handler failed (interrupts::unmask({line}) enables it again)"
    );
}

/// Masks a storming line and says so.
fn stormed(line: u32, state: &LineState, rule: Storm) {
    configure(|| {
        arch::disable_line(line);
        state.flags.fetch_or(STORMED, Relaxed);
    });
    let core = state.core.load(Relaxed);
    match rule {
        Storm::NothingToDo => log::error!(
            target: "roving_kernel",
            "interrupt storm on line {line} (core {core}): it fired {} times in a row with nothing for its handler to do; masked (interrupts::unmask({line}) enables it again)",
            storm::FIRINGS
        ),
        Storm::NeverQuiet => log::error!(
            target: "roving_kernel",
            "interrupt storm on line {line} (core {core}): its handler said it had work, but the line was pending again as soon as it returned, at {} checks in a row ({} firings); masked (interrupts::unmask({line}) enables it again)",
            storm::PENDING_CHECKS,
            u64::from(storm::PENDING_CHECKS) * storm::CHECK_EVERY
        ),
    }
}
