//! loom model of the forwarding mesh (src/mailbox/mesh.rs): in a ring of
//! three cores, core 0's messages for core 2 go through core 1, and cores
//! 1 and 2 drain, arm their lists and sleep whenever they find nothing.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_mesh`
//!
//! Checked: a forward racing the hop falling asleep never strands a
//! message (a lost wake-up leaves a core blocked on its doorbell, which
//! loom reports as a deadlock), every message arrives once at its
//! receiver, and each sender's messages arrive in the order it sent
//! them, whether they stop at the hop or pass it while it sleeps. A hop
//! asleep is never woken by a parcel only passing through.
//!
//! Cores leaving the mesh are modelled in `tests/loom_routes.rs`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use roving::loom_api::{Action, BlockCache, Mesh, Sent, Task, Topology};
use std::ptr::NonNull;

#[repr(C)]
struct Item {
    task: Task,
    from: usize,
    to: usize,
    seq: usize,
}

/// Never called: the model only moves tasks.
unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("the model does not run tasks");
}

fn item(from: usize, to: usize, seq: usize) -> NonNull<Task> {
    NonNull::from(Box::leak(Box::new(Item { task: Task::new(not_run), from, to, seq }))).cast()
}

/// A core's doorbell: rings counted, and a sleeper blocked until one
/// comes. (Blocking, not spinning: loom does not schedule spinning
/// sleepers fairly, and reports a sleeper nobody rings as a deadlock.)
struct Doorbell {
    rings: Mutex<usize>,
    rung: Condvar,
}

struct Ring {
    mesh: Mesh,
    doorbells: [Doorbell; 3],
    /// The receiver has everything: the hop may stop.
    finished: AtomicBool,
}

impl Ring {
    fn rings(&self, core: usize) -> usize {
        *self.doorbells[core].rings.lock().unwrap()
    }

    /// The receiver has everything: wakes the hop so it sees that.
    fn finish(&self) {
        self.finished.store(true, SeqCst);
        self.ring(1);
    }

    fn ring(&self, core: usize) {
        *self.doorbells[core].rings.lock().unwrap() += 1;
        self.doorbells[core].rung.notify_one();
    }

    /// Sleeps until a ring after the `seen`th; returns the rings so far.
    fn sleep(&self, core: usize, seen: usize) -> usize {
        let doorbell = &self.doorbells[core];
        let mut rings = doorbell.rings.lock().unwrap();
        while *rings == seen {
            rings = doorbell.rung.wait(rings).unwrap();
        }
        *rings
    }

    fn send(&self, from: usize, to: usize, seq: usize) {
        // SAFETY: the calling thread is core `from`; the task is new.
        match unsafe { self.mesh.send(from, to, item(from, to, seq)) } {
            Ok(Sent::Wake(core)) => self.ring(core),
            Ok(Sent::Queued) => {}
            Err(_) => panic!("out of memory"),
        }
    }

    /// Core `me`'s loop: drain; with nothing, arm and sleep until rung;
    /// until `done` says it has what it waits for. Returns what it got.
    fn run(&self, me: usize, done: impl Fn(&[(usize, usize)], usize) -> bool) -> Vec<(usize, usize)> {
        let (mut got, mut forwarded, mut seen_wakes) = (Vec::new(), 0, 0);
        loop {
            // SAFETY: the calling thread is core `me`.
            let drained = unsafe {
                self.mesh.drain(
                    me,
                    |task| {
                        // SAFETY: made by `item`, delivered once.
                        let item = unsafe { Box::from_raw(task.cast::<Item>().as_ptr()) };
                        assert_eq!(item.to, me, "delivered to the wrong core");
                        got.push((item.from, item.seq));
                    },
                    |core| self.ring(core),
                )
            };
            forwarded += drained.forwarded;
            if done(&got, forwarded) {
                return got;
            }
            if drained.delivered + drained.forwarded > 0 || !self.mesh.arm(me) {
                continue;
            }
            seen_wakes = self.sleep(me, seen_wakes);
        }
    }
}

fn ring_of_three() -> Arc<Ring> {
    let doorbell = || Doorbell { rings: Mutex::new(0), rung: Condvar::new() };
    Arc::new(Ring {
        mesh: Mesh::new(Topology::with_links(3, 1)),
        doorbells: [doorbell(), doorbell(), doorbell()],
        finished: AtomicBool::new(false),
    })
}

/// Core 0 sends `messages` to core 2 through core 1; the hop and the
/// receiver each drain, arm and sleep until they are done. Whether a
/// message stops at the hop or passes it depends on the race.
fn through_the_hop(messages: usize) {
    loom::model(move || {
        let ring = ring_of_three();
        let sender = {
            let ring = ring.clone();
            thread::spawn(move || (0..messages).for_each(|seq| ring.send(0, 2, seq)))
        };
        let hop = {
            let ring = ring.clone();
            thread::spawn(move || ring.run(1, |_, _| ring.finished.load(SeqCst)))
        };
        let got = ring.run(2, |got, _| got.len() == messages);
        ring.finish();
        sender.join().unwrap();
        assert!(hop.join().unwrap().is_empty(), "nothing was for the hop");
        assert_eq!(got, (0..messages).map(|seq| (0, seq)).collect::<Vec<_>>(), "once each, in order");
        assert!(ring.mesh.is_empty(), "a message was left in transit");
    });
}

#[test]
fn a_forward_racing_the_hop_falling_asleep_strands_nothing() {
    through_the_hop(1);
}

#[test]
fn forwarded_messages_keep_their_order() {
    through_the_hop(2);
}

/// The hop sleeps (its lists armed) before core 0 sends: both messages
/// pass it, racing the receiver's own drains and sleeps, and nobody
/// rings the hop.
#[test]
fn a_sleeping_hop_is_passed_not_woken() {
    loom::model(|| {
        let ring = ring_of_three();
        assert!(ring.mesh.arm(1));
        let sender = {
            let ring = ring.clone();
            thread::spawn(move || (0..2).for_each(|seq| ring.send(0, 2, seq)))
        };
        let got = ring.run(2, |got, _| got.len() == 2);
        sender.join().unwrap();
        assert_eq!(got, [(0, 0), (0, 1)], "once each, in order");
        assert_eq!(ring.rings(1), 0, "the sleeping hop was woken");
        assert!(ring.mesh.arm(1), "the hop's lists are still armed and empty");
        assert!(ring.mesh.is_empty());
    });
}

/// The model must be able to fail: a hop that ignores the duty to wake the
/// receiver strands the message it forwarded.
#[test]
#[should_panic(expected = "deadlock")]
fn a_forward_that_does_not_wake_the_receiver_strands_it() {
    loom::model(|| {
        let ring = ring_of_three();
        let hop = {
            let ring = ring.clone();
            thread::spawn(move || {
                // Core 0 and the hop in one thread: send, then forward
                // without ringing anyone.
                ring.send(0, 2, 0);
                // SAFETY: this thread is core 1 now.
                unsafe { ring.mesh.drain(1, |_| unreachable!(), |_| {}) };
            })
        };
        let got = ring.run(2, |got, _| got.len() == 1);
        hop.join().unwrap();
        assert_eq!(got, [(0, 0)]);
    });
}
