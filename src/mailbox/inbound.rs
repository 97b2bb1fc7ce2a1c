//! How tasks reach a core of a pool: direct mailboxes, one per ordered
//! pair of cores, or the forwarding mesh ([`Mailboxes`]).
//!
//! There are two lanes: posted closures, which run where they were sent,
//! and woken fibres, which prefer their core but may be stolen. Each core
//! also has a direct list per lane for code outside the pool.
//!
//! With the mesh, closures travel through it. Woken fibres do not: they go
//! on the receiver's direct fibre list, shared by every sender, because an
//! idle core must be able to steal a fibre whose core is busy, and a thief
//! cannot take from the mesh's lists without reordering what passes
//! through (fibres need no order among themselves). The direct closure
//! list also carries what a rebuild relays (`super::mesh::routes`)
//! and what a core without a rank sends or is sent, so a core takes its
//! direct lists before its mesh lists.
//!
//! [`Mailboxes`]: crate::pool::Mailboxes

use super::list::{AtomicList, Chain, Pushed};
use super::mesh::routes::Routes;
use super::pairs::Pairs;
use crate::protocol::core_hints::{CoreHints, Raised};
use crate::task::Task;
use crate::task::queue::TaskQueue;
use core::ptr::NonNull;

/// The lane of posted closures (and of fibres pinned to their core).
pub(crate) const CLOSURES: usize = 0;
/// The lane of woken fibres.
pub(crate) const FIBRES: usize = 1;

/// What became of a task sent to a core.
pub(crate) enum Delivery {
    Queued,
    /// Queued where this core may be asleep: wake it.
    Wake(usize),
    /// The receiver has left the pool: the task comes back.
    Refused(NonNull<Task>),
    /// It needed a parcel and memory ran out: the task comes back.
    NoMemory(NonNull<Task>),
}

impl Delivery {
    fn of(pushed: Pushed, to: usize, task: NonNull<Task>) -> Self {
        match pushed {
            Pushed::Queued => Self::Queued,
            Pushed::WasArmed => Self::Wake(to),
            Pushed::Closed => Self::Refused(task),
        }
    }
}

/// What a drain took.
#[derive(Default)]
pub(crate) struct Took {
    /// Tasks for this core.
    pub(crate) received: usize,
    /// Tasks it passed on to other cores (the mesh).
    pub(crate) forwarded: usize,
    /// Asked to arm, it found work arriving: it must not sleep.
    pub(crate) busy: bool,
}

/// A pool's mailboxes, and per receiver a hint that woken fibres may wait
/// in its direct lists (`crate::protocol::core_hints`): a sender raises it
/// after pushing a fibre, the receiver lowers it before taking its fibre
/// lists and passes them over if it was low, and a thief passes over a
/// receiver whose hint is low.
///
/// A pool that preempts keeps the same hint for posted closures, so that
/// a core asking whether anything waits for it (a tick deciding whether to
/// preempt) or draining with nothing waiting reads two hints, not a list
/// per sender: constant time at any core count. The price is a cache line
/// more per post, moved between sender and receiver (the line census
/// bounds a cooperative pool's posts, so only a preempting pool pays it).
pub(crate) struct Inbound {
    /// Each receiver's direct lists, by lane: from outside the pool, and
    /// with direct mailboxes from each sender ([`Pairs`]).
    pairs: Pairs,
    /// The mesh for closures, if the pool has one.
    mesh: Option<Routes>,
    /// By lane.
    waiting: [CoreHints; 2],
    /// Whether closures raise their lane's hint (a preempting pool).
    closures_hinted: bool,
}

impl Inbound {
    /// Mailboxes for `slots` cores of which `members` are the pool's:
    /// direct (`mesh_links` `None`) or a mesh with at most that many links;
    /// with `closures_hinted`, closures keep a hint as fibres do.
    pub(crate) fn new(
        slots: usize,
        members: impl Fn(usize) -> bool,
        mesh_links: Option<usize>,
        closures_hinted: bool,
    ) -> Self {
        Self {
            pairs: Pairs::new(slots, &members, mesh_links.is_none()),
            mesh: mesh_links.map(|links| Routes::new(slots, &members, links)),
            waiting: [CoreHints::new(slots), CoreHints::new(slots)],
            closures_hinted,
        }
    }

