//! Event loops on the host: the borrowed-caller loop, loops with a core of
//! their own, one-shot callbacks, objects outliving their handles, and
//! the group's join.
#![cfg(feature = "std")]

#[path = "common/event_loop_cases.rs"]
mod event_loop_cases;
mod support;

use event_loop_cases::{PARK_EVERY, expected_sum, many_callers, reentrant_request};
use roving::event_loop::{Callback, DeliveryError, Fired, Loop, LoopGroup, Object};
use roving::{Config, Pool, platform};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;
use support::{on_pool, run_pool, with_watchdog};

#[test]
fn four_cores_issue_100_000_operations_on_one_object() {
    let total = 100_000;
    let report = on_pool(4, || many_callers(4, total));
    assert_eq!(report.sum, expected_sum(total), "checksum of the replies");
    assert!(report.outlived_handles, "the object finished while callbacks were pending");
    assert!(
        report.after_handles >= total / PARK_EVERY,
        "only {} replies fired after the handles were dropped; the parked ones must",
        report.after_handles
    );
}

#[test]
fn fewer_cores_issue_on_one_object() {
    for cores in [1, 2] {
        let report = on_pool(cores, || many_callers(cores, 20_000));
        assert_eq!(report.sum, expected_sum(20_000), "checksum at {cores} cores");
    }
}

#[test]
fn a_callback_calling_back_into_its_object_is_deferred() {
    let stamps = run_pool(2, reentrant_request).unwrap();
    assert!(stamps.reply_started < stamps.call_returned, "{stamps:?}");
    assert!(stamps.call_returned < stamps.reply_returned, "{stamps:?}");
    assert!(
        stamps.reply_returned < stamps.deferred_ran,
        "the re-entrant operation ran inside the callback, not after it: {stamps:?}"
    );
    assert!(stamps.deferred_ran < stamps.second_reply, "{stamps:?}");
}

/// The first caller drains; a caller arriving meanwhile queues and returns
/// at once, and its operation runs on the first caller's thread.
#[test]
fn later_callers_only_enqueue_and_return() {
    with_watchdog(Duration::from_secs(30), "the borrowed-caller loop", || {
        let lp: Loop<Vec<thread::ThreadId>> = Loop::new(Vec::new());
        let (entered_tx, entered_rx) = mpsc::channel();
        let release = Arc::new(AtomicBool::new(false));
        let first = {
            let (lp, release) = (lp.clone(), release.clone());
            thread::spawn(move || {
                lp.defer(move |ran: &mut Vec<_>, _: &Loop<_>| {
                    ran.push(thread::current().id());
                    entered_tx.send(()).unwrap();
                    while !release.load(SeqCst) {
                        thread::yield_now();
                    }
                })
                .unwrap();
                thread::current().id()
            })
        };
        entered_rx.recv().unwrap();
        // The first caller is draining (and held there): this only queues.
        lp.defer(|ran: &mut Vec<_>, _: &Loop<_>| ran.push(thread::current().id())).unwrap();
        assert!(!lp.is_idle(), "the second operation has not run yet");
        release.store(true, SeqCst);
        let drainer = first.join().unwrap();
        assert!(lp.is_idle());
        let (tx, rx) = mpsc::channel();
        lp.defer(move |ran: &mut Vec<_>, _: &Loop<_>| tx.send(ran.clone()).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), vec![drainer, drainer], "the queued operation ran on the drainer");
    });
}

