//! loom model of the hints that something may wait at a core for others
//! to take (`CoreHints`, src/protocol/core_hints.rs): woken fibres in a
//! receiver's lists, tasks on a core's steal list. Idle cores read the
//! hints to pass over a core without reading its lists, so an item no
//! taker has taken must never sit under a low hint once its producer has
//! raised it.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_core_hints`
//!
//! Two senders each push a fibre onto their own list to one receiver
//! (core 0) and raise its hint, while the receiver lowers it and takes
//! both lists; meanwhile a neighbour, core 1, whose hint shares the word,
//! lowers and raises its own, raised at the start. The yields add schedule points between the
//! steps whose order matters, so that loom tries each step of one side
//! between any two of the other's (without them it does not reach the
//! schedule where a receiver that lowered after its take hides a fibre,
//! which with them it reports). Checked when all are done: every fibre was
//! taken exactly once (by the receiver, or after the run), if either list
//! still holds one the hint is high, and the neighbour's hint is what it
//! last set. A second model, without the neighbour, adds a thief that
//! trusts the hint: what it takes is never taken twice, and nothing is
//! lost. A third has the receiver trust its own hint, passing its lists
//! over when it finds the hint low (`lower_if_raised`), as its drain does
//! between sleeps: what it passes over is never under a low hint.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use roving::loom_api::{Action, AtomicList, BlockCache, CoreHints, Task, TaskQueue};
use std::ptr::NonNull;

const SENDERS: usize = 2;

/// Never called: the model only moves tasks, it does not run them.
unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("the model does not run tasks");
}

fn fibre() -> NonNull<Task> {
    NonNull::from(Box::leak(Box::new(Task::new(not_run))))
}

struct Receiver {
    lists: [AtomicList; SENDERS],
    hints: CoreHints,
}

/// Counts a taken chain's tasks, and frees them.
fn count(chain: Option<NonNull<Task>>) -> usize {
    let mut queue = TaskQueue::new();
    // SAFETY: a taken chain is ours.
    let taken = unsafe { queue.append_reversed(chain) };
    while let Some(task) = queue.pop_front() {
        // SAFETY: made by `fibre` and now ours.
        drop(unsafe { Box::from_raw(task.as_ptr()) });
    }
    taken
}

fn senders(receiver: &Arc<Receiver>) -> Vec<thread::JoinHandle<()>> {
    (0..SENDERS)
        .map(|sender| {
            let receiver = Arc::clone(receiver);
            thread::spawn(move || {
                // SAFETY: the fibre is ours to give.
                let _ = unsafe { receiver.lists[sender].push(fibre()) };
                thread::yield_now();
                receiver.hints.raise(0);
            })
        })
        .collect()
}

/// The receiver's drain: lower, then take every list.
fn drain(receiver: &Receiver) -> usize {
    receiver.hints.lower(0);
    thread::yield_now();
    receiver.lists.iter().map(|list| count(list.take_all())).sum()
}

/// The drain that passes the lists over on a low hint (`Inbound::drain`
/// outside its arming): lower if raised, and take only then.
fn drain_trusting_the_hint(receiver: &Receiver) -> usize {
    if !receiver.hints.lower_if_raised(0) {
        return 0;
    }
    thread::yield_now();
    receiver.lists.iter().map(|list| count(list.take_all())).sum()
}

/// After the run: nothing left under a low hint, and every fibre taken
/// once.
fn check(receiver: &Receiver, taken: usize) {
    let left = receiver.lists.iter().any(|list| list.has_tasks());
    assert!(
        !left || receiver.hints.is_raised(0),
        "a fibre waits under a low hint: thieves would pass it over"
    );
    let rest: usize = receiver.lists.iter().map(|list| count(list.take_all())).sum();
    assert_eq!(taken + rest, SENDERS, "every fibre taken exactly once");
}

/// One run: the senders and the receiver's drain, with `thief` (given
/// the receiver) alongside, and with `neighbour`, core 1 changing its own
/// hint; `check` after, with what the thief took.
fn run(
    neighbour: bool,
    drain: fn(&Receiver) -> usize,
    thief: impl FnOnce(Arc<Receiver>) -> usize + Send + 'static,
) {
    let receiver =
        Arc::new(Receiver { lists: [AtomicList::new(), AtomicList::new()], hints: CoreHints::new(2) });
    receiver.hints.raise(1);
    let sending = senders(&receiver);
    let thief = {
        let receiver = Arc::clone(&receiver);
        thread::spawn(move || thief(receiver))
    };
    let neighbour = neighbour.then(|| {
        let receiver = Arc::clone(&receiver);
        thread::spawn(move || {
            receiver.hints.lower(1);
            thread::yield_now();
            receiver.hints.raise(1);
        })
    });
    let taken = drain(&receiver);
    for sender in sending {
        sender.join().unwrap();
    }
    let stolen = thief.join().unwrap();
    if let Some(neighbour) = neighbour {
        neighbour.join().unwrap();
    }
    check(&receiver, taken + stolen);
    assert!(receiver.hints.is_raised(1), "the neighbour's last raise stands: no change to core 0's undid it");
}

#[test]
fn a_fibre_the_receiver_missed_is_never_under_a_low_hint() {
    loom::model(|| run(true, drain, |_| 0));
}

/// A receiver that passes its lists over when its hint is low leaves
/// nothing it missed under a low hint: its next drain takes it.
#[test]
fn a_receiver_that_trusts_its_hint_leaves_nothing_under_a_low_one() {
    loom::model(|| run(true, drain_trusting_the_hint, |_| 0));
}

#[test]
fn a_thief_that_trusts_the_hint_takes_nothing_twice() {
    loom::model(|| {
        run(false, drain, |receiver| {
            if !receiver.hints.is_raised(0) {
                return 0;
            }
            receiver.lists.iter().map(|list| count(list.steal_all())).sum()
        })
    });
}
