//! The strand tree.
//!
//! Every strand spawned by a strand is that strand's child, anchored either
//! to the parent's whole body ([`spawn`](super::spawn)) or to one
//! [`scope`](super::scope) in it. A frame cannot be left while strands
//! anchored to it live: at its end they are cancelled and waited for.
//!
//! # Protocol
//!
//! A parent's family lock guards its list of children, the live counts of
//! its anchors, the anchor it waits on, and the failure passed up to it.
//!
//! - *Adopt* (spawn): under the parent's lock, link the child, count it in
//!   its anchor, and give it the cancelled flag if the parent has it or the
//!   anchor is ending. Before the child can run.
//! - *Leave* (the child finishes): pass a failure up if it must (which
//!   cancels the parent), then under the parent's lock unlink, uncount,
//!   and signal the parent if it waits on that anchor and the count is 0.
//! - *Cancel*: set the flag (once), under its lock cancel each child, then
//!   interrupt the strand if it is blocked (children first, so a cancelled
//!   strand never runs before its subtree knows it is cancelled).
//! - *End* (a frame's end): under the lock mark the anchor ending and
//!   cancel its children; then block, cancellation held off, until the
//!   count is 0.
//!
//! Why nothing is missed: a child spawned while its parent is cancelled is
//! adopted either before the cancel takes the lock (and is cancelled by
//! it) or after the flag is set (and is born cancelled). A parent is alive
//! while any child is linked, because its end waits for every anchor; so
//! a leaving child may touch it until it unlinks. Locks are only ever
//! nested parent before child.

use super::control::{Header, flags, state};
use super::failure::Failure;
use super::scheduler;
use crate::atomics::unmodelled::Ordering::*;
use crate::spin_lock::SpinLock;
use alloc::boxed::Box;
use core::cell::{Cell, UnsafeCell};
use core::ptr::{self, NonNull};

/// A frame that strands are anchored to: a strand's body or a scope.
/// Guarded by its owner's family lock.
pub(crate) struct Anchor {
    live: Cell<u32>,
    ending: Cell<bool>,
}

// SAFETY: only touched under the owner's family lock.
unsafe impl Sync for Anchor {}

impl Anchor {
    pub(crate) const fn new() -> Self {
        Self { live: Cell::new(0), ending: Cell::new(false) }
    }
}

/// What a strand's family lock guards.
pub(crate) struct Family {
    first: *mut Header,
    /// What the strand waits for at a frame's end.
    waiting: Waiting,
    /// A failure a child passed up that no frame has reported yet.
    escalated: Option<Box<Failure>>,
}

// SAFETY: the pointers are to live control blocks and anchors, touched
// under the lock.
unsafe impl Send for Family {}

/// What a strand ending a frame waits for: nothing (null), the strands
/// anchored to one frame (that anchor), or every child ([`ALL`]).
type Waiting = *const Anchor;

/// `Waiting` for every child: the strand is finishing.
const ALL: Waiting = ptr::dangling();

impl Family {
    /// Whether what the strand waits for has happened, given its anchors.
    fn satisfied(&self, frame: Option<&Anchor>) -> bool {
        match frame {
            Some(anchor) => anchor.live.get() == 0,
            None => self.first.is_null(),
        }
    }
}

/// A strand's place in the tree.
pub(crate) struct Node {
    /// The strand that spawned it, or null for a root or a strand spawned
    /// from outside strands.
    parent: *const Header,
    /// The frame of the parent it is anchored to.
    anchor: *const Anchor,
    /// Links among the parent's children; guarded by the parent's lock.
    siblings: UnsafeCell<[*mut Header; 2]>,
    family: SpinLock<Family>,
    /// The anchor of its own body, for its unscoped children.
    body: Anchor,
}

impl Node {
    /// A node under `parent`, anchored to `anchor` (null: the parent's body).
    ///
    /// # Safety
    ///
    /// `parent`, if not null, is a live strand that will [`adopt`] the new
    /// strand before it runs; `anchor` is one of its frames.
    pub(crate) unsafe fn new(parent: Option<NonNull<Header>>, anchor: *const Anchor) -> Self {
        let parent_ptr = parent.map_or(ptr::null(), |p| p.as_ptr().cast_const());
        let anchor = match parent {
            // SAFETY: the parent is live (contract).
            Some(parent) if anchor.is_null() => &raw const unsafe { parent.as_ref() }.tree.body,
            _ => anchor,
        };
        Self {
            parent: parent_ptr,
            anchor,
            siblings: UnsafeCell::new([ptr::null_mut(); 2]),
            family: SpinLock::new(Family { first: ptr::null_mut(), waiting: ptr::null(), escalated: None }),
            body: Anchor::new(),
        }
    }

