//! Execution contexts: the register switch that fibres are built on.
//!
//! A suspended context is its stack pointer alone. Switching is
//! asymmetric, as between a core's scheduler and the strands it runs:
//! [`resume`] enters a suspended context and returns when that context
//! calls [`suspend`], which leaves it suspended again. The caller of
//! `resume` is recorded in a *link*, another [`Context`], which is how
//! `suspend` finds its way back; a context can be resumed through a
//! different link each time (a strand resumed by another core).
//!
//! The switches are inline assembly that tells the compiler every register
//! is clobbered but the few it reserves, so a call site spills only what it
//! keeps live across the switch; the reserved ones go on the stack:
//!
//! | ISA     | on the stack of a suspended context                       |
//! |---------|-----------------------------------------------------------|
//! | x86_64  | resume address, rbx, rbp                                  |
//! | aarch64 | resume address, x19, x29 (the frame pointer)              |
//!
//! The floating-point control registers (MXCSR and the x87 control word;
//! FPCR) are not saved: every context has the same ones. Rust requires
//! them to hold their default values whenever Rust code runs (changing the
//! rounding mode or exception masks is undefined behaviour), so there is
//! nothing per context to keep. Foreign code that changes them must put
//! them back before it can reach a switch.
//!
//! `resume` enters through a call and `suspend` leaves through a return to
//! it, so calls and returns stay paired and the processor's return
//! predictor stays right (an unpaired switch mispredicts its return every
//! time). [`hand_off`] suspends one context and enters another under the
//! same link, with a message, without returning to the resumer between.
//!
//! This is the one place besides the platform seam where the portable core
//! names registers: it depends on the instruction set, never on a board or
//! an address. The x86_64 code is the same on the host and on bare metal,
//! so host tests exercise it.
//!
//! Strands ([`crate::strand`]) are the safe interface; this module is public,
//! under [`raw`](crate::raw) and without semver promises, for kernels that
//! want to build their own.

#[path = "context/catch.rs"]
#[cfg_attr(feature = "std", allow(dead_code, reason = "the host unwinds; the tests use it"))]
pub(crate) mod catch;
#[cfg(target_arch = "aarch64")]
#[path = "context/aarch64.rs"]
mod isa;
#[cfg(target_arch = "x86_64")]
#[path = "context/x86_64.rs"]
mod isa;
#[path = "context/sanitizer.rs"]
mod sanitizer;

/// A suspended execution context: where its registers were saved.
#[derive(Debug)]
#[repr(C)]
pub struct Context {
    /// First: the switches' assembly stores it at the context's address.
    stack_pointer: usize,
    /// ThreadSanitizer's fiber, under `make tsan`; empty otherwise.
    sanitizer: sanitizer::Fiber,
}

impl Context {
    /// A context to be filled in: by [`suspend`], or as a link by [`resume`].
    pub const fn empty() -> Self {
        Self { stack_pointer: 0, sanitizer: sanitizer::Fiber::unknown() }
    }

    /// A new context on the stack that ends just below `stack_top`: the
    /// first [`resume`] of it calls `entry(argument)` there. `entry` must
    /// never return (it ends by suspending for good).
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

/// Bytes [`Context::new`] writes below the stack top for the first resume.
pub const FRAME_BYTES: usize = isa::FRAME_BYTES;

/// Runs the suspended context `to` until it calls [`suspend`] with `link`,
/// in which this call records itself. Returns then.
///
/// Both are pointers, not references: while `to` runs, it writes `link`'s
/// context as it leaves and, on the way, its own.
///
/// # Safety
///
/// `to` must hold a context saved by [`suspend`] or made by
/// [`Context::new`], whose stack is intact and not running anywhere;
/// `link` must be valid, and touched by nothing but that `suspend`, until
/// this call returns.
#[inline(always)]
pub unsafe fn resume(to: *const Context, link: *mut Context) {
    // SAFETY: the caller's contract; the assembly keeps the ABI's promises
    // and stores this side's stack pointer at `link`'s address, its first
    // field.
    unsafe {
        // Here, not in a helper: see `sanitizer::switch_to_fiber`.
        #[cfg(roving_tsan)]
        sanitizer::switch_to_fiber(sanitizer::Fiber::leaving(&mut (*link).sanitizer, &(*to).sanitizer), 0);
        isa::resume((*to).stack_pointer, link)
    }
}

/// Saves the running context in `me` and returns from the [`resume`] that
/// recorded itself in `link`. Returns when something resumes `me`: the
/// message it was resumed with, 0 from [`resume`] (see [`hand_off`]).
///
/// # Safety
///
/// The running context must have been entered by a `resume` with `link`
/// that has not returned yet; `me` must stay valid until the context is
/// resumed through it.
#[inline(always)]
pub unsafe fn suspend(me: *mut Context, link: *const Context) -> usize {
    // SAFETY: the caller's contract; the assembly stores the stack pointer
    // at `me`'s address, its first field, and reads `link`'s.
    unsafe {
        #[cfg(roving_tsan)]
        sanitizer::switch_to_fiber(sanitizer::Fiber::leaving(&mut (*me).sanitizer, &(*link).sanitizer), 0);
        isa::suspend(me, link)
    }
}

/// Saves the running context in `me` and runs the suspended context `to`
/// in its place: `to` returns from its switch with `message`, and when it
/// suspends it returns from the [`resume`] that recorded itself in `link`,
/// as `me` would have. Returns, as [`suspend`] does, when something
/// resumes `me`.
///
/// It is how one strand hands its core straight to the next without a
/// pass through the core's scheduler. A context entered for the first time
/// (made by [`Context::new`]) does not see the message.
///
/// # Safety
///
/// As for [`suspend`], and `to` as for [`resume`].
#[inline(always)]
pub unsafe fn hand_off(me: *mut Context, to: *const Context, link: *mut Context, message: usize) -> usize {
    // SAFETY: the caller's contract; as in `suspend` and `resume`.
    unsafe {
        #[cfg(roving_tsan)]
        sanitizer::switch_to_fiber(sanitizer::Fiber::leaving(&mut (*me).sanitizer, &(*to).sanitizer), 0);
        isa::hand_off(me, (*to).stack_pointer, link, message)
    }
}

// Miri cannot run the inline assembly of a switch.
#[cfg(all(test, feature = "std", not(miri)))]
mod tests {
    use super::{Context, resume, suspend};
    use std::hint::black_box;

