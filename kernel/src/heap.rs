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
//! own cache and touches the heap only to grow that cache. Other small
//! requests go through the core's front (`front.rs`): blocks of the same
//! size class that the core freed, taken back without the lock.

pub(crate) mod front;

use crate::board::Region;
use crate::boot_info::BootInfo;
use crate::{cores, masking};
use core::alloc::{GlobalAlloc, Layout};
use core::cell::RefCell;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use critical_section::Mutex;

type Tlsf = rlsf::Tlsf<'static, usize, usize, { usize::BITS as usize }, { usize::BITS as usize }>;

struct State {
    tlsf: Tlsf,
    /// Bytes handed to the allocator.
    total: usize,
    /// Bytes of the live allocations that are not small (`front`), as
    /// their layouts asked.
    in_use: usize,
}

/// Bytes of small allocations made, less those freed, where no core's
/// front could count them (before the cores are set up).
static SMALL_IN_USE_EARLY: AtomicIsize = AtomicIsize::new(0);

impl Heap {
    /// A block of `layout` from the allocator itself, or null.
    fn allocate(&self, layout: Layout) -> *mut u8 {
        critical_section::with(|cs| {
            let mut state = self.0.borrow_ref_mut(cs);
            state.tlsf.allocate(layout).map_or(ptr::null_mut(), NonNull::as_ptr)
        })
    }

    /// Gives `block` (of alignment `align`) back to the allocator itself.
    ///
    /// # Safety
    ///
    /// `block` came from [`Heap::allocate`] with that alignment.
    unsafe fn deallocate(&self, block: *mut u8, align: usize) {
        critical_section::with(|cs| {
            let mut state = self.0.borrow_ref_mut(cs);
            // SAFETY: per the contract.
            unsafe { state.tlsf.deallocate(NonNull::new_unchecked(block), align) };
        });
    }
}

/// Counts `bytes` of small allocations made (or, negative, freed) on the
/// calling core, for a block that did not come from or go to its front
/// (which counts under its own masking).
fn count_small(bytes: isize) {
    // The core is looked up with interrupts masked, so that no preemption
    // moves the caller to another core before it counts.
    let saved = masking::disable();
    match cores::current() {
        // SAFETY: this core's front, with interrupts masked.
        Some(core) => unsafe { core.heap.count(bytes) },
        None => _ = SMALL_IN_USE_EARLY.fetch_add(bytes, Relaxed),
    }
    masking::restore(saved);
}

struct Heap(Mutex<RefCell<State>>);

#[global_allocator]
static HEAP: Heap = Heap(Mutex::new(RefCell::new(State { tlsf: Tlsf::new(), total: 0, in_use: 0 })));

// SAFETY: every call goes to the TLSF allocator under the critical section,
// which serialises all cores, or to the calling core's front, which only
// that core touches, with interrupts masked; blocks come only from RAM given
// once by `init`, and a small block always has its class's layout there
// (`front`).
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
        let Some(class) = front::class_of(layout) else {
            return critical_section::with(|cs| {
                let mut state = self.0.borrow_ref_mut(cs);
                let block = state.tlsf.allocate(layout);
                if block.is_some() {
                    state.in_use += layout.size();
                }
                block.map_or(ptr::null_mut(), NonNull::as_ptr)
            });
        };
        // Masked before the core is looked up: a preemption between the two
        // could move the caller to another core, whose front this is not.
        let saved = masking::disable();
        let mut block = ptr::null_mut();
        if let Some(core) = cores::current() {
            // SAFETY: this core's front, with interrupts masked.
            unsafe {
                block = core.heap.pop(class);
                if !block.is_null() {
                    core.heap.count(layout.size() as isize);
                }
            }
        }
        masking::restore(saved);
        if block.is_null() {
            block = self.allocate(front::class_layout(class));
            if !block.is_null() {
                count_small(layout.size() as isize);
            }
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        let Some(class) = front::class_of(layout) else {
            return critical_section::with(|cs| {
                let mut state = self.0.borrow_ref_mut(cs);
                state.in_use -= layout.size();
                // SAFETY: `block` came from `alloc` with `layout` (the
                // `GlobalAlloc` contract), so from this allocator.
                unsafe { state.tlsf.deallocate(NonNull::new_unchecked(block), layout.align()) };
            });
        };
        // Masked before the core is looked up, as in `alloc`.
        let saved = masking::disable();
        let kept = match cores::current() {
            // SAFETY: this core's front, with interrupts masked; `block` is
            // a block of `class` (the class follows from the layout, the
            // same when it was allocated), which the caller gives up.
            Some(core) => unsafe {
                core.heap.count(-(layout.size() as isize));
                core.heap.push(class, block)
            },
            None => {
                SMALL_IN_USE_EARLY.fetch_add(-(layout.size() as isize), Relaxed);
                false
            }
        };
        masking::restore(saved);
        if kept {
            return;
        }
        // SAFETY: every block of `class` has the class's layout in the
        // allocator, wherever it was handed out from.
        unsafe { self.deallocate(block, front::class_layout(class).align()) };
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
    let (large, total) = critical_section::with(|cs| {
        let state = HEAP.0.borrow_ref(cs);
        (state.in_use, state.total)
    });
    let small: isize = SMALL_IN_USE_EARLY.load(Relaxed)
        + (0..cores::count()).map(|index| cores::local(index).heap.in_use.load(Relaxed)).sum::<isize>();
    (large + small.max(0) as usize, total)
}
