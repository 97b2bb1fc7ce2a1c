//! The generic interrupt controller: the wake-up SGI and the timer PPI.
//!
//! Only two interrupts exist for the kernel: [`WAKE_SGI`], sent by a core
//! that rings a deep-sleeping core's doorbell, and the EL1 virtual timer,
//! which ends a wait that has a deadline. Both are per-core (banked).
//!
//! GICv3's CPU interface is system registers, usable from any core at once.
//! GICv2's driver needs `&mut` for everything, so it sits behind a lock;
//! the lock is only taken to send a deep wake-up or acknowledge one, always
//! with interrupts masked.

use crate::board::Pending;
use crate::boot_info::boot_info;
use crate::cores::CoreLocal;
use arm_gic::gicv2::GicV2;
use arm_gic::gicv2::registers::{Gicc, Gicd as GicdV2};
use arm_gic::gicv3::registers::{Gicd as GicdV3, GicrSgi};
use arm_gic::gicv3::{GicCpuInterface, GicV3, SgiTarget, SgiTargetGroup};
use arm_gic::{IntId, InterruptGroup, UniqueMmioPointer};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU16, AtomicUsize, Ordering::Relaxed};
use spin::{Mutex, Once};

use super::cpu;
use super::dtb::GicVersion;

/// The SGI that ends a core's deep (WFI) sleep.
pub(crate) const WAKE_SGI: IntId = IntId::sgi(1);

/// GICv2 register offset of GICD_ITARGETSR0: reading it tells a core its
/// own CPU interface bit (the register is banked per core).
const GICD_ITARGETSR0: usize = 0x800;

