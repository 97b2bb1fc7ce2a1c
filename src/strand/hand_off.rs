//! Handing a core from one strand straight to the next.
//!
//! When a strand yields or blocks, its core's loop would end the strand's
//! turn (requeue or unschedule its fibre), take the next task from its
//! queues and, if that is a fibre, start a turn of it: two context
//! switches, through the core's scheduler context. When the next task is
//! known to be a fibre's, the strand does that work itself and switches
//! once, straight to the next strand, which ends the first one's turn
//! where the core's loop would have.
//!
//! # Protocol
//!
//! Strand A, running on core C in a turn of its fibre FA, leaves with
//! outcome `Yielded`, `Blocked` or `Preempted`:
//!
//! 1. It asks the pool for C's next task, as the loop would pick it.
//!    Yielding or blocking (`PoolRef::take_next_fibre`): the newest task C
//!    spawned for itself, in C's LIFO slot unless an idle core took it
//!    meanwhile, or else the oldest in C's queue; none if C is due to look
//!    at its mailboxes, timers and flags. Preempted
//!    (`PoolRef::take_fibre_after_preemption`), A goes on where the loop
//!    would: if C's own queues are empty or due, it expires deadlines,
//!    drains C's mailboxes and takes back its steal list or the injector,
//!    and falls back to the next preempted strand's turn. So a strand that
//!    an interrupt woke for C, which outranks A, gets the core straight
//!    from the preemption, and a tick passes the core from one turn to the
//!    next without the loop. Only a fibre's task is taken. Taking
//!    it is C starting that fibre FB's turn: C now holds FB's schedule,
//!    as it holds FA's.
//! 2. It starts the turn as the fibre's task would (`take_runnable`): FB's
//!    next runnable strand B is made resident on FB's stack, copying
//!    stacks if need be. FB is not FA (FA's task is held by C, in no
//!    queue), so nothing touches the stack A runs on. If FB has nothing to
//!    run, that turn ends there and A leaves through the scheduler.
//! 3. It names B as C's running strand (`enter`), records itself in C's
//!    `handed_from` (its outcome is in C's `end` already), and
//!    switches to B with a message naming C ([`crate::context::hand_off`];
//!    a plain resume's message is 0). The switch leaves C's scheduler link as it was: when B leaves
//!    for the scheduler, it returns from the same `resume` that entered A.
//! 4. B, on C, sees the message (or, entered for the first time, looks
//!    anyway) and ends A's turn (`after_turn`: requeue or unschedule FA),
//!    then lets C offer its surplus as after any task.
//!
//! # Why it is safe
//!
//! - A is resumable only once FA's turn ends, because until then C holds
//!   FA's schedule: a waker that makes A runnable only pushes it into
//!   FA's inbox. FA's turn ends in step 4, after the switch has saved A's
//!   context; so no core resumes A before its registers are saved.
//! - The copy-swap invariant holds: step 2 copies only into FB's stack,
//!   which no strand runs on (C holds FB's schedule, and B is not running
//!   yet); A's stack is not touched while A runs on it.
//! - Both strands hold a deferral from before the switch until after step
//!   4, so no tick preempts them in between; C's strand slots are touched
//!   only by C.
//! - The loop's order is kept: the next task is the one the loop would
//!   have run (the loop requeues A's fibre at the back of the queue, after
//!   the task chosen in step 1), the loop's count toward looking at its
//!   mailboxes is advanced, and the turn is counted as a task run.
//! - A preempted A's fibre joins the turns only in step 4, once A's
//!   registers are saved, where the loop would have queued it before
//!   choosing: so step 1 counts A's own turn as waiting at the back of its
//!   level (`Preempted::take_beside`), and if the round picks it, A goes on
//!   with a fresh slice and no switch. The weights of the round are kept.
//!   A pinned A goes through the loop, which queues it on its own core.

use super::control::Header;
use super::fibre::{self, Fibre};
use super::scheduler::{after_turn, enter, take_runnable};
use crate::atomics::unmodelled::Ordering::Relaxed;
use crate::context;
use crate::pool::core_turn::TurnEnd;
use crate::pool::seam::{AfterPreemption, PoolRef};
use core::ptr::{self, NonNull};

/// The stack a preempted strand must have left to look for the next task
/// itself (`PoolRef::take_fibre_after_preemption`, whose mailbox drain
/// alone takes over a kilobyte), with a margin.
const PREEMPTED_LOOK_BYTES: usize = 4096;

/// About where the caller's stack is now.
#[inline(always)]
fn stack_pointer() -> usize {
    let marker = 0u8;
    ptr::addr_of!(marker) as usize
}

