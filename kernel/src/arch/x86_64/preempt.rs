//! Time slices on x86_64: not yet. The PC's timer does not preempt
//! strands, so a pool with a time slice fails to build here with
//! `PoolError::CannotPreempt` (`docs/preemption.md`).

/// Whether this kernel preempts on this architecture.
pub(crate) const SUPPORTED: bool = false;

/// Never called: `can_preempt` is false here.
pub(crate) fn request_tick(_deadline: Option<u64>) {}
