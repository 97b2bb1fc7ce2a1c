//! The host platform (feature `std`): OS threads stand in for cores.
//!
//! A [`Machine`] is a set of `N` simulated cores. [`Machine::run`] makes the
//! calling thread core 0 for the duration of a closure; [`start_core`] runs
//! an entry on a new OS thread that is that core. Waiting is `thread::park`
//! and waking is `Thread::unpark`, arbitrated by each core's [`Doorbell`]
//! exactly as on hardware. Ticks are nanoseconds.
//!
//! Machines are independent, so tests running in parallel each build their
//! own. Like `std::thread::scope`, `run` returns only after every core
//! started during it has returned from its entry, and re-raises the first
//! panic of any of them.
//!
//! ```
//! use roving::platform::{self, host::Machine};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! static SEEN: AtomicUsize = AtomicUsize::new(0);
//! fn report_in(bit: usize) {
//!     assert_eq!(platform::current_core(), Some(bit));
//!     SEEN.fetch_or(1 << bit, Ordering::SeqCst);
//! }
//!
//! let machine = Machine::new(4).unwrap();
//! machine.run(|| {
//!     for core in 1..platform::core_count() {
//!         platform::start_core(core, report_in, core).unwrap();
//!     }
//! }).unwrap();
//! assert_eq!(SEEN.load(Ordering::SeqCst), 0b1110);
//! ```
//!
//! [`start_core`]: super::start_core

#[cfg(all(target_os = "linux", not(miri)))]
mod dump;
#[cfg(all(unix, not(miri)))]
mod guard;
mod light_spin;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod preempt;

#[cfg(all(target_os = "linux", not(miri)))]
pub use dump::{DumpSignalError, dump_all_strands, dump_strands_on};

use super::{CoreEntry, Depth, Doorbell, InterruptState, Platform, StartCoreError, WakeSignal};
use crate::atomics::unmodelled::{AtomicBool, AtomicUsize, Ordering};
use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{self, JoinHandle, Thread};
use std::time::Duration;

/// The most cores a host [`Machine`] may simulate.
pub const MAX_CORES: usize = 1024;

/// Why a [`Machine`] could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineError {
    /// A machine needs at least one core.
    NoCores,
    /// More cores than [`MAX_CORES`] were asked for.
    TooManyCores {
        /// The count asked for.
        requested: usize,
    },
}

error_messages! {
    impl MachineError {
        Self::NoCores => "a machine needs at least one core";
        Self::TooManyCores { requested } =>
            "{requested} cores asked for; a host machine has at most {MAX_CORES}";
    }
}

/// Why [`Machine::run`] did not run its closure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineRunError {
    /// Core 0 of this machine is already running (another `run` is active).
    CoreZeroBusy,
}

error_messages! {
    impl MachineRunError {
        Self::CoreZeroBusy => "core 0 of this machine is already running another `run`";
    }
}

/// A simulated multicore machine whose cores are OS threads.
#[derive(Clone)]
pub struct Machine {
    inner: Arc<Inner>,
}

struct Inner {
    cores: Box<[Core]>,
    /// Threads started by `start_core` and not yet joined by `run`.
    started: Mutex<Vec<JoinHandle<()>>>,
    /// Whether the light tier may spin: only if every simulated core can
    /// have a hardware thread, or spinning cores would slow working ones.
    light_spin: bool,
    /// A check for a deadlock across this machine's pools is under way
    /// (`crate::pool::core_owners::with_across_check`).
    checking_across: AtomicBool,
    /// Stands in for the cores' timers when a pool preempts.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    ticker: preempt::Ticker,
}

struct Core {
    doorbell: Doorbell,
    running: AtomicBool,
    /// The thread that is this core right now, for `unpark`.
    thread: Mutex<Option<Thread>>,
    /// Which pool holds the core (`crate::pool::core_owners`), 0 if none.
    owner: AtomicUsize,
    /// The core's timer, for preempting pools.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    tick: preempt::CoreTick,
}

/// Which machine, and which core of it, the current thread is.
struct Membership {
    machine: Arc<Inner>,
    core: Option<usize>,
}

