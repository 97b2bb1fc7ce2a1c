//! Resizing a running pool on the host: 4 cores, then 1, then 3, while
//! 100,000 tasks and 1,000 strands flow through it (the case is in
//! `tests/common/resize_cases.rs`, shared with the QEMU kernel `resize`);
//! and the resize calls' bad input.
#![cfg(feature = "std")]

#[path = "common/resize_cases.rs"]
mod resize_cases;
mod support;

use roving::platform::host::Machine;
use roving::{Config, Pool, PostError, ResizeError, free_cores};
use std::time::Duration;
use support::{run_pool, with_watchdog};

#[test]
fn resizing_under_load_runs_every_task_and_strand_exactly_once() {
    let outcome = run_pool(4, resize_cases::resize_under_load).unwrap();
    resize_cases::check(&outcome, 4);
    eprintln!("posts to cores outside the pool, spawned instead: {}", outcome.refused);
}

#[test]
fn bad_resizes_get_typed_errors_and_change_nothing() {
    let outcome = run_pool(4, |pool| {
        assert_eq!(pool.add_core(1), Err(ResizeError::AlreadyMember { core: 1 }));
        assert_eq!(pool.add_core(9), Err(ResizeError::NoSuchCore { core: 9, cores: 4 }));
        assert_eq!(pool.remove_core(0), Err(ResizeError::RunsMain { core: 0 }));
        assert_eq!(pool.resize(0), Err(ResizeError::LastCore));
        assert_eq!(pool.resize(5), Err(ResizeError::NotEnoughFreeCores { wanted: 1, free: 0 }));
        pool.remove_core(3).unwrap();
        assert_eq!(pool.remove_core(3), Err(ResizeError::NotAMember { core: 3 }));
        let error = roving::post(3, || ()).unwrap_err();
        assert!(matches!(error, PostError::NotAMember { core: 3, .. }), "{error:?}");
        assert_eq!(free_cores(), vec![3]);
        pool.resize(1).unwrap();
        assert_eq!(pool.remove_core(0), Err(ResizeError::RunsMain { core: 0 }));
        assert_eq!(pool.cores(), vec![0]);
        pool.add_core(2).unwrap();
        assert_eq!(pool.cores(), vec![0, 2]);
        // A task on core 2 may not remove core 2: it could never leave.
        let (tx, rx) = std::sync::mpsc::channel();
        let p = pool.clone();
        roving::post(2, move || tx.send(p.remove_core(2)).unwrap()).unwrap();
        loop {
            if let Ok(result) = rx.try_recv() {
                break result;
            }
            roving::strand::sleep(Duration::from_millis(1)).unwrap();
        }
    });
    assert_eq!(outcome.unwrap(), Err(ResizeError::OnThatCore { core: 2 }));
}

#[test]
fn a_core_held_by_another_pool_is_not_free() {
    with_watchdog(Duration::from_secs(60), "two pools", || {
        Machine::new(4)
            .unwrap()
            .run(|| {
                let small = Pool::with_config(Config::new().cores(2)).unwrap();
                assert_eq!(small.add_core(2), Err(ResizeError::NotRunning));
                small
                    .run(|| {
                        // Cores 2 and 3 are free; the pool takes one.
                        assert_eq!(free_cores(), vec![2, 3]);
                        small.add_core(3).unwrap();
                        assert_eq!(free_cores(), vec![2]);
                        assert_eq!(small.cores(), vec![0, 1, 3]);
                        small.resize(4).unwrap();
                        assert_eq!(free_cores(), Vec::<usize>::new());
                    })
                    .unwrap();
                // Stopped: every core is free again.
                assert_eq!(free_cores(), vec![0, 1, 2, 3]);
            })
            .unwrap()
    });
}

#[test]
fn a_task_that_keeps_posting_to_its_core_does_not_hold_it_in_the_pool() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    fn repost(runs: Arc<AtomicUsize>, refused: Arc<AtomicUsize>) {
        runs.fetch_add(1, SeqCst);
        let again = (runs.clone(), refused.clone());
        if let Err(error) = roving::post(1, move || repost(again.0, again.1)) {
            assert!(matches!(error, PostError::NotAMember { core: 1, .. }), "{error:?}");
            refused.fetch_add(1, SeqCst);
        }
    }
    let (runs, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (r, f) = (runs.clone(), refused.clone());
    run_pool(2, move |pool| {
        pool.post(1, move || repost(r, f)).unwrap();
        while runs.load(SeqCst) < 1_000 {
            roving::strand::yield_now().unwrap();
        }
        pool.remove_core(1).unwrap();
        assert_eq!(pool.cores(), vec![0]);
    })
    .unwrap();
    assert_eq!(refused.load(SeqCst), 1, "the leaving core refused the task's next post once");
}
