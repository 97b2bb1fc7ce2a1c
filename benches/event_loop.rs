//! The cost of an event-loop operation against the usual alternative, a
//! lock per object: one `std::sync::Mutex`. Each operation
//! adds to a counter in the object's state.

use roving::event_loop::Loop;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The object's state: what every operation touches.
#[derive(Default)]
struct Counter {
    total: u64,
}

fn add(counter: &mut Counter, _: &Loop<Counter>) {
    counter.total += 1;
}

/// `threads` threads each run `ops` times `op` on one shared object; the
/// time from the start barrier to the last thread's end.
fn race<S: Send + Sync + 'static>(threads: usize, ops: u64, shared: Arc<S>, op: fn(&S)) -> Duration {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (shared, barrier) = (shared.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                for _ in 0..ops {
                    op(&shared);
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for worker in workers {
        worker.join().unwrap();
    }
    start.elapsed()
}

/// A borrowed-caller loop: every operation is deferred; whoever finds the
/// loop idle drains it.
pub fn roving_loop(threads: usize, ops: u64) -> Duration {
    let object = Arc::new(Loop::new(Counter::default()));
    let elapsed = race(threads, ops, object.clone(), |object| object.defer(add).expect("the loop runs"));
    let (tx, rx) = std::sync::mpsc::channel();
    object.defer(move |counter: &mut Counter, _: &Loop<Counter>| tx.send(counter.total).unwrap()).unwrap();
    assert_eq!(rx.recv().unwrap(), threads as u64 * ops);
    elapsed
}

/// One mutex per object, locked for each operation.
pub fn mutex(threads: usize, ops: u64) -> Duration {
    let object = Arc::new(Mutex::new(Counter::default()));
    let elapsed = race(threads, ops, object.clone(), |object| object.lock().unwrap().total += 1);
    assert_eq!(object.lock().unwrap().total, threads as u64 * ops);
    elapsed
}
