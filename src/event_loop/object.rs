//! Objects on event loops: public handles over a shared implementation, its
//! close, and the group that waits for every object's cleanup.

use super::callback::Pending;
use super::{Inner, Loop, PinError};
use crate::atomics::unmodelled::{
    AtomicBool, AtomicUsize,
    Ordering::{AcqRel, Relaxed},
};
use crate::pool::Pool;
use crate::spin_lock::SpinLock;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use crate::sync::WaitError;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::ops::Deref;

/// State on an event loop, behind public [`Handle`]s.
pub trait Object: Send + Sized + 'static {
    /// Runs once, on the loop, when the object is closed: its last
    /// [`Handle`] was dropped, or its [`LoopGroup`] was closed. Abort what is
    /// in flight and fire the callbacks of pending operations (with an
    /// error of the object's choosing); a callback that must wait for work
    /// still running elsewhere keeps the object alive by being a
    /// [`Loop::callback`] until that work returns.
    fn close(&mut self, this: &Loop<Self>) {
        let _ = this;
    }
}

/// What an object's implementation knows of its own life: its public
/// handles, and the work it must finish before its group counts it done.
pub(super) struct Lifecycle<T> {
    handles: AtomicUsize,
    /// One for the close hook until it has run, plus one per
    /// [`Loop::callback`] not yet fired (or dropped).
    pending: AtomicUsize,
    close_asked: AtomicBool,
    finished: AtomicBool,
    close: Option<fn(&mut T, &Loop<T>)>,
    context: Option<LoopGroup>,
}

impl<T: Send + 'static> Lifecycle<T> {
    /// A loop with no handles and no group: it is never closed.
    pub(super) fn standalone() -> Self {
        Self {
            handles: AtomicUsize::new(0),
            pending: AtomicUsize::new(1),
            close_asked: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            close: None,
            context: None,
        }
    }

    fn object(context: &LoopGroup) -> Self
    where
        T: Object,
    {
        Self {
            handles: AtomicUsize::new(1),
            close: Some(T::close),
            context: Some(context.clone()),
            ..Self::standalone()
        }
    }

    pub(super) fn hold(&self) {
        self.pending.fetch_add(1, Relaxed);
    }

    /// Releases one share of pending work; the last one finishes the
    /// object (once).
    pub(super) fn release(&self) {
        if self.pending.fetch_sub(1, AcqRel) == 1
            && !self.finished.swap(true, AcqRel)
            && let Some(context) = &self.context
        {
            context.finished_one();
        }
    }
}

impl<T: Send + 'static> Loop<T> {
    /// Asks the object to close: its close hook runs once, on the loop.
    pub(super) fn close(&self) {
        let life = self.lifecycle();
        if life.close_asked.swap(true, AcqRel) {
            return;
        }
        let share = Pending::adopt(self.clone());
        let hook = life.close;
        // A stopped loop refuses the hook; the share goes with the refused
        // closure, so the object still finishes.
        let _ = self.defer(move |state: &mut T, this: &Loop<T>| {
            if let Some(hook) = hook {
                hook(state, this);
            }
            drop(share);
        });
    }

    /// Whether the object was asked to close.
    pub fn is_closing(&self) -> bool {
        self.lifecycle().close_asked.load(Relaxed)
    }
}

/// A public handle to an [`Object`]: the user's side of it. Clones name the
/// same object. When the last handle is dropped, the object closes, but
/// its implementation (the [`Loop`]) lives on until every pending
/// [`Loop::callback`] has fired; [`LoopGroup::join`] waits for that.
pub struct Handle<T: Object> {
    object: Loop<T>,
}

impl<T: Object> Deref for Handle<T> {
    type Target = Loop<T>;

    fn deref(&self) -> &Loop<T> {
        &self.object
    }
}

impl<T: Object> Clone for Handle<T> {
    fn clone(&self) -> Self {
        self.object.lifecycle().handles.fetch_add(1, Relaxed);
        Self { object: self.object.clone() }
    }
}

impl<T: Object> Drop for Handle<T> {
    fn drop(&mut self) {
        if self.object.lifecycle().handles.fetch_sub(1, AcqRel) == 1 {
            self.object.close();
        }
    }
}

impl<T: Object> core::fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Handle").field(&self.object).finish()
    }
}

/// An object's implementation as its group sees it.
trait Closable: Send + Sync {
    fn close(self: Arc<Self>);
    /// Whether strand `id` is draining the object's loop on its stack.
    fn drained_by(&self, id: u64) -> bool;
}

impl<T: Send + 'static> Closable for Inner<T> {
    fn close(self: Arc<Self>) {
        Loop::from_inner(self).close();
    }

    fn drained_by(&self, id: u64) -> bool {
        self.drainer.load(crate::atomics::unmodelled::Ordering::Relaxed) == id
    }
}

