//! Per-core data, and the life of a core.
//!
//! ```text
//!            start_core                 boots, sees Starting     entry returns
//!   Off ───────────────▶ Claimed ─▶ Starting ───────────────▶ Running ─────────▶ Parked
//!                           ▲                                                    │
//!                           └──────────────────── start_core ────────────────────┘
//! ```
//!
//! The first start powers the core on (PSCI); it then runs kernel set-up and
//! the entry. When the entry returns the core parks in the deep idle tier,
//! and a later start hands it a new entry through its doorbell. The boot
//! core is `Running` for the life of the image.

use crate::arch;
use crate::boot_info::{BootInfo, MAX_CORES, boot_info};
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering::*};
use roving::platform::{CoreEntry, Depth, Doorbell, StartCoreError, hooks};

const OFF: u8 = 0;
const CLAIMED: u8 = 1;
const STARTING: u8 = 2;
const RUNNING: u8 = 3;
const PARKED: u8 = 4;
/// Started once and never arrived (`arch::start_core` gave it up): it
/// runs no entry, even if it turns up later.
const LOST: u8 = 5;

/// Everything the kernel keeps per core. The architecture's per-core
/// register (TPIDR_EL1; on x86 the GS base's slot) points at the running
/// core's, and a second one (TPIDR_EL0; `gs:[8]`) does too except inside
/// an interrupt handler (`arch::cpu::enter_handler`).
#[derive(Debug)]
pub struct CoreLocal {
    /// Dense index, `0..core_count`.
    pub index: usize,
    hw_id: AtomicU64,
    pub(crate) doorbell: Doorbell,
    state: AtomicU8,
    entry: AtomicUsize,
    arg: AtomicUsize,
    pub(crate) panicking: AtomicBool,
    /// The strand this core is failing after its panic (0: none), to tell
    /// a panic inside that failure (out of memory) from a new one.
    pub(crate) failing_strand: AtomicU64,
    /// A synchronous fault this core contains (`crate::fault`).
    pub(crate) fault: crate::fault::ContainedFault,
    /// The timer interrupt fired in the handler under way: once the
    /// handler is done, ask roving whether to preempt (`arch::preempt`).
    tick_fired: AtomicBool,
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))] // x86 keeps nothing per core
    pub(crate) arch: arch::CoreArch,
    /// How long this core keeps interrupts masked (`crate::masking`).
    pub(crate) masking: crate::masking::Record,
    /// Small heap blocks this core freed, for its next requests.
    pub(crate) heap: crate::heap::front::Front,
    pub(crate) stats: Stats,
}

/// Counters kept per core.
#[derive(Debug)]
pub(crate) struct Stats {
    pub online_at: AtomicU64,
    pub starts: AtomicU64,
    pub rings_answered: AtomicU64,
    pub light_sleeps: AtomicU64,
    pub deep_sleeps: AtomicU64,
    pub last_deep_sleep: AtomicU64,
    pub last_deep_wake: AtomicU64,
    pub interrupts: AtomicU64,
    pub unexpected_interrupts: AtomicU64,
    pub timer_interrupts: AtomicU64,
}

/// A snapshot of one core's counters, for summaries and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreReport {
    /// Dense index.
    pub index: usize,
    /// Hardware id (MPIDR affinity on ARM).
    pub hw_id: u64,
    /// Tick at which the core first ran kernel code with its MMU on; `None`
    /// if it never came online.
    pub online_at: Option<u64>,
    /// Entries run by `start_core` (the boot core's `main` counts as one).
    pub starts: u64,
    /// Doorbell rings this core answered in its waits.
    pub rings_answered: u64,
    /// Waits that slept in the light tier (WFE).
    pub light_sleeps: u64,
    /// Waits that slept in the deep tier (WFI).
    pub deep_sleeps: u64,
    /// The core's own counter ([`crate::cycles`]) when it last went into
    /// the deep tier, once committed to sleep: where the way to sleep of a
    /// core whose work ran out ends.
    pub last_deep_sleep: u64,
    /// The core's own counter ([`crate::cycles`]) when it last woke from
    /// the deep tier, before it looked at why: where a wake-up's cost on
    /// the woken core starts.
    pub last_deep_wake: u64,
    /// Interrupts taken (wake-up SGIs and timer deadlines).
    pub interrupts: u64,
    /// Interrupts that were neither of those nor a bound device line's.
    pub unexpected_interrupts: u64,
    /// Interrupts of the core's own timer (an idle wait's deadline, or a
    /// preempting pool's tick): none on a core busy with work of pools that
    /// do not preempt.
    pub timer_interrupts: u64,
    /// The longest section with interrupts masked, in cycles of the core's
    /// own counter ([`crate::cycles`]), since
    /// [`interrupts::measure_masking`](crate::interrupts::measure_masking)
    /// turned timing on (0 while it is off).
    pub longest_masked: u64,
    /// The longest interrupt handler, in cycles, timed likewise.
    pub longest_handler: u64,
}

