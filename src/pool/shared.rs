//! A pool's shared state, and the ways work gets into it.
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
//!
//! # Stopping and quiescence
//!
//! `state` goes `READY` → `RUNNING` → `STOPPED`, and `STOPPED` is final.
//! Posting checks it: a closure offered to a stopped pool comes back to the
//! caller. Posts from outside the pool also count themselves in `in_flight`
//! around the check and the push, so whoever stops the pool can wait until
//! every push that saw it running has landed.
//!
//! A pool stopped while strands live first *winds down* (`WINDING`): it
//! refuses posts and spawns as if stopped, cancels every strand, and its
//! cores run only strands (fibres, and join jobs, which live on fibre
//! stacks), dropping every other task unrun. It is `STOPPED` once the
//! last strand has ended, so the strands' fibres go back to the free set
//! and their destructors run. Strands that cannot end (blocked where a
//! cancel does not reach, with nothing left to wake them) are abandoned:
//! when every core is asleep, nothing is queued and no deadline is armed,
//! the quiescence check below stops the pool anyway.
//!
//! Quiescence (no task anywhere, every core asleep) is detected by the last
//! core to fall asleep, after its final checks: it sees every list empty
//! and then the sleeping count equal to the pool size. A core asleep is
//! running nothing and its own lists are empty, so only code outside the
//! pool could add work. The detector moves `RUNNING` → `QUIESCING` (outside
//! posters wait while it is there), waits for `in_flight` to drain, checks
//! again, and then either stops the pool or goes back to `RUNNING`.
//!
//! Why the second check is enough. Call its steps: read the nudge count
//! (N0), read every list (L), read the sleep counters (C), read the nudge
//! count again (N1); stop only if the lists were empty, C counts every core
//! as sleeping, no strand is alive, and N0 = N1. No outside poster is
//! active during it, and none can start.
//!
//! - At C every core is inside a sleep: between its own increment of the
//!   sleeping count and the decrement that ends that sleep. A claimed core
//!   does not leave its sleep before its waker's decrement (`CLAIMED` in
//!   `crate::sleep`), so no core is counted twice, and a core inside a
//!   sleep runs nothing and holds nothing in its own queues. So at C no
//!   core runs a task.
//! - Suppose a task T still sits in core X's mailbox at C. L read that
//!   mailbox empty, so T was pushed after that read, by a core P that ran
//!   then and was asleep again by C. X is counted at C, so X armed its
//!   mailboxes before its increment and has not drained them since (a core
//!   drains only by searching). If the push came before that arm, the arm
//!   took T. Otherwise P found the sentinel and tried to wake X: a claim
//!   takes X off the count until it arms again (taking T); a core still
//!   `AWAKE` sees T in its final check and cancels its sleep; and a nudge
//!   bumps the nudge count before P can sleep, between N0 and N1.
//! - With the mesh, a task may also sit in a list of a hop on its way. A
//!   hop holds tasks out of the lists only while it drains, awake, and
//!   pushes them on before it can sleep: the argument above holds with
//!   P the hop. A rebuild (a core joining or leaving) moves tasks from the
//!   mesh to direct lists inside a write section, and L reads the mesh and
//!   the direct lists in one read section, so L sees them in one place or
//!   the other; the relay's pushes wake armed receivers like any push.
//! - The injector is pushed only from outside. A steal list or a LIFO
//!   slot is filled only by its owner, which searches it before it sleeps. A join slot is
//!   published by a core running the join, which waits for the job without
//!   sleeping. So at C those are empty too.
//!
//! An earlier version read no nudge count and let a claim store `AWAKE`
//! before its waker's decrement: a claimed core could run, sleep again and
//! be counted twice, and a QEMU run stopped its pool with tasks still
//! queued on the waker.
use super::config::Config;
use super::current::{self, Worker};
use super::deadlock::{Deadlock, OnDeadlock};
use super::entries::Entries;
use super::error::PostError;
use super::lifo_watch::LifoWatch;
use super::stats::{self, Counters as Stats};
use super::timers::Timers;
use crate::atomics::{AtomicU32, AtomicUsize, CachePadded, Ordering::SeqCst, spin_hint};
use crate::domain::DomainId;
use crate::executor::list::LiveTasks;
use crate::join::{self, JoinStack, Slot};
use crate::mailbox::inbound::{CLOSURES, FIBRES, Inbound, Sent};
use crate::mailbox::list::{AtomicList, Chain};
use crate::platform;
use crate::protocol::lifo_slot::LifoSlot;
use crate::sleep::Sleep;
use crate::spin_lock::SpinLock;
use crate::strand::Failure;
use crate::strand::Priority;
use crate::strand::scheduler::StrandCore;
use crate::task::queue::TaskQueue;
use crate::task::storage::BlockCache;
use crate::task::{self, Action, IntoTask, Task};
use alloc::boxed::Box;
use alloc::sync::{Arc, Weak};
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

pub(crate) const READY: u32 = 0;
pub(crate) const RUNNING: u32 = 1;
pub(crate) const QUIESCING: u32 = 2;
pub(crate) const STOPPED: u32 = 3;
/// Stopped for new work, its strands being cancelled and run to their end
/// (module docs, "Stopping and quiescence").
pub(crate) const WINDING: u32 = 4;

/// What only one core touches: its queues and its block cache.
pub(crate) struct Local {
    /// What this core saw in other cores' LIFO slots on its last look, so
    /// that it steals only a task that sat there since (`super::lifo`).
    pub(crate) lifo_watch: LifoWatch,
    /// Tasks any core may run (spawned here, or taken from the injector or
    /// a steal list). The older half is offered to idle cores.
    pub(crate) queue: TaskQueue,
    /// Tasks addressed to this core (from its mailboxes): never offered.
    pub(crate) pinned: TaskQueue,
    pub(crate) cache: BlockCache,
    /// Tasks run since the mailboxes were last drained (fairness).
    pub(crate) since_inbound: u32,
    /// State of the victim chooser.
    pub(crate) rng: u32,
}

