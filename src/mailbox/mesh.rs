//! A forwarding mesh: mailboxes for many cores in O(N log N) lists.
//!
//! Direct mailboxes give every ordered pair of cores its own list: N² of
//! them, each alone on a cache line (a megabyte per pool at 64 cores, 16
//! at 256), and a core looking for work reads N of them. In the mesh a
//! core has lists from only K = ⌈log₂ N⌉ neighbours, and a message for any
//! other core is forwarded by the cores between.
//!
//! A pool uses it through [`routes`], which ranks the pool's cores and
//! rebuilds the mesh as they come and go.
//!
//! # Topology
//!
//! Core `c` has K inbound *links*: link `k` brings what core `c − 2ᵏ`
//! (mod N) sends, so `c` sends to `c + 2ᵏ`. A message at core `a` for core
//! `t` goes `2ᵏ` further, for the largest `2ᵏ` not past the distance
//! `(t − a) mod N` that remains. Each hop clears the distance's top bit, so
//! a message takes one hop per set bit of its first distance: at most K.
//! [`Topology::with_links`] gives cores fewer links (one: a ring), which
//! makes messages take more hops; tests use it to force forwarding.
//!
//! Each link is two lists. A message whose next hop is its receiver is
//! pushed *bare* on the first. Any other travels in a *parcel* on the
//! second: a header that names the receiver and holds the receiver's
//! tasks, oldest first. Bare tasks and parcels never share a list, so a
//! core never has to tell one from the other.
//!
//! # Forwarding
//!
//! [`Mesh::drain`] takes each of the core's lists whole. Bare tasks, and
//! the tasks of parcels for this core, are delivered oldest first per
//! list. Every other parcel goes on to its next hop. Parcels bound through
//! the same link are gathered and pushed together, one compare-exchange
//! per link and drain, and consecutive parcels for the same receiver
//! become one (their tasks in order), so a busy path carries batches.
//!
//! # Why each sender's order is kept, end to end
//!
//! The next hop depends only on where a message is and where it goes, so
//! all of one sender's messages for one receiver take the same path, bare
//! or parcelled the same way. Each list has one pusher (the link's sending
//! core) and gives its tasks back in push order. A hop handles each list
//! oldest first, appends parcels to its outgoing batches in that order,
//! merges a later parcel's tasks after an earlier one's, and pushes one
//! drain's batches before the next drain takes anything. So at every hop
//! a sender's messages for a receiver stay in sending order.
//!
//! # Why nothing is lost or stranded in transit
//!
//! Every push is onto the tagged lists of `super::list`, which lose
//! nothing. A message is at all times either in one list or held by the
//! core draining it, which is running: a drain returns only after every
//! batch it took is pushed on. A core that means to sleep first calls
//! [`Mesh::arm`], which arms all its lists or reports one that holds work;
//! a push onto an armed list returns the duty to wake its core
//! ([`Sent::Wake`], or a core handed to a drain's `wake`). So a hop that
//! falls asleep with a parcel on its way to it is woken by that push, and
//! forwards it; it never sleeps holding one.

use super::list::{AtomicList, Pushed};
use crate::atomics::CachePadded;
use crate::task::queue::TaskQueue;
use crate::task::storage::BlockCache;
use crate::task::{Action, Task};
use alloc::boxed::Box;
use core::ptr::NonNull;

/// The most links a core can have: one per bit of a core index.
const MAX_LINKS: usize = usize::BITS as usize;

/// Which core sends to which, and the way from any core to any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    cores: usize,
    links: usize,
}

impl Topology {
    /// `cores` cores (at least 1), each with ⌈log₂ cores⌉ links.
    pub fn new(cores: usize) -> Self {
        Self::with_links(cores, MAX_LINKS)
    }

    /// As [`Topology::new`], with at most `most` links per core (at least
    /// one if there are two cores or more).
    pub fn with_links(cores: usize, most: usize) -> Self {
        assert!(cores > 0, "a mesh has at least one core");
        let full = (usize::BITS - (cores - 1).leading_zeros()) as usize;
        Self { cores, links: full.min(most.max(1)) }
    }

    /// How many cores.
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// Links per core.
    pub fn links(&self) -> usize {
        self.links
    }

    /// The core that link `link` of any core reaches from `core`: `core + 2ˡⁱⁿᵏ`.
    pub fn neighbour(&self, core: usize, link: usize) -> usize {
        (core + (1 << link) % self.cores) % self.cores
    }