    const STACK: usize = 64 * 1024;

    /// Both sides of a ping-pong between the test thread and one context.
    struct Rally {
        main: Context,
        other: Context,
        /// What the other side computes, checked by the test.
        results: Vec<u64>,
        float: f64,
    }

    /// Runs `entry` in a new context on a fresh stack; `entry` suspends
    /// whenever it likes and the test resumes it `resumes` times.
    fn rally(entry: extern "C" fn(usize) -> !, resumes: usize) -> Box<Rally> {
        let mut stack = vec![0u8; STACK];
        let mut rally = Box::new(Rally {
            main: Context::empty(),
            other: Context::empty(),
            results: Vec::new(),
            float: 0.0,
        });
        let raw: *mut Rally = &mut *rally;
        // SAFETY: the stack is ours and outlives the context, which is
        // never resumed after this function.
        unsafe { (*raw).other = Context::new(stack.as_mut_ptr().add(STACK), entry, raw as usize) };
        for _ in 0..resumes {
            // SAFETY: `other` was made above or saved by its own suspend;
            // `main` lives in the box until we return.
            unsafe { resume(&raw const (*raw).other, &raw mut (*raw).main) };
        }
        drop(stack);
        rally
    }

    /// Switches from the other context back to the test.
    fn back(raw: *mut Rally) {
        // SAFETY: `raw` is the live rally; the test's resume recorded
        // itself in `main` and is waiting.
        unsafe { suspend(&raw mut (*raw).other, &raw const (*raw).main) };
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
        let rally = rally(keeps_values, 101);
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

    /// The contexts of the hand-off test, and what each side saw.
    struct Relay {
        main: Context,
        giver: Context,
        taker: Context,
        /// The messages each side's switches returned, in order.
        giver_saw: Vec<usize>,
        taker_saw: Vec<usize>,
    }

    extern "C" fn giver(argument: usize) -> ! {
        let relay = argument as *mut Relay;
        loop {
            // SAFETY: `main` recorded the resume that entered us; the taker
            // is suspended (it suspended before we were first resumed).
            unsafe {
                let seen = super::hand_off(
                    &raw mut (*relay).giver,
                    &raw const (*relay).taker,
                    &raw mut (*relay).main,
                    42,
                );
                (*relay).giver_saw.push(seen);
            }
        }
    }

    extern "C" fn taker(argument: usize) -> ! {
        let relay = argument as *mut Relay;
        loop {
            // SAFETY: whoever entered us left `main` recording the resume
            // to return to.
            unsafe {
                let seen = suspend(&raw mut (*relay).taker, &raw const (*relay).main);
                (*relay).taker_saw.push(seen);
            }
        }
    }

    #[test]
    fn a_hand_off_runs_the_other_context_with_its_message_and_returns_to_the_resumer() {
        let (mut giver_stack, mut taker_stack) = (vec![0u8; STACK], vec![0u8; STACK]);
        let mut relay = Box::new(Relay {
            main: Context::empty(),
            giver: Context::empty(),
            taker: Context::empty(),
            giver_saw: Vec::new(),
            taker_saw: Vec::new(),
        });
        let raw: *mut Relay = &mut *relay;
        // SAFETY: the stacks outlive the contexts, never resumed after this
        // test; each side touches the relay only while the other waits.
        unsafe {
            (*raw).giver = Context::new(giver_stack.as_mut_ptr().add(STACK), giver, raw as usize);
            (*raw).taker = Context::new(taker_stack.as_mut_ptr().add(STACK), taker, raw as usize);
            // The taker suspends at once, ready for a message.
            resume(&raw const (*raw).taker, &raw mut (*raw).main);
            for _ in 0..3 {
                // The giver hands off to the taker, which suspends back here.
                resume(&raw const (*raw).giver, &raw mut (*raw).main);
                // The taker again, plainly: it sees 0.
                resume(&raw const (*raw).taker, &raw mut (*raw).main);
            }
        }
        assert_eq!(
            relay.taker_saw,
            [42, 0, 42, 0, 42, 0],
            "the taker's switches returned the wrong messages"
        );
        assert_eq!(relay.giver_saw, [0, 0], "a plain resume of the giver brought a message");
        drop((giver_stack, taker_stack));
    }
}
