//! The console: [`println!`](crate::println) from any core writes whole
//! lines that never interleave with another core's.

use crate::board::{ConsoleDevice, board};
use crate::drivers::Uart;
use crate::{arch, cores};
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use spin::Mutex;

static CONSOLE: Mutex<Option<Uart>> = Mutex::new(None);
/// The core inside the lock, so a fault while printing can still report.
static HOLDER: AtomicUsize = AtomicUsize::new(NOBODY);
const NOBODY: usize = usize::MAX;
/// How long the panic path waits for a console lock held by another core.
const EMERGENCY_SPINS: u32 = 1 << 22;

fn open(device: ConsoleDevice) -> Uart {
    // SAFETY: the board names this as its console; it is mapped as device
    // memory (or the MMU is off and every access is to device memory), or
    // is I/O ports.
    unsafe { Uart::open(device) }
}

/// Opens the board's console. Boot core, once the MMU is on.
pub(crate) fn init() {
    *CONSOLE.lock() = Some(open(board().console));
}

fn me() -> usize {
    cores::current().map_or(NOBODY - 1, |core| core.index)
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments<'_>) {
    let me = me();
    crate::masking::without_interrupts(|| {
        let mut console = CONSOLE.lock();
        HOLDER.store(me, Relaxed);
        if let Some(uart) = console.as_mut() {
            let _ = uart.write_fmt(args);
        }
        HOLDER.store(NOBODY, Relaxed);
    });
}

/// Writes a report that must get out: from a panic or a fault, perhaps
/// with the MMU off, perhaps while this core or a dead one holds the lock.
pub(crate) fn emergency(args: fmt::Arguments<'_>) {
    if !arch::cpu::mmu_enabled() {
        // No atomics without the MMU; only the booting core runs here.
        let _ = open(board().console).write_fmt(args);
        return;
    }
    // Masked: a handler on this core that printed would spin on the lock
    // this report holds.
    let saved = arch::cpu::disable_interrupts();
    write_report(args);
    arch::cpu::restore_interrupts(saved);
}

fn write_report(args: fmt::Arguments<'_>) {
    let me = me();
    let mut spins = 0;
    loop {
        if let Some(mut console) = CONSOLE.try_lock() {
            let _ = match console.as_mut() {
                Some(uart) => uart.write_fmt(args),
                None => open(board().console).write_fmt(args),
            };
            return;
        }
        if HOLDER.load(Relaxed) == me || spins == EMERGENCY_SPINS {
            break;
        }
        spins += 1;
        core::hint::spin_loop();
    }
    // The holder is this core (it faulted mid-line) or will not come back:
    // write beside the lock rather than lose the report.
    let _ = open(board().console).write_fmt(args);
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
        $crate::console::_print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::console::_print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
