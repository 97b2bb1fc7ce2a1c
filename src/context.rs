//! Execution contexts: the register switch that fibres are built on.
//!
//! A suspended context is its stack pointer alone. [`switch`] pushes the
//! registers the calling convention says a callee must preserve onto the
//! current stack, stores the stack pointer, loads the other context's and
//! pops its registers, so switching is one call that returns in the other
//! context. Caller-saved registers need no saving: the compiler already
//! treats `switch` as a call that clobbers them.
//!
//! | ISA     | saved                                                     |
//! |---------|-----------------------------------------------------------|
//! | x86_64  | rbx, rbp, r12-r15, rsp; MXCSR and the x87 control word    |
//! | aarch64 | x19-x30 (x29 is the frame pointer, x30 the link), sp, d8-d15 |
//!
//! This is the one place besides the platform seam where the portable core
//! names registers: it depends on the instruction set, never on a board or
//! an address. The x86_64 code is the same on the host and on bare metal,
//! so host tests exercise it.
//!
//! Strands ([`crate::strand`]) are the safe interface; this module is public for
//! kernels that want to build their own.

#[path = "context/catch.rs"]
#[cfg_attr(feature = "std", allow(dead_code, reason = "the host unwinds; the tests use it"))]
pub(crate) mod catch;
#[cfg(target_arch = "aarch64")]
#[path = "context/aarch64.rs"]
mod isa;
#[cfg(target_arch = "x86_64")]
#[path = "context/x86_64.rs"]
mod isa;
#[cfg(all(target_arch = "aarch64", not(loom)))]
#[path = "context/preempt_aarch64.rs"]
pub(crate) mod preempt_entry;
#[cfg(all(target_arch = "x86_64", not(loom)))]
#[path = "context/preempt_x86_64.rs"]
pub(crate) mod preempt_entry;
#[path = "context/sanitizer.rs"]
mod sanitizer;

/// A suspended execution context: where its registers were saved.
#[derive(Debug)]
#[repr(C)]
pub struct Context {
    /// First: the switch's assembly stores it at the context's address.
    stack_pointer: usize,
    /// ThreadSanitizer's fiber, under `make tsan`; empty otherwise.
    sanitizer: sanitizer::Fiber,
}

impl Context {
    /// A context to switch away from: [`switch`] fills it in.
    pub const fn empty() -> Self {
        Self { stack_pointer: 0, sanitizer: sanitizer::Fiber::unknown() }
    }

    /// A new context on the stack that ends just below `stack_top`: the
    /// first [`switch`] to it calls `entry(argument)` there. `entry` must
    /// never return (it ends by switching away for good).
    ///
    /// # Safety
    ///
    /// `stack_top` must be the end of a writable region large enough for
    /// `entry`'s deepest call chain plus [`FRAME_BYTES`], that nothing else
    /// uses while the context lives.
    pub unsafe fn new(stack_top: *mut u8, entry: extern "C" fn(usize) -> !, argument: usize) -> Self {
        // SAFETY: the caller's contract.
        let stack_pointer = unsafe { isa::prepare(stack_top, entry, argument) };
        Self { stack_pointer, sanitizer: sanitizer::Fiber::create() }
    }

    /// The saved stack pointer.
    pub(crate) fn stack_pointer(&self) -> usize {
        self.stack_pointer
    }

    /// This context, its frame moved so that its stack pointer is
    /// `stack_pointer`.
    pub(crate) fn moved_to(self, stack_pointer: usize) -> Self {
        Self { stack_pointer, sanitizer: self.sanitizer }
    }
}

/// Bytes [`Context::new`] writes below the stack top for the first switch.
pub const FRAME_BYTES: usize = isa::FRAME_BYTES;

/// Saves the running context into `from` and resumes `to`. Returns when
/// something switches back to `from`.
///
/// # Safety
///
/// `to` must hold a context saved by `switch` or made by [`Context::new`],
/// whose stack is intact and not running anywhere; `from` must stay valid
/// until the context is resumed through it.
#[inline]
pub unsafe fn switch(from: &mut Context, to: &Context) {
    // SAFETY: the caller's contract; the assembly keeps the ABI's promises
    // and stores the stack pointer at `from`'s address, its first field.
    unsafe {
        // Here, not in a helper: see `sanitizer::switch_to_fiber`.
        #[cfg(roving_tsan)]
        sanitizer::switch_to_fiber(sanitizer::Fiber::leaving(&mut from.sanitizer, &to.sanitizer), 0);
        isa::switch(from, to)
    }
}

// Miri cannot run the inline assembly of a switch.
#[cfg(all(test, feature = "std", not(miri)))]
mod tests {
    use super::{Context, switch};
    use std::hint::black_box;

    const STACK: usize = 64 * 1024;

    /// Both sides of a ping-pong between the test thread and one context.
    struct Rally {
        main: Context,
        other: Context,
        /// What the other side computes, checked by the test.
        results: Vec<u64>,
        float: f64,
        rounding_seen: Vec<u32>,
    }

