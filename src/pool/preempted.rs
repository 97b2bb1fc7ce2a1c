//! The turns of preempted strands: one FIFO per priority level, served in
//! a fixed weighted round (four turns of `High`, two of `Normal`, one of
//! `Low`), skipping levels with nobody waiting. A level is a strand's
//! `Priority` as a number, 0 the lowest (`crate::strand::Priority`).
//!
//! Bound: a level with turns waiting is served within [`ROUND`]`.len()`
//! takes, so a strand with `k` turns ahead of it at its level gets its turn
//! within `7 (k + 1)` takes of the pool's cores, whatever the other levels
//! hold. Within a level, turns go oldest first.

use crate::atomics::unmodelled::{AtomicUsize, Ordering::SeqCst};
use crate::spin_lock::SpinLock;
use crate::task::Task;
use crate::task::queue::TaskQueue;
use core::ptr::NonNull;

/// How many levels there are.
pub(crate) const LEVELS: usize = 3;

/// The order levels are served in.
const ROUND: [u8; 7] = [2, 2, 2, 2, 1, 1, 0];

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
        if self.waiting.load(SeqCst) == 0 {
            return None;
        }
        let mut levels = self.levels.lock();
        let waiting = levels.queues.iter().map(|queue| usize::from(queue.len() > 0)).sum::<usize>();
        if waiting == 1 {
            // One level waits (the usual case): no choice to make, and the
            // round stays where it is for when levels compete again.
            let queue = levels.queues.iter_mut().find(|queue| queue.len() > 0)?;
            let task = queue.pop_front();
            self.waiting.fetch_sub(1, SeqCst);
            return task;
        }
        for step in 0..ROUND.len() {
            let place = (levels.next + step) % ROUND.len();
            if let Some(task) = levels.queues[ROUND[place] as usize].pop_front() {
                levels.next = (place + 1) % ROUND.len();
                self.waiting.fetch_sub(1, SeqCst);
                return Some(task);
            }
        }
        None
    }

    /// Whether any turn waits.
    pub(crate) fn any(&self) -> bool {
        self.waiting.load(SeqCst) > 0
    }
}
