//! The one word an actor costs while dormant: its mailbox head and its
//! schedule flag together.
//!
//! # The word
//!
//! Messages are linked through a [`Link`] at the start of each (at least
//! 8-byte aligned), so the low three bits of a pointer to one are free:
//!
//! | bits | meaning |
//! |---|---|
//! | `SCHEDULED` (bit 0) | a turn exists: queued on a core, running, or being scheduled by whoever set the bit |
//! | `CLOSED` (bit 1) | the actor is stopped: pushes are refused |
//! | `PINNED` (bit 2) | only while dormant: the bits above hold the core the actor is pinned to |
//! | the rest | while scheduled: the newest message not yet taken by the turn, or null |
//!
//! A dormant actor's word is `0`, or `core << 3 | PINNED`: no messages, no
//! turn. A stopped actor whose last turn has ended is `CLOSED`.
//!
//! # Protocol
//!
//! - **Push** (any sender): compare-exchange the word from `old` to the
//!   message with `SCHEDULED` set, the message linked to `old`'s messages.
//!   If `old` had `CLOSED`, push nothing: the sender keeps its message. If
//!   `old` lacked `SCHEDULED` (the actor was dormant), this sender *won the
//!   wake*: it must schedule a turn (on the pin `old` carried).
//! - **Take** (the turn): clear the message bits with one `fetch_and`,
//!   keeping the flags, and own the chain (newest first; reversed, each
//!   sender's messages come out in its order).
//! - **Finish** (the turn, having handled everything it took): compare-
//!   exchange the word from exactly `SCHEDULED` to dormant. It fails only
//!   if a message arrived (take again) or the actor was closed (run the
//!   `stopped` hook, then **end**: `SCHEDULED | CLOSED` becomes `CLOSED`).
//! - **Close** (anyone): set `CLOSED`. If the actor was dormant, also set
//!   `SCHEDULED`: the closer won the wake and schedules the turn that runs
//!   the `stopped` hook.
//!
//! # Why it is correct (sketch)
//!
//! Every access to the word is a read-modify-write, so the accesses are
//! totally ordered and each reads the value the one before it left.
//!
//! - **Never two turns.** A turn is scheduled only by whoever moved the
//!   word from not-`SCHEDULED` to `SCHEDULED` (a push or a close), and the
//!   bit is cleared only by the finish (or end) of the one turn. Between a
//!   set and the next clear there is exactly one turn, so an actor never
//!   runs on two cores at once.
//! - **No message stranded.** A push ordered before a finish leaves a
//!   message in the word, so the finish's compare-exchange (which expects
//!   exactly `SCHEDULED`) fails and the turn takes it. A push ordered after
//!   a successful finish reads a word without `SCHEDULED`, wins the wake and
//!   schedules a new turn. There is no third case.
//! - **No message lost at a stop.** A push before the close is in the word
//!   and the turn handles it before it can end; a push after reads
//!   `CLOSED` and the sender keeps its message.
//! - **The actor's state is handed over.** A turn's last access (finish,
//!   release) is read by the push that wins the next wake (acquire), and
//!   that sender schedules the next turn through the pool's queues, which
//!   publish the task; so each turn sees everything the previous one did.
//!   A message's contents are written before the release of its push and
//!   read after the acquire of the take.
//!
//! `tests/loom_actor.rs` checks this file with two senders and a close.

use crate::atomics::{
    AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed},
};
use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};

const SCHEDULED: usize = 1;
const CLOSED: usize = 2;
const PINNED: usize = 4;
const FLAGS: usize = SCHEDULED | CLOSED | PINNED;
/// Bits of a pinned core index are stored above the flags.
const PIN_SHIFT: u32 = 3;

/// The link at the start of every queued message.
#[repr(C)]
pub struct Link {
    next: UnsafeCell<*mut Link>,
}

impl Link {
    /// A link to nothing.
    pub const fn new() -> Self {
        Self { next: UnsafeCell::new(ptr::null_mut()) }
    }

    /// The message after `link` in a chain the caller owns.
    ///
    /// # Safety
    ///
    /// The caller owns `link` (took it from the word, or has not pushed it).
    pub unsafe fn next(link: NonNull<Link>) -> *mut Link {
        // SAFETY: owned by the caller, so nobody writes the link now.
        unsafe { *(*link.as_ptr()).next.get() }
    }

    /// # Safety
    ///
    /// As for [`Link::next`].
    unsafe fn set_next(link: NonNull<Link>, next: *mut Link) {
        // SAFETY: owned by the caller, so nobody reads the link now.
        unsafe { *(*link.as_ptr()).next.get() = next }
    }
}

impl Default for Link {
    fn default() -> Self {
        Self::new()
    }
}

/// Reverses a chain taken newest first, so it runs oldest first.
///
/// # Safety
///
/// The caller owns the whole chain.
pub unsafe fn reverse(mut newest: *mut Link) -> *mut Link {
    let mut oldest_first = ptr::null_mut();
    while let Some(link) = NonNull::new(newest) {
        // SAFETY: owned by the caller, like the whole chain.
        unsafe {
            newest = Link::next(link);
            Link::set_next(link, oldest_first);
        }
        oldest_first = link.as_ptr();
    }
    oldest_first
}

/// The result of a push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a push that woke the actor must schedule its turn"]
pub enum ActorPushed {
    /// Queued for the turn that exists.
    Queued,
    /// Queued, and the actor was dormant: the sender must schedule a turn,
    /// on this core if it is pinned.
    Woke(Option<usize>),
    /// Not queued: the actor is stopped. The sender keeps its message.
    Closed,
}

