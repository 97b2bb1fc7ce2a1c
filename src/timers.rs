//! A pool's timers: the deadlines of sleeping and timed-out strands, and of
//! async tasks' sleeps.
//!
//! A binary min-heap under a spin lock, with each entry's index kept in its
//! owner (a [`TimerSlot`] in a strand's control block, or the [`TimerNode`]
//! in a task's `Sleep` future) so an entry woken early leaves the heap in
//! O(log n). The heap does not know what a strand is: a strand's entry is
//! its slot, and the strand layer says how to wake the strand that holds
//! it ([`StrandTimer`]). Each pool has one heap.
//!
//! Its storage grows by chunks allocated outside the lock (`chunked.rs`).
//! `earliest` mirrors the heap's top outside the lock, so cores can ask
//! "is anything due?" with one load.
//!
//! # Who notices a deadline
//!
//! - A core between tasks expires due timers when it drains its mailboxes
//!   (`crate::pool`'s `worker::find_work`), so a busy pool keeps time.
//! - An idle pool keeps one sleeping core as the *watcher*: it sleeps with
//!   the earliest deadline as its wake-up time (on hardware, the timer
//!   interrupt), and every other core sleeps without one. The handshake
//!   between a new deadline and the watcher is `sleep::watch` (protocol,
//!   proof sketch and loom model there). A timer is only inserted by a
//!   running core, which will itself watch if nobody else does when it
//!   runs out of work.
//! - A watcher that wakes and finds work while deadlines remain hands the
//!   watch on: it wakes a sleeping core, which watches when it sleeps
//!   again. Otherwise a long task on the old watcher would leave every
//!   deadline unwatched while other cores sleep.
//! - A strand whose deadline passed prefers the core that last ran it; if
//!   that core is busy, an idle core takes it from its fibre mailbox
//!   (`crate::pool`'s `worker::steal_woken_fibres`).
//!
//! Expiry signals the strand under the lock; a strand woken by something
//! else removes its entry under the same lock before it moves on, so the
//! heap never holds a control block that is gone (see `crate::strand::wait`).
//! A task's entry is marked fired and its waker woken under the lock; its
//! future removes the entry, under the lock, when it is dropped first (a
//! pinned future is dropped before its memory is reused), and a future
//! with an entry is never on a strand's stack (`block_on` moves it to the
//! heap), so the heap never points at a node that is gone or not resident.
//! The lock masks interrupts, so expiry takes it once per strand: a
//! thousand strands due at once would otherwise hold interrupts off for a
//! thousand wake-ups. Removing the top entry sifts a hole down the heap,
//! writing each entry it moves once.

mod chunked;

use crate::atomics::unmodelled::{AtomicPtr, Ordering::Acquire, Ordering::Release};
use crate::platform::instant::Instant;
use crate::sleep::watch::{NONE, Watch};
use crate::spin_lock::SpinLock;
use chunked::Chunked;
use core::cell::UnsafeCell;
use core::marker::PhantomPinned;
use core::pin::Pin;
use core::ptr::{self, NonNull};
use core::task::Waker;

const NOT_QUEUED: u32 = u32::MAX;

/// Where a strand's entry keeps its index in the heap: a field of the
/// strand's control block, guarded by the heap's lock. Its alignment
/// leaves the low bit of its address free for the [`TASK`] tag.
pub(crate) struct TimerSlot(UnsafeCell<u32>);

impl TimerSlot {
    /// A slot in no heap.
    pub(crate) const fn new() -> Self {
        Self(UnsafeCell::new(NOT_QUEUED))
    }
}

/// How the strand layer's entries are woken: `wake` makes the strand whose
/// control block holds the slot runnable, timed out, and says whether it
/// was still waiting.
pub(crate) struct StrandTimer {
    pub(crate) wake: fn(NonNull<TimerSlot>) -> bool,
}

/// The low bit of an entry's target that is a task's node.
const TASK: usize = 1;

#[derive(Clone, Copy)]
struct Entry {
    deadline: u64,
    /// A strand's slot, or (tagged with [`TASK`]) a task's node.
    target: *mut (),
}

// SAFETY: entries point at control blocks and pinned task nodes, which are
// shared between cores by design; the heap's lock guards what they touch.
unsafe impl Send for Entry {}

impl Entry {
    fn strand(deadline: u64, slot: NonNull<TimerSlot>) -> Self {
        Self { deadline, target: slot.as_ptr().cast() }
    }

    fn task(deadline: u64, node: &TimerNode) -> Self {
        Self { deadline, target: ptr::from_ref(node).cast_mut().cast::<()>().map_addr(|a| a | TASK) }
    }

    fn node(self) -> Option<*mut TimerNode> {
        (self.target.addr() & TASK != 0).then(|| self.target.map_addr(|a| a & !TASK).cast())
    }

