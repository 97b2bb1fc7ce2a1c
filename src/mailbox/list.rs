//! A lock-free list of tasks with a tagged head: the mailbox of one
//! ordered pair of cores, also used for the injector, the per-core steal lists and the
//! lists of storage blocks returned to their home core.
//!
//! # Protocol
//!
//! The head is one word: a pointer to the newest task, or null, with the
//! low bit free (tasks are at least 8-byte aligned). That bit is the
//! *armed* tag, a wake sentinel: the receiving core sets it just before it
//! sleeps, and a sender whose push replaces it knows the receiver may be
//! asleep and must be woken.
//!
//! - **Push** (any number of senders): link the task (or a pre-linked chain)
//!   to the current head's pointer, then compare-exchange the head to the
//!   task, clearing the tag. Retry on failure. The old head's tag is the
//!   push's result: [`Pushed::WasArmed`] obliges the sender to wake the
//!   receiver.
//! - **Push unless armed** (the mesh's forwards, see `super::mesh`): as a
//!   push, except that a head carrying the armed tag is left as it is and
//!   nothing is pushed; the sender keeps its task and takes it elsewhere.
//! - **Take all** (the receiver; or, for the injector and steal lists, any
//!   core): swap the head with null and own the whole chain. The chain is
//!   newest first; reversing it gives each sender's tasks in the order they
//!   were pushed. A swap also clears the tag: a core that takes is awake.
//! - **Arm** (the receiver, before sleeping): swap the head with the bare
//!   tag. It returns whatever was pushed meanwhile, so the receiver runs
//!   that instead of sleeping.
//! - **Steal all** (another core, from a receiver that is awake but busy):
//!   compare-exchange a head that holds tasks, and so carries no tag, with
//!   null. It fails, taking nothing, if the receiver took or armed
//!   meanwhile: a thief never clears a sentinel, so it never hides a push
//!   from a sleeping receiver.
//! - **Close** (the receiver, when its core leaves the pool): swap the head
//!   with the *closed* tag, a second low bit, and own what was there. A
//!   push that finds the closed tag does not link its task: it returns
//!   [`Pushed::Closed`] and the sender keeps the task. **Reopen** (whoever
//!   adds the core back, before it starts) swaps the closed tag for null.
//!
//! # Why it is correct (sketch)
//!
//! Every operation on the head is a read-modify-write of one word, so they
//! are totally ordered and each reads the value left by the one before.
//!
//! - No task is lost or taken twice: a successful push makes its task the
//!   head with the previous chain behind it; a take replaces the head with
//!   something that holds none of those tasks, so every pushed task is in
//!   exactly one taken chain.
//! - No ABA: nothing ever removes a single task from the head. Takers only
//!   swap the whole chain out, so a sender's compare-exchange succeeds only
//!   if the head is exactly what it linked behind its task, and that chain
//!   is intact whatever happened to it before.
//! - The links are published: a sender writes the link and the task's
//!   contents before its release compare-exchange; a taker's acquire swap
//!   reads that value or a later one in the release sequence of pushes, so
//!   it sees every task of the chain it took.
//! - No lost wake-up through a mailbox: if the receiver's arm comes before a
//!   push in the head's order, that push reads the tag and wakes the
//!   receiver. If the push comes first, the arm returns its task and the
//!   receiver does not sleep.
//! - A push unless armed that reads the armed tag writes nothing, so to
//!   every other operation it is as if it never ran; one that does not read
//!   it is a push that returns [`Pushed::Queued`] or [`Pushed::Closed`].
//! - Nothing is lost at a close: a push ordered before the close is in the
//!   chain the close returns; one ordered after it reads the closed tag
//!   (only a reopen removes it) and keeps its task.
//!
//! The orderings are `SeqCst` rather than the acquire/release the sketch
//! needs; the sleep protocol (`crate::sleep`) reads heads in a store-load
//! pattern with its own state word, which it closes with seq-cst fences.
//! `tests/loom_mailbox.rs` checks this file with two senders.

