//! Stress on an oversubscribed host: the pool's cores share the machine's
//! CPUs with busy "hog" threads, so the OS takes a core's thread off its
//! CPU at any instruction, the way interrupts, cache misses and preemption
//! do on hardware. Built with feature `chaos` (as `make test` and
//! `make soak` run it), the protocols' own steps also yield, spin and
//! sleep at random (`src/chaos.rs`).
//!
//! Each round runs the workloads below on pools of 2, 3 and 4 cores, more
//! cores than the host has CPUs, and checks every result:
//!
//! - **spawn storm**: four strands each spawn and join 500 strands that end
//!   at once, so fibres are claimed, overloaded and given back all the
//!   time. It caught a use after free (a fibre scheduled by a wake-up that
//!   came after its last strand had ended and given it back) and
//!   `NoFibre` with fibres free (a fibre given back between the claim scan
//!   and the overload scan of one spawn).
//! - **lone spawner**: the root spawns and joins waves of 150 strands that
//!   end at once, more than there are fibres.
//! - **yield many**: 200 strands yield 200 times each.
//! - **pairs**: 1,000 pairs of strands pass one message over `bounded(1)`
//!   channels (2,000 strands on 64 fibres).
//! - **interrupts**: two threads standing in for interrupt handlers
//!   (`Machine::enter_as_handler`) unpark 100 parked strands 20 times each,
//!   release a semaphore 1,000 times, and send 2,000 messages to an actor
//!   through an `InterruptSender` of 4 slots (retrying when it is full),
//!   while the cores work.
//! - **async tasks**: 2,000 async tasks yield 20 times each, stolen between
//!   the cores; then 100 tasks each wait for a counter that two stand-in
//!   handlers raise 20 times, waking the task by reference each time.
//! - **shared objects**: strands and async tasks on one mutex (held
//!   across a yield or an await), one semaphore and one channel with both
//!   kinds at each end, and 30 tasks sleeping on the timer heap beside
//!   them: counts exact, permits never over-taken, per-sender order kept.
//!
//! After each pool ends, no fibre may still be held.
//!
//! `ROVING_STRESS_SECS` sets how long to go on (default 20 s; `make soak`
//! runs it far longer). `ROVING_STRESS_HOGS` sets how many hog threads
//! (default: two per CPU).
#![cfg(feature = "std")]

#[path = "common/async_cases.rs"]
mod async_cases;
mod support;
#[path = "common/sync_async_cases.rs"]
mod sync_async_cases;

use roving::Pool;
use roving::actor::{Actor, ActorContext, InterruptSendError};
use roving::strand::{self, JoinHandle, Unparker};
use roving::sync::{Semaphore, channel};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::task::{Context as TaskContext, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|value| value.parse().ok())
}

/// The async tasks workload's first half (module docs).
fn async_tasks() -> u64 {
    async_cases::many_tasks(2_000, 20, 0).0
}

/// Strands and tasks on shared objects; returns a checksum of the counts.
fn shared_objects() -> u64 {
    let mutex = sync_async_cases::strands_and_tasks_share_a_mutex(4, 50) as u64;
    let (most, turns) = sync_async_cases::strands_and_tasks_share_a_semaphore(2, 4, 50);
    assert!(most <= 2, "{most} permits held at once, of 2");
    let channel = sync_async_cases::strands_and_tasks_share_a_channel(3, 300);
    let (early, _) = sync_async_cases::tasks_sleep(30);
    assert_eq!(early, 0, "a task's sleep ended early");
    mutex + turns as u64 + channel
}

fn join_all<T>(handles: Vec<JoinHandle<T>>) -> Vec<T> {
    handles.into_iter().map(|handle| handle.join().expect("a stress strand failed")).collect()
}

fn spawn_storm() -> u64 {
    let spawners: Vec<_> = (0..4u64)
        .map(|spawner| {
            strand::spawn(move || {
                let mut sum = 0;
                for batch in 0..5u64 {
                    let children = (0..100u64)
                        .map(|i| {
                            let value = spawner * 1_000 + batch * 100 + i;
                            strand::spawn(move || value).expect("spawn with fibres to share")
                        })
                        .collect();
                    sum += join_all(children).into_iter().sum::<u64>();
                }
                sum
            })
            .expect("spawn a spawner")
        })
        .collect();
    join_all(spawners).into_iter().sum()
}

fn expected_storm_sum() -> u64 {
    (0..4u64).flat_map(|s| (0..500u64).map(move |i| s * 1_000 + i)).sum()
}

