//! Atomics, swapped for loom's model-checked ones under `cfg(loom)`.
//!
//! Every lock-free protocol in roving takes its atomics from here, so the
//! loom models in `tests/loom_*.rs` exercise the real code, not a copy,
//! and the line census (feature `census`) sees every access.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

#[cfg(all(not(loom), not(feature = "census")))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

/// With feature `census`, atomics that report each access to the line
/// census (`crate::census`).
#[cfg(feature = "census")]
mod counted;
#[cfg(all(not(loom), feature = "census"))]
pub(crate) use core::sync::atomic::{Ordering, fence};
#[cfg(all(not(loom), feature = "census"))]
pub(crate) use counted::{AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize};

/// Atomics outside the loom models (statistics, the pool's own words, the
/// host platform's): `core`'s under loom too, whose atomics cannot be
/// used outside a model, and counted by the line census like the rest
/// when feature `census` is on.
#[allow(unused_imports)] // each build uses a different subset
pub(crate) mod unmodelled {
    #[cfg(feature = "census")]
    pub(crate) use super::counted::{AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize};
    #[cfg(not(feature = "census"))]
    pub(crate) use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize};
    pub(crate) use core::sync::atomic::{Ordering, compiler_fence, fence};
}

/// Keeps `T` alone on its cache line(s). 128 bytes covers the adjacent-line
/// prefetcher of x86 and the 128-byte lines of some ARM cores.
#[derive(Default)]
#[repr(align(128))]
pub struct CachePadded<T>(pub T);

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A hint that the caller is spinning; a no-op under loom, which wants
/// `thread::yield_now` instead (see the models).
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
