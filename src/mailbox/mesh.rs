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
//! # Past sleeping hops
//!
//! A core asleep has armed its lists, and a push onto an armed list wakes
//! it. A parcel only passing through should not: a hop that wakes, forwards
//! and sleeps again costs a wake-up and a way to sleep per message. So a
//! parcel goes onto a hop's list only if that list is not armed
//! ([`AtomicList::push_chain_unless_armed`]); if it is, the core holding
//! the parcel (its sender, or the hop that forwards it) takes it on itself,
//! to the list the sleeping hop would have pushed it on, and so on past
//! every sleeping hop, at most K of them. Only the receiver's own list is
//! pushed whatever its tag, and the receiver woken if it slept. A list then
//! has more than one pusher: its link's sending core and those passing it.
//!
//! Why a hop may be passed without breaking anyone's order: a list is armed
//! only by its core, only when empty, and only on its way to sleep, when
//! every drain it made has pushed on all it took. Until the next push onto
//! the list, it stays armed. So a sender that finds a hop's list armed has
//! nothing of its own on it or in the hop's hands, and every earlier message
//! it sent that way is further along the same route. Passing the hop puts
//! the new message behind them.
//!
//! # Why each sender's order is kept, end to end
//!
//! The next hop depends only on where a message is and where it goes, so
//! all of one sender's messages for one receiver take the same path, through
//! the same lists, bare or parcelled the same way, whether a hop is passed
//! or not. A list gives its tasks back in push order. A hop handles each list
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
//! ([`Sent::Wake`], or a core handed to a drain's `wake`). A parcel that
//! finds a hop's list armed is not pushed there but carried past, by a core
//! that is running. So a core never sleeps with work on its lists, and a
//! parcel is always on a list or in the hands of a running core until the
//! receiver's list takes it, and that push wakes the receiver if it slept.

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
pub struct DrainCounts {
    /// Tasks handed to `deliver`.
    pub delivered: usize,
    /// Tasks passed on to another core.
    pub forwarded: usize,
    /// Parcels pushed on (after merging).
    pub parcels_pushed: usize,
    /// Lists that held something.
    pub lists: usize,
}

impl core::ops::AddAssign for DrainCounts {
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
        if next == to {
            // SAFETY: ours to give.
            return Ok(Self::pushed(next, unsafe { self.list(next, link, false).push(task) }));
        }
        // SAFETY: the caller gives the task up.
        let parcel = unsafe { Parcel::wrap(to, task) }.ok_or(task)?;
        // SAFETY: a parcel just made, ours.
        Ok(unsafe { self.pass_on(next, link, parcel, to) })
    }

    /// What a push onto one of `core`'s lists obliges its pusher to do.
    fn pushed(core: usize, pushed: Pushed) -> Sent {
        match pushed {
            Pushed::Queued => Sent::Queued,
            Pushed::WasArmed => Sent::Wake(core),
            Pushed::Closed => unreachable!("mesh lists are never closed"),
        }
    }

    /// Puts `parcel`, for core `to`, on core `at`'s parcel list of link
    /// `link`, or, while that list is armed and `at` is not `to`, on the
    /// list past it (see "Past sleeping hops" in the module docs).
    ///
    /// # Safety
    ///
    /// The caller owns `parcel`, made by [`Parcel::wrap`] for `to`, and
    /// gives it up; it runs as a core that may send (see [`Mesh::send`]).
    unsafe fn pass_on(&self, mut at: usize, mut link: usize, parcel: NonNull<Task>, to: usize) -> Sent {
        loop {
            let list = self.list(at, link, true);
            if at == to {
                // SAFETY: ours to give.
                return Self::pushed(at, unsafe { list.push(parcel) });
            }
            // SAFETY: ours to give; kept if the list is armed.
            match unsafe { list.push_chain_unless_armed(parcel, parcel) } {
                Some(pushed) => return Self::pushed(at, pushed),
                None => (at, link) = self.topology.next_hop(at, to),
            }
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
    ) -> DrainCounts {
        let mut done = DrainCounts::default();
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
            let list = self.list(next, link, true);
            // SAFETY: the chain runs from `newest` to `oldest` and is ours,
            // and stays ours if the list is armed.
            match unsafe { list.push_chain_unless_armed(newest, oldest) } {
                Some(pushed) => {
                    if let Sent::Wake(core) = Self::pushed(next, pushed) {
                        wake(core);
                    }
                }
                None => {
                    // `next` sleeps: each parcel goes on, oldest first.
                    // The failed push may have linked `oldest` to the
                    // list's old head: end the chain there again.
                    // SAFETY: the batch's chain is ours.
                    unsafe { Task::set_next(oldest, core::ptr::null_mut()) };
                    let mut parcels = TaskQueue::new();
                    // SAFETY: the batch's chain, ours, ends at `oldest`.
                    unsafe { parcels.append_reversed(Some(newest)) };
                    while let Some(header) = parcels.pop_front() {
                        // SAFETY: a parcel of this drain's batch, ours.
                        let to = unsafe { Parcel::from_header(header) }.to;
                        // SAFETY: ours, given up.
                        if let Sent::Wake(core) = unsafe { self.pass_on(next, link, header, to) } {
                            wake(core);
                        }
                    }
                }
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

pub mod routes;
#[cfg(all(test, feature = "std", not(loom)))]
mod sim;
/// Tasks that say who sent them, to whom, and in what order.
#[cfg(all(test, feature = "std", not(loom)))]
pub(crate) mod stamps;
#[cfg(all(test, feature = "std", not(loom)))]
mod tests;
