//! Routes: the mesh of a pool whose cores come and go.
//!
//! A [`Mesh`] is built over ranks `0..m`. [`Routes`] gives each of a
//! pool's member cores a rank, and rebuilds the mesh when a core joins or
//! leaves, so that a core outside the pool is never a hop.
//!
//! # Protocol
//!
//! Every use of the mesh (a send, a drain, arming, a look at the lists)
//! is a *read section* of the core that makes it; a rebuild is the one
//! *write section*. Each core has its own reader count, on a line of its
//! own, so read sections never contend with each other.
//!
//! - **Read** ([`Routes::read`]): add one to the core's count, then a
//!   sequentially consistent fence; if the count was 0 and a writer is
//!   announced, take the one back, wait until the writer is done, and try
//!   again. Leave by taking the one back. A section that finds its core's
//!   count above 0 is nested (an interrupt handler over a section of its
//!   core) and goes on, writer or not.
//! - **Write** ([`Routes::rebuild`], one at a time): announce the writer,
//!   a sequentially consistent fence, and wait until every core's count
//!   is 0. Then, alone with the mesh: take everything in transit out of
//!   it and hand it to the caller's `relay`, per receiver, each sender's
//!   messages oldest first; put the new mesh in place, every list armed;
//!   and withdraw the announcement.
//!
//! The pool's relay puts what it is handed on the receiver's direct list,
//! which each core takes before its mesh lists. A core with no rank
//! (joining, not yet in the mesh; leaving, already out of it) is sent to,
//! and sends, through those direct lists too.
//!
//! # Why it is correct (sketch)
//!
//! - **A write section is alone.** Each side writes its word (the count,
//!   the announcement), fences, then reads the other's; the two fences are
//!   ordered, so at least one side sees the other's write. A read section
//!   that went on saw no writer, so the writer's wait sees its increment
//!   and waits until it has left. A section that starts after the
//!   announcement sees it and waits, unless its core's count was above 0:
//!   then an earlier section on that count is still in, and the writer is
//!   still waiting for it. So no read section overlaps the write section,
//!   and a read section uses the mesh that was in place when it entered,
//!   which stays in place (and allocated) until it leaves.
//! - **Nothing is lost.** A write section holds no send and no drain
//!   halfway: every message is in a list. It takes every list of the old
//!   mesh whole and relays every task it finds, once.
//! - **Each sender's order is kept.** The route from a core to a receiver
//!   is fixed within a mesh, and a message further along it is older than
//!   one behind it (the mesh's own order argument). So the messages for
//!   one receiver, sorted by hops still to go, fewest first, and in list
//!   order within a list, keep every sender's order. They reach the
//!   receiver's direct list before the write section ends, so before any
//!   message sent through the new mesh exists; the receiver takes that
//!   list before its mesh lists, in the same read section, so it runs them
//!   first. A core that loses its rank sends on through the direct lists,
//!   behind what was relayed.
//! - **No wake-up is lost.** A core that armed its old lists and slept
//!   would not hear a push onto its new ones, so the new lists start
//!   armed: the first push onto each wakes its core (at worst once, in
//!   vain, if it was awake). What the relay pushes wakes its receiver as
//!   any push onto a direct list does.

use super::{DrainCounts, Mesh, Sent, Topology};
use crate::atomics::{AtomicBool, AtomicUsize, CachePadded, Ordering::SeqCst, fence, spin_hint};
use crate::task::Task;
use crate::task::queue::TaskQueue;
use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::ptr::NonNull;

/// No rank: the core is not in the mesh.
const UNRANKED: usize = usize::MAX;

/// The mesh over one set of members.
struct Generation {
    /// Each core's rank, or `UNRANKED`.
    rank_of: Box<[usize]>,
    /// Each rank's core.
    core_of: Box<[usize]>,
    mesh: Mesh,
}

impl Generation {
    fn new(slots: usize, members: impl Fn(usize) -> bool, links: usize) -> Self {
        let core_of: Box<[usize]> = (0..slots).filter(|&core| members(core)).collect();
        let mut rank_of = alloc::vec![UNRANKED; slots].into_boxed_slice();
        for (rank, &core) in core_of.iter().enumerate() {
            rank_of[core] = rank;
        }
        let topology = Topology::with_links(core_of.len().max(1), links);
        Self { rank_of, core_of, mesh: Mesh::new_armed(topology) }
    }

    fn rank(&self, core: usize) -> Option<usize> {
        self.rank_of.get(core).copied().filter(|&rank| rank != UNRANKED)
    }

    /// Takes everything in transit ([`Mesh::empty_into`]), handing `relay`
    /// each receiver's tasks with its core.
    ///
    /// # Safety
    ///
    /// Nothing sends on the mesh or drains it meanwhile.
    unsafe fn empty_into(&self, relay: &mut impl FnMut(usize, &mut TaskQueue)) {
        // SAFETY: per the contract.
        unsafe { self.mesh.empty_into(|rank, queue| relay(self.core_of[rank], queue)) };
    }
}

/// A pool's mesh, rebuilt as its members change.
pub struct Routes {
    /// The most links a core gets ([`Topology::with_links`]).
    links: usize,
    /// Read sections under way, by core.
    readers: Box<[CachePadded<AtomicUsize>]>,
    /// A rebuild is announced or under way.
    writer: AtomicBool,
    /// Replaced only in the write section.
    current: UnsafeCell<Box<Generation>>,
}

// SAFETY: `current` is replaced only in the write section, which no read
// section overlaps (module docs); everything else is atomics. The tasks in
// the lists are `Send`.
unsafe impl Sync for Routes {}
// SAFETY: as above.
unsafe impl Send for Routes {}

