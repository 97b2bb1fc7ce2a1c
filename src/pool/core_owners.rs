//! Which pool holds each core of the machine: the free set.
//!
//! One word per core: null when the core is free, else the address of the
//! holding pool's shared state. A pool claims a core with a
//! compare-exchange from null, so two pools never hold one core; it
//! releases the core when the core has left its loop (or, for the core
//! that called `run`, when `run` ends). On bare metal the table is a
//! static; on the host each `Machine` has its own, since several may run
//! at once with the same core indices.

use super::shared::Shared;
use crate::atomics::unmodelled::{AtomicBool, AtomicUsize, Ordering::SeqCst};

#[cfg(feature = "std")]
fn with_word<R>(core: usize, f: impl FnOnce(&AtomicUsize) -> R) -> R {
    crate::platform::host::with_core_owner(core, f)
}

/// Bare metal's table; a debugger reads it to find the pools
/// (`tools/gdb-roving.py`).
#[cfg(not(feature = "std"))]
static OWNERS: [AtomicUsize; super::current::SLOTS] = [const { AtomicUsize::new(0) }; super::current::SLOTS];

#[cfg(not(feature = "std"))]
fn with_word<R>(core: usize, f: impl FnOnce(&AtomicUsize) -> R) -> R {
    f(&OWNERS[core])
}

/// Runs `f` with the machine's flag that a check for a deadlock across its
/// pools is under way (`super::deadlock`): one per machine, as the table.
#[cfg(feature = "std")]
pub(crate) fn with_across_check<R>(f: impl FnOnce(&AtomicBool) -> R) -> R {
    crate::platform::host::with_across_check(f)
}

#[cfg(not(feature = "std"))]
pub(crate) fn with_across_check<R>(f: impl FnOnce(&AtomicBool) -> R) -> R {
    static CHECKING: AtomicBool = AtomicBool::new(false);
    f(&CHECKING)
}

fn key(pool: &Shared) -> usize {
    core::ptr::from_ref(pool) as usize
}

/// Claims `core` for `pool`; fails if another pool holds it.
pub(crate) fn claim(core: usize, pool: &Shared) -> bool {
    with_word(core, |word| {
        let owner = word.compare_exchange(0, key(pool), SeqCst, SeqCst).unwrap_or_else(|owner| owner);
        owner == 0 || owner == key(pool)
    })
}

/// Gives `core` back, if `pool` holds it.
pub(crate) fn release(core: usize, pool: &Shared) {
    with_word(core, |word| {
        let _ = word.compare_exchange(key(pool), 0, SeqCst, SeqCst);
    });
}

/// Whether `pool` holds `core`.
pub(crate) fn holds(core: usize, pool: &Shared) -> bool {
    holds_key(core, key(pool))
}

/// Whether the pool whose shared state is at address `key` holds `core`.
pub(crate) fn holds_key(core: usize, key: usize) -> bool {
    with_word(core, |word| word.load(SeqCst) == key)
}

/// Whether no pool holds `core`.
pub(crate) fn is_free(core: usize) -> bool {
    with_word(core, |word| word.load(SeqCst) == 0)
}

/// Whether a pool other than `pool` holds any core of `0..cores`: its
/// strands may still wake `pool`'s (`super::deadlock`).
pub(crate) fn another_pool_runs(cores: usize, pool: &Shared) -> bool {
    (0..cores).any(|core| {
        with_word(core, |word| {
            let owner = word.load(SeqCst);
            owner != 0 && owner != key(pool)
        })
    })
}
