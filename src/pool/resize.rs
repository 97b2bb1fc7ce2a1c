//! Changing a running pool's cores: the free set, adding a core, and
//! asking one to leave.
//!
//! A core joins by being claimed in the machine's table (`super::core_owners`),
//! made a member with its mailboxes open, and started on the pool's loop.
//! A core leaves at its next step between tasks (`super::worker`, "Leaving
//! the pool"); [`Pool::remove_core`] returns once it is off the loop and
//! free, so the core can be added to another pool at once. One resize of a
//! pool runs at a time.

use super::error::ResizeError;
use super::shared::{Shared, ring};
use super::stop::RUNNING;
use super::{Pool, core_owners, current};
use crate::atomics::Ordering::SeqCst;
use crate::platform::instant::Instant;
use crate::platform::{self, Depth};
use crate::strand;
use alloc::vec::Vec;
use core::time::Duration;

/// How often a resize looks again while it waits for a core to leave.
const POLL: Duration = Duration::from_micros(50);

/// The machine's cores that no pool holds, by index.
pub fn free_cores() -> Vec<usize> {
    (0..current::limit(platform::core_count())).filter(|&core| core_owners::is_free(core)).collect()
}

impl Pool {
    /// Adds `core`, a free core, to the running pool and starts it there.
    ///
    /// # Errors
    ///
    /// [`ResizeError::NotRunning`], [`ResizeError::NoSuchCore`],
    /// [`ResizeError::AlreadyMember`], [`ResizeError::CoreNotFree`] if
    /// another pool holds it, [`ResizeError::Busy`], or
    /// [`ResizeError::StartCore`] if the platform would not start it.
    pub fn add_core(&self, core: usize) -> Result<(), ResizeError> {
        let _resizing = self.begin_resize()?;
        self.add_one(core)
    }

    /// Asks `core` to leave the running pool and waits until it has: it
    /// finishes the task it is running and every task posted to it, hands
    /// the rest of its work to the pool's other cores, and becomes free.
    /// A strand that calls this blocks meanwhile (its core keeps working);
    /// other callers wait on their core.
    ///
    /// # Errors
    ///
    /// [`ResizeError::NotRunning`], [`ResizeError::NoSuchCore`],
    /// [`ResizeError::NotAMember`], [`ResizeError::RunsMain`] for the core
    /// that called [`Pool::run`], [`ResizeError::LastCore`],
    /// [`ResizeError::OnThatCore`] for a task (not a strand) running on
    /// `core` itself, or [`ResizeError::Busy`].
    pub fn remove_core(&self, core: usize) -> Result<(), ResizeError> {
        let _resizing = self.begin_resize()?;
        self.remove_one(core)
    }

    /// Grows or shrinks the running pool to `cores` cores: it takes the
    /// lowest-numbered free cores, or lets its highest-numbered cores go
    /// (never the one running `main`), one at a time as
    /// [`Pool::add_core`] and [`Pool::remove_core`] do.
    ///
    /// # Errors
    ///
    /// [`ResizeError::LastCore`] for zero, and
    /// [`ResizeError::NotEnoughFreeCores`] if too few are free (checked
    /// first; a core taken by another pool meanwhile stops the resize
    /// there); otherwise as for those two.
    pub fn resize(&self, cores: usize) -> Result<(), ResizeError> {
        if cores == 0 {
            return Err(ResizeError::LastCore);
        }
        let _resizing = self.begin_resize()?;
        let members = self.cores();
        if cores > members.len() {
            let free = free_cores();
            let wanted = cores - members.len();
            if free.len() < wanted {
                return Err(ResizeError::NotEnoughFreeCores { wanted, free: free.len() });
            }
            free.iter().take(wanted).try_for_each(|&core| self.add_one(core))
        } else {
            let runner = self.shared.runner.load(SeqCst);
            let leaving = members.iter().rev().filter(|&&core| core != runner).take(members.len() - cores);
            leaving.copied().collect::<Vec<_>>().into_iter().try_for_each(|core| self.remove_one(core))
        }
    }

