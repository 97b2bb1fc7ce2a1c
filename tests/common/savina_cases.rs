//! Savina actor workloads with checksums, shared by the host tests
//! (`tests/actor_savina.rs`) and the QEMU kernel `actors`. Only `core`,
//! `alloc` and roving: it builds for bare metal. Each case runs from a
//! strand of `pool` (it waits on an event) and returns its checksum.
#![allow(dead_code)]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use roving::Pool;
use roving::actor::{Actor, ActorContext, Addr};
use roving::sync::Event;

/// Counts reports down to zero, summing their values; wakes the waiter at
/// zero. A report past zero is a duplicated message.
pub struct Latch {
    remaining: AtomicUsize,
    sum: AtomicU64,
    event: Event,
}

impl Latch {
    pub fn new(reports: usize) -> Arc<Self> {
        Arc::new(Self { remaining: AtomicUsize::new(reports), sum: AtomicU64::new(0), event: Event::new() })
    }

    pub fn report(&self, value: u64) {
        self.sum.fetch_add(value, SeqCst);
        let before = self.remaining.fetch_sub(1, SeqCst);
        assert!(before > 0, "more reports than expected: a message was handled twice");
        if before == 1 {
            self.event.set();
        }
    }

    /// Waits (as a strand) for every report; returns their sum.
    pub fn wait(&self) -> u64 {
        self.event.wait().expect("the caller is a strand");
        self.sum.load(SeqCst)
    }
}

// ---- ping-pong: two actors, one message in flight -------------------------

pub struct Ping {
    pong: Addr<Pong>,
    left: u64,
    sum: u64,
    latch: Arc<Latch>,
}

pub enum PongMessage {
    Hello(Addr<Ping>),
    Ball(u64),
}

pub struct Pong {
    ping: Option<Addr<Ping>>,
}

impl Actor for Ping {
    type Message = u64;
    fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
        self.sum += n;
        if self.left == 0 {
            self.latch.report(self.sum);
        } else {
            self.left -= 1;
            self.pong.send(PongMessage::Ball(n + 1)).expect("pong is alive");
        }
    }
}

impl Actor for Pong {
    type Message = PongMessage;
    fn handle(&mut self, message: PongMessage, _: &mut ActorContext<'_, Self>) {
        match message {
            PongMessage::Hello(ping) => self.ping = Some(ping),
            PongMessage::Ball(n) => {
                self.ping.as_ref().expect("hello came first").send(n).expect("ping is alive")
            }
        }
    }
}

/// `round_trips` balls from ping to pong and back, each one higher than the
/// last: returns the sum ping saw, `round_trips * (round_trips + 1) / 2`.
pub fn ping_pong(pool: &Pool, round_trips: u64) -> u64 {
    ping_pong_pinned(pool, round_trips, None)
}

/// [`ping_pong`], with ping and pong pinned to the two cores given.
pub fn ping_pong_pinned(pool: &Pool, round_trips: u64, pins: Option<(usize, usize)>) -> u64 {
    let latch = Latch::new(1);
    let pong = Pong { ping: None };
    let pong = match pins {
        Some((_, core)) => pool.spawn_actor_on(core, pong).expect("pong's core is in the pool"),
        None => pool.spawn_actor(pong),
    };
    let ping = Ping { pong: pong.clone(), left: round_trips, sum: 0, latch: latch.clone() };
    let ping = match pins {
        Some((core, _)) => pool.spawn_actor_on(core, ping).expect("ping's core is in the pool"),
        None => pool.spawn_actor(ping),
    };
    pong.send(PongMessage::Hello(ping.clone())).expect("pong is alive");
    // Ball 1 goes out; ping then counts 1, 2, ..., round_trips back.
    ping.send(0).expect("ping is alive");
    let sum = latch.wait();
    ping.stop();
    pong.stop();
    sum
}

pub fn ping_pong_expected(round_trips: u64) -> u64 {
    round_trips * (round_trips + 1) / 2
}

// ---- thread-ring: a token passed around a ring of actors ------------------

pub enum RingMessage {
    Next(Addr<RingNode>),
    Token(u64),
}

pub struct RingNode {
    id: u64,
    next: Option<Addr<RingNode>>,
    latch: Arc<Latch>,
}

impl Actor for RingNode {
    type Message = RingMessage;
    fn handle(&mut self, message: RingMessage, _: &mut ActorContext<'_, Self>) {
        match message {
            RingMessage::Next(next) => self.next = Some(next),
            RingMessage::Token(0) => self.latch.report(self.id),
            RingMessage::Token(n) => {
                self.next.as_ref().expect("linked first").send(RingMessage::Token(n - 1)).expect("alive")
            }
        }
    }
}

