//! The generic interrupt controller: the wake-up SGI and the timer PPI.
//!
//! Only two interrupts exist for the kernel: [`WAKE_SGI`], sent by a core
//! that rings a deep-sleeping core's doorbell, and the EL1 virtual timer,
//! which ends a wait that has a deadline. Both are per-core (banked).
//!
//! GICv3's CPU interface is system registers, usable from any core at once,
//! and each core alone drives its own redistributor, found once by the boot
//! core in the regions the device tree lists (any number of cores, in any
//! affinity layout). GICv2's driver needs `&mut` for everything, so it sits
//! behind a lock, taken only to set a core up. The paths every interrupt
//! and every deep wake-up take are single register accesses that need no
//! lock, made directly: the CPU interface's acknowledge and end registers
//! are banked (each core reads and writes its own at the same address),
//! and an SGI is one write of the distributor's SGI register.

use crate::board::Pending;
use crate::boot_info::boot_info;
use crate::cores::CoreLocal;
use crate::mmio::Registers;
use aarch64_cpu::registers::{ICC_CTLR_EL1, Readable};
use arm_gic::gicv2::GicV2;
use arm_gic::gicv2::registers::{Gicc, Gicd as GicdV2};
use arm_gic::gicv3::registers::{Gicd as GicdV3, GicrSgi};
use arm_gic::gicv3::{GicCpuInterface, GicDistributor, GicRedistributor};
use arm_gic::{IntId, InterruptGroup, UniqueMmioPointer};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU16, AtomicUsize, Ordering::Relaxed};
use spin::{Mutex, Once};

use super::dtb::GicVersion;

/// The SGI that ends a core's deep (WFI) sleep.
pub(crate) const WAKE_SGI: IntId = IntId::sgi(1);

/// GICv2 register offset of GICD_ITARGETSR0: reading it tells a core its
/// own CPU interface bit (the register is banked per core).
const GICD_ITARGETSR0: usize = 0x800;

/// GICv2 CPU interface registers: acknowledge (GICC_IAR) and end of
/// interrupt (GICC_EOIR), both banked per core.
const GICC_IAR: usize = 0x00c;
const GICC_EOIR: usize = 0x010;

/// GICv2 GICD_SGIR: target list filter (bits 25:24; 0, the list), CPU
/// target list (23:16) and SGI number (3:0), in one write.
const GICD_SGIR: usize = 0xf00;

/// GICv2 interrupt ids 1020-1023 are special: 1023 says nothing is pending.
const V2_SPECIAL: u32 = 1020;

