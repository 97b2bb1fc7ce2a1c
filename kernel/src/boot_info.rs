//! What the kernel learned about the machine at boot.

use crate::arch::ArchInfo;
use crate::board::Region;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

/// The most cores this build runs on; more in the firmware tables are
/// counted ([`BootInfo::cores_found`]) but left off. Set at build time
/// with `ROVING_MAX_CORES` (default 64, at most 1024): each core costs the
/// kernel a 64 KiB boot stack and a 16 KiB exception stack.
pub const MAX_CORES: usize = include!(concat!(env!("OUT_DIR"), "/max_cores.rs"));

/// The most separate RAM ranges the kernel keeps; RAM in more is left out
/// and counted ([`BootInfo::ram_left_out`]).
pub const MAX_RAM_RANGES: usize = 32;

/// The most separate reserved ranges the kernel keeps; past that, the
/// nearest are widened to cover more ([`BootInfo::reserved_widened`]).
pub const MAX_RESERVED_RANGES: usize = 16;
/// `no-map` reservations kept by name, for the page tables and the fault
/// report.
pub const MAX_UNMAPPED: usize = 4;

/// A reservation the firmware's tree marks `no-map`: the kernel leaves it
/// out of its page tables, so that an access faults and the fault report
/// names it.
#[derive(Clone, Debug)]
pub struct Unmapped {
    /// Where it is.
    pub region: Region,
    /// Its node's name under `/reserved-memory`.
    pub node: heapless::String<32>,
}

/// Facts about the machine, filled in by the boot core before anything else
/// runs and never changed afterwards.
#[derive(Debug)]
pub struct BootInfo {
    /// The machine's model, as the firmware names it.
    pub model: heapless::String<64>,
    /// The kernel command line (`-append` under QEMU), maybe empty.
    pub bootargs: heapless::String<256>,
    /// Hardware ids of the cores in use, by dense index; index 0 booted.
    pub cores: heapless::Vec<u64, MAX_CORES>,
    /// How many usable cores the firmware listed (may exceed `MAX_CORES`).
    pub cores_found: usize,
    /// The `roving.cores=N` command-line limit, if one was given: the
    /// kernel then uses at most N cores (like Linux's `maxcpus`), the boot
    /// core first. The only way to use fewer cores than a board has.
    pub core_limit: Option<usize>,
    /// RAM ranges, by address, none overlapping or touching another
    /// (the boot code merges those the firmware lists that way).
    pub ram: heapless::Vec<Region, MAX_RAM_RANGES>,
    /// Bytes of RAM the firmware listed that are not in
    /// [`ram`](Self::ram): ranges that came once it held
    /// [`MAX_RAM_RANGES`] separate ones.
    pub ram_left_out: usize,
    /// Ranges the firmware reserves (a device tree's `/memreserve/`
    /// entries and `/reserved-memory` nodes), by address, merged like
    /// [`ram`](Self::ram). The heap leaves them alone; they stay mapped,
    /// except those in [`unmapped`](Self::unmapped).
    pub reserved: heapless::Vec<Region, MAX_RESERVED_RANGES>,
    /// The reservations marked `no-map`, which are also out of the page
    /// tables (as Linux does). Once [`MAX_UNMAPPED`] are kept, a further
    /// one stays mapped, and [`unmapped_left_out`](Self::unmapped_left_out)
    /// counts it.
    pub unmapped: heapless::Vec<Unmapped, MAX_UNMAPPED>,
    /// `no-map` reservations left mapped for want of room.
    pub unmapped_left_out: usize,
    /// The firmware listed more separate reservations than
    /// [`reserved`](Self::reserved) holds, so some were widened to cover
    /// their neighbours.
    pub reserved_widened: bool,
    /// Architecture-specific facts.
    pub arch: ArchInfo,
}

impl BootInfo {
    const EMPTY: Self = Self {
        model: heapless::String::new(),
        bootargs: heapless::String::new(),
        cores: heapless::Vec::new(),
        cores_found: 0,
        core_limit: None,
        ram: heapless::Vec::new(),
        ram_left_out: 0,
        reserved: heapless::Vec::new(),
        unmapped: heapless::Vec::new(),
        unmapped_left_out: 0,
        reserved_widened: false,
        arch: ArchInfo::EMPTY,
    };

    /// The value of `key=value` on the command line, if present.
    pub fn bootarg(&self, key: &str) -> Option<&str> {
        self.bootargs.split_ascii_whitespace().find_map(|word| {
            let (k, value) = word.split_once('=')?;
            (k == key).then_some(value)
        })
    }

