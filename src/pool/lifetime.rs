//! Pools that run without a caller: [`Pool::start`] and [`Pool::destroy`],
//! and spawning a strand pinned to one of a pool's cores.
//!
//! [`Pool::run`] lends the calling core to the pool until it is quiescent.
//! A pool built at run time from free cores instead runs on its own cores
//! only, from `start` until `destroy`, and quiescence does not stop it:
//! its cores sleep until work comes. Destroying it cancels every strand it
//! runs and waits for them (`super::entries` says how they are all
//! reached), then stops it, waits for its cores to leave and gives them
//! back to the free set; tasks never started are dropped and counted.

use super::error::{DestroyError, RunError};
use super::resize::wait_until;
use super::stop::RUNNING;
use super::{Pool, core_owners, current};
use crate::atomics::Ordering::SeqCst;
use crate::strand::{self, JoinHandle, Placement, SpawnError};

/// `runner` of a pool that no caller runs.
const NO_RUNNER: usize = usize::MAX;

impl Pool {
    /// Starts the pool on its own cores, which must be free, without
    /// lending it the calling core: it runs until [`Pool::destroy`] (or
    /// [`Pool::shutdown`]), sleeping when idle. Spawn strands into it with
    /// [`Pool::spawn_strand`], from anywhere.
    ///
    /// # Errors
    ///
    /// [`RunError::AlreadyRan`], [`RunError::CoreTaken`] if another pool
    /// holds one of its cores, or [`RunError::StartCore`]; the pool is then
    /// stopped and holds no core.
    pub fn start(&self) -> Result<(), RunError> {
        self.start_on_own_cores(false)
    }

    /// Starts a domain's pool: it tears down on an unhandled failure and
    /// ends once nothing is left running in it (`crate::domain`).
    pub(crate) fn start_domain(&self) -> Result<(), RunError> {
        self.start_on_own_cores(true)
    }

    fn start_on_own_cores(&self, domain: bool) -> Result<(), RunError> {
        let shared = &*self.shared;
        let members = self.begin_running(NO_RUNNER)?;
        shared.stops_when_quiescent.store(domain, SeqCst);
        shared.tears_down.store(domain, SeqCst);
        for &core in &members {
            if let Err(error) = self.start_core(core) {
                shared.stop();
                wait_until(false, || shared.running.load(SeqCst) == 0);
                members.iter().for_each(|&core| core_owners::release(core, shared));
                return Err(RunError::StartCore(error));
            }
        }
        Ok(())
    }

    /// Destroys a pool that was [started](Pool::start): cancels every
    /// strand it runs (with their subtrees, wherever they run) and waits
    /// for them all to end, then stops it and waits for its cores to give
    /// themselves back to the free set. Returns how many tasks were
    /// dropped unrun. A strand that calls this blocks meanwhile.
    ///
    /// A strand that never reaches a blocking call or a
    /// [`checkpoint`](strand::checkpoint) is stopped by its cancel only in
    /// a pool with a [time slice](crate::Config::time_slice): within two
    /// slices it fails with
    /// [`FailureKind::Interrupted`](strand::FailureKind::Interrupted), its
    /// stack abandoned (and its fibre quarantined if it had it to itself:
    /// [`Config::reuse_stopped_stacks`](super::Config::reuse_stopped_stacks)),
    /// so this returns in bounded time. In a cooperative
    /// pool this waits for such a strand as long as it runs
    /// (`docs/preemption.md`).
    ///
    /// # Errors
    ///
    /// [`DestroyError::NotRunning`], [`DestroyError::RunsMain`] for a pool
    /// whose [`run`](Pool::run) is lending it a core (it ends when `main`
    /// returns), or [`DestroyError::FromInside`] when called on one of the
    /// pool's own cores.
    pub fn destroy(&self) -> Result<u64, DestroyError> {
        let shared = &*self.shared;
        if shared.state.load(SeqCst) != RUNNING {
            return Err(DestroyError::NotRunning);
        }
        if shared.runner.load(SeqCst) != NO_RUNNER {
            return Err(DestroyError::RunsMain);
        }
        if current::with(|worker| worker.is_some_and(|worker| core::ptr::eq(worker.shared, shared))) {
            return Err(DestroyError::FromInside);
        }
        let in_strand = strand::current().is_some();
        shared.closing.store(true, SeqCst);
        wait_until(in_strand, || {
            shared.strands.cancel_all();
            shared.strands.live() == 0
        });
        shared.stop();
        let first = self.cores().first().copied().unwrap_or(0);
        Ok(self.finish(first, in_strand))
    }

    /// Spawns a domain's root strand into this (not yet started) pool.
    pub(crate) fn spawn_root<F, T>(&self, f: F) -> Result<JoinHandle<T>, SpawnError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        strand::spawn_in(self.pool_ref(), f, Placement { root: true, ..Placement::default() })
            .map(JoinHandle::from_raw)
    }

    /// Whether the pool has stopped and its cores have all left.
    pub(crate) fn has_ended(&self) -> bool {
        self.shared.stopped() && self.shared.running.load(SeqCst) == 0
    }

    /// Blocks until [`Pool::has_ended`] (a strand sleeps meanwhile).
    pub(crate) fn wait_until_ended(&self) {
        wait_until(strand::current().is_some(), || self.has_ended());
    }

    /// The failure that reached the pool unhandled, if any.
    pub(crate) fn take_failure(&self) -> Option<super::failure::Failure> {
        self.shared.failure.lock().take().map(|failure| *failure)
    }

    /// Spawns `f` as a strand of this pool pinned to `core`: it runs only
    /// there while `core` is one of the pool's cores (if the core leaves,
    /// the pool's other cores run it). Otherwise as
    /// [`Pool::spawn_strand`].
    ///
    /// # Errors
    ///
    /// [`SpawnError::NotAMember`] if `core` is not one of the pool's cores
    /// now; otherwise as for [`Pool::spawn_strand`].
    pub fn spawn_strand_on<F, T>(&self, core: usize, f: F) -> Result<JoinHandle<T>, SpawnError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        strand::spawn_in(self.pool_ref(), f, Placement { pin: Some(core), ..Placement::default() })
            .map(JoinHandle::from_raw)
    }
}
