//! loom model of a core's urgent mark (`src/protocol/urgent_mark.rs`):
//! wakers on other cores (or in handlers, modelled as threads) mark the
//! core when the strand they queue outranks the one it runs, while the
//! core's ticks take the mark, and a tick that finds the strand inside
//! roving's code puts it back for its retry.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_urgent`
//!
//! Checked: a mark a waker raised is taken by the tick it asked for, or by
//! that tick's retry when the first had to put it back, with the highest
//! level any waker marked; and a mark left over from a strand the core
//! has since switched away from never preempts a strand at or above the
//! level that was woken.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;
use roving::loom_api::UrgentMark;

/// Waits (in the model) until a waker has asked for a tick.
fn until(asked: &AtomicBool) {
    while !asked.load(SeqCst) {
        thread::yield_now();
    }
}

#[test]
fn a_mark_reaches_the_tick_asked_for_even_past_a_deferring_tick() {
    loom::model(|| {
        let mark = Arc::new(UrgentMark::new());
        mark.running(Some(0));
        let asked = Arc::new(AtomicBool::new(false));
        let waker = {
            let (mark, asked) = (mark.clone(), asked.clone());
            thread::spawn(move || {
                assert!(mark.woken(2), "a High strand outranks a Low one");
                asked.store(true, SeqCst);
            })
        };
        // A tick of the core's own, racing with the wake: the strand is in
        // roving's code, so whatever it took goes back.
        let early = mark.take(0);
        mark.keep(early);
        until(&asked);
        let asked_for = mark.take(0);
        assert!(asked_for.outranked, "the tick the waker asked for found no mark");
        assert_eq!(asked_for.mark, 3);
        waker.join().unwrap();
    });
}

#[test]
fn two_wakers_leave_the_higher_mark() {
    loom::model(|| {
        let mark = Arc::new(UrgentMark::new());
        mark.running(Some(0));
        let asked: Vec<_> = (0..2).map(|_| Arc::new(AtomicBool::new(false))).collect();
        let wakers: Vec<_> = [1u8, 2]
            .into_iter()
            .zip(&asked)
            .map(|(level, asked)| {
                let (mark, asked) = (mark.clone(), asked.clone());
                thread::spawn(move || {
                    assert!(mark.woken(level));
                    asked.store(true, SeqCst);
                })
            })
            .collect();
        let early = mark.take(0);
        mark.keep(early);
        asked.iter().for_each(|asked| until(asked));
        let taken = mark.take(0);
        assert!(taken.outranked);
        assert_eq!(taken.mark, 3, "the higher level's mark was lost");
        wakers.into_iter().for_each(|waker| waker.join().unwrap());
    });
}

#[test]
fn a_stale_mark_never_preempts_the_woken_level() {
    loom::model(|| {
        let mark = Arc::new(UrgentMark::new());
        mark.running(Some(0));
        let marked = Arc::new(AtomicBool::new(false));
        let waker = {
            let (mark, marked) = (mark.clone(), marked.clone());
            thread::spawn(move || marked.store(mark.woken(2), SeqCst))
        };
        // The core switches to the woken strand (level 2) before its tick.
        mark.running(None);
        mark.running(Some(2));
        let tick = mark.take(2);
        assert!(!tick.outranked, "a mark preempted the strand it was raised for");
        waker.join().unwrap();
        // Back to a Low strand: at most one early preemption is left.
        mark.running(Some(0));
        let later = mark.take(0);
        if later.outranked {
            assert!(marked.load(SeqCst), "a mark nobody raised");
        }
        assert!(!mark.take(0).outranked, "a mark preempted twice");
    });
}
