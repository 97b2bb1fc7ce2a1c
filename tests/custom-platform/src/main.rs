//! A kernel's own [`Platform`], registered with `roving::set_platform!`.
//!
//! This is what a hobby-OS author writes to put roving on their kernel: one
//! type, one `unsafe impl`, one macro call. Here the "kernel" is a tiny
//! host program with two "cores" (OS threads) that sleep by spinning on
//! their doorbells, so the example is complete and runs anywhere; a real
//! kernel would halt the core and send an IPI where this spins and flips a
//! flag. `make test` runs it.

use roving::platform::{
    self, CoreEntry, Depth, Doorbell, InterruptState, Platform, StartCoreError, UnknownCore, WakeSignal,
};
use roving::time::Instant;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

const CORES: usize = 2;

static DOORBELLS: [Doorbell; CORES] = [const { Doorbell::new() }; CORES];
static RUNNING: [AtomicBool; CORES] = [AtomicBool::new(true), AtomicBool::new(false)];
static INTERRUPTS_MASKED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static CORE: Cell<Option<usize>> = const { Cell::new(None) };
}

fn epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

struct ToyKernel;

// SAFETY: one thread per core index (`RUNNING` guards starts); a wait
// returns when its doorbell is answered or its deadline passes, and a ring
// is always visible to the spinning owner; ticks are one monotonic clock.
unsafe impl Platform for ToyKernel {
    fn current_core() -> Option<usize> {
        CORE.get()
    }

    fn core_count() -> usize {
        CORES
    }

    fn wait_for_event(_depth: Depth, deadline: Option<u64>) {
        let me = CORE.get().expect("only cores wait");
        // A real kernel halts here; spinning keeps the example portable.
        while !DOORBELLS[me].answer() {
            if deadline.is_some_and(|d| Self::ticks() >= d) {
                return;
            }
            std::thread::yield_now();
        }
    }

    fn wake(core: usize) {
        // A real kernel sends an event or an IPI as the doorbell asks.
        let _: WakeSignal = DOORBELLS[core].ring();
    }

    fn wake_all() {
        (0..CORES).for_each(Self::wake);
    }

    fn ticks() -> u64 {
        epoch().elapsed().as_micros() as u64
    }

    fn tick_hz() -> u64 {
        1_000_000
    }

    fn start_core(core: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError> {
        if RUNNING[core].swap(true, SeqCst) {
            return Err(StartCoreError::AlreadyRunning { core });
        }
        std::thread::spawn(move || {
            CORE.set(Some(core));
            entry(arg);
            RUNNING[core].store(false, SeqCst);
        });
        Ok(())
    }

    fn disable_interrupts() -> InterruptState {
        InterruptState::from_raw(INTERRUPTS_MASKED.fetch_add(1, SeqCst))
    }

    unsafe fn restore_interrupts(state: InterruptState) {
        INTERRUPTS_MASKED.store(state.into_raw(), SeqCst);
    }
}

roving::set_platform!(ToyKernel);

static ANSWER: AtomicUsize = AtomicUsize::new(0);

fn core_one(arg: usize) {
    assert_eq!(platform::current_core(), Some(1));
    ANSWER.store(arg * 2, SeqCst);
    platform::wake(0).expect("core 0 exists");
}

fn main() {
    CORE.set(Some(0));
    assert_eq!(platform::core_count(), CORES);
    assert_eq!(platform::current_core(), Some(0));
    assert_eq!(platform::tick_hz(), 1_000_000);

    // roving's portable layer checks indices before calling the platform.
    assert_eq!(platform::wake(CORES), Err(UnknownCore { core: CORES, count: CORES }));
    assert_eq!(
        platform::start_core(7, core_one, 0),
        Err(StartCoreError::NoSuchCore { core: 7, count: CORES })
    );
    assert_eq!(platform::start_core(0, core_one, 0), Err(StartCoreError::AlreadyRunning { core: 0 }));

    // Start a core, and sleep until it answers.
    platform::start_core(1, core_one, 21).expect("core 1 starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while ANSWER.load(SeqCst) == 0 {
        assert!(Instant::now() < deadline, "core 1 never answered");
        platform::wait_for_event(Depth::Deep, Some(deadline));
    }
    assert_eq!(ANSWER.load(SeqCst), 42);

    // Interrupt save/restore nests through the platform.
    platform::without_interrupts(|| {
        assert_eq!(INTERRUPTS_MASKED.load(SeqCst), 1);
        platform::without_interrupts(|| assert_eq!(INTERRUPTS_MASKED.load(SeqCst), 2));
        assert_eq!(INTERRUPTS_MASKED.load(SeqCst), 1);
    });
    assert_eq!(INTERRUPTS_MASKED.load(SeqCst), 0);

    // Time runs on the platform's clock.
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    assert!(start.elapsed() >= Duration::from_millis(20));

    println!("custom platform: roving ran on a platform it was not built with; all checks passed");
}
