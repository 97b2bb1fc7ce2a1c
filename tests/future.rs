//! Futures on the host: send to a core, chain with `then` on chosen cores,
//! share, wait from strands, `.await` from async code outside the pool,
//! and break (never hang) when the work cannot run.
#![cfg(feature = "std")]

#[path = "common/future_cases.rs"]
mod future_cases;
mod support;

use roving::future::{self, FutureError};
use roving::strand::{self, WaitError};
use roving::{Pool, PostError};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};
use support::on_pool;

#[test]
fn a_chain_runs_each_step_on_the_core_it_names() {
    let (value, cores) = on_pool(4, || future_cases::chain_visits_every_core(4));
    assert_eq!(value, 27);
    assert_eq!(cores, [1, 2, 3, 0]);
}

#[test]
fn ten_thousand_chains_across_cores_all_complete() {
    let total = on_pool(4, || future_cases::many_chains(4, 10_000));
    assert_eq!(total, 2 * (0..10_000u64).sum::<u64>());
}

#[test]
fn a_shared_result_reaches_strands_and_continuations() {
    assert_eq!(on_pool(4, || future_cases::shared_by_many(4, 16)), 21 * 20);
}

#[test]
fn a_shared_future_is_seen_by_every_clone_and_continuation() {
    let seen = on_pool(4, || {
        let shared = future::future_on(2, || String::from("one result")).unwrap().shared();
        let waiters: Vec<_> = (0..8)
            .map(|_| {
                let shared = shared.clone();
                strand::spawn(move || shared.wait().unwrap().clone()).unwrap()
            })
            .collect();
        let lengths: Vec<_> = (0..4).map(|core| shared.then(core, |s| s.len())).collect();
        let mut seen: Vec<String> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        seen.extend(lengths.into_iter().map(|l| l.wait().unwrap().to_string()));
        seen
    });
    assert_eq!(seen[..8], vec![String::from("one result"); 8][..]);
    assert_eq!(seen[8..], vec![String::from("10"); 4][..]);
}

/// Wakes a parked OS thread.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` to completion on this (non-pool) thread.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn async_code_outside_the_pool_awaits_a_chain() {
    let got = on_pool(2, || {
        let future = future::future_on(1, || {
            // Let the outside thread poll first and register its waker.
            std::thread::sleep(std::time::Duration::from_millis(20));
            20
        })
        .unwrap()
        .then(0, |n| n + 1);
        let shared = future::future_on(0, || 2).unwrap().shared();
        let other = shared.clone();
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let outside = std::thread::spawn(move || {
            let got = block_on(async move { future.await.unwrap() * other.await.unwrap() });
            flag.store(true, SeqCst);
            got
        });
        while !done.load(SeqCst) {
            strand::yield_now().unwrap();
        }
        assert_eq!(shared.get(), Some(Ok(&2)));
        outside.join().unwrap()
    });
    assert_eq!(got, 42);
}

#[test]
fn work_that_cannot_run_breaks_its_future_and_the_chain() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = ran.clone();
    let downstream = on_pool(2, move || {
        let start = future::future_on(0, || 1).unwrap();
        // Core 5 does not exist in a 2-core machine: the continuation is
        // refused when the result arrives, and its future breaks.
        let bad = start.then(5, |n| n + 1);
        let after = {
            let counted = counted.clone();
            future::future_on(1, || ()).unwrap().then(0, move |()| counted.fetch_add(1, SeqCst))
        };
        after.wait().unwrap();
        let pool = roving::Pool::current().unwrap();
        let tasks_run = |pool: &roving::Pool| pool.stats().iter().map(|s| s.tasks_run).sum::<u64>();
        let before = tasks_run(&pool);
        let downstream = bad.then(0, move |n| {
            counted.fetch_add(100, SeqCst);
            n
        });
        let outcome = downstream.wait();
        assert_eq!(tasks_run(&pool), before, "the continuation of a broken future was posted");
        outcome
    });
    assert_eq!(downstream, Err(FutureError::Broken));
    assert_eq!(ran.load(SeqCst), 1, "a continuation of a broken future ran");
}

#[test]
fn sending_to_a_stopped_pool_gives_the_closure_back() {
    roving::platform::host::Machine::new(2)
        .unwrap()
        .run(|| {
            let pool = Pool::new().unwrap();
            pool.run(|| {}).unwrap();
            match pool.future_on(0, || 7) {
                Err(PostError::Stopped(f)) => assert_eq!(f(), 7),
                other => panic!("expected Stopped with the closure, got {other:?}"),
            }
            assert!(matches!(future::future_on(0, || 7), Err(PostError::NotInPool(_))));
        })
        .unwrap();
}

#[test]
fn waiting_outside_a_strand_or_cancelled_is_an_error() {
    let (outside, cancelled) = on_pool(2, || {
        let pool = Pool::current().unwrap();
        let slow = pool
            .future_on(1, || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                1
            })
            .unwrap();
        // From a plain task, which cannot block.
        let result = Arc::new(std::sync::Mutex::new(None));
        let out = result.clone();
        let probe = pool.future_on(1, || 2).unwrap();
        pool.post(0, move || *out.lock().unwrap() = Some(probe.wait())).unwrap();
        // A strand blocked on `slow`, cancelled.
        let waiter = strand::spawn(move || slow.wait()).unwrap();
        strand::sleep(std::time::Duration::from_millis(5)).unwrap();
        waiter.cancel().unwrap();
        let cancelled = waiter.join().unwrap();
        while result.lock().unwrap().is_none() {
            strand::yield_now().unwrap();
        }
        let outside = result.lock().unwrap().take().unwrap();
        (outside, cancelled)
    });
    // The probe may or may not be ready when the task runs.
    assert!(matches!(outside, Ok(2) | Err(FutureError::Wait(WaitError::NotAStrand))), "{outside:?}");
    assert_eq!(cancelled, Err(FutureError::Wait(WaitError::Interrupted)));
}
