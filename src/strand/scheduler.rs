//! Running strands on a core: the fibre's task, copy-swap, suspending and
//! waking.
//!
//! A core runs a fibre by running its task: it takes the strands that were
//! made runnable (the fibre's inbox), makes the first one resident (copying
//! stacks if another strand's stack is in the fibre) and switches to it.
//! The strand runs until it blocks, yields or finishes; each of those
//! switches back to the core's scheduler context, here, which then either
//! keeps the fibre scheduled (more runnable strands) or unschedules it
//! (the inbox protocol of `crate::mailbox::inbox`).
//!
//! The copy-swap invariant (docs/design.md) holds because the only stack
//! addresses kept anywhere are the saved stack pointers in control blocks,
//! and those are used only when their strand is made resident again.

use super::control::{FINISHED, Header, flags, state};
use super::fibre::{Fibre, Owned};
use super::hand_off::Handing;
use super::{failure, tree};
use crate::atomics::unmodelled::Ordering::*;
use crate::context;
use crate::pool::core_turn::TurnEnd;
use crate::pool::current;
use crate::pool::seam::PoolRef;
use crate::task::{Action, Task};
use core::mem;
use core::ptr::{self, NonNull};

/// The calling core's pool and index, if it is a pool's core.
///
/// Looked up afresh on every call: a strand may have moved to another
/// core since it last asked.
#[inline]
pub(crate) fn here() -> Option<(PoolRef<'static>, usize)> {
    // The view does not outlive this core's turn: callers use it and drop
    // it before they can be moved.
    current::with(|worker| worker.map(|w| (w.pool(), w.core)))
}

/// [`here`], for a caller that cannot be moved to another core meanwhile,
/// so it takes no deferral of its own.
///
/// # Safety
///
/// The caller holds a deferral, or runs no strand.
#[inline]
pub(crate) unsafe fn here_deferring() -> Option<(PoolRef<'static>, usize)> {
    // SAFETY: per the contract.
    unsafe { current::with_held(|worker| worker.map(|w| (w.pool(), w.core))) }
}

/// The strand running on the calling core, if any.
///
/// Found from the stack the caller runs on, not from the core: strand code
/// always runs on its own fibre's stack, and the fibre names the strand it
/// runs. So the answer stays right if the strand is moved to another core
/// at any instruction (a preemption), where a look-up by core index could
/// read the core, be moved, and then read another core's strand. Outside
/// strands (a core's loop and its tasks, an interrupt handler's stack, a
/// thread outside the pool) the stack is not a fibre's: `None`.
#[inline]
pub(crate) fn current() -> Option<NonNull<Header>> {
    let marker = 0u8;
    let fibre = Fibre::containing(ptr::addr_of!(marker) as usize)?;
    NonNull::new(fibre.running.load(Relaxed))
}

/// The strand running on `core` of `shared`, which must be the calling core.
#[inline]
pub(crate) fn running_on(shared: PoolRef<'_>, core: usize) -> Option<NonNull<Header>> {
    // SAFETY: the calling core's own slot (contract).
    NonNull::new(unsafe { shared.own_turn(core) }.running.load(Relaxed)).map(Header::from_task)
}

/// Switches from the running strand back to its core's scheduler, or
/// straight to the strand the scheduler would run next (`hand_off`).
/// Returns when the strand is resumed, possibly on another core.
///
/// # Safety
///
/// Called by the running strand, with `outcome` true of it: if `Blocked`,
/// a waker can find it; if `Finished`, it never expects to return.
pub(crate) unsafe fn suspend(outcome: TurnEnd) {
    // The core found here must stay ours until we switch away.
    let _deferral = crate::strand::deferral::defer();
    // SAFETY: the caller's contract, and we hold a deferral.
    unsafe { suspend_deferring(outcome) };
}

/// [`suspend`], for a strand that already holds a deferral (a preempted
/// one holds the tick's).
///
/// # Safety
///
/// As for [`suspend`], and the caller holds a deferral.
// Out of line: inlined into `suspend`, its one caller, it cost blocking
// paths 3 instructions each (measured with benches/bare-metal).
#[inline(never)]
pub(crate) unsafe fn suspend_deferring(outcome: TurnEnd) {
    // SAFETY: we hold a deferral.
    let (shared, me) = unsafe { here_deferring() }.expect("a strand runs on a core");
    // SAFETY: the caller's contract; the core is ours (deferring).
    unsafe { switch_out(shared, me, outcome) };
}

