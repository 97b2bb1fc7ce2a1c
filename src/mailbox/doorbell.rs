//! The per-core wake-up word, and the protocol that keeps wake-ups from
//! being lost.
//!
//! Each core owns one [`Doorbell`]. Anyone may *ring* it; only its owner
//! *answers* it (consumes the ring) and sleeps on it. A platform pairs the
//! doorbell with its cheapest way to stop and restart a core:
//!
//! | tier  | sleeper waits with      | a ring that must wake it sends |
//! |-------|-------------------------|--------------------------------|
//! | light | `WFE` (event register)  | `SEV` (after `DSB`)            |
//! | deep  | `WFI` (pending IRQ)     | an inter-processor interrupt   |
//! | host  | `thread::park`          | `Thread::unpark`               |
//!
//! The doorbell decides *which* signal a ring needs; the platform only sends
//! it. This keeps the one subtle part portable and model-checked
//! (`tests/loom_doorbell.rs`).
//!
//! # The word
//!
//! Two bits in one `AtomicU32`:
//!
//! - `RUNG`: set by a ringer, cleared only by the owner when it answers.
//! - `DEEP`: set and cleared only by the owner, while it is committed to a
//!   deep sleep that only an interrupt can end.
//!
//! # Protocol
//!
//! Ringer ([`Doorbell::ring`]): one `fetch_or(RUNG)`. The bits it replaced
//! say what to send:
//!
//! - `RUNG` was already set: nothing ([`WakeSignal::None`]); whoever set it sent
//!   the signal, and the owner has not answered yet, so it will see `RUNG`.
//! - `DEEP` was set: an interrupt ([`WakeSignal::Interrupt`]).
//! - neither: an event ([`WakeSignal::Event`]); the owner is running or in a
//!   light sleep.
//!
//! Owner, light tier: [`Doorbell::answer`]; if it returned `false`, wait
//! for an event. Owner, deep tier: [`Doorbell::enter_deep`]; if it returned
//! `true`, wait for an interrupt, then [`Doorbell::leave_deep`]. Spurious
//! returns are always allowed: the owner re-checks whatever condition it was
//! waiting for.
//!
//! # Why no wake-up is lost (proof sketch)
//!
//! Every operation that matters is a read-modify-write of the same word, so
//! they are totally ordered (modification order); no fence is involved.
//!
//! - Deep tier. Compare the ringer's `fetch_or(RUNG)` with the owner's
//!   `fetch_or(DEEP)` in [`Doorbell::enter_deep`]. If the ring comes first,
//!   `enter_deep` sees `RUNG` and returns `false`: the owner does not sleep.
//!   If `enter_deep` comes first, the ringer sees `DEEP` and sends an
//!   interrupt. An interrupt stays pending until it is taken, and `WFI`
//!   returns while one is pending, so the sleep ends even if the interrupt
//!   arrived before the `WFI`.
//! - Light tier. If the ring comes before the owner's `answer`, the answer
//!   sees it. If it comes after, the ringer saw neither bit (or saw `RUNG`
//!   set by an earlier ringer who signals for it) and sends an event. `SEV`
//!   sets the owner's event register even if the owner has not reached its
//!   `WFE` yet, and `WFE` returns at once when that register is set.
//!   `park`/`unpark` on the host keep a token with the same effect.
//!
//! The memory orderings are `AcqRel`: a ring publishes whatever the ringer
//! wrote before it (new work) to the owner that answers it.
//!
//! # What a platform must add
//!
//! A signal must not overtake the ring it announces: send it only once the
//! ring is visible to the owner's core (`DSB ISH` before `SEV` or before
//! raising the SGI on ARM; `unpark` synchronizes with `park` on the host).
//! Otherwise a woken owner could answer before the ring arrives and go back
//! to sleep. The loom model (`tests/loom_doorbell.rs`) assumes exactly this
//! and no more.

use crate::atomics::{AtomicU32, Ordering};

const RUNG: u32 = 1 << 0;
const DEEP: u32 = 1 << 1;