thread_local! {
    static MEMBERSHIP: RefCell<Option<Membership>> = const { RefCell::new(None) };
    /// The thread stands in for an interrupt handler (`Machine::enter_as_handler`).
    static IN_HANDLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Interrupts are "masked" on this core: the only interrupt the host
    /// delivers, a preempting pool's tick (`host/preempt.rs`), then leaves
    /// the thread alone, as a masked core's timer would.
    static MASKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Threads standing in for interrupt handlers now
/// (`Machine::enter_as_handler`), on any machine: the host's bound lines
/// (`interrupts_bound`).
static HANDLERS: AtomicUsize = AtomicUsize::new(0);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking core must not wedge the machine; the data stays valid.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn with_membership<R>(what: &str, f: impl FnOnce(&Arc<Inner>, Option<usize>) -> R) -> R {
    MEMBERSHIP.with_borrow(|membership| match membership {
        Some(m) => f(&m.machine, m.core),
        None => panic!(
            "roving: {what} called on a thread outside any host Machine; \
             run it inside Machine::run, a core it started, or Machine::enter"
        ),
    })
}

/// Whether the calling thread is a core of a [`Machine`] (or has entered
/// one), so that the platform's calls work on it.
pub(crate) fn on_a_machine() -> bool {
    MEMBERSHIP.with_borrow(Option::is_some)
}

impl Machine {
    /// A machine with `cores` simulated cores, none of them running.
    ///
    /// # Errors
    ///
    /// [`MachineError::NoCores`] for zero, [`MachineError::TooManyCores`]
    /// above [`MAX_CORES`].
    pub fn new(cores: usize) -> Result<Self, MachineError> {
        if cores == 0 {
            return Err(MachineError::NoCores);
        }
        if cores > MAX_CORES {
            return Err(MachineError::TooManyCores { requested: cores });
        }
        #[cfg(all(unix, not(miri)))]
        guard::install();
        // Measured before any core runs (once per process), so that no
        // core's first wait pays for it.
        light_spin::light_spin();
        let light_spin = thread::available_parallelism().is_ok_and(|threads| cores <= threads.get());
        let cores = (0..cores)
            .map(|_| Core {
                doorbell: Doorbell::new(),
                running: AtomicBool::new(false),
                thread: Mutex::new(None),
                owner: AtomicUsize::new(0),
                #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
                tick: preempt::CoreTick::new(),
            })
            .collect();
        Ok(Self {
            inner: Arc::new(Inner {
                cores,
                started: Mutex::new(Vec::new()),
                light_spin,
                checking_across: AtomicBool::new(false),
                #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
                ticker: preempt::Ticker::new(),
            }),
        })
    }

    /// How many cores this machine has.
    pub fn core_count(&self) -> usize {
        self.inner.cores.len()
    }

    /// Runs `main` on the calling thread as core 0, then waits for every
    /// core started meanwhile to return from its entry.
    ///
    /// If `main` or any core panicked, the first such panic is resumed here
    /// after all cores have been joined.
    ///
    /// # Errors
    ///
    /// [`MachineRunError::CoreZeroBusy`] if another `run` of this machine is active.
    pub fn run<R>(&self, main: impl FnOnce() -> R) -> Result<R, MachineRunError> {
        let core0 = &self.inner.cores[0];
        if core0.running.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(MachineRunError::CoreZeroBusy);
        }
        *lock(&core0.thread) = Some(thread::current());
        #[cfg(all(unix, not(miri)))]
        guard::ensure_alternate_stack();
        let outer = MEMBERSHIP.replace(Some(Membership { machine: self.inner.clone(), core: Some(0) }));
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        let ticks = preempt::enter_core(&self.inner, 0);

        let result = panic::catch_unwind(AssertUnwindSafe(main));
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        drop(ticks);
        let core_panic = self.join_started();

        MEMBERSHIP.set(outer);
        *lock(&core0.thread) = None;
        core0.doorbell.answer(); // a stale ring must not leak into the next run
        core0.running.store(false, Ordering::Release);

        match (result, core_panic) {
            (Err(payload), _) | (Ok(_), Some(payload)) => panic::resume_unwind(payload),
            (Ok(value), None) => Ok(value),
        }
    }

    /// Makes the calling thread a member of this machine that is not a core
    /// (work from outside the machine, like an interrupt handler or another
    /// program), until the guard is dropped: it may then [`wake`] cores and
    /// read the clock. `current_core()` is `None` there.
    ///
    /// [`wake`]: super::wake
    pub fn enter(&self) -> EnterGuard {
        let outer = MEMBERSHIP.replace(Some(Membership { machine: self.inner.clone(), core: None }));
        EnterGuard { outer: Some(outer), handler: IN_HANDLER.replace(false), counted: false }
    }

    /// As [`enter`](Machine::enter), and the thread stands in for an
    /// interrupt handler until the guard is dropped:
    /// [`in_interrupt`](super::in_interrupt) is true there, so roving's
    /// interrupt-safe operations can be exercised as a handler would call
    /// them, and (in debug builds) the others refuse. While one is
    /// entered, pools are not reported deadlocked, as on bare metal while
    /// a line is bound. The host delivers no real interrupts: such a
    /// thread runs beside the cores, not on one.
    pub fn enter_as_handler(&self) -> EnterGuard {
        let mut guard = self.enter();
        IN_HANDLER.set(true);
        HANDLERS.fetch_add(1, Ordering::SeqCst);
        guard.counted = true;
        guard
    }

    fn join_started(&self) -> Option<Box<dyn Any + Send>> {
        let mut first_panic = None;
        // A core may start another core before it returns, so repeat until
        // a pass finds nothing new.
        loop {
            let batch = std::mem::take(&mut *lock(&self.inner.started));
            if batch.is_empty() {
                return first_panic;
            }
            for handle in batch {
                if let Err(payload) = handle.join() {
                    first_panic.get_or_insert(payload);
                }
            }
        }
    }
}

