//! The PVH loader's `hvm_start_info`: RAM (its memory map), the command
//! line, and maybe the ACPI RSDP.

use crate::board::Board;
use crate::boot_info::BootInfo;

/// `hvm_start_info.magic`.
const MAGIC: u32 = 0x336e_c578;
/// Memory map entry type of usable RAM.
const RAM: u32 = 1;

#[repr(C)]
struct StartInfo {
    magic: u32,
    version: u32,
    flags: u32,
    nr_modules: u32,
    modlist_paddr: u64,
    cmdline_paddr: u64,
    rsdp_paddr: u64,
    memmap_paddr: u64,
    memmap_entries: u32,
    reserved: u32,
}

#[repr(C)]
struct MemoryMapEntry {
    address: u64,
    size: u64,
    kind: u32,
    reserved: u32,
}

/// Fills RAM, the command line and the RSDP address from the start info at
/// `address`; the board's RAM if there is none.
pub(super) fn read(info: &mut BootInfo, address: usize, board: &Board) {
    if address == 0 || !address.is_multiple_of(8) {
        info.add_ram(board.fallback_ram);
        return;
    }
    // SAFETY: the loader passed this address of its start info, in RAM the
    // identity map covers; its magic is checked before anything else.
    let start = unsafe { &*(address as *const StartInfo) };
    if start.magic != MAGIC {
        info.add_ram(board.fallback_ram);
        return;
    }
    if start.cmdline_paddr != 0 {
        // SAFETY: a NUL-terminated string the loader placed in RAM.
        let line = unsafe { core::ffi::CStr::from_ptr(start.cmdline_paddr as *const core::ffi::c_char) };
        crate::boot_info::push_truncated(&mut info.bootargs, line.to_str().unwrap_or(""));
    }
    if start.rsdp_paddr != 0 {
        info.arch.rsdp = Some(start.rsdp_paddr as usize);
    }
    // Version 1 added the memory map.
    if start.version >= 1 && start.memmap_paddr != 0 {
        // SAFETY: `memmap_entries` entries the loader placed in RAM.
        let entries = unsafe {
            core::slice::from_raw_parts(
                start.memmap_paddr as *const MemoryMapEntry,
                start.memmap_entries as usize,
            )
        };
        for entry in entries.iter().filter(|e| e.kind == RAM) {
            super::paging::add_mappable_ram(info, entry.address, entry.size);
        }
    }
    if info.ram.is_empty() {
        info.add_ram(board.fallback_ram);
    }
}
