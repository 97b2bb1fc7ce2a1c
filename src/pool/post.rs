//! Work entering a pool: posting a closure to a core, spawning one to any
//! core, the injector for work from outside, and waking sleepers for it.
//!
//! From a core of the pool, a post goes through the mailbox of that pair of
//! cores and a spawn into the core's LIFO slot; from outside, a post goes to
//! the receiver's list for outsiders and a spawn to the injector, counted in
//! `in_flight` around the pool's state check so that a quiescence check
//! can wait for them to land (`super::stop`). Work that cannot be accepted
//! comes back to the caller inside the error.

use super::current::{self, Worker};
use super::error::PostError;
use super::shared::{Shared, ring};
use super::stats;
use super::stop::{QUIESCING, READY, RUNNING, STOPPED, WINDING};
use crate::atomics::{Ordering::SeqCst, spin_hint};
use crate::mailbox::inbound::{CLOSURES, Delivery};
use crate::platform;
use crate::task::storage::BlockCache;
use crate::task::{IntoTask, Task};
use core::ptr::NonNull;

impl Shared {
    /// Posts `work` to run on core `to`.
    pub(crate) fn post<W: IntoTask>(&self, to: usize, work: W) -> Result<(), PostError<W>> {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::deferral::defer();
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
                    Delivery::Queued => Ok(()),
                    Delivery::Wake(core) => {
                        self.sleep.wake(core, ring);
                        Ok(())
                    }
                    Delivery::Refused(_) => Err(PostError::NotAMember { core: to, closure: () }),
                    Delivery::NoMemory(_) => unreachable!("a direct list needs no memory"),
                }
            }),
        }
    }

    /// Posts `work` to `core`, the core it is pinned to; if that core has
    /// left the pool, the pin lapses while it is away and `work` is spawned.
    pub(crate) fn post_pinned<W: IntoTask>(&self, core: usize, work: W) -> Result<(), PostError<W>> {
        match self.post(core, work) {
            Err(PostError::NotAMember { closure, .. }) => self.spawn(closure),
            result => result,
        }
    }

    /// Spawns `work` to run on any core.
    pub(crate) fn spawn<W: IntoTask>(&self, work: W) -> Result<(), PostError<W>> {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::deferral::defer();
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
    pub(super) fn foreign_caller(&self) -> bool {
        !self.domain.is_current() && !platform::in_interrupt()
    }

    /// Calls `f` with the calling core's block cache if it is a worker of
    /// this pool (storage made there may be freed on any core of the pool).
    pub(crate) fn with_cache<R>(&self, f: impl FnOnce(Option<&mut BlockCache>) -> R) -> R {
        // The core found below must stay ours while we use it.
        let _deferral = crate::preempt::deferral::defer();
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
    /// (`crate::preempt::deferral`), so it is still on that core.
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
        stats::add(&self.cores[self.worker_core().unwrap_or(0)].stats.discarded, n);
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

    pub(super) fn post_from<W: IntoTask>(&self, me: usize, to: usize, work: W) -> Result<(), PostError<W>> {
        if self.refuses_work() {
            return Err(PostError::Stopped(work));
        }
        if to == me && self.is_leaving(me) {
            // A core runs what is posted to it before it leaves, so a task
            // that kept posting to its own core would hold it forever.
            return Err(PostError::NotAMember { core: to, closure: work });
        }
        // SAFETY: we are core `me`, inside a task or `main`; the loop holds
        // no reference to its `Local` across those.
        let local = unsafe { self.local(me) };
        let task = work.into_task(Some(&mut local.cache)).map_err(PostError::OutOfMemory)?;
        // SAFETY: as above.
        let stats = &unsafe { self.own_core(me) }.stats;
        if to == me {
            let _lists = self.own_lists(me);
            // SAFETY: the task is ours to give.
            unsafe { local.pinned.push_back(task) };
        } else {
            // SAFETY: we are core `me`; the task is ours to give.
            match unsafe { self.inbound.send(CLOSURES, me, to, task) } {
                Delivery::Queued => {}
                Delivery::Wake(core) => _ = self.wake_for(me, core),
                Delivery::Refused(task) => {
                    // The core left the pool since `post` looked.
                    // SAFETY: refused, so still ours; made with our cache.
                    let work = unsafe { W::from_task(task, Some(NonNull::from(&mut local.cache))) };
                    return Err(PostError::NotAMember { core: to, closure: work });
                }
                Delivery::NoMemory(task) => {
                    // SAFETY: as above.
                    let work = unsafe { W::from_task(task, Some(NonNull::from(&mut local.cache))) };
                    return Err(PostError::OutOfMemory(work));
                }
            }
        }
        stats::add(&stats.sent, 1);
        Ok(())
    }

    pub(super) fn spawn_from<W: IntoTask>(&self, me: usize, work: W) -> Result<(), PostError<W>> {
        if self.refuses_work() {
            return Err(PostError::Stopped(work));
        }
        // SAFETY: as in `post_from`.
        let local = unsafe { self.local(me) };
        let task = work.into_task(Some(&mut local.cache)).map_err(PostError::OutOfMemory)?;
        // SAFETY: as above.
        stats::add(&unsafe { self.own_core(me) }.stats.spawned, 1);
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
    pub(super) fn place_spawned(&self, me: usize, task: NonNull<Task>) {
        if self.config.offer_spawns && self.sleep.anyone_idle(me) {
            // SAFETY: the task is ours to give; steal lists have no sentinel.
            let _ = unsafe { self.cores[me].steal.push(task) };
            self.stealable.raise(me);
            stats::add(&self.cores[me].stats.offered, 1);
            self.announce_for(me, 1);
            return;
        }
        // The slot is taken with the lists when the core is taken out.
        let _lists = self.own_lists(me);
        // SAFETY: we are core `me`, the slot's owner; the task is ours.
        if let Some(previous) = unsafe { self.own_core(me).lifo.put(task) } {
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
    #[inline]
    pub(crate) fn requeue_local(&self, me: usize, task: NonNull<Task>, pinned: bool) {
        if self.is_leaving(me) {
            // Leaving: the pool's other cores run it (pins to `me` lapse).
            self.inject(task, Some(me));
            return;
        }
        let _lists = self.own_lists(me);
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

    pub(super) fn count_wakeup(&self, me: usize, _core: usize, _roused: crate::sleep::Roused) {
        stats::add(&self.cores[me].stats.wakeups, 1);
        // `_core` and `_roused` are read by the trace point alone.
        trace_point!(
            self,
            me,
            crate::trace::event::TraceEvent::Wakeup {
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
    pub(super) fn post_outside<W: IntoTask>(
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
    pub(super) fn enter_from_outside(&self, fibre: bool, push: impl FnOnce()) -> bool {
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
}
