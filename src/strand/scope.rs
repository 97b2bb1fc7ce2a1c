//! Scopes: strands anchored to a call frame, which may borrow from it
//! (named like `std::thread::scope` and rayon's `scope`).

use super::control::Header;
use super::error::{JoinError, SpawnError};
use super::failure::{self, Failure};
use super::{Placement, RawHandle, scheduler, spawn_in, tree};
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// Runs `body` with a [`Scope`] whose strands may borrow anything that
/// outlives the call. When `body` returns, every strand spawned in the
/// scope that is still alive is cancelled and waited for; the call never
/// returns while one runs.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand};
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let mut numbers = [1u64, 2, 3, 4];
///         let total = strand::scope(|s| {
///             let (left, right) = numbers.split_at_mut(2);
///             let a = s.spawn(move || { left.iter_mut().for_each(|n| *n *= 10); left.iter().sum::<u64>() }).unwrap();
///             let b = s.spawn(|| right.iter().sum::<u64>()).unwrap();
///             a.join().unwrap() + b.join().unwrap()
///         });
///         assert_eq!(total.unwrap(), 37);
///         assert_eq!(numbers, [10, 20, 3, 4]);
///     }).unwrap();
/// }).unwrap();
/// ```
///
/// # Errors
///
/// - [`ScopeError::ReturnWithLiveStrands`] if `body` returned while
///   strands of the scope were alive (they were cancelled and have ended;
///   `body`'s value is dropped). Not if the calling strand was cancelled:
///   leaving children behind is then what it is asked to do;
/// - [`ScopeError::Failed`] if a strand of the scope (or, detached, of the
///   calling strand) failed and nobody joined it: the failure that came up
///   to the calling strand, which has also been cancelled by it;
/// - [`ScopeError::NotAStrand`] (with `body`, not run) outside strands: a
///   scope blocks at its end, which only a strand can.
pub fn scope<'env, F, R>(body: F) -> Result<R, ScopeError<F>>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    let Some(owner) = scheduler::current() else { return Err(ScopeError::NotAStrand(body)) };
    let scope = Scope { owner, anchor: tree::Anchor::new(), _scope: PhantomData, _env: PhantomData };
    // On the host a panic in `body` is caught here, so the frame ends (and
    // the strands borrowing it are waited for) before it unwinds further.
    #[cfg(feature = "std")]
    let value = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| body(&scope)));
    #[cfg(not(feature = "std"))]
    let value = Ok::<R, core::convert::Infallible>(body(&scope));
    let live = tree::end_frame(owner, Some(&scope.anchor));
    // SAFETY: the running strand's header.
    let escalated = tree::take_escalated(unsafe { owner.as_ref() });
    #[cfg(feature = "std")]
    let value = value.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    #[cfg(not(feature = "std"))]
    let Ok(value) = value;
    if let Some(failure) = escalated {
        return Err(ScopeError::Failed(*failure));
    }
    // SAFETY: as above.
    if live > 0 && !unsafe { owner.as_ref() }.cancelled() {
        // SAFETY: as above.
        let id = unsafe { owner.as_ref() }.id;
        return Err(ScopeError::ReturnWithLiveStrands(*failure::live_strands(Some(id), live)));
    }
    Ok(value)
}

/// A frame strands can be anchored to: see [`scope`].
pub struct Scope<'scope, 'env: 'scope> {
    owner: NonNull<Header>,
    anchor: tree::Anchor,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

// SAFETY: spawning into a scope from its strands is what it is for; the
// anchor is guarded by the owner's family lock, the owner is live while
// the scope is.
unsafe impl Sync for Scope<'_, '_> {}

impl<'scope> Scope<'scope, '_> {
    /// Spawns `f` as a strand of this scope, on the owner's pool. It may
    /// borrow anything that outlives the scope.
    ///
    /// # Errors
    ///
    /// As for [`Pool::spawn_strand`](crate::Pool::spawn_strand), with `f`
    /// back.
    pub fn spawn<F, T>(&'scope self, f: F) -> Result<ScopedJoinHandle<'scope, T>, SpawnError<F>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        // SAFETY: the owner runs the scope, so it is live; a fibre with
        // strands is held by a live pool.
        let shared = unsafe { self.owner.as_ref() }.fibre.pool();
        let placement =
            Placement { scope: Some((self.owner, &raw const self.anchor)), ..Placement::default() };
        spawn_in(shared, f, placement).map(|raw| ScopedJoinHandle { raw, _scope: PhantomData })
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: the owner is live while the scope is.
        f.debug_struct("Scope").field("owner", &unsafe { self.owner.as_ref() }.id).finish_non_exhaustive()
    }
}

/// Owns the result of a strand spawned in a [`Scope`]; as
/// [`JoinHandle`](super::JoinHandle), for the life of the scope.
pub struct ScopedJoinHandle<'scope, T> {
    raw: RawHandle<T>,
    _scope: PhantomData<&'scope ()>,
}

impl<T> ScopedJoinHandle<'_, T> {
    super::handle_queries!();

    /// Waits for the strand and returns its value.
    ///
    /// # Errors
    ///
    /// As for [`JoinHandle::join`](super::JoinHandle::join).
    pub fn join(self) -> Result<T, JoinError<Self>> {
        RawHandle::join(self, |handle| &handle.raw, |handle| handle.raw)
    }
}

impl<T> fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedJoinHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Why a [`scope`] did not return its body's value.
#[non_exhaustive]
pub enum ScopeError<F> {
    /// The body returned while strands of the scope were alive; they were
    /// cancelled and waited for. The failure says how many.
    ReturnWithLiveStrands(Failure),
    /// A failure nobody handled came up to the calling strand.
    Failed(Failure),
    /// Called outside a strand; the body comes back unrun.
    NotAStrand(F),
}

impl<F> ScopeError<F> {
    /// The failure, unless the scope never ran.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Self::ReturnWithLiveStrands(failure) | Self::Failed(failure) => Some(failure),
            Self::NotAStrand(_) => None,
        }
    }
}

impl<F> fmt::Debug for ScopeError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReturnWithLiveStrands(failure) => {
                f.debug_tuple("ReturnWithLiveStrands").field(failure).finish()
            }
            Self::Failed(failure) => f.debug_tuple("Failed").field(failure).finish(),
            Self::NotAStrand(_) => f.write_str("NotAStrand(..)"),
        }
    }
}

error_messages! {
    impl<F> ScopeError<F> {
        Self::ReturnWithLiveStrands(failure) | Self::Failed(failure) => "{failure}";
        Self::NotAStrand(_) => "a scope needs a strand (its end blocks); the body was not run";
    }
}
