//! Time slicing: a strand that has run for a whole slice while other work
//! waits for its core is made to yield by the core's timer interrupt
//! ([`Config::time_slice`](crate::Config::time_slice); off by default).
//! The design is in `docs/preemption.md`; the protocol is here.
//!
//! # Who does what
//!
//! - **The core**, when it switches to a strand of a pool with a slice,
//!   records when the slice ends and asks the platform for a tick then
//!   (`Platform::request_tick`). A cooperative pool asks for nothing.
//! - **The tick**, the platform's timer interrupt on that core, calls
//!   [`on_tick`]. It answers [`Tick::Preempt`] only when the core runs a
//!   strand of a pool with a slice, the slice is over, the strand is not
//!   deferring (below), and other work waits for the core (its private
//!   queues, its mailboxes, the injector, a preempted strand's turn,
//!   another strand of the same fibre, or a deadline that has passed:
//!   only a core between tasks expires timers), or the strand is being
//!   stopped (below). Otherwise it asks for the tick it needs next: the
//!   slice's end, a retry soon after a deferring strand leaves roving's
//!   code, or the end of a fresh slice when nothing waits. With no strand
//!   on the core it asks for none, so an idle or task-running core takes
//!   no ticks.
//! - **The platform**, told to preempt, makes the interrupted strand enter
//!   `roving_preempt_entry` when the interrupt returns (an injected call;
//!   per instruction set in `preempt/entry_*.rs`). The entry saves every
//!   register on the strand's own stack and calls `preempted`, which
//!   yields, handing the core straight to what its loop would run next
//!   (`strand`'s hand-off). When the strand runs again, on this core or
//!   another, the entry restores every register and resumes the
//!   interrupted instruction.
//! - **A wake from a handler** for a strand that outranks the running one
//!   asks for the tick on that core (`Platform::request_tick_on`); a
//!   platform whose handler is on that very core may treat the end of the
//!   handler as the tick, as roving-kernel does, so the woken strand runs
//!   as the handler returns.
//!
//! # Deferral
//!
//! A strand inside roving's own code holds a deferral (`preempt/deferral.rs`,
//! which every layer down to the platform seam uses), and a tick never
//! preempts a strand whose count is above 0.
//!
//! # Stopping a cancelled strand
//!
//! A tick past the slice's end that finds the strand cancelled, unshielded
//! and not deferring marks it `CANCEL_SEEN` (if it was not yet) and gives
//! it a fresh slice. A later such tick preempts it even with nothing else
//! waiting, and `preempted`, seeing the mark, fails it with `Interrupted`
//! and abandons its stack instead of yielding. Only the strand raises its
//! shield and the mark is never cleared, so a strand that drops its shield
//! gets its grace slice then. Deferral covers the rest: every point at
//! which abandoning the stack would tear roving's own state (a half-written
//! result, a wait record in a queue) is inside roving's code.
//!
//! # Why this is sound
//!
//! - A tick acts only on the strand that the core's scheduler slot names,
//!   and only at a count of 0: the core's scheduler sets the slot just
//!   before switching to the strand and clears it just after the strand
//!   switches back, and in both windows the strand's count is at least 1
//!   (it holds the deferral of `scheduler::suspend`, or, never run yet,
//!   the one it is created with). So a tick never preempts the scheduler,
//!   and never a strand that is not in user code.
//! - A preempted strand is an ordinary runnable strand whose extra state
//!   lies on its own stack, below its saved stack pointer: copy-swap saves
//!   and restores it with the rest of the stack, and the copy-swap
//!   invariant is unchanged (nothing points into that state from outside).
//! - The strand may resume on another core. Code that needs "the core I
//!   am on" holds a deferral while it uses the answer; the running strand
//!   finds itself through its stack (`scheduler::current`), which no move
//!   changes.