enum Gic {
    V2 { driver: Mutex<GicV2<'static>>, distributor: usize, cpu_interface: usize },
    V3 { distributor: usize },
}

static GIC: Once<Gic> = Once::new();

/// What the GIC needs to know per core, kept in its `CoreLocal`. (GICv3
/// targets an SGI by the core's MPIDR, which `CoreLocal` already holds.)
#[derive(Debug)]
pub(crate) struct CoreGic {
    /// GICv2: this core's bit in an SGI target list.
    v2_target: AtomicU16,
    /// GICv3: the address of this core's redistributor (0: none found).
    /// Set by the boot core before the core starts; only the core itself
    /// drives it.
    redistributor: AtomicUsize,
}

impl CoreGic {
    pub(crate) const fn new() -> Self {
        Self { v2_target: AtomicU16::new(0), redistributor: AtomicUsize::new(0) }
    }
}

/// Whether the GIC is running.
pub(super) fn available() -> bool {
    GIC.is_completed()
}

/// Brings up the distributor. Boot core only, once.
pub(super) fn init_primary() {
    let info = boot_info();
    let Some(gic) = info.arch.gic else { return };
    match gic.version {
        GicVersion::V2 => {
            // SAFETY: the device tree names these as the GICv2 distributor and
            // CPU interface; they are mapped as device memory, and this is the
            // only driver instance. (`init_this_core` runs its set-up.)
            let driver =
                unsafe { GicV2::new(gic.distributor as *mut GicdV2, gic.cpu_interface as *mut Gicc) };
            GIC.call_once(|| Gic::V2 {
                driver: Mutex::new(driver),
                distributor: gic.distributor,
                cpu_interface: gic.cpu_interface,
            });
        }
        GicVersion::V3 => {
            let Some(gicd) = NonNull::new(gic.distributor as *mut GicdV3) else { return };
            let found = find_redistributors(&gic);
            if found < info.cores.len() {
                log::warn!(
                    target: "roving_kernel",
                    "GICv3: redistributors found for {found} of {} cores; a core without one is never woken from deep idle",
                    info.cores.len()
                );
            }
            // SAFETY: the device tree names this as the distributor, mapped
            // as device memory; this driver lives only for this set-up, on
            // the boot core before any other core runs. (Later accesses are
            // single register writes: routes, enables.)
            let mut distributor = GicDistributor::new(unsafe { UniqueMmioPointer::new(gicd) });
            // Affinity routing and group 1 on; every shared line in group 1,
            // level-triggered, at the default priority.
            distributor.configure_default_settings();
            GIC.call_once(|| Gic::V3 { distributor: gic.distributor });
        }
    }
}

/// Finds each core's redistributor: walks every region's frames, which
/// each name the core they serve (GICR_TYPER's affinity), until a frame
/// marked last or the region's end. Records each in its core's
/// `CoreGic`; returns how many cores got one. Boot core only, before
/// other cores start.
fn find_redistributors(gic: &super::GicInfo) -> usize {
    let cores = &boot_info().cores;
    let mut found = 0;
    for region in gic.redistributors() {
        let mut frame = region.base;
        while frame + core::mem::size_of::<GicrSgi>() <= region.end() {
            let Some(pointer) = NonNull::new(frame as *mut GicrSgi) else { break };
            // SAFETY: a frame inside a redistributor region the device tree
            // names, mapped as device memory (`mmu::build_tables`); only the
            // boot core touches redistributors now, through this one
            // pointer at a time.
            let typer = GicRedistributor::new(unsafe { UniqueMmioPointer::new(pointer) }).typer();
            if let Some(index) = cores.iter().position(|&id| id == typer.core_mpidr()) {
                crate::cores::local(index).arch.redistributor.store(frame, Relaxed);
                found += 1;
            }
            if typer.last_redistributor() {
                break;
            }
            // GICv4 adds two frames for virtual LPIs to each core's two.
            let frames = if typer.virtual_lpis_supported() { 2 } else { 1 };
            frame += frames * core::mem::size_of::<GicrSgi>();
        }
    }
    found
}

/// The calling core's redistributor, if the boot core found it.
fn own_redistributor(me: &CoreLocal) -> Option<GicRedistributor<'static>> {
    let frame = NonNull::new(me.arch.redistributor.load(Relaxed) as *mut GicrSgi)?;
    // SAFETY: the frame the boot core found for this core
    // (`find_redistributors`), mapped as device memory; only this core
    // drives it, with interrupts masked, so no other pointer to it is in use.
    Some(GicRedistributor::new(unsafe { UniqueMmioPointer::new(frame) }))
}

/// Enables the wake-up SGI and the timer on the calling core.
pub(super) fn init_this_core() {
    let Some(gic) = GIC.get() else { return };
    let me = crate::cores::current().expect("per-core data is set before interrupts");
    let timer = IntId::ppi(boot_info().arch.timer_intid - 16);
    crate::masking::without_interrupts(|| match gic {
        Gic::V2 { driver, distributor, .. } => {
            let mut driver = driver.lock();
            // The driver has no CPU-interface-only set-up; the distributor
            // part it repeats is idempotent.
            driver.setup();
            // Enabling can fail only for ids the GIC does not implement; SGIs and the
            // architected timer PPI always exist.
            let _ = driver.enable_interrupt(WAKE_SGI, true);
            let _ = driver.enable_interrupt(timer, true);
            // This core's banked, read-only target register.
            let target = distributor_registers(*distributor).read32(GICD_ITARGETSR0) & 0xff;
            me.arch.v2_target.store(target as u16, Relaxed);
            // Lines bound to this core before it first ran.
            for (line, route) in V2_ROUTES.iter().enumerate() {
                if route.load(Relaxed) == me.index + 1 {
                    write_byte(GICD_ITARGETSR + line, target as u8);
                }
            }
        }
        Gic::V3 { .. } => {
            GicCpuInterface::enable_system_register_el1();
            let Some(mut redistributor) = own_redistributor(me) else { return };
            // Every SGI and PPI off, in group 1, at the default priority.
            redistributor.configure_default_settings();
            // Already awake (a core that restarts) is fine.
            let _ = redistributor.mark_core_awake();
            // EOI also deactivates (EOImode 0): the field resets to an
            // unknown value. aarch64-cpu has this register read-only.
            // SAFETY: writes only the CPU interface's control register,
            // whose system-register access was just enabled.
            unsafe {
                core::arch::asm!("msr ICC_CTLR_EL1, xzr", "isb", options(nomem, nostack, preserves_flags))
            };
            GicCpuInterface::enable_group1(true);
            GicCpuInterface::set_priority_mask(0xff);
            if me.hw_id() & 0xff > 15 && ICC_CTLR_EL1.get() & ICC_CTLR_RSS == 0 {
                log::warn!(
                    target: "roving_kernel",
                    "core {}: affinity 0 is past 15 and the GIC has no range selector: its wake-ups cannot reach it",
                    me.index
                );
            }
            // Enabling fails only for ids the GIC lacks; these always exist.
            let _ = redistributor.enable_interrupt(WAKE_SGI, true);
            let _ = redistributor.enable_interrupt(timer, true);
        }
    });
}