    /// The next core on the way from `at` to `to` (`at != to`), and the link
    /// the message arrives there on.
    pub fn next_hop(&self, at: usize, to: usize) -> (usize, usize) {
        debug_assert!(at != to && at < self.cores && to < self.cores);
        let distance = (to + self.cores - at) % self.cores;
        let link = ((usize::BITS - 1 - distance.leading_zeros()) as usize).min(self.links - 1);
        (self.neighbour(at, link), link)
    }

    /// How many hops a message from `from` to `to` takes (0 to itself).
    pub fn hops(&self, from: usize, to: usize) -> usize {
        let (mut at, mut hops) = (from, 0);
        while at != to {
            at = self.next_hop(at, to).0;
            hops += 1;
        }
        hops
    }
}

/// A parcel: tasks for one receiver, travelling through other cores. Its
/// header lets it sit in the lists; it is never run.
#[repr(C)]
struct Parcel {
    header: Task,
    to: usize,
    tasks: TaskQueue,
}

/// A parcel's header is never called: parcels are opened, not run.
unsafe fn never_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("a mesh parcel was run as a task");
}

impl Parcel {
    /// A parcel holding `task` for `to`; `None` if memory ran out.
    ///
    /// # Safety
    ///
    /// The caller owns `task` and gives it to the parcel.
    unsafe fn wrap(to: usize, task: NonNull<Task>) -> Option<NonNull<Task>> {
        let layout = core::alloc::Layout::new::<Parcel>();
        // SAFETY: a parcel has a non-zero size.
        let memory = NonNull::new(unsafe { alloc::alloc::alloc(layout) }.cast::<Parcel>())?;
        let mut tasks = TaskQueue::new();
        // SAFETY: the caller gives the task up.
        unsafe { tasks.push_back(task) };
        // SAFETY: fresh memory with a parcel's layout.
        unsafe { memory.write(Parcel { header: Task::new(never_run), to, tasks }) };
        Some(memory.cast())
    }

    /// The parcel whose header `task` is.
    ///
    /// # Safety
    ///
    /// `task` came from [`Parcel::wrap`], is owned by the caller and not freed.
    unsafe fn from_header<'a>(task: NonNull<Task>) -> &'a mut Parcel {
        // SAFETY: per the contract; the header is the parcel's first field.
        unsafe { &mut *task.cast::<Parcel>().as_ptr() }
    }

    /// Frees the parcel, which must hold no tasks.
    ///
    /// # Safety
    ///
    /// As for [`Parcel::from_header`]; the parcel is not touched again.
    unsafe fn free(task: NonNull<Task>) {
        // SAFETY: per the contract: a box's worth of parcel from `wrap`,
        // which allocated it with the global allocator and this layout.
        let parcel = unsafe { Box::from_raw(task.cast::<Parcel>().as_ptr()) };
        debug_assert_eq!(parcel.tasks.len(), 0, "a parcel freed with tasks in it");
    }
}

/// What a send obliges its caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a send that found its list armed must wake that core"]
pub enum Sent {
    /// Queued; nobody needs waking.
    Queued,
    /// Queued on the lists of this core, which may be asleep: wake it.
    Wake(usize),
}

/// What a drain did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Tasks handed to `deliver`.
    pub delivered: usize,
    /// Tasks passed on to another core.
    pub forwarded: usize,
    /// Parcels pushed on (after merging).
    pub parcels_pushed: usize,
    /// Lists that held something.
    pub lists: usize,
}

impl core::ops::AddAssign for Drained {
    fn add_assign(&mut self, other: Self) {
        self.delivered += other.delivered;
        self.forwarded += other.forwarded;
        self.parcels_pushed += other.parcels_pushed;
        self.lists += other.lists;
    }
}

/// Parcels gathered for one link during a drain: a chain linked newest
/// first, as `AtomicList::push_chain` takes it.
#[derive(Clone, Copy)]
struct Batch {
    newest: Option<NonNull<Task>>,
    oldest: Option<NonNull<Task>>,
}

/// The mesh's lists for N cores.
pub struct Mesh {
    topology: Topology,
    /// By receiving core, then link, then bare (0) or parcels (1).
    lists: Box<[CachePadded<AtomicList>]>,
}

