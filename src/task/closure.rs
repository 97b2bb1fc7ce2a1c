//! Closures as tasks.
//!
//! A closure small enough lives in one storage block together with its
//! header (the common case: a few captured words). A larger or
//! over-aligned closure, or one made where there is no core cache (outside
//! the pool), goes to the global allocator instead.

use super::storage::{BLOCK_SIZE, Block, BlockCache};
use super::{Action, Task};
use alloc::alloc::{Layout, alloc, dealloc};
use core::mem::{ManuallyDrop, align_of, size_of};
use core::ptr::NonNull;

/// `home` of a closure task that the global allocator holds.
const HEAP: usize = usize::MAX;

#[repr(C)]
struct ClosureTask<F> {
    task: Task,
    home: usize,
    f: ManuallyDrop<F>,
}

const fn fits_block<F>() -> bool {
    size_of::<ClosureTask<F>>() <= BLOCK_SIZE && align_of::<ClosureTask<F>>() <= align_of::<Block>()
}

/// Wraps `f` in a task, in `cache`'s storage if it fits there. Gives `f`
/// back if memory is exhausted.
pub(crate) fn new<F: FnOnce() + Send + 'static>(
    f: F,
    cache: Option<&mut BlockCache>,
) -> Result<NonNull<Task>, F> {
    let (memory, home) = match cache {
        Some(cache) if fits_block::<F>() => match cache.alloc() {
            Some(block) => (block.cast::<ClosureTask<F>>(), cache.core()),
            None => return Err(f),
        },
        _ => {
            let layout = Layout::new::<ClosureTask<F>>();
            // SAFETY: the layout has a non-zero size (it holds a header).
            match NonNull::new(unsafe { alloc(layout) }.cast::<ClosureTask<F>>()) {
                Some(memory) => (memory, HEAP),
                None => return Err(f),
            }
        }
    };
    // SAFETY: fresh storage, large and aligned enough for a ClosureTask<F>.
    unsafe { memory.write(ClosureTask { task: Task::new(call::<F>), home, f: ManuallyDrop::new(f) }) };
    Ok(memory.cast())
}

/// The `TaskFn` of a closure task: frees the storage first (so a closure
/// that posts more tasks can reuse the block at once), then runs or drops
/// the closure.
///
/// # Safety
///
/// As for [`TaskFn`](super::TaskFn); `task` was made by [`new`] with this `F`.
unsafe fn call<F: FnOnce() + Send + 'static>(
    task: NonNull<Task>,
    action: Action,
    cache: NonNull<BlockCache>,
) {
    // SAFETY: forwarded contract.
    let f = unsafe { take_back::<F>(task, Some(cache)) };
    match action {
        Action::Run => f(),
        Action::Discard => drop(f),
    }
}

/// Frees a closure task that was never published (or was refused) and
/// returns its closure, so it can go back to whoever gave it.
///
/// # Safety
///
/// The caller owns `task`, made by [`new`] with this `F` and not yet run;
/// `cache` is the calling core's cache of the pool the task was made for
/// (or `None` if the task was made without one, on the heap), with no
/// other reference to it live.
pub(crate) unsafe fn take_back<F: FnOnce() + Send + 'static>(
    task: NonNull<Task>,
    cache: Option<NonNull<BlockCache>>,
) -> F {
    let memory = task.cast::<ClosureTask<F>>();
    // SAFETY: `new` initialised the task; it is read exactly once, here.
    let (home, f) = unsafe { ((*memory.as_ptr()).home, ManuallyDrop::take(&mut (*memory.as_ptr()).f)) };
    if home == HEAP {
        // SAFETY: allocated in `new` with this layout; nothing live remains.
        unsafe { dealloc(memory.as_ptr().cast(), Layout::new::<ClosureTask<F>>()) };
    } else {
        let mut cache = cache.expect("a task in a core's storage is taken back with a core's cache");
        // SAFETY: the cache is the calling core's and no other reference to
        // it is live (contract); the block came from `home`'s cache of this
        // pool, and nothing live remains in it.
        unsafe { cache.as_mut().release(memory.cast(), home) };
    }
    f
}
