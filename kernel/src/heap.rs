//! The kernel heap: roving's pools and the task storage beyond each core's
//! cache come from it (the `alloc` crate).
//!
//! It is a TLSF allocator (`rlsf`: constant time; the lock is the
//! kernel's critical section) over:
//!
//! - the RAM after the kernel image, up to the end of the RAM region the
//!   image sits in;
//! - every RAM region (or part of one) at or above 4 GiB. Firmware puts
//!   its tables (the device tree, ACPI, the PVH start info) low, so RAM
//!   that high is plain RAM on every board roving boots on. Other regions
//!   below 4 GiB are left alone: they may hold those tables.
//!
//! roving keeps it off the hot path: a core allocates task blocks from its
//! own cache and touches the heap only to grow that cache.

use crate::board::Region;
use crate::boot_info::BootInfo;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::RefCell;
use core::ptr::{self, NonNull};
use critical_section::Mutex;

/// RAM at or above this is given to the heap whole (module docs).
const HIGH_RAM: usize = 1 << 32;

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
    let Some(home) = info.ram.iter().find(|r| r.base <= start && start < r.end()) else {
        panic!("the kernel image (ends at {start:#x}) is in no RAM region the firmware listed");
    };
    let high = info.ram.iter().filter(|r| r.end() > HIGH_RAM.max(home.end())).map(|r| {
        let base = r.base.max(HIGH_RAM).max(home.end());
        Region { base, size: r.end() - base }
    });
    critical_section::with(|cs| {
        let mut state = HEAP.0.borrow_ref_mut(cs);
        assert_eq!(state.total, 0, "the heap is set up once");
        for region in core::iter::once(Region { base: start, size: home.end() - start }).chain(high) {
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

/// Heap bytes: `(in use, total)`, where in use counts the bytes live
/// allocations asked for. Callable from anywhere but an interrupt handler
/// (it takes the allocator's lock).
pub fn usage() -> (usize, usize) {
    critical_section::with(|cs| {
        let state = HEAP.0.borrow_ref(cs);
        (state.in_use, state.total)
    })
}
