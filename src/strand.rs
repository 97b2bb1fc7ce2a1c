//! Strands: the threads of execution user code sees (seed 000, Avalanche).
//!
//! A strand runs a closure on a *fibre*, one of the statically allocated
//! stacks of [`fibre`]. When it blocks (on a [`sync`](crate::sync)
//! primitive, in [`sleep`], or joining another strand) it switches back to
//! its core's scheduler and the core runs other work; when it is woken, its
//! fibre is sent to the core that last ran it, through that core's mailbox,
//! and an idle core may take it from there.
//!
//! When every fibre is held, a new strand shares a fibre with others
//! (the fibre is *overloaded*): only one of them is resident at a time,
//! and switching between them copies the used part of their stacks in and
//! out. A strand costs its control block (at most
//! [`STRAND_BYTES`](knobs::STRAND_BYTES)) plus, while it is not resident,
//! the stack it really uses.
//!
//! ```
//! use roving::{Pool, platform::host::Machine, strand};
//!
//! Machine::new(2).unwrap().run(|| {
//!     let pool = Pool::new().unwrap();
//!     let sum = pool.run(|| {
//!         let children: Vec<_> = (0..10u64).map(|i| strand::spawn(move || i * i).unwrap()).collect();
//!         children.into_iter().map(|child| child.join().unwrap()).sum::<u64>()
//!     });
//!     assert_eq!(sum.unwrap(), 285);
//! }).unwrap();
//! ```
//!
//! # What to know
//!
//! - `Pool::run`'s `main` is itself a strand (the root), pinned to the
//!   core `run` was called on, so it may block.
//! - Blocking calls return [`WaitError::NotAStrand`] from plain tasks and
//!   from outside the pool; the `try_` forms work anywhere.
//! - Nothing may keep a pointer into another strand's stack while that
//!   strand is blocked: its stack may be copied away. Safe Rust cannot
//!   (blocked strands' locals are not shared without `'static` bounds);
//!   unsafe code must not.
//! - A strand that overflows its stack hits the guard gap below it: a
//!   fault on bare metal with the MMU on (the report names the strand), a
//!   panic naming the strand when it next switches out otherwise.

pub(crate) mod control;
mod error;
pub mod fibre;
pub mod knobs;
mod save;
pub(crate) mod scheduler;
pub(crate) mod wait;

pub use control::BlockReason;
pub use error::{JoinError, SpawnError, WaitError};

use crate::pool::shared::Shared;
use crate::time::Instant;
use alloc::alloc::{Layout, alloc, dealloc};
use control::{Block, FINISHED, Header, Payload, Taken};
use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::num::NonZeroU64;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU64, Ordering::*};
use core::time::Duration;

/// A strand's identity, unique for the life of the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StrandId(NonZeroU64);

impl StrandId {
    fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NonZeroU64::new(NEXT.fetch_add(1, Relaxed)).expect("strand ids do not wrap in 64 bits"))
    }

    pub(crate) fn from_raw(raw: u64) -> Option<Self> {
        NonZeroU64::new(raw).map(Self)
    }

    /// The id as a number.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Display for StrandId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Spawns `f` as a strand of the pool the calling core works for.
///
/// # Errors
///
/// [`SpawnError::NotInPool`] outside a running pool's cores; otherwise as
/// for [`Pool::spawn_strand`](crate::Pool::spawn_strand).
pub fn spawn<F, T>(f: F) -> Result<JoinHandle<T>, SpawnError<F>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match scheduler::here() {
        Some((shared, _)) => spawn_in(shared, f, None),
        None => Err(SpawnError::NotInPool(f)),
    }
}

