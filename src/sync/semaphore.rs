//! A counting semaphore whose waiters are strands.

use super::WaitError;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use core::time::Duration;

/// Counted permits. [`acquire`](Semaphore::acquire) takes one, blocking the
/// strand while there is none; [`release`](Semaphore::release) hands
/// permits to waiting strands first, in order, and banks the rest.
pub struct Semaphore {
    state: spin::Mutex<(usize, WaitQueue)>,
}

impl Semaphore {
    /// A semaphore holding `permits`.
    pub const fn new(permits: usize) -> Self {
        Self { state: spin::Mutex::new((permits, WaitQueue::new())) }
    }

    /// Permits banked now.
    pub fn available(&self) -> usize {
        self.state.lock().0
    }

    /// Takes a permit if one is banked; never blocks.
    pub fn try_acquire(&self) -> bool {
        let mut state = self.state.lock();
        let banked = state.0 > 0;
        state.0 -= usize::from(banked);
        banked
    }

    /// Takes a permit, blocking the strand until one is released.
    ///
    /// # Errors
    ///
    /// [`WaitError::NotAStrand`] if none is banked and the caller cannot block.
    pub fn acquire(&self) -> Result<(), WaitError> {
        self.acquire_until(None)
    }

    /// Takes a permit, giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`]; otherwise as for [`Semaphore::acquire`].
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<(), WaitError> {
        self.acquire_until(Some(super::deadline_after(timeout)))
    }

    fn acquire_until(&self, deadline: Option<crate::time::Instant>) -> Result<(), WaitError> {
        if self.try_acquire() {
            return Ok(());
        }
        wait::wait_in(
            &self.state,
            BlockReason::Semaphore,
            deadline,
            |state| &mut state.1,
            |state| {
                let banked = state.0 > 0;
                state.0 -= usize::from(banked);
                banked
            },
        )
    }

    /// Gives back `permits`: each goes to a waiting strand if there is one.
    pub fn release(&self, permits: usize) {
        let mut state = self.state.lock();
        for _ in 0..permits {
            if !state.1.wake_one() {
                state.0 += 1;
            }
        }
    }
}
