//! Failures: what a strand that panicked, or broke a rule of the strand
//! tree, leaves behind, and how a pool keeps the failures that reach it
//! with nobody to handle them (`Shared::fail`, in `stop.rs`).
//!
//! The strand layer makes them (`crate::strand::failure`, which also
//! re-exports these types); a pool keeps them, and its `run` returns the
//! first, so the type lives with the pool.

use super::shared::Shared;
use crate::atomics::Ordering::SeqCst;
use crate::strand::id::StrandId;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Weak;
use core::fmt;

/// Why a strand failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// Its code panicked.
    Panicked,
    /// Its code took a synchronous fault (on bare metal: an abort, an
    /// undefined instruction, a page or protection fault), which the
    /// kernel contained as a panic there. The message says which fault,
    /// and where; no source location is kept (the fault's code has none).
    Faulted,
    /// It returned from a scope (or its body) while strands it anchored
    /// there were still alive. They were cancelled and waited for.
    ReturnWithLiveStrands {
        /// How many were alive when it returned.
        live: usize,
    },
    /// Its pool deadlocked: every core asleep, no deadline armed, and
    /// these strands waiting on each other. [`Failure::deadlock`] has the
    /// report.
    Deadlock {
        /// How many strands were waiting.
        waiting: usize,
    },
    /// It was cancelled while it computed, in a pool with a time slice,
    /// and neither blocked nor reached a
    /// [`checkpoint`](crate::strand::checkpoint) within a slice: it was stopped
    /// at a preemption point and its stack abandoned (`docs/preemption.md`).
    /// The cancel's intended effect, so it is never passed up.
    Interrupted,
    /// Its core stopped answering (kept its interrupts masked past the
    /// pool's [`Config::silent_core_after`](super::Config::silent_core_after))
    /// and was taken out of the pool: the strand is lost with it, and never
    /// runs again.
    CoreSilent {
        /// The core.
        core: usize,
    },
}

/// Where a panic happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// Source file.
    pub file: String,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

impl From<&core::panic::Location<'_>> for Location {
    fn from(location: &core::panic::Location<'_>) -> Self {
        Self { file: String::from(location.file()), line: location.line(), column: location.column() }
    }
}

/// A strand's failure: what happened, where, and in which strand.
///
/// It reaches whoever joins the strand as
/// [`JoinError::Failed`](crate::strand::JoinError::Failed). A failure nobody joins
/// goes up the strand tree, cancelling each strand it passes, to the root
/// of the pool, whose [`run`](crate::Pool::run) returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    kind: FailureKind,
    message: String,
    location: Option<Location>,
    strand: Option<StrandId>,
    others: usize,
    deadlock: Option<Box<super::deadlock::Deadlock>>,
    origin: Origin,
}

/// The pool a strand failed in, kept with a failure that waits in the
/// strand's handle: a handle dropped in another domain returns the failure
/// there. Not part of what a failure *is*: every two origins compare equal.
#[derive(Clone, Default)]
struct Origin(Option<Weak<Shared>>);

impl PartialEq for Origin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Origin {}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Origin")
    }
}

impl Failure {
    pub(crate) fn new(
        kind: FailureKind,
        message: String,
        location: Option<Location>,
        strand: Option<StrandId>,
    ) -> Self {
        Self { kind, message, location, strand, others: 0, deadlock: None, origin: Origin::default() }
    }

    /// The failure of a pool whose strands deadlocked, with the report.
    #[cfg(not(loom))]
    pub(crate) fn deadlocked(report: super::deadlock::Deadlock) -> Self {
        let kind = FailureKind::Deadlock { waiting: report.waiting.len() };
        let message = alloc::format!("{report}");
        Self { deadlock: Some(Box::new(report)), ..Self::new(kind, message, None, None) }
    }

