//! What the device tree says about the machine: cores, RAM, the PSCI
//! conduit, the interrupt controller and the timer's interrupt.
//!
//! Runs on the boot core before the MMU is on, so it allocates nothing and
//! touches no atomic. Anything the tree does not say falls back to the
//! board's constants, and the boot banner says what was found.

mod bus;

use super::cpu;
use crate::board::{Board, InterruptController, Region};
use crate::boot_info::{BootInfo, MAX_CORES, Unmapped, push_truncated};
use dtoolkit::fdt::{Fdt, FdtNode};
use dtoolkit::standard::{NodeStandard, Status};
use dtoolkit::{Node, Property, ToCellInt};

/// How PSCI calls reach the firmware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conduit {
    /// `HVC`: firmware at EL2 (QEMU's built-in PSCI when entered at EL1).
    Hvc,
    /// `SMC`: firmware at EL3 (QEMU with `virtualization=on`).
    Smc,
}

impl Conduit {
    /// The instruction's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hvc => "HVC",
            Self::Smc => "SMC",
        }
    }
}

/// Which generic interrupt controller the machine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GicVersion {
    /// GICv2 (GIC-400 and QEMU's default): memory-mapped CPU interface,
    /// at most 8 cores.
    V2,
    /// GICv3: system-register CPU interface, one redistributor per core.
    V3,
}

impl GicVersion {
    /// 2 or 3.
    pub fn number(self) -> u8 {
        match self {
            Self::V2 => 2,
            Self::V3 => 3,
        }
    }
}

/// Where the interrupt controller's registers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GicInfo {
    /// v2 or v3.
    pub version: GicVersion,
    /// The distributor (GICD).
    pub distributor: usize,
    /// GICv2: the CPU interface (GICC). Unused on GICv3.
    pub cpu_interface: usize,
    /// GICv3: the redistributor regions, one frame per core in each, in
    /// the tree's order (`#redistributor-regions`; QEMU's virt machine
    /// has a second one, above 4 GiB, past 123 cores). Empty on GICv2.
    pub redistributor_regions: [Region; MAX_REDISTRIBUTOR_REGIONS],
    /// How many of `redistributor_regions` are real.
    pub redistributor_region_count: usize,
}

/// What to map at a GIC distributor's or CPU interface's base: the GICv2
/// CPU interface's 8 KiB, and more than the distributor's 4 KiB (GICv3's
/// is 64 KiB).
pub(crate) const GIC_FRAME: usize = 0x1_0000;

/// The most GICv3 redistributor regions the kernel reads from the tree.
pub const MAX_REDISTRIBUTOR_REGIONS: usize = 8;

impl GicInfo {
    /// A GICv2 at these addresses.
    pub(crate) const fn v2(distributor: usize, cpu_interface: usize) -> Self {
        let none = Region { base: 0, size: 0 };
        Self {
            version: GicVersion::V2,
            distributor,
            cpu_interface,
            redistributor_regions: [none; MAX_REDISTRIBUTOR_REGIONS],
            redistributor_region_count: 0,
        }
    }

    /// The GICv3 redistributor regions.
    pub fn redistributors(&self) -> &[Region] {
        &self.redistributor_regions[..self.redistributor_region_count]
    }
}

/// What the boot core learned that only AArch64 cares about.
#[derive(Debug)]
pub struct ArchInfo {
    /// The exception level the boot core was entered at (1 or 2).
    pub entered_el: u8,
    /// Where the device tree was found, if it was.
    pub device_tree: Option<usize>,
    /// How to call PSCI; `None` if the tree names no PSCI node.
    pub psci: Option<Conduit>,
    /// The interrupt controller, if the tree names one the kernel drives.
    pub gic: Option<GicInfo>,
    /// The interrupt id of the EL1 virtual timer (a PPI; 27 by convention).
    pub timer_intid: u32,
    /// The timer node's `clock-frequency`, if the tree gives one: the
    /// counter's frequency where the firmware left CNTFRQ_EL0 0.
    pub timer_hz: Option<u32>,
    /// The console's PL011, where the device tree puts it (`serial0`, or
    /// `/chosen`'s `stdout-path`), if it names one; the board's address
    /// otherwise.
    pub uart: Option<Region>,
    /// Where the tree puts each block of the board's own interrupt
    /// controller ([`InterruptChip::tree_parts`](crate::board::InterruptChip::tree_parts)):
    /// all of them, or none.
    pub chip_parts: heapless::Vec<Region, MAX_CHIP_PARTS>,
    /// Each core's spin-table slot, by dense index, where the tree gives
    /// one (`cpu-release-addr`); 0 where it does not, and the board's
    /// table is used.
    pub release_slots: heapless::Vec<u64, MAX_CORES>,
    /// What came from the device tree rather than the board's constants.
    pub from_tree: FromTree,
    /// What the tree lacked or got wrong, for the banner: the board's
    /// constants stand in for each.
    pub tree_problems: heapless::Vec<&'static str, 4>,
}

