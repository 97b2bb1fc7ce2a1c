//! How roving's costs grow with cores, counted in instructions for the
//! scaling table in `BENCHMARKS.md`: `benches/scaling` runs this kernel
//! under QEMU with `-icount shift=0,align=off,sleep=off` at 1 to 256 cores,
//! where the cycle counter advances by one per instruction, so every
//! figure is the same on every run. (The QEMU suite runs it at a few core
//! counts without `-icount`, to keep it working.)
//!
//! One pool of every core, whose idle cores sleep in the deep tier at
//! once; the strand that measures runs on core 0, and its messages go to
//! the last core, the farthest on a mesh. Under `-icount` QEMU runs the
//! cores in turn on one instruction clock and lets a core run until it
//! sleeps, so while one core works the others wait, and each figure,
//! taken on one core's own counter, counts that core's instructions alone.
//!
//! Rows across cores (2 or more):
//!
//! - a post to a sleeping core: the sender's part (with its wake-up), the
//!   receiver's part (from its wake to the closure);
//! - a core's way to sleep: from its closure's last statement to its deep
//!   sleep, every idle search round and the sleep protocol between;
//! - a strand blocked on core 0 and signalled from the last core: the
//!   signal's own cost, and core 0's part, from its wake-up to the strand
//!   running again;
//! - an async task's wake from another core: the signal, and the woken
//!   core's part, from its wake-up to the task's poll;
//! - a steal: core 1 woken for a fan-out core 0 offered, from its wake-up
//!   to the stolen task running.
//!
//! With the mesh (`roving.mailboxes=mesh`, and above 64 cores by
//! default), a post to the last core is forwarded: the sender carries it
//! past the sleeping cores between, so the sender's part of a post
//! measures a message forwarded by the mesh.
//!
//! Rows at every core count: spawning a strand and a task, the caller's
//! part, with every other core asleep (a spawn may offer its work to them).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::Depth;
use roving::sync::Signal;
use roving::time::Instant;
use roving::{Config, Pool, platform, strand};
use roving_kernel::{cores, cycles, println};
use roving_test_kernels::{bootarg_u64, mailboxes_asked, pass};

/// Where a closure on the far core began.
static ARRIVED: AtomicU64 = AtomicU64::new(0);
/// Where that closure's last statement ran.
static ENDED: AtomicU64 = AtomicU64::new(0);
/// A signal's own cost, taken where it was given.
static SIGNALLED: AtomicU64 = AtomicU64::new(0);
static DONE: Signal = Signal::new();

/// How long the measuring core sleeps between looks at another core's
/// sleeps: longer than any way to sleep measured, so that its looks do not
/// fall inside one.
const LOOK_EVERY: Duration = Duration::from_millis(50);

fn report_of(core: usize) -> cores::CoreReport {
    cores::report(core).expect("a core of this machine")
}

/// Waits until `core` has gone into the deep tier more than `slept` times;
/// returns its count. The calling core sleeps between looks rather than
/// spin: QEMU may run it in the middle of the other core's way to sleep,
/// and on the shared instruction clock a spin would count there.
fn asleep_after(core: usize, slept: u64) -> u64 {
    loop {
        let now = report_of(core).deep_sleeps;
        if now > slept {
            return now;
        }
        platform::wait_for_event(Depth::Deep, Some(Instant::now() + LOOK_EVERY));
    }
}

/// Waits until `core` is in the deep tier now: it went there after its
/// last wake-up (both times on its own counter). For rounds whose work any
/// core may take: when another core took it, `core` was never woken and is
/// still in the sleep it was in, which [`asleep_after`] would wait past
/// for ever.
fn asleep_now(core: usize) {
    loop {
        let report = report_of(core);
        if report.deep_sleeps > 0 && report.last_deep_sleep > report.last_deep_wake {
            return;
        }
        platform::wait_for_event(Depth::Deep, Some(Instant::now() + LOOK_EVERY));
    }
}

