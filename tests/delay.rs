//! `time::Delay`, the embedded ecosystem's delay traits: a strand's delay
//! sleeps (its core runs other work meanwhile), a task's is awaited, and a
//! plain task (which cannot be suspended) spins; none is ever short.
#![cfg(feature = "std")]

mod support;

use embedded_hal::delay::DelayNs;
use roving::time::{Delay, Instant};
use roving::{Pool, executor, strand};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use support::on_pool;

#[test]
fn a_strands_delay_leaves_its_core_to_others() {
    // One core: while the strand waits 20 ms, another strand on the same
    // core counts; a delay that held the core would leave the count at 0.
    let (took, counted) = on_pool(1, || {
        let count = Arc::new(AtomicUsize::new(0));
        let counting = count.clone();
        let counter = strand::spawn(move || {
            while counting.load(SeqCst) < 1_000 {
                counting.fetch_add(1, SeqCst);
                strand::yield_now().unwrap();
            }
        })
        .unwrap();
        let started = Instant::now();
        Delay.delay_ms(20);
        let took = started.elapsed();
        let counted = count.load(SeqCst);
        counter.join().unwrap();
        (took, counted)
    });
    assert!(took >= Duration::from_millis(20), "the delay was short: {took:?}");
    assert!(counted > 0, "the core ran nothing else during the delay");
}

#[test]
fn every_unit_waits_at_least_as_long_as_asked() {
    let took = on_pool(2, || {
        let mut took = Vec::new();
        for unit in 0..3 {
            let started = Instant::now();
            match unit {
                0 => Delay.delay_ns(1_500_000),
                1 => Delay.delay_us(1_500),
                _ => Delay.delay_ms(2),
            }
            took.push(started.elapsed());
        }
        took
    });
    let asked = [Duration::from_micros(1_500), Duration::from_micros(1_500), Duration::from_millis(2)];
    for (asked, took) in asked.into_iter().zip(took) {
        assert!(took >= asked, "asked {asked:?}, waited {took:?}");
    }
}

#[test]
fn a_tasks_delay_is_awaited() {
    let took = on_pool(2, || {
        let task = executor::spawn_async(async {
            let started = Instant::now();
            embedded_hal_async::delay::DelayNs::delay_us(&mut Delay, 3_000).await;
            started.elapsed()
        })
        .unwrap();
        task.join().unwrap()
    });
    assert!(took >= Duration::from_millis(3), "{took:?}");
}

#[test]
fn a_plain_tasks_delay_spins_for_the_time_asked() {
    let took = on_pool(2, || {
        let pool = Pool::current().unwrap();
        let future = pool
            .future_on(1, || {
                let started = Instant::now();
                Delay.delay_us(2_000);
                started.elapsed()
            })
            .unwrap();
        future.wait().unwrap()
    });
    assert!(took >= Duration::from_millis(2), "{took:?}");
}
