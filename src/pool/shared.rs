//! A pool's shared state: the struct and its constructor.
//!
//! What the pool does with it is in a file per concern, each an `impl
//! Shared` block:
//!
//! | file | concern |
//! |---|---|
//! | `post.rs` | work entering the pool: posting to a core, spawning to any, the injector, waking sleepers for new work |
//! | `fibres.rs` | scheduling fibres: sending a woken fibre to its core, requeueing, the preempted strands' turns, handing a core from strand to strand |
//! | `stop.rs` | the pool's state, stopping, winding down and quiescence, with the proof that quiescence is not declared early |
//! | `deadlock.rs` | what a pool does when its strands wait on each other |
//! | `failure.rs` | failures that reach the pool unhandled, and tasks' panics |
//! | `membership.rs` | which cores are the pool's, and the mailboxes and routes that change with them |
//! | `worker.rs` | the loop each core runs |
//!
//! Per-core state is in `per_core.rs`, grouped by who writes it.
//!
//! # Lists
//!
//! | list                     | pushed by                | taken by            | runs on         |
//! |--------------------------|--------------------------|---------------------|-----------------|
//! | mailbox (to, from)       | core `from` ([`post`])   | core `to`           | core `to`       |
//! | mailbox (to, outside)    | non-pool code ([`post`]) | core `to`           | core `to`       |
//! | injector                 | non-pool code ([`spawn`])| any core            | any core        |
//! | steal list of core `c`   | core `c` (surplus)       | any core            | any core        |
//! | LIFO slot of core `c`    | core `c` (spawns, wakes) | core `c`; any core once it sat a while | any core |
//! | join slot of core `c`    | a `join` on core `c`     | any core            | any core        |
//! | fibre mailbox (to, from) | core `from`, or outside  | core `to`           | core `to`, or a thief |
//!
//! Fibre mailboxes carry fibres whose strands were woken to the core that
//! last ran them. Unlike the closures of `post`, which must run where they
//! were sent, a fibre only prefers its core: once that core has taken it,
//! it sits in the core's stealable queue.
//!
//! With the forwarding mesh ([`Mailboxes::Mesh`](super::Mailboxes)),
//! closures between cores travel through the mesh's lists, forwarded by
//! the cores between a sender and a receiver, and woken fibres go on the
//! receiver's fibre mailbox for code outside the pool, shared by every
//! sender, where a thief may still take them (`crate::mailbox::inbound`).
//!
//! [`post`]: Shared::post
//! [`spawn`]: Shared::spawn

use super::async_tasks::LiveTasks;
use super::config::Config;
use super::deadlock::Deadlock;
use super::domain_id::DomainId;
use super::end_waiters::EndWaiters;
use super::failure::Failure;
use super::per_core::{Local, LoopJoins, Membership, PerCore};
use super::preempted::Preempted;
use super::stop::READY;
use super::strands::Strands;
use crate::atomics::unmodelled::AtomicBool;
use crate::atomics::{AtomicU32, AtomicUsize, CachePadded};
use crate::mailbox::inbound::Inbound;
use crate::mailbox::list::AtomicList;
use crate::platform;
use crate::protocol::core_hints::CoreHints;
use crate::sleep::SleepState;
use crate::spin_lock::SpinLock;
use crate::timers::Timers;
use alloc::boxed::Box;
use alloc::sync::{Arc, Weak};

/// Everything the cores of one pool share.
pub(crate) struct Shared {
    /// The pool's own `Arc`, for what must hold the pool (a fibre it
    /// claims) but is reached through a `&Shared`.
    pub(super) this: Weak<Shared>,
    /// The domain the pool belongs to (`crate::domain`).
    pub(super) domain: DomainId,
    pub(super) config: Config,
    /// The time slice in platform ticks, or 0 for a cooperative pool
    /// (`crate::preempt`).
    pub(super) slice_ticks: u64,
    /// Counts the pool among those that preempt while it lives.
    _preempting: crate::preempt::deferral::Preempting,

