//! A wake plus a poll, on one core: a task wakes itself and returns
//! `Pending`, and the executor polls it again. roving's async tasks
//! against embassy-executor (its std architecture, one thread) and tokio's
//! current-thread runtime, each running the same future: `YIELDS` times,
//! wake by reference, then `Pending`.
//!
//! embassy reports 79 cycles for a wake plus poll on an nRF52840; on the
//! host its std architecture's wake also signals a mutex and condition
//! variable, which is part of what is measured here.

mod harness;

use harness::{compare, on_roving, ratios};
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

const YIELDS: usize = 200_000;

/// Wakes its task and yields once.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        context.waker().wake_by_ref();
        Poll::Pending
    }
}

/// `YIELDS` wake-and-polls, timed from inside the task.
async fn yields() -> Duration {
    let start = Instant::now();
    for _ in 0..YIELDS {
        YieldOnce(false).await;
    }
    start.elapsed()
}

fn roving_one_core() -> Duration {
    on_roving(1, || roving::spawn_async(yields()).unwrap().join().unwrap())
}

fn tokio_current_thread() -> Duration {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async { tokio::spawn(yields()).await.unwrap() })
}

/// An embassy executor on a thread of its own, which never ends: its one
/// task takes a request, runs the yields, and answers with the time.
struct Embassy {
    requests: mpsc::Sender<()>,
    answers: mpsc::Receiver<Duration>,
}

#[embassy_executor::task]
async fn embassy_server(requests: mpsc::Receiver<()>, answers: mpsc::Sender<Duration>) {
    // Blocking the executor's thread between requests is fine: nothing
    // else runs on it.
    while requests.recv().is_ok() {
        answers.send(yields().await).unwrap();
    }
}

impl Embassy {
    fn start() -> Self {
        let (requests, server_requests) = mpsc::channel();
        let (server_answers, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let executor: &'static mut embassy_executor::Executor =
                Box::leak(Box::new(embassy_executor::Executor::new()));
            executor.run(|spawner| spawner.spawn(embassy_server(server_requests, server_answers)).unwrap())
        });
        Self { requests, answers }
    }

    fn run(&self) -> Duration {
        self.requests.send(()).unwrap();
        self.answers.recv().unwrap()
    }
}

fn main() {
    let embassy = Embassy::start();
    let embassy_run = || embassy.run();
    println!("wake + poll: a task wakes itself and yields, {YIELDS} times, one core (per wake and poll)");
    let rows = compare(
        15,
        YIELDS as u64,
        &[
            ("roving task, 1-core pool", &roving_one_core),
            ("embassy-executor, std arch", &embassy_run),
            ("tokio current_thread", &tokio_current_thread),
        ],
    );
    ratios(&rows, &["embassy-executor, std arch", "tokio current_thread"]);
}