/// [`suspend_deferring`], for a caller that has found its core.
///
/// # Safety
///
/// As for [`suspend_deferring`], with `me` the calling core of `shared`.
pub(crate) unsafe fn suspend_on(shared: PoolRef<'_>, me: usize, outcome: TurnEnd) {
    // SAFETY: the caller's contract.
    unsafe { switch_out(shared, me, outcome) };
}

/// [`suspend`], for a core already found.
///
/// # Safety
///
/// As for [`suspend`], with `me` the calling core, held (deferring).
#[inline(always)]
unsafe fn switch_out(shared: PoolRef<'_>, me: usize, outcome: TurnEnd) {
    // SAFETY: the caller's contract: `me` is the calling core.
    let core = unsafe { shared.own_turn(me) };
    // SAFETY: our core's slot; the caller is its current strand.
    let strand: *mut Header = core.running.load(Relaxed).cast();
    // SAFETY: our core's slots.
    let message = unsafe {
        *core.end.get() = outcome;
        let handing = matches!(outcome, TurnEnd::Yielded | TurnEnd::Blocked | TurnEnd::Preempted);
        match handing.then(|| super::hand_off::next_strand(shared, me, strand, outcome)).flatten() {
            Some(Handing::To(next)) => super::hand_off::switch(shared, me, strand, next),
            Some(Handing::Stay) => {
                renew_slice(shared, me);
                0
            }
            None => context::suspend((*strand).context.get(), core.loop_context.get()),
        }
    };
    if let Some(core) = super::hand_off::handed_on(message) {
        // We run again, in a turn of our fibre, which a live pool holds:
        // the one whose core `core` handed us.
        // SAFETY: our own header, live while we run.
        let pool = unsafe { (*strand).fibre.pool() };
        super::hand_off::finish_previous(pool, core);
    }
}

/// Lets other work on the running strand's core go first. If there is
/// none, the core would only requeue the strand's fibre and resume it at
/// once: the strand then goes on without switching, and the turn counts
/// as taken (`PoolRef::continues_in_place`). Returns `false`, doing
/// nothing, outside strands.
pub(crate) fn yield_running() -> bool {
    // The core found here must stay ours while we look at it.
    let _deferral = crate::strand::deferral::defer();
    // SAFETY: we hold a deferral.
    let Some((shared, me)) = (unsafe { here_deferring() }) else { return false };
    // SAFETY: the core just found, held by our deferral.
    let core = unsafe { shared.own_turn(me) };
    // SAFETY: our core's slot: the strand it runs, if it runs one, and
    // then that is us (code outside strands runs with it null).
    let strand: *mut Header = core.running.load(Relaxed).cast();
    if strand.is_null() {
        return false;
    }
    // SAFETY: our core's slot, written before this strand was resumed;
    // its header is live while it runs.
    let alone = unsafe { !*core.fibre_has_more.get() && !(*strand).fibre.inbox.has_tasks() };
    if !(alone && shared.continues_in_place(me)) {
        // SAFETY: we are the running strand, still runnable; deferring.
        unsafe { switch_out(shared, me, TurnEnd::Yielded) };
    }
    true
}

/// The entry point of every strand, on its own stack.
pub(crate) extern "C" fn strand_entry(header: usize) -> ! {
    let header = NonNull::new(header as *mut Header).expect("a strand starts with its control block");
    // Entered by a hand-off, perhaps: the first switch brings no message.
    if let Some((shared, me)) = here() {
        super::hand_off::finish_previous(shared, me);
    }
    // Created deferring (so a tick before the first switch leaves it
    // alone): its own code may be preempted from here on.
    // SAFETY: the running strand's header.
    unsafe { header.as_ref() }.no_preempt.store(0, Relaxed);
    // SAFETY: the strand runs its closure once, here.
    unsafe { Header::run(header) };
    // SAFETY: the running strand's header.
    unsafe { header.as_ref() }.flags.fetch_or(flags::FINISHING, SeqCst);
    finish(header)
}

