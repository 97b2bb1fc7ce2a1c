//! From a device interrupt to a running strand, on every board.
//!
//! A compute pool keeps every core but the last busy with tasks that never
//! yield (for the whole run, seconds); an I/O pool owns the last core. A
//! strand of the I/O pool makes the board's test line fire ([`TestLine`])
//! and waits on a `Signal` that the line's handler raises:
//!
//! 1. [`ROUNDS`] times (or `irq.rounds=N`, which scales phase 2 too) with
//!    the line routed to the I/O core;
//! 2. [`BUSY_ROUNDS`] times with it routed to a busy compute core, whose
//!    never-yielding task the handler interrupts (interrupts are open
//!    while work runs);
//! 3. [`OP_ROUNDS`] times for each other interrupt-safe way to wake work:
//!    an `Event`, a `Semaphore`, a parked strand's `Unparker`, a channel's
//!    `try_send`, an actor's `InterruptSender` (whose actor then wakes
//!    the strand), and an async driver task that fires the line and
//!    awaits the `Signal` its handler raises;
//! 4. then the line storms on a compute core, twice: its handler finds
//!    nothing to do and the line keeps firing; then its handler says it
//!    had work, yet the line is pending again each time it returns. The
//!    kernel masks and reports each storm, and every compute core keeps
//!    working throughout.
//!
//! None may be lost or doubled; the latency from the handler's entry to
//! the woken strand running is printed (median, 99th percentile, maximum,
//! in ticks), with the longest masked section of every core. Bad input to
//! the binding calls gets typed errors. On one core there is no compute
//! pool: phase 1 and the storm run on the I/O core alone.
//!
//! With `roving.unsafe_in_handler=1`, a handler blocks instead, which
//! debug builds refuse with a panic naming what to call instead: the
//! handler fails alone, its line is masked, and the kernel passes (a
//! panicking or faulting handler is the `faults` kernel's `handler` case).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::AtomicPtr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::actor::{Actor, ActorContext, InterruptSender};
use roving::strand::Unparker;
use roving::sync::channel::{self, Sender};
use roving::sync::{Event, Semaphore, Signal};
use roving::{Config, Pool, platform, strand};
use roving_kernel::interrupts::{self, BindError, Handled};
use roving_kernel::{MAX_CORES, cores, println};
use roving_test_kernels::{TestLine, bootarg_u64, expected_cores, pass};

/// Each phase's rounds (phase 3's for each way to wake). On the Pi 3 the
/// line is the system timer's compare, which QEMU serves with a host
/// timer, and the I/O core sleeps between rounds: each round waits for the
/// host to run two of QEMU's threads, about 0.5 ms on a quiet host and
/// 16-26 ms on one running five such guests beside two busy loops, where
/// the 11,400 rounds the other boards do outlasted the time limit. So the
/// Pi 3 does a sixth of them; every other board raises the line itself.
#[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
const ROUNDS: usize = 10_000;
#[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
const BUSY_ROUNDS: usize = 1_000;
#[cfg(not(all(target_arch = "aarch64", feature = "raspi3b")))]
const OP_ROUNDS: usize = 200;
#[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
const ROUNDS: usize = 1_500;
#[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
const BUSY_ROUNDS: usize = 200;
#[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
const OP_ROUNDS: usize = 30;

/// Phase 1's rounds: [`ROUNDS`], or `irq.rounds` from the command line
/// (the suite asks for fewer at 8 cores, where the I/O core's QEMU thread
/// shares two host CPUs with seven busy ones); phase 2's shrink with them.
fn idle_rounds() -> usize {
    usize::try_from(bootarg_u64("irq.rounds", ROUNDS as u64)).expect("irq.rounds fits a usize").max(1)
}

static WOKEN: Signal = Signal::new();
/// How the handler wakes the I/O strand (phase 3): one of `Op`.
static OP: AtomicU32 = AtomicU32::new(Op::Signal as u32);
static EVENT: Event = Event::new();
static PERMITS: Semaphore = Semaphore::new(0);
/// Set up by the I/O strand before phase 3, never freed.
static UNPARKER: AtomicPtr<Unparker> = AtomicPtr::new(core::ptr::null_mut());
static VALUES: AtomicPtr<Sender<u64>> = AtomicPtr::new(core::ptr::null_mut());
static TO_ACTOR: AtomicPtr<InterruptSender<Echo>> = AtomicPtr::new(core::ptr::null_mut());

