//! Pools on the host: what runs where, quiescence, shutdown, and bad input.
#![cfg(feature = "std")]

mod support;

use roving::platform::host::Machine;
use roving::platform::{self, StartCoreError};
use roving::{Config, Mailboxes, Pool, PoolError, PostError, RunError};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use support::with_watchdog;

const LIMIT: Duration = Duration::from_secs(60);

fn on_machine<R: Send>(cores: usize, f: impl FnOnce() -> R + Send) -> R {
    with_watchdog(LIMIT, "a pool test", || Machine::new(cores).unwrap().run(f).unwrap())
}

#[test]
fn post_runs_on_the_core_it_names() {
    let wrong = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let (w, r) = (wrong.clone(), ran.clone());
    let pool = on_machine(4, move || {
        let pool = Pool::new().unwrap();
        pool.run(|| {
            for round in 0..100 {
                let target = round % 4;
                let (w, r) = (w.clone(), r.clone());
                roving::post(target, move || {
                    if platform::current_core() != Some(target) {
                        w.fetch_add(1, SeqCst);
                    }
                    r.fetch_add(1, SeqCst);
                })
                .unwrap();
            }
        })
        .unwrap();
        pool
    });
    assert_eq!(ran.load(SeqCst), 100);
    assert_eq!(wrong.load(SeqCst), 0, "a posted closure ran on another core");
    let stats = pool.stats();
    // The 100 closures, and the one turn of `main`'s strand (its fibre's task).
    assert_eq!(stats.iter().map(|s| s.tasks_run).sum::<u64>(), 101);
    assert_eq!(stats[0].sent, 100);
    assert_eq!(stats.iter().map(|s| s.discarded).sum::<u64>(), 0, "a quiescent stop discards nothing");
}

#[test]
fn each_sender_is_served_in_order() {
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let o = order.clone();
    on_machine(2, move || {
        Pool::new()
            .unwrap()
            .run(|| {
                for i in 0..1000 {
                    let o = o.clone();
                    roving::post(1, move || o.lock().unwrap().push(i)).unwrap();
                }
            })
            .unwrap();
    });
    assert_eq!(*order.lock().unwrap(), (0..1000).collect::<Vec<_>>());
}

/// Three senders post to one core over a ring mesh (one link per core):
/// the cores between forward, and each sender's tasks still run in order.
#[test]
fn the_mesh_forwards_and_keeps_each_senders_order() {
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = got.clone();
    let stats = on_machine(4, move || {
        let pool = Pool::with_config(Config::new().mailboxes(Mailboxes::Mesh { links: 1 })).unwrap();
        pool.run(|| {
            for sender in [0, 1, 3] {
                let g = g.clone();
                roving::post(sender, move || {
                    for i in 0..1000 {
                        let g = g.clone();
                        roving::post(2, move || g.lock().unwrap().push((sender, i))).unwrap();
                    }
                })
                .unwrap();
            }
        })
        .unwrap();
        pool.stats()
    });
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 3000, "every task ran once");
    for sender in [0, 1, 3] {
        let mine: Vec<_> = got.iter().filter(|(from, _)| *from == sender).map(|&(_, i)| i).collect();
        assert_eq!(mine, (0..1000).collect::<Vec<_>>(), "core {sender}'s tasks in order");
    }
    // Core 0's tasks pass core 1; core 3's pass cores 0 and 1: forwarded
    // by those cores, or carried past them while they slept (which no
    // counter sees). Either way they reached core 2 through the mesh.
    let forwarded: u64 = stats.iter().map(|s| s.forwarded).sum();
    assert!(forwarded <= 3000, "forwarded: {stats:?}");
    assert!(stats[2].received >= 3000, "core 2 received its tasks through the mesh: {stats:?}");
}

/// A binary tree of tasks `depth` levels deep, spawned from one task, each
/// doing `work` before it spawns its two children; counts them in `count`.
fn fan_out(depth: u32, count: Arc<AtomicUsize>, work: fn()) {
    count.fetch_add(1, SeqCst);
    if depth > 0 {
        for _ in 0..2 {
            let count = count.clone();
            roving::spawn_task(move || {
                work();
                fan_out(depth - 1, count, work)
            })
            .unwrap();
        }
    }
}

