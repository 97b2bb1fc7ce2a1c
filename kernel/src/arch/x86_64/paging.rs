//! The identity map of the first 4 GiB, built in 2 MiB pages by `boot.s`
//! before long mode; finished here on the boot core before any other core
//! starts:
//!
//! - RAM above 4 GiB (up to 512 GiB, one PML4 entry) is mapped too: whole
//!   gigabytes with 1 GiB pages where the processor has them, the rest in
//!   2 MiB pages from a few spare page directories. RAM that does not fit
//!   is dropped from the boot facts, so the heap never reaches it. ACPI
//!   tables a firmware put above 4 GiB are mapped the same way, earlier,
//!   when the boot core reads them (`map_firmware_tables`).
//! - the board's device ranges (the local APIC and I/O APIC) become
//!   uncached (PCD | PWT);
//! - the guard gap below every fibre stack becomes unmapped, so a strand
//!   that overflows its stack faults at once: the 2 MiB pages around the
//!   fibre region are split into 4 KiB pages and the gaps' pages cleared.
//!
//! Every core runs on these same tables (the trampoline loads them).

use crate::board::{Board, Region};
use crate::boot_info::BootInfo;
use roving::strand::sizes::{FIBRES, GUARD_BYTES, STACK_BYTES};

const ENTRIES: usize = 512;
const LARGE_PAGE: usize = 1 << 21;
const PAGE: usize = 4096;
const PRESENT: u64 = 1 << 0;
const WRITABLE: u64 = 1 << 1;
const WRITE_THROUGH: u64 = 1 << 3;
const CACHE_DISABLE: u64 = 1 << 4;
const HUGE: u64 = 1 << 7;
/// Page directories: four, one per gigabyte mapped.
const DIRECTORIES: usize = 4;
/// Spare page directories for RAM above 4 GiB mapped in 2 MiB pages.
const HIGH_DIRECTORIES: usize = 4;
const GIGABYTE: usize = 1 << 30;
/// Page tables for the pages around the fibre region (as on AArch64).
const PAGE_TABLES: usize = (FIBRES * (GUARD_BYTES + STACK_BYTES)).div_ceil(LARGE_PAGE) + 1;

#[repr(C, align(4096))]
pub(super) struct Table([u64; ENTRIES]);

/// Written by `boot.s` (with paging off) and `finish` (boot core only,
/// before other cores start); read by the MMU afterwards.
pub(super) static mut PML4: Table = Table([0; ENTRIES]);
/// As `PML4`.
pub(super) static mut PDPT: Table = Table([0; ENTRIES]);
/// As `PML4`: entry `i` maps `[i * 2 MiB, (i + 1) * 2 MiB)`.
pub(super) static mut PD: [Table; DIRECTORIES] = [const { Table([0; ENTRIES]) }; DIRECTORIES];
static mut PT: [Table; PAGE_TABLES] = [const { Table([0; ENTRIES]) }; PAGE_TABLES];
/// As `PML4`: directories for RAM above 4 GiB that 1 GiB pages cannot map.
static mut HIGH_PD: [Table; HIGH_DIRECTORIES] = [const { Table([0; ENTRIES]) }; HIGH_DIRECTORIES];

/// Spare directories handed out so far (boot core only: `map_above`).
static mut SPARE_USED: usize = 0;

/// Identity-maps `[start, end)` (2 MiB aligned, above 4 GiB): whole
/// gigabytes with 1 GiB pages if `gigabyte_pages`, the rest in 2 MiB pages
/// from the spare directories. Returns where the map ends, short of `end`
/// if the spare directories ran out; what is mapped already stays.
///
/// # Safety
///
/// Boot core only, before any other core starts.
unsafe fn map_above(start: usize, end: usize, gigabyte_pages: bool) -> usize {
    let (pdpt, spare, spare_used): (*mut Table, *mut [Table; HIGH_DIRECTORIES], *mut usize) =
        (&raw mut PDPT, &raw mut HIGH_PD, &raw mut SPARE_USED);
    // SAFETY: exclusive per this function's contract.
    let (pdpt, spare, spare_used) = unsafe { (&mut *pdpt, &mut *spare, &mut *spare_used) };
    let mut mapped_to = start;
    while mapped_to < end {
        let gigabyte = mapped_to / GIGABYTE;
        let whole = mapped_to.is_multiple_of(GIGABYTE) && end - mapped_to >= GIGABYTE;
        let entry = pdpt.0[gigabyte];
        if entry & HUGE != 0 {
            mapped_to = end.min((gigabyte + 1) * GIGABYTE); // a gigabyte page has it all
            continue;
        }
        if whole && gigabyte_pages && entry == 0 {
            pdpt.0[gigabyte] = mapped_to as u64 | HUGE | WRITABLE | PRESENT;
            mapped_to += GIGABYTE;
            continue;
        }
        let directory = match entry {
            0 if *spare_used < HIGH_DIRECTORIES => {
                *spare_used += 1;
                let table = &mut spare[*spare_used - 1];
                pdpt.0[gigabyte] = table as *const Table as u64 | WRITABLE | PRESENT;
                table
            }
            // SAFETY: a directory entry not huge points at one of `spare`,
            // set by an earlier call that shares this gigabyte; nothing
            // else holds a reference to it now.
            entry if entry != 0 => unsafe { &mut *((entry & 0x000f_ffff_ffff_f000) as *mut Table) },
            _ => break,
        };
        let stop = end.min((gigabyte + 1) * GIGABYTE);
        while mapped_to < stop {
            directory.0[(mapped_to / LARGE_PAGE) % ENTRIES] = mapped_to as u64 | HUGE | WRITABLE | PRESENT;
            mapped_to += LARGE_PAGE;
        }
    }
    mapped_to
}