impl CoreLocal {
    const fn new(index: usize) -> Self {
        Self {
            index,
            hw_id: AtomicU64::new(0),
            doorbell: Doorbell::new(),
            state: AtomicU8::new(OFF),
            entry: AtomicUsize::new(0),
            arg: AtomicUsize::new(0),
            panicking: AtomicBool::new(false),
            failing_strand: AtomicU64::new(0),
            fault: crate::fault::ContainedFault::new(),
            tick_fired: AtomicBool::new(false),
            arch: arch::CoreArch::new(),
            masking: crate::masking::Record::new(),
            heap: crate::heap::front::Front::new(),
            stats: Stats {
                online_at: AtomicU64::new(0),
                starts: AtomicU64::new(0),
                rings_answered: AtomicU64::new(0),
                light_sleeps: AtomicU64::new(0),
                deep_sleeps: AtomicU64::new(0),
                last_deep_sleep: AtomicU64::new(0),
                last_deep_wake: AtomicU64::new(0),
                interrupts: AtomicU64::new(0),
                unexpected_interrupts: AtomicU64::new(0),
                timer_interrupts: AtomicU64::new(0),
            },
        }
    }

    /// Counts an interrupt taken by this core; `expected` if it was a
    /// wake-up or a timer deadline.
    pub(crate) fn count_interrupt(&self, expected: bool) {
        bump_own(&self.stats.interrupts);
        if !expected {
            bump_own(&self.stats.unexpected_interrupts);
        }
    }

    /// This core's timer fired: counts it, and has roving asked whether to
    /// preempt once the handler is done (`arch::preempt`).
    pub(crate) fn timer_fired(&self) {
        bump_own(&self.stats.timer_interrupts);
        self.want_tick();
    }

    /// Has the end of this core's next interrupt ask roving whether to
    /// preempt, as a timer tick's does: from the timer, or from another
    /// core before it sends the wake-up interrupt (`request_tick_on`).
    pub(crate) fn want_tick(&self) {
        self.tick_fired.store(true, Relaxed);
    }

    /// The core's hardware id.
    pub fn hw_id(&self) -> u64 {
        self.hw_id.load(Relaxed)
    }

    fn report(&self) -> CoreReport {
        let s = &self.stats;
        let online_at = s.online_at.load(Relaxed);
        let (longest_masked, longest_handler) = self.masking.longest();
        CoreReport {
            index: self.index,
            hw_id: self.hw_id(),
            online_at: (online_at != 0).then_some(online_at),
            starts: s.starts.load(Relaxed),
            rings_answered: s.rings_answered.load(Relaxed),
            light_sleeps: s.light_sleeps.load(Relaxed),
            // Before the time of the last one; see `idle::wait_masked`.
            deep_sleeps: s.deep_sleeps.load(Acquire),
            last_deep_sleep: s.last_deep_sleep.load(Relaxed),
            last_deep_wake: s.last_deep_wake.load(Relaxed),
            interrupts: s.interrupts.load(Relaxed),
            unexpected_interrupts: s.unexpected_interrupts.load(Relaxed),
            timer_interrupts: s.timer_interrupts.load(Relaxed),
            longest_masked,
            longest_handler,
        }
    }
}

/// Adds one to a count of the calling core's own interrupts. Only that
/// core writes it, in its handlers, which do not nest: a load and a store,
/// not a read-modify-write (readers elsewhere see one value or the next).
fn bump_own(count: &AtomicU64) {
    count.store(count.load(Relaxed) + 1, Relaxed);
}

/// At the end of an interrupt: whether it should ask roving whether to
/// preempt (`arch::preempt`), taking the calling core's tick flag. While
/// no pool preempts this is one load (a flag left behind is a spurious
/// tick later, which roving allows).
pub(crate) fn take_tick() -> bool {
    hooks::any_pool_preempts() && current().is_some_and(|me| me.tick_fired.swap(false, Relaxed))
}

static CORES: [CoreLocal; MAX_CORES] = {
    let mut cores = [const { CoreLocal::new(0) }; MAX_CORES];
    let mut index = 0;
    while index < MAX_CORES {
        cores[index].index = index;
        index += 1;
    }
    cores
};

/// Core `index`'s data. Computes an address only: safe before the MMU.
pub(crate) fn local(index: usize) -> &'static CoreLocal {
    &CORES[index]
}

/// The calling core's data, once its per-core register is set.
pub(crate) fn current() -> Option<&'static CoreLocal> {
    arch::cpu::core_local()
}

/// How many cores are in use.
pub fn count() -> usize {
    boot_info().cores.len()
}

