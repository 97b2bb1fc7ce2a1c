//! Save areas: where an inactive strand's stack waits while another strand
//! of its fibre is resident (copy-swap).
//!
//! A save area holds exactly the used part of a stack: the bytes from the
//! saved stack pointer up to the stack top. Its capacity is that length
//! rounded up to 16 bytes, so a strand costs its control block plus what
//! its stack really uses. Areas come from the global allocator; running
//! out is never a crash (see `scheduler::make_resident`).

use crate::atomics::unmodelled::{AtomicUsize, Ordering::Relaxed};
use crate::context::{Context, FRAME_BYTES};
use alloc::alloc::{Layout, alloc, dealloc};
use core::ptr::{self, NonNull};

const ALIGN: usize = 16;

/// Bytes held by all save areas, for [`super::usage`].
static HELD: AtomicUsize = AtomicUsize::new(0);

/// Bytes all save areas hold now (capacities, so it counts spares too).
pub(crate) fn held_bytes() -> usize {
    HELD.load(Relaxed)
}

/// A heap copy of the top `len` bytes of a stack.
pub(crate) struct SaveArea {
    memory: Option<NonNull<u8>>,
    // u32 keeps the strand header within its size budget; a stack image
    // is far below 4 GiB.
    capacity: u32,
    len: u32,
}

// SAFETY: the area owns its memory; it moves with its strand or fibre.
unsafe impl Send for SaveArea {}

impl SaveArea {
    /// No memory.
    pub(crate) const fn empty() -> Self {
        Self { memory: None, capacity: 0, len: 0 }
    }

    /// Makes room for `len` bytes, keeping the memory if it is big enough.
    /// Returns `false`, leaving the area as it was, if memory ran out.
    pub(crate) fn reserve(&mut self, len: usize) -> bool {
        if len <= self.capacity as usize {
            return true;
        }
        let capacity = len.next_multiple_of(ALIGN);
        let Ok(capacity32) = u32::try_from(capacity) else { return false };
        let Ok(layout) = Layout::from_size_align(capacity, ALIGN) else { return false };
        // SAFETY: the layout has a non-zero size (`len` > capacity >= 0).
        let Some(memory) = NonNull::new(unsafe { alloc(layout) }) else { return false };
        self.free();
        HELD.fetch_add(capacity, Relaxed);
        self.memory = Some(memory);
        self.capacity = capacity32;
        true
    }

    /// Copies `len` bytes ending at `top` into the area.
    ///
    /// # Safety
    ///
    /// `reserve(len)` succeeded; `[top - len, top)` is readable.
    pub(crate) unsafe fn save(&mut self, top: *const u8, len: usize) {
        debug_assert!(len <= self.capacity as usize);
        if let Some(memory) = self.memory {
            // SAFETY: the caller's contract; the area is `capacity` bytes.
            unsafe { ptr::copy_nonoverlapping(top.sub(len), memory.as_ptr(), len) };
        }
        // Lossless: `len` fits the reserved capacity.
        self.len = len as u32;
    }

    /// Copies the image back so that it ends at `top`, and marks the area
    /// empty (its memory stays, for reuse). Returns the bytes copied.
    ///
    /// # Safety
    ///
    /// `[top - len(), top)` is writable and not in use.
    pub(crate) unsafe fn restore(&mut self, top: *mut u8) -> usize {
        let len = self.len as usize;
        if let Some(memory) = self.memory {
            // SAFETY: the caller's contract; the area holds `len` bytes.
            unsafe { ptr::copy_nonoverlapping(memory.as_ptr(), top.sub(len), len) };
        }
        self.len = 0;
        len
    }

    /// Writes the first frame of a new context as the image, placed as
    /// if its stack ended at `stack_top`; returns that context, or `None`
    /// if memory ran out.
    pub(crate) fn first_frame(
        &mut self,
        stack_top: *mut u8,
        entry: extern "C" fn(usize) -> !,
        argument: usize,
    ) -> Option<Context> {
        let room = FRAME_BYTES.next_multiple_of(ALIGN);
        if !self.reserve(room) {
            return None;
        }
        let memory = self.memory?;
        // SAFETY: `room` bytes were reserved.
        let image_top = unsafe { memory.as_ptr().add(room) };
        // SAFETY: the frame goes in the `room` bytes below `image_top`,
        // which only this area owns; the context is never run here.
        let built = unsafe { Context::new(image_top, entry, argument) };
        let depth = image_top as usize - built.stack_pointer();
        // An image starts at the area's first byte (`restore` copies from
        // there). The frame ends at `image_top`, so when it is shorter than
        // `room` (x86_64 soft-float: 56 bytes in 64), move it down.
        // SAFETY: both ranges lie in the `room` bytes reserved; `copy`
        // allows them to overlap.
        unsafe { ptr::copy(image_top.sub(depth), memory.as_ptr(), depth) };
        // Lossless: the frame fits the `room` bytes just reserved.
        self.len = depth as u32;
        debug_assert_eq!(stack_top as usize % ALIGN, 0);
        Some(built.moved_to(stack_top as usize - depth))
    }

    /// Gives the memory back.
    pub(crate) fn free(&mut self) {
        if let Some(memory) = self.memory.take() {
            // SAFETY: allocated by `reserve` with exactly this layout.
            unsafe {
                dealloc(memory.as_ptr(), Layout::from_size_align_unchecked(self.capacity as usize, ALIGN))
            };
            HELD.fetch_sub(self.capacity as usize, Relaxed);
        }
        self.capacity = 0;
        self.len = 0;
    }
}

impl Drop for SaveArea {
    fn drop(&mut self) {
        self.free();
    }
}
