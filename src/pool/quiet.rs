//! The quiet-period report of a pool that does not stop when quiescent.
//!
//! Such a pool is fed from outside (interrupt handlers, other threads), so
//! strands that all wait while its cores sleep are not a deadlock it can
//! prove: a handler may yet set what they wait for. But a pool that stays
//! that way for long is usually stuck, and says nothing. With
//! [`Config::report_quiet_after`](super::Config::report_quiet_after) it
//! reports them once the quiet has lasted that long.
//!
//! # The rule
//!
//! A *quiet spell* begins when the last core of the pool commits to sleep
//! and finds every core asleep, nothing queued, no deadline armed, and
//! strands or async tasks alive (so they all wait). That core becomes the
//! spell's watcher and sleeps until the period is over; the spell records
//! how many times the pool's cores have gone to sleep so far. A core that
//! wakes for anything, and sleeps again, adds one: the spell is then over,
//! whatever the watcher finds, and the next last sleeper begins a new one
//! (it takes the watch over). When the watcher wakes at the end of the
//! period and the count has not moved, it posts the check as a task, which
//! looks again on a woken core, outside the sleep protocol (waking for it
//! adds no sleep), and reports: a [`Deadlock`](super::Deadlock) with
//! `quiet_for` set, kept for [`Pool::deadlock`](super::Pool::deadlock) and
//! printed as a warning. The pool goes on as before; it never fails or
//! stops for it.
//!
//! The check's own core sleeps once more afterwards; a spell whose count
//! is the reported one plus that one is the same spell, and is not
//! reported again. So a pool reports each quiet spell once (twice at most
//! if the check woke two cores).

use super::deadlock::Deadlock;
use super::shared::Shared;
use crate::atomics::unmodelled::Ordering::Relaxed;
use crate::platform::instant::Instant;
use crate::spin_lock::SpinLock;
use crate::task::{self, IntoTask};
use core::time::Duration;

/// A pool's quiet spell, if one is being watched.
pub(super) struct QuietWatch(SpinLock<Spell>);

#[derive(Clone, Copy)]
struct Spell {
    /// The watching core, if a spell is being watched.
    watcher: Option<usize>,
    /// When the watcher wakes to check.
    ends: Option<Instant>,
    /// The pool's sleeps when the spell began.
    sleeps: u64,
    /// The sleeps of the last spell reported, plus one for its check's core.
    reported: Option<u64>,
}

impl QuietWatch {
    pub(super) const fn new() -> Self {
        Self(SpinLock::new(Spell { watcher: None, ends: None, sleeps: 0, reported: None }))
    }
}

impl Shared {
    /// Times the pool's cores have gone to sleep.
    fn sleeps(&self) -> u64 {
        self.cores.iter().map(|core| core.stats.sleeps.load(Relaxed)).sum()
    }

    /// Called by core `me` once it has committed to sleep: if the pool
    /// reports quiet spells and is in one now, `me` watches it.
    #[inline]
    pub(super) fn begin_quiet_watch(&self, me: usize) {
        if let Some(period) = self.config.quiet_report {
            self.begin_quiet_watch_of(me, period);
        }
    }

    #[cold]
    fn begin_quiet_watch_of(&self, me: usize, period: Duration) {
        if self.config.stop_when_quiescent || !self.still(0) {
            return;
        }
        let sleeps = self.sleeps();
        let mut spell = self.quiet_watch.0.lock();
        if spell.reported == Some(sleeps) {
            return;
        }
        spell.watcher = Some(me);
        spell.ends = Some(Instant::now() + period);
        spell.sleeps = sleeps;
    }

    /// When core `me`, asleep, must wake to end the quiet spell it
    /// watches, if it watches one.
    #[inline]
    pub(super) fn quiet_deadline(&self, me: usize) -> Option<Instant> {
        self.config.quiet_report?;
        self.quiet_deadline_of(me)
    }

    #[cold]
    fn quiet_deadline_of(&self, me: usize) -> Option<Instant> {
        let spell = self.quiet_watch.0.lock();
        if spell.watcher == Some(me) { spell.ends } else { None }
    }

    /// Called by core `me` after each wait of its sleep: if the spell it
    /// watches is over, posts its check.
    #[inline]
    pub(super) fn quiet_woke(&self, me: usize) {
        if let Some(period) = self.config.quiet_report {
            self.quiet_woke_of(me, period);
        }
    }

    #[cold]
    fn quiet_woke_of(&self, me: usize, period: Duration) {
        let sleeps = {
            let mut spell = self.quiet_watch.0.lock();
            if spell.watcher != Some(me) || spell.ends.is_none_or(|ends| Instant::now() < ends) {
                return;
            }
            spell.watcher = None;
            spell.ends = None;
            spell.sleeps
        };
        if self.sleeps() != sleeps || !self.still(0) {
            return;
        }
        let Some(shared) = self.this.upgrade() else { return };
        // Without memory for the check, this spell goes unreported.
        if let Ok(task) = task::closure::Closure(move || shared.report_quiet(sleeps, period)).into_task(None)
        {
            self.inject(task, None);
        }
    }

    /// The check itself: runs as a task on a core of the pool that woke
    /// for it, so every other core sleeps.
    fn report_quiet(&self, sleeps: u64, period: Duration) {
        if !self.still(1) || self.sleeps() != sleeps {
            return;
        }
        let mut report = Deadlock::of(self);
        if report.waiting.is_empty() && report.tasks == 0 {
            return;
        }
        report.quiet_for = Some(period);
        crate::diag::warn(format_args!("{report}"));
        self.quiet_watch.0.lock().reported = Some(sleeps + 1);
        *self.deadlock.lock() = Some(report);
    }
}
