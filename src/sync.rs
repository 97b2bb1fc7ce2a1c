//! Atomics, swapped for loom's model-checked ones under `cfg(loom)`.
//!
//! Every lock-free protocol in roving takes its atomics from here, so the
//! loom models in `tests/loom_*.rs` exercise the real code, not a copy.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, Ordering};
