//! What a pool's strands are doing, for shells, monitors and tests:
//! [`Pool::strands`].

use super::Pool;
use crate::atomics::unmodelled::Ordering::SeqCst;
use crate::strand::control::{Header, state};
use crate::strand::id::{BlockReason, StrandId};
use crate::strand::tree;
use alloc::vec::Vec;

/// A strand of a pool, as [`Pool::strands`] found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrandInfo {
    /// The strand.
    pub id: StrandId,
    /// Running or waiting for a core (`None`), or blocked, and why.
    pub blocked: Option<BlockReason>,
    /// It has been cancelled (its blocking calls return `Interrupted`).
    pub cancelled: bool,
}

impl Pool {
    /// The strands of this pool that have not finished, each before its
    /// children. Strands run meanwhile, so the list is a snapshot that may
    /// be out of date by the time it is read; one that finishes while the
    /// pool is walked may be missing.
    pub fn strands(&self) -> Vec<StrandInfo> {
        let mut strands = Vec::new();
        self.shared.strands.for_each_entry(|entry| {
            tree::visit_subtree(Header::from_task(entry), &mut |header| strands.push(info(header)));
        });
        strands
    }
}

fn info(header: &Header) -> StrandInfo {
    let blocked = matches!(header.state.load(SeqCst), state::BLOCKED | state::BLOCKED_SHIELDED);
    StrandInfo { id: header.id, blocked: blocked.then(|| header.reason()), cancelled: header.cancelled() }
}
