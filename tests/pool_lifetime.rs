//! Pools built at run time from free cores: started, given strands from
//! another pool, pinned strands, and destroyed with strands blocked in
//! them; and the bad input of `start` and `destroy`.
#![cfg(feature = "std")]

mod support;

use roving::platform::{self, host::Machine};
use roving::strand::{self, JoinError, SpawnError, WaitError};
use roving::sync::Mutex;
use roving::{Config, DestroyError, Pool, PoolError, RunError, free_cores};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use support::with_watchdog;

/// Runs `main` as the root of a pool of cores 0 and 1 of a 4-core machine,
/// leaving cores 2 and 3 free.
fn with_two_free_cores<R: Send>(main: impl FnOnce(&Pool) -> R + Send) -> R {
    with_watchdog(Duration::from_secs(60), "a pool lifetime test", || {
        Machine::new(4)
            .unwrap()
            .run(|| {
                let home = Pool::with_config(Config::new().cores(2)).unwrap();
                let result = home.run(|| main(&home)).unwrap();
                assert_eq!(free_cores(), vec![0, 1, 2, 3], "every core is free once the pools ended");
                result
            })
            .unwrap()
    })
}

#[test]
fn a_pool_of_free_cores_runs_strands_from_another_pool_and_is_destroyed() {
    with_two_free_cores(|_home| {
        assert_eq!(free_cores(), vec![2, 3]);
        let extra = Pool::with_cores(&[2, 3], Config::new()).unwrap();
        extra.start().unwrap();
        assert_eq!(free_cores(), Vec::<usize>::new());
        // A strand of the home pool spawns into the new one and joins it.
        let ran_on = extra.spawn_strand(|| platform::current_core().unwrap()).unwrap().join().unwrap();
        assert!([2, 3].contains(&ran_on), "ran on core {ran_on}");
        let pinned = extra.spawn_strand_on(3, || platform::current_core().unwrap()).unwrap();
        assert_eq!(pinned.join().unwrap(), 3);
        // Idle, it is not stopped by quiescence: it waits for work.
        strand::sleep(Duration::from_millis(20)).unwrap();
        assert!(!extra.is_stopped());
        // Strands blocked in a sleep, a mutex and a join, in a small tree.
        let lock = Arc::new(Mutex::new(0));
        let guard = lock.lock().unwrap();
        let interrupted = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        for _ in 0..10 {
            let (lock, interrupted) = (lock.clone(), interrupted.clone());
            handles.push(
                extra
                    .spawn_strand(move || {
                        let child = strand::spawn(|| strand::sleep(Duration::from_secs(3600))).unwrap();
                        if lock.lock().is_err() {
                            interrupted.fetch_add(1, SeqCst);
                        }
                        // The join is interrupted, or the child (cancelled
                        // too) has already ended with its sleep interrupted.
                        match child.join() {
                            Err(JoinError::Interrupted(_)) | Ok(Err(WaitError::Interrupted)) => {
                                interrupted.fetch_add(1, SeqCst);
                            }
                            other => panic!("the join should be interrupted, got {other:?}"),
                        }
                    })
                    .unwrap(),
            );
        }
        strand::sleep(Duration::from_millis(20)).unwrap();
        assert_eq!(extra.live_strands(), 20);
        assert_eq!(extra.destroy(), Ok(0));
        assert_eq!(extra.live_strands(), 0);
        assert!(extra.is_stopped());
        assert_eq!(free_cores(), vec![2, 3], "its cores went back to the free set");
        assert_eq!(
            interrupted.load(SeqCst),
            20,
            "each strand saw its mutex wait and its child's sleep interrupted"
        );
        for handle in handles {
            // They ended cancelled (their bodies returned), not failed.
            assert!(handle.join().is_ok());
        }
        drop(guard);
        assert!(matches!(extra.spawn_strand(|| ()), Err(SpawnError::Stopped(_))));
    });
}

#[test]
fn start_and_destroy_refuse_bad_input_with_typed_errors() {
    with_two_free_cores(|home| {
        assert_eq!(Pool::with_cores(&[], Config::new()).err(), Some(PoolError::NoCores));
        assert_eq!(
            Pool::with_cores(&[2, 7], Config::new()).err(),
            Some(PoolError::NoSuchCore { core: 7, available: 4 })
        );
        assert_eq!(home.destroy(), Err(DestroyError::RunsMain), "the pool running main");
        let taken = Pool::with_cores(&[1, 2], Config::new()).unwrap();
        assert_eq!(taken.start(), Err(RunError::CoreTaken { core: 1 }));
        assert_eq!(free_cores(), vec![2, 3], "a refused start holds nothing");
        let extra = Pool::with_cores(&[2], Config::new()).unwrap();
        assert_eq!(extra.destroy(), Err(DestroyError::NotRunning));
        extra.start().unwrap();
        assert_eq!(extra.start(), Err(RunError::AlreadyRan));
        let error = extra.spawn_strand_on(3, || ()).unwrap_err();
        assert!(matches!(error, SpawnError::NotAMember { core: 3, .. }), "{error:?}");
        // From one of its own cores, destroy would have to leave itself.
        let e = extra.clone();
        let from_inside = extra.spawn_strand(move || e.destroy()).unwrap().join().unwrap();
        assert_eq!(from_inside, Err(DestroyError::FromInside));
        assert_eq!(extra.destroy(), Ok(0));
        assert_eq!(extra.destroy(), Err(DestroyError::NotRunning));
        // Destroying from inside a cancelled strand still completes.
        let other = Pool::with_cores(&[3], Config::new()).unwrap();
        other.start().unwrap();
        let o = other.clone();
        assert_eq!(strand::spawn(move || o.destroy()).unwrap().join().unwrap(), Ok(0));
        assert_eq!(strand::sleep(Duration::ZERO), Ok::<(), WaitError>(()));
    });
}

#[test]
fn the_shared_start_and_destroy_case_passes_on_the_host() {
    #[path = "common/resize_cases.rs"]
    mod resize_cases;
    let (ran_on, free) = with_watchdog(Duration::from_secs(60), "start and destroy", || {
        Machine::new(4)
            .unwrap()
            .run(|| {
                let home = Pool::with_config(Config::new().cores(1)).unwrap();
                home.run(|| resize_cases::start_and_destroy(4)).unwrap()
            })
            .unwrap()
    });
    assert!(!ran_on[0]);
    assert_eq!(free, vec![1, 2, 3]);
}

#[test]
fn a_core_moves_from_one_running_pool_to_another() {
    with_two_free_cores(|home| {
        let extra = Pool::with_cores(&[2], Config::new()).unwrap();
        extra.start().unwrap();
        // Core 3 is free: the home pool takes it, then lets it go to the other.
        home.add_core(3).unwrap();
        assert_eq!(extra.add_core(3), Err(roving::ResizeError::CoreNotFree { core: 3 }));
        let busy = home.spawn_strand_on(3, || platform::current_core().unwrap()).unwrap();
        assert_eq!(busy.join().unwrap(), 3);
        home.remove_core(3).unwrap();
        extra.add_core(3).unwrap();
        assert_eq!(extra.cores(), vec![2, 3]);
        assert_eq!(home.cores(), vec![0, 1]);
        let ran_on = extra.spawn_strand_on(3, || platform::current_core().unwrap()).unwrap().join().unwrap();
        assert_eq!(ran_on, 3);
        extra.destroy().unwrap();
    });
}