/// Spawns `f` on `shared`'s fibres; `pin` keeps it on one core and gives
/// it a fibre of its own.
pub(crate) fn spawn_in<F, T>(
    shared: &Shared,
    f: F,
    pin: Option<usize>,
) -> Result<JoinHandle<T>, SpawnError<F>>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    if shared.stopped() {
        return Err(SpawnError::Stopped(f));
    }
    let layout = Layout::new::<Block<F, T>>();
    if layout.size() > knobs::STRAND_BYTES {
        return Err(SpawnError::TooLarge { bytes: layout.size(), capacity: knobs::STRAND_BYTES, closure: f });
    }
    // SAFETY: the layout is non-zero (it holds a header).
    let Some(memory) = NonNull::new(unsafe { alloc(layout) }.cast::<Block<F, T>>()) else {
        return Err(SpawnError::OutOfMemory(f));
    };
    let (fibre, fresh) = match fibre::claim(shared) {
        Some(fibre) => (fibre, true),
        None => match pin.is_none().then(|| fibre::overload(shared)).flatten() {
            Some(fibre) => (fibre, false),
            None => {
                // SAFETY: allocated above with this layout, never written.
                unsafe { dealloc(memory.as_ptr().cast(), layout) };
                return Err(SpawnError::NoFibre(f));
            }
        },
    };
    // SAFETY: fresh memory for a block.
    unsafe { memory.write(Block::new(f, fibre, StrandId::next())) };
    let header = memory.cast::<Header>();
    let argument = header.as_ptr() as usize;
    if fresh {
        fibre.pinned.store(pin.is_some(), Relaxed);
        fibre.last_core.store(pin.or_else(|| scheduler::here().map(|(_, core)| core)).unwrap_or(0), Relaxed);
        // SAFETY: we claimed the fibre and have not published it, so its
        // stack and state are ours.
        unsafe {
            *header.as_ref().context.get() =
                crate::context::Context::new(fibre.stack_top(), scheduler::strand_entry, argument);
            fibre.owned().resident = header.as_ptr();
        }
    } else {
        // SAFETY: the block is ours until published.
        let saved = unsafe { &mut *header.as_ref().saved.get() };
        match saved.first_frame(fibre.stack_top(), scheduler::strand_entry, argument) {
            // SAFETY: as above.
            Some(context) => unsafe { *header.as_ref().context.get() = context },
            None => {
                fibre.strand_left();
                // SAFETY: the block was never published; take the closure
                // back and free the memory without running anything else.
                let f = unsafe {
                    let Payload::Closure(f) = ptr::read((*memory.as_ptr()).payload.get()) else {
                        unreachable!()
                    };
                    ptr::drop_in_place(&raw mut (*memory.as_ptr()).header);
                    dealloc(memory.as_ptr().cast(), layout);
                    f
                };
                return Err(SpawnError::OutOfMemory(f));
            }
        }
    }
    shared.live_strands.fetch_add(1, SeqCst);
    scheduler::make_runnable(header);
    Ok(JoinHandle { header, _result: PhantomData })
}

/// The running strand's id, or `None` outside strands.
pub fn current() -> Option<StrandId> {
    // SAFETY: the running strand's header is live.
    scheduler::current().map(|header| unsafe { header.as_ref() }.id)
}

/// Lets the core run its other work, then continues.
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside strands.
pub fn yield_now() -> Result<(), WaitError> {
    scheduler::current().ok_or(WaitError::NotAStrand)?;
    // SAFETY: we are the running strand, and still runnable.
    unsafe { scheduler::suspend(scheduler::Outcome::Yielded) };
    Ok(())
}

/// Blocks the calling strand for at least `duration`; its core runs other
/// work, or sleeps, meanwhile.
///
/// # Errors
///
/// [`WaitError::NotAStrand`] outside strands; [`WaitError::OutOfMemory`]
/// if the deadline could not be recorded.
pub fn sleep(duration: Duration) -> Result<(), WaitError> {
    let deadline = Instant::now().checked_add(duration).ok_or(WaitError::OutOfMemory)?;
    sleep_until(deadline)
}

/// Blocks the calling strand until `deadline`.
///
/// # Errors
///
/// As for [`sleep`].
pub fn sleep_until(deadline: Instant) -> Result<(), WaitError> {
    wait::block(BlockReason::Sleeping, Some(deadline), |_| true).map(|_| ())
}

