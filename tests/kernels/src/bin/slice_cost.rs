//! What a time slice costs, counted in instructions for `BENCHMARKS.md`:
//! `benches/bare-metal` runs this kernel on one core under QEMU with
//! `-icount shift=0,align=off,sleep=off`, where the cycle counter advances
//! by one per instruction. (The QEMU suite runs it once without `-icount`,
//! to keep it working.)
//!
//! 1. **One preemption.** Two strands spin on a pool with the shortest
//!    slice, each writing the cycle counter to its own stamp on every
//!    round. When a strand's stamps have a gap in which the other one's
//!    stamp moved, the other's last stamp to this one's first is one
//!    preemption: the tick's
//!    interrupt, `preempt::on_tick`, the entry's save, the yield, the
//!    scheduler, the switch, and the other strand's restore. Zephyr's
//!    `latency_measure` reports 315 cycles for a preemptive `k_yield`
//!    context switch.
//! 2. **A tick with nothing else to run.** One strand spins alone: each
//!    slice's tick finds no other work and only asks for the next one.
//!    The gaps in its stamps are those ticks.
//! 3. **An interrupt waking a `High` strand.** The strand waits on a
//!    `Signal`; a `Normal` strand spins and, once the other waits, fires
//!    the board's test line. From the handler's entry to the woken strand
//!    running: the handler, the wake, the preemption of the spinner at
//!    the handler's end and the switch; and from the handler's last
//!    statement, Zephyr's "switch from ISR to another thread" (374
//!    cycles). (At `Normal` the strand would wait for the spinner's slice
//!    to end.)
//! 4. **Throughput.** Four strands each compute the same fixed amount
//!    (2^23 rounds of an LCG, about 34 M instructions each), first in a
//!    pool without a slice, then with a 1 ms slice, which preempts them
//!    round-robin about every million instructions. The loss is the
//!    difference over the time without a slice.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use core::time::Duration;
use roving::strand::Priority;
use roving::sync::Signal;
use roving::{Config, Pool, platform, strand};
use roving_kernel::interrupts::{self, Handled};
use roving_kernel::{cycles, println};
use roving_test_kernels::{TestLine, bootarg_u64, pass};

/// Samples of each path: boot argument `slice_cost.samples` (for a shorter
/// run under `tools/path-profile`), read once by `main`, since the loops
/// that stamp must stay a few instructions a round.
static SAMPLES: AtomicUsize = AtomicUsize::new(1000);

fn sample_count() -> usize {
    SAMPLES.load(Relaxed)
}
/// A stamp further than this from the one before was an interruption,
/// not a round of the loop (a round is a few dozen instructions).
const GAP: u64 = 200;

/// Each spinner's latest stamp.
static LAST: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
static DONE: AtomicBool = AtomicBool::new(false);

fn main() {
    SAMPLES.store(bootarg_u64("slice_cost.samples", 1000) as usize, Relaxed);
    let shortest = Config::new().time_slice(Config::MIN_TIME_SLICE);
    let pool = Pool::with_cores(&[0], shortest).expect("a preempting pool of core 0");
    let (switches, ticks) = pool.run(|| (preemptions(), lone_ticks())).expect("the pool runs");
    let pool = Pool::with_cores(&[0], shortest).expect("a preempting pool of core 0");
    println!(
        "slice_cost: {} samples each, core 0's cycle counter (under -icount shift=0: instructions); slice {} us",
        sample_count(),
        Config::MIN_TIME_SLICE.as_micros()
    );
    report("one preemption, tick to the next strand running", switches);
    report("a tick with nothing else to run (the strand goes on)", ticks);
    let test = TestLine::new();
    interrupts::bind(test.line, 0, on_test_line).expect("binding the test line");
    let (woken, woken_ticks, from_end) = pool.run(high_wakes).expect("the pool runs");
    report("an interrupt's handler entry to a woken High strand running, beside a spinner", woken);
    report(
        "an interrupt handler's last statement to the High strand it woke running, beside a spinner",
        from_end,
    );
    // Within a tick: before the spinner's slice would have ended. Under
    // -icount (the suite passes slice_cost.check_bound=1) every sample
    // must be; on a host's wall clock only the median, since a host
    // thread can lose its CPU for longer than a slice.
    let slice = platform::tick_hz() * Config::MIN_TIME_SLICE.as_micros() as u64 / 1_000_000;
    let worst = woken_ticks.iter().max().copied().unwrap_or(0);
    println!("slice_cost: the woken High strand ran within {worst} ticks at worst; a slice is {slice}");
    let bound = if bootarg_u64("slice_cost.check_bound", 0) == 1 { worst } else { median_of(&woken_ticks) };
    assert!(bound < slice, "a High strand woken by an interrupt waited {bound} ticks, a slice is {slice}");
    if bootarg_u64("slice_cost.throughput", 1) == 0 {
        pass("slice_cost");
        return;
    }

    let off = compute(Config::new());
    let on = compute(Config::new().time_slice(Duration::from_millis(1)));
    println!(
        "slice_cost: 4 strands x 2^23 LCG rounds: {off} cycles without a slice, {on} with 1 ms slices: {:+.3}%",
        (on as f64 - off as f64) * 100.0 / off as f64
    );
    pass("slice_cost");
}

