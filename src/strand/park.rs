//! Parking: a strand blocks until its [`Unparker`] wakes it, from another
//! strand, a task, code outside the pool, or an interrupt handler.
//!
//! Each strand has one park token, like a thread's in `std`: [`unpark`]
//! raises it and [`park`] takes it, blocking until it is raised. Unparks
//! while nobody parks coalesce into one, and an unpark that comes first
//! makes the next park return at once, so the usual loop is
//!
//! ```text
//! while !ready() { strand::park()?; }
//! ```
//!
//! The token lives in the strand's control block, never on its stack (the
//! copy-swap invariant), so an [`Unparker`] stays valid whether the strand
//! is resident, copied out, or finished.
//!
//! [`unpark`]: Unparker::unpark

use super::control::{Header, state};
use super::id::BlockReason;
use super::wait::{self, WaitEnd};
use super::{StrandId, WaitError, scheduler};
use crate::atomics::AtomicU8;
use crate::atomics::unmodelled::Ordering::SeqCst;
use crate::platform::instant::Instant;
use crate::platform::instant::deadline_after;
use crate::protocol::signal_word::{Register, SignalWord, StateWord, WAITING};
use core::fmt;
use core::ptr::NonNull;
use core::task::{RawWaker, RawWakerVTable, Waker};
use core::time::Duration;

/// Blocks the calling strand until its park token is raised, and takes it.
///
/// ```
/// use roving::{Pool, platform::host::Machine, strand};
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let ready = Arc::new(AtomicBool::new(false));
///         let me = strand::unparker().unwrap();
///         let flag = ready.clone();
///         roving::spawn_task(move || {
///             flag.store(true, Ordering::SeqCst);
///             me.unpark();
///         })
///         .unwrap();
///         while !ready.load(Ordering::SeqCst) {
///             strand::park().unwrap();
///         }
///     })
///     .unwrap();
/// })
/// .unwrap();
/// ```
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside strands; [`WaitError::Interrupted`]
/// in a cancelled strand.
pub fn park() -> Result<(), WaitError> {
    park_until(None)
}

/// As [`park`], giving up after `timeout`.
///
/// # Errors
///
/// [`WaitError::TimedOut`]; otherwise as for [`park`].
pub fn park_timeout(timeout: Duration) -> Result<(), WaitError> {
    park_until(Some(deadline_after(timeout)))
}

fn park_until(deadline: Option<Instant>) -> Result<(), WaitError> {
    crate::platform::refuse_in_handler("strand::park", crate::platform::HANDLERS_WAKE);
    let me = scheduler::current().ok_or(WaitError::NotAStrand)?;
    // SAFETY: the running strand's header is live while it runs, and the
    // token is a field of it (it moves nowhere when the strand does).
    let token = unsafe { &(*me.as_ptr()).park };
    token.park(deadline)
}

/// The calling strand's [`Unparker`].
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside strands.
pub fn unparker() -> Result<Unparker, WaitError> {
    let me = scheduler::current().ok_or(WaitError::NotAStrand)?;
    // SAFETY: the running strand's header is live; the reference taken
    // here keeps it so until the unparker is dropped.
    unsafe { me.as_ref() }.acquire();
    Ok(Unparker { strand: me })
}

/// Wakes one strand from [`park`]. Clone it and send it anywhere.
///
/// It holds a reference to the strand's control block, so it stays valid
/// after the strand finishes (an unpark then does nothing that matters).
pub struct Unparker {
    strand: NonNull<Header>,
}

// SAFETY: the header is shared between cores by design (its token is an
// atomic word), and the reference count keeps it alive.
unsafe impl Send for Unparker {}
// SAFETY: as above; `unpark` takes `&self` and only touches atomics.
unsafe impl Sync for Unparker {}

impl Unparker {
    /// Raises the strand's park token: its current or next [`park`]
    /// returns. **Interrupt-safe:** it never allocates, never takes a
    /// lock and never waits; the strand's pool is reached through a
    /// mailbox, as from outside the pool.
    pub fn unpark(&self) {
        // SAFETY: the reference this unparker holds keeps the header live.
        unsafe { self.strand.as_ref() }.park.unpark(self.strand);
    }

    /// A [`Waker`] that unparks the strand: what lets a strand poll a
    /// future itself ([`block_on`](crate::executor::block_on)). Waking it
    /// by reference is interrupt-safe, as [`Unparker::unpark`] is.
    pub fn into_waker(self) -> Waker {
        let strand = core::mem::ManuallyDrop::new(self).strand;
        // SAFETY: the data is a control block this unparker's reference
        // keeps, which the waker now holds; the vtable keeps the count.
        unsafe { Waker::from_raw(RawWaker::new(strand.as_ptr().cast(), &UNPARK)) }
    }

    /// The strand it wakes.
    pub fn strand(&self) -> StrandId {
        // SAFETY: as in `unpark`.
        unsafe { self.strand.as_ref() }.id
    }
}

impl Clone for Unparker {
    fn clone(&self) -> Self {
        // SAFETY: as in `unpark`.
        unsafe { self.strand.as_ref() }.acquire();
        Self { strand: self.strand }
    }
}

