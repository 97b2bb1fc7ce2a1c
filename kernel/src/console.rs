//! The console: [`println!`](crate::println) from any core writes whole
//! lines that never interleave with another core's.
//!
//! The lock is one word, `OWNER`: the core writing a line. It is taken
//! with interrupts open, because a line on a real UART takes milliseconds
//! (100 characters at 115,200 baud take 9 ms), far too long to hold a
//! device's handler off. A handler may print too. On another core it
//! waits for the line under way to end, like anyone. On the core that owns
//! the word it would wait for itself, so it writes beside the lock instead:
//! its text lands in the middle of the interrupted line.
//!
//! Writers only send (wait for room, write the data register), so any
//! number of them can write at once without harm beyond mixed bytes.

use crate::board::{ConsoleDevice, board};
use crate::drivers::Uart;
use crate::{arch, cores};
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// The core writing a line, or [`NOBODY`].
static OWNER: AtomicUsize = AtomicUsize::new(NOBODY);
const NOBODY: usize = usize::MAX;
/// A core with no index yet (early boot).
const UNKNOWN_CORE: usize = NOBODY - 1;
/// The console was opened (programmed): writers may be made.
static OPENED: AtomicBool = AtomicBool::new(false);
/// How long a report that must get out waits for a line (or a defmt
/// frame) under way on another core before it writes anyway, in
/// milliseconds: ten times what a 100-character line takes at 115,200
/// baud, and short enough that a core stuck mid-line does not hold a
/// panic report back.
const EMERGENCY_WAIT_MS: u64 = 100;

/// The bounded wait of a report that must get out.
struct Patience {
    /// When to give up, on the machine's counter (0: no counter known,
    /// so `spins` bounds it).
    deadline: u64,
    spins: u32,
}

impl Patience {
    fn new() -> Self {
        let hz = roving::platform::tick_hz();
        let deadline = if hz == 0 { 0 } else { roving::platform::ticks() + hz * EMERGENCY_WAIT_MS / 1000 };
        Self { deadline, spins: 0 }
    }

    /// Whether the wait is over; called once per turn of a spin.
    fn exhausted(&mut self) -> bool {
        self.spins = self.spins.saturating_add(1);
        if self.deadline == 0 { self.spins >= 1 << 22 } else { roving::platform::ticks() >= self.deadline }
    }
}

fn open(device: ConsoleDevice) -> Uart {
    // SAFETY: the board names this as its console; it is mapped as device
    // memory (or the MMU is off and every access is to device memory), or
    // is I/O ports.
    unsafe { Uart::open(device) }
}

fn writer() -> Uart {
    // SAFETY: the board's console, opened by `init` (callers check
    // `OPENED`); writers only send.
    unsafe { Uart::writer(device()) }
}

/// Where the firmware's device tree put the console's UART, if it moved
/// it from the board's address; 0 if not.
static MOVED_TO: AtomicUsize = AtomicUsize::new(0);

/// The console's device: the board's, at the address the firmware's
/// device tree gives it, if it gives one.
pub(crate) fn device() -> ConsoleDevice {
    match MOVED_TO.load(Relaxed) {
        0 => board().console,
        base => board().console.at(base),
    }
}

/// Opens the board's console, where the boot facts put it. Boot core, once
/// the MMU is on (the page tables map it).
pub(crate) fn init() {
    if let Some(base) = arch::console_base(&crate::boot_info::boot_info().arch) {
        MOVED_TO.store(base, Relaxed);
    }
    let _programmed = open(device());
    OPENED.store(true, Release);
}

fn me() -> usize {
    cores::current().map_or(UNKNOWN_CORE, |core| core.index)
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments<'_>) {
    #[cfg(feature = "defmt")]
    defmt::println!("{}", defmt::Display2Format(&args));
    #[cfg(not(feature = "defmt"))]
    owning(|uart| {
        let _ = uart.write_fmt(args);
    });
}

#[doc(hidden)]
pub fn _println(args: fmt::Arguments<'_>) {
    #[cfg(feature = "defmt")]
    _print(args);
    #[cfg(not(feature = "defmt"))]
    _print(format_args!("{args}\n"));
}

/// How many times this core holds the console through [`hold`] (frames
/// may nest only when a panic strikes mid-frame).
#[cfg(feature = "defmt")]
static HELD: [core::sync::atomic::AtomicU32; crate::MAX_CORES + 1] =
    [const { core::sync::atomic::AtomicU32::new(0) }; crate::MAX_CORES + 1];
/// The interrupt state the outermost [`hold`] saved, per core.
#[cfg(feature = "defmt")]
static SAVED: [AtomicUsize; crate::MAX_CORES + 1] = [const { AtomicUsize::new(0) }; crate::MAX_CORES + 1];
/// Set while the core writes an [`emergency`] report: its [`hold`] waits
/// for another core's frame only so long.
#[cfg(feature = "defmt")]
static URGENT: [AtomicBool; crate::MAX_CORES + 1] = [const { AtomicBool::new(false) }; crate::MAX_CORES + 1];

#[cfg(feature = "defmt")]
fn slot(me: usize) -> usize {
    me.min(crate::MAX_CORES)
}

