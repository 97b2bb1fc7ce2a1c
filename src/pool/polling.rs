//! Which async task the calling core is polling, if any: a mutex that a
//! poll locks is listed under that task (`strand::lock`'s refusal).
//!
//! On bare metal the poll's containment mark says (`super::contain`); on
//! the host, where nothing else marks a poll, a thread-local does.

use crate::task::Task;
use core::ptr::NonNull;

#[cfg(feature = "std")]
mod slot {
    use crate::task::Task;
    use core::ptr::{self, NonNull};
    use std::cell::Cell;

    std::thread_local! {
        static POLLED: Cell<*mut Task> = const { Cell::new(ptr::null_mut()) };
    }

    pub(super) fn get() -> Option<NonNull<Task>> {
        NonNull::new(POLLED.with(Cell::get))
    }

    /// Marks `task` as polled until dropped (then the previous mark is back).
    pub(crate) struct Polling {
        previous: *mut Task,
    }

    impl Polling {
        pub(crate) fn enter(task: NonNull<Task>) -> Self {
            Self { previous: POLLED.with(|polled| polled.replace(task.as_ptr())) }
        }
    }

    impl Drop for Polling {
        fn drop(&mut self) {
            POLLED.with(|polled| polled.set(self.previous));
        }
    }
}

#[cfg(feature = "std")]
pub(crate) use slot::Polling;

/// The header of the async task this core is polling now, if it is.
pub(crate) fn polled_task() -> Option<NonNull<Task>> {
    #[cfg(feature = "std")]
    return slot::get();
    #[cfg(not(feature = "std"))]
    return super::contain::polled_task();
}
