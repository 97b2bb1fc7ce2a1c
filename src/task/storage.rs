//! Storage for tasks: fixed-size blocks in per-core caches, so the hot path
//! takes no lock and touches no shared line.
//!
//! Each core allocates from its own free list. A block freed on its home
//! core goes straight back there. A block freed on another core is gathered
//! in that core's private batch for the home core and returned with one
//! compare-exchange per [`RETURN_BATCH`] blocks onto the home core's
//! *returned* list (an [`AtomicList`] used without its sentinel); the home
//! core takes that whole list with one swap when its free list runs dry.
//! A core keeps [`OUTGOING`] batches, each for the home cores of one
//! residue modulo [`OUTGOING`]: a block for another home of the same
//! residue first sends the batch there back, partial. So a cache's size,
//! and the pass over its batches before it sleeps, do not grow with the
//! pool's cores, and up to [`OUTGOING`] cores never send a partial batch.
//! Only when both are empty does a core carve a new chunk from the global
//! allocator, which may take a lock; that is the cold path, and a steady
//! stream between two cores reaches a fixed working set and stops
//! allocating. A core also hands back its partial batches before it sleeps,
//! so blocks are never stranded on an idle core.
//!
//! A core that is about to sleep trims its cache ([`BlockCache::trim`]):
//! chunks all of whose blocks are back in its free list go back to the
//! global allocator, beyond a few it keeps for the next burst. So a burst
//! of a million tasks does not keep its 64 MB for the life of the pool.
//! The rest is freed when the pool is dropped.

use super::Task;
use crate::atomics::CachePadded;
use crate::mailbox::list::AtomicList;
use alloc::alloc::{Layout, alloc, dealloc};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use core::ptr::{self, NonNull};

/// Bytes in one task block, header included.
pub const BLOCK_SIZE: usize = 64;

/// One task block: a cache line.
#[repr(C, align(64))]
pub struct Block(MaybeUninit<[u8; BLOCK_SIZE]>);

/// Blocks carved from the global allocator at a time.
const CHUNK_BLOCKS: usize = 64;

/// Chunks a trimmed cache keeps, free or not, for the next burst.
pub const KEPT_CHUNKS: usize = 4;

/// Blocks a core gathers for another home core before returning them.
pub const RETURN_BATCH: usize = 32;

/// Batches a cache keeps for other home cores (module docs).
pub const OUTGOING: usize = 16;

/// A private chain of blocks bound for one home core.
#[derive(Clone, Copy)]
struct Batch {
    newest: *mut Task,
    oldest: *mut Task,
    len: usize,
    /// The core they go back to, while `len > 0`.
    home: usize,
}

impl Batch {
    const EMPTY: Self = Self { newest: ptr::null_mut(), oldest: ptr::null_mut(), len: 0, home: 0 };
}

/// Where other cores return each core's blocks; shared by the pool.
pub type ReturnLists = [CachePadded<AtomicList>];

/// One core's block allocator. Owned by that core; never shared.
pub struct BlockCache {
    core: usize,
    free: *mut Task,
    returns: NonNull<ReturnLists>,
    /// Boxed: inline, it would double the per-core state the pool keeps
    /// in one 1 KiB slot per core (`crate::pool`'s `PerCore`).
    outgoing: Box<[Batch; OUTGOING]>,
    chunks: Vec<NonNull<Block>>,
}

// SAFETY: a cache is used by one core at a time; it moves to that core's
// thread with the pool state that owns it. The return lists it points to
// outlive it (both belong to the pool) and are themselves thread-safe.
unsafe impl Send for BlockCache {}

impl BlockCache {
    /// A cache for `core`, returning foreign blocks to `returns`.
    ///
    /// # Safety
    ///
    /// `returns` outlives the cache and has one list per core of the pool.
    pub unsafe fn new(core: usize, returns: &ReturnLists) -> Self {
        Self {
            core,
            free: ptr::null_mut(),
            returns: NonNull::from(returns),
            outgoing: Box::new([Batch::EMPTY; OUTGOING]),
            chunks: Vec::new(),
        }
    }

    /// The core this cache belongs to: the home of the blocks it allocates.
    pub fn core(&self) -> usize {
        self.core
    }

    fn return_list(&self, home: usize) -> &AtomicList {
        // SAFETY: the lists outlive the cache (contract of `new`).
        unsafe { &self.returns.as_ref()[home] }
    }