/// What strands hold right now, over every pool: see [`usage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Fibres held by pools (each has at least one strand on it).
    pub fibres_in_use: usize,
    /// Heap bytes of saved stacks: the stacks of strands that are not
    /// resident on their fibre, plus each fibre's one spare save area.
    pub saved_stack_bytes: usize,
}

/// What strands hold right now, for memory budgets and leak checks. The
/// counts are read one after the other while strands may run, so they are
/// exact only when the strands are quiet.
pub fn usage() -> Usage {
    Usage { fibres_in_use: fibre::claimed(), saved_stack_bytes: save::held_bytes() }
}

/// Owns a strand's result: [`join`](JoinHandle::join) waits for it. A
/// handle is consumed by joining, so a strand cannot be joined twice.
/// Dropping the handle lets the strand run on, detached.
pub struct JoinHandle<T> {
    header: NonNull<Header>,
    _result: PhantomData<T>,
}

// SAFETY: the handle only moves the result (`T: Send`) to its holder.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reads atomics.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    fn header(&self) -> &Header {
        // SAFETY: the handle holds a reference to the block.
        unsafe { self.header.as_ref() }
    }

    /// The strand's id.
    pub fn id(&self) -> StrandId {
        self.header().id
    }

    /// Whether the strand has finished (so joining would not block).
    pub fn is_finished(&self) -> bool {
        self.header().joiner.load(Acquire) == FINISHED
    }

    /// Why the strand is blocked, if it is.
    pub fn block_reason(&self) -> BlockReason {
        self.header().reason()
    }

    /// Waits for the strand to finish and returns its value. On the host,
    /// a panic in the strand is raised again here.
    ///
    /// # Errors
    ///
    /// [`JoinError::NotAStrand`] (with the handle) if the caller is not a
    /// strand and the strand has not finished.
    pub fn join(self) -> Result<T, JoinError<T>> {
        if !self.is_finished() {
            let me = self.header;
            let waited = wait::block(BlockReason::Join, None, |joiner| {
                // SAFETY: the handle keeps the block alive.
                let slot = &unsafe { me.as_ref() }.joiner;
                slot.compare_exchange(ptr::null_mut(), joiner.as_ptr(), AcqRel, Acquire).is_ok()
            });
            if waited.is_err() {
                return Err(JoinError::NotAStrand(self));
            }
        }
        Ok(self.take())
    }

    /// The strand's value if it has finished, or the handle back.
    pub fn try_join(self) -> Result<T, Self> {
        if self.is_finished() { Ok(self.take()) } else { Err(self) }
    }

    fn take(self) -> T {
        let this = ManuallyDrop::new(self);
        // SAFETY: the strand finished (acquire of `FINISHED`); the result
        // is a `T`, taken once because the handle is consumed.
        let taken = unsafe { Header::take_result::<T>(this.header) };
        // SAFETY: the handle's reference, given up.
        unsafe { Header::release(this.header) };
        match taken {
            Taken::Value(value) => value,
            #[cfg(feature = "std")]
            Taken::Panic(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    /// Detaches the strand. If it already finished with a panic (host),
    /// the panic is raised here: a failure nobody joined is not dropped
    /// silently.
    fn drop(&mut self) {
        let finished = self.is_finished();
        #[cfg(feature = "std")]
        let panic = if finished {
            // SAFETY: finished, not yet taken (the handle is not consumed).
            match unsafe { Header::take_result::<T>(self.header) } {
                Taken::Value(value) => {
                    drop(value);
                    None
                }
                Taken::Panic(panic) => Some(panic),
            }
        } else {
            None
        };
        #[cfg(not(feature = "std"))]
        let _ = finished;
        // SAFETY: the handle's reference, given up.
        unsafe { Header::release(self.header) };
        #[cfg(feature = "std")]
        if let Some(panic) = panic
            && !std::thread::panicking()
        {
            std::panic::resume_unwind(panic);
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle").field("id", &self.id()).field("finished", &self.is_finished()).finish()
    }
}
