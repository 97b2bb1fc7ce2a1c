//! Who may touch a core's own-side queues: the core itself, or, once the
//! core has stopped answering, the core that takes it out of its pool. The
//! protocol alone, so loom can check it (`tests/loom_own_side.rs`).
//!
//! A core's pinned queue and its private queue are plain lists that only
//! the core touches (`crate::pool`'s per-core part). A core stuck with its
//! interrupts masked keeps the work queued there from every other core. To
//! take it, another core must know that the stuck core is not touching
//! them now and never will again.
//!
//! The core opens a *section* around every touch, thousands of times a
//! second; another core takes its queues perhaps once in the machine's
//! life. So the core's side is two plain stores and a load, with no
//! read-modify-write and no fence, and the taker's side waits.
//!
//! # Protocol
//!
//! Two bytes per core: `state` (`FREE` or `BUSY`), written only by the
//! core, and `evicted`, written only by a taker.
//!
//! - **Enter** (the core, before it touches its lists): if `state` is
//!   `BUSY`, an enclosing section of the same core is open (a section is
//!   entered again from inside one, as a strand's hand-off looks at the
//!   queues inside a preemption's look, or an interrupt handler that
//!   stands in for the core): touch the lists, leave nothing. Otherwise
//!   store `BUSY`, then load `evicted` (acquire). If it is set, the lists
//!   are not the core's any more: store `FREE` and touch nothing, ever.
//! - **Leave** (the core, after the outermost section): store `FREE`
//!   (release).
//! - **Evict** (a taker, once): store `evicted`, fence, and wait a grace
//!   period ([`GRACE_NANOS`], far above the time a store
//!   takes to reach every core).
//! - **Take** (the taker, after the grace period): load `state`
//!   (acquire). `FREE`: the lists are the taker's. `BUSY`: the core is
//!   inside a section (stuck inside roving's own code, or about to leave
//!   it); look again later, never touching the lists meanwhile.
//!
//! # Why the lists are never touched by two cores
//!
//! The core's store of `BUSY` and its load of `evicted` are not ordered
//! by any fence, so each may miss the other side's store for as long as
//! the store takes to become visible: a store buffer's drain, nanoseconds
//! on any core, since a core whose thread is suspended (under emulation)
//! has its buffer drained as it stops. The grace period is far longer.
//!
//! - A section whose enter read `evicted` clear began before the taker's
//!   store was visible to it, so at most a drain after that store. Its
//!   `BUSY` was visible at most a drain after it began, long before the
//!   grace period ends. If the section is still open when the taker
//!   looks, the taker sees `BUSY` and waits. If it has ended, its release
//!   store of `FREE` carries every touch it made to the taker's acquire
//!   load.
//! - A section that begins after the taker's store has been visible for
//!   a drain reads `evicted` set, and touches nothing.
//!
//! So the taker finds `FREE` only when every section that may have
//! touched the lists is over and seen, and none can begin. loom cannot
//! express time: the model puts a sequentially consistent fence between
//! the core's store and load, which orders them as the grace period does,
//! and checks the rest (the hand-over through the release and acquire, nesting, and that
//! an evicted core never touches the lists again).

use crate::atomics::{AtomicBool, AtomicU8, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

const FREE: u8 = 0;
const BUSY: u8 = 1;

/// How long a taker waits after its evict before it looks, in nanoseconds
/// (module docs): a millisecond, a million times a store buffer's drain.
pub const GRACE_NANOS: u64 = 1_000_000;

/// One core's words (module docs).
pub struct OwnSide {
    state: AtomicU8,
    evicted: AtomicBool,
}

/// What a taker's look after the grace period found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// The lists are the taker's now.
    Taken,
    /// The core is inside a section: look again later.
    Busy,
}

/// Between the core's store of `BUSY` and its load of `evicted`: nothing,
/// since the grace period orders them (module docs); in the loom model,
/// which has no time, the fence that stands for it.
#[inline(always)]
fn grace_stand_in() {
    #[cfg(loom)]
    crate::atomics::fence(crate::atomics::Ordering::SeqCst);
}

impl OwnSide {
    /// A core's words, its lists its own.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self { state: AtomicU8::new(FREE), evicted: AtomicBool::new(false) }
    }

    /// A core's words, its lists its own.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self { state: AtomicU8::new(FREE), evicted: AtomicBool::new(false) }
    }

    /// The core, first step of an enter (module docs, "Enter"): whether
    /// one of its sections is open already, so that it touches its lists
    /// inside that one.
    #[inline(always)]
    pub fn is_open(&self) -> bool {
        self.state.load(Relaxed) == BUSY
    }

    /// The core, with no section open (the rest of an enter): opens one,
    /// or answers `false`, opening none, if the core was evicted.
    #[inline(always)]
    pub fn open(&self) -> bool {
        self.state.store(BUSY, Relaxed);
        grace_stand_in();
        if self.evicted.load(Acquire) {
            self.state.store(FREE, Release);
            return false;
        }
        true
    }

    /// The core, after the [`open`](Self::open) that opened its section.
    #[inline(always)]
    pub fn leave(&self) {
        self.state.store(FREE, Release);
    }

    /// A taker, once, for a core that stopped answering (module docs,
    /// "Evict"). It must then wait [`GRACE_NANOS`] before it
    /// [looks](Self::look).
    pub fn evict(&self) {
        self.evicted.store(true, crate::atomics::Ordering::SeqCst);
        crate::atomics::fence(crate::atomics::Ordering::SeqCst);
    }

    /// The taker, at least [`GRACE_NANOS`] after its evict (module docs,
    /// "Take").
    pub fn look(&self) -> Look {
        if self.state.load(Acquire) == FREE { Look::Taken } else { Look::Busy }
    }

    /// Whether a taker has evicted the core.
    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Acquire)
    }
}

#[cfg(not(loom))]
impl Default for OwnSide {
    fn default() -> Self {
        Self::new()
    }
}
