//! The board's UART, clock and name: the values the board crates
//! (`boards/raspi3b`, `boards/raspi4b`) give the kernel. The loader links
//! no part of the kernel, so it states them again here.

#[cfg(all(feature = "raspi3b", feature = "raspi4b"))]
compile_error!("the loader is built for one board: feature raspi3b or raspi4b, not both");

/// The board's name, as `boards/boards.list` spells it.
#[cfg(feature = "raspi3b")]
pub const NAME: &str = "raspi3b";
/// The PL011 UART (the console, with Bluetooth moved off it).
#[cfg(feature = "raspi3b")]
pub const UART_BASE: usize = 0x3F20_1000;
/// The generic timer's frequency if the firmware left CNTFRQ_EL0 at 0:
/// the Pi 3's 19.2 MHz crystal.
#[cfg(feature = "raspi3b")]
pub const FALLBACK_TIMER_HZ: u64 = 19_200_000;

/// The board's name, as `boards/boards.list` spells it.
#[cfg(feature = "raspi4b")]
pub const NAME: &str = "raspi4b";
/// The PL011 UART (the console, with Bluetooth moved off it).
#[cfg(feature = "raspi4b")]
pub const UART_BASE: usize = 0xFE20_1000;
/// The generic timer's frequency if the firmware left CNTFRQ_EL0 at 0:
/// the Pi 4's 54 MHz crystal.
#[cfg(feature = "raspi4b")]
pub const FALLBACK_TIMER_HZ: u64 = 54_000_000;

/// The UART's reference clock, which `config.txt`'s `init_uart_clock`
/// fixes on both Pis.
pub const UART_CLOCK_HZ: u32 = 48_000_000;

/// Where the firmware loads `kernel8.img` and enters it, and so where the
/// loader puts the kernel it receives.
pub const KERNEL_ADDRESS: usize = 0x80000;

/// Which QEMU machine runs the loader (tools/qemu-run reads it from the
/// image, as it does a kernel's).
#[cfg(feature = "raspi3b")]
#[used]
#[unsafe(link_section = ".roving.qemu_machine")]
static QEMU_MACHINE: [u8; 28] = *b"roving-qemu-machine=raspi3b;";
#[cfg(feature = "raspi4b")]
#[used]
#[unsafe(link_section = ".roving.qemu_machine")]
static QEMU_MACHINE: [u8; 28] = *b"roving-qemu-machine=raspi4b;";
