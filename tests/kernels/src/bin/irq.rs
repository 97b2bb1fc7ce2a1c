//! A device interrupt wakes a strand: a line bound to a handler on the
//! last core is raised 10,000 times (in software, as its device would);
//! each time the handler raises a `Signal` that the pool's root strand,
//! on core 0, waits for. None is lost, the latency from raising the line
//! to the strand running is printed in ticks, and the binding calls'
//! bad input gets typed errors. Boards whose controller has no bindable
//! lines yet check that they say so.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};
use roving::sync::Signal;
use roving::{Pool, platform};
use roving_kernel::interrupts::{self, BindError, Handled};
use roving_kernel::println;
use roving_test_kernels::{expected_cores, pass};

/// A line QEMU virt's GIC has and no device of the board uses.
const LINE: u32 = 200;
const ROUNDS: usize = 10_000;

static RAISED: Signal = Signal::new();
static HANDLED: AtomicU64 = AtomicU64::new(0);
static HANDLER_CORE: AtomicU64 = AtomicU64::new(u64::MAX);

fn handler(line: u32) -> Handled {
    assert_eq!(line, LINE);
    assert!(platform::in_interrupt(), "a bound handler runs as an interrupt handler");
    HANDLER_CORE.store(platform::current_core().map_or(u64::MAX, |c| c as u64), SeqCst);
    HANDLED.fetch_add(1, SeqCst);
    RAISED.signal();
    Handled::Yes
}

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let target = cores - 1;
    match interrupts::bind(LINE, target, handler) {
        Err(BindError::NoController) => {
            println!("irq: this board's controller has no bindable lines yet");
            pass("irq");
            return;
        }
        result => result.expect("binding a free line"),
    }
    assert_eq!(interrupts::bind(LINE, target, handler), Err(BindError::AlreadyBound { line: LINE }));
    assert!(matches!(interrupts::bind(5000, 0, handler), Err(BindError::NoSuchLine { line: 5000, .. })));
    assert!(matches!(interrupts::bind(LINE + 1, cores, handler), Err(BindError::NoSuchCore { .. })));
    let mut latencies = Pool::new()
        .expect("a pool")
        .run(|| {
            if roving_test_kernels::bootarg_u64("roving.panic_in_handler", 0) == 1 {
                panic_in_a_handler(target);
            }
            let mut latencies = alloc::vec::Vec::with_capacity(ROUNDS);
            for round in 0..ROUNDS {
                let raised_at = platform::ticks();
                interrupts::raise(LINE).expect("a bound line");
                RAISED.wait().unwrap_or_else(|e| panic!("round {round}: {e}"));
                latencies.push(platform::ticks() - raised_at);
            }
            latencies
        })
        .expect("the pool runs");
    assert_eq!(HANDLED.load(SeqCst), ROUNDS as u64, "interrupts lost or doubled");
    assert_eq!(HANDLER_CORE.load(SeqCst), target as u64, "the handler ran on another core");
    interrupts::unbind(LINE).expect("unbinding");
    assert_eq!(interrupts::raise(LINE), Err(BindError::NotBound { line: LINE }));
    latencies.sort_unstable();
    let hz = platform::tick_hz();
    println!(
        "irq: {ROUNDS} interrupts on line {LINE} (core {target}) each woke a strand on core 0; raise to strand running: median {} ticks, 99th percentile {}, max {} ({hz} ticks/s)",
        latencies[ROUNDS / 2],
        latencies[ROUNDS * 99 / 100],
        latencies[ROUNDS - 1]
    );
    pass("irq");
}

/// Must fail: a handler on `target` panics; the suite expects the report
/// to name the core and the line.
fn panic_in_a_handler(target: usize) {
    interrupts::bind(LINE + 1, target, |line| panic!("deliberate panic in the handler of line {line}"))
        .expect("binding a second line");
    interrupts::raise(LINE + 1).expect("a bound line");
    let never = Signal::new();
    let _ = never.wait_timeout(core::time::Duration::from_secs(10));
    panic!("the handler that panics on purpose never ran");
}

extern crate alloc;

roving_kernel::entry!(main);
