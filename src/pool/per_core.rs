//! One core's part of a pool, grouped by who writes it.
//!
//! A pool keeps four arrays indexed by core, not one per purpose:
//!
//! - [`PerCore`]: what the core writes. Each field that another core reads
//!   or takes from sits alone on its cache line, as before, so a thief
//!   scanning steal lists never pulls in a line the owner is writing for
//!   itself. Its size is a power of two (1 KiB), so finding a core's part
//!   is a shift, not a multiply: it is found on every post, wake and join.
//! - [`Membership`]: whether the core is in the pool, written only when
//!   the pool is resized and read by every sender. Packed, not padded:
//!   every core reads these bytes on every post, and nobody writes them in
//!   between.
//! - The block caches' return lists (`Shared::returns`), pushed by every
//!   core and taken by the home core. Apart because a block cache indexes
//!   them by home core (`crate::task::storage`).
//! - [`LoopJoins`]: the join stack of each core's own loop, touched only by
//!   its core. Apart because it is large (over 500 bytes) and used only by
//!   joins outside strands: inside [`PerCore`] it would take it past 1 KiB.
//!
//! Some per-core state belongs to a part of the pool with its own file and
//! stays there: the sleep protocol's word per core (`crate::sleep`), the
//! inbound mailboxes (`crate::mailbox::inbound`), the trace's rings and the
//! live async tasks' shards.

use super::core_turn::CoreTurn;
use super::fork_join::{JoinStack, Slot};
use super::lifo_watch::LifoWatch;
use super::stats::Counters;
use crate::atomics::CachePadded;
use crate::atomics::unmodelled::AtomicBool;
use crate::mailbox::list::AtomicList;
use crate::protocol::lifo_slot::LifoSlot;
use crate::task::Task;
use crate::task::queue::TaskQueue;
use crate::task::storage::BlockCache;
use core::cell::UnsafeCell;
use core::ptr::NonNull;

/// What one core of a pool writes. Each field's doc says who else reads it.
#[repr(align(1024))]
pub(crate) struct PerCore {
    /// Tasks the core offers idle cores (the older half of its queue).
    /// Pushed by the core; taken whole by any core that steals.
    pub(crate) steal: CachePadded<AtomicList>,
    /// The newest task the core spawned or woke for itself, which it runs
    /// next (`crate::protocol::lifo_slot`). Put and taken by the core; taken
    /// by an idle core once it has sat there a while.
    pub(crate) lifo: CachePadded<LifoSlot>,
    /// A fork-join job a `join` on this core published (`crate::join`).
    /// Published and taken back by the core; taken by any core.
    pub(crate) join_slot: CachePadded<Slot>,
    /// The core's counters. Written by the core; read by anyone
    /// (`Pool::stats`, the trace check).
    pub(crate) stats: CachePadded<Counters>,
    /// The strand the core runs and its time slice (`super::core_turn`).
    /// Written by the core; the slice's fields are read by the core's tick
    /// and by wakers on any core.
    pub(crate) turn: CachePadded<CoreTurn>,
    /// What only the core touches, ever.
    local: CachePadded<UnsafeCell<Local>>,
}

// Finding a core's part is a shift (module docs). What it holds is 896
// bytes; the alignment rounds it to the next power of two.
const _: () = assert!(core::mem::size_of::<PerCore>().is_power_of_two());

/// The join stack of one core's own loop (module docs).
pub(crate) struct LoopJoins(UnsafeCell<JoinStack>);

// SAFETY: only its core touches the stack, through the pointer `get`
// gives (`crate::join`'s contract).
unsafe impl Sync for LoopJoins {}

impl LoopJoins {
    pub(crate) fn new() -> Self {
        Self(UnsafeCell::new(JoinStack::new()))
    }

    /// The stack, for `crate::join`, which touches it only on its core.
    #[inline]
    pub(crate) fn get(&self) -> *mut JoinStack {
        self.0.get()
    }
}