use crate::atomics::{AtomicUsize, Ordering::*};
use crate::task::Task;
use core::ptr::NonNull;

const ARMED: usize = 1;
const CLOSED: usize = 2;
/// The tag bits: tasks are at least 8-byte aligned.
const TAGS: usize = ARMED | CLOSED;

/// The result of a push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a push that replaced the sentinel must wake the receiver"]
pub enum Pushed {
    /// Queued; the receiver is awake or will see the task before sleeping.
    Queued,
    /// Queued in place of the wake sentinel: the receiver may be asleep.
    WasArmed,
    /// Not queued: the list is closed (its core left the pool). The sender
    /// still owns the task.
    Closed,
}

/// A chain taken from an [`AtomicList`], newest task first.
pub type Chain = Option<NonNull<Task>>;

/// The tagged list head. See the module documentation for the protocol.
pub struct AtomicList {
    head: AtomicUsize,
}

impl AtomicList {
    /// An empty list, not armed.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self { head: AtomicUsize::new(0) }
    }

    /// An empty list, not armed (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self { head: AtomicUsize::new(0) }
    }

    /// An empty list, armed: its first push returns [`Pushed::WasArmed`].
    #[cfg(not(loom))]
    pub const fn new_armed() -> Self {
        Self { head: AtomicUsize::new(ARMED) }
    }

    /// An empty list, armed (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new_armed() -> Self {
        Self { head: AtomicUsize::new(ARMED) }
    }

    /// Pushes one task.
    ///
    /// # Safety
    ///
    /// The caller owns `task`, a live header, and gives it up.
    #[inline]
    pub unsafe fn push(&self, task: NonNull<Task>) -> Pushed {
        // SAFETY: a single task is a chain whose newest and oldest coincide.
        unsafe { self.push_chain(task, task) }
    }

    /// Pushes a chain linked from `newest` to `oldest` through the tasks'
    /// links, with one compare-exchange.
    ///
    /// # Safety
    ///
    /// The caller owns every task of the chain and gives them up, unless the
    /// result is [`Pushed::Closed`]; following links from `newest` reaches
    /// `oldest`.
    pub unsafe fn push_chain(&self, newest: NonNull<Task>, oldest: NonNull<Task>) -> Pushed {
        // SAFETY: per the contract; with `leave_armed` off nothing is refused.
        unsafe { self.push_chain_or_leave(newest, oldest, false) }.unwrap_or_else(|| unreachable!())
    }

    /// Pushes a chain, as [`AtomicList::push_chain`], unless the list is
    /// armed: then nothing is pushed, the list stays armed, and the result
    /// is `None`.
    ///
    /// # Safety
    ///
    /// As for [`AtomicList::push_chain`]; the caller keeps the chain when
    /// the result is `None` or [`Pushed::Closed`], with `oldest`'s link
    /// left pointing anywhere (a try that lost a race wrote it).
    pub unsafe fn push_chain_unless_armed(
        &self,
        newest: NonNull<Task>,
        oldest: NonNull<Task>,
    ) -> Option<Pushed> {
        // SAFETY: per the contract.
        unsafe { self.push_chain_or_leave(newest, oldest, true) }
    }

    /// The push of both: `None` only if `leave_armed` and the list is
    /// armed.
    ///
    /// # Safety
    ///
    /// As for [`AtomicList::push_chain_unless_armed`].
    #[inline(always)]
    unsafe fn push_chain_or_leave(
        &self,
        newest: NonNull<Task>,
        oldest: NonNull<Task>,
        leave_armed: bool,
    ) -> Option<Pushed> {
        debug_assert_eq!(newest.as_ptr() as usize & TAGS, 0, "tasks are at least 4-byte aligned");
        let mut head = self.head.load(Relaxed);
        loop {
            if head & CLOSED != 0 {
                return Some(Pushed::Closed);
            }
            if leave_armed && head & ARMED != 0 {
                return None;
            }
            // SAFETY: the caller owns `oldest` until the exchange publishes it.
            unsafe { Task::set_next(oldest, (head & !TAGS) as *mut Task) };
            crate::chaos::point();
            match self.head.compare_exchange_weak(head, newest.as_ptr() as usize, SeqCst, Relaxed) {
                Ok(_) if head & ARMED != 0 => return Some(Pushed::WasArmed),
                Ok(_) => return Some(Pushed::Queued),
                Err(now) => head = now,
            }
        }
    }

    /// Takes every task, newest first, and clears the sentinel.
    #[inline]
    pub fn take_all(&self) -> Chain {
        // A load first keeps an idle poller from taking the line
        // exclusively when there is nothing to take.
        if !self.has_tasks() {
            return None;
        }
        NonNull::new((self.head.swap(0, SeqCst) & !TAGS) as *mut Task)
    }

    /// Takes every task if the list holds some and is untouched since the
    /// look: what another core takes from a busy receiver. Never clears a
    /// tag (see the module docs).
    pub fn steal_all(&self) -> Chain {
        let head = self.head.load(SeqCst);
        if head & !TAGS == 0 || head & TAGS != 0 {
            return None;
        }
        let taken = self.head.compare_exchange(head, 0, SeqCst, Relaxed).ok()?;
        NonNull::new(taken as *mut Task)
    }

    /// Takes every task and leaves the wake sentinel in their place.
    pub fn take_all_and_arm(&self) -> Chain {
        NonNull::new((self.head.swap(ARMED, SeqCst) & !TAGS) as *mut Task)
    }

    /// Arms the list if it is empty and neither armed nor closed; returns
    /// whether it did. A list that holds tasks is left as it is.
    pub fn arm_if_empty(&self) -> bool {
        self.head.compare_exchange(0, ARMED, SeqCst, SeqCst).is_ok()
    }

    /// Takes every task and closes the list: later pushes are refused.
    pub fn take_all_and_close(&self) -> Chain {
        NonNull::new((self.head.swap(CLOSED, SeqCst) & !TAGS) as *mut Task)
    }

    /// Opens a closed list again, empty; does nothing to an open one.
    pub fn reopen(&self) {
        let _ = self.head.compare_exchange(CLOSED, 0, SeqCst, SeqCst);
    }

    /// Whether the list is armed and empty.
    pub fn is_armed(&self) -> bool {
        self.head.load(SeqCst) == ARMED
    }

    /// Whether the list is closed.
    pub fn is_closed(&self) -> bool {
        self.head.load(SeqCst) & CLOSED != 0
    }

    /// Whether any task is queued (the tags alone count as empty).
    #[inline]
    pub fn has_tasks(&self) -> bool {
        self.head.load(SeqCst) & !TAGS != 0
    }
}

