//! The Raspberry Pi 3 Model B (BCM2837, four Cortex-A53 cores), and QEMU's
//! `raspi3b` machine.
//!
//! The firmware loads `kernel8.img` at 0x80000 and enters it at EL2 on core
//! 0, with the device tree's address in x0 (real firmware) or nothing
//! (QEMU); the other cores wait in its spin table. The Pi 3 has no GIC: the
//! wake-up and the timer go through the BCM2836 per-core interrupt block,
//! and the devices' lines through the BCM2835 peripheral controller, both
//! driven by [`Interrupts`]. Linking this crate (any
//! `use roving_board_raspi3b as _;`) makes it the program's board.
#![no_std]
// An AArch64 board: on another architecture the crate is empty.
#![cfg(target_arch = "aarch64")]

mod interrupts;
mod local_interrupts;
mod peripheral_interrupts;

pub use interrupts::Interrupts;
use roving_kernel::board::{Board, ConsoleDevice, CoreStart, DeviceLine, InterruptController, Line, Region};

/// The peripherals (the VideoCore's 0x7E00_0000 bus addresses, as the ARM
/// sees them).
pub const PERIPHERALS: Region = Region { base: 0x3F00_0000, size: 0x0100_0000 };
/// The PL011 UART (`serial0` once Bluetooth is moved off it).
pub const UART_BASE: usize = 0x3F20_1000;
/// The UART's reference clock: `init_uart_clock=48000000` in `config.txt`
/// pins it, and QEMU ignores the divisor.
pub const UART_CLOCK_HZ: u32 = 48_000_000;
/// The BCM2836 per-core block: timers' routing, mailboxes, IRQ sources.
pub const LOCAL_INTERRUPTS: Region = Region { base: 0x4000_0000, size: 0x100 };
/// The BCM2835 peripheral interrupt controller's registers.
pub const PERIPHERAL_INTERRUPTS: usize = 0x3F00_B200;
/// The system timer: a 1 MHz counter and four compares (1 and 3 are the
/// ARM's), each raising its own peripheral line when the counter reaches it.
pub const SYSTEM_TIMER: usize = 0x3F00_3000;
/// The firmware's spin table: core n waits on `SPIN_TABLE + 8 * n`.
pub const SPIN_TABLE: usize = 0xd8;
/// RAM to assume without a device tree: below the VideoCore's share with
/// the default `gpu_mem=64`.
pub const RAM: Region = Region { base: 0, size: 0x3C00_0000 };

static INTERRUPTS: Interrupts = Interrupts::new(LOCAL_INTERRUPTS.base, PERIPHERAL_INTERRUPTS);

roving_kernel::set_board!(Board {
    name: "Raspberry Pi 3B",
    console: ConsoleDevice::Pl011 { base: UART_BASE, clock_hz: Some(UART_CLOCK_HZ) },
    device_tree: None,
    fallback_ram: RAM,
    fallback_cores: &[0, 1, 2, 3],
    core_start: CoreStart::SpinTable { release: SPIN_TABLE },
    interrupts: InterruptController::Board(&INTERRUPTS),
    // The PL011 is the VideoCore's line 57.
    console_line: Some(Line::Number(57)),
    device_lines: &[
        DeviceLine { device: "system timer 1", line: Line::Number(1) },
        DeviceLine { device: "system timer 3", line: Line::Number(3) },
    ],
    // The peripherals and the local block, mapped in 2 MiB blocks.
    device_memory: &[PERIPHERALS, LOCAL_INTERRUPTS],
});
roving_kernel::qemu_machine!("raspi3b");
