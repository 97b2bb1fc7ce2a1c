//! A core's turn: the strand it runs on a fibre's stack, where its loop
//! waits meanwhile, how the strand came back, and its time slice.
//!
//! The strand layer runs strands (`crate::strand::scheduler`); the pool
//! keeps this record per core (`PerCore::turn`) because the core's timer
//! tick and wakers on other cores read its time slice through the pool.
//! Strands are named here by their control block's task header, which is
//! where every control block starts.

use crate::atomics::unmodelled::{AtomicPtr, AtomicU32, AtomicU64};
use crate::context::Context;
use crate::protocol::own_side::OwnSide;
use crate::protocol::urgent_mark::UrgentMark;
use crate::task::Task;
use core::cell::UnsafeCell;
use core::ptr;

/// How a strand left the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TurnEnd {
    /// It waits for something; a waker will make it runnable.
    Blocked,
    /// It is still runnable and lets other work go first.
    Yielded,
    /// Its time slice ended (`crate::preempt`): as `Yielded`, and any core
    /// may take it next.
    Preempted,
    /// Its closure returned.
    Finished,
}

/// One core's turn. The cells are touched only by the core itself (the
/// strand running there counts as that core); the atomics are the time
/// slice, read by the core's tick and by wakers anywhere, and what the
/// pool's watch for silent cores reads (`super::silent`).
pub(crate) struct CoreTurn {
    /// Where the core's loop is saved while a strand runs.
    pub(crate) loop_context: UnsafeCell<Context>,
    /// The running strand's task header, or null between strands. Written
    /// only by the core (relaxed: a plain store); read by the core, and by
    /// the watch that names the strand a silent core was running.
    pub(crate) running: AtomicPtr<Task>,
    /// How the last strand to leave the core left it.
    pub(crate) end: UnsafeCell<TurnEnd>,
    /// Whether other strands of the running strand's fibre were runnable
    /// when it was resumed (fixed while it runs: strands made runnable
    /// meanwhile go to the fibre's inbox).
    pub(crate) fibre_has_more: UnsafeCell<bool>,
    /// The strand that just handed the core to the running one (its end
    /// still in `end`), until the running one ends that strand's turn
    /// (`crate::strand`'s `hand_off::finish_previous`); null otherwise.
    pub(crate) handed_from: UnsafeCell<*mut Task>,
    /// When the running strand's time slice ends, in ticks (pools with a
    /// slice only; read by the core's timer interrupt, `crate::preempt`).
    pub(crate) slice_end: AtomicU64,
    /// The running strand's priority level, and the mark a woken strand
    /// that outranks it leaves, so that the next tick preempts at once
    /// (`crate::protocol::urgent_mark`).
    pub(crate) urgent: UrgentMark,
    /// Who may touch the core's pinned queue and private queue: the core,
    /// or the core that took it out of the pool (`crate::protocol::own_side`).
    pub(crate) own_side: OwnSide,
    /// How many pings the core answered (`super::silent`): written only by
    /// the core, in its timer interrupt's call into roving.
    pub(crate) answered: AtomicU32,
}

// SAFETY: the cells are touched only by their own core (module docs); the
// rest is atomics.
unsafe impl Sync for CoreTurn {}

impl CoreTurn {
    pub(crate) const fn new() -> Self {
        Self {
            loop_context: UnsafeCell::new(Context::empty()),
            running: AtomicPtr::new(ptr::null_mut()),
            end: UnsafeCell::new(TurnEnd::Blocked),
            fibre_has_more: UnsafeCell::new(false),
            handed_from: UnsafeCell::new(ptr::null_mut()),
            slice_end: AtomicU64::new(0),
            urgent: UrgentMark::new(),
            own_side: OwnSide::new(),
            answered: AtomicU32::new(0),
        }
    }
}
