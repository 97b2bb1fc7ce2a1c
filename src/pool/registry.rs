//! Every pool of the image still alive: what the host's dump of all
//! strands walks ([`platform::host::dump_all_strands`](crate::platform::host::dump_all_strands),
//! on a signal or on demand), and where a deadlock that spans pools finds
//! the other pools of the machine (`super::deadlock`). A pool is listed
//! when it is built, by a weak reference, so the list never keeps one
//! alive.

#[cfg(feature = "std")]
use super::handle::Pool;
use super::shared::Shared;
use crate::spin_lock::SpinLock;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

static POOLS: SpinLock<Vec<Weak<Shared>>> = SpinLock::new(Vec::new());

/// Lists a pool being built; forgets the pools that are gone.
pub(crate) fn register(shared: &Arc<Shared>) {
    let mut pools = POOLS.lock();
    pools.retain(|pool| pool.strong_count() > 0);
    pools.push(Arc::downgrade(shared));
}

/// A handle to every pool still alive, oldest first.
#[cfg(feature = "std")]
pub(crate) fn every_pool() -> Vec<Pool> {
    let pools = POOLS.lock();
    pools.iter().filter_map(Weak::upgrade).map(|shared| Pool { shared }).collect()
}

/// Every pool other than `me` that holds a core of this machine now (the
/// host may run several machines at once: a pool of another one is never
/// touched, not even upgraded).
pub(crate) fn others_holding_cores(me: &Shared, slots: usize) -> Vec<Arc<Shared>> {
    let pools = POOLS.lock();
    pools.iter().filter(|pool| holds_cores_beside(pool, me, slots)).filter_map(Weak::upgrade).collect()
}

/// Whether some pool other than `me` holds a core of this machine, and
/// every such pool is `as_wanted`; allocates nothing (the sleep path asks).
pub(crate) fn others_holding_cores_all(
    me: &Shared,
    slots: usize,
    as_wanted: impl Fn(&Shared) -> bool,
) -> bool {
    let pools = POOLS.lock();
    let mut any = false;
    for pool in pools.iter().filter(|pool| holds_cores_beside(pool, me, slots)) {
        match pool.upgrade() {
            Some(pool) if as_wanted(&pool) => any = true,
            Some(_) => return false,
            None => {}
        }
    }
    any
}

/// Whether `pool` is not `me` and holds a core of `0..slots` of this
/// machine, by its address alone.
fn holds_cores_beside(pool: &Weak<Shared>, me: &Shared, slots: usize) -> bool {
    let shared = pool.as_ptr();
    !core::ptr::eq(shared, me) && (0..slots).any(|core| super::core_owners::holds_key(core, shared.addr()))
}