impl Mesh {
    /// A mesh over `topology`, every list empty and not armed.
    pub fn new(topology: Topology) -> Self {
        Self::with_lists(topology, AtomicList::new)
    }

    /// A mesh over `topology`, every list empty and armed: the first push
    /// onto each wakes its core (`routes`: a core that slept on an older
    /// mesh's lists).
    pub fn new_armed(topology: Topology) -> Self {
        Self::with_lists(topology, AtomicList::new_armed)
    }

    fn with_lists(topology: Topology, list: impl Fn() -> AtomicList) -> Self {
        let lists = (0..topology.cores * topology.links * 2).map(|_| CachePadded(list())).collect();
        Self { topology, lists }
    }

    /// Its topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The bytes its lists take.
    pub fn list_bytes(&self) -> usize {
        core::mem::size_of_val::<[CachePadded<AtomicList>]>(&self.lists)
    }

    fn list(&self, core: usize, link: usize, parcels: bool) -> &AtomicList {
        &self.lists[(core * self.topology.links + link) * 2 + usize::from(parcels)]
    }

    fn inbound(&self, core: usize) -> impl Iterator<Item = &AtomicList> {
        let per_core = self.topology.links * 2;
        self.lists[core * per_core..(core + 1) * per_core].iter().map(|list| &list.0)
    }

    /// Sends `task` from core `from` to core `to` (another core). Gives the
    /// task back if it needed a parcel and memory ran out.
    ///
    /// # Safety
    ///
    /// The caller runs as core `from` (no other thread sends as `from` or
    /// drains `from` meanwhile), owns `task` and gives it up.
    pub unsafe fn send(&self, from: usize, to: usize, task: NonNull<Task>) -> Result<Sent, NonNull<Task>> {
        let (next, link) = self.topology.next_hop(from, to);
        let (item, list) = if next == to {
            (task, self.list(next, link, false))
        } else {
            // SAFETY: the caller gives the task up.
            let parcel = unsafe { Parcel::wrap(to, task) }.ok_or(task)?;
            (parcel, self.list(next, link, true))
        };
        // SAFETY: ours to give; the mesh's lists are never closed.
        match unsafe { list.push(item) } {
            Pushed::Queued => Ok(Sent::Queued),
            Pushed::WasArmed => Ok(Sent::Wake(next)),
            Pushed::Closed => unreachable!("mesh lists are never closed"),
        }
    }

    /// Takes everything on core `me`'s lists: each task for `me` goes to
    /// `deliver`, oldest first for each sender, and every parcel for
    /// another core is pushed on its way; `wake` gets each core whose
    /// armed list such a push found.
    ///
    /// # Safety
    ///
    /// The caller runs as core `me`, as for [`Mesh::send`].
    pub unsafe fn drain(
        &self,
        me: usize,
        mut deliver: impl FnMut(NonNull<Task>),
        mut wake: impl FnMut(usize),
    ) -> Drained {
        let mut done = Drained::default();
        let mut batches = [Batch { newest: None, oldest: None }; MAX_LINKS];
        for link in 0..self.topology.links {
            let mut bare = TaskQueue::new();
            // SAFETY: a taken chain is ours.
            let taken = unsafe { bare.append_reversed(self.list(me, link, false).take_all()) };
            done.delivered += taken;
            done.lists += usize::from(taken > 0);
            core::iter::from_fn(|| bare.pop_front()).for_each(&mut deliver);
            let mut parcels = TaskQueue::new();
            // SAFETY: as above.
            done.lists +=
                usize::from(unsafe { parcels.append_reversed(self.list(me, link, true).take_all()) } > 0);
            while let Some(header) = parcels.pop_front() {
                // SAFETY: only parcels are pushed on parcel lists; this one
                // is ours now.
                let parcel = unsafe { Parcel::from_header(header) };
                if parcel.to == me {
                    done.delivered += parcel.tasks.len();
                    core::iter::from_fn(|| parcel.tasks.pop_front()).for_each(&mut deliver);
                    // SAFETY: emptied, and not touched again.
                    unsafe { Parcel::free(header) };
                    continue;
                }
                done.forwarded += parcel.tasks.len();
                let (_, out) = self.topology.next_hop(me, parcel.to);
                // SAFETY: the batch holds only parcels this drain owns.
                unsafe { Self::gather(&mut batches[out], header) };
            }
        }
        for (link, batch) in batches.iter().enumerate().take(self.topology.links) {
            let (Some(newest), Some(oldest)) = (batch.newest, batch.oldest) else { continue };
            let next = self.topology.neighbour(me, link);
            let mut cursor = Some(newest);
            while let Some(parcel) = cursor {
                done.parcels_pushed += 1;
                // SAFETY: a chain of parcels this drain owns.
                cursor = if parcel == oldest { None } else { NonNull::new(unsafe { Task::next(parcel) }) };
            }
            // SAFETY: the chain runs from `newest` to `oldest` and is ours;
            // the list is never closed.
            if unsafe { self.list(next, link, true).push_chain(newest, oldest) } == Pushed::WasArmed {
                wake(next);
            }
        }
        done
    }

