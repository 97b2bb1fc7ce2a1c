//! Actors on the host: one core at a time, order per sender, fair turns,
//! pinning, stopping (explicit, from inside, with the pool) and
//! quiescence, and that nothing accepted is lost.
#![cfg(feature = "std")]

mod support;

use roving::actor::{Actor, ActorContext, Addr, DeliveryError, EndWaitError, PinError};
use roving::sync::Event;
use roving::{Config, Pool};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use support::{on_pool, run_pool};

/// Checks every message: never two turns at once, and each sender's
/// sequence numbers in order.
struct Checker {
    inside: Arc<AtomicBool>,
    last: Vec<Option<u64>>,
    handled: u64,
    done: Arc<(AtomicU64, Event)>,
    expected: u64,
}

impl Actor for Checker {
    type Message = (usize, u64);
    const MESSAGES_PER_TURN: usize = 16;
    fn handle(&mut self, (sender, seq): (usize, u64), _: &mut ActorContext<'_, Self>) {
        assert!(!self.inside.swap(true, SeqCst), "the actor ran on two cores at once");
        if let Some(last) = self.last[sender] {
            assert!(seq > last, "sender {sender}: {seq} after {last}");
        }
        self.last[sender] = Some(seq);
        self.handled += 1;
        // Widen the window in which a second turn would overlap.
        std::hint::spin_loop();
        self.inside.store(false, SeqCst);
        if self.handled == self.expected {
            self.done.0.store(self.handled, SeqCst);
            self.done.1.set();
        }
    }
}

#[test]
fn one_turn_at_a_time_and_in_order_per_sender() {
    const SENDERS: usize = 4;
    const EACH: u64 = 20_000;
    let handled = run_pool(4, |pool| {
        let done = Arc::new((AtomicU64::new(0), Event::new()));
        let checker = pool.spawn_actor(Checker {
            inside: Arc::new(AtomicBool::new(false)),
            last: vec![None; SENDERS],
            handled: 0,
            done: done.clone(),
            expected: SENDERS as u64 * EACH,
        });
        for sender in 0..SENDERS {
            let checker = checker.clone();
            // Senders on every core, racing the actor's turns.
            pool.post(sender, move || {
                for seq in 0..EACH {
                    checker.send((sender, seq)).unwrap();
                }
            })
            .unwrap();
        }
        done.1.wait().unwrap();
        done.0.load(SeqCst)
    })
    .unwrap();
    assert_eq!(handled, SENDERS as u64 * 20_000);
}

/// Records where each message was handled.
struct Recorder {
    cores: Arc<Mutex<Vec<usize>>>,
}

impl Actor for Recorder {
    type Message = ();
    const MESSAGES_PER_TURN: usize = 4;
    fn handle(&mut self, (): (), context: &mut ActorContext<'_, Self>) {
        self.cores.lock().unwrap().push(context.core());
    }
}

#[test]
fn a_turn_yields_its_core_after_its_quota() {
    let (other_ran_after, total) = on_pool(1, || {
        let pool = Pool::current().unwrap();
        let cores = Arc::new(Mutex::new(Vec::new()));
        let recorder = pool.spawn_actor(Recorder { cores: cores.clone() });
        for _ in 0..100 {
            recorder.send(()).unwrap();
        }
        let seen = Arc::new(AtomicUsize::new(usize::MAX));
        let (probe, at) = (cores.clone(), seen.clone());
        // Queued behind the actor's first turn on the only core.
        pool.spawn_task(move || at.store(probe.lock().unwrap().len(), SeqCst)).unwrap();
        while cores.lock().unwrap().len() < 100 {
            roving::strand::yield_now().unwrap();
        }
        (seen.load(SeqCst), cores.lock().unwrap().len())
    });
    assert_eq!(total, 100);
    assert!(other_ran_after < 100, "the other task waited for all 100 messages: turns did not yield");
    assert_eq!(other_ran_after % 4, 0, "a turn stopped in the middle of its quota ({other_ran_after})");
}