/// The interrupt-safe operations a handler wakes work with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Signal,
    Event,
    Semaphore,
    Unpark,
    TrySend,
    Actor,
}

const OPS: [Op; 5] = [Op::Event, Op::Semaphore, Op::Unpark, Op::TrySend, Op::Actor];

/// Hands each message on to the I/O strand: the actor of phase 3.
struct Echo;

impl Actor for Echo {
    type Message = u64;
    fn handle(&mut self, _round: u64, _: &mut ActorContext<'_, Self>) {
        WOKEN.signal();
    }
}

/// A `'static` made once by the I/O strand and never freed.
fn leaked<T>(slot: &AtomicPtr<T>) -> &'static T {
    // SAFETY: set from `Box::leak` before the handler may run this op.
    unsafe { slot.load(SeqCst).as_ref() }.expect("set up before use")
}
/// Ticks at the latest handler's entry.
static ENTERED: AtomicU64 = AtomicU64::new(0);
static HANDLED: AtomicU64 = AtomicU64::new(0);
static HANDLER_CORE: AtomicUsize = AtomicUsize::new(usize::MAX);
static STORM_FIRINGS: AtomicU64 = AtomicU64::new(0);
static LINE: AtomicU32 = AtomicU32::new(0);
/// The compute tasks run until this is set.
static STOP: AtomicBool = AtomicBool::new(false);
/// Each compute core's progress.
static WORK: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

fn test_line() -> TestLine {
    TestLine { line: LINE.load(SeqCst) }
}

fn here() -> usize {
    platform::current_core().expect("runs on a core")
}

fn handler(line: u32) -> Handled {
    ENTERED.store(platform::ticks(), SeqCst);
    assert_eq!(line, LINE.load(SeqCst));
    assert!(platform::in_interrupt(), "a bound handler runs as an interrupt handler");
    if !test_line().quiet() {
        return Handled::Yes;
    }
    HANDLER_CORE.store(here(), SeqCst);
    let round = HANDLED.fetch_add(1, SeqCst);
    match OPS.into_iter().find(|&op| op as u32 == OP.load(SeqCst)).unwrap_or(Op::Signal) {
        Op::Signal => WOKEN.signal(),
        Op::Event => {
            EVENT.set();
        }
        Op::Semaphore => PERMITS.release(1).expect("one permit at a time"),
        Op::Unpark => leaked(&UNPARKER).unpark(),
        Op::TrySend => leaked(&VALUES).try_send(round).expect("the channel has room"),
        Op::Actor => leaked(&TO_ACTOR).send(round).expect("the actor's sender has room"),
    }
    Handled::Yes
}

/// A handler whose device never quiets: it fires again at once and finds
/// nothing to do (on the Pi 3 the system timer stays asserted, elsewhere
/// the handler raises the line again).
fn storm_handler(line: u32) -> Handled {
    STORM_FIRINGS.fetch_add(1, SeqCst);
    TestLine { line }.keep_firing();
    Handled::No
}

