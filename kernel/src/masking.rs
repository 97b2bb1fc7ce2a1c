//! Masking interrupts on the calling core, and how long each section lasts.
//!
//! Work runs with interrupts open; only short sections mask them: roving's
//! internal spin locks, the console, the heap, the interrupt controller's
//! shared registers, and a core's idle wait up to its sleep instruction.
//! The longest of those sections bounds how late a device's handler can
//! start, so every one goes through [`disable`] and [`restore`] here, which
//! can time them.
//!
//! Timing is off until [`measure`] turns it on (it costs two cycle-counter
//! reads per section). While it is on, each core keeps the longest section
//! it has run, in cycles of its own counter (`crate::cycles`): from the
//! moment interrupts went from open to masked until they opened again. A
//! core asleep with interrupts masked (the deep idle tier) is not in a
//! section: the clock restarts when it wakes ([`woke`]). Sections opened
//! by taking an exception are the handler's time, kept separately
//! ([`handler_ran`]).

use crate::{arch, cores};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

static MEASURING: AtomicBool = AtomicBool::new(false);

/// What each core keeps.
#[derive(Debug)]
pub(crate) struct Record {
    /// When the section under way began (cycles), or 0.
    since: AtomicU64,
    /// The longest masked section so far, in cycles.
    longest: AtomicU64,
    /// The longest interrupt handler so far, in cycles.
    longest_handler: AtomicU64,
}

impl Record {
    pub(crate) const fn new() -> Self {
        Self { since: AtomicU64::new(0), longest: AtomicU64::new(0), longest_handler: AtomicU64::new(0) }
    }

    /// `(longest masked section, longest handler)`, in cycles.
    pub(crate) fn longest(&self) -> (u64, u64) {
        (self.longest.load(Relaxed), self.longest_handler.load(Relaxed))
    }

    fn reset(&self) {
        self.since.store(0, Relaxed);
        self.longest.store(0, Relaxed);
        self.longest_handler.store(0, Relaxed);
    }
}

/// Starts or stops timing masked sections on every core. Starting clears
/// what was recorded before.
pub fn measure(on: bool) {
    if on {
        for index in 0..cores::count() {
            cores::local(index).masking.reset();
        }
    }
    MEASURING.store(on, Relaxed);
}

fn record() -> Option<&'static Record> {
    if !MEASURING.load(Relaxed) {
        return None;
    }
    cores::current().map(|core| &core.masking)
}

/// Set in what [`disable`] returns when it opened a section that is being
/// timed, so that [`restore`] tests a bit of its argument, not memory.
/// (Bit 63 is `critical`'s.)
const TIMED: usize = 1 << 62;

/// Masks interrupts on the calling core; returns the state for [`restore`].
#[inline]
pub(crate) fn disable() -> usize {
    let saved = arch::cpu::disable_interrupts();
    if arch::cpu::enabled_in(saved)
        && let Some(record) = record()
    {
        record.since.store(arch::timer::cycles().max(1), Relaxed);
        return saved | TIMED;
    }
    saved
}

/// Restores the state [`disable`] returned on this core.
#[inline]
pub(crate) fn restore(saved: usize) {
    if saved & TIMED != 0 {
        if let Some(core) = cores::current() {
            let since = core.masking.since.swap(0, Relaxed);
            if since != 0 {
                core.masking.longest.fetch_max(arch::timer::cycles().saturating_sub(since), Relaxed);
            }
        }
        return arch::cpu::restore_interrupts(saved & !TIMED);
    }
    arch::cpu::restore_interrupts(saved);
}

/// Runs `f` with interrupts masked on the calling core, then restores them.
pub(crate) fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    let saved = disable();
    let result = f();
    restore(saved);
    result
}

/// Runs `f` on what `lock` guards, with interrupts masked on this core
/// while it is held, so a handler on this core that wants the lock never
/// waits for the code it interrupted. The core waits for the lock with
/// interrupts open: its masked time is its own section, never also the
/// other holders'.
pub(crate) fn locked<T, R>(lock: &spin::Mutex<T>, f: impl FnOnce(&mut T) -> R) -> R {
    loop {
        let saved = disable();
        if let Some(mut guard) = lock.try_lock() {
            let result = f(&mut guard);
            drop(guard);
            restore(saved);
            return result;
        }
        restore(saved);
        while lock.is_locked() {
            core::hint::spin_loop();
        }
    }
}

/// The calling core woke from a sleep it entered with interrupts masked:
/// its section starts again now.
pub(crate) fn woke() {
    if let Some(record) = record()
        && record.since.load(Relaxed) != 0
    {
        record.since.store(arch::timer::cycles().max(1), Relaxed);
    }
}

/// The strand running on this core panicked and is being abandoned: a
/// section it had masked ends with it (its guard will never run), and its
/// core's scheduler goes on with interrupts open, as it always runs.
pub(crate) fn abandon_strand_sections() {
    if let Some(record) = record() {
        record.since.store(0, Relaxed);
    }
    arch::cpu::enable_interrupts();
}

/// An interrupt handler that began at cycle `began` has just ended.
pub(crate) fn handler_ran(began: u64) {
    if let Some(record) = record() {
        record.longest_handler.fetch_max(arch::timer::cycles().saturating_sub(began), Relaxed);
    }
}

/// The cycle counter, if handlers are being timed.
pub(crate) fn handler_began() -> Option<u64> {
    MEASURING.load(Relaxed).then(arch::timer::cycles)
}