/// The rows across cores: core 0 to the last core, `rounds` times each.
fn across_cores(pool: &Pool, far: usize, rounds: usize) {
    let (mut send, mut receive, mut to_sleep) = (Vec::new(), Vec::new(), Vec::new());
    let mut slept = 0;
    for round in 0..=rounds {
        slept = asleep_after(far, slept);
        if round > 0 {
            // The far core may have slept and woken for something else
            // before the closure came: wait for its sleep after the
            // closure's end (both taken on its own counter).
            let ended = ENDED.load(SeqCst);
            while report_of(far).last_deep_sleep < ended {
                slept = asleep_after(far, slept);
            }
            to_sleep.push(report_of(far).last_deep_sleep - ended);
        }
        if round == rounds {
            break;
        }
        let before = cycles();
        pool.post(far, || {
            ARRIVED.store(cycles(), SeqCst);
            DONE.signal();
            ENDED.store(cycles(), SeqCst);
        })
        .unwrap_or_else(|_| panic!("the last core takes closures"));
        send.push(cycles() - before);
        DONE.wait().expect("the closure ran");
        receive.push(ARRIVED.load(SeqCst) - report_of(far).last_deep_wake);
    }
    report("post to a sleeping core: the sender's part (with its wake-up)", send);
    report("post to a sleeping core: the receiver's part (its wake-up to the closure)", receive);
    report("a core's way to sleep (its closure's end to its deep sleep)", to_sleep);

    // Counted only in rounds where core 0 slept before the signal came:
    // where QEMU ran the far core first, the signal found the strand
    // still running and woke nothing.
    let (mut signal, mut resumed, mut awake) = (Vec::new(), Vec::new(), 0);
    // The far core is asleep: the first loop waited for it last.
    for _ in 0..rounds {
        let (sleeps, posted) = (report_of(0).deep_sleeps, cycles());
        pool.post(far, || {
            let at = cycles();
            DONE.signal();
            SIGNALLED.store(cycles() - at, SeqCst);
        })
        .unwrap_or_else(|_| panic!("the last core takes closures"));
        DONE.wait().expect("the closure ran");
        let back = cycles();
        assert_eq!(platform::current_core(), Some(0), "the pool's root strand is pinned to core 0");
        let core_0 = report_of(0);
        if core_0.deep_sleeps > sleeps && core_0.last_deep_wake > posted {
            signal.push(SIGNALLED.load(SeqCst));
            resumed.push(back - core_0.last_deep_wake);
        } else {
            awake += 1;
        }
        slept = asleep_after(far, slept);
    }
    println!("scaling: {awake} of {rounds} rounds left out: core 0 had not slept when the signal came");
    if !signal.is_empty() {
        report("a strand's wake from another core: the signal (with its wake-up)", signal);
        report(
            "a strand's wake from another core: the woken core's part (its wake-up to the strand running)",
            resumed,
        );
    }
}

/// What an async task on the far core waits on, and when it ran again.
static TASK_WAKE: Signal = Signal::new();

/// An async task's wake from another core: a task on the far core waits
/// on a signal; with the far core asleep, core 0 gives the signal. The
/// signal's cost (the task's schedule and its core's wake-up), and the far
/// core's part, from its wake-up to the task's poll running.
fn async_wakes(far: usize, rounds: usize) {
    // Read before the task exists: its core may run it, and sleep again,
    // before this core looks.
    let mut slept = report_of(far).deep_sleeps;
    let task = roving::spawn_async_on(far, async move {
        for _ in 0..rounds {
            TASK_WAKE.wait_async().await.expect("a wait");
            ARRIVED.store(cycles(), SeqCst);
            DONE.signal();
        }
    })
    .unwrap_or_else(|_| panic!("an async task on the far core"));
    let (mut signal, mut polled) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        // The task waits again, and its core has slept since.
        slept = asleep_after(far, slept);
        let at = cycles();
        TASK_WAKE.signal();
        signal.push(cycles() - at);
        DONE.wait().expect("the task ran");
        polled.push(ARRIVED.load(SeqCst) - report_of(far).last_deep_wake);
    }
    task.join().expect("the task ends");
    report("an async task's wake from another core: the signal (with the wake-up)", signal);
    report("an async task's wake from another core: the woken core's part (its wake-up to the poll)", polled);
}

/// The core that ran the first stolen task of a round, and when.
static STOLEN_BY: AtomicUsize = AtomicUsize::new(NOBODY);
static STOLEN_AT: AtomicU64 = AtomicU64::new(0);
/// Tasks of a round not yet run.
static LEFT: AtomicUsize = AtomicUsize::new(0);
const NOBODY: usize = usize::MAX;