use crate::atomics::unmodelled::{Ordering::Relaxed, Ordering::SeqCst, compiler_fence};
use crate::platform;
use crate::pool::core_turn::TurnEnd;
use crate::pool::current;
use crate::pool::seam::PoolRef;
use crate::strand::cancel::interruptible;
use crate::strand::control::flags::CANCEL_SEEN;
use crate::strand::fibre::Fibre;
use crate::strand::scheduler;

/// What a timer tick should do about the strand it interrupted: the answer
/// of [`on_tick`] to the platform's timer interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a preemption the platform does not carry out is lost"]
pub enum Tick {
    /// Nothing to do now (roving asked for its next tick if it needs one).
    Continue,
    /// Make the interrupted code enter the preemption entry when the
    /// interrupt returns (see [`entry_address`] for what to set up).
    Preempt,
}

/// The address a platform makes a preempted strand resume at (module
/// docs; `preempt/entry_*.rs` states what each instruction set's entry
/// expects the interrupt handler to have set up).
pub fn entry_address() -> usize {
    entry::ENTRY as *const () as usize
}

/// Lazy vector state for the x86_64 bare-metal entry (its module docs).
#[cfg(all(target_arch = "x86_64", not(feature = "std")))]
pub use entry_x86_64::use_lazy_vector_state;

pub(crate) mod deferral;
#[cfg(target_arch = "aarch64")]
pub(crate) mod entry_aarch64;
#[cfg(target_arch = "x86_64")]
pub(crate) mod entry_x86_64;
/// The preemption entry, per instruction set (module docs).
#[cfg(target_arch = "aarch64")]
pub(crate) use entry_aarch64 as entry;
#[cfg(target_arch = "x86_64")]
pub(crate) use entry_x86_64 as entry;

pub use deferral::any_pool_preempts;

/// How long after a deferring strand the next tick looks again: a
/// sixteenth of the slice (roving's own code is short).
const RETRY_DIVISOR: u64 = 16;

/// Called by the platform's timer interrupt, on the core it interrupted:
/// decides whether the strand it interrupted is preempted (module docs),
/// and asks for the next tick the core needs.
///
/// It allocates nothing, takes no lock and never blocks. A platform that
/// cannot preempt never calls it.
pub fn on_tick() -> Tick {
    let Some((shared, me)) = current::interrupted_worker() else { return Tick::Continue };
    shared.answer_ping(me);
    let slice = shared.slice_ticks();
    if slice == 0 {
        return Tick::Continue;
    }
    let Some(strand) = scheduler::running_on(shared, me) else { return Tick::Continue };
    // SAFETY: the strand the core runs; its header lives while it runs.
    let header = unsafe { strand.as_ref() };
    // SAFETY: `me` is the interrupted core, running this pool.
    let slot = unsafe { shared.own_turn(me) };
    // A woken strand that outranks this one cuts its slice short; the
    // clock is then read only if the tick is not taken.
    let taken = slot.urgent.take(header.priority.load(Relaxed));
    let outranked = taken.outranked;
    let now = (!outranked).then(platform::ticks);
    if let Some(now) = now {
        let end = slot.slice_end.load(Relaxed);
        if now < end {
            platform::request_tick(Some(end));
            return Tick::Continue;
        }
    }
    let now = || now.unwrap_or_else(platform::ticks);
    if header.no_preempt.load(Relaxed) != 0 {
        if outranked {
            slot.urgent.keep(taken);
        }
        platform::request_tick(Some(now() + (slice / RETRY_DIVISOR).max(1)));
        return Tick::Continue;
    }
    let interruptible = interruptible(header);
    // Cancelled and computing, first seen: one more slice to reach a
    // checkpoint. Otherwise a fresh slice when nothing else waits.
    let fresh_slice = !outranked
        && if interruptible {
            header.flags.fetch_or(CANCEL_SEEN, Relaxed) & CANCEL_SEEN == 0
        } else {
            // SAFETY: we are on the core that runs the fibre's task,
            // interrupting its strand outside roving's code (count 0):
            // nothing else touches the fibre's private state or the core's
            // queues now.
            !unsafe { work_waiting(shared, me, header.fibre) }
        };
    if fresh_slice {
        let end = now() + slice;
        slot.slice_end.store(end, Relaxed);
        platform::request_tick(Some(end));
        return Tick::Continue;
    }
    // The strand is stopped in this interrupt: the entry and `preempted`
    // run under this deferral, released when the strand resumes.
    header.no_preempt.store(1, Relaxed);
    shared.count_preempted(me);
    Tick::Preempt
}

