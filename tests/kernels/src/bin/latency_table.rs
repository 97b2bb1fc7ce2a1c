//! The cost of roving's everyday operations, counted in instructions for
//! the latency table in `BENCHMARKS.md`: `benches/bare-metal` (and
//! `make bench-metal`) runs this kernel under QEMU with
//! `-icount shift=0,align=off,sleep=off`, where the cycle counter advances
//! by one per instruction, so every figure is the same on every run. (The
//! QEMU suite runs it once without `-icount`, to keep it working.)
//!
//! The rows follow Zephyr's `latency_measure` where roving has the same
//! operation, then add roving's own. Each is measured [`ROUNDS`] times;
//! the kernel prints the minimum, median and maximum. Rows marked "with a
//! switch" include the strand switch that follows: roving's strands are
//! cooperative, so the strand that gives then yields, where Zephyr's
//! preemptive kernel switches to a waiting thread of higher priority at
//! once.
//!
//! Rows on one core run in a pool of core 0 alone. Rows across cores run
//! in a pool of cores 0 and 1 whose idle cores sleep in the deep tier at
//! once, and are split where the cores meet: the sender's part on core 0's
//! counter, and the receiver's on core 1's, from the moment it woke (the
//! kernel's `CoreReport::last_deep_wake`). Under `-icount` the cores take
//! turns on one instruction clock, so a single figure from one core's
//! statement to the other's would also count whatever the first core did
//! until QEMU gave the second its turn (its idle search, here).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::hint::black_box;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};
use core::time::Duration;
use roving::actor::{Actor, ActorContext};
use roving::sync::{Event, Mutex, Semaphore, Signal, channel};
use roving::{Config, Pool, platform, strand};
use roving_kernel::{cores, cycles, println};
use roving_test_kernels::pass;

const ROUNDS: usize = 1000;

/// The counter where the measured operation began, for a sample taken
/// elsewhere (another strand, a closure, a handler).
static MARK: AtomicU64 = AtomicU64::new(0);
/// Where a closure or handler on another core (or turn) arrived.
static ARRIVED: AtomicU64 = AtomicU64::new(0);
static DONE: Signal = Signal::new();

/// Instructions since [`MARK`].
fn since_mark() -> u64 {
    cycles() - MARK.load(SeqCst)
}

fn mark() {
    MARK.store(cycles(), SeqCst);
}

/// Times `f` alone, `ROUNDS` times.
fn each(mut f: impl FnMut()) -> Vec<u64> {
    (0..ROUNDS)
        .map(|_| {
            let start = cycles();
            f();
            cycles() - start
        })
        .collect()
}

/// Times two steps done in turn, `ROUNDS` times: `first`, then `second`
/// with what `first` returned.
fn pairs<T>(mut first: impl FnMut() -> T, mut second: impl FnMut(T)) -> (Vec<u64>, Vec<u64>) {
    let (mut a, mut b) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for _ in 0..ROUNDS {
        let start = cycles();
        let value = first();
        let between = cycles();
        second(value);
        a.push(between - start);
        b.push(cycles() - between);
    }
    (a, b)
}

/// Two strands on one core yield to each other; each sample runs from
/// one strand's last statement before `yield_now` to the other's first
/// after its own.
fn yield_between_two_strands() -> Vec<u64> {
    MARK.store(0, SeqCst);
    let yielder = || {
        let mut samples = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let arrived = cycles();
            let left = MARK.load(SeqCst);
            if left != 0 {
                samples.push(arrived - left);
            }
            mark();
            strand::yield_now().expect("a strand may yield");
        }
        samples
    };
    let a = strand::spawn(yielder).expect("a strand");
    let b = strand::spawn(yielder).expect("a strand");
    let mut samples = a.join().expect("a ends");
    // The last rounds of each run into the other's end: left out.
    samples.truncate(ROUNDS - 2);
    let mut b = b.join().expect("b ends");
    b.truncate(ROUNDS - 2);
    samples.extend(b);
    samples
}

/// A strand waits with `wait` `ROUNDS` times while another marks, calls
/// `give` and yields; each sample runs from the mark to the waiter's
/// return from `wait`.
fn given_then_yield(wait: impl Fn() + Send + 'static, give: impl Fn() + Send + 'static) -> Vec<u64> {
    let waiter = strand::spawn(move || {
        (0..ROUNDS)
            .map(|_| {
                wait();
                since_mark()
            })
            .collect::<Vec<_>>()
    })
    .expect("a waiter");
    let giver = strand::spawn(move || {
        for _ in 0..ROUNDS {
            mark();
            give();
            strand::yield_now().expect("a strand may yield");
        }
    })
    .expect("a giver");
    giver.join().expect("the giver ends");
    waiter.join().expect("the waiter ends")
}