/// Finishes the running strand `me`, whose result (value or failure) is
/// in its payload: ends its body's frame (cancelling and waiting for the
/// strands anchored there), publishes the result to its joiner, leaves the
/// tree, passing an unclaimed failure up, and switches away for good.
pub(crate) fn finish(me: NonNull<Header>) -> ! {
    // Finishing is roving's code to the end: the deferral is never dropped.
    core::mem::forget(crate::strand::deferral::defer());
    // SAFETY: the running strand's header, live until the core drops the
    // strand's own reference after the switch below.
    let header = unsafe { me.as_ref() };
    // Locks first: the children waited for below may need them. A failed
    // strand's guards are never dropped (bare metal) or already were (host).
    let failed_early = header.flags.load(SeqCst) & flags::FAILED != 0;
    // SAFETY: the running strand, finishing.
    unsafe { super::lock::release_held(me, failed_early) };
    let live = tree::end_frame(me, None);
    let escalated = tree::take_escalated(header);
    let state = header.flags.load(SeqCst);
    if state & flags::FAILED == 0 {
        // A cancelled strand that returns leaves its children by design
        // (they were cancelled with it): only a normal return is an error.
        let left_early = live > 0 && state & flags::CANCELLED == 0;
        let failure = escalated.or_else(|| left_early.then(|| failure::live_strands(Some(header.id), live)));
        if let Some(failure) = failure {
            // SAFETY: our own payload.
            unsafe { Header::fail(me, failure) };
        }
    }
    if header.flags.load(SeqCst) & flags::FAILED != 0 {
        // The handle may take the failure to another domain: it must be
        // able to send it back to this pool. (A rare path: only failures.)
        // SAFETY: our own payload, not yet published (no `DONE`).
        if let Some(mut failure) = unsafe { Header::take_failure(me) } {
            // A fibre with strands is held by a live pool.
            failure.set_origin(header.fibre.pool().downgrade());
            // SAFETY: as above.
            unsafe { Header::fail(me, failure) };
        }
    }
    publish_end(me);
    // SAFETY: we are the running strand, finished.
    unsafe { suspend(TurnEnd::Finished) };
    unreachable!("a finished strand is never resumed");
}

/// The end of [`finish`] that others may see: marks strand `me` done,
/// stops counting it, takes it out of the tree, wakes its joiner and
/// passes an unclaimed failure up. Called by the strand itself as it
/// finishes, or on its behalf for a strand lost with its core
/// (`super::failure::lose`), which never runs again.
pub(crate) fn publish_end(me: NonNull<Header>) {
    // SAFETY: the strand's header, live until its own reference is dropped.
    let header = unsafe { me.as_ref() };
    let before = header.flags.fetch_or(flags::DONE, SeqCst);
    let failed = before & flags::FAILED != 0;
    // Stopped by a cancel from above: that failure is what was asked for.
    let passes_up = failed && before & flags::CUT_SHORT == 0;
    // The handle is gone, so the result is ours: a failure goes up.
    let unclaimed = if passes_up && before & flags::HANDLE_GONE != 0 {
        // SAFETY: the result is ours (we came second, after the handle).
        unsafe { Header::take_failure(me) }
    } else {
        None
    };
    // No longer live, before anyone hears that we ended: not our joiner,
    // and not a parent waiting in its frame's end for us to leave the
    // tree (it may then end and be joined at once). Whoever reads the
    // pool's count after that must not count us. (The core still has to
    // switch away; quiescence also waits for every core to be asleep. A
    // parent waiting for us is live, so this is never the last strand
    // while we are still anchored to a frame.)
    // A fibre with strands is held by a live pool.
    header.fibre.pool().strand_ended();
    // Leave the tree before telling the joiner, so a parent that joined
    // us never finds us still anchored to its frame.
    // SAFETY: finishing; the tree does not touch us after this.
    let unclaimed = unsafe { tree::leave(me, unclaimed) };
    let joiner = header.joiner.swap(FINISHED, AcqRel);
    if let Some(joiner) = NonNull::new(joiner) {
        signal(joiner, state::SIGNALLED);
        // SAFETY: the joiner lent us a reference to make this call safe.
        unsafe { Header::release(joiner) };
    }
    if unclaimed.is_some() || (passes_up && before & flags::ROOT != 0) {
        // A fibre with strands is held by a live pool.
        header.fibre.pool().fail(unclaimed);
    }
}