    // Cores (`per_core.rs`, `membership.rs`).
    /// Core indices this pool can hold: `0..slots`, every core of the
    /// machine (up to roving's limit). Every per-core array has this length.
    pub(super) slots: usize,
    /// What each core writes.
    pub(super) cores: Box<[PerCore]>,
    /// Which cores are the pool's now, and which are leaving.
    pub(super) membership: Box<[Membership]>,
    pub(super) member_count: AtomicUsize,
    /// Storage blocks freed away from their home core, one list per home
    /// core (`crate::task::storage`): pushed by any core, taken by the home.
    returns: Box<[CachePadded<AtomicList>]>,
    /// The join stack of each core's own loop.
    pub(super) loop_joins: Box<[CachePadded<LoopJoins>]>,

    // Work and its lists (`post.rs`, `fibres.rs`, `worker.rs`).
    /// Tasks any core may run, from outside the pool.
    pub(super) injector: CachePadded<AtomicList>,
    /// Per core, a hint that its steal list may hold tasks
    /// (`crate::protocol::core_hints`): raised after each offer, lowered
    /// before each take, so a thief reads a word per 64 cores, not every
    /// core's list.
    pub(super) stealable: CoreHints,
    /// The cores' mailboxes: direct pairs or the forwarding mesh
    /// (`crate::mailbox::inbound`).
    pub(super) inbound: Inbound,
    /// Fibres whose strand was preempted, by level, oldest first within
    /// one: a core with nothing of its own takes the next, and so does a
    /// core at every other drain of its mailboxes, so strands that never
    /// yield take turns on every core (`crate::preempt`).
    pub(super) preempted: Preempted,
    /// Join owners waiting for their stolen jobs, taking others' meanwhile
    /// (`crate::join::wait_for`): a job offered is taken by them as by an
    /// idle core.
    pub(super) join_helpers: CachePadded<AtomicUsize>,
    /// Whether a core runs the config's poller now (one at a time).
    pub(super) polling: AtomicBool,
    /// The sleep protocol's counters and each core's sleep state.
    pub(super) sleep: SleepState,
    pub(super) timers: Timers,

    // The pool's life (`stop.rs`).
    pub(super) state: AtomicU32,
    /// Posts from outside the pool between their state check and their
    /// push: a quiescence check waits for them to land.
    pub(super) in_flight: AtomicUsize,
    /// Cores started for this pool whose entry has not yet returned.
    pub(super) running: AtomicUsize,
    /// The core `run` was called on, to be woken as cores exit.
    pub(super) runner: AtomicUsize,
    /// A resize is under way (one at a time).
    pub(super) resizing: AtomicBool,
    /// Being destroyed: no new strands (`super::lifetime`).
    pub(super) closing: AtomicBool,
    /// Whether quiescence stops the pool: the config's choice for `run`,
    /// never for a pool that was `start`ed.
    pub(super) stops_when_quiescent: AtomicBool,
    /// A domain's pool: a failure nobody handles tears it down (cancel
    /// every strand, stop once they have ended) instead of stopping it.
    pub(super) tears_down: AtomicBool,

    // What lives in the pool without being queued.
    /// The strands alive in the pool, and those that entered it from
    /// outside its part of the tree (`super::strands`).
    pub(super) strands: Strands,
    /// Async tasks spawned and not complete (`crate::executor`): like
    /// live strands, they keep the pool from being quiescent.
    pub(super) async_tasks: LiveTasks,
    /// Strands waiting for an actor of this pool to end.
    pub(super) actor_ends: EndWaiters,
    /// Strands waiting for what code outside the pool raises (a
    /// [`Signal`](crate::sync::Signal), typically from an interrupt
    /// handler): while any does, an idle pool is waiting, not deadlocked.
    pub(super) outside_waits: AtomicUsize,

