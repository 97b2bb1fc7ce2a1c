//! Time slicing on the host: strands that never yield share their cores,
//! with their stacks and vector registers intact (`roving::preempt`).
#![cfg(feature = "std")]

extern crate alloc;

#[path = "common/preempt_cases.rs"]
mod preempt_cases;
mod support;

use roving::platform::host::Machine;
use roving::{Config, Pool, PoolError, strand};
use std::time::{Duration, Instant};
use support::{with_turn, with_watchdog};

const SLICE: Duration = Duration::from_millis(1);

/// Runs `main` on a machine of `cores` cores, with a watchdog, taking
/// turns with other tests that load every CPU.
fn on_machine<R: Send>(cores: usize, what: &'static str, main: impl FnOnce() -> R + Send) -> R {
    with_turn(|| {
        with_watchdog(Duration::from_secs(120), what, || Machine::new(cores).unwrap().run(main).unwrap())
    })
}

/// Runs `main` as the root strand of a pool of `cores` cores with a 1 ms
/// time slice; `None` where this host cannot preempt (under a sanitizer).
fn on_preempting_pool<R: Send>(cores: usize, main: impl FnOnce(&Pool) -> R + Send) -> Option<R> {
    on_sliced_pool(cores, SLICE, main)
}

/// As [`on_preempting_pool`], with slices of `slice`.
fn on_sliced_pool<R: Send>(cores: usize, slice: Duration, main: impl FnOnce(&Pool) -> R + Send) -> Option<R> {
    on_machine(cores, "a preempting pool", move || match Pool::with_config(Config::new().time_slice(slice)) {
        Ok(pool) => Some(pool.run(|| main(&pool)).unwrap()),
        Err(PoolError::CannotPreempt) => None,
        Err(other) => panic!("{other}"),
    })
}

