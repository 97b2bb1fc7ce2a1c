//! A one-way stream of tasks from one core to another: each message is a
//! closure that the receiver runs.

use crate::on_roving;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send>;

/// Counts the receiver's runs; the last one records the end.
struct Tally {
    ran: AtomicU64,
    of: u64,
    end: OnceLock<Instant>,
}

impl Tally {
    fn new(of: u64) -> Arc<Self> {
        Arc::new(Self { ran: AtomicU64::new(0), of, end: OnceLock::new() })
    }

    fn run(&self) {
        // Only the receiver writes it, so the add stays in its cache.
        if self.ran.fetch_add(1, Relaxed) + 1 == self.of {
            self.end.set(Instant::now()).expect("one end");
        }
    }

    fn since(&self, start: Instant) -> Duration {
        assert_eq!(self.ran.load(Relaxed), self.of, "every task ran");
        self.end.get().expect("the stream ended").duration_since(start)
    }
}

/// roving: core 0 posts `tasks` closures to `to` (core 1 for the stream,
/// core 0 itself for the local comparison). The closure is 16 bytes, so
/// it lives in a block of the sender's cache; a remote receiver frees it
/// into its batch for the sender.
pub fn roving(tasks: u64, to: usize) -> Duration {
    roving_stream(tasks, move |tally| roving::post(to, move || tally.run()).expect("post"))
}

/// roving with closures too big for a block (48 bytes): each goes through
/// the global allocator, allocated on the sender and freed on the receiver.
pub fn roving_heap(tasks: u64) -> Duration {
    roving_stream(tasks, |tally| {
        let ballast = [0u64; 5];
        roving::post(1, move || {
            std::hint::black_box(ballast);
            tally.run()
        })
        .expect("post")
    })
}

/// Calls `post_one` `tasks` times on core 0 of a fresh pool.
fn roving_stream(tasks: u64, post_one: impl Fn(Arc<Tally>) + Send + 'static) -> Duration {
    let tally = Tally::new(tasks);
    let start = {
        let tally = tally.clone();
        on_roving(move || {
            let start = Instant::now();
            for _ in 0..tasks {
                post_one(tally.clone());
            }
            start
        })
    };
    tally.since(start)
}

/// crossbeam-channel: boxed closures through an unbounded channel to a
/// thread that runs them.
pub fn crossbeam_jobs(tasks: u64) -> Duration {
    jobs_to_thread(
        tasks,
        crossbeam_channel::unbounded,
        |to, job| to.send(job).unwrap(),
        |from| from.recv().ok(),
    )
}

/// Sends `tasks` boxed closures through a channel made by `channel` to a
/// new thread that runs them.
fn jobs_to_thread<S, R: Send + 'static>(
    tasks: u64,
    channel: impl Fn() -> (S, R),
    send: fn(&S, Job),
    receive: fn(&R) -> Option<Job>,
) -> Duration {
    let tally = Tally::new(tasks);
    let (sender, receiver) = channel();
    let runner = thread::spawn(move || {
        while let Some(job) = receive(&receiver) {
            job();
        }
    });
    let start = Instant::now();
    for _ in 0..tasks {
        let tally = tally.clone();
        send(&sender, Box::new(move || tally.run()));
    }
    drop(sender);
    runner.join().unwrap();
    tally.since(start)
}

/// crossbeam-channel carrying plain numbers: the channel alone, no
/// closures to allocate or run.
pub fn crossbeam_numbers(tasks: u64) -> Duration {
    let (send, receive) = crossbeam_channel::unbounded::<u64>();
    let receiver = thread::spawn(move || receive.iter().fold(0u64, |sum, n| sum.wrapping_add(n)));
    let start = Instant::now();
    for n in 0..tasks {
        send.send(n).unwrap();
    }
    drop(send);
    let sum = receiver.join().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(sum, tasks * (tasks - 1) / 2, "every number arrived");
    elapsed
}

/// std's mpsc: boxed closures to a thread that runs them.
pub fn std_mpsc(tasks: u64) -> Duration {
    jobs_to_thread(tasks, mpsc::channel, |to, job| to.send(job).unwrap(), |from| from.recv().ok())
}

/// rayon: one worker spawns every task; the other worker steals them.
pub fn rayon(tasks: u64) -> Duration {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let tally = Tally::new(tasks);
    let start = Instant::now();
    pool.scope(|scope| {
        for _ in 0..tasks {
            let tally = &tally;
            scope.spawn(move |_| tally.run());
        }
    });
    tally.since(start)
}

/// tokio: boxed closures through an unbounded channel to a task that runs
/// them, on a two-worker runtime.
pub fn tokio(tasks: u64) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let tally = Tally::new(tasks);
    let (send, mut receive) = tokio::sync::mpsc::unbounded_channel::<Job>();
    let receiver = runtime.spawn(async move {
        while let Some(job) = receive.recv().await {
            job();
        }
    });
    let sender = {
        let tally = tally.clone();
        runtime.spawn(async move {
            let start = Instant::now();
            for _ in 0..tasks {
                let tally = tally.clone();
                send.send(Box::new(move || tally.run())).unwrap();
            }
            start
        })
    };
    let start = runtime.block_on(async {
        let start = sender.await.unwrap();
        receiver.await.unwrap();
        start
    });
    tally.since(start)
}