    /// A block for a new task, or `None` if the global allocator is out of
    /// memory.
    #[inline]
    pub fn alloc(&mut self) -> Option<NonNull<Block>> {
        if self.free.is_null() {
            self.refill()?;
        }
        let block = NonNull::new(self.free)?;
        // SAFETY: free blocks are owned by this cache and linked through
        // their first word.
        self.free = unsafe { Task::next(block) };
        Some(block.cast())
    }

    #[cold]
    fn refill(&mut self) -> Option<()> {
        if let Some(returned) = self.return_list(self.core).take_all() {
            self.free = returned.as_ptr();
            return Some(());
        }
        let layout = Layout::new::<[Block; CHUNK_BLOCKS]>();
        // SAFETY: the layout has a non-zero size.
        let chunk = NonNull::new(unsafe { alloc(layout) }.cast::<Block>())?;
        self.chunks.push(chunk);
        for i in 0..CHUNK_BLOCKS {
            // SAFETY: `i` is within the chunk just allocated; the block is
            // free storage owned by this cache.
            unsafe {
                let block = NonNull::new_unchecked(chunk.as_ptr().add(i)).cast::<Task>();
                Task::set_next(block, self.free);
                self.free = block.as_ptr();
            }
        }
        Some(())
    }

    /// Gives back a block that `home`'s cache allocated.
    ///
    /// # Safety
    ///
    /// `block` came from `alloc` on the cache of core `home` of this pool,
    /// holds nothing live any more, and is not used again by the caller.
    #[inline]
    pub unsafe fn release(&mut self, block: NonNull<Block>, home: usize) {
        let block = block.cast::<Task>();
        if home == self.core {
            // SAFETY: the block is free and now owned by this cache.
            unsafe { Task::set_next(block, self.free) };
            self.free = block.as_ptr();
            return;
        }
        let slot = home % OUTGOING;
        if self.outgoing[slot].len > 0 && self.outgoing[slot].home != home {
            self.send_back(slot);
        }
        let batch = &mut self.outgoing[slot];
        batch.home = home;
        // SAFETY: the block is free and now owned by this cache.
        unsafe { Task::set_next(block, batch.newest) };
        if batch.newest.is_null() {
            batch.oldest = block.as_ptr();
        }
        batch.newest = block.as_ptr();
        batch.len += 1;
        if batch.len >= RETURN_BATCH {
            self.send_back(slot);
        }
    }

    /// Returns every partial batch to its home core (before sleeping).
    pub fn flush(&mut self) {
        for slot in 0..OUTGOING {
            if self.outgoing[slot].len > 0 {
                self.send_back(slot);
            }
        }
    }

