//! Round trips between two cores: one message there, one back.

use crate::on_roving;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// The floor: two threads pass a counter back and forth through one
/// atomic, spinning. No queue, no allocation, no sleeping.
pub fn atomic_floor(trips: u64) -> Duration {
    let ball = Arc::new(AtomicU64::new(0));
    let other = {
        let ball = ball.clone();
        thread::spawn(move || {
            for trip in 0..trips {
                while ball.load(Acquire) != 2 * trip + 1 {
                    std::hint::black_box(());
                }
                ball.store(2 * trip + 2, Release);
            }
        })
    };
    let start = Instant::now();
    for trip in 0..trips {
        ball.store(2 * trip + 1, Release);
        while ball.load(Acquire) != 2 * trip + 2 {
            std::hint::black_box(());
        }
    }
    let elapsed = start.elapsed();
    other.join().unwrap();
    elapsed
}

/// roving: core 0 posts a closure to core 1, which posts one back.
pub fn roving(trips: u64) -> Duration {
    let end = Arc::new(OnceLock::new());
    let start = {
        let end = end.clone();
        on_roving(move || {
            let start = Instant::now();
            serve(trips, end);
            start
        })
    };
    end.get().expect("the rally ended").duration_since(start)
}

/// On core 0: send the ball to core 1, which sends it back here.
fn serve(left: u64, end: Arc<OnceLock<Instant>>) {
    if left == 0 {
        end.set(Instant::now()).expect("one end");
        return;
    }
    roving::post(1, move || roving::post(0, move || serve(left - 1, end)).expect("post to core 0"))
        .expect("post to core 1");
}

/// crossbeam-channel: two unbounded channels, one each way.
pub fn crossbeam(trips: u64) -> Duration {
    between_threads(
        trips,
        crossbeam_channel::unbounded,
        |to, ball| to.send(ball).unwrap(),
        |from| from.recv().ok(),
    )
}

/// std's mpsc: two channels, one each way.
pub fn std_mpsc(trips: u64) -> Duration {
    between_threads(trips, mpsc::channel, |to, ball| to.send(ball).unwrap(), |from| from.recv().ok())
}

/// A rally over two channels made by `channel`, one each way, between this
/// thread and a new one.
fn between_threads<S: Send + 'static, R: Send + 'static>(
    trips: u64,
    channel: impl Fn() -> (S, R),
    send: fn(&S, u64),
    receive: fn(&R) -> Option<u64>,
) -> Duration {
    let (there, arrive) = channel();
    let (back, returned) = channel();
    let other = thread::spawn(move || {
        while let Some(ball) = receive(&arrive) {
            send(&back, ball);
        }
    });
    let start = Instant::now();
    for trip in 0..trips {
        send(&there, trip);
        receive(&returned).expect("the ball came back");
    }
    let elapsed = start.elapsed();
    drop(there);
    other.join().unwrap();
    elapsed
}

/// tokio: two tasks on a two-worker runtime, unbounded channels each way.
pub fn tokio(trips: u64) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async move {
        let (there, mut arrive) = tokio::sync::mpsc::unbounded_channel::<u64>();
        let (back, mut returned) = tokio::sync::mpsc::unbounded_channel::<u64>();
        let other = tokio::spawn(async move {
            while let Some(ball) = arrive.recv().await {
                back.send(ball).unwrap();
            }
        });
        let rally = tokio::spawn(async move {
            let start = Instant::now();
            for trip in 0..trips {
                there.send(trip).unwrap();
                returned.recv().await.unwrap();
            }
            start.elapsed()
        });
        let elapsed = rally.await.unwrap();
        other.await.unwrap();
        elapsed
    })
}
