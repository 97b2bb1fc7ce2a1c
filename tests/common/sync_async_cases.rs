//! Strands and async tasks on the same `sync` objects, and timers for
//! tasks; shared by the host tests (`tests/sync_async.rs`) and the QEMU
//! kernel `tasks`. Only `core`, `alloc` and roving: it builds for bare
//! metal. Run from a strand of a pool.
#![allow(dead_code)]

extern crate alloc;

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::task::Wake;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use roving::executor::{self, TaskHandle};
use roving::strand::{self, JoinHandle};
use roving::sync::{Event, Mutex, Semaphore, channel};
use roving::time::{self, Elapsed, Instant};

/// `workers` strands and `workers` tasks each add 1 to a counter under one
/// mutex `rounds` times, yielding while they hold it; a flag checks that
/// no two ever hold it at once. Returns the count.
pub fn strands_and_tasks_share_a_mutex(workers: usize, rounds: usize) -> usize {
    let counter = Arc::new(Mutex::new(0usize));
    let inside = Arc::new(AtomicBool::new(false));
    let strands: Vec<JoinHandle<()>> = (0..workers)
        .map(|_| {
            let (counter, inside) = (counter.clone(), inside.clone());
            strand::spawn(move || {
                for _ in 0..rounds {
                    let mut count = counter.lock().expect("a strand locks");
                    assert!(!inside.swap(true, SeqCst), "two holders at once");
                    strand::yield_now().expect("a strand yields");
                    *count += 1;
                    inside.store(false, SeqCst);
                }
            })
            .expect("spawned")
        })
        .collect();
    let tasks: Vec<TaskHandle<()>> = (0..workers)
        .map(|_| {
            let (counter, inside) = (counter.clone(), inside.clone());
            executor::spawn_async(async move {
                for _ in 0..rounds {
                    let mut count = counter.lock_async().await.expect("a task locks");
                    assert!(!inside.swap(true, SeqCst), "two holders at once");
                    executor::yield_now().await;
                    *count += 1;
                    inside.store(false, SeqCst);
                }
            })
            .expect("spawned")
        })
        .collect();
    strands.into_iter().for_each(|s| s.join().expect("a strand finishes"));
    tasks.into_iter().for_each(|t| t.join().expect("a task finishes"));
    *counter.lock().expect("unpoisoned")
}

/// Strands and tasks take `permits` permits at most at once between them;
/// returns the most that were ever held at once and how many turns ran.
pub fn strands_and_tasks_share_a_semaphore(permits: usize, workers: usize, rounds: usize) -> (usize, usize) {
    let semaphore = Arc::new(Semaphore::new(permits));
    let (held, most, turns) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let enter = {
        let (held, most, turns) = (held.clone(), most.clone(), turns.clone());
        move || {
            let now = held.fetch_add(1, SeqCst) + 1;
            most.fetch_max(now, SeqCst);
            turns.fetch_add(1, SeqCst);
        }
    };
    let strands: Vec<JoinHandle<()>> = (0..workers)
        .map(|_| {
            let (semaphore, held, enter) = (semaphore.clone(), held.clone(), enter.clone());
            strand::spawn(move || {
                for _ in 0..rounds {
                    semaphore.acquire().expect("a strand acquires");
                    enter();
                    strand::yield_now().expect("a strand yields");
                    held.fetch_sub(1, SeqCst);
                    semaphore.release(1).expect("released");
                }
            })
            .expect("spawned")
        })
        .collect();
    let tasks: Vec<TaskHandle<()>> = (0..workers)
        .map(|_| {
            let (semaphore, held, enter) = (semaphore.clone(), held.clone(), enter.clone());
            executor::spawn_async(async move {
                for _ in 0..rounds {
                    semaphore.acquire_async().await;
                    enter();
                    executor::yield_now().await;
                    held.fetch_sub(1, SeqCst);
                    semaphore.release(1).expect("released");
                }
            })
            .expect("spawned")
        })
        .collect();
    strands.into_iter().for_each(|s| s.join().expect("a strand finishes"));
    tasks.into_iter().for_each(|t| t.join().expect("a task finishes"));
    assert_eq!(semaphore.available(), permits, "every permit came back");
    (most.load(SeqCst), turns.load(SeqCst))
}

