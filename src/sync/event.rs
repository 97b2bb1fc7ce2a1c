//! An event strands and async tasks wait for.

use super::WaitError;
use super::task_wait::{QueuedFuture, QueuedState};
use crate::spin_lock::SpinLock;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

/// A flag that strands and async tasks wait for. [`set`](Event::set)
/// raises it and wakes every waiter; it stays raised (later waits return
/// at once) until [`reset`](Event::reset). A strand waits with
/// [`wait`](Event::wait), a task awaits [`wait_async`](Event::wait_async).
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand, sync::Event};
/// use std::sync::Arc;
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let ready = Arc::new(Event::new());
///         let waiters: Vec<_> = (0..3).map(|_| {
///             let ready = ready.clone();
///             strand::spawn(move || ready.wait().unwrap()).unwrap()
///         }).collect();
///         ready.set();
///         waiters.into_iter().for_each(|w| w.join().unwrap());
///         assert!(ready.is_set());
///     }).unwrap();
/// }).unwrap();
/// ```
pub struct Event {
    state: SpinLock<(bool, WaitQueue)>,
}

impl Event {
    /// An event that is not set.
    pub const fn new() -> Self {
        Self { state: SpinLock::new((false, WaitQueue::new())) }
    }

    /// Raises the flag and wakes every waiting strand and task; returns
    /// how many. Interrupt-safe (see [`sync`](super)).
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
    /// [`WaitError::NotAStrand`] if it is not set and the caller cannot
    /// block; [`WaitError::Interrupted`] if the strand is cancelled while it
    /// waits (an event already set is seen even by a cancelled strand: a
    /// cancel reaches only a wait that blocks).
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

    fn wait_until(&self, deadline: Option<crate::platform::instant::Instant>) -> Result<(), WaitError> {
        crate::platform::refuse_in_handler("Event::wait", crate::platform::HANDLERS_WAKE);
        if self.is_set() {
            return Ok(());
        }
        wait::wait_in(&self.state, BlockReason::Event, deadline, |state| &mut state.1, |state| state.0)
    }

    /// Waits for the flag without blocking: the async form of
    /// [`Event::wait`], for a task. A `set` that comes while the future
    /// waits completes it, even if the flag is reset before the task runs.
    pub fn wait_async(&self) -> EventWait<'_> {
        EventWait(QueuedFuture::new(self))
    }
}

impl QueuedState for Event {
    type State = bool;

    fn state(&self) -> &SpinLock<(bool, WaitQueue)> {
        &self.state
    }

    fn take(set: &mut bool, woken: bool) -> bool {
        woken || *set
    }

    // A set hands nothing over: there is nothing to give back.
    fn give_back(_: &mut (bool, WaitQueue)) {}
}

/// The future of [`Event::wait_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct EventWait<'a>(QueuedFuture<'a, Event>);

impl Future for EventWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        // SAFETY: structurally pinned: the inner future is never moved out.
        unsafe { self.map_unchecked_mut(|this| &mut this.0) }.poll(context)
    }
}

impl Default for Event {
    fn default() -> Self {
        Self::new()
    }
}

impl crate::pool::end_waiters::Notify for Event {
    fn notify(&self) {
        self.set();
    }
}
