//! A pool's timers: the deadlines of sleeping and timed-out strands.
//!
//! A binary min-heap under a spin lock, with each strand's index kept in
//! its control block so a strand woken early leaves the heap in O(log n).
//! Its storage grows by chunks allocated outside the lock (`chunked.rs`).
//! `earliest` mirrors the heap's top outside the lock, so cores can ask
//! "is anything due?" with one load.
//!
//! # Who notices a deadline
//!
//! - A core between tasks expires due timers when it drains its mailboxes
//!   (`worker::find_work`), so a busy pool keeps time.
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
//!   (`worker::steal_woken_fibres`).
//!
//! Expiry signals the strand under the lock; a strand woken by something
//! else removes its entry under the same lock before it moves on, so the
//! heap never holds a control block that is gone (see `strand::wait`).
//! The lock masks interrupts, so expiry takes it once per strand: a
//! thousand strands due at once would otherwise hold interrupts off for a
//! thousand wake-ups. Removing the top entry sifts a hole down the heap,
//! writing each entry it moves once.

mod chunked;

use super::shared::ring;
use crate::sleep::watch::{NONE, Watch};
use crate::spin_lock::SpinLock;
use crate::strand::control::{Header, state};
use crate::strand::scheduler;
use crate::time::Instant;
use chunked::Chunked;
use core::ptr::NonNull;

const NOT_QUEUED: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Entry {
    deadline: u64,
    strand: NonNull<Header>,
}

// SAFETY: entries point at control blocks, which are `Send`.
unsafe impl Send for Entry {}

/// The heap of deadlines and who watches it.
pub(crate) struct Timers {
    heap: SpinLock<Chunked<Entry>>,
    watch: Watch,
}

impl Timers {
    pub(crate) fn new() -> Self {
        Self { heap: SpinLock::new(Chunked::new()), watch: Watch::new() }
    }

    /// Adds `strand`'s deadline. Fails only if the heap could not grow.
    pub(crate) fn insert(&self, deadline: Instant, strand: NonNull<Header>) -> Result<(), ()> {
        let entry = Entry { deadline: deadline.ticks().min(NONE - 1), strand };
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
            ring(watcher);
        }
        Ok(())
    }

    /// Takes `strand`'s deadline out, if it is still in.
    pub(crate) fn remove(&self, strand: NonNull<Header>) {
        let mut heap = self.heap.lock();
        // SAFETY: the slot is guarded by the lock we hold.
        let slot = unsafe { *strand.as_ref().timer_slot.get() };
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
            let Some(strand) = heap.first().filter(|top| top.deadline <= now).map(|top| top.strand) else {
                let _ = self.watch.publish(heap.first().map_or(NONE, |top| top.deadline));
                return woken;
            };
            remove_at(&mut heap, 0);
            // Under the lock: the strand cannot leave before we are done.
            woken += usize::from(scheduler::signal(strand, state::TIMED_OUT));
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
    unsafe { *heap[index].strand.as_ref().timer_slot.get() = index as u32 };
}

fn remove_at(heap: &mut Chunked<Entry>, index: usize) {
    // SAFETY: as in `set_slot`.
    unsafe { *heap[index].strand.as_ref().timer_slot.get() = NOT_QUEUED };
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
