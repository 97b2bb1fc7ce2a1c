//! The strand control block: everything about a strand that is not on its
//! stack. Waiter links, timer slots and join state all live here, never on
//! a stack, because a non-resident strand's stack is not where its
//! addresses say (the copy-swap invariant, docs/design.md).
//!
//! A control block is one allocation: the [`Header`] every layer uses, then
//! the closure, which becomes the result. Its size is checked against
//! [`STRAND_BYTES`](super::sizes::STRAND_BYTES) at spawn.
//!
//! # Lifetime
//!
//! Two references at spawn: the strand's own (dropped by the core that
//! runs its fibre when it finishes) and its [`JoinHandle`](super::JoinHandle)'s.
//! The last one frees the block.

use super::failure::Failure;
use super::fibre::Fibre;
use super::id::{BlockReason, StrandId};
use super::lock::Core as MutexCore;
use super::save::SaveArea;
use super::tree::Node;
use super::wait::WaitLinks;
use crate::atomics::unmodelled::{AtomicPtr, AtomicU8, AtomicU32, AtomicUsize, Ordering::*};
use crate::context::Context;
use crate::task::{Action, Task};
use crate::timers::TimerSlot;
use alloc::alloc::{Layout, dealloc};
use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::ptr::NonNull;

/// Where a strand is, as far as wakers care.
pub(crate) mod state {
    /// Running, or queued to run.
    pub(crate) const RUNNABLE: u8 = 0;
    /// Suspended until a waker or its deadline moves it on.
    pub(crate) const BLOCKED: u8 = 1;
    /// Woken by whatever it waited for.
    pub(crate) const SIGNALLED: u8 = 2;
    /// Woken by its deadline.
    pub(crate) const TIMED_OUT: u8 = 3;
    /// Woken because it was cancelled (`super::super::cancel`).
    pub(crate) const INTERRUPTED: u8 = 4;
    /// Suspended with cancellation held off: only a waker or its deadline
    /// moves it on, never a cancel. Kept in the state word, not read from
    /// the shield, so a cancel cannot act on a stale view of the shield.
    pub(crate) const BLOCKED_SHIELDED: u8 = 5;
}

/// Bits of [`Header::flags`].
pub(crate) mod flags {
    /// Cancelled: blocking operations report `Interrupted` (unless shielded).
    pub(crate) const CANCELLED: u32 = 1 << 0;
    /// Its result is a failure.
    pub(crate) const FAILED: u32 = 1 << 1;
    /// It has finished and published its result.
    pub(crate) const DONE: u32 = 1 << 2;
    /// Its `JoinHandle` was dropped: whoever of the handle and the strand
    /// comes second owns the result (and passes a failure up).
    pub(crate) const HANDLE_GONE: u32 = 1 << 3;
    /// A root strand: its failure stops its pool.
    pub(crate) const ROOT: u32 = 1 << 4;
    /// It is finishing (its failure path must not run twice).
    pub(crate) const FINISHING: u32 = 1 << 5;
    /// A tick found it cancelled and computing: one slice later it is
    /// stopped (`crate::preempt`).
    pub(crate) const CANCEL_SEEN: u32 = 1 << 6;
    /// It was stopped at a preemption point after a cancel: its failure
    /// (`Interrupted`) is what the cancel asked for, and is not passed up.
    pub(crate) const CUT_SHORT: u32 = 1 << 7;
    /// Its polls (`block_on`) took an async mutex's lock at least once:
    /// at its end, those still listed under it are seen to (`super::lock`).
    pub(crate) const ASYNC_LOCKED: u32 = 1 << 8;
}

/// What a strand's code does, behind one pointer per closure type.
pub(crate) struct VTable {
    /// Runs the closure and stores its result (or its panic).
    pub(crate) run: unsafe fn(NonNull<Header>),
    /// Drops the closure or result, whichever is there, and frees the block.
    destroy: unsafe fn(NonNull<Header>),
    /// Moves the result out, as a `Taken<T>` written to the pointer.
    take: unsafe fn(NonNull<Header>, *mut ()),
    /// Replaces whatever the payload holds with a failure.
    fail: unsafe fn(NonNull<Header>, Box<Failure>),
    /// Moves a failure out of the payload, if it holds one.
    take_failure: unsafe fn(NonNull<Header>) -> Option<Box<Failure>>,
}

/// A finished strand's result, as its joiner gets it.
pub(crate) enum Taken<T> {
    Value(T),
    Failed(Box<Failure>),
}