/// A fan-out's task: notes the first core other than 0 to run one.
fn fanned_out() {
    let core = platform::current_core().expect("a core of the pool");
    if core != 0 && STOLEN_BY.compare_exchange(NOBODY, core, SeqCst, SeqCst).is_ok() {
        STOLEN_AT.store(cycles(), SeqCst);
    }
    if LEFT.fetch_sub(1, SeqCst) == 1 {
        DONE.signal();
    }
}

/// A steal: with core 1 asleep, core 0 spawns three tasks, the third of
/// which offers the oldest on its steal list and wakes core 1, and spins
/// (so as not to run that one itself) until core 1 has run it, for at
/// most [`LOOK_EVERY`]. The thief's part, from its wake-up to the stolen
/// task running; rounds where core 1 stole nothing are left out.
fn steals(rounds: usize) {
    const FAN_OUT: usize = 3;
    let (mut thief, mut elsewhere) = (Vec::new(), 0);
    for _ in 0..rounds {
        asleep_now(1);
        STOLEN_BY.store(NOBODY, SeqCst);
        LEFT.store(FAN_OUT, SeqCst);
        for _ in 0..FAN_OUT {
            roving::spawn_task(fanned_out).unwrap_or_else(|_| panic!("a task"));
        }
        let deadline = Instant::now() + LOOK_EVERY;
        while STOLEN_BY.load(SeqCst) == NOBODY && Instant::now() < deadline {
            core::hint::spin_loop();
        }
        DONE.wait().expect("the tasks ran");
        // Without -icount (the QEMU suite), core 1 may not run in time.
        match STOLEN_BY.load(SeqCst) {
            1 => thief.push(STOLEN_AT.load(SeqCst) - report_of(1).last_deep_wake),
            _ => elsewhere += 1,
        }
    }
    println!(
        "scaling: {elsewhere} of {rounds} steals left out: core 1 did not steal in time, or another core did"
    );
    if !thief.is_empty() {
        report("a steal: the thief's part (its wake-up to the stolen task running)", thief);
    }
}

/// Spawning, the caller's part, with every other core asleep.
fn spawns(rounds: usize) {
    let (mut strands, mut tasks) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let before = cycles();
        let child = strand::spawn(|| ()).expect("a strand");
        strands.push(cycles() - before);
        child.join().expect("the child ends");
    }
    for _ in 0..rounds {
        let before = cycles();
        roving::spawn_task(|| DONE.signal()).unwrap_or_else(|_| panic!("a task"));
        tasks.push(cycles() - before);
        DONE.wait().expect("the task ran");
    }
    report("spawn a strand (the caller's part)", strands);
    report("spawn a task (the caller's part)", tasks);
}

fn report(what: &str, mut samples: Vec<u64>) {
    samples.sort_unstable();
    let n = samples.len();
    // Without -icount (the QEMU suite) the counter may be coarser than a
    // short operation, so one sample of 0 is no fault; all of 0 is.
    assert!(n > 0 && samples[n - 1] > 0, "{what}: no samples, or every one of 0 cycles");
    let cores = platform::core_count();
    println!(
        "scaling: {cores} cores: {what}: min {}, median {}, max {}",
        samples[0],
        samples[n / 2],
        samples[n - 1]
    );
}

fn main() {
    let rounds = usize::try_from(bootarg_u64("roving.rounds", 200)).expect("a round count");
    let cores = platform::core_count();
    let on = if cfg!(target_arch = "x86_64") { "x86_64 PC" } else { "AArch64" };
    println!(
        "scaling: {cores} cores, {rounds} rounds each, the cycle counter ({on}; under -icount shift=0: instructions)"
    );
    // No watch for silent cores: its scans would wake a sleeping core
    // between a wake and the measurement of it.
    let config =
        Config::new().mailboxes(mailboxes_asked()).deep_idle_after(Duration::ZERO).silent_core_after(None);
    let pool = Pool::with_config(config).expect("a pool of every core");
    pool.run(|| {
        let pool = Pool::current().expect("in the pool");
        if cores >= 2 {
            across_cores(&pool, cores - 1, rounds);
            async_wakes(cores - 1, rounds);
            steals(rounds);
        }
        spawns(rounds);
    })
    .expect("the pool runs");
    pass("scaling");
}

roving_kernel::entry!(main);
