//! loom model of a pool's routes (src/mailbox/mesh/routes.rs): the mesh
//! rebuilt while messages are on their way, when a core leaves.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_routes`
//!
//! Three cores in a ring (one link each): core 0's messages for core 2 go
//! through core 1. Each core has a direct list, as a pool's cores do for
//! code outside the pool; a rebuild relays what was in transit there, and
//! a core without a rank sends and is sent to through them (the pool's
//! `Inbound`). Checked:
//!
//! - **The target leaves** while a forward is on its way to it: core 2
//!   rebuilds the routes without itself, then closes its direct list
//!   and keeps what was there. Every message core 0 sent is either
//!   received by core 2 once, in order, or refused back to core 0 after
//!   the close; none is left anywhere.
//! - **The hop leaves** while it holds a forward: core 1 rebuilds the
//!   routes without itself. Core 2 receives every message once, in
//!   order: the relayed one before any that took the new, direct route.
#![cfg(loom)]

use loom::thread;
use roving::loom_api::{Action, AtomicList, BlockCache, Pushed, Routes, Task, TaskQueue};
use std::ptr::NonNull;
use std::sync::Arc;

#[repr(C)]
struct Item {
    task: Task,
    seq: usize,
}

/// Never called: the model only moves tasks.
unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("the model does not run tasks");
}

fn item(seq: usize) -> NonNull<Task> {
    NonNull::from(Box::leak(Box::new(Item { task: Task::new(not_run), seq }))).cast()
}

fn seq_of(task: NonNull<Task>) -> usize {
    // SAFETY: made by `item`, handed over once.
    unsafe { Box::from_raw(task.cast::<Item>().as_ptr()) }.seq
}

struct Cores {
    routes: Routes,
    direct: [AtomicList; 3],
}

impl Cores {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            routes: Routes::new(3, |_| true, 1),
            direct: [AtomicList::new(), AtomicList::new(), AtomicList::new()],
        })
    }

    /// Core 0 sends `seq` to core 2, as the pool does: through the mesh if
    /// both have ranks, else through core 2's direct list. Returns whether
    /// it was taken (not refused).
    fn send(&self, seq: usize) -> bool {
        let reading = self.routes.read(0);
        if reading.is_ranked(0) && reading.is_ranked(2) {
            // SAFETY: this thread is core 0; the task is new.
            unsafe { reading.send(0, 2, item(seq)) }.expect("memory");
            return true;
        }
        // SAFETY: the task is new.
        match unsafe { self.direct[2].push(item(seq)) } {
            Pushed::Closed => false,
            _ => true,
        }
    }

    /// One drain of core `me`: its direct list first, then the mesh, as
    /// the pool does (or, `mesh_first`, the other way round).
    fn drain_in_order(&self, me: usize, mesh_first: bool) -> Vec<usize> {
        let mut got = TaskQueue::new();
        let reading = self.routes.read(me);
        let direct = |got: &mut TaskQueue| {
            // SAFETY: a taken chain is ours.
            unsafe { got.append_reversed(self.direct[me].take_all()) };
        };
        if !mesh_first {
            direct(&mut got);
        }
        // SAFETY: this thread is core `me`; delivered tasks are ours.
        unsafe { reading.drain(me, |task| got.push_back(task), |_| {}) };
        if mesh_first {
            direct(&mut got);
        }
        drop(reading);
        core::iter::from_fn(|| got.pop_front()).map(seq_of).collect()
    }

    fn drain(&self, me: usize) -> Vec<usize> {
        self.drain_in_order(me, false)
    }

    /// Rebuilds the routes without core `leaving`, relaying what was in
    /// transit to the receivers' direct lists.
    fn leave(&self, leaving: usize) {
        let relay = |to: usize, tasks: &mut TaskQueue| {
            while let Some(task) = tasks.pop_front() {
                // SAFETY: relayed, so ours to give.
                let pushed = unsafe { self.direct[to].push(task) };
                assert!(pushed != Pushed::Closed, "relayed to a closed list");
            }
        };
        // SAFETY: this thread is in no read section; one rebuild at a time.
        unsafe { self.routes.rebuild(|core| core != leaving, relay) };
    }

    fn nothing_left(&self) -> bool {
        self.routes.read(0).is_empty() && self.direct.iter().all(|list| !list.has_tasks())
    }
}

// Loom cannot bound two threads spinning at once (here, two read
// sections waiting for a rebuild), so each model has one thread that may
// wait: the first plays both core 0 and the hop; the second drains
// core 2 only after the others are done.

#[test]
fn a_forward_racing_the_target_leaving_is_received_or_refused() {
    loom::model(|| {
        let cores = Cores::new();
        let sender_and_hop = {
            let cores = cores.clone();
            thread::spawn(move || {
                let first = cores.send(0);
                assert!(cores.drain(1).is_empty(), "nothing was for the hop");
                [first, cores.send(1)]
            })
        };
        // Core 2: one drain, then it leaves: out of the routes, then its
        // direct list closed, keeping what was there.
        let mut got = cores.drain(2);
        cores.leave(2);
        let mut kept = TaskQueue::new();
        // SAFETY: a taken chain is ours.
        unsafe { kept.append_reversed(cores.direct[2].take_all_and_close()) };
        got.extend(core::iter::from_fn(|| kept.pop_front()).map(seq_of));
        let taken = sender_and_hop.join().unwrap();
        let expected: Vec<usize> = (0..2).filter(|&seq| taken[seq]).collect();
        assert_eq!(got, expected, "each message taken is received once, in order");
        // Refused only after the close: nothing taken after one refused.
        assert!(taken[0] || !taken[1], "taken after a refusal: {taken:?}");
        // A message the hop did not forward before the rebuild was relayed.
        assert!(cores.nothing_left(), "a message was left behind");
    });
}

/// Core 0 sends two messages to core 2 while the hop leaves; core 2
/// drains once the others are done (`mesh_first`: its mesh lists before
/// its direct list).
fn hop_leaves(mesh_first: bool) {
    loom::model(move || {
        let cores = Cores::new();
        let sender = {
            let cores = cores.clone();
            thread::spawn(move || (0..2).for_each(|seq| assert!(cores.send(seq), "core 2 stays")))
        };
        let hop = {
            let cores = cores.clone();
            thread::spawn(move || {
                assert!(cores.drain(1).is_empty(), "nothing was for the hop");
                cores.leave(1);
            })
        };
        sender.join().unwrap();
        hop.join().unwrap();
        // A relayed message (direct list) comes before one that took the
        // new route (mesh).
        assert_eq!(cores.drain_in_order(2, mesh_first), [0, 1], "once each, in order");
        assert!(cores.nothing_left(), "a message was left behind");
    });
}

#[test]
fn a_hop_leaving_with_a_forward_keeps_the_order() {
    hop_leaves(false);
}

/// The model must be able to fail: a receiver that takes its mesh lists
/// before the relayed messages runs a later message first.
#[test]
#[should_panic(expected = "in order")]
fn taking_the_mesh_before_the_relayed_messages_reorders() {
    hop_leaves(true);
}
