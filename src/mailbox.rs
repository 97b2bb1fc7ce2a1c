//! Mailboxes: how a message reaches another core.
//!
//! A message is a task (`crate::task`): a header with one function pointer
//! at the start of its storage. Sending it never copies it and never takes
//! a lock; it changes hands by one compare-exchange on a list head.
//!
//! # How a message travels
//!
//! 1. **The sender pushes.** Core `i` posting to core `j` pushes the task
//!    onto the list that only `i` pushes to and only `j` drains: with
//!    direct mailboxes, the list of the ordered pair `(j, i)`; with the
//!    forwarding mesh, the list of the link from `i` towards `j`
//!    ([`mesh`]). Code outside the pool (another thread, an interrupt
//!    handler) pushes onto `j`'s list for outsiders. Each list is an
//!    [`AtomicList`](list::AtomicList) alone on its cache line.
//! 2. **A sleeping receiver is woken.** Before `j` sleeps it *arms* each of
//!    its lists: it swaps the wake sentinel, a tag bit, into the head. The
//!    push that replaces a sentinel tells its sender that `j` may be
//!    asleep, and the sender wakes it through the sleep protocol
//!    (`crate::sleep`), which rings `j`'s [`doorbell`]: the word that
//!    decides whether the platform must send an event or an interrupt.
//! 3. **Forwarding, with the mesh.** A message whose next hop is not its
//!    receiver travels in a parcel; each core between sender and receiver
//!    passes parcels on as it drains its own lists, keeping each sender's
//!    order ([`mesh`], with its ranks in [`mesh::routes`]).
//! 4. **The receiver drains.** Between tasks, `j` takes each inbound list
//!    whole with one swap, reverses each batch to restore its sender's
//!    order, and runs the closures there ([`inbound`]: the pool's choice of
//!    direct lists or the mesh, and the two lanes: closures that must run
//!    on `j`, and woken fibres that only prefer it and may be stolen).
//!
//! A strand made runnable goes one step further: into its fibre's
//! [`inbox`](inbox::Inbox), whose first push schedules the fibre, which then
//! travels as a message like any other.
//!
//! # Where the parts sit in the layers (`docs/layout.md`)
//!
//! - [`doorbell`] depends on nothing but atomics, and platforms build their
//!   waits on it (`crate::platform` re-exports it), so it sits in the base
//!   layer.
//! - [`list`] is the list every queue of tasks is made of: mailboxes, the
//!   injector, steal lists, and the block caches' return lists
//!   (`crate::task::storage`). It sits with the tasks.
//! - [`inbox`], [`mesh`] and [`inbound`] sit above tasks and below the pool.
//!
//! Every lock-free protocol here states its spec and proof sketch beside
//! its code and has a loom model: `tests/loom_mailbox.rs`, `loom_inbox`,
//! `loom_mesh`, `loom_routes`, `loom_doorbell` and `loom_core_hints`
//! (the hint that lets a thief pass over a core with no woken fibres).

pub mod doorbell;
#[cfg(not(loom))]
pub(crate) mod inbound;
pub mod inbox;
pub mod list;
#[cfg(not(loom))]
mod pairs;
// Parts of the mesh's interface (building one alone, its sizes) serve only
// its tests, its loom model and the simulator.
#[cfg_attr(not(test), allow(dead_code))]
pub mod mesh;