/// The most register blocks a board's interrupt controller is read as.
pub const MAX_CHIP_PARTS: usize = 4;

/// What the kernel took from the device tree; the rest is the board's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FromTree {
    /// The RAM ranges (every `memory` node's registers).
    pub ram: bool,
    /// The cores (`/cpus`).
    pub cores: bool,
    /// The interrupt controller.
    pub interrupts: bool,
    /// The counter's frequency, because CNTFRQ_EL0 read 0.
    pub timer_hz: bool,
}

impl ArchInfo {
    pub(crate) const EMPTY: Self = Self {
        entered_el: 0,
        device_tree: None,
        psci: None,
        gic: None,
        timer_intid: VIRTUAL_TIMER_PPI,
        timer_hz: None,
        uart: None,
        chip_parts: heapless::Vec::new(),
        release_slots: heapless::Vec::new(),
        from_tree: FromTree { ram: false, cores: false, interrupts: false, timer_hz: false },
        tree_problems: heapless::Vec::new(),
    };
}

const FDT_MAGIC: u32 = 0xd00d_feed;
/// The architected EL1 virtual timer interrupt when the tree does not say.
const VIRTUAL_TIMER_PPI: u32 = 27;
const GICV2_COMPATIBLE: [&str; 4] =
    ["arm,gic-400", "arm,cortex-a15-gic", "arm,cortex-a9-gic", "arm,cortex-a7-gic"];

/// Fills `info` from the device tree, or from the board if there is none.
/// Returns whether a tree was found: without one, the caller looks for a
/// command line elsewhere.
pub(super) fn discover(info: &mut BootInfo, loader_hint: usize, board: &Board) -> bool {
    let tree = find(loader_hint, board);
    match tree {
        Some((address, fdt)) => read_tree(info, address, fdt, board),
        None => {
            info.add_ram(board.fallback_ram);
            board_cores(info, board);
        }
    }
    info.arch.gic = match board.interrupts {
        InterruptController::FromDeviceTree => info.arch.gic,
        // The board's addresses only when the tree names no GIC.
        InterruptController::GicV2 { distributor, cpu_interface } => {
            info.arch.gic.or(Some(GicInfo::v2(distributor, cpu_interface)))
        }
        InterruptController::Board(_) => None,
    };
    if let (InterruptController::Board(chip), Some((_, fdt))) = (board.interrupts, tree) {
        match find_chip_parts(fdt, chip.tree_parts(), &mut info.arch.chip_parts) {
            Ok(found) => info.arch.from_tree.interrupts = found,
            Err(problem) => {
                info.arch.from_tree.interrupts = false;
                let _ = info.arch.tree_problems.push(problem);
            }
        }
    }
    tree.is_some()
}

/// Where the tree puts each of a board controller's blocks, in `parts`
/// order; all or nothing. `Ok(false)` if the board names none.
fn find_chip_parts(
    fdt: Fdt<'static>,
    compatibles: &[&str],
    parts: &mut heapless::Vec<Region, MAX_CHIP_PARTS>,
) -> Result<bool, &'static str> {
    for compatible in compatibles {
        let path = bus::find(fdt, &|node| node.is_compatible(compatible));
        let found = match path {
            None => Err("a part of the interrupt controller has no node"),
            Some(path) => path
                .register(0)
                .ok_or("a part of the interrupt controller is not reachable through its buses' ranges"),
        };
        if let Err(problem) = found.and_then(|region| parts.push(region).map_err(|_| "too many parts")) {
            parts.clear();
            return Err(problem);
        }
    }
    Ok(!parts.is_empty())
}

/// The board's cores, the boot core first.
fn board_cores(info: &mut BootInfo, board: &Board) {
    let boot_core = cpu::hw_id();
    let _ = info.cores.push(boot_core);
    info.cores_found = 1;
    for &id in board.fallback_cores.iter().filter(|&&id| id != boot_core) {
        info.cores_found += 1;
        let _ = info.cores.push(id); // beyond MAX_CORES: counted, not used
    }
}