/// What a turn that handled everything it took does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// The actor is dormant; the turn is over.
    Dormant,
    /// More messages arrived: take them.
    More,
    /// The actor was closed and has nothing left: run the `stopped` hook,
    /// then [`Schedule::end`].
    Stopping,
}

/// The result of a close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a close that woke the actor must schedule its turn"]
pub enum Closing {
    /// It was already closed.
    AlreadyClosed,
    /// Closed; the turn that exists will stop the actor.
    Closed,
    /// Closed, and the actor was dormant: the closer must schedule a turn
    /// (on this core if it is pinned) to stop it.
    Woke(Option<usize>),
}

/// An actor's schedule word.
pub struct Schedule {
    word: AtomicUsize,
}

fn dormant(pin: Option<usize>) -> usize {
    pin.map_or(0, |core| core << PIN_SHIFT | PINNED)
}

fn pin_of(word: usize) -> Option<usize> {
    (word & PINNED != 0).then_some(word >> PIN_SHIFT)
}

impl Schedule {
    /// A dormant actor, pinned to `pin` if given.
    pub fn new(pin: Option<usize>) -> Self {
        Self { word: AtomicUsize::new(dormant(pin)) }
    }

    /// Queues a message.
    ///
    /// # Safety
    ///
    /// `message` is owned by the caller and in no chain; after `Queued` or
    /// `Woke` it belongs to the actor's turns.
    pub unsafe fn push(&self, message: NonNull<Link>) -> ActorPushed {
        let mut old = self.word.load(Relaxed);
        loop {
            if old & CLOSED != 0 {
                return ActorPushed::Closed;
            }
            let scheduled = old & SCHEDULED != 0;
            let behind = if scheduled { (old & !FLAGS) as *mut Link } else { ptr::null_mut() };
            // SAFETY: the message is still ours until the exchange succeeds.
            unsafe { Link::set_next(message, behind) };
            let new = message.as_ptr() as usize | SCHEDULED;
            match self.word.compare_exchange_weak(old, new, AcqRel, Relaxed) {
                Ok(_) if scheduled => return ActorPushed::Queued,
                Ok(_) => return ActorPushed::Woke(pin_of(old)),
                Err(now) => old = now,
            }
        }
    }

    /// Moves a dormant, unpinned word to scheduled with no message: the
    /// caller holds the turn (or drain) with nothing queued. Fails if a
    /// turn exists, the word is pinned, or it is closed.
    pub fn claim(&self) -> bool {
        self.word.compare_exchange(0, SCHEDULED, Acquire, Relaxed).is_ok()
    }

    /// Takes every queued message, newest first (null if none). Only the
    /// turn calls it.
    pub fn take(&self) -> *mut Link {
        (self.word.fetch_and(SCHEDULED | CLOSED, AcqRel) & !FLAGS) as *mut Link
    }

    /// Makes the actor dormant (pinned to `pin`) unless more arrived or it
    /// was closed. Only the turn calls it, after handling what it took.
    pub fn finish(&self, pin: Option<usize>) -> Finished {
        match self.word.compare_exchange(SCHEDULED, dormant(pin), AcqRel, Acquire) {
            Ok(_) => Finished::Dormant,
            Err(now) if now & !FLAGS != 0 => Finished::More,
            Err(_) => Finished::Stopping,
        }
    }

    /// Ends the last turn of a stopped actor, after its `stopped` hook (or
    /// after [`abandon`](Self::abandon), for a turn being discarded): the
    /// word is then exactly `CLOSED`, for good.
    pub fn end(&self) {
        // Only this turn writes the word now: it is closed (no push
        // succeeds) and holds no messages (`finish` said `Stopping`).
        self.word.fetch_and(CLOSED, AcqRel);
    }

    /// Stops the actor: later pushes are refused. Messages already queued
    /// are still handled.
    pub fn close(&self) -> Closing {
        let mut old = self.word.load(Relaxed);
        loop {
            if old & CLOSED != 0 {
                return Closing::AlreadyClosed;
            }
            let scheduled = old & SCHEDULED != 0;
            let new = if scheduled { old | CLOSED } else { SCHEDULED | CLOSED };
            match self.word.compare_exchange_weak(old, new, AcqRel, Relaxed) {
                Ok(_) if scheduled => return Closing::Closed,
                Ok(_) => return Closing::Woke(pin_of(old)),
                Err(now) => old = now,
            }
        }
    }

    /// Closes the word for a turn that will never run (its pool stopped),
    /// or for an actor whose last handle is going, and takes what was
    /// queued, newest first. If a turn exists, the caller must own it: it
    /// won the wake, or holds the turn being discarded.
    pub fn abandon(&self) -> *mut Link {
        let old = self.word.fetch_or(CLOSED, AcqRel);
        // Without a turn there are no messages (the bits may hold a pin).
        if old & SCHEDULED == 0 { ptr::null_mut() } else { self.take() }
    }

    /// Whether the actor is stopped (it may still be handling messages
    /// queued before it was).
    pub fn is_closed(&self) -> bool {
        self.word.load(Acquire) & CLOSED != 0
    }

    /// Whether the actor is dormant: no turn, no message.
    pub fn is_dormant(&self) -> bool {
        self.word.load(Acquire) & (SCHEDULED | CLOSED) == 0
    }

    /// Whether the actor has ended: stopped, and its last turn over, so no
    /// turn will ever run again.
    pub fn has_ended(&self) -> bool {
        self.word.load(Acquire) == CLOSED
    }
}