    /// Gives chunks whose blocks are all free back to the global
    /// allocator, keeping [`KEPT_CHUNKS`]; the owner calls it when idle.
    /// Costs a pass over the free blocks, and nothing when the cache holds
    /// no more than it keeps.
    pub fn trim(&mut self) {
        if self.chunks.len() <= KEPT_CHUNKS {
            return;
        }
        // Blocks other cores gave back count as free too.
        if let Some(returned) = self.return_list(self.core).take_all() {
            let mut tail = returned;
            // SAFETY: a taken chain of free blocks, owned by this cache.
            while let Some(next) = NonNull::new(unsafe { Task::next(tail) }) {
                tail = next;
            }
            // SAFETY: as above.
            unsafe { Task::set_next(tail, self.free) };
            self.free = returned.as_ptr();
        }
        self.chunks.sort_unstable();
        let chunk_of = |chunks: &[NonNull<Block>], block: *mut Task| {
            let at = chunks.partition_point(|chunk| chunk.as_ptr().cast::<Task>() <= block);
            at.checked_sub(1)
        };
        let mut free_in = alloc::vec![0usize; self.chunks.len()];
        let mut block = self.free;
        while let Some(free) = NonNull::new(block) {
            if let Some(chunk) = chunk_of(&self.chunks, block) {
                free_in[chunk] += 1;
            }
            // SAFETY: free blocks are linked through their first word.
            block = unsafe { Task::next(free) };
        }
        let mut releasable = free_in.iter().filter(|&&n| n == CHUNK_BLOCKS).count();
        releasable = releasable.min(self.chunks.len() - KEPT_CHUNKS);
        if releasable == 0 {
            return;
        }
        // Choose the chunks to free, then unlink their blocks.
        let mut freeing = alloc::vec![false; self.chunks.len()];
        for (chunk, flag) in freeing.iter_mut().enumerate() {
            if releasable > 0 && free_in[chunk] == CHUNK_BLOCKS {
                *flag = true;
                releasable -= 1;
            }
        }
        let (mut kept, mut last): (*mut Task, Option<NonNull<Task>>) = (ptr::null_mut(), None);
        let mut block = self.free;
        while let Some(free) = NonNull::new(block) {
            // SAFETY: as above.
            let next = unsafe { Task::next(free) };
            if !chunk_of(&self.chunks, block).is_some_and(|chunk| freeing[chunk]) {
                match last {
                    // SAFETY: a kept free block, owned by this cache.
                    Some(last) => unsafe { Task::set_next(last, block) },
                    None => kept = block,
                }
                last = Some(free);
            }
            block = next;
        }
        if let Some(last) = last {
            // SAFETY: as above.
            unsafe { Task::set_next(last, ptr::null_mut()) };
        }
        self.free = kept;
        let layout = Layout::new::<[Block; CHUNK_BLOCKS]>();
        let mut index = 0;
        self.chunks.retain(|&chunk| {
            let free = freeing[index];
            index += 1;
            if free {
                // SAFETY: allocated in `refill` with this layout; every one
                // of its blocks was free and is now unlinked.
                unsafe { dealloc(chunk.as_ptr().cast(), layout) };
            }
            !free
        });
    }

    /// Sends the batch in `slot` back to its home core.
    fn send_back(&mut self, slot: usize) {
        let batch = &mut self.outgoing[slot];
        let (newest, oldest, home) = (batch.newest, batch.oldest, batch.home);
        *batch = Batch::EMPTY;
        if let (Some(newest), Some(oldest)) = (NonNull::new(newest), NonNull::new(oldest)) {
            // SAFETY: the chain is linked newest to oldest and owned here.
            // Return lists carry no sentinel, so the result is always Queued.
            let _ = unsafe { self.return_list(home).push_chain(newest, oldest) };
        }
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        let layout = Layout::new::<[Block; CHUNK_BLOCKS]>();
        for &chunk in &self.chunks {
            // SAFETY: allocated in `refill` with this layout. The pool drops
            // its caches only when no task is left, so no block is in use.
            unsafe { dealloc(chunk.as_ptr().cast(), layout) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::queue::TaskQueue;

    /// How many blocks wait on `list`; takes them (the test frees none).
    fn returned(list: &AtomicList) -> usize {
        let mut queue = TaskQueue::new();
        // SAFETY: a taken chain is ours.
        unsafe { queue.append_reversed(list.take_all()) }
    }

    #[test]
    fn a_block_for_another_home_of_the_same_slot_sends_the_batch_back_first() {
        const CORES: usize = 2 * OUTGOING + 2;
        let returns: Box<ReturnLists> = (0..CORES).map(|_| CachePadded(AtomicList::new())).collect();
        // SAFETY: `returns` outlives every cache of this test.
        let mut caches: Vec<BlockCache> =
            (0..CORES).map(|core| unsafe { BlockCache::new(core, &returns) }).collect();
        let (near, far) = (1, 1 + OUTGOING);
        let block_of = |caches: &mut Vec<BlockCache>, home: usize| caches[home].alloc().expect("memory");
        let blocks: Vec<_> =
            [near, near, far].iter().map(|&home| (block_of(&mut caches, home), home)).collect();
        let releaser = &mut caches[0];
        for &(block, home) in &blocks[..2] {
            // SAFETY: allocated by `home`'s cache and not used again.
            unsafe { releaser.release(block, home) };
        }
        assert_eq!(returned(&returns[near]), 0, "a partial batch waits");
        // SAFETY: as above.
        unsafe { releaser.release(blocks[2].0, far) };
        assert_eq!(returned(&returns[near]), 2, "sent back when another home took its slot");
        releaser.flush();
        assert_eq!(returned(&returns[far]), 1, "the flush sends the rest");
        assert!(caches.iter().all(|cache| cache.outgoing.iter().all(|batch| batch.len == 0)));
    }
}
