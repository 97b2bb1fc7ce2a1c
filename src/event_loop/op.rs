//! A deferred operation as it waits in a loop's queue: a link, the function
//! that runs or drops it, and the closure, in one heap allocation.
//!
//! Operations live on the heap rather than in a core's block cache: a
//! borrowed-caller loop belongs to no pool, so an operation may be made on
//! one pool's core and run on another's.

use super::Loop;
use crate::protocol::actor_schedule::Link;
use crate::task::boxed::{self, Boxed};
use core::ptr::NonNull;

/// Work a loop runs once with its state. Closures are the common kind; the
/// crate's own kinds (a fired callback) can give their parts back when the
/// loop refuses them.
pub(crate) trait Operation<T>: Send + 'static {
    /// Runs with the loop's state, on the loop's one drainer.
    fn run(self, state: &mut T, this: &Loop<T>);
}

impl<T, F: FnOnce(&mut T, &Loop<T>) + Send + 'static> Operation<T> for F {
    fn run(self, state: &mut T, this: &Loop<T>) {
        self(state, this)
    }
}

/// What every queued operation starts with, whatever its closure.
#[repr(C)]
pub(super) struct Head<T> {
    link: Link,
    /// Runs the operation with the loop (and frees it), or drops it unrun
    /// when given `None`.
    call: unsafe fn(NonNull<Link>, Option<&Loop<T>>),
}

type Node<T, O> = Boxed<Head<T>, O>;

/// Puts `op` on the heap, ready to queue. Gives it back if memory is
/// exhausted.
pub(super) fn new<T: Send + 'static, O: Operation<T>>(op: O) -> Result<NonNull<Link>, O> {
    let head = Head { link: Link::new(), call: call::<T, O> };
    // The link is the first field of the first field: a pointer to the node
    // is a pointer to its link.
    boxed::new(head, op, None).map(NonNull::cast)
}

/// Takes back an operation the loop refused.
///
/// # Safety
///
/// `link` was made by [`new`] with these types, and the caller owns it.
pub(super) unsafe fn take_back<T, O>(link: NonNull<Link>) -> O {
    // SAFETY: forwarded contract; the node is on the heap.
    unsafe { boxed::take(link.cast::<Node<T, O>>(), None) }
}

/// Runs the operation at `link` with `this` loop's state, or drops it if
/// `this` is `None`; either way it is freed.
///
/// # Safety
///
/// `link` was made by [`new`] for a loop of `T`, and the caller owns it. If
/// `this` is given, the caller is that loop's drainer.
pub(super) unsafe fn run<T>(link: NonNull<Link>, this: Option<&Loop<T>>) {
    // SAFETY: every queued link starts a `Head<T>` (contract).
    let call = unsafe { (*link.cast::<Head<T>>().as_ptr()).call };
    // SAFETY: forwarded contract.
    unsafe { call(link, this) }
}

/// Drops every operation of a chain except `keep`, which it leaves to the
/// caller; returns how many it dropped.
///
/// # Safety
///
/// The caller owns the chain, whose links were made by [`new`] for a loop
/// of `T`.
pub(super) unsafe fn drop_chain<T>(mut chain: *mut Link, keep: Option<NonNull<Link>>) -> usize {
    let mut dropped = 0;
    while let Some(link) = NonNull::new(chain) {
        // SAFETY: owned (contract); read before the node is freed.
        chain = unsafe { Link::next(link) };
        if Some(link) != keep {
            // SAFETY: owned, dropped once.
            unsafe { run::<T>(link, None) };
            dropped += 1;
        }
    }
    dropped
}

/// The `call` of an operation of type `O`.
///
/// # Safety
///
/// As for [`run`], with `link` made for an `O`.
unsafe fn call<T: Send + 'static, O: Operation<T>>(link: NonNull<Link>, this: Option<&Loop<T>>) {
    // SAFETY: made by `new` with these types (contract), taken once: the
    // node is freed before the operation runs, so an operation that defers
    // more finds the allocator's memory already back.
    let op = unsafe { take_back::<T, O>(link) };
    if let Some(this) = this {
        // SAFETY: the caller is the drainer (contract), the only one
        // touching the state now.
        op.run(unsafe { &mut *this.state_ptr() }, this);
    }
}
