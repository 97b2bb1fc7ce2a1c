//! Futures with continuations: run a closure on a chosen core, and chain
//! what happens to its result.
//!
//! [`Pool::future_on`] (or [`future_on`] from a core of the pool) posts a closure to
//! a core and returns a [`Future`] of its result. The closure, its result
//! and the future's waiters share one allocation, which is itself the
//! message posted to the core: the result is left in the message's own
//! storage, with no second allocation and no channel.
//!
//! - [`Future::then`] chains a closure on a chosen core: it runs there,
//!   with the result, as soon as the result exists.
//! - [`Future::shared`] makes a [`SharedFuture`], which can be cloned and
//!   waited for, or chained, from several places; each gets a reference to
//!   (or a clone of) the one result.
//! - Both implement [`core::future::Future`], so async code can `.await`
//!   them, and a strand can block on one with [`Future::wait`] (the strand
//!   waits; its core runs other work).
//!
//! A future whose work never ran (its pool stopped first, or the core of a
//! continuation left the pool) or panicked is *broken*: it completes with
//! [`FutureError::Broken`], and so does everything chained on it. Nothing
//! waits forever on work that will not happen. A panic fails the pool too,
//! and the future breaks before the pool's wind-down cancels any strand,
//! so a strand waiting for it learns `Broken`, the cause, rather than
//! that it was cancelled.
//!
//! ```
//! use roving::{Pool, platform::host::Machine};
//!
//! Machine::new(2).unwrap().run(|| {
//!     let pool = Pool::new().unwrap();
//!     let answer = pool.run(|| {
//!         let pool = Pool::current().unwrap();
//!         let six = pool.future_on(1, || 6).unwrap();
//!         let answer = six.then(0, |six| six * 7);
//!         answer.wait().unwrap()
//!     });
//!     assert_eq!(answer.unwrap(), 42);
//! }).unwrap();
//! ```

mod cell;

use crate::pool::{Pool, PostError};
use crate::sync::WaitError;
use alloc::boxed::Box;
use alloc::sync::Arc;
use cell::{FutureCell, ResultSlot, Run, Work};
use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};

/// Why a future has no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FutureError {
    /// The work behind it never ran or did not finish: its pool stopped
    /// first, the core it was chained to left the pool, it panicked, or
    /// the future it was chained on broke.
    Broken,
    /// Waiting for it failed (outside a strand, or the strand was
    /// cancelled).
    Wait(WaitError),
}

error_messages! {
    impl FutureError {
        Self::Broken =>
            "the work behind the future never finished (its pool stopped, its core left, or it panicked)";
        Self::Wait(error) => "waiting for the future failed: {error}";
    }
}

/// The result of a closure sent to a core, when it is there. One owner;
/// see [`SharedFuture`] for a future several places wait for.
pub struct Future<T> {
    slot: Arc<dyn ResultSlot<T>>,
    pool: Pool,
}

/// A future that can be cloned: every clone sees the same result.
pub struct SharedFuture<T> {
    slot: Arc<dyn ResultSlot<T>>,
    pool: Pool,
}

/// A closure sent with [`Pool::future_on`].
struct Sent<F>(F);

impl<T: Send + 'static, F: FnOnce() -> T + Send + 'static> Work<T> for Sent<F> {
    fn run(self) -> Result<T, FutureError> {
        Ok((self.0)())
    }
}

/// A continuation of a [`Future`]: the previous cell, whose result it
/// moves in (it holds the only handle that reads it).
struct Then<T, G>(Arc<dyn ResultSlot<T>>, G);

impl<T: Send + 'static, U: Send + 'static, G: FnOnce(T) -> U + Send + 'static> Work<U> for Then<T, G> {
    fn run(self) -> Result<U, FutureError> {
        // SAFETY: the continuation took over the previous future, the only
        // handle that reads its result.
        let previous = unsafe { self.0.header().take() };
        previous.expect("a continuation runs once the result is there").map(self.1)
    }
}

/// A continuation of a [`SharedFuture`]: a reference to the result.
struct ThenShared<T, G>(Arc<dyn ResultSlot<T>>, G);

impl<T, U, G> Work<U> for ThenShared<T, G>
where
    T: Send + Sync + 'static,
    U: Send + 'static,
    G: FnOnce(&T) -> U + Send + 'static,
{
    fn run(self) -> Result<U, FutureError> {
        match self.0.header().get().expect("a continuation runs once the result is there") {
            Ok(value) => Ok((self.1)(value)),
            Err(error) => Err(*error),
        }
    }
}

impl Pool {
    /// Runs `f` on `core` and returns a future of its result. `f` travels
    /// through the mailbox of the pair of cores, as with [`Pool::post`].
    ///
    /// # Errors
    ///
    /// As for [`Pool::post`], with `f` back.
    pub fn future_on<T, F>(&self, core: usize, f: F) -> Result<Future<T>, PostError<F>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        send_on(self.clone(), core, f)
    }
}

/// [`Pool::future_on`], keeping `pool` in the future.
fn send_on<T, F>(pool: Pool, core: usize, f: F) -> Result<Future<T>, PostError<F>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let cell = FutureCell::new(Sent(f));
    let slot: Arc<dyn ResultSlot<T>> = cell.clone();
    match pool.pool_ref().post(core, Run(cell)) {
        Ok(()) => Ok(Future { slot, pool }),
        Err(refused) => Err(refused.map(|run| run.into_work().0)),
    }
}

