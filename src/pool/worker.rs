//! What a core of a pool does (docs/design.md, "The threading model").
//!
//! 1. its LIFO slot, its local queue, then the tasks from its mailboxes;
//! 2. drain every inbound mailbox (one swap each), reversing each batch so
//!    every sender's tasks run in the order they were posted; with the
//!    mesh, forward what passes through to the next hops;
//! 3. its own steal list, then the injector, then the next preempted
//!    strand's turn (`crate::preempt`);
//! 4. the pool's poller, if any (one core at a time);
//! 5. steal: take a busy core's whole steal list, or else the woken
//!    fibres waiting in a busy core's fibre mailboxes (both found by
//!    their hints, `crate::protocol::core_hints`), or else a task that
//!    sat in one of a window of LIFO slots, or else a job some core's
//!    `join` published in one of a window of join slots (each window
//!    moves on every round: `JOIN_WINDOW`);
//! 6. nothing: the sleep protocol (`crate::sleep`), one round per call.
//!
//! Step 1 yields to step 2 every [`FAIRNESS`] tasks, so a core that keeps
//! spawning for itself still serves its mailboxes; and after a drain a
//! preempted strand's turn comes first every other time, and the queue's
//! head comes before the LIFO slot if it has waited a whole drain
//! ([`after_drain`]), so nothing waits on a busy core for ever. After each
//! task, a core with at least two stealable tasks offers the older half on
//! its steal list if any core is idle or asleep.
//!
//! # Leaving the pool
//!
//! A core asked to leave (a resize) does so between tasks, never in the
//! middle of one, and loses nothing and runs nothing twice ([`leave`]):
//!
//! 1. with the mesh, it leaves the routes (`crate::mailbox::inbound`): what was on
//!    its way through it, or to it, moves to the receivers' direct lists;
//! 2. it closes its inbound mailboxes, keeping what they held: from then on
//!    a post to it is refused, with the closure back to the sender, and a
//!    woken fibre that preferred it goes to the injector instead;
//! 3. it runs every task addressed to it (its pinned queue); what those
//!    post to it is refused like any other post, so a task that keeps
//!    posting to its own core cannot hold it; a strand pinned to it that
//!    yields or is woken later runs on another core of the pool;
//! 4. it hands everything any core may run (its LIFO slot, its queue, its
//!    steal list) to the injector, and announces it;
//! 5. only then does it stop being a member, so while it still counts as
//!    one the pool cannot look quiescent (it is not asleep).

use super::current::{self, Worker};
use super::per_core::{Membership, PerCore};
use super::shared::Shared;
use super::stats;
use super::stop::STOPPED;
use crate::atomics::Ordering::SeqCst;
use crate::atomics::unmodelled::Ordering::{Acquire, Relaxed, Release};
use crate::platform::instant::Instant;
use crate::platform::{self, Depth};
use crate::sleep::{Outcome, Sleeper};
use crate::task::{Action, Task};
use core::ptr::NonNull;

/// Tasks a core runs from its own queues before it looks at its mailboxes.
pub(super) const FAIRNESS: u32 = 61;

/// Runs core `me`'s loop for `shared` until the pool stops.
pub(crate) fn work(shared: &Shared, me: usize) {
    let worker = Worker { shared, core: me };
    // SAFETY: `worker` outlives the guard, dropped at the end of this call.
    let _entered = unsafe { current::enter(&worker) };
    work_entered(shared, me);
    // SAFETY: we are core `me` and hold no other reference to its state.
    unsafe { shared.local(me) }.cache.flush();
}

/// The loop, for a core already entered as `me`'s worker (`Pool::run`'s
/// caller runs `main` first). On bare metal it runs under the catch point
/// that contains a failed poll (`super::contain`).
pub(crate) fn work_entered(shared: &Shared, me: usize) {
    // The loop holds its core's own-lists section open between tasks and
    // while it sleeps (`super::own_lists`); a loop restarted after a
    // failed poll opens it again.
    let open_and_work = || {
        let _lists = shared.own_lists(me);
        work_loop(Here::new(shared, me));
    };
    #[cfg(not(feature = "std"))]
    super::contain::run_loop(me, open_and_work);
    #[cfg(feature = "std")]
    open_and_work();
}

