//! Tasks that say who sent them, to whom, and in what order: what the
//! mesh's tests and simulator send, and the ledger that checks their
//! delivery.

use super::*;

#[repr(C)]
struct Stamped {
    task: Task,
    stamp: Stamp,
}

/// Who sent a message, to whom, and its place in the sender's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) seq: usize,
}

unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("mesh tests only move tasks");
}

pub(crate) fn stamped(from: usize, to: usize, seq: usize) -> NonNull<Task> {
    NonNull::from(Box::leak(Box::new(Stamped { task: Task::new(not_run), stamp: Stamp { from, to, seq } })))
        .cast()
}

/// Takes a delivered task back.
pub(crate) fn unstamp(task: NonNull<Task>) -> Stamp {
    // SAFETY: made by `stamped` from a leaked box, delivered once.
    unsafe { Box::from_raw(task.cast::<Stamped>().as_ptr()) }.stamp
}

/// What the cores received: counts messages delivered to the wrong
/// core, twice, or before one sent earlier by the same sender to the
/// same receiver.
pub(crate) struct Ledger {
    cores: usize,
    /// Next sequence number expected, by (receiver, sender).
    next: Vec<usize>,
    pub(crate) received: usize,
    pub(crate) misdelivered: usize,
    /// Delivered again, or after a later one (the sequence went back).
    pub(crate) duplicated: usize,
    /// Delivered before an earlier one (the sequence skipped).
    pub(crate) overtaking: usize,
}

impl Ledger {
    pub(crate) fn new(cores: usize) -> Self {
        Self {
            cores,
            next: vec![0; cores * cores],
            received: 0,
            misdelivered: 0,
            duplicated: 0,
            overtaking: 0,
        }
    }

    pub(crate) fn receive(&mut self, me: usize, task: NonNull<Task>) {
        let stamp = unstamp(task);
        self.received += 1;
        if stamp.to != me {
            self.misdelivered += 1;
            return;
        }
        let next = &mut self.next[me * self.cores + stamp.from];
        match stamp.seq.cmp(next) {
            core::cmp::Ordering::Less => self.duplicated += 1,
            core::cmp::Ordering::Greater => self.overtaking += 1,
            core::cmp::Ordering::Equal => {}
        }
        *next = (*next).max(stamp.seq + 1);
    }

    /// Drains every core of `mesh` once, in turn, into this ledger.
    ///
    /// # Safety
    ///
    /// The calling thread alone plays every core of `mesh`.
    pub(crate) unsafe fn drain_each(&mut self, mesh: &Mesh) -> DrainCounts {
        let mut total = DrainCounts::default();
        for me in 0..mesh.topology().cores() {
            // SAFETY: the caller plays every core, one at a time.
            total += unsafe { mesh.drain(me, |task| self.receive(me, task), |_| {}) };
        }
        total
    }

    /// Messages from `from` that `to` received, if all came in order.
    pub(crate) fn count(&self, from: usize, to: usize) -> usize {
        self.next[to * self.cores + from]
    }

    /// Fails unless exactly `sent` messages came, each once, to its
    /// receiver, in its sender's order.
    pub(crate) fn check(&self, sent: usize, what: &str) {
        assert_eq!(
            (self.received, self.misdelivered, self.duplicated, self.overtaking),
            (sent, 0, 0, 0),
            "{what}: (received, misdelivered, duplicated, overtaking) of {sent} sent"
        );
    }
}