/// Everything the cores of one pool share.
pub(crate) struct Shared {
    /// The pool's own `Arc`, for what must hold the pool (a fibre it
    /// claims) but is reached through a `&Shared`.
    pub(crate) this: Weak<Shared>,
    /// Core indices this pool can hold: `0..slots`, every core of the
    /// machine (up to roving's limit). Every per-core array has this length.
    pub(crate) slots: usize,
    /// Which cores are the pool's now; changed by resizing
    /// (`super::membership`).
    pub(crate) members: Box<[AtomicBool]>,
    pub(crate) member_count: AtomicUsize,
    /// Cores asked to leave: each leaves at its next step between tasks.
    pub(crate) leaving: Box<[AtomicBool]>,
    pub(crate) config: Config,
    /// The time slice in platform ticks, or 0 for a cooperative pool
    /// (`crate::preempt`).
    pub(crate) slice_ticks: u64,
    /// Counts the pool among those that preempt while it lives.
    _preempting: crate::preempt::Preempting,
    /// Fibres whose strand was preempted, by level, oldest first within
    /// one: a core with nothing of its own takes the next, so strands that
    /// never yield take turns on every core (`crate::preempt`).
    turns: super::turns::Turns,
    pub(crate) state: AtomicU32,
    in_flight: AtomicUsize,
    pub(crate) sleep: Sleep,
    pub(crate) injector: CachePadded<AtomicList>,
    /// The cores' mailboxes: direct pairs or the forwarding mesh
    /// (`super::inbound`).
    pub(crate) inbound: Inbound,
    pub(crate) steal: Box<[CachePadded<AtomicList>]>,
    /// Each core's LIFO slot: the newest task it spawned or woke for
    /// itself, run next (`super::lifo`).
    pub(crate) lifo: Box<[CachePadded<LifoSlot>]>,
    /// Each core's slot for a published fork-join job (`crate::join`).
    pub(crate) join_slots: Box<[CachePadded<Slot>]>,
    /// Join owners waiting for their stolen jobs, taking others' meanwhile
    /// (`crate::join::wait_for`): a job offered is taken by them as by an
    /// idle core.
    pub(crate) join_helpers: CachePadded<AtomicUsize>,
    /// The join stack of each core's own loop (strands keep theirs with
    /// their fibre); touched only by that core.
    pub(crate) joins: Box<[CachePadded<UnsafeCell<JoinStack>>]>,
    returns: Box<[CachePadded<AtomicList>]>,
    locals: Box<[CachePadded<UnsafeCell<Local>>]>,
    pub(crate) stats: Box<[CachePadded<Stats>]>,
    #[cfg(feature = "trace")]
    pub(crate) trace: crate::trace::Rings,
    pub(crate) polling: AtomicBool,
    /// Cores started for this pool whose entry has not yet returned.
    pub(crate) running: AtomicUsize,
    /// A resize is under way (one at a time).
    pub(crate) resizing: AtomicBool,
    /// Being destroyed: no new strands (`super::lifetime`).
    pub(crate) closing: AtomicBool,
    /// Whether quiescence stops the pool: the config's choice for `run`,
    /// never for a pool that was `start`ed.
    pub(crate) stops_when_quiescent: AtomicBool,
    /// Strands that entered the pool from outside its part of the tree.
    pub(crate) entries: Entries,
    /// The domain the pool belongs to (`crate::domain`).
    pub(crate) domain: DomainId,
    /// A domain's pool: a failure nobody handles tears it down (cancel
    /// every strand, stop once they have ended) instead of stopping it.
    pub(crate) tears_down: AtomicBool,
    /// The core `run` was called on, to be woken as cores exit.
    pub(crate) runner: AtomicUsize,
    /// Each core's strand state (scheduler context, running strand).
    pub(crate) strands: Box<[CachePadded<StrandCore>]>,
    /// Strands spawned and not yet finished: the pool is not quiescent
    /// while any is alive, blocked or not.
    pub(crate) live_strands: AtomicUsize,
    /// Async tasks spawned and not complete (`crate::executor`): like
    /// live strands, they keep the pool from being quiescent.
    pub(crate) async_tasks: LiveTasks,
    pub(crate) timers: Timers,
    /// The first failure that reached the pool unhandled (a root strand's,
    /// or one passed up from a strand with no parent); it stops the pool.
    pub(crate) failure: SpinLock<Option<Box<Failure>>>,
    #[cfg(feature = "std")]
    pub(crate) panic: std::sync::Mutex<Option<Box<dyn core::any::Any + Send>>>,
    /// The last deadlock found (`super::deadlock`).
    pub(crate) deadlock: SpinLock<Option<Deadlock>>,
    /// Strands waiting for an actor of this pool to end.
    pub(crate) actor_ends: crate::actor::end::EndWaiters,
    /// A deadlock check is posted or its report stands: no new one.
    deadlock_pending: AtomicBool,
    /// Strands waiting for what code outside the pool raises (a
    /// [`Signal`](crate::sync::Signal), typically from an interrupt
    /// handler): while any does, an idle pool is waiting, not deadlocked.
    pub(crate) outside_waits: AtomicUsize,
    /// Deadlocks acted on with `OnDeadlock::Fail`.
    deadlocks_failed: AtomicU32,
}

