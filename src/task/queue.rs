//! A core's private FIFO of tasks: no atomics, since only its owner core
//! touches it.

use super::Task;
use crate::mailbox::list::Chain;
use core::ptr::{self, NonNull};

/// An intrusive FIFO through the tasks' links.
pub struct TaskQueue {
    head: *mut Task,
    tail: *mut Task,
    len: usize,
}

// SAFETY: the queue owns its tasks, which are `Send` (closures are required
// to be); it moves between threads only with its owner core's state.
unsafe impl Send for TaskQueue {}

impl TaskQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        Self { head: ptr::null_mut(), tail: ptr::null_mut(), len: 0 }
    }

    /// How many tasks it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Appends one task.
    ///
    /// # Safety
    ///
    /// The caller gives up ownership of `task`, a live header in no list.
    pub unsafe fn push_back(&mut self, task: NonNull<Task>) {
        // SAFETY: the queue now owns the task.
        unsafe { Task::set_next(task, ptr::null_mut()) };
        if self.tail.is_null() {
            self.head = task.as_ptr();
        } else {
            // SAFETY: the tail is a live task the queue owns.
            unsafe { Task::set_next(NonNull::new_unchecked(self.tail), task.as_ptr()) };
        }
        self.tail = task.as_ptr();
        self.len += 1;
    }

    /// Moves every task of `other` to the back of this queue, in order.
    pub fn append(&mut self, other: &mut TaskQueue) {
        let Some(first) = NonNull::new(other.head) else { return };
        if self.tail.is_null() {
            self.head = first.as_ptr();
        } else {
            // SAFETY: the tail is a live task this queue owns; `other`'s
            // tasks become this queue's.
            unsafe { Task::set_next(NonNull::new_unchecked(self.tail), first.as_ptr()) };
        }
        self.tail = other.tail;
        self.len += other.len;
        *other = TaskQueue::new();
    }

    /// The oldest task, left in the queue.
    pub fn front(&self) -> Option<NonNull<Task>> {
        NonNull::new(self.head)
    }

    /// Removes the oldest task.
    pub fn pop_front(&mut self) -> Option<NonNull<Task>> {
        let task = NonNull::new(self.head)?;
        // SAFETY: the queue owns the task.
        self.head = unsafe { Task::next(task) };
        if self.head.is_null() {
            self.tail = ptr::null_mut();
        }
        self.len -= 1;
        Some(task)
    }

    /// Appends a chain taken from an atomic list (newest first), restoring
    /// push order; returns how many tasks it held.
    ///
    /// # Safety
    ///
    /// The caller owns the chain and gives it up.
    pub unsafe fn append_reversed(&mut self, chain: Chain) -> usize {
        let Some(newest) = chain else { return 0 };
        // Reverse in place: the newest becomes the tail.
        let mut reversed: *mut Task = ptr::null_mut();
        let mut cursor = newest.as_ptr();
        let mut count = 0;
        while let Some(task) = NonNull::new(cursor) {
            // SAFETY: the caller owns every task of the chain.
            cursor = unsafe { Task::next(task) };
            // SAFETY: as above.
            unsafe { Task::set_next(task, reversed) };
            reversed = task.as_ptr();
            count += 1;
        }
        if self.tail.is_null() {
            self.head = reversed;
        } else {
            // SAFETY: the tail is a live task the queue owns.
            unsafe { Task::set_next(NonNull::new_unchecked(self.tail), reversed) };
        }
        self.tail = newest.as_ptr();
        self.len += count;
        count
    }

    /// Splits off the older half (at least one task if any) as a chain
    /// linked newest first, ready for `AtomicList::push_chain`: returns
    /// `(newest, oldest, count)`.
    pub fn split_front_half(&mut self) -> Option<(NonNull<Task>, NonNull<Task>, usize)> {
        let take = self.len.div_ceil(2);
        let mut chain: *mut Task = ptr::null_mut();
        let mut oldest = None;
        for _ in 0..take {
            let task = self.pop_front()?;
            oldest.get_or_insert(task);
            // SAFETY: popped, so owned here.
            unsafe { Task::set_next(task, chain) };
            chain = task.as_ptr();
        }
        Some((NonNull::new(chain)?, oldest?, take))
    }
}
