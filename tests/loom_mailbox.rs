//! loom model of the tagged mailbox (src/mailbox/list.rs): two senders push
//! onto one receiver's list while the receiver drains it and, when it finds
//! nothing, arms the wake sentinel and sleeps.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_mailbox`
//!
//! Checked: every task is received exactly once, each sender's tasks come
//! out in the order it pushed them, and a sleeping receiver is always woken
//! (a lost wake-up leaves it spinning on its wake latch until loom reports
//! "Model exceeded maximum number of branches"). The wake latch is a count
//! only senders write, as in `loom_doorbell.rs`.
//!
//! Another model adds a thief that steals the whole list while the
//! receiver drains, arms and sleeps: nothing is lost or taken twice, and
//! the thief never hides a push from the sleeping receiver.
//!
//! A further model closes the list (a core leaving its pool) while two
//! senders push: every task is either in the chain the close took or
//! refused back to its sender, never both and never neither, and nothing
//! is queued on a closed list.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::*};
use loom::thread;
use roving::loom_api::{Action, AtomicList, BlockCache, Pushed, Task, TaskQueue};
use std::ptr::NonNull;

const SENDERS: usize = 2;
const PER_SENDER: usize = 2;

/// A task as the model sees it: the header first, then who sent it.
#[repr(C)]
struct Item {
    task: Task,
    sender: usize,
    seq: usize,
}

/// Never called: the model only moves tasks, it does not run them.
unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("the model does not run tasks");
}

fn item(sender: usize, seq: usize) -> NonNull<Task> {
    let item = Box::new(Item { task: Task::new(not_run), sender, seq });
    NonNull::from(Box::leak(item)).cast()
}

struct Mailbox {
    list: AtomicList,
    /// Wake signals sent to the receiver (written only by senders).
    wakes: AtomicUsize,
}

/// What the receiver got: per sender, the sequence numbers in order.
#[derive(Default)]
struct Received {
    by_sender: [Vec<usize>; SENDERS],
    total: usize,
}

impl Received {
    /// Moves a taken chain in, oldest first; returns how many it held.
    fn take(&mut self, chain: Option<NonNull<Task>>) -> usize {
        let mut queue = TaskQueue::new();
        // SAFETY: a taken chain is the receiver's.
        let count = unsafe { queue.append_reversed(chain) };
        while let Some(task) = queue.pop_front() {
            // SAFETY: made by `item` and leaked; the receiver owns it now.
            let item = unsafe { Box::from_raw(task.cast::<Item>().as_ptr()) };
            self.by_sender[item.sender].push(item.seq);
            self.total += 1;
        }
        count
    }
}

fn sender(mailbox: &Mailbox, me: usize, wake_always: bool) {
    for seq in 0..PER_SENDER {
        // SAFETY: the task is new and ours to give.
        let pushed = unsafe { mailbox.list.push(item(me, seq)) };
        if pushed == Pushed::WasArmed || wake_always {
            mailbox.wakes.fetch_add(1, Release);
        }
    }
}

/// The receiver: drain; if empty, arm and, if still empty, sleep until a
/// wake signal, until `done` says every task is accounted for (a sleeping
/// receiver also looks at `done`: tasks a thief took need no wake-up).
fn receive_until(mailbox: &Mailbox, done: impl Fn(&Received) -> bool) -> Received {
    let mut received = Received::default();
    let mut seen_wakes = 0;
    while !done(&received) {
        if received.take(mailbox.list.take_all()) > 0 {
            continue;
        }
        if received.take(mailbox.list.take_all_and_arm()) > 0 {
            continue;
        }
        // Asleep: only a wake signal (or the end) ends this.
        loop {
            let wakes = mailbox.wakes.load(Acquire);
            if wakes > seen_wakes {
                seen_wakes = wakes;
                break;
            }
            if done(&received) {
                break;
            }
            thread::yield_now();
        }
    }
    received
}

