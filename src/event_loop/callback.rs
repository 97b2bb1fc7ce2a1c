//! One-shot callbacks, and the two ways a callback can hold its object.

use super::op::Operation;
use super::{DeliveryError, Loop, WeakLoop};
use alloc::boxed::Box;

/// What firing a callback did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// A plain callback ran, on the caller.
    Ran,
    /// A loop's callback was deferred onto its loop (and may already have
    /// run there, if the caller became the loop's drainer).
    Deferred,
    /// A weak callback's object was gone, so it did not run.
    Skipped,
}

type Erased<A> = dyn FnOnce(Option<A>) -> Result<Fired, DeliveryError<A>> + Send;

/// A function to call exactly once with an `A`: the completion of an
/// operation, typically.
///
/// [`fire`](Callback::fire) consumes it, so it cannot fire twice. Made by:
///
/// - [`Callback::new`]: a plain closure, run by whoever fires it;
/// - [`Loop::callback`]: runs on its loop with the loop's state, and keeps
///   the loop's object alive until it has fired (the half of an ownership
///   contract: an operation that holds a caller's buffer returns it through
///   such a callback, so the object must not finish first);
/// - [`Loop::weak_callback`]: runs on its loop if the object is still
///   alive when it fires, and is skipped otherwise; it does not keep the
///   object alive (for callbacks that would otherwise form a cycle).
///
/// Dropping a callback unfired releases what it held, without running it.
#[must_use = "a callback is a promise to call it"]
pub struct Callback<A: 'static> {
    f: Option<Box<Erased<A>>>,
}

impl<A: Send + 'static> Callback<A> {
    /// A plain callback: `f` runs on whoever fires it.
    pub fn new(f: impl FnOnce(A) + Send + 'static) -> Self {
        Self::erase(move |arg| {
            if let Some(arg) = arg {
                f(arg);
            }
            Ok(Fired::Ran)
        })
    }

    /// Calls the callback with `arg`.
    ///
    /// # Errors
    ///
    /// A loop's callback whose loop refuses it ([`DeliveryError`]) gives
    /// `arg` back; the callback is spent either way.
    pub fn fire(mut self, arg: A) -> Result<Fired, DeliveryError<A>> {
        let f = self.f.take().expect("a callback is whole until fired");
        f(Some(arg))
    }

    /// `f` is given the argument when fired, or `None` when dropped unfired.
    fn erase(f: impl FnOnce(Option<A>) -> Result<Fired, DeliveryError<A>> + Send + 'static) -> Self {
        Self { f: Some(Box::new(f)) }
    }
}

impl<A: 'static> Drop for Callback<A> {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            // Unfired: release the object without running anything.
            let _ = f(None);
        }
    }
}

impl<A: 'static> core::fmt::Debug for Callback<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Callback").finish_non_exhaustive()
    }
}

/// One share of an object's pending work: while it lives, the object is
/// alive and not finished. Dropping it releases the share.
pub(super) struct Pending<T: Send + 'static> {
    of: Loop<T>,
}

impl<T: Send + 'static> Pending<T> {
    /// A new share of `of`'s pending work.
    pub(super) fn new(of: &Loop<T>) -> Self {
        of.lifecycle().hold();
        Self { of: of.clone() }
    }

    /// The share every object is made with, released once its close hook
    /// has run.
    pub(super) fn adopt(of: Loop<T>) -> Self {
        Self { of }
    }

    pub(super) fn of(&self) -> &Loop<T> {
        &self.of
    }
}

impl<T: Send + 'static> Drop for Pending<T> {
    fn drop(&mut self) {
        self.of.lifecycle().release();
    }
}

/// A fired loop callback on its way to its loop.
struct Fire<F, A, T: Send + 'static> {
    f: F,
    arg: A,
    /// A strong callback's share, released once `f` has run (or been
    /// dropped unrun).
    _share: Option<Pending<T>>,
}

impl<T, A, F> Operation<T> for Fire<F, A, T>
where
    T: Send + 'static,
    A: Send + 'static,
    F: FnOnce(&mut T, &Loop<T>, A) + Send + 'static,
{
    fn run(self, state: &mut T, this: &Loop<T>) {
        (self.f)(state, this, self.arg);
    }
}

impl<T: Send + 'static> Loop<T> {
    /// A callback that runs `f` on this loop with its state, and keeps the
    /// loop's object alive and unfinished (see
    /// [`LoopGroup::join`](super::LoopGroup::join)) until it has fired or been
    /// dropped.
    pub fn callback<A, F>(&self, f: F) -> Callback<A>
    where
        A: Send + 'static,
        F: FnOnce(&mut T, &Loop<T>, A) + Send + 'static,
    {
        let share = Pending::new(self);
        Callback::erase(move |arg| {
            let Some(arg) = arg else {
                return Ok(Fired::Skipped);
            };
            let of = share.of().clone();
            of.defer_op(Fire { f, arg, _share: Some(share) })
                .map(|()| Fired::Deferred)
                .map_err(|e| e.map(|fire| fire.arg))
        })
    }

    /// A callback that runs `f` on this loop with its state if the loop's
    /// object is still alive when it fires, and is skipped if not. It does
    /// not keep the object alive.
    pub fn weak_callback<A, F>(&self, f: F) -> Callback<A>
    where
        A: Send + 'static,
        F: FnOnce(&mut T, &Loop<T>, A) + Send + 'static,
    {
        let of: WeakLoop<T> = self.downgrade();
        Callback::erase(move |arg| {
            let Some(arg) = arg else {
                return Ok(Fired::Skipped);
            };
            // Upgraded just before it runs: the object lives on for the
            // run, or is gone and the callback is skipped.
            let Some(of) = of.upgrade() else {
                return Ok(Fired::Skipped);
            };
            of.defer_op(Fire { f, arg, _share: None })
                .map(|()| Fired::Deferred)
                .map_err(|e| e.map(|fire| fire.arg))
        })
    }
}