/// Operations deferred by one caller run in its order; those of different
/// callers never overlap.
#[test]
fn operations_run_one_at_a_time_in_order_per_caller() {
    with_watchdog(Duration::from_secs(60), "ordered operations", || {
        let lp: Loop<(bool, Vec<Vec<usize>>)> = Loop::new((false, vec![Vec::new(); 4]));
        let callers: Vec<_> = (0..4)
            .map(|caller| {
                let lp = lp.clone();
                thread::spawn(move || {
                    for seq in 0..20_000 {
                        lp.defer(move |(busy, seen): &mut (bool, Vec<Vec<usize>>), _: &Loop<_>| {
                            assert!(!*busy, "two operations at once");
                            *busy = true;
                            seen[caller].push(seq);
                            *busy = false;
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for caller in callers {
            caller.join().unwrap();
        }
        assert!(lp.is_idle(), "an operation was left behind");
        let (tx, rx) = mpsc::channel();
        lp.defer(move |(_, seen): &mut (bool, Vec<Vec<usize>>), _: &Loop<_>| tx.send(seen.clone()).unwrap())
            .unwrap();
        for (caller, seen) in rx.recv().unwrap().into_iter().enumerate() {
            assert_eq!(seen, (0..20_000).collect::<Vec<_>>(), "caller {caller}'s operations out of order");
        }
    });
}

/// A loop with a core of its own runs every operation there, whoever
/// defers it.
#[test]
fn a_loop_with_a_core_runs_only_there() {
    let ran = on_pool(4, || {
        let pool = Pool::current().unwrap();
        let lp = Loop::on_core(&pool, 2, Vec::new()).unwrap();
        assert_eq!(lp.core(), Some(2));
        let futures: Vec<_> = (0..4)
            .map(|core| {
                let lp = lp.clone();
                pool.future_on(core, move || {
                    for _ in 0..1_000 {
                        lp.defer(|ran: &mut Vec<usize>, _: &Loop<_>| {
                            ran.push(platform::current_core().unwrap())
                        })
                        .unwrap();
                    }
                })
                .unwrap()
            })
            .collect();
        for future in futures {
            future.wait().unwrap();
        }
        let (tx, rx) = mpsc::channel();
        lp.defer(move |ran: &mut Vec<usize>, _: &Loop<_>| tx.send(std::mem::take(ran)).unwrap()).unwrap();
        loop {
            if let Ok(ran) = rx.try_recv() {
                break ran;
            }
            roving::strand::yield_now().unwrap();
        }
    });
    assert_eq!(ran.len(), 4_000);
    assert!(ran.iter().all(|&core| core == 2), "an operation ran off its loop's core");
}

#[test]
fn a_core_that_is_not_there_is_refused_with_the_state() {
    on_pool(2, || {
        let pool = Pool::current().unwrap();
        match Loop::on_core(&pool, 9, "state") {
            Err(roving::PinError::NoSuchCore { core: 9, value: "state", .. }) => {}
            other => panic!("expected NoSuchCore with the state, got {other:?}"),
        }
    });
}

/// A strong callback keeps its object alive; a weak one does not, and is
/// skipped once the object is gone.
#[test]
fn weak_callbacks_are_skipped_once_the_object_is_gone() {
    let lp: Loop<usize> = Loop::new(0);
    let weak = lp.downgrade();
    let strong = lp.callback(|n: &mut usize, _: &Loop<usize>, add: usize| *n += add);
    let skipped = lp.weak_callback(|n: &mut usize, _: &Loop<usize>, add: usize| *n += add);
    let ran = lp.weak_callback(|n: &mut usize, _: &Loop<usize>, add: usize| *n += add);
    assert!(matches!(ran.fire(10), Ok(Fired::Deferred)));
    drop(lp);
    let lp = weak.upgrade().expect("the strong callback keeps the loop alive");
    drop(lp);
    assert!(matches!(strong.fire(1), Ok(Fired::Deferred)));
    assert!(weak.upgrade().is_none(), "the loop outlived its last strong callback");
    assert!(matches!(skipped.fire(100), Ok(Fired::Skipped)), "a weak callback ran on a gone object");
}

struct Pipe {
    pending: Vec<Callback<Result<u64, &'static str>>>,
    closes: Arc<AtomicUsize>,
}

impl Object for Pipe {
    fn close(&mut self, _: &Loop<Self>) {
        self.closes.fetch_add(1, SeqCst);
        for callback in self.pending.drain(..) {
            callback.fire(Err("closed")).unwrap();
        }
    }
}

/// Joining a context closes its objects, even those with handles still
/// held, once each; their pending callbacks fire with the object's error.
#[test]
fn join_closes_every_object_once_and_waits() {
    on_pool(2, || {
        let context = LoopGroup::new();
        let closes = Arc::new(AtomicUsize::new(0));
        let results = Arc::new(Mutex::new(Vec::new()));
        let pipes: Vec<_> =
            (0..3).map(|_| context.object(Pipe { pending: Vec::new(), closes: closes.clone() })).collect();
        for pipe in &pipes {
            let results = results.clone();
            let callback = Callback::new(move |result| results.lock().unwrap().push(result));
            pipe.defer(move |pipe: &mut Pipe, _: &Loop<Pipe>| pipe.pending.push(callback)).unwrap();
        }
        assert_eq!(context.unfinished(), 3);
        context.join().unwrap();
        assert_eq!(context.unfinished(), 0);
        assert_eq!(closes.load(SeqCst), 3, "a close hook ran twice or not at all");
        assert_eq!(*results.lock().unwrap(), vec![Err("closed"); 3]);
        drop(pipes);
        assert_eq!(closes.load(SeqCst), 3, "dropping the handles closed again");
        // An object made after the join is closed at once.
        let late = context.object(Pipe { pending: Vec::new(), closes: closes.clone() });
        assert!(late.is_closing());
        assert_eq!(closes.load(SeqCst), 4);
    });
}

#[test]
fn join_outside_a_strand_with_objects_pending_says_so() {
    let context = LoopGroup::new();
    let pipe = context.object(Pipe { pending: Vec::new(), closes: Arc::new(AtomicUsize::new(0)) });
    let held = pipe.callback(|_: &mut Pipe, _: &Loop<Pipe>, ()| {});
    assert!(matches!(context.join(), Err(roving::sync::WaitError::NotAStrand)));
    drop(held);
    assert_eq!(context.unfinished(), 0, "a dropped callback released its object");
    assert!(context.join().is_ok());
    drop(pipe);
}

/// An operation that panics stops its loop: the panic reaches the caller,
/// later operations come back, and queued callbacks are released.
#[test]
fn a_panicking_operation_stops_the_loop() {
    let context = LoopGroup::new();
    let pipe = context.object(Pipe { pending: Vec::new(), closes: Arc::new(AtomicUsize::new(0)) });
    let held = Arc::new(Mutex::new(Some(pipe.callback(|_: &mut Pipe, _: &Loop<Pipe>, ()| {}))));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pipe.defer(move |_: &mut Pipe, this: &Loop<Pipe>| {
            // Queued behind this one, then dropped by the stop.
            let callback = held.lock().unwrap().take().unwrap();
            this.defer(move |_: &mut Pipe, _: &Loop<Pipe>| drop(callback)).unwrap();
            panic!("an operation failed");
        })
        .unwrap();
    }));
    assert!(panicked.is_err(), "the panic reached the drainer");
    assert!(pipe.is_stopped());
    match pipe.defer(|_: &mut Pipe, _: &Loop<Pipe>| {}) {
        Err(DeliveryError::Stopped(_)) => {}
        other => panic!("expected Stopped, got {other:?}"),
    }
    drop(pipe);
    assert_eq!(context.unfinished(), 0, "the dropped callback and the refused close released the object");
}

#[test]
fn a_defer_after_the_loops_pool_stopped_comes_back() {
    let machine = roving::platform::host::Machine::new(2).unwrap();
    machine
        .run(|| {
            let pool = Pool::with_config(Config::new()).unwrap();
            let lp = Loop::on_core(&pool, 1, 0u64).unwrap();
            pool.run(|| {}).unwrap();
            match lp.defer(|n: &mut u64, _: &Loop<u64>| *n += 7) {
                Err(DeliveryError::PoolStopped(_)) => {}
                other => panic!("expected PoolStopped, got {other:?}"),
            }
            assert!(lp.is_stopped());
            match lp.defer(|n: &mut u64, _: &Loop<u64>| *n += 8) {
                Err(DeliveryError::Stopped(op)) => {
                    let mut n = 0;
                    op(&mut n, &Loop::new(0));
                    assert_eq!(n, 8, "the refused operation came back whole");
                }
                other => panic!("expected Stopped, got {other:?}"),
            }
        })
        .unwrap();
}

#[test]
fn joining_a_context_from_a_drain_of_its_own_loop_is_refused() {
    struct Unit;
    impl Object for Unit {}
    let (inside, after) = on_pool(2, || {
        let context = Arc::new(LoopGroup::new());
        let unit = context.object(Unit);
        let (tx, rx) = mpsc::channel();
        let joiner = context.clone();
        // No drainer: this strand drains, and the operation runs here.
        unit.defer(move |_: &mut Unit, _: &Loop<Unit>| tx.send(joiner.join()).unwrap()).unwrap();
        let inside = rx.recv().unwrap();
        drop(unit);
        // Outside the drain the same join works.
        (inside, context.join())
    });
    assert_eq!(inside, Err(roving::strand::WaitError::WouldDeadlock));
    assert_eq!(after, Ok(()));
}