/// The part of a control block every layer uses.
#[repr(C)]
pub(crate) struct Header {
    /// Links the strand into its fibre's inbox and runnable queue.
    pub(crate) task: Task,
    /// Its registers, while it is not running.
    pub(crate) context: UnsafeCell<Context>,
    refs: AtomicU32,
    /// `flags::*` bits.
    pub(crate) flags: AtomicU32,
    /// Scoped children alive, which borrow this strand's stack, plus one
    /// while it has fork-join jobs pending (`crate::join`): while this is
    /// non-zero, the strand stays resident on its fibre.
    pub(crate) lent: AtomicU32,
    /// Its entry's index in the pool's timer heap, guarded by the heap's
    /// lock.
    pub(crate) timer: TimerSlot,
    /// How many cancellation guards the strand holds (at most 255); only
    /// it writes this.
    pub(crate) shield: AtomicU8,
    /// A `state::*` value (among the bytes, to keep the block small).
    pub(crate) state: AtomicU8,
    /// How deeply the strand is inside roving's own code, where a time
    /// slice's tick must not preempt it (`crate::preempt`); it starts at 1,
    /// released when its closure starts.
    pub(crate) no_preempt: AtomicU8,
    /// Its `Priority` level; only it writes this.
    pub(crate) priority: AtomicU8,
    reason: AtomicU8,
    /// Failures of joins' other halves that met a panic unwinding through
    /// the strand (saturating), for its failure's `others`; only it
    /// touches this.
    pub(crate) unwinding_others: AtomicU8,
    /// 1 while a time slice's tick has stopped it and it waits for its
    /// next turn (`crate::preempt`'s `preempted`): what a debugger calls
    /// preempted. Only it writes this, so a mark is a plain store, not a
    /// read-modify-write of `flags`, which other cores also write.
    pub(crate) preempted: AtomicU8,
    /// Its park token: raised by an [`Unparker`](super::Unparker), taken
    /// by [`park`](super::park).
    pub(crate) park: super::park::ParkToken,
    /// The address of what it waits for (a mutex, a queue, a strand it
    /// joins), or 0: for deadlock reports.
    waits_on: AtomicUsize,
    /// Null, a strand waiting to join this one, or [`FINISHED`].
    pub(crate) joiner: AtomicPtr<Header>,
    pub(crate) fibre: &'static Fibre,
    /// Its stack, while another strand is resident on its fibre.
    pub(crate) saved: UnsafeCell<SaveArea>,
    pub(crate) id: StrandId,
    pub(crate) wait: UnsafeCell<WaitLinks>,
    /// Its place in the strand tree.
    pub(crate) tree: Node,
    /// The mutexes it holds, most recent first; only it touches this.
    pub(crate) held: UnsafeCell<*const MutexCore>,
    vtable: &'static VTable,
}

// SAFETY: the cells are each guarded as their comments say (the fibre's
// schedule, a queue's lock, the timer lock); the rest is atomics.
unsafe impl Sync for Header {}
// SAFETY: as above; closures and results are `Send`.
unsafe impl Send for Header {}

// The knob's floor (`ROVING_STRAND_BYTES` >= 200) leaves room for the
// header on every target.
const _: () = assert!(
    core::mem::size_of::<Header>() <= super::sizes::MIN_STRAND_BYTES,
    "the strand header outgrew the knob's floor"
);

/// `joiner` once the strand has finished.
pub(crate) const FINISHED: *mut Header = core::ptr::dangling_mut::<Header>();

impl Header {
    pub(crate) fn set_reason(&self, reason: BlockReason) {
        self.reason.store(reason as u8, Relaxed);
    }

    /// Records what the strand is about to wait for (0: nothing named).
    pub(crate) fn set_waits_on(&self, object: usize) {
        self.waits_on.store(object, Relaxed);
    }

    /// What the strand waits for, as recorded: its address, or 0.
    pub(crate) fn waits_on(&self) -> usize {
        self.waits_on.load(Relaxed)
    }

    pub(crate) fn reason(&self) -> BlockReason {
        BlockReason::from_raw(self.reason.load(Relaxed))
    }

    /// The strand's timer slot, as a pointer the heap may hand back to
    /// [`Header::from_timer_slot`]: derived from the block's pointer, so
    /// its provenance covers the whole block.
    pub(crate) fn timer_slot(strand: NonNull<Header>) -> NonNull<TimerSlot> {
        // SAFETY: a field of a live block; in bounds, so not null.
        unsafe { NonNull::new_unchecked(&raw mut (*strand.as_ptr()).timer) }
    }

    /// The header whose `timer` field is `slot`.
    pub(crate) fn from_timer_slot(slot: NonNull<TimerSlot>) -> NonNull<Header> {
        // SAFETY: `slot` came from `timer_slot` (the heap holds no other
        // strand slots), so it points into a block, `offset_of` bytes in.
        unsafe { slot.byte_sub(core::mem::offset_of!(Header, timer)).cast() }
    }

    /// The header whose `task` field is `task`.
    pub(crate) fn from_task(task: NonNull<Task>) -> NonNull<Header> {
        task.cast()
    }

