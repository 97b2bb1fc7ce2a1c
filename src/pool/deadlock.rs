//! Deadlock: a pool whose strands all wait for each other.
//!
//! # When a pool is deadlocked
//!
//! The last core of a pool to fall asleep checks for quiescence
//! (`Shared::check_quiescence`). If it finds every core asleep, every
//! list empty and no outside post in flight, but strands still live and
//! no deadline armed in the timer heap, nothing in the pool can ever wake
//! them: only code outside the pool could. A pool that stops when
//! quiescent ([`Config::stop_when_quiescent`](super::Config::stop_when_quiescent),
//! the default) already assumes nothing outside will post to it, so it
//! treats this as a deadlock. A pool built not to stop when quiescent is
//! fed from outside (interrupt handlers, other threads) and is never
//! called deadlocked; it can report a quiet spell that lasts, instead
//! ([`Config::report_quiet_after`](super::Config::report_quiet_after),
//! `quiet.rs`). Nor is a pool while another pool holds a core of the
//! machine: that pool's strands may set what these wait for (a strand
//! joining a strand of another pool is the common case). Unless the
//! strands of the machine's pools wait on each other in a ring, which
//! nothing but a cancel can break: `across.rs` finds and reports that. Nor is any pool while an interrupt
//! handler that may wake strands is bound
//! ([`platform::interrupts_bound`](crate::platform::interrupts_bound)), or
//! while a strand waits on a [`Signal`](crate::sync::Signal): the device
//! may yet release what they wait for.
//!
//! # What happens then
//!
//! The checking core posts a task that runs on a woken core, outside the
//! sleep protocol. It checks again that nothing has run since, then walks
//! the strands of the pool (its entries and their subtrees) and lists
//! every blocked one: what it waits for and, for a mutex, which strand
//! holds it ([`Deadlock`]). Then, as [`OnDeadlock`] says:
//!
//! - [`OnDeadlock::Fail`] (the default): the report becomes the pool's
//!   failure, with [`FailureKind::Deadlock`](crate::strand::FailureKind::Deadlock),
//!   and every strand of the pool is cancelled, so their waits return
//!   [`Interrupted`](crate::strand::WaitError::Interrupted), they end, and
//!   their fibres are given back; the pool then stops at quiescence and
//!   [`Pool::run`](super::Pool::run) returns the deadlock. If the strands
//!   deadlock again while cancelled (shielded waits), the pool stops at
//!   once and they are abandoned.
//! - [`OnDeadlock::Wait`]: the report is kept ([`Pool::deadlock`](super::Pool::deadlock)),
//!   printed on the host, and the pool keeps waiting.
//!
//! A strand that locks a mutex it already holds is refused at once with
//! [`WaitError::WouldDeadlock`](crate::strand::WaitError::WouldDeadlock),
//! in every build.

mod across;

use super::failure::Failure;
use super::shared::Shared;
use crate::atomics::unmodelled::Ordering::SeqCst;
use crate::strand::id::{BlockReason, Priority, StrandId};
use crate::task::{self, IntoTask};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

/// What a pool does when it finds its strands deadlocked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDeadlock {
    /// Fail the pool with the report (its root's run returns it) and
    /// cancel every strand so they end.
    #[default]
    Fail,
    /// Keep the report and keep waiting.
    Wait,
}

/// A deadlocked pool's strands and async tasks: who waits on what.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deadlock {
    /// Every blocked strand of the pool, in the order the tree was walked
    /// (entries first, each before its children).
    pub waiting: Vec<Waiter>,
    /// Async tasks of the pool waiting for a wake that nothing left in the
    /// pool can give ([`crate::executor`]).
    pub tasks: usize,
    /// Set for the report of a pool that does not stop when quiescent
    /// ([`Config::report_quiet_after`](super::Config::report_quiet_after)):
    /// how long it had been quiet. Code outside the pool may yet wake its
    /// strands, so it is not proven deadlocked.
    pub quiet_for: Option<core::time::Duration>,
    /// How many pools the strands belong to: more than one for a deadlock
    /// that spans pools (`across.rs`), whose report every one of them gets.
    pub pools: usize,
    /// Strands that wait on each other in a ring, each for the next (to
    /// join it, or for a mutex it holds), the first again after the last:
    /// empty if the walk found no such ring.
    pub cycle: Vec<StrandId>,
}

/// One blocked strand of a [`Deadlock`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// The strand.
    pub strand: StrandId,
    /// What kind of wait it is in.
    pub reason: BlockReason,
    /// The address of what it waits for (a mutex, a queue, the strand it
    /// joins), or 0 if the wait names nothing.
    pub object: usize,
    /// For a mutex: the strand holding it, if a strand does.
    pub holder: Option<StrandId>,
    /// For a join: the strand it waits to finish.
    pub joins: Option<StrandId>,
    /// The index of the fibre it lives on.
    pub fibre: usize,
    /// Whether its stack is in its fibre's stack; if not, another strand
    /// of the fibre is resident and this one's stack is copied out.
    pub resident: bool,
    /// Its priority.
    pub priority: Priority,
}