/// A token makes `hops` hops around a ring of `actors`; returns the id of
/// the actor holding it at the end, `hops % actors`.
pub fn thread_ring(pool: &Pool, actors: u64, hops: u64) -> u64 {
    let latch = Latch::new(1);
    let nodes: Vec<_> =
        (0..actors).map(|id| pool.spawn_actor(RingNode { id, next: None, latch: latch.clone() })).collect();
    for (i, node) in nodes.iter().enumerate() {
        node.send(RingMessage::Next(nodes[(i + 1) % nodes.len()].clone())).expect("alive");
    }
    nodes[0].send(RingMessage::Token(hops)).expect("alive");
    let id = latch.wait();
    for node in &nodes {
        node.stop();
    }
    id
}

// ---- counting: one producer floods one counter ----------------------------

pub enum CounterMessage {
    Add(u64),
    Report,
}

pub struct Counter {
    total: u64,
    latch: Arc<Latch>,
}

impl Actor for Counter {
    type Message = CounterMessage;
    fn handle(&mut self, message: CounterMessage, _: &mut ActorContext<'_, Self>) {
        match message {
            CounterMessage::Add(n) => self.total += n,
            CounterMessage::Report => self.latch.report(self.total),
        }
    }
}

pub struct Producer {
    counter: Addr<Counter>,
    next: u64,
    last: u64,
}

/// Messages the producer sends per message to itself: the counter's quota
/// per turn, so that on one core, where the two take turns, the counter's
/// backlog stays bounded (Savina's producer sends all at once; here a
/// backlog of 10^6 would hold 64 MB of message blocks).
const PRODUCER_BATCH: u64 = 64;

impl Actor for Producer {
    type Message = ();
    const MESSAGES_PER_TURN: usize = 1;
    fn handle(&mut self, (): (), context: &mut ActorContext<'_, Self>) {
        let end = (self.next + PRODUCER_BATCH).min(self.last + 1);
        for n in self.next..end {
            self.counter.send(CounterMessage::Add(n)).expect("the counter is alive");
        }
        self.next = end;
        if self.next > self.last {
            self.counter.send(CounterMessage::Report).expect("the counter is alive");
        } else {
            context.address().send(()).expect("the producer is alive");
        }
    }
}

/// A producer sends 1, 2, ..., `messages` to a counter, then asks for the
/// total: `messages * (messages + 1) / 2`.
pub fn counting(pool: &Pool, messages: u64) -> u64 {
    let latch = Latch::new(1);
    let counter = pool.spawn_actor(Counter { total: 0, latch: latch.clone() });
    let producer = pool.spawn_actor(Producer { counter: counter.clone(), next: 1, last: messages });
    producer.send(()).expect("the producer is alive");
    let total = latch.wait();
    producer.stop();
    counter.stop();
    total
}

// ---- fork-join throughput: many actors, many messages each ----------------

pub struct Worker {
    left: u64,
    acc: u64,
    latch: Arc<Latch>,
}

/// The small computation each message costs (an integer stand-in for
/// Savina's trigonometry, the same on every target).
fn work(n: u64) -> u64 {
    let mut x = n ^ 0x9e37_79b9_7f4a_7c15;
    for _ in 0..8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x & 0xffff
}

impl Actor for Worker {
    type Message = u64;
    fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
        self.acc = self.acc.wrapping_add(work(n));
        self.left -= 1;
        if self.left == 0 {
            self.latch.report(self.acc);
        }
    }
}

/// `actors` actors each get `messages` messages (sent round-robin from the
/// calling strand); returns the sum of their results.
pub fn fork_join(pool: &Pool, actors: u64, messages: u64) -> u64 {
    let latch = Latch::new(actors as usize);
    let workers: Vec<_> = (0..actors)
        .map(|_| pool.spawn_actor(Worker { left: messages, acc: 0, latch: latch.clone() }))
        .collect();
    for n in 0..messages {
        for worker in &workers {
            worker.send(n).expect("the worker is alive");
        }
        // Let the workers drain on this core too (one core has nobody else).
        if n % 64 == 63 {
            roving::strand::yield_now().expect("the caller is a strand");
        }
    }
    let sum = latch.wait();
    for worker in &workers {
        worker.stop();
    }
    sum
}

pub fn fork_join_expected(actors: u64, messages: u64) -> u64 {
    actors * (0..messages).map(work).sum::<u64>()
}
