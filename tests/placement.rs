//! Where spawned work runs: the spawning core's LIFO slot by default,
//! taken by an idle core only once it has sat there; offered at once with
//! `Config::offer_spawns`.
#![cfg(feature = "std")]

mod support;

use roving::platform::host::Machine;
use roving::platform::{self};
use roving::{Config, Pool, strand};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};
use support::with_watchdog;

const LIMIT: Duration = Duration::from_secs(60);

/// How long a test waits for something that should happen at once.
const PATIENCE: Duration = Duration::from_secs(10);

fn on_machine<R: Send>(cores: usize, f: impl FnOnce() -> R + Send) -> R {
    with_watchdog(LIMIT, "a placement test", || Machine::new(cores).unwrap().run(f).unwrap())
}

/// Spins until `pool`'s core `core` has counted `sleeps` sleeps.
fn wait_until_asleep(pool: &Pool, core: usize, sleeps: u64) {
    let start = Instant::now();
    while pool.stats()[core].sleeps < sleeps {
        assert!(start.elapsed() < PATIENCE, "core {core} never fell asleep");
        std::hint::spin_loop();
    }
}

/// A strand that spawns a child and joins it runs the child on its own
/// core and wakes nobody, although the other core is asleep and would
/// have been offered it.
#[test]
fn a_joined_child_runs_on_its_parents_core_without_waking_anyone() {
    on_machine(2, || {
        let pool = Pool::with_config(Config::new().cores(2)).unwrap();
        let pool_ref = &pool;
        pool.run(|| {
            // Nothing wakes it once asleep: no timer is armed, and nothing
            // is posted to it.
            wait_until_asleep(pool_ref, 1, 1);
            let before = pool_ref.stats();
            let here = platform::current_core().unwrap();
            let parent = strand::spawn(move || {
                let parent_core = platform::current_core().unwrap();
                (0..100)
                    .filter(|_| {
                        let child = strand::spawn(|| platform::current_core().unwrap()).unwrap();
                        child.join().unwrap() != parent_core
                    })
                    .count()
            })
            .unwrap();
            assert_eq!(parent.join().unwrap(), 0, "children ran away from their parent's core");
            let after = pool_ref.stats();
            assert_eq!(after[here].wakeups, before[here].wakeups, "a spawn woke a core: {after:?}");
            assert_eq!(after[here].offered, before[here].offered, "a spawn was offered: {after:?}");
        })
        .unwrap();
    });
}

/// A spawner that goes on computing does not keep its child from an idle
/// core that is awake: it takes the child once it has seen it sit in the
/// spawner's slot. The idle core is poked (a closure posted to it) until
/// then, so that it is searching, not asleep, when it looks.
#[test]
fn an_awake_idle_core_takes_a_child_its_spawner_left_waiting() {
    on_machine(2, || {
        let pool = Pool::with_config(Config::new().cores(2)).unwrap();
        pool.run(|| {
            let ran_on = Arc::new(AtomicUsize::new(usize::MAX));
            let seen = ran_on.clone();
            roving::spawn_task(move || seen.store(platform::current_core().unwrap(), SeqCst)).unwrap();
            let start = Instant::now();
            let mut poked = Instant::now() - PATIENCE;
            while ran_on.load(SeqCst) == usize::MAX {
                assert!(start.elapsed() < PATIENCE, "no idle core took the waiting child");
                if poked.elapsed() > Duration::from_millis(20) {
                    roving::post(1, || {}).unwrap();
                    poked = Instant::now();
                }
                std::hint::spin_loop();
            }
            assert_eq!(ran_on.load(SeqCst), 1);
        })
        .unwrap();
    });
}

/// With `offer_spawns`, a child starts on a sleeping core, woken for it,
/// while its spawner computes.
#[test]
fn offered_spawns_start_on_another_core_at_once() {
    on_machine(2, || {
        let pool = Pool::with_config(Config::new().cores(2).offer_spawns(true)).unwrap();
        let pool_ref = &pool;
        pool.run(|| {
            wait_until_asleep(pool_ref, 1, 1);
            let started = Arc::new(AtomicBool::new(false));
            let flag = started.clone();
            roving::spawn_task(move || {
                assert_eq!(platform::current_core(), Some(1));
                flag.store(true, SeqCst);
            })
            .unwrap();
            let start = Instant::now();
            while !started.load(SeqCst) {
                assert!(start.elapsed() < PATIENCE, "the offered child never started");
                std::hint::spin_loop();
            }
        })
        .unwrap();
        assert!(pool.stats()[0].wakeups >= 1);
    });
}
