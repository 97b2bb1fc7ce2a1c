//! loom model of an async task's state word (src/protocol/async_state.rs): a
//! core polls the task whenever it takes it from its queue, while wakers
//! and a cancel race it from other threads.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_task`
//!
//! Checked: two polls never overlap; no wake is lost (the last poll
//! started after every wake, unless the task finished); a wake during a
//! poll causes one more poll and wakes never cause more polls than there
//! are wakes; nothing is queued after completion; a cancel always ends
//! the task; the task is freed exactly once, after its last user.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;
use roving::loom_api::{AfterPending, AsyncState, TaskStart, TaskWake};

/// Never ready: the future only ends by a cancel.
const NEVER: usize = usize::MAX;

struct Model {
    state: AsyncState,
    /// Queued runs of the task (each owns a reference).
    queue: Mutex<usize>,
    /// The poll that returns `Ready` (1 = the first).
    ready_at: usize,
    polls: AtomicUsize,
    wakes: AtomicUsize,
    /// How many wakes the last poll to start had seen.
    last_seen: AtomicUsize,
    in_poll: AtomicBool,
    done: AtomicBool,
    cancelled: AtomicBool,
    freed: AtomicBool,
}

impl Model {
    /// A task queued for its first poll, with a handle and `wakers` wakers.
    fn new(ready_at: usize, wakers: usize) -> Arc<Self> {
        Arc::new(Self {
            state: AsyncState::new(2 + wakers),
            queue: Mutex::new(1),
            ready_at,
            polls: AtomicUsize::new(0),
            wakes: AtomicUsize::new(0),
            last_seen: AtomicUsize::new(0),
            in_poll: AtomicBool::new(false),
            done: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            freed: AtomicBool::new(false),
        })
    }

    fn live(&self) {
        assert!(!self.freed.load(SeqCst), "a task used after it was freed");
    }

    fn release(&self) {
        self.live();
        if self.state.release() {
            assert!(!self.freed.swap(true, SeqCst), "a task freed twice");
        }
    }

    fn queue(&self) {
        assert!(!self.done.load(SeqCst), "a finished task was queued");
        *self.queue.lock().unwrap() += 1;
    }

    fn wake(&self) {
        self.live();
        self.wakes.fetch_add(1, SeqCst);
        if self.state.wake() == TaskWake::Queue {
            self.queue();
        }
    }

    fn cancel(&self) {
        self.live();
        self.cancelled.store(true, SeqCst);
        if self.state.cancel() == TaskWake::Queue {
            self.queue();
        }
    }

    fn complete(&self) {
        let _ = self.state.complete();
        assert!(!self.done.swap(true, SeqCst), "completed twice");
    }

    /// Takes one queued run and does it, as a core would. False if none.
    fn run_one(&self) -> bool {
        {
            let mut queue = self.queue.lock().unwrap();
            if *queue == 0 {
                return false;
            }
            *queue -= 1;
        }
        self.live();
        if self.state.start_poll() == TaskStart::Cancelled {
            self.complete();
            self.release();
            return true;
        }
        assert!(!self.in_poll.swap(true, SeqCst), "two polls at once");
        let poll = self.polls.fetch_add(1, SeqCst) + 1;
        self.last_seen.store(self.wakes.load(SeqCst), SeqCst);
        self.in_poll.store(false, SeqCst);
        if poll == self.ready_at {
            self.complete();
            self.release();
            return true;
        }
        match self.state.end_pending() {
            AfterPending::Idle => self.release(),
            AfterPending::Requeue => self.queue(),
            AfterPending::Cancelled => {
                self.complete();
                self.release();
            }
        }
        true
    }

    fn drain(&self) {
        while self.run_one() {}
    }

    /// After everyone is done: drain, check, and drop the handle.
    fn finish(&self) {
        self.drain();
        let done = self.done.load(SeqCst);
        if !done {
            assert_eq!(
                self.last_seen.load(SeqCst),
                self.wakes.load(SeqCst),
                "a wake was lost after {} polls",
                self.polls.load(SeqCst)
            );
        }
        if self.cancelled.load(SeqCst) {
            assert!(done, "a cancelled task was not ended");
        }
        assert!(self.polls.load(SeqCst) <= 1 + self.wakes.load(SeqCst), "more polls than wakes");
        let _ = self.state.drop_handle();
        self.release();
        assert!(self.freed.load(SeqCst), "the last reference did not free the task");
    }
}

/// A thread that wakes the task once, then drops its waker.
fn waker_thread(model: &Arc<Model>) -> thread::JoinHandle<()> {
    let model = model.clone();
    thread::spawn(move || {
        model.wake();
        model.release();
    })
}

fn core_thread(model: &Arc<Model>) -> thread::JoinHandle<()> {
    let model = model.clone();
    thread::spawn(move || {
        model.run_one();
        model.run_one();
    })
}

#[test]
fn a_wake_during_a_poll_is_not_lost() {
    loom::model(|| {
        let model = Model::new(NEVER, 1);
        let core = core_thread(&model);
        let woke = waker_thread(&model);
        core.join().unwrap();
        woke.join().unwrap();
        model.finish();
    });
}

#[test]
fn a_wake_after_completion_does_nothing() {
    loom::model(|| {
        let model = Model::new(1, 1);
        let core = core_thread(&model);
        let woke = waker_thread(&model);
        core.join().unwrap();
        woke.join().unwrap();
        model.finish();
        assert_eq!(model.polls.load(SeqCst), 1);
    });
}

#[test]
fn wakes_from_two_cores_at_once() {
    loom::model(|| {
        let model = Model::new(2, 2);
        let core = core_thread(&model);
        let wakers: Vec<_> = (0..2).map(|_| waker_thread(&model)).collect();
        core.join().unwrap();
        wakers.into_iter().for_each(|w| w.join().unwrap());
        model.finish();
    });
}

#[test]
fn a_cancel_racing_a_wake_ends_the_task() {
    loom::model(|| {
        let model = Model::new(NEVER, 1);
        let core = core_thread(&model);
        let woke = waker_thread(&model);
        model.cancel();
        core.join().unwrap();
        woke.join().unwrap();
        model.finish();
    });
}
