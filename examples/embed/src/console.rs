//! The PL011 UART at QEMU virt's address, and the way out of QEMU.

use arm_pl011_uart::{PL011Registers, Uart, UniqueMmioPointer};
use core::fmt::{self, Write};
use core::ptr::NonNull;

const PL011: usize = 0x0900_0000;

static CONSOLE: spin::Mutex<Option<Uart<'static>>> = spin::Mutex::new(None);

fn uart() -> Uart<'static> {
    let registers = NonNull::new(PL011 as *mut PL011Registers).expect("not null");
    // SAFETY: QEMU virt has a PL011 there, mapped as device memory
    // (mmu.rs). Writers only write its data register; the emergency one
    // may write beside the console's.
    Uart::new(unsafe { UniqueMmioPointer::new(registers) })
}

/// Prints to the console, a whole message at a time.
pub fn print(args: fmt::Arguments<'_>) {
    let mut console = CONSOLE.lock();
    let _ = console.get_or_insert_with(uart).write_fmt(args);
}

/// Prints without the console's lock, for a core that faulted or
/// panicked, which may hold it.
pub fn emergency(args: fmt::Arguments<'_>) {
    let _ = uart().write_fmt(args);
}

/// Ends the run with `status` (QEMU's semihosting; `tools/qemu-run`
/// enables it).
pub fn exit(status: i32) -> ! {
    semihosting::process::exit(status)
}

/// `println!` for the console.
#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}