/// Raises the wake-up SGI on `target`. The caller has made the ring it
/// announces visible (DSB) first.
pub(super) fn send_wake(target: &CoreLocal) {
    let Some(gic) = GIC.get() else { return };
    match gic {
        Gic::V2 { distributor, .. } => {
            let target_list = u32::from(target.arch.v2_target.load(Relaxed)) & 0xff;
            distributor_registers(*distributor).write32(GICD_SGIR, target_list << 16 | WAKE_SGI.raw_value());
        }
        Gic::V3 { .. } => {
            let value = sgi1r(WAKE_SGI.raw_value(), target.hw_id());
            // SAFETY: a write of the SGI generation register, which only
            // raises the wake-up SGI on the target core; system-register
            // access to the CPU interface is on (`init_this_core`).
            unsafe {
                core::arch::asm!("msr ICC_SGI1R_EL1, {}", in(reg) value, options(nomem, nostack, preserves_flags))
            };
        }
    }
}

/// The ICC_SGI1R_EL1 value that raises SGI `intid` on the one core whose
/// MPIDR is `mpidr`: its Aff3, Aff2 and Aff1, and Aff0 as the range
/// selector (Aff0 / 16) and a bit of the 16-bit target list (Aff0 % 16).
/// (arm-gic's `SgiTarget` has no range selector: cores with Aff0 past 15
/// would get the SGI of Aff0 % 16.)
const fn sgi1r(intid: u32, mpidr: u64) -> u64 {
    let (aff0, aff1, aff2, aff3) =
        (mpidr & 0xff, (mpidr >> 8) & 0xff, (mpidr >> 16) & 0xff, (mpidr >> 32) & 0xff);
    aff3 << 48
        | (aff0 >> 4) << 44
        | aff2 << 32
        | ((intid as u64) & 0xf) << 24
        | aff1 << 16
        | 1 << (aff0 & 0xf)
}

// The encoding, checked where it is built: core 0; Aff1 2, Aff0 1; and
// Aff3 1, Aff2 3, Aff1 5, Aff0 35 (range 2, list bit 3).
const _: () = assert!(sgi1r(1, 0) == 1 << 24 | 1);
const _: () = assert!(sgi1r(1, 0x0201) == 1 << 24 | 2 << 16 | 1 << 1);
const _: () = assert!(sgi1r(1, 0x01_0003_0523) == 1 << 48 | 2 << 44 | 3 << 32 | 1 << 24 | 5 << 16 | 1 << 3);

/// ICC_CTLR_EL1.RSS: the CPU interface can target Aff0 16 to 255.
const ICC_CTLR_RSS: u64 = 1 << 18;

/// An interrupt the calling core's CPU interface has acknowledged: handle
/// [`Acknowledged::line`], then hand it back to [`CpuInterface::end`].
pub(super) struct Acknowledged<Token> {
    /// As the CPU interface returned it, for the end of interrupt, which
    /// takes it whole.
    token: Token,
    /// The interrupt's number (on GICv2 an SGI's sender, in bits 12:10 of
    /// `id`, is masked off).
    number: u32,
}

/// What an acknowledged interrupt is for.
pub(super) enum Line {
    /// One of the kernel's own (the wake-up, the timer), or another that
    /// no device handler can take (an unexpected SGI or PPI).
    Kernel(Pending),
    /// Device line `number`, a shared peripheral interrupt.
    Device(u32),
}

