//! A strand stopped without unwinding leaves values on its stack that are
//! never dropped; if one is pinned and reachable from elsewhere, `Pin`
//! promises its memory is not reused. A fibre whose only strand was
//! stopped that way is quarantined for good (`src/strand/fibre.rs`), unless
//! the pool opted out with `Config::reuse_stopped_stacks`.
//!
//! One test per binary run at a time (`with_turn`): quarantined fibres are
//! gone for every later pool of the process, so the counts are exact only
//! while no other pool runs.
#![cfg(feature = "std")]

mod support;

use roving::platform::host::Machine;
use roving::sync::Semaphore;
use roving::{Config, Pool, PoolError, strand};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};
use support::{with_turn, with_watchdog};

/// The bytes of the record the stopped strand pins on its stack.
const RECORD: [u8; 64] = [0xa5; 64];
/// Strands that hold a fibre each at once after the stop: more than there
/// are fibres, so every fibre that can be handed out is.
const FILLERS: usize = roving::strand::sizes::FIBRES + 8;

/// What became of the stopped strand's stack.
struct Outcome {
    /// Whether the record pinned on it still holds its bytes after every
    /// other fibre was filled.
    record_kept: bool,
    /// Whether a filler ran on the stopped strand's fibre.
    handed_out: bool,
    /// How many more fibres are quarantined than before.
    quarantined: usize,
}

/// In a sliced pool, a strand pins a record on its stack, publishes its
/// address (as an intrusive list would keep it) and computes until
/// cancelled; the cancel stops it without unwinding. Then `FILLERS`
/// strands each write a large buffer on their stacks while they all hold
/// a fibre. `None` where this host cannot preempt (a sanitizer build).
fn stop_then_fill(config: Config) -> Option<Outcome> {
    with_turn(|| {
        with_watchdog(Duration::from_secs(120), "a stopped strand's stack", || {
            Machine::new(2)
                .unwrap()
                .run(move || match Pool::with_config(config.time_slice(Duration::from_millis(5))) {
                    Ok(pool) => Some(pool.run(fill_after_a_stop).unwrap()),
                    Err(PoolError::CannotPreempt) => None,
                    Err(other) => panic!("{other}"),
                })
                .unwrap()
        })
    })
}

fn fill_after_a_stop() -> Outcome {
    let before = strand::usage();
    let published = Arc::new(AtomicUsize::new(0));
    let record_at = published.clone();
    let computing = strand::spawn(move || {
        let record = pin!(RECORD);
        record_at.store(record.as_ptr() as usize, SeqCst);
        loop {
            std::hint::black_box(&*record);
            std::hint::spin_loop();
        }
    })
    .expect("the computing strand");
    while published.load(SeqCst) == 0 {
        strand::yield_now().expect("a strand yields");
    }
    computing.cancel().expect("the computing strand is running");
    match computing.join() {
        Err(strand::JoinError::Failed(failure)) => {
            assert_eq!(failure.kind(), strand::FailureKind::Interrupted, "{failure}")
        }
        other => panic!("the computing strand was not stopped: {:?}", other.map_err(|e| e.to_string())),
    }
    let address = published.load(SeqCst);
    // The joiner can wake before the stopped strand's core has put its
    // fibre back (just after the strand switches out).
    let deadline = Instant::now() + Duration::from_secs(5);
    while strand::usage().fibres_in_use != before.fibres_in_use && Instant::now() < deadline {
        strand::sleep(Duration::from_millis(1)).expect("a sleep");
    }
    // Every filler holds its fibre until all have written their buffers.
    let gate = Arc::new(Semaphore::new(0));
    let written = Arc::new(AtomicUsize::new(0));
    let on_its_fibre = Arc::new(AtomicUsize::new(0));
    let fillers: Vec<_> = (0..FILLERS)
        .map(|_| {
            let (gate, written, on_its_fibre) = (gate.clone(), written.clone(), on_its_fibre.clone());
            strand::spawn(move || {
                let buffer = std::hint::black_box([0u8; 16 * 1024]);
                if fibre_of(buffer.as_ptr() as usize) == fibre_of(address) {
                    on_its_fibre.fetch_add(1, SeqCst);
                }
                written.fetch_add(1, SeqCst);
                gate.acquire().expect("the gate");
                std::hint::black_box(&buffer);
            })
            .expect("a filler")
        })
        .collect();
    while written.load(SeqCst) < FILLERS {
        strand::sleep(Duration::from_millis(1)).expect("a sleep");
    }
    // SAFETY: the address of a record on a fibre stack, which the static
    // fibre region keeps mapped for the life of the process; read as bytes
    // whatever a filler left there.
    let bytes = unsafe { std::ptr::read_volatile(address as *const [u8; 64]) };
    gate.release(FILLERS).expect("room for every filler's permit");
    for filler in fillers {
        filler.join().expect("a filler");
    }
    Outcome {
        record_kept: bytes == RECORD,
        handed_out: on_its_fibre.load(SeqCst) > 0,
        quarantined: strand::usage().fibres_quarantined - before.fibres_quarantined,
    }
}

/// The index of the fibre whose slot holds `address`.
fn fibre_of(address: usize) -> usize {
    let region = roving::platform::hooks::region();
    (address - region.start) / region.slot_bytes
}

#[test]
fn a_stopped_strands_stack_is_never_handed_out_again() {
    let Some(outcome) = stop_then_fill(Config::new()) else {
        eprintln!("this host cannot preempt (a sanitizer build): skipped");
        return;
    };
    assert_eq!(outcome.quarantined, 1, "the stopped strand's fibre was not quarantined");
    assert!(!outcome.handed_out, "the stopped strand's fibre was handed to another strand");
    assert!(outcome.record_kept, "a record pinned on the stopped strand's stack was overwritten");
    // SAFETY: nothing kept the record's address but this test, which is
    // done with it.
    let released = with_turn(|| unsafe { strand::release_quarantined_fibres() });
    assert!(released >= 1, "the quarantined fibre was not given back");
    assert_eq!(strand::usage().fibres_quarantined, 0, "a released fibre is still counted");
}

#[test]
fn a_pool_that_opts_out_reuses_the_stack() {
    // SAFETY: the stopped strand's record is read here only as bytes, and
    // nothing dereferences it as a value once its strand stopped.
    let config = unsafe { Config::new().reuse_stopped_stacks() };
    let Some(outcome) = stop_then_fill(config) else { return };
    assert_eq!(outcome.quarantined, 0, "a fibre was quarantined in a pool that reuses stopped stacks");
    assert!(outcome.handed_out, "every fibre was filled, yet not the stopped strand's");
}