/// A strand marks and blocks with `block` `ROUNDS` times while another
/// yields in a loop; each sample runs from the mark to the other strand's
/// return from `yield_now`, which then calls `unblock`.
fn blocked_to_other(block: impl Fn() + Send + 'static, unblock: impl Fn() + Send + 'static) -> Vec<u64> {
    MARK.store(0, SeqCst);
    let blocker = strand::spawn(move || {
        for _ in 0..ROUNDS {
            mark();
            block();
        }
        MARK.store(0, SeqCst);
    })
    .expect("a blocker");
    let other = strand::spawn(move || {
        let mut samples = Vec::with_capacity(ROUNDS);
        while samples.len() < ROUNDS {
            strand::yield_now().expect("a strand may yield");
            if MARK.load(SeqCst) != 0 {
                samples.push(since_mark());
                MARK.store(0, SeqCst);
                unblock();
            }
        }
        samples
    })
    .expect("the other strand");
    blocker.join().expect("the blocker ends");
    other.join().expect("the other strand ends")
}

/// A strand is spawned and joined: the spawn call (create), the join
/// until the strand's first statement (start), and a join of a strand
/// that has ended.
fn strand_lifecycle() -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let (mut create, mut start, mut join_done) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let before = cycles();
        let child = strand::spawn(|| ARRIVED.store(cycles(), SeqCst)).expect("a strand");
        let spawned = cycles();
        child.join().expect("the child ends");
        create.push(spawned - before);
        start.push(ARRIVED.load(SeqCst) - spawned);
        let child = strand::spawn(|| {}).expect("a strand");
        // Nothing else is queued but the child: it runs to its end.
        strand::yield_now().expect("a strand may yield");
        let before = cycles();
        child.join().expect("the child ended");
        join_done.push(cycles() - before);
    }
    (create, start, join_done)
}

/// Counts its messages' arrival against [`MARK`] and signals [`DONE`].
struct Timer;

impl Actor for Timer {
    type Message = ();

    fn handle(&mut self, (): (), _context: &mut ActorContext<'_, Self>) {
        ARRIVED.store(cycles(), SeqCst);
        DONE.signal();
    }
}

/// Rows on one core.
fn on_one_core() {
    let pool = Pool::with_cores(&[0], Config::new()).expect("a pool of core 0");
    pool.run(|| {
        report("yield between two strands", yield_between_two_strands());
        let (create, start, join_done) = strand_lifecycle();
        report("create a strand (spawn)", create);
        report("start it (join until its first statement)", start);
        report("join a strand that has ended", join_done);

        let semaphore = Semaphore::new(0);
        let (give, take) = pairs(
            || semaphore.release(1).expect("room for a permit"),
            |()| semaphore.acquire().expect("a permit"),
        );
        report("semaphore give, no switch", give);
        report("semaphore take, no switch", take);
        static GIVEN: Semaphore = Semaphore::new(0);
        report(
            "semaphore give with a switch (give, yield, waiter runs)",
            given_then_yield(|| GIVEN.acquire().expect("a permit"), || GIVEN.release(1).expect("room")),
        );
        static TAKEN: Semaphore = Semaphore::new(0);
        report(
            "semaphore take with a switch (blocks, another strand runs)",
            blocked_to_other(|| TAKEN.acquire().expect("a permit"), || TAKEN.release(1).expect("room")),
        );

        let mutex = Mutex::new(0u64);
        let (lock, unlock) = pairs(|| mutex.lock().expect("not poisoned"), drop);
        report("mutex lock, uncontended", lock);
        report("mutex unlock, uncontended", unlock);

        static SET: Event = Event::new();
        report(
            "event set with a switch (set, yield, waiter runs)",
            given_then_yield(
                || {
                    SET.wait().expect("set");
                    SET.reset();
                },
                || {
                    SET.set();
                },
            ),
        );

        let (sender, receiver) = channel::bounded::<u64>(1).expect("a channel");
        let (send, receive) = pairs(
            || sender.send(black_box(7)).expect("room"),
            |()| {
                black_box(receiver.recv().expect("a value"));
            },
        );
        report("channel send, no switch", send);
        report("channel receive, no switch", receive);
        let (sender, receiver) = channel::bounded::<u64>(1).expect("a channel");
        report(
            "channel send with a switch (send, yield, receiver runs)",
            given_then_yield(
                move || {
                    black_box(receiver.recv().expect("a value"));
                },
                move || sender.send(black_box(7)).expect("room"),
            ),
        );

        let (alloc, free) = pairs(|| black_box(Box::new([0u64; 8])), drop);
        report("heap alloc, 64 bytes", alloc);
        report("heap free, 64 bytes", free);

        report(
            "fork-join `join` of two empty closures",
            each(|| {
                black_box(roving::join(|| black_box(1), || black_box(2)));
            }),
        );

        let pool = Pool::current().expect("in the pool");
        let post = (0..ROUNDS)
            .map(|_| {
                mark();
                pool.post(0, || {
                    ARRIVED.store(cycles(), SeqCst);
                    DONE.signal();
                })
                .unwrap_or_else(|_| panic!("core 0 takes closures"));
                DONE.wait().expect("the closure ran");
                ARRIVED.load(SeqCst) - MARK.load(SeqCst)
            })
            .collect();
        report("post to the same core (post, poster blocks, closure runs)", post);
        let then = (0..ROUNDS)
            .map(|_| {
                roving::future::future_on(0, cycles)
                    .unwrap_or_else(|_| panic!("core 0 takes closures"))
                    .then(0, |completed| cycles() - completed)
                    .wait()
                    .expect("the continuation ran")
            })
            .collect();
        report("`.then` on the same core (completion to continuation)", then);

        let actor = pool.spawn_actor_on(0, Timer).unwrap_or_else(|_| panic!("an actor on core 0"));
        let message = (0..ROUNDS)
            .map(|_| {
                mark();
                actor.send(()).unwrap_or_else(|_| panic!("the actor takes messages"));
                DONE.wait().expect("the actor's turn");
                ARRIVED.load(SeqCst) - MARK.load(SeqCst)
            })
            .collect();
        report("actor message, same core (send, sender blocks, handler runs)", message);
        actor.stop();
    })
    .expect("the pool runs");
}

