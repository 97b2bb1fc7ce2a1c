//! Strands on the host platform: spawn, join, yield, sleep, ids, copy-swap.
#![cfg(feature = "std")]

mod support;

use roving::strand::{self, FailureKind, JoinError, SpawnError, WaitError};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};
use support::on_pool;

#[test]
fn spawned_strands_return_their_values_to_join() {
    let sum = on_pool(4, || {
        let children: Vec<_> = (0..200u64).map(|i| strand::spawn(move || i * 3).unwrap()).collect();
        children.into_iter().map(|child| child.join().unwrap()).sum::<u64>()
    });
    assert_eq!(sum, 3 * (0..200).sum::<u64>());
}

#[test]
fn main_is_a_strand_with_an_id_and_children_have_their_own() {
    let (main_id, child_id) = on_pool(2, || {
        let child = strand::spawn(strand::current).unwrap();
        (strand::current(), child.join().unwrap())
    });
    let (main_id, child_id) = (main_id.expect("main runs as a strand"), child_id.expect("so does a child"));
    assert_ne!(main_id, child_id);
}

#[test]
fn a_stack_pointer_names_the_strand_whose_fibre_holds_it() {
    use roving::platform::hooks::strand_at;
    let local = 0u8;
    assert_eq!(strand_at(std::ptr::addr_of!(local) as usize), None, "a thread's stack holds no strand");
    let (main, seen, child, child_seen) = on_pool(2, || {
        let here = 0u8;
        let child = strand::spawn(|| {
            let there = 0u8;
            (strand::current(), strand_at(std::ptr::addr_of!(there) as usize))
        })
        .unwrap();
        let (child, child_seen) = child.join().unwrap();
        (strand::current(), strand_at(std::ptr::addr_of!(here) as usize), child, child_seen)
    });
    assert!(main.is_some() && child.is_some() && main != child);
    assert_eq!((seen, child_seen), (main, child), "each strand's own stack names it");
}

#[test]
fn yielding_strands_on_one_core_take_turns() {
    let order = on_pool(1, || {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let children: Vec<_> = (0..3)
            .map(|who| {
                let log = log.clone();
                strand::spawn(move || {
                    for step in 0..3 {
                        log.lock().unwrap().push((who, step));
                        strand::yield_now().unwrap();
                    }
                })
                .unwrap()
            })
            .collect();
        for child in children {
            child.join().unwrap();
        }
        Arc::try_unwrap(log).unwrap().into_inner().unwrap()
    });
    // Every strand took its step `k` before any strand took step `k + 1`.
    for window in order.windows(2) {
        assert!(
            window[0].1 <= window[1].1,
            "a strand ran twice without the others getting a turn: {order:?}"
        );
    }
    assert_eq!(order.len(), 9);
}

/// A strand that yields while nothing else is queued on its core goes on
/// without a switch; it yields `limit` times at most, until `done` is set,
/// and returns how many yields that took (`None`: never set).
fn yield_until(done: &'static std::sync::atomic::AtomicBool, limit: u64) -> Option<u64> {
    (0..limit).find(|_| {
        strand::yield_now().unwrap();
        done.load(SeqCst)
    })
}

#[test]
fn a_strand_that_yields_alone_still_lets_its_cores_timers_run() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let yields = on_pool(1, || {
        let yielder = strand::spawn(|| yield_until(&DONE, 100_000_000)).unwrap();
        // This strand's wake-up is a timer of the one core the yielder
        // keeps busy.
        strand::sleep(Duration::from_millis(20)).unwrap();
        DONE.store(true, SeqCst);
        yielder.join().unwrap()
    });
    assert!(yields.is_some(), "the sleeping strand never woke while another yielded on its core");
}

#[test]
fn a_strand_that_yields_alone_still_lets_its_cores_mailboxes_in() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let yields = on_pool(1, || {
        let pool = roving::Pool::current().unwrap();
        let yielder = strand::spawn(|| yield_until(&DONE, 100_000_000)).unwrap();
        // Posted from outside the pool, so it comes in through a mailbox.
        let poster = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            pool.post(0, || DONE.store(true, SeqCst)).map_err(|_| "refused").unwrap();
        });
        let yields = yielder.join().unwrap();
        poster.join().unwrap();
        yields
    });
    assert!(yields.is_some(), "a closure posted to the core never ran while a strand yielded there");
}

#[test]
fn sleep_wakes_no_earlier_than_asked_and_not_much_later() {
    let lateness = on_pool(2, || {
        (0..5)
            .map(|_| {
                let start = Instant::now();
                strand::sleep(Duration::from_millis(10)).unwrap();
                start.elapsed()
            })
            .collect::<Vec<_>>()
    });
    for slept in &lateness {
        assert!(*slept >= Duration::from_millis(10), "woke after {slept:?}, before the 10 ms asked");
    }
    let best = lateness.iter().min().unwrap();
    assert!(*best < Duration::from_millis(10 + 5), "even the best sleep took {best:?}: {lateness:?}");
}

