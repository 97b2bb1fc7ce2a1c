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
use crate::atomics::CachePadded;
use crate::protocol::core_hints::{CoreHints, Raised};
use crate::task::Task;
use crate::task::queue::TaskQueue;
use alloc::boxed::Box;
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
/// after pushing a fibre, the receiver lowers it before taking its lists,
/// and a thief passes over a receiver whose hint is low.
pub(crate) struct Inbound {
    kind: Kind,
    fibres_waiting: CoreHints,
}

enum Kind {
    /// `2 * slots * (slots + 1)` lists: by lane, then receiver, then
    /// sender; the last sender slot of each receiver is for code outside
    /// the pool.
    Direct { slots: usize, lists: Box<[CachePadded<AtomicList>]> },
    /// The mesh for closures, and `2 * slots` direct lists (by lane, then
    /// receiver).
    Mesh { slots: usize, routes: Routes, outside: Box<[CachePadded<AtomicList>]> },
}

fn lists(n: usize) -> Box<[CachePadded<AtomicList>]> {
    (0..n).map(|_| CachePadded(AtomicList::new())).collect()
}

/// Where the direct list of `lane` from `from` (`slots`: outside the
/// pool) to `to` sits among `2 * slots * (slots + 1)`.
fn pair(slots: usize, lane: usize, to: usize, from: usize) -> usize {
    (lane * slots + to) * (slots + 1) + from
}

impl Inbound {
    /// Mailboxes for `slots` cores of which `members` are the pool's:
    /// direct (`mesh_links` `None`) or a mesh with at most that many links.
    pub(crate) fn new(slots: usize, members: impl Fn(usize) -> bool, mesh_links: Option<usize>) -> Self {
        let kind = match mesh_links {
            None => Kind::Direct { slots, lists: lists(2 * slots * (slots + 1)) },
            Some(links) => {
                Kind::Mesh { slots, routes: Routes::new(slots, members, links), outside: lists(2 * slots) }
            }
        };
        Self { kind, fibres_waiting: CoreHints::new(slots) }
    }

    /// The direct list of `lane` from outside the pool to `to`.
    fn outside(&self, lane: usize, to: usize) -> &AtomicList {
        match &self.kind {
            Kind::Direct { slots, lists, .. } => &lists[pair(*slots, lane, to, *slots)],
            Kind::Mesh { slots, outside, .. } => &outside[lane * slots + to],
        }
    }

    /// Every direct list into `to`, both lanes, the outside ones first.
    fn direct_into(&self, to: usize) -> impl Iterator<Item = [&AtomicList; 2]> {
        let (slots, senders) = match &self.kind {
            Kind::Direct { slots, .. } => (*slots, *slots),
            Kind::Mesh { slots, .. } => (*slots, 0),
        };
        let from = move |from: usize| match &self.kind {
            Kind::Direct { lists, .. } => {
                [CLOSURES, FIBRES].map(|lane| &lists[pair(slots, lane, to, from)].0)
            }
            Kind::Mesh { .. } => unreachable!("the mesh has no sender lists"),
        };
        core::iter::once([self.outside(CLOSURES, to), self.outside(FIBRES, to)]).chain((0..senders).map(from))
    }