impl fmt::Debug for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Machine").field("cores", &self.core_count()).finish()
    }
}

/// Returned by [`Machine::enter`]; restores the thread's previous machine
/// membership when dropped.
#[must_use = "the thread leaves the machine when the guard is dropped"]
pub struct EnterGuard {
    outer: Option<Option<Membership>>,
    /// Whether the thread stood in for a handler before.
    handler: bool,
    /// Counted in `HANDLERS`.
    counted: bool,
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        if let Some(outer) = self.outer.take() {
            MEMBERSHIP.set(outer);
        }
        IN_HANDLER.set(self.handler);
        if self.counted {
            HANDLERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The host's tick counter: nanoseconds since the first look.
fn now_ticks() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn epoch() -> std::time::Instant {
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

fn core_thread(machine: Arc<Inner>, core: usize, entry: CoreEntry, arg: usize) {
    struct Stopped<'a>(&'a Core);
    impl Drop for Stopped<'_> {
        // Runs on return and on panic alike, so the core can start again.
        fn drop(&mut self) {
            *lock(&self.0.thread) = None;
            self.0.running.store(false, Ordering::Release);
        }
    }
    let me = &machine.cores[core];
    *lock(&me.thread) = Some(thread::current());
    #[cfg(all(unix, not(miri)))]
    guard::ensure_alternate_stack();
    let _stopped = Stopped(me);
    MEMBERSHIP.set(Some(Membership { machine: machine.clone(), core: Some(core) }));
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    let _ticks = preempt::enter_core(&machine, core);
    entry(arg);
}

/// Runs `f` with the word that says which pool holds `core` of the calling
/// thread's machine (`crate::pool::core_owners`).
pub(crate) fn with_core_owner<R>(core: usize, f: impl FnOnce(&AtomicUsize) -> R) -> R {
    with_membership("a pool's core table", |machine, _| f(&machine.cores[core].owner))
}

/// Runs `f` with the calling thread's machine's flag of a check across
/// its pools under way (`crate::pool::core_owners`).
pub(crate) fn with_across_check<R>(f: impl FnOnce(&AtomicBool) -> R) -> R {
    with_membership("a pool's core table", |machine, _| f(&machine.checking_across))
}

struct HostPlatform;

/// What a searching core does after fruitless round `round`. With more
/// cores than CPUs, a core that spins while it searches keeps a working
/// core's thread off a CPU, so every eighth round it yields its thread
/// (not every round: on a loaded host each yield may cost a time slice,
/// and a core must still fall asleep soon).
pub(crate) fn between_search_rounds(round: u32) {
    let oversubscribed = MEMBERSHIP.with_borrow(|m| m.as_ref().is_some_and(|m| !m.machine.light_spin));
    if oversubscribed && round.is_multiple_of(8) {
        thread::yield_now();
    } else {
        core::hint::spin_loop();
    }
}

/// The light tier's stand-in for `WFE`: watches the doorbell until it is
/// rung (true), or for as long as parking and unparking would cost
/// (`light_spin`), or until `deadline` (false). A `WFE` ends within a few
/// hundred cycles of the `SEV`; a parked thread needs a futex wake-up and
/// a trip through the OS scheduler, several microseconds, which spinning
/// first saves a core that had just gone idle.
fn rung_while_spinning(doorbell: &Doorbell, deadline: Option<u64>) -> bool {
    let start = HostPlatform::ticks();
    let spin = light_spin::light_spin().as_nanos() as u64;
    let until = deadline.unwrap_or(u64::MAX).min(start.saturating_add(spin));
    loop {
        for _ in 0..64 {
            if doorbell.answer() {
                return true;
            }
            core::hint::spin_loop();
        }
        if HostPlatform::ticks() >= until {
            return false;
        }
    }
}

// SAFETY: core indices come from thread-local membership set only by `run`
// (core 0) and `core_thread` (one thread per running core, guarded by the
// `running` flag); waits and wakes follow the Doorbell protocol with park
// and unpark, whose token plays the role of the event register; ticks come
// from one monotonic clock.
unsafe impl Platform for HostPlatform {
    fn current_core() -> Option<usize> {
        MEMBERSHIP.with_borrow(|m| m.as_ref().and_then(|m| m.core))
    }

