//! The seam: everything roving needs from the machine, and nothing more.
//!
//! The portable scheduler calls the free functions of this module. They
//! forward, through symbols resolved at link time, to the one type the final
//! program registered with [`set_platform!`](crate::set_platform). There is
//! no generic parameter on the public API and no dynamic dispatch: this is
//! the pattern of the `critical-section` crate.
//!
//! How the implementations in this repository meet each need
//! (`roving-kernel` for bare metal, [`host`] behind feature `std`):
//!
//! | need | aarch64 (QEMU `virt`, Raspberry Pi 3B and 4B) | x86_64 PC | host (`std`) |
//! |---|---|---|---|
//! | which core am I, how many | `TPIDR_EL1`; the device tree | the GS base; the ACPI MADT | a thread-local; [`host::Machine`] |
//! | wait for an event, light tier | `WFE` | `MONITOR`/`MWAIT` | watch the doorbell, then `thread::park` |
//! | wait, deep tier | `WFI` | `HLT` | `thread::park` |
//! | wake one core | `SEV`, or an SGI for the deep tier (a BCM2836 mailbox on the Pi 3) | a store to the doorbell, or an IPI | `Thread::unpark` |
//! | tick counter and frequency | `CNTVCT_EL0`, `CNTFRQ_EL0` | the TSC | `std::time::Instant` |
//! | start a core at an entry | PSCI `CPU_ON` (the firmware's spin table on the Pis) | INIT-SIPI-SIPI | `std::thread::spawn` |
//! | mask and restore interrupts | `DAIF` | `RFLAGS.IF` | nothing to do |
//! | a tick to preempt a strand | the generic timer | the local APIC's one-shot timer | a ticker thread and `SIGURG` (x86_64 Linux) |
//!
//! # Supplying your own platform
//!
//! A kernel that embeds roving implements [`Platform`] for a type of its own
//! and registers it once, anywhere in the final program:
//!
//! ```ignore
//! struct MyKernel;
//! unsafe impl roving::platform::Platform for MyKernel { /* ... */ }
//! roving::set_platform!(MyKernel);
//! ```
//!
//! Registering none is a link error naming the missing `_roving_platform_*`
//! symbol; registering two is a duplicate-symbol link error. With feature
//! `std`, roving registers [`host`]'s platform itself. In the repository,
//! `docs/embedding.md` is the checklist for a kernel, `examples/embed` a
//! small aarch64 kernel written on it that `make test` boots, and
//! `tests/custom-platform` the trait on the host.

pub use crate::mailbox::doorbell;
#[cfg(not(loom))]
pub mod hooks;
#[cfg(feature = "std")]
pub mod host;
pub(crate) mod instant;

pub use doorbell::{Doorbell, WakeSignal};

use instant::Instant;

/// How deeply an idle core may sleep while it waits for an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Cheap to enter and leave (`WFE` on ARM). Under QEMU this still burns
    /// a host core: use it for short waits.
    Light,
    /// Woken only by an interrupt (`WFI` on ARM, `HLT` on x86). Costs an
    /// inter-processor interrupt to wake; uses no host CPU under QEMU.
    Deep,
}

/// The entry point of a core started with [`start_core`]: it receives the
/// `arg` given there. When it returns, the core becomes startable again.
pub type CoreEntry = fn(arg: usize);

/// Why [`start_core`] did not start a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartCoreError {
    /// There is no core with this index on this machine.
    NoSuchCore {
        /// The index asked for.
        core: usize,
        /// How many cores the machine has (valid indices are `0..count`).
        count: usize,
    },
    /// The core is running: the boot core always, any other core until its
    /// entry function returns.
    AlreadyRunning {
        /// The index asked for.
        core: usize,
    },
    /// The firmware or operating system refused to start the core.
    Refused {
        /// The index asked for.
        core: usize,
        /// The refusal as the platform reports it (a PSCI return code on
        /// ARM, an OS error number on the host).
        code: i64,
    },
    /// The platform accepted the start, but the core never arrived. A
    /// firmware spin table gives no answer: a core whose firmware does not
    /// watch the address it was released through stays where it is, so
    /// the platform waited this long and gave the core up. Later starts
    /// of it fail the same way.
    DidNotArrive {
        /// The index asked for.
        core: usize,
        /// How long the platform waited, in milliseconds.
        waited_ms: u32,
    },
}