fn read_tree(info: &mut BootInfo, address: usize, fdt: Fdt<'static>, board: &Board) {
    let boot_core = cpu::hw_id();
    info.arch.device_tree = Some(address);
    if let Ok(Some(model)) = fdt.root().model() {
        push_truncated(&mut info.model, model);
    }
    if let Some(chosen) = fdt.chosen()
        && let Ok(Some(args)) = chosen.bootargs()
    {
        push_truncated(&mut info.bootargs, args);
    }
    read_cores(fdt, boot_core, info);
    info.arch.from_tree.cores = fdt.cpus().is_ok();
    read_memory(fdt, info);
    read_reservations(fdt, info);
    info.arch.from_tree.ram = !info.ram.is_empty();
    if info.ram.is_empty() {
        info.add_ram(board.fallback_ram);
    }
    info.arch.uart = find_uart(fdt).unwrap_or_else(|problem| {
        let _ = info.arch.tree_problems.push(problem);
        None
    });
    info.arch.psci =
        fdt.find_node("/psci").and_then(|psci| match psci.property("method")?.value_as::<&str>().ok()? {
            "hvc" => Some(Conduit::Hvc),
            "smc" => Some(Conduit::Smc),
            _ => None,
        });
    info.arch.gic = match board.interrupts {
        InterruptController::Board(_) => None,
        _ => find_gic(fdt).map_err(|problem| info.arch.tree_problems.push(problem)).ok(),
    };
    info.arch.from_tree.interrupts = info.arch.gic.is_some();
    if let Some(intid) = timer_intid(fdt) {
        info.arch.timer_intid = intid;
    }
    // The Pi 3's tree calls its timer an ARMv7 one: the same binding.
    info.arch.timer_hz = fdt
        .root()
        .children()
        .find(|n| n.is_compatible("arm,armv8-timer") || n.is_compatible("arm,armv7-timer"))
        .and_then(|timer| timer.property("clock-frequency")?.value_as::<u32>().ok());
}

/// The device tree at the loader's hint or the board's fixed address.
fn find(loader_hint: usize, board: &Board) -> Option<(usize, Fdt<'static>)> {
    // Only addresses inside RAM are probed: reading an arbitrary register
    // left in x0 could hit a hole in the address map.
    let ram = board.fallback_ram;
    let hint = (loader_hint >= ram.base && loader_hint < ram.end()).then_some(loader_hint);
    [hint, board.device_tree].into_iter().flatten().find_map(|address| {
        if !address.is_multiple_of(4) {
            return None;
        }
        // SAFETY: the address is in RAM (or is the board's documented DTB
        // location) and 4-aligned; with the MMU off it is plainly readable.
        let magic = unsafe { core::ptr::read_volatile(address as *const u32) };
        if u32::from_be(magic) != FDT_MAGIC {
            return None;
        }
        // SAFETY: a device tree header is there (magic checked); `from_raw`
        // validates its size and structure before trusting them. The blob
        // stays in place, unmodified, for the life of the kernel.
        unsafe { Fdt::from_raw(address as *const u8) }.ok().map(|fdt| (address, fdt))
    })
}

/// Enabled cores, the boot core first, then the others in tree order.
fn read_cores(fdt: Fdt<'static>, boot_core: u64, info: &mut BootInfo) {
    let _ = info.cores.push(boot_core);
    let _ = info.arch.release_slots.push(0);
    info.cores_found = 1;
    let Ok(cpus) = fdt.cpus() else { return };
    for cpu in cpus.cpus() {
        if !matches!(cpu.status(), Ok(Status::Okay)) {
            continue;
        }
        let Some(id) = cpu.ids().ok().and_then(|mut ids| ids.next()).and_then(|id| id.to_int::<u64>().ok())
        else {
            continue;
        };
        if id == boot_core {
            continue;
        }
        info.cores_found += 1;
        let _ = info.cores.push(id); // beyond MAX_CORES: counted, not used
        // Where it waits, if it waits in a spin table.
        let slot = cpu.property("cpu-release-addr").and_then(|slot| slot.value_as::<u64>().ok());
        let _ = info.arch.release_slots.push(slot.unwrap_or(0));
    }
}

/// Every `memory` node's ranges: firmware may describe RAM as one node
/// with several ranges, or as a node per range (a Pi 4 with more than
/// 1 GiB has a bank below the peripherals and one above 1 GiB).
fn read_memory(fdt: Fdt<'static>, info: &mut BootInfo) {
    let is_memory = |node: &FdtNode<'static>| {
        node.property("device_type").and_then(|kind| kind.value_as::<&str>().ok()) == Some("memory")
    };
    for node in fdt.root().children().filter(is_memory) {
        let Ok(Some(regs)) = node.reg() else { continue };
        for reg in regs {
            if let (Ok(base), Ok(size)) = (reg.address::<u64>(), reg.size::<u64>())
                && size > 0
            {
                info.add_ram(Region { base: base as usize, size: size as usize });
            }
        }
    }
}

