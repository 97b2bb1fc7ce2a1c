//! The architecture-independent part of boot: after the architecture has
//! turned the MMU on, before `main`.

use crate::{arch, board::board, boot_info, console, cores, heap, logger, println, serial};

unsafe extern "Rust" {
    // Defined by `roving_kernel::entry!` in the program.
    fn _roving_kernel_main();
}

/// The boot core, MMU on: console, banner, interrupts, then `main`.
pub(crate) fn primary_main() -> ! {
    console::init();
    let info = boot_info::boot_info();
    logger::init(info.bootarg("roving.log"));
    banner(info);
    heap::init(info);
    arch::init_interrupts_primary();
    cores::init(info);
    serial::init();
    boot_info::publish();
    // From here on work runs with interrupts open (`crate::masking`).
    arch::cpu::enable_interrupts();
    // SAFETY: `entry!` defines the symbol with this signature.
    unsafe { _roving_kernel_main() };
    crate::exit(0)
}

/// Any other core, MMU on: interrupts, then the start/park loop.
pub(crate) fn secondary_main(index: usize) -> ! {
    boot_info::wait_published();
    arch::init_interrupts_secondary();
    arch::cpu::enable_interrupts();
    cores::run_secondary(index)
}

fn banner(info: &boot_info::BootInfo) {
    let model = if info.model.is_empty() { "" } else { info.model.as_str() };
    let ram = info.ram.first().map_or(0, |r| r.base);
    println!(
        "roving-kernel {} on {}{}{model}{}: {} cores, {} MiB RAM at {ram:#x}",
        env!("CARGO_PKG_VERSION"),
        board().name,
        if model.is_empty() { "" } else { " (" },
        if model.is_empty() { "" } else { ")" },
        info.cores.len(),
        info.ram_bytes() >> 20,
    );
    let mut line = heapless::String::<160>::new();
    let _ = arch::describe(&info.arch, &mut line);
    let hz = arch::timer::hz();
    println!("  {line}; timer {}.{:02} MHz", hz / 1_000_000, hz % 1_000_000 / 10_000);
    let mut sources = heapless::String::<320>::new();
    let _ = arch::describe_sources(info, &mut sources);
    if !sources.is_empty() {
        println!("  {sources}");
    }
    if info.cores_found > info.cores.len() {
        let why = match info.core_limit {
            Some(limit) if limit < info.cores_found.min(crate::MAX_CORES) => {
                "roving.cores on the command line"
            }
            _ => "MAX_CORES",
        };
        println!("  the firmware lists {} cores; using {} ({why})", info.cores_found, info.cores.len());
    }
    if info.ram_left_out > 0 {
        println!(
            "  {} MiB of RAM left out: the firmware lists more than {} separate ranges",
            info.ram_left_out >> 20,
            boot_info::MAX_RAM_RANGES
        );
    }
    if info.reserved_widened {
        println!(
            "  the firmware reserves more than {} separate ranges: some were widened to cover their neighbours",
            boot_info::MAX_RESERVED_RANGES
        );
    }
}
