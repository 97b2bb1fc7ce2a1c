//! AArch64: boot, exceptions, MMU, the interrupt controller (a GIC, or the
//! board's own), starting cores (PSCI or a spin table), the generic timer,
//! and the WFE/WFI idle tiers.
//!
//! The rest of the kernel uses only what this module re-exports: the same
//! names will exist for every architecture.

mod backtrace;
mod boot;
pub(crate) mod cpu;
mod dtb;
mod exception;
mod fault;
mod frame;
mod gic;
pub(crate) mod idle;
mod irq;
mod mmu;
pub(crate) mod preempt;
mod psci;
mod semihosting;
mod spin_table;
pub(crate) mod timer;

pub use dtb::{ArchInfo, Conduit, GicInfo, GicVersion};

use crate::board::CoreStart;
use roving::platform::StartCoreError;

/// Ends the run: the exit status reaches the host through semihosting
/// (QEMU must run with `-semihosting`).
///
/// Without a semihosting host the call traps as an undefined instruction,
/// the fault report runs and calls `exit` again; that second call stops the
/// core instead of looping.
pub fn exit(code: i32) -> ! {
    static EXITING: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if cpu::mmu_enabled() && EXITING.swap(true, core::sync::atomic::Ordering::Relaxed) {
        crate::console::emergency(format_args!(
            "roving-kernel: the run could not end (exit needs a semihosting host: QEMU -semihosting); core halted\n"
        ));
        cpu::halt();
    }
    semihosting::exit(code)
}

/// Whether the calling core's MMU (and with it, its caches) is on.
pub fn mmu_enabled() -> bool {
    cpu::mmu_enabled()
}

/// The calling core's hardware id (the affinity fields of MPIDR_EL1).
pub fn hw_id() -> u64 {
    cpu::hw_id()
}

pub(crate) use backtrace::{follows_call, linked_address, registers_here};

/// The kernel's own per-core stacks (boot and exception), for backtraces.
pub(crate) fn stack_arrays() -> [crate::backtrace::StackArray; 2] {
    boot::stack_arrays()
}

/// Per-core state the architecture keeps in [`CoreLocal`](crate::cores::CoreLocal).
pub(crate) use gic::CoreGic as CoreArch;
pub(crate) use irq::{
    can_route_to, device_lines, disable_line, enable_line, is_kernel_line, line_pending, pend_line,
    route_line, shared_route,
};

/// Interrupt controller set-up on the boot core, once the MMU is on.
pub(crate) fn init_interrupts_primary() {
    irq::init_primary();
}

/// Interrupt controller set-up on every other core.
pub(crate) fn init_interrupts_secondary() {
    irq::init_this_core();
}

/// Starts core `index` for the first time; it will run the kernel's
/// secondary entry. A spin-table start waits for the core to arrive.
pub(crate) fn start_core(index: usize, hw_id: u64) -> Result<(), StartCoreError> {
    let refused = |code| StartCoreError::Refused { core: index, code };
    match crate::board::board().core_start {
        CoreStart::Psci => psci::cpu_on(hw_id, boot::secondary_entry_address(), index).map_err(refused),
        CoreStart::SpinTable { release } => {
            // The tree's slot for the core, else the board's table's.
            let info = crate::boot_info::boot_info();
            let in_ram = |slot: u64| {
                info.ram.iter().any(|ram| ram.base <= slot as usize && (slot as usize) < ram.end())
            };
            let slot = info.arch.release_slots.get(index).copied().filter(|&slot| slot != 0 && in_ram(slot));
            let slot = slot.map_or_else(|| release + 8 * (hw_id & 0xff) as usize, |slot| slot as usize);
            spin_table::release(slot, index, hw_id).map_err(refused)?;
            // The table gives no answer: a core whose firmware does not
            // watch that slot (a wrong `cpu-release-addr`) stays put, and
            // whoever waits for it would wait for ever.
            crate::cores::await_arrival(index)
        }
    }
}

/// Where the device tree put the console's UART, if it names the board's
/// kind of console device.
pub(crate) fn console_base(info: &ArchInfo) -> Option<usize> {
    match crate::board::board().console {
        crate::board::ConsoleDevice::Pl011 { .. } => info.uart.map(|uart| uart.base),
    }
}

/// For the boot banner: where the boot facts came from, the firmware's
/// device tree or the board's constants.
pub(crate) fn describe_sources(
    info: &crate::boot_info::BootInfo,
    out: &mut impl core::fmt::Write,
) -> core::fmt::Result {
    let arch = &info.arch;
    let Some(tree) = arch.device_tree else {
        return out.write_str("no device tree: the board's RAM, cores and interrupt controller");
    };
    let found = arch.from_tree;
    write!(out, "from the device tree at {tree:#x}")?;
    let mut separator = ": ";
    let mut item = |out: &mut dyn core::fmt::Write, what: core::fmt::Arguments<'_>| {
        let result = write!(out, "{separator}{what}");
        separator = ", ";
        result
    };
    if found.ram {
        let ranges = info.ram.len();
        item(out, format_args!("RAM in {ranges} range{}", if ranges == 1 { "" } else { "s" }))?;
    }
    if found.cores {
        item(out, format_args!("{} cores", info.cores_found))?;
    }
    if let Some(gic) = arch.gic.filter(|_| found.interrupts) {
        item(out, format_args!("GICv{} at {:#x}", gic.version.number(), gic.distributor))?;
    }
    if found.interrupts && !arch.chip_parts.is_empty() {
        let at = arch.chip_parts.iter().map(|part| part.base);
        item(out, format_args!("interrupt controller at {:#x}", at.clone().next().unwrap_or(0)))?;
        for base in at.skip(1) {
            write!(out, " and {base:#x}")?;
        }
    }
    if let Some(uart) = arch.uart {
        item(out, format_args!("PL011 at {:#x}", uart.base))?;
    }
    if found.timer_hz {
        item(out, format_args!("the timer's frequency (CNTFRQ_EL0 is 0)"))?;
    }
    if let count @ 1.. = info.reserved.len() {
        item(out, format_args!("{count} reserved range{}", if count == 1 { "" } else { "s" }))?;
    }
    let theirs = [(found.ram, "RAM"), (found.cores, "cores"), (found.interrupts, "interrupt controller")];
    let mut separator = "; the board's: ";
    for (_, what) in theirs.iter().filter(|(from_tree, _)| !*from_tree) {
        write!(out, "{separator}{what}")?;
        separator = ", ";
    }
    // Why, where the tree had the thing but not in a usable form.
    let mut separator = " (the tree: ";
    for problem in &arch.tree_problems {
        write!(out, "{separator}{problem}")?;
        separator = "; ";
    }
    if !arch.tree_problems.is_empty() {
        out.write_str(")")?;
    }
    Ok(())
}

/// A one-line description of the interrupt controller and firmware, for the
/// boot banner.
pub(crate) fn describe(info: &ArchInfo, out: &mut impl core::fmt::Write) -> core::fmt::Result {
    write!(out, "entered at EL{}", info.entered_el)?;
    match (crate::board::board().core_start, info.psci) {
        (CoreStart::SpinTable { release }, _) => {
            match info.release_slots.get(1).copied().filter(|&slot| slot != 0) {
                Some(slot) => write!(out, ", spin table from the device tree (core 1 at {slot:#x})")?,
                None => write!(out, ", spin table at {release:#x}")?,
            }
        }
        (CoreStart::Psci, Some(conduit)) => write!(out, ", PSCI over {}", conduit.name())?,
        (CoreStart::Psci, None) => write!(out, ", no PSCI")?,
    }
    out.write_str(", ")?;
    irq::name(out)
}
