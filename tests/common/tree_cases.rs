//! Strand-tree cases shared by the host tests (`tests/tree.rs`,
//! `tests/cancel_tree.rs`) and the QEMU kernel `tree`, so both run the
//! same code. Only `core`, `alloc` and roving: it builds for bare metal.
//! Each user runs some of the cases.
#![allow(dead_code)]

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::strand::{self, BlockReason, Failure, FailureKind, JoinError, JoinHandle, WaitError};
use roving::sync::{Mutex, TryLockError, channel};
use roving::time::Instant;
use roving::{Pool, RunError, platform};

/// The core the panicking leaf ran on.
pub static LEAF_CORE: AtomicUsize = AtomicUsize::new(usize::MAX);

/// A pool's `main`: a leaf panics; its parent checks that the leaf's core
/// still runs work and raises the failure; `main` raises it again.
pub fn leaf_panic_through_two_joins() {
    let middle = strand::spawn(|| {
        let leaf = strand::spawn(|| -> u32 {
            LEAF_CORE.store(platform::current_core().expect("a core"), SeqCst);
            panic!("leaf failed on purpose")
        })
        .expect("spawn the leaf");
        let failure = match leaf.join() {
            Err(JoinError::Failed(failure)) => failure,
            other => panic!("expected the leaf's failure, got {other:?}"),
        };
        let core = LEAF_CORE.load(SeqCst);
        let (tx, rx) = channel::bounded(1).expect("a channel");
        roving::post(core, move || tx.try_send(platform::current_core()).expect("room")).expect("post");
        assert_eq!(rx.recv().expect("an answer"), Some(core), "the leaf's core runs work after the panic");
        strand::raise(failure)
    })
    .expect("spawn the middle");
    match middle.join() {
        Err(JoinError::Failed(failure)) => strand::raise(failure),
        other => panic!("expected the middle's failure, got {other:?}"),
    }
}

/// Checks what `run` returned after [`leaf_panic_through_two_joins`].
pub fn check_leaf_failure(outcome: Result<(), RunError>, file: &str) -> Failure {
    let failure = match outcome {
        Err(RunError::Failed(failure)) => failure,
        other => panic!("expected a failed run, got {other:?}"),
    };
    assert_eq!(failure.kind(), FailureKind::Panicked);
    assert_eq!(failure.message(), "leaf failed on purpose");
    assert!(failure.location().is_some_and(|l| l.file.ends_with(file)), "{failure}");
    assert_ne!(LEAF_CORE.load(SeqCst), usize::MAX);
    failure
}

const FANOUT: usize = 10;
const LEAVES: usize = 9;
/// Strands in the tree [`cancel_a_tree`] builds.
pub const TREE: usize = 1 + FANOUT + FANOUT * FANOUT + FANOUT * FANOUT * LEAVES;

static BLOCKED: AtomicUsize = AtomicUsize::new(0);
static ENDED: AtomicUsize = AtomicUsize::new(0);

/// A wait ends with the cancel; or, if the strand's parent (cancelled
/// too) got there first, with what the parent let go of: the channel's
/// sender, or the mutex.
fn ended(outcome: Result<(), WaitError>) {
    assert!(strand::cancelled(), "only the cancel ends these waits");
    assert!(matches!(outcome, Err(WaitError::Interrupted) | Ok(())), "{outcome:?}");
    ENDED.fetch_add(1, SeqCst);
}

/// Joins every child until the cancel comes; a join may still succeed
/// after it (the child ended first); the strand's end waits for the rest.
fn join_all(children: Vec<JoinHandle<()>>) {
    BLOCKED.fetch_add(1, SeqCst);
    for child in children {
        match child.join() {
            Ok(()) => {}
            Err(JoinError::Interrupted(_)) => break,
            Err(other) => panic!("join: {other}"),
        }
    }
    ended(Ok(()));
}

/// Blocks asleep, receiving, or locking a mutex its parent holds.
fn leaf(kind: usize, rx: channel::Receiver<u32>, held: Arc<Mutex<()>>) {
    BLOCKED.fetch_add(1, SeqCst);
    ended(match kind % 3 {
        0 => strand::sleep(Duration::from_secs(3600)),
        1 => match rx.recv() {
            Err(channel::RecvError::Interrupted) => Err(WaitError::Interrupted),
            Err(channel::RecvError::Disconnected) => Ok(()),
            other => panic!("nothing is ever sent: {other:?}"),
        },
        _ => held.lock().map(drop),
    });
}

fn middle() {
    let held = Arc::new(Mutex::new(()));
    let _locked = held.lock().expect("free");
    let (_tx, rx) = channel::bounded::<u32>(1).expect("a channel");
    let leaves = (0..LEAVES)
        .map(|kind| {
            let (rx, held) = (rx.clone(), held.clone());
            strand::spawn(move || leaf(kind, rx, held)).expect("spawn a leaf")
        })
        .collect();
    join_all(leaves);
}

fn spawn_all(count: usize, body: fn()) -> Vec<JoinHandle<()>> {
    (0..count).map(|_| strand::spawn(body).expect("spawn")).collect()
}