/// A snapshot of core `index`'s counters, or `None` past [`count`].
pub fn report(index: usize) -> Option<CoreReport> {
    (index < count()).then(|| CORES[index].report())
}

/// Records hardware ids and brings the boot core online.
pub(crate) fn init(info: &BootInfo) {
    for (core, &hw_id) in CORES.iter().zip(&info.cores) {
        core.hw_id.store(hw_id, Relaxed);
    }
    let boot = &CORES[0];
    boot.stats.online_at.store(arch::timer::ticks().max(1), Relaxed);
    boot.stats.starts.store(1, Relaxed);
    boot.state.store(RUNNING, Release);
}

/// Starts core `index` at `entry(arg)` (see the module documentation).
pub(crate) fn start(index: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError> {
    let core = &CORES[index];
    if core.state.load(Relaxed) == LOST {
        return Err(StartCoreError::DidNotArrive { core: index, waited_ms: ARRIVAL_PATIENCE_MS });
    }
    let was = [OFF, PARKED]
        .into_iter()
        .find(|&from| core.state.compare_exchange(from, CLAIMED, Acquire, Relaxed).is_ok())
        .ok_or(StartCoreError::AlreadyRunning { core: index })?;
    core.entry.store(entry as usize, Relaxed);
    core.arg.store(arg, Relaxed);
    core.state.store(STARTING, Release);
    if was == PARKED {
        arch::idle::signal(core, core.doorbell.ring());
        return Ok(());
    }
    arch::start_core(index, core.hw_id()).inspect_err(|error| {
        let lost = matches!(error, StartCoreError::DidNotArrive { .. });
        core.state.store(if lost { LOST } else { OFF }, Release);
    })
}

/// How long a start without an answer of its own (a spin table's) waits
/// for the core before giving it up: far longer than a core takes, even a
/// QEMU core on a loaded host.
pub(crate) const ARRIVAL_PATIENCE_MS: u32 = 1000;

/// Waits up to [`ARRIVAL_PATIENCE_MS`] for core `index` to come online
/// (run kernel code with its MMU on): for start methods that give no
/// answer of their own. A core that does not is given up with
/// [`StartCoreError::DidNotArrive`].
pub(crate) fn await_arrival(index: usize) -> Result<(), StartCoreError> {
    let online = || CORES[index].stats.online_at.load(Acquire) != 0;
    let deadline = arch::timer::ticks() + arch::timer::hz() * u64::from(ARRIVAL_PATIENCE_MS) / 1000;
    while !online() && arch::timer::ticks() < deadline {
        core::hint::spin_loop();
    }
    if online() {
        Ok(())
    } else {
        Err(StartCoreError::DidNotArrive { core: index, waited_ms: ARRIVAL_PATIENCE_MS })
    }
}

/// A started core's life after kernel set-up: run each entry it is given,
/// park in between.
pub(crate) fn run_secondary(index: usize) -> ! {
    let me = &CORES[index];
    // Release: `wait_online` on the starting core reads it.
    let _ = me.stats.online_at.compare_exchange(0, arch::timer::ticks().max(1), Release, Relaxed);
    loop {
        if me.state.load(Acquire) == STARTING {
            let (entry, arg) = (me.entry.load(Relaxed), me.arg.load(Relaxed));
            // SAFETY: `start` stored a valid `CoreEntry` before publishing
            // STARTING with release ordering, which the load above acquired.
            let entry: CoreEntry = unsafe { core::mem::transmute::<usize, CoreEntry>(entry) };
            me.state.store(RUNNING, Relaxed);
            me.stats.starts.fetch_add(1, Relaxed);
            entry(arg);
            me.state.store(PARKED, Release);
        } else {
            crate::idle::wait(me, Depth::Deep, None);
        }
    }
}

/// Runs `handler` as an interrupt handler of the calling core: roving sees
/// [`in_interrupt`] true meanwhile, so it reaches pools as outside code.
#[inline(always)]
pub(crate) fn as_interrupt_handler(handler: impl FnOnce()) {
    let began = crate::masking::handler_began();
    let saved = arch::cpu::enter_handler();
    handler();
    arch::cpu::leave_handler(saved);
    if let Some(began) = began {
        crate::masking::handler_ran(began);
    }
}

/// Whether the calling core is inside an interrupt handler. Two reads of
/// per-core registers, each of the core that runs it: code moved between
/// them runs no handler on either core, so both say so.
pub(crate) fn in_interrupt() -> bool {
    current().is_some() && arch::cpu::core_local_outside_handler().is_none()
}

/// The calling core's index, unless it runs an interrupt handler: one read
/// of a per-core register (`arch::cpu::core_local_outside_handler`), for
/// the question roving asks most.
pub(crate) fn current_outside_interrupt() -> Option<usize> {
    arch::cpu::core_local_outside_handler().map(|me| me.index)
}
