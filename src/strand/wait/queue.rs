//! The wait queue of a blocking primitive: a FIFO of waiters, each a
//! blocked strand or an async task, behind the primitive's lock.
//!
//! # Two kinds of waiter, one queue
//!
//! A strand waits with the links in its control block (never on its stack:
//! the copy-swap invariant). An async task waits with a [`TaskWaiter`] in
//! its future, which is pinned, so the node stays put while it is queued.
//! Strands and tasks queue in the same list, in arrival order, and a waker
//! serves them alike: the links say which kind each one is (a tag in the
//! low bit of every link that points at a task's node).
//!
//! Waking a strand moves its state word (it may have timed out or been
//! cancelled meanwhile: then the next waiter is tried). Waking a task
//! marks its node *woken* and wakes its `Waker`; a task cannot time out
//! under the lock, so the wake always reaches it. What the mark means is
//! the primitive's: for a mutex or a semaphore it is the lock or permit
//! handed over, for a channel a reason to look again. A task's future that
//! is dropped while marked gives back what it was handed (a permit, the
//! lock, or the wake itself, to the next waiter), so nothing is lost.
//!
//! # Why a node in a future is safe to point at
//!
//! Every access to the links, the waker and the mark happens under the
//! lock guarding the queue. The future leaves the queue in its `Drop`,
//! under that lock, and a pinned value is dropped before its memory is
//! reused. A future that may be in a queue is never on a strand's stack:
//! a strand polls futures only through `block_on`, which moves them to
//! the heap first.

use super::super::control::Header;
use super::super::scheduler;
use crate::strand::control::state;
use core::cell::UnsafeCell;
use core::marker::PhantomPinned;
use core::mem::offset_of;
use core::pin::Pin;
use core::ptr::{self, NonNull};
use core::task::Waker;

/// The low bit of a link that points at a task's node.
const TASK: usize = 1;

/// A pointer to a waiter's links, tagged with its kind; null ends the list.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Link(*mut WaitLinks);

/// The `prev` of a waiter in no queue.
const NOT_QUEUED: Link = Link(ptr::dangling_mut());
const END: Link = Link(ptr::null_mut());

/// Who a link points at.
enum Waiter {
    Strand(NonNull<Header>),
    Task(NonNull<TaskWaiter>),
}

impl Link {
    /// The links of the strand `strand`.
    fn strand(strand: NonNull<Header>) -> Self {
        // SAFETY: a projection to a field of a live control block (the
        // callers' contracts); no reference is made.
        Self(unsafe { &raw mut (*strand.as_ptr()).wait }.cast())
    }

    fn task(node: &TaskWaiter) -> Self {
        Self(ptr::from_ref(node).cast_mut().cast::<WaitLinks>().map_addr(|address| address | TASK))
    }

    fn links(self) -> *mut WaitLinks {
        self.0.map_addr(|address| address & !TASK)
    }

    fn waiter(self) -> Waiter {
        let links = self.links();
        if self.0.addr() & TASK != 0 {
            // SAFETY: a task's links are the first field of its node.
            Waiter::Task(unsafe { NonNull::new_unchecked(links.cast()) })
        } else {
            // SAFETY: a strand's links are its control block's `wait`
            // field, reached from the block's own pointer (`strand`), so
            // stepping back stays in the block.
            Waiter::Strand(unsafe { NonNull::new_unchecked(links.byte_sub(offset_of!(Header, wait)).cast()) })
        }
    }
}

/// A waiter's place in a queue; guarded by that queue's lock.
pub(crate) struct WaitLinks {
    /// The previous waiter, [`END`] at the head, or [`NOT_QUEUED`].
    prev: Link,
    next: Link,
}

impl WaitLinks {
    /// The links of a waiter in no queue.
    pub(crate) const fn new() -> Self {
        Self { prev: NOT_QUEUED, next: END }
    }
}

/// An async task's place in a wait queue, kept in its (pinned) future.
#[repr(C)]
pub(crate) struct TaskWaiter {
    /// First: a link to the node is a link to these.
    links: UnsafeCell<WaitLinks>,
    /// The waker a waker of the queue wakes.
    waker: UnsafeCell<Option<Waker>>,
    /// Set by whoever takes the node off the queue to wake it (module
    /// docs); cleared by its future when it sees it.
    woken: UnsafeCell<bool>,
    /// Queues point at it.
    _pinned: PhantomPinned,
}

// SAFETY: the links point at other waiters, which are shared between cores
// by design; every field is touched only under the queue's lock.
unsafe impl Send for TaskWaiter {}
// SAFETY: as above.
unsafe impl Sync for TaskWaiter {}

impl TaskWaiter {
    pub(crate) const fn new() -> Self {
        Self {
            links: UnsafeCell::new(WaitLinks::new()),
            waker: UnsafeCell::new(None),
            woken: UnsafeCell::new(false),
            _pinned: PhantomPinned,
        }
    }

