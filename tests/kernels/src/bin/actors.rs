//! Actors under QEMU: the Savina workloads with checksums (ping-pong,
//! thread-ring, counting, fork-join throughput), then many dormant actors
//! woken once each.
//!
//! Sizes come from boot arguments, defaulting to the issue's: `roving.
//! pingpong` round trips (10^5), `roving.ring_hops` around 100 actors
//! (10^5), `roving.counting` messages (10^6), `roving.forkjoin` messages to
//! each of 60 actors (10^4) and `roving.dormant` actors (10^6).
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/savina_cases.rs"]
mod savina_cases;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use roving::actor::{Actor, ActorContext, Addr};
use roving::sync::Event;
use roving::time::Instant;
use roving::{Pool, platform};
use roving_kernel::println;
use roving_test_kernels::{self as _, bootarg_u64, expected_cores, pass};
use savina_cases::*;

static WOKEN: AtomicUsize = AtomicUsize::new(0);
static ALL_WOKEN: Event = Event::new();

/// A dormant actor that counts its one wake-up.
struct Sleeper {
    woken: bool,
    total: usize,
}

impl Actor for Sleeper {
    type Message = ();
    fn handle(&mut self, (): (), _: &mut ActorContext<'_, Self>) {
        assert!(!self.woken, "a dormant actor handled its one message twice");
        self.woken = true;
        if WOKEN.fetch_add(1, SeqCst) + 1 == self.total {
            ALL_WOKEN.set();
        }
    }
}

fn dormant(pool: &Pool, total: usize) {
    let actors: Vec<Addr<Sleeper>> =
        (0..total).map(|_| pool.spawn_actor(Sleeper { woken: false, total })).collect();
    for (i, actor) in actors.iter().enumerate() {
        actor.send(()).expect("a dormant actor accepts a message");
        // Keep at most a few thousand wake-ups in flight: a yielding main
        // strand is pinned, and its core serves pinned work first after
        // every few dozen tasks, so on one core it would outpace the turns.
        while i > WOKEN.load(SeqCst) + 4_096 {
            roving::strand::yield_now().expect("main is a strand");
        }
    }
    ALL_WOKEN.wait().expect("main is a strand");
    while !actors.iter().all(Addr::is_dormant) {
        roving::strand::yield_now().expect("main is a strand");
    }
}

/// Runs `case`, printing how long it took.
fn timed<R>(what: &str, case: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let result = case();
    println!("{what}: {} ms", started.elapsed().as_millis());
    result
}

fn main() {
    assert_eq!(platform::core_count(), expected_cores());
    let round_trips = bootarg_u64("roving.pingpong", 100_000);
    let hops = bootarg_u64("roving.ring_hops", 100_000);
    let counted = bootarg_u64("roving.counting", 1_000_000);
    let per_worker = bootarg_u64("roving.forkjoin", 10_000);
    let sleepers = bootarg_u64("roving.dormant", 1_000_000) as usize;
    let pool = Pool::new().expect("a pool of every core");
    pool.run(|| {
        let sum = timed("ping-pong", || ping_pong(&pool, round_trips));
        assert_eq!(sum, ping_pong_expected(round_trips), "ping-pong checksum");
        let id = timed("thread-ring", || thread_ring(&pool, 100, hops));
        assert_eq!(id, hops % 100, "thread-ring checksum");
        let total = timed("counting", || counting(&pool, counted));
        assert_eq!(total, counted * (counted + 1) / 2, "counting checksum");
        let sum = timed("fork-join", || fork_join(&pool, 60, per_worker));
        assert_eq!(sum, fork_join_expected(60, per_worker), "fork-join checksum");
        timed("dormant", || dormant(&pool, sleepers));
        println!(
            "actors: ping-pong {round_trips}, thread-ring 100 x {hops}, counting {counted}, fork-join 60 x {per_worker}, {sleepers} dormant woken once: checksums match"
        );
    })
    .expect("the pool runs");
    pass("actors");
}

roving_kernel::entry!(main);
