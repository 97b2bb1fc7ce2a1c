//! Async tasks, shared by the host tests (`tests/executor.rs`) and the
//! QEMU kernel `tasks`. Only `core`, `alloc` and roving: it builds for bare
//! metal. Run from a strand of a pool of at least `cores` cores.
#![allow(dead_code)]

extern crate alloc;

use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use core::task::{Context, Poll, Waker};
use roving::executor::{self, TaskError};
use roving::{Pool, platform};

fn here() -> usize {
    platform::current_core().expect("a core of the pool")
}

/// About `spin` short steps of work the optimiser cannot remove.
pub fn busy(spin: u32) {
    let mut sum = 0u64;
    for step in 0..spin {
        sum = core::hint::black_box(sum.wrapping_add(u64::from(step)));
    }
    core::hint::black_box(sum);
}

/// The cores that ran a part of a burst (one flag per core, 64 at most),
/// and the work each part does until the burst has reached a second core.
pub struct Seen {
    cores: [AtomicBool; 64],
    count: AtomicUsize,
    spin: u32,
}

impl Seen {
    /// A burst whose parts each do `spin` steps of [`busy`] work until it
    /// has run on two cores, and none after: `spin` bounds how long the
    /// burst lasts on one core (how long it gives the others to take a
    /// part) without making it that long when they do.
    pub fn new(spin: u32) -> Arc<Self> {
        Arc::new(Self { cores: [const { AtomicBool::new(false) }; 64], count: AtomicUsize::new(0), spin })
    }

    /// Marks the calling core, then does the part's work.
    pub fn part(&self) {
        if !self.cores[here() % 64].swap(true, SeqCst) {
            self.count.fetch_add(1, SeqCst);
        }
        if self.count.load(SeqCst) < 2 {
            busy(self.spin);
        }
    }

    /// How many cores ran a part.
    pub fn count(&self) -> usize {
        self.count.load(SeqCst)
    }
}

/// `tasks` tasks, each yielding `yields` times, spawned from this strand
/// and joined from it, each poll a part of a burst of [`Seen`] with `spin`.
/// Returns the sum of what they return (`i` each) and how many distinct
/// cores polled them.
pub fn many_tasks(tasks: u64, yields: usize, spin: u32) -> (u64, usize) {
    let seen = Seen::new(spin);
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let seen = seen.clone();
            executor::spawn_async(async move {
                for _ in 0..yields {
                    seen.part();
                    executor::yield_now().await;
                }
                seen.part();
                i
            })
            .expect("a running pool takes tasks")
        })
        .collect();
    let sum = handles.into_iter().map(|h| h.join().expect("the task returns")).sum();
    (sum, seen.count())
}

/// A future that, on its first poll, wakes itself `wakes` times and
/// returns `Pending`; ready on the next. Counts its polls.
pub struct WakesItself {
    pub wakes: usize,
    pub polls: Arc<AtomicUsize>,
}