/// The objects made in a group, and the strands waiting for them all to
/// finish.
struct Registry {
    /// Objects not finished yet.
    live: usize,
    closed: bool,
    /// Every object made, for closing them all; pruned of gone ones as it
    /// grows.
    objects: Vec<Weak<dyn Closable>>,
    joiners: WaitQueue,
}

/// A set of [`Object`]s that can be closed and waited for together: the one
/// place to wait for every object's cleanup, including callbacks still
/// pending after their handles were dropped.
///
/// An object is *finished* once it was closed and every [`Loop::callback`]
/// made for it has fired (or been dropped).
#[derive(Clone)]
pub struct LoopGroup {
    registry: Arc<SpinLock<Registry>>,
}

impl LoopGroup {
    /// A group with no objects.
    pub fn new() -> Self {
        Self {
            registry: Arc::new(SpinLock::new(Registry {
                live: 0,
                closed: false,
                objects: Vec::new(),
                joiners: WaitQueue::new(),
            })),
        }
    }

    /// An object with `state`, on a borrowed-caller loop: whoever defers
    /// onto the idle loop runs its operations.
    pub fn object<T: Object>(&self, state: T) -> Handle<T> {
        self.enrol(Loop::build(state, None, Lifecycle::object(self)))
    }

    /// An object with `state`, on a loop with `core` of `pool` as its own:
    /// its operations run there.
    ///
    /// # Errors
    ///
    /// [`PinError`], with `state`, if `core` is not a core of `pool`.
    pub fn object_on<T: Object>(&self, pool: &Pool, core: usize, state: T) -> Result<Handle<T>, PinError<T>> {
        let home = match super::Home::new(pool, core) {
            Ok(home) => home,
            Err(error) => return Err(error.carrying(state)),
        };
        Ok(self.enrol(Loop::build(state, Some(home), Lifecycle::object(self))))
    }

    fn enrol<T: Object>(&self, object: Loop<T>) -> Handle<T> {
        let closed = {
            let mut registry = self.registry.lock();
            registry.live += 1;
            if registry.objects.len() == registry.objects.capacity() {
                registry.objects.retain(|object| object.strong_count() > 0);
            }
            let weak: Weak<Inner<T>> = Arc::downgrade(object.inner());
            registry.objects.push(weak);
            registry.closed
        };
        if closed {
            object.close();
        }
        Handle { object }
    }

    fn finished_one(&self) {
        let mut registry = self.registry.lock();
        registry.live -= 1;
        if registry.live == 0 {
            registry.joiners.wake_all();
        }
    }

    /// Closes every object of the group, now and from now on (an object
    /// made later is closed at once). Each close hook runs on its object's
    /// loop.
    pub fn close(&self) {
        drop(self.close_objects());
    }

    /// [`LoopGroup::close`], returning the objects it closed. They are
    /// collected under the lock and used (and dropped: dropping one may
    /// run user code) outside it.
    fn close_objects(&self) -> Vec<Arc<dyn Closable>> {
        let objects: Vec<Arc<dyn Closable>> = {
            let mut registry = self.registry.lock();
            registry.closed = true;
            registry.objects.iter().filter_map(Weak::upgrade).collect()
        };
        for object in &objects {
            object.clone().close();
        }
        objects
    }

    /// Closes every object (as [`LoopGroup::close`]) and blocks the calling
    /// strand until each has finished: its close hook has run and every
    /// [`Loop::callback`] holding it has fired.
    ///
    /// Join once the operations you care about are issued: an object
    /// closes at once, and what reaches it afterwards is the object's to
    /// refuse (its code sees that it was closed). A callback made for an
    /// object that had already finished is not waited for.
    ///
    /// A strand that is draining one of the group's loops (it runs the
    /// operations on its own stack) cannot join the group: it would wait
    /// for itself.
    ///
    /// # Errors
    ///
    /// [`WaitError::NotAStrand`] if objects are unfinished and the caller
    /// cannot block (use [`LoopGroup::unfinished`] there);
    /// [`WaitError::WouldDeadlock`] if the calling strand drains one of the
    /// group's loops; [`WaitError::Interrupted`] in a cancelled strand.
    pub fn join(&self) -> Result<(), WaitError> {
        let objects = self.close_objects();
        if self.unfinished() == 0 {
            return Ok(());
        }
        let me = crate::strand::current().map(|id| id.get());
        if me.is_some_and(|me| objects.iter().any(|object| object.drained_by(me))) {
            return Err(WaitError::WouldDeadlock);
        }
        drop(objects);
        wait::wait_in(&self.registry, BlockReason::ContextJoin, None, |r| &mut r.joiners, |r| r.live == 0)
    }

    /// How many of the group's objects have not finished.
    pub fn unfinished(&self) -> usize {
        self.registry.lock().live
    }
}

impl Default for LoopGroup {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for LoopGroup {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LoopGroup").field("unfinished", &self.unfinished()).finish()
    }
}
