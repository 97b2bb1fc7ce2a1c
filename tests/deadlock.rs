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

/// Runs `main` on a machine of `cores`, given the machine, alone among
/// this binary's pool tests, under a 60 s watchdog named `what`.
fn on_machine<R: Send>(cores: usize, what: &'static str, main: impl FnOnce(&Machine) -> R + Send) -> R {
    let machine = Machine::new(cores).unwrap();
    support::with_turn(|| {
        support::with_watchdog(Duration::from_secs(60), what, || machine.run(|| main(&machine)).unwrap())
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
    let event = Arc::new(Event::new());
    let outcome = on_machine(2, "a waiting deadlock", |machine| {
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

/// Runs `main` as the root of a pool that does not stop when quiescent and
/// reports quiet spells of `period`, on a machine of `cores`; `outside`
/// runs meanwhile on a thread of the machine with the pool, given the pool
/// and a time before the pool ran, and shuts it down when it is done.
/// Returns what `outside` returned.
fn keep_running<T: Send + 'static>(
    cores: usize,
    period: Duration,
    main: impl FnOnce() + Send,
    outside: impl FnOnce(&Pool, std::time::Instant) -> T + Send + 'static,
) -> T {
    on_machine(cores, "a quiet report", |machine| {
        let config = Config::new().stop_when_quiescent(false).report_quiet_after(period);
        let pool = Pool::with_config(config).unwrap();
        let (member, watched) = (machine.clone(), pool.clone());
        // Before the pool runs, so before any quiet spell of it began (the
        // helper thread itself may start late on a busy host).
        let before_run = std::time::Instant::now();
        let helper = std::thread::spawn(move || {
            let _member = member.enter();
            // Shut down even if `outside` panics, so the run ends and the
            // panic is seen.
            let value =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| outside(&watched, before_run)));
            watched.shutdown();
            value
        });
        let _ = pool.run(main);
        helper.join().unwrap().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Waits up to 10 s for `pool`'s report.
fn report_of(pool: &Pool) -> roving::Deadlock {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(report) = pool.deadlock() {
            return report;
        }
        assert!(std::time::Instant::now() < deadline, "no quiet report in 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_pool_that_keeps_running_reports_a_quiet_spell_with_who_waits_on_whom() {
    for cores in [1, 2, 4] {
        let period = Duration::from_millis(40);
        let (report, waited) = keep_running(cores, period, opposite_orders, |pool, before_run| {
            (report_of(pool), before_run.elapsed())
        });
        let text = report.to_string();
        assert_eq!(report.quiet_for, Some(period), "{cores} cores: {text}");
        assert!(waited >= period, "{cores} cores: reported after {waited:?}, before the quiet period");
        assert!(text.starts_with("quiet for 40ms (code outside the pool may yet wake it): "), "{text}");
        let mutex_waits: Vec<_> =
            report.waiting.iter().filter(|waiter| waiter.reason == strand::BlockReason::Mutex).collect();
        assert_eq!(mutex_waits.len(), 2, "{cores} cores: both strands wait for a mutex:\n{text}");
        assert_eq!(mutex_waits[0].holder, Some(mutex_waits[1].strand), "{cores} cores:\n{text}");
        assert_eq!(mutex_waits[1].holder, Some(mutex_waits[0].strand), "{cores} cores:\n{text}");
    }
}

#[test]
fn work_from_outside_keeps_a_waiting_pool_from_being_reported_until_it_stops() {
    let event = Arc::new(Event::new());
    let waited_on = event.clone();
    let period = Duration::from_millis(60);
    let (during, after) = keep_running(
        2,
        period,
        move || {
            let _ = waited_on.wait();
        },
        move |pool, _| {
            // A post every 10 ms wakes a core each time: no spell lasts.
            let posting = std::time::Instant::now();
            while posting.elapsed() < Duration::from_millis(400) {
                pool.post(0, || {}).unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
            let during = pool.deadlock();
            let after = report_of(pool);
            event.set();
            (during, after)
        },
    );
    assert_eq!(during, None, "reported while work kept coming");
    assert_eq!(after.waiting.len(), 1, "{after}");
    assert_eq!(after.waiting[0].reason, strand::BlockReason::Event, "{after}");
}

#[test]
fn a_quiet_report_needs_a_pool_that_keeps_running_and_a_period_in_range() {
    use roving::PoolError;
    let refused = |config: Config| {
        on_machine(2, "a refused quiet report", move |_| Pool::with_config(config).map(|_| ()).unwrap_err())
    };
    let error = refused(Config::new().report_quiet_after(Duration::from_millis(10)));
    assert_eq!(error, PoolError::QuietReportWhenStopping);
    assert!(error.to_string().contains("stop_when_quiescent(false)"), "{error}");
    let error = refused(Config::new().stop_when_quiescent(false).report_quiet_after(Duration::ZERO));
    assert_eq!(error, PoolError::QuietReportOutOfRange { period: Duration::ZERO });
    assert!(error.to_string().contains("between 1ms and 86400s"), "{error}");
}

#[test]
fn strands_of_two_pools_waiting_on_each_other_are_reported_to_both() {
    let outcome = on_machine(4, "a deadlock across pools", |_| {
        let first = Pool::with_cores(&[0, 1], Config::new()).unwrap();
        let second = Pool::with_cores(&[2, 3], Config::new()).unwrap();
        let run = first.run(|| {
            second.start().unwrap();
            // The root holds the mutex and joins a strand of the other pool
            // that wants it.
            let mutex = Arc::new(Mutex::new(()));
            let _held = mutex.lock().unwrap();
            let wanted = mutex.clone();
            let other = second
                .spawn_strand(move || wanted.lock().map(|_| ()))
                .unwrap_or_else(|_| panic!("spawning into the other pool"));
            other.join()
        });
        let report = second.deadlock();
        second.destroy().unwrap();
        (run, report)
    });
    let (run, second_report) = outcome;
    let error = run.unwrap_err();
    let RunError::Failed(failure) = error else { panic!("not a failure: {error:?}") };
    let report = failure.deadlock().expect("a deadlock report").clone();
    let text = failure.to_string();
    assert_eq!(report.pools, 2, "{text}");
    assert!(text.contains("deadlock across 2 pools"), "{text}");
    assert_eq!(report.cycle.len(), 2, "the root and the other pool's strand:\n{text}");
    assert_eq!(report.waiting.len(), 2, "each strand listed once:\n{text}");
    let join = report.waiting.iter().find(|w| w.reason == strand::BlockReason::Join).expect("the root joins");
    let lock =
        report.waiting.iter().find(|w| w.reason == strand::BlockReason::Mutex).expect("one wants the mutex");
    assert_eq!(join.joins, Some(lock.strand), "{text}");
    assert_eq!(lock.holder, Some(join.strand), "{text}");
    assert!(text.contains("each waits for the next: strand #"), "{text}");
    assert_eq!(second_report, Some(report), "the other pool got the same report");
}

#[test]
fn strands_of_two_pools_waiting_on_what_no_ring_explains_are_left_waiting() {
    let event = Arc::new(Event::new());
    let outcome = on_machine(4, "two pools waiting", |machine| {
        let first = Pool::with_cores(&[0, 1], Config::new()).unwrap();
        let second = Pool::with_cores(&[2, 3], Config::new()).unwrap();
        let (outside, setter) = (machine.clone(), event.clone());
        // Both pools sleep, each strand waiting, for 100 ms: then a thread
        // outside sets what the second waits for.
        let thread = std::thread::spawn(move || {
            let _member = outside.enter();
            std::thread::sleep(Duration::from_millis(100));
            setter.set();
        });
        let waited = event.clone();
        let run = first.run(|| {
            second.start().unwrap();
            let other = second.spawn_strand(move || waited.wait()).unwrap_or_else(|_| panic!("spawning"));
            other.join()
        });
        thread.join().unwrap();
        let report = (first.deadlock(), second.deadlock());
        second.destroy().unwrap();
        (run, report)
    });
    let (run, reports) = outcome;
    let joined = run.unwrap().unwrap_or_else(|error| panic!("joining the other pool's strand: {error}"));
    assert_eq!(joined, Ok(()), "the other pool's strand ended once the event was set");
    assert_eq!(reports, (None, None), "no deadlock was reported");
}