    /// Queues the task at the back of `queue` with `waker`, or, if it is
    /// queued already, keeps its place and only takes the new waker.
    ///
    /// # Safety
    ///
    /// The caller holds the lock guarding `queue`; the node is in `queue`
    /// or in none; its owner calls [`TaskWaiter::leave`] under that lock
    /// before the node is dropped.
    pub(crate) unsafe fn wait(self: Pin<&Self>, queue: &mut WaitQueue, waker: &Waker) {
        // SAFETY: the lock guards the fields (contract).
        let current = unsafe { &mut *self.waker.get() };
        if !current.as_ref().is_some_and(|old| old.will_wake(waker)) {
            *current = Some(waker.clone());
        }
        // SAFETY: as above.
        if unsafe { (*self.links.get()).prev } == NOT_QUEUED {
            // SAFETY: pinned, and it leaves before it is dropped (contract).
            unsafe { queue.push(Link::task(&self)) };
        }
    }

    /// Whether a waker took it off the queue since it last looked; clears
    /// the mark.
    ///
    /// # Safety
    ///
    /// The caller holds the lock guarding the queue it was last in.
    pub(crate) unsafe fn take_woken(&self) -> bool {
        // SAFETY: the lock guards the mark (contract).
        unsafe { ptr::replace(self.woken.get(), false) }
    }

    /// Leaves `queue` if still in it; returns whether it was woken without
    /// having looked (what it was handed must be given back).
    ///
    /// # Safety
    ///
    /// As for [`TaskWaiter::take_woken`], with `queue` that queue.
    pub(crate) unsafe fn leave(&self, queue: &mut WaitQueue) -> bool {
        // SAFETY: the lock guards the links (contract); queued here if at all.
        unsafe {
            queue.remove_link(Link::task(self));
            self.take_woken()
        }
    }

    /// Takes the node off its queue's hands: marks it and wakes its task.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the queue it has just been popped
    /// from.
    unsafe fn wake(node: NonNull<TaskWaiter>) {
        // SAFETY: queued until a moment ago, so live (module docs); the
        // lock guards both fields.
        unsafe {
            *node.as_ref().woken.get() = true;
            if let Some(waker) = &*node.as_ref().waker.get() {
                waker.wake_by_ref();
            }
        }
    }
}

/// A FIFO of waiting strands and tasks. Its owner guards it with a lock.
pub(crate) struct WaitQueue {
    head: Link,
    tail: Link,
}

// SAFETY: the queue only links control blocks and pinned task nodes, which
// are `Send`; its owner guards it with a lock.
unsafe impl Send for WaitQueue {}

impl WaitQueue {
    pub(crate) const fn new() -> Self {
        Self { head: END, tail: END }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head == END
    }

    /// Appends a strand that is blocking.
    ///
    /// # Safety
    ///
    /// `strand` is live, in no wait queue, and stays live until it leaves
    /// this one (the strand removes itself before moving on).
    pub(crate) unsafe fn push_back(&mut self, strand: NonNull<Header>) {
        // SAFETY: forwarded.
        unsafe { self.push(Link::strand(strand)) }
    }

    /// # Safety
    ///
    /// The waiter is live, in no queue, and stays live until it leaves
    /// this one; the caller holds the queue's lock.
    unsafe fn push(&mut self, link: Link) {
        // SAFETY: the caller holds the queue's lock, which guards the links.
        let links = unsafe { &mut *link.links() };
        links.prev = self.tail;
        links.next = END;
        if self.tail == END {
            self.head = link;
        } else {
            // SAFETY: as above, for the old tail.
            unsafe { (*self.tail.links()).next = link };
        }
        self.tail = link;
    }

    /// Removes `strand` if it is still queued; returns whether it was.
    ///
    /// # Safety
    ///
    /// `strand` is live and, if queued, queued here.
    pub(crate) unsafe fn remove(&mut self, strand: NonNull<Header>) -> bool {
        // SAFETY: forwarded.
        unsafe { self.remove_link(Link::strand(strand)) }
    }

    /// # Safety
    ///
    /// The waiter is live and, if queued, queued here.
    unsafe fn remove_link(&mut self, link: Link) -> bool {
        // SAFETY: the caller holds the lock guarding the links.
        let links = unsafe { &mut *link.links() };
        if links.prev == NOT_QUEUED {
            return false;
        }
        if links.prev == END {
            self.head = links.next;
        } else {
            // SAFETY: queued neighbours are live.
            unsafe { (*links.prev.links()).next = links.next };
        }
        if links.next == END {
            self.tail = links.prev;
        } else {
            // SAFETY: as above.
            unsafe { (*links.next.links()).prev = links.prev };
        }
        links.prev = NOT_QUEUED;
        true
    }

