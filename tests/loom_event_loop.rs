//! loom model of an event loop's hand-off (src/protocol/loop_handoff.rs), with
//! its real `drain`: callers defer operations; whoever finds the loop idle
//! claims it and runs its operation at once, or queues it and drains, on
//! its own thread (the borrowed-caller loop); an operation may defer
//! another onto its own loop; a drainer with a budget passes on.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_event_loop`
//!
//! Checked: never two operations at once; every operation runs exactly
//! once; none is left in the queue when the last drainer leaves (the loop
//! is idle when every caller has returned); an operation deferred from
//! inside an operation runs after it, on the same drainer, without
//! blocking; and the model fails when a caller does not drain a loop it
//! found idle.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;
use roving::loom_api::{Deferred, Drained, Handoff, Link};
use std::ptr::NonNull;

/// An operation as the model sees it: the link first, then its name, and
/// the name of one to defer from inside it, if any.
#[repr(C)]
struct Op {
    link: Link,
    id: usize,
    defers: Option<usize>,
}

fn op(id: usize, defers: Option<usize>) -> NonNull<Link> {
    NonNull::from(Box::leak(Box::new(Op { link: Link::new(), id, defers }))).cast()
}

struct Loop {
    handoff: Handoff,
    /// Set while an operation runs.
    running: AtomicBool,
    log: Mutex<Vec<usize>>,
    budget: usize,
}

impl Loop {
    fn new(budget: usize) -> Arc<Self> {
        Arc::new(Self {
            handoff: Handoff::new(),
            running: AtomicBool::new(false),
            log: Mutex::new(Vec::new()),
            budget,
        })
    }

    /// Runs one queued operation, which the drainer owns.
    fn run(&self, link: NonNull<Link>) {
        // SAFETY: ours; made by `op` and leaked.
        let op = unsafe { Box::from_raw(link.cast::<Op>().as_ptr()) };
        self.run_op(op.id, op.defers);
    }

    /// Runs an operation as the drainer.
    fn run_op(&self, id: usize, defers: Option<usize>) {
        assert!(!self.running.swap(true, SeqCst), "two operations of one loop ran at once");
        self.log.lock().unwrap().push(id);
        if let Some(id) = defers {
            // Re-entry: the drainer is us, so this must only queue.
            assert_eq!(self.defer(id, None, true), Deferred::Queued, "a re-entrant defer did not just queue");
        }
        self.running.swap(false, SeqCst);
    }

    /// Defers an operation as `Loop::defer` does: an idle loop is claimed
    /// and the operation run on the spot, then the queue drained;
    /// otherwise it is queued, and drained if that wins the drain (and
    /// `drains`).
    fn defer(&self, id: usize, defers: Option<usize>, drains: bool) -> Deferred {
        // Caller 1 always queues, so both ways onto an idle loop race.
        if drains && id != 1 && self.handoff.claim() {
            self.run_op(id, defers);
            self.drain();
            return Deferred::Drain;
        }
        // SAFETY: new and ours to give.
        let deferred = unsafe { self.handoff.defer(op(id, defers)) };
        if deferred == Deferred::Drain && drains {
            self.drain();
        }
        deferred
    }

    /// Drains with the loop's budget; a drainer that runs out passes the
    /// drain on to itself later, as a requeued drain task does.
    fn drain(&self) {
        loop {
            // SAFETY: the caller won the drain (or kept it on `Budget`).
            match unsafe { self.handoff.drain(self.budget, |link| self.run(link)) } {
                Drained::Budget => thread::yield_now(),
                Drained::Empty => return,
                Drained::Stopped => unreachable!("nothing stops the loop here"),
            }
        }
    }
}

/// Two callers race one operation each onto an idle loop while the main
/// thread defers one that defers another from inside it.
fn model(budget: usize, drains: bool) {
    loom::model(move || {
        let lp = Loop::new(budget);
        let callers: Vec<_> = (0..2)
            .map(|id| {
                let lp = lp.clone();
                thread::spawn(move || {
                    let _ = lp.defer(id, None, drains);
                })
            })
            .collect();
        let _ = lp.defer(2, Some(3), drains);
        for caller in callers {
            caller.join().unwrap();
        }
        let mut log = lp.log.lock().unwrap().clone();
        let reentered_after = log.iter().position(|&id| id == 3).zip(log.iter().position(|&id| id == 2));
        assert!(
            reentered_after.is_none_or(|(three, two)| three > two),
            "a deferred operation ran before its deferrer"
        );
        log.sort_unstable();
        assert_eq!(log, vec![0, 1, 2, 3], "an operation was left in the queue, or ran twice");
        assert!(lp.handoff.is_dormant(), "the last drainer left the loop busy");
    });
}

#[test]
fn no_operation_is_left_when_the_last_drainer_leaves() {
    model(usize::MAX, true);
}

#[test]
fn a_drainer_with_a_budget_passes_on_and_leaves_nothing() {
    model(1, true);
}

/// The model must be able to fail: a caller that finds the loop idle and
/// does not drain leaves its operation in the queue.
#[test]
#[should_panic(expected = "left in the queue")]
fn an_idle_loop_not_drained_strands_the_operation() {
    model(usize::MAX, false);
}

/// A stopped loop refuses operations and gives back what was queued.
#[test]
fn an_abandoned_loop_refuses_and_returns_what_was_queued() {
    loom::model(|| {
        let lp = Loop::new(usize::MAX);
        // SAFETY: new and ours to give.
        assert_eq!(unsafe { lp.handoff.defer(op(0, None)) }, Deferred::Drain);
        let other = {
            let lp = lp.clone();
            thread::spawn(move || {
                let mine = op(1, None);
                // SAFETY: new and ours to give; refused, so still ours.
                match unsafe { lp.handoff.defer(mine) } {
                    Deferred::Refused => {
                        drop(unsafe { Box::from_raw(mine.cast::<Op>().as_ptr()) });
                        0
                    }
                    Deferred::Queued => 1,
                    Deferred::Drain => unreachable!("the loop has a drainer until it is abandoned"),
                }
            })
        };
        // The drainer gives up (its drain task was refused): it stops the
        // loop and takes everything not run.
        // SAFETY: we are the drainer.
        let chains = unsafe { lp.handoff.abandon() };
        let mut taken = 0;
        for mut chain in chains {
            while let Some(link) = NonNull::new(chain) {
                // SAFETY: ours now.
                unsafe {
                    chain = Link::next(link);
                    drop(Box::from_raw(link.cast::<Op>().as_ptr()));
                }
                taken += 1;
            }
        }
        let queued_by_other = other.join().unwrap();
        assert_eq!(taken, 1 + queued_by_other, "an operation was lost at the stop");
        assert!(lp.handoff.is_stopped());
    });
}