impl<Token> Acknowledged<Token> {
    /// The interrupt's number and what it is for.
    #[inline(always)]
    pub(super) fn line(&self) -> Line {
        let number = self.number;
        let timer = number == boot_info().arch.timer_intid;
        let wake = number == WAKE_SGI.raw_value();
        if !(wake || timer) && (FIRST_SPI..SPECIAL).contains(&number) {
            Line::Device(number)
        } else {
            Line::Kernel(Pending { wake, timer, other: !(wake || timer) })
        }
    }
}

/// A core's GIC CPU interface: where the IRQ vector acknowledges and ends
/// interrupts. One type per version, so that its loop is compiled for the
/// version in use and asks which only once per interrupt exception.
pub(super) trait CpuInterface {
    /// What the end of interrupt takes back: the acknowledged id, whole.
    type Token;
    /// Acknowledges the calling core's highest-priority pending interrupt,
    /// if any. Called from the IRQ vector, once per exception.
    fn acknowledge(&self) -> Option<Acknowledged<Self::Token>>;
    /// Ends an interrupt [`acknowledge`](Self::acknowledge) returned, once
    /// it has been handled.
    fn end(&self, acknowledged: Acknowledged<Self::Token>);
}

/// GICv2's CPU interface: its banked registers, read and written directly
/// (module docs), so no core waits for another's interrupt.
pub(super) struct V2Interface(Registers);

/// GICv3's CPU interface: system registers, the calling core's own.
pub(super) struct V3Interface;

/// The running GIC's CPU interface.
pub(super) enum Interface {
    V2(V2Interface),
    V3(V3Interface),
}

/// The CPU interface of the running GIC, once the boot core has set it up.
pub(super) fn interface() -> Option<Interface> {
    Some(match GIC.get()? {
        // SAFETY: the CPU interface the device tree names, mapped as
        // device memory; only its banked IAR and EOIR are used through this.
        Gic::V2 { cpu_interface, .. } => Interface::V2(V2Interface(unsafe { Registers::at(*cpu_interface) })),
        Gic::V3 { .. } => Interface::V3(V3Interface),
    })
}

impl CpuInterface for V2Interface {
    /// GICC_IAR's value: the id and, for an SGI, its sender.
    type Token = u32;

    #[inline(always)]
    fn acknowledge(&self) -> Option<Acknowledged<u32>> {
        // The interrupt id (bits 9:0) and, for an SGI, its sender (12:10).
        let value = self.0.read32(GICC_IAR) & 0x1fff;
        let number = value & 0x3ff;
        (number < V2_SPECIAL).then_some(Acknowledged { token: value, number })
    }

    #[inline(always)]
    fn end(&self, acknowledged: Acknowledged<u32>) {
        self.0.write32(GICC_EOIR, acknowledged.token);
    }
}

impl CpuInterface for V3Interface {
    /// ICC_IAR1_EL1's interrupt id.
    type Token = u32;

    #[inline(always)]
    fn acknowledge(&self) -> Option<Acknowledged<u32>> {
        let id = GicCpuInterface::get_and_acknowledge_interrupt(InterruptGroup::Group1)?;
        Some(Acknowledged { token: id.raw_value(), number: id.raw_value() })
    }

    /// One write of ICC_EOIR1_EL1. The arm-gic crate's `end_interrupt`
    /// builds the value through a register type out of line, with a range
    /// check of an id the acknowledge register itself gave: 18
    /// instructions on every interrupt's way out, against 1.
    #[inline(always)]
    fn end(&self, acknowledged: Acknowledged<u32>) {
        let id = u64::from(acknowledged.token);
        // SAFETY: ends, on this core's own CPU interface, the group 1
        // interrupt its acknowledge register returned; no memory is
        // touched, and the asm is a compiler barrier (no `nomem`), so the
        // handler's stores stay before the end.
        unsafe { core::arch::asm!("msr ICC_EOIR1_EL1, {}", in(reg) id, options(nostack, preserves_flags)) };
    }
}

/// "GICv2", "GICv3", or "no GIC", for the boot banner.
pub(super) fn name(out: &mut impl core::fmt::Write) -> core::fmt::Result {
    match boot_info().arch.gic {
        Some(gic) => write!(out, "GICv{}", gic.version.number()),
        None => out.write_str("no GIC"),
    }
}

