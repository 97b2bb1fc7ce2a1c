//! loom model of the doorbell protocol (src/mailbox/doorbell.rs).
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_doorbell`
//!
//! # The model
//!
//! Each core has two hardware latches: the event register (set by `SEV`,
//! ends only a light `WFE` sleep) and a pending interrupt (set by an
//! inter-processor interrupt, ends either sleep). A ringer sends what the
//! doorbell asks for. The platforms send a signal only after the ring is
//! globally visible (`DSB` before `SEV` or the SGI on ARM; `unpark`
//! synchronizes with `park` on the host), so a latch is set with release
//! and read with acquire.
//!
//! A sleeping core spins on its latches with `yield_now` instead of
//! blocking. A lost wake-up therefore shows up as a core that spins forever,
//! which loom reports as "Model exceeded maximum number of branches".
//! (loom 0.7.2's blocking primitives, `thread::park` and `sync::Notify`,
//! report deadlocks even for a correct two-thread handshake here; see
//! tokio-rs/loom#246, #249 and #301.)
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::*};
use loom::thread;
use roving::platform::{Doorbell, WakeSignal};

/// One core: its doorbell, its two latches, and the work posted to it.
///
/// A latch is a count of signals sent; the owner remembers the count it has
/// consumed ([`Seen`]). Taking every pending signal at once is exactly a
/// sticky bit, and only signallers write the counts, which keeps loom's
/// "a spinning load eventually sees a newer store" rule in force.
struct Core {
    bell: Doorbell,
    events: AtomicUsize,
    interrupts: AtomicUsize,
    work: AtomicUsize,
}

/// The owner's view of its latches: how many signals it has consumed.
#[derive(Default)]
struct Seen {
    events: usize,
    interrupts: usize,
}

/// Consumes every pending signal of a latch; returns whether there was one.
fn take(latch: &AtomicUsize, seen: &mut usize) -> bool {
    let now = latch.load(Acquire);
    let pending = now > *seen;
    *seen = now;
    pending
}

impl Core {
    fn new() -> Self {
        Self {
            bell: Doorbell::new(),
            events: AtomicUsize::new(0),
            interrupts: AtomicUsize::new(0),
            work: AtomicUsize::new(0),
        }
    }

    /// `WFE`: ends on an event or an interrupt.
    fn wait_light(&self, seen: &mut Seen) {
        while !take(&self.events, &mut seen.events) && !take(&self.interrupts, &mut seen.interrupts) {
            thread::yield_now();
        }
    }

    /// `WFI`: ends only on an interrupt; an event does not end it.
    fn wait_deep(&self, seen: &mut Seen) {
        while !take(&self.interrupts, &mut seen.interrupts) {
            thread::yield_now();
        }
    }
}

/// A producer: publishes one unit of work, rings, and sends what the
/// doorbell asks for.
fn post(core: &Core) {
    core.work.fetch_add(1, Release);
    match core.bell.ring() {
        WakeSignal::None => {}
        WakeSignal::Event => {
            core.events.fetch_add(1, Release);
        }
        WakeSignal::Interrupt => {
            core.interrupts.fetch_add(1, Release);
        }
    }
}

#[derive(Clone, Copy)]
enum Tiers {
    Light,
    Deep,
    Alternate,
}

/// The owner sleeps until it has seen `expected` units of work.
fn sleep_until(core: &Core, expected: usize, tiers: Tiers) {
    let mut round = 0;
    let mut seen = Seen::default();
    while core.work.load(Acquire) < expected {
        let deep = match tiers {
            Tiers::Light => false,
            Tiers::Deep => true,
            Tiers::Alternate => round % 2 == 1,
        };
        if deep {
            if core.bell.enter_deep() {
                core.wait_deep(&mut seen);
                core.bell.leave_deep();
            }
        } else if !core.bell.answer() {
            core.wait_light(&mut seen);
        }
        round += 1;
    }
}

fn model(producers: usize, tiers: Tiers) {
    loom::model(move || {
        let core = Arc::new(Core::new());
        let posters: Vec<_> = (0..producers)
            .map(|_| {
                let core = core.clone();
                thread::spawn(move || post(&core))
            })
            .collect();
        sleep_until(&core, producers, tiers);
        for poster in posters {
            poster.join().unwrap();
        }
    });
}

#[test]
fn light_sleeper_one_producer() {
    model(1, Tiers::Light);
}

#[test]
fn deep_sleeper_one_producer() {
    model(1, Tiers::Deep);
}

#[test]
fn light_sleeper_two_producers() {
    model(2, Tiers::Light);
}

#[test]
fn deep_sleeper_two_producers() {
    model(2, Tiers::Deep);
}

#[test]
fn alternating_sleeper_two_producers() {
    model(2, Tiers::Alternate);
}

/// The model must be able to fail: a platform that sends an event to a core
/// in deep sleep (ignoring the doorbell's answer) leaves it asleep.
#[test]
#[should_panic(expected = "maximum number of branches")]
fn ignoring_the_signal_loses_the_wake_up() {
    loom::model(|| {
        let core = Arc::new(Core::new());
        let poster = {
            let core = core.clone();
            thread::spawn(move || {
                core.work.fetch_add(1, Release);
                core.bell.ring();
                core.events.fetch_add(1, Release); // wrong for a deep sleeper
            })
        };
        sleep_until(&core, 1, Tiers::Deep);
        poster.join().unwrap();
    });
}
