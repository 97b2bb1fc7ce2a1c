//! [`Pool`], the handle to a pool, as the pool layer defines it: what it
//! holds and how the layers above reach the pool through it
//! ([`PoolRef`](super::seam::PoolRef)). Its public methods are in
//! `pool.rs` and the files beside it; those that run or wait in strands
//! sit in the layers above (`docs/layout.md`).

use super::current;
use super::seam::PoolRef;
use super::shared::Shared;
use alloc::sync::Arc;

/// A pool of cores. Cloning the handle shares the pool.
///
/// Build one on a core of the machine (on the host, inside a
/// [`Machine`](crate::platform::host::Machine)), then [`run`](Pool::run)
/// its root strand; the pool stops once nothing is left to do.
///
/// ```
/// use roving::{Config, Pool, platform::host::Machine};
///
/// Machine::new(2).unwrap().run(|| {
///     let pool = Pool::with_config(Config::new().cores(2)).unwrap();
///     let sum = pool.run(|| {
///         // The root strand: it may spawn strands and block on them.
///         let half = roving::strand::spawn(|| (1..=50u64).sum::<u64>()).unwrap();
///         (51..=100u64).sum::<u64>() + half.join().unwrap()
///     });
///     assert_eq!(sum.unwrap(), 5050);
/// }).unwrap();
/// ```
#[derive(Clone)]
pub struct Pool {
    pub(super) shared: Arc<Shared>,
}

impl Pool {
    /// The pool the calling core works for, if it is a core of a running
    /// pool (from a task, a strand, an actor's turn or `main`).
    pub fn current() -> Option<Pool> {
        current::with(|worker| worker.map(|worker| worker.pool().to_pool()))
    }

    /// The pool as the layers above the pool reach it.
    #[inline]
    pub(crate) fn pool_ref(&self) -> PoolRef<'_> {
        PoolRef::new(&self.shared)
    }

    /// Gives up the handle for a pointer that [`Pool::from_raw`] (or
    /// [`PoolRef::from_raw`]) turns back into it: for what must hold a pool
    /// in an atomic (a fibre that holds its pool).
    pub(crate) fn into_raw(self) -> *mut () {
        Arc::into_raw(self.shared).cast_mut().cast()
    }

    /// A pool of cores `0..slots` with the default config, built without a
    /// machine's cores: for the unit tests of the layers above.
    #[cfg(test)]
    pub(crate) fn detached(slots: usize) -> Pool {
        let config = super::Config::new();
        Pool { shared: Shared::new(slots, |core| core < slots, config, super::domain_id::DomainId::MAIN) }
    }

    /// The handle [`Pool::into_raw`] gave up.
    ///
    /// # Safety
    ///
    /// `raw` came from `into_raw`, and is turned back once.
    pub(crate) unsafe fn from_raw(raw: *mut ()) -> Pool {
        // SAFETY: per the contract, a pointer of `Arc::into_raw`.
        Pool { shared: unsafe { Arc::from_raw(raw.cast_const().cast::<Shared>()) } }
    }
}
