//! Stopping a pool while strands live: a shutdown or a failure cancels
//! them and runs them to their end (their destructors run, their fibres
//! are free again), and the first failure is the one reported.
#![cfg(feature = "std")]

mod support;

use roving::future::FutureError;
use roving::platform::host::Machine;
use roving::strand::{self, WaitError};
use roving::sync::Event;
use roving::{Config, Pool};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use support::{with_turn, with_watchdog};

const LIMIT: Duration = Duration::from_secs(60);

/// Counts its drops: a strand's stack was unwound, not abandoned.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Spawns `count` strands that wait for an event nobody sets.
fn block_forever(count: usize, dropped: &Arc<AtomicUsize>) -> Arc<Event> {
    let never = Arc::new(Event::new());
    for _ in 0..count {
        let (never, guard) = (never.clone(), Dropped(dropped.clone()));
        drop(strand::spawn(move || {
            let _guard = guard;
            never.wait()
        }));
    }
    never
}

/// Runs `main` as the root of a pool of `config` on a machine of
/// `cores` host cores, under the watchdog.
fn on_pool<R: Send>(cores: usize, config: Config, main: impl FnOnce(&Pool) -> R + Send) -> R {
    with_watchdog(LIMIT, "a stopping pool", || {
        Machine::new(cores)
            .unwrap()
            .run(|| {
                let pool = Pool::with_config(config).unwrap();
                pool.run(|| main(&pool)).unwrap()
            })
            .unwrap()
    })
}

/// As [`on_pool`], catching a panic `run` raises.
fn catching<R: Send>(
    cores: usize,
    config: Config,
    main: impl FnOnce(&Pool) -> R + Send,
) -> std::thread::Result<R> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| on_pool(cores, config, main)))
}

/// Runs `main` on a fresh 2-core pool, catching a panic `run` raises.
fn run_catching<R: Send>(main: impl FnOnce(&Pool) -> R + Send) -> std::thread::Result<R> {
    catching(2, Config::new().stop_when_quiescent(false), main)
}

#[test]
fn shutdown_cancels_blocked_strands_and_frees_their_fibres() {
    with_turn(|| {
        let before = strand::usage().fibres_in_use;
        let dropped = Arc::new(AtomicUsize::new(0));
        let seen = dropped.clone();
        let waited = run_catching(move |pool| {
            let _never = block_forever(10, &seen);
            strand::sleep(Duration::from_millis(5)).unwrap();
            assert!(pool.shutdown());
            assert!(pool.is_stopped());
            // Main is a strand too: cancelled, its next wait is refused.
            strand::sleep(Duration::from_secs(30))
        })
        .unwrap();
        assert_eq!(waited, Err(WaitError::Interrupted));
        assert_eq!(dropped.load(SeqCst), 10, "blocked strands were abandoned, not unwound");
        assert_eq!(strand::usage().fibres_in_use, before, "a stopped pool kept fibres");
    });
}

#[test]
fn a_panicking_task_unwinds_the_strands_and_is_raised() {
    with_turn(|| {
        let before = strand::usage().fibres_in_use;
        let dropped = Arc::new(AtomicUsize::new(0));
        let seen = dropped.clone();
        let payload = run_catching(move |pool| {
            let never = block_forever(6, &seen);
            pool.post(1, || panic!("task failed on purpose")).unwrap();
            never.wait()
        })
        .unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"task failed on purpose"));
        assert_eq!(dropped.load(SeqCst), 6);
        assert_eq!(strand::usage().fibres_in_use, before);
    });
}

#[test]
fn a_broken_future_is_seen_only_once_the_pool_has_stopped() {
    with_turn(|| {
        for round in 0..40 {
            let payload = run_catching(move |pool| {
                let start = pool.future_on(1, || 1).unwrap();
                let doomed = start.then(1, |_: i32| -> i32 { panic!("continuation failed on purpose") });
                match doomed.wait() {
                    Err(FutureError::Broken) => {
                        assert!(pool.is_stopped(), "round {round}: broken while the pool ran");
                        assert!(pool.future_on(0, || ()).is_err(), "round {round}: a send was accepted");
                    }
                    other => panic!("round {round}: the waiter did not learn the cause: {other:?}"),
                }
            })
            .unwrap_err();
            assert_eq!(
                payload.downcast_ref::<&str>(),
                Some(&"continuation failed on purpose"),
                "round {round}"
            );
        }
    });
}

/// Runs `main` on a fresh pool of `cores` host cores that stops when
/// quiescent, catching a panic `run` raises.
fn run_catching_on<R: Send>(cores: usize, main: impl FnOnce(&Pool) -> R + Send) -> std::thread::Result<R> {
    catching(cores, Config::new(), main)
}