/// The loop's core and its parts of the pool, found once, not on every
/// task: the loop runs between every two tasks.
#[derive(Clone, Copy)]
struct Here<'a> {
    shared: &'a Shared,
    me: usize,
    part: &'a PerCore,
    membership: &'a Membership,
}

impl<'a> Here<'a> {
    fn new(shared: &'a Shared, me: usize) -> Self {
        Self { shared, me, part: &shared.cores[me], membership: &shared.membership[me] }
    }

    /// Whether the loop should end or leave, before its next task.
    #[inline(always)]
    fn done(self) -> bool {
        self.shared.stopped() || self.membership.leaving.load(Relaxed)
    }
}

fn work_loop(here: Here<'_>) {
    let Here { shared, me, .. } = here;
    loop {
        if shared.stopped() {
            return;
        }
        if here.membership.leaving.load(Relaxed) {
            leave(here);
            return;
        }
        if let Some(task) = find_work(here) {
            run_task(here, task);
            continue;
        }
        let mut idle = shared.sleep.start_looking(me);
        let mut watched = false;
        let mut silent_watcher = false;
        let found = loop {
            if here.done() {
                break None;
            }
            if let Some(task) = find_work(here) {
                break Some(task);
            }
            let mut sleeper = CoreSleeper {
                shared,
                me,
                slept_at: None,
                deep: false,
                watched: false,
                silent_watcher: false,
                #[cfg(feature = "trace")]
                claim: None,
            };
            if shared.sleep.no_work_found(&mut idle, me, &mut sleeper) == Outcome::Slept {
                if sleeper.deep {
                    stats::add(&here.part.stats.deep_sleeps, 1);
                }
                trace_point!(
                    shared,
                    me,
                    crate::trace::event::TraceEvent::Woke { deep: sleeper.deep, claim: sleeper.claim }
                );
            }
            watched |= sleeper.watched;
            silent_watcher |= sleeper.silent_watcher;
        };
        shared.sleep.work_found(idle);
        if silent_watcher {
            shared.end_silent_watch(me);
        }
        if let Some(task) = found {
            if watched && shared.timers.armed() {
                hand_off_watch(shared, me);
            }
            run_task(here, task);
        }
    }
}

/// Leaves the pool, between tasks (module docs, "Leaving the pool").
fn leave(here: Here<'_>) {
    let Here { shared, me, .. } = here;
    // Out of the mesh first: what was on its way through `me` goes to the
    // direct lists, its own share with it, which the close below takes.
    shared.rebuild_routes(Some(me));
    {
        // SAFETY: we are core `me`, between tasks; the reference ends here.
        let local = unsafe { shared.local(me) };
        shared.close_mailboxes(me, |[closures, fibres]| {
            // SAFETY: closing took these chains, so they are ours.
            unsafe {
                local.pinned.append_reversed(closures);
                local.queue.append_reversed(fibres);
            }
        });
    }
    // SAFETY: as above; the reference ends before the task runs.
    while let Some(task) = unsafe { shared.local(me) }.pinned.pop_front() {
        run_task(here, task);
    }
    // SAFETY: as above.
    let local = unsafe { shared.local(me) };
    local.since_inbound = 0;
    local.cache.flush();
    let mut rest = crate::task::queue::TaskQueue::new();
    rest.append(&mut local.queue);
    shared.take_offered(me, &mut rest);
    while let Some(task) = rest.pop_front() {
        shared.inject(task, Some(me));
    }
    // Only now: still a member while it handed its work on, the pool
    // could not look quiescent meanwhile (module docs, step 5).
    shared.end_membership(me);
}