/// One spawner, the root, spawns waves of strands that end at once: more
/// than there are fibres, so it overloads fibres that the other cores are
/// emptying and giving back meanwhile.
fn lone_spawner() -> u64 {
    (0..10u64)
        .map(|wave| {
            let children = (0..150u64)
                .map(|i| strand::spawn(move || wave * 150 + i).expect("spawn with fibres free or to share"))
                .collect();
            join_all(children).into_iter().sum::<u64>()
        })
        .sum()
}

fn yield_many() -> u64 {
    let children = (0..200)
        .map(|_| {
            strand::spawn(|| {
                for _ in 0..200 {
                    strand::yield_now().unwrap();
                }
                200u64
            })
            .expect("spawn a yielder")
        })
        .collect();
    join_all(children).into_iter().sum()
}

fn pairs() -> u64 {
    let mut children = Vec::new();
    for i in 0..1_000u64 {
        let (sender, receiver) = channel::bounded::<u64>(1).unwrap();
        children.push(strand::spawn(move || sender.send(i).map(|()| 0).unwrap()).expect("spawn a sender"));
        children.push(strand::spawn(move || receiver.recv().unwrap()).expect("spawn a receiver"));
    }
    join_all(children).into_iter().sum()
}

/// Counts what it is sent.
struct Tally(Arc<AtomicU64>);

impl Actor for Tally {
    type Message = u64;
    fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
        self.0.fetch_add(n, SeqCst);
    }
}

const PARKED: usize = 100;
const UNPARKS: u64 = 20;
const RELEASES: usize = 1_000;
const MESSAGES: u64 = 1_000;

/// The interrupts workload (module docs); returns (unparks seen, permits
/// taken, message sum).
fn interrupts(handler: &dyn Fn(support::Outside) -> support::OutsideHandle) -> (u64, usize, u64) {
    let raised: Arc<Vec<AtomicU64>> = Arc::new((0..PARKED).map(|_| AtomicU64::new(0)).collect());
    let parked: Vec<(JoinHandle<u64>, Arc<Unparker>)> = (0..PARKED)
        .map(|i| {
            let raised = raised.clone();
            let (sender, receiver) = channel::bounded(1).unwrap();
            let strand = strand::spawn(move || {
                sender.send(strand::unparker().unwrap()).unwrap();
                let mut seen = 0;
                while seen < UNPARKS {
                    strand::park().unwrap();
                    seen = raised[i].load(SeqCst);
                }
                seen
            })
            .expect("spawn a parked strand");
            (strand, Arc::new(receiver.recv().unwrap()))
        })
        .collect();
    let permits = Arc::new(Semaphore::new(0));
    let tally = Arc::new(AtomicU64::new(0));
    let actor = Pool::current().unwrap().spawn_actor(Tally(tally.clone()));
    let sender = actor.interrupt_sender(4).unwrap();
    let unparkers: Arc<Vec<Arc<Unparker>>> = Arc::new(parked.iter().map(|(_, u)| u.clone()).collect());
    let devices: Vec<_> = (0..2usize)
        .map(|device| {
            let (raised, unparkers, permits, sender) =
                (raised.clone(), unparkers.clone(), permits.clone(), sender.clone());
            handler(Box::new(move || {
                for round in 1..=UNPARKS {
                    for i in (device..PARKED).step_by(2) {
                        raised[i].store(round, SeqCst);
                        unparkers[i].unpark();
                    }
                }
                permits.release(RELEASES / 2).unwrap();
                for n in 1..=MESSAGES {
                    let mut message = n;
                    while let Err(InterruptSendError::Full(back)) = sender.send(message) {
                        message = back;
                        thread::yield_now();
                    }
                }
            }))
        })
        .collect();
    for _ in 0..RELEASES {
        permits.acquire().unwrap();
    }
    let seen: u64 = join_all(parked.into_iter().map(|(strand, _)| strand).collect()).into_iter().sum();
    for device in devices {
        device.join();
    }
    while tally.load(SeqCst) < 2 * (1..=MESSAGES).sum::<u64>() {
        strand::sleep(Duration::from_millis(1)).unwrap();
    }
    actor.stop();
    (seen, RELEASES, tally.load(SeqCst))
}

/// Waits until its counter reaches `UNPARKS`, keeping its waker where the
/// stand-in handlers find it.
struct Counted {
    index: usize,
    counts: Arc<Vec<AtomicU64>>,
    wakers: Arc<Vec<spin::Mutex<Option<Waker>>>>,
}

