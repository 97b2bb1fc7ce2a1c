//! Strands and async tasks on the same `sync` objects (Mutex, Semaphore,
//! Event, channel, Signal), the futures' give-back when dropped, timers for
//! tasks (`time::sleep`, `time::timeout`), and `block_on` with copy-swap.
#![cfg(feature = "std")]

#[path = "common/sync_async_cases.rs"]
mod cases;
mod support;

use roving::executor::{self, TaskError};
use roving::sync::{Event, Mutex, Semaphore, WaitError};
use roving::time;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use support::{on_pool, run_pool, with_outside};

#[test]
fn strands_and_tasks_share_a_mutex() {
    assert_eq!(on_pool(4, || cases::strands_and_tasks_share_a_mutex(8, 300)), 2 * 8 * 300);
}

#[test]
fn strands_and_tasks_share_a_semaphore() {
    let (most, turns) = on_pool(4, || cases::strands_and_tasks_share_a_semaphore(3, 8, 200));
    assert!(most <= 3, "{most} permits held at once, of 3");
    assert_eq!(turns, 2 * 8 * 200);
}

#[test]
fn strands_and_tasks_wait_on_one_event() {
    assert_eq!(on_pool(4, || cases::strands_and_tasks_wait_on_one_event(50)), 100);
}

#[test]
fn strands_and_tasks_share_a_channel() {
    let (senders, each) = (4u64, 2_000u64);
    let sum = on_pool(4, move || cases::strands_and_tasks_share_a_channel(senders, each));
    assert_eq!(sum, 2 * senders * (0..each).sum::<u64>());
}

#[test]
fn dropped_waits_give_back_what_they_were_handed() {
    on_pool(2, cases::dropped_waits_give_back_what_they_were_handed);
}

#[test]
fn tasks_sleep_at_least_as_long_as_asked() {
    let (early, late) = on_pool(4, || cases::tasks_sleep(100));
    assert_eq!(early, 0, "sleeps ended early");
    // Generous: the host may be oversubscribed.
    assert!(late < 2_000, "a sleep overslept by {late} ms");
}

#[test]
fn timeouts_end_waits_and_leave_nothing_armed() {
    let started = std::time::Instant::now();
    let took = on_pool(2, cases::timeouts);
    assert!(took < Duration::from_secs(60), "a wait that ended first took {took:?}");
    // The pool ran to quiescence: a deadline an hour away left armed would
    // have kept it from stopping.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn block_on_runs_sleeps_and_timeouts() {
    assert!(on_pool(2, cases::block_on_sleeps) >= Duration::from_millis(6));
}

#[test]
fn block_on_keeps_waiter_records_off_copied_stacks() {
    // 2,000 strands on the default 64 fibres: most are copied out while
    // their futures are queued in the semaphore.
    assert_eq!(on_pool(4, || cases::block_on_with_copy_swap(2_000)), 2_000);
}

#[test]
fn cancelled_waits_leave_their_objects_usable() {
    on_pool(2, cases::cancelled_waits_leave_their_objects_usable);
}

#[test]
fn a_task_that_panics_holding_an_async_guard_poisons_the_mutex() {
    let poisoned = on_pool(2, || {
        let mutex = Arc::new(Mutex::new(0));
        let held = mutex.clone();
        let task = executor::spawn_async(async move {
            let _guard = held.lock_async().await.unwrap();
            executor::yield_now().await;
            panic!("failing with the lock held");
        })
        .unwrap();
        assert!(matches!(task.join(), Err(TaskError::Failed(_))));
        let from_task = roving::block_on(mutex.lock_async()).unwrap().err();
        let from_strand = mutex.lock().err();
        (from_task, from_strand)
    });
    assert_eq!(poisoned, (Some(WaitError::Poisoned), Some(WaitError::Poisoned)));
}

#[test]
fn a_task_that_awaits_a_lock_it_holds_is_refused() {
    let (again, after) = on_pool(2, || {
        let mutex = Arc::new(Mutex::new(0));
        let task = executor::spawn_async(async move {
            let guard = mutex.lock_async().await.unwrap();
            let again = mutex.lock_async().await.err();
            drop(guard);
            (again, mutex.lock_async().await.map(|guard| *guard).ok())
        })
        .unwrap();
        task.join().unwrap()
    });
    assert_eq!(again, Some(WaitError::WouldDeadlock));
    assert_eq!(after, Some(0), "once its guard is dropped, the task locks it again");
}