    /// Applies `roving.cores=N` from the command line to [`cores`](Self::cores).
    /// A value that is not a whole number from 1 up is ignored (and the
    /// banner says so).
    pub(crate) fn apply_core_limit(&mut self) {
        let Some(limit) = self.bootarg("roving.cores").and_then(|v| v.parse::<usize>().ok()) else { return };
        if limit >= 1 {
            self.core_limit = Some(limit);
            self.cores.truncate(limit);
        }
    }

    /// Adds a range the firmware calls RAM. Firmware lists RAM in pieces
    /// (a UEFI map splits it by use), in any order, and a loader may list
    /// a range twice (QEMU adds its own memory node to a device tree that
    /// has one), so a range that overlaps or touches others is merged with
    /// them and the list stays sorted by address.
    pub(crate) fn add_ram(&mut self, region: Region) {
        if let Err(left_out) = insert_merged(&mut self.ram, region) {
            self.ram_left_out += left_out.size;
        }
    }

    /// Adds a range the firmware reserves: the heap never hands it out.
    /// If the list is full, the nearest reservation is widened to cover
    /// this one too: reserving too much costs RAM, too little could hand
    /// out memory the firmware uses.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))] // a PC's memory map lists only usable RAM as RAM
    pub(crate) fn reserve(&mut self, region: Region) {
        let Err(region) = insert_merged(&mut self.reserved, region) else { return };
        let gap = |other: &Region| {
            other.base.saturating_sub(region.end()).max(region.base.saturating_sub(other.end()))
        };
        let nearest = (0..self.reserved.len()).min_by_key(|&index| gap(&self.reserved[index]));
        let nearest = self.reserved.remove(nearest.expect("a full list has a nearest"));
        let (base, end) = (nearest.base.min(region.base), nearest.end().max(region.end()));
        // One slot is free now, and merging only frees more.
        let _ = insert_merged(&mut self.reserved, Region { base, size: end - base });
        self.reserved_widened = true;
    }

    /// Total bytes of RAM.
    pub fn ram_bytes(&self) -> usize {
        self.ram.iter().map(|r| r.size).sum()
    }
}

/// Adds `region` to `list`, which stays sorted by address with no two
/// ranges overlapping or touching: it is merged with every range it
/// overlaps or touches. Gives back the merged range if the list is full.
fn insert_merged<const N: usize>(list: &mut heapless::Vec<Region, N>, region: Region) -> Result<(), Region> {
    if region.size == 0 {
        return Ok(());
    }
    let (mut base, mut end) = (region.base, region.end());
    let mut index = 0;
    while index < list.len() {
        let other = list[index];
        if other.base <= end && base <= other.end() {
            (base, end) = (base.min(other.base), end.max(other.end()));
            list.remove(index);
        } else {
            index += 1;
        }
    }
    let at = list.iter().position(|other| other.base > base).unwrap_or(list.len());
    list.insert(at, Region { base, size: end - base })
}

/// Appends as much of `text` to `out` as fits, cut at a character boundary.
pub(crate) fn push_truncated<const N: usize>(out: &mut heapless::String<N>, text: &str) {
    let mut end = text.len().min(N - out.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let _ = out.push_str(&text[..end]);
}

struct BootInfoCell(UnsafeCell<BootInfo>);

// SAFETY: written only through `boot_info_mut`, whose contract confines it to
// the boot core before any other core runs; read-only afterwards.
unsafe impl Sync for BootInfoCell {}

static BOOT_INFO: BootInfoCell = BootInfoCell(UnsafeCell::new(BootInfo::EMPTY));
static PUBLISHED: AtomicBool = AtomicBool::new(false);

/// The boot facts, for filling in.
///
/// # Safety
///
/// Boot core only, before [`publish`], with no reference from [`boot_info`]
/// alive.
pub(crate) unsafe fn boot_info_mut() -> &'static mut BootInfo {
    // SAFETY: exclusive per this function's contract.
    unsafe { &mut *BOOT_INFO.0.get() }
}

/// Marks the facts final. The boot core calls it before starting any core.
pub(crate) fn publish() {
    PUBLISHED.store(true, Ordering::Release);
}

/// Waits until the boot core has published the facts (a started core
/// always finds them published; this also orders its reads after them).
pub(crate) fn wait_published() {
    while !PUBLISHED.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
}

/// The boot facts.
pub fn boot_info() -> &'static BootInfo {
    // SAFETY: after publication nothing writes them; before it, only the boot
    // core reads them, between its own writes.
    unsafe { &*BOOT_INFO.0.get() }
}