    /// Adds parcel `header` to `batch`, as the newest; merged into the
    /// newest parcel there if both are for the same core.
    ///
    /// # Safety
    ///
    /// The caller owns the parcel and every parcel in the batch.
    unsafe fn gather(batch: &mut Batch, header: NonNull<Task>) {
        if let Some(newest) = batch.newest {
            // SAFETY: both are parcels the caller owns.
            let (last, parcel) = unsafe { (Parcel::from_header(newest), Parcel::from_header(header)) };
            if last.to == parcel.to {
                last.tasks.append(&mut parcel.tasks);
                // SAFETY: emptied, and not touched again.
                unsafe { Parcel::free(header) };
                return;
            }
        }
        // SAFETY: owned; linked newest first.
        unsafe { Task::set_next(header, batch.newest.map_or(core::ptr::null_mut(), NonNull::as_ptr)) };
        batch.oldest = batch.oldest.or(Some(header));
        batch.newest = Some(header);
    }

    /// Takes everything in transit and hands each receiver's tasks to
    /// `relay` in one queue: sorted by hops still to go, fewest first, and
    /// in list order within a list, which keeps each sender's order (a
    /// message further along its fixed route is older).
    ///
    /// # Safety
    ///
    /// Nothing sends on the mesh or drains it meanwhile.
    pub unsafe fn empty_into(&self, mut relay: impl FnMut(usize, &mut TaskQueue)) {
        // (receiver, hops to go, task), in list order.
        let mut found = alloc::vec::Vec::new();
        let mut taken = TaskQueue::new();
        for core in 0..self.topology.cores {
            for link in 0..self.topology.links {
                // SAFETY: a taken chain is ours.
                unsafe { taken.append_reversed(self.list(core, link, false).take_all()) };
                found.extend(core::iter::from_fn(|| taken.pop_front()).map(|task| (core, 0, task)));
                // SAFETY: as above.
                unsafe { taken.append_reversed(self.list(core, link, true).take_all()) };
                while let Some(header) = taken.pop_front() {
                    // SAFETY: only parcels are pushed on parcel lists; ours now.
                    let parcel = unsafe { Parcel::from_header(header) };
                    let (to, to_go) = (parcel.to, self.topology.hops(core, parcel.to));
                    found.extend(
                        core::iter::from_fn(|| parcel.tasks.pop_front()).map(|task| (to, to_go, task)),
                    );
                    // SAFETY: emptied, and not touched again.
                    unsafe { Parcel::free(header) };
                }
            }
        }
        // Stable: list order stays within equal keys.
        found.sort_by_key(|&(to, to_go, _)| (to, to_go));
        let mut rest = found.into_iter().peekable();
        while let Some(&(to, _, _)) = rest.peek() {
            let mut queue = TaskQueue::new();
            while let Some((_, _, task)) = rest.next_if(|&(next, _, _)| next == to) {
                // SAFETY: taken above, so ours.
                unsafe { queue.push_back(task) };
            }
            relay(to, &mut queue);
        }
    }

    /// Core `me` about to sleep: arms every one of its lists, so the next
    /// push onto any of them obliges its pusher to wake `me`. Returns
    /// `false` if some list holds work: `me` must drain instead of
    /// sleeping (lists armed meanwhile stay armed: at worst a spurious
    /// wake).
    pub fn arm(&self, me: usize) -> bool {
        // `all` stops at the first list that holds work.
        self.inbound(me).all(|list| list.arm_if_empty() || list.is_armed())
    }

    /// Whether any of core `me`'s lists holds work.
    pub fn has_work(&self, me: usize) -> bool {
        self.inbound(me).any(AtomicList::has_tasks)
    }

