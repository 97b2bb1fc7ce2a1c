//! A deadlock that spans pools: strands of several pools of the machine
//! waiting on each other in a ring.
//!
//! A pool does not call itself deadlocked while another pool holds a core
//! of the machine, since that pool's strands may yet set what its own
//! wait for. But strands that wait on each other in a ring (each to join
//! the next, or for a mutex the next holds) can never go on, whatever
//! else runs: only a cancel breaks the ring. So when the last core of a
//! pool falls asleep with strands waiting, no deadline armed, and another
//! pool holding cores, it looks at every pool that holds a core of the
//! machine (`super::super::registry`). If each of them is as still (every
//! core asleep, nothing queued, no deadline armed), it posts the check, as
//! a task, to a core of its own pool.
//!
//! The check, on that woken core, looks again at every such pool, then
//! walks the blocked strands of all of them and follows each one's wait:
//! to the strand it joins, or to the holder of the mutex it wants. A walk
//! that comes back to a strand it passed has found a ring. Only then is it
//! a deadlock: the report (every pool's waiting strands, the ring, and how
//! many pools) goes to every pool that has a strand in the ring, and each
//! acts on it as its [`OnDeadlock`](super::OnDeadlock) says. Strands that
//! wait on what no ring explains (an event nobody sets) are not called
//! deadlocked across pools: code outside them may still set it.
//!
//! Nothing moves while the check looks: every strand it reads is blocked,
//! every core of those pools sleeps, and no deadline can wake one. A
//! pool whose cores stir meanwhile fails the second look, and the check
//! gives up; the pool's next sleep looks again.

use super::{Deadlock, Waiter};
use crate::atomics::unmodelled::Ordering::SeqCst;
use crate::pool::core_owners::with_across_check;
use crate::pool::registry;
use crate::pool::shared::Shared;
use crate::strand::id::{BlockReason, StrandId};
use crate::task::{self, IntoTask};
use alloc::sync::Arc;
use alloc::vec::Vec;

impl Shared {
    /// Called by the last core of this pool to fall asleep, with strands
    /// waiting and no deadline armed, while another pool holds cores: if
    /// every such pool is still too, posts the check across them.
    pub(crate) fn check_across_pools(&self) {
        if !registry::others_holding_cores_all(self, self.slots, |other| other.still(0)) {
            return;
        }
        let Some(shared) = self.this.upgrade() else { return };
        // One check at a time per machine, which acts on every pool of the
        // ring: two at once would fail a pool twice.
        if with_across_check(|checking| checking.swap(true, SeqCst)) {
            return;
        }
        match task::closure::Closure(move || shared.handle_deadlock_across()).into_task(None) {
            Ok(task) => self.inject(task, None),
            Err(_) => with_across_check(|checking| checking.store(false, SeqCst)),
        }
    }

    /// The check itself: runs as a task on a core of this pool.
    fn handle_deadlock_across(&self) {
        let found = self.deadlock_across();
        with_across_check(|checking| checking.store(false, SeqCst));
        let Some((report, pools)) = found else { return };
        for pool in pools {
            pool.deadlock_pending.store(true, SeqCst);
            pool.act_on_deadlock(report.clone());
        }
    }

    /// The ring across this pool and the others holding cores, if every
    /// one of them is still and there is one: the report, and the pools
    /// with a strand in the ring.
    fn deadlock_across(&self) -> Option<(Deadlock, Vec<Arc<Shared>>)> {
        let others = registry::others_holding_cores(self, self.slots);
        if !self.still(1) || others.is_empty() || !others.iter().all(|other| other.still(0)) {
            return None;
        }
        let me = self.this.upgrade()?;
        let pools: Vec<Arc<Shared>> = core::iter::once(me).chain(others).collect();
        let waiting: Vec<Vec<Waiter>> = pools.iter().map(|pool| pool.strands.waiting()).collect();
        // A strand spawned into one pool by a strand of another is walked
        // in both (as an entry, and as the spawner's child): list it once.
        let mut all: Vec<Waiter> = Vec::new();
        for waiter in waiting.iter().flatten() {
            if !all.iter().any(|listed| listed.strand == waiter.strand) {
                all.push(waiter.clone());
            }
        }
        let cycle = cycle_in(&all);
        if cycle.is_empty() {
            return None;
        }
        let in_ring: Vec<Arc<Shared>> = pools
            .into_iter()
            .zip(&waiting)
            .filter(|(_, waiters)| waiters.iter().any(|waiter| cycle.contains(&waiter.strand)))
            .map(|(pool, _)| pool)
            .collect();
        if in_ring.len() < 2 {
            // A ring inside one pool: that pool reports it itself once
            // the others are done.
            return None;
        }
        let tasks = in_ring.iter().map(|pool| pool.async_tasks.count()).sum();
        let report = Deadlock { waiting: all, tasks, quiet_for: None, pools: in_ring.len(), cycle };
        Some((report, in_ring))
    }
}

/// A ring among `waiting`'s strands, each waiting for the next (to join
/// it, or for a mutex it holds), if the walk from some strand finds one;
/// empty if none.
pub(super) fn cycle_in(waiting: &[Waiter]) -> Vec<StrandId> {
    let next = |strand: StrandId| {
        let waiter = waiting.iter().find(|waiter| waiter.strand == strand)?;
        match waiter.reason {
            BlockReason::Mutex => waiter.holder,
            BlockReason::Join => waiter.joins,
            _ => None,
        }
    };
    for start in waiting {
        let mut path = Vec::new();
        let mut at = Some(start.strand);
        while let Some(strand) = at {
            if let Some(seen) = path.iter().position(|&passed| passed == strand) {
                return path.split_off(seen);
            }
            // A walk longer than the strands has looped already.
            if path.len() > waiting.len() {
                break;
            }
            path.push(strand);
            at = next(strand);
        }
    }
    Vec::new()
}