/// Moves a blocked strand's state to `cause`, if a wait it is in may be
/// ended that way: a cancel (`INTERRUPTED`) ends only unshielded waits.
/// Returns whether this call won.
pub(crate) fn claim(header: &Header, cause: u8) -> bool {
    let exchange = |from| header.state.compare_exchange(from, cause, AcqRel, Acquire).is_ok();
    exchange(state::BLOCKED) || (cause != state::INTERRUPTED && exchange(state::BLOCKED_SHIELDED))
}

/// Moves a blocked strand to `cause` (`SIGNALLED`, `TIMED_OUT` or
/// `INTERRUPTED`) and makes it runnable. Returns `false` if it was not
/// blocked, or not in a wait `cause` may end (another waker, its deadline
/// or a cancel won), in which case nothing happens.
pub(crate) fn signal(strand: NonNull<Header>, cause: u8) -> bool {
    // SAFETY: a blocked strand's header is live until it is resumed, and
    // it cannot be resumed before the push below.
    if !claim(unsafe { strand.as_ref() }, cause) {
        return false;
    }
    // Before the push, after which the strand may run (and its turn's
    // start would come first in the trace).
    trace_here!(crate::trace::event::TraceEvent::StrandWoken {
        // SAFETY: as above.
        strand: unsafe { strand.as_ref() }.id.get() as u32,
        by: woken_by(cause),
    });
    make_runnable(strand);
    true
}

/// What the trace calls a wake with `cause` (a `state::*` value).
#[cfg(feature = "trace")]
fn woken_by(cause: u8) -> crate::trace::event::Woken {
    use crate::trace::event::Woken;
    match cause {
        state::TIMED_OUT => Woken::TimedOut,
        state::INTERRUPTED => Woken::Cancelled,
        _ => Woken::Signalled,
    }
}

/// Puts a strand in its fibre's inbox, scheduling the fibre if it was idle.
// Out of line: inlined into every waker, it made their register saves
// dearer.
#[inline(never)]
pub(crate) fn make_runnable(strand: NonNull<Header>) {
    queue_in_fibre(strand, Caller::Unknown);
}

/// [`make_runnable`] for a strand just spawned by core `me` of its pool
/// (`None`: from outside it), which need not look its core up again.
///
/// # Safety
///
/// `me` is right and stays right: the caller holds a deferral, or runs no
/// strand.
pub(crate) unsafe fn make_spawned_runnable(strand: NonNull<Header>, me: Option<usize>) {
    queue_in_fibre(strand, Caller::Known(me));
}

/// Who makes a strand runnable, as far as its fibre's pool is concerned.
#[derive(Clone, Copy)]
enum Caller {
    /// Not known: the pool looks its core up.
    Unknown,
    /// Core `Some(core)` of the pool, or outside it (`None`), and sure to
    /// stay there (`make_spawned_runnable`'s contract).
    Known(Option<usize>),
}

/// [`make_runnable`]'s body. Inline into both callers: with `caller` a
/// constant there, each keeps one arm of `push_and_schedule`'s match.
#[inline(always)]
fn queue_in_fibre(strand: NonNull<Header>, caller: Caller) {
    // SAFETY: as in `signal`; the fibre is static.
    let fibre = unsafe { strand.as_ref() }.fibre;
    // The core is marked before the push: after it the strand may run, end
    // and take its fibre's hold on the pool with it. Its tick is asked for
    // after the push (a core index needs no pool): a tick that came first
    // would preempt, find nothing new and give the core to the next turn
    // for a whole slice (seen on the Pi 3: High wakes slower than Normal).
    if !crate::preempt::deferral::any_pool_preempts() {
        // Apart, so that a cooperative program's wake ends in a tail call.
        return push_and_schedule(fibre, strand, caller, false);
    }
    let mut tick_for = None;
    // SAFETY: as above.
    let level = unsafe { strand.as_ref() }.priority.load(Relaxed);
    if level > crate::strand::Priority::Low as u8 {
        let to = fibre.last_core.load(Relaxed);
        // A fibre with strands is held by a live pool.
        tick_for = fibre.pool().woken(level, to).then_some(to);
    }
    push_and_schedule(fibre, strand, caller, tick_for.is_some());
    if let Some(to) = tick_for {
        crate::platform::request_tick_on(to);
    }
}