// SAFETY: `locals` are touched only by their own core while the pool runs,
// and by the one thread that owns the pool before and after (see `local`);
// everything else is atomics. Tasks are `Send`.
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
        Arc::new_cyclic(|this| Self::build(this.clone(), slots, members, config, domain))
    }

    fn build(
        this: Weak<Shared>,
        slots: usize,
        members: impl Fn(usize) -> bool,
        config: Config,
        domain: DomainId,
    ) -> Self {
        let cores = slots;
        let flags =
            |f: &dyn Fn(usize) -> bool| (0..slots).map(|core| AtomicBool::new(f(core))).collect::<Box<[_]>>();
        let lists = |n: usize| (0..n).map(|_| CachePadded(AtomicList::new())).collect::<Box<[_]>>();
        let mut shared = Self {
            this,
            slots,
            members: flags(&members),
            member_count: AtomicUsize::new((0..slots).filter(|&core| members(core)).count()),
            leaving: flags(&|_| false),
            config,
            slice_ticks: config.time_slice.map_or(0, |slice| {
                let ticks =
                    slice.as_nanos().saturating_mul(u128::from(crate::platform::tick_hz())) / 1_000_000_000;
                u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
            }),
            _preempting: crate::preempt::Preempting::count(config.time_slice.is_some()),
            turns: super::turns::Turns::new(),
            state: AtomicU32::new(READY),
            in_flight: AtomicUsize::new(0),
            sleep: Sleep::new(cores, config.search_rounds),
            injector: CachePadded(AtomicList::new()),
            inbound: Inbound::new(slots, &members, mesh_links(config, slots)),
            steal: lists(cores),
            lifo: (0..cores).map(|_| CachePadded(LifoSlot::new())).collect(),
            join_slots: (0..cores).map(|_| CachePadded(Slot::new())).collect(),
            join_helpers: CachePadded(AtomicUsize::new(0)),
            joins: (0..cores).map(|_| CachePadded(UnsafeCell::new(JoinStack::new()))).collect(),
            returns: lists(cores),
            locals: Box::new([]),
            stats: (0..cores).map(|_| CachePadded(Stats::default())).collect(),
            #[cfg(feature = "trace")]
            trace: crate::trace::Rings::new(cores),
            polling: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            resizing: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            stops_when_quiescent: AtomicBool::new(config.stop_when_quiescent),
            entries: Entries::default(),
            domain,
            tears_down: AtomicBool::new(false),
            runner: AtomicUsize::new(0),
            strands: (0..cores).map(|_| CachePadded(StrandCore::new())).collect(),
            live_strands: AtomicUsize::new(0),
            async_tasks: LiveTasks::new(slots),
            timers: Timers::new(),
            failure: SpinLock::new(None),
            #[cfg(feature = "std")]
            panic: std::sync::Mutex::new(None),
            deadlock: SpinLock::new(None),
            actor_ends: crate::actor::end::EndWaiters::new(),
            deadlock_pending: AtomicBool::new(false),
            outside_waits: AtomicUsize::new(0),
            deadlocks_failed: AtomicU32::new(0),
        };
        let returns: &[CachePadded<AtomicList>] = &shared.returns;
        let locals = (0..cores)
            .map(|core| {
                CachePadded(UnsafeCell::new(Local {
                    lifo_watch: LifoWatch::new(cores),
                    queue: TaskQueue::new(),
                    pinned: TaskQueue::new(),
                    // SAFETY: the return lists live in the same `Shared`,
                    // boxed, and are dropped after the locals (field order
                    // does not matter: neither touches the other on drop).
                    cache: unsafe { BlockCache::new(core, returns) },
                    since_inbound: 0,
                    rng: (core as u32).wrapping_mul(0x9e37_79b9) | 1,
                }))
            })
            .collect();
        shared.locals = locals;
        for core in (0..slots).filter(|&core| !members(core)) {
            shared.close_mailboxes(core, |_| {});
        }
        shared
    }

    /// Whether `core` is one of the pool's cores now.
    #[inline]
    /// Whether work can be pinned to `core` now.
    pub(crate) fn check_pin(&self, core: usize) -> Result<(), super::PinError<()>> {
        if core >= self.slots {
            return Err(super::PinError::NoSuchCore { core, cores: self.slots, value: () });
        }
        if !self.is_member(core) {
            return Err(super::PinError::NotAMember { core, value: () });
        }
        Ok(())
    }

    pub(crate) fn is_member(&self, core: usize) -> bool {
        self.members.get(core).is_some_and(|member| member.load(SeqCst))
    }

    /// How many cores the pool has now.
    pub(crate) fn member_count(&self) -> usize {
        self.member_count.load(SeqCst)
    }

    /// Closes `core`'s inbound mailboxes, handing `keep` what each sender's
    /// pair held: (closures, fibres).
    pub(crate) fn close_mailboxes(&self, core: usize, keep: impl FnMut([Chain; 2])) {
        self.inbound.close(core, keep);
    }

    /// Opens `core`'s inbound mailboxes again, before it rejoins.
    pub(crate) fn reopen_mailboxes(&self, core: usize) {
        self.inbound.reopen(core);
    }

    /// With the mesh, rebuilds it over the members, leaving out `leaving`
    /// (`super::inbound`): a core that joins or leaves is never a hop of
    /// the old routes after this. Direct mailboxes need nothing.
    pub(crate) fn rebuild_routes(&self, leaving: Option<usize>) {
        // A preempted rebuild would hold every core's sends until it ran
        // again.
        let _deferral = crate::preempt::defer();
        let ranked = |core: usize| self.is_member(core) && Some(core) != leaving;
        // SAFETY: resizes run one at a time, and rebuilds only in them; no
        // caller is in a read section; preemption is deferred.
        unsafe { self.inbound.rebuild(ranked, |core| _ = self.sleep.wake(core, ring)) };
    }

    /// Whether core `me` has work queued that it could run next: its
    /// private queues, its mailboxes, its steal list, a preempted strand's
    /// turn, or the injector.
    ///
    /// # Safety
    ///
    /// As for [`Shared::local`]: called on core `me` while nothing else
    /// holds its private state (its timer interrupt, over a strand outside
    /// roving's code).
    pub(crate) unsafe fn has_work_for(&self, me: usize) -> bool {
        // SAFETY: per the contract.
        let local = unsafe { self.local(me) };
        self.lifo[me].is_occupied()
            || local.queue.len() > 0
            || local.pinned.len() > 0
            || self.inbound.has_work(me)
            || self.steal[me].has_tasks()
            || self.has_turns()
            || self.injector.has_tasks()
    }

    /// Core `core`'s private state.
    ///
    /// # Safety
    ///
    /// The caller is core `core` running this pool, or the pool is not
    /// running and the caller owns it; and no other reference to this
    /// `Local` is live (in particular none is held across a task's call).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn local(&self, core: usize) -> &mut Local {
        // SAFETY: exclusive by the contract above.
        unsafe { &mut *self.locals[core].get() }
    }

    /// Whether the cores are done: nothing runs in the pool any more.
    pub(crate) fn stopped(&self) -> bool {
        self.state.load(Relaxed) == STOPPED
    }

    /// Whether the pool takes no new work (stopped, or winding down).
    pub(crate) fn refuses_work(&self) -> bool {
        matches!(self.state.load(Relaxed), STOPPED | WINDING)
    }

    /// Whether the pool is winding down its strands.
    pub(crate) fn winding_down(&self) -> bool {
        self.state.load(Relaxed) == WINDING
    }

    /// Posts `work` to run on core `to`.
    pub(crate) fn post<W: IntoTask>(&self, to: usize, work: W) -> Result<(), PostError<W>> {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::defer();
        if to >= self.slots {
            return Err(PostError::NoSuchCore { core: to, cores: self.slots, closure: work });
        }
        if !self.is_member(to) {
            return Err(PostError::NotAMember { core: to, closure: work });
        }
        match self.worker_core() {
            Some(me) => self.post_from(me, to, work),
            None if self.foreign_caller() => Err(PostError::OtherDomain(work)),
            None => self.post_outside(work, |task| {
                // SAFETY: the task is ours to give.
                match unsafe { self.inbound.send_from_outside(CLOSURES, to, task) } {
                    Sent::Queued => Ok(()),
                    Sent::Wake(core) => {
                        self.sleep.wake(core, ring);
                        Ok(())
                    }
                    Sent::Refused(_) => Err(PostError::NotAMember { core: to, closure: () }),
                    Sent::NoMemory(_) => unreachable!("a direct list needs no memory"),
                }
            }),
        }
    }

    /// Spawns `work` to run on any core.
    /// Posts `work` to `core`, the core it is pinned to; if that core has
    /// left the pool, the pin lapses while it is away and `work` is spawned.
    pub(crate) fn post_pinned<W: IntoTask>(&self, core: usize, work: W) -> Result<(), PostError<W>> {
        match self.post(core, work) {
            Err(PostError::NotAMember { closure, .. }) => self.spawn(closure),
            result => result,
        }
    }

    pub(crate) fn spawn<W: IntoTask>(&self, work: W) -> Result<(), PostError<W>> {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::defer();
        match self.worker_core() {
            Some(me) => self.spawn_from(me, work),
            None if self.foreign_caller() => Err(PostError::OtherDomain(work)),
            None => self.post_outside(work, |task| {
                self.inject(task, None);
                Ok(())
            }),
        }
    }

    /// Whether the calling code belongs to another domain. An interrupt
    /// handler belongs to none: it may post to any pool.
    fn foreign_caller(&self) -> bool {
        !platform::in_interrupt() && DomainId::current() != self.domain
    }

    /// Calls `f` with the calling core's block cache if it is a worker of
    /// this pool (storage made there may be freed on any core of the pool).
    pub(crate) fn with_cache<R>(&self, f: impl FnOnce(Option<&mut BlockCache>) -> R) -> R {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::defer();
        // SAFETY: `me` is what `worker_core` says for the calling core.
        unsafe { self.with_cache_at(self.worker_core(), f) }
    }

    /// [`Shared::with_cache`] for a caller that already knows its core,
    /// sparing the lookup on hot paths.
    ///
    /// # Safety
    ///
    /// `me` is what [`Shared::worker_core`] returns on the calling core,
    /// and a strand caller has deferred preemption since it asked
    /// (`crate::preempt::defer`), so it is still on that core.
    pub(crate) unsafe fn with_cache_at<R>(
        &self,
        me: Option<usize>,
        f: impl FnOnce(Option<&mut BlockCache>) -> R,
    ) -> R {
        debug_assert_eq!(me, self.worker_core());
        match me {
            // SAFETY: we are core `me` of this pool (contract), inside a
            // task or a strand; the loop holds no reference to its `Local`
            // across those, and `f` does not call back into the pool.
            Some(me) => f(Some(unsafe { &mut self.local(me).cache })),
            None => f(None),
        }
    }

    /// Counts `n` things dropped unrun because the pool stopped, on the
    /// calling core's counters (core 0's from outside the pool).
    pub(crate) fn count_discarded(&self, n: u64) {
        stats::add(&self.stats[self.worker_core().unwrap_or(0)].discarded, n);
    }

    /// Queues `work` at the back of core `me`'s own queue (the pinned one
    /// if `pinned`), behind the work already there: a task yielding its
    /// core. Gives `work` back if memory ran out.
    pub(crate) fn requeue<W: IntoTask>(&self, me: usize, work: W, pinned: bool) -> Result<(), W> {
        // SAFETY: as in `post_from`.
        let task = work.into_task(Some(unsafe { &mut self.local(me).cache }))?;
        self.requeue_local(me, task, pinned);
        Ok(())
    }

    /// The calling core's index if it is a worker of this pool.
    pub(crate) fn worker_core(&self) -> Option<usize> {
        current::with(|worker| match worker {
            Some(Worker { shared, core }) if core::ptr::eq(*shared, self) => Some(*core),
            _ => None,
        })
    }

    fn post_from<W: IntoTask>(&self, me: usize, to: usize, work: W) -> Result<(), PostError<W>> {
        if self.refuses_work() {
            return Err(PostError::Stopped(work));
        }
        if to == me && self.leaving[me].load(Relaxed) {
            // A core runs what is posted to it before it leaves, so a task
            // that kept posting to its own core would hold it forever.
            return Err(PostError::NotAMember { core: to, closure: work });
        }
        // SAFETY: we are core `me`, inside a task or `main`; the loop holds
        // no reference to its `Local` across those.
        let local = unsafe { self.local(me) };
        let task = work.into_task(Some(&mut local.cache)).map_err(PostError::OutOfMemory)?;
        let stats = &self.stats[me];
        if to == me {
            // SAFETY: the task is ours to give.
            unsafe { local.pinned.push_back(task) };
        } else {
            // SAFETY: we are core `me`; the task is ours to give.
            match unsafe { self.inbound.send(CLOSURES, me, to, task) } {
                Sent::Queued => {}
                Sent::Wake(core) => _ = self.wake_for(me, core),
                Sent::Refused(task) => {
                    // The core left the pool since `post` looked.
                    // SAFETY: refused, so still ours; made with our cache.
                    let work = unsafe { W::from_task(task, Some(NonNull::from(&mut local.cache))) };
                    return Err(PostError::NotAMember { core: to, closure: work });
                }
                Sent::NoMemory(task) => {
                    // SAFETY: as above.
                    let work = unsafe { W::from_task(task, Some(NonNull::from(&mut local.cache))) };
                    return Err(PostError::OutOfMemory(work));
                }
            }
        }
        stats::add(&stats.sent, 1);
        Ok(())
    }

    fn spawn_from<W: IntoTask>(&self, me: usize, work: W) -> Result<(), PostError<W>> {
        if self.refuses_work() {
            return Err(PostError::Stopped(work));
        }
        // SAFETY: as in `post_from`.
        let local = unsafe { self.local(me) };
        let task = work.into_task(Some(&mut local.cache)).map_err(PostError::OutOfMemory)?;
        stats::add(&self.stats[me].spawned, 1);
        self.place_spawned(me, task);
        Ok(())
    }

    /// Places a task spawned or woken on core `me`: in its LIFO slot, to
    /// run next, waking nobody (`super::lifo`); the task it displaces joins
    /// the core's queue, whose surplus idle cores are offered at once.
    /// With [`Config::offer_spawns`], offered at once instead if some core
    /// is idle.
    ///
    /// [`Config::offer_spawns`]: super::Config::offer_spawns
    fn place_spawned(&self, me: usize, task: NonNull<Task>) {
        if self.config.offer_spawns && self.sleep.anyone_idle(me) {
            // SAFETY: the task is ours to give; steal lists have no sentinel.
            let _ = unsafe { self.steal[me].push(task) };
            stats::add(&self.stats[me].offered, 1);
            self.announce_for(me, 1);
            return;
        }
        // SAFETY: we are core `me`, the slot's owner; the task is ours.
        if let Some(previous) = unsafe { self.lifo[me].put(task) } {
            // SAFETY: as in `post_from`.
            let local = unsafe { self.local(me) };
            // SAFETY: the displaced task is ours.
            unsafe { local.queue.push_back(previous) };
            // A second spawn before the first ran: a fan-out, which idle
            // cores should share now, not when this task ends.
            super::worker::offer_surplus(self, me);
        }
    }

    /// Queues a scheduled fibre's task on core `me`, behind its other work;
    /// a pinned fibre's stays on `me`, others may be offered to idle cores.
    pub(crate) fn requeue_local(&self, me: usize, task: NonNull<Task>, pinned: bool) {
        if self.leaving[me].load(Relaxed) {
            // Leaving: the pool's other cores run it (pins to `me` lapse).
            self.inject(task, Some(me));
            return;
        }
        // SAFETY: we are core `me`, inside a task (the fibre's); the loop
        // holds no reference to its `Local` across it.
        let local = unsafe { self.local(me) };
        // SAFETY: the task is ours to give.
        unsafe {
            if pinned {
                local.pinned.push_back(task);
            } else {
                local.queue.push_back(task);
            }
        }
    }

    /// Whether the task running on core `me`, were it requeued now, would
    /// be the next one the core runs, with nothing looked at in between:
    /// nothing else is queued on the core, and its loop is not due to check
    /// its mailboxes, timers and flags (it does so every
    /// [`super::worker::FAIRNESS`] tasks). If so, the caller may go on in
    /// place of that requeue and the turn it would have taken, and this
    /// counts the turn.
    #[inline]
    pub(crate) fn continues_in_place(&self, me: usize) -> bool {
        // SAFETY: we are core `me`, inside a task; the loop holds no
        // reference to its `Local` across it.
        let local = unsafe { self.local(me) };
        let alone = local.queue.len() == 0 && !self.lifo[me].is_occupied() && local.pinned.len() == 0;
        if !alone || local.since_inbound + 1 >= super::worker::FAIRNESS {
            return false;
        }
        if self.stopped() || self.leaving[me].load(Relaxed) {
            return false;
        }
        local.since_inbound += 1;
        true
    }

    /// Takes the task core `me` would run next once its running task ends
    /// (the newest it spawned for itself, or else the oldest in its
    /// queue), if that is a fibre's, the core is not due to look at its
    /// mailboxes, timers and flags first, and `ready()` agrees: a strand
    /// about to leave the core hands it straight to a strand of that
    /// fibre. Counts the turn as the core's loop would.
    #[inline]
    pub(crate) fn take_next_fibre(&self, me: usize, ready: impl FnOnce() -> bool) -> Option<NonNull<Task>> {
        // SAFETY: we are core `me`, inside a task; the loop holds no
        // reference to its `Local` across it.
        let local = unsafe { self.local(me) };
        let slot = &self.lifo[me];
        let in_slot = slot.peek();
        let next = in_slot.or_else(|| local.queue.front())?;
        if !crate::strand::fibre::is_fibre_task(next) || local.since_inbound + 1 >= super::worker::FAIRNESS {
            return None;
        }
        if self.stopped() || self.leaving[me].load(Relaxed) || !ready() {
            return None;
        }
        if in_slot.is_some() {
            // Only this core puts, so the slot holds `next` or, if an idle
            // core stole it meanwhile, nothing.
            slot.take()?;
        } else {
            local.queue.pop_front();
        }
        local.since_inbound += 1;
        stats::add(&self.stats[me].tasks_run, 1);
        trace_point!(self, me, crate::trace::Event::TaskBegin);
        Some(next)
    }

    /// What core `me`'s loop does after each task: offers its surplus to
    /// idle cores.
    pub(crate) fn after_task(&self, me: usize) {
        super::worker::offer_surplus(self, me);
    }

    /// Queues the fibre of a strand that core `me` preempted at the back
    /// of the pool's turns, which every core takes from in order once it
    /// has nothing of its own: strands that never yield take turns on all
    /// the cores. A pinned fibre's stays on `me`.
    pub(crate) fn requeue_preempted(&self, me: usize, task: NonNull<Task>, pinned: bool, level: Priority) {
        if pinned || self.leaving[me].load(Relaxed) {
            self.requeue_local(me, task, pinned);
            return;
        }
        // SAFETY: the task is ours to give.
        unsafe { self.turns.push(task, level) };
        self.announce_for(me, 1);
    }

    /// The fibre whose turn is next, if any (see [`Shared::requeue_preempted`]).
    pub(crate) fn take_turn(&self) -> Option<NonNull<Task>> {
        self.turns.take()
    }

    /// Whether a preempted strand waits for its turn.
    pub(crate) fn has_turns(&self) -> bool {
        self.turns.any()
    }

    /// Sends a fibre that was just scheduled to core `to`, the core that
    /// last ran it: into the caller's queue if that is `to`, else through
    /// the fibre mailbox of the pair (closure mailbox if `pinned`).
    /// Returns false only if the pool refused it: it has stopped, and the
    /// caller is outside it.
    pub(crate) fn schedule_fibre(&self, task: NonNull<Task>, to: usize, pinned: bool) -> bool {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::defer();
        let lane = if pinned { CLOSURES } else { FIBRES };
        match self.worker_core() {
            Some(me) if me == to && pinned => self.requeue_local(me, task, true),
            Some(me) if me == to => self.place_spawned(me, task),
            Some(me) => {
                // SAFETY: we are core `me`; the task is ours to give.
                match unsafe { self.inbound.send(lane, me, to, task) } {
                    Sent::Queued => {}
                    Sent::Wake(core) => _ = self.wake_for(me, core),
                    // `to` left the pool: any core may run the fibre.
                    Sent::Refused(task) => self.inject(task, Some(me)),
                    // The mesh had no memory for a parcel: the direct list
                    // needs none, and keeps a pinned fibre on its core (a
                    // wake has no order to keep with the sender's posts).
                    // SAFETY: the task came back to us.
                    Sent::NoMemory(task) => match unsafe { self.inbound.send_from_outside(lane, to, task) } {
                        Sent::Queued => {}
                        Sent::Wake(core) => _ = self.wake_for(me, core),
                        Sent::Refused(task) | Sent::NoMemory(task) => self.inject(task, Some(me)),
                    },
                }
            }
            None => {
                // A pool winding down takes it (its strands must end); a
                // stopped one refuses it: its strands were abandoned with
                // the pool (`strand::scheduler::run_fibre`).
                return self.enter_from_outside(true, || {
                    // SAFETY: the task is ours to give.
                    match unsafe { self.inbound.send_from_outside(lane, to, task) } {
                        // `to` is awake, but may be busy for long: the
                        // fibre is announced like any new job, so a
                        // sleeping core is woken to take it from `to`'s
                        // mailbox if no core is idle (a strand woken by an
                        // interrupt should not wait for a long task).
                        Sent::Queued if !pinned => {
                            self.sleep.new_jobs(1, None, to + 1, ring, |_, _| ());
                        }
                        Sent::Queued => {}
                        Sent::Wake(core) => {
                            self.sleep.wake(core, ring);
                        }
                        Sent::Refused(task) | Sent::NoMemory(task) => self.inject(task, None),
                    }
                });
            }
        }
        true
    }

    /// Puts a task any core may run on the injector and announces it, from
    /// core `from` or (`None`) from outside the pool.
    pub(crate) fn inject(&self, task: NonNull<Task>, from: Option<usize>) {
        // SAFETY: the task is ours to give; the injector is never closed.
        let _ = unsafe { self.injector.push(task) };
        match from {
            Some(me) => self.announce_for(me, 1),
            None => self.sleep.new_jobs(1, None, 0, ring, |_, _| ()),
        }
    }

    /// Wakes `core` for core `me`, if it sleeps or is falling asleep: a
    /// wake-up of `me`'s, counted and traced. Returns whether it woke it.
    pub(crate) fn wake_for(&self, me: usize, core: usize) -> bool {
        let roused = self.sleep.rouse(core, ring);
        if let Some(roused) = roused {
            self.count_wakeup(me, core, roused);
        }
        roused.is_some()
    }

    /// Announces `jobs` new jobs that core `me` made for any core, waking
    /// sleepers if too few cores are idle (`crate::sleep`); the wake-ups
    /// are `me`'s, counted and traced.
    pub(crate) fn announce_for(&self, me: usize, jobs: usize) {
        self.sleep.new_jobs(jobs, Some(me), me + 1, ring, |core, roused| {
            self.count_wakeup(me, core, roused);
        });
    }

    fn count_wakeup(&self, me: usize, _core: usize, _roused: crate::sleep::Roused) {
        stats::add(&self.stats[me].wakeups, 1);
        // `_core` and `_roused` are read by the trace point alone.
        trace_point!(
            self,
            me,
            crate::trace::Event::Wakeup {
                core: _core as u32,
                claim: match _roused {
                    crate::sleep::Roused::Claimed { claim } => Some(claim),
                    crate::sleep::Roused::Nudged => None,
                },
            }
        );
    }

    /// The outside path: count the post in flight, check the state, make
    /// the task, `push` it, and uncount it. A push that refuses the task
    /// says why with the work left out; the work goes back with it.
    fn post_outside<W: IntoTask>(
        &self,
        work: W,
        push: impl FnOnce(NonNull<Task>) -> Result<(), PostError<()>>,
    ) -> Result<(), PostError<W>> {
        let mut work = Some(work);
        let mut result = Ok(());
        let entered = self.enter_from_outside(false, || {
            let work = work.take().expect("entered once");
            result = match work.into_task(None) {
                Ok(task) => push(task).map_err(|refused| {
                    // SAFETY: refused, so still ours; made on the heap.
                    refused.map(|()| unsafe { W::from_task(task, None) })
                }),
                Err(work) => Err(PostError::OutOfMemory(work)),
            };
        });
        match (entered, work) {
            (true, _) => result,
            (false, Some(work)) => Err(PostError::Stopped(work)),
            (false, None) => unreachable!("a refused entry does not run the push"),
        }
    }

    /// Runs `push` counted in `in_flight` if the pool is not stopped (and
    /// not while a quiescence check holds posters off); a pool winding
    /// down takes only a `fibre`. Returns whether it ran.
    ///
    /// The in-flight window is masked: a quiescence check waits for
    /// `in_flight` to drain, and a handler that interrupted this post and
    /// then waited for the check (below) would wait for itself. Waiting
    /// for a check to end happens outside the window, interrupts open.
    fn enter_from_outside(&self, fibre: bool, push: impl FnOnce()) -> bool {
        let mut push = Some(push);
        loop {
            let entered = crate::platform::masked(|| {
                self.in_flight.fetch_add(1, SeqCst);
                let entered = match self.state.load(SeqCst) {
                    READY | RUNNING => Some(true),
                    WINDING if fibre => Some(true),
                    STOPPED | WINDING => Some(false),
                    _ => None,
                };
                if entered == Some(true) {
                    (push.take().expect("pushed once"))();
                }
                self.in_flight.fetch_sub(1, SeqCst);
                entered
            });
            match entered {
                Some(entered) => return entered,
                None => {
                    while self.state.load(SeqCst) == QUIESCING {
                        spin_hint();
                    }
                }
            }
        }
    }

    /// A failure reached the pool with nobody to handle it: keep it (the
    /// first whole, others counted) for `run` or the domain's handle, and
    /// stop the pool, or, for a domain's pool, tear it down.
    pub(crate) fn fail(&self, failure: Option<Box<Failure>>) {
        if let Some(failure) = failure {
            crate::diag::info(format_args!("a pool fails: {failure}"));
            Failure::keep(&mut self.failure.lock(), failure);
        }
        if self.tears_down.load(SeqCst) {
            // Quiescence stops it once every strand has ended.
            self.closing.store(true, SeqCst);
            self.entries.cancel_all();
        } else {
            self.stop();
        }
    }

    /// A task (not a strand) panicked on the host: keep its payload for
    /// `run` unless a failure came first (then it is counted there), and
    /// only then stop the pool. The order matters: whatever sees the pool
    /// stopped (a refused post that panics in turn, a broken future) comes
    /// after this failure, so `run` raises the first one.
    #[cfg(feature = "std")]
    pub(crate) fn task_panicked(&self, payload: Box<dyn core::any::Any + Send>) {
        let unkept = {
            let mut failure = self.failure.lock();
            let mut panic = self.panic.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match (failure.as_mut(), panic.as_ref()) {
                (Some(first), _) => {
                    first.count_others(1);
                    Some(payload)
                }
                (None, Some(_)) => Some(payload),
                (None, None) => {
                    *panic = Some(payload);
                    None
                }
            }
        };
        // A payload's drop is user code: not under the locks.
        drop(unkept);
        self.stop();
    }

    /// Stops the pool: final. With strands alive it winds down first
    /// (module docs). Returns whether this call stopped it.
    pub(crate) fn stop(&self) -> bool {
        loop {
            let state = self.state.load(SeqCst);
            let next = match state {
                STOPPED | WINDING => return false,
                // A quiescence check ends soon, in `RUNNING` or `STOPPED`.
                QUIESCING => {
                    spin_hint();
                    continue;
                }
                RUNNING if self.live_strands.load(SeqCst) > 0 => WINDING,
                _ => STOPPED,
            };
            if self.state.compare_exchange(state, next, SeqCst, SeqCst).is_ok() {
                if next == WINDING {
                    self.entries.cancel_all();
                }
                self.sleep.wake_all(ring);
                self.actor_ends.stopped();
                return true;
            }
        }
    }

    /// A strand of this pool ended (it no longer counts as live); the last
    /// one ends a wind-down.
    pub(crate) fn strand_ended(&self) {
        if self.live_strands.fetch_sub(1, SeqCst) == 1
            && self.state.compare_exchange(WINDING, STOPPED, SeqCst, SeqCst).is_ok()
        {
            self.sleep.wake_all(ring);
        }
    }

    /// Called by a core that has just committed to sleep: if it is the last
    /// and nothing is queued anywhere, stop the pool, or, if strands still
    /// live with no deadline armed, look into a deadlock (module docs, and
    /// `super::deadlock`).
    ///
    /// Runs with interrupts masked: while the state is `QUIESCING`, a
    /// handler that posts (or wakes a strand) from outside waits for it,
    /// and must not do so on the core that holds it.
    pub(crate) fn check_quiescence(&self) {
        crate::platform::masked(|| self.check_quiescence_masked());
    }

    fn check_quiescence_masked(&self) {
        if self.winding_down() {
            self.abandon_stuck_strands();
            return;
        }
        if !self.stops_when_quiescent.load(Relaxed) || !self.looks_idle() || !self.may_settle() {
            return;
        }
        let deadlocked = self.with_posters_held(RUNNING, || {
            if self.looks_idle() && self.nothing_lives() {
                return (true, false);
            }
            (false, self.looks_idle() && self.may_settle() && !self.deadlock_pending.swap(true, SeqCst))
        });
        if deadlocked == Some(true) {
            self.post_deadlock_check();
        }
    }

    /// The second check of the module docs: moves the state `from` →
    /// `QUIESCING` (outside posters wait), lets the posts in flight land,
    /// and asks `decide` whether to stop. The state is then `STOPPED`
    /// (every core woken) or `from` again. Returns what `decide` returned
    /// beside that, or `None` if the state was not `from`.
    fn with_posters_held<R>(&self, from: u32, decide: impl FnOnce() -> (bool, R)) -> Option<R> {
        self.state.compare_exchange(from, QUIESCING, SeqCst, SeqCst).ok()?;
        self.wait_for_outside_posts();
        let (stop, value) = decide();
        if stop {
            self.state.store(STOPPED, SeqCst);
            self.sleep.wake_all(ring);
            self.actor_ends.stopped();
        } else {
            self.state.store(from, SeqCst);
        }
        Some(value)
    }

    /// Winding down, every core asleep, nothing queued and no deadline
    /// armed: the strands still alive cannot end, so the pool stops
    /// without them. The same two checks as for quiescence, with outside
    /// posters (here only woken fibres) held off between them.
    fn abandon_stuck_strands(&self) {
        let stuck = || self.looks_idle() && self.timers.is_empty();
        if stuck() && self.with_posters_held(WINDING, || (stuck(), ())).is_some() {
            let left = self.live_strands.load(SeqCst);
            if left > 0 && self.state.load(SeqCst) == STOPPED {
                crate::diag::warn(format_args!(
                    "a stopping pool abandoned {left} strands that could not end (shielded waits?)"
                ));
            }
        }
    }

    /// Whether an idle pool would settle now: stop (no strand lives), or
    /// be deadlocked (strands live, none has a deadline, nothing outside
    /// the pool may wake them, and no deadlock is being handled already).
    fn may_settle(&self) -> bool {
        self.nothing_lives()
            || (self.timers.is_empty()
                && self.outside_waits.load(SeqCst) == 0
                && !platform::interrupts_bound()
                && !self.deadlock_pending.load(SeqCst)
                && !super::owners::another_pool_runs(self.slots, self))
    }

    /// No strand and no async task lives: a pool with nothing queued
    /// would stop.
    fn nothing_lives(&self) -> bool {
        self.live_strands.load(SeqCst) == 0 && self.async_tasks.count() == 0
    }

    /// The checks of the module docs, in their order, but for the strands.
    fn looks_idle(&self) -> bool {
        let nudges = self.sleep.nudges();
        self.lists_empty()
            && self.sleep.counters().sleeping() == self.member_count()
            && self.sleep.nudges() == nudges
    }

    fn lists_empty(&self) -> bool {
        !self.injector.has_tasks()
            && !self.has_turns()
            && self.inbound.is_empty(self.worker_core().unwrap_or(0))
            && self.steal.iter().all(|s| !s.has_tasks())
            && self.lifo.iter().all(|slot| !slot.is_occupied())
            && !join::any_published(self)
    }

    /// Posts the deadlock check as a task, from the sleeping core that
    /// found the pool stuck: it runs on a woken core, outside the sleep
    /// protocol. Without memory for it, the pool stays as it is.
    fn post_deadlock_check(&self) {
        let Some(shared) = self.this.upgrade() else { return };
        match task::closure::Closure(move || shared.handle_deadlock()).into_task(None) {
            Ok(task) => self.inject(task, None),
            Err(_) => self.deadlock_pending.store(false, SeqCst),
        }
    }

    /// The deadlock check itself (`super::deadlock`): runs as a task on a
    /// core of the pool.
    fn handle_deadlock(&self) {
        let others_asleep = self.sleep.counters().sleeping() + 1 >= self.member_count();
        let stuck = others_asleep
            && self.lists_empty()
            && self.timers.is_empty()
            && !super::owners::another_pool_runs(self.slots, self)
            && !self.nothing_lives()
            && self.state.load(SeqCst) == RUNNING;
        let report = if stuck { Deadlock::of(self) } else { Deadlock::default() };
        // A strand that began to wait for a signal as the check started.
        let outside = report.waiting.iter().any(|w| w.reason == crate::strand::BlockReason::Signal);
        if (report.waiting.is_empty() && report.tasks == 0) || outside {
            // Something moved meanwhile, or no strand could be described.
            self.deadlock_pending.store(false, SeqCst);
            return;
        }
        match self.config.on_deadlock {
            OnDeadlock::Fail => crate::diag::error(format_args!("{report}; the pool fails")),
            OnDeadlock::Wait => crate::diag::warn(format_args!("{report}; the pool waits")),
        }
        *self.deadlock.lock() = Some(report.clone());
        if self.config.on_deadlock == OnDeadlock::Wait {
            // Reported once; `deadlock_pending` stays set.
            return;
        }
        Failure::keep(&mut self.failure.lock(), Box::new(Failure::deadlocked(report)));
        if self.deadlocks_failed.fetch_add(1, SeqCst) == 0 {
            // Cancel everything so the strands end and give their fibres
            // back; the pool stops at quiescence with the deadlock kept.
            self.closing.store(true, SeqCst);
            self.deadlock_pending.store(false, SeqCst);
            self.entries.cancel_all();
            self.async_tasks.cancel_all();
        } else {
            // Deadlocked again while cancelled (shielded waits): give up.
            self.stop();
        }
    }

    /// Waits until no outside post is between its state check and its push.
    pub(crate) fn wait_for_outside_posts(&self) {
        while self.in_flight.load(SeqCst) != 0 {
            spin_hint();
        }
    }

    /// Discards every task left in any list or local queue, on the calling
    /// core with `me`'s cache. Returns how many.
    ///
    /// # Safety
    ///
    /// No core is running this pool, and no outside post is in flight.
    pub(crate) unsafe fn discard_everything(&self, me: usize) -> u64 {
        let mut leftovers = TaskQueue::new();
        for core in 0..self.slots {
            // SAFETY: no core runs (contract).
            let local = unsafe { self.local(core) };
            if let Some(task) = self.lifo[core].take() {
                // SAFETY: taken from the slot, so ours.
                unsafe { leftovers.push_back(task) };
            }
            while let Some(task) = local.queue.pop_front().or_else(|| local.pinned.pop_front()) {
                // SAFETY: popped, so ours.
                unsafe { leftovers.push_back(task) };
            }
        }
        while let Some(task) = self.take_turn() {
            // SAFETY: taken from the turns, so ours.
            unsafe { leftovers.push_back(task) };
        }
        // SAFETY: no core runs (contract).
        unsafe { self.inbound.take_everything(&mut leftovers) };
        for list in self.steal.iter().chain(core::iter::once(&self.injector)) {
            // SAFETY: a taken chain is ours.
            unsafe { leftovers.append_reversed(list.take_all()) };
        }
        let count = leftovers.len() as u64;
        // SAFETY: no core runs, so `me`'s local is ours; the tasks are ours.
        let cache = NonNull::from(&mut unsafe { self.local(me) }.cache);
        while let Some(task) = leftovers.pop_front() {
            // SAFETY: the task is ours; `cache` belongs to this pool.
            unsafe { task::Task::call(task, Action::Discard, cache) };
        }
        // Async tasks waiting for a wake are in no queue: the pool's list
        // has them. With the queues empty, nothing else polls them.
        // SAFETY: no core runs and no post is in flight (contract).
        count + unsafe { self.async_tasks.tear_down() } as u64
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // A pool built but never run may still hold tasks posted to it.
        if self.locals.len() < self.slots {
            return; // unwinding out of `new`
        }
        // Nobody can read the counters any more, so the count is not kept.
        // SAFETY: `&mut self`: nothing else touches the pool.
        unsafe { self.discard_everything(0) };
    }
}

/// Records `event` for the core an interrupt handler runs on, if that core
/// works for a pool (`crate::trace::interrupt_begins`): an interrupt
/// handler is no worker, but the core it interrupted may be one.
#[cfg(feature = "trace")]
pub(crate) fn trace_interrupted(event: crate::trace::Event) {
    if let Some((shared, core)) = current::interrupted_worker() {
        shared.trace.record(core, event);
    }
}

/// Records `event` for the calling core, if it is a worker of a pool
/// (`trace_here!`).
#[cfg(feature = "trace")]
pub(crate) fn trace_here(event: crate::trace::Event) {
    current::with(|worker| {
        if let Some(worker) = worker {
            // SAFETY: a worker's pool outlives its time as the current
            // worker; the reference ends with this call.
            unsafe { &*worker.shared }.trace.record(worker.core, event);
        }
    });
}