/// `waiters` strands and `waiters` tasks wait on one event, which a strand
/// sets once all are waiting; returns how many came through.
pub fn strands_and_tasks_wait_on_one_event(waiters: usize) -> usize {
    let event = Arc::new(Event::new());
    let through = Arc::new(AtomicUsize::new(0));
    let strands: Vec<JoinHandle<()>> = (0..waiters)
        .map(|_| {
            let (event, through) = (event.clone(), through.clone());
            strand::spawn(move || {
                event.wait().expect("a strand waits");
                through.fetch_add(1, SeqCst);
            })
            .expect("spawned")
        })
        .collect();
    let tasks: Vec<TaskHandle<()>> = (0..waiters)
        .map(|_| {
            let (event, through) = (event.clone(), through.clone());
            executor::spawn_async(async move {
                event.wait_async().await;
                through.fetch_add(1, SeqCst);
            })
            .expect("spawned")
        })
        .collect();
    strand::sleep(Duration::from_millis(5)).expect("a strand sleeps");
    event.set();
    strands.into_iter().for_each(|s| s.join().expect("a strand finishes"));
    tasks.into_iter().for_each(|t| t.join().expect("a task finishes"));
    through.load(SeqCst)
}

/// One channel, strands sending to tasks and tasks sending to strands on
/// the other; a tiny capacity makes both ends wait. Each receiver checks
/// that every sender's values arrive in order. Returns the sum received.
pub fn strands_and_tasks_share_a_channel(senders: u64, each: u64) -> u64 {
    let (tx, rx) = channel::bounded::<(u64, u64)>(2).expect("a channel");
    let producers_s: Vec<JoinHandle<()>> = (0..senders)
        .map(|id| {
            let tx = tx.clone();
            strand::spawn(move || (0..each).for_each(|n| tx.send((id, n)).expect("sent"))).expect("spawned")
        })
        .collect();
    let producers_t: Vec<TaskHandle<()>> = (senders..2 * senders)
        .map(|id| {
            let tx = tx.clone();
            executor::spawn_async(async move {
                for n in 0..each {
                    tx.send_async((id, n)).await.expect("sent");
                }
            })
            .expect("spawned")
        })
        .collect();
    drop(tx);
    let ordered = |last: &mut Vec<Option<u64>>, (id, n): (u64, u64)| {
        let id = id as usize;
        assert!(last[id].is_none_or(|before| before < n), "sender {id}: {n} after {:?}", last[id]);
        last[id] = Some(n);
        n
    };
    // Two consumers: a strand and a task, each on its own values.
    let task_rx = rx.clone();
    let consumer_t = executor::spawn_async(async move {
        let mut last = alloc::vec![None; 2 * senders as usize];
        let mut sum = 0;
        while let Ok(value) = task_rx.recv_async().await {
            sum += ordered(&mut last, value);
        }
        sum
    })
    .expect("spawned");
    let mut last = alloc::vec![None; 2 * senders as usize];
    let mut sum = 0;
    while let Ok(value) = rx.recv() {
        sum += ordered(&mut last, value);
    }
    producers_s.into_iter().for_each(|p| p.join().expect("a producer finishes"));
    producers_t.into_iter().for_each(|p| p.join().expect("a producer finishes"));
    sum + consumer_t.join().expect("the consumer task finishes")
}

/// A waker that counts its wakes.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counting_waker() -> (Arc<Count>, Waker) {
    let count = Arc::new(Count(AtomicUsize::new(0)));
    (count.clone(), Waker::from(count))
}

fn poll_once<F: Future>(future: &mut Pin<Box<F>>, waker: &Waker) -> Poll<F::Output> {
    future.as_mut().poll(&mut Context::from_waker(waker))
}