    /// Runs `entry` in a new context on a fresh stack; `entry` switches back
    /// whenever it likes and the test resumes it `resumes` times.
    fn rally(entry: extern "C" fn(usize) -> !, resumes: usize, between: impl Fn(&Rally)) -> Box<Rally> {
        let mut stack = vec![0u8; STACK];
        let mut rally = Box::new(Rally {
            main: Context::empty(),
            other: Context::empty(),
            results: Vec::new(),
            float: 0.0,
            rounding_seen: Vec::new(),
        });
        let raw: *mut Rally = &mut *rally;
        // SAFETY: the stack is ours and outlives the context, which is
        // never resumed after this function.
        unsafe { (*raw).other = Context::new(stack.as_mut_ptr().add(STACK), entry, raw as usize) };
        for _ in 0..resumes {
            // SAFETY: `other` was made above or saved by its own switch
            // back; `main` lives in the box until we return.
            unsafe { switch(&mut (*raw).main, &(*raw).other) };
            // SAFETY: the other context is suspended; nothing else uses it.
            between(unsafe { &*raw });
        }
        drop(stack);
        rally
    }

    /// Switches from the other context back to the test.
    fn back(raw: *mut Rally) {
        // SAFETY: `raw` is the live rally; `main` was saved by the test.
        unsafe { switch(&mut (*raw).other, &(*raw).main) };
    }

    /// Twelve values the compiler keeps in registers across every switch,
    /// callee-saved ones included, plus a float.
    extern "C" fn keeps_values(argument: usize) -> ! {
        let raw = argument as *mut Rally;
        let mut values: [u64; 12] =
            core::array::from_fn(|i| black_box((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        let mut float = black_box(1.5f64);
        for round in 0..100u64 {
            back(raw);
            for value in &mut values {
                *value = value.rotate_left(7) ^ round;
            }
            float = float * 1.000_001 + 0.25;
        }
        // SAFETY: the test reads these only while this context is suspended.
        unsafe {
            (*raw).results = values.to_vec();
            (*raw).float = float;
        }
        loop {
            back(raw);
        }
    }

    #[test]
    fn values_live_across_switches_survive_on_both_sides() {
        let mut mine: [u64; 12] = core::array::from_fn(|i| black_box(i as u64 + 1));
        // `mine` is live across every switch of the rally.
        let rally = rally(keeps_values, 101, |_| {});
        for value in &mut mine {
            *value = black_box(*value) + 1;
        }
        assert_eq!(mine, core::array::from_fn(|i| i as u64 + 2), "the test's values changed under it");
        let mut expected: [u64; 12] =
            core::array::from_fn(|i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut float = 1.5f64;
        for round in 0..100u64 {
            for value in &mut expected {
                *value = value.rotate_left(7) ^ round;
            }
            float = float * 1.000_001 + 0.25;
        }
        assert_eq!(rally.results, expected.to_vec(), "the other context's values changed under it");
        assert_eq!(rally.float, float);
    }

    #[cfg(target_arch = "x86_64")]
    fn rounding_mode() -> u32 {
        let mut mxcsr = 0u32;
        // SAFETY: stores MXCSR into a local.
        unsafe { core::arch::asm!("stmxcsr [{}]", in(reg) &mut mxcsr) };
        mxcsr >> 13 & 3
    }

    #[cfg(target_arch = "x86_64")]
    fn set_rounding_mode(mode: u32) {
        let mut mxcsr = 0u32;
        // SAFETY: reads and rewrites MXCSR with only the rounding bits changed.
        unsafe {
            core::arch::asm!("stmxcsr [{}]", in(reg) &mut mxcsr);
            mxcsr = mxcsr & !(3 << 13) | mode << 13;
            core::arch::asm!("ldmxcsr [{}]", in(reg) &mxcsr);
        }
    }

    /// Rounds toward zero in its own context, and records what it sees
    /// after every resume.
    #[cfg(target_arch = "x86_64")]
    extern "C" fn rounds_toward_zero(argument: usize) -> ! {
        let raw = argument as *mut Rally;
        // SAFETY: the test reads `rounding_seen` only while we are suspended.
        unsafe { (*raw).rounding_seen.push(rounding_mode()) };
        set_rounding_mode(3);
        loop {
            back(raw);
            // SAFETY: as above.
            unsafe { (*raw).rounding_seen.push(rounding_mode()) };
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn each_context_keeps_its_own_floating_point_controls() {
        assert_eq!(rounding_mode(), 0, "the test thread starts rounding to nearest");
        let rally = rally(rounds_toward_zero, 5, |_| {
            assert_eq!(rounding_mode(), 0, "the other context's rounding mode leaked into the test's");
        });
        assert_eq!(
            rally.rounding_seen,
            [0, 3, 3, 3, 3],
            "a new context starts at the default, then keeps its own"
        );
    }
}
