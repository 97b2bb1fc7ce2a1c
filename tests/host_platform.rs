//! The platform seam on the host: OS threads as cores.
#![cfg(feature = "std")]

use roving::platform::host::{Machine, MachineError, MachineRunError};
use roving::platform::{self, Depth, StartCoreError, UnknownCore};
use roving::time::Instant;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

mod support;
use support::with_watchdog;

#[test]
fn machine_rejects_bad_core_counts() {
    assert_eq!(Machine::new(0).unwrap_err(), MachineError::NoCores);
    let too_many = roving::platform::host::MAX_CORES + 1;
    assert_eq!(Machine::new(too_many).unwrap_err(), MachineError::TooManyCores { requested: too_many });
}

#[test]
fn every_core_has_its_own_index() {
    static SEEN: [AtomicUsize; 8] = [const { AtomicUsize::new(usize::MAX) }; 8];
    fn record(slot: usize) {
        SEEN[slot].store(platform::current_core().unwrap(), SeqCst);
    }
    assert_eq!(platform::current_core(), None, "a plain test thread is not a core");
    let machine = Machine::new(8).unwrap();
    machine
        .run(|| {
            assert_eq!(platform::current_core(), Some(0));
            assert_eq!(platform::core_count(), 8);
            for core in 1..8 {
                platform::start_core(core, record, core).unwrap();
            }
        })
        .unwrap();
    for (core, seen) in SEEN.iter().enumerate().skip(1) {
        assert_eq!(seen.load(SeqCst), core);
    }
    assert_eq!(platform::current_core(), None, "run restores the thread");
}

#[test]
fn start_core_reports_bad_requests() {
    fn noop(_: usize) {}
    fn park_until_woken(_: usize) {
        platform::wait_for_event(Depth::Deep, None);
    }
    let machine = Machine::new(2).unwrap();
    machine
        .run(|| {
            assert_eq!(
                platform::start_core(2, noop, 0),
                Err(StartCoreError::NoSuchCore { core: 2, count: 2 })
            );
            assert_eq!(platform::start_core(0, noop, 0), Err(StartCoreError::AlreadyRunning { core: 0 }));
            platform::start_core(1, park_until_woken, 0).unwrap();
            assert_eq!(platform::start_core(1, noop, 0), Err(StartCoreError::AlreadyRunning { core: 1 }));
            platform::wake(1).unwrap();
            assert_eq!(platform::wake(9), Err(UnknownCore { core: 9, count: 2 }));
        })
        .unwrap();
}

#[test]
fn a_core_can_be_started_again_after_its_entry_returns() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    fn count(_: usize) {
        RUNS.fetch_add(1, SeqCst);
    }
    let machine = Machine::new(2).unwrap();
    machine
        .run(|| {
            for _ in 0..20 {
                // The previous run may still be unwinding its thread.
                while let Err(StartCoreError::AlreadyRunning { .. }) = platform::start_core(1, count, 0) {
                    thread::yield_now();
                }
            }
        })
        .unwrap();
    assert_eq!(RUNS.load(SeqCst), 20);
}

#[test]
fn a_wake_sent_before_the_wait_is_not_lost() {
    let machine = Machine::new(1).unwrap();
    with_watchdog(Duration::from_secs(20), "wake-before-wait", || {
        machine
            .run(|| {
                platform::wake(0).unwrap();
                platform::wait_for_event(Depth::Deep, None); // returns at once
            })
            .unwrap()
    });
}

/// Core 0 and core 1 hand a counter back and forth, each waiting without a
/// deadline, so one lost wake-up parks a core forever.
#[test]
fn ping_pong_loses_no_wake_up() {
    static PING: AtomicU64 = AtomicU64::new(0);
    static PONG: AtomicU64 = AtomicU64::new(0);
    // Miri runs the same protocol, a hundred times slower.
    const ROUNDS: u64 = if cfg!(miri) { 200 } else { 20_000 };
    fn responder(_: usize) {
        for round in 1..=ROUNDS {
            while PING.load(SeqCst) != round {
                platform::wait_for_event(Depth::Deep, None);
            }
            PONG.store(round, SeqCst);
            platform::wake(0).unwrap();
        }
    }
    let machine = Machine::new(2).unwrap();
    with_watchdog(Duration::from_secs(60), "ping-pong", || {
        machine
            .run(|| {
                platform::start_core(1, responder, 0).unwrap();
                for round in 1..=ROUNDS {
                    PING.store(round, SeqCst);
                    platform::wake(1).unwrap();
                    while PONG.load(SeqCst) != round {
                        platform::wait_for_event(Depth::Light, None);
                    }
                }
            })
            .unwrap()
    });
}

