//! A Multiboot2 loader's boot information (GRUB's, from a BIOS or UEFI
//! disk): RAM (its memory map), the command line, and the ACPI RSDP.
//!
//! GRUB enters the kernel as it enters a PVH guest: 32-bit protected mode,
//! paging off. On UEFI it has already left the firmware's boot services
//! (the kernel's header asks for no boot-services entry), so nothing of
//! the firmware runs while the kernel starts its cores, and the memory
//! map it hands over is final.

use crate::board::Board;
use crate::boot_info::BootInfo;
use multiboot2::{BootInformation, BootInformationHeader, MemoryAreaType};

/// A tag's header: its type and its size, two `u32`s. The ACPI tags hold
/// a copy of the RSDP right after it.
const TAG_HEADER: usize = 8;

/// Fills RAM, the command line and the RSDP address from the boot
/// information at `address`; the board's RAM if it is unreadable.
pub(super) fn read(info: &mut BootInfo, address: usize, board: &Board) {
    // SAFETY: the loader passed this address of its boot information, in
    // RAM the identity map covers, and nothing writes it; `load` checks
    // its size and end tag before trusting it.
    let Ok(mbi) = (unsafe { BootInformation::load(address as *const BootInformationHeader) }) else {
        info.add_ram(board.fallback_ram);
        return;
    };
    if let Some(line) = mbi.command_line_tag().and_then(|tag| tag.cmdline().ok()) {
        crate::boot_info::push_truncated(&mut info.bootargs, line);
    }
    // The newer RSDP (with the XSDT) if the firmware has one. The copy in
    // the boot information is a whole RSDP, checksum and all.
    let rsdp = mbi.rsdp_v2_tag().map(|tag| core::ptr::from_ref(tag).addr());
    let rsdp = rsdp.or_else(|| mbi.rsdp_v1_tag().map(|tag| core::ptr::from_ref(tag).addr()));
    info.arch.rsdp = rsdp.map(|tag| tag + TAG_HEADER);
    let areas = mbi.memory_map_tag().map_or(&[][..], |tag| tag.memory_areas());
    for area in areas.iter().filter(|area| MemoryAreaType::from(area.typ()) == MemoryAreaType::Available) {
        super::paging::add_mappable_ram(info, area.start_address(), area.size());
    }
    if info.ram.is_empty() {
        info.add_ram(board.fallback_ram);
    }
}
