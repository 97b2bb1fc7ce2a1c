//! Interrupt latency, measured for `BENCHMARKS.md`: `benches/bare-metal`
//! runs this kernel under QEMU with `-icount shift=0,align=off,sleep=off`,
//! where a core's cycle counter advances by one per instruction, so each
//! figure is a count of instructions, the same on every run. (The QEMU
//! suite runs it once without `-icount`, to keep it working.)
//!
//! Three paths, [`ROUNDS`] times each, on core 0's counter:
//!
//! 1. *raise to handler*: from just before the strand raises the line
//!    (routed to its own core) to the handler's first statement;
//! 2. *handler back to the interrupted strand*: from the handler's last
//!    statement to the strand's next one, when it sees the handler ran;
//! 3. *handler to another strand*: the line fires while core 0 is idle
//!    (raised by core 1); from the handler's last statement, having raised
//!    a `Signal`, to the strand that waited on it running.
//!
//! Then a check, not a figure: for [`TOGETHER_ROUNDS`] rounds the handler,
//! on the idle core 0, wakes three strands of core 0 at once: the root
//! strand, pinned to core 0, and two partners that any core may run (the
//! second partner's wake finds the first where the handler queued it on
//! the sleeping core, `src/pool/idle_wait.rs`). All three must run every
//! round. The partners are spawned only once core 1's raiser holds core 1:
//! an idle core 1 could take a partner from core 0's LIFO slot, and the
//! partner's wakes would then go to core 1, which its raiser keeps busy
//! while core 0 waits for the partner (a hang that a loaded host showed).
//!
//! Paths 2 and 3 are the ones Zephyr's `latency_measure` reports as
//! "Switch from ISR back to interrupted thread" and "Switch from ISR to
//! another thread". Needs 2 cores; the PC, QEMU virt and the Pi 4 (a
//! controller that can raise a line).
//!
//! Under `-icount` every core's instructions advance one shared clock, so
//! while core 0 measures, core 1 sleeps in the deep tier (`WFI`, `HLT`):
//! the pool sleeps deeply at once, and core 1 raises the line for path 3
//! only once core 0 has gone to sleep, then sleeps itself.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::Depth;
use roving::sync::Signal;
use roving::{Pool, platform};
use roving_kernel::interrupts::{self, Handled};
use roving_kernel::{cores, cycles, println};
use roving_test_kernels::{TestLine, expected_cores, pass};

const ROUNDS: usize = 1000;
/// Rounds of the check that wakes three strands at once.
const TOGETHER_ROUNDS: u32 = 200;

/// Core 0's counter at the handler's first and last statements.
static ENTERED: AtomicU64 = AtomicU64::new(0);
static LEFT: AtomicU64 = AtomicU64::new(0);
static FIRED: AtomicU32 = AtomicU32::new(0);
/// Path 3: raised by the handler, waited on by the strand.
static WOKEN: Signal = Signal::new();
/// Which path the handler serves.
static WAKES_A_STRAND: AtomicBool = AtomicBool::new(false);
/// The check: the handler also raises each of `PARTNERS`, whose strands
/// count their wakes in `PARTNER_RAN`.
static WAKES_PARTNERS: AtomicBool = AtomicBool::new(false);
static PARTNERS: [Signal; 2] = [Signal::new(), Signal::new()];
static PARTNER_RAN: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
/// Path 3: the round core 0 is about to wait for; core 1 may raise the
/// line once core 0's deep sleeps have gone past `SLEPT`.
static READY: AtomicU32 = AtomicU32::new(0);
static SLEPT: AtomicU64 = AtomicU64::new(0);
/// Raisers that have started on core 1 (and hold it until they end).
static RAISERS_STARTED: AtomicU32 = AtomicU32::new(0);

fn handler(_line: u32) -> Handled {
    ENTERED.store(cycles(), SeqCst);
    FIRED.fetch_add(1, SeqCst);
    if WAKES_A_STRAND.load(SeqCst) {
        WOKEN.signal();
        if WAKES_PARTNERS.load(SeqCst) {
            PARTNERS.iter().for_each(Signal::signal);
        }
    }
    LEFT.store(cycles(), SeqCst);
    Handled::Yes
}

fn main() {
    assert_eq!(platform::core_count(), expected_cores());
    assert!(platform::core_count() >= 2, "the latency kernel needs 2 cores");
    let test = TestLine::new();
    interrupts::bind(test.line, 0, handler).expect("binding the test line to core 0");
    // Idle cores go straight to the deep tier: a light sleeper spins
    // under QEMU, and its instructions would count in the other core's.
    // No watch for silent cores: its scans would wake core 0 between an
    // interrupt's wake-up and the measurement of it.
    let config = roving::Config::new().deep_idle_after(Duration::ZERO).silent_core_after(None);
    let pool = Pool::with_cores(&[0, 1], config).expect("a pool of cores 0 and 1");
    let (entry, back, other) = pool
        .run(|| {
            let (entry, back) = on_the_interrupted_strand(test);
            let other = to_another_strand(test);
            strands_woken_together(test);
            (entry, back, other)
        })
        .expect("the pool runs");
    let on = if cfg!(target_arch = "x86_64") { "x86_64 PC" } else { "AArch64" };
    println!(
        "latency: {ROUNDS} rounds each, core 0's cycle counter ({on}; under -icount shift=0: instructions)"
    );
    report("raise to handler", entry);
    report("handler back to the interrupted strand", back);
    report("handler to another strand (core idle when the line fired)", other);
    println!(
        "latency: {TOGETHER_ROUNDS} rounds of one handler waking three strands of the idle core: all ran each time"
    );
    pass("latency");
}