    /// Where the entry's index is kept.
    fn slot(self) -> *mut u32 {
        match self.node() {
            // SAFETY: a node in the heap is live (module docs).
            Some(node) => unsafe { (*node).slot.get() },
            // SAFETY: a strand's slot in the heap is live (module docs).
            None => unsafe { (*self.target.cast::<TimerSlot>()).0.get() },
        }
    }
}

/// An async task's entry in the heap, kept in its pinned future. Every
/// field is guarded by the heap's lock.
#[repr(align(8))]
pub(crate) struct TimerNode {
    slot: UnsafeCell<u32>,
    /// Set by the expiry that took it out of the heap.
    fired: UnsafeCell<bool>,
    waker: UnsafeCell<Option<Waker>>,
    _pinned: PhantomPinned,
}

// SAFETY: every field is touched under the heap's lock, or by the future
// while no heap holds the node.
unsafe impl Send for TimerNode {}
// SAFETY: as above.
unsafe impl Sync for TimerNode {}

impl TimerNode {
    pub(crate) const fn new() -> Self {
        Self {
            slot: UnsafeCell::new(NOT_QUEUED),
            fired: UnsafeCell::new(false),
            waker: UnsafeCell::new(None),
            _pinned: PhantomPinned,
        }
    }
}

/// The heap of deadlines and who watches it.
pub(crate) struct Timers {
    heap: SpinLock<Chunked<Entry>>,
    watch: Watch,
    /// How strands' entries are woken, set with the first one.
    strands: AtomicPtr<StrandTimer>,
}

