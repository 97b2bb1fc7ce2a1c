//! loom model of the timer watch (src/sleep/watch.rs): a core publishes an
//! earlier deadline while other cores become the watcher, or while the
//! watcher wakes and watches again.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_watch`
//!
//! Checked: exactly one core watches, and the watcher either read the new
//! deadline or was rung (a ring is kept until the core sleeps, as the
//! doorbells do), so no core sleeps past the deadline.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use loom::thread;
use roving::loom_api::{NO_DEADLINE, Watch};

const DEADLINE: u64 = 5;

/// What each core saw: the deadline it would sleep until as the watcher
/// (`NOT_WATCHING` if another core watched), and whether it was rung.
struct Cores {
    slept_until: [AtomicU64; 2],
    rung: [AtomicBool; 2],
}

const NOT_WATCHING: u64 = 0;

impl Cores {
    fn new() -> Self {
        Self {
            slept_until: [AtomicU64::new(NOT_WATCHING), AtomicU64::new(NOT_WATCHING)],
            rung: [AtomicBool::new(false), AtomicBool::new(false)],
        }
    }

    fn publish(&self, watch: &Watch, deadline: u64) {
        if let Some(core) = watch.publish(deadline) {
            self.rung[core].store(true, SeqCst);
        }
    }

    /// A core about to sleep: watch if nobody does, note until when.
    fn sleep(&self, watch: &Watch, me: usize) {
        let until = watch.watch(me).unwrap_or(NOT_WATCHING);
        self.slept_until[me].store(until, SeqCst);
    }

    /// After every thread ended: one watcher, and it wakes in time.
    fn check(&self) {
        let watchers: Vec<usize> =
            (0..2).filter(|&core| self.slept_until[core].load(SeqCst) != NOT_WATCHING).collect();
        assert_eq!(watchers.len(), 1, "exactly one core watches the deadlines");
        let watcher = watchers[0];
        let until = self.slept_until[watcher].load(SeqCst);
        assert!(
            until <= DEADLINE || self.rung[watcher].load(SeqCst),
            "the watcher sleeps until {until} and was not rung: the deadline {DEADLINE} is missed"
        );
    }
}

#[test]
fn a_new_deadline_reaches_whichever_core_becomes_watcher() {
    loom::model(|| {
        let watch = Arc::new(Watch::new());
        let cores = Arc::new(Cores::new());
        let sleepers: Vec<_> = (0..2)
            .map(|me| {
                let (watch, cores) = (watch.clone(), cores.clone());
                thread::spawn(move || cores.sleep(&watch, me))
            })
            .collect();
        cores.publish(&watch, DEADLINE);
        for sleeper in sleepers {
            sleeper.join().unwrap();
        }
        cores.check();
    });
}

#[test]
fn a_new_deadline_reaches_a_watcher_that_wakes_and_watches_again() {
    loom::model(|| {
        let watch = Arc::new(Watch::new());
        let cores = Arc::new(Cores::new());
        // A later deadline is already published, and core 0 watches it.
        assert_eq!(watch.publish(2 * DEADLINE), None);
        cores.sleep(&watch, 0);
        let watcher = {
            let (watch, cores) = (watch.clone(), cores.clone());
            thread::spawn(move || {
                // Woken (say, by work): stop watching, then sleep again.
                watch.unwatch(0);
                cores.sleep(&watch, 0);
            })
        };
        let other = {
            let (watch, cores) = (watch.clone(), cores.clone());
            thread::spawn(move || cores.sleep(&watch, 1))
        };
        cores.publish(&watch, DEADLINE);
        watcher.join().unwrap();
        other.join().unwrap();
        // Core 1 may have taken over while core 0 was awake; whichever
        // watches now must know of the new deadline.
        cores.check();
        assert_ne!(watch.earliest(), NO_DEADLINE);
    });
}
