//! The timer heap's storage: fixed-size chunks, so the heap grows without
//! moving an entry. It grows with its lock held, and the lock masks
//! interrupts, so a `Vec`'s growth (a copy of every entry) would hold
//! interrupts off for a time that grows with the number of sleepers. A
//! chunk is allocated before the lock is taken, and linking it in is one
//! push of a pointer.

use alloc::alloc::{Layout, alloc};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ops::{Index, IndexMut};

/// Entries per chunk.
pub(super) const CHUNK: usize = 64;

/// An array of `T` in chunks of [`CHUNK`].
pub(super) struct Chunked<T: Copy> {
    chunks: Vec<Box<[T]>>,
    len: usize,
}

impl<T: Copy> Chunked<T> {
    pub(super) const fn new() -> Self {
        Self { chunks: Vec::new(), len: 0 }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a push needs another chunk first.
    pub(super) fn is_full(&self) -> bool {
        self.len == self.chunks.len() * CHUNK
    }

    /// A chunk for [`Chunked::link`], filled with `fill`; `None` if memory
    /// ran out.
    pub(super) fn allocate(fill: T) -> Option<Box<[T]>> {
        let layout = Layout::array::<T>(CHUNK).ok()?;
        // SAFETY: the layout has a non-zero size (`T` is an entry).
        let memory = unsafe { alloc(layout) }.cast::<T>();
        if memory.is_null() {
            return None;
        }
        for i in 0..CHUNK {
            // SAFETY: `i` is within the allocation, written once.
            unsafe { memory.add(i).write(fill) };
        }
        // SAFETY: allocated with the layout of `[T; CHUNK]`, every element
        // initialised; the box frees it with that layout.
        Some(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(memory, CHUNK)) })
    }

    /// Adds `chunk`'s room at the end; gives it back if the list of chunks
    /// could not grow.
    pub(super) fn link(&mut self, chunk: Box<[T]>) -> Result<(), Box<[T]>> {
        debug_assert_eq!(chunk.len(), CHUNK);
        if self.chunks.try_reserve(1).is_err() {
            return Err(chunk);
        }
        self.chunks.push(chunk);
        Ok(())
    }

    /// Appends `value`; there must be room (see [`Chunked::is_full`]).
    pub(super) fn push(&mut self, value: T) {
        assert!(!self.is_full(), "a chunk is linked before a push");
        let at = self.len;
        self.len += 1;
        self[at] = value;
    }

    pub(super) fn pop(&mut self) -> Option<T> {
        let last = self.len.checked_sub(1)?;
        let value = self[last];
        self.len = last;
        Some(value)
    }

    pub(super) fn first(&self) -> Option<&T> {
        (self.len > 0).then(|| &self[0])
    }
}

impl<T: Copy> Index<usize> for Chunked<T> {
    type Output = T;

    /// Entries past the end but within a chunk are stale, not unsound:
    /// only debug builds check for them.
    fn index(&self, index: usize) -> &T {
        debug_assert!(index < self.len, "index {index} past the end ({})", self.len);
        &self.chunks[index / CHUNK][index % CHUNK]
    }
}

impl<T: Copy> IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        debug_assert!(index < self.len, "index {index} past the end ({})", self.len);
        &mut self.chunks[index / CHUNK][index % CHUNK]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_by_linked_chunks_and_keeps_its_entries() {
        let mut array = Chunked::new();
        assert!(array.is_full() && array.is_empty());
        for value in 0..200u64 {
            if array.is_full() {
                array.link(Chunked::allocate(u64::MAX).unwrap()).unwrap();
            }
            array.push(value);
        }
        assert_eq!(array.len(), 200);
        assert!((0..200).all(|i| array[i] == i as u64));
        array[0] = 199;
        assert_eq!(array.pop(), Some(199));
        assert_eq!(array.first(), Some(&199));
        assert_eq!(array.len(), 199);
    }
}
