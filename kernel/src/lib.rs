//! roving-kernel: bare-metal support for roving.
//!
//! Boots every core of the machine, turns each core's MMU on, installs
//! exception vectors that report faults, brings up the interrupt controller
//! and timer, and implements roving's [`Platform`](roving::platform::Platform)
//! seam, so the portable scheduler runs here unchanged. It never makes a
//! scheduling decision.
//!
//! A program is a `#![no_std] #![no_main]` binary that links one board
//! crate and names its `main` with [`entry!`]:
//!
//! ```ignore
//! #![no_std]
//! #![no_main]
//! use roving_board_qemu_virt as _;
//!
//! fn main() {
//!     roving_kernel::println!("hello from core {:?}", roving::platform::current_core());
//! }
//! roving_kernel::entry!(main);
//! ```
//!
//! Forgetting the board (or never naming its crate, which leaves it out of
//! the link) is the link error `undefined symbol: _ROVING_BOARD`.
//!
//! `main` runs on the boot core (core 0); the other cores are off until
//! [`roving::platform::start_core`] starts them. When `main` returns the run
//! ends with status 0; a panic or fault on any core ends it with
//! [`exit_code::PANIC`] or [`exit_code::FAULT`] after printing a report.
#![no_std]

mod backtrace;
pub mod board;
mod boot;
pub mod boot_info;
pub mod console;
pub mod cores;
mod critical;
#[cfg(feature = "defmt")]
mod defmt_frames;
mod drivers;
mod fault;
pub mod heap;
mod idle;
pub mod interrupts;
mod logger;
mod masking;
pub mod mmio;
mod panic;
mod platform;
pub mod serial;

#[cfg(target_arch = "aarch64")]
#[path = "arch/aarch64/mod.rs"]
pub mod arch;
#[cfg(target_arch = "x86_64")]
#[path = "arch/x86_64/mod.rs"]
pub mod arch;

pub use arch::exit;
pub use boot_info::{BootInfo, MAX_CORES, boot_info};

/// The calling core's cycle counter: processor cycles on hardware (the
/// AArch64 PMU's PMCCNTR_EL0, the x86 TSC); under QEMU, virtual
/// nanoseconds, which with `-icount shift=0` is one per instruction. For
/// intervals on one core; use `roving::platform::ticks` across cores.
pub fn cycles() -> u64 {
    arch::timer::cycles()
}

/// Exit statuses the kernel itself uses.
pub mod exit_code {
    /// A panic on any core.
    pub const PANIC: i32 = 101;
    /// An unhandled exception (fault) on any core, or a failed boot.
    pub const FAULT: i32 = 102;
}

/// Names the program's `main`, run on the boot core once every subsystem is
/// up. The run ends with status 0 when it returns.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(export_name = "_roving_kernel_main")]
        fn __roving_kernel_main() {
            let main: fn() = $main;
            main()
        }
    };
}