/// Puts `strand` in `fibre`'s inbox, and if the fibre was idle sends it
/// to the core that last ran it. `outranks`: the strand outranks the one
/// that core runs, which the tick at the end of this interrupt, if this is
/// one, will preempt.
#[inline(always)]
fn push_and_schedule(fibre: &'static Fibre, strand: NonNull<Header>, caller: Caller, outranks: bool) {
    // SAFETY: the strand is in no list (it was running or blocked).
    if !unsafe { fibre.inbox.push(Header::task(strand)) } {
        return;
    }
    crate::chaos::point();
    // A fibre with strands is held by a live pool (the fibre owns a
    // reference to it).
    let pool = fibre.pool();
    let (task, to, pinned) = (fibre.task(), fibre.last_core.load(Relaxed), fibre.pinned.load(Relaxed));
    // A handler waking a strand that outranks the one it interrupted, on
    // that strand's own core: the fibre goes where the core itself would
    // put it, so that the preemption at the handler's end hands the core
    // to it at once instead of draining the mailbox a handler's wake
    // would otherwise go through.
    if outranks && handler_interrupted_own_code_of(pool, to) {
        // SAFETY: the check just made is the contract: a handler on core
        // `to` of this pool, which interrupted its strand's own code; the
        // task is the fibre's, scheduled by the push above and in no list.
        if unsafe { pool.queue_from_handler_on(to, task, pinned) } {
            return;
        }
    }
    match caller {
        Caller::Unknown => _ = pool.schedule_fibre(task, to, pinned),
        // SAFETY: `make_spawned_runnable`'s contract.
        Caller::Known(me) => _ = unsafe { pool.schedule_fibre_from(me, task, to, pinned) },
    }
}

/// Whether the caller is an interrupt handler that interrupted core `to`
/// of `pool` while the strand there ran its own code (its deferral count
/// 0): then nothing else touches that core's queues until the handler
/// returns, as for the tick (`crate::preempt::on_tick`).
#[inline(never)]
fn handler_interrupted_own_code_of(pool: PoolRef<'_>, to: usize) -> bool {
    if !crate::platform::in_interrupt() {
        return false;
    }
    let Some((shared, me)) = current::interrupted_worker() else { return false };
    // SAFETY: the strand the interrupted core runs; its header lives while
    // it runs, which it does until this handler returns.
    me == to
        && shared.same(pool)
        && running_on(shared, me)
            .is_some_and(|strand| unsafe { strand.as_ref() }.no_preempt.load(Relaxed) == 0)
}

/// The fibre's task: run its next runnable strand (`fibre::run`).
pub(crate) fn run_fibre(fibre: &'static Fibre, action: Action) {
    if action == Action::Discard {
        // The pool stopped with strands still on this fibre. They cannot
        // be unwound without cancellation, so the fibre and their control
        // blocks are left as they are (not freed: a wait queue may still
        // point at them).
        return;
    }
    let (shared, me) = here().expect("fibres run on a pool's cores");
    let Some((strand, more)) = take_runnable(shared, me, fibre) else { return };
    // SAFETY: the core the fibre's task runs on, which we are.
    let core = unsafe { shared.own_turn(me) };
    // SAFETY: the strand is resident and ours to run; our core's slots.
    let (strand, outcome) = unsafe {
        enter(shared, me, fibre, strand, more);
        context::resume(strand.as_ref().context.get(), core.loop_context.get());
        // Whichever strand came back: the one resumed, or the last of
        // those that handed the core on (`hand_off`).
        let back = core.running.load(Relaxed);
        core.running.store(ptr::null_mut(), Relaxed);
        if shared.slice_ticks() != 0 {
            core.urgent.running(None);
        }
        (Header::from_task(NonNull::new(back).expect("a strand came back")), *core.end.get())
    };
    after_turn(shared, me, strand, outcome);
}