/// Tasks that say who pushed them, for the tests below.
#[cfg(all(test, feature = "std", not(loom)))]
pub(super) mod tests_support {
    use super::*;
    use crate::task::queue::TaskQueue;
    use crate::task::{Action, storage::BlockCache};

    /// A task that says who pushed it and when.
    #[repr(C)]
    struct Stamped {
        task: Task,
        sender: usize,
        sequence: usize,
    }

    unsafe fn never_run(_: NonNull<Task>, _: Action, _: NonNull<BlockCache>) {
        unreachable!("these tests only move tasks");
    }

    pub(in crate::mailbox) fn stamped(sender: usize, sequence: usize) -> NonNull<Task> {
        let boxed = Box::new(Stamped { task: Task::new(never_run), sender, sequence });
        NonNull::from(Box::leak(boxed)).cast()
    }

    /// Takes a task back: who pushed it, and when.
    pub(in crate::mailbox) fn take(task: NonNull<Task>) -> (usize, usize) {
        // SAFETY: made by `stamped` from a leaked box, taken exactly once.
        let stamped = unsafe { Box::from_raw(task.cast::<Stamped>().as_ptr()) };
        (stamped.sender, stamped.sequence)
    }

    pub(in crate::mailbox) fn push(list: &AtomicList, task: NonNull<Task>) -> Pushed {
        // SAFETY: a fresh task from `stamped`, given up (or, if refused,
        // still ours).
        unsafe { list.push(task) }
    }