#[test]
fn spinners_share_their_cores_and_a_ping_pong_pair_keeps_moving() {
    const CORES: usize = 2;
    const SPINNERS: usize = 8 * CORES;
    const ROUND_TRIPS: u32 = 200;
    let Some(sharing) = on_preempting_pool(CORES, |pool| {
        preempt_cases::spinners_beside_a_pair(pool, SPINNERS, ROUND_TRIPS, Duration::from_millis(200))
    }) else {
        eprintln!("this host cannot preempt (a sanitizer build): skipped");
        return;
    };
    let total: u64 = sharing.rounds.iter().sum();
    eprintln!(
        "ping-pong: {ROUND_TRIPS} round trips in {:?} beside {SPINNERS} spinners; {} preemptions; \
         spinner shares of the rounds: {}",
        sharing.pair_time,
        sharing.preempted,
        sharing
            .rounds
            .iter()
            .map(|&r| format!("{:.1}%", r as f64 * 100.0 / total as f64))
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert!(sharing.pair_time < Duration::from_secs(20), "the pair took {:?}", sharing.pair_time);
    assert!(sharing.preempted > 0, "no strand was preempted");
    // None may starve: each gets at least a quarter of a fair share.
    assert!(sharing.worst_share() > 0.25, "a spinner got {:.2} of a fair share", sharing.worst_share());
}

#[test]
fn a_cooperative_pool_never_preempts() {
    let preempted = on_machine(2, "a cooperative pool", || {
        let pool = Pool::new().unwrap();
        pool.run(|| {
            // Each spins 50 ms by the clock: cooperatively, nothing else
            // could run on its core to stop it.
            let spinners: Vec<_> = (0..2)
                .map(|_| {
                    strand::spawn(|| {
                        let start = Instant::now();
                        while start.elapsed() < Duration::from_millis(50) {
                            std::hint::spin_loop();
                        }
                    })
                    .unwrap()
                })
                .collect();
            spinners.into_iter().for_each(|s| s.join().unwrap());
        })
        .unwrap();
        pool.stats().iter().map(|s| s.preempted).sum::<u64>()
    });
    assert_eq!(preempted, 0);
}

#[test]
fn a_time_slice_out_of_range_is_refused() {
    for slice in [Duration::from_micros(10), Duration::from_secs(11)] {
        let result =
            Machine::new(1).unwrap().run(|| Pool::with_config(Config::new().time_slice(slice)).err());
        assert_eq!(result.unwrap(), Some(PoolError::TimeSliceOutOfRange { slice }));
    }
}

#[test]
fn stacks_survive_preemption_on_shared_fibres() {
    // More strands than fibres: most share a fibre and are copied off it
    // and back when another one of its strands is preempted in.
    const STRANDS: u64 = 150;
    let Some((checks, preempted)) = on_preempting_pool(2, |pool| {
        preempt_cases::stacks_on_shared_fibres(pool, STRANDS, Duration::from_millis(1500))
    }) else {
        return;
    };
    eprintln!("{STRANDS} strands, {preempted} preemptions, every stack intact");
    assert!(preempted > 100, "only {preempted} preemptions");
    assert!(checks.iter().sum::<u64>() > 0, "no stack was checked");
}

#[test]
fn vector_registers_survive_preemption() {
    const STRANDS: u64 = 8;
    let Some((kept, preempted)) =
        on_preempting_pool(2, |pool| preempt_cases::vector_registers(pool, STRANDS, 30_000_000))
    else {
        return;
    };
    eprintln!("{STRANDS} strands checking every vector register: {preempted} preemptions");
    assert!(preempted > 10, "only {preempted} preemptions");
    assert!(kept.iter().all(|&k| k == preempt_cases::VECTOR_REGISTERS), "registers lost: {kept:?}");
}

#[test]
fn a_cancel_stops_strands_that_compute() {
    // 10 ms slices: the checker's grace to reach its next checkpoint is a
    // slice of the clock, which an oversubscribed host may not give it.
    let outcome = on_sliced_pool(2, Duration::from_millis(10), |_| {
        preempt_cases::cancel_computing(6, Duration::from_millis(30))
    });
    let Some(cancelled) = outcome else { return };
    eprintln!("6 spinners, a checker and a shielded strand cancelled: all ended in {:?}", cancelled.took);
    assert_eq!(cancelled.stopped, 6, "spinners not reported stopped by their cancel");
    assert!(cancelled.checkpoint_returned, "the checker did not return Interrupted from checkpoint");
    assert!(cancelled.shield_held, "the shielded strand was stopped inside its shield, or not at all");
    assert!(cancelled.took < Duration::from_secs(10), "the cancels took {:?}", cancelled.took);
}

#[test]
fn destroy_returns_with_strands_that_spin_forever() {
    let destroyed = on_machine(3, "destroying a spinning pool", || {
        let main = Pool::with_cores(&[0], Config::new()).unwrap();
        main.run(|| match Pool::with_cores(&[1, 2], Config::new().time_slice(SLICE)) {
            Ok(_) => Some(preempt_cases::destroy_spinning(&[1, 2], SLICE)),
            Err(PoolError::CannotPreempt) => None,
            Err(other) => panic!("{other}"),
        })
        .unwrap()
    });
    let Some(destroyed) = destroyed else { return };
    eprintln!("destroy of a pool of {} spinning strands took {:?}", destroyed.strands, destroyed.took);
    assert_eq!(destroyed.stopped, destroyed.strands, "strands not reported stopped");
    assert!(destroyed.took < Duration::from_secs(10), "destroy took {:?}", destroyed.took);
}

#[test]
fn a_domain_with_a_time_slice_tears_down_past_strands_that_spin_forever() {
    use roving::domain::{Domain, DomainError};
    let outcome = on_machine(3, "tearing down a spinning domain", || {
        let domain = match Domain::start_with_config(&[1, 2], Config::new().time_slice(SLICE), || {
            for _ in 0..8 {
                drop(strand::spawn(preempt_cases::spin_forever).unwrap());
            }
            strand::sleep(Duration::from_millis(20)).unwrap();
            panic!("the root fails beside 8 spinners")
        }) {
            Ok(domain) => domain,
            Err(DomainError::Pool(PoolError::CannotPreempt)) => return None,
            Err(other) => panic!("{other:?}"),
        };
        let start = Instant::now();
        let joined = domain.join();
        Some((joined.map(|_| ()), start.elapsed(), roving::free_cores()))
    });
    let Some((joined, took, free)) = outcome else { return };
    eprintln!("a domain with 8 spinners torn down in {took:?}");
    match joined {
        Err(DomainError::Failed(failure)) => {
            assert_eq!(failure.message(), "the root fails beside 8 spinners");
            assert_eq!(failure.others(), 0, "the spinners' stops were passed up as failures");
        }
        other => panic!("the domain should have failed with its root's panic, got {other:?}"),
    }
    assert_eq!(free, vec![0, 1, 2], "the domain gave its cores back");
}

/// Stamps the wake and signals the waiting strand (a strand stands in for
/// an interrupt handler on the host).
fn stamp_and_wake() {
    preempt_cases::FIRED_AT.store(roving::platform::ticks(), std::sync::atomic::Ordering::SeqCst);
    preempt_cases::WAKE.signal();
}

#[test]
fn a_woken_high_priority_strand_preempts_at_once() {
    use roving::strand::Priority;
    const LONG_SLICE: Duration = Duration::from_millis(20);
    let outcome = on_sliced_pool(2, LONG_SLICE, |_| {
        let gap = Duration::from_millis(1);
        let high = preempt_cases::wake_latencies(Priority::High, 4, 20, gap, stamp_and_wake);
        let normal = preempt_cases::wake_latencies(Priority::Normal, 4, 20, gap, stamp_and_wake);
        (high, normal)
    });
    let Some((high, normal)) = outcome else { return };
    let (high, normal) = (preempt_cases::median(&high), preempt_cases::median(&normal));
    let slice = LONG_SLICE.as_nanos() as u64;
    eprintln!(
        "beside 4 spinners on 2 cores with 20 ms slices, a woken strand ran after a median of {:.3} ms at High, {:.3} ms at Normal",
        high as f64 / 1e6,
        normal as f64 / 1e6
    );
    // At once, not at the slice's end; on a busy host the ticker thread
    // that stands in for the interrupt may itself wait for a CPU (3-7 ms
    // medians with 4 busy threads on 2 CPUs).
    assert!(high < slice / 2, "a High strand waited a median {high} ns of a {slice} ns slice");
    assert!(high < normal / 2, "High ({high} ns) was not woken well before Normal ({normal} ns)");
}

#[test]
fn every_priority_level_gets_turns() {
    let Some(rounds) = on_preempting_pool(2, |_| preempt_cases::levels_share(2, Duration::from_millis(300)))
    else {
        return;
    };
    let total: u64 = rounds.iter().sum();
    let share = |level: usize| rounds[level] as f64 / total as f64;
    eprintln!(
        "2 spinners per level on 2 cores: Low {:.1}%, Normal {:.1}%, High {:.1}% of the rounds",
        share(0) * 100.0,
        share(1) * 100.0,
        share(2) * 100.0
    );
    assert!(share(0) > 0.03, "Low starved: {rounds:?}");
    assert!(
        rounds[2] > rounds[1] && rounds[1] > rounds[0],
        "the levels were not served by weight: {rounds:?}"
    );
}

/// While a strand holds preemption off, no tick takes its core, however
/// long it computes; once it lets go, the next tick does. (Without the
/// hold raising the strand's deferral count, the spinner runs within the
/// first slices: this is the count's test against the tick.)
#[test]
fn a_strand_holding_preemption_off_keeps_its_core() {
    let Some(held) = on_preempting_pool(2, |pool| preempt_cases::held_off(pool, SLICE)) else { return };
    eprintln!(
        "held 50 slices: a spinner on the same core ran {} rounds then, and {:?} after",
        held.rounds_while_held, held.ran_after
    );
    assert_eq!(held.rounds_while_held, 0, "a tick preempted a strand holding preemption off");
    assert!(held.ran_after.is_some(), "the spinner never ran after the hold ended");
}
