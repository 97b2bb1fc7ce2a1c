//! Cancelling a 3-level tree of a thousand blocked strands from its root.
//! Alone in its test binary: it checks the fibres and saved stacks, which
//! are shared by every pool in the process.
#![cfg(feature = "std")]

mod support;

use roving::strand::{self, JoinError, WaitError};
use roving::sync::{Mutex, channel};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};
use support::run_pool;

/// Counts strands that reached their blocking call, and strands whose
/// blocking call reported the cancel.
#[derive(Default)]
struct Tally {
    blocked: AtomicUsize,
    interrupted: AtomicUsize,
}

const FANOUT_1: usize = 10;
const FANOUT_2: usize = 10;
const LEAVES: usize = 9;
const TREE: usize = 1 + FANOUT_1 + FANOUT_1 * FANOUT_2 + FANOUT_1 * FANOUT_2 * LEAVES;

/// A leaf's wait ends with the cancel; or, if its parent (cancelled too)
/// got there first, with what the parent let go of: the channel's sender,
/// or the mutex.
fn note(tally: &Tally, outcome: Result<(), WaitError>) {
    assert!(strand::cancelled(), "only the cancel ends these waits");
    assert!(matches!(outcome, Err(WaitError::Interrupted) | Ok(())), "{outcome:?}");
    tally.interrupted.fetch_add(1, SeqCst);
}

/// Waits for every child until the cancel comes. A join may still succeed
/// after it (the child ended first); the rest are waited for by the
/// strand's end.
fn join_all(tally: &Tally, children: Vec<strand::JoinHandle<()>>) {
    tally.blocked.fetch_add(1, SeqCst);
    for child in children {
        match child.join() {
            Ok(()) => {}
            Err(JoinError::Interrupted(_)) => break,
            Err(other) => panic!("join: {other}"),
        }
    }
    assert!(strand::cancelled(), "the joins ended only because of the cancel");
    tally.interrupted.fetch_add(1, SeqCst);
}

/// A leaf blocks in one of three ways: asleep, receiving, or locking a
/// mutex its parent holds.
fn leaf(tally: Arc<Tally>, kind: usize, rx: channel::Receiver<u32>, held: Arc<Mutex<()>>) {
    tally.blocked.fetch_add(1, SeqCst);
    let outcome = match kind % 3 {
        0 => strand::sleep(Duration::from_secs(3600)),
        1 => match rx.recv() {
            Err(channel::RecvError::Interrupted) => Err(WaitError::Interrupted),
            Err(channel::RecvError::Disconnected) => Ok(()),
            other => panic!("nothing is ever sent: {other:?}"),
        },
        _ => held.lock().map(drop),
    };
    note(&tally, outcome);
}

fn middle(tally: Arc<Tally>) {
    let held = Arc::new(Mutex::new(()));
    let _locked = held.lock().unwrap();
    let (_tx, rx) = channel::bounded::<u32>(1).unwrap();
    let leaves = (0..LEAVES)
        .map(|kind| {
            let (tally, rx, held) = (tally.clone(), rx.clone(), held.clone());
            strand::spawn(move || leaf(tally, kind, rx, held)).unwrap()
        })
        .collect();
    join_all(&tally, leaves);
}

fn upper(tally: Arc<Tally>) {
    let middles = (0..FANOUT_2)
        .map(|_| {
            let tally = tally.clone();
            strand::spawn(move || middle(tally)).unwrap()
        })
        .collect();
    join_all(&tally, middles);
}

#[test]
fn cancelling_a_three_level_tree_of_a_thousand_blocked_strands_ends_all_of_them() {
    let (elapsed, after, before, tally) = run_pool(4, |pool| {
        let before = (strand::usage(), pool.live_strands());
        let tally = Arc::new(Tally::default());
        let top = {
            let tally = tally.clone();
            strand::spawn(move || {
                let uppers = (0..FANOUT_1)
                    .map(|_| {
                        let tally = tally.clone();
                        strand::spawn(move || upper(tally)).unwrap()
                    })
                    .collect();
                join_all(&tally, uppers);
            })
            .unwrap()
        };
        while tally.blocked.load(SeqCst) < TREE {
            strand::sleep(Duration::from_millis(1)).unwrap();
        }
        strand::sleep(Duration::from_millis(20)).unwrap();
        assert_eq!(pool.live_strands(), before.1 + TREE, "the whole tree is alive and blocked");
        let started = Instant::now();
        top.cancel().unwrap();
        top.join().expect("a cancelled strand that returns has not failed");
        let elapsed = started.elapsed();
        (elapsed, (strand::usage(), pool.live_strands()), before, tally)
    })
    .unwrap();
    assert_eq!(tally.interrupted.load(SeqCst), TREE, "every strand of the tree ended because of the cancel");
    assert_eq!(after, before, "fibres, saved stacks and live strands are back where they started");
    assert!(elapsed < Duration::from_secs(10), "the tree took {elapsed:?} to end");
    println!(
        "cancelled a tree of {TREE} blocked strands: all ended {} µs after the cancel",
        elapsed.as_micros()
    );
}
