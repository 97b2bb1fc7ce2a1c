//! `critical-section` for this kernel: interrupts masked on the calling
//! core, plus one machine-wide lock, since other cores run at the same time.
//! Nested sections on one core do not take the lock again.

use crate::cores;
use core::sync::atomic::{AtomicUsize, Ordering};

const FREE: usize = usize::MAX;
/// Set in the restore state when the section was nested (lock not taken).
const NESTED: u64 = 1 << 63;

static OWNER: AtomicUsize = AtomicUsize::new(FREE);

struct KernelCriticalSection;

// SAFETY: `acquire` masks interrupts on this core and takes the global lock
// unless this core already holds it; `release` undoes exactly that.
unsafe impl critical_section::Impl for KernelCriticalSection {
    unsafe fn acquire() -> critical_section::RawRestoreState {
        let saved = crate::masking::disable() as u64;
        let me = cores::current().map_or(FREE - 1, |core| core.index);
        if OWNER.load(Ordering::Relaxed) == me {
            return saved | NESTED;
        }
        while OWNER.compare_exchange_weak(FREE, me, Ordering::Acquire, Ordering::Relaxed).is_err() {
            core::hint::spin_loop();
        }
        saved
    }

    unsafe fn release(state: critical_section::RawRestoreState) {
        if state & NESTED == 0 {
            OWNER.store(FREE, Ordering::Release);
        }
        crate::masking::restore((state & !NESTED) as usize);
    }
}

critical_section::set_impl!(KernelCriticalSection);