error_messages! {
    impl StartCoreError {
        Self::NoSuchCore { core, count } => "no core {core}: this machine has cores 0..{count}";
        Self::AlreadyRunning { core } =>
            "core {core} is already running; start it again after its entry returns";
        Self::Refused { core, code } => "the platform refused to start core {core} (code {code})";
        Self::DidNotArrive { core, waited_ms } =>
            "core {core} was started but had not arrived after {waited_ms} ms; it is given up";
    }
}

/// A core index that names no core of this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownCore {
    /// The index given.
    pub core: usize,
    /// How many cores the machine has (valid indices are `0..count`).
    pub count: usize,
}

error_messages! {
    impl UnknownCore {
        Self { core, count } => "no core {core}: this machine has cores 0..{count}";
    }
}

/// Interrupt state saved by [`Platform::disable_interrupts`], opaque to
/// everyone but the platform that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterruptState(usize);

impl InterruptState {
    /// Wraps a platform's raw saved state.
    pub const fn from_raw(raw: usize) -> Self {
        Self(raw)
    }

    /// The platform's raw saved state.
    pub const fn into_raw(self) -> usize {
        self.0
    }
}

/// What a machine must provide for roving to schedule work on it.
///
/// Core indices are dense, `0..core_count()`, and core 0 is the core that
/// booted. The free functions of [this module](self) check their arguments
/// before calling these, so an implementation may assume `core <
/// core_count()`.
///
/// # Safety
///
/// roving's lock-free protocols rely on these contracts; an implementation
/// that breaks one can make the scheduler lose work or corrupt memory:
///
/// - `current_core` returns the same index for as long as a thread of
///   execution runs, distinct indices for code running at the same time,
///   and `None` only on threads that are not cores;
/// - `wait_for_event` may return spuriously, but must return after a
///   `wake` of the calling core that happened after the previous return
///   (whether or not the call had started when the wake was sent), and by
///   the deadline, if one is given, give or take the platform's timer
///   resolution;
/// - `ticks` never goes backwards on one core, and all cores share one time
///   base;
/// - `start_core` runs `entry(arg)` on the given core, on a stack of its
///   own, at most once per successful call;
/// - `restore_interrupts` accepts every state `disable_interrupts` returned.
///
/// The smallest implementation that keeps these: one core, no interrupt
/// controller, and a counter for a clock. Its idle core spins, since a
/// wait may always return at once. A kernel registers it once with
/// [`set_platform!`](crate::set_platform) (here the host's platform is
/// already registered, so this only compiles it); `docs/embedding.md` lists
/// what a real kernel must also provide.
///
/// ```
/// use core::sync::atomic::{AtomicU64, Ordering};
/// use roving::platform::{CoreEntry, Depth, InterruptState, Platform, StartCoreError};
///
/// struct OneCore;
/// static NOW: AtomicU64 = AtomicU64::new(0);
///
/// // SAFETY: one core, always core 0 and always running; waits return at
/// // once, which the contract allows; the clock only grows; no interrupts.
/// unsafe impl Platform for OneCore {
///     fn current_core() -> Option<usize> { Some(0) }
///     fn core_count() -> usize { 1 }
///     fn wait_for_event(_: Depth, _: Option<u64>) { core::hint::spin_loop() }
///     fn wake(_: usize) {}
///     fn wake_all() {}
///     fn ticks() -> u64 { NOW.fetch_add(1, Ordering::Relaxed) }
///     fn tick_hz() -> u64 { 1_000_000 }
///     fn start_core(core: usize, _: CoreEntry, _: usize) -> Result<(), StartCoreError> {
///         Err(StartCoreError::AlreadyRunning { core })
///     }
///     fn disable_interrupts() -> InterruptState { InterruptState::from_raw(0) }
///     unsafe fn restore_interrupts(_: InterruptState) {}
/// }
/// # assert_eq!(OneCore::core_count(), 1);
/// ```
pub unsafe trait Platform {
    /// The index of the calling core, or `None` on a thread that is not a
    /// core (an OS thread on the host that no [`host::Machine`] started).
    fn current_core() -> Option<usize>;

    /// How many cores this machine has.
    fn core_count() -> usize;

    /// Parks the calling core until [`Platform::wake`] is called for it, the
    /// tick counter reaches `deadline` (if given), or spuriously.
    fn wait_for_event(depth: Depth, deadline: Option<u64>);

    /// Wakes `core` if it is waiting, or makes its next wait return at once.
    fn wake(core: usize);

    /// Wakes every core, as [`Platform::wake`] does for one.
    fn wake_all();