/// Recursive spawning from one task: the other cores must steal to help.
#[test]
fn spawned_work_spreads_by_stealing() {
    // A little work per task, so the tree outlives one core's patience.
    let work = || _ = std::hint::black_box((0..2000).sum::<u64>());
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let pool = on_machine(4, move || {
        let pool = Pool::new().unwrap();
        pool.run(|| fan_out(15, c, work)).unwrap();
        pool
    });
    assert_eq!(count.load(SeqCst), (1 << 16) - 1);
    let stats = pool.stats();
    let stolen: u64 = stats.iter().map(|s| s.stolen).sum();
    let busy_cores = stats.iter().filter(|s| s.tasks_run > 0).count();
    assert!(stolen > 0 && busy_cores > 1, "no stealing happened: {stats:?}");
}

/// Idle cores are counted in groups of 16, and a busy core reads only its
/// own group's count (and whether any core is sleepy or asleep) before it
/// offers work: the cores of every group must still get work. The sleep
/// figures of `CoreStats` must add up.
#[test]
fn spawned_work_reaches_every_group_of_idle_cores() {
    const CORES: usize = 40;
    // 10 µs each, a third of a second of CPU in all, so that every group's
    // threads get the CPU meanwhile.
    let work = || {
        let until = std::time::Instant::now() + std::time::Duration::from_micros(10);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    };
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let pool = on_machine(CORES, move || {
        let pool = Pool::new().unwrap();
        pool.run(|| fan_out(14, c, work)).unwrap();
        pool
    });
    assert_eq!(count.load(SeqCst), (1 << 15) - 1);
    let stats = pool.stats();
    let busy_groups: std::collections::BTreeSet<usize> =
        stats.iter().enumerate().filter(|(_, s)| s.tasks_run > 0).map(|(core, _)| core / 16).collect();
    assert_eq!(busy_groups.len(), CORES.div_ceil(16), "groups that ran tasks: {busy_groups:?}");
    for (core, s) in stats.iter().enumerate() {
        assert!(s.counted_idle_spells <= s.idle_spells, "core {core}: {s:?}");
        // Every sleep is counted in and out of the pool-wide word.
        assert!(s.shared_sleep_writes >= 2 * s.sleeps, "core {core}: {s:?}");
    }
    assert!(stats.iter().any(|s| s.counted_idle_spells > 0), "no core was ever counted idle: {stats:?}");
}