    /// The strand's task header, as a pointer that may be turned back into
    /// the whole control block ([`Header::from_task`]): derived from the
    /// block's pointer, not from a reference to the field, whose
    /// provenance would cover the field alone.
    pub(crate) fn task(strand: NonNull<Header>) -> NonNull<Task> {
        strand.cast()
    }

    /// Runs the strand's closure (on its own stack).
    ///
    /// # Safety
    ///
    /// Called once, by the strand itself.
    pub(crate) unsafe fn run(header: NonNull<Header>) {
        // SAFETY: the header is live while its strand runs.
        let run = unsafe { header.as_ref() }.vtable.run;
        // SAFETY: forwarded.
        unsafe { run(header) }
    }

    /// Moves a finished strand's result out.
    ///
    /// # Safety
    ///
    /// The strand finished (seen through an acquire of `FINISHED`), its
    /// result is `T` and has not been taken; the caller holds a reference.
    pub(crate) unsafe fn take_result<T>(header: NonNull<Header>) -> Taken<T> {
        let mut out = core::mem::MaybeUninit::<Taken<T>>::uninit();
        // SAFETY: the header is live; `take` writes a `Taken<T>`.
        unsafe {
            (header.as_ref().vtable.take)(header, out.as_mut_ptr().cast());
            out.assume_init()
        }
    }

    /// Takes another reference, for a waker that must touch the header
    /// after the strand might otherwise have moved on.
    pub(crate) fn acquire(&self) {
        self.refs.fetch_add(1, Relaxed);
    }

    /// Whether it has been cancelled.
    pub(crate) fn cancelled(&self) -> bool {
        self.flags.load(SeqCst) & flags::CANCELLED != 0
    }

    /// Makes the result a failure (dropping a value it held).
    ///
    /// # Safety
    ///
    /// Called by the strand itself, or by whoever owns its finished result.
    pub(crate) unsafe fn fail(header: NonNull<Header>, failure: Box<Failure>) {
        // SAFETY: the header is live; the caller owns the payload.
        unsafe { (header.as_ref().vtable.fail)(header, failure) };
        // SAFETY: as above.
        unsafe { header.as_ref() }.flags.fetch_or(flags::FAILED, SeqCst);
    }

    /// Moves the failure out of a finished strand's result, if it failed.
    ///
    /// # Safety
    ///
    /// The caller owns the finished result (see `flags::HANDLE_GONE`).
    pub(crate) unsafe fn take_failure(header: NonNull<Header>) -> Option<Box<Failure>> {
        // SAFETY: the header is live; the caller owns the payload.
        unsafe { (header.as_ref().vtable.take_failure)(header) }
    }

    /// Drops one reference; the last frees the block.
    ///
    /// # Safety
    ///
    /// The caller owns one of the references and does not use the header
    /// afterwards.
    pub(crate) unsafe fn release(header: NonNull<Header>) {
        // SAFETY: live until the last reference goes.
        let this = unsafe { header.as_ref() };
        if this.refs.fetch_sub(1, Release) != 1 {
            return;
        }
        // An acquire load rather than an acquire fence: the same ordering
        // (it reads the end of the release sequence of decrements), and
        // ThreadSanitizer, which does not model fences, sees it; with a
        // fence every destroy was reported as a race with the last
        // decrement (`make soak`'s TSan run).
        let _ = this.refs.load(Acquire);
        let destroy = this.vtable.destroy;
        // SAFETY: that was the last reference.
        unsafe { destroy(header) }
    }
}

/// What the closure slot holds over a strand's life.
pub(crate) enum Payload<F, T> {
    Closure(F),
    Running,
    Done(T),
    Failed(Box<Failure>),
    Taken,
}

/// A whole control block.
#[repr(C)]
pub(crate) struct ControlBlock<F, T> {
    pub(crate) header: Header,
    pub(crate) payload: UnsafeCell<Payload<F, T>>,
}

impl<F: FnOnce() -> T + Send, T: Send> ControlBlock<F, T> {
    const VTABLE: VTable = VTable {
        run: Self::run,
        destroy: Self::destroy,
        take: Self::take,
        fail: Self::fail,
        take_failure: Self::take_failure,
    };