/// A storm whose handler wrongly says it had work.
fn busy_storm_handler(line: u32) -> Handled {
    STORM_FIRINGS.fetch_add(1, SeqCst);
    TestLine { line }.keep_firing();
    Handled::Yes
}

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let test = TestLine::new();
    LINE.store(test.line, SeqCst);
    let console = interrupts::line_of("console").expect("the console has a line");
    // The I/O core is the highest core that can take device lines: on a PC
    // the I/O APIC cannot reach cores whose x2APIC ids are past 254, and
    // routing to them is refused. (On the Pi 3 every line goes where the
    // console's does.)
    let io_core = (0..cores)
        .rev()
        .find(|&core| interrupts::route(console, core) != Err(BindError::Unreachable { core }))
        .expect("a core that takes device lines");
    interrupts::route(console, io_core).expect("routing the console's line");
    if io_core + 1 < cores {
        assert_eq!(
            interrupts::bind(test.line, cores - 1, handler),
            Err(BindError::Unreachable { core: cores - 1 })
        );
    }
    println!(
        "irq: test line {}, I/O core {io_core} ({} cores above it take no device lines)",
        test.line,
        cores - 1 - io_core
    );
    bad_input(test, console, io_core);
    if bootarg_u64("roving.unsafe_in_handler", 0) == 1 {
        return refused_in_handler(test, console);
    }
    interrupts::measure_masking(true);
    interrupts::bind(test.line, io_core, handler).expect("binding the test line");
    assert_eq!(
        interrupts::bind(test.line, io_core, handler),
        Err(BindError::AlreadyBound { line: test.line })
    );
    let io = Pool::with_cores(&[io_core], Config::new()).expect("the I/O pool");
    let outcome = if cores == 1 {
        io.run(|| io_strand(io_core, None)).expect("the I/O pool runs")
    } else {
        let compute_cores: Vec<usize> = (0..io_core).collect();
        let compute = Pool::with_cores(&compute_cores, Config::new()).expect("the compute pool");
        compute
            .run(|| {
                io.start().expect("the I/O pool starts");
                let pool = Pool::current().expect("in the compute pool");
                for &core in &compute_cores {
                    pool.post(core, move || compute_task(core)).expect("a compute task");
                }
                // Boxed: a strand's result is kept inline only up to 256 bytes.
                let outcome = io
                    .spawn_strand(move || Box::new(io_strand(io_core, Some(compute_cores[0]))))
                    .expect("the I/O strand")
                    .join()
                    .expect("the I/O strand finishes");
                io.destroy().expect("the I/O pool ends");
                *outcome
            })
            .expect("the compute pool runs")
    };
    let expected = outcome.idle.len() + outcome.busy.len() + (OPS.len() + 1) * OP_ROUNDS;
    assert_eq!(outcome.idle.len(), idle_rounds(), "phase 1's rounds");
    assert_eq!(HANDLED.load(SeqCst), expected as u64, "interrupts lost or doubled");
    report("on the I/O core", outcome.idle);
    if !outcome.busy.is_empty() {
        report("on a busy compute core", outcome.busy);
    }
    println!(
        "irq: {OP_ROUNDS} interrupts each woke work through Event::set, Semaphore::release, Unparker::unpark, Sender::try_send, InterruptSender::send, and an async task awaiting Signal::wait_async"
    );
    println!(
        "irq: the storm was masked after {} firings, the one whose handler said it had work after {}; the compute cores kept working",
        outcome.storm_firings[0], outcome.storm_firings[1]
    );
    for core in 0..cores {
        let report = cores::report(core).expect("a core");
        println!(
            "irq: core {core}: longest masked section {} cycles, longest handler {} cycles",
            report.longest_masked, report.longest_handler
        );
    }
    pass("irq");
}

/// What the I/O strand measured.
struct Outcome {
    /// Ticks from the handler's entry to the strand running, line on the
    /// I/O core.
    idle: Vec<u64>,
    /// The same, line on a busy compute core.
    busy: Vec<u64>,
    /// Firings until each storm was masked: answered `No`, then `Yes`.
    storm_firings: [u64; 2],
}

fn io_strand(io_core: usize, busy_core: Option<usize>) -> Outcome {
    let test = test_line();
    let idle = rounds(idle_rounds(), io_core);
    let busy = busy_core.map_or(Vec::new(), |busy_core| {
        interrupts::route(test.line, busy_core).expect("routing to a compute core");
        rounds((BUSY_ROUNDS * idle_rounds() / ROUNDS).max(1), busy_core)
    });
    interrupts::route(test.line, io_core).expect("routing back to the I/O core");
    every_op(io_core);
    let storm_core = busy_core.unwrap_or(io_core);
    let storm_firings =
        [storm_handler, busy_storm_handler].map(|handler| storm(test, handler, storm_core, io_core));
    STOP.store(true, SeqCst);
    Outcome { idle, busy, storm_firings }
}

/// Fires the line `count` times, each time waiting for its handler (on
/// `handler_core`) to wake this strand.
fn rounds(count: usize, handler_core: usize) -> Vec<u64> {
    let test = test_line();
    let mut latencies = Vec::with_capacity(count);
    for round in 0..count {
        test.fire();
        WOKEN.wait().unwrap_or_else(|e| panic!("round {round}: {e}"));
        latencies.push(platform::ticks() - ENTERED.load(SeqCst));
        assert_eq!(HANDLER_CORE.load(SeqCst), handler_core, "round {round}: the handler ran on another core");
    }
    latencies
}