/// Starts a turn of `fibre`'s task on core `me`: takes its next runnable
/// strand and makes it resident. Returns it, and whether more of the
/// fibre's strands are runnable; or `None` when there is nothing to run
/// now, the turn already ended (the fibre unscheduled or requeued).
#[inline(always)]
pub(super) fn take_runnable(
    shared: PoolRef<'_>,
    me: usize,
    fibre: &'static Fibre,
) -> Option<(NonNull<Header>, bool)> {
    fibre.last_core.store(me, Relaxed);
    // SAFETY: we run the fibre's task, so we hold its schedule.
    let owned = unsafe { fibre.owned() };
    let task = match fibre.inbox.take_all() {
        // The commonest turn: one strand woken and none queued, which
        // needs no reversal through the queue.
        // SAFETY: a taken chain is ours.
        Some(only) if owned.runnable.len() == 0 && unsafe { Task::next(only) }.is_null() => only,
        chain => {
            // SAFETY: as above.
            unsafe { owned.runnable.append_reversed(chain) };
            let Some(task) = owned.runnable.pop_front() else {
                end_turn(shared, me, fibre, owned);
                return None;
            };
            task
        }
    };
    let strand = Header::from_task(task);
    if !make_resident(shared, me, fibre, owned, strand) {
        // The resident strand cannot be moved out now (no memory for its
        // stack, or its stack is lent): try again later rather than fail.
        // SAFETY: the task came out of this queue.
        unsafe { owned.runnable.push_back(task) };
        requeue(shared, me, fibre);
        return None;
    }
    Some((strand, owned.runnable.len() > 0))
}

/// Names `strand`, resident on `fibre`, as the strand core `me` runs
/// next, and starts its time slice.
///
/// # Safety
///
/// `me` is the calling core; the strand is ours to run (from
/// [`take_runnable`]), `more` as that returned.
#[inline(always)]
pub(super) unsafe fn enter(
    shared: PoolRef<'_>,
    me: usize,
    fibre: &Fibre,
    strand: NonNull<Header>,
    more: bool,
) {
    // SAFETY: the caller's contract: `me` is the calling core.
    let core = unsafe { shared.own_turn(me) };
    // SAFETY: the strand's own reference keeps its header live; our
    // core's slots.
    unsafe {
        let header = strand.as_ref();
        trace_point!(
            shared,
            me,
            crate::trace::event::TraceEvent::StrandIn { strand: header.id.get() as u32 }
        );
        fibre.resident_id.store(header.id.get(), Relaxed);
        fibre.running.store(strand.as_ptr(), Relaxed);
        // Named before the tick is asked for: a tick that comes before the
        // switch must find the strand (deferring, so it asks again), or it
        // would take the core for idle and ask for no tick at all.
        core.running.store(Header::task(strand).as_ptr(), Relaxed);
        *core.fibre_has_more.get() = more;
        if shared.slice_ticks() != 0 {
            core.urgent.running(Some(header.priority.load(Relaxed)));
            renew_slice(shared, me);
        }
    }
}

/// Starts a fresh time slice for the strand core `me` runs, and asks for
/// the tick at its end (pools with a slice).
fn renew_slice(shared: PoolRef<'_>, me: usize) {
    let end = crate::platform::ticks().saturating_add(shared.slice_ticks());
    // SAFETY: `me` is the calling core (contract).
    unsafe { shared.own_turn(me) }.slice_end.store(end, Relaxed);
    crate::platform::request_tick(Some(end));
}

/// Ends the turn of `strand`, which left core `me` with `outcome` and is
/// no longer running: requeues its fibre, or unschedules it.
#[inline(always)]
pub(super) fn after_turn(shared: PoolRef<'_>, me: usize, strand: NonNull<Header>, outcome: TurnEnd) {
    // SAFETY: the header is live (the strand's own reference).
    let header = unsafe { strand.as_ref() };
    let fibre = header.fibre;
    // SAFETY: the strand's turn is a turn of its fibre's task, which this
    // core runs, so it holds the fibre's schedule.
    let owned = unsafe { fibre.owned() };
    let task = Header::task(strand);
    assert!(fibre.canary_intact(), "strand {} overflowed the stack of fibre {}", header.id, fibre.index());
    trace_point!(shared, me, {
        use crate::trace::event::{Left, TraceEvent};
        let left = match outcome {
            TurnEnd::Yielded => Left::Yielded,
            TurnEnd::Preempted => Left::Preempted,
            TurnEnd::Blocked => Left::Blocked(header.reason()),
            TurnEnd::Finished => Left::Finished,
        };
        TraceEvent::StrandOut { strand: header.id.get() as u32, left }
    });
    match outcome {
        // SAFETY: the strand is runnable and in no list.
        TurnEnd::Yielded => unsafe { owned.runnable.push_back(task) },
        TurnEnd::Preempted => {
            // SAFETY: as above.
            unsafe { owned.runnable.push_back(task) };
            let level = header.priority.load(Relaxed);
            shared.requeue_preempted(me, fibre.task(), fibre.pinned.load(Relaxed), level);
            return;
        }
        TurnEnd::Blocked => {}
        TurnEnd::Finished => {
            owned.resident = ptr::null_mut();
            fibre.resident_id.store(0, Relaxed);
            fibre.running.store(ptr::null_mut(), Relaxed);
            // SAFETY: the strand's own reference; it never runs again.
            unsafe { Header::release(strand) };
            if owned.runnable.len() == 0 && !fibre.inbox.finish() {
                // Unscheduled: whoever makes a strand runnable schedules it
                // again, unless this was the last strand and it is freed.
                crate::chaos::point();
                fibre.strand_left();
                return;
            }
            fibre.strand_left();
            requeue(shared, me, fibre);
            return;
        }
    }
    end_turn(shared, me, fibre, owned);
}