/// A pool's `main`: builds a 3-level tree of [`TREE`] strands blocked in
/// sleeps, channels, mutexes and joins, cancels it from its top, and
/// checks that all of it ended and that fibres, saved stacks and live
/// strands are back where they started. Returns how long the cancel took.
pub fn cancel_a_tree(pool: &Pool) -> Duration {
    let before = (strand::usage(), pool.live_strands());
    let top = strand::spawn(|| join_all(spawn_all(FANOUT, || join_all(spawn_all(FANOUT, middle)))))
        .expect("spawn the top");
    while BLOCKED.load(SeqCst) < TREE {
        strand::sleep(Duration::from_millis(1)).expect("main sleeps");
    }
    strand::sleep(Duration::from_millis(20)).expect("main sleeps");
    assert_eq!(pool.live_strands(), before.1 + TREE, "the whole tree is alive");
    let started = Instant::now();
    top.cancel().expect("the top is running");
    top.join().expect("a cancelled strand that returns has not failed");
    let elapsed = started.elapsed();
    assert_eq!(ENDED.load(SeqCst), TREE, "every strand of the tree ended because of the cancel");
    // The top's joiner can wake before the top's core has put its fibre
    // back and uncounted it (that happens just after the strand switches
    // out), so give the last strands a moment to be tidied away.
    let deadline = Instant::now() + Duration::from_secs(1);
    while (strand::usage(), pool.live_strands()) != before && Instant::now() < deadline {
        strand::sleep(Duration::from_millis(1)).expect("main sleeps");
    }
    assert_eq!((strand::usage(), pool.live_strands()), before, "everything the tree held is back");
    elapsed
}

/// A pool's `main`: a scope returns while its strand sleeps. Returns the
/// scope's failure and what the strand's sleep returned.
pub fn scope_returning_early() -> (Option<Failure>, Option<Result<(), WaitError>>) {
    let saw = Mutex::new(None);
    let result = strand::scope(|s| {
        s.spawn(|| *saw.lock().expect("free") = Some(strand::sleep(Duration::from_secs(60))))
            .expect("spawn in the scope");
        strand::sleep(Duration::from_millis(5)).expect("the scope's owner sleeps");
    });
    let failure = result.expect_err("returning with a live strand").failure().cloned();
    (failure, saw.lock().expect("free").take())
}

/// Checks what [`scope_returning_early`] returned.
pub fn check_scope_returning_early(outcome: (Option<Failure>, Option<Result<(), WaitError>>)) {
    let (failure, saw) = outcome;
    assert_eq!(failure.map(|f| f.kind()), Some(FailureKind::ReturnWithLiveStrands { live: 1 }));
    assert_eq!(saw, Some(Err(WaitError::Interrupted)), "the strand was cancelled and has ended");
}

/// A pool's `main`: a strand fails holding two mutexes while another waits
/// for one. The waiter gets `Poisoned`; both mutexes are unlocked and
/// poisoned; clearing the poison gives the values as the failed strand
/// left them. Then a strand that forgot a guard, and moved and dropped its
/// mutex, fails without harm. Returns the holder's failure.
pub fn poisoned_by_a_failed_holder() -> Failure {
    let first = Arc::new(Mutex::new(0u32));
    let second = Arc::new(Mutex::new(0u32));
    let (locked_tx, locked_rx) = channel::bounded(1).expect("a channel");
    let (go_tx, go_rx) = channel::bounded::<()>(1).expect("a channel");
    let holder = {
        let (first, second) = (first.clone(), second.clone());
        strand::spawn(move || {
            let mut a = first.lock().expect("free");
            let mut b = second.lock().expect("free");
            (*a, *b) = (1, 2);
            locked_tx.send(()).expect("main listens");
            go_rx.recv().expect("main says when");
            panic!("failed holding two locks")
        })
        .expect("spawn the holder")
    };
    locked_rx.recv().expect("the holder locked both");
    let waiter = {
        let first = first.clone();
        strand::spawn(move || first.lock().map(|value| *value)).expect("spawn the waiter")
    };
    while waiter.block_reason() != BlockReason::Mutex {
        strand::sleep(Duration::from_millis(1)).expect("main sleeps");
    }
    go_tx.send(()).expect("the holder listens");
    let failure = match holder.join() {
        Err(JoinError::Failed(failure)) => failure,
        other => panic!("expected the holder's failure, got {other:?}"),
    };
    assert_eq!(waiter.join().expect("the waiter returns"), Err(WaitError::Poisoned));
    assert!(first.is_poisoned() && second.is_poisoned());
    assert_eq!(first.try_lock().map(|_| ()), Err(TryLockError::Poisoned));
    assert_eq!(second.lock().map(|_| ()), Err(WaitError::Poisoned));
    first.clear_poison();
    second.clear_poison();
    assert_eq!((*first.lock().expect("cleared"), *second.lock().expect("cleared")), (1, 2));

    let forgetful = strand::spawn(|| {
        let mutex = Mutex::new(5u32);
        core::mem::forget(mutex.lock().expect("free"));
        // The lock's block stays listed while the mutex moves and drops.
        drop(alloc::boxed::Box::new(mutex));
        panic!("failed after forgetting a guard")
    })
    .expect("spawn");
    assert!(matches!(forgetful.join(), Err(JoinError::Failed(_))));
    failure
}

/// Checks what [`poisoned_by_a_failed_holder`] returned.
pub fn check_poisoned(failure: Failure) {
    assert_eq!(failure.kind(), FailureKind::Panicked);
    assert_eq!(failure.message(), "failed holding two locks");
}
