//! The blocking primitives on the host platform: Mutex, Condvar,
//! Semaphore, Event, and a token ring of strands over bounded channels.
#![cfg(feature = "std")]

#[path = "common/ring_cases.rs"]
mod ring_cases;
mod support;

use roving::strand;
use roving::sync::channel::{self, RecvError, SendError};
use roving::sync::{Condvar, Event, Mutex, Semaphore, WaitError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::on_pool;

#[test]
fn a_contended_mutex_keeps_a_shared_counter_exact() {
    const STRANDS: u64 = 16;
    const ROUNDS: u64 = 5_000;
    let total = on_pool(4, || {
        let counter = Arc::new(Mutex::new(0u64));
        let workers: Vec<_> = (0..STRANDS)
            .map(|i| {
                let counter = counter.clone();
                strand::spawn(move || {
                    for round in 0..ROUNDS {
                        let mut guard = counter.lock().unwrap();
                        let seen = *guard;
                        if (round + i) % 7 == 0 {
                            // Hold the lock across a switch: others must block.
                            strand::yield_now().unwrap();
                        }
                        *guard = seen + 1;
                    }
                })
                .unwrap()
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
        *counter.lock().unwrap()
    });
    assert_eq!(total, STRANDS * ROUNDS);
}

#[test]
fn a_mutex_lock_times_out_while_another_strand_holds_it() {
    let (timed_out, waited) = on_pool(2, || {
        let mutex = Arc::new(Mutex::new(()));
        let holder = {
            let mutex = mutex.clone();
            let guard_taken = Arc::new(Event::new());
            let taken = guard_taken.clone();
            let holder = strand::spawn(move || {
                let _guard = mutex.lock().unwrap();
                taken.set();
                strand::sleep(Duration::from_millis(50)).unwrap();
            })
            .unwrap();
            guard_taken.wait().unwrap();
            holder
        };
        let start = Instant::now();
        let result = mutex.lock_timeout(Duration::from_millis(10)).map(|_| ());
        let waited = start.elapsed();
        holder.join().unwrap();
        assert!(mutex.lock_timeout(Duration::from_millis(10)).is_ok(), "free again after the holder left");
        (result, waited)
    });
    assert_eq!(timed_out, Err(WaitError::TimedOut));
    assert!(waited >= Duration::from_millis(10), "gave up after {waited:?}");
}

#[test]
fn condvar_wakes_a_waiter_and_times_out_without_a_notification() {
    let (value, timed_out) = on_pool(2, || {
        let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
        let setter = {
            let pair = pair.clone();
            strand::spawn(move || {
                strand::sleep(Duration::from_millis(5)).unwrap();
                *pair.0.lock().unwrap() = 42;
                pair.1.notify_all();
            })
            .unwrap()
        };
        let mut guard = pair.0.lock().unwrap();
        while *guard != 42 {
            guard = pair.1.wait(guard).unwrap();
        }
        let value = *guard;
        let (guard, timed_out) = pair.1.wait_timeout(guard, Duration::from_millis(10)).unwrap();
        drop(guard);
        setter.join().unwrap();
        (value, timed_out)
    });
    assert_eq!(value, 42);
    assert!(timed_out, "nobody notified, so the second wait timed out");
}

#[test]
fn semaphore_limits_concurrency_and_times_out() {
    let (most, timed_out) = on_pool(4, || {
        let permits = Arc::new(Semaphore::new(3));
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let workers: Vec<_> = (0..12)
            .map(|_| {
                let (permits, inside, most) = (permits.clone(), inside.clone(), most.clone());
                strand::spawn(move || {
                    for _ in 0..20 {
                        permits.acquire().unwrap();
                        let now = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                        strand::yield_now().unwrap();
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        permits.release(1).unwrap();
                    }
                })
                .unwrap()
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
        assert_eq!(permits.available(), 3, "every permit came back");
        let empty = Semaphore::new(0);
        let timed_out = empty.acquire_timeout(Duration::from_millis(5));
        (most.load(std::sync::atomic::Ordering::SeqCst), timed_out)
    });
    assert!((1..=3).contains(&most), "{most} strands held one of 3 permits at once");
    assert_eq!(timed_out, Err(WaitError::TimedOut));
}

#[test]
fn an_event_releases_every_waiter() {
    let released = on_pool(4, || {
        let event = Arc::new(Event::new());
        let waiters: Vec<_> = (0..50)
            .map(|_| {
                let event = event.clone();
                strand::spawn(move || event.wait().is_ok()).unwrap()
            })
            .collect();
        strand::sleep(Duration::from_millis(5)).unwrap();
        event.set();
        let released =
            waiters.into_iter().filter(|_| true).map(|w| w.join().unwrap()).filter(|ok| *ok).count();
        assert_eq!(event.wait_timeout(Duration::from_millis(1)), Ok(()), "a set event does not block");
        event.reset();
        assert_eq!(event.wait_timeout(Duration::from_millis(1)), Err(WaitError::TimedOut));
        released
    });
    assert_eq!(released, 50);
}

#[test]
fn channels_report_full_empty_timeouts_and_disconnection_with_the_value() {
    on_pool(2, || {
        assert!(channel::bounded::<u8>(0).is_err(), "zero capacity is refused");
        let (tx, rx) = channel::bounded::<u32>(1).unwrap();
        tx.try_send(1).unwrap();
        assert_eq!(tx.try_send(2), Err(SendError::Full(2)));
        assert_eq!(tx.send_timeout(3, Duration::from_millis(2)), Err(SendError::TimedOut(3)));
        assert_eq!(rx.recv().unwrap(), 1);
        assert_eq!(rx.try_recv(), Err(RecvError::Empty));
        assert_eq!(rx.recv_timeout(Duration::from_millis(2)), Err(RecvError::TimedOut));
        drop(rx);
        assert_eq!(tx.send(4), Err(SendError::Disconnected(4)));
        let (tx, rx) = channel::bounded::<u32>(2).unwrap();
        tx.send(5).unwrap();
        drop(tx);
        assert_eq!(rx.recv(), Ok(5), "what was sent before the last sender left still arrives");
        assert_eq!(rx.recv(), Err(RecvError::Disconnected));
    });
}

/// The shared ring on a pool of 4 cores: the tokens received, and how long
/// it took.
fn token_ring(strands: usize, rounds: usize) -> (u64, Duration) {
    on_pool(4, move || {
        let start = Instant::now();
        (ring_cases::token_ring(strands, rounds), start.elapsed())
    })
}

#[test]
fn ten_thousand_strands_pass_tokens_around_a_ring_of_channels() {
    let (strands, rounds) = (10_000, 100);
    let (forwarded, elapsed) = token_ring(strands, rounds);
    assert_eq!(forwarded, strands as u64 * rounds as u64, "a token went missing");
    eprintln!("token ring: {strands} strands x {rounds} rounds in {elapsed:?}");
}

#[test]
fn a_semaphore_refuses_to_bank_past_usize_max_and_says_so() {
    let permits = Semaphore::new(usize::MAX - 1);
    let error = permits.release(2).unwrap_err();
    assert_eq!(error, roving::sync::TooManyPermits { banked: usize::MAX - 1, refused: 2 });
    assert!(error.to_string().contains("not banked"));
    assert_eq!(permits.available(), usize::MAX - 1, "a refused release changes nothing");
    permits.release(1).unwrap();
    assert_eq!(permits.available(), usize::MAX);
    assert!(permits.release(usize::MAX).is_err(), "a huge release returns at once");
}

/// Five strands in a pipeline of `bounded(1)` channels pass 100,000 items
/// on a machine with more cores than the host has CPUs. Internal spin
/// locks whose holder the OS had descheduled made this take minutes (the
/// watchdog's 120 s ran out); it takes about half a second on 2 CPUs.
#[test]
fn a_strand_pipeline_finishes_with_more_cores_than_cpus() {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let sum = on_pool(cpus + 1, || {
        let (first, mut upstream) = channel::bounded::<u64>(1).unwrap();
        let stages: Vec<_> = (0..4)
            .map(|_| {
                let (sender, receiver) = channel::bounded::<u64>(1).unwrap();
                let input = std::mem::replace(&mut upstream, receiver);
                strand::spawn(move || {
                    while let Ok(item) = input.recv() {
                        sender.send(item + 1).unwrap();
                    }
                })
                .unwrap()
            })
            .collect();
        let sink = strand::spawn(move || std::iter::from_fn(|| upstream.recv().ok()).sum::<u64>()).unwrap();
        for item in 0..100_000u64 {
            first.send(item).unwrap();
        }
        drop(first);
        stages.into_iter().for_each(|stage| stage.join().unwrap());
        sink.join().unwrap()
    });
    assert_eq!(sum, (0..100_000u64).map(|item| item + 4).sum::<u64>());
}