    /// The current value of the machine's monotonic tick counter.
    fn ticks() -> u64;

    /// Ticks per second of [`Platform::ticks`]; never zero.
    fn tick_hz() -> u64;

    /// Starts `core`, which must not be running, at `entry(arg)`.
    fn start_core(core: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError>;

    /// Masks interrupts on the calling core and returns the previous state.
    fn disable_interrupts() -> InterruptState;

    /// Restores the interrupt state saved by [`Platform::disable_interrupts`].
    ///
    /// # Safety
    ///
    /// `state` must come from `disable_interrupts` on this core, and
    /// save/restore pairs must nest.
    unsafe fn restore_interrupts(state: InterruptState);

    /// Whether the calling code runs in an interrupt handler. There roving
    /// reaches a pool as code outside it would (through a mailbox, never
    /// the interrupted core's own queues), so the handler does not touch
    /// what the code it interrupted holds. A platform that never calls
    /// roving from a handler keeps the default, `false`.
    fn in_interrupt() -> bool {
        false
    }

    /// The calling core's index if the calling code is not in an interrupt
    /// handler: [`Platform::current_core`], unless [`Platform::in_interrupt`].
    /// Roving asks it on every operation that finds the calling core's
    /// pool (a spawn, a yield, a post); a platform that keeps both answers
    /// in one per-core record answers with one look at it. The default
    /// asks the two in turn.
    ///
    /// On a platform that preempts, a strand may be stopped between any two
    /// instructions and resumed on another core. An answer read through a
    /// per-core pointer (the pointer, then a flag behind it) can then pair
    /// one core's index with another core's handler state; read the answer
    /// from the running core's own register or segment in one load instead
    /// (as roving-kernel does).
    fn current_core_outside_interrupt() -> Option<usize> {
        if Self::in_interrupt() { None } else { Self::current_core() }
    }

    /// Whether an interrupt handler that may wake strands is bound now.
    /// While one is, a pool whose cores are all asleep with strands
    /// blocked is waiting for a device, not deadlocked: any of roving's
    /// interrupt-safe objects may be released by the handler. A platform
    /// that never calls roving from a handler keeps the default, `false`.
    fn interrupts_bound() -> bool {
        false
    }

    /// Whether this platform can preempt strands (`crate::preempt`): its
    /// timer interrupt calls [`preempt::on_tick`](crate::preempt::on_tick)
    /// on the core it interrupted, and when the answer is
    /// [`Tick::Preempt`](crate::preempt::Tick::Preempt) makes the
    /// interrupted code enter [`preempt::entry_address`](crate::preempt::entry_address)
    /// as that entry's instruction set documents; and
    /// [`Platform::request_tick`] arms that interrupt. The default,
    /// `false`, makes pools with a time slice fail to build.
    fn can_preempt() -> bool {
        false
    }

    /// Asks for the calling core's timer interrupt at tick `deadline`,
    /// replacing any earlier request of this core, or for none (`None`).
    /// A preempting platform delivers it no earlier than `deadline`, and
    /// may deliver spurious ones; while the core waits in
    /// [`Platform::wait_for_event`] the wait's own deadline governs. Only
    /// called on platforms that [`can_preempt`](Platform::can_preempt);
    /// the default does nothing.
    fn request_tick(deadline: Option<u64>) {
        let _ = deadline;
    }

    /// Asks for core `core`'s timer interrupt (its [`on_tick`](crate::preempt::on_tick))
    /// as soon as possible: the calling core's own, or another's through an
    /// inter-processor interrupt. Roving calls it when a woken strand
    /// outranks the strand running on `core` (`crate::strand::Priority`),
    /// from strands and interrupt handlers alike, so it must be
    /// interrupt-safe. The default does nothing: `core` then sees the woken
    /// strand at its next tick, within a time slice. From an interrupt
    /// handler on `core` itself, the best answer is to call
    /// [`on_tick`](crate::preempt::on_tick) as that interrupt ends, as
    /// for a timer tick: the woken strand then runs as the handler
    /// returns, with no second interrupt.
    fn request_tick_on(core: usize) {
        let _ = core;
    }
}

/// Registers `$t` as the [`Platform`] of this program. Use it exactly once,
/// in any crate of the final program.
#[macro_export]
macro_rules! set_platform {
    ($t:ty) => {
        const _: () = {
            use $crate::platform::{CoreEntry, Depth, InterruptState, Platform, StartCoreError};

            #[unsafe(no_mangle)]
            fn _roving_platform_current_core() -> Option<usize> {
                <$t as Platform>::current_core()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_core_count() -> usize {
                <$t as Platform>::core_count()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_wait_for_event(depth: Depth, deadline: Option<u64>) {
                <$t as Platform>::wait_for_event(depth, deadline)
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_wake(core: usize) {
                <$t as Platform>::wake(core)
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_wake_all() {
                <$t as Platform>::wake_all()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_ticks() -> u64 {
                <$t as Platform>::ticks()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_tick_hz() -> u64 {
                <$t as Platform>::tick_hz()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_start_core(
                core: usize,
                entry: CoreEntry,
                arg: usize,
            ) -> Result<(), StartCoreError> {
                <$t as Platform>::start_core(core, entry, arg)
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_disable_interrupts() -> InterruptState {
                <$t as Platform>::disable_interrupts()
            }
            #[unsafe(no_mangle)]
            unsafe fn _roving_platform_restore_interrupts(state: InterruptState) {
                // SAFETY: forwarded unchanged; the caller upholds the contract.
                unsafe { <$t as Platform>::restore_interrupts(state) }
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_in_interrupt() -> bool {
                <$t as Platform>::in_interrupt()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_current_core_outside_interrupt() -> Option<usize> {
                <$t as Platform>::current_core_outside_interrupt()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_interrupts_bound() -> bool {
                <$t as Platform>::interrupts_bound()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_can_preempt() -> bool {
                <$t as Platform>::can_preempt()
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_request_tick(deadline: Option<u64>) {
                <$t as Platform>::request_tick(deadline)
            }
            #[unsafe(no_mangle)]
            fn _roving_platform_request_tick_on(core: usize) {
                <$t as Platform>::request_tick_on(core)
            }
        };
    };
}

// Defined by `set_platform!`, with exactly these signatures.
unsafe extern "Rust" {
    fn _roving_platform_current_core() -> Option<usize>;
    fn _roving_platform_core_count() -> usize;
    fn _roving_platform_wait_for_event(depth: Depth, deadline: Option<u64>);
    fn _roving_platform_wake(core: usize);
    fn _roving_platform_wake_all();
    fn _roving_platform_ticks() -> u64;
    fn _roving_platform_tick_hz() -> u64;
    fn _roving_platform_start_core(core: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError>;
    fn _roving_platform_disable_interrupts() -> InterruptState;
    fn _roving_platform_restore_interrupts(state: InterruptState);
    fn _roving_platform_in_interrupt() -> bool;
    fn _roving_platform_current_core_outside_interrupt() -> Option<usize>;
    fn _roving_platform_interrupts_bound() -> bool;
    fn _roving_platform_can_preempt() -> bool;
    fn _roving_platform_request_tick(deadline: Option<u64>);
    fn _roving_platform_request_tick_on(core: usize);
}

/// The index of the calling core, or `None` on a thread that is not a core.
#[inline]
pub fn current_core() -> Option<usize> {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_current_core() }
}

/// How many cores this machine has.
#[inline]
pub fn core_count() -> usize {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_core_count() }
}

/// Parks the calling core until it is [woken](wake), `deadline` passes, or
/// spuriously. Callers re-check whatever they are waiting for.
#[inline]
pub fn wait_for_event(depth: Depth, deadline: Option<Instant>) {
    // A strand that waits here (for a stolen fork-join job, say) stays on
    // this core throughout: the wait uses the core's own state.
    #[cfg(not(loom))]
    let _deferral = crate::preempt::deferral::defer();
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_wait_for_event(depth, deadline.map(Instant::ticks)) }
    #[cfg(not(loom))]
    crate::preempt::deferral::after_wait();
}

/// Wakes `core` if it is waiting in [`wait_for_event`], or makes its next
/// wait return at once.
#[inline]
pub fn wake(core: usize) -> Result<(), UnknownCore> {
    let count = core_count();
    if core >= count {
        return Err(UnknownCore { core, count });
    }
    // SAFETY: defined by `set_platform!` with this signature; `core` checked.
    unsafe { _roving_platform_wake(core) };
    Ok(())
}

/// Wakes every core, as [`wake`] does for one.
#[inline]
pub fn wake_all() {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_wake_all() }
}

/// The machine's monotonic tick counter. See [`Instant`] for durations.
#[inline]
pub fn ticks() -> u64 {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_ticks() }
}

/// Ticks per second of [`ticks`].
#[inline]
pub fn tick_hz() -> u64 {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_tick_hz() }
}

/// Starts `core` running `entry(arg)`.
///
/// # Errors
///
/// [`StartCoreError::NoSuchCore`] for an index past [`core_count`],
/// [`StartCoreError::AlreadyRunning`] if that core is running, and
/// [`StartCoreError::Refused`] if the firmware or OS would not start it.
pub fn start_core(core: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError> {
    let count = core_count();
    if core >= count {
        return Err(StartCoreError::NoSuchCore { core, count });
    }
    // SAFETY: defined by `set_platform!` with this signature; `core` checked.
    unsafe { _roving_platform_start_core(core, entry, arg) }
}

/// Runs `f` with interrupts masked on the calling core, then restores them.
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(InterruptState);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: the state came from `disable_interrupts_raw` on this
            // core, and the guard's scope makes the pair nest.
            unsafe { restore_interrupts_raw(self.0) }
        }
    }
    let _restore = Restore(disable_interrupts_raw());
    f()
}

/// Runs `f` with the calling core's interrupt handlers held off, where
/// handlers can call roving (bare metal): for sections a handler on the
/// same core would wait for (`docs/interrupts.md`). The host delivers no
/// interrupts to cores, and loom links no platform, so there it just runs
/// `f`.
#[inline]
pub(crate) fn masked<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(not(any(feature = "std", loom)))]
    return without_interrupts(f);
    #[cfg(any(feature = "std", loom))]
    return f();
}

/// Masks interrupts on the calling core; returns the state to restore
/// (for guards that cannot take a closure, such as a lock's).
#[inline]
pub(crate) fn disable_interrupts_raw() -> InterruptState {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_disable_interrupts() }
}

/// Restores a state [`disable_interrupts_raw`] returned.
///
/// # Safety
///
/// `state` came from `disable_interrupts_raw` on this core, and the pairs
/// nest.
#[inline]
pub(crate) unsafe fn restore_interrupts_raw(state: InterruptState) {
    // SAFETY: defined by `set_platform!`; the state is as the contract says.
    unsafe { _roving_platform_restore_interrupts(state) }
}

/// Whether the calling code runs in an interrupt handler (see
/// [`Platform::in_interrupt`]).
#[inline]
pub fn in_interrupt() -> bool {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_in_interrupt() }
}

/// The calling core's index outside interrupt handlers; `None` in one, or
/// on a thread that is not a core (see
/// [`Platform::current_core_outside_interrupt`]).
#[inline]
pub fn current_core_outside_interrupt() -> Option<usize> {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_current_core_outside_interrupt() }
}

/// Whether an interrupt handler that may wake strands is bound (see
/// [`Platform::interrupts_bound`]).
#[inline]
pub fn interrupts_bound() -> bool {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_interrupts_bound() }
}

/// Whether the platform can preempt strands (see [`Platform::can_preempt`]).
#[inline]
pub fn can_preempt() -> bool {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_can_preempt() }
}

