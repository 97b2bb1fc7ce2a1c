//! Blocking a strand, and the wait queues of the blocking primitives.
//!
//! # Blocking ([`block`])
//!
//! 1. The strand stores `BLOCKED` in its state word and why.
//! 2. With a deadline, it enters the pool's timer heap.
//! 3. It registers itself where a waker will find it (a wait queue, under
//!    that queue's lock); registering may instead report that what it
//!    waits for has already happened.
//! 4. It switches to its core's scheduler.
//!
//! A waker moves the state from `BLOCKED` to `SIGNALLED`, the timer to
//! `TIMED_OUT`, a cancel to `INTERRUPTED`, each with a compare-exchange:
//! exactly one wins, and only the winner makes the strand runnable. A
//! waker may win before step 4 completes; the fibre is still scheduled
//! then, so the strand is only queued, and resumed after its switch is
//! done.
//!
//! # Cancellation
//!
//! A strand holding a shield blocks as `BLOCKED_SHIELDED`, which a cancel
//! does not move. Otherwise, after step 3 the strand looks at its own
//! cancelled flag and, if set, interrupts itself (the same compare-exchange
//! a canceller makes). A canceller sets the flag and then tries the
//! exchange; the blocking strand stores `BLOCKED` and then reads the flag.
//! All four are sequentially consistent, so at least one of them sees the
//! other: a cancel never misses a strand that is blocking.
//!
//! # Leaving a wait queue
//!
//! A waker pops a waiter and then tries to signal it. If the deadline won,
//! the waker moves on to the next waiter, so nothing it hands over is
//! lost. A strand that timed out takes the queue's lock and removes
//! itself if it is still queued. A strand that was signalled removes its
//! timer entry. Both happen before the strand does anything else, under
//! the lock the waker held, so no waker or timer ever touches a control
//! block after its strand has moved on.

mod queue;

use super::control::{Header, state};
use super::error::WaitError;
use super::id::BlockReason;
use super::scheduler;
use crate::atomics::unmodelled::Ordering::*;
use crate::platform::instant::Instant;
use crate::pool::core_turn::TurnEnd;
use crate::spin_lock::SpinLock;
use crate::timers::StrandTimer;
use core::ptr::{self, NonNull};
pub(crate) use queue::{TaskWaiter, WaitLinks, WaitQueue};

/// How the pool's timer heap wakes a strand whose deadline passed: by its
/// slot, which is a field of its control block.
static STRAND_TIMER: StrandTimer =
    StrandTimer { wake: |slot| scheduler::signal(Header::from_timer_slot(slot), state::TIMED_OUT) };

/// How a blocked strand was woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// By what it waited for (or it had already happened).
    Signalled,
    /// By its deadline.
    TimedOut,
    /// By a cancel.
    Interrupted,
}

impl WaitEnd {
    /// The error a wait that did not get what it waited for returns.
    pub(crate) fn error(self) -> Option<WaitError> {
        match self {
            Self::Signalled => None,
            Self::TimedOut => Some(WaitError::TimedOut),
            Self::Interrupted => Some(WaitError::Interrupted),
        }
    }
}

/// Blocks the calling strand until it is signalled or `deadline` passes.
/// `register` makes it findable by a waker and returns `true`; or returns
/// `false` if there is nothing to wait for after all. `on` is the address
/// of what it waits for (0 if nothing is named), for deadlock reports.
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside a strand; [`WaitError::OutOfMemory`]
/// if the timer heap could not grow. In both cases `register` was not
/// called.
pub(crate) fn block(
    reason: BlockReason,
    on: usize,
    deadline: Option<Instant>,
    register: impl FnOnce(NonNull<Header>) -> bool,
) -> Result<WaitEnd, WaitError> {
    crate::platform::refuse_in_handler(
        "blocking (a wait, a lock, a join, a sleep)",
        crate::platform::HANDLERS_WAKE,
    );
    let me = scheduler::current().ok_or(WaitError::NotAStrand)?;
    // From the first state change to the switch, and back: all of it is
    // the scheduler's protocol, never to be split by a preemption.
    let _deferral = crate::strand::deferral::defer();
    // SAFETY: the running strand's own header.
    let header = unsafe { me.as_ref() };
    if deadline.is_some_and(|deadline| deadline <= Instant::now()) {
        return Ok(WaitEnd::TimedOut);
    }
    header.set_reason(reason);
    header.set_waits_on(on);
    let shielded = header.shield.load(Relaxed) > 0;
    header.state.store(if shielded { state::BLOCKED_SHIELDED } else { state::BLOCKED }, SeqCst);
    // A fibre with strands is held by a live pool.
    let pool = header.fibre.pool();
    if let Some(deadline) = deadline
        // SAFETY: our slot is in no heap (we are not waiting), and every
        // wait takes it out before it returns.
        && unsafe { pool.timers().insert(deadline, Header::timer_slot(me), &STRAND_TIMER) }.is_err()
    {
        header.state.store(state::RUNNABLE, SeqCst);
        header.set_reason(BlockReason::None);
        header.set_waits_on(0);
        return Err(WaitError::OutOfMemory);
    }
    let registered = register(me);
    if registered && !shielded && header.cancelled() {
        scheduler::signal(me, state::INTERRUPTED);
    }
    if !registered {
        // Nobody can signal us (we registered nowhere), but the timer can.
        if scheduler::claim(header, state::SIGNALLED) {
            if deadline.is_some() {
                pool.timers().remove(&header.timer);
            }
            header.state.store(state::RUNNABLE, SeqCst);
            header.set_reason(BlockReason::None);
            header.set_waits_on(0);
            return Ok(WaitEnd::Signalled);
        }
        // The timer fired and queued us: suspend to be resumed at once.
    }
    // SAFETY: we are the running strand, findable by whoever wakes us.
    unsafe { scheduler::suspend(TurnEnd::Blocked) };
    let woken = match header.state.swap(state::RUNNABLE, SeqCst) {
        // What we waited for had already happened when we registered.
        _ if !registered => WaitEnd::Signalled,
        state::TIMED_OUT => WaitEnd::TimedOut,
        state::INTERRUPTED => {
            if deadline.is_some() {
                pool.timers().remove(&header.timer);
            }
            WaitEnd::Interrupted
        }
        _ => {
            if deadline.is_some() {
                pool.timers().remove(&header.timer);
            }
            WaitEnd::Signalled
        }
    };
    header.set_reason(BlockReason::None);
    header.set_waits_on(0);
    Ok(woken)
}

/// Blocks the calling strand in the wait queue that `queue` picks out of
/// `state`, unless `done` (called under the lock) says the wait is over.
/// A strand woken by its deadline leaves the queue before returning.
///
/// # Errors
///
/// [`WaitError::TimedOut`], [`WaitError::Interrupted`], or as for
/// [`block`].
pub(crate) fn wait_in<S>(
    state: &SpinLock<S>,
    reason: BlockReason,
    deadline: Option<Instant>,
    queue: impl Fn(&mut S) -> &mut WaitQueue,
    done: impl FnOnce(&mut S) -> bool,
) -> Result<(), WaitError> {
    let woken = block(reason, ptr::from_ref(state).addr(), deadline, |me| {
        let mut state = state.lock();
        if done(&mut state) {
            return false;
        }
        // SAFETY: the strand stays live until it leaves the queue: a waker
        // pops it, or it leaves below.
        unsafe { queue(&mut state).push_back(me) };
        true
    })?;
    match woken.error() {
        None => Ok(()),
        Some(error) => {
            queue(&mut state.lock()).leave();
            Err(error)
        }
    }
}
