//! QEMU's aarch64 `virt` machine (`qemu-system-aarch64 -M virt`).
//!
//! The device tree QEMU builds describes cores, RAM, the GIC and PSCI; this
//! crate supplies only what is needed before reading it. Linking it (any
//! `use roving_board_qemu_virt as _;`) makes it the program's board.
#![no_std]

use roving_kernel::board::{Board, ConsoleDevice, CoreStart, InterruptController, Region};

/// Where QEMU puts RAM, and the device tree at its start.
pub const RAM_BASE: usize = 0x4000_0000;
/// The PL011 UART QEMU connects to `-serial`.
pub const UART_BASE: usize = 0x0900_0000;

roving_kernel::set_board!(Board {
    name: "QEMU virt",
    console: ConsoleDevice::Pl011 { base: UART_BASE, clock_hz: None },
    device_tree: Some(RAM_BASE),
    // Used only without a device tree: QEMU's default 128 MiB.
    fallback_ram: Region { base: RAM_BASE, size: 128 << 20 },
    // Cores, PSCI and the GIC always come from QEMU's device tree.
    fallback_cores: &[],
    core_start: CoreStart::Psci,
    interrupts: InterruptController::FromDeviceTree,
    // Flash, GIC, UART, RTC, GPIO, PCIe windows: all of the first gigabyte.
    device_memory: &[Region { base: 0, size: RAM_BASE }],
});
roving_kernel::qemu_machine!("virt");