    /// The calling strand leaves the queue, if it is still in it: what a
    /// strand whose deadline passed does before it moves on.
    pub(crate) fn leave(&mut self) {
        let me = scheduler::current().expect("only a strand that blocked leaves a wait queue");
        // SAFETY: the running strand is live, and queued here if anywhere
        // (it joins one queue per wait).
        unsafe { self.remove(me) };
    }

    fn pop_front(&mut self) -> Option<Waiter> {
        let head = self.head;
        if head == END {
            return None;
        }
        // SAFETY: the head is queued here.
        unsafe { self.remove_link(head) };
        Some(head.waiter())
    }

    /// Wakes the first waiter that is still waiting; returns whether one
    /// was. A task always is (module docs).
    pub(crate) fn wake_one(&mut self) -> bool {
        while let Some(waiter) = self.pop_front() {
            match waiter {
                Waiter::Strand(strand) => {
                    if scheduler::signal(strand, state::SIGNALLED) {
                        return true;
                    }
                }
                Waiter::Task(node) => {
                    // SAFETY: just popped, under the lock.
                    unsafe { TaskWaiter::wake(node) };
                    return true;
                }
            }
        }
        false
    }

    /// Wakes every waiter; returns how many were still waiting.
    pub(crate) fn wake_all(&mut self) -> usize {
        let mut woken = 0;
        while let Some(waiter) = self.pop_front() {
            woken += usize::from(match waiter {
                Waiter::Strand(strand) => scheduler::signal(strand, state::SIGNALLED),
                Waiter::Task(node) => {
                    // SAFETY: just popped, under the lock.
                    unsafe { TaskWaiter::wake(node) };
                    true
                }
            });
        }
        woken
    }
}

/// The queue with task waiters alone (a strand's needs a running pool):
/// run under Miri too, for the tagged links and the nodes they point into.
#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::atomics::unmodelled::{AtomicUsize, Ordering::SeqCst};
    use alloc::boxed::Box;
    use alloc::sync::Arc;
    use alloc::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    fn waiters(n: usize) -> (Vec<Pin<Box<TaskWaiter>>>, Vec<Arc<Count>>) {
        let nodes = (0..n).map(|_| Box::pin(TaskWaiter::new())).collect();
        let counts = (0..n).map(|_| Arc::new(Count(AtomicUsize::new(0)))).collect();
        (nodes, counts)
    }

    #[test]
    fn tasks_are_woken_in_the_order_they_came_and_marked() {
        let (nodes, counts) = waiters(3);
        let mut queue = WaitQueue::new();
        for (node, count) in nodes.iter().zip(&counts) {
            // SAFETY: the test owns the queue (it stands for the lock);
            // each node leaves before it is dropped (below).
            unsafe { node.as_ref().wait(&mut queue, &Waker::from(count.clone())) };
        }
        // Waiting again keeps the place and takes the new waker.
        // SAFETY: as above.
        unsafe { nodes[0].as_ref().wait(&mut queue, &Waker::from(counts[0].clone())) };
        assert!(queue.wake_one());
        assert_eq!(counts.iter().map(|c| c.0.load(SeqCst)).collect::<Vec<_>>(), [1, 0, 0]);
        // SAFETY: as above.
        unsafe {
            assert!(nodes[0].take_woken(), "the woken node is marked");
            assert!(!nodes[0].take_woken(), "and the mark is taken once");
            // The middle one leaves before it is woken: nothing handed.
            assert!(!nodes[1].leave(&mut queue));
        }
        assert_eq!(queue.wake_all(), 1);
        assert_eq!(counts.iter().map(|c| c.0.load(SeqCst)).collect::<Vec<_>>(), [1, 0, 1]);
        assert!(queue.is_empty());
        // SAFETY: as above; woken and never looked: `leave` says so.
        assert!(unsafe { nodes[2].leave(&mut queue) });
        assert!(!queue.wake_one(), "an empty queue wakes nobody");
    }

    #[test]
    fn a_node_leaving_from_the_middle_keeps_the_links_of_the_rest() {
        let (nodes, counts) = waiters(4);
        let mut queue = WaitQueue::new();
        for (node, count) in nodes.iter().zip(&counts) {
            // SAFETY: as in the test above.
            unsafe { node.as_ref().wait(&mut queue, &Waker::from(count.clone())) };
        }
        // SAFETY: as above.
        unsafe {
            nodes[1].leave(&mut queue);
            nodes[3].leave(&mut queue);
            nodes[0].leave(&mut queue);
        }
        assert!(queue.wake_one());
        assert_eq!(counts.iter().map(|c| c.0.load(SeqCst)).collect::<Vec<_>>(), [0, 0, 1, 0]);
        assert!(queue.is_empty());
    }
}