impl Routes {
    /// Routes among `slots` core indices, of which `members` are ranked,
    /// with at most `links` links per core.
    pub fn new(slots: usize, members: impl Fn(usize) -> bool, links: usize) -> Self {
        Self {
            links,
            readers: (0..slots).map(|_| CachePadded(AtomicUsize::new(0))).collect(),
            writer: AtomicBool::new(false),
            current: UnsafeCell::new(Box::new(Generation::new(slots, members, links))),
        }
    }

    /// Enters a read section on `core`'s count (module docs). Any thread
    /// may use any count; a core uses its own, so sections never contend.
    pub fn read(&self, core: usize) -> Reading<'_> {
        let count = &self.readers[core];
        loop {
            let outer = count.fetch_add(1, SeqCst);
            // Pairs with the writer's fence: the increment and the
            // announcement are ordered one way or the other, never missed
            // by both (a store-load pattern, which needs fences).
            fence(SeqCst);
            if outer > 0 || !self.writer.load(SeqCst) {
                break;
            }
            count.fetch_sub(1, SeqCst);
            while self.writer.load(SeqCst) {
                spin_hint();
            }
        }
        // SAFETY: inside a read section, so no write section runs until it
        // leaves; the generation stays in place and allocated.
        let generation = unsafe { &**self.current.get() };
        Reading { routes: self, core, generation }
    }

    /// Rebuilds the mesh over `members` (module docs, "Write"): every task
    /// in transit goes to `relay` with its receiving core, for each
    /// receiver in one queue, each sender's tasks oldest first.
    ///
    /// # Safety
    ///
    /// The caller is in no read section (it would wait for itself), and no
    /// other rebuild runs. `relay` enters none either.
    pub unsafe fn rebuild(
        &self,
        members: impl Fn(usize) -> bool,
        mut relay: impl FnMut(usize, &mut TaskQueue),
    ) {
        let next = Box::new(Generation::new(self.readers.len(), members, self.links));
        let was = self.writer.swap(true, SeqCst);
        debug_assert!(!was, "two rebuilds at once");
        // Pairs with the fence of `read`.
        fence(SeqCst);
        for count in self.readers.iter() {
            while count.load(SeqCst) != 0 {
                spin_hint();
            }
        }
        // SAFETY: alone (above): no read section holds the generation.
        let old = core::mem::replace(unsafe { &mut *self.current.get() }, next);
        // SAFETY: alone, so nothing sends or drains meanwhile.
        unsafe { old.empty_into(&mut relay) };
        self.writer.store(false, SeqCst);
    }
}

/// A read section (dropped: left).
pub struct Reading<'a> {
    routes: &'a Routes,
    core: usize,
    generation: &'a Generation,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.routes.readers[self.core].fetch_sub(1, SeqCst);
    }
}

impl Reading<'_> {
    /// Whether `core` is in the mesh.
    pub fn is_ranked(&self, core: usize) -> bool {
        self.generation.rank(core).is_some()
    }

    /// Sends `task` from `from` to `to`, two different ranked cores.
    /// `Ok(Some(core))`: wake that core. Gives the task back if it needed a
    /// parcel and memory ran out.
    ///
    /// # Safety
    ///
    /// As for [`Mesh::send`]: the caller runs as core `from`.
    pub unsafe fn send(
        &self,
        from: usize,
        to: usize,
        task: NonNull<Task>,
    ) -> Result<Option<usize>, NonNull<Task>> {
        let generation = self.generation;
        let (Some(from), Some(to)) = (generation.rank(from), generation.rank(to)) else {
            unreachable!("a mesh send between cores without ranks")
        };
        // SAFETY: per the contract.
        match unsafe { generation.mesh.send(from, to, task) }? {
            Sent::Queued => Ok(None),
            Sent::Wake(rank) => Ok(Some(generation.core_of[rank])),
        }
    }

    /// Drains core `me`'s lists ([`Mesh::drain`]); `wake` gets cores, not
    /// ranks. Does nothing for a core without a rank.
    ///
    /// # Safety
    ///
    /// As for [`Mesh::drain`]: the caller runs as core `me`.
    pub unsafe fn drain(
        &self,
        me: usize,
        deliver: impl FnMut(NonNull<Task>),
        mut wake: impl FnMut(usize),
    ) -> DrainCounts {
        let generation = self.generation;
        let Some(rank) = generation.rank(me) else { return DrainCounts::default() };
        // SAFETY: per the contract.
        unsafe { generation.mesh.drain(rank, deliver, |rank| wake(generation.core_of[rank])) }
    }

    /// Arms all of core `me`'s lists ([`Mesh::arm`]); `false` if one holds
    /// work.
    pub fn arm(&self, me: usize) -> bool {
        self.generation.rank(me).is_none_or(|rank| self.generation.mesh.arm(rank))
    }

    /// Whether any of core `me`'s lists holds work.
    pub fn has_work(&self, me: usize) -> bool {
        self.generation.rank(me).is_some_and(|rank| self.generation.mesh.has_work(rank))
    }

    /// Takes everything in transit ([`Mesh::empty_into`]), handing `relay`
    /// each receiver's tasks with its core.
    ///
    /// # Safety
    ///
    /// Nothing sends on the mesh or drains it meanwhile.
    pub unsafe fn empty_into(&self, mut relay: impl FnMut(usize, &mut TaskQueue)) {
        // SAFETY: per the contract.
        unsafe { self.generation.empty_into(&mut relay) };
    }

    /// Whether every list is empty.
    pub fn is_empty(&self) -> bool {
        self.generation.mesh.is_empty()
    }
}