#[inline(always)]
fn run_task(here: Here<'_>, task: NonNull<Task>) {
    let Here { shared, me, part, .. } = here;
    // SAFETY: we are core `me`; the reference ends with this statement,
    // before the task runs.
    let cache = NonNull::from(&mut unsafe { part.local() }.cache);
    if shared.winding_down() && !shared.strands.runs_strands(task) {
        // Winding down runs only strands (`super::shared`, "Stopping").
        stats::add(&part.stats.discarded, 1);
        // SAFETY: the task was taken from one of our lists, so it is ours.
        shared.own_lists_closed_during(me, || unsafe { Task::call(task, Action::Discard, cache) });
        return;
    }
    stats::add(&part.stats.tasks_run, 1);
    trace_point!(shared, me, crate::trace::event::TraceEvent::TaskBegin);
    #[cfg(feature = "std")]
    {
        let call = core::panic::AssertUnwindSafe(|| {
            // SAFETY: the task was taken from one of our lists, so it is ours.
            unsafe { Task::call(task, Action::Run, cache) }
        });
        if let Err(payload) = shared.own_lists_closed_during(me, || std::panic::catch_unwind(call)) {
            shared.task_panicked(payload, || {});
        }
    }
    #[cfg(not(feature = "std"))]
    // SAFETY: the task was taken from one of our lists, so it is ours.
    shared.own_lists_closed_during(me, || unsafe { Task::call(task, Action::Run, cache) });
    trace_point!(shared, me, crate::trace::event::TraceEvent::TaskEnd);
    offer_surplus(shared, me);
}

/// Puts the older half of the stealable queue on the steal list if some
/// core is idle or asleep and the list is empty; wakes sleepers if no core
/// is idle to take it. Inlined as far as its first test: a core with fewer
/// than two tasks queued (most switches) has nothing to offer.
#[inline(always)]
pub(super) fn offer_surplus(shared: &Shared, me: usize) {
    // SAFETY: we are core `me`, between tasks; the reference ends here.
    if unsafe { shared.local(me) }.queue.len() >= 2 {
        offer_surplus_further(shared, me);
    }
}

#[inline(never)]
fn offer_surplus_further(shared: &Shared, me: usize) {
    // SAFETY: we are core `me`, between tasks.
    let local = unsafe { shared.local(me) };
    // SAFETY: as above.
    let core = unsafe { shared.own_core(me) };
    if core.steal.has_tasks() || !shared.sleep.anyone_idle(me) {
        return;
    }
    let Some((newest, oldest, count)) = local.queue.split_front_half() else { return };
    // SAFETY: the chain is ours; steal lists have no sentinel.
    let _ = unsafe { core.steal.push_chain(newest, oldest) };
    // Raised before the announcement: a core that falls asleep after
    // missing the hint is woken by it (`crate::sleep`).
    shared.stealable.raise(me);
    let stats = &core.stats;
    stats::add(&stats.offered, count as u64);
    shared.announce_for(me, count);
}

/// Step 1 of the loop (module docs), inlined into it: the core's own
/// queues, which is where a busy core finds nearly all its work; the rest
/// is out of line, so the common case saves no registers for it.
#[inline(always)]
fn find_work(here: Here<'_>) -> Option<NonNull<Task>> {
    // SAFETY: we are core `me`, between tasks; the reference ends here.
    let local = unsafe { here.part.local() };
    if local.since_inbound < FAIRNESS
        && let Some(task) =
            here.part.lifo.take().or_else(|| local.take_from_queue()).or_else(|| local.pinned.pop_front())
    {
        local.since_inbound += 1;
        return Some(task);
    }
    find_work_further(here.shared, here.me)
}

/// Steps 2 to 5 of the loop (module docs).
#[inline(never)]
fn find_work_further(shared: &Shared, me: usize) -> Option<NonNull<Task>> {
    gather(shared, me);
    let first = after_drain(shared, me);
    if first.turn
        && let Some(task) = shared.take_turn()
    {
        return Some(task);
    }
    // SAFETY: we are core `me`, between tasks; this reference is not held
    // across the poller (user code) below.
    let local = unsafe { shared.local(me) };
    // SAFETY: we are core `me`.
    let core = unsafe { shared.own_core(me) };
    let own = local.pinned.pop_front().or_else(|| match first.queue {
        true => local.take_from_queue().or_else(|| core.lifo.take()),
        false => core.lifo.take().or_else(|| local.take_from_queue()),
    });
    if let Some(task) = own {
        return Some(task);
    }
    if let Some(task) = shared.take_turn() {
        return Some(task);
    }
    let victim_start = next_random(&mut local.rng) as usize;
    if let Some(poll) = shared.config.poller
        && !shared.polling.swap(true, Acquire)
    {
        let made_work = shared.own_lists_closed_during(me, poll);
        shared.polling.store(false, Release);
        if made_work {
            return find_work_further(shared, me);
        }
    }
    steal(shared, me, victim_start)
}