    /// A block for `f`, with both references, not yet on a fibre's queue.
    pub(crate) fn new(f: F, fibre: &'static Fibre, id: StrandId, tree: Node, flags: u32) -> Self {
        Self {
            header: Header {
                task: Task::new(never_called),
                context: UnsafeCell::new(Context::empty()),
                state: AtomicU8::new(state::RUNNABLE),
                reason: AtomicU8::new(BlockReason::None as u8),
                unwinding_others: AtomicU8::new(0),
                preempted: AtomicU8::new(0),
                waits_on: AtomicUsize::new(0),
                refs: AtomicU32::new(2),
                joiner: AtomicPtr::new(core::ptr::null_mut()),
                fibre,
                saved: UnsafeCell::new(SaveArea::empty()),
                id,
                wait: UnsafeCell::new(WaitLinks::new()),
                timer: TimerSlot::new(),
                flags: AtomicU32::new(flags),
                shield: AtomicU8::new(0),
                no_preempt: AtomicU8::new(1),
                priority: AtomicU8::new(super::Priority::Normal as u8),
                lent: AtomicU32::new(0),
                tree,
                held: UnsafeCell::new(core::ptr::null()),
                park: super::park::ParkToken::new(),
                vtable: &Self::VTABLE,
            },
            payload: UnsafeCell::new(Payload::Closure(f)),
        }
    }

    /// # Safety
    ///
    /// As for [`Header::run`]; the header is a `ControlBlock<F, T>`.
    unsafe fn run(header: NonNull<Header>) {
        let block = header.cast::<Self>();
        // SAFETY: only the running strand touches the payload until it
        // publishes `FINISHED`.
        let payload = unsafe { &mut *(*block.as_ptr()).payload.get() };
        let Payload::Closure(f) = core::mem::replace(payload, Payload::Running) else {
            unreachable!("a strand runs its closure once");
        };
        // The result is stored under a deferral: a cancelled strand
        // stopped half-way through the store would leave its failure to
        // drop a torn value.
        #[cfg(feature = "std")]
        {
            let outcome = std::panic::catch_unwind(core::panic::AssertUnwindSafe(f));
            let _deferral = crate::strand::deferral::defer();
            match outcome {
                Ok(value) => *payload = Payload::Done(value),
                Err(panic) => {
                    // SAFETY: the running strand's own payload.
                    unsafe { Header::fail(header, super::failure::from_unwind(header, panic)) };
                }
            }
        }
        #[cfg(not(feature = "std"))]
        {
            // On bare metal a panic never comes back here: the panic
            // handler fails the strand and abandons its stack.
            let value = f();
            let _deferral = crate::strand::deferral::defer();
            *payload = Payload::Done(value);
        }
    }

    /// # Safety
    ///
    /// As for [`Header::fail`]; the header is a `ControlBlock<F, T>`.
    unsafe fn fail(header: NonNull<Header>, failure: Box<Failure>) {
        let block = header.cast::<Self>();
        // SAFETY: the caller owns the payload. A closure still in it is
        // dropped; one that was running was abandoned with its stack.
        unsafe { *(*block.as_ptr()).payload.get() = Payload::Failed(failure) };
    }

    /// # Safety
    ///
    /// As for [`Header::take_failure`]; the header is a `ControlBlock<F, T>`.
    unsafe fn take_failure(header: NonNull<Header>) -> Option<Box<Failure>> {
        let block = header.cast::<Self>();
        // SAFETY: the caller owns the payload.
        let payload = unsafe { &mut *(*block.as_ptr()).payload.get() };
        match core::mem::replace(payload, Payload::Taken) {
            Payload::Failed(failure) => Some(failure),
            other => {
                *payload = other;
                None
            }
        }
    }

    /// # Safety
    ///
    /// As for [`Header::take_result`]; `out` points at a `Taken<T>`'s room.
    unsafe fn take(header: NonNull<Header>, out: *mut ()) {
        let block = header.cast::<Self>();
        // SAFETY: the strand finished, so nothing else touches the payload.
        let payload = unsafe { core::mem::replace(&mut *(*block.as_ptr()).payload.get(), Payload::Taken) };
        let taken = match payload {
            Payload::Done(value) => Taken::Value(value),
            Payload::Failed(failure) => Taken::Failed(failure),
            _ => unreachable!("a finished strand's result is taken once"),
        };
        // SAFETY: the caller's room for a `Taken<T>`.
        unsafe { out.cast::<Taken<T>>().write(taken) };
    }

    /// # Safety
    ///
    /// The last reference to a `ControlBlock<F, T>`.
    unsafe fn destroy(header: NonNull<Header>) {
        let block = header.cast::<Self>();
        // SAFETY: nothing else refers to the block now.
        unsafe { core::ptr::drop_in_place(block.as_ptr()) };
        // SAFETY: allocated by `spawn` with this layout.
        unsafe { dealloc(block.as_ptr().cast(), Layout::new::<Self>()) };
    }
}

/// Strands are never run as tasks: the fibre's task runs them.
///
/// # Safety
///
/// Never called.
unsafe fn never_called(_: NonNull<Task>, _: Action, _: NonNull<crate::task::storage::BlockCache>) {
    unreachable!("a strand is resumed by its fibre, not called as a task");
}
