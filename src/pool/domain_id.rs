//! Which domain a pool, and so its strands and tasks, belongs to
//! (`crate::domain`, which re-exports [`DomainId`]). A pool carries its
//! domain's id, and a call from another domain is refused, so the id lives
//! with the pool.

use crate::atomics::unmodelled::{AtomicU32, Ordering::Relaxed, Ordering::SeqCst};
use core::fmt;
use core::num::NonZeroU32;

/// Which domain something belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DomainId(NonZeroU32);

/// The main domain's id.
const MAIN: NonZeroU32 = NonZeroU32::MIN;

/// The first id [`DomainId::fresh`] hands out.
const FIRST_FRESH: u32 = 2;

static NEXT: AtomicU32 = AtomicU32::new(FIRST_FRESH);

impl DomainId {
    /// The main domain: the pools built outside any domain, and their
    /// strands.
    pub const MAIN: Self = Self(MAIN);

    /// The domain of the calling code: the domain of the pool whose core
    /// it runs on, or the main domain outside pools.
    pub fn current() -> Self {
        super::current::with(|worker| {
            // SAFETY: a worker's pool outlives its time as the current worker.
            worker.map_or(Self::MAIN, |worker| unsafe { &*worker.shared }.domain)
        })
    }

    /// Whether this is the calling code's domain ([`current`](Self::current)),
    /// without looking the caller up while the main domain is the only one.
    ///
    /// While no other domain has been made, every pool is the main
    /// domain's, so every caller is in it. A pool of a later domain is
    /// made after its id, so code running on one sees the id taken.
    #[inline]
    pub(crate) fn is_current(self) -> bool {
        (self == Self::MAIN && NEXT.load(Relaxed) == FIRST_FRESH) || Self::current() == self
    }

    pub(crate) fn fresh() -> Self {
        let id = NEXT.fetch_add(1, SeqCst);
        Self(NonZeroU32::new(id).expect("fewer than 2^32 domains"))
    }

    /// The id as a number (the main domain is 1).
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

impl fmt::Display for DomainId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "domain {}", self.0)
    }
}