    /// For [`FailureKind::Deadlock`]: who waited on what.
    pub fn deadlock(&self) -> Option<&super::deadlock::Deadlock> {
        self.deadlock.as_deref()
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// The panic message, or a description of the broken rule.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message's string, for a failure made in a full heap
    /// (`super::failure_reserve`), which writes into its room.
    pub(crate) fn message_mut(&mut self) -> &mut String {
        &mut self.message
    }

    /// Where the panic happened, when that is known.
    pub fn location(&self) -> Option<&Location> {
        self.location.as_ref()
    }

    /// The strand that failed first, if it was a strand.
    pub fn strand(&self) -> Option<StrandId> {
        self.strand
    }

    /// How many further failures arrived at the same place before this one
    /// was handled; only the first is kept whole.
    pub fn others(&self) -> usize {
        self.others
    }

    /// Remembers the pool the strand failed in (`Origin`).
    pub(crate) fn set_origin(&mut self, pool: Weak<Shared>) {
        self.origin = Origin(Some(pool));
    }

    /// The pool the strand failed in, if it is still there.
    pub(crate) fn origin(&mut self) -> Option<super::Pool> {
        self.origin.0.take().and_then(|pool| pool.upgrade()).map(|shared| super::Pool { shared })
    }

    /// Counts one more failure that met this one on its way up.
    pub(crate) fn absorb(&mut self, other: &Failure) {
        self.others += 1 + other.others;
    }

    /// Counts `more` failures that are not kept as [`Failure`]s (a task's
    /// panic on the host, a job settled without its type) behind this one.
    pub(crate) fn count_others(&mut self, more: usize) {
        self.others += more;
    }

    /// Keeps `failure` in `slot`: whole if the slot is empty, else counted
    /// by the failure already there.
    pub(crate) fn keep(slot: &mut Option<Box<Failure>>, failure: Box<Failure>) {
        match slot {
            Some(first) => first.absorb(&failure),
            None => *slot = Some(failure),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.strand, self.kind) {
            (_, FailureKind::Deadlock { .. }) => f.write_str("the pool")?,
            (Some(strand), _) => write!(f, "strand {strand}")?,
            (None, _) => f.write_str("a task")?,
        }
        match self.kind {
            FailureKind::Panicked => f.write_str(" panicked")?,
            FailureKind::Faulted => f.write_str(" took a fault")?,
            FailureKind::ReturnWithLiveStrands { live } => {
                write!(f, " returned with {live} live strand(s), which were cancelled")?
            }
            FailureKind::Deadlock { .. } => f.write_str(" deadlocked")?,
            FailureKind::Interrupted => f.write_str(" was cancelled while computing and stopped")?,
            FailureKind::CoreSilent { core } => {
                write!(f, " was lost with core {core}, which stopped answering")?
            }
        }
        if let Some(location) = &self.location {
            write!(f, " at {location}")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if self.others > 0 {
            write!(f, " (and {} more failure(s))", self.others)?;
        }
        Ok(())
    }
}

impl core::error::Error for Failure {}

impl Shared {
    /// A failure reached the pool with nobody to handle it: keep it (the
    /// first whole, others counted) for `run` or the domain's handle, and
    /// stop the pool, or, for a domain's pool, tear it down.
    pub(crate) fn fail(&self, failure: Option<Box<Failure>>) {
        if let Some(failure) = failure {
            crate::diag::info(format_args!("a pool fails: {failure}"));
            Failure::keep(&mut self.failure.lock(), failure);
        }
        if self.tears_down.load(SeqCst) {
            // Quiescence stops it once every strand has ended.
            self.closing.store(true, SeqCst);
            self.strands.cancel_all();
        } else {
            self.stop();
        }
    }

    /// A task (not a strand) panicked on the host: keep its payload for
    /// `run` unless a failure came first (then it is counted there), and
    /// only then stop the pool, running `publish` (the task's own way of
    /// saying it failed: a broken future) before the wind-down cancels
    /// anyone (`stop_publishing`). The order matters: whatever sees the
    /// pool stopped (a refused post that panics in turn, a broken future)
    /// comes after this failure, so `run` raises the first one; and a
    /// strand waiting for the task learns that it failed, not that it was
    /// cancelled.
    #[cfg(feature = "std")]
    pub(crate) fn task_panicked(&self, payload: Box<dyn core::any::Any + Send>, publish: impl FnOnce()) {
        let unkept = {
            let mut failure = self.failure.lock();
            let mut panic = self.panic.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match (failure.as_mut(), panic.as_ref()) {
                (Some(first), _) => {
                    first.count_others(1);
                    Some(payload)
                }
                (None, Some(_)) => Some(payload),
                (None, None) => {
                    *panic = Some(payload);
                    None
                }
            }
        };
        // A payload's drop is user code: not under the locks.
        drop(unkept);
        self.stop_publishing(publish);
    }
}