/// Whether core `me` has work other than the strand it runs: its own
/// queues, its mailboxes, the pool's injector, a preempted strand waiting
/// for its turn, another strand of the fibre it runs, or a deadline that
/// has passed. Constant time: each of these is a word or two to read (a
/// pool with a slice keeps two hints for its mailboxes, not a look at
/// every sender's list).
///
/// # Safety
///
/// Called on core `me` while it runs `fibre`'s strand outside roving's
/// code, so nothing holds the core's private state or the fibre's.
unsafe fn work_waiting(shared: PoolRef<'_>, me: usize, fibre: &Fibre) -> bool {
    // SAFETY: per the contract, nobody else touches these now.
    let (owned, core_has_work) = unsafe { (fibre.owned(), shared.has_work_for(me)) };
    // A due deadline counts: only a core between tasks expires timers, so
    // with every core in a strand a sleeper would never wake.
    owned.runnable.len() > 0 || fibre.inbox.has_tasks() || core_has_work || shared.timers().due()
}

/// Where the preemption entry goes once it has saved the strand's
/// registers: yields the strand, and returns when it runs again.
///
/// # Safety
///
/// Called only by `roving_preempt_entry`, on the stack of the strand that
/// [`on_tick`] preempted, under the deferral `on_tick` raised.
pub(crate) unsafe extern "C" fn preempted() {
    // The tick's deferral keeps the strand on this core until it switches
    // away, so the core's record names it (no look-up from the stack).
    // SAFETY: we hold that deferral.
    let (shared, core) = unsafe { scheduler::here_deferring() }.expect("only a strand is preempted");
    let me = scheduler::running_on(shared, core).expect("only a strand is preempted");
    // SAFETY: our own header.
    let header = unsafe { me.as_ref() };
    if interruptible(header) && header.flags.load(Relaxed) & CANCEL_SEEN != 0 && !unwinding() {
        // Returns only if the strand was already finishing.
        crate::strand::failure::interrupt_running(me);
    }
    // Marked for debuggers and dumps, which cannot tell a preempted
    // strand from one that yielded otherwise.
    header.preempted.store(1, Relaxed);
    // SAFETY: we are the running strand of `core`, still runnable, holding
    // the tick's deferral (`interrupt_running` returned without switching).
    unsafe { scheduler::suspend_on(shared, core, TurnEnd::Preempted) };
    header.preempted.store(0, Relaxed);
    // On bare metal, interrupts are masked before the deferral ends, and
    // stay masked: the entry restores the strand's registers with them
    // masked anyway, and its return to the interrupted code restores that
    // code's mask. Released first, a tick in the few instructions back to
    // the entry preempted the strand again, a second frame of saved
    // registers on top of this one: a strand spinning near its stack's
    // bottom overflowed (the `preempt` kernel on the Pi 3, at 2 cores).
    #[cfg(not(feature = "std"))]
    let _masked_until_the_entry_returns = crate::platform::disable_interrupts_raw();
    let count = &header.no_preempt;
    compiler_fence(SeqCst);
    count.store(count.load(Relaxed) - 1, Relaxed);
}

/// Whether the strand is unwinding a panic (host): its stack is not
/// abandoned then, since the unwinder keeps per-thread state that only a
/// finished unwind resets.
fn unwinding() -> bool {
    #[cfg(feature = "std")]
    return std::thread::panicking();
    #[cfg(not(feature = "std"))]
    false
}
