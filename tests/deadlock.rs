//! Deadlocks: a strand that locks a mutex it holds is refused at once; a
//! pool whose strands all wait for each other says who waits on what, then
//! fails with the report (by default) or keeps waiting.
#![cfg(feature = "std")]

mod support;

use roving::platform::host::Machine;
use roving::strand::{self, FailureKind, WaitError};
use roving::sync::{Event, Mutex};
use roving::{Config, OnDeadlock, Pool, RunError};
use std::sync::Arc;
use std::time::Duration;

/// Runs `main` as the root of a pool with `config` on a machine of
/// `cores`, alone among this binary's pool tests (fibres are shared).
/// Also returns how many fibres were still held once the machine stopped.
fn run_with(cores: usize, config: Config, main: impl FnOnce() + Send) -> (Result<(), RunError>, usize) {
    support::with_turn(|| {
        let outcome = support::with_watchdog(Duration::from_secs(60), "a deadlock test", || {
            Machine::new(cores).unwrap().run(|| Pool::with_config(config).unwrap().run(main)).unwrap()
        });
        (outcome, strand::usage().fibres_in_use)
    })
}

#[test]
fn locking_a_mutex_the_strand_holds_is_refused() {
    let second = support::on_pool(2, || {
        let mutex = Mutex::new(5);
        let _held = mutex.lock().unwrap();
        mutex.lock().map(|_| ()).unwrap_err()
    });
    assert_eq!(second, WaitError::WouldDeadlock);
    assert!(second.to_string().contains("holds what it would wait for"));
}

/// Two strands take two mutexes in opposite orders, each after the other
/// took its first: neither can go on.
fn opposite_orders() {
    let (first, second) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
    let (a_has_first, b_has_second) = (Arc::new(Event::new()), Arc::new(Event::new()));
    let a = {
        let (first, second, mine, theirs) =
            (first.clone(), second.clone(), a_has_first.clone(), b_has_second.clone());
        strand::spawn(move || -> Result<(), WaitError> {
            let _one = first.lock()?;
            mine.set();
            theirs.wait()?;
            let _two = second.lock()?;
            Ok(())
        })
        .unwrap()
    };
    let b = strand::spawn(move || -> Result<(), WaitError> {
        let _two = second.lock()?;
        b_has_second.set();
        a_has_first.wait()?;
        let _one = first.lock()?;
        Ok(())
    })
    .unwrap();
    // The root joins both; the cancel that follows the report ends them.
    let _ = a.join();
    let _ = b.join();
}

#[test]
fn two_strands_taking_two_mutexes_in_opposite_orders_are_reported_and_the_pool_fails() {
    for cores in [1, 2, 4] {
        let (outcome, fibres_held) = run_with(cores, Config::new(), opposite_orders);
        let error = outcome.unwrap_err();
        let RunError::Failed(failure) = error else { panic!("{cores} cores: not a failure: {error:?}") };
        assert!(matches!(failure.kind(), FailureKind::Deadlock { .. }), "{cores} cores: {failure}");
        let report = failure.deadlock().expect("a deadlock failure carries its report");
        let text = failure.to_string();
        let mutex_waits: Vec<_> =
            report.waiting.iter().filter(|waiter| waiter.reason == strand::BlockReason::Mutex).collect();
        assert_eq!(mutex_waits.len(), 2, "{cores} cores: both strands wait for a mutex:\n{text}");
        let (one, two) = (mutex_waits[0], mutex_waits[1]);
        assert_eq!(one.holder, Some(two.strand), "{cores} cores: each waits for the other:\n{text}");
        assert_eq!(two.holder, Some(one.strand), "{cores} cores: each waits for the other:\n{text}");
        assert!(
            report.waiting.iter().any(|waiter| waiter.reason == strand::BlockReason::Join),
            "{cores} cores: the root waits to join:\n{text}"
        );
        assert!(text.contains("held by strand #"), "{text}");
        assert_eq!(fibres_held, 0, "{cores} cores: the cancelled strands gave their fibres back");
    }
}

#[test]
fn an_event_never_set_is_reported() {
    let (outcome, fibres_held) = run_with(2, Config::new(), || {
        let never = Event::new();
        let _ = never.wait();
    });
    assert_eq!(fibres_held, 0);
    let error = outcome.unwrap_err();
    let RunError::Failed(failure) = error else { panic!("not a failure: {error:?}") };
    let report = failure.deadlock().expect("a deadlock report");
    assert_eq!(report.waiting.len(), 1);
    assert_eq!(report.waiting[0].reason, strand::BlockReason::Event);
    assert!(failure.to_string().contains("waits (Event)"), "{failure}");
}

#[test]
fn a_pool_told_to_wait_keeps_waiting_and_runs_on_when_woken_from_outside() {
    let machine = Machine::new(2).unwrap();
    let event = Arc::new(Event::new());
    let outcome = support::with_turn(|| {
        support::with_watchdog(Duration::from_secs(60), "a waiting deadlock", || {
            machine
                .run(|| {
                    let pool = Pool::with_config(Config::new().on_deadlock(OnDeadlock::Wait)).unwrap();
                    let (outside, watched, waker) = (machine.clone(), pool.clone(), event.clone());
                    let helper = std::thread::spawn(move || {
                        let _member = outside.enter();
                        while watched.deadlock().is_none() {
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        let report = watched.deadlock().unwrap();
                        waker.set();
                        report
                    });
                    let woken = pool.run(|| event.wait());
                    (woken, helper.join().unwrap())
                })
                .unwrap()
        })
    });
    let (woken, report) = outcome;
    assert_eq!(woken.unwrap(), Ok(()), "the root ran on once the event was set");
    assert_eq!(report.waiting.len(), 1);
}

#[test]
fn strands_with_deadlines_or_work_in_flight_are_not_deadlocked() {
    let done = support::on_pool(2, || {
        let event = Arc::new(Event::new());
        let setter = {
            let event = event.clone();
            strand::spawn(move || {
                strand::sleep(Duration::from_millis(30)).unwrap();
                event.set();
            })
            .unwrap()
        };
        event.wait().unwrap();
        setter.join().unwrap();
        true
    });
    assert!(done);
}