#[test]
fn a_pinned_actor_runs_only_on_its_core() {
    let cores = on_pool(4, || {
        let pool = Pool::current().unwrap();
        let cores = Arc::new(Mutex::new(Vec::new()));
        let recorder = pool.spawn_actor_on(2, Recorder { cores: cores.clone() }).unwrap();
        let done = Arc::new(AtomicUsize::new(0));
        for from in 0..4 {
            let (recorder, done) = (recorder.clone(), done.clone());
            pool.post(from, move || {
                for _ in 0..1_000 {
                    recorder.send(()).unwrap();
                }
                done.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        while cores.lock().unwrap().len() < 4_000 {
            roving::strand::yield_now().unwrap();
        }
        cores.lock().unwrap().clone()
    });
    assert_eq!(cores.len(), 4_000);
    assert!(cores.iter().all(|&core| core == 2), "a pinned actor ran elsewhere");
}

#[test]
fn pinning_to_a_core_the_pool_lacks_gives_the_actor_back() {
    on_pool(2, || {
        let pool = Pool::current().unwrap();
        let cores = Arc::new(Mutex::new(Vec::new()));
        match pool.spawn_actor_on(7, Recorder { cores }) {
            Err(PinError::NoSuchCore { core: 7, cores: 2, value }) => drop(value),
            other => panic!("expected NoSuchCore, got {:?}", other.map(|_| ())),
        }
    });
}

/// Sums what it is sent; reports the sum and the order of events.
struct Summer {
    sum: u64,
    log: Arc<Mutex<Vec<String>>>,
    stop_at: Option<u64>,
}

impl Actor for Summer {
    type Message = u64;
    fn handle(&mut self, n: u64, context: &mut ActorContext<'_, Self>) {
        self.sum += n;
        if Some(n) == self.stop_at {
            context.stop();
        }
    }
    fn stopped(&mut self) {
        self.log.lock().unwrap().push(format!("stopped at {}", self.sum));
    }
}

fn summer(pool: &Pool, stop_at: Option<u64>) -> (Addr<Summer>, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    (pool.spawn_actor(Summer { sum: 0, log: log.clone(), stop_at }), log)
}

#[test]
fn a_stopped_actor_handles_what_it_accepted_then_refuses() {
    let log = on_pool(2, || {
        let pool = Pool::current().unwrap();
        let (actor, log) = summer(&pool, None);
        for n in 1..=100 {
            actor.send(n).unwrap();
        }
        assert!(actor.stop());
        assert!(!actor.stop(), "a second stop reports it was already stopped");
        match actor.send(1_000) {
            Err(DeliveryError::Stopped(1_000)) => {}
            other => panic!("expected the message back, got {other:?}"),
        }
        log
    });
    assert_eq!(*log.lock().unwrap(), ["stopped at 5050"]);
}

#[test]
fn stopping_a_dormant_actor_runs_its_hook() {
    let log = on_pool(2, || {
        let pool = Pool::current().unwrap();
        let (actor, log) = summer(&pool, None);
        assert!(actor.is_dormant());
        actor.stop();
        log
    });
    assert_eq!(*log.lock().unwrap(), ["stopped at 0"]);
}

#[test]
fn an_actor_can_stop_itself() {
    let (log, refused) = on_pool(2, || {
        let pool = Pool::current().unwrap();
        let (actor, log) = summer(&pool, Some(10));
        for n in 1..=10 {
            actor.send(n).unwrap();
        }
        while !actor.is_stopped() {
            roving::strand::yield_now().unwrap();
        }
        (log, actor.send(11).map_err(DeliveryError::into_inner))
    });
    assert_eq!(*log.lock().unwrap(), ["stopped at 55"]);
    assert_eq!(refused, Err(11));
}

#[test]
fn quiescence_ends_the_run_with_actors_dormant() {
    let actors = Arc::new(Mutex::new(Vec::new()));
    let kept = actors.clone();
    on_pool(4, move || {
        let pool = Pool::current().unwrap();
        for _ in 0..1_000 {
            let (actor, _) = summer(&pool, None);
            actor.send(1).unwrap();
            kept.lock().unwrap().push(actor);
        }
        // `main` returns with messages in flight; the run ends once every
        // actor has drained and gone dormant.
    });
    let actors = actors.lock().unwrap();
    assert!(actors.iter().all(Addr::is_dormant), "the run ended with an actor still scheduled");
}

#[test]
fn a_send_after_the_pool_stopped_comes_back() {
    let machine = roving::platform::host::Machine::new(2).unwrap();
    machine
        .run(|| {
            let pool = Pool::with_config(Config::new()).unwrap();
            let (actor, log) = summer(&pool, None);
            pool.run(|| {}).unwrap();
            match actor.send(7) {
                Err(DeliveryError::PoolStopped(7)) => {}
                other => panic!("expected PoolStopped with the message, got {other:?}"),
            }
            match actor.send(8) {
                Err(DeliveryError::Stopped(8)) => {}
                other => panic!("expected Stopped with the message, got {other:?}"),
            }
            assert!(log.lock().unwrap().is_empty(), "no turn ran in a stopped pool");
        })
        .unwrap();
}

/// Counts its messages and drops, to see that none is lost at a shutdown.
struct Slow {
    handled: Arc<AtomicUsize>,
}

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

impl Actor for Slow {
    type Message = Counted;
    const MESSAGES_PER_TURN: usize = 1;
    fn handle(&mut self, message: Counted, _: &mut ActorContext<'_, Self>) {
        self.handled.fetch_add(1, SeqCst);
        drop(message);
    }
}

#[test]
fn a_shutdown_drops_pending_messages_and_counts_them() {
    let (handled, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (h, d) = (handled.clone(), dropped.clone());
    let discarded = run_pool(1, move |pool| {
        let actor = pool.spawn_actor(Slow { handled: h });
        for _ in 0..100 {
            actor.send(Counted(d.clone())).unwrap();
        }
        // The turn is queued behind `main`, which stops the pool first.
        pool.shutdown();
        pool.clone()
    })
    .map(|pool| pool.stats().iter().map(|s| s.discarded).sum::<u64>());
    // `main` returned before the core's loop reached the turn.
    let discarded = discarded.unwrap();
    assert_eq!(dropped.load(SeqCst), 100, "every message was dropped exactly once");
    assert_eq!(handled.load(SeqCst), 0);
    // The turn task, and the 100 messages it held.
    assert_eq!(discarded, 101);
}

struct Bomb;

impl Actor for Bomb {
    type Message = ();
    fn handle(&mut self, (): (), _: &mut ActorContext<'_, Self>) {
        panic!("an actor failed on purpose");
    }
}

/// When one actor's panic stops the pool, every message another actor
/// accepted is either handled or dropped and counted as discarded.
#[test]
fn after_an_actor_panics_other_actors_accepted_messages_are_handled_or_counted() {
    for round in 0..20 {
        let (handled, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (h, d) = (handled.clone(), dropped.clone());
        let accepted = Arc::new(AtomicUsize::new(0));
        let a = accepted.clone();
        let kept = Arc::new(Mutex::new(None));
        let keep = kept.clone();
        let outcome = support::with_turn(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                roving::platform::host::Machine::new(4).unwrap().run(move || {
                    let pool = Pool::new().unwrap();
                    *keep.lock().unwrap() = Some(pool.clone());
                    pool.run(|| {
                        let counter = pool.spawn_actor(Slow { handled: h });
                        let bomb = pool.spawn_actor(Bomb);
                        for k in 0..1_000 {
                            if k == 10 {
                                let _ = bomb.send(());
                            }
                            if counter.send(Counted(d.clone())).is_ok() {
                                a.fetch_add(1, SeqCst);
                            }
                        }
                    })
                })
            }))
        });
        assert!(outcome.is_err(), "round {round}: the panic is raised again by run");
        let pool = kept.lock().unwrap().take().unwrap();
        let discarded: u64 = pool.stats().iter().map(|s| s.discarded).sum();
        let handled = handled.load(SeqCst) as u64;
        assert_eq!(dropped.load(SeqCst), 1_000, "round {round}: every message was dropped exactly once");
        // Discarded counts the messages and the turn tasks that held them.
        let accepted = accepted.load(SeqCst) as u64;
        assert!(
            handled + discarded >= accepted,
            "round {round}: {handled} handled and {discarded} discarded of {accepted} accepted"
        );
    }
}

#[test]
fn a_strand_waits_for_a_stopped_actor_to_end() {
    let (log, seen_by_waiter, outside) = on_pool(2, || {
        let pool = Pool::current().unwrap();
        let (actor, log) = summer(&pool, None);
        assert!(!actor.has_ended());
        // Not a strand, and not ended: refused rather than blocking.
        let (tx, rx) = std::sync::mpsc::channel();
        let from_task = actor.clone();
        pool.spawn_task(move || tx.send(from_task.wait_ended()).unwrap()).unwrap();
        for n in 1..=1_000 {
            actor.send(n).unwrap();
        }
        // A second strand waits too, blocked before the stop.
        let waiter = {
            let (actor, log) = (actor.clone(), log.clone());
            roving::strand::spawn(move || {
                actor.wait_ended().unwrap();
                log.lock().unwrap().len()
            })
            .unwrap()
        };
        roving::strand::sleep(std::time::Duration::from_millis(2)).unwrap();
        actor.stop();
        actor.wait_ended().unwrap();
        assert!(actor.has_ended() && !actor.is_dormant());
        let seen_by_waiter = waiter.join().unwrap();
        let outside = rx.recv().unwrap();
        assert_eq!(actor.wait_ended(), Ok(()), "an ended actor's wait returns at once");
        (log.lock().unwrap().clone(), seen_by_waiter, outside)
    });
    assert_eq!(log, ["stopped at 500500"]);
    assert_eq!(seen_by_waiter, 1, "the waiter returned after the stopped hook ran");
    assert_eq!(outside, Err(EndWaitError::NotAStrand));
}

#[test]
fn waiting_for_a_dormant_actor_ends_when_its_pool_stops() {
    let result = support::with_watchdog(std::time::Duration::from_secs(60), "an actor end test", || {
        roving::platform::host::Machine::new(3)
            .unwrap()
            .run(|| {
                let home = Pool::with_config(Config::new().cores(2)).unwrap();
                home.run(|| {
                    let extra = Pool::with_cores(&[2], Config::new()).unwrap();
                    extra.start().unwrap();
                    let (actor, log) = summer(&extra, None);
                    let waiter = roving::strand::spawn(move || actor.wait_ended()).unwrap();
                    roving::strand::sleep(std::time::Duration::from_millis(5)).unwrap();
                    extra.destroy().unwrap();
                    (waiter.join().unwrap(), log.lock().unwrap().len())
                })
                .unwrap()
            })
            .unwrap()
    });
    assert_eq!(result, (Err(EndWaitError::PoolStopped), 0), "dormant at the stop: no hook ran");
}

#[test]
fn a_turn_discarded_at_a_shutdown_ends_its_actor() {
    let ended = on_pool(2, || {
        let pool = Pool::current().unwrap();
        let (actor, _log) = summer(&pool, None);
        pool.shutdown();
        // Its pool stopped: the stop's turn is discarded, and it ends.
        actor.stop();
        actor.has_ended()
    });
    assert!(ended);
}