/// Adds a range a loader calls RAM, cut at what the page tables can map:
/// one PML4 entry's 512 GiB (`map_high_ram` maps what lies above 4 GiB).
pub(super) fn add_mappable_ram(info: &mut BootInfo, base: u64, size: u64) {
    let end = base.saturating_add(size).min((ENTRIES * GIGABYTE) as u64);
    if base < end {
        info.add_ram(Region { base: base as usize, size: (end - base) as usize });
    }
}

/// Maps firmware tables at `[address, address + size)` that reach above
/// 4 GiB, where a large PC's firmware may put its ACPI tables, for the
/// boot core to read them before RAM is mapped (below 4 GiB is mapped
/// from the start). Returns whether all of it is mapped.
///
/// # Safety
///
/// Boot core only, before any other core starts.
pub(super) unsafe fn map_firmware_tables(address: usize, size: usize, gigabyte_pages: bool) -> bool {
    let end = address.saturating_add(size).next_multiple_of(LARGE_PAGE);
    let start = (address / LARGE_PAGE * LARGE_PAGE).max(DIRECTORIES * GIGABYTE);
    // SAFETY: per this function's contract.
    end <= ENTRIES * GIGABYTE && unsafe { map_above(start, end, gigabyte_pages) } >= end
}

/// Maps the RAM `info` lists above 4 GiB (module documentation) and trims
/// each such region to what was mapped: 2 MiB aligned, and ending where
/// the spare directories ran out. Returns the bytes of RAM left unmapped.
///
/// # Safety
///
/// Boot core only, before any other core starts and before the heap.
pub(super) unsafe fn map_high_ram(info: &mut BootInfo, gigabyte_pages: bool) -> usize {
    let mut unmapped = 0;
    for region in info.ram.iter_mut().filter(|r| r.end() > DIRECTORIES * GIGABYTE) {
        let start = region.base.max(DIRECTORIES * GIGABYTE).next_multiple_of(LARGE_PAGE);
        let end = region.end() / LARGE_PAGE * LARGE_PAGE;
        // SAFETY: per this function's contract.
        let mapped_to = unsafe { map_above(start, end, gigabyte_pages) };
        let kept = mapped_to.saturating_sub(region.base.max(start));
        let below = (DIRECTORIES * GIGABYTE).saturating_sub(region.base);
        unmapped += region.size - below - kept;
        if region.base >= DIRECTORIES * GIGABYTE {
            *region = Region { base: start, size: kept };
        } else {
            region.size = below + kept;
        }
    }
    info.ram.retain(|r| r.size > 0);
    unmapped
}

/// Why the map could not be finished.
enum PagingError {
    Unmapped(usize),
    OutOfPageTables(usize),
}

/// Finishes the map (see the module documentation); on failure reports
/// and ends the run.
///
/// # Safety
///
/// Boot core only, before any other core starts.
pub(super) unsafe fn finish(board: &Board) {
    let (directories, tables): (*mut [Table; DIRECTORIES], *mut [Table; PAGE_TABLES]) =
        (&raw mut PD, &raw mut PT);
    // SAFETY: exclusive per this function's contract.
    let (directories, tables) = unsafe { (&mut *directories, &mut *tables) };
    for region in board.device_memory {
        let first = region.base / LARGE_PAGE;
        let last = region.end().div_ceil(LARGE_PAGE).min(DIRECTORIES * ENTRIES);
        for index in first..last {
            directories[index / ENTRIES].0[index % ENTRIES] |= WRITE_THROUGH | CACHE_DISABLE;
        }
    }
    let mut used = 0;
    let mut result = Ok(());
    for gap in roving::platform::hooks::guard_gaps() {
        for page in gap.step_by(PAGE) {
            result = result.and_then(|()| unmap_page(directories, tables, &mut used, page));
        }
    }
    if let Err(error) = result {
        let message = match error {
            PagingError::Unmapped(at) => ("lies beyond the 4 GiB identity map", at),
            PagingError::OutOfPageTables(at) => ("needs more page tables than were reserved", at),
        };
        crate::console::emergency(format_args!(
            "roving-kernel: the guard page at {:#x} {}\n",
            message.1, message.0
        ));
        crate::exit(crate::exit_code::FAULT);
    }
    // SAFETY: reloading CR3 with the same tables flushes stale entries.
    unsafe {
        let (frame, flags) = x86_64::registers::control::Cr3::read();
        x86_64::registers::control::Cr3::write(frame, flags);
    }
}

fn unmap_page(
    directories: &mut [Table; DIRECTORIES],
    tables: &mut [Table; PAGE_TABLES],
    used: &mut usize,
    address: usize,
) -> Result<(), PagingError> {
    let index = address / LARGE_PAGE;
    let entry = directories.get_mut(index / ENTRIES).ok_or(PagingError::Unmapped(address))?;
    let entry = &mut entry.0[index % ENTRIES];
    if *entry & HUGE != 0 {
        let table = tables.get_mut(*used).ok_or(PagingError::OutOfPageTables(address))?;
        *used += 1;
        let base = *entry & 0x000f_ffff_ffe0_0000;
        let flags = *entry & (PRESENT | WRITABLE | WRITE_THROUGH | CACHE_DISABLE);
        for (i, slot) in table.0.iter_mut().enumerate() {
            *slot = (base + (i * PAGE) as u64) | flags;
        }
        *entry = table as *const Table as u64 | PRESENT | WRITABLE;
    }
    let table = (*entry & 0x000f_ffff_ffff_f000) as *mut Table;
    // SAFETY: the entry points at one of `tables` (set just above or by an
    // earlier call); nothing else holds a reference to it now.
    unsafe { (*table).0[(address / PAGE) % ENTRIES] = 0 };
    Ok(())
}
