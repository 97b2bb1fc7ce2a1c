//! Every core boots once, on its own stack, with its own per-core data, its
//! MMU on, FP/SIMD usable, and atomics and critical sections that work
//! across cores. With `roving.expect_ram_mib=N` (the suite boots it with
//! more RAM than 4 GiB), all of that RAM is found and the heap uses it.
//! With `roving.touch_no_map=1` it reads the first byte of the first
//! reservation the firmware's tree marks `no-map`, which must fault (the
//! suite expects the fault report to name the reservation).
#![no_std]
#![no_main]

extern crate alloc;

use core::cell::Cell;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::platform;
use roving_kernel::{MAX_CORES, boot_info, cores};
use roving_test_kernels::{expected_cores, on_every_core, pass};

/// Contended atomic updates per core, up to 64 cores; past 64 the cores
/// share 64 cores' worth, or the check-in would take minutes on a two-CPU
/// host (256 cores: 200 s).
const ROUNDS: u64 = 20_000;

fn rounds() -> u64 {
    ROUNDS * 64 / platform::core_count().max(64) as u64
}

static CHECKED_IN: [AtomicUsize; MAX_CORES] = [const { AtomicUsize::new(0) }; MAX_CORES];
static STACK_AT: [AtomicUsize; MAX_CORES] = [const { AtomicUsize::new(0) }; MAX_CORES];
static FETCH_ADDED: AtomicU64 = AtomicU64::new(0);
static CAS_ADDED: AtomicU64 = AtomicU64::new(0);
static GUARDED: critical_section::Mutex<Cell<u64>> = critical_section::Mutex::new(Cell::new(0));

fn main() {
    let count = platform::core_count();
    assert_eq!(count, expected_cores(), "cores in use = cores QEMU was given");
    let info = boot_info();
    match info.core_limit {
        // The board has more cores than the run uses (the Raspberry Pis' four).
        Some(limit) if limit < info.cores_found => assert_eq!(count, limit, "roving.cores limits the cores"),
        _ => assert_eq!(info.cores_found, count, "the firmware lists every core once"),
    }
    assert!(info.ram_bytes() >= 64 << 20, "RAM found: {} bytes", info.ram_bytes());
    if let Some(mib) = info.bootarg("roving.expect_ram_mib").and_then(|v| v.parse::<usize>().ok()) {
        all_ram_is_heap(mib);
    }
    if !info.reserved.is_empty() {
        heap_keeps_out_of_reserved_ranges();
    }
    if info.bootarg("roving.touch_no_map") == Some("1") {
        let unmapped = info.unmapped.first().expect("the tree has a no-map reservation");
        // SAFETY: none: this read must fault, since the region is out of
        // the page tables; the run ends in the fault report.
        let byte = unsafe { core::ptr::read_volatile(unmapped.region.base as *const u8) };
        panic!("read {byte:#x} from the no-map reservation {unmapped:x?} without a fault");
    }
    // Every core contends for the same words: past 64 cores, on a two-CPU
    // host, even a share of the rounds takes long, so the limit grows with
    // the cores.
    on_every_core(check_in, Duration::from_secs(60 * count.div_ceil(64).max(1) as u64));

    for (core, checked_in) in CHECKED_IN.iter().enumerate().take(count) {
        assert_eq!(checked_in.load(SeqCst), 1, "core {core} ran its entry exactly once");
        let report = cores::report(core).expect("in range");
        assert!(report.online_at.is_some(), "core {core} came online");
        assert_eq!(report.hw_id, boot_info().cores[core], "core {core} has the hardware id the tree gave");
    }
    let mut stacks: [usize; MAX_CORES] = core::array::from_fn(|i| STACK_AT[i].load(SeqCst));
    stacks[..count].sort_unstable();
    for pair in stacks[..count].windows(2) {
        assert!(
            pair[1] - pair[0] >= 32 * 1024,
            "cores share or crowd a stack: {:#x} {:#x}",
            pair[0],
            pair[1]
        );
    }
    small_blocks_on_every_core();
    let total = rounds() * count as u64;
    assert_eq!(FETCH_ADDED.load(SeqCst), total, "fetch_add lost updates");
    assert_eq!(CAS_ADDED.load(SeqCst), total, "compare_exchange lost updates");
    assert_eq!(critical_section::with(|cs| GUARDED.borrow(cs).get()), total, "critical sections overlapped");
    pass("boot");
}

