//! x86_64 PCs: PVH boot into long mode, the ACPI MADT's cores started with
//! INIT-SIPI-SIPI, the local APIC's wake-up IPIs and one-shot timer, the
//! TSC as the tick counter, HLT (deep) and MONITOR/MWAIT (light) idle
//! tiers, and isa-debug-exit to end a run under QEMU.
//!
//! The rest of the kernel uses only what this module re-exports: the same
//! names exist for every architecture.

mod acpi;
mod apic;
mod backtrace;
mod boot;
pub use boot::Loader;
pub(crate) mod cpu;
mod exception;
mod fault;
mod frame;
pub(crate) mod idle;
mod ioapic;
mod multiboot;
mod paging;
mod pic;
pub(crate) mod preempt;
mod pvh;
mod smp;
pub(crate) mod timer;

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What the boot core learned that only x86_64 cares about.
#[derive(Debug)]
pub struct ArchInfo {
    /// Which loader started the kernel.
    pub loader: boot::Loader,
    /// Where the ACPI RSDP is, if the loader or the command line said
    /// (else the BIOS areas are searched).
    pub rsdp: Option<usize>,
    /// What `roving.acpi_rsdp=ADDRESS` on the command line did: it names
    /// the RSDP for loaders that pass none, or to try other tables, as
    /// Linux's `acpi_rsdp=` does.
    pub rsdp_argument: RsdpArgument,
    /// Whether the ACPI MADT was found (the cores come from it).
    pub madt: bool,
    /// Whether MONITOR/MWAIT is there for the light idle tier.
    pub mwait: bool,
    /// TSC ticks per second, as calibrated at boot.
    pub tsc_hz: u64,
    /// Local APIC timer counts per second (divide-by-16), as calibrated.
    pub apic_timer_hz: u64,
    /// APIC timer counts per TSC tick, in 32.32 fixed point: arming a
    /// deadline is then one multiplication, where the division by the TSC's
    /// rate cost a call to the 128-bit division routine each time.
    pub apic_counts_per_tick_q32: u64,
    /// How uncertain the calibration window's ends were, in millionths
    /// of it: at most 2000 (0.2%), unless the boot core kept losing its
    /// CPU, which the banner then says.
    pub calibration_ppm: u64,
    /// Bytes of RAM above 4 GiB the page tables could not map, left out
    /// of [`BootInfo::ram`](crate::boot_info::BootInfo::ram).
    pub unmapped_ram: usize,
    /// The I/O APICs the MADT lists: they carry the device lines.
    pub io_apics: heapless::Vec<IoApicInfo, 4>,
    /// The MADT's interrupt source overrides: ISA IRQs that reach an
    /// I/O APIC on another line, or with another polarity or trigger.
    pub overrides: heapless::Vec<SourceOverride, 16>,
}

impl ArchInfo {
    pub(crate) const EMPTY: Self = Self {
        loader: boot::Loader::Pvh,
        rsdp: None,
        rsdp_argument: RsdpArgument::Absent,
        madt: false,
        mwait: false,
        tsc_hz: 0,
        apic_timer_hz: 0,
        apic_counts_per_tick_q32: 0,
        calibration_ppm: 0,
        unmapped_ram: 0,
        io_apics: heapless::Vec::new(),
        overrides: heapless::Vec::new(),
    };
}

/// `roving.acpi_rsdp=ADDRESS` on the command line, as the boot core read
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RsdpArgument {
    /// Not given: the loader's RSDP, or the BIOS areas', is used.
    Absent,
    /// Given, and used instead of the loader's.
    Used,
    /// Given, but not a non-zero address (hexadecimal with `0x`, or
    /// decimal): ignored.
    Ignored,
}

/// An I/O APIC, as the MADT describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoApicInfo {
    /// Its registers' physical address.
    pub address: usize,
    /// The global system interrupt (line) its first input carries.
    pub first_line: u32,
}

