//! [`timeout`]: a deadline for any future, on the pool's timer heap.

use super::{Instant, Sleep, sleep, sleep_until};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

/// Runs `future` for at most `duration`: the output if it finishes first,
/// else [`Elapsed`] (and the future is dropped with the [`Timeout`]).
/// The deadline is a [`Sleep`], with its panic outside a pool.
///
/// ```
/// use roving::{Pool, executor, platform::host::Machine, sync::Event, time};
/// use core::time::Duration;
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let task = executor::spawn_async(async {
///             let never = Event::new();
///             time::timeout(Duration::from_millis(2), never.wait_async()).await
///         });
///         assert_eq!(task.unwrap().join().unwrap(), Err(time::Elapsed));
///     }).unwrap();
/// }).unwrap();
/// ```
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout { future, sleep: sleep(duration) }
}

/// As [`timeout`], with a deadline.
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout { future, sleep: sleep_until(deadline) }
}

/// The future of [`timeout`] and [`timeout_at`].
#[must_use = "futures do nothing unless awaited"]
#[derive(Debug)]
pub struct Timeout<F> {
    future: F,
    sleep: Sleep,
}

impl<F> Timeout<F> {
    /// The future it runs.
    pub fn get_ref(&self) -> &F {
        &self.future
    }
}

/// The deadline of a [`timeout`] passed before its future finished.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

error_messages! {
    impl Elapsed {
        Self => "the deadline passed before the future finished";
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: both fields are structurally pinned: never moved out.
        let (future, sleep) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), Pin::new_unchecked(&mut this.sleep))
        };
        if let Poll::Ready(output) = future.poll(context) {
            return Poll::Ready(Ok(output));
        }
        sleep.poll(context).map(|()| Err(Elapsed))
    }
}
