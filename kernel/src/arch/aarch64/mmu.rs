//! The identity map, and turning the MMU on.
//!
//! Why every core turns its MMU on before touching a shared atomic: atomic
//! read-modify-writes are exclusive loads and stores, and the architecture
//! only guarantees the exclusive monitors for Normal, Inner Shareable,
//! cacheable memory. With the MMU off, every access is Device memory. QEMU
//! does not enforce this; real cores do.
//!
//! Layout: 4 KiB granule, 39-bit addresses (512 GiB), translation starting
//! at level 1. Device ranges and RAM are mapped with 1 GiB blocks where a
//! whole aligned gigabyte is covered, else with 2 MiB blocks from a small
//! pool of level-2 tables. Everything is read-write and executable at EL1;
//! device memory is never executable. (W^X is not done yet.)
//!
//! The guard gap below every fibre stack is left unmapped, so a strand that
//! overflows its stack faults at once: the blocks around the fibre region
//! are split into 4 KiB pages (level-3 tables) and the gaps' pages cleared.
//! The firmware's `no-map` reservations are left out the same way (whole
//! 2 MiB blocks cleared at level 2, the ends page by page), as Linux does:
//! a speculative or stray access cannot touch memory the firmware keeps
//! for itself, and a deliberate one faults with the region named.

use crate::board::{Board, Region};
use crate::boot_info::{BootInfo, MAX_UNMAPPED};
use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{
    ID_AA64MMFR0_EL1, MAIR_EL1, ReadWriteable, Readable, SCTLR_EL1, TCR_EL1, TTBR0_EL1, Writeable,
};
use core::cell::UnsafeCell;
use roving::strand::sizes::{FIBRES, GUARD_BYTES, STACK_BYTES};

const ENTRIES: usize = 512;
const L1_BLOCK: usize = 1 << 30;
const L2_BLOCK: usize = 1 << 21;
const PAGE: usize = 4096;
/// Level-2 tables available for ranges that do not fill a whole gigabyte.
const L2_TABLES: usize = 8;
/// Level-3 tables for the pages around the fibre region: one per 2 MiB it
/// touches (it need not start on a 2 MiB boundary, hence the extra one),
/// and two for each `no-map` reservation's unaligned ends.
const L3_TABLES: usize = (FIBRES * (GUARD_BYTES + STACK_BYTES)).div_ceil(L2_BLOCK) + 1 + 2 * MAX_UNMAPPED;
/// T0SZ = 25: 2^39 bytes of address space, walks start at level 1.
const ADDRESS_BITS: u32 = 39;

#[repr(C, align(4096))]
struct Table([u64; ENTRIES]);

/// `l1` first: TTBR0_EL1 holds the address of the whole struct.
#[repr(C)]
struct Tables {
    l1: Table,
    l2: [Table; L2_TABLES],
    l3: [Table; L3_TABLES],
    l2_used: usize,
    l3_used: usize,
}

struct TablesCell(UnsafeCell<Tables>);

// SAFETY: written only by the boot core before any other core runs (see
// `build_tables`), read only by the MMU afterwards.
unsafe impl Sync for TablesCell {}

static TABLES: TablesCell = TablesCell(UnsafeCell::new(Tables {
    l1: Table([0; ENTRIES]),
    l2: [const { Table([0; ENTRIES]) }; L2_TABLES],
    l3: [const { Table([0; ENTRIES]) }; L3_TABLES],
    l2_used: 0,
    l3_used: 0,
}));

/// Memory attribute indices into MAIR_EL1.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Device = 0,
    Normal = 1,
}

const VALID: u64 = 1 << 0;
/// At levels 1 and 2: a table, not a block. At level 3: a page (required).
const TABLE: u64 = 1 << 1;
/// The output address bits of any descriptor (4 KiB granule, 48 bits).
const OUTPUT_ADDRESS: u64 = 0x0000_ffff_ffff_f000;
const ACCESSED: u64 = 1 << 10;
const INNER_SHAREABLE: u64 = 0b11 << 8;
const PXN: u64 = 1 << 53;
const UXN: u64 = 1 << 54;

fn block(address: usize, kind: Kind) -> u64 {
    let attributes = ((kind as u64) << 2) | ACCESSED | VALID | UXN;
    let attributes = match kind {
        Kind::Normal => attributes | INNER_SHAREABLE,
        Kind::Device => attributes | PXN,
    };
    address as u64 | attributes
}

/// Why a range could not be mapped.
enum MapError {
    OutOfAddressSpace(Region),
    OutOfTables(Region),
    NoPageTableFor(usize),
    /// A `no-map` reservation's 2 MiB block needed a level-2 table.
    NoTableToUnmap(Region),
}