/// What only one core touches: its queues and its block cache.
pub(crate) struct Local {
    /// What this core saw in other cores' LIFO slots on its last look, so
    /// that it steals only a task that sat there since
    /// (`crate::protocol::lifo_slot`).
    pub(crate) lifo_watch: LifoWatch,
    /// Tasks any core may run (spawned here, or taken from the injector or
    /// a steal list). The older half is offered to idle cores.
    pub(crate) queue: TaskQueue,
    /// Tasks addressed to this core (from its mailboxes): never offered.
    pub(crate) pinned: TaskQueue,
    pub(crate) cache: BlockCache,
    /// Tasks run since the mailboxes were last drained (fairness).
    pub(crate) since_inbound: u32,
    /// Whether the next drain offers a preempted strand's turn before the
    /// core's own queues (`super::worker::after_drain`): drains alternate.
    pub(crate) turn_first: bool,
    /// Whether the queue held tasks at the last drain, and whether a task
    /// was taken from it since: if it held some and none was taken, its
    /// head has waited a whole drain behind the LIFO slot, and goes first
    /// at the next (`super::worker::after_drain`).
    pub(crate) queue_waited: bool,
    /// Set by [`Local::take_from_queue`].
    pub(crate) queue_served: bool,
    /// State of the victim chooser.
    pub(crate) rng: u32,
    /// Where this core's next look at the join slots starts
    /// (`super::fork_join::JOIN_WINDOW`).
    pub(crate) join_window: u32,
    /// Whether the core's loop is inside the platform's wait in its sleep,
    /// where a handler on the core may queue a woken fibre for it
    /// (`super::idle_wait`).
    pub(crate) waiting_idle: bool,
}

impl Local {
    /// Takes the task at the head of the queue, marking the queue served
    /// for the fairness of drains (`super::worker::after_drain`). Every
    /// take of the core's own from its queue goes through here.
    #[inline(always)]
    pub(crate) fn take_from_queue(&mut self) -> Option<NonNull<Task>> {
        self.queue_served = true;
        self.queue.pop_front()
    }
}

// SAFETY: `local` is touched only by its core (the contract of
// `Shared::local`); every other field is atomics.
unsafe impl Sync for PerCore {}
// SAFETY: as above; the raw task pointers inside are owned, `Send` tasks.
unsafe impl Send for PerCore {}

impl PerCore {
    /// Core `core`'s part of a pool of `cores` cores; its block cache
    /// returns blocks through `returns`.
    ///
    /// # Safety
    ///
    /// `returns` outlives the result (as `BlockCache::new` asks).
    pub(crate) unsafe fn new(core: usize, cores: usize, returns: &[CachePadded<AtomicList>]) -> Self {
        let local = Local {
            lifo_watch: LifoWatch::new(cores),
            queue: TaskQueue::new(),
            pinned: TaskQueue::new(),
            // SAFETY: per the contract.
            cache: unsafe { BlockCache::new(core, returns) },
            since_inbound: 0,
            turn_first: true,
            queue_waited: false,
            queue_served: false,
            rng: (core as u32).wrapping_mul(0x9e37_79b9) | 1,
            join_window: ((core + 1) % cores) as u32,
            waiting_idle: false,
        };
        Self {
            steal: CachePadded(AtomicList::new()),
            lifo: CachePadded(LifoSlot::new()),
            join_slot: CachePadded(Slot::new()),
            stats: CachePadded(Counters::default()),
            turn: CachePadded(CoreTurn::new()),
            local: CachePadded(UnsafeCell::new(local)),
        }
    }

    /// The core's private state.
    ///
    /// # Safety
    ///
    /// The caller is this core running its pool, or the pool is not
    /// running and the caller owns it; and no other reference to this
    /// `Local` is live (in particular none is held across a task's call).
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn local(&self) -> &mut Local {
        // SAFETY: exclusive by the contract above.
        unsafe { &mut *self.local.0.get() }
    }
}

/// Whether a core is one of the pool's, and whether it is on its way out.
pub(crate) struct Membership {
    /// One of the pool's cores now. Set when the pool is built or a core is
    /// added; cleared by the core itself when it has left.
    pub(crate) member: AtomicBool,
    /// Asked to leave: set by a resize, cleared by the core once it has
    /// left, at its next step between tasks.
    pub(crate) leaving: AtomicBool,
}

impl Membership {
    pub(crate) fn new(member: bool) -> Self {
        Self { member: AtomicBool::new(member), leaving: AtomicBool::new(false) }
    }
}