/// Futures dropped after they were handed something give it back: a
/// permit, the lock, a channel's wake. Panics if any is lost.
pub fn dropped_waits_give_back_what_they_were_handed() {
    let (count, waker) = counting_waker();
    // A permit handed to a dropped acquire goes back to the bank.
    let semaphore = Semaphore::new(0);
    let mut acquire = Box::pin(semaphore.acquire_async());
    assert!(poll_once(&mut acquire, &waker).is_pending());
    semaphore.release(1).expect("released");
    assert_eq!(count.0.load(SeqCst), 1, "the release woke the task");
    assert_eq!(semaphore.available(), 0, "the permit went to the waiting task");
    drop(acquire);
    assert_eq!(semaphore.available(), 1, "the dropped wait gave its permit back");
    // ... or to the next waiter, in order.
    assert!(semaphore.try_acquire());
    let mut first = Box::pin(semaphore.acquire_async());
    let mut second = Box::pin(semaphore.acquire_async());
    assert!(poll_once(&mut first, &waker).is_pending());
    assert!(poll_once(&mut second, &waker).is_pending());
    semaphore.release(1).expect("released");
    drop(first);
    assert_eq!(poll_once(&mut second, &waker), Poll::Ready(()), "the second got the first's permit");
    drop(second);
    assert_eq!(semaphore.available(), 0);

    // The lock handed to a dropped lock future is unlocked again.
    let mutex = Mutex::new(7);
    let guard = mutex.lock().expect("locked");
    let mut lock = Box::pin(mutex.lock_async());
    assert!(poll_once(&mut lock, &waker).is_pending());
    drop(guard);
    assert!(mutex.try_lock().is_err(), "the lock went to the waiting task");
    drop(lock);
    assert_eq!(*mutex.try_lock().expect("the dropped wait unlocked it"), 7);
    // A lock handed over in order: strand guard, then task, then task.
    let guard = mutex.lock().expect("locked");
    let mut first = Box::pin(mutex.lock_async());
    let mut second = Box::pin(mutex.lock_async());
    assert!(poll_once(&mut first, &waker).is_pending());
    assert!(poll_once(&mut second, &waker).is_pending());
    drop(guard);
    let Poll::Ready(Ok(mut held)) = poll_once(&mut first, &waker) else {
        panic!("the first waiter has the lock")
    };
    *held += 1;
    assert!(poll_once(&mut second, &waker).is_pending(), "the second still waits");
    drop(held);
    let Poll::Ready(Ok(held)) = poll_once(&mut second, &waker) else {
        panic!("the second waiter has the lock")
    };
    assert_eq!(*held, 8);
    drop(held);

    // A receiver woken for a value and dropped passes the wake on.
    let (tx, rx) = channel::bounded::<u32>(1).expect("a channel");
    let (second_count, second_waker) = counting_waker();
    let mut first = Box::pin(rx.recv_async());
    let mut second = Box::pin(rx.recv_async());
    assert!(poll_once(&mut first, &waker).is_pending());
    assert!(poll_once(&mut second, &second_waker).is_pending());
    tx.try_send(5).expect("room");
    assert_eq!(second_count.0.load(SeqCst), 0, "one value wakes one receiver");
    drop(first);
    assert_eq!(second_count.0.load(SeqCst), 1, "the dropped receiver passed its wake on");
    assert_eq!(poll_once(&mut second, &second_waker), Poll::Ready(Ok(5)));
    drop(second);
    // A sender waiting for room sends once there is some; dropped, its
    // value is dropped and the channel is as it was.
    tx.try_send(1).expect("room");
    let mut send = Box::pin(tx.send_async(2));
    assert!(poll_once(&mut send, &waker).is_pending(), "full");
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(poll_once(&mut send, &waker), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Ok(2));
    drop(rx);
    let mut send = Box::pin(tx.send_async(3));
    match poll_once(&mut send, &waker) {
        Poll::Ready(Err(channel::SendError::Disconnected(3))) => {}
        other => panic!("a send with no receiver: {:?}", other.map(|r| r.is_ok())),
    }
}

/// `tasks` tasks sleep for 1..=`tasks` ms each; returns how many woke
/// early (must be none) and the longest any overslept, in ms.
pub fn tasks_sleep(tasks: u64) -> (usize, u64) {
    let early = Arc::new(AtomicUsize::new(0));
    let handles: Vec<TaskHandle<u64>> = (1..=tasks)
        .map(|ms| {
            let early = early.clone();
            executor::spawn_async(async move {
                let started = Instant::now();
                time::sleep(Duration::from_millis(ms)).await;
                let took = started.elapsed();
                if took < Duration::from_millis(ms) {
                    early.fetch_add(1, SeqCst);
                }
                took.as_millis() as u64 - ms
            })
            .expect("spawned")
        })
        .collect();
    let late = handles.into_iter().map(|h| h.join().expect("a sleeper finishes")).max().unwrap_or(0);
    (early.load(SeqCst), late)
}

/// A timeout ends a wait that nothing ends, passes through an output that
/// comes first, and, dropped with its deadline far away, leaves nothing
/// armed (the pool can go idle at once). Returns the time the last took.
pub fn timeouts() -> Duration {
    let event = Arc::new(Event::new());
    let waited = event.clone();
    let task = executor::spawn_async(async move {
        let never = time::timeout(Duration::from_millis(3), waited.wait_async()).await;
        let soon = time::timeout(Duration::from_secs(3600), async { 5 }).await;
        (never, soon)
    })
    .expect("spawned");
    assert_eq!(task.join().expect("finishes"), (Err(Elapsed), Ok(5)));
    // A wait that ends first, with a deadline an hour away.
    let started = Instant::now();
    let setter = event.clone();
    let task =
        executor::spawn_async(
            async move { time::timeout(Duration::from_secs(3600), setter.wait_async()).await },
        )
        .expect("spawned");
    event.set();
    assert_eq!(task.join().expect("finishes"), Ok(()));
    started.elapsed()
}

