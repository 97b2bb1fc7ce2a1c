//! The kernel heap: roving's pools and the task storage beyond each core's
//! cache come from it (the `alloc` crate).
//!
//! It is the RAM after the kernel image, up to the end of the RAM region the
//! image sits in, managed by `embedded-alloc`'s TLSF allocator (constant
//! time; the lock is the kernel's critical section). roving keeps it off the
//! hot path: a core allocates task blocks from its own cache and touches the
//! heap only to grow that cache.

use crate::boot_info::BootInfo;
use embedded_alloc::TlsfHeap;

#[global_allocator]
static HEAP: TlsfHeap = TlsfHeap::empty();

unsafe extern "C" {
    // The linker script's end of the image (the end of .bss).
    static __image_end: u8;
}

/// The heap's size in bytes, once [`init`] has run.
static SIZE: spin::Once<usize> = spin::Once::new();

/// Hands the RAM after the image to the allocator.
pub(crate) fn init(info: &BootInfo) {
    let start = (&raw const __image_end as usize).next_multiple_of(4096);
    let region = info.ram.iter().find(|r| r.base <= start && start < r.base + r.size);
    let Some(region) = region else {
        panic!("the kernel image (ends at {start:#x}) is in no RAM region the firmware listed");
    };
    let size = region.base + region.size - start;
    // SAFETY: [start, start + size) is RAM (from the device tree), above
    // everything the image uses, mapped normal cacheable by the MMU setup,
    // and given to the allocator once (SIZE guards it).
    SIZE.call_once(|| unsafe {
        HEAP.init(start, size);
        size
    });
}

/// Heap bytes: `(in use, total)`. Callable from anywhere but an
/// interrupt handler (it takes the allocator's lock).
pub fn usage() -> (usize, usize) {
    // Not `HEAP.used()`: in embedded-alloc 0.7 it borrows the heap's
    // RefCell twice in one expression and always panics ("already
    // borrowed"). Free bytes take one borrow.
    let total = SIZE.get().copied().unwrap_or(0);
    (total.saturating_sub(HEAP.free()), total)
}