#[test]
fn sleeping_strands_let_the_core_run_others() {
    let (counted, slept) = on_pool(1, || {
        let sleeper = strand::spawn(|| {
            let start = Instant::now();
            strand::sleep(Duration::from_millis(20)).unwrap();
            start.elapsed()
        })
        .unwrap();
        let counter = strand::spawn(|| {
            let mut count = 0u64;
            for _ in 0..2_000 {
                count += 1;
                if count.is_multiple_of(100) {
                    strand::yield_now().unwrap();
                }
            }
            count
        })
        .unwrap();
        (counter.join().unwrap(), sleeper.join().unwrap())
    });
    assert_eq!(counted, 2_000, "the only core ran the counter while the other strand slept");
    assert!(slept >= Duration::from_millis(20));
}

#[test]
fn blocking_outside_a_strand_is_a_typed_error() {
    assert_eq!(strand::sleep(Duration::from_millis(1)), Err(WaitError::NotAStrand));
    assert_eq!(strand::yield_now(), Err(WaitError::NotAStrand));
    let result = on_pool(2, || {
        let (tx, rx) = std::sync::mpsc::channel();
        roving::post(1, move || tx.send(strand::sleep(Duration::from_millis(1))).unwrap()).unwrap();
        rx
    });
    assert_eq!(result.recv().unwrap(), Err(WaitError::NotAStrand), "a plain task cannot block");
}

/// A free mutex is refused outside strands just as a held one is, so the
/// mistake shows without contention; `try_lock` is the way there.
#[test]
fn a_mutex_outside_strands_is_refused_whether_or_not_it_is_held() {
    let mutex = roving::sync::Mutex::new(0u32);
    assert_eq!(mutex.lock().err(), Some(WaitError::NotAStrand));
    *mutex.try_lock().unwrap() += 1;
    let outcome = on_pool(2, move || {
        let (tx, rx) = std::sync::mpsc::channel();
        roving::post(1, move || {
            let free = mutex.lock().err();
            let taken = mutex.try_lock().map(|guard| *guard).ok();
            tx.send((free, taken)).unwrap();
        })
        .unwrap();
        rx
    });
    assert_eq!(outcome.recv().unwrap(), (Some(WaitError::NotAStrand), Some(1)), "a plain task");
}

#[test]
fn a_closure_too_large_for_a_control_block_comes_back() {
    let outcome = on_pool(1, || {
        let big = [7u8; 4096];
        match strand::spawn(move || big.iter().map(|&b| u64::from(b)).sum::<u64>()) {
            Err(SpawnError::TooLarge { bytes, capacity, closure }) => Some((bytes, capacity, closure())),
            _ => None,
        }
    });
    let (bytes, capacity, value) = outcome.expect("a 4 KiB closure is refused with TooLarge");
    assert!(bytes > capacity && bytes >= 4096, "{bytes} vs {capacity}");
    assert_eq!(value, 7 * 4096, "the closure came back intact");
}

#[test]
fn join_from_outside_a_strand_gives_the_handle_back() {
    let rx = on_pool(2, || {
        let (tx, rx) = std::sync::mpsc::channel();
        // Spawned from a plain task, the child has no parent strand.
        roving::post(1, move || {
            let child = strand::spawn(|| {
                strand::sleep(Duration::from_millis(5)).unwrap();
                5
            })
            .unwrap();
            match child.join() {
                Ok(value) => tx.send(value).unwrap(),
                Err(error) => {
                    assert!(matches!(error, JoinError::NotAStrand(_)), "{error}");
                    poll_join(error.into_handle().expect("the handle comes back"), tx);
                }
            }
        })
        .unwrap();
        rx
    });
    assert_eq!(rx.recv().unwrap(), 5);
}