/// What goes first after a drain ([`after_drain`]).
pub(super) struct First {
    /// A preempted strand's turn, before the core's own queues.
    pub(super) turn: bool,
    /// The queue's head, before the LIFO slot.
    pub(super) queue: bool,
}

/// What goes first after this drain, so that no work waits on a busy core
/// for ever (module docs). Drains alternate between offering a preempted
/// strand's turn first and the core's own queues first; and the queue's
/// head goes before the LIFO slot if the queue held tasks at the last
/// drain and none was taken from it since.
///
/// Between drains the slot comes first, so two strands that keep waking
/// each other through it (a parent joining child after child) would
/// otherwise hold the queue off for ever on a core that no thief helps;
/// and preempted strands, which wait in the turns, would wait behind both.
/// With this, the queue's head and the next turn each wait at most a few
/// drains of `FAIRNESS` tasks. The slot keeps its place otherwise: a
/// strand that yields is requeued at the queue's back, and the strand it
/// woke through the slot must still go before it.
pub(super) fn after_drain(shared: &Shared, me: usize) -> First {
    // SAFETY: we are core `me`, between tasks or inside one; the reference
    // ends here.
    let local = unsafe { shared.local(me) };
    let first = First { turn: local.turn_first, queue: local.queue_waited && !local.queue_served };
    local.turn_first = !first.turn;
    local.queue_waited = local.queue.len() > 0;
    local.queue_served = false;
    first
}

/// Steps 2 and 3 of the loop (module docs) up to the turns, as far as
/// they move work into core `me`'s own queues: expires deadlines, drains
/// the mailboxes, and if that brought nothing, takes back the core's steal
/// list, or else the injector. Also called by a strand the core preempted,
/// before it hands the core on (`Shared::take_fibre_after_preemption`):
/// the loop holds no reference to the core's state across a task.
pub(super) fn gather(shared: &Shared, me: usize) {
    // Deadlines: waking a strand may queue its fibre here, so no reference
    // to our `Local` is live across this.
    shared.timers.expire();
    // SAFETY: we are core `me`, between tasks or inside one; the reference
    // ends here.
    let local = unsafe { shared.local(me) };
    // SAFETY: we are core `me`.
    let core = unsafe { shared.own_core(me) };
    local.since_inbound = 0;
    drain_inbound::<false>(shared, me, local);
    if local.pinned.len() > 0 || local.queue.len() > 0 || core.lifo.is_occupied() {
        return;
    }
    shared.stealable.lower(me);
    // SAFETY: a taken chain is ours.
    if unsafe { local.queue.append_reversed(core.steal.take_all()) } > 0 {
        return;
    }
    // SAFETY: a taken chain is ours.
    let injected = unsafe { local.queue.append_reversed(shared.injector.take_all()) };
    if injected > 0 {
        stats::add(&core.stats.injected, injected as u64);
        trace_point!(shared, me, crate::trace::event::TraceEvent::Injected { tasks: injected as u32 });
    }
}

/// Drains core `me`'s mailboxes: closures into its pinned queue, fibres
/// into its stealable queue; with the mesh, forwards what passes through.
/// With `ARM`, leaves the wake sentinel in each. Returns whether work came
/// in, or, arming, was found coming. `ARM` is a constant so that each
/// copy keeps only its own take (a runtime flag cost a test per list).
fn drain_inbound<const ARM: bool>(shared: &Shared, me: usize, local: &mut super::per_core::Local) -> bool {
    // SAFETY: we are core `me`.
    let stats = &unsafe { shared.own_core(me) }.stats;
    let wake = |core: usize| _ = shared.wake_for(me, core);
    // SAFETY: we are core `me`.
    let took = unsafe { shared.inbound.drain(me, &mut local.pinned, &mut local.queue, ARM, wake) };
    stats::add(&stats.received, took.received as u64);
    if took.received > 0 {
        trace_point!(shared, me, crate::trace::event::TraceEvent::Drained { tasks: took.received as u32 });
    }
    stats::add(&stats.forwarded, took.forwarded as u64);
    took.received > 0 || took.busy
}

