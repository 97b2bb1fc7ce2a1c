//! `critical-section` for this kernel: interrupts masked on the calling
//! core, plus one machine-wide lock, since other cores run at the same time.
//! Nested sections on one core do not take the lock again. A core waits
//! for the lock with interrupts open (as roving's spin locks do), so it
//! masks them only for its own section.

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
        loop {
            let saved = crate::masking::disable() as u64;
            // Read with interrupts masked: a strand preempted between
            // reading its core and masking could resume on another core,
            // find its old core holding the section, and take that for
            // nesting. The preempt kernel caught it under load: a heap
            // RefCell borrowed twice, and a strand overflowing its stack.
            let me = cores::current().map_or(FREE - 1, |core| core.index);
            if OWNER.load(Ordering::Relaxed) == me {
                return saved | NESTED;
            }
            if OWNER.compare_exchange(FREE, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return saved;
            }
            crate::masking::restore(saved as usize);
            while OWNER.load(Ordering::Relaxed) != FREE {
                core::hint::spin_loop();
            }
        }
    }

    unsafe fn release(state: critical_section::RawRestoreState) {
        if state & NESTED == 0 {
            OWNER.store(FREE, Ordering::Release);
        }
        crate::masking::restore((state & !NESTED) as usize);
    }
}

critical_section::set_impl!(KernelCriticalSection);
