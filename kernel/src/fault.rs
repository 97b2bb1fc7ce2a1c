//! Words shared by every architecture's fault report.

use roving::platform::hooks::GuardHit;

/// A fault in a fibre's guard page, in words, as a line of its own (nothing
/// if the fault was not in one).
pub(crate) struct Overflow(pub Option<GuardHit>);

impl core::fmt::Display for Overflow {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Some(hit) = self.0 else { return Ok(()) };
        match hit.strand {
            Some(strand) => {
                write!(
                    f,
                    "\n    stack overflow: strand {strand} ran off the bottom of fibre {}'s stack",
                    hit.fibre
                )
            }
            None => {
                write!(
                    f,
                    "\n    stack overflow into the guard page of fibre {} (no strand resident)",
                    hit.fibre
                )
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
