//! loom model of an actor's schedule word (src/protocol/actor_schedule.rs): senders
//! push messages; whoever wakes the dormant actor runs its turn right
//! there (as a core would run the task it queued); a turn takes, handles,
//! and tries to go dormant while more messages arrive.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_actor`
//!
//! Checked: two turns never handle messages at once; every message is
//! handled exactly once, in order per sender; none is stranded (queued
//! with no turn to handle it) when the senders are done; at a close,
//! every message is either handled before the `stopped` hook or refused
//! back, and the hook runs exactly once, last.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;
use roving::loom_api::{ActorPushed, Closing, Finished, Link, Schedule, reverse};
use std::ptr::NonNull;

const SENDERS: usize = 2;
const PER_SENDER: usize = 2;

/// A message as the model sees it: the link first, then who sent it.
#[repr(C)]
struct Message {
    link: Link,
    sender: usize,
    seq: usize,
}

fn message(sender: usize, seq: usize) -> NonNull<Link> {
    NonNull::from(Box::leak(Box::new(Message { link: Link::new(), sender, seq }))).cast()
}

#[derive(Debug, PartialEq, Eq)]
enum Event {
    Handled(usize, usize),
    Stopped,
}

struct Actor {
    schedule: Schedule,
    /// Set while a turn handles messages.
    in_turn: AtomicBool,
    log: Mutex<Vec<Event>>,
}

impl Actor {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            schedule: Schedule::new(None),
            in_turn: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
        })
    }

    fn enter(&self) {
        assert!(!self.in_turn.swap(true, SeqCst), "two turns of one actor ran at once");
    }

    fn leave(&self) {
        self.in_turn.swap(false, SeqCst);
    }

    /// Tries to end the turn; false if more messages came.
    fn finish(&self) -> bool {
        self.leave();
        match self.schedule.finish(None) {
            Finished::Dormant => true,
            Finished::More => {
                self.enter();
                false
            }
            Finished::Stopping => {
                self.log.lock().unwrap().push(Event::Stopped);
                self.schedule.end();
                true
            }
        }
    }

    /// One turn, as `actor/turn.rs` runs it (without the quota): it takes
    /// first, and after a batch tries to leave before taking again.
    fn turn(&self) {
        self.enter();
        let mut handled = false;
        loop {
            if handled && self.finish() {
                return;
            }
            let taken = self.schedule.take();
            if taken.is_null() {
                if self.finish() {
                    return;
                }
                continue;
            }
            handled = true;
            // SAFETY: taken by this turn, so ours.
            let mut next = unsafe { reverse(taken) };
            while let Some(link) = NonNull::new(next) {
                // SAFETY: ours; made by `message` and leaked.
                let message = unsafe {
                    next = Link::next(link);
                    Box::from_raw(link.cast::<Message>().as_ptr())
                };
                self.log.lock().unwrap().push(Event::Handled(message.sender, message.seq));
            }
        }
    }

    /// Sends `PER_SENDER` messages; runs the turn it wakes. Returns how
    /// many were refused.
    fn send_all(&self, me: usize, schedules: bool) -> usize {
        let mut refused = 0;
        for seq in 0..PER_SENDER {
            let message = message(me, seq);
            // SAFETY: the message is new and ours to give.
            match unsafe { self.schedule.push(message) } {
                ActorPushed::Queued => {}
                ActorPushed::Woke(_) if schedules => self.turn(),
                ActorPushed::Woke(_) => {}
                ActorPushed::Closed => {
                    // SAFETY: refused, so still ours.
                    drop(unsafe { Box::from_raw(message.cast::<Message>().as_ptr()) });
                    refused += 1;
                }
            }
        }
        refused
    }
}

fn senders(actor: &Arc<Actor>, schedules: bool) -> Vec<thread::JoinHandle<usize>> {
    (0..SENDERS)
        .map(|me| {
            let actor = actor.clone();
            thread::spawn(move || actor.send_all(me, schedules))
        })
        .collect()
}

/// Checks the log: each sender's handled messages in order, and the
/// `stopped` event, if any, last. Returns how many were handled.
fn check_log(log: &[Event]) -> usize {
    let mut next = [0; SENDERS];
    for (i, event) in log.iter().enumerate() {
        match *event {
            Event::Handled(sender, seq) => {
                assert_eq!(seq, next[sender], "sender {sender}'s messages out of order or twice");
                next[sender] += 1;
            }
            Event::Stopped => assert_eq!(i, log.len() - 1, "a message was handled after `stopped`"),
        }
    }
    next.iter().sum()
}

#[test]
fn messages_sent_while_a_turn_finishes_are_never_stranded() {
    loom::model(|| {
        let actor = Actor::new();
        for sender in senders(&actor, true) {
            assert_eq!(sender.join().unwrap(), 0, "nothing is refused before a close");
        }
        let log = actor.log.lock().unwrap();
        assert_eq!(check_log(&log), SENDERS * PER_SENDER, "a message was stranded with no turn to run it");
        assert!(actor.schedule.is_dormant(), "the actor did not go dormant");
    });
}

#[test]
fn a_close_loses_nothing_and_stops_once() {
    loom::model(|| {
        let actor = Actor::new();
        let senders = senders(&actor, true);
        if let Closing::Woke(_) = actor.schedule.close() {
            actor.turn();
        }
        let refused: usize = senders.into_iter().map(|sender| sender.join().unwrap()).sum();
        let log = actor.log.lock().unwrap();
        let handled = check_log(&log);
        assert_eq!(handled + refused, SENDERS * PER_SENDER, "a message was lost or handled twice");
        assert_eq!(log.last(), Some(&Event::Stopped), "`stopped` did not run, or not last");
        assert!(actor.schedule.is_closed() && !actor.schedule.is_dormant());
        // A closed actor with its last turn over holds nothing.
        assert!(actor.schedule.abandon().is_null());
    });
}

/// The model must be able to fail: a sender that wins the wake but never
/// schedules the turn strands its message.
#[test]
#[should_panic(expected = "stranded")]
fn a_wake_not_acted_on_strands_the_message() {
    loom::model(|| {
        let actor = Actor::new();
        for sender in senders(&actor, false) {
            sender.join().unwrap();
        }
        let log = actor.log.lock().unwrap();
        assert_eq!(check_log(&log), SENDERS * PER_SENDER, "a message was stranded with no turn to run it");
    });
}

/// A pinned actor keeps its pin in the word while dormant; abandoning it
/// (its last handle going) must not read the pin as a message.
#[test]
fn a_dormant_pin_is_not_a_message() {
    loom::model(|| {
        let schedule = Schedule::new(Some(5));
        // SAFETY: new and ours to give.
        let pushed = unsafe { schedule.push(message(0, 0)) };
        assert_eq!(pushed, ActorPushed::Woke(Some(5)));
        let taken = schedule.take();
        // SAFETY: taken, so ours; made by `message`.
        drop(unsafe { Box::from_raw(taken.cast::<Message>()) });
        assert_eq!(schedule.finish(Some(5)), Finished::Dormant);
        assert!(schedule.abandon().is_null(), "the pin was taken for a message");
    });
}
