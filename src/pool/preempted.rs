//! The turns of preempted strands: one FIFO per priority level, served in
//! a fixed weighted round (four turns of `High`, two of `Normal`, one of
//! `Low`), skipping levels with nobody waiting. A level is a strand's
//! `Priority` as a number, 0 the lowest (`crate::strand::Priority`).
//!
//! Bound: a level with turns waiting is served within [`ROUND`]`.len()`
//! takes, so a strand with `k` turns ahead of it at its level gets its turn
//! within `7 (k + 1)` takes of the pool's cores, whatever the other levels
//! hold. Within a level, turns go oldest first.
//!
//! # The waiting count
//!
//! The queues and the round are under one spin lock; nothing is queued or
//! taken without it, so no turn is lost or taken twice. `waiting` is a
//! count kept beside them, changed only under the lock, and read without
//! it by ticks (`any`) and by a take's first look. It is a hint:
//!
//! - Read as 0 while a push is under way, it costs the pushed turn one
//!   look: the reader's core finds it at its next take or its next tick, at
//!   most a slice later, and the pushing core itself looks at its next
//!   take.
//! - Read as more than 0 after the last turn was taken, it costs a lock
//!   and finding the queues empty (`Turn::None`, or the caller's own).
//!
//! So a model of the lock-free part would only check what the lock
//! already gives, and the count's effect is a delay a test can see: with
//! `waiting` never raised, `tests/preempt.rs` hangs (spinners keep their
//! cores, the turns behind them never come).

use crate::atomics::unmodelled::{AtomicUsize, Ordering::SeqCst};
use crate::spin_lock::SpinLock;
use crate::task::Task;
use crate::task::queue::TaskQueue;
use core::ptr::NonNull;

/// How many levels there are.
pub(crate) const LEVELS: usize = 3;

/// The order levels are served in.
const ROUND: [u8; 7] = [2, 2, 2, 2, 1, 1, 0];

/// What the round gave.
pub(crate) enum Turn {
    /// A waiting fibre's turn, taken.
    Other(NonNull<Task>),
    /// The preempted caller's own ([`Preempted::take_beside`]).
    Own,
    /// Nothing waits.
    None,
}

/// Preempted strands' fibres, waiting for their turn (module docs).
pub(crate) struct Preempted {
    levels: SpinLock<Levels>,
    /// How many turns wait, for looks that take no lock.
    waiting: AtomicUsize,
}

struct Levels {
    queues: [TaskQueue; LEVELS],
    /// The next place in [`ROUND`].
    next: usize,
}

impl Preempted {
    pub(crate) fn new() -> Self {
        let queues = [TaskQueue::new(), TaskQueue::new(), TaskQueue::new()];
        Self { levels: SpinLock::new(Levels { queues, next: 0 }), waiting: AtomicUsize::new(0) }
    }

    /// Queues a preempted fibre's task at `level`.
    ///
    /// # Safety
    ///
    /// The task is the caller's to give, and in no list.
    pub(crate) unsafe fn push(&self, task: NonNull<Task>, level: u8) {
        let mut levels = self.levels.lock();
        // SAFETY: per the contract.
        unsafe { levels.queues[usize::from(level).min(LEVELS - 1)].push_back(task) };
        self.waiting.fetch_add(1, SeqCst);
    }

    /// The next turn, by the round (module docs).
    pub(crate) fn take(&self) -> Option<NonNull<Task>> {
        match self.choose(None) {
            Turn::Other(task) => Some(task),
            Turn::Own | Turn::None => None,
        }
    }

    /// The next turn, by the round, for a core whose strand at `level` it
    /// has just preempted: that strand's fibre joins the back of its level
    /// once the core is off its stack, so it counts as waiting there, and
    /// [`Turn::Own`] says the round picked it: the strand goes on.
    pub(crate) fn take_beside(&self, level: u8) -> Turn {
        self.choose(Some(usize::from(level).min(LEVELS - 1)))
    }

    fn choose(&self, own: Option<usize>) -> Turn {
        if self.waiting.load(SeqCst) == 0 {
            return if own.is_some() { Turn::Own } else { Turn::None };
        }
        let mut levels = self.levels.lock();
        let waits = |levels: &Levels, level: usize| levels.queues[level].len() > 0 || own == Some(level);
        let take = |levels: &mut Levels, level: usize| match levels.queues[level].pop_front() {
            Some(task) => {
                self.waiting.fetch_sub(1, SeqCst);
                Turn::Other(task)
            }
            None => Turn::Own,
        };
        let waiting = (0..LEVELS).filter(|&level| waits(&levels, level)).count();
        if waiting == 1 {
            // One level waits (the usual case): no choice to make, and the
            // round stays where it is for when levels compete again.
            let level = (0..LEVELS).find(|&level| waits(&levels, level)).unwrap_or(0);
            return take(&mut levels, level);
        }
        for step in 0..ROUND.len() {
            let place = (levels.next + step) % ROUND.len();
            let level = ROUND[place] as usize;
            if waits(&levels, level) {
                levels.next = (place + 1) % ROUND.len();
                return take(&mut levels, level);
            }
        }
        Turn::None
    }

    /// Whether any turn waits.
    pub(crate) fn any(&self) -> bool {
        self.waiting.load(SeqCst) > 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::Action;
    use crate::task::storage::BlockCache;
    use alloc::vec::Vec;

    /// Never called: the turns only queue tasks.
    unsafe fn never_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
        unreachable!("the turns run nothing")
    }

    /// Tasks that stay where they are (the vector never grows).
    fn tasks(count: usize) -> Vec<Task> {
        (0..count).map(|_| Task::new(never_run)).collect()
    }

    /// One spinner per level on one core, each preemption asking the round
    /// beside the preempted one (which joins its level's back only if
    /// another runs): the levels get the round's weights, so the
    /// preempted strand's own turn counts as one waiting.
    #[test]
    fn a_preempted_strands_own_turn_counts_in_the_round() {
        let turns = Preempted::new();
        let tasks = tasks(3);
        let task = |level: usize| NonNull::from(&tasks[level]);
        // SAFETY: each task is in no list; the test owns them.
        unsafe {
            turns.push(task(0), 0);
            turns.push(task(1), 1);
        }
        let mut running = 2;
        let mut runs = [0u32; LEVELS];
        for _ in 0..700 {
            match turns.take_beside(running as u8) {
                Turn::Own => {}
                Turn::Other(next) => {
                    // SAFETY: the preempted one is in no list now.
                    unsafe { turns.push(task(running), running as u8) };
                    running = (0..LEVELS).find(|&level| task(level) == next).expect("one of ours");
                }
                Turn::None => panic!("three spinners, and nothing waits"),
            }
            runs[running] += 1;
        }
        assert_eq!(runs, [100, 200, 400], "Low, Normal, High by the round's weights");
    }

    #[test]
    fn alone_a_preempted_strand_goes_on_and_others_come_first_at_its_level() {
        let turns = Preempted::new();
        assert!(matches!(turns.take_beside(1), Turn::Own));
        assert!(turns.take().is_none());
        let tasks = tasks(1);
        let waiting = NonNull::from(&tasks[0]);
        // SAFETY: in no list; the test owns it.
        unsafe { turns.push(waiting, 1) };
        assert!(matches!(turns.take_beside(1), Turn::Other(task) if task == waiting), "the older turn first");
        assert!(!turns.any());
    }
}