    fn begin_resize(&self) -> Result<Resizing<'_>, ResizeError> {
        let shared = &*self.shared;
        if shared.state.load(SeqCst) != RUNNING {
            return Err(ResizeError::NotRunning);
        }
        if shared.resizing.swap(true, SeqCst) {
            return Err(ResizeError::Busy);
        }
        Ok(Resizing(shared))
    }

    fn check_index(&self, core: usize) -> Result<(), ResizeError> {
        let cores = self.shared.slots;
        if core >= cores {
            return Err(ResizeError::NoSuchCore { core, cores });
        }
        Ok(())
    }

    fn add_one(&self, core: usize) -> Result<(), ResizeError> {
        let shared = &*self.shared;
        self.check_index(core)?;
        if shared.is_member(core) {
            return Err(ResizeError::AlreadyMember { core });
        }
        if !core_owners::claim(core, shared) {
            return Err(ResizeError::CoreNotFree { core });
        }
        // SAFETY: we are the resize under way, and resizes run alone.
        unsafe { shared.open_mailboxes(core) };
        shared.membership[core].member.store(true, SeqCst);
        shared.member_count.fetch_add(1, SeqCst);
        shared.rebuild_routes(None);
        if let Err(error) = self.start_core(core) {
            shared.membership[core].member.store(false, SeqCst);
            shared.member_count.fetch_sub(1, SeqCst);
            shared.rebuild_routes(None);
            // What was posted to it while it counted as a member: its pin
            // lapses, as when a core leaves.
            shared.close_mailboxes(core, |chains| {
                let mut tasks = crate::task::queue::TaskQueue::new();
                for chain in chains {
                    // SAFETY: closing took the chain, so it is ours.
                    unsafe { tasks.append_reversed(chain) };
                }
                core::iter::from_fn(|| tasks.pop_front()).for_each(|task| shared.inject(task, None));
            });
            core_owners::release(core, shared);
            return Err(ResizeError::StartCore(error));
        }
        Ok(())
    }

    fn remove_one(&self, core: usize) -> Result<(), ResizeError> {
        let shared = &*self.shared;
        self.check_index(core)?;
        if !shared.is_member(core) {
            return Err(ResizeError::NotAMember { core });
        }
        if core == shared.runner.load(SeqCst) {
            return Err(ResizeError::RunsMain { core });
        }
        if shared.member_count() == 1 {
            return Err(ResizeError::LastCore);
        }
        let in_strand = strand::current().is_some();
        if !in_strand && platform::current_core() == Some(core) {
            return Err(ResizeError::OnThatCore { core });
        }
        shared.membership[core].leaving.store(true, SeqCst);
        // Asleep or about to be: the flag is in its final check.
        if !shared.sleep.wake(core, ring) {
            ring(core);
        }
        // The core gives itself back once it is off the loop, unless it
        // stops answering first and the pool takes it out (`super::take_out`).
        let taken_out = || shared.cores[core].turn.own_side.is_evicted();
        wait_until(in_strand, || !core_owners::holds(core, shared) || taken_out());
        if core_owners::holds(core, shared) {
            return Err(ResizeError::TakenOut { core });
        }
        Ok(())
    }
}

/// Blocks until `done`: a strand sleeps in short steps (shielded: the core
/// it waits for may be its own, so it must not fall back to spinning), and
/// other callers wait on their core.
pub(super) fn wait_until(in_strand: bool, done: impl FnMut() -> bool) {
    let _shield = in_strand.then(strand::shield);
    let mut done = done;
    while !done() {
        if !in_strand || strand::sleep(POLL).is_err() {
            platform::wait_for_event(Depth::Light, Some(Instant::now() + POLL));
        }
    }
}

/// Marks a resize under way; ends it when dropped.
struct Resizing<'a>(&'a Shared);

impl Drop for Resizing<'_> {
    fn drop(&mut self) {
        self.0.resizing.store(false, SeqCst);
    }
}