    pub(in crate::mailbox) fn drain(chain: Chain) -> Vec<(usize, usize)> {
        let mut queue = TaskQueue::new();
        // SAFETY: a taken chain is ours.
        unsafe { queue.append_reversed(chain) };
        core::iter::from_fn(|| queue.pop_front()).map(take).collect()
    }
}

/// Host tests of the list and of the inbox built on it, with real threads;
/// `make test` also runs them under Miri, which checks every access for
/// data races and the pointer casts for provenance.
#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::super::inbox::Inbox;
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::{Arc, Barrier};
    use std::thread;

    use super::tests_support::{drain, push, stamped, take as unstamp};

    #[test]
    fn tags_tell_the_sender_what_it_must_do() {
        let list = AtomicList::new();
        assert_eq!(push(&list, stamped(0, 0)), Pushed::Queued);
        assert_eq!(drain(list.take_all_and_arm()), [(0, 0)]);
        assert_eq!(push(&list, stamped(0, 1)), Pushed::WasArmed);
        assert_eq!(push(&list, stamped(0, 2)), Pushed::Queued);
        assert!(!list.arm_if_empty(), "a list holding tasks is not armed");
        assert_eq!(drain(list.take_all_and_close()), [(0, 1), (0, 2)]);
        let refused = stamped(0, 3);
        assert_eq!(push(&list, refused), Pushed::Closed);
        assert_eq!(unstamp(refused), (0, 3), "a refused task stays the sender's");
        list.reopen();
        assert!(list.arm_if_empty());
        assert!(!list.arm_if_empty(), "an armed list is not armed twice");
        assert_eq!(push(&list, stamped(0, 4)), Pushed::WasArmed);
        assert_eq!(drain(list.take_all()), [(0, 4)]);
    }

    #[test]
    fn concurrent_senders_lose_nothing_and_keep_their_order() {
        const SENDERS: usize = 3;
        let each = if cfg!(miri) { 30 } else { 10_000 };
        let list = Arc::new(AtomicList::new());
        let done = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(SENDERS + 1));
        let senders: Vec<_> = (0..SENDERS)
            .map(|sender| {
                let (list, done, start) = (list.clone(), done.clone(), start.clone());
                thread::spawn(move || {
                    start.wait();
                    for sequence in 0..each {
                        let _ = push(&list, stamped(sender, sequence));
                    }
                    done.fetch_add(1, SeqCst);
                })
            })
            .collect();
        start.wait();
        let mut next = [0; SENDERS];
        loop {
            let finished = done.load(SeqCst) == SENDERS;
            for (sender, sequence) in drain(list.take_all()) {
                assert_eq!(sequence, next[sender], "sender {sender}'s tasks out of order");
                next[sender] += 1;
            }
            if finished && !list.has_tasks() {
                break;
            }
            thread::yield_now();
        }
        senders.into_iter().for_each(|sender| sender.join().unwrap());
        assert_eq!(next, [each; SENDERS], "a task was lost");
    }

    /// An owner that retires (like a fibre that is freed) once it has
    /// drained every task and unscheduled itself.
    struct Owner {
        inbox: Inbox,
        running: AtomicBool,
        drained: AtomicUsize,
        retired: AtomicBool,
        total: usize,
    }

    impl Owner {
        fn run(&self) {
            assert!(!self.retired.load(SeqCst), "a pusher scheduled an owner that had retired");
            loop {
                assert!(!self.running.swap(true, SeqCst), "the owner runs in two places at once");
                let taken = drain(self.inbox.take_all()).len();
                self.drained.fetch_add(taken, SeqCst);
                self.running.store(false, SeqCst);
                if !self.inbox.finish() {
                    if self.drained.load(SeqCst) == self.total {
                        self.retired.store(true, SeqCst);
                    }
                    return;
                }
            }
        }
    }

    #[test]
    fn an_inbox_owner_runs_alone_and_is_never_scheduled_after_it_retires() {
        const PUSHERS: usize = 3;
        let each = if cfg!(miri) { 20 } else { 5_000 };
        let owner = Arc::new(Owner {
            inbox: Inbox::new(),
            running: AtomicBool::new(false),
            drained: AtomicUsize::new(0),
            retired: AtomicBool::new(false),
            total: PUSHERS * each,
        });
        let pushers: Vec<_> = (0..PUSHERS)
            .map(|pusher| {
                let owner = owner.clone();
                thread::spawn(move || {
                    for sequence in 0..each {
                        // SAFETY: a fresh task, given up.
                        if unsafe { owner.inbox.push(stamped(pusher, sequence)) } {
                            owner.run();
                        }
                    }
                })
            })
            .collect();
        pushers.into_iter().for_each(|pusher| pusher.join().unwrap());
        assert_eq!(owner.drained.load(SeqCst), PUSHERS * each, "a task was stranded in an idle inbox");
        assert!(owner.retired.load(SeqCst));
    }
}

