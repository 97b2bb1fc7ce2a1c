//! ThreadSanitizer's view of contexts, for `make tsan` (built with
//! `--cfg roving_tsan`); in every other build a [`Fiber`] is empty and its
//! calls vanish.
//!
//! ThreadSanitizer keeps a shadow call stack and a vector clock per thread
//! of execution. A switch it is not told about leaves both with the thread:
//! a strand that starts on one core thread and returns from its functions
//! on another pops entries that thread never pushed, until the shadow stack
//! underflows into the sanitizer's own memory (the stress test, whose
//! strands migrate on every wake, crashed inside the sanitizer that way).
//! So each context made by `Context::new` is a fiber of its own, and every
//! switch tells the sanitizer which fiber runs next. The switch
//! synchronizes the two fibers, as the one thread that runs both does.

#[cfg(roving_tsan)]
mod tsan {
    use core::ffi::c_void;

    // The fiber interface of ThreadSanitizer's runtime, which
    // `-Zsanitizer=thread` links (sanitizer/tsan_interface.h).
    unsafe extern "C" {
        fn __tsan_get_current_fiber() -> *mut c_void;
        fn __tsan_create_fiber(flags: u32) -> *mut c_void;
        fn __tsan_destroy_fiber(fiber: *mut c_void);
        /// Makes `fiber` the running one. Called directly by the function
        /// that switches stacks, right before it does: the sanitizer
        /// counts calls and returns on the running fiber's shadow stack,
        /// so a function that returned in between would pop the new
        /// fiber's (empty) stack.
        #[link_name = "__tsan_switch_to_fiber"]
        pub fn switch_to_fiber(fiber: *mut c_void, flags: u32);
    }

    /// The sanitizer's fiber of a context: one it made for a new context
    /// (owned: destroyed with the context), or the one that was running
    /// when a context was saved. One word, so that a strand's control
    /// block grows by no more: the handle is an aligned address, and its
    /// low bit says whether the context owns it. 0 until known.
    #[derive(Debug)]
    pub struct Fiber(usize);

    const OWNED: usize = 1;

    impl Fiber {
        /// The fiber of a context not yet saved: the switch that saves it
        /// records the running fiber.
        pub const fn unknown() -> Self {
            Self(0)
        }

        /// A new fiber, for a new context.
        pub fn create() -> Self {
            // SAFETY: the runtime's call has no precondition.
            let handle = unsafe { __tsan_create_fiber(0) } as usize;
            debug_assert_eq!(handle & OWNED, 0, "a fiber handle is an aligned address");
            Self(handle | OWNED)
        }

        fn handle(&self) -> *mut c_void {
            (self.0 & !OWNED) as *mut c_void
        }

        fn owned(&self) -> bool {
            self.0 & OWNED != 0
        }

        /// Records the running fiber as `from`'s (the context it is saved
        /// in), unless `from` owns its fiber, which is then the running
        /// one; returns `to`'s fiber, for [`switch_to_fiber`].
        pub fn leaving(from: &mut Fiber, to: &Fiber) -> *mut c_void {
            if !from.owned() {
                // SAFETY: no precondition.
                from.0 = unsafe { __tsan_get_current_fiber() } as usize;
            }
            debug_assert!(!to.handle().is_null(), "switching to a context that was never saved");
            to.handle()
        }
    }

    impl Drop for Fiber {
        fn drop(&mut self) {
            if self.owned() {
                // SAFETY: made by `create` and not running: a context is
                // dropped only once nothing will resume it, and the running
                // context is never dropped.
                unsafe { __tsan_destroy_fiber(self.handle()) };
            }
        }
    }
}

#[cfg(not(roving_tsan))]
mod tsan {
    /// Nothing: no sanitizer is watching.
    #[derive(Debug)]
    pub struct Fiber;

    impl Fiber {
        /// Nothing to record.
        pub const fn unknown() -> Self {
            Self
        }

        /// Nothing to make.
        pub const fn create() -> Self {
            Self
        }
    }
}

pub use tsan::Fiber;
#[cfg(roving_tsan)]
pub use tsan::switch_to_fiber;
