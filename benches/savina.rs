//! The Savina workloads three ways: roving's actors (the shared cases of
//! `tests/common/savina_cases.rs`), a raw single-producer ring between two
//! spinning threads (the floor: no allocation, no scheduling, no sleep),
//! and an actor loop on crossbeam-channel (one thread per core, each
//! draining a channel of messages for the actors it owns).

#[path = "../tests/common/savina_cases.rs"]
mod savina_cases;

use crate::harness::on_roving;
use crossbeam_channel::{Receiver, Sender, unbounded};
use roving::Pool;
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::thread;
use std::time::{Duration, Instant};

// ---- the floor: a bounded single-producer single-consumer ring ------------

const RING: usize = 1024;

#[repr(align(128))]
struct Padded(AtomicUsize);

/// Lamport's ring: the producer owns `tail`, the consumer `head`.
struct Spsc {
    slots: Box<[UnsafeCell<u64>]>,
    head: Padded,
    tail: Padded,
}

// SAFETY: one producer writes a slot before publishing it with a release
// store of `tail`; one consumer reads it after an acquire load, and frees
// it with a release store of `head` that the producer acquires.
unsafe impl Sync for Spsc {}

impl Spsc {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            slots: (0..RING).map(|_| UnsafeCell::new(0)).collect(),
            head: Padded(AtomicUsize::new(0)),
            tail: Padded(AtomicUsize::new(0)),
        })
    }

    /// Only the producer calls it.
    fn push(&self, value: u64) {
        let tail = self.tail.0.load(Relaxed);
        while tail - self.head.0.load(Acquire) == RING {
            std::hint::spin_loop();
        }
        // SAFETY: the slot is free (the consumer moved past it) and only
        // the producer writes.
        unsafe { *self.slots[tail % RING].get() = value };
        self.tail.0.store(tail + 1, Release);
    }

    /// Only the consumer calls it.
    fn pop(&self) -> u64 {
        let head = self.head.0.load(Relaxed);
        while self.tail.0.load(Acquire) == head {
            std::hint::spin_loop();
        }
        // SAFETY: published by the producer's release store of `tail`.
        let value = unsafe { *self.slots[head % RING].get() };
        self.head.0.store(head + 1, Release);
        value
    }
}

/// `round_trips` balls there and back over two rings.
pub fn ring_ping_pong(round_trips: u64) -> Duration {
    let (there, back) = (Spsc::new(), Spsc::new());
    let other = {
        let (there, back) = (there.clone(), back.clone());
        thread::spawn(move || {
            for _ in 0..round_trips {
                back.push(there.pop() + 1);
            }
        })
    };
    let start = Instant::now();
    let mut ball = 0;
    for _ in 0..round_trips {
        there.push(ball);
        ball = back.pop();
    }
    let elapsed = start.elapsed();
    other.join().unwrap();
    assert_eq!(ball, round_trips);
    elapsed
}

/// The floor of a ring of actors on two cores: every hop crosses between
/// the two threads, as a ping-pong of `hops / 2` round trips.
pub fn ring_thread_ring(hops: u64) -> Duration {
    ring_ping_pong(hops / 2)
}

/// One thread pushes 1..=`messages`, the other sums them.
pub fn ring_counting(messages: u64) -> Duration {
    let ring = Spsc::new();
    let counter = {
        let ring = ring.clone();
        thread::spawn(move || (0..messages).map(|_| ring.pop()).sum::<u64>())
    };
    let start = Instant::now();
    for n in 1..=messages {
        ring.push(n);
    }
    let total = counter.join().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(total, messages * (messages + 1) / 2);
    elapsed
}

// ---- roving's actors -------------------------------------------------------

/// Runs `case` on a two-core pool and times it (from the root strand).
fn on_pool(case: impl FnOnce(&Pool) -> u64 + Send + 'static, expected: u64) -> Duration {
    let (elapsed, result) = on_roving(2, move || {
        let pool = Pool::current().expect("the root strand runs on the pool");
        let start = Instant::now();
        let result = case(&pool);
        (start.elapsed(), result)
    });
    assert_eq!(result, expected, "checksum");
    elapsed
}

pub fn roving_ping_pong(round_trips: u64, pinned: bool) -> Duration {
    let pins = pinned.then_some((0, 1));
    on_pool(
        move |pool| savina_cases::ping_pong_pinned(pool, round_trips, pins),
        savina_cases::ping_pong_expected(round_trips),
    )
}

pub fn roving_thread_ring(actors: u64, hops: u64) -> Duration {
    on_pool(move |pool| savina_cases::thread_ring(pool, actors, hops), hops % actors)
}

pub fn roving_counting(messages: u64) -> Duration {
    on_pool(move |pool| savina_cases::counting(pool, messages), messages * (messages + 1) / 2)
}

// ---- an actor loop on crossbeam-channel ----------------------------------

/// Marks the message that ends a loop.
const STOP: usize = usize::MAX;

/// Two loop threads; actor `a` lives on thread `a % 2`. A message is
/// `(actor, value)`; `behaviour` handles it on the owner's thread and
/// returns the message to send next, or `None` to end both loops.
fn crossbeam_loops(
    first: (usize, u64),
    behaviour: impl Fn(usize, u64) -> Option<(usize, u64)> + Send + Sync + 'static,
) -> Duration {
    type Message = (usize, u64);
    let channels: Vec<(Sender<Message>, Receiver<Message>)> = (0..2).map(|_| unbounded()).collect();
    let senders: Vec<_> = channels.iter().map(|(tx, _)| tx.clone()).collect();
    let behaviour = Arc::new(behaviour);
    let loops: Vec<_> = channels
        .into_iter()
        .map(|(_, rx)| {
            let (senders, behaviour) = (senders.clone(), behaviour.clone());
            thread::spawn(move || {
                while let Ok((actor, value)) = rx.recv() {
                    if actor == STOP {
                        return;
                    }
                    match behaviour(actor, value) {
                        Some((to, value)) => senders[to % 2].send((to, value)).unwrap(),
                        None => senders.iter().for_each(|tx| tx.send((STOP, 0)).unwrap()),
                    }
                }
            })
        })
        .collect();
    let start = Instant::now();
    senders[first.0 % 2].send(first).unwrap();
    for handle in loops {
        handle.join().unwrap();
    }
    start.elapsed()
}

pub fn crossbeam_ping_pong(round_trips: u64) -> Duration {
    // Actor 0 is ping, actor 1 pong; the value counts one-way trips.
    crossbeam_loops((0, 0), move |actor, n| match actor {
        0 if n == 2 * round_trips => None,
        0 => Some((1, n + 1)),
        _ => Some((0, n + 1)),
    })
}

pub fn crossbeam_thread_ring(actors: u64, hops: u64) -> Duration {
    let actors = actors as usize;
    crossbeam_loops((0, hops), move |actor, n| (n > 0).then(|| ((actor + 1) % actors, n - 1)))
}

pub fn crossbeam_counting(messages: u64) -> Duration {
    let (tx, rx) = unbounded();
    let counter = thread::spawn(move || {
        let mut total = 0u64;
        while let Ok(n) = rx.recv() {
            total += n;
        }
        total
    });
    let start = Instant::now();
    for n in 1..=messages {
        tx.send(n).unwrap();
    }
    drop(tx);
    let total = counter.join().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(total, messages * (messages + 1) / 2);
    elapsed
}