/// The list against a model: random pushes, takes, arms, closes and
/// reopens, one thread, every result and every task checked.
#[cfg(all(test, feature = "std", not(loom), not(miri)))]
mod model {
    use super::tests_support::{push, stamped, take};
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[derive(Clone, Debug)]
    enum Op {
        Push(usize),
        TakeAll,
        TakeAllAndArm,
        ArmIfEmpty,
        Close,
        Reopen,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..3usize).prop_map(Op::Push),
            2 => Just(Op::TakeAll),
            1 => Just(Op::TakeAllAndArm),
            1 => Just(Op::ArmIfEmpty),
            1 => Just(Op::Close),
            1 => Just(Op::Reopen),
        ]
    }

    /// What the list should hold and say.
    #[derive(Default)]
    struct Model {
        queued: VecDeque<(usize, usize)>,
        armed: bool,
        closed: bool,
        next: [usize; 3],
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn the_list_matches_its_model(ops in prop::collection::vec(op(), 0..120)) {
            let list = AtomicList::new();
            let mut model = Model::default();
            for op in ops {
                match op {
                    Op::Push(sender) => {
                        let sequence = model.next[sender];
                        model.next[sender] += 1;
                        let task = stamped(sender, sequence);
                        let expected = if model.closed {
                            Pushed::Closed
                        } else if model.armed {
                            Pushed::WasArmed
                        } else {
                            Pushed::Queued
                        };
                        prop_assert_eq!(push(&list, task), expected);
                        if expected == Pushed::Closed {
                            prop_assert_eq!(take(task), (sender, sequence), "a refused task is the sender's");
                        } else {
                            model.queued.push_back((sender, sequence));
                            model.armed = false;
                        }
                    }
                    Op::TakeAll | Op::TakeAllAndArm | Op::Close => {
                        let chain = match op {
                            Op::TakeAll => list.take_all(),
                            Op::TakeAllAndArm => list.take_all_and_arm(),
                            _ => list.take_all_and_close(),
                        };
                        let taken = super::tests_support::drain(chain);
                        prop_assert_eq!(taken, model.queued.drain(..).collect::<Vec<_>>());
                        match op {
                            Op::TakeAllAndArm => (model.armed, model.closed) = (true, false),
                            Op::Close => (model.armed, model.closed) = (false, true),
                            _ => {}
                        }
                    }
                    Op::ArmIfEmpty => {
                        let expected = model.queued.is_empty() && !model.armed && !model.closed;
                        prop_assert_eq!(list.arm_if_empty(), expected);
                        model.armed |= expected;
                    }
                    Op::Reopen => {
                        list.reopen();
                        model.closed = false;
                    }
                }
                prop_assert_eq!(list.has_tasks(), !model.queued.is_empty());
            }
            let _ = super::tests_support::drain(list.take_all());
        }
    }
}