/// Paths 1 and 2: the strand raises the line on its own core.
fn on_the_interrupted_strand(test: TestLine) -> (Vec<u64>, Vec<u64>) {
    let (mut entry, mut back) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for _ in 0..ROUNDS {
        let fired = FIRED.load(SeqCst);
        let raised = cycles();
        test.fire();
        while FIRED.load(SeqCst) == fired {
            core::hint::spin_loop();
        }
        let resumed = cycles();
        entry.push(ENTERED.load(SeqCst) - raised);
        back.push(resumed - LEFT.load(SeqCst));
    }
    (entry, back)
}

/// Core 0's deep sleeps so far.
fn deep_sleeps_of_core_0() -> u64 {
    cores::report(0).map_or(0, |report| report.deep_sleeps)
}

/// Path 3: a strand on core 0 waits on a `Signal`; a strand on core 1,
/// asleep until then, raises the line once core 0 has gone to sleep, and
/// sleeps again.
fn to_another_strand(test: TestLine) -> Vec<u64> {
    WAKES_A_STRAND.store(true, SeqCst);
    let raiser = raise_when_core_0_sleeps(roving::Pool::current().expect("in the pool"), test, ROUNDS as u32);
    let mut other = Vec::with_capacity(ROUNDS);
    for round in 1..=ROUNDS as u32 {
        SLEPT.store(deep_sleeps_of_core_0(), SeqCst);
        READY.store(round, SeqCst);
        platform::wake(1).expect("core 1 exists");
        WOKEN.wait().expect("woken by the handler");
        other.push(cycles() - LEFT.load(SeqCst));
    }
    raiser.join().expect("the raiser ends");
    other
}

/// A strand on core 1, asleep until then, that raises the line `rounds`
/// times, each once core 0 has said the round is ready (`READY`) and has
/// gone to sleep since (`SLEPT`).
fn raise_when_core_0_sleeps(pool: Pool, test: TestLine, rounds: u32) -> roving::strand::JoinHandle<()> {
    pool.spawn_strand_on(1, move || {
        RAISERS_STARTED.fetch_add(1, SeqCst);
        for round in 1..=rounds {
            // Core 1 itself sleeps (the strand holds it) until core 0
            // says the round is ready.
            while READY.load(SeqCst) != round {
                platform::wait_for_event(Depth::Deep, None);
            }
            while deep_sleeps_of_core_0() == SLEPT.load(SeqCst) {
                core::hint::spin_loop();
            }
            test.fire();
        }
    })
    .expect("the raiser on core 1")
}

/// The check: as path 3, with the handler waking two partner strands of
/// core 0's too; each round, all three must have run before the next.
fn strands_woken_together(test: TestLine) {
    WAKES_PARTNERS.store(true, SeqCst);
    let started = RAISERS_STARTED.load(SeqCst);
    let raiser =
        raise_when_core_0_sleeps(roving::Pool::current().expect("in the pool"), test, TOGETHER_ROUNDS);
    while RAISERS_STARTED.load(SeqCst) == started {
        roving::strand::yield_now().expect("a strand");
    }
    let partners = [0, 1].map(|partner| {
        // Spawned from core 0, which runs them; core 1's raiser holds it
        // from now until the last round, so nothing else takes them.
        roving::strand::spawn(move || {
            for round in 1..=TOGETHER_ROUNDS {
                PARTNERS[partner].wait().expect("woken by the handler");
                PARTNER_RAN[partner].store(round, SeqCst);
            }
        })
        .expect("a partner")
    });
    let partners_ran = |round| PARTNER_RAN.iter().all(|ran| ran.load(SeqCst) == round);
    for round in 1..=TOGETHER_ROUNDS {
        // The partners wait (each waits again once it has counted the
        // previous round) before core 0 goes to sleep.
        while !partners_ran(round - 1) {
            roving::strand::yield_now().expect("a strand");
        }
        SLEPT.store(deep_sleeps_of_core_0(), SeqCst);
        READY.store(round, SeqCst);
        platform::wake(1).expect("core 1 exists");
        WOKEN.wait().expect("woken by the handler");
        while !partners_ran(round) {
            roving::strand::yield_now().expect("a strand");
        }
    }
    raiser.join().expect("the raiser ends");
    for partner in partners {
        partner.join().expect("a partner ends");
    }
    WAKES_PARTNERS.store(false, SeqCst);
}

fn report(what: &str, mut samples: Vec<u64>) {
    samples.sort_unstable();
    let n = samples.len();
    assert!(samples[0] > 0, "{what}: a sample of 0 cycles");
    println!(
        "latency: {what}: min {}, median {}, 99th percentile {}, max {}",
        samples[0],
        samples[n / 2],
        samples[n * 99 / 100],
        samples[n - 1]
    );
}

roving_kernel::entry!(main);