impl Drop for Unparker {
    /// Dropping the last reference frees the strand's control block, so
    /// this is not interrupt-safe: keep unparkers out of handlers' hands
    /// to drop (a `static` one is never dropped).
    fn drop(&mut self) {
        crate::platform::refuse_in_handler(
            "dropping an Unparker",
            "it may free memory, which a handler must not",
        );
        // SAFETY: this unparker's own reference, not used again.
        unsafe { Header::release(self.strand) };
    }
}

/// The waker of [`Unparker::into_waker`]: its data is the control block,
/// with one reference per waker, so it is an [`Unparker`] in disguise.
static UNPARK: RawWakerVTable =
    RawWakerVTable::new(unpark_clone, unpark_wake, unpark_wake_by_ref, unpark_drop);

/// The unparker a waker's data stands for.
///
/// # Safety
///
/// `data` is the data of a waker of [`UNPARK`], whose reference the
/// unparker takes over.
unsafe fn unparker_of(data: *const ()) -> Unparker {
    // SAFETY: a control block pointer, never null (contract).
    Unparker { strand: unsafe { NonNull::new_unchecked(data.cast_mut().cast()) } }
}

unsafe fn unpark_clone(data: *const ()) -> RawWaker {
    // SAFETY: the waker being cloned holds a reference.
    unsafe { (*data.cast::<Header>()).acquire() };
    RawWaker::new(data, &UNPARK)
}

unsafe fn unpark_wake(data: *const ()) {
    // SAFETY: the waker's reference, given up with the unparker.
    unsafe { unparker_of(data) }.unpark();
}

unsafe fn unpark_wake_by_ref(data: *const ()) {
    // SAFETY: the waker keeps its reference: the unparker is not dropped.
    core::mem::ManuallyDrop::new(unsafe { unparker_of(data) }).unpark();
}

unsafe fn unpark_drop(data: *const ()) {
    // SAFETY: the waker's reference, given up with the unparker.
    drop(unsafe { unparker_of(data) });
}

impl fmt::Debug for Unparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unparker").field("strand", &self.strand()).finish()
    }
}

/// A strand's park token (`crate::strand::park`): a signal in a byte of
/// its control block, whose one waiter is that strand.
pub(crate) struct ParkToken(SignalWord<AtomicU8>);

impl ParkToken {
    pub(crate) const fn new() -> Self {
        Self(SignalWord::new_byte())
    }

    /// Raises the token of `owner`, the strand this token is part of.
    /// Interrupt-safe, as [`Signal::signal`](crate::sync::Signal::signal).
    pub(crate) fn unpark(&self, owner: NonNull<Header>) {
        self.0.fire(|_| scheduler::signal(owner, state::SIGNALLED));
    }

    /// Takes the token, blocking the calling strand, which owns it, until
    /// it is raised or `deadline` passes.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> Result<(), WaitError> {
        let on = core::ptr::from_ref(self).addr();
        wait_on_word(&self.0, BlockReason::Parked, on, deadline, |_| WAITING)
    }
}

/// Takes the signal in `word`, blocking the calling strand (recorded as
/// blocked for `reason` on the object at `on`) until it is raised or
/// `deadline` passes. The strand registers in the word as `waiter(itself)`.
/// A strand's park token and a [`Signal`](crate::sync::Signal) both wait
/// here.
pub(crate) fn wait_on_word<W: StateWord>(
    word: &SignalWord<W>,
    reason: BlockReason,
    on: usize,
    deadline: Option<Instant>,
    waiter: impl FnOnce(NonNull<Header>) -> usize,
) -> Result<(), WaitError> {
    if word.try_take() {
        return Ok(());
    }
    let mut outcome = Register::Occupied;
    let mut me = 0;
    // Counted as waiting for the outside world: the pool is not
    // deadlocked while this strand waits, however idle it is. (The
    // strand's pool outlives it, so the reference stays good after a
    // move to another core.)
    let pool = scheduler::here().map(|(pool, _)| pool);
    if let Some(pool) = pool {
        pool.outside_waits().fetch_add(1, SeqCst);
    }
    let woken = wait::block(reason, on, deadline, |strand| {
        me = waiter(strand);
        outcome = word.register(me, relax);
        outcome == Register::Registered
    });
    if let Some(pool) = pool {
        pool.outside_waits().fetch_sub(1, SeqCst);
    }
    let woken = woken?;
    match (outcome, woken) {
        (Register::Taken, _) | (Register::Registered, WaitEnd::Signalled) => Ok(()),
        (Register::Occupied, _) => Err(WaitError::Occupied),
        (Register::Registered, woken) => {
            if word.withdraw(me, relax) {
                Err(woken.error().unwrap_or(WaitError::TimedOut))
            } else {
                Ok(())
            }
        }
    }
}

/// How a waiter passes the time while a firer finishes (a few
/// instructions on another core; on the host, the firer's thread may need
/// the CPU).
pub(crate) fn relax() {
    <crate::spin_lock::Relax as spin::RelaxStrategy>::relax();
}