/// Blocks of many sizes, small and not, allocated on every core at once
/// through the cores' fronts of the heap (`kernel/src/heap/front.rs`):
/// each is as aligned as asked, none overlaps another (each keeps the
/// pattern written across it), and a third are freed by another core
/// than the one that made them. Afterwards the heap counts as many bytes
/// in use as before.
fn small_blocks_on_every_core() {
    use alloc::alloc::{Layout, alloc, dealloc};
    use alloc::vec::Vec;
    static HANDED_OVER: critical_section::Mutex<core::cell::RefCell<Vec<(usize, Layout)>>> =
        critical_section::Mutex::new(core::cell::RefCell::new(Vec::new()));
    const LAYOUTS: [(usize, usize); 9] =
        [(1, 1), (16, 8), (17, 8), (64, 8), (100, 4), (512, 16), (513, 8), (64, 32), (24, 16)];
    let (used_before, _) = roving_kernel::heap::usage();
    let work = |core: usize| {
        let mut blocks = Vec::new();
        for round in 0..40usize {
            for &(size, align) in &LAYOUTS {
                let layout = Layout::from_size_align(size, align).expect("a layout");
                // SAFETY: a non-zero size.
                let block = unsafe { alloc(layout) };
                assert!(!block.is_null(), "core {core}: no block of {size} bytes");
                assert_eq!(block.addr() % align, 0, "core {core}: a block of {size} bytes misaligned");
                let mark = (core * 131 + round * 7 + size) as u8;
                // SAFETY: the block just allocated, `size` bytes.
                unsafe { block.write_bytes(mark, size) };
                blocks.push((block, layout, mark));
            }
        }
        for (i, &(block, layout, mark)) in blocks.iter().enumerate() {
            // SAFETY: a live block of `layout.size()` bytes.
            let bytes = unsafe { core::slice::from_raw_parts(block, layout.size()) };
            assert!(
                bytes.iter().all(|&b| b == mark),
                "core {core}: block {i} of {} bytes overwritten",
                layout.size()
            );
            if i % 3 == 0 {
                critical_section::with(|cs| HANDED_OVER.borrow_ref_mut(cs).push((block.addr(), layout)));
            } else {
                // SAFETY: allocated above with `layout`, freed once.
                unsafe { dealloc(block, layout) };
            }
        }
    };
    on_every_core(work, Duration::from_secs(60));
    let handed = critical_section::with(|cs| core::mem::take(&mut *HANDED_OVER.borrow_ref_mut(cs)));
    for (address, layout) in handed {
        // SAFETY: allocated by another core with `layout`, freed once, here.
        unsafe { dealloc(core::ptr::with_exposed_provenance_mut(address), layout) };
    }
    let (used_after, _) = roving_kernel::heap::usage();
    assert_eq!(used_after, used_before, "heap bytes in use before and after the small blocks");
}

/// The firmware's RAM is found, the heap holds nearly all of it, and a
/// block can be had and written that only the RAM high up can hold: with
/// several ranges, one larger than all the RAM below the highest range
/// (above 4 GiB on a PC, above 1 GiB on a Pi 4 with two banks); with one,
/// one that reaches past 4 GiB (QEMU virt).
fn all_ram_is_heap(expected_mib: usize) {
    use alloc::alloc::{Layout, alloc, dealloc};
    const GIB_4: usize = 1 << 32;
    let info = boot_info();
    let ram = info.ram_bytes();
    assert!(ram >> 20 >= expected_mib, "RAM found: {} MiB of {expected_mib} MiB", ram >> 20);
    let (_, heap) = roving_kernel::heap::usage();
    assert!(heap + (64 << 20) >= ram, "the heap has {} MiB of {} MiB of RAM", heap >> 20, ram >> 20);
    const STEP: usize = 64 << 20;
    let highest = info.ram.last().expect("RAM was found");
    let below: usize =
        info.ram.iter().filter(|range| range.base < highest.base).map(|range| range.size).sum();
    let size = match info.ram.len() {
        1 => GIB_4.saturating_sub(highest.base) + (1 << 20),
        _ => below + (1 << 20),
    };
    assert!(size < highest.size, "the highest range is too small to prove anything: {:x?}", info.ram);
    let layout = Layout::from_size_align(size, 4096).expect("a valid layout");
    // SAFETY: a non-zero size.
    let block = unsafe { alloc(layout) };
    assert!(!block.is_null(), "no {} MiB block in a heap of {} MiB", size >> 20, heap >> 20);
    let (start, end) = (block as usize, block as usize + size);
    assert!(start >= highest.base, "the block at {start:#x} is not in the highest range {highest:x?}");
    assert!(info.ram.len() > 1 || end > GIB_4, "the block {start:#x}..{end:#x} ends below 4 GiB");
    let words = (0..layout.size()).step_by(STEP).chain([layout.size() - 8]);
    for (i, offset) in words.clone().enumerate() {
        // SAFETY: inside the block just allocated, 8-byte aligned.
        unsafe { block.add(offset).cast::<u64>().write_volatile(i as u64 ^ 0x5a5a) };
    }
    for (i, offset) in words.enumerate() {
        // SAFETY: as above, written just before.
        let read = unsafe { block.add(offset).cast::<u64>().read_volatile() };
        assert_eq!(
            read,
            i as u64 ^ 0x5a5a,
            "heap memory at {:#x} did not keep a word",
            block as usize + offset
        );
    }
    let at = block as usize;
    roving_kernel::println!(
        "boot: {} MiB of RAM in {} range{}, {} MiB of heap, a {} MiB block at {at:#x}",
        ram >> 20,
        info.ram.len(),
        if info.ram.len() == 1 { "" } else { "s" },
        heap >> 20,
        size >> 20
    );
    // SAFETY: allocated above with `layout`.
    unsafe { dealloc(block, layout) };
}

