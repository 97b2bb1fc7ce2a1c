//! Each core's front of the heap: freed small blocks, by size class,
//! handed out again by the core that holds them without the heap's lock.
//!
//! The heap (TLSF under the kernel's critical section) is one lock for
//! every core, and an allocation through it is about 150 instructions. A
//! strand's spawn allocates its control block; a closure too big for a
//! task block, a channel, a future's cell each allocate. So small
//! requests (up to 512 bytes, alignment up to 16) are rounded up to a
//! multiple of 16 bytes, their class, and a block of that class freed on
//! a core waits in the core's list for the next request of its class
//! there.
//!
//! - **Who touches a list**: only its core, with interrupts masked for the
//!   push or pop (a few instructions), so neither an interrupt handler nor
//!   a time slice (which would let another strand of the core allocate
//!   half-way through) can come between.
//! - **Same class both ways**: whether a request is small, and its class,
//!   depend on its layout alone, so a block is always freed with the
//!   class it was allocated with, wherever it came from (a list, or the
//!   heap with the class's layout) and whichever core frees it.
//! - **No memory lost to rounding**: classes are every multiple of 16
//!   bytes, the heap's own granularity, not powers of two (a million
//!   72-byte actors would take 128 bytes each).
//! - **Bounded**: a core's lists hold at most 8 KiB of blocks together;
//!   past that a freed block goes back to the heap. No more than that is
//!   kept from the other cores.

use core::alloc::Layout;
use core::cell::UnsafeCell;
use core::fmt;
use core::ptr;
use core::sync::atomic::{AtomicIsize, Ordering::Relaxed};

/// Classes are multiples of this many bytes, the heap's granularity.
const STEP: usize = 16;
const CLASSES: usize = 32;
/// The largest small request, in bytes.
const LARGEST: usize = STEP * CLASSES;
/// The largest alignment a small request may ask for: every block of a
/// class is this aligned.
const ALIGN: usize = 16;
/// Bytes a core's lists may hold together.
const KEPT_BYTES: usize = 8192;

/// A free block's first word.
struct Free {
    next: *mut Free,
}

/// One core's lists: their heads, and the bytes they hold.
struct Lists {
    heads: [*mut Free; CLASSES],
    kept: usize,
}

/// One core's lists, and the bytes its allocations and frees moved.
pub(crate) struct Front {
    lists: UnsafeCell<Lists>,
    /// Bytes asked for by small allocations made on this core, less those
    /// freed on it (either may be negative: a block may be freed on
    /// another core than the one that made it). Written only by its core,
    /// with interrupts masked ([`Front::count`]); read by any.
    pub(super) in_use: AtomicIsize,
}

impl fmt::Debug for Front {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The lists are the core's own: only what any core may read.
        f.debug_struct("Front").field("in_use", &self.in_use.load(Relaxed)).finish_non_exhaustive()
    }
}

// SAFETY: `lists` is touched only by its own core with interrupts masked
// (module docs); `in_use` is atomic, written only by its core with
// interrupts masked.
unsafe impl Sync for Front {}

impl Front {
    pub(crate) const fn new() -> Self {
        Self {
            lists: UnsafeCell::new(Lists { heads: [ptr::null_mut(); CLASSES], kept: 0 }),
            in_use: AtomicIsize::new(0),
        }
    }

    /// Adds `bytes` (negative for a free) to this core's count. A load and
    /// a store, not a read-modify-write: only this core writes it.
    ///
    /// # Safety
    ///
    /// This is the calling core's front, and interrupts are masked.
    pub(super) unsafe fn count(&self, bytes: isize) {
        self.in_use.store(self.in_use.load(Relaxed) + bytes, Relaxed);
    }

    /// A block of `class` from this core's list, if it holds one.
    ///
    /// # Safety
    ///
    /// This is the calling core's front, and interrupts are masked.
    pub(super) unsafe fn pop(&self, class: usize) -> *mut u8 {
        // SAFETY: ours alone while interrupts are masked (contract).
        let lists = unsafe { &mut *self.lists.get() };
        let block = lists.heads[class];
        if !block.is_null() {
            // SAFETY: a free block of this list: its first word is the link.
            lists.heads[class] = unsafe { (*block).next };
            lists.kept -= class_bytes(class);
        }
        block.cast()
    }

    /// Keeps `block` (of `class`) in this core's list; false if the lists
    /// hold all they may.
    ///
    /// # Safety
    ///
    /// As for [`Front::pop`]; `block` is a block of `class` nobody uses.
    pub(super) unsafe fn push(&self, class: usize, block: *mut u8) -> bool {
        // SAFETY: ours alone while interrupts are masked (contract).
        let lists = unsafe { &mut *self.lists.get() };
        if lists.kept + class_bytes(class) > KEPT_BYTES {
            return false;
        }
        let block = block.cast::<Free>();
        // SAFETY: a free block of at least 16 bytes, aligned to 16.
        unsafe { block.write(Free { next: lists.heads[class] }) };
        lists.heads[class] = block;
        lists.kept += class_bytes(class);
        true
    }
}

/// The class of a small request, or `None` for one the heap serves alone.
#[inline]
pub(super) fn class_of(layout: Layout) -> Option<usize> {
    if layout.size() > LARGEST || layout.align() > ALIGN {
        return None;
    }
    Some(layout.size().max(1).div_ceil(STEP) - 1)
}

/// The bytes of every block of `class`.
fn class_bytes(class: usize) -> usize {
    (class + 1) * STEP
}

/// The layout every block of `class` has in the heap.
pub(super) fn class_layout(class: usize) -> Layout {
    // SAFETY: a multiple of 16 from 16 to 512, aligned to 16 (a power of
    // two no larger than the size).
    unsafe { Layout::from_size_align_unchecked(class_bytes(class), ALIGN) }
}