/// The message for a strand entered by a hand-off on core `me`: never 0,
/// which a plain resume brings.
fn message(me: usize) -> usize {
    me + 1
}

/// The core that handed the resumed strand its turn, from the message its
/// switch returned; `None` after a plain resume.
pub(super) fn handed_on(message: usize) -> Option<usize> {
    message.checked_sub(1)
}

/// The strand core `me`'s running strand `from` may hand the core to, its
/// turn started (steps 1 and 2 of the module docs); `None` if the core
/// should go through its scheduler.
///
/// # Safety
///
/// Called by the running strand `from`, on core `me`, deferring.
#[inline(always)]
pub(super) unsafe fn next_strand(
    shared: PoolRef<'_>,
    me: usize,
    from: *mut Header,
    outcome: TurnEnd,
) -> Option<Handing> {
    // SAFETY: the running strand's header is live.
    let from = unsafe { &*from };
    let from_fibre = from.fibre;
    // An overflowed stack is reported by the scheduler, not here.
    let ready = || from_fibre.canary_intact();
    let task = match outcome {
        // A pinned fibre's turn is its core's queue, which the loop keeps.
        TurnEnd::Preempted if from_fibre.pinned.load(Relaxed) => return None,
        // The look for work drains mailboxes and expires deadlines on the
        // preempted strand's stack, at whatever depth the tick found it: a
        // strand without room for that leaves through the loop, which
        // runs on the core's own stack.
        TurnEnd::Preempted if from_fibre.room_below(stack_pointer()) < PREEMPTED_LOOK_BYTES => return None,
        TurnEnd::Preempted => {
            let level = from.priority.load(Relaxed);
            match shared.take_fibre_after_preemption(me, level, fibre::is_fibre_task, ready)? {
                AfterPreemption::Next(task) => task,
                AfterPreemption::Same => return Some(Handing::Stay),
            }
        }
        _ => shared.take_next_fibre(me, fibre::is_fibre_task, ready)?,
    };
    // SAFETY: a fibre's task, which the core now runs.
    let fibre = unsafe { Fibre::from_task(task) };
    let (strand, more) = take_runnable(shared, me, fibre)?;
    Some(Handing::To(Next { fibre, strand, more }))
}

/// Where a leaving strand's core goes, when not through its scheduler.
pub(super) enum Handing {
    /// To this strand (step 3).
    To(Next),
    /// Nowhere: the strand was preempted, and its own turn is next.
    Stay,
}

/// A strand whose turn has started, ready to be handed the core.
pub(super) struct Next {
    fibre: &'static Fibre,
    strand: NonNull<Header>,
    more: bool,
}

/// Switches from the running strand `from` to `next` on core `me` (step
/// 3); returns `from`'s message when it is resumed.
///
/// # Safety
///
/// Called by the running strand `from` on core `me`, deferring, its
/// outcome recorded in the core's `outcome`, and `next` from
/// [`next_strand`].
// Inlined into the yield: a call would save and restore registers around
// the one switch a yield is for.
#[inline(always)]
pub(super) unsafe fn switch(shared: PoolRef<'_>, me: usize, from: *mut Header, next: Next) -> usize {
    // SAFETY: the caller's contract: `me` is the calling core.
    let core = unsafe { shared.own_turn(me) };
    // SAFETY: the caller's contract; our core's slots; both headers are
    // live (their strands' own references).
    unsafe {
        enter(shared, me, next.fibre, next.strand, next.more);
        *core.handed_from.get() = Header::task(NonNull::new_unchecked(from)).as_ptr();
        context::hand_off(
            (*from).context.get(),
            next.strand.as_ref().context.get(),
            core.loop_context.get(),
            message(me),
        )
    }
}

/// Ends the turn of the strand that handed core `me` of `shared` to the
/// running one, if one did (step 4).
#[inline(always)]
pub(super) fn finish_previous(shared: PoolRef<'_>, me: usize) {
    // SAFETY: `me` is the calling core: the one whose hand-off message
    // resumed us, and we still defer.
    let core = unsafe { shared.own_turn(me) };
    // SAFETY: our core's slots; the record was left by the strand that ran
    // here just before us, which is suspended now, and its outcome is
    // still the core's (we have not left yet).
    let (previous, outcome) = unsafe {
        (
            NonNull::new(core.handed_from.get().replace(ptr::null_mut())).map(Header::from_task),
            *core.end.get(),
        )
    };
    let Some(previous) = previous else { return };
    after_turn(shared, me, previous, outcome);
    shared.after_task(me);
}