/// Takes every byte the heap has, in blocks as large as it will give,
/// and checks that none lies in a range the firmware reserved; then gives
/// them back.
fn heap_keeps_out_of_reserved_ranges() {
    use alloc::alloc::{Layout, alloc, dealloc};
    const PAGE: usize = 4096;
    let reserved = &boot_info().reserved;
    let (used, total) = roving_kernel::heap::usage();
    let mut blocks = alloc::vec::Vec::with_capacity(1024);
    let mut size = (total - used).next_power_of_two();
    while size >= PAGE && blocks.len() < blocks.capacity() {
        let layout = Layout::from_size_align(size, PAGE).expect("a valid layout");
        // SAFETY: a non-zero size.
        let block = unsafe { alloc(layout) };
        if block.is_null() {
            size /= 2;
            continue;
        }
        let (start, end) = (block as usize, block as usize + size);
        if let Some(range) = reserved.iter().find(|range| start < range.end() && range.base < end) {
            panic!("the heap handed out {start:#x}..{end:#x}, which overlaps the reserved {range:x?}");
        }
        blocks.push((block, layout));
    }
    let taken: usize = blocks.iter().map(|(_, layout)| layout.size()).sum();
    let free = total - used;
    // TLSF rounds a request up to its size class, so a little of each
    // free region can stay out of reach at the smallest size tried.
    assert!(taken + free / 64 + (1 << 20) >= free, "took {taken} of {free} free heap bytes");
    let count = blocks.len();
    for (block, layout) in blocks {
        // SAFETY: allocated above with `layout`.
        unsafe { dealloc(block, layout) };
    }
    roving_kernel::println!(
        "boot: the heap's {} MiB came in {count} blocks, none in the {} reserved ranges",
        taken >> 20,
        reserved.len()
    );
}

/// Runs on every core, the boot core included.
fn check_in(core: usize) {
    let me = platform::current_core().expect("a core knows its index");
    assert_eq!(me, core, "core {core} reports index {me}");
    assert!(roving_kernel::arch::mmu_enabled(), "core {me} runs with its MMU off");
    let hw_id = roving_kernel::arch::hw_id();
    assert_eq!(hw_id, boot_info().cores[me], "core {me} is not the core the device tree lists at {me}");
    CHECKED_IN[me].fetch_add(1, SeqCst);
    let local = 0u8;
    STACK_AT[me].store(&local as *const u8 as usize, SeqCst);

    // FP/SIMD: a harmonic sum, checked against its known value.
    let harmonic: f64 = (1..=1000).map(|k| 1.0 / f64::from(k)).sum();
    assert!((harmonic - 7.485_470_860_550_345).abs() < 1e-12, "core {me}: FP gave {harmonic}");

    for _ in 0..rounds() {
        FETCH_ADDED.fetch_add(1, SeqCst);
        let mut seen = CAS_ADDED.load(SeqCst);
        while let Err(now) = CAS_ADDED.compare_exchange_weak(seen, seen + 1, SeqCst, SeqCst) {
            seen = now;
        }
        critical_section::with(|cs| {
            let cell = GUARDED.borrow(cs);
            cell.set(cell.get() + 1);
            // Nested sections must not deadlock on the machine-wide lock.
            critical_section::with(|_| ());
        });
    }
    assert_eq!(platform::without_interrupts(|| 7), 7);
}

roving_kernel::entry!(main);
