//! The pool's trace (feature `trace`): a traced run whose events agree with
//! its `CoreStats` exactly, since nothing was lost, and whose strands'
//! turns and stack copies add up. Run with
//! `cargo test -p roving --features std,trace --test trace`.
#![cfg(all(feature = "std", feature = "trace"))]

mod support;

use roving::actor::{Actor, ActorContext};
use roving::event_loop::Loop;
use roving::platform::host::Machine;
use roving::sync::Event as Flag;
use roving::trace::{CoreTrace, Counted, EVENTS_PER_CORE, Left, TraceEvent, Woken};
use roving::{CoreStats, Pool};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use support::with_watchdog;

const CORES: usize = 4;

/// Strands beyond the pool's 64 fibres, so that some share one and their
/// stacks are copied in and out.
const STRANDS: usize = 100;
/// Messages to the actor, operations on the event loop, futures.
const MESSAGES: usize = 300;
const OPERATIONS: usize = 200;
const FUTURES: usize = 10;

/// Counts its messages, and says when it has them all.
struct Counter {
    handled: usize,
    done: Arc<Flag>,
}

impl Actor for Counter {
    type Message = ();
    fn handle(&mut self, (): (), _: &mut ActorContext<'_, Self>) {
        self.handled += 1;
        if self.handled == MESSAGES {
            self.done.set();
        }
    }
}

/// An actor, an event loop, futures and fork-join, for their trace points.
fn models() {
    let pool = Pool::current().expect("on the pool");
    let done = Arc::new(Flag::new());
    let counter = pool.spawn_actor(Counter { handled: 0, done: done.clone() });
    for _ in 0..MESSAGES {
        counter.send(()).unwrap();
    }
    done.wait().unwrap();
    let lp: Loop<usize> = Loop::new(0);
    for _ in 0..OPERATIONS {
        lp.defer(|n: &mut usize, _: &Loop<usize>| *n += 1).unwrap();
    }
    let futures: Vec<_> =
        (0..FUTURES).map(|n| roving::future::future_on(n % CORES, move || n).unwrap()).collect();
    let sum: usize = futures.into_iter().map(|future| future.wait().unwrap()).sum();
    assert_eq!(sum, (0..FUTURES).sum());
    fn fib(n: u64) -> u64 {
        if n < 2 {
            return n;
        }
        let (a, b) = roving::join(|| fib(n - 1), || fib(n - 2));
        a + b
    }
    std::hint::black_box(fib(20));
}

/// Posts hop between cores, spawns fan out (and are stolen), and the pool
/// sleeps between rounds; 20 tasks came from outside the pool before.
/// Then `STRANDS` strands yield, take turns on a mutex and finish.
fn workload() {
    let hops = Arc::new(AtomicUsize::new(0));
    fn hop(left: usize, hops: Arc<AtomicUsize>) {
        hops.fetch_add(1, SeqCst);
        if left > 0 {
            let core = left % CORES;
            roving::post(core, move || hop(left - 1, hops)).unwrap();
        }
    }
    fn fan_out(depth: u32) {
        if depth > 0 {
            for _ in 0..2 {
                roving::spawn_task(move || {
                    std::thread::sleep(Duration::from_micros(50));
                    fan_out(depth - 1)
                })
                .unwrap();
            }
        }
    }
    for round in 0..4 {
        roving::post(round % CORES, {
            let hops = hops.clone();
            move || hop(100, hops)
        })
        .unwrap();
        roving::spawn_task(|| fan_out(6)).unwrap();
        roving::strand::sleep(Duration::from_millis(5)).unwrap();
    }
    let lock = Arc::new(roving::sync::Mutex::new(0u64));
    // Every strand waits at the gate until all are spawned: more blocked
    // strands than fibres, so some share one.
    let gate = Arc::new(Flag::new());
    let strands: Vec<_> = (0..STRANDS)
        .map(|_| {
            let (lock, gate) = (lock.clone(), gate.clone());
            roving::strand::spawn(move || {
                gate.wait().unwrap();
                for _ in 0..2 {
                    roving::strand::yield_now().unwrap();
                    *lock.lock().unwrap() += 1;
                }
            })
            .unwrap()
        })
        .collect();
    gate.set();
    for strand in strands {
        strand.join().unwrap();
    }
    assert_eq!(*lock.lock().unwrap(), 2 * STRANDS as u64);
    models();
    // A sleeping core woken by work: the others idle while this strand
    // sleeps, then a post to each wakes it. On a loaded host idle cores
    // may search past a short sleep instead of sleeping: tried until one
    // was woken.
    let pool = Pool::current().unwrap();
    for _ in 0..100 {
        if pool.stats().iter().any(|core| core.wakeups > 0) {
            break;
        }
        roving::strand::sleep(Duration::from_millis(10)).unwrap();
        for core in 0..CORES {
            roving::post(core, || ()).unwrap();
        }
    }
}