    fn core_count() -> usize {
        with_membership("core_count", |machine, _| machine.cores.len())
    }

    fn wait_for_event(depth: Depth, deadline: Option<u64>) {
        with_membership("wait_for_event", |machine, core| {
            let core = core.expect("roving: wait_for_event called on a thread that is not a core");
            let doorbell = &machine.cores[core].doorbell;
            let spin = depth == Depth::Light && machine.light_spin;
            if doorbell.answer() || (spin && rung_while_spinning(doorbell, deadline)) {
                return;
            }
            match deadline {
                None => thread::park(),
                Some(deadline) => {
                    let now = Self::ticks();
                    if deadline <= now {
                        return;
                    }
                    thread::park_timeout(Duration::from_nanos(deadline - now));
                }
            }
            doorbell.answer();
        })
    }

    fn wake(core: usize) {
        with_membership("wake", |machine, _| {
            let target = &machine.cores[core];
            if target.doorbell.ring() != WakeSignal::None
                && let Some(thread) = lock(&target.thread).as_ref()
            {
                thread.unpark();
            }
        })
    }

    fn wake_all() {
        let count = Self::core_count();
        (0..count).for_each(Self::wake);
    }

    fn ticks() -> u64 {
        now_ticks()
    }

    fn tick_hz() -> u64 {
        1_000_000_000
    }

    fn start_core(core: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError> {
        let machine = with_membership("start_core", |machine, _| machine.clone());
        let target = &machine.cores[core];
        if target.running.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(StartCoreError::AlreadyRunning { core });
        }
        let for_thread = machine.clone();
        let spawned = thread::Builder::new()
            .name(format!("roving-core-{core}"))
            .spawn(move || core_thread(for_thread, core, entry, arg));
        match spawned {
            Ok(handle) => {
                lock(&machine.started).push(handle);
                Ok(())
            }
            Err(error) => {
                target.running.store(false, Ordering::Release);
                let code = error.raw_os_error().map_or(-1, i64::from);
                Err(StartCoreError::Refused { core, code })
            }
        }
    }

    fn disable_interrupts() -> InterruptState {
        InterruptState::from_raw(usize::from(MASKED.replace(true)))
    }

    unsafe fn restore_interrupts(state: InterruptState) {
        MASKED.set(state.into_raw() != 0);
    }

    fn in_interrupt() -> bool {
        IN_HANDLER.get()
    }

    /// While a thread stands in for a handler (on any machine: they are
    /// rare, and a false `true` only withholds a deadlock report).
    fn interrupts_bound() -> bool {
        HANDLERS.load(Ordering::SeqCst) > 0
    }

    /// On x86_64 Linux (not under a sanitizer or Miri): a ticker thread
    /// and a signal stand in for the timer interrupt (`host/preempt.rs`).
    fn can_preempt() -> bool {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        return preempt::SUPPORTED;
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        return false;
    }

    fn request_tick(deadline: Option<u64>) {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if preempt::SUPPORTED && !preempt::request_tick(deadline) {
            with_membership("request_tick", |machine, _| preempt::start_ticker(machine));
            let _ = preempt::request_tick(deadline);
        }
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        let _ = deadline;
    }

    fn request_tick_on(core: usize) {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if preempt::SUPPORTED {
            // A thread outside every machine (a stand-in interrupt source)
            // may wake a strand too: it has no machine to tick, and the
            // core sees the strand at its next tick.
            // The first ask of a machine whose pools do not preempt (a
            // silent-core watch's ping) starts its ticker.
            MEMBERSHIP.with_borrow(|membership| {
                if let Some(m) = membership {
                    preempt::start_ticker(&m.machine);
                    preempt::request_tick_on(&m.machine, core);
                }
            });
        }
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        let _ = core;
    }
}

crate::set_platform!(HostPlatform);
