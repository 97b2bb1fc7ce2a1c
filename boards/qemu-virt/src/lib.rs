//! QEMU's aarch64 `virt` machine (`qemu-system-aarch64 -M virt`).
//!
//! The device tree QEMU builds describes cores, RAM, the GIC and PSCI; this
//! crate supplies only what is needed before reading it. Linking it (any
//! `use roving_board_qemu_virt as _;`) makes it the program's board.
#![no_std]
// An AArch64 board: on another architecture the crate is empty.
#![cfg(target_arch = "aarch64")]

use roving_kernel::board::{Board, ConsoleDevice, CoreStart, DeviceLine, InterruptController, Line, Region};

/// Where QEMU puts RAM, and the device tree at its start.
pub const RAM_BASE: usize = 0x4000_0000;
/// The PL011 UART QEMU connects to `-serial`.
pub const UART_BASE: usize = 0x0900_0000;
/// Its reference clock, as QEMU's device tree gives it (`apb-pclk`).
pub const UART_CLOCK_HZ: u32 = 24_000_000;

roving_kernel::set_board!(Board {
    name: "QEMU virt",
    // Programming it turns its FIFOs on, so input arrives in bursts.
    console: ConsoleDevice::Pl011 { base: UART_BASE, clock_hz: Some(UART_CLOCK_HZ) },
    device_tree: Some(RAM_BASE),
    // Used only without a device tree: QEMU's default 128 MiB.
    fallback_ram: Region { base: RAM_BASE, size: 128 << 20 },
    // Cores, PSCI and the GIC always come from QEMU's device tree.
    fallback_cores: &[],
    core_start: CoreStart::Psci,
    interrupts: InterruptController::FromDeviceTree,
    // QEMU's fixed wiring: the PL011 on shared peripheral interrupt 1 (id
    // 33), the PL031 real-time clock on 2, the PL061 GPIO on 7.
    console_line: Some(Line::Number(32 + 1)),
    device_lines: &[
        DeviceLine { device: "rtc", line: Line::Number(32 + 2) },
        DeviceLine { device: "gpio", line: Line::Number(32 + 7) },
    ],
    // Flash, GIC, UART, RTC, GPIO, PCIe windows: all of the first gigabyte.
    device_memory: &[Region { base: 0, size: RAM_BASE }],
});
roving_kernel::qemu_machine!("virt");
