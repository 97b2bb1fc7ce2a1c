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
    /// RAM ranges.
    pub ram: heapless::Vec<Region, 8>,
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

    /// Total bytes of RAM.
    pub fn ram_bytes(&self) -> usize {
        self.ram.iter().map(|r| r.size).sum()
    }
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