impl core::fmt::Display for MapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::OutOfAddressSpace(r) => {
                write!(
                    f,
                    "{:#x}..{:#x} lies beyond the {ADDRESS_BITS}-bit address space mapped",
                    r.base,
                    r.end()
                )
            }
            Self::OutOfTables(r) => write!(
                f,
                "{:#x}..{:#x} needs more than {L2_TABLES} level-2 tables (ranges not aligned to 1 GiB)",
                r.base,
                r.end()
            ),
            Self::NoPageTableFor(address) => {
                write!(f, "the page at {address:#x} needs more than {L3_TABLES} level-3 tables")
            }
            Self::NoTableToUnmap(r) => write!(
                f,
                "the no-map reservation {:#x}..{:#x} needs more than {L2_TABLES} level-2 tables",
                r.base,
                r.end()
            ),
        }
    }
}

/// Builds the identity map of `info.ram` (normal memory) and the board's
/// device ranges. On failure, reports and ends the run.
///
/// # Safety
///
/// Boot core only, before any other core runs and before `enable`.
pub(super) unsafe fn build_tables(info: &BootInfo, board: &Board) {
    // SAFETY: exclusive access per this function's contract.
    let tables = unsafe { &mut *TABLES.0.get() };
    let mut result = Ok(());
    for region in board.device_memory {
        result = result.and_then(|()| map(tables, *region, Kind::Device));
    }
    // The tree's GICv3 redistributors may lie outside the board's device
    // ranges: QEMU virt puts those of cores past the 123rd at 256 GiB.
    for region in info.arch.gic.iter().flat_map(|gic| gic.redistributors()) {
        result = result.and_then(|()| map(tables, *region, Kind::Device));
    }
    // So are the devices a firmware's tree moved: the GIC, the UART and a
    // board's own interrupt controller.
    let gic = info.arch.gic.iter().flat_map(|gic| [gic.distributor, gic.cpu_interface]);
    let moved = gic.filter(|&base| base != 0).map(|base| Region { base, size: super::dtb::GIC_FRAME });
    for region in moved.chain(info.arch.uart).chain(info.arch.chip_parts.iter().copied()) {
        result = result.and_then(|()| map(tables, region, Kind::Device));
    }
    for region in &info.ram {
        result = result.and_then(|()| map(tables, *region, Kind::Normal));
    }
    for gap in roving::platform::hooks::guard_gaps() {
        for page in gap.step_by(PAGE) {
            result = result.and_then(|()| unmap_page(tables, page));
        }
    }
    for unmapped in &info.unmapped {
        result = result.and_then(|()| unmap(tables, unmapped.region));
    }
    if let Err(error) = result {
        crate::console::emergency(format_args!("roving-kernel: cannot build the page tables: {error}\n"));
        crate::exit(crate::exit_code::FAULT);
    }
    // With the MMU off these writes went straight to memory; drop any stale
    // cached copy so the table walker and later cached reads agree with it.
    let start = tables as *const Tables as usize;
    super::cpu::invalidate_dcache_range(start, core::mem::size_of::<Tables>());
}

fn map(tables: &mut Tables, region: Region, kind: Kind) -> Result<(), MapError> {
    let start = region.base & !(L2_BLOCK - 1);
    let end = region.end().next_multiple_of(L2_BLOCK);
    if end > 1 << ADDRESS_BITS {
        return Err(MapError::OutOfAddressSpace(region));
    }
    let mut address = start;
    while address < end {
        let l1_index = address / L1_BLOCK;
        let entry = tables.l1.0[l1_index];
        if address.is_multiple_of(L1_BLOCK) && end - address >= L1_BLOCK && entry == 0 {
            tables.l1.0[l1_index] = block(address, kind);
            address += L1_BLOCK;
            continue;
        }
        if entry & (VALID | TABLE) == VALID {
            // Already covered by a gigabyte block of an earlier region.
            address = (l1_index + 1) * L1_BLOCK;
            continue;
        }
        let l2 = if entry == 0 {
            let index = tables.l2_used;
            if index == L2_TABLES {
                return Err(MapError::OutOfTables(region));
            }
            tables.l2_used += 1;
            let table = &tables.l2[index] as *const Table as u64;
            tables.l1.0[l1_index] = table | TABLE | VALID;
            index
        } else {
            let table = (entry & 0x0000_ffff_ffff_f000) as usize;
            tables.l2.iter().position(|t| t as *const Table as usize == table).expect("own table")
        };
        let slot = &mut tables.l2[l2].0[(address / L2_BLOCK) % ENTRIES];
        if *slot == 0 {
            *slot = block(address, kind);
        }
        address += L2_BLOCK;
    }
    Ok(())
}