/// Asks for the calling core's timer interrupt at tick `deadline` (see
/// [`Platform::request_tick`]).
#[inline]
pub(crate) fn request_tick(deadline: Option<u64>) {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_request_tick(deadline) }
}

/// Asks for core `core`'s timer interrupt at once (see
/// [`Platform::request_tick_on`]).
#[inline]
pub(crate) fn request_tick_on(core: usize) {
    // SAFETY: defined by `set_platform!` with this signature.
    unsafe { _roving_platform_request_tick_on(core) }
}

/// What an interrupt handler does instead of blocking.
pub(crate) const HANDLERS_WAKE: &str = "a handler must not wait; it wakes the strand that waits instead \
     (Signal::signal, Event::set, Semaphore::release, Unparker::unpark)";

/// What an interrupt handler does instead of allocating.
pub(crate) const HANDLERS_DO_NOT_ALLOCATE: &str = "it allocates, which a handler must not; wake a strand \
     that does it (Signal::signal, Unparker::unpark) or send through an actor's InterruptSender";

/// In debug builds, panics if an interrupt handler called `what`, which is
/// not interrupt-safe; the message says what a handler does `instead`.
#[inline]
#[track_caller]
pub(crate) fn refuse_in_handler(what: &str, instead: &str) {
    #[cfg(all(debug_assertions, not(loom)))]
    if in_interrupt() {
        panic!("roving: {what} is not interrupt-safe, and an interrupt handler called it: {instead}");
    }
    #[cfg(not(all(debug_assertions, not(loom))))]
    let _ = (what, instead);
}
