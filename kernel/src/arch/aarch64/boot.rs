//! From the first instruction to the kernel's portable boot code.
//!
//! Until `mmu::enable` returns, a core runs with the MMU and caches off.
//! Exclusive loads and stores (every atomic read-modify-write) are not
//! guaranteed to work then on real hardware, so code on this path touches
//! no atomic and takes no lock.

use super::{cpu, dtb, exception, mmu, semihosting, timer};
use crate::board::board;
use crate::boot_info::{self, MAX_CORES};
use crate::{cores, exit_code};
use core::arch::global_asm;

/// Bytes of stack each core boots on (and keeps, until strands exist).
pub(crate) const BOOT_STACK_SIZE: usize = 64 * 1024;

#[repr(C, align(16))]
struct BootStacks([[u8; BOOT_STACK_SIZE]; MAX_CORES]);

/// Written only by the core that owns each stack, through `sp`.
static mut BOOT_STACKS: BootStacks = BootStacks([[0; BOOT_STACK_SIZE]; MAX_CORES]);

/// Bytes of stack each core takes exceptions on (SP_EL1): the vectors'
/// frame, an IRQ handler, or a fault report.
const EXCEPTION_STACK_SIZE: usize = 16 * 1024;

#[repr(C, align(16))]
struct ExceptionStacks([[u8; EXCEPTION_STACK_SIZE]; MAX_CORES]);

/// Written only by the core that owns each stack, through SP_EL1.
static mut EXCEPTION_STACKS: ExceptionStacks = ExceptionStacks([[0; EXCEPTION_STACK_SIZE]; MAX_CORES]);

/// The kernel's own stacks: each core's boot stack and exception stack,
/// for a backtrace's walk to stay on.
pub(super) fn stack_arrays() -> [crate::backtrace::StackArray; 2] {
    [
        crate::backtrace::StackArray { start: &raw const BOOT_STACKS as usize, bytes: BOOT_STACK_SIZE },
        crate::backtrace::StackArray {
            start: &raw const EXCEPTION_STACKS as usize,
            bytes: EXCEPTION_STACK_SIZE,
        },
    ]
}

/// Whether the caller runs on core `index`'s boot stack: the core's own
/// code (its loop), not a strand, which runs on a fibre's stack.
pub(super) fn on_boot_stack(index: usize) -> bool {
    let sp: usize;
    // SAFETY: reads the stack pointer.
    unsafe { core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
    let base = &raw const BOOT_STACKS as usize + index * BOOT_STACK_SIZE;
    sp.wrapping_sub(base) < BOOT_STACK_SIZE
}

/// SCTLR_EL1 before the MMU is on: its RES1 bits, everything else off.
const SCTLR_EL1_BOOT: u64 = 0x30d0_0800;

global_asm!(
    include_str!("boot.s"),
    boot_primary = sym boot_primary,
    boot_secondary = sym boot_secondary,
    spin_index = sym super::spin_table::SPIN_INDEX,
    stacks = sym BOOT_STACKS,
    stack_size = const BOOT_STACK_SIZE,
    exception_stacks = sym EXCEPTION_STACKS,
    exception_stack_size = const EXCEPTION_STACK_SIZE,
    sctlr_el1 = const SCTLR_EL1_BOOT,
    exit_fault = const exit_code::FAULT,
);

unsafe extern "C" {
    fn _roving_secondary_start();
}

/// The physical address PSCI starts secondary cores at.
pub(super) fn secondary_entry_address() -> usize {
    _roving_secondary_start as *const () as usize
}

/// The boot core's first Rust. `dtb_hint` is whatever the loader left in
/// x0; `entered_el` is the exception level the core arrived at.
///
/// # Safety
///
/// Called once, from `_start`, on the boot core's boot stack, with `.bss`
/// zeroed and no other core running.
unsafe extern "C" fn boot_primary(dtb_hint: usize, entered_el: u64) -> ! {
    exception::install();
    cpu::set_core_local(cores::local(0));
    // SAFETY: no other core runs yet, and nothing has read the boot facts.
    let info = unsafe { boot_info::boot_info_mut() };
    info.arch.entered_el = entered_el as u8;
    if !dtb::discover(info, dtb_hint, board()) {
        // No tree, so no `bootargs` from one: a semihosting host, if there
        // is one, may have the command line.
        let _ = semihosting::command_line(&mut info.bootargs);
    }
    info.apply_core_limit();
    // SAFETY: single core, MMU off; the tables are built from the regions
    // the board and the device tree describe.
    unsafe { mmu::build_tables(info, board()) };
    // SAFETY: the tables identity-map the running image and its stack.
    unsafe { mmu::enable() };
    info.arch.from_tree.timer_hz = timer::adopt_frequency(info.arch.timer_hz);
    crate::boot::primary_main()
}

/// Every other core's first Rust. (PSCI starts it at the boot core's
/// exception level, already recorded, so `_entered_el` is not kept.)
///
/// # Safety
///
/// Called once per start of core `index`, from `_roving_secondary_start`,
/// on that core's boot stack, after the boot core built the page tables.
unsafe extern "C" fn boot_secondary(index: usize, _entered_el: u64) -> ! {
    exception::install();
    cpu::set_core_local(cores::local(index));
    // SAFETY: the boot core built and published the tables before it
    // started this core, and never changes them.
    unsafe { mmu::enable() };
    crate::boot::secondary_main(index)
}
