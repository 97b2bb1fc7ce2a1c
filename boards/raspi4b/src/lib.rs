//! The Raspberry Pi 4 Model B (BCM2711, four Cortex-A72 cores), and QEMU's
//! `raspi4b` machine.
//!
//! Boots like the Pi 3: `kernel8.img` at 0x80000, entered at EL2 on core
//! 0, the other cores in the firmware's spin table. Interrupts go through
//! the GIC-400, which the kernel drives itself; this crate is constants
//! only. It assumes the firmware's default low-peripheral mode (no
//! `arm_peri_high=1`). Linking it (any `use roving_board_raspi4b as _;`)
//! makes it the program's board.
#![no_std]
// An AArch64 board: on another architecture the crate is empty.
#![cfg(target_arch = "aarch64")]

use roving_kernel::board::{Board, ConsoleDevice, CoreStart, DeviceLine, InterruptController, Line, Region};

/// The peripherals, the GIC-400 and the ARM local block: the top 64 MiB of
/// the 32-bit address space.
pub const DEVICES: Region = Region { base: 0xFC00_0000, size: 0x0400_0000 };
/// The PL011 UART (`serial0` once Bluetooth is moved off it).
pub const UART_BASE: usize = 0xFE20_1000;
/// The UART's reference clock: `init_uart_clock=48000000` in `config.txt`
/// pins it, and QEMU ignores the divisor.
pub const UART_CLOCK_HZ: u32 = 48_000_000;
/// The system timer: a 1 MHz counter and four compares (1 and 3 are the
/// ARM's), each raising its own line when the counter reaches it.
pub const SYSTEM_TIMER: usize = 0xFE00_3000;
/// The GIC-400's distributor.
pub const GIC_DISTRIBUTOR: usize = 0xFF84_1000;
/// The GIC-400's CPU interface.
pub const GIC_CPU_INTERFACE: usize = 0xFF84_2000;
/// The firmware's spin table: core n waits on `SPIN_TABLE + 8 * n`.
pub const SPIN_TABLE: usize = 0xd8;
/// RAM to assume without a device tree: what every Pi 4 has below the
/// VideoCore's share of the first gigabyte.
pub const RAM: Region = Region { base: 0, size: 0x3C00_0000 };

roving_kernel::set_board!(Board {
    name: "Raspberry Pi 4B",
    console: ConsoleDevice::Pl011 { base: UART_BASE, clock_hz: Some(UART_CLOCK_HZ) },
    device_tree: None,
    fallback_ram: RAM,
    fallback_cores: &[0, 1, 2, 3],
    core_start: CoreStart::SpinTable { release: SPIN_TABLE },
    interrupts: InterruptController::GicV2 { distributor: GIC_DISTRIBUTOR, cpu_interface: GIC_CPU_INTERFACE },
    // The VideoCore's lines start at interrupt id 96; the PL011 is its 57.
    console_line: Some(Line::Number(96 + 57)),
    device_lines: &[
        DeviceLine { device: "system timer 1", line: Line::Number(96 + 1) },
        DeviceLine { device: "system timer 3", line: Line::Number(96 + 3) },
    ],
    device_memory: &[DEVICES],
});
roving_kernel::qemu_machine!("raspi4b");