/// Many external threads wake one sleeping core at once; it must see the
/// last of their writes.
#[test]
fn concurrent_wakers_from_outside_the_machine() {
    static POSTED: AtomicUsize = AtomicUsize::new(0);
    const WAKERS: usize = 8;
    const EACH: usize = if cfg!(miri) { 50 } else { 2_000 };
    fn sink(_: usize) {
        while POSTED.load(SeqCst) < WAKERS * EACH {
            platform::wait_for_event(Depth::Deep, None);
        }
    }
    let machine = Machine::new(2).unwrap();
    with_watchdog(Duration::from_secs(60), "concurrent wakers", || {
        machine
            .run(|| {
                platform::start_core(1, sink, 0).unwrap();
                let start = Arc::new(Barrier::new(WAKERS));
                let wakers: Vec<_> = (0..WAKERS)
                    .map(|_| {
                        let machine = machine.clone();
                        let start = start.clone();
                        thread::spawn(move || {
                            let _member = machine.enter();
                            assert_eq!(platform::current_core(), None);
                            start.wait();
                            for _ in 0..EACH {
                                POSTED.fetch_add(1, SeqCst);
                                platform::wake(1).unwrap();
                            }
                        })
                    })
                    .collect();
                wakers.into_iter().for_each(|w| w.join().unwrap());
            })
            .unwrap()
    });
}

#[test]
fn a_deadline_ends_the_wait() {
    let machine = Machine::new(1).unwrap();
    machine
        .run(|| {
            let start = Instant::now();
            let deadline = start + Duration::from_millis(50);
            while Instant::now() < deadline {
                platform::wait_for_event(Depth::Deep, Some(deadline));
            }
            let waited = start.elapsed();
            assert!(waited >= Duration::from_millis(50));
            assert!(waited < Duration::from_secs(5), "waited {waited:?} for a 50 ms deadline");
        })
        .unwrap();
}

#[test]
fn ticks_are_monotonic_and_nanoseconds() {
    let machine = Machine::new(1).unwrap();
    machine
        .run(|| {
            assert_eq!(platform::tick_hz(), 1_000_000_000);
            let a = platform::ticks();
            thread::sleep(Duration::from_millis(10));
            let b = platform::ticks();
            assert!(b - a >= 10_000_000, "10 ms took {} ticks", b - a);
        })
        .unwrap();
}

#[test]
fn a_panicking_core_fails_the_run_after_the_others_finish() {
    static FINISHED: AtomicUsize = AtomicUsize::new(0);
    fn fails(_: usize) {
        panic!("core entry failed on purpose");
    }
    fn finishes(_: usize) {
        thread::sleep(Duration::from_millis(50));
        FINISHED.fetch_add(1, SeqCst);
    }
    let machine = Machine::new(3).unwrap();
    let outcome = std::panic::catch_unwind(|| {
        machine.run(|| {
            platform::start_core(1, fails, 0).unwrap();
            platform::start_core(2, finishes, 0).unwrap();
        })
    });
    let payload = outcome.expect_err("the core's panic reaches the caller of run");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"core entry failed on purpose"));
    assert_eq!(FINISHED.load(SeqCst), 1, "run joined the healthy core first");
    // The machine is usable again.
    machine.run(|| platform::start_core(1, finishes, 0).unwrap()).unwrap();
}

#[test]
fn run_is_not_reentrant_on_one_machine() {
    let machine = Machine::new(1).unwrap();
    let inner = machine.clone();
    machine.run(move || assert_eq!(inner.run(|| ()).unwrap_err(), MachineRunError::CoreZeroBusy)).unwrap();
}

#[test]
fn interrupts_are_a_no_op_on_the_host() {
    assert_eq!(platform::without_interrupts(|| 7), 7);
}