/// What the firmware keeps for itself: the header's `/memreserve/`
/// entries (the Pis' spin table page), and each enabled `/reserved-memory`
/// node's `reg` (a region with only a size is the kernel's to place, and
/// it places none). A `reusable` region is the OS's to use until a driver
/// claims it, and roving has no such driver, so it stays RAM. A `no-map`
/// region is also kept by name, to be left out of the page tables.
fn read_reservations(fdt: Fdt<'static>, info: &mut BootInfo) {
    for reservation in fdt.memory_reservations() {
        info.reserve(Region { base: reservation.address() as usize, size: reservation.size() as usize });
    }
    let Some(parent) = bus::at(fdt, "/reserved-memory") else { return };
    for node in parent.node().children() {
        let reusable = node.property("reusable").is_some();
        if reusable || matches!(node.status(), Ok(Status::Disabled)) {
            continue;
        }
        let path = parent.child(node);
        let no_map = node.property("no-map").is_some();
        for region in (0..).map_while(|index| path.as_ref()?.register(index)) {
            info.reserve(region);
            if no_map && region.size > 0 {
                let mut name = heapless::String::new();
                push_truncated(&mut name, node.name());
                if info.unmapped.push(Unmapped { region, node: name }).is_err() {
                    info.unmapped_left_out += 1;
                }
            }
        }
    }
}

/// The interrupt controller, wherever it sits in the tree: at the root
/// (QEMU virt), or on a bus whose `ranges` place it (the Pi 4's GIC-400
/// under `/soc`).
fn find_gic(fdt: Fdt<'static>) -> Result<GicInfo, &'static str> {
    let is_gic = |node: FdtNode<'static>| {
        node.is_compatible("arm,gic-v3") || GICV2_COMPATIBLE.iter().any(|c| node.is_compatible(c))
    };
    let path = bus::find(fdt, &is_gic).ok_or("no GIC node")?;
    let node = path.node();
    let distributor =
        path.register(0).ok_or("the GIC's distributor is not reachable through its buses' ranges")?;
    if !node.is_compatible("arm,gic-v3") {
        let cpu_interface = path.register(1).ok_or("the GIC's reg has no reachable CPU interface")?;
        return Ok(GicInfo::v2(distributor.base, cpu_interface.base));
    }
    // GICv3: the distributor, then `#redistributor-regions` regions (one
    // when the property is absent), then registers the kernel does not use.
    let regions =
        node.property("#redistributor-regions").and_then(|count| count.value_as::<u32>().ok()).unwrap_or(1)
            as usize;
    let mut gic = GicInfo { version: GicVersion::V3, ..GicInfo::v2(distributor.base, 0) };
    for index in 1..=regions.min(MAX_REDISTRIBUTOR_REGIONS) {
        let Some(region) = path.register(index) else { break };
        gic.redistributor_regions[gic.redistributor_region_count] = region;
        gic.redistributor_region_count += 1;
    }
    if gic.redistributor_region_count == 0 {
        return Err("the GICv3's reg has no reachable redistributors");
    }
    Ok(gic)
}

/// The console's PL011: the one `serial0` names (the Pi's firmware and
/// its trees name the PL011 so), else `stdout-path`'s, if it is a PL011.
fn find_uart(fdt: Fdt<'static>) -> Result<Option<Region>, &'static str> {
    let chosen = fdt.find_node("/chosen");
    let stdout = chosen.and_then(|chosen| chosen.property("stdout-path")?.value_as::<&'static str>().ok());
    let named = ["serial0"].into_iter().chain(stdout).filter_map(|name| bus::named(fdt, name));
    let mut pl011s = named.filter(|path| {
        path.node().is_compatible("arm,pl011") && !matches!(path.node().status(), Ok(Status::Disabled))
    });
    match pl011s.next() {
        None => Ok(None),
        Some(path) => {
            path.register(0).map(Some).ok_or("the PL011 is not reachable through its buses' ranges")
        }
    }
}

/// The virtual timer's interrupt: the third of the `arm,armv8-timer` node's
/// four interrupts (secure, non-secure, virtual, hypervisor), each three
/// cells `<type number flags>` with type 1 meaning a PPI (ids from 16).
fn timer_intid(fdt: Fdt<'static>) -> Option<u32> {
    let timer: FdtNode<'static> = fdt.root().children().find(|n| n.is_compatible("arm,armv8-timer"))?;
    let cells = timer.property("interrupts")?.value_as::<[u32; 12]>().ok()?;
    let (kind, number) = (cells[6], cells[7]);
    (kind == 1).then_some(16 + number)
}