impl fmt::Display for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_wait(f)?;
        self.write_place(f)
    }
}

impl Waiter {
    /// The end of the strand's line in a report: its fibre, whether its
    /// stack is there, and its priority.
    pub(crate) fn write_place(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stack = if self.resident { "resident" } else { "copied out" };
        write!(f, "; fibre {}, {stack}; priority {:?}", self.fibre, self.priority)
    }

    /// `strand #N waits ...`: what the strand waits for, in words.
    pub(crate) fn write_wait(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "strand {} ", self.strand)?;
        match self.reason {
            BlockReason::Mutex => {
                write!(f, "waits for the mutex at {:#x}", self.object)?;
                match self.holder {
                    Some(holder) => write!(f, ", held by strand {holder}"),
                    None => write!(f, ", held by no strand (a task, or code outside the pool)"),
                }
            }
            BlockReason::Join => match self.joins {
                Some(target) => write!(f, "waits to join strand {target}"),
                None => write!(f, "waits to join a strand"),
            },
            BlockReason::Scope => write!(f, "waits for the strands of a scope to end"),
            reason if self.object != 0 => write!(f, "waits ({reason:?}) on the object at {:#x}", self.object),
            reason => write!(f, "waits ({reason:?})"),
        }
    }
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.quiet_for, self.pools) {
            (Some(period), _) => write!(f, "quiet for {period:?} (code outside the pool may yet wake it): ")?,
            (None, 0 | 1) => f.write_str("deadlock: ")?,
            (None, pools) => write!(f, "deadlock across {pools} pools: ")?,
        }
        let cores = if self.pools > 1 { "every core of each pool is" } else { "every core of the pool is" };
        write!(f, "{cores} asleep, no deadline is armed, and {} strands wait", self.waiting.len())?;
        if self.tasks > 0 {
            write!(f, " (and {} async tasks wait for a wake)", self.tasks)?;
        }
        f.write_str(":")?;
        for waiter in &self.waiting {
            write!(f, "\n  {waiter}")?;
        }
        if let Some(first) = self.cycle.first() {
            f.write_str("\n  each waits for the next: ")?;
            for strand in &self.cycle {
                write!(f, "strand {strand} -> ")?;
            }
            write!(f, "strand {first}")?;
        }
        Ok(())
    }
}

impl Deadlock {
    /// The blocked strands of `shared` (walking its entries' subtrees) and
    /// its async tasks waiting for a wake.
    pub(crate) fn of(shared: &Shared) -> Self {
        let waiting = shared.strands.waiting();
        let cycle = across::cycle_in(&waiting);
        Self { waiting, tasks: shared.async_tasks.count(), quiet_for: None, pools: 1, cycle }
    }
}

impl Shared {
    /// Posts the deadlock check as a task, from the sleeping core that
    /// found the pool stuck: it runs on a woken core, outside the sleep
    /// protocol. Without memory for it, the pool stays as it is.
    pub(super) fn post_deadlock_check(&self) {
        let Some(shared) = self.this.upgrade() else { return };
        match task::closure::Closure(move || shared.handle_deadlock()).into_task(None) {
            Ok(task) => self.inject(task, None),
            Err(_) => self.deadlock_pending.store(false, SeqCst),
        }
    }

    /// The deadlock check itself (`super::deadlock`): runs as a task on a
    /// core of the pool.
    pub(super) fn handle_deadlock(&self) {
        let stuck = self.still(1) && !super::core_owners::another_pool_runs(self.slots, self);
        let report = if stuck { Deadlock::of(self) } else { Deadlock::default() };
        // A strand that began to wait for a signal as the check started.
        let outside = report.waiting.iter().any(|w| w.reason == crate::strand::id::BlockReason::Signal);
        if (report.waiting.is_empty() && report.tasks == 0) || outside {
            // Something moved meanwhile, or no strand could be described.
            self.deadlock_pending.store(false, SeqCst);
            return;
        }
        self.act_on_deadlock(report);
    }

    /// Reports `report`, keeps it, and fails the pool with it or keeps
    /// waiting, as the pool's [`OnDeadlock`] says.
    fn act_on_deadlock(&self, report: Deadlock) {
        match self.config.on_deadlock {
            OnDeadlock::Fail => crate::diag::error(format_args!("{report}; the pool fails")),
            OnDeadlock::Wait => crate::diag::warn(format_args!("{report}; the pool waits")),
        }
        *self.deadlock.lock() = Some(report.clone());
        if self.config.on_deadlock == OnDeadlock::Wait {
            // Reported once; `deadlock_pending` stays set.
            return;
        }
        Failure::keep(&mut self.failure.lock(), Box::new(Failure::deadlocked(report)));
        if self.deadlocks_failed.fetch_add(1, SeqCst) == 0 {
            // Cancel everything so the strands end and give their fibres
            // back; the pool stops at quiescence with the deadlock kept.
            self.closing.store(true, SeqCst);
            self.deadlock_pending.store(false, SeqCst);
            self.strands.cancel_all();
            self.async_tasks.cancel_all();
        } else {
            // Deadlocked again while cancelled (shielded waits): give up.
            self.stop();
        }
    }
}