    /// The parent, if any.
    pub(crate) fn parent(&self) -> Option<NonNull<Header>> {
        NonNull::new(self.parent.cast_mut())
    }

    fn scoped(&self, parent: &Header) -> bool {
        !ptr::eq(self.anchor, &parent.tree.body)
    }
}

const PREV: usize = 0;
const NEXT: usize = 1;

/// Links a new strand under its parent (see the module's protocol).
///
/// # Safety
///
/// `child` was built with a node naming a live parent, and has not run.
pub(crate) unsafe fn adopt(child: NonNull<Header>) {
    // SAFETY: the child is ours until published.
    let child_ref = unsafe { child.as_ref() };
    let Some(parent) = child_ref.tree.parent() else { return };
    // SAFETY: live (contract).
    let parent = unsafe { parent.as_ref() };
    let family = parent.tree.family.lock();
    // SAFETY: the anchor is the parent's body or a scope frame of the
    // parent, guarded by the lock we hold.
    let anchor = unsafe { &*child_ref.tree.anchor };
    anchor.live.set(anchor.live.get() + 1);
    if anchor.ending.get() || parent.cancelled() {
        child_ref.flags.fetch_or(flags::CANCELLED, SeqCst);
    }
    if child_ref.tree.scoped(parent) {
        parent.lent.fetch_add(1, SeqCst);
    }
    // SAFETY: links are guarded by the parent's lock.
    unsafe {
        *child_ref.tree.siblings.get() = [ptr::null_mut(), family.first];
        if let Some(first) = NonNull::new(family.first) {
            (*first.as_ref().tree.siblings.get())[PREV] = child.as_ptr();
        }
    }
    let mut family = family;
    family.first = child.as_ptr();
}

/// Calls `visit` on `top` and on every strand below it in the tree. Each
/// is held by a reference while it is visited and its children listed, so
/// strands may finish meanwhile; one that finishes before it is reached
/// may be missed. Takes each family lock alone (no nesting).
pub(crate) fn visit_subtree(top: NonNull<Header>, visit: &mut dyn FnMut(&Header)) {
    // SAFETY: the caller's reference keeps `top` alive meanwhile.
    unsafe { top.as_ref() }.acquire();
    let mut pending = alloc::vec![top];
    while let Some(strand) = pending.pop() {
        // SAFETY: held by the reference taken when it was listed.
        let header = unsafe { strand.as_ref() };
        visit(header);
        {
            let family = header.tree.family.lock();
            let mut child = family.first;
            while let Some(linked) = NonNull::new(child) {
                // SAFETY: a linked child is alive while its parent's lock
                // is held; the reference keeps it alive after.
                let linked_ref = unsafe { linked.as_ref() };
                linked_ref.acquire();
                pending.push(linked);
                // SAFETY: links are guarded by the lock we hold.
                child = unsafe { (*linked_ref.tree.siblings.get())[NEXT] };
            }
        }
        // SAFETY: the reference taken when it was listed, given up once.
        unsafe { Header::release(strand) };
    }
}