/// Keeps the fibre scheduled if it has runnable strands, else unschedules.
fn end_turn(shared: PoolRef<'_>, me: usize, fibre: &'static Fibre, owned: &mut Owned) {
    if owned.runnable.len() > 0 || fibre.inbox.has_tasks() || fibre.inbox.finish() {
        requeue(shared, me, fibre);
    }
}

/// Queues the fibre, still scheduled, behind this core's other work.
fn requeue(shared: PoolRef<'_>, me: usize, fibre: &'static Fibre) {
    shared.requeue_local(me, fibre.task(), fibre.pinned.load(Relaxed));
}

/// Makes `strand` the resident of `fibre`, saving the current resident's
/// stack and restoring the strand's. Returns `false` (changing nothing) if
/// memory for the save ran out, or if the resident's stack is lent to
/// scoped children.
#[inline(always)]
fn make_resident(
    shared: PoolRef<'_>,
    me: usize,
    fibre: &'static Fibre,
    owned: &mut Owned,
    strand: NonNull<Header>,
) -> bool {
    owned.resident == strand.as_ptr() || swap_in(shared, me, fibre, owned, strand)
}

/// [`make_resident`] when another strand's stack (or none) is in the
/// fibre: copies it out, and `strand`'s in. `shared` and `me` are for
/// the trace points alone.
#[inline(never)]
fn swap_in(
    _shared: PoolRef<'_>,
    _me: usize,
    fibre: &'static Fibre,
    owned: &mut Owned,
    strand: NonNull<Header>,
) -> bool {
    let top = fibre.stack_top();
    if let Some(outgoing) = NonNull::new(owned.resident) {
        // SAFETY: the resident strand's header is live.
        if unsafe { outgoing.as_ref() }.lent.load(SeqCst) > 0 {
            // Its scoped children borrow its stack: it stays where it is
            // until they finish (docs/design.md, the copy-swap invariant).
            return false;
        }
        // SAFETY: the resident strand is suspended (we hold the fibre), so
        // its context and save area are ours to touch.
        let (stack_pointer, saved) = unsafe {
            ((*outgoing.as_ref().context.get()).stack_pointer(), &mut *outgoing.as_ref().saved.get())
        };
        let used = top as usize - stack_pointer;
        let mut area = mem::replace(&mut owned.spare, super::save::SaveArea::empty());
        if !area.reserve(used) {
            owned.spare = area;
            return false;
        }
        // SAFETY: `[stack_pointer, top)` is the outgoing strand's used stack.
        unsafe { area.save(top, used) };
        *saved = area;
        trace_point!(_shared, _me, crate::trace::event::TraceEvent::StackSaved { bytes: used as u32 });
    }
    // SAFETY: the incoming strand is not running (we hold the fibre); its
    // image ends at the stack top, which nothing uses now.
    let _restored = unsafe {
        let incoming = &mut *strand.as_ref().saved.get();
        let restored = incoming.restore(top);
        owned.spare = mem::replace(incoming, super::save::SaveArea::empty());
        restored
    };
    trace_point!(_shared, _me, crate::trace::event::TraceEvent::StackRestored { bytes: _restored as u32 });
    owned.resident = strand.as_ptr();
    true
}
