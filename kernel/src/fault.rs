//! Words shared by every architecture's fault report.

use roving::strand::fibre::GuardHit;

/// A fault in a fibre's guard page, in words.
pub(crate) struct Overflow(pub GuardHit);

impl core::fmt::Display for Overflow {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0.strand {
            Some(strand) => write!(
                f,
                "stack overflow: strand {strand} ran off the bottom of fibre {}'s stack",
                self.0.fibre
            ),
            None => {
                write!(f, "stack overflow into the guard page of fibre {} (no strand resident)", self.0.fibre)
            }
        }
    }
}

/// The faulting core's index, or why it has none.
pub(crate) struct Core(pub Option<usize>);

impl core::fmt::Display for Core {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(index) => write!(f, "{index}"),
            None => write!(f, "? (before per-core data)"),
        }
    }
}
