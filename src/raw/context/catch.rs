//! A point to come back to on this stack: [`catching`] runs a closure, and
//! [`throw`], called anywhere below it, abandons the closure's frames and
//! makes `catching` return `None`. It is how a bare-metal core contains a
//! panic in an async task's poll (which runs on the core's own stack, not
//! a strand's): the kernel's panic handler throws back to the core's loop.
//!
//! Nothing in the abandoned frames is dropped, as nothing in a failed
//! strand's frames is (there is no unwinding on bare metal): memory they
//! own leaks, and what they had pinned there stays pinned in memory that
//! is about to be reused, so code that may fail must keep what it lends
//! out elsewhere (roving's waiter records are in the task's future, which
//! a failed task leaks).

use crate::atomics::unmodelled::{AtomicUsize, Ordering::Relaxed};

/// Where a running [`catching`] keeps its stack pointer (0: none).
pub(crate) struct CatchSlot(AtomicUsize);

impl CatchSlot {
    pub(crate) const fn new() -> Self {
        Self(AtomicUsize::new(0))
    }

    /// Whether a [`catching`] is running with this slot.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Relaxed) != 0
    }
}

/// Runs `f`; `Some` of what it returned, or `None` if a [`throw`] with
/// `slot` abandoned it.
pub(crate) fn catching<F: FnOnce() -> R, R>(slot: &CatchSlot, f: F) -> Option<R> {
    struct Call<F, R>(Option<F>, Option<R>);
    extern "C" fn call<F: FnOnce() -> R, R>(argument: usize) {
        // SAFETY: `argument` is the `Call` below, alive until `catch`
        // returns, and touched only here meanwhile.
        let call = unsafe { &mut *(argument as *mut Call<F, R>) };
        call.1 = Some((call.0.take().expect("called once"))());
    }
    let mut state = Call(Some(f), None);
    // SAFETY: the slot outlives the call; `call` is a plain function that
    // does not unwind unless `f` does, and where this is used (bare metal)
    // nothing unwinds.
    let thrown =
        unsafe { super::isa::catch(slot.0.as_ptr(), call::<F, R>, core::ptr::from_mut(&mut state).addr()) };
    if thrown == 0 {
        state.1
    } else {
        // Abandoned mid-way: neither the closure nor a result is there to
        // drop (the closure was moved into the abandoned frames).
        core::mem::forget(state);
        None
    }
}

/// Abandons everything below the [`catching`] running with `slot`, which
/// returns `None`.
///
/// # Safety
///
/// A `catching` with `slot` is running on this stack, below which the
/// caller runs; nothing in the frames between may be used again.
pub(crate) unsafe fn throw(slot: &CatchSlot) -> ! {
    let stack_pointer = slot.0.load(Relaxed);
    debug_assert_ne!(stack_pointer, 0, "throw with no catching running");
    // SAFETY: the caller's contract.
    unsafe { super::isa::throw(stack_pointer) }
}

// Miri cannot run the inline assembly.
#[cfg(all(test, feature = "std", not(miri)))]
mod tests {
    use super::*;
    use std::hint::black_box;

    #[test]
    fn a_closure_that_returns_gives_its_value() {
        let slot = CatchSlot::new();
        assert_eq!(catching(&slot, || black_box(6) * 7), Some(42));
        assert!(!slot.is_set());
    }

    #[inline(never)]
    fn deep(slot: &CatchSlot, depth: u32, kept: &mut Vec<u32>) -> u32 {
        kept.push(depth);
        if depth == 0 {
            // SAFETY: the test's `catching` runs above, on this stack.
            unsafe { throw(slot) }
        }
        black_box(deep(slot, depth - 1, kept)) + 1
    }

    #[test]
    fn a_throw_abandons_the_frames_below_and_keeps_the_callers_registers() {
        let slot = CatchSlot::new();
        let mut kept = Vec::new();
        // Values live in callee-saved registers across the call.
        let (a, b, c) = (black_box(11u64), black_box(22u64), black_box(2.5f64));
        let outcome = catching(&slot, || deep(&slot, 50, &mut kept));
        assert_eq!(outcome, None);
        assert!(!slot.is_set());
        assert_eq!((a, b, c), (11, 22, 2.5));
        assert_eq!(kept.len(), 51, "every frame ran down to the throw");
        // The stack is usable again, and a second catch works.
        assert_eq!(catching(&slot, || deep_sum(20)), Some(210));
    }

    fn deep_sum(n: u64) -> u64 {
        if n == 0 { 0 } else { n + black_box(deep_sum(n - 1)) }
    }

    #[test]
    fn catches_nest() {
        let (outer, inner) = (CatchSlot::new(), CatchSlot::new());
        let result = catching(&outer, || {
            // SAFETY: `inner`'s catching runs above this throw.
            let first = catching(&inner, || unsafe { throw(&inner) });
            assert_eq!(first, None::<()>);
            assert!(outer.is_set());
            7
        });
        assert_eq!(result, Some(7));
    }
}