/// Takes the console for a run of raw writes ([`write_held`]) that must
/// not be split (a defmt frame), masking interrupts on this core until
/// [`let_go`]. Returns whether a frame was left unfinished on the line:
/// this core held the console already (a panic struck mid-frame), or it
/// took the console from a holder that never let go.
///
/// An [`emergency`] report waits for another core's frame only
/// `EMERGENCY_WAIT_MS`, as a text-mode report does for a line: a core
/// that stopped mid-frame (stuck with interrupts masked, or dead) must
/// not keep a panic report in. It then takes the console over; the
/// caller ends the broken frame first, so the decoder finds the report.
#[cfg(feature = "defmt")]
pub(crate) fn hold() -> bool {
    let saved = arch::cpu::disable_interrupts();
    let me = me();
    if HELD[slot(me)].fetch_add(1, Relaxed) > 0 {
        return true;
    }
    let mut patience = URGENT[slot(me)].load(Relaxed).then(Patience::new);
    let mut taken_over = false;
    while OWNER.compare_exchange_weak(NOBODY, me, Acquire, Relaxed).is_err() {
        if patience.as_mut().is_some_and(Patience::exhausted) {
            OWNER.store(me, Relaxed);
            taken_over = true;
            break;
        }
        core::hint::spin_loop();
    }
    SAVED[slot(me)].store(saved, Relaxed);
    taken_over
}

/// Runs `write` (the frames of a report that must get out) with this
/// core's [`hold`] waiting for another core's frame only so long.
#[cfg(feature = "defmt")]
pub(crate) fn urgently(write: impl FnOnce()) {
    let urgent = &URGENT[slot(me())];
    let was = urgent.swap(true, Relaxed);
    write();
    urgent.store(was, Relaxed);
}

/// Ends a [`hold`].
#[cfg(feature = "defmt")]
pub(crate) fn let_go() {
    let me = me();
    if HELD[slot(me)].fetch_sub(1, Relaxed) == 1 {
        OWNER.store(NOBODY, Release);
        arch::cpu::restore_interrupts(SAVED[slot(me)].load(Relaxed));
    }
}

/// Writes `bytes` while holding the console ([`hold`]).
#[cfg(feature = "defmt")]
pub(crate) fn write_held(bytes: &[u8]) {
    if OPENED.load(Acquire) {
        writer().write_bytes(bytes);
    }
}

/// Writes `bytes` to the console as they are (no line-end translation),
/// whole: another core's writes come before or after, never among them.
pub fn write_bytes(bytes: &[u8]) {
    owning(|uart| uart.write_bytes(bytes));
}

/// Runs `write` as the console's owner (module docs); nothing if the
/// console is not open yet.
fn owning(write: impl FnOnce(&mut Uart)) {
    if !OPENED.load(Acquire) {
        return;
    }
    let me = me();
    if OWNER.load(Relaxed) == me {
        // A handler interrupted this core's own line (module docs).
        return write(&mut writer());
    }
    while OWNER.compare_exchange_weak(NOBODY, me, Acquire, Relaxed).is_err() {
        core::hint::spin_loop();
    }
    write(&mut writer());
    OWNER.store(NOBODY, Release);
}

/// Whether core `core` holds the console (is writing a line).
pub(crate) fn held_by(core: usize) -> bool {
    OWNER.load(Relaxed) == core
}

/// Lets go of the console if core `core` holds it: for a device handler
/// that failed in the middle of a line, whose frames will never end it
/// (`crate::interrupts`). In defmt mode a frame's hold also counts its
/// nesting, and a failed handler's frame is left to the bounded wait of
/// the next report.
pub(crate) fn let_go_for(core: usize) {
    #[cfg(not(feature = "defmt"))]
    let _ = OWNER.compare_exchange(core, NOBODY, Release, Relaxed);
    #[cfg(feature = "defmt")]
    let _ = core;
}

/// Writes a report that must get out: from a panic or a fault, perhaps
/// with the MMU off, perhaps while this core or a dead one holds the lock.
/// Interrupts stay masked meanwhile, so no handler on this core adds to it.
pub(crate) fn emergency(args: fmt::Arguments<'_>) {
    if !arch::cpu::mmu_enabled() || !OPENED.load(Acquire) {
        // No atomics without the MMU; only the booting core runs here.
        let _ = open(board().console).write_fmt(args);
        return;
    }
    #[cfg(feature = "defmt")]
    urgently(|| defmt::error!("{}", defmt::Display2Format(&args)));
    #[cfg(not(feature = "defmt"))]
    {
        let saved = arch::cpu::disable_interrupts();
        write_report(args);
        arch::cpu::restore_interrupts(saved);
    }
}

#[cfg(not(feature = "defmt"))]
fn write_report(args: fmt::Arguments<'_>) {
    let me = me();
    let mut patience = Patience::new();
    while OWNER.compare_exchange_weak(NOBODY, me, Acquire, Relaxed).is_err() {
        if OWNER.load(Relaxed) == me || patience.exhausted() {
            // This core holds the lock (it faulted mid-line), or its holder
            // will not come back: write beside it rather than lose the
            // report.
            let _ = writer().write_fmt(args);
            return;
        }
        core::hint::spin_loop();
    }
    let _ = writer().write_fmt(args);
    OWNER.store(NOBODY, Release);
}

/// Prints to the console, from any core.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::console::_print(format_args!($($arg)*))
    };
}

/// Prints a line to the console, from any core. Lines from different cores
/// never interleave.
#[macro_export]
macro_rules! println {
    () => {
        $crate::console::_println(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::console::_println(format_args!($($arg)*))
    };
}
