//! The strand layer's side of what a pool keeps for its strands
//! (`crate::pool::strands`): the operations it attaches to every pool when
//! the pool is built ([`wire`]), on strands named by their control block's
//! task header.

use super::control::{FINISHED, Header};
use super::fibre;
use super::id::BlockReason;
use super::lock::Core as MutexCore;
use super::tree;
use crate::atomics::unmodelled::Ordering::Acquire;
use crate::pool::deadlock::Waiter;
use crate::pool::seam::PoolRef;
use crate::pool::strands::StrandOps;
use crate::task::Task;
use core::ptr::NonNull;

/// Wires a pool being built to the strand layer, before any strand can be
/// spawned into it: the pool learns what to do with strands
/// ([`STRAND_OPS`]), and the layers below how to find a strand's deferral
/// count (`crate::preempt::deferral`). Done here, once per pool, so that a
/// spawn checks for neither.
pub(crate) fn wire(pool: PoolRef<'_>) {
    crate::preempt::deferral::install(&super::deferral::DEFERRAL_HOOKS);
    pool.strands().attach(&STRAND_OPS);
}

/// What every pool is given (`Strands::attach`, through [`wire`]).
pub(crate) static STRAND_OPS: StrandOps = StrandOps {
    runs_strands: |task| fibre::holds(task.as_ptr().cast()),
    finished: |strand| header(strand).joiner.load(Acquire) == FINISHED,
    acquire: |strand| header(strand).acquire(),
    // SAFETY: per `StrandOps::release`, the caller's reference.
    release: |strand| unsafe { Header::release(Header::from_task(strand)) },
    cancel: |strand| _ = tree::cancel(header(strand)),
    waiting: |strand, waiting| {
        tree::visit_subtree(Header::from_task(strand), &mut |header| waiting.extend(waiter(header)))
    },
    // SAFETY: a core's running strand, whose block lives while it runs.
    id: |strand| unsafe { Header::from_task(strand).as_ref() }.id,
    // SAFETY: per `StrandOps::lose`, the caller's contract.
    lose: |strand, core| _ = unsafe { super::failure::lose(Header::from_task(strand), core) },
};

/// The control block of a strand the pool holds a reference to.
fn header<'a>(strand: NonNull<Task>) -> &'a Header {
    // SAFETY: the pool's registry holds a reference, which keeps the block
    // alive while the pool looks at it.
    unsafe { Header::from_task(strand).as_ref() }
}

/// `header`'s line in a deadlock report, if it is blocked.
fn waiter(header: &Header) -> Option<Waiter> {
    if !super::report::blocked(header) {
        return None;
    }
    let mut waiter = super::report::waiter_of(header);
    let object = waiter.object;
    match waiter.reason {
        BlockReason::Mutex if object != 0 => {
            // SAFETY: a strand blocked on a mutex borrows it until it
            // leaves the wait, and its block lives at least as long.
            let core = unsafe { &*core::ptr::with_exposed_provenance::<MutexCore>(object) };
            // SAFETY: a holder listed in a mutex is alive while it holds.
            waiter.holder = core.holder().map(|holder| unsafe { holder.as_ref() }.id);
        }
        BlockReason::Join if object != 0 => {
            // SAFETY: the joiner's handle keeps the target alive while it
            // waits.
            waiter.joins = Some(unsafe { &*core::ptr::with_exposed_provenance::<Header>(object) }.id);
        }
        _ => {}
    }
    Some(waiter)
}
