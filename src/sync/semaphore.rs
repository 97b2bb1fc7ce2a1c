//! A counting semaphore whose waiters are strands and async tasks.

use super::WaitError;
use super::task_wait::{QueuedFuture, QueuedState};
use crate::spin_lock::SpinLock;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

/// Counted permits. [`acquire`](Semaphore::acquire) takes one, blocking the
/// strand while there is none, and a task awaits
/// [`acquire_async`](Semaphore::acquire_async);
/// [`release`](Semaphore::release) hands permits to waiters first, strands
/// and tasks alike, in the order they came, and banks the rest.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand, sync::Semaphore};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         // At most two strands inside at once.
///         let (gate, inside) = (Arc::new(Semaphore::new(2)), Arc::new(AtomicUsize::new(0)));
///         let strands: Vec<_> = (0..6).map(|_| {
///             let (gate, inside) = (gate.clone(), inside.clone());
///             strand::spawn(move || {
///                 gate.acquire().unwrap();
///                 assert!(inside.fetch_add(1, Ordering::SeqCst) < 2);
///                 strand::yield_now().unwrap();
///                 inside.fetch_sub(1, Ordering::SeqCst);
///                 gate.release(1).unwrap();
///             }).unwrap()
///         }).collect();
///         strands.into_iter().for_each(|s| s.join().unwrap());
///         assert_eq!(gate.available(), 2);
///     }).unwrap();
/// }).unwrap();
/// ```
pub struct Semaphore {
    state: SpinLock<(usize, WaitQueue)>,
}

impl Semaphore {
    /// A semaphore holding `permits`.
    pub const fn new(permits: usize) -> Self {
        Self { state: SpinLock::new((permits, WaitQueue::new())) }
    }

    /// Permits banked now.
    pub fn available(&self) -> usize {
        self.state.lock().0
    }

    /// Takes a permit if one is banked; never blocks.
    /// Interrupt-safe (see [`sync`](super)).
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
    /// [`WaitError::NotAStrand`] if none is banked and the caller cannot
    /// block; [`WaitError::Interrupted`] if the strand is cancelled while it
    /// waits (a banked permit is taken even by a cancelled strand: a cancel
    /// reaches only a wait that blocks).
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

    fn acquire_until(&self, deadline: Option<crate::platform::instant::Instant>) -> Result<(), WaitError> {
        crate::platform::refuse_in_handler(
            "Semaphore::acquire",
            "a handler must not wait; it takes a permit with Semaphore::try_acquire, or wakes a strand",
        );
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

    /// Takes a permit without blocking: the async form of
    /// [`Semaphore::acquire`], for a task. Dropped after a release handed
    /// it a permit, it gives the permit back (to the next waiter, or the
    /// bank).
    pub fn acquire_async(&self) -> Acquire<'_> {
        Acquire(QueuedFuture::new(self))
    }

    /// Gives back `permits`: each goes to a waiter if there is one,
    /// and the rest are banked. Interrupt-safe (see [`sync`](super)).
    ///
    /// # Errors
    ///
    /// [`TooManyPermits`] if banking the rest would take the count past
    /// `usize::MAX`: the waiters still get theirs, and the error says how
    /// many permits were not banked (the count is left as it was).
    pub fn release(&self, permits: usize) -> Result<(), TooManyPermits> {
        let mut state = self.state.lock();
        let mut left = permits;
        while left > 0 && state.1.wake_one() {
            left -= 1;
        }
        match state.0.checked_add(left) {
            Some(banked) => {
                state.0 = banked;
                Ok(())
            }
            None => Err(TooManyPermits { banked: state.0, refused: left }),
        }
    }
}

impl QueuedState for Semaphore {
    type State = usize;

    fn state(&self) -> &SpinLock<(usize, WaitQueue)> {
        &self.state
    }

    fn take(banked: &mut usize, handed: bool) -> bool {
        let from_bank = !handed && *banked > 0;
        *banked -= usize::from(from_bank);
        handed || from_bank
    }

    fn give_back(state: &mut (usize, WaitQueue)) {
        // A permit handed to us that we never took: pass it on. (It was
        // not banked, so banking it cannot pass usize::MAX unless releases
        // pushed the bank there meanwhile; then it saturates.)
        if !state.1.wake_one() {
            state.0 = state.0.saturating_add(1);
        }
    }
}

/// The future of [`Semaphore::acquire_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire<'a>(QueuedFuture<'a, Semaphore>);

impl Future for Acquire<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        // SAFETY: structurally pinned: the inner future is never moved out.
        unsafe { self.map_unchecked_mut(|this| &mut this.0) }.poll(context)
    }
}

/// Why [`Semaphore::release`] did not bank every permit: the count would
/// have passed `usize::MAX`.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyPermits {
    /// Permits banked (unchanged by the failed release).
    pub banked: usize,
    /// Permits of the release that were not banked.
    pub refused: usize,
}

error_messages! {
    impl TooManyPermits {
        Self { refused, banked } =>
            "releasing {refused} more permits would take the {banked} banked past usize::MAX; they were not banked";
    }
}