enum Gic {
    V2 { driver: Mutex<GicV2<'static>>, distributor: usize },
    V3 { driver: Mutex<GicV3<'static>>, distributor: usize },
}

static GIC: Once<Gic> = Once::new();

/// What the GIC needs to know per core, kept in its `CoreLocal`. (GICv3
/// targets an SGI by the core's MPIDR, which `CoreLocal` already holds.)
#[derive(Debug)]
pub(crate) struct CoreGic {
    /// GICv2: this core's bit in an SGI target list.
    v2_target: AtomicU16,
}

impl CoreGic {
    pub(crate) const fn new() -> Self {
        Self { v2_target: AtomicU16::new(0) }
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
                unsafe { GicV2::new(gic.distributor as *mut GicdV2, gic.cpu_or_redistributor as *mut Gicc) };
            GIC.call_once(|| Gic::V2 { driver: Mutex::new(driver), distributor: gic.distributor });
        }
        GicVersion::V3 => {
            let (Some(gicd), Some(gicr)) = (
                NonNull::new(gic.distributor as *mut GicdV3),
                NonNull::new(gic.cpu_or_redistributor as *mut GicrSgi),
            ) else {
                return;
            };
            // SAFETY: as for GICv2; the redistributor region holds one frame
            // per core the device tree lists.
            let driver = unsafe { GicV3::new(UniqueMmioPointer::new(gicd), gicr, info.cores_found) };
            let Ok(mut driver) = driver else {
                log::warn!(target: "roving_kernel", "GICv3 redistributors unreadable; deep idle disabled");
                return;
            };
            let frame = redistributor_frame(&mut driver, cpu::hw_id());
            driver.setup(frame);
            GIC.call_once(|| Gic::V3 { driver: Mutex::new(driver), distributor: gic.distributor });
        }
    }
}

/// Enables the wake-up SGI and the timer on the calling core.
pub(super) fn init_this_core() {
    let Some(gic) = GIC.get() else { return };
    let me = crate::cores::current().expect("per-core data is set before interrupts");
    let timer = IntId::ppi(boot_info().arch.timer_intid - 16);
    crate::masking::without_interrupts(|| match gic {
        Gic::V2 { driver, distributor } => {
            let mut driver = driver.lock();
            // The driver has no CPU-interface-only set-up; the distributor
            // part it repeats is idempotent.
            driver.setup();
            // Enabling can fail only for ids the GIC does not implement; SGIs and the
            // architected timer PPI always exist.
            let _ = driver.enable_interrupt(WAKE_SGI, true);
            let _ = driver.enable_interrupt(timer, true);
            // SAFETY: a read of this core's banked, read-only target register,
            // inside the distributor the driver maps.
            let target =
                unsafe { core::ptr::read_volatile((distributor + GICD_ITARGETSR0) as *const u32) } & 0xff;
            me.arch.v2_target.store(target as u16, Relaxed);
            // Lines bound to this core before it first ran.
            for (line, route) in V2_ROUTES.iter().enumerate() {
                if route.load(Relaxed) == me.index + 1 {
                    write_byte(GICD_ITARGETSR + line, target as u8);
                }
            }
        }
        Gic::V3 { driver, .. } => {
            let mut driver = driver.lock();
            let frame = redistributor_frame(&mut driver, cpu::hw_id());
            driver.init_cpu(frame);
            GicCpuInterface::enable_group1(true);
            GicCpuInterface::set_priority_mask(0xff);
            let _ = driver.enable_interrupt(WAKE_SGI, Some(frame), true);
            let _ = driver.enable_interrupt(timer, Some(frame), true);
        }
    });
}

/// The redistributor frame whose affinity matches `hw_id`; frame `0` if
/// none does (a malformed tree: the wake-up then goes to the wrong core and
/// the tests say so).
fn redistributor_frame(driver: &mut GicV3<'static>, hw_id: u64) -> usize {
    let count = boot_info().cores_found;
    (0..count).find(|&frame| driver.gicr_typer(frame).is_ok_and(|t| t.core_mpidr() == hw_id)).unwrap_or(0)
}

/// Raises the wake-up SGI on `target`. The caller has made the ring it
/// announces visible (DSB) first.
pub(super) fn send_wake(target: &CoreLocal) {
    let Some(gic) = GIC.get() else { return };
    match gic {
        Gic::V2 { driver, .. } => {
            let target_list = target.arch.v2_target.load(Relaxed);
            crate::masking::locked(driver, |driver| {
                driver.send_sgi(
                    WAKE_SGI,
                    arm_gic::gicv2::SgiTarget::List {
                        target_list_filter: arm_gic::gicv2::SgiTargetListFilter::CPUTargetList,
                        target_list,
                    },
                )
            });
        }
        Gic::V3 { .. } => {
            let id = target.hw_id();
            let sgi_target = SgiTarget::List {
                affinity3: (id >> 32) as u8,
                affinity2: (id >> 16) as u8,
                affinity1: (id >> 8) as u8,
                target_list: 1 << (id & 0xf),
            };
            // Only fails for a non-SGI id; WAKE_SGI is an SGI.
            let _ = GicCpuInterface::send_sgi(WAKE_SGI, sgi_target, SgiTargetGroup::CurrentGroup1);
        }
    }
}

/// Acknowledges and handles every pending interrupt of the calling core.
/// Called from the IRQ vector.
pub(super) fn handle_irq() {
    let Some(gic) = GIC.get() else { return };
    match gic {
        Gic::V2 { driver, .. } => {
            // The lock is not held while a bound handler runs: it may wake
            // a core, which takes the lock to send the SGI.
            loop {
                // Its own statement: a guard in a `while let` condition
                // would live through the body.
                let acknowledged = crate::masking::locked(driver, |driver| {
                    driver.get_and_acknowledge_interrupt(InterruptGroup::Group0)
                });
                let Some(id) = acknowledged else { break };
                // The acknowledged value carries an SGI's sender in bits
                // 12:10; the number is bits 9:0. The EOI takes it whole.
                handle(id.raw_value() & 0x3ff);
                crate::masking::locked(driver, |driver| driver.end_interrupt(id, InterruptGroup::Group0));
            }
        }
        Gic::V3 { .. } => {
            while let Some(id) = GicCpuInterface::get_and_acknowledge_interrupt(InterruptGroup::Group1) {
                handle(id.raw_value());
                GicCpuInterface::end_interrupt(id, InterruptGroup::Group1);
            }
        }
    }
}

/// "GICv2", "GICv3", or "no GIC", for the boot banner.
pub(super) fn name(out: &mut impl core::fmt::Write) -> core::fmt::Result {
    match boot_info().arch.gic {
        Some(gic) => write!(out, "GICv{}", gic.version.number()),
        None => out.write_str("no GIC"),
    }
}

/// Handles acknowledged interrupt `number`: the kernel's own, or a
/// device line's bound handler (`crate::interrupts`).
fn handle(number: u32) {
    let timer = number == boot_info().arch.timer_intid;
    let wake = number == WAKE_SGI.raw_value();
    if !(wake || timer) && (FIRST_SPI..SPECIAL).contains(&number) {
        super::irq::handle_device_line(number);
    } else {
        super::irq::handle(Pending { wake, timer, other: !(wake || timer) });
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

/// Writes `value` to the distributor register at `offset`.
fn write32(offset: usize, value: u32) {
    let Some(base) = distributor() else { return };
    // SAFETY: a register of the distributor, mapped as device memory.
    unsafe { core::ptr::write_volatile((base + offset) as *mut u32, value) };
}

/// Device lines the GIC has: its shared peripheral interrupts.
pub(crate) fn device_lines() -> Option<core::ops::Range<u32>> {
    let base = distributor()?;
    // SAFETY: GICD_TYPER, read-only, in the mapped distributor.
    let typer = unsafe { core::ptr::read_volatile((base + GICD_TYPER) as *const u32) };
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
                // SAFETY: GICD_IROUTER<line>, in the mapped distributor.
                unsafe {
                    core::ptr::write_volatile((base + GICD_IROUTER + 8 * line as usize) as *mut u64, route)
                };
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

fn write_byte(offset: usize, value: u8) {
    let Some(base) = distributor() else { return };
    // SAFETY: a byte-accessible distributor register (priority, target),
    // mapped as device memory.
    unsafe { core::ptr::write_volatile((base + offset) as *mut u8, value) };
}
