//! From the PVH or Multiboot2 entry to the kernel's portable boot code.

use super::{acpi, apic, cpu, exception, multiboot, paging, pvh, smp, timer};
use crate::board::board;
use crate::boot_info::{self, MAX_CORES};
use crate::cores;
use core::arch::global_asm;
use core::sync::atomic::{AtomicI64, Ordering::Relaxed};

/// Bytes of stack each core boots on (and keeps, until strands exist).
pub(crate) const BOOT_STACK_SIZE: usize = 64 * 1024;

#[repr(C, align(16))]
struct BootStacks([[u8; BOOT_STACK_SIZE]; MAX_CORES]);

/// Written only by the core that owns each stack, through `rsp`.
static mut BOOT_STACKS: BootStacks = BootStacks([[0; BOOT_STACK_SIZE]; MAX_CORES]);

/// Each core's boot stack, for a backtrace's walk to stay on.
pub(super) fn boot_stacks() -> crate::backtrace::StackArray {
    crate::backtrace::StackArray { start: &raw const BOOT_STACKS as usize, bytes: BOOT_STACK_SIZE }
}

global_asm!(
    include_str!("boot.s"),
    pml4 = sym paging::PML4,
    pdpt = sym paging::PDPT,
    pd = sym paging::PD,
    stacks = sym BOOT_STACKS,
    stack_size = const BOOT_STACK_SIZE,
    boot_primary = sym boot_primary,
    boot_secondary = sym boot_secondary,
    apic_id_by_index = sym smp::APIC_ID_BY_INDEX,
    max_cores = const MAX_CORES,
    trampoline = const smp::TRAMPOLINE,
);

/// How far the image lies above its link address (below, if negative):
/// 0 unless a Multiboot2 loader moved it (`boot.s`, `APPLY_RELOCATIONS`,
/// writes it before `.bss` is zeroed, so it lives in `.data`).
#[unsafe(no_mangle)]
#[unsafe(link_section = ".data.roving_load_offset")]
static ROVING_LOAD_OFFSET: AtomicI64 = AtomicI64::new(0);

/// How far the image lies above its link address: the load offset a
/// relocated Multiboot2 load applied (0 where it was linked).
pub(crate) fn load_offset() -> i64 {
    ROVING_LOAD_OFFSET.load(Relaxed)
}

/// Which loader started the kernel (`boot.s` passes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loader {
    /// A PVH loader (QEMU's `-kernel`, Firecracker, cloud-hypervisor).
    Pvh,
    /// A Multiboot2 loader (GRUB, from a BIOS or UEFI disk).
    Multiboot2,
}

/// The boot core's first Rust, in long mode on the identity map, with
/// `boot_information` the PVH loader's `hvm_start_info` (`loader` 0) or
/// the Multiboot2 boot information (`loader` 1).
///
/// # Safety
///
/// Called once, from `_pvh_start` or `_multiboot2_start`, on core 0's
/// boot stack, with `.bss` zeroed and no other core running.
unsafe extern "C" fn boot_primary(boot_information: usize, loader: u32) -> ! {
    cpu::set_core_local(cores::local(0));
    exception::init_tables();
    exception::install_this_core(0);
    // SAFETY: no other core runs yet, and nothing has read the boot facts.
    let info = unsafe { boot_info::boot_info_mut() };
    info.arch.loader = if loader == 1 { Loader::Multiboot2 } else { Loader::Pvh };
    match info.arch.loader {
        Loader::Pvh => pvh::read(info, boot_information, board()),
        Loader::Multiboot2 => multiboot::read(info, boot_information, board()),
    }
    acpi::read(info, board());
    info.apply_core_limit();
    apic::choose_mode(info);
    info.arch.mwait = cpu::has_mwait();
    apic::init_this_core();
    timer::calibrate(info);
    // SAFETY: single core, before the heap; the tables change only where
    // RAM, the board and the fibre stacks say, and the running code and
    // stack stay mapped.
    unsafe {
        info.arch.unmapped_ram = paging::map_high_ram(info, cpu::has_gigabyte_pages());
        paging::finish(board());
    }
    crate::boot::primary_main()
}

/// Every other core's first Rust, from the trampoline.
///
/// # Safety
///
/// Called once per start of core `index`, on that core's boot stack, after
/// the boot core finished the page tables and published the boot facts.
unsafe extern "C" fn boot_secondary(index: usize) -> ! {
    cpu::set_core_local(cores::local(index));
    exception::install_this_core(index);
    crate::boot::secondary_main(index)
}
