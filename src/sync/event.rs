//! An event strands wait for.

use super::WaitError;
use crate::spin_lock::SpinLock;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use core::time::Duration;

/// A flag that strands wait for. [`set`](Event::set) raises it and wakes
/// every waiter; it stays raised (later waits return at once) until
/// [`reset`](Event::reset).
pub struct Event {
    state: SpinLock<(bool, WaitQueue)>,
}

impl Event {
    /// An event that is not set.
    pub const fn new() -> Self {
        Self { state: SpinLock::new((false, WaitQueue::new())) }
    }

    /// Raises the flag and wakes every waiting strand; returns how many.
    /// Interrupt-safe (see [`sync`](super)).
    pub fn set(&self) -> usize {
        let mut state = self.state.lock();
        state.0 = true;
        state.1.wake_all()
    }

    /// Lowers the flag.
    pub fn reset(&self) {
        self.state.lock().0 = false;
    }

    /// Whether the flag is raised. Interrupt-safe.
    pub fn is_set(&self) -> bool {
        self.state.lock().0
    }

    /// Blocks the strand until the flag is raised.
    ///
    /// # Errors
    ///
    /// [`WaitError::NotAStrand`] if it is not set and the caller cannot block.
    pub fn wait(&self) -> Result<(), WaitError> {
        self.wait_until(None)
    }

    /// As [`Event::wait`], giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`]; otherwise as for [`Event::wait`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<(), WaitError> {
        self.wait_until(Some(super::deadline_after(timeout)))
    }

    fn wait_until(&self, deadline: Option<crate::time::Instant>) -> Result<(), WaitError> {
        crate::platform::refuse_in_handler("Event::wait", crate::platform::HANDLERS_WAKE);
        if self.is_set() {
            return Ok(());
        }
        wait::wait_in(&self.state, BlockReason::Event, deadline, |state| &mut state.1, |state| state.0)
    }
}

impl Default for Event {
    fn default() -> Self {
        Self::new()
    }
}