    /// Sends `task` on `lane` from core `from` (the caller's) to core `to`.
    ///
    /// # Safety
    ///
    /// The caller runs as core `from` of the pool, owns `task` and gives it
    /// up unless it comes back.
    pub(crate) unsafe fn send(&self, lane: usize, from: usize, to: usize, task: NonNull<Task>) -> Delivery {
        match &self.kind {
            // SAFETY: the task is ours to give.
            Kind::Direct { slots, lists, .. } => unsafe {
                self.push_direct(&lists[pair(*slots, lane, to, from)], lane, to, task)
            },
            // SAFETY: the task is ours to give.
            Kind::Mesh { .. } if lane == FIBRES => unsafe { self.send_from_outside(lane, to, task) },
            Kind::Mesh { routes, .. } => {
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
        }
    }

    /// Sends `task` on `lane` to core `to` from code outside the pool.
    ///
    /// # Safety
    ///
    /// The caller owns `task` and gives it up unless it comes back.
    pub(crate) unsafe fn send_from_outside(&self, lane: usize, to: usize, task: NonNull<Task>) -> Delivery {
        // SAFETY: per the contract.
        unsafe { self.push_direct(self.outside(lane, to), lane, to, task) }
    }

    /// Pushes `task` onto `list`, a direct list of `lane` into `to`; with
    /// direct mailboxes, a woken fibre then raises `to`'s hint (every push
    /// of a fibre must, after it: `crate::protocol::core_hints`).
    ///
    /// # Safety
    ///
    /// The caller owns `task` and gives it up unless it comes back.
    #[inline]
    unsafe fn push_direct(&self, list: &AtomicList, lane: usize, to: usize, task: NonNull<Task>) -> Delivery {
        // SAFETY: per the contract.
        let delivery = Delivery::of(unsafe { list.push(task) }, to, task);
        if lane == FIBRES {
            self.fibres_waiting.raise(to);
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
        self.fibres_waiting.lower(me);
        let reading = match &self.kind {
            Kind::Mesh { routes, .. } => Some(routes.read(me)),
            Kind::Direct { .. } => None,
        };
        for [closures, fibres] in self.direct_into(me) {
            // SAFETY: taken chains are ours.
            took.received +=
                unsafe { pinned.append_reversed(take(closures)) + queue.append_reversed(take(fibres)) };
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

    /// Whether anything waits for core `me`.
    pub(crate) fn has_work(&self, me: usize) -> bool {
        let direct = || self.direct_into(me).any(|lists| lists.iter().any(|list| list.has_tasks()));
        match &self.kind {
            Kind::Direct { .. } => direct(),
            Kind::Mesh { routes, .. } => direct() || routes.read(me).has_work(me),
        }
    }

    /// Whether every list is empty; `me` is the caller's core, or any
    /// core index if it has none.
    pub(crate) fn is_empty(&self, me: usize) -> bool {
        match &self.kind {
            Kind::Direct { lists, .. } => lists.iter().all(|list| !list.has_tasks()),
            Kind::Mesh { routes, outside, .. } => {
                // One read section: a rebuild moves tasks from the mesh to
                // the direct lists, and must not hide them between the two
                // looks.
                let reading = routes.read(me);
                reading.is_empty() && outside.iter().all(|list| !list.has_tasks())
            }
        }
    }

    /// The cores for which woken fibres may wait, from `start` on: the
    /// victims worth a thief's look.
    pub(crate) fn fibres_may_wait_from(&self, start: usize) -> Raised<'_> {
        self.fibres_waiting.raised_from(start)
    }

    /// Takes a chain of woken fibres waiting for core `victim`, unless it
    /// is asleep (its lists armed) or gone: what a thief may take. A thief
    /// asks only of victims [`Inbound::fibres_may_wait_from`] gives. The
    /// mesh's own lists are never stolen from: a thief would reorder what
    /// passes through.
    pub(crate) fn steal_fibres(&self, victim: usize) -> Chain {
        self.direct_into(victim).find_map(|[_, fibres]| fibres.steal_all())
    }

    /// Closes core `core`'s direct lists, handing `keep` what each pair
    /// (closures, fibres) held: posts to it are refused from now on.
    pub(crate) fn close(&self, core: usize, mut keep: impl FnMut([Chain; 2])) {
        for lists in self.direct_into(core) {
            keep(lists.map(AtomicList::take_all_and_close));
        }
    }

    /// Opens core `core`'s direct lists again, before it rejoins.
    pub(crate) fn reopen(&self, core: usize) {
        self.direct_into(core).flatten().for_each(AtomicList::reopen);
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
        let Kind::Mesh { routes, .. } = &self.kind else { return };
        let relay = |to: usize, tasks: &mut TaskQueue| {
            while let Some(task) = tasks.pop_front() {
                // SAFETY: the relay hands us the task.
                match unsafe { self.outside(CLOSURES, to).push(task) } {
                    Pushed::Queued => {}
                    Pushed::WasArmed => wake(to),
                    // A task is in transit only to a ranked core, which
                    // closes its lists only after its rebuild.
                    Pushed::Closed => unreachable!("a relayed task for core {to}, which has left"),
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
        let direct = match &self.kind {
            Kind::Direct { lists, .. } => lists,
            Kind::Mesh { outside, .. } => outside,
        };
        for list in direct.iter() {
            // SAFETY: a taken chain is ours.
            unsafe { into.append_reversed(list.take_all()) };
        }
        if let Kind::Mesh { routes, .. } = &self.kind {
            // SAFETY: per the contract; what is handed over is ours.
            unsafe { routes.read(0).empty_into(|_, tasks| into.append(tasks)) };
        }
    }
}
