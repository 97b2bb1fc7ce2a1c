//! The kernel heap: roving's pools and the task storage beyond each core's
//! cache come from it (the `alloc` crate).
//!
//! It is a TLSF allocator (`rlsf`: constant time; the lock is the
//! kernel's critical section) over:
//!
//! every RAM region, or the part of one, above the end of the kernel
//! image, less what the firmware reserves (`BootInfo::reserved`). What a
//! loader leaves in RAM there (a device tree, the PVH start info, GRUB's
//! boot information with its copy of the ACPI RSDP) is read at boot,
//! before the heap is set up, and never again; the firmware's own
//! tables (ACPI) are in regions its memory map does not call RAM. RAM
//! below the image is left alone: the BIOS areas, the x86 cores' start-up
//! trampoline, and on AArch64 the loader's device tree below the kernel.
//! A UEFI machine's map splits RAM into many regions around the
//! firmware's runtime areas, so the region the image sits in may end a few
//! hundred kilobytes after it.
//!
//! roving keeps it off the hot path: a core allocates task blocks from its
//! own cache and touches the heap only to grow that cache.

use crate::board::Region;
use crate::boot_info::BootInfo;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::RefCell;
use core::ptr::{self, NonNull};
use critical_section::Mutex;

type Tlsf = rlsf::Tlsf<'static, usize, usize, { usize::BITS as usize }, { usize::BITS as usize }>;

struct State {
    tlsf: Tlsf,
    /// Bytes handed to the allocator.
    total: usize,
    /// Bytes of the allocations live now, as their layouts asked.
    in_use: usize,
}

struct Heap(Mutex<RefCell<State>>);

#[global_allocator]
static HEAP: Heap = Heap(Mutex::new(RefCell::new(State { tlsf: Tlsf::new(), total: 0, in_use: 0 })));

// SAFETY: every call goes to the TLSF allocator under the critical section,
// which serialises all cores; blocks come only from RAM given once by
// `init`.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(debug_assertions)]
        if crate::cores::in_interrupt() {
            panic!(
                "roving-kernel: an interrupt handler allocated {} bytes; handlers must not allocate: \
                 wake a strand that does (roving::sync::Signal::signal)",
                layout.size()
            );
        }
        critical_section::with(|cs| {
            let mut state = self.0.borrow_ref_mut(cs);
            let block = state.tlsf.allocate(layout);
            if block.is_some() {
                state.in_use += layout.size();
            }
            block.map_or(ptr::null_mut(), NonNull::as_ptr)
        })
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        critical_section::with(|cs| {
            let mut state = self.0.borrow_ref_mut(cs);
            state.in_use -= layout.size();
            // SAFETY: `block` came from `alloc` with `layout` (the
            // `GlobalAlloc` contract), so from this allocator.
            unsafe { state.tlsf.deallocate(NonNull::new_unchecked(block), layout.align()) };
        });
    }
}

unsafe extern "C" {
    // The linker script's end of the image (the end of .bss).
    static __image_end: u8;
}

/// Hands the RAM the module docs list to the allocator. Called once, by
/// the boot core, before anything allocates.
pub(crate) fn init(info: &BootInfo) {
    let start = (&raw const __image_end as usize).next_multiple_of(4096);
    if !info.ram.iter().any(|r| r.base <= start && start < r.end()) {
        panic!("the kernel image (ends at {start:#x}) is in no RAM region the firmware listed");
    }
    let above = info.ram.iter().filter(|r| r.end() > start).map(|r| {
        let base = r.base.max(start);
        Region { base, size: r.end() - base }
    });
    critical_section::with(|cs| {
        let mut state = HEAP.0.borrow_ref_mut(cs);
        assert_eq!(state.total, 0, "the heap is set up once");
        for region in above.flat_map(|region| unreserved(region, &info.reserved)) {
            let Some(block) =
                NonNull::new(ptr::slice_from_raw_parts_mut(region.base as *mut u8, region.size))
            else {
                continue;
            };
            // SAFETY: the region is RAM (the firmware's map), mapped normal
            // cacheable by the MMU setup, used by nothing else (above the
            // image, or high RAM per the module docs), given once.
            if let Some(added) = unsafe { state.tlsf.insert_free_block_ptr(block) } {
                state.total += added.get();
            }
        }
    });
}

/// The parts of `region` outside every range of `reserved` (sorted by
/// address, none overlapping).
fn unreserved(region: Region, reserved: &[Region]) -> impl Iterator<Item = Region> + '_ {
    let mut from = region.base;
    let mut cuts = reserved.iter().filter(move |r| r.end() > region.base && r.base < region.end());
    core::iter::from_fn(move || {
        while from < region.end() {
            let Some(cut) = cuts.next() else {
                let rest = Region { base: from, size: region.end() - from };
                from = region.end();
                return Some(rest);
            };
            let piece = Region { base: from, size: cut.base.saturating_sub(from) };
            from = from.max(cut.end());
            if piece.size > 0 {
                return Some(piece);
            }
        }
        None
    })
}

/// Heap bytes: `(in use, total)`, where in use counts the bytes live
/// allocations asked for. Callable from anywhere but an interrupt handler
/// (it takes the allocator's lock).
pub fn usage() -> (usize, usize) {
    critical_section::with(|cs| {
        let state = HEAP.0.borrow_ref(cs);
        (state.in_use, state.total)
    })
}