fn model(wake_always: bool) {
    loom::model(move || {
        let mailbox = Arc::new(Mailbox { list: AtomicList::new(), wakes: AtomicUsize::new(0) });
        let senders: Vec<_> = (0..SENDERS)
            .map(|me| {
                let mailbox = mailbox.clone();
                thread::spawn(move || sender(&mailbox, me, wake_always))
            })
            .collect();
        let received = receive_until(&mailbox, |r| r.total == SENDERS * PER_SENDER);
        for sender in senders {
            sender.join().unwrap();
        }
        assert_eq!(received.total, SENDERS * PER_SENDER, "a task was received twice");
        for order in &received.by_sender {
            assert_eq!(*order, (0..PER_SENDER).collect::<Vec<_>>(), "a sender's tasks came out of order");
        }
        assert!(!mailbox.list.has_tasks(), "a task was left behind");
    });
}

#[test]
fn two_senders_one_sleeping_receiver() {
    model(false);
}

/// The model must be able to fail: a sender that never wakes the receiver
/// (the sentinel ignored) leaves it asleep with tasks queued.
#[test]
#[should_panic(expected = "maximum number of branches")]
fn ignoring_the_sentinel_loses_the_wake_up() {
    loom::model(|| {
        let mailbox = Arc::new(Mailbox { list: AtomicList::new(), wakes: AtomicUsize::new(0) });
        let sender = {
            let mailbox = mailbox.clone();
            // SAFETY: the task is new and ours to give.
            thread::spawn(move || _ = unsafe { mailbox.list.push(item(0, 0)) })
        };
        let mut received = Received::default();
        let mut seen_wakes = 0;
        while received.total < 1 {
            if received.take(mailbox.list.take_all_and_arm()) > 0 {
                continue;
            }
            while mailbox.wakes.load(Acquire) == seen_wakes {
                thread::yield_now();
            }
            seen_wakes = mailbox.wakes.load(Acquire);
        }
        sender.join().unwrap();
    });
}

/// Two senders push one task each while the receiver drains once and then
/// closes the list; a refused task stays with its sender.
#[test]
fn closing_loses_no_task_and_takes_none_twice() {
    loom::model(|| {
        let mailbox = Arc::new(Mailbox { list: AtomicList::new(), wakes: AtomicUsize::new(0) });
        let senders: Vec<_> = (0..SENDERS)
            .map(|me| {
                let mailbox = mailbox.clone();
                thread::spawn(move || {
                    let task = item(me, 0);
                    // SAFETY: the task is new and ours to give.
                    match unsafe { mailbox.list.push(task) } {
                        Pushed::Closed => {
                            // SAFETY: refused, so still ours.
                            drop(unsafe { Box::from_raw(task.cast::<Item>().as_ptr()) });
                            1
                        }
                        Pushed::Queued | Pushed::WasArmed => 0,
                    }
                })
            })
            .collect();
        let mut received = Received::default();
        received.take(mailbox.list.take_all());
        received.take(mailbox.list.take_all_and_close());
        let refused: usize = senders.into_iter().map(|sender| sender.join().unwrap()).sum();
        assert_eq!(received.total + refused, SENDERS, "a task was lost or taken twice");
        assert!(!mailbox.list.has_tasks(), "a task was queued on a closed list");
    });
}

/// One sender pushes two tasks; a thief steals whatever it finds, twice;
/// the receiver drains, arms and sleeps until woken, or until every task
/// is accounted for (a sleeping core does not need the tasks a thief ran).
#[test]
fn a_thief_takes_nothing_twice_and_never_hides_a_wake_up() {
    loom::model(|| {
        let mailbox = Arc::new(Mailbox { list: AtomicList::new(), wakes: AtomicUsize::new(0) });
        let stolen = Arc::new(AtomicUsize::new(0));
        let sender = {
            let mailbox = mailbox.clone();
            thread::spawn(move || sender(&mailbox, 0, false))
        };
        let thief = {
            let (mailbox, stolen) = (mailbox.clone(), stolen.clone());
            thread::spawn(move || {
                let mut got = Received::default();
                for _ in 0..2 {
                    let count = got.take(mailbox.list.steal_all());
                    stolen.fetch_add(count, Release);
                }
                got
            })
        };
        let received = receive_until(&mailbox, |r| r.total + stolen.load(Acquire) == PER_SENDER);
        sender.join().unwrap();
        let got = thief.join().unwrap();
        let mut seqs: Vec<usize> = received.by_sender[0].iter().chain(&got.by_sender[0]).copied().collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..PER_SENDER).collect::<Vec<_>>(), "a task was lost or taken twice");
        assert!(!mailbox.list.has_tasks(), "a task was left behind");
    });
}
