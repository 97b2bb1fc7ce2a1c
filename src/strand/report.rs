//! A pool's live strands, one line each, for [`Pool::dump_strands`](crate::Pool::dump_strands)
//! and the host's dump on a signal (`platform::host::dump_on_signal`).
//!
//! The walk runs while the pool runs, so it reads only what stays valid
//! while strands move: each strand is held by a reference while it is read
//! (the tree walk of the deadlock report), and only its own atomics are
//! read. The objects a strand waits on are named by address and never
//! read: a mutex may be dropped as soon as its waiter leaves the wait, so
//! its holder is left out here (the deadlock report, taken when nothing
//! moves, names it). A join is resolved to the strand it waits for when
//! that strand is in the same walk, by its address alone. What a strand
//! does is a snapshot: by the time the line is read it may have moved on.

use super::control::{Header, flags, state};
use super::tree;
use super::{BlockReason, Priority, StrandId};
use crate::atomics::unmodelled::Ordering::{Relaxed, SeqCst};
use crate::pool::deadlock::Waiter;
use crate::pool::seam::PoolRef;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;

/// One live strand of a pool, as the dump describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrandReport {
    /// Also when it is not blocked: its fibre and priority are there.
    waiter: Waiter,
    blocked: bool,
    last_core: usize,
    cancelled: bool,
    preempted: bool,
}

impl StrandReport {
    /// The strand.
    pub fn strand(&self) -> StrandId {
        self.waiter.strand
    }

    /// What it waits for, if it is blocked. A mutex's holder is not read
    /// in a live dump ([`Waiter::holder`] is `None`).
    pub fn waiting(&self) -> Option<&Waiter> {
        self.blocked.then_some(&self.waiter)
    }

    /// The core that last ran its fibre.
    pub fn last_core(&self) -> usize {
        self.last_core
    }

    /// Its priority.
    pub fn priority(&self) -> Priority {
        self.waiter.priority
    }

    /// The index of the fibre it lives on.
    pub fn fibre(&self) -> usize {
        self.waiter.fibre
    }

    /// Whether its stack is in its fibre's stack now; if not, another
    /// strand of the fibre is resident, and this one's stack is copied out.
    pub fn resident(&self) -> bool {
        self.waiter.resident
    }

    /// Whether it has been cancelled.
    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// Whether a time slice's tick stopped it and it waits for its turn.
    pub fn preempted(&self) -> bool {
        self.preempted
    }
}

impl fmt::Display for StrandReport {
    /// `strand #N` and what it does, as the deadlock report says it (but
    /// for a mutex's holder, not read here), then its fibre, whether its
    /// stack is there, and its priority.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let waiter = &self.waiter;
        match waiter.reason {
            _ if !self.blocked && self.preempted => write!(
                f,
                "strand {} was preempted and waits for its turn (last on core {})",
                waiter.strand, self.last_core
            )?,
            _ if !self.blocked => write!(
                f,
                "strand {} runs or is ready to run (last on core {})",
                waiter.strand, self.last_core
            )?,
            BlockReason::Mutex => {
                write!(f, "strand {} waits for the mutex at {:#x}", waiter.strand, waiter.object)?
            }
            _ => waiter.write_wait(f)?,
        }
        waiter.write_place(f)?;
        if self.cancelled {
            f.write_str("; cancelled")?;
        }
        Ok(())
    }
}

/// Every live strand of `pool`, entries first, each before its children.
pub(crate) fn reports(pool: PoolRef<'_>) -> Vec<StrandReport> {
    let mut found: Vec<(usize, StrandReport)> = Vec::new();
    pool.strands().for_each_entry(|entry| {
        tree::visit_subtree(Header::from_task(entry), &mut |header| {
            found.push((core::ptr::from_ref(header) as usize, report(header)));
        });
    });
    let ids: BTreeMap<usize, StrandId> =
        found.iter().map(|(address, report)| (*address, report.strand())).collect();
    found
        .into_iter()
        .map(|(_, mut report)| {
            if report.blocked && report.waiter.reason == BlockReason::Join {
                report.waiter.joins = ids.get(&report.waiter.object).copied();
            }
            report
        })
        .collect()
}

/// What `header`'s own atomics say of it now.
fn report(header: &Header) -> StrandReport {
    StrandReport {
        blocked: blocked(header),
        waiter: waiter_of(header),
        last_core: header.fibre.last_core.load(Relaxed),
        cancelled: header.flags.load(Relaxed) & flags::CANCELLED != 0,
        preempted: header.preempted.load(Relaxed) != 0,
    }
}

/// Whether `header`'s strand is blocked in a wait.
pub(super) fn blocked(header: &Header) -> bool {
    matches!(header.state.load(SeqCst), state::BLOCKED | state::BLOCKED_SHIELDED)
}

/// `header`'s line of a report, as its own atomics say: what it waits on
/// (by address, nothing read there), its fibre and its priority.
pub(super) fn waiter_of(header: &Header) -> Waiter {
    let fibre = header.fibre;
    Waiter {
        strand: header.id,
        reason: header.reason(),
        object: header.waits_on(),
        holder: None,
        joins: None,
        fibre: fibre.index(),
        resident: fibre.resident_id.load(Relaxed) == header.id.get(),
        priority: Priority::from_raw(header.priority.load(Relaxed)),
    }
}