/// Two spinners take turns; each turn's first stamp minus the other's
/// last is one sample.
fn preemptions() -> Vec<u64> {
    DONE.store(false, Relaxed);
    let spinners: Vec<_> =
        (0..2).map(|me| strand::spawn(move || stamp_turns(me)).expect("a spinner")).collect();
    let mut samples: Vec<u64> = spinners.into_iter().flat_map(|s| s.join().expect("a spinner")).collect();
    samples.truncate(sample_count());
    samples
}

/// Stamps its own slot every round. A gap in its own stamps during which
/// the other strand stamped was the other's turn: the other's last stamp
/// to this strand's first is a preemption. (Each strand writes only its
/// own slot, so a strand preempted between reading the counter and
/// storing it leaves its slot a round behind, never ahead.)
fn stamp_turns(me: usize) -> Vec<u64> {
    let mut samples = Vec::with_capacity(sample_count());
    let mut last = cycles();
    while !DONE.load(Relaxed) {
        let now = cycles();
        LAST[me].store(now, Relaxed);
        let other = LAST[1 - me].load(Relaxed);
        // (A preemption between reading the counter and reading the
        // other's stamp leaves the other's newer than `now`: no sample.)
        if now - last > GAP && last < other && other < now {
            samples.push(now - other);
            if samples.len() == sample_count() / 2 {
                DONE.store(true, Relaxed);
            }
        }
        last = now;
    }
    samples
}

/// The handler's entry and its last statement, for the strand it wakes.
static ENTERED: AtomicU64 = AtomicU64::new(0);
static LEFT: AtomicU64 = AtomicU64::new(0);
static ENTERED_TICKS: AtomicU64 = AtomicU64::new(0);
static WOKEN: Signal = Signal::new();
/// The round the woken strand waits for.
static WAITING: AtomicU64 = AtomicU64::new(0);

fn on_test_line(_line: u32) -> Handled {
    ENTERED.store(cycles(), Relaxed);
    ENTERED_TICKS.store(platform::ticks(), Relaxed);
    if TestLine::new().quiet() {
        WOKEN.signal();
    }
    LEFT.store(cycles(), Relaxed);
    Handled::Yes
}

/// A `High` strand waits; a spinner fires the test line each time it
/// waits. Samples: the handler's entry to the strand running, in cycles
/// and in ticks, and its last statement to the strand running.
fn high_wakes() -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    WAITING.store(0, Relaxed);
    let waiter = strand::spawn(|| {
        strand::set_priority(Priority::High).expect("a strand");
        // One vector: a strand's result has a size limit.
        let mut samples = Vec::with_capacity(sample_count());
        for round in 1..=sample_count() as u64 {
            WAITING.store(round, Relaxed);
            WOKEN.wait().expect("woken");
            let (now, ticks) = (cycles(), platform::ticks());
            samples.push([
                now - ENTERED.load(Relaxed),
                ticks - ENTERED_TICKS.load(Relaxed),
                now - LEFT.load(Relaxed),
            ]);
        }
        samples
    })
    .expect("the waiter");
    let spinner = strand::spawn(|| {
        for round in 1..=sample_count() as u64 {
            while WAITING.load(Relaxed) < round {
                core::hint::spin_loop();
            }
            TestLine::new().fire();
        }
    })
    .expect("the spinner");
    spinner.join().expect("the spinner");
    let samples = waiter.join().expect("the waiter");
    let column = |at: usize| samples.iter().map(|sample| sample[at]).collect();
    (column(0), column(1), column(2))
}

/// One spinner alone: the gaps in its stamps.
fn lone_ticks() -> Vec<u64> {
    strand::spawn(|| {
        let mut samples = Vec::with_capacity(sample_count());
        let mut last = cycles();
        while samples.len() < sample_count() {
            let now = cycles();
            if now - last > GAP {
                samples.push(now - last);
            }
            last = now;
        }
        samples
    })
    .expect("the lone spinner")
    .join()
    .expect("the lone spinner")
}

/// Cycles for four strands to compute 2^23 LCG rounds each, on a pool of
/// core 0 built from `config`.
fn compute(config: Config) -> u64 {
    let pool = Pool::with_cores(&[0], config).expect("a pool of core 0");
    pool.run(|| {
        let start = cycles();
        let strands: Vec<_> = (0..4u64)
            .map(|seed| {
                strand::spawn(move || {
                    let mut x = seed;
                    for _ in 0..1u64 << 23 {
                        x = core::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
                    }
                    x
                })
                .expect("a computing strand")
            })
            .collect();
        strands.into_iter().for_each(|s| {
            s.join().expect("a computing strand");
        });
        cycles() - start
    })
    .expect("the pool runs")
}

fn median_of(samples: &[u64]) -> u64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

fn report(what: &str, mut samples: Vec<u64>) {
    samples.sort_unstable();
    let n = samples.len();
    assert!(n > 0, "no samples of {what}");
    println!(
        "slice_cost: {what}: median {}, 10th percentile {}, 90th {}, max {}",
        samples[n / 2],
        samples[n / 10],
        samples[n * 9 / 10],
        samples[n - 1]
    );
}

roving_kernel::entry!(main);