#[test]
fn a_guard_sent_to_another_task_still_counts_as_its_lockers_until_dropped() {
    let (while_away, after) = on_pool(2, || {
        let mutex: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
        let checked: &'static Event = Box::leak(Box::new(Event::new()));
        let dropped: &'static Event = Box::leak(Box::new(Event::new()));
        let (sender, receiver) = roving::sync::channel::bounded(1).unwrap();
        let keeper = executor::spawn_async(async move {
            let mut guard: roving::sync::AsyncMutexGuard<u32> = receiver.recv_async().await.unwrap();
            *guard += 1;
            // Kept until the locker has tried again.
            checked.wait_async().await;
            drop(guard);
            dropped.set();
        })
        .unwrap();
        let locker = executor::spawn_async(async move {
            let guard = mutex.lock_async().await.unwrap();
            sender.send_async(guard).await.map_err(|_| ()).unwrap();
            let while_away = mutex.lock_async().await.err();
            checked.set();
            dropped.wait_async().await;
            (while_away, mutex.lock_async().await.map(|guard| *guard).ok())
        })
        .unwrap();
        let result = locker.join().unwrap();
        keeper.join().unwrap();
        result
    });
    assert_eq!(while_away, Some(WaitError::WouldDeadlock), "the guard it sent is listed under it");
    assert_eq!(after, Some(1), "the keeper's drop unlisted it");
}

#[test]
fn cancelling_a_task_queued_on_a_semaphore_loses_no_permit() {
    let available = on_pool(2, || {
        let semaphore = Arc::new(Semaphore::new(0));
        let waiting: Vec<_> = (0..10)
            .map(|_| {
                let semaphore = semaphore.clone();
                executor::spawn_async(async move { semaphore.acquire_async().await }).unwrap()
            })
            .collect();
        roving::strand::sleep(Duration::from_millis(5)).unwrap();
        // Half are handed permits, then every task is cancelled: those
        // handed one and not yet polled give it back.
        semaphore.release(5).unwrap();
        let mut finished = 0;
        for task in waiting {
            task.cancel();
            finished += usize::from(task.join().is_ok());
        }
        // Each permit was either used by a task that finished, or is back.
        semaphore.available() + finished
    });
    assert_eq!(available, 5);
}

#[test]
fn stand_in_interrupt_handlers_wake_tasks_through_shared_objects() {
    const ROUNDS: usize = 2_000;
    let woken = with_outside(4, |outside| {
        let semaphore = Arc::new(Semaphore::new(0));
        let event = Arc::new(roving::sync::Event::new());
        let count = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let (semaphore, count) = (semaphore.clone(), count.clone());
                executor::spawn_async(async move {
                    for _ in 0..ROUNDS / 4 {
                        semaphore.acquire_async().await;
                        count.fetch_add(1, SeqCst);
                    }
                })
                .unwrap()
            })
            .collect();
        let waiting = {
            let event = event.clone();
            executor::spawn_async(async move { event.wait_async().await }).unwrap()
        };
        let handler = {
            let (semaphore, event) = (semaphore.clone(), event.clone());
            outside(Box::new(move || {
                for _ in 0..ROUNDS {
                    semaphore.release(1).unwrap();
                }
                event.set();
            }))
        };
        tasks.into_iter().for_each(|t| t.join().unwrap());
        waiting.join().unwrap();
        handler.join();
        count.load(SeqCst)
    });
    assert_eq!(woken, ROUNDS);
}

#[test]
fn sleep_outside_a_pool_panics_with_a_message() {
    let panic = std::panic::catch_unwind(|| {
        let mut sleep = std::pin::pin!(time::sleep(Duration::from_secs(1)));
        let _ = sleep.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
    })
    .unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains("outside a pool"), "{message}");
}

#[test]
fn a_pool_with_only_sleeping_tasks_is_not_deadlocked() {
    let result = run_pool(2, |_| {
        let task = executor::spawn_async(time::sleep(Duration::from_millis(30))).unwrap();
        drop(task);
    });
    assert!(result.is_ok(), "{result:?}");
}

use std::future::Future;