/// Leaves `region` out of the map: whole 2 MiB blocks at level 2, the
/// pages of a partly covered block one by one (the region's ends, rounded
/// out to whole pages).
fn unmap(tables: &mut Tables, region: Region) -> Result<(), MapError> {
    let mut address = region.base & !(PAGE - 1);
    let end = region.end().next_multiple_of(PAGE);
    while address < end {
        if address.is_multiple_of(L2_BLOCK) && end - address >= L2_BLOCK {
            if let Some(table) = level2_table(tables, address).ok_or(MapError::NoTableToUnmap(region))? {
                tables.l2[table].0[(address / L2_BLOCK) % ENTRIES] = 0;
            }
            address += L2_BLOCK;
        } else {
            unmap_page(tables, address)?;
            address += PAGE;
        }
    }
    Ok(())
}

/// Makes the 4 KiB page at `address` unmapped, splitting the blocks that
/// cover it into tables of the next level down (same attributes).
fn unmap_page(tables: &mut Tables, address: usize) -> Result<(), MapError> {
    let Some(l2_table) =
        level2_table(tables, address).ok_or(MapError::OutOfTables(Region { base: address, size: PAGE }))?
    else {
        return Ok(());
    };
    let Tables { l2, l3, l3_used, .. } = tables;
    let l2_entry = &mut l2[l2_table].0[(address / L2_BLOCK) % ENTRIES];
    let Some(l3_table) =
        descend(l2_entry, l3, l3_used, PAGE, VALID | TABLE).ok_or(MapError::NoPageTableFor(address))?
    else {
        return Ok(());
    };
    l3[l3_table].0[(address / PAGE) % ENTRIES] = 0;
    Ok(())
}

/// The level-2 table that maps `address`'s gigabyte, as an index into
/// `tables.l2`, the gigabyte's block split into one first if need be:
/// `Some(None)` if nothing maps it, `None` if the level-2 tables are used
/// up.
fn level2_table(tables: &mut Tables, address: usize) -> Option<Option<usize>> {
    let Tables { l1, l2, l2_used, .. } = tables;
    descend(&mut l1.0[address / L1_BLOCK], l2, l2_used, L2_BLOCK, VALID)
}

/// The table `entry` points to, as an index into `pool`: if `entry` is a
/// block it is first split into a new table of `ENTRIES` pieces of `piece`
/// bytes (descriptor type `piece_type`) with the block's attributes.
/// `Some(None)` if nothing is mapped there; `None` if the pool is used up.
fn descend(
    entry: &mut u64,
    pool: &mut [Table],
    used: &mut usize,
    piece: usize,
    piece_type: u64,
) -> Option<Option<usize>> {
    if *entry & VALID == 0 {
        return Some(None);
    }
    if *entry & TABLE != 0 {
        let address = (*entry & OUTPUT_ADDRESS) as usize;
        return Some(Some(
            pool.iter().position(|t| t as *const Table as usize == address).expect("own table"),
        ));
    }
    let index = *used;
    let table = pool.get_mut(index)?;
    *used += 1;
    let base = *entry & OUTPUT_ADDRESS;
    let attributes = *entry & !OUTPUT_ADDRESS & !(VALID | TABLE);
    for (i, slot) in table.0.iter_mut().enumerate() {
        *slot = (base + (i * piece) as u64) | attributes | piece_type;
    }
    *entry = table as *const Table as u64 | TABLE | VALID;
    Some(Some(index))
}

/// Turns this core's MMU and caches on with the identity map.
///
/// # Safety
///
/// `build_tables` must have completed (on the boot core) and the tables
/// must map the code and stack this core runs on.
pub(super) unsafe fn enable() {
    // Attr0: Device-nGnRE. Attr1: Normal, write-back, read/write-allocate.
    MAIR_EL1.write(
        MAIR_EL1::Attr0_Device::nonGathering_nonReordering_EarlyWriteAck
            + MAIR_EL1::Attr1_Normal_Outer::WriteBack_NonTransient_ReadWriteAlloc
            + MAIR_EL1::Attr1_Normal_Inner::WriteBack_NonTransient_ReadWriteAlloc,
    );
    let physical_bits = ID_AA64MMFR0_EL1.read(ID_AA64MMFR0_EL1::PARange);
    TCR_EL1.write(
        TCR_EL1::T0SZ.val(64 - u64::from(ADDRESS_BITS))
            + TCR_EL1::TG0::KiB_4
            + TCR_EL1::SH0::Inner
            + TCR_EL1::ORGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
            + TCR_EL1::IRGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
            + TCR_EL1::EPD1::DisableTTBR1Walks
            + TCR_EL1::IPS.val(physical_bits),
    );
    TTBR0_EL1.set_baddr(TABLES.0.get() as u64);
    barrier::isb(barrier::SY);
    // SAFETY: invalidating this core's TLB has no memory effects.
    unsafe { core::arch::asm!("tlbi vmalle1", "dsb nsh", "isb", options(nostack)) };
    SCTLR_EL1.modify(SCTLR_EL1::M::Enable + SCTLR_EL1::C::Cacheable + SCTLR_EL1::I::Cacheable);
    barrier::isb(barrier::SY);
}