/// Core 1's deep sleeps so far.
fn deep_sleeps_of_core_1() -> u64 {
    cores::report(1).map_or(0, |report| report.deep_sleeps)
}

/// Waits until core 1 has gone to sleep after `slept` deep sleeps, and
/// returns its count.
fn core_1_asleep(slept: u64) -> u64 {
    loop {
        let now = deep_sleeps_of_core_1();
        if now > slept {
            return now;
        }
        core::hint::spin_loop();
    }
}

/// Core 1's counter at its last wake from the deep tier.
fn core_1_woke() -> u64 {
    cores::report(1).map_or(0, |report| report.last_deep_wake)
}

/// Rows across cores 0 and 1, each on one core's counter: the sender's
/// part on core 0, the woken receiver's on core 1, from its wake.
fn across_two_cores() {
    // No watch for silent cores: its scans would wake core 1 between a
    // post's wake-up and the measurement of it (its last deep wake).
    let config = Config::new().deep_idle_after(Duration::ZERO).silent_core_after(None);
    let pool = Pool::with_cores(&[0, 1], config).expect("a pool of cores 0 and 1");
    pool.run(|| {
        let pool = Pool::current().expect("in the pool");
        let (mut send, mut receive, mut hop) = (Vec::new(), Vec::new(), Vec::new());
        let mut slept = 0;
        for _ in 0..ROUNDS {
            slept = core_1_asleep(slept);
            let before = cycles();
            pool.post(1, || {
                ARRIVED.store(cycles(), SeqCst);
                DONE.signal();
            })
            .unwrap_or_else(|_| panic!("core 1 takes closures"));
            send.push(cycles() - before);
            DONE.wait().expect("the closure ran");
            receive.push(ARRIVED.load(SeqCst) - core_1_woke());
        }
        for _ in 0..ROUNDS {
            slept = core_1_asleep(slept);
            let ran_at = roving::future::future_on(0, || ())
                .unwrap_or_else(|_| panic!("core 0 takes closures"))
                .then(1, |()| cycles())
                .wait()
                .expect("the continuation ran");
            hop.push(ran_at - core_1_woke());
        }
        report("post to a sleeping core: the sender's part (the post, with its wake-up)", send);
        report("post to a sleeping core: the receiver's part (its wake-up to the closure)", receive);
        report("`.then` to a sleeping core: the receiver's part (its wake-up to the continuation)", hop);
    })
    .expect("the pool runs");
}

fn report(what: &str, mut samples: Vec<u64>) {
    samples.sort_unstable();
    let n = samples.len();
    assert!(n > 0 && samples[0] > 0, "{what}: no samples, or one of 0 cycles");
    println!("latency_table: {what}: min {}, median {}, max {}", samples[0], samples[n / 2], samples[n - 1]);
}

fn main() {
    let on = if cfg!(target_arch = "x86_64") { "x86_64 PC" } else { "AArch64" };
    println!(
        "latency_table: {ROUNDS} rounds each, the cycle counter ({on}; under -icount shift=0: instructions)"
    );
    on_one_core();
    if platform::core_count() >= 2 {
        across_two_cores();
    }
    pass("latency_table");
}

roving_kernel::entry!(main);