    // What went wrong (`failure.rs`, `deadlock.rs`).
    /// The first failure that reached the pool unhandled (a root strand's,
    /// or one passed up from a strand with no parent); it stops the pool.
    pub(super) failure: SpinLock<Option<Box<Failure>>>,
    /// The first panic of a plain task, on the host, raised again by `run`.
    #[cfg(feature = "std")]
    pub(super) panic: std::sync::Mutex<Option<Box<dyn core::any::Any + Send>>>,
    /// The last deadlock found.
    pub(super) deadlock: SpinLock<Option<Deadlock>>,
    /// A deadlock check is posted or its report stands: no new one.
    pub(super) deadlock_pending: AtomicBool,
    /// Deadlocks acted on with `OnDeadlock::Fail`.
    pub(super) deadlocks_failed: AtomicU32,
    /// The quiet spell being watched (`quiet.rs`).
    pub(super) quiet_watch: super::quiet::QuietWatch,
    /// The watch for cores that stop answering (`super::silent`).
    pub(super) silent_watch: super::silent::SilentWatch,
    /// The cores it found, as reported (`super::take_out`).
    pub(super) silent_cores: SpinLock<alloc::vec::Vec<super::take_out::SilentCore>>,

    #[cfg(feature = "trace")]
    pub(super) trace: crate::trace::rings::Rings,
}

// SAFETY: each core's private state is touched only by that core while the
// pool runs, and by the one thread that owns the pool before and after
// (`PerCore::local`); everything else is atomics or behind locks. Tasks
// are `Send`.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw task pointers inside are owned, `Send` tasks.
unsafe impl Send for Shared {}

/// The mesh's most links per core for `config` on a machine of `slots`
/// cores, or `None` for direct mailboxes. On the host, `ROVING_MAILBOXES`
/// overrides the config for every pool: `direct`, `mesh`, or `ring` (a
/// mesh of one link per core, where most messages are forwarded), so the
/// whole test suite can run over each.
fn mesh_links(config: Config, slots: usize) -> Option<usize> {
    #[cfg(feature = "std")]
    if let Ok(forced) = std::env::var("ROVING_MAILBOXES") {
        return match forced.as_str() {
            "direct" => None,
            "mesh" => Some(usize::MAX),
            "ring" => Some(1),
            other => panic!("ROVING_MAILBOXES={other}: expected direct, mesh or ring"),
        };
    }
    config.mailboxes.resolve(slots)
}

/// Rings a core's doorbell (`platform::wake`); indices are checked when the
/// pool is built.
pub(crate) fn ring(core: usize) {
    let _ = platform::wake(core);
}

impl Shared {
    /// A pool of `slots` core indices of which `members` are its cores.
    pub(crate) fn new(
        slots: usize,
        members: impl Fn(usize) -> bool,
        config: Config,
        domain: DomainId,
    ) -> Arc<Self> {
        crate::platform::refuse_in_handler("making a pool", crate::platform::HANDLERS_DO_NOT_ALLOCATE);
        super::failure_reserve::top_up();
        Arc::new_cyclic(|this| Self::build(this.clone(), slots, members, config, domain))
    }

