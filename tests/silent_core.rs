//! The watch for silent cores on the host: a core that computes for long
//! with its interrupts (the host's tick signal) enabled answers every
//! ping and is never taken out; the bound is checked. The take-out itself
//! runs on bare metal (`faults.case=silent-core`), where a core that
//! answers again parks for good; a host thread cannot.
#![cfg(all(feature = "std", target_arch = "x86_64", target_os = "linux"))]

mod support;

use roving::platform::host::Machine;
use roving::{Config, Pool, PoolError};
use std::time::{Duration, Instant};

/// A pool of `cores` that watches for silent cores with `bound`, running
/// `main`; returns what it reported.
fn watched(cores: usize, bound: Duration, main: impl FnOnce() + Send) -> Vec<roving::SilentCore> {
    support::with_turn(|| {
        support::with_watchdog(Duration::from_secs(60), "a silent-core test", || {
            Machine::new(cores)
                .unwrap()
                .run(|| {
                    let pool = Pool::with_config(Config::new().silent_core_after(Some(bound))).unwrap();
                    pool.run(main).unwrap();
                    pool.silent_cores()
                })
                .unwrap()
        })
    })
}

#[test]
fn a_core_that_computes_answers_its_pings_and_stays() {
    let reported = watched(2, Duration::from_millis(20), || {
        let computing = roving::strand::spawn(|| {
            // Far past the bound plus two scans, without a call into the
            // pool: only the pings' answers say this core is alive.
            let start = Instant::now();
            let mut sum = 0u64;
            while start.elapsed() < Duration::from_millis(300) {
                sum = std::hint::black_box(sum.wrapping_mul(31) ^ 7);
            }
            sum
        })
        .unwrap();
        computing.join().unwrap();
    });
    assert!(reported.is_empty(), "a computing core was taken for silent: {reported:?}");
}

#[test]
fn the_bound_is_checked() {
    let refused = |bound| {
        support::with_turn(|| {
            Machine::new(2)
                .unwrap()
                .run(|| {
                    Pool::with_config(Config::new().silent_core_after(Some(bound))).map(|_| ()).unwrap_err()
                })
                .unwrap()
        })
    };
    let error = refused(Duration::from_millis(1));
    assert_eq!(error, PoolError::SilentCoreBoundOutOfRange { bound: Duration::from_millis(1) });
    assert!(error.to_string().contains("between 20ms and 3600s"), "{error}");
    assert_eq!(Config::DEFAULT_SILENT_CORE_AFTER, None, "the host watches only when asked");
}