impl Future for Counted {
    type Output = u64;
    fn poll(self: Pin<&mut Self>, context: &mut TaskContext<'_>) -> Poll<u64> {
        {
            let mut slot = self.wakers[self.index].lock();
            if !slot.as_ref().is_some_and(|w| w.will_wake(context.waker())) {
                *slot = Some(context.waker().clone());
            }
        }
        let count = self.counts[self.index].load(SeqCst);
        if count >= UNPARKS { Poll::Ready(count) } else { Poll::Pending }
    }
}

/// The async tasks workload's interrupt half (module docs); returns the
/// counts the tasks saw.
fn interrupt_wakes(handler: &dyn Fn(support::Outside) -> support::OutsideHandle) -> u64 {
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..PARKED).map(|_| AtomicU64::new(0)).collect());
    let wakers: Arc<Vec<spin::Mutex<Option<Waker>>>> =
        Arc::new((0..PARKED).map(|_| spin::Mutex::new(None)).collect());
    let tasks: Vec<_> = (0..PARKED)
        .map(|index| {
            let future = Counted { index, counts: counts.clone(), wakers: wakers.clone() };
            roving::spawn_async(future).expect("spawn a waiting task")
        })
        .collect();
    let devices: Vec<_> = (0..2usize)
        .map(|device| {
            let (counts, wakers) = (counts.clone(), wakers.clone());
            handler(Box::new(move || {
                for round in 1..=UNPARKS {
                    for i in (device..PARKED).step_by(2) {
                        counts[i].store(round, SeqCst);
                        if let Some(waker) = wakers[i].lock().as_ref() {
                            waker.wake_by_ref();
                        }
                    }
                }
            }))
        })
        .collect();
    let seen = tasks.into_iter().map(|task| task.join().expect("a waiting task finishes")).sum();
    for device in devices {
        device.join();
    }
    // The wakers go with the tasks' last references, here, not in a handler.
    drop(wakers);
    seen
}

#[test]
fn strands_survive_an_oversubscribed_host() {
    let budget = Duration::from_secs(env_number("ROVING_STRESS_SECS").unwrap_or(20));
    let _hogs = support::Hogs::start();
    let start = Instant::now();
    let rounds = AtomicU64::new(0);
    while start.elapsed() < budget {
        for cores in [2, 3, 4] {
            let timed = |f: fn() -> u64| {
                let start = Instant::now();
                let value = f();
                (value, start.elapsed())
            };
            let ((lone, t0), (storm, t1), (yields, t2), (sum, t3), (tasks, t4), (shared, t5)) =
                support::on_pool(cores, || {
                    (
                        timed(lone_spawner),
                        timed(spawn_storm),
                        timed(yield_many),
                        timed(pairs),
                        timed(async_tasks),
                        timed(shared_objects),
                    )
                });
            if std::env::var_os("ROVING_STRESS_VERBOSE").is_some() {
                eprintln!(
                    "{cores} cores: lone spawner {t0:?}, storm {t1:?}, yield many {t2:?}, pairs {t3:?}, async tasks {t4:?}, shared objects {t5:?}"
                );
            }
            let expected_shared = 2 * 4 * 50 + 2 * 4 * 50 + 2 * 3 * (0..300u64).sum::<u64>();
            assert_eq!(shared, expected_shared, "shared objects at {cores} cores");
            assert_eq!(tasks, (0..2_000).sum::<u64>(), "async tasks at {cores} cores");
            assert_eq!(lone, (0..1_500).sum::<u64>(), "lone spawner at {cores} cores");
            assert_eq!(storm, expected_storm_sum(), "spawn storm at {cores} cores");
            assert_eq!(yields, 200 * 200, "yield many at {cores} cores");
            assert_eq!(sum, (0..1_000).sum::<u64>(), "pairs at {cores} cores");
            assert_eq!(strand::usage().fibres_in_use, 0, "a fibre is still held after the pool ended");
            let seen = support::with_outside(cores, interrupt_wakes);
            assert_eq!(seen, PARKED as u64 * UNPARKS, "async tasks woken by handlers at {cores} cores");
            let (seen, permits, sum) = support::with_outside(cores, interrupts);
            assert_eq!(seen, PARKED as u64 * UNPARKS, "unparks seen at {cores} cores");
            assert_eq!(permits, RELEASES, "permits at {cores} cores");
            assert_eq!(
                sum,
                2 * (1..=MESSAGES).sum::<u64>(),
                "messages through the interrupt sender at {cores} cores"
            );
        }
        rounds.fetch_add(1, SeqCst);
    }
    eprintln!("stress: {} rounds of 3 pools in {:.1?}", rounds.load(SeqCst), start.elapsed());
}