    /// Whether every list is empty (tags aside).
    pub fn is_empty(&self) -> bool {
        self.lists.iter().all(|list| !list.has_tasks())
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        debug_assert!(self.is_empty(), "a mesh dropped with messages in it");
    }
}

/// Tasks that say who sent them, to whom, and in what order.
#[cfg(all(test, feature = "std", not(loom)))]
pub(crate) mod stamps {
    use super::*;

    #[repr(C)]
    struct Stamped {
        task: Task,
        stamp: Stamp,
    }

    /// Who sent a message, to whom, and its place in the sender's order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Stamp {
        pub(crate) from: usize,
        pub(crate) to: usize,
        pub(crate) seq: usize,
    }

    unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
        unreachable!("mesh tests only move tasks");
    }

    pub(crate) fn stamped(from: usize, to: usize, seq: usize) -> NonNull<Task> {
        NonNull::from(Box::leak(Box::new(Stamped {
            task: Task::new(not_run),
            stamp: Stamp { from, to, seq },
        })))
        .cast()
    }

    /// Takes a delivered task back.
    pub(crate) fn unstamp(task: NonNull<Task>) -> Stamp {
        // SAFETY: made by `stamped` from a leaked box, delivered once.
        unsafe { Box::from_raw(task.cast::<Stamped>().as_ptr()) }.stamp
    }

    /// What the cores received: counts messages delivered to the wrong
    /// core, twice, or before one sent earlier by the same sender to the
    /// same receiver.
    pub(crate) struct Ledger {
        cores: usize,
        /// Next sequence number expected, by (receiver, sender).
        next: Vec<usize>,
        pub(crate) received: usize,
        pub(crate) misdelivered: usize,
        /// Delivered again, or after a later one (the sequence went back).
        pub(crate) duplicated: usize,
        /// Delivered before an earlier one (the sequence skipped).
        pub(crate) overtaking: usize,
    }

    impl Ledger {
        pub(crate) fn new(cores: usize) -> Self {
            Self {
                cores,
                next: vec![0; cores * cores],
                received: 0,
                misdelivered: 0,
                duplicated: 0,
                overtaking: 0,
            }
        }

        pub(crate) fn receive(&mut self, me: usize, task: NonNull<Task>) {
            let stamp = unstamp(task);
            self.received += 1;
            if stamp.to != me {
                self.misdelivered += 1;
                return;
            }
            let next = &mut self.next[me * self.cores + stamp.from];
            match stamp.seq.cmp(next) {
                core::cmp::Ordering::Less => self.duplicated += 1,
                core::cmp::Ordering::Greater => self.overtaking += 1,
                core::cmp::Ordering::Equal => {}
            }
            *next = (*next).max(stamp.seq + 1);
        }

        /// Drains every core of `mesh` once, in turn, into this ledger.
        ///
        /// # Safety
        ///
        /// The calling thread alone plays every core of `mesh`.
        pub(crate) unsafe fn drain_each(&mut self, mesh: &Mesh) -> Drained {
            let mut total = Drained::default();
            for me in 0..mesh.topology().cores() {
                // SAFETY: the caller plays every core, one at a time.
                total += unsafe { mesh.drain(me, |task| self.receive(me, task), |_| {}) };
            }
            total
        }

        /// Messages from `from` that `to` received, if all came in order.
        pub(crate) fn count(&self, from: usize, to: usize) -> usize {
            self.next[to * self.cores + from]
        }

        /// Fails unless exactly `sent` messages came, each once, to its
        /// receiver, in its sender's order.
        pub(crate) fn check(&self, sent: usize, what: &str) {
            assert_eq!(
                (self.received, self.misdelivered, self.duplicated, self.overtaking),
                (sent, 0, 0, 0),
                "{what}: (received, misdelivered, duplicated, overtaking) of {sent} sent"
            );
        }
    }
}

pub mod routes;

#[cfg(all(test, feature = "std", not(loom)))]
mod sim;

