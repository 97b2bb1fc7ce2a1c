//! The state word of a [`Signal`](crate::sync::Signal): the protocol alone, so
//! loom can check it (`tests/loom_signal.rs`) with the waiter's strand
//! replaced by a stand-in.
//!
//! # Protocol
//!
//! One word: `EMPTY`, `SET`, `BUSY`, `BUSY_PENDING`, or the address of
//! the one waiting strand (a control block, so at least 8-aligned and
//! never one of the four small values). A strand's park token
//! (`crate::strand::park`) runs the same protocol in a byte: its one
//! waiter is the strand that holds it, so "waiting" is the value
//! [`WAITING`] instead of an address.
//!
//! - **Fire** (any context, an interrupt handler included): `EMPTY` →
//!   `SET` by compare-exchange; `SET` stays (signals coalesce); a waiter's
//!   address → `BUSY`, then wake it, then store `EMPTY` if the wake
//!   reached it (the signal is delivered) or `SET` if it had already left
//!   its wait (a deadline or a cancel won; the signal stays for the next
//!   wait). A fire that finds `BUSY` came after the delivering firer took
//!   the waiter, so it is a signal of its own: it marks the word
//!   `BUSY_PENDING` (or finds it marked, and coalesces with that), and
//!   the delivering firer then stores `SET` whatever its wake did.
//! - **Register** (the waiter, before it blocks): `EMPTY` → its address.
//!   Finding `SET`, it takes the signal instead of blocking; finding
//!   `BUSY` or `BUSY_PENDING`, it waits until the firer is done (a waiter
//!   the firer has just woken may be back before the firer's last store);
//!   finding an address, another strand waits: refused.
//! - **An async waiter** registers the address of a node in its future,
//!   tagged with [`ASYNC`]. Its wake (a `Waker`'s) always reaches it, so a
//!   firer that took its address stores `EMPTY` (or `SET`, for a fire that
//!   came meanwhile): the waiter knows it has the signal when the word no
//!   longer holds its address (and is not busy). To leave early it
//!   exchanges its address for `EMPTY`; if that fails, a firer took the
//!   address and it has the signal.
//! - **Withdraw** (the waiter, woken by its deadline or a cancel): its
//!   address → `EMPTY`. If that fails a firer has it: the waiter waits
//!   while the word is busy, then takes the `SET` the firer left.
//!
//! # Why no signal is lost and no freed strand is touched
//!
//! Every change is a read-modify-write or a store by the one party that
//! owns the word's current value (`BUSY` and `BUSY_PENDING` belong to
//! their firer, and a second firer only marks `BUSY` pending), so the
//! changes are totally ordered. A fire either finds no waiter and leaves
//! `SET`, which the next register or take sees; or moves the waiter's
//! address to `BUSY`: then exactly one of its wake and the waiter's own
//! deadline or cancel ends the wait (the strand's state word decides), and
//! the firer stores `EMPTY` only in the first case, where the waiter was
//! woken by the signal itself; or finds the word busy, after another
//! firer took the waiter, and is left as `SET` for the next wait. (A first
//! version returned there, counting the signal as coalesced with the one
//! being delivered: but the waiter had taken that one already, and,
//! woken, could be back to wait again, for a signal that was gone. A
//! strand joining task after task lost a wake this way, one run in about
//! twenty under QEMU.) The firer uses the address only while the word is
//! busy, and a waiter that withdraws late does not leave until it stops
//! being busy, so its control block is live all along.

use crate::atomics::{AtomicU8, AtomicUsize, Ordering::SeqCst};

const EMPTY: usize = 0;
const SET: usize = 1;
const BUSY: usize = 2;
/// `BUSY`, and another fire came while the delivery was under way.
const BUSY_PENDING: usize = 3;
/// The waiter of a word whose one waiter is known: the smallest value a
/// waiter may have (above the four states, and 8-aligned as a control
/// block is).
pub const WAITING: usize = 8;
/// The tag of an async waiter's address (a strand's control block is
/// 8-aligned, so the bit is clear in a strand's).
pub const ASYNC: usize = 4;

/// An atomic word the protocol runs on: pointer-sized to hold a waiter's
/// address, or a byte that holds only [`WAITING`].
pub trait StateWord {
    /// The word's value.
    fn get(&self) -> usize;
    /// Stores `value`.
    fn set(&self, value: usize);
    /// Compare-exchanges `current` for `new`; the value found otherwise.
    fn exchange(&self, current: usize, new: usize) -> Result<usize, usize>;
}

impl StateWord for AtomicUsize {
    fn get(&self) -> usize {
        self.load(SeqCst)
    }
    fn set(&self, value: usize) {
        self.store(value, SeqCst);
    }
    fn exchange(&self, current: usize, new: usize) -> Result<usize, usize> {
        self.compare_exchange(current, new, SeqCst, SeqCst)
    }
}

