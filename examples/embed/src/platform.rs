//! This kernel's `roving::platform::Platform`: the whole seam between
//! roving and the machine.
//!
//! - A core's index lives in its `TPIDR_EL1` (set by `boot.rs`).
//! - Idle cores wait with `WFE`, for both depths: this kernel takes no
//!   interrupts, so there is no deeper tier to offer. A wake rings the
//!   core's [`Doorbell`] and sends `SEV` when the doorbell says so; the
//!   doorbell's protocol is what keeps a wake-up from being lost.
//! - The generic timer's event stream ends every `WFE` about every 100 µs,
//!   which is how a wait meets its deadline without a timer interrupt.
//! - Cores start through PSCI `CPU_ON`, over `HVC` when the kernel was
//!   entered at EL1 (the firmware sits at EL2) and over `SMC` when it was
//!   entered at EL2 (QEMU's `virtualization=on`). They park in a `WFE` loop between entries, so a core whose entry
//!   returned is startable again without a trip through the firmware.

use aarch64_cpu::asm::{barrier, sev, wfe};
use aarch64_cpu::registers::{CNTFRQ_EL0, CNTKCTL_EL1, CNTVCT_EL0, DAIF, Readable, TPIDR_EL1, Writeable};
use core::sync::atomic::AtomicBool;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering::*};
use roving::platform::{CoreEntry, Depth, Doorbell, InterruptState, Platform, StartCoreError, WakeSignal};
use smccc::psci::{self, LowestAffinityLevel};
use smccc::{Hvc, Smc};

/// Most cores this kernel looks for. On QEMU virt, core `i` of up to 8
/// has MPIDR affinity 0 equal to `i`, so the index is its PSCI target.
pub const MAX_CORES: usize = 8;

const OFF: u8 = 0;
const CLAIMED: u8 = 1;
const STARTING: u8 = 2;
const RUNNING: u8 = 3;
const PARKED: u8 = 4;

/// What the platform keeps for each core.
struct Core {
    /// OFF -> CLAIMED -> STARTING -> RUNNING -> PARKED -> CLAIMED ...;
    /// CLAIMED is held by the one `start_core` call that won the core.
    state: AtomicU8,
    entry: AtomicUsize,
    arg: AtomicUsize,
    doorbell: Doorbell,
}

static CORES: [Core; MAX_CORES] = [const {
    Core {
        state: AtomicU8::new(OFF),
        entry: AtomicUsize::new(0),
        arg: AtomicUsize::new(0),
        doorbell: Doorbell::new(),
    }
}; MAX_CORES];

static CORE_COUNT: AtomicUsize = AtomicUsize::new(1);
/// Whether PSCI is reached by `SMC` (entered at EL2) rather than `HVC`.
static PSCI_BY_SMC: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    /// Where PSCI starts a core (`boot.rs`).
    fn embed_secondary_start();
}

/// Every core, once its MMU is on: let the event stream end each `WFE`
/// after about 100 µs.
pub fn init_core() {
    let ticks_per_event = (CNTFRQ_EL0.get() / 10_000).max(2);
    // An event fires each time counter bit `n` turns to 1: every 2^(n+1) ticks.
    let n = (63 - ticks_per_event.leading_zeros() as u64).saturating_sub(1).min(15);
    CNTKCTL_EL1.write(CNTKCTL_EL1::EVNTEN::SET + CNTKCTL_EL1::EVNTI.val(n));
}

/// Core 0, before the first pool: pick the PSCI conduit for the level the
/// kernel was entered at, count the cores PSCI knows, and mark core 0
/// running.
pub fn init_machine(arrived_at_el: u64) {
    PSCI_BY_SMC.store(arrived_at_el == 2, Relaxed);
    let present = |core: usize| {
        let info = if PSCI_BY_SMC.load(Relaxed) {
            psci::affinity_info::<Smc>(core as u64, LowestAffinityLevel::All)
        } else {
            psci::affinity_info::<Hvc>(core as u64, LowestAffinityLevel::All)
        };
        !matches!(info, Err(psci::error::Error::InvalidParameters))
    };
    let count = (1..MAX_CORES).find(|&core| !present(core)).unwrap_or(MAX_CORES);
    CORE_COUNT.store(count, Relaxed);
    CORES[0].state.store(RUNNING, Relaxed);
}