fn steal(shared: &Shared, me: usize, start: usize) -> Option<NonNull<Task>> {
    let start = start % shared.slots;
    for victim in shared.stealable.raised_from(start) {
        if victim == me {
            continue;
        }
        shared.stealable.lower(victim);
        // SAFETY: we are core `me`, between tasks.
        let local = unsafe { shared.local(me) };
        // SAFETY: a taken chain is ours.
        let stolen = unsafe { local.queue.append_reversed(shared.cores[victim].steal.take_all()) };
        if stolen > 0 {
            count_stolen(shared, me, Some(victim), stolen);
            return local.queue.pop_front();
        }
    }
    if let Some(task) = steal_woken_fibres(shared, me, start) {
        return Some(task);
    }
    if !others_asleep(shared)
        && let Some((victim, task)) = steal_from_lifo_slots(shared, me)
    {
        count_stolen(shared, me, Some(victim), 1);
        return Some(task);
    }
    // Join slots even with every other core asleep: a core may sleep with
    // a job published in its slot, by a strand that then blocked inside
    // its own half of the join.
    // SAFETY: we are core `me`, between tasks; the reference ends with the
    // look, which runs no task.
    let window = &mut unsafe { shared.local(me) }.join_window;
    let job = shared.take_published_job_in_window(me, window)?;
    count_stolen(shared, me, None, 1);
    Some(super::fork_join::as_task(job))
}

/// Whether every other core of the pool is counted asleep, in which case
/// no LIFO slot holds a task for a thief: a core counts itself asleep only
/// after finding its own slot empty, and runs no task, so puts nothing
/// there, until it is off the count again (its waker, or itself, takes
/// it off before it leaves the sleep protocol). The LIFO slots are the one
/// steal an idle round reads a window of cores for (the steal lists and
/// woken fibres have summary words); with the others asleep it reads the
/// sleep counters instead, which change only when a core sleeps or wakes.
fn others_asleep(shared: &Shared) -> bool {
    shared.sleep.counters().sleeping() + 1 >= shared.member_count()
}

/// Counts `tasks` tasks core `me` stole, from core `from` or (`None`) from
/// a join slot, and traces it (`from` is for the trace alone).
#[inline]
#[cfg_attr(not(feature = "trace"), allow(unused_variables))]
fn count_stolen(shared: &Shared, me: usize, from: Option<usize>, tasks: usize) {
    stats::add(&shared.cores[me].stats.stolen, tasks as u64);
    trace_point!(
        shared,
        me,
        crate::trace::event::TraceEvent::Stole { from: from.map(|core| core as u32), tasks: tasks as u32 }
    );
}

/// Takes the woken fibres waiting in another core's fibre mailboxes: a
/// fibre prefers the core that last ran it, but that core may be busy with
/// a long task while this one idles (a strand whose sleep ended would wait
/// for it). Never takes from an armed (sleeping) or closed mailbox.
fn steal_woken_fibres(shared: &Shared, me: usize, start: usize) -> Option<NonNull<Task>> {
    for victim in shared.inbound.fibres_may_wait_from(start % shared.slots).filter(|&victim| victim != me) {
        let Some(chain) = shared.inbound.steal_fibres(victim) else { continue };
        // SAFETY: we are core `me`, between tasks.
        let local = unsafe { shared.local(me) };
        // SAFETY: a stolen chain is ours.
        let stolen = unsafe { local.queue.append_reversed(Some(chain)) };
        count_stolen(shared, me, Some(victim), stolen);
        return local.queue.pop_front();
    }
    None
}

/// Takes a task from another core's LIFO slot if it has sat there since
/// this core's previous look (`crate::protocol::lifo_slot`): long enough for the strand
/// that spawned or woke it to have blocked, had it been about to.
fn steal_from_lifo_slots(shared: &Shared, me: usize) -> Option<(usize, NonNull<Task>)> {
    // SAFETY: we are core `me`, between tasks; the reference ends here.
    let watch = &mut unsafe { shared.local(me) }.lifo_watch;
    watch.look(
        me,
        shared.slots,
        |victim| shared.cores[victim].lifo.peek(),
        |victim, task| shared.cores[victim].lifo.steal_if_seen(task),
    )
}