#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::stamps::{Ledger, stamped};
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::{Arc, Barrier};
    use std::thread;

    #[test]
    fn every_core_reaches_every_other_in_at_most_its_link_count_of_hops() {
        let (small, large) =
            if cfg!(miri) { (12, &[257][..]) } else { (70, &[255, 256, 257, 1000, 1024][..]) };
        for cores in (1..=small).chain(large.iter().copied()) {
            let topology = Topology::new(cores);
            let links = topology.links();
            // The fewest doublings of one that reach the core count.
            assert_eq!(links, (0..).find(|&k| 1usize << k >= cores).unwrap(), "{cores} cores");
            let step = if cores > 100 { 37 } else { 1 };
            for from in (0..cores).step_by(step) {
                for to in (0..cores).step_by(step) {
                    let hops = topology.hops(from, to);
                    let distance = (to + cores - from) % cores;
                    assert_eq!(hops, distance.count_ones() as usize, "{cores} cores: {from} to {to}");
                    assert!(hops <= links);
                }
            }
        }
        // A ring: every hop is one core on.
        let ring = Topology::with_links(5, 1);
        assert_eq!((ring.links(), ring.hops(0, 4), ring.hops(3, 2)), (1, 4, 4));
    }

    /// Every core sends `each` messages to every other core, then all
    /// drain in turn until nothing is left.
    fn all_to_all_in_turns(topology: Topology, each: usize) -> Drained {
        let cores = topology.cores();
        let mesh = Mesh::new(topology);
        let mut ledger = Ledger::new(cores);
        for seq in 0..each {
            for from in 0..cores {
                for to in (0..cores).filter(|&to| to != from) {
                    // SAFETY: one thread plays every core in turn; the task is fresh.
                    let _ = unsafe { mesh.send(from, to, stamped(from, to, seq)) }.expect("memory");
                }
            }
        }
        let mut total = Drained::default();
        while !mesh.is_empty() {
            // SAFETY: this thread plays every core.
            total += unsafe { ledger.drain_each(&mesh) };
        }
        ledger.check(each * cores * (cores - 1), "all to all in turns");
        total
    }

    #[test]
    fn messages_arrive_once_in_order_through_any_topology() {
        let all = [(2, 1), (3, 1), (4, 1), (4, 2), (8, 3), (13, 4), (16, 2)];
        let (topologies, each) = if cfg!(miri) { (&all[1..5], 2) } else { (&all[..], 20) };
        for &(cores, links) in topologies {
            let done = all_to_all_in_turns(Topology::with_links(cores, links), each);
            let topology = Topology::with_links(cores, links);
            let hops: usize = (0..cores)
                .flat_map(|from| (0..cores).map(move |to| (from, to)))
                .map(|(f, t)| topology.hops(f, t))
                .sum();
            // Each message is pushed once per hop: once by its sender, the
            // rest by the cores that forward it.
            assert_eq!(done.forwarded, each * (hops - cores * (cores - 1)), "{cores} cores, {links} links");
            if cores >= 3 && links == 1 {
                assert!(done.parcels_pushed < done.forwarded, "forwarded parcels were merged into batches");
            }
        }
    }

    /// Messages caught at every point of their routes (some cores have
    /// drained, some not) are relayed once each, and each sender's come
    /// out in the order it sent them.
    #[test]
    fn what_is_taken_out_in_transit_keeps_each_senders_order() {
        let (cores, each) = if cfg!(miri) { (5, 2) } else { (9, 6) };
        let mesh = Mesh::new(Topology::with_links(cores, 1));
        let mut ledger = Ledger::new(cores);
        let mut sent = 0;
        for seq in 0..each {
            for from in 0..cores {
                for to in (0..cores).filter(|&to| to != from) {
                    // SAFETY: one thread plays every core in turn; the task is fresh.
                    let _ = unsafe { mesh.send(from, to, stamped(from, to, seq)) }.expect("memory");
                    sent += 1;
                }
            }
            // Between rounds, some cores drain: later messages queue
            // behind earlier ones at different points of the ring.
            for core in (0..cores).filter(|core| (core + seq) % 3 == 0) {
                // SAFETY: this thread plays every core.
                unsafe { mesh.drain(core, |task| ledger.receive(core, task), |_| {}) };
            }
        }
        // SAFETY: nothing else sends or drains.
        unsafe {
            mesh.empty_into(|to, queue| {
                core::iter::from_fn(|| queue.pop_front()).for_each(|task| ledger.receive(to, task))
            })
        };
        assert!(mesh.is_empty());
        ledger.check(sent, "taken out in transit");
    }

    #[test]
    fn a_core_with_work_on_its_lists_does_not_arm() {
        let mesh = Mesh::new(Topology::with_links(3, 1));
        assert!(mesh.arm(1));
        assert!(mesh.arm(1), "arming twice is harmless");
        // SAFETY: one thread plays every core; fresh tasks.
        unsafe {
            assert_eq!(mesh.send(0, 2, stamped(0, 2, 0)), Ok(Sent::Wake(1)), "the hop was armed");
            assert_eq!(mesh.send(0, 2, stamped(0, 2, 1)), Ok(Sent::Queued));
        }
        assert!(!mesh.arm(1), "a parcel waits at the hop");
        assert!(mesh.arm(2));
        let mut woken = Vec::new();
        // SAFETY: as above.
        let done =
            unsafe { mesh.drain(1, |_| unreachable!("nothing is for the hop"), |core| woken.push(core)) };
        assert_eq!(
            (done.forwarded, done.parcels_pushed, woken.as_slice()),
            (2, 1, &[2][..]),
            "one batch woke the receiver"
        );
        let mut ledger = Ledger::new(3);
        // SAFETY: as above.
        unsafe { mesh.drain(2, |task| ledger.receive(2, task), |_| {}) };
        ledger.check(2, "through the hop");
        assert_eq!(ledger.count(0, 2), 2);
    }

    /// One thread per core: every core sends to every other while draining,
    /// and sleeps (on a doorbell, after arming its lists) when it has
    /// nothing to do, until it has received everything sent to it.
    #[test]
    fn threads_as_cores_lose_nothing_with_forced_forwarding() {
        for cores in [2, 3, 4] {
            threads_as_cores(Topology::with_links(cores, 1), if cfg!(miri) { 3 } else { 2_000 });
        }
        threads_as_cores(Topology::new(8), if cfg!(miri) { 2 } else { 500 });
    }

    pub(super) fn threads_as_cores(topology: Topology, each: usize) {
        let cores = topology.cores();
        let mesh = Arc::new(Mesh::new(topology));
        let doorbells: Arc<Vec<AtomicBool>> = Arc::new((0..cores).map(|_| AtomicBool::new(false)).collect());
        let finished = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(cores));
        let threads: Vec<_> = (0..cores)
            .map(|me| {
                let (mesh, doorbells, finished, start) = (mesh.clone(), doorbells.clone(), finished.clone(), start.clone());
                thread::spawn(move || {
                    let ring = |core: usize| {
                        doorbells[core].store(true, SeqCst);
                        thread::yield_now();
                    };
                    let mut ledger = Ledger::new(cores);
                    let expected = each * (cores - 1);
                    start.wait();
                    let mut sent = 0;
                    let mut done_counted = false;
                    loop {
                        // Send a few, then look at the lists.
                        for _ in 0..3 {
                            if sent == each * (cores - 1) {
                                break;
                            }
                            let (seq, offset) = (sent / (cores - 1), sent % (cores - 1));
                            let to = (me + 1 + offset) % cores;
                            // SAFETY: this thread is core `me`; fresh task.
                            if let Sent::Wake(core) = unsafe { mesh.send(me, to, stamped(me, to, seq)) }.expect("memory") {
                                ring(core);
                            }
                            sent += 1;
                        }
                        // SAFETY: as above.
                        unsafe { mesh.drain(me, |task| ledger.receive(me, task), ring) };
                        if ledger.received == expected && sent == each * (cores - 1) && !done_counted {
                            done_counted = true;
                            finished.fetch_add(1, SeqCst);
                        }
                        if finished.load(SeqCst) == cores && !mesh.has_work(me) {
                            break;
                        }
                        if sent == each * (cores - 1) && mesh.arm(me) {
                            // Asleep until rung; someone must ring if a push
                            // found our lists armed. Others finishing ring
                            // too, so nobody sleeps past the end.
                            let asleep = std::time::Instant::now();
                            while !doorbells[me].swap(false, SeqCst) {
                                if finished.load(SeqCst) == cores {
                                    break;
                                }
                                assert!(
                                    ledger.received == expected || asleep.elapsed().as_secs() < 60,
                                    "core {me} of {cores} slept 60 s short of its messages: a wake-up was lost"
                                );
                                thread::yield_now();
                            }
                        }
                    }
                    (me, ledger)
                })
            })
            .collect();
        for thread in threads {
            let (me, ledger) = thread.join().expect("a core thread");
            ledger.check(each * (cores - 1), &format!("core {me} of {cores}"));
        }
        assert!(mesh.is_empty());
    }
}
