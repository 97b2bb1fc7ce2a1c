//! A panic in a device's interrupt handler, contained: the handler stops,
//! and the code it interrupted goes on as if the handler had returned.
//!
//! A handler runs on its core's exception stack, below whatever it
//! interrupted, and belongs to no strand or task: nothing can fail in its
//! place. So the kernel's dispatcher runs each handler under a catch point
//! ([`catching_handler`]) set on that stack, and the panic handler, having
//! reported the panic, throws back to it ([`fail_running_handler`]). The
//! dispatcher then masks the line, whose device the handler left as it
//! was, and returns from the interrupt normally.
//!
//! The handler's frames are abandoned, not unwound: nothing in them is
//! dropped. A lock it held stays held (handlers take only short spin
//! locks, and one left held is a deadlock that its next taker reports or
//! spins on), unless the kernel knows it and lets it go (roving's kernel
//! does for its console); whatever it had half-changed stays half-changed.
//!
//! Handlers can nest (a fault taken inside one, or a kernel that opens
//! interrupts in a handler): each keeps the outer catch point and puts it
//! back, so a throw always ends the innermost handler only.

use super::this_core;
use crate::atomics::CachePadded;
use crate::atomics::unmodelled::{AtomicPtr, Ordering::Relaxed};
use crate::pool::current::SLOTS;
use crate::raw::context::catch::{CatchSlot, catching, throw};
use core::ptr;

/// Per core: the catch point of the innermost handler it runs (null:
/// none). Only that core reads or writes its entry.
static HANDLERS: [CachePadded<AtomicPtr<CatchSlot>>; SLOTS] =
    [const { CachePadded(AtomicPtr::new(ptr::null_mut())) }; SLOTS];

/// Runs `handler`, an interrupt handler on core `core` (the calling core),
/// so that a panic in it ends it alone: `Some` of what it returned, or
/// `None` if it panicked (or took a fault the kernel turned into a panic)
/// and the panic handler called [`fail_running_handler`].
///
/// For a kernel's interrupt dispatcher, around each device handler. It
/// costs a catch point: the callee-saved registers stored and loaded.
#[inline]
pub fn catching_handler<R>(core: usize, handler: impl FnOnce() -> R) -> Option<R> {
    let Some(entry) = HANDLERS.get(core) else { return Some(handler()) };
    let slot = CatchSlot::new();
    let outer = entry.swap(ptr::from_ref(&slot).cast_mut(), Relaxed);
    let outcome = catching(&slot, handler);
    entry.store(outer, Relaxed);
    outcome
}

/// Whether this core is running a handler under [`catching_handler`]:
/// what a panic handler asks before it reports a handler's panic as that
/// handler's alone.
pub fn running_handler() -> bool {
    this_core().is_some_and(|core| !HANDLERS[core].load(Relaxed).is_null())
}

/// Ends the innermost handler this core runs under [`catching_handler`],
/// which then returns `None`. Returns, doing nothing, if there is none.
///
/// This is what a bare-metal `#[panic_handler]` calls for a panic in an
/// interrupt handler (after it has reported it): the handler's frames are
/// abandoned, and the code it interrupted goes on.
pub fn fail_running_handler() {
    let Some(core) = this_core() else { return };
    let slot = HANDLERS[core].load(Relaxed);
    if slot.is_null() {
        return;
    }
    // A contained fault's mark is for a failure made from its panic; a
    // handler's makes none, so the mark must not reach the next panic.
    let _ = super::panic_kind(None);
    // SAFETY: the slot is that of the `catching_handler` running on this
    // core, on this stack below which the handler, and this panic's
    // frames, run; they are not used again (module docs).
    unsafe { throw(&*slot) }
}
