//! The cores, from the ACPI MADT (parsed by the `acpi` crate): every local
//! APIC marked enabled, the boot core first. Tables above 4 GiB, where a
//! large machine's firmware may put them, are mapped as they are read.
//! APIC ids can have gaps; the kernel's dense core indices do not. The
//! MADT also lists the I/O APICs and the ISA interrupt source overrides
//! (`ioapic.rs` uses them).

use super::apic::MAX_XAPIC_ID;
use super::{IoApicInfo, RsdpArgument, SourceOverride, apic, cpu};
use crate::board::Board;
use crate::boot_info::BootInfo;
use acpi::madt::{Madt, MadtEntry};
use acpi::{AcpiHandler, AcpiTables, PhysicalMapping};
use core::ptr::NonNull;

/// MADT local APIC flag: the processor is usable now.
const ENABLED: u32 = 1;

/// Physical memory is identity-mapped, so mapping is the address itself.
#[derive(Clone, Copy, Debug)]
struct IdentityMapped;

impl AcpiHandler for IdentityMapped {
    unsafe fn map_physical_region<T>(
        &self,
        physical_address: usize,
        size: usize,
    ) -> PhysicalMapping<Self, T> {
        let start = NonNull::new(physical_address as *mut T).expect("ACPI never names address 0");
        // SAFETY: ACPI is read on the boot core alone, before the other
        // cores start (`read`).
        let mapped =
            unsafe { super::paging::map_firmware_tables(physical_address, size, cpu::has_gigabyte_pages()) };
        assert!(mapped, "no page tables are left to map the ACPI table at {physical_address:#x}");
        // SAFETY: the first 4 GiB are identity-mapped, and anything above
        // them the crate asks for was just mapped; it asks only for regions
        // it was told of.
        unsafe { PhysicalMapping::new(physical_address, start, size, size, *self) }
    }

    fn unmap_physical_region<T>(_region: &PhysicalMapping<Self, T>) {}
}

/// Fills the cores and sets the local APIC address; the boot core alone
/// (and the APIC's architectural address) if the firmware has no usable
/// MADT.
pub(super) fn read(info: &mut BootInfo, board: &Board) {
    match info.bootarg("roving.acpi_rsdp").map(parse_address) {
        Some(Some(address)) => {
            (info.arch.rsdp, info.arch.rsdp_argument) = (Some(address), RsdpArgument::Used)
        }
        Some(None) => info.arch.rsdp_argument = RsdpArgument::Ignored,
        None => {}
    }
    let boot_core = cpu::apic_id();
    let _ = info.cores.push(boot_core);
    info.cores_found = 1;
    // SAFETY: the RSDP address came from the loader, or the BIOS areas are
    // searched as ACPI specifies; all of it is identity-mapped RAM or ROM.
    let tables = unsafe {
        match info.arch.rsdp {
            Some(rsdp) => AcpiTables::from_rsdp(IdentityMapped, rsdp),
            None => AcpiTables::search_for_rsdp_bios(IdentityMapped),
        }
    };
    let Ok(tables) = tables else {
        for &id in board.fallback_cores.iter().filter(|&&id| id != boot_core) {
            info.cores_found += 1;
            let _ = info.cores.push(id);
        }
        return;
    };
    let Ok(madt) = tables.find_table::<Madt>() else { return };
    info.arch.madt = true;
    apic::set_base(madt.get().local_apic_address as usize);
    for entry in madt.get().entries() {
        let (id, flags) = match entry {
            MadtEntry::LocalApic(apic) => (u32::from(apic.apic_id), apic.flags),
            MadtEntry::LocalX2Apic(apic) => (apic.x2apic_id, apic.flags),
            MadtEntry::LocalApicAddressOverride(over) => {
                apic::set_base(over.local_apic_address as usize);
                continue;
            }
            MadtEntry::IoApic(io) => {
                let io_apic = IoApicInfo {
                    address: io.io_apic_address as usize,
                    first_line: io.global_system_interrupt_base,
                };
                let _ = info.arch.io_apics.push(io_apic); // beyond 4: not used
                continue;
            }
            MadtEntry::InterruptSourceOverride(over) if over.bus == 0 => {
                let over = SourceOverride {
                    isa_irq: over.irq,
                    line: over.global_system_interrupt,
                    flags: over.flags,
                };
                let _ = info.arch.overrides.push(over);
                continue;
            }
            _ => continue,
        };
        if flags & ENABLED == 0 || u64::from(id) == boot_core || (id > MAX_XAPIC_ID && !cpu::has_x2apic()) {
            continue;
        }
        info.cores_found += 1;
        let _ = info.cores.push(u64::from(id)); // beyond MAX_CORES: counted, not used
    }
}

/// A non-zero address, hexadecimal with `0x` or decimal.
fn parse_address(text: &str) -> Option<usize> {
    let address = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => usize::from_str_radix(hex, 16).ok()?,
        None => text.parse().ok()?,
    };
    (address != 0).then_some(address)
}
