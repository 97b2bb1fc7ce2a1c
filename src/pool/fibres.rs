//! Scheduling fibres: a woken strand's fibre goes back to the core that
//! last ran it (its fibre mailbox, or the core's own queue), a preempted
//! strand's fibre joins the pool's turns, and a strand that leaves its core
//! may hand it straight to the next fibre's strand (`crate::strand`'s
//! `hand_off`), with the loop's bookkeeping done here.

use super::preempted::Turn;
use super::shared::{Shared, ring};
use super::stats;
use crate::mailbox::inbound::{CLOSURES, Delivery, FIBRES};
use crate::task::Task;
use core::ptr::NonNull;

/// What a preempted strand's core runs next, if not what its loop finds
/// (`Shared::take_fibre_after_preemption`).
pub(crate) enum AfterPreemption {
    /// This fibre's task, taken.
    Next(NonNull<Task>),
    /// The preempted strand's own fibre: the strand goes on, with a fresh
    /// slice.
    Same,
}

impl Shared {
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
        let _lists = self.own_lists(me);
        // SAFETY: per the contract.
        let local = unsafe { self.local(me) };
        // SAFETY: per the contract.
        let core = unsafe { self.own_core(me) };
        core.lifo.is_occupied()
            || local.queue.len() > 0
            || local.pinned.len() > 0
            || self.inbound.has_work(me)
            || core.steal.has_tasks()
            || self.has_turns()
            || self.injector.has_tasks()
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
        let _lists = self.own_lists(me);
        // SAFETY: we are core `me`, inside a task; the loop holds no
        // reference to its `Local` across it.
        let local = unsafe { self.local(me) };
        // SAFETY: as above.
        let core = unsafe { self.own_core(me) };
        let alone = local.queue.len() == 0 && !core.lifo.is_occupied() && local.pinned.len() == 0;
        if !alone || local.since_inbound + 1 >= super::worker::FAIRNESS {
            return false;
        }
        if self.stopped() || self.is_leaving(me) {
            return false;
        }
        local.since_inbound += 1;
        true
    }

    /// Takes the task core `me` would run next once its running task ends
    /// (the newest it spawned for itself, or else the oldest in its
    /// queue), if `is_fibre` says it is a fibre's, the core is not due to
    /// look at its mailboxes, timers and flags first, and `ready()` agrees:
    /// a strand about to leave the core hands it straight to a strand of
    /// that fibre. Counts the turn as the core's loop would.
    #[inline]
    pub(crate) fn take_next_fibre(
        &self,
        me: usize,
        is_fibre: impl FnOnce(NonNull<Task>) -> bool,
        ready: impl FnOnce() -> bool,
    ) -> Option<NonNull<Task>> {
        let _lists = self.own_lists(me);
        // SAFETY: we are core `me`, inside a task; the loop holds no
        // reference to its `Local` across it.
        let local = unsafe { self.local(me) };
        // SAFETY: as above.
        let core = unsafe { self.own_core(me) };
        let slot = &core.lifo;
        let in_slot = slot.peek();
        let next = in_slot.or_else(|| local.queue.front())?;
        if !is_fibre(next) || local.since_inbound + 1 >= super::worker::FAIRNESS {
            return None;
        }
        if self.stopped() || self.is_leaving(me) || !ready() {
            return None;
        }
        if in_slot.is_some() {
            // Only this core puts, so the slot holds `next` or, if an idle
            // core stole it meanwhile, nothing.
            slot.take()?;
        } else {
            local.take_from_queue();
        }
        local.since_inbound += 1;
        stats::add(&core.stats.tasks_run, 1);
        trace_point!(self, me, crate::trace::event::TraceEvent::TaskBegin);
        Some(next)
    }

    /// For a strand of level `level` that core `me` preempted: takes the
    /// task the core's loop would run next, if `is_fibre` says it is a
    /// fibre's and `ready()` agrees, so that the strand hands the core
    /// straight to it rather than through the loop; or says that the loop
    /// would run the strand's own fibre again ([`AfterPreemption::Same`]).
    /// The order is the loop's (`super::worker`): its own queues, as for
    /// any hand-off ([`Shared::take_next_fibre`]), unless they are empty or
    /// due; else, once deadlines, its mailboxes, its steal list and the
    /// injector are gathered as the loop would, what the loop takes after
    /// a drain (`super::worker::after_drain`), with the next turn by the
    /// round, in which the strand's own turn counts. `None` leaves the rest
    /// to the loop. Counts the turn as the loop would.
    // Inlined into the preemption's hand-off, its one real caller: the
    // call, its register saves and the checks it repeats across the call
    // were 17-25 instructions of every preemption (`benches/bare-metal`).
    #[inline(always)]
    pub(crate) fn take_fibre_after_preemption(
        &self,
        me: usize,
        level: u8,
        is_fibre: impl FnOnce(NonNull<Task>) -> bool,
        ready: impl FnOnce() -> bool,
    ) -> Option<AfterPreemption> {
        let _lists = self.own_lists(me);
        // SAFETY: we are core `me`.
        let core = unsafe { self.own_core(me) };
        let slot = &core.lifo;
        // SAFETY: we are core `me`, inside a task; the loop holds no
        // reference to its `Local` across it. Each reference below ends
        // before `gather` or `take_next_fibre`, which take their own.
        let local = unsafe { self.local(me) };
        let own_queues = slot.is_occupied() || local.queue.len() > 0 || local.pinned.len() > 0;
        if own_queues && local.since_inbound < super::worker::FAIRNESS {
            return self.take_next_fibre(me, is_fibre, ready).map(AfterPreemption::Next);
        }
        if self.stopped() || self.is_leaving(me) || !ready() {
            return None;
        }
        super::worker::gather(self, me);
        // After a drain, as the loop does: every other time the next turn
        // first if others wait (the round counts this strand's own), then
        // its pinned queue, its slot and its queue (the queue first if its
        // head waited a whole drain), then the turns.
        let first = super::worker::after_drain(self, me);
        let turn_first = first.turn && self.has_turns();
        let turn = || match self.preempted.take_beside(level) {
            Turn::Other(task) => AfterPreemption::Next(task),
            Turn::Own | Turn::None => AfterPreemption::Same,
        };
        // SAFETY: as above.
        let local = unsafe { self.local(me) };
        let in_slot = slot.peek();
        let from_queue = in_slot.is_none() || (first.queue && local.queue.len() > 0);
        let own = if from_queue { local.queue.front() } else { in_slot };
        let next = match local.pinned.front().or(own) {
            _ if turn_first => turn(),
            None => turn(),
            Some(task) if !is_fibre(task) => return None,
            Some(_) if local.pinned.len() > 0 => AfterPreemption::Next(local.pinned.pop_front()?),
            Some(_) if from_queue => AfterPreemption::Next(local.take_from_queue()?),
            // Only this core puts, so the slot holds the task or, if an
            // idle core stole it meanwhile, nothing.
            Some(_) => AfterPreemption::Next(slot.take()?),
        };
        local.since_inbound += 1;
        if let AfterPreemption::Next(_) = next {
            stats::add(&core.stats.tasks_run, 1);
            trace_point!(self, me, crate::trace::event::TraceEvent::TaskBegin);
        }
        Some(next)
    }

    /// What core `me`'s loop does after each task: offers its surplus to
    /// idle cores.
    pub(crate) fn after_task(&self, me: usize) {
        super::worker::offer_surplus(self, me);
    }

    /// Queues the fibre of a strand that core `me` preempted at the back
    /// of the pool's turns, which every core takes from in order once it
    /// has nothing of its own, and at every other drain of its mailboxes:
    /// strands that never yield take turns on all the cores. A pinned
    /// fibre's stays on `me`.
    pub(crate) fn requeue_preempted(&self, me: usize, task: NonNull<Task>, pinned: bool, level: u8) {
        if pinned || self.is_leaving(me) {
            self.requeue_local(me, task, pinned);
            return;
        }
        // SAFETY: the task is ours to give.
        unsafe { self.preempted.push(task, level) };
        self.announce_for(me, 1);
    }

    /// The fibre whose turn is next, if any (see [`Shared::requeue_preempted`]).
    pub(crate) fn take_turn(&self) -> Option<NonNull<Task>> {
        self.preempted.take()
    }

    /// Whether a preempted strand waits for its turn.
    pub(crate) fn has_turns(&self) -> bool {
        self.preempted.any()
    }

    /// Sends a fibre that was just scheduled to core `to`, the core that
    /// last ran it: into the caller's queue if that is `to`, else through
    /// the fibre mailbox of the pair (closure mailbox if `pinned`).
    /// Returns false only if the pool refused it: it has stopped, and the
    /// caller is outside it.
    #[inline]
    pub(crate) fn schedule_fibre(&self, task: NonNull<Task>, to: usize, pinned: bool) -> bool {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::deferral::defer();
        // SAFETY: the core found is ours while we defer.
        unsafe { self.schedule_fibre_from(self.worker_core(), task, to, pinned) }
    }

    /// [`Shared::schedule_fibre`] for a caller that knows its core (`me`:
    /// the calling core if it is one of this pool's, else `None`). A fibre
    /// for that core itself is queued there inline; any other is sent out
    /// of line, so that the common case pays for no register saves.
    ///
    /// # Safety
    ///
    /// `me` is right, and stays right: the caller holds a deferral, or
    /// runs no strand.
    #[inline]
    pub(crate) unsafe fn schedule_fibre_from(
        &self,
        me: Option<usize>,
        task: NonNull<Task>,
        to: usize,
        pinned: bool,
    ) -> bool {
        match me {
            Some(me) if me == to && pinned => self.requeue_local(me, task, true),
            Some(me) if me == to => self.place_spawned(me, task),
            // SAFETY: forwarded.
            _ => return unsafe { self.send_fibre(me, task, to, pinned) },
        }
        true
    }

    /// Queues a woken fibre's task on core `me` as `me` itself would queue
    /// it ([`Shared::schedule_fibre_from`] with `me` as the caller), for an
    /// interrupt handler that interrupted `me` while its strand ran its
    /// own code. Returns false, doing nothing, if the pool has stopped or
    /// `me` is leaving: the caller then sends the task as from outside.
    ///
    /// # Safety
    ///
    /// The caller is an interrupt handler on core `me` of this pool, which
    /// interrupted a strand outside roving's code (its deferral count 0),
    /// so nothing else touches the core's queues until it returns (as for
    /// the tick, `crate::preempt::on_tick`); the task is the caller's to
    /// give, and in no list.
    pub(crate) unsafe fn queue_from_handler_on(&self, me: usize, task: NonNull<Task>, pinned: bool) -> bool {
        if self.stopped() || self.is_leaving(me) {
            return false;
        }
        // SAFETY: per the contract, the handler stands in for core `me`,
        // whose own code holds no reference to its queues now.
        unsafe { self.schedule_fibre_from(Some(me), task, me, pinned) }
    }

    /// [`Shared::schedule_fibre_from`] for a fibre bound for another core
    /// than the caller's (`me`), or from outside the pool.
    ///
    /// # Safety
    ///
    /// As for `schedule_fibre_from`.
    #[inline(never)]
    unsafe fn send_fibre(&self, me: Option<usize>, task: NonNull<Task>, to: usize, pinned: bool) -> bool {
        let lane = if pinned { CLOSURES } else { FIBRES };
        match me {
            Some(me) => {
                // SAFETY: we are core `me`; the task is ours to give.
                match unsafe { self.inbound.send(lane, me, to, task) } {
                    Delivery::Queued => {}
                    Delivery::Wake(core) => _ = self.wake_for(me, core),
                    // `to` left the pool: any core may run the fibre.
                    Delivery::Refused(task) => self.inject(task, Some(me)),
                    // The mesh had no memory for a parcel: the direct list
                    // needs none, and keeps a pinned fibre on its core (a
                    // wake has no order to keep with the sender's posts).
                    Delivery::NoMemory(task) => {
                        // SAFETY: the task came back to us.
                        match unsafe { self.inbound.send_from_outside(lane, to, task) } {
                            Delivery::Queued => {}
                            Delivery::Wake(core) => _ = self.wake_for(me, core),
                            Delivery::Refused(task) | Delivery::NoMemory(task) => self.inject(task, Some(me)),
                        }
                    }
                }
            }
            None => {
                // SAFETY: forwarded; `to` is a slot of the pool (the
                // fibre's last core).
                if unsafe { self.queue_in_idle_wait(task, to, pinned) } {
                    return true;
                }
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
                        Delivery::Queued if !pinned => {
                            self.sleep.new_jobs(1, None, to + 1, ring, |_, _| ());
                        }
                        Delivery::Queued => {}
                        Delivery::Wake(core) => {
                            self.sleep.wake(core, ring);
                        }
                        Delivery::Refused(task) | Delivery::NoMemory(task) => self.inject(task, None),
                    }
                });
            }
        }
        true
    }
}
