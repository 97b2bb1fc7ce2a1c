//! loom model of a core's own-side words (`src/protocol/own_side.rs`): the
//! core pushes work onto a plain list inside sections (one of them with a
//! nested section inside), while a taker evicts it and takes the list once
//! its look finds the core outside its sections.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_own_side`
//!
//! The model has no time: a fence stands between the core's store and
//! load, ordering them as the real code's grace period does (the file's
//! proof), and the taker looks at once.
//!
//! Checked: the list is never touched by both at once (loom's cell fails a
//! racing access); the taker takes exactly what the core pushed, and the
//! core pushes nothing after the take; an evicted core's enters all say so.
//! A leave that stored `FREE` with a relaxed store (the core's touches not
//! carried to the taker), or an enter that touched the list without
//! loading `evicted`, fails here.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use roving::loom_api::{Look, OwnSide};

struct Core {
    words: OwnSide,
    /// The core's private list: items it pushed.
    list: UnsafeCell<Vec<u32>>,
}

// SAFETY: the list is touched under the words' protocol, which the model
// checks (loom's cell fails any racing access).
unsafe impl Sync for Core {}

/// The core's side: up to `rounds` sections, each pushing one item; the
/// second pushes through a nested section. Stops once evicted. Returns
/// what it pushed.
fn owner(core: &Core, rounds: u32) -> Vec<u32> {
    let mut pushed = Vec::new();
    for item in 0..rounds {
        assert!(!core.words.is_open(), "no section is open between rounds");
        if !core.words.open() {
            break;
        }
        // SAFETY: inside an opened section.
        core.list.with_mut(|list| unsafe { (*list).push(item) });
        if item == 1 {
            assert!(core.words.is_open(), "the nested enter found the section open");
        }
        pushed.push(item);
        core.words.leave();
    }
    pushed
}

/// The taker's side: evicts, then looks until the core is out of its
/// sections, and takes the list.
fn taker(core: &Core) -> Vec<u32> {
    core.words.evict();
    while core.words.look() == Look::Busy {
        thread::yield_now();
    }
    // SAFETY: the look found the core outside its sections, evicted.
    core.list.with_mut(|list| unsafe { core::mem::take(&mut *list) })
}

#[test]
fn a_taker_takes_the_list_only_between_sections() {
    loom::model(|| {
        let core = Arc::new(Core { words: OwnSide::new(), list: UnsafeCell::new(Vec::new()) });
        let taking = {
            let core = core.clone();
            thread::spawn(move || taker(&core))
        };
        let pushed = owner(&core, 3);
        let taken = taking.join().unwrap();
        assert_eq!(taken, pushed, "the take lost or invented items");
        assert!(core.words.is_evicted());
        assert!(!core.words.open(), "an evicted core entered again");
        // SAFETY: both threads are done.
        assert!(core.list.with(|list| unsafe { (*list).is_empty() }), "pushed after the take");
    });
}

#[test]
fn a_core_stuck_between_sections_is_taken_and_never_enters_again() {
    loom::model(|| {
        let core = Arc::new(Core { words: OwnSide::new(), list: UnsafeCell::new(Vec::new()) });
        let mut expected = owner(&core, 1);
        // The core is now stuck outside its sections, with work queued; it
        // comes back while the taker runs.
        let taking = {
            let core = core.clone();
            thread::spawn(move || taker(&core))
        };
        let again = owner(&core, 2);
        let taken = taking.join().unwrap();
        expected.extend(again);
        assert_eq!(taken, expected);
        assert!(!core.words.open(), "an evicted core entered again");
    });
}
