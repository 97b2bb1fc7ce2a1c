//! Failures made when memory has run out.
//!
//! On bare metal a panic fails its strand or task, and the failure it
//! leaves is a heap block with the message and place in it. The commonest
//! panic in a full heap is the heap's own ("memory allocation of N bytes
//! failed"), and making its failure would panic again: the kernel could
//! not fail the strand and stopped the machine. So a panic's failure is
//! made without a panic of its own:
//!
//! - the message and the file name are written with fallible allocations,
//!   and keep what fitted (possibly nothing);
//! - the block itself is allocated fallibly, and if that fails, taken
//!   from a small reserve of blocks allocated beforehand: when a pool is
//!   made, and again after each failure made while memory was there. A
//!   reserved block comes with room for [`RESERVED_TEXT`] bytes of
//!   message, which the message is written into (cut short if longer), so
//!   the report still says what happened.
//!
//! With the reserve empty too (more failures at once than it holds, in a
//! full heap), the caller gets `None` and the panic stops the machine as
//! before.

use super::failure::{Failure, FailureKind, Location};
use crate::atomics::unmodelled::{AtomicPtr, Ordering::AcqRel};
use crate::strand::id::StrandId;
use alloc::boxed::Box;
use alloc::string::String;
use core::alloc::Layout;
use core::fmt::{self, Write};
use core::ptr;

/// Blocks kept for failures made in a full heap: one per failure that can
/// be under way at once before the heap has room again.
const RESERVED: usize = 4;

/// The message room each reserved block comes with, in bytes.
const RESERVED_TEXT: usize = 160;

static RESERVE: [AtomicPtr<Failure>; RESERVED] = [const { AtomicPtr::new(ptr::null_mut()) }; RESERVED];

/// Text that keeps what fits in the heap.
struct Fallible(String);

impl Write for Fallible {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.0.try_reserve(text.len()).map_err(|_| fmt::Error)?;
        self.0.push_str(text);
        Ok(())
    }
}

/// The text of `args` as far as the heap allows, and whether it is whole.
fn text(args: fmt::Arguments<'_>) -> (String, bool) {
    let mut text = Fallible(String::new());
    let whole = text.write_fmt(args).is_ok();
    (text.0, whole)
}

/// Text written into a string's room, never growing it: what does not fit
/// is cut, at a character's edge.
struct InRoom<'a>(&'a mut String);

impl Write for InRoom<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let room = self.0.capacity() - self.0.len();
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.0.push_str(&text[..end]);
        if end < text.len() { Err(fmt::Error) } else { Ok(()) }
    }
}

/// A fresh block for a failure, from the heap if it has room.
fn allocate() -> Option<ptr::NonNull<Failure>> {
    // SAFETY: `Failure` has a non-zero size.
    ptr::NonNull::new(unsafe { alloc::alloc::alloc(Layout::new::<Failure>()) }.cast::<Failure>())
}

/// Fills the reserve's empty places, as far as the heap allows.
pub(crate) fn top_up() {
    for place in &RESERVE {
        if !place.load(crate::atomics::unmodelled::Ordering::Relaxed).is_null() {
            continue;
        }
        let mut room = String::new();
        if room.try_reserve_exact(RESERVED_TEXT).is_err() {
            return;
        }
        let Some(block) = allocate() else { return };
        // SAFETY: fresh memory with `Failure`'s layout.
        unsafe { block.as_ptr().write(Failure::new(FailureKind::Panicked, room, None, None)) };
        if place
            .compare_exchange(
                ptr::null_mut(),
                block.as_ptr(),
                AcqRel,
                crate::atomics::unmodelled::Ordering::Relaxed,
            )
            .is_err()
        {
            // SAFETY: ours, never shared: made by `allocate` as a `Box`'s.
            drop(unsafe { Box::from_raw(block.as_ptr()) });
        }
    }
}

/// The failure of a panic with `message` at `location`, made without
/// panicking however full the heap is (module docs); `None` only if the
/// heap and the reserve are both empty.
pub(crate) fn panic_failure(
    kind: FailureKind,
    message: fmt::Arguments<'_>,
    location: Option<&core::panic::Location<'_>>,
    strand: Option<StrandId>,
) -> Option<Box<Failure>> {
    let location = location.map(|place| Location {
        file: text(format_args!("{}", place.file())).0,
        line: place.line(),
        column: place.column(),
    });
    let (text, whole) = text(message);
    let failure = Failure::new(kind, text, location, strand);
    // A message cut short by a full heap is written again into a reserved
    // block's room, if one is left.
    let reserved = if whole { None } else { take_reserved() };
    if let Some(kept) = reserved {
        return Some(in_reserved(kept, failure, message));
    }
    if let Some(block) = allocate() {
        // SAFETY: fresh memory with `Failure`'s layout.
        unsafe { block.as_ptr().write(failure) };
        top_up();
        // SAFETY: allocated with the global allocator and `Failure`'s
        // layout, as a `Box` is.
        return Some(unsafe { Box::from_raw(block.as_ptr()) });
    }
    let kept = take_reserved()?;
    Some(in_reserved(kept, failure, message))
}

/// A reserved block, taken out of the reserve, if one is left.
fn take_reserved() -> Option<ptr::NonNull<Failure>> {
    RESERVE.iter().find_map(|place| ptr::NonNull::new(place.swap(ptr::null_mut(), AcqRel)))
}

/// `failure` in the reserved block `kept`, its message written again into
/// the block's room if the heap cut it short.
fn in_reserved(
    kept: ptr::NonNull<Failure>,
    mut failure: Failure,
    message: fmt::Arguments<'_>,
) -> Box<Failure> {
    // SAFETY: a block `top_up` filled, taken out of the reserve: ours alone.
    let mut room = core::mem::take(unsafe { (*kept.as_ptr()).message_mut() });
    if room.capacity() > failure.message().len() {
        room.clear();
        let _ = InRoom(&mut room).write_fmt(message);
        core::mem::swap(failure.message_mut(), &mut room);
    }
    drop(room);
    // SAFETY: as above; assigning drops the empty failure it held.
    unsafe { *kept.as_ptr() = failure };
    // SAFETY: made as a `Box`'s (`allocate`).
    unsafe { Box::from_raw(kept.as_ptr()) }
}