/// An ISA IRQ that reaches the I/O APIC differently from the ISA default
/// (line = IRQ, edge-triggered, active high).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceOverride {
    /// The ISA IRQ.
    pub isa_irq: u8,
    /// The global system interrupt (line) it arrives on.
    pub line: u32,
    /// The MADT's MPS INTI flags: polarity in bits 1:0, trigger in 3:2.
    pub flags: u16,
}

/// QEMU's `isa-debug-exit` device (`-device isa-debug-exit,iobase=0xf4,iosize=4`):
/// a write of `v` ends QEMU with status `2v + 1`.
const DEBUG_EXIT_PORT: u16 = 0xf4;
/// Added to the exit code before it is written, so that no guest status
/// reads as QEMU's own failure status 1 (`2 * 0 + 1`).
pub const DEBUG_EXIT_BIAS: i32 = 16;

/// Ends the run: under QEMU through `isa-debug-exit` (QEMU's status is then
/// `2 * (code + DEBUG_EXIT_BIAS) + 1`; `tools/qemu-run` maps it back).
/// Without that device the write does nothing, and the core halts after
/// saying so.
pub fn exit(code: i32) -> ! {
    static EXITING: AtomicBool = AtomicBool::new(false);
    if !EXITING.swap(true, Relaxed) {
        // SAFETY: a write to the debug-exit port; on a machine without the
        // device the port is unused and the write is ignored.
        unsafe {
            x86_64::instructions::port::Port::<u32>::new(DEBUG_EXIT_PORT)
                .write((code + DEBUG_EXIT_BIAS) as u32)
        };
        // QEMU ends the run from its own thread: give it a moment before
        // concluding there is no such device.
        let until = timer::ticks() + timer::hz() / 10;
        while timer::ticks() < until {
            core::hint::spin_loop();
        }
    }
    crate::console::emergency(format_args!(
        "roving-kernel: the run could not end (exit needs QEMU's isa-debug-exit device); core halted\n"
    ));
    cpu::halt()
}

/// Paging is on from the first instruction of long mode.
pub fn mmu_enabled() -> bool {
    true
}

/// The calling core's hardware id: its initial APIC id.
pub fn hw_id() -> u64 {
    cpu::apic_id()
}

pub(crate) use backtrace::{follows_call, linked_address, registers_here};

/// The kernel's own per-core stacks (boot, and interrupt with faults in
/// its lower half), for backtraces.
pub(crate) fn stack_arrays() -> [crate::backtrace::StackArray; 2] {
    [boot::boot_stacks(), exception::interrupt_stacks()]
}

/// Per-core state the architecture keeps in [`CoreLocal`](crate::cores::CoreLocal).
pub(crate) use apic::CoreApic as CoreArch;

/// Interrupt set-up on the boot core: the legacy PICs off (its local APIC
/// went on before the timer calibration), every I/O APIC line masked.
pub(crate) fn init_interrupts_primary() {
    pic::disable();
    ioapic::init();
}

/// Interrupt set-up on every other core.
pub(crate) fn init_interrupts_secondary() {
    apic::init_this_core();
}

/// Starts core `index` for the first time with INIT-SIPI-SIPI, and waits
/// for it to come online. The IPIs give no answer: a core the ACPI tables
/// list but that cannot start (absent, disabled by the firmware, or dead)
/// stays put, and whoever waits for it would wait for ever; so, as for a
/// spin table's core, it is given up after a while.
pub(crate) fn start_core(index: usize, hw_id: u64) -> Result<(), roving::platform::StartCoreError> {
    use roving::platform::StartCoreError;
    match crate::board::board().core_start {
        crate::board::CoreStart::StartupIpi => {
            smp::start(index, hw_id).map_err(|code| StartCoreError::Refused { core: index, code })?;
        }
    }
    crate::cores::await_arrival(index)
}

/// A one-line description of the firmware and interrupt set-up, for the
/// boot banner.
/// For the boot banner: where the boot facts came from. The start info
/// and ACPI are the only sources; `describe` names them.
pub(crate) fn describe_sources(
    _: &crate::boot_info::BootInfo,
    _: &mut impl core::fmt::Write,
) -> core::fmt::Result {
    Ok(())
}