impl Future for WakesItself {
    type Output = ();
    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.polls.fetch_add(1, SeqCst) > 0 {
            return Poll::Ready(());
        }
        for _ in 0..self.wakes {
            context.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

/// Wakes during a poll cause exactly one more poll, however many.
pub fn wakes_during_a_poll_poll_once_more(wakes: usize) -> usize {
    let polls = Arc::new(AtomicUsize::new(0));
    let task = executor::spawn_async(WakesItself { wakes, polls: polls.clone() }).expect("spawned");
    task.join().expect("finishes");
    polls.load(SeqCst)
}

/// A future that stays pending, keeping its latest waker in `slot`, until
/// `open` is set; sets `dropped` when dropped.
pub struct Gate {
    pub open: Arc<AtomicBool>,
    pub slot: WakerSlot,
    pub dropped: Arc<AtomicBool>,
}

impl Future for Gate {
    type Output = usize;
    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<usize> {
        *self.slot.lock() = Some(context.waker().clone());
        if self.open.load(SeqCst) { Poll::Ready(here()) } else { Poll::Pending }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.dropped.store(true, SeqCst);
    }
}

/// Where a [`Gate`] keeps its latest waker.
pub type WakerSlot = Arc<spin::Mutex<Option<Waker>>>;

/// A closed gate, what opens it, its waker slot and its drop flag.
pub fn gate() -> (Gate, Arc<AtomicBool>, WakerSlot, Arc<AtomicBool>) {
    let (open, slot, dropped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(spin::Mutex::new(None)),
        Arc::new(AtomicBool::new(false)),
    );
    (Gate { open: open.clone(), slot: slot.clone(), dropped: dropped.clone() }, open, slot, dropped)
}

/// Waits until `slot` holds a waker (the task has been polled).
fn polled(slot: &spin::Mutex<Option<Waker>>) -> Waker {
    loop {
        if let Some(waker) = slot.lock().clone() {
            return waker;
        }
        roving::strand::yield_now().expect("a strand");
    }
}

/// A task pinned to `core`, woken from this strand's core, is polled on
/// `core` every time. Returns the core it finished on.
pub fn pinned_task_stays(core: usize) -> usize {
    let (gate, open, slot, _) = gate();
    let task = executor::spawn_async_on(core, gate).expect("spawned");
    let waker = polled(&slot);
    open.store(true, SeqCst);
    waker.wake();
    task.join().expect("finishes")
}

/// A task woken from another core's task finishes; returns the core it
/// finished on and whether the wake came from a task.
pub fn woken_by_another_task() -> usize {
    let (gate, open, slot, _) = gate();
    let waiting = executor::spawn_async(gate).expect("spawned");
    let waker = polled(&slot);
    let waker_task = executor::spawn_async(async move {
        open.store(true, SeqCst);
        waker.wake();
    })
    .expect("spawned");
    waker_task.join().expect("finishes");
    waiting.join().expect("finishes")
}

/// Cancelling a task waiting for a wake drops its future; its handle says
/// so. Returns whether the future was dropped.
pub fn cancel_drops_the_future() -> bool {
    let (gate, _, slot, dropped) = gate();
    let task = executor::spawn_async(gate).expect("spawned");
    polled(&slot);
    task.cancel();
    assert_eq!(task.join(), Err(TaskError::Cancelled));
    dropped.load(SeqCst)
}

/// A task awaits other tasks' handles; returns what they returned.
pub fn tasks_await_tasks(width: u64) -> u64 {
    let outer = executor::spawn_async(async move {
        let mut sum = 0;
        let inner: Vec<_> =
            (1..=width).map(|i| executor::spawn_async(async move { i * 10 }).unwrap()).collect();
        for task in inner {
            sum += task.await.expect("an inner task returns");
        }
        sum
    })
    .expect("spawned");
    outer.join().expect("finishes")
}

/// A waker kept after its task ended wakes nothing, harmlessly. Returns the
/// number of wakes made.
pub fn late_wakes_are_harmless(wakes: usize) -> usize {
    let (gate, open, slot, _) = gate();
    open.store(true, SeqCst);
    let task = executor::spawn_async(gate).expect("spawned");
    task.join().expect("finishes");
    let waker = slot.lock().take().expect("the task was polled");
    for _ in 0..wakes {
        waker.wake_by_ref();
    }
    drop(waker);
    wakes
}

/// `block_on` in a strand runs a task's handle and a plain future.
pub fn block_on_in_a_strand() -> u64 {
    let task = executor::spawn_async(async { 20u64 }).expect("spawned");
    let twenty = roving::block_on(task).expect("a strand").expect("the task returns");
    twenty + roving::block_on(async { 22 }).expect("a strand")
}

/// `block_on` refuses a caller that is not a strand (a plain task).
pub fn block_on_outside_a_strand() -> Result<u32, roving::strand::WaitError> {
    let pool = Pool::current().expect("in a pool");
    let future = pool.future_on(0, || roving::block_on(async { 1 })).expect("sent");
    future.wait().expect("the task ran")
}

/// A task that panics fails alone: its handle gives the failure, with the
/// panic's message, and the core that polled it goes on running other
/// tasks. Returns what the tasks spawned after it summed.
/// Tasks that panic one after another, in a poll and in their future's
/// drop, each fail alone; the core's loop catches each and goes on.
/// Returns how many failed.
pub fn panics_in_polls_and_drops_fail_each_task() -> usize {
    /// Ready at once, with a field whose drop (after the task's output is
    /// stored) panics.
    struct ReadyThenPanicsWhenDropped(usize);
    impl Future for ReadyThenPanicsWhenDropped {
        type Output = usize;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<usize> {
            Poll::Ready(self.0)
        }
    }
    impl Drop for ReadyThenPanicsWhenDropped {
        fn drop(&mut self) {
            if here() < usize::MAX {
                panic!("dropping future {} gave up", self.0);
            }
        }
    }
    let handles: Vec<_> = (0..6usize)
        .map(|i| {
            if i % 2 == 0 {
                executor::spawn_async(async move {
                    executor::yield_now().await;
                    if here() < usize::MAX {
                        panic!("poll {i} gave up");
                    }
                    i
                })
                .expect("spawned")
            } else {
                executor::spawn_async(ReadyThenPanicsWhenDropped(i)).expect("spawned")
            }
        })
        .collect();
    let mut failed = 0;
    for (i, handle) in handles.into_iter().enumerate() {
        match handle.join() {
            Err(TaskError::Failed(failure)) => {
                let expected =
                    if i % 2 == 0 { format!("poll {i} gave up") } else { format!("future {i} gave up") };
                assert!(failure.message().contains(&expected), "task {i}'s failure: {failure}");
                failed += 1;
            }
            other => panic!("task {i} gave {other:?}, not its failure"),
        }
    }
    failed
}

pub fn a_panicking_task_fails_alone() -> u64 {
    let failing = executor::spawn_async(async {
        executor::yield_now().await;
        if here() < usize::MAX {
            panic!("the task gave up");
        }
    })
    .expect("spawned");
    match failing.join() {
        Err(TaskError::Failed(failure)) => {
            assert!(failure.message().contains("the task gave up"), "the failure's message: {failure}")
        }
        other => panic!("a panicking task's handle gave {other:?}"),
    }
    let after: Vec<_> =
        (0..100u64).map(|i| executor::spawn_async(async move { i }).expect("spawned")).collect();
    after.into_iter().map(|task| task.join().expect("a task after the panic finishes")).sum()
}
