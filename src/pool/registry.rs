//! Every pool of the process still alive (feature `std`): what the host's
//! dump of all strands walks ([`platform::host::dump_all_strands`](crate::platform::host::dump_all_strands),
//! on a signal or on demand). A pool is listed when it is built, by a weak
//! reference, so the list never keeps one alive.

use super::handle::Pool;
use super::shared::Shared;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use std::sync::{Mutex, PoisonError};

static POOLS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Lists a pool being built; forgets the pools that are gone.
pub(crate) fn register(shared: &Arc<Shared>) {
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    pools.retain(|pool| pool.strong_count() > 0);
    pools.push(Arc::downgrade(shared));
}

/// A handle to every pool still alive, oldest first.
pub(crate) fn every_pool() -> Vec<Pool> {
    let pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    pools.iter().filter_map(Weak::upgrade).map(|shared| Pool { shared }).collect()
}