/// The program from the docs: wait for a future whose work panics. The
/// panic fails the pool, whose wind-down cancels the waiter at the same
/// moment; the waiter still learns the cause, `Broken`, not the cancel.
#[test]
fn a_strand_waiting_on_a_future_whose_work_panicked_gets_broken_on_2_and_4_cores() {
    with_turn(|| {
        for cores in [2, 4] {
            for round in 0..100 {
                let seen = Arc::new(std::sync::Mutex::new(None));
                let waited = seen.clone();
                let payload = run_catching_on(cores, move |pool| {
                    let doomed = pool.future_on(1, || -> u32 { panic!("work failed on purpose") }).unwrap();
                    *waited.lock().unwrap() = Some(doomed.wait());
                })
                .unwrap_err();
                assert_eq!(payload.downcast_ref::<&str>(), Some(&"work failed on purpose"), "round {round}");
                let seen = seen.lock().unwrap().take();
                assert_eq!(seen, Some(Err(FutureError::Broken)), "{cores} cores, round {round}");
            }
        }
    });
}

/// Runs `main` on a one-core pool and returns what it returned, with the
/// pool's own failure if one came. With one core the order is exact: what
/// a task does before it returns all happens before the waiting strand
/// runs again.
fn on_one_core<R: Send>(main: impl FnOnce(&Pool) -> R + Send) -> R {
    on_pool(1, Config::new().stop_when_quiescent(false), main)
}

/// A task that shuts the pool down (cancelling the waiting strand) and
/// then settles what the strand waits for: the strand learns the
/// settlement, not the cancel.
#[test]
fn a_waiter_cancelled_as_its_future_channel_or_task_settles_learns_the_settlement() {
    with_turn(|| {
        let value = on_one_core(|pool| {
            let future = pool.future_on(0, || Pool::current().unwrap().shutdown().then_some(7)).unwrap();
            future.wait()
        });
        assert_eq!(value, Ok(Some(7)), "a future");

        let received = on_one_core(|pool| {
            let (sender, receiver) = roving::sync::channel::bounded::<u32>(1).unwrap();
            pool.post(0, move || {
                Pool::current().unwrap().shutdown();
                drop(sender);
            })
            .unwrap();
            receiver.recv()
        });
        assert_eq!(
            received,
            Err(roving::sync::channel::RecvError::Disconnected),
            "a channel whose sender left"
        );

        let received = on_one_core(|pool| {
            let (sender, receiver) = roving::sync::channel::bounded::<u32>(1).unwrap();
            pool.post(0, move || {
                Pool::current().unwrap().shutdown();
                sender.try_send(5).unwrap();
            })
            .unwrap();
            receiver.recv()
        });
        assert_eq!(received, Ok(5), "a channel given a value");

        let joined = on_one_core(|pool| {
            let task = pool
                .spawn_async(async {
                    Pool::current().unwrap().shutdown();
                    panic!("the task failed on purpose");
                })
                .unwrap();
            match task.join() {
                Err(roving::executor::TaskError::Failed(failure)) => Ok(failure.to_string()),
                other => Err(format!("{other:?}")),
            }
        });
        let failure = joined.expect("a task's joiner did not learn that it failed");
        assert!(failure.contains("the task failed on purpose"), "{failure}");
    });
}

#[test]
fn the_first_failure_is_the_one_raised() {
    // Core 0 keeps posting to itself and panics as soon as a post is
    // refused: that panic comes second and must not hide the first.
    fn repost() {
        roving::post(0, repost).expect("a secondary failure: the pool has stopped");
    }
    with_turn(|| {
        for round in 0..40 {
            let payload = run_catching(|pool| {
                pool.post(0, repost).unwrap();
                pool.post(1, || panic!("the first failure")).unwrap();
                let never = Event::new();
                never.wait()
            })
            .unwrap_err();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"the first failure"), "round {round}");
        }
    });
}

#[test]
fn a_strand_that_cannot_end_is_abandoned_and_the_pool_still_stops() {
    with_turn(|| {
        let outcome = with_watchdog(LIMIT, "an abandoning pool", || {
            Machine::new(2)
                .unwrap()
                .run(|| {
                    let pool = Pool::new().unwrap();
                    pool.run(|| {
                        let never = Arc::new(Event::new());
                        let waiter = never.clone();
                        drop(strand::spawn(move || {
                            // Shielded: the cancel of the stop does not
                            // reach it, and nothing will set the event.
                            let _shield = strand::shield();
                            waiter.wait()
                        }));
                        strand::sleep(Duration::from_millis(5)).unwrap();
                        Pool::current().unwrap().shutdown();
                    })
                })
                .unwrap()
        });
        // Main waits for its child at its end, so it is abandoned with it.
        assert_eq!(outcome, Err(roving::RunError::MainDidNotFinish));
    });
}
