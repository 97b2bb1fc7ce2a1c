//! x86_64 PCs, and QEMU's `q35` machine (`qemu-system-x86_64 -M q35`).
//!
//! The kernel boots through PVH and reads the rest from the firmware: RAM
//! and the command line from the PVH start info, the cores and the local
//! APIC from the ACPI MADT. This crate is constants only. Linking it (any
//! `use roving_board_x86_pc as _;`) makes it the program's board.
#![no_std]
// An x86_64 board: on another architecture the crate is empty.
#![cfg(target_arch = "x86_64")]

use roving_kernel::board::{Board, ConsoleDevice, CoreStart, DeviceLine, InterruptController, Line, Region};

/// COM1.
pub const COM1: u16 = 0x3F8;
/// The I/O APIC and the local APICs: mapped uncached.
pub const APICS: Region = Region { base: 0xFEC0_0000, size: 0x0040_0000 };
/// RAM to assume without a PVH memory map: 1 MiB up to 64 MiB.
pub const RAM: Region = Region { base: 0x10_0000, size: 63 << 20 };

roving_kernel::set_board!(Board {
    name: "x86_64 PC",
    console: ConsoleDevice::Uart16550 { port: COM1 },
    device_tree: None,
    fallback_ram: RAM,
    fallback_cores: &[],
    core_start: CoreStart::StartupIpi,
    interrupts: InterruptController::LocalApic,
    // The PC's ISA IRQs; the MADT says which I/O APIC line each uses.
    console_line: Some(Line::Isa(4)),
    device_lines: &[
        DeviceLine { device: "pit", line: Line::Isa(0) },
        DeviceLine { device: "com2", line: Line::Isa(3) },
        DeviceLine { device: "rtc", line: Line::Isa(8) },
    ],
    device_memory: &[APICS],
});
roving_kernel::qemu_machine!("q35");