/// Core `me` watched the deadlines while it slept and now has work: wakes
/// another sleeping core, which watches when it sleeps again (`timers`).
fn hand_off_watch(shared: &Shared, me: usize) {
    let cores = shared.slots;
    let mut others = (1..cores).map(|offset| (me + offset) % cores).filter(|&core| shared.is_member(core));
    let _ = others.any(|core| shared.wake_for(me, core));
}

/// xorshift32: cheap, and good enough to spread thieves over victims.
fn next_random(state: &mut u32) -> u32 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    x
}

/// The sleep protocol's view of a core (see `crate::sleep::Sleeper`).
struct CoreSleeper<'a> {
    shared: &'a Shared,
    me: usize,
    slept_at: Option<Instant>,
    deep: bool,
    /// Whether it watched the deadlines in a sleep of this round.
    watched: bool,
    /// Whether it became the pool's watcher for silent cores in a sleep
    /// of this round (`super::silent`).
    silent_watcher: bool,
    /// The claim that ended its sleep, if a waker's did.
    #[cfg(feature = "trace")]
    claim: Option<u32>,
}

impl Sleeper for CoreSleeper<'_> {
    fn arm_inbound(&mut self) -> bool {
        let shared = self.shared;
        // SAFETY: we are core `me`, between tasks.
        let local = unsafe { shared.local(self.me) };
        local.cache.flush();
        drain_inbound::<true>(shared, self.me, local)
    }

    fn has_injected_jobs(&self) -> bool {
        self.shared.injector.has_tasks() || self.shared.has_turns()
    }

    fn should_wake(&self) -> bool {
        let shared = self.shared;
        // SAFETY: we are core `me`, between tasks.
        let queued = unsafe { shared.queued_in_idle_wait(self.me) };
        queued
            || shared.state.load(SeqCst) == STOPPED
            || shared.membership[self.me].leaving.load(SeqCst)
            || shared.inbound.has_work(self.me)
            || shared.timers.due()
    }

    #[cfg(feature = "trace")]
    fn claimed(&mut self, claim: u32) {
        self.claim = Some(claim);
    }

    fn between_rounds(&mut self, round: u32) {
        #[cfg(feature = "std")]
        crate::platform::host::between_search_rounds(round);
        #[cfg(not(feature = "std"))]
        let _ = round;
        #[cfg(not(feature = "std"))]
        core::hint::spin_loop();
    }

    fn committed(&mut self) {
        // SAFETY: we are core `me`, between tasks.
        unsafe { self.shared.local(self.me) }.cache.trim();
        stats::add(&self.shared.cores[self.me].stats.sleeps, 1);
        trace_point!(self.shared, self.me, crate::trace::event::TraceEvent::Slept);
        self.slept_at = Some(Instant::now());
        self.shared.check_quiescence();
        self.shared.begin_quiet_watch(self.me);
        self.silent_watcher |= self.shared.begin_silent_watch(self.me);
    }

    /// Waits in the light tier, then the deep one; the timer watcher wakes
    /// at the earliest deadline too (`crate::timers`).
    fn wait(&mut self) {
        let timers = &self.shared.timers;
        let slept_at = *self.slept_at.get_or_insert_with(Instant::now);
        let deep_at = slept_at + self.shared.config.deep_idle_after;
        let mut timer = timers.watch(self.me);
        if let Some(quiet) = self.shared.quiet_deadline(self.me) {
            timer = Some(timer.map_or(quiet, |timer| timer.min(quiet)));
        }
        if self.silent_watcher
            && let Some(look) = self.shared.silent_watch_deadline(self.me)
        {
            timer = Some(timer.map_or(look, |timer| timer.min(look)));
        }
        let (depth, until) = if !self.deep && Instant::now() < deep_at {
            (Depth::Light, Some(timer.map_or(deep_at, |timer| timer.min(deep_at))))
        } else {
            self.deep = true;
            (Depth::Deep, timer)
        };
        // SAFETY: we are core `me`, in its loop's sleep, holding no
        // reference to its private state.
        unsafe { self.shared.wait_idle(self.me, || platform::wait_for_event(depth, until)) };
        self.watched |= timers.unwatch(self.me);
        self.shared.quiet_woke(self.me);
        if self.silent_watcher {
            self.shared.silent_watch_woke(self.me);
        }
    }
}
