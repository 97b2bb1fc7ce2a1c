//! A million dormant actors, measured: each costs its state, one word of
//! scheduling state and the two counts of its shared allocation, as the
//! README says; one message to each wakes and drains every one exactly
//! once, and all are dormant again afterwards.
#![cfg(feature = "std")]

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
mod support;

use roving::actor::{Actor, ActorContext, Addr};
use roving::sync::Event;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};
use support::run_pool;

const ACTORS: usize = 1_000_000;

/// How many times each actor handled a message.
static SEEN: OnceLock<Box<[AtomicU8]>> = OnceLock::new();
static HANDLED: AtomicUsize = AtomicUsize::new(0);
static ALL_HANDLED: Event = Event::new();

/// The smallest useful actor: its index.
struct Tiny(u32);

impl Actor for Tiny {
    type Message = ();
    fn handle(&mut self, (): (), _: &mut ActorContext<'_, Self>) {
        SEEN.get().unwrap()[self.0 as usize].fetch_add(1, SeqCst);
        if HANDLED.fetch_add(1, SeqCst) + 1 == ACTORS {
            ALL_HANDLED.set();
        }
    }
}

#[test]
fn a_million_dormant_actors_cost_one_word_each_and_wake_once() {
    SEEN.set((0..ACTORS).map(|_| AtomicU8::new(0)).collect()).unwrap();
    let (bytes_per_actor, actors) = run_pool(4, |pool| {
        let mut actors: Vec<Addr<Tiny>> = Vec::with_capacity(ACTORS);
        let before = counting_alloc::live();
        for id in 0..ACTORS {
            actors.push(pool.spawn_actor(Tiny(id as u32)));
        }
        // Rounded: other cores may allocate or free a few bytes meanwhile.
        let bytes_per_actor = ((counting_alloc::live() - before) as f64 / ACTORS as f64).round() as usize;
        assert!(actors.iter().all(Addr::is_dormant));
        for (i, actor) in actors.iter().enumerate() {
            actor.send(()).unwrap();
            // Bound the wake-ups in flight (see the kernel `actors`).
            while i > HANDLED.load(SeqCst) + 4_096 {
                roving::strand::yield_now().unwrap();
            }
        }
        ALL_HANDLED.wait().unwrap();
        (bytes_per_actor, actors)
    })
    .unwrap();
    let word = size_of::<usize>();
    // The allocation's two counts, the schedule word, the state (a u32
    // rounded up to the word): 32 bytes on a 64-bit host.
    assert_eq!(bytes_per_actor, 2 * word + word + size_of::<u32>().next_multiple_of(word));
    assert_eq!(size_of::<Addr<Tiny>>(), 2 * word, "an address is two words");
    assert_eq!(HANDLED.load(SeqCst), ACTORS);
    assert!(
        SEEN.get().unwrap().iter().all(|seen| seen.load(SeqCst) == 1),
        "an actor handled its message twice"
    );
    assert!(actors.iter().all(Addr::is_dormant), "an actor stayed scheduled after it drained");
    println!(
        "{ACTORS} dormant actors: {bytes_per_actor} bytes each, plus {} per address",
        size_of::<Addr<Tiny>>()
    );
}
