//! Taking a silent core out of its pool (`super::silent` finds it): the
//! steps a leaving core takes for itself (`super::worker`, "Leaving the
//! pool"), taken for it by a core of the pool, in the same order.
//!
//! 1. Its own lists become the taker's (`crate::protocol::own_side`): the
//!    taker marks the core evicted and, a grace period later, looks. If
//!    the core is inside a section, it is silent inside roving's own code
//!    and its lists cannot be taken now: it is reported, left in the
//!    pool, and looked at again at each of the watch's scans; it parks
//!    if it ever leaves the section, and is taken out then.
//! 2. With the mesh, it leaves the routes: what was on its way through
//!    it, or to it, goes to the receivers' direct lists.
//! 3. Its inbound mailboxes are closed, their tasks kept: a post to it is
//!    refused from now on, with the closure back to the sender.
//! 4. What its mailboxes, pinned queue, private queue, LIFO slot and
//!    steal list held goes to the injector, for the pool's other cores:
//!    pins to it lapse, as for a leaving core.
//! 5. It stops being a member, and stops counting among the cores the
//!    pool waits for when it stops.
//!
//! What cannot be moved is lost with the core, and the report says so:
//! the strand it runs (its stack is in use, and its registers are the
//! silent core's), with any other strand sharing that strand's fibre; a
//! task it runs; a fork-join half it runs, whose owner waits on. The
//! lost strand fails on its behalf (through the strand layer's ops): its
//! joiner learns why, the mutexes it held are poisoned, and the frame it
//! was spawned in can end. The core is never given back: if it answers again it parks for
//! good (`super::own_lists`), and the pool's memory stays while it lives.

use super::Pool;
use super::shared::{Shared, ring};
use crate::atomics::unmodelled::Ordering::{Relaxed, SeqCst};
use crate::platform::{Depth, instant::Instant};
use crate::protocol::own_side::{GRACE_NANOS, Look};
use crate::strand::id::StrandId;
use crate::task::queue::TaskQueue;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

/// How long a take-out looks at a silent core inside roving's code before
/// it leaves the looking to the watch.
const BUSY_PATIENCE: Duration = Duration::from_millis(1);

/// A take-out the watch posted.
pub(super) struct TakeOut {
    pub(super) core: usize,
    pub(super) silent_for: Duration,
}

/// A core that stopped answering (module docs of `super::silent`), as
/// [`Pool::silent_cores`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SilentCore {
    /// The core's index.
    pub core: usize,
    /// How long it had left a ping unanswered when it was given up.
    pub silent_for: Duration,
    /// The strand it was running, lost with it; `None` if it ran a task
    /// or roving's own code.
    pub strand: Option<StrandId>,
    /// Whether it was taken out of the pool. `false` for a core silent
    /// inside roving's own code (its lists cannot be taken while it may be
    /// touching them: it is taken out, and reported again, if it leaves
    /// that code) and for the core that runs [`Pool::run`] (whose caller
    /// is stuck with it).
    pub taken_out: bool,
    /// Tasks queued for it that went to the pool's other cores.
    pub moved: usize,
}

impl fmt::Display for SilentCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "core {} stopped answering interrupts (silent for {:?})", self.core, self.silent_for)?;
        match self.strand {
            Some(strand) => write!(f, " while it ran strand {strand}, which is lost with it")?,
            None => write!(f, " outside any strand")?,
        }
        if self.taken_out {
            write!(
                f,
                "; it was taken out of its pool, and {} tasks queued for it moved to other cores",
                self.moved
            )
        } else {
            write!(f, "; it was left in its pool (it runs the pool's caller, or roving's own code)")
        }
    }
}

impl Pool {
    /// The cores of this pool that stopped answering, in the order they
    /// were found (`docs/guarantees.md`, "A core that stops answering").
    pub fn silent_cores(&self) -> Vec<SilentCore> {
        self.shared.silent_cores.lock().clone()
    }
}

impl Shared {
    /// Takes a silent core out (module docs); runs as a task on another
    /// core of the pool. `first` is false for a retry, once the core left
    /// the section it was silent in.
    pub(super) fn take_out(&self, TakeOut { core, silent_for }: TakeOut, first: bool) {
        if !self.is_member(core) {
            return;
        }
        let turn = &self.cores[core].turn;
        // Read while the core is silent: it writes this only as it
        // switches strands, which it does not do with interrupts masked
        // for long; a strand's header lives while it runs.
        let running = core::ptr::NonNull::new(turn.running.load(Relaxed));
        let strand = running.and_then(|strand| self.strands.id_of(strand));
        let mut report = SilentCore { core, silent_for, strand, taken_out: false, moved: 0 };
        if core == self.runner.load(SeqCst) {
            self.report_silent(report);
            return;
        }
        if first {
            turn.own_side.evict();
            let looked_at = Instant::now() + Duration::from_nanos(GRACE_NANOS);
            while Instant::now() < looked_at {
                crate::platform::wait_for_event(Depth::Light, Some(looked_at));
            }
        }
        if !self.lists_taken(core) {
            // Silent inside roving's own code: the watch looks again, and
            // posts this again once the core is out (`super::silent`).
            self.silent_watch_retry(core);
            if first {
                self.report_silent(report);
            }
            return;
        }
        report.moved = self.move_work_of(core);
        report.taken_out = true;
        if let Some(strand) = running {
            // SAFETY: the strand the core ran when it was taken out,
            // which parks before it touches the strand again.
            unsafe { self.strands.lose(strand, core) };
        }
        // The pool stops without it: it counts as having left.
        self.running.fetch_sub(1, SeqCst);
        ring(self.runner.load(SeqCst));
        self.report_silent(report);
    }

    fn report_silent(&self, report: SilentCore) {
        crate::diag::warn(format_args!("{report}"));
        self.silent_cores.lock().push(report);
    }

    /// Step 1, after the evict's grace period: whether core `core`'s lists
    /// are ours, looking for a while if it is inside a section.
    fn lists_taken(&self, core: usize) -> bool {
        let words = &self.cores[core].turn.own_side;
        let give_up_at = Instant::now() + BUSY_PATIENCE;
        loop {
            match words.look() {
                Look::Taken => return true,
                Look::Busy if Instant::now() >= give_up_at => return false,
                Look::Busy => {
                    crate::platform::wait_for_event(Depth::Light, Some(Instant::now() + BUSY_PATIENCE / 8))
                }
            }
        }
    }

    /// Steps 2 to 5, once core `core`'s lists are ours. Returns how many
    /// tasks moved.
    fn move_work_of(&self, core: usize) -> usize {
        // Resizes run alone, and rebuild the routes; a resize waiting for
        // this very core gives up once it is evicted (`super::resize`).
        while self.resizing.swap(true, SeqCst) {
            crate::platform::wait_for_event(Depth::Light, Some(Instant::now() + BUSY_PATIENCE / 8));
        }
        self.rebuild_routes(Some(core));
        let mut tasks = TaskQueue::new();
        self.close_mailboxes(core, |chains| {
            for chain in chains {
                // SAFETY: closing took the chain, so it is ours.
                unsafe { tasks.append_reversed(chain) };
            }
        });
        // SAFETY: the eviction made the core's lists ours, and nothing
        // else touches them.
        let local = unsafe { self.local(core) };
        tasks.append(&mut local.pinned);
        tasks.append(&mut local.queue);
        self.take_offered(core, &mut tasks);
        let moved = tasks.len();
        while let Some(task) = tasks.pop_front() {
            self.inject(task, None);
        }
        self.end_membership(core);
        self.resizing.store(false, SeqCst);
        moved
    }
}