    /// Sends `task` on `lane` from core `from` (the caller's) to core `to`.
    ///
    /// # Safety
    ///
    /// The caller runs as core `from` of the pool, owns `task` and gives it
    /// up unless it comes back.
    pub(crate) unsafe fn send(&self, lane: usize, from: usize, to: usize, task: NonNull<Task>) -> Delivery {
        let Some(routes) = &self.mesh else {
            let Some(row) = self.pairs.row(to) else { return Delivery::Refused(task) };
            let lanes = self.pairs.from(row, from).unwrap_or(&row.outside);
            // SAFETY: the task is ours to give.
            return unsafe { self.push_direct(&lanes[lane], lane, to, task) };
        };
        if lane == FIBRES {
            // SAFETY: the task is ours to give.
            return unsafe { self.send_from_outside(lane, to, task) };
        }
        let reading = routes.read(from);
        if reading.is_ranked(from) && reading.is_ranked(to) {
            // SAFETY: we are core `from` (contract).
            match unsafe { reading.send(from, to, task) } {
                Ok(None) => Delivery::Queued,
                Ok(Some(core)) => Delivery::Wake(core),
                Err(task) => Delivery::NoMemory(task),
            }
        } else {
            // Inside the read section: ordered before or after a
            // rebuild, as the relayed tasks are (module docs).
            // SAFETY: the task is ours to give.
            unsafe { self.send_from_outside(lane, to, task) }
        }
    }

    /// Sends `task` on `lane` to core `to` from code outside the pool.
    ///
    /// # Safety
    ///
    /// The caller owns `task` and gives it up unless it comes back.
    pub(crate) unsafe fn send_from_outside(&self, lane: usize, to: usize, task: NonNull<Task>) -> Delivery {
        let Some(row) = self.pairs.row(to) else { return Delivery::Refused(task) };
        // SAFETY: per the contract.
        unsafe { self.push_direct(&row.outside[lane], lane, to, task) }
    }

    /// Pushes `task` onto `list`, a direct list of `lane` into `to`, then
    /// raises `to`'s hint for the lane if the lane has one (every push onto
    /// such a list must, after it: `crate::protocol::core_hints`).
    ///
    /// # Safety
    ///
    /// The caller owns `task` and gives it up unless it comes back.
    #[inline]
    unsafe fn push_direct(&self, list: &AtomicList, lane: usize, to: usize, task: NonNull<Task>) -> Delivery {
        // SAFETY: per the contract.
        let delivery = Delivery::of(unsafe { list.push(task) }, to, task);
        if lane == FIBRES || self.closures_hinted {
            self.waiting[lane].raise(to);
        }
        delivery
    }

    /// Takes everything for core `me`: closures into `pinned`, fibres into
    /// `queue`, each sender's oldest first; with the mesh, forwards what
    /// passes through `me`, handing `wake` each core a push found armed.
    /// With `arm`, leaves every list armed, or says it found work coming.
    ///
    /// # Safety
    ///
    /// The caller runs as core `me` of the pool.
    pub(crate) unsafe fn drain(
        &self,
        me: usize,
        pinned: &mut TaskQueue,
        queue: &mut TaskQueue,
        arm: bool,
        mut wake: impl FnMut(usize),
    ) -> Took {
        let take = |list: &AtomicList| if arm { list.take_all_and_arm() } else { list.take_all() };
        let mut took = Took::default();
        // A low hint lets the drain pass its lane's lists over, as it lets
        // a thief (`crate::protocol::core_hints`): a task pushed and not
        // yet hinted is taken by the next drain. Arming takes every list.
        let fibres_hinted = self.waiting[FIBRES].lower_if_raised(me) || arm;
        let reading = self.mesh.as_ref().map(|routes| routes.read(me));
        let row = self.pairs.row(me);
        // Two shapes on purpose: one pass taking both lanes with a branch
        // per list costs a cooperative pool's idle-core wake 17-40
        // instructions (tried).
        if self.closures_hinted {
            let closures_hinted = self.waiting[CLOSURES].lower_if_raised(me) || arm;
            for (hinted, lane, into) in
                [(closures_hinted, CLOSURES, &mut *pinned), (fibres_hinted, FIBRES, &mut *queue)]
            {
                if hinted && let Some(row) = row {
                    self.pairs.find_into(row, |lists| -> Option<()> {
                        // SAFETY: taken chains are ours.
                        took.received += unsafe { into.append_reversed(take(&lists[lane])) };
                        None
                    });
                }
            }
        } else if let Some(row) = row {
            self.pairs.find_into(row, |[closures, fibres]| -> Option<()> {
                // SAFETY: taken chains are ours.
                took.received += unsafe { pinned.append_reversed(take(closures)) };
                if fibres_hinted {
                    // SAFETY: as above.
                    took.received += unsafe { queue.append_reversed(take(fibres)) };
                }
                None
            });
        }
        if let Some(reading) = reading {
            // SAFETY: we are core `me` (contract); what is delivered is ours.
            let drained = unsafe { reading.drain(me, |task| pinned.push_back(task), &mut wake) };
            took.received += drained.delivered;
            took.forwarded = drained.forwarded;
            took.busy = arm && !reading.arm(me);
        }
        took
    }

