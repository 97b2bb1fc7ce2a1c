//! loom model of a core's LIFO slot (src/protocol/lifo_slot.rs): the owner puts a
//! task, puts a second one (displacing the first into its own queue), and
//! takes what is left, while a thief looks twice and steals a task it saw
//! on both looks.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_lifo`
//!
//! Checked: every task is run exactly once, by the owner or the thief, and
//! the thief sees what the owner wrote into a task before putting it. A
//! slot whose put stored the new task without returning the displaced one
//! loses a task; one whose take loaded and then stored null runs a task
//! twice; both fail here.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use roving::loom_api::{Action, BlockCache, LifoSlot, Task};
use std::ptr::NonNull;

/// Never called: the model only moves tasks.
unsafe fn not_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
    unreachable!("the model does not run tasks");
}

/// A task with a payload the owner writes before putting it.
#[repr(C)]
struct Job {
    task: Task,
    payload: loom::cell::UnsafeCell<usize>,
}

const TASKS: usize = 2;

struct Model {
    slot: LifoSlot,
    /// Bit `i` set once task `i` ran.
    ran: AtomicUsize,
    /// Each task's address, recorded before it is put.
    jobs: [AtomicUsize; TASKS],
}

impl Model {
    /// Runs a task taken from the slot: counts it once, by its address (a
    /// task taken twice must not be read or freed twice), then checks the
    /// payload the owner wrote.
    fn run(&self, task: NonNull<Task>) {
        let index = self.jobs.iter().position(|job| job.load(SeqCst) == task.as_ptr() as usize);
        let index = index.expect("a task the owner made");
        let bit = 1 << index;
        assert_eq!(self.ran.fetch_or(bit, SeqCst) & bit, 0, "task {index} ran twice");
        // SAFETY: made by `make` and leaked; the first to count it owns it.
        let job = unsafe { Box::from_raw(task.as_ptr().cast::<Job>()) };
        // SAFETY: the owner's write happened before its put, which the
        // taker's acquire synchronises with.
        assert_eq!(job.payload.with(|payload| unsafe { *payload }), index, "a task's contents were not seen");
    }
}

fn make(model: &Model, index: usize) -> NonNull<Task> {
    let job = Box::leak(Box::new(Job { task: Task::new(not_run), payload: loom::cell::UnsafeCell::new(0) }));
    // SAFETY: the job is new and ours alone.
    job.payload.with_mut(|payload| unsafe { *payload = index });
    let task = NonNull::from(job).cast::<Task>();
    model.jobs[index].store(task.as_ptr() as usize, SeqCst);
    task
}

#[test]
fn every_task_in_the_slot_runs_once() {
    loom::model(|| {
        let model = Arc::new(Model {
            slot: LifoSlot::new(),
            ran: AtomicUsize::new(0),
            jobs: [AtomicUsize::new(0), AtomicUsize::new(0)],
        });
        let thief = {
            let model = model.clone();
            thread::spawn(move || {
                let first = model.slot.peek();
                let second = model.slot.peek();
                if let Some(seen) = first
                    && second == first
                    && let Some(task) = model.slot.steal_if_seen(seen)
                {
                    model.run(task);
                }
            })
        };
        for index in 0..TASKS {
            // SAFETY: this thread is the slot's owner; the task is new.
            if let Some(displaced) = unsafe { model.slot.put(make(&model, index)) } {
                // Into the owner's queue, which this model runs at once.
                model.run(displaced);
            }
        }
        if let Some(task) = model.slot.take() {
            model.run(task);
        }
        thief.join().unwrap();
        assert_eq!(model.ran.load(SeqCst), (1 << TASKS) - 1, "a task was lost");
    });
}