/// What a ringer must send so the owner of a [`Doorbell`] notices the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeSignal {
    /// Nothing: the doorbell was already rung and not yet answered.
    None,
    /// An event (`SEV`, or `unpark` on the host): the owner is running or in
    /// a light sleep.
    Event,
    /// An inter-processor interrupt: the owner is in a deep sleep that only
    /// an interrupt ends.
    Interrupt,
}

/// One core's wake-up word. See the [module documentation](self) for the
/// protocol and why it cannot lose a wake-up.
#[derive(Debug)]
pub struct Doorbell {
    state: AtomicU32,
}

impl Doorbell {
    /// A doorbell that has not been rung, with its owner awake.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self { state: AtomicU32::new(0) }
    }

    /// A doorbell that has not been rung, with its owner awake.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self { state: AtomicU32::new(0) }
    }

    /// Rings the doorbell. Returns the signal the caller must now send to
    /// the owner's core; everything the caller wrote before ringing is
    /// visible to the owner once it answers.
    pub fn ring(&self) -> WakeSignal {
        let before = self.state.fetch_or(RUNG, Ordering::AcqRel);
        if before & RUNG != 0 {
            WakeSignal::None
        } else if before & DEEP != 0 {
            WakeSignal::Interrupt
        } else {
            WakeSignal::Event
        }
    }

    /// Owner only: consumes a pending ring. Returns whether there was one.
    pub fn answer(&self) -> bool {
        // The plain load keeps the common "not rung" poll free of a
        // read-modify-write that would steal the cache line from ringers.
        if self.state.load(Ordering::Acquire) & RUNG == 0 {
            return false;
        }
        self.state.fetch_and(!RUNG, Ordering::AcqRel) & RUNG != 0
    }

    /// Owner only: commits to a deep sleep. Returns `true` if the owner may
    /// now wait for an interrupt; `false` if a ring arrived first, in which
    /// case that ring is consumed and the owner must not sleep.
    ///
    /// Every `true` must be followed by [`leave_deep`](Self::leave_deep).
    pub fn enter_deep(&self) -> bool {
        let before = self.state.fetch_or(DEEP, Ordering::AcqRel);
        if before & RUNG != 0 {
            self.state.fetch_and(!(RUNG | DEEP), Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Owner only: ends a deep sleep begun by [`enter_deep`](Self::enter_deep).
    /// Returns whether a ring arrived during it (that ring is consumed).
    pub fn leave_deep(&self) -> bool {
        self.state.fetch_and(!(RUNG | DEEP), Ordering::AcqRel) & RUNG != 0
    }

    /// Whether the doorbell has been rung and not answered. For diagnostics
    /// only: the answer may be stale by the time it is read.
    pub fn is_rung(&self) -> bool {
        self.state.load(Ordering::Relaxed) & RUNG != 0
    }
}

#[cfg(not(loom))]
impl Default for Doorbell {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn ring_while_awake_asks_for_an_event_once() {
        let bell = Doorbell::new();
        assert_eq!(bell.ring(), WakeSignal::Event);
        assert_eq!(bell.ring(), WakeSignal::None, "second ring before an answer needs no signal");
        assert!(bell.answer());
        assert!(!bell.answer(), "a ring is answered once");
        assert_eq!(bell.ring(), WakeSignal::Event, "after an answer, a ring signals again");
    }

    #[test]
    fn ring_during_deep_sleep_asks_for_an_interrupt() {
        let bell = Doorbell::new();
        assert!(bell.enter_deep());
        assert_eq!(bell.ring(), WakeSignal::Interrupt);
        assert_eq!(bell.ring(), WakeSignal::None);
        assert!(bell.leave_deep(), "the ring is reported on leaving");
        assert!(!bell.answer(), "and consumed by leaving");
    }

    #[test]
    fn ring_before_deep_sleep_cancels_it() {
        let bell = Doorbell::new();
        bell.ring();
        assert!(!bell.enter_deep(), "a pending ring forbids the sleep");
        assert!(!bell.answer(), "refusing the sleep consumed the ring");
        assert_eq!(bell.ring(), WakeSignal::Event, "DEEP was cleared too");
    }

    #[test]
    fn deep_sleep_without_ring_reports_none() {
        let bell = Doorbell::new();
        assert!(bell.enter_deep());
        assert!(!bell.leave_deep());
        assert!(!bell.is_rung());
    }
}
