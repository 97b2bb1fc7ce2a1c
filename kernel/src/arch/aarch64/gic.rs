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
use core::sync::atomic::{AtomicU16, Ordering::Relaxed};
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
    V3 { driver: Mutex<GicV3<'static>> },
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
                crate::println!("roving-kernel: GICv3 redistributors unreadable; deep idle disabled");
                return;
            };
            let frame = redistributor_frame(&mut driver, cpu::hw_id());
            driver.setup(frame);
            GIC.call_once(|| Gic::V3 { driver: Mutex::new(driver) });
        }
    }
}

/// Enables the wake-up SGI and the timer on the calling core.
pub(super) fn init_this_core() {
    let Some(gic) = GIC.get() else { return };
    let me = crate::cores::current().expect("per-core data is set before interrupts");
    let timer = IntId::ppi(boot_info().arch.timer_intid - 16);
    cpu::without_interrupts(|| match gic {
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
        }
        Gic::V3 { driver } => {
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
        Gic::V2 { driver, .. } => cpu::without_interrupts(|| {
            let target_list = target.arch.v2_target.load(Relaxed);
            driver.lock().send_sgi(
                WAKE_SGI,
                arm_gic::gicv2::SgiTarget::List {
                    target_list_filter: arm_gic::gicv2::SgiTargetListFilter::CPUTargetList,
                    target_list,
                },
            );
        }),
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
            let mut driver = driver.lock();
            while let Some(id) = driver.get_and_acknowledge_interrupt(InterruptGroup::Group0) {
                // The acknowledged value carries an SGI's sender in bits
                // 12:10; the number is bits 9:0. The EOI takes it whole.
                super::irq::handle(classify(id.raw_value() & 0x3ff));
                driver.end_interrupt(id, InterruptGroup::Group0);
            }
        }
        Gic::V3 { .. } => {
            while let Some(id) = GicCpuInterface::get_and_acknowledge_interrupt(InterruptGroup::Group1) {
                super::irq::handle(classify(id.raw_value()));
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

/// What interrupt `number` is to the kernel.
fn classify(number: u32) -> Pending {
    let timer = number == boot_info().arch.timer_intid;
    let wake = number == WAKE_SGI.raw_value();
    Pending { wake, timer, other: !(wake || timer) }
}