impl Timers {
    pub(crate) fn new() -> Self {
        Self {
            heap: SpinLock::new(Chunked::new()),
            watch: Watch::new(),
            strands: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Adds a strand's deadline, by its slot; `timer` wakes it (every
    /// strand's entry passes the same). Fails only if the heap could not
    /// grow.
    ///
    /// # Safety
    ///
    /// The slot is in no heap, and is taken out ([`Timers::remove`]) before
    /// the strand that holds it is freed.
    pub(crate) unsafe fn insert(
        &self,
        deadline: Instant,
        slot: NonNull<TimerSlot>,
        timer: &'static StrandTimer,
    ) -> Result<(), ()> {
        if self.strands.load(Acquire).is_null() {
            self.strands.store(ptr::from_ref(timer).cast_mut(), Release);
        }
        self.insert_entry(Entry::strand(deadline.ticks().min(NONE - 1), slot))
    }

    /// Adds a task's deadline, to wake `waker` at. Fails only if the heap
    /// could not grow.
    ///
    /// # Safety
    ///
    /// The node is in no heap, stays put, and is taken out
    /// ([`Timers::remove_task`]) before it is dropped.
    pub(crate) unsafe fn insert_task(
        &self,
        deadline: Instant,
        node: Pin<&TimerNode>,
        waker: &Waker,
    ) -> Result<(), ()> {
        // SAFETY: in no heap: nobody else touches the node.
        unsafe {
            *node.waker.get() = Some(waker.clone());
            *node.fired.get() = false;
        }
        self.insert_entry(Entry::task(deadline.ticks().min(NONE - 1), &node))
    }

    /// Whether a task's entry has fired; if not, it will wake `waker`.
    ///
    /// # Safety
    ///
    /// The node was inserted with [`Timers::insert_task`] in this heap.
    pub(crate) unsafe fn poll_task(&self, node: &TimerNode, waker: &Waker) -> bool {
        let _heap = self.heap.lock();
        // SAFETY: the lock guards the node's fields.
        unsafe {
            if *node.fired.get() {
                return true;
            }
            let current = &mut *node.waker.get();
            if !current.as_ref().is_some_and(|old| old.will_wake(waker)) {
                *current = Some(waker.clone());
            }
        }
        false
    }

    /// Takes a task's entry out, if it is still in.
    ///
    /// # Safety
    ///
    /// As for [`Timers::poll_task`].
    pub(crate) unsafe fn remove_task(&self, node: &TimerNode) {
        let mut heap = self.heap.lock();
        // SAFETY: the lock guards the slot.
        let slot = unsafe { *node.slot.get() };
        if slot != NOT_QUEUED {
            remove_at(&mut heap, slot as usize);
            let _ = self.watch.publish(heap.first().map_or(NONE, |top| top.deadline));
        }
    }

    fn insert_entry(&self, entry: Entry) -> Result<(), ()> {
        // A chunk to grow by, allocated with the lock (and interrupts) free.
        let mut spare = None;
        let ring_watcher = loop {
            let mut heap = self.heap.lock();
            if heap.is_full() {
                let Some(chunk) = spare.take() else {
                    drop(heap);
                    spare = Some(Chunked::allocate(entry).ok_or(())?);
                    continue;
                };
                heap.link(chunk).map_err(|_| ())?;
            }
            heap.push(entry);
            let last = heap.len() - 1;
            sift_up(&mut heap, last);
            break self.watch.publish(heap[0].deadline);
        };
        // Another core grew the heap meanwhile: ours is not needed.
        drop(spare);
        if let Some(watcher) = ring_watcher {
            // Indices are checked when the pool is built.
            let _ = crate::platform::wake(watcher);
        }
        Ok(())
    }

    /// Takes a strand's deadline out, by its slot, if it is still in.
    pub(crate) fn remove(&self, slot: &TimerSlot) {
        let mut heap = self.heap.lock();
        // SAFETY: the slot is guarded by the lock we hold.
        let slot = unsafe { *slot.0.get() };
        if slot == NOT_QUEUED {
            return;
        }
        remove_at(&mut heap, slot as usize);
        // A later deadline (or none) needs no ring: see `sleep::watch`.
        let _ = self.watch.publish(heap.first().map_or(NONE, |top| top.deadline));
    }

    /// Whether no deadline is armed.
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.lock().is_empty()
    }

    /// Whether a deadline has passed (one load when there is none).
    pub(crate) fn due(&self) -> bool {
        let earliest = self.watch.earliest();
        earliest != NONE && Instant::now().ticks() >= earliest
    }

    /// Wakes every strand whose deadline has passed; returns how many.
    pub(crate) fn expire(&self) -> usize {
        if !self.due() {
            return 0;
        }
        let now = Instant::now().ticks();
        let mut woken = 0;
        // One strand per hold of the lock (module docs).
        loop {
            let mut heap = self.heap.lock();
            let Some(due) = heap.first().filter(|top| top.deadline <= now).copied() else {
                let _ = self.watch.publish(heap.first().map_or(NONE, |top| top.deadline));
                return woken;
            };
            remove_at(&mut heap, 0);
            // Under the lock: neither a strand nor a task's future can
            // leave before we are done.
            woken += usize::from(match due.node() {
                // SAFETY: live (module docs); the lock guards its fields.
                Some(node) => unsafe {
                    *(*node).fired.get() = true;
                    if let Some(waker) = &*(*node).waker.get() {
                        waker.wake_by_ref();
                    }
                    true
                },
                None => {
                    // SAFETY: only `insert` stores here, before it adds a
                    // strand's entry: one is in the heap, so it is set.
                    let timer = unsafe { &*self.strands.load(Acquire) };
                    // SAFETY: an entry's target is never null.
                    (timer.wake)(unsafe { NonNull::new_unchecked(due.target.cast()) })
                }
            });
        }
    }

    /// Makes `core` the watcher if there is none; returns the deadline it
    /// must wake at if it is the watcher and there is one.
    pub(crate) fn watch(&self, core: usize) -> Option<Instant> {
        self.watch.watch(core).filter(|&earliest| earliest != NONE).map(Instant::from_ticks)
    }

    /// `core` stops watching, if it was the watcher; returns whether it
    /// was.
    pub(crate) fn unwatch(&self, core: usize) -> bool {
        self.watch.unwatch(core)
    }

    /// Whether any deadline is armed (one load).
    pub(crate) fn armed(&self) -> bool {
        self.watch.earliest() != NONE
    }
}

fn set_slot(heap: &Chunked<Entry>, index: usize) {
    // SAFETY: the caller holds the heap's lock, which guards the slots.
    unsafe { *heap[index].slot() = index as u32 };
}

fn remove_at(heap: &mut Chunked<Entry>, index: usize) {
    // SAFETY: as in `set_slot`.
    unsafe { *heap[index].slot() = NOT_QUEUED };
    let last = heap.pop().expect("removing from a heap that holds the entry");
    if index < heap.len() {
        heap[index] = last;
        sift_down(heap, index);
        sift_up(heap, index);
    }
}

/// Moves the entry at `index` up to its place: parents with later
/// deadlines move down into the hole it leaves, each written once.
fn sift_up(heap: &mut Chunked<Entry>, mut index: usize) {
    let moving = heap[index];
    while index > 0 {
        let parent = (index - 1) / 2;
        if heap[parent].deadline <= moving.deadline {
            break;
        }
        heap[index] = heap[parent];
        set_slot(heap, index);
        index = parent;
    }
    heap[index] = moving;
    set_slot(heap, index);
}

/// Moves the entry at `index` down to its place: the earlier child moves
/// up into the hole it leaves, each written once.
fn sift_down(heap: &mut Chunked<Entry>, mut index: usize) {
    let moving = heap[index];
    let len = heap.len();
    loop {
        let left = 2 * index + 1;
        if left >= len {
            break;
        }
        let right = left + 1;
        let child = if right < len && heap[right].deadline < heap[left].deadline { right } else { left };
        if moving.deadline <= heap[child].deadline {
            break;
        }
        heap[index] = heap[child];
        set_slot(heap, index);
        index = child;
    }
    heap[index] = moving;
    set_slot(heap, index);
}
