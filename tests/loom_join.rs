//! loom model of the fork-join hand-off (src/protocol/join_frame.rs): an owner
//! publishes a job in a slot and later settles it, while a thief may take
//! it. The owner either takes it back and runs it, or asks to be rung and
//! blocks on its doorbell (modelled by `loom::sync::Notify`, which keeps a
//! ring that comes before the wait, as the doorbell does).
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_join`
//!
//! Checked: the job runs exactly once; an owner that sees it ended sees
//! its result (loom's cell checks the hand-over is ordered); an owner
//! that blocks is always rung (a lost ring would deadlock the model).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Notify};
use loom::thread;
use roving::loom_api::{Action, BlockCache, JOB_DONE, JoinFrame, JoinSlot, Task, WakeOwner};
use std::ptr::NonNull;

#[repr(C)]
struct Job {
    frame: JoinFrame,
    result: UnsafeCell<u32>,
    runs: AtomicUsize,
    /// The owner's doorbell.
    bell: Notify,
}

/// What a thief runs: stores the result, then ends the job.
unsafe fn run(task: NonNull<Task>, action: Action, _: NonNull<BlockCache>) {
    assert_eq!(action, Action::Run);
    let job = task.cast::<Job>();
    // SAFETY: the model's job lives in an `Arc` held by both threads.
    let job_ref = unsafe { job.as_ref() };
    job_ref.runs.fetch_add(1, SeqCst);
    job_ref.result.with_mut(|result| unsafe { *result = 42 });
    // SAFETY: taken from the slot; the result is stored.
    let ring = unsafe { JoinFrame::end(job.cast(), JOB_DONE) };
    if let WakeOwner(Some(core)) = ring {
        assert_eq!(core, 0, "the owner waits on core 0");
        // The owner may be gone once the job ended; the model keeps it in
        // an `Arc`, which stands for the doorbell outliving the job.
        job_ref.bell.notify();
    }
}

unsafe fn fail(_: NonNull<JoinFrame>, _: &()) {
    unreachable!("nothing fails in the model");
}

unsafe fn failures(_: NonNull<JoinFrame>) -> usize {
    0
}

#[test]
fn a_published_job_runs_once_and_its_owner_is_never_left_waiting() {
    loom::model(|| {
        let job = Arc::new(Job {
            frame: JoinFrame::new(run, fail, failures),
            result: UnsafeCell::new(0),
            runs: AtomicUsize::new(0),
            bell: Notify::new(),
        });
        let slot = Arc::new(JoinSlot::new());
        let frame = NonNull::from(&job.frame);
        job.frame.mark_published(0);
        // SAFETY: the job outlives both threads (an `Arc` each).
        assert!(unsafe { slot.publish(frame) });

        let thief = {
            let (slot, job) = (slot.clone(), job.clone());
            thread::spawn(move || {
                if let Some(taken) = slot.take() {
                    assert_eq!(taken, NonNull::from(&job.frame));
                    // SAFETY: taken from the slot.
                    unsafe { JoinFrame::call(taken, Action::Run) };
                }
            })
        };

        if slot.take_back(frame) {
            // Ours again: the owner runs it inline.
            job.runs.fetch_add(1, SeqCst);
        } else {
            loop {
                if job.frame.state() == JOB_DONE {
                    break;
                }
                if job.frame.wait_on(0).is_some() {
                    break;
                }
                job.bell.wait();
            }
            assert_eq!(job.result.with(|result| unsafe { *result }), 42);
        }
        thief.join().unwrap();
        assert_eq!(job.runs.load(SeqCst), 1, "the job ran exactly once");
    });
}