    fn build(
        this: Weak<Shared>,
        slots: usize,
        members: impl Fn(usize) -> bool,
        config: Config,
        domain: DomainId,
    ) -> Self {
        let mut shared = Self {
            this,
            domain,
            config,
            slice_ticks: config.time_slice.map_or(0, |slice| {
                let ticks =
                    slice.as_nanos().saturating_mul(u128::from(crate::platform::tick_hz())) / 1_000_000_000;
                u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
            }),
            _preempting: crate::preempt::deferral::Preempting::count(config.time_slice.is_some()),
            slots,
            // Filled below, once `returns` has its address.
            cores: Box::new([]),
            membership: (0..slots).map(|core| Membership::new(members(core))).collect(),
            member_count: AtomicUsize::new((0..slots).filter(|&core| members(core)).count()),
            returns: (0..slots).map(|_| CachePadded(AtomicList::new())).collect(),
            loop_joins: (0..slots).map(|_| CachePadded(LoopJoins::new())).collect(),
            injector: CachePadded(AtomicList::new()),
            stealable: CoreHints::new(slots),
            inbound: Inbound::new(slots, &members, mesh_links(config, slots), config.time_slice.is_some()),
            preempted: Preempted::new(),
            join_helpers: CachePadded(AtomicUsize::new(0)),
            polling: AtomicBool::new(false),
            sleep: SleepState::new(slots, config.search_rounds),
            timers: Timers::new(),
            state: AtomicU32::new(READY),
            in_flight: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            runner: AtomicUsize::new(0),
            resizing: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            stops_when_quiescent: AtomicBool::new(config.stop_when_quiescent),
            tears_down: AtomicBool::new(false),
            strands: Strands::new(),
            async_tasks: LiveTasks::new(slots),
            actor_ends: EndWaiters::new(),
            outside_waits: AtomicUsize::new(0),
            failure: SpinLock::new(None),
            #[cfg(feature = "std")]
            panic: std::sync::Mutex::new(None),
            deadlock: SpinLock::new(None),
            deadlock_pending: AtomicBool::new(false),
            deadlocks_failed: AtomicU32::new(0),
            quiet_watch: super::quiet::QuietWatch::new(),
            silent_watch: super::silent::SilentWatch::new(slots, config.silent_core_after),
            silent_cores: SpinLock::new(alloc::vec::Vec::new()),
            #[cfg(feature = "trace")]
            trace: crate::trace::rings::Rings::new(slots),
        };
        let returns: &[CachePadded<AtomicList>] = &shared.returns;
        // SAFETY: the return lists live in the same `Shared`, boxed, and
        // are dropped after the cores (neither touches the other on drop).
        let cores = (0..slots).map(|core| unsafe { PerCore::new(core, slots, returns) }).collect();
        shared.cores = cores;
        shared
    }

    /// Core `core`'s shared part, without a bounds check.
    ///
    /// # Safety
    ///
    /// `core` is below the pool's slots: the caller is core `core` running
    /// this pool (as for [`Shared::local`]), or read it from the pool's
    /// own tables.
    #[inline]
    pub(crate) unsafe fn own_core(&self, core: usize) -> &PerCore {
        debug_assert!(core < self.cores.len(), "core {core} of a pool of {} slots", self.cores.len());
        // SAFETY: per the contract. Unchecked for `local`'s reason: the
        // switch paths ask for their core's part several times each.
        unsafe { self.cores.get_unchecked(core) }
    }

    /// Core `core`'s private state.
    ///
    /// # Safety
    ///
    /// As for [`PerCore::local`]: the caller is core `core` running this
    /// pool, or the pool is not running and the caller owns it; and no
    /// other reference to this `Local` is live.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn local(&self, core: usize) -> &mut Local {
        debug_assert!(core < self.cores.len(), "core {core} of a pool of {} slots", self.cores.len());
        // SAFETY: per the contract: core `core` runs this pool, so it has
        // a slot (a worker is entered only for a core below `slots`), and
        // the reference is exclusive. Unchecked: every step of a core's
        // loop and every switch asks for its `Local`, and a bounds check
        // is three instructions each time.
        unsafe { self.cores.get_unchecked(core).local() }
    }
}

impl Shared {
    /// Records `event` in core `core`'s trace.
    #[cfg(feature = "trace")]
    #[inline]
    pub(crate) fn record_trace(&self, core: usize, event: crate::trace::event::TraceEvent) {
        self.trace.record(core, event);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // A pool built but never run may still hold tasks posted to it.
        if self.cores.len() < self.slots {
            return; // unwinding out of `new`
        }
        // Nobody can read the counters any more, so the count is not kept.
        // SAFETY: `&mut self`: nothing else touches the pool.
        unsafe { self.discard_everything(0) };
    }
}