#[test]
fn work_queued_before_run_waits_for_the_cores() {
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    on_machine(3, move || {
        let pool = Pool::new().unwrap();
        for core in 0..3 {
            let r = r.clone();
            pool.post(core, move || {
                assert_eq!(platform::current_core(), Some(core));
                r.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        for _ in 0..10 {
            let r = r.clone();
            pool.spawn_task(move || {
                r.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        assert_eq!(r.load(SeqCst), 0, "nothing runs before run");
        pool.run(|| ()).unwrap();
    });
    assert_eq!(ran.load(SeqCst), 13);
}

#[test]
fn outside_threads_inject_work_while_the_pool_runs() {
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let machine = Machine::new(4).unwrap();
    let outside = machine.clone();
    with_watchdog(LIMIT, "outside posts", || {
        machine.run(move || {
            let pool = Pool::with_config(Config::new().stop_when_quiescent(false)).unwrap();
            let feeder = {
                let (pool, r) = (pool.clone(), r.clone());
                std::thread::spawn(move || {
                    let _member = outside.enter();
                    assert_eq!(platform::current_core(), None);
                    for i in 0..2000 {
                        let r = r.clone();
                        let task = move || _ = r.fetch_add(1, SeqCst);
                        if i % 2 == 0 {
                            pool.spawn_task(task).unwrap()
                        } else {
                            pool.post(i % 4, task).unwrap()
                        }
                        if i % 100 == 0 {
                            std::thread::sleep(Duration::from_millis(2)); // let the cores fall asleep
                        }
                    }
                    while r.load(SeqCst) < 2000 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    pool.shutdown();
                })
            };
            pool.run(|| ()).unwrap();
            feeder.join().unwrap();
            let sleeps: u64 = pool.stats().iter().map(|s| s.sleeps).sum();
            assert!(sleeps > 0, "the cores never slept during the gaps");
        })
    })
    .unwrap();
    assert_eq!(ran.load(SeqCst), 2000);
}

/// Counts drops, so a test can see that nothing was lost silently.
struct Token(Arc<AtomicUsize>);
impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn shutdown_discards_unstarted_tasks_and_counts_them() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let (d, r) = (dropped.clone(), ran.clone());
    let pool = on_machine(2, move || {
        let pool = Pool::new().unwrap();
        let handle = pool.clone();
        pool.run(|| {
            for _ in 0..100 {
                let token = Token(d.clone());
                let r = r.clone();
                roving::post(0, move || {
                    let _token = token;
                    r.fetch_add(1, SeqCst);
                })
                .unwrap();
            }
            assert!(handle.shutdown());
            assert!(!handle.shutdown(), "only the first shutdown stops it");
        })
        .unwrap();
        pool
    });
    assert_eq!(ran.load(SeqCst), 0, "main shut down before core 0 ran anything");
    assert_eq!(dropped.load(SeqCst), 100, "every unstarted closure is dropped");
    assert_eq!(pool.stats().iter().map(|s| s.discarded).sum::<u64>(), 100);
}

#[test]
fn a_stopped_pool_hands_the_closure_back() {
    on_machine(2, || {
        let pool = Pool::new().unwrap();
        pool.run(|| ()).unwrap();
        assert!(pool.is_stopped());
        let back = Arc::new(AtomicUsize::new(0));
        let b = back.clone();
        let error = pool.spawn_task(move || _ = b.fetch_add(7, SeqCst)).unwrap_err();
        assert!(matches!(error, PostError::Stopped(_)), "{error:?}");
        error.into_inner()();
        assert_eq!(back.load(SeqCst), 7, "the closure came back intact");
        let error = pool.post(1, || ()).unwrap_err();
        assert!(matches!(error, PostError::Stopped(_)));
        assert_eq!(pool.run(|| ()).unwrap_err(), RunError::AlreadyRan);
    });
}

#[test]
fn bad_input_gets_typed_errors() {
    on_machine(2, || {
        assert_eq!(Pool::with_config(Config::new().cores(0)).err(), Some(PoolError::NoCores));
        assert_eq!(
            Pool::with_config(Config::new().cores(3)).err(),
            Some(PoolError::TooManyCores { requested: 3, available: 2 })
        );
        let pool = Pool::new().unwrap();
        let back = Arc::new(AtomicUsize::new(0));
        let b = back.clone();
        let error = pool.post(5, move || _ = b.fetch_add(1, SeqCst)).unwrap_err();
        assert_eq!(error.to_string(), "no core 5: core indices run 0..2");
        error.into_inner()();
        assert_eq!(back.load(SeqCst), 1, "the closure came back intact");
        let error = roving::spawn_task(|| ()).unwrap_err();
        assert!(matches!(error, PostError::NotInPool(_)), "core 0 outside `run` is not a worker");
        let error = roving::post(0, || ()).unwrap_err();
        assert!(matches!(error, PostError::NotInPool(_)));
        let outsider = std::thread::spawn(move || pool.run(|| ()).unwrap_err()).join().unwrap();
        assert_eq!(outsider, RunError::NotAPoolCore { core: None, cores: 2 });
    });
    // A newcomer's first mistake: a pool built before any machine runs.
    let error = Pool::new().err();
    assert_eq!(error, Some(PoolError::NotOnAMachine));
    assert!(error.unwrap().to_string().contains("inside Machine::run"));
    assert_eq!(Pool::with_cores(&[0], Config::new()).err(), Some(PoolError::NotOnAMachine));
}

#[test]
fn settings_that_cannot_work_are_refused_when_the_pool_is_built() {
    on_machine(3, || {
        let rounds = Config::MAX_SEARCH_ROUNDS + 1;
        let error = Pool::with_config(Config::new().search_rounds(u32::MAX)).err();
        assert_eq!(error, Some(PoolError::TooManySearchRounds { rounds: u32::MAX }));
        assert_eq!(
            Pool::with_config(Config::new().search_rounds(rounds)).err(),
            Some(PoolError::TooManySearchRounds { rounds })
        );
        let pool = Pool::with_config(Config::new().search_rounds(Config::MAX_SEARCH_ROUNDS)).unwrap();
        assert_eq!(pool.run(|| 5).unwrap(), 5, "the largest accepted setting still lets the pool stop");

        let error = Pool::with_config(Config::new().deep_idle_after(Duration::MAX)).err();
        assert_eq!(error, Some(PoolError::DeepIdleTooLate { after: Duration::MAX }));
        assert!(error.unwrap().to_string().contains("at most 3600s"));
        let pool = Pool::with_config(Config::new().deep_idle_after(Config::MAX_DEEP_IDLE_AFTER)).unwrap();
        assert_eq!(pool.run(|| 6).unwrap(), 6, "the longest accepted delay works");

        assert_eq!(
            Pool::with_cores(&[1, 1], Config::new()).err(),
            Some(PoolError::DuplicateCore { core: 1 })
        );
        assert_eq!(
            Pool::with_cores(&[0, 2], Config::new().cores(1)).err(),
            Some(PoolError::CoreCountMismatch { config: 1, listed: 2 })
        );
        assert_eq!(
            Pool::with_cores(&[0], Config::new().search_rounds(u32::MAX)).err(),
            Some(PoolError::TooManySearchRounds { rounds: u32::MAX })
        );
        assert!(Pool::with_cores(&[0, 2], Config::new().cores(2)).is_ok());
    });
}

#[test]
fn a_smaller_pool_runs_on_its_cores_only() {
    let outside = Arc::new(AtomicUsize::new(0));
    let o = outside.clone();
    on_machine(4, move || {
        let pool = Pool::with_config(Config::new().cores(2)).unwrap();
        pool.run(|| {
            for _ in 0..1000 {
                let o = o.clone();
                roving::spawn_task(move || {
                    if platform::current_core().unwrap() >= 2 {
                        o.fetch_add(1, SeqCst);
                    }
                })
                .unwrap();
            }
        })
        .unwrap();
        // The same cores can host a new pool once the first has stopped.
        Pool::new().unwrap().run(|| ()).unwrap();
    });
    assert_eq!(outside.load(SeqCst), 0);
}

#[test]
fn a_panicking_task_stops_the_pool_and_is_raised_by_run() {
    let result = with_watchdog(LIMIT, "a panicking pool", || {
        std::panic::catch_unwind(|| {
            Machine::new(2).unwrap().run(|| {
                let pool = Pool::with_config(Config::new().stop_when_quiescent(false)).unwrap();
                pool.run(|| roving::post(1, || panic!("task failed on purpose")).unwrap()).unwrap();
            })
        })
    });
    let payload = result.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"task failed on purpose"));
}

/// A strand's panic, `main`'s included, comes back from `run` as a
/// failure; only a plain task's is raised again (the test above).
#[test]
fn a_panicking_main_comes_back_as_a_failure() {
    let error = on_machine(2, || {
        let pool = Pool::new().unwrap();
        pool.run::<()>(|| panic!("main failed on purpose")).unwrap_err()
    });
    let RunError::Failed(failure) = error else { panic!("not a failure: {error:?}") };
    assert_eq!(failure.message(), "main failed on purpose");
}

#[test]
fn start_failures_are_reported() {
    // Core 1 is busy with an entry that outlasts `run`'s patience.
    fn hold(_: usize) {
        std::thread::sleep(Duration::from_millis(1500));
    }
    on_machine(2, || {
        platform::start_core(1, hold, 0).unwrap();
        let pool = Pool::new().unwrap();
        let error = pool.run(|| unreachable!("main must not run")).unwrap_err();
        assert_eq!(error, RunError::StartCore(StartCoreError::AlreadyRunning { core: 1 }));
        assert!(pool.is_stopped());
    });
}