#[test]
fn a_traced_run_agrees_with_the_counters() {
    let pool = with_watchdog(Duration::from_secs(60), "a traced pool", || {
        Machine::new(CORES)
            .unwrap()
            .run(|| {
                let pool = Pool::new().unwrap();
                // From outside the pool: through the injector.
                for _ in 0..20 {
                    pool.spawn_task(|| ()).unwrap();
                }
                pool.run(workload).unwrap();
                pool
            })
            .unwrap()
    });
    let (stats, traces) = (pool.stats(), pool.trace());
    assert_eq!(traces.len(), CORES);
    for (core, (stats, trace)) in stats.iter().zip(&traces).enumerate() {
        assert_eq!(trace.lost, 0, "core {core} lost events (its ring holds {EVENTS_PER_CORE})");
        assert_eq!(trace.counted(), Counted::from(stats), "core {core}: trace against counters {stats:?}");
        let woke = trace.events.iter().filter(|event| matches!(event.event, TraceEvent::Woke { .. })).count();
        assert_eq!(woke as u64, stats.sleeps, "core {core}: every sleep ends");
        assert!(
            trace.events.windows(2).all(|pair| pair[0].ticks <= pair[1].ticks),
            "core {core}: time ran back"
        );
    }
    // The text dump: a line per event, and one per core, around them a
    // header and an end. With ROVING_TRACE_OUT set, it is kept there for
    // `tools/trace`'s own test.
    let mut dump = String::new();
    pool.write_trace(&mut dump).unwrap();
    let events: usize = traces.iter().map(|trace| trace.events.len()).sum();
    assert_eq!(dump.lines().count(), events + CORES + 2);
    assert!(dump.lines().all(|line| line.starts_with("roving-trace ")));
    if let Ok(path) = std::env::var("ROVING_TRACE_OUT") {
        let path = std::path::Path::new(&path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, dump).unwrap();
    }
    // Strands: each turn begins and ends on one core; every strand
    // finishes once; and with more strands than fibres, stacks were copied.
    let count = |core: &CoreTrace, wanted: fn(&TraceEvent) -> bool| {
        core.events.iter().filter(|e| wanted(&e.event)).count()
    };
    for (core, trace) in traces.iter().enumerate() {
        let ins = count(trace, |event| matches!(event, TraceEvent::StrandIn { .. }));
        let outs = count(trace, |event| matches!(event, TraceEvent::StrandOut { .. }));
        assert_eq!(ins, outs, "core {core}: strand turns begun and ended");
    }
    let all =
        |wanted: fn(&TraceEvent) -> bool| traces.iter().map(|trace| count(trace, wanted)).sum::<usize>();
    let finished = all(|event| matches!(event, TraceEvent::StrandOut { left: Left::Finished, .. }));
    assert_eq!(finished, STRANDS + 1, "every strand and main finish once");
    // A yield with nothing else to run here returns at once, without a
    // turn ending; with a hundred strands some must have switched.
    assert!(
        all(|event| matches!(event, TraceEvent::StrandOut { left: Left::Yielded, .. })) > 0,
        "no strand yielded"
    );
    assert!(
        all(|event| matches!(event, TraceEvent::StackSaved { bytes } if *bytes > 0)) > 0,
        "no stack was copied out"
    );
    assert!(all(|event| matches!(event, TraceEvent::StackRestored { .. })) > 0, "no stack was copied in");
    // The programming models: every message handled in some actor turn,
    // every operation in some drain, every future completed once.
    let sum = |of: fn(&TraceEvent) -> Option<u32>| -> usize {
        traces.iter().flat_map(|trace| &trace.events).filter_map(|e| of(&e.event)).map(|n| n as usize).sum()
    };
    assert_eq!(
        sum(|event| if let TraceEvent::ActorTurn { messages } = event { Some(*messages) } else { None }),
        MESSAGES
    );
    let drained =
        sum(
            |event| if let TraceEvent::LoopDrained { operations } = event { Some(*operations) } else { None },
        );
    assert_eq!(drained, OPERATIONS);
    assert_eq!(all(|event| matches!(event, TraceEvent::FutureCompleted { broken: false })), FUTURES);
    let published = all(|event| matches!(event, TraceEvent::JoinPublished));
    assert!(all(|event| matches!(event, TraceEvent::JoinTakenBack)) <= published);
    wakes_pair_up(&traces);
    let total = |field: fn(&CoreStats) -> u64| stats.iter().map(field).sum::<u64>();
    assert!(total(|s| s.tasks_run) > 400, "the workload did too little: {stats:?}");
    assert!(total(|s| s.received) > 0 && total(|s| s.injected) == 20, "no post or no injection: {stats:?}");
    assert!(
        total(|s| s.sleeps) > 0 && total(|s| s.wakeups) > 0,
        "no core slept, or none was woken: {stats:?}"
    );
}

