//! Cancellation, as the running strand sees it (a cancelled
//! strand's blocking operations fail with an interruption, and it may hold
//! cancellation off for cleanup that must block).
//!
//! Cancelling is done through a handle ([`JoinHandle::cancel`](super::JoinHandle::cancel))
//! or by the tree (a frame's end, a failure passed up). It marks the strand
//! and its subtree; every blocking call a marked strand is in, or enters,
//! returns `Interrupted`. Code that only computes can ask [`cancelled`]
//! or call [`checkpoint`] in its loops. In a cooperative pool nothing else
//! stops it. In a pool with a time slice, a cancelled strand still
//! computing a slice after a tick first saw it is stopped at a preemption
//! point: it fails with [`FailureKind::Interrupted`](super::FailureKind::Interrupted)
//! and its stack is abandoned (`crate::preempt`). A [`Shield`] holds that
//! off too.

use super::WaitError;
use super::control::Header;
use super::scheduler;
use crate::atomics::unmodelled::Ordering::*;
use core::marker::PhantomData;
use core::ptr::NonNull;

/// Whether the running strand has been cancelled. `false` outside strands.
pub fn cancelled() -> bool {
    // SAFETY: the running strand's header is live.
    scheduler::current().is_some_and(|me| unsafe { me.as_ref() }.cancelled())
}

/// Returns [`WaitError::Interrupted`] if the running strand has been
/// cancelled and holds no [`Shield`]: a place for long computations to
/// stop.
///
/// ```
/// use core::time::Duration;
/// use roving::{Pool, platform::host::Machine, strand};
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let worker = strand::spawn(|| {
///             let mut rounds = 0u64;
///             // Computes until cancelled, asking once a round. It also
///             // yields: without a time slice, a strand that never does
///             // keeps its core from the strands waiting for it.
///             while strand::checkpoint().is_ok() {
///                 rounds += 1;
///                 let _ = strand::yield_now();
///             }
///             rounds
///         })
///         .unwrap();
///         strand::sleep(Duration::from_millis(5)).unwrap();
///         worker.cancel().unwrap();
///         // It stopped at a checkpoint and returned normally.
///         assert!(worker.join().is_ok());
///     })
///     .unwrap();
/// })
/// .unwrap();
/// ```
///
/// # Errors
///
/// [`WaitError::Interrupted`], as above.
pub fn checkpoint() -> Result<(), WaitError> {
    match scheduler::current() {
        // SAFETY: the running strand's header is live.
        Some(me) if interruptible(unsafe { me.as_ref() }) => Err(WaitError::Interrupted),
        _ => Ok(()),
    }
}

/// Whether a blocking call of `strand` should be interrupted now.
pub(crate) fn interruptible(strand: &Header) -> bool {
    strand.shield.load(Relaxed) == 0 && strand.cancelled()
}

/// Holds cancellation off for the running strand until dropped: blocking
/// calls block as if the strand had not been cancelled. For cleanup that
/// must block (flushing a buffer, telling a peer goodbye); keep it short,
/// since whoever cancelled waits for it.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand, sync::WaitError};
/// use std::time::Duration;
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let child = strand::spawn(|| {
///             assert_eq!(strand::sleep(Duration::from_secs(60)), Err(WaitError::Interrupted));
///             let _cleanup = strand::shield();
///             strand::sleep(Duration::from_millis(1)) // not interrupted
///         }).unwrap();
///         child.cancel().unwrap();
///         assert_eq!(child.join().unwrap(), Ok(()));
///     }).unwrap();
/// }).unwrap();
/// ```
#[must_use = "cancellation is held off only while the shield lives"]
pub struct Shield {
    strand: Option<NonNull<Header>>,
    /// Tied to the strand that raised it.
    _not_send: PhantomData<*const ()>,
}

/// Raises a [`Shield`] for the running strand (outside strands it does
/// nothing). Shields nest.
pub fn shield() -> Shield {
    let strand = scheduler::current();
    if let Some(me) = strand {
        // SAFETY: the running strand's header; only it writes its shield.
        let before = unsafe { me.as_ref() }.shield.fetch_add(1, Relaxed);
        assert!(before < u8::MAX, "more than 255 shields held at once by one strand");
    }
    Shield { strand, _not_send: PhantomData }
}

impl Drop for Shield {
    fn drop(&mut self) {
        if let Some(me) = self.strand {
            // SAFETY: the shield lives on the strand that raised it, which
            // is running (dropping it).
            unsafe { me.as_ref() }.shield.fetch_sub(1, Relaxed);
        }
    }
}