/// The first shared peripheral interrupt: device lines start here.
const FIRST_SPI: u32 = 32;
/// Interrupt ids from here on are special (1023: spurious).
const SPECIAL: u32 = 1020;
/// Distributor registers (the same offsets on GICv2 and GICv3).
const GICD_TYPER: usize = 0x004;
const GICD_ISENABLER: usize = 0x100;
const GICD_ICENABLER: usize = 0x180;
const GICD_ISPENDR: usize = 0x200;
const GICD_IPRIORITYR: usize = 0x400;
/// GICv2: one byte of CPU-interface bits per line.
const GICD_ITARGETSR: usize = 0x800;
/// GICv3: one affinity word per line.
const GICD_IROUTER: usize = 0x6000;

/// GICv2: the core (index + 1; 0: none) each bound line is routed to.
static V2_ROUTES: [AtomicUsize; crate::interrupts::MAX_LINES] =
    [const { AtomicUsize::new(0) }; crate::interrupts::MAX_LINES];

fn distributor() -> Option<usize> {
    match GIC.get()? {
        Gic::V2 { distributor, .. } | Gic::V3 { distributor, .. } => Some(*distributor),
    }
}

/// The distributor's registers, at `base`.
fn distributor_registers(base: usize) -> Registers {
    // SAFETY: the GIC's distributor, mapped as device memory; every offset
    // used is one of its registers, at its width.
    unsafe { Registers::at(base) }
}

/// Writes `value` to the distributor register at `offset`.
fn write32(offset: usize, value: u32) {
    let Some(base) = distributor() else { return };
    distributor_registers(base).write32(offset, value);
}

/// Device lines the GIC has: its shared peripheral interrupts.
pub(crate) fn device_lines() -> Option<core::ops::Range<u32>> {
    let base = distributor()?;
    let typer = distributor_registers(base).read32(GICD_TYPER);
    let lines = (32 * ((typer & 0x1f) + 1)).min(1020);
    Some(FIRST_SPI..lines)
}

/// Whether `line` is one of the kernel's own interrupts.
pub(crate) fn is_kernel_line(line: u32) -> bool {
    line == WAKE_SGI.raw_value() || line == boot_info().arch.timer_intid
}

/// Routes SPI `line` to core `core`, at the middle priority.
pub(crate) fn route_line(line: u32, core: usize) {
    let Some(gic) = GIC.get() else { return };
    let target = crate::cores::local(core);
    crate::masking::without_interrupts(|| {
        match gic {
            Gic::V2 { .. } => {
                // A core's CPU interface bit is read by the core itself when
                // it sets up its interface (`init_this_core`, which also
                // rewrites this route). Before that, guess the usual
                // numbering (interface = affinity 0, one cluster): a line
                // raised with no target would be lost, not held.
                V2_ROUTES[line as usize].store(core + 1, Relaxed);
                let known = target.arch.v2_target.load(Relaxed) as u8;
                let id = target.hw_id();
                let guessed = if id < 8 { 1 << id } else { 0 };
                write_byte(GICD_ITARGETSR + line as usize, if known != 0 { known } else { guessed });
            }
            Gic::V3 { .. } => {
                let id = target.hw_id();
                // Aff3 in bits 39:32, Aff2.Aff1.Aff0 in 23:0; routing mode
                // 0 (this one core).
                let route = (id & 0x00ff_ffff) | ((id >> 32) & 0xff) << 32;
                let Some(base) = distributor() else { return };
                distributor_registers(base).write64(GICD_IROUTER + 8 * line as usize, route);
            }
        }
        write_byte(GICD_IPRIORITYR + line as usize, 0x80);
    });
}

/// Enables SPI `line`.
pub(crate) fn enable_line(line: u32) {
    write32(GICD_ISENABLER + 4 * (line as usize / 32), 1 << (line % 32));
}

/// Disables SPI `line`.
pub(crate) fn disable_line(line: u32) {
    write32(GICD_ICENABLER + 4 * (line as usize / 32), 1 << (line % 32));
}

/// Makes SPI `line` pending.
pub(crate) fn pend_line(line: u32) {
    write32(GICD_ISPENDR + 4 * (line as usize / 32), 1 << (line % 32));
}

/// Whether SPI `line` is pending (or active and pending).
pub(crate) fn line_pending(line: u32) -> bool {
    let Some(base) = distributor() else { return false };
    distributor_registers(base).read32(GICD_ISPENDR + 4 * (line as usize / 32)) & (1 << (line % 32)) != 0
}

/// Writes a byte-accessible distributor register (priority, target).
fn write_byte(offset: usize, value: u8) {
    let Some(base) = distributor() else { return };
    distributor_registers(base).write8(offset, value);
}