impl StateWord for AtomicU8 {
    fn get(&self) -> usize {
        usize::from(self.load(SeqCst))
    }
    fn set(&self, value: usize) {
        self.store(value as u8, SeqCst);
    }
    fn exchange(&self, current: usize, new: usize) -> Result<usize, usize> {
        self.compare_exchange(current as u8, new as u8, SeqCst, SeqCst).map(usize::from).map_err(usize::from)
    }
}

/// The outcome of a [`SignalWord::register`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Register {
    /// The waiter's address is in: it may block.
    Registered,
    /// The signal was set: the waiter took it and must not block.
    Taken,
    /// Another strand waits (or is being woken).
    Occupied,
}

/// See the module documentation.
pub struct SignalWord<W = AtomicUsize>(W);

impl Default for SignalWord {
    fn default() -> Self {
        Self::new()
    }
}

impl SignalWord {
    /// Not set, nobody waiting.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self(AtomicUsize::new(EMPTY))
    }

    /// Not set, nobody waiting (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self(AtomicUsize::new(EMPTY))
    }
}

impl SignalWord<AtomicU8> {
    /// A byte-sized word whose one waiter registers as [`WAITING`].
    #[cfg(not(loom))]
    pub const fn new_byte() -> Self {
        Self(AtomicU8::new(EMPTY as u8))
    }

    /// A byte-sized word whose one waiter registers as [`WAITING`].
    #[cfg(loom)]
    pub fn new_byte() -> Self {
        Self(AtomicU8::new(EMPTY as u8))
    }
}

impl<W: StateWord> SignalWord<W> {
    /// Sets the signal, or hands it to the waiter through `wake(address)`,
    /// which returns whether the wake reached the waiter.
    pub fn fire(&self, wake: impl FnOnce(usize) -> bool) {
        let mut word = self.0.get();
        loop {
            let next = match word {
                SET | BUSY_PENDING => return,
                EMPTY => SET,
                BUSY => BUSY_PENDING,
                _waiter => BUSY,
            };
            match self.0.exchange(word, next) {
                Ok(_) if next != BUSY => return,
                Ok(waiter) => {
                    let delivered = wake(waiter);
                    // Ours until this store; a fire that came meanwhile
                    // only marked it pending, and stays set.
                    if self.0.exchange(BUSY, if delivered { EMPTY } else { SET }).is_err() {
                        self.0.set(SET);
                    }
                    return;
                }
                Err(now) => word = now,
            }
        }
    }

    /// Takes the signal if it is set.
    pub fn try_take(&self) -> bool {
        self.0.exchange(SET, EMPTY).is_ok()
    }

    /// Whether the signal is set (and nobody waits).
    pub fn is_set(&self) -> bool {
        self.0.get() == SET
    }

    /// The waiter at `address` registers before it blocks, calling
    /// `relax` while a firer finishes a delivery.
    pub fn register(&self, address: usize, mut relax: impl FnMut()) -> Register {
        debug_assert!(
            address >= WAITING && address.is_multiple_of(4),
            "a waiter is an aligned control block, or a tagged async waiter"
        );
        loop {
            match self.0.exchange(EMPTY, address) {
                Ok(_) => return Register::Registered,
                Err(SET) => {
                    if self.try_take() {
                        return Register::Taken;
                    }
                }
                Err(BUSY | BUSY_PENDING) => relax(),
                Err(_) => return Register::Occupied,
            }
        }
    }

    /// The waiter at `address`, woken by its deadline or a cancel, leaves.
    /// Returns `true` if it leaves without the signal, and `false` if a
    /// signal arrived meanwhile, which it has now taken. (A firer that took
    /// the address leaves the signal set; only a `try_take` by someone
    /// else can take it first.)
    pub fn withdraw(&self, address: usize, mut relax: impl FnMut()) -> bool {
        if self.0.exchange(address, EMPTY).is_ok() {
            return true;
        }
        while matches!(self.0.get(), BUSY | BUSY_PENDING) {
            relax();
        }
        !self.try_take()
    }

    /// Whether the word still holds the waiter at `address`; while a firer
    /// is delivering to it (`BUSY`), waits for it to finish. Once it does
    /// not, a firer took the address: for a waiter that every wake reaches
    /// (an async task's), the signal was delivered.
    pub fn still_waiting(&self, address: usize, mut relax: impl FnMut()) -> bool {
        loop {
            match self.0.get() {
                BUSY | BUSY_PENDING => relax(),
                word => return word == address,
            }
        }
    }

    /// The waiter at `address`, which every wake reaches, leaves. Returns
    /// `true` if a firer took its address first (the signal was delivered
    /// to it), after waiting for that firer to finish.
    pub fn leave_delivered(&self, address: usize, relax: impl FnMut()) -> bool {
        if self.0.exchange(address, EMPTY).is_ok() {
            return false;
        }
        !self.still_waiting(address, relax)
    }
}