/// The console's UART sits on I/O ports, where the firmware's tables
/// never move it.
pub(crate) fn console_base(_: &ArchInfo) -> Option<usize> {
    None
}

pub(crate) fn describe(info: &ArchInfo, out: &mut impl core::fmt::Write) -> core::fmt::Result {
    out.write_str(match info.loader {
        boot::Loader::Pvh => "PVH entry, ",
        boot::Loader::Multiboot2 => "Multiboot2 entry, ",
    })?;
    if boot::load_offset() != 0 {
        unsafe extern "C" {
            /// The linker script's first byte of the image.
            static __image_start: u8;
        }
        let at = &raw const __image_start as usize;
        write!(out, "loaded at {at:#x} (linked at {:#x}), ", at.wrapping_sub(boot::load_offset() as usize))?;
    }
    match (info.rsdp_argument, info.rsdp) {
        (RsdpArgument::Used, Some(rsdp)) => write!(out, "ACPI RSDP at {rsdp:#x} from the command line, ")?,
        (RsdpArgument::Ignored, _) => out.write_str("roving.acpi_rsdp ignored (not an address), ")?,
        _ => {}
    }
    out.write_str(if info.madt { "cores from the ACPI MADT" } else { "no ACPI MADT (one core)" })?;
    if apic::is_x2apic() {
        out.write_str(", x2APIC, ")?;
    } else {
        write!(out, ", xAPIC at {:#x}, ", apic::base())?;
    }
    out.write_str(if info.mwait { "MWAIT light tier" } else { "no MWAIT (light tier spins)" })?;
    if info.calibration_ppm > timer::TOLERANCE_PPM {
        write!(
            out,
            ", timer calibrated only to {}.{:02}%",
            info.calibration_ppm / 10_000,
            info.calibration_ppm % 10_000 / 100
        )?;
    }
    if info.unmapped_ram > 0 {
        write!(out, ", {} MiB of RAM left unmapped", info.unmapped_ram >> 20)?;
    }
    Ok(())
}

/// Device lines that can be bound: the I/O APICs' (`ioapic.rs`).
pub(crate) fn device_lines() -> Option<core::ops::Range<u32>> {
    ioapic::lines()
}

/// The kernel's interrupts are local APIC vectors, not I/O APIC lines.
pub(crate) fn is_kernel_line(_line: u32) -> bool {
    false
}

/// Each I/O APIC line has its own route.
pub(crate) fn shared_route() -> bool {
    false
}

/// Whether a device line can be routed to `core`: an I/O APIC entry names
/// its core by an 8-bit APIC id (without interrupt remapping, which the
/// kernel does not set up), so cores with x2APIC ids past 254 take none.
pub(crate) fn can_route_to(core: usize) -> bool {
    crate::cores::local(core).hw_id() <= u64::from(apic::MAX_XAPIC_ID)
}

/// Routes `line` to core `core`.
pub(crate) fn route_line(line: u32, core: usize) {
    ioapic::route(line, crate::cores::local(core).hw_id());
}

/// Unmasks `line`.
pub(crate) fn enable_line(line: u32) {
    ioapic::set_masked(line, false);
}

/// Masks `line`.
pub(crate) fn disable_line(line: u32) {
    ioapic::set_masked(line, true);
}

/// Whether `line`'s vector is pending at the calling core's local APIC
/// (the I/O APIC delivered it again, or it was raised): called on the
/// line's core, after its end of interrupt.
pub(crate) fn line_pending(line: u32) -> bool {
    apic::vector_pending(ioapic::vector(line))
}

/// Makes `line`'s handler run on `core`: the I/O APIC cannot raise a line
/// in software, so the line's vector is sent to the core as an IPI, which
/// is how the I/O APIC itself delivers it.
pub(crate) fn pend_line(line: u32, core: usize) -> Result<(), crate::interrupts::BindError> {
    apic::send_vector(crate::cores::local(core).hw_id(), ioapic::vector(line));
    Ok(())
}

/// The line ISA IRQ `irq` arrives on.
pub(crate) fn isa_line(irq: u8) -> Option<u32> {
    Some(ioapic::isa_line(irq))
}