    /// Whether anything waits for core `me`: with both hints, whether one
    /// is raised (a task pushed and not yet hinted is seen once its sender
    /// raises it); otherwise a look at every direct list. And the mesh.
    pub(crate) fn has_work(&self, me: usize) -> bool {
        let direct = if self.closures_hinted {
            self.waiting.iter().any(|hints| hints.is_raised(me))
        } else {
            let row = self.pairs.row(me);
            row.and_then(|row| {
                self.pairs.find_into(row, |lanes| lanes.iter().any(|list| list.0.has_tasks()).then_some(()))
            })
            .is_some()
        };
        direct || self.mesh.as_ref().is_some_and(|routes| routes.read(me).has_work(me))
    }

    /// Whether every list is empty; `me` is the caller's core, or any
    /// core index if it has none.
    pub(crate) fn is_empty(&self, me: usize) -> bool {
        // One read section: a rebuild moves tasks from the mesh to the
        // direct lists, and must not hide them between the two looks.
        let reading = self.mesh.as_ref().map(|routes| routes.read(me));
        reading.is_none_or(|reading| reading.is_empty()) && self.pairs.all().all(|list| !list.has_tasks())
    }

    /// The cores for which woken fibres may wait, from `start` on: the
    /// victims worth a thief's look.
    pub(crate) fn fibres_may_wait_from(&self, start: usize) -> Raised<'_> {
        self.waiting[FIBRES].raised_from(start)
    }

    /// Takes a chain of woken fibres waiting for core `victim`, unless it
    /// is asleep (its lists armed) or gone: what a thief may take. A thief
    /// asks only of victims [`Inbound::fibres_may_wait_from`] gives. The
    /// mesh's own lists are never stolen from: a thief would reorder what
    /// passes through.
    pub(crate) fn steal_fibres(&self, victim: usize) -> Chain {
        self.pairs.find_into(self.pairs.row(victim)?, |[_, fibres]| fibres.0.steal_all())
    }

    /// Closes core `core`'s direct lists, handing `keep` what each pair
    /// (closures, fibres) held: posts to it are refused from now on.
    pub(crate) fn close(&self, core: usize, keep: impl FnMut([Chain; 2])) {
        self.pairs.close(core, keep);
    }

    /// Opens core `core`'s direct lists, before it joins: again, or the
    /// first time (`Pairs::open`).
    ///
    /// # Safety
    ///
    /// The caller is a resize (or the pool's constructor): nothing else
    /// opens or closes lists meanwhile.
    pub(crate) unsafe fn open(&self, core: usize) {
        // SAFETY: per the contract.
        unsafe { self.pairs.open(core) }
    }

    /// With the mesh, rebuilds it over the cores `ranked` says
    /// (`super::mesh::routes`): what was in transit goes to each
    /// receiver's direct lists, and `wake` gets each receiver whose list
    /// was armed. Direct mailboxes need nothing.
    ///
    /// # Safety
    ///
    /// The caller is in no read section, no other rebuild runs, and the
    /// caller cannot be preempted meanwhile.
    pub(crate) unsafe fn rebuild(&self, ranked: impl Fn(usize) -> bool, mut wake: impl FnMut(usize)) {
        let Some(routes) = &self.mesh else { return };
        let relay = |to: usize, tasks: &mut TaskQueue| {
            let row = self.pairs.row(to).expect("a ranked core has been a member");
            while let Some(task) = tasks.pop_front() {
                // SAFETY: the relay hands us the task.
                match unsafe { self.push_direct(&row.outside[CLOSURES], CLOSURES, to, task) } {
                    Delivery::Queued => {}
                    Delivery::Wake(core) => wake(core),
                    // A task is in transit only to a ranked core, which
                    // closes its lists only after its rebuild.
                    Delivery::Refused(_) | Delivery::NoMemory(_) => {
                        unreachable!("a relayed task for core {to}, which has left")
                    }
                }
            }
        };
        // SAFETY: per the contract; the relay enters no read section.
        unsafe { routes.rebuild(ranked, relay) };
    }

    /// Takes every task in every list.
    ///
    /// # Safety
    ///
    /// Nothing sends or drains meanwhile (no core runs the pool).
    pub(crate) unsafe fn take_everything(&self, into: &mut TaskQueue) {
        for list in self.pairs.all() {
            // SAFETY: a taken chain is ours.
            unsafe { into.append_reversed(list.take_all()) };
        }
        if let Some(routes) = &self.mesh {
            // SAFETY: per the contract; what is handed over is ours.
            unsafe { routes.read(0).empty_into(|_, tasks| into.append(tasks)) };
        }
    }
}
