//! Values in a core's storage blocks, or on the heap when they do not fit.
//!
//! Tasks, and the messages queued for actors, are small and short-lived:
//! one storage block from the calling core's [`BlockCache`] holds a header,
//! the home core of the block and the value. A value too large or too
//! aligned for a block, or made where no core cache is at hand (outside the
//! pool), goes to the global allocator; its home then says so.

use super::storage::{BLOCK_SIZE, Block, BlockCache};
use alloc::alloc::{Layout, alloc, dealloc};
use core::mem::{ManuallyDrop, align_of, size_of};
use core::ptr::NonNull;

/// `home` of a value the global allocator holds.
const HEAP: usize = usize::MAX;

/// A header `H` (first, so a pointer to the whole is a pointer to the
/// header), where the storage came from, and the value.
#[repr(C)]
pub(crate) struct Boxed<H, T> {
    pub(crate) head: H,
    home: usize,
    value: ManuallyDrop<T>,
}

const fn fits_block<H, T>() -> bool {
    size_of::<Boxed<H, T>>() <= BLOCK_SIZE && align_of::<Boxed<H, T>>() <= align_of::<Block>()
}

/// Places `head` and `value` in `cache`'s storage if they fit there, else
/// on the heap. Gives `value` back if memory is exhausted.
pub(crate) fn new<H, T>(
    head: H,
    value: T,
    cache: Option<&mut BlockCache>,
) -> Result<NonNull<Boxed<H, T>>, T> {
    crate::platform::refuse_in_handler(
        "posting work (a task, a future's closure, an actor's message)",
        crate::platform::HANDLERS_DO_NOT_ALLOCATE,
    );
    let (memory, home) = match cache {
        Some(cache) if fits_block::<H, T>() => match cache.alloc() {
            Some(block) => (block.cast::<Boxed<H, T>>(), cache.core()),
            None => return Err(value),
        },
        _ => {
            let layout = Layout::new::<Boxed<H, T>>();
            // SAFETY: the layout has a non-zero size (it holds `home`).
            match NonNull::new(unsafe { alloc(layout) }.cast::<Boxed<H, T>>()) {
                Some(memory) => (memory, HEAP),
                None => return Err(value),
            }
        }
    };
    // SAFETY: fresh storage, large and aligned enough for a Boxed<H, T>.
    unsafe { memory.write(Boxed { head, home, value: ManuallyDrop::new(value) }) };
    Ok(memory)
}

/// Moves the value out and frees the storage. A block whose pool's cache
/// is not at hand (`cache` is `None`) stays with the pool, which frees all
/// its blocks when it is dropped.
///
/// # Safety
///
/// `boxed` was made by [`new`] with these types, its value not yet taken,
/// and the caller owns it and never touches it again. `cache`, if given,
/// is the calling core's cache of the pool whose cache made the block,
/// with no other reference to it live.
pub(crate) unsafe fn take<H, T>(boxed: NonNull<Boxed<H, T>>, cache: Option<NonNull<BlockCache>>) -> T {
    // SAFETY: `new` initialised it; the value is read exactly once, here.
    let (home, value) = unsafe { ((*boxed.as_ptr()).home, ManuallyDrop::take(&mut (*boxed.as_ptr()).value)) };
    if home == HEAP {
        // SAFETY: allocated in `new` with this layout; nothing live remains.
        unsafe { dealloc(boxed.as_ptr().cast(), Layout::new::<Boxed<H, T>>()) };
    } else if let Some(mut cache) = cache {
        // SAFETY: the cache is the calling core's and no other reference to
        // it is live (contract); the block came from `home`'s cache of the
        // same pool, and nothing live remains in it.
        unsafe { cache.as_mut().release(boxed.cast(), home) };
    }
    value
}
