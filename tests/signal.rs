//! `sync::Signal` on the host: raised by threads outside the pool (which
//! stand in for interrupt handlers: they reach the pool only through its
//! mailboxes), taken by strands.
#![cfg(feature = "std")]

mod support;

use roving::strand::{self, WaitError};
use roving::sync::Signal;
use std::sync::Arc;
use std::time::Duration;
use support::on_pool;

/// Runs `main` as the root of a pool of `cores` cores; `device(f)` runs `f`
/// on a thread outside the pool standing in for a device's interrupt
/// handler.
fn with_device<R: Send>(
    cores: usize,
    main: impl FnOnce(&dyn Fn(support::Outside) -> support::OutsideHandle) -> R + Send,
) -> R {
    support::with_outside(cores, main)
}

#[test]
fn a_thread_and_a_strand_hand_a_signal_back_and_forth_10_000_times() {
    const ROUNDS: usize = 10_000;
    let rounds = with_device(2, |device| {
        let (ping, pong) = (Arc::new(Signal::new()), Arc::new(Signal::new()));
        let device = {
            let (ping, pong) = (ping.clone(), pong.clone());
            device(Box::new(move || {
                for _ in 0..ROUNDS {
                    ping.signal();
                    while !pong.try_take() {
                        std::thread::yield_now();
                    }
                }
            }))
        };
        let mut rounds = 0;
        for _ in 0..ROUNDS {
            ping.wait().unwrap();
            rounds += 1;
            pong.signal();
        }
        device.join();
        assert!(!ping.is_set());
        rounds
    });
    assert_eq!(rounds, ROUNDS);
}

#[test]
fn signals_coalesce_and_a_raised_signal_is_taken_at_once() {
    let (first, second, third) = on_pool(1, || {
        let signal = Signal::new();
        signal.signal();
        signal.signal();
        let first = signal.wait();
        let second = signal.try_take();
        let third = signal.wait_timeout(Duration::from_millis(5));
        (first, second, third)
    });
    assert_eq!(first, Ok(()));
    assert!(!second, "two signals nobody took are one");
    assert_eq!(third, Err(WaitError::TimedOut));
}

#[test]
fn a_second_waiter_a_cancelled_waiter_and_a_plain_task_get_typed_errors() {
    let (second, cancelled, outside) = on_pool(2, || {
        let signal = Arc::new(Signal::new());
        let waiting = {
            let signal = signal.clone();
            strand::spawn(move || signal.wait()).unwrap()
        };
        strand::sleep(Duration::from_millis(5)).unwrap();
        let second = signal.wait_timeout(Duration::from_millis(5));
        waiting.cancel().unwrap();
        let cancelled = waiting.join().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let probe = signal.clone();
        roving::post(1, move || tx.send(probe.wait()).unwrap()).unwrap();
        (second, cancelled, rx.recv().unwrap())
    });
    assert_eq!(second, Err(WaitError::Occupied));
    assert_eq!(cancelled, Err(WaitError::Interrupted));
    assert_eq!(outside, Err(WaitError::NotAStrand));
}

#[test]
fn a_signal_racing_a_deadline_is_never_lost() {
    with_device(2, |device| {
        for round in 0..2_000 {
            let signal = Arc::new(Signal::new());
            let raised = signal.clone();
            let device = device(Box::new(move || {
                if round % 3 == 0 {
                    std::thread::yield_now();
                }
                raised.signal();
            }));
            // Deadlines short enough to race the signal; it must arrive.
            while signal.wait_timeout(Duration::from_micros(20)).is_err() {}
            device.join();
            assert!(!signal.is_set(), "round {round}: taken twice, or raised after it was taken");
        }
    });
}