/// Phase 3: each other interrupt-safe way for the handler to wake work.
fn every_op(io_core: usize) {
    let test = test_line();
    UNPARKER.store(Box::into_raw(Box::new(strand::unparker().expect("a strand"))), SeqCst);
    let (sender, values) = channel::bounded(1).expect("a channel");
    VALUES.store(Box::into_raw(Box::new(sender)), SeqCst);
    let echo = Pool::current().expect("in the I/O pool").spawn_actor(Echo);
    TO_ACTOR.store(Box::into_raw(Box::new(echo.interrupt_sender(1).expect("a sender"))), SeqCst);
    for op in OPS {
        OP.store(op as u32, SeqCst);
        for round in 0..OP_ROUNDS {
            let before = HANDLED.load(SeqCst);
            test.fire();
            let woken = match op {
                Op::Signal => unreachable!("phases 1 and 2"),
                Op::Event => EVENT.wait().map(|()| EVENT.reset()),
                Op::Semaphore => PERMITS.acquire(),
                Op::Unpark => {
                    while HANDLED.load(SeqCst) == before {
                        strand::park().unwrap_or_else(|e| panic!("{op:?} round {round}: {e}"));
                    }
                    Ok(())
                }
                Op::TrySend => {
                    assert_eq!(values.recv().ok(), Some(before), "{op:?} round {round}: the value sent");
                    Ok(())
                }
                Op::Actor => WOKEN.wait(),
            };
            woken.unwrap_or_else(|e| panic!("{op:?} round {round}: {e}"));
            assert_eq!(HANDLER_CORE.load(SeqCst), io_core, "{op:?} round {round}: the handler's core");
        }
    }
    OP.store(Op::Signal as u32, SeqCst);
    echo.stop();
    // An async driver: a task fires the line and awaits the signal its
    // handler raises.
    let driver = Pool::current().expect("in the I/O pool").spawn_async(async move {
        for round in 0..OP_ROUNDS {
            test_line().fire();
            WOKEN.wait_async().await.unwrap_or_else(|e| panic!("async driver round {round}: {e}"));
            assert_eq!(HANDLER_CORE.load(SeqCst), io_core, "async driver round {round}: the handler's core");
        }
    });
    driver.expect("the driver task").join().expect("the driver task finishes");
}

/// Makes the test line storm on `core`; returns how often it fired. The
/// compute cores are those below `io_core`.
fn storm(test: TestLine, handler: interrupts::Handler, core: usize, io_core: usize) -> u64 {
    if interrupts::status(test.line).is_ok() {
        interrupts::unbind(test.line).expect("unbinding the test line");
    }
    STORM_FIRINGS.store(0, SeqCst);
    // On the Pi 3 every line goes where the console's does.
    let console = interrupts::line_of("console").expect("the console has a line");
    interrupts::route(console, core).expect("routing the console's line");
    interrupts::bind(test.line, core, handler).expect("binding the storm");
    let before: Vec<u64> = WORK.iter().map(|work| work.load(SeqCst)).collect();
    // A firing the last storm left pending may have started this one.
    test.fire_unless_masked();
    let deadline = roving::time::Instant::now() + Duration::from_secs(30);
    while !interrupts::status(test.line).expect("bound").stormed {
        assert!(roving::time::Instant::now() < deadline, "the storm was never detected");
        strand::sleep(Duration::from_millis(1)).expect("sleeping");
    }
    let status = interrupts::status(test.line).expect("bound");
    assert!(status.masked, "a storming line is masked");
    assert_eq!(interrupts::raise(test.line), Err(BindError::Masked { line: test.line }));
    // Every compute core, the stormed one included, goes on working.
    for (core, before) in before.iter().enumerate().filter(|&(core, _)| core < io_core) {
        let deadline = roving::time::Instant::now() + Duration::from_secs(10);
        while WORK[core].load(SeqCst) == *before {
            assert!(roving::time::Instant::now() < deadline, "compute core {core} stopped working");
            strand::sleep(Duration::from_millis(1)).expect("sleeping");
        }
    }
    interrupts::unbind(test.line).expect("unbinding the storm");
    STORM_FIRINGS.load(SeqCst)
}