/// Unlinks a finished strand from its parent, first passing `failure` up
/// to it. Returns the failure back if the strand has no parent.
///
/// # Safety
///
/// `child` is finishing: it has published its result and will not be
/// touched through the tree again.
pub(crate) unsafe fn leave(child: NonNull<Header>, failure: Option<Box<Failure>>) -> Option<Box<Failure>> {
    // SAFETY: the child's own header, live until its last reference.
    let child_ref = unsafe { child.as_ref() };
    let Some(parent_ptr) = child_ref.tree.parent() else { return failure };
    // SAFETY: a parent outlives its linked children.
    let parent = unsafe { parent_ptr.as_ref() };
    if let Some(failure) = failure {
        pass_up(parent, failure);
    }
    let mut family = parent.tree.family.lock();
    // SAFETY: guarded by the parent's lock.
    unsafe {
        let [prev, next] = *child_ref.tree.siblings.get();
        match NonNull::new(prev) {
            Some(prev) => (*prev.as_ref().tree.siblings.get())[NEXT] = next,
            None => family.first = next,
        }
        if let Some(next) = NonNull::new(next) {
            (*next.as_ref().tree.siblings.get())[PREV] = prev;
        }
    }
    // SAFETY: as in `adopt`.
    let anchor = unsafe { &*child_ref.tree.anchor };
    anchor.live.set(anchor.live.get() - 1);
    if child_ref.tree.scoped(parent) {
        parent.lent.fetch_sub(1, SeqCst);
    }
    let wake = if family.waiting == ALL {
        family.first.is_null()
    } else {
        ptr::eq(family.waiting, anchor) && anchor.live.get() == 0
    };
    if wake {
        family.waiting = ptr::null();
        // Under the lock: the parent cannot move on (and be freed) before
        // it takes the lock again.
        scheduler::signal(parent_ptr, state::SIGNALLED);
    }
    None
}

/// Records `failure` as passed up to `strand`, and cancels it: an
/// unhandled failure stops the work around it.
pub(crate) fn pass_up(strand: &Header, failure: Box<Failure>) {
    Failure::keep(&mut strand.tree.family.lock().escalated, failure);
    cancel(strand);
}

/// Takes the failure passed up to `strand`, if any.
pub(crate) fn take_escalated(strand: &Header) -> Option<Box<Failure>> {
    strand.tree.family.lock().escalated.take()
}

/// Cancels `strand` and its whole subtree. Returns whether this call
/// cancelled it (it was not cancelled before).
pub(crate) fn cancel(strand: &Header) -> bool {
    if strand.flags.fetch_or(flags::CANCELLED, SeqCst) & flags::CANCELLED != 0 {
        // Already cancelled: children adopted since were born cancelled.
        return false;
    }
    {
        let family = strand.tree.family.lock();
        let mut child = family.first;
        while let Some(next) = NonNull::new(child) {
            // SAFETY: linked children are live while we hold the lock.
            let next = unsafe { next.as_ref() };
            cancel(next);
            // SAFETY: guarded by the lock we hold.
            child = unsafe { (*next.tree.siblings.get())[NEXT] };
        }
    }
    // Interrupted only once its subtree is marked: woken first, it could
    // let go of a lock or a channel that a child waits on, and the child
    // would see its wait end before it knew it was cancelled.
    scheduler::signal(NonNull::from(strand), state::INTERRUPTED);
    true
}

/// Ends a frame of the running strand `me`: cancels the strands anchored
/// there and waits, uninterruptibly, until they have all finished. `None`
/// ends every frame (the strand is finishing, or failed and abandons its
/// stack). Returns how many strands were alive in the frame (in its body,
/// for `None`) when it ended.
pub(crate) fn end_frame(me: NonNull<Header>, frame: Option<&Anchor>) -> usize {
    // SAFETY: the running strand's own header.
    let header = unsafe { me.as_ref() };
    let counted = frame.unwrap_or(&header.tree.body);
    let alive = {
        let family = header.tree.family.lock();
        counted.ending.set(true);
        let alive = counted.live.get() as usize;
        if family.satisfied(frame) {
            // Nothing to cancel or wait for: the usual end of a strand.
            return alive;
        }
        let mut child = family.first;
        while let Some(next) = NonNull::new(child) {
            // SAFETY: linked children are live while we hold the lock.
            let next = unsafe { next.as_ref() };
            if frame.is_none_or(|anchor| ptr::eq(next.tree.anchor, anchor)) {
                cancel(next);
            }
            // SAFETY: guarded by the lock.
            child = unsafe { (*next.tree.siblings.get())[NEXT] };
        }
        alive
    };
    let _shield = super::cancel::shield();
    let waiting = frame.map_or(ALL, |anchor| anchor as *const Anchor);
    loop {
        let mut done = false;
        let blocked = super::wait::block(super::BlockReason::Scope, 0, None, |_| {
            let mut family = header.tree.family.lock();
            done = family.satisfied(frame);
            if !done {
                family.waiting = waiting;
            }
            !done
        });
        if done {
            break;
        }
        if blocked.is_err() {
            // Cannot happen for a running strand without a deadline; wait
            // by yielding rather than return with strands alive.
            let _ = super::yield_now();
        }
    }
    alive
}
