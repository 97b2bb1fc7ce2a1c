//! loom model of the inbox schedule flag (src/mailbox/inbox.rs): two pushers
//! each push one task into an idle inbox; whichever push reports that the
//! owner must be scheduled runs the owner right there (drain, then finish,
//! draining again while finish says so).
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_inbox`
//!
//! Checked: the owner never runs in two places at once; every pushed task
//! is drained by the time both pushers are done (no task is stranded in an
//! inbox whose owner is idle); and no pusher schedules an owner that has
//! already drained every task and unscheduled itself. A fibre is such an
//! owner: once its last strand has run and left, it is freed, and
//! scheduling it then is a use after free. The inbox that kept its flag in
//! a second word, swapped after the push, fails this last check.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use roving::loom_api::{Action, BlockCache, Inbox, Task, TaskQueue};
use std::ptr::NonNull;

/// Never called: the model only moves tasks.
unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("the model does not run tasks");
}

const PUSHERS: usize = 2;

struct Owner {
    inbox: Inbox,
    /// Places the owner is running in right now (must stay at most 1).
    running: AtomicUsize,
    drained: AtomicUsize,
    /// Set when the owner unscheduled itself with every task drained.
    retired: AtomicUsize,
}

impl Owner {
    /// What a party that won the schedule does.
    fn run(&self) {
        assert_eq!(self.retired.load(SeqCst), 0, "a pusher scheduled an owner that had retired");
        assert_eq!(self.running.fetch_add(1, SeqCst), 0, "the owner runs in two places at once");
        loop {
            let mut queue = TaskQueue::new();
            // SAFETY: a taken chain belongs to the scheduled owner.
            let taken = unsafe { queue.append_reversed(self.inbox.take_all()) };
            while let Some(task) = queue.pop_front() {
                // SAFETY: made by `Box::leak` below, drained exactly once.
                drop(unsafe { Box::from_raw(task.as_ptr()) });
            }
            self.drained.fetch_add(taken, SeqCst);
            self.running.fetch_sub(1, SeqCst);
            if !self.inbox.finish() {
                if self.drained.load(SeqCst) == PUSHERS {
                    self.retired.store(1, SeqCst);
                }
                return;
            }
            assert_eq!(self.running.fetch_add(1, SeqCst), 0, "the owner runs in two places at once");
        }
    }
}

#[test]
fn no_task_is_stranded_and_the_owner_runs_alone() {
    loom::model(|| {
        let owner = Arc::new(Owner {
            inbox: Inbox::new(),
            running: AtomicUsize::new(0),
            drained: AtomicUsize::new(0),
            retired: AtomicUsize::new(0),
        });
        let pushers: Vec<_> = (0..PUSHERS)
            .map(|_| {
                let owner = owner.clone();
                thread::spawn(move || {
                    let task = NonNull::from(Box::leak(Box::new(Task::new(not_run))));
                    // SAFETY: the task is fresh and ours to give.
                    if unsafe { owner.inbox.push(task) } {
                        owner.run();
                    }
                })
            })
            .collect();
        for pusher in pushers {
            pusher.join().unwrap();
        }
        assert_eq!(owner.drained.load(SeqCst), PUSHERS, "a task was left in an idle inbox");
    });
}