/// Who woke whom. A core's wake-up that claimed a sleeper names the claim,
/// and the sleep it ended (if the sleeper had not cancelled it first) ends
/// with that claim: at most one each way. A sleep whose claim no core
/// made was ended from outside the pool, which keeps no trace: the first
/// injections, the pool's stop. Every strand that blocked was woken once,
/// and its next turn began after that.
fn wakes_pair_up(traces: &[CoreTrace]) {
    let mut claims = HashMap::new();
    for (waker, trace) in traces.iter().enumerate() {
        for event in &trace.events {
            if let TraceEvent::Wakeup { core, claim: Some(claim) } = event.event {
                assert!(
                    claims.insert((core, claim), waker).is_none(),
                    "claim {claim} on core {core} made twice"
                );
            }
        }
    }
    let (mut by_cores, mut from_outside) = (0, 0);
    for (core, trace) in traces.iter().enumerate() {
        let mut seen = std::collections::HashSet::new();
        for event in &trace.events {
            if let TraceEvent::Woke { claim: Some(claim), .. } = event.event {
                assert!(seen.insert(claim), "core {core}: two sleeps ended by claim {claim}");
                match claims.contains_key(&(core as u32, claim)) {
                    true => by_cores += 1,
                    false => from_outside += 1,
                }
            }
        }
    }
    // Outside the pool: the 20 injections wake a core each at most, and
    // the stop every core.
    assert!(
        from_outside <= 20 + CORES,
        "{from_outside} sleeps ended from outside ({by_cores} by a core's claim)"
    );
    // Strands: the low 32 bits of their ids, over all cores, in time.
    let mut all: Vec<_> = traces.iter().flat_map(|trace| &trace.events).collect();
    // A wake and the turn it began may read the same tick: the wake first.
    all.sort_by_key(|event| (event.ticks, !matches!(event.event, TraceEvent::StrandWoken { .. })));
    let mut blocked = HashMap::<u32, usize>::new();
    let mut woken_at = HashMap::new();
    let (mut woken, mut timed_out) = (0, 0);
    for event in all {
        match event.event {
            TraceEvent::StrandOut { strand, left: Left::Blocked(_) } => {
                *blocked.entry(strand).or_default() += 1
            }
            TraceEvent::StrandWoken { strand, by } => {
                assert!(matches!(by, Woken::Signalled | Woken::TimedOut), "strand {strand} woken by {by:?}");
                assert!(
                    woken_at.insert(strand, event.ticks).is_none(),
                    "strand {strand} woken twice in one wait"
                );
                woken += 1;
                timed_out += usize::from(by == Woken::TimedOut);
            }
            TraceEvent::StrandIn { strand } => {
                woken_at.remove(&strand);
            }
            _ => {}
        }
    }
    assert!(woken_at.is_empty(), "strands woken whose next turn never began: {woken_at:?}");
    assert_eq!(woken, blocked.values().sum::<usize>(), "every wait ended by one wake");
    // `main` slept four times: its deadline woke it each time.
    assert!(timed_out >= 4, "main's sleeps: {timed_out} wakes by a deadline");
}
