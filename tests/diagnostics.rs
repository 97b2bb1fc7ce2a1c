//! roving's own diagnostics go through the `log` facade, under the target
//! `roving`: a deadlock is an error record with its report, and a pool
//! that discards unrun work when it stops says so.
#![cfg(feature = "std")]

mod support;

use roving::sync::Event;
use std::sync::Mutex;

/// Every record logged, as (level, target, message).
static RECORDS: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let entry = (record.level(), record.target().to_string(), record.args().to_string());
        RECORDS.lock().unwrap().push(entry);
    }
    fn flush(&self) {}
}

fn install() {
    static LOGGER: Capture = Capture;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Trace);
    }
}

fn logged(level: log::Level, needle: &str) -> bool {
    RECORDS
        .lock()
        .unwrap()
        .iter()
        .any(|(l, target, text)| *l == level && target == "roving" && text.contains(needle))
}

#[test]
fn a_deadlock_is_logged_as_an_error_with_its_report() {
    install();
    let outcome = support::run_pool(2, |_| {
        let never = Event::new();
        never.wait()
    });
    assert!(outcome.is_err(), "the pool deadlocked, so it fails");
    assert!(logged(log::Level::Error, "deadlock: every core of the pool is asleep"), "{:?}", RECORDS.lock());
}

#[test]
fn a_pool_that_drops_unrun_work_says_so() {
    install();
    let discarded = support::run_pool(1, |pool| {
        // Queued behind `main` on the one core, which stops the pool first.
        for _ in 0..10 {
            pool.post(0, || ()).unwrap();
        }
        pool.shutdown();
        pool.clone()
    })
    .map(|pool| pool.stats().iter().map(|s| s.discarded).sum::<u64>())
    .unwrap();
    assert_eq!(discarded, 10);
    assert!(logged(log::Level::Info, "with 10 tasks unrun; they were discarded"), "{:?}", RECORDS.lock());
}