/// [`Pool::future_on`] on the pool the calling core works for.
///
/// # Errors
///
/// [`PostError::NotInPool`] outside a pool's core; otherwise as for
/// [`Pool::future_on`].
pub fn future_on<T, F>(core: usize, f: F) -> Result<Future<T>, PostError<F>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match Pool::current() {
        Some(pool) => send_on(pool, core, f),
        None => Err(PostError::NotInPool(f)),
    }
}

/// Starts `work` on `core` of `pool` once `after` is ready; if the pool
/// refuses it, dropping it breaks the continuation's future.
fn chain<W, U, T>(pool: Pool, after: &dyn ResultSlot<T>, core: usize, work: W) -> Future<U>
where
    W: Work<U>,
    U: Send + 'static,
    T: Send + 'static,
{
    let cell = FutureCell::new(work);
    let next: Arc<dyn ResultSlot<U>> = cell.clone();
    let target = pool.clone();
    after.header().on_ready(Box::new(move |broken| {
        let run = Run(cell);
        // A broken future's continuation breaks where it is, unposted:
        // dropping its task breaks its future.
        if !broken {
            drop(target.pool_ref().post(core, run));
        }
    }));
    Future { slot: next, pool }
}

impl<T: Send + 'static> Future<T> {
    /// Runs `g` on `core` with the result, once it is there; returns the
    /// future of what `g` returns. If this future breaks, `g` is dropped
    /// unrun and the new future breaks too.
    ///
    /// ```
    /// use roving::{Pool, platform::{self, host::Machine}};
    ///
    /// Machine::new(2).unwrap().run(|| {
    ///     let pool = Pool::new().unwrap();
    ///     let text = pool.run(|| {
    ///         let pool = Pool::current().unwrap();
    ///         pool.future_on(1, || 21)
    ///             .unwrap()
    ///             .then(0, |n| n * 2) // on core 0, once core 1's result is there
    ///             .then(1, |n| format!("{n} on core {:?}", platform::current_core()))
    ///             .wait()
    ///             .unwrap()
    ///     });
    ///     assert_eq!(text.unwrap(), "42 on core Some(1)");
    /// }).unwrap();
    /// ```
    pub fn then<U, G>(self, core: usize, g: G) -> Future<U>
    where
        U: Send + 'static,
        G: FnOnce(T) -> U + Send + 'static,
    {
        let Future { slot, pool } = self;
        chain(pool, &*slot, core, Then(slot.clone(), g))
    }

    /// Blocks the calling strand until the result is there, and returns
    /// it.
    ///
    /// # Errors
    ///
    /// [`FutureError::Broken`]; [`FutureError::Wait`] outside a strand or
    /// if the strand is cancelled (the future is given up). A cancel that
    /// comes as the result does, such as the wind-down of a pool that the
    /// work's own panic failed, loses to it: the strand gets the result,
    /// or `Broken`.
    pub fn wait(self) -> Result<T, FutureError> {
        self.slot.header().wait().map_err(FutureError::Wait)?;
        // SAFETY: this handle is the only one that reads the result.
        unsafe { self.slot.header().take() }.expect("ready after the wait")
    }

    /// Whether the result is there (or the future broke).
    pub fn is_ready(&self) -> bool {
        self.slot.header().is_ready()
    }

    /// Makes this future one that can be cloned and waited for from
    /// several places.
    pub fn shared(self) -> SharedFuture<T> {
        SharedFuture { slot: self.slot, pool: self.pool }
    }
}

impl<T: Send + 'static> core::future::Future for Future<T> {
    type Output = Result<T, FutureError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let header = self.slot.header();
        if !header.is_ready() && header.register(context.waker()) {
            return Poll::Pending;
        }
        // SAFETY: this handle is the only one that reads the result.
        match unsafe { header.take() } {
            Some(result) => Poll::Ready(result),
            None => panic!("a roving Future polled after it returned its result"),
        }
    }
}

impl<T: Send + Sync + 'static> SharedFuture<T> {
    /// Runs `g` on `core` with a reference to the result, once it is
    /// there; returns the future of what `g` returns.
    pub fn then<U, G>(&self, core: usize, g: G) -> Future<U>
    where
        U: Send + 'static,
        G: FnOnce(&T) -> U + Send + 'static,
    {
        chain(self.pool.clone(), &*self.slot, core, ThenShared(self.slot.clone(), g))
    }

    /// Blocks the calling strand until the result is there; returns a
    /// reference to it.
    ///
    /// # Errors
    ///
    /// As for [`Future::wait`].
    pub fn wait(&self) -> Result<&T, FutureError> {
        self.slot.header().wait().map_err(FutureError::Wait)?;
        self.get().expect("ready after the wait")
    }

    /// The result, if it is there.
    pub fn get(&self) -> Option<Result<&T, FutureError>> {
        self.slot.header().get().map(|result| result.as_ref().map_err(|error| *error))
    }

    /// Whether the result is there (or the future broke).
    pub fn is_ready(&self) -> bool {
        self.slot.header().is_ready()
    }
}

impl<T> Clone for SharedFuture<T> {
    fn clone(&self) -> Self {
        Self { slot: self.slot.clone(), pool: self.pool.clone() }
    }
}

impl<T: Clone + Send + Sync + 'static> core::future::Future for SharedFuture<T> {
    type Output = Result<T, FutureError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let header = self.slot.header();
        if !header.is_ready() && header.register(context.waker()) {
            return Poll::Pending;
        }
        Poll::Ready(self.get().expect("ready").cloned())
    }
}

impl<T> fmt::Debug for Future<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Future").field("ready", &self.slot.header().is_ready()).finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for SharedFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuture").field("ready", &self.slot.header().is_ready()).finish_non_exhaustive()
    }
}