/// A started core (not core 0) forever: run each entry it is given, and
/// wait in between.
pub fn run_secondary(index: usize) -> ! {
    let me = &CORES[index];
    loop {
        if me.state.load(Acquire) == STARTING {
            let entry = me.entry.load(Relaxed);
            // SAFETY: `start_core` stored a `CoreEntry` there before it
            // published STARTING with release ordering, acquired above.
            let entry = unsafe { core::mem::transmute::<usize, CoreEntry>(entry) };
            me.state.store(RUNNING, Relaxed);
            entry(me.arg.load(Relaxed));
            me.state.store(PARKED, Release);
        } else {
            // `start_core` sends SEV after it publishes STARTING.
            wfe();
        }
    }
}

fn current() -> usize {
    TPIDR_EL1.get() as usize
}

/// Sends what a ring asks for. `DSB` first, so the core woken sees the ring.
fn signal(signal: WakeSignal) {
    if signal != WakeSignal::None {
        barrier::dsb(barrier::ISH);
        sev();
    }
}

/// The platform roving sees.
pub struct Embedded;

// SAFETY: indices come from TPIDR_EL1, set once per core by boot.rs before
// Rust runs; a wait returns once its doorbell was rung (a ring before the
// wait is seen by `answer`, one after it sends SEV, which WFE does not
// miss) or the deadline passed (the event stream ends every WFE); ticks
// are the virtual counter, one time base for all cores (CNTVOFF is 0);
// `start_core` gives a core to one caller at a time through the CLAIMED
// state; `restore_interrupts` writes back a DAIF value it was given.
unsafe impl Platform for Embedded {
    fn current_core() -> Option<usize> {
        Some(current())
    }

    fn core_count() -> usize {
        CORE_COUNT.load(Relaxed)
    }

    fn wait_for_event(_depth: Depth, deadline: Option<u64>) {
        let doorbell = &CORES[current()].doorbell;
        while !doorbell.answer() {
            if deadline.is_some_and(|deadline| Self::ticks() >= deadline) {
                return;
            }
            wfe();
        }
    }

    fn wake(core: usize) {
        signal(CORES[core].doorbell.ring());
    }

    fn wake_all() {
        let rung = CORES[..Self::core_count()].iter().map(|core| core.doorbell.ring());
        // One SEV reaches every core.
        signal(rung.fold(WakeSignal::None, |any, this| if this == WakeSignal::None { any } else { this }));
    }

    fn ticks() -> u64 {
        barrier::isb(barrier::SY);
        CNTVCT_EL0.get()
    }

    fn tick_hz() -> u64 {
        CNTFRQ_EL0.get()
    }

    fn start_core(core: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError> {
        let slot = &CORES[core];
        let was = [OFF, PARKED]
            .into_iter()
            .find(|&from| slot.state.compare_exchange(from, CLAIMED, Acquire, Relaxed).is_ok())
            .ok_or(StartCoreError::AlreadyRunning { core })?;
        slot.entry.store(entry as usize, Relaxed);
        slot.arg.store(arg, Relaxed);
        slot.state.store(STARTING, Release);
        if was == PARKED {
            signal(WakeSignal::Event);
            return Ok(());
        }
        // The new core starts with its caches off: what it reads first
        // must be in memory.
        barrier::dsb(barrier::SY);
        let (target, entry, context) = (core as u64, embed_secondary_start as *const () as u64, core as u64);
        let started = if PSCI_BY_SMC.load(Relaxed) {
            psci::cpu_on::<Smc>(target, entry, context)
        } else {
            psci::cpu_on::<Hvc>(target, entry, context)
        };
        started.map_err(|error| {
            slot.state.store(OFF, Release);
            StartCoreError::Refused { core, code: i64::from(error) }
        })
    }

    fn disable_interrupts() -> InterruptState {
        let saved = DAIF.get();
        // SAFETY: masks IRQ and FIQ on this core; touches no memory.
        unsafe { core::arch::asm!("msr daifset, #3", options(nomem, nostack)) };
        InterruptState::from_raw(saved as usize)
    }

    unsafe fn restore_interrupts(state: InterruptState) {
        DAIF.set(state.into_raw() as u64);
    }
}

roving::set_platform!(Embedded);