/// A strand's `block_on` runs a task's sleep and a timeout.
pub fn block_on_sleeps() -> Duration {
    let started = Instant::now();
    roving::block_on(time::sleep(Duration::from_millis(3))).expect("a strand");
    let never = Event::new();
    let waited =
        roving::block_on(time::timeout(Duration::from_millis(3), never.wait_async())).expect("a strand");
    assert_eq!(waited, Err(Elapsed));
    started.elapsed()
}

/// `strands` strands, far more than fibres, each `block_on` a semaphore's
/// `acquire_async` (so the futures that hold their waiter records belong
/// to strands copied off their fibres while they wait); a strand releases
/// them all. Returns how many got through.
pub fn block_on_with_copy_swap(strands: usize) -> usize {
    let semaphore = Arc::new(Semaphore::new(0));
    let through = Arc::new(AtomicUsize::new(0));
    let waiters: Vec<JoinHandle<()>> = (0..strands)
        .map(|_| {
            let (semaphore, through) = (semaphore.clone(), through.clone());
            strand::spawn(move || {
                let mut stack_noise = [0u8; 512];
                stack_noise.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
                roving::block_on(semaphore.acquire_async()).expect("a strand");
                assert!(core::hint::black_box(&stack_noise).iter().enumerate().all(|(i, &b)| b == i as u8));
                through.fetch_add(1, SeqCst);
            })
            .expect("spawned")
        })
        .collect();
    for _ in 0..strands {
        strand::yield_now().expect("a strand");
        semaphore.release(1).expect("released");
    }
    waiters.into_iter().for_each(|w| w.join().expect("a waiter finishes"));
    through.load(SeqCst)
}

/// Tasks cancelled while they wait (on a signal, a semaphore, a mutex, a
/// channel, a sleep) leave each object as if they had never waited: the
/// signal raised later is kept, the permit banked, the lock free, the
/// value there for the next receiver, and no timer armed. Their futures
/// are dropped where they lie (they are linked into those objects by
/// address).
pub fn cancelled_waits_leave_their_objects_usable() {
    let signal = Arc::new(roving::sync::Signal::new());
    let semaphore = Arc::new(Semaphore::new(0));
    let mutex = Arc::new(Mutex::new(0u32));
    let (tx, rx) = channel::bounded::<u32>(1).expect("a channel");
    let held = mutex.lock().expect("locked");
    let waiting: Vec<TaskHandle<()>> = alloc::vec![
        {
            let signal = signal.clone();
            executor::spawn_async(async move { signal.wait_async().await.expect("one waiter") })
                .expect("spawned")
        },
        {
            let semaphore = semaphore.clone();
            executor::spawn_async(async move { semaphore.acquire_async().await }).expect("spawned")
        },
        {
            let mutex = mutex.clone();
            executor::spawn_async(async move { drop(mutex.lock_async().await) }).expect("spawned")
        },
        {
            let rx = rx.clone();
            executor::spawn_async(async move {
                let _ = rx.recv_async().await;
            })
            .expect("spawned")
        },
        executor::spawn_async(time::sleep(Duration::from_secs(3600))).expect("spawned"),
    ];
    // Let every task reach its wait, then cancel them all.
    strand::sleep(Duration::from_millis(10)).expect("a strand sleeps");
    for task in waiting {
        task.cancel();
        assert_eq!(task.join(), Err(executor::TaskError::Cancelled), "a waiting task was cancelled");
    }
    drop(held);
    signal.signal();
    assert!(signal.try_take(), "the signal raised after the cancel was kept");
    semaphore.release(1).expect("released");
    assert_eq!(semaphore.available(), 1, "the permit was banked, not handed to a gone task");
    assert!(mutex.try_lock().is_ok(), "the mutex is free");
    tx.try_send(9).expect("room");
    assert_eq!(rx.try_recv(), Ok(9), "the value waits for the next receiver");
    // A new waiter on the signal is let in.
    let again = {
        let signal = signal.clone();
        executor::spawn_async(async move { signal.wait_async().await }).expect("spawned")
    };
    strand::sleep(Duration::from_millis(5)).expect("a strand sleeps");
    signal.signal();
    assert_eq!(again.join().expect("finishes"), Ok(()));
}