/// Polls `handle` the way a task on core 1 waits: finding the strand still
/// running, it posts itself again rather than spinning. (A
/// task that spun would hold its core, and the child spawned there may be
/// queued behind it where no idle core can take it: tasks are short by
/// contract.)
fn poll_join(handle: strand::JoinHandle<u32>, tx: std::sync::mpsc::Sender<u32>) {
    match handle.try_join() {
        Ok(value) => tx.send(value).unwrap(),
        Err(JoinError::Running(again)) => {
            roving::post(1, move || poll_join(again, tx)).unwrap();
        }
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn a_panicking_strand_fails_its_join_with_the_message_and_place() {
    let (failure, child_id) = on_pool(2, || {
        let child = strand::spawn(|| -> u32 { panic!("boom in a strand") }).unwrap();
        let id = child.id();
        (child.join().expect_err("the child panicked").failure().cloned(), id)
    });
    let failure = failure.expect("a failure, not a handle");
    assert_eq!(failure.kind(), FailureKind::Panicked);
    assert_eq!(failure.message(), "boom in a strand");
    assert_eq!(failure.strand(), Some(child_id));
    let location = failure.location().expect("the hook noted where");
    assert!(location.file.ends_with("strand.rs"), "{location}");
}

/// Fills a stack array with values derived from `seed`, blocks `rounds`
/// times (sleeping or yielding), and checks the array after each block.
fn keep_a_checksum(seed: u64, rounds: u32) -> u64 {
    let mut data = [0u64; 64];
    for (i, slot) in data.iter_mut().enumerate() {
        *slot = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(i as u32) ^ i as u64;
    }
    let sum = |data: &[u64; 64]| data.iter().fold(0u64, |acc, v| acc.rotate_left(5) ^ v);
    let expected = sum(&data);
    for round in 0..rounds {
        if round % 2 == 0 {
            strand::yield_now().unwrap();
        } else {
            strand::sleep(Duration::from_micros(50)).unwrap();
        }
        assert_eq!(
            sum(std::hint::black_box(&data)),
            expected,
            "strand {seed}: its stack changed while it was blocked"
        );
    }
    expected
}

#[test]
fn more_strands_than_fibres_share_them_and_keep_their_stacks() {
    let strands = 3 * roving::strand::sizes::FIBRES as u64;
    let (checked, overloaded_ok) = on_pool(4, move || {
        let children: Vec<_> =
            (0..strands).map(|seed| strand::spawn(move || keep_a_checksum(seed, 6)).unwrap()).collect();
        let expected: Vec<u64> = children.iter().map(|_| 0).collect();
        let results: Vec<u64> = children.into_iter().map(|child| child.join().unwrap()).collect();
        (results.len(), results != expected)
    });
    assert_eq!(checked as u64, strands);
    assert!(overloaded_ok);
}

#[test]
fn a_pool_with_a_sleeping_strand_is_not_quiescent() {
    let woke = Arc::new(AtomicUsize::new(0));
    let seen = woke.clone();
    on_pool(2, move || {
        // Spawned from a plain task, so it has no parent strand to wait
        // for it; detached, so `main` returns at once, and the pool must
        // still wait for the sleeper before it counts as quiescent.
        roving::post(1, move || {
            drop(
                strand::spawn(move || {
                    strand::sleep(Duration::from_millis(30)).unwrap();
                    seen.fetch_add(1, SeqCst);
                })
                .unwrap(),
            );
        })
        .unwrap();
    });
    assert_eq!(woke.load(SeqCst), 1, "run returned while a strand was still asleep");
}

#[test]
fn a_joined_strand_is_no_longer_counted_live_when_join_returns() {
    let wrong = support::run_pool(4, |pool| {
        let mut wrong = Vec::new();
        for round in 0..2_000 {
            strand::spawn(|| ()).unwrap().join().unwrap();
            let live = pool.live_strands();
            if live != 1 {
                wrong.push((round, live));
            }
        }
        // A cancelled strand whose six children wait on an event that is
        // never set: once its join returns, only the root is left.
        for round in 0..200 {
            let parent = strand::spawn(|| {
                let never = Arc::new(roving::sync::Event::new());
                let children: Vec<_> = (0..6)
                    .map(|_| {
                        let never = never.clone();
                        strand::spawn(move || never.wait()).unwrap()
                    })
                    .collect();
                let _ = strand::sleep(Duration::from_secs(60));
                drop(children);
            })
            .unwrap();
            strand::sleep(Duration::from_micros(200)).unwrap();
            parent.cancel().unwrap();
            let _ = parent.join();
            let live = pool.live_strands();
            if live != 1 {
                wrong.push((10_000 + round, live));
            }
        }
        wrong
    })
    .unwrap();
    assert!(wrong.is_empty(), "(round, live strands) read right after a join: {wrong:?}");
}

/// A strand's sleep ends while the core that last ran it is busy with a
/// long task: an idle core takes it from that core's mailbox instead of
/// leaving it to wait for the task.
#[test]
fn a_strand_woken_while_its_core_is_busy_runs_on_an_idle_core() {
    let slept = support::run_pool(2, |pool| {
        let sleeper = strand::spawn(|| {
            let start = Instant::now();
            strand::sleep(Duration::from_millis(10)).unwrap();
            (start.elapsed(), roving::platform::current_core())
        })
        .unwrap();
        // Let it block on core 0, then keep core 0 busy for a second.
        strand::sleep(Duration::from_millis(2)).unwrap();
        pool.post(0, || {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(1) {
                std::hint::spin_loop();
            }
        })
        .unwrap();
        sleeper.join().unwrap()
    })
    .unwrap();
    assert!(slept.0 < Duration::from_millis(500), "slept {:?}: it waited for the busy core", slept.0);
    assert_eq!(slept.1, Some(1), "it woke on the busy core");
}