/// Work that never yields: it holds its core until the I/O strand is done.
fn compute_task(core: usize) {
    while !STOP.load(SeqCst) {
        WORK[core].fetch_add(1, SeqCst);
        core::hint::spin_loop();
    }
}

fn report(what: &str, mut latencies: Vec<u64>) {
    latencies.sort_unstable();
    let n = latencies.len();
    println!(
        "irq: {n} interrupts {what} each woke a strand on the I/O core; handler entry to strand running: median {} ticks, 99th percentile {}, max {} ({} ticks/s)",
        latencies[n / 2],
        latencies[n * 99 / 100],
        latencies[n - 1],
        platform::tick_hz()
    );
}

/// The binding calls refuse bad input with typed errors.
fn bad_input(test: TestLine, console: u32, io_core: usize) {
    let cores = platform::core_count();
    let lines = interrupts::lines().expect("device lines");
    assert_eq!(interrupts::bind(console, 0, handler), Err(BindError::KernelLine { line: console }));
    assert_eq!(interrupts::unbind(console), Err(BindError::KernelLine { line: console }));
    assert!(matches!(interrupts::bind(5000, 0, handler), Err(BindError::NoSuchLine { line: 5000, .. })));
    assert!(matches!(interrupts::bind(lines.end, 0, handler), Err(BindError::NoSuchLine { .. })));
    assert_eq!(interrupts::bind(test.line, cores, handler), Err(BindError::NoSuchCore { core: cores }));
    assert_eq!(interrupts::unbind(test.line), Err(BindError::NotBound { line: test.line }));
    assert_eq!(interrupts::raise(test.line), Err(BindError::NotBound { line: test.line }));
    assert_eq!(interrupts::status(test.line), Err(BindError::NotBound { line: test.line }));
    #[cfg(not(feature = "raspi3b"))]
    {
        // A GIC numbers the kernel's own interrupts with its lines.
        if lines.start == 32 {
            assert!(matches!(interrupts::bind(27, 0, handler), Err(BindError::KernelLine { line: 27 })));
        }
        let _ = io_core;
    }
    #[cfg(feature = "raspi3b")]
    if io_core != 0 {
        // One route for every line: the console's goes to the I/O core.
        assert_eq!(
            interrupts::bind(test.line, 0, handler),
            Err(BindError::SharedRoute { line: test.line, core: io_core })
        );
    }
    interrupts::bind(test.line, io_core, handler).expect("binding the test line");
    interrupts::mask(test.line).expect("masking");
    assert_eq!(interrupts::raise(test.line), Err(BindError::Masked { line: test.line }));
    #[cfg(feature = "raspi3b")]
    interrupts::unmask(test.line).expect("unmasking");
    #[cfg(feature = "raspi3b")]
    assert_eq!(interrupts::raise(test.line), Err(BindError::CannotRaise { line: test.line }));
    interrupts::unbind(test.line).expect("unbinding");
}

/// Binds `handler` on core 0 (the only core running before a pool starts
/// others), fires the line and waits there: the run must end in the
/// handler's panic.
fn refused_in_handler(test: TestLine, console: u32) {
    // On the Pi 3 every line goes where the console's does.
    interrupts::route(console, 0).expect("routing the console's line");
    interrupts::bind(test.line, 0, |_| {
        // Not interrupt-safe: debug builds refuse, naming try_take.
        let _ = WOKEN.wait();
        Handled::Yes
    })
    .expect("binding the test line");
    println!("irq: line {} on core 0 has a handler that blocks", test.line);
    test.fire();
    let deadline = roving::time::Instant::now() + Duration::from_secs(10);
    while !interrupts::status(test.line).expect("bound").failed {
        assert!(roving::time::Instant::now() < deadline, "the handler that blocks was never refused");
        platform::wait_for_event(platform::Depth::Light, Some(deadline));
    }
    assert!(interrupts::status(test.line).expect("bound").masked, "a failed handler's line is masked");
    println!("irq: the handler that blocked failed alone, and its line was masked");
    interrupts::unbind(test.line).expect("unbinding the test line");
    pass("irq");
}

roving_kernel::entry!(main);
