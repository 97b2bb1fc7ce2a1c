//! Stack overflow on the host: the guard gap below every fibre stack is
//! made inaccessible, and a fault in one is reported, naming the strand,
//! before the process aborts.
//!
//! Bare metal unmaps the gaps with its MMU (`fibre::guard_gaps`) and its
//! fault handler names the strand. The host does the same with `mprotect`
//! and a `SIGSEGV`/`SIGBUS` handler that runs on the thread's alternate
//! signal stack (the overflowing stack has no room left). A fault outside
//! every gap is not ours: it goes to the handler that was there before
//! (the standard library's, which reports overflows of ordinary thread
//! stacks), or to the default action.
//!
//! Frames bigger than a page cannot jump the gap: Rust probes each page of
//! a large frame on the targets roving's host runs on, so the first probe
//! below the stack faults in the gap.
//!
//! The handler only reads static data and calls `write` and `abort`,
//! which are async-signal-safe.

use crate::atomics::unmodelled::{AtomicPtr, Ordering::SeqCst};
use crate::strand::fibre;
use core::mem::MaybeUninit;
use core::ptr;
use std::sync::Once;

/// Each signal's previous action, for faults that are not ours.
static PREVIOUS: [AtomicPtr<libc::sigaction>; 2] =
    [AtomicPtr::new(ptr::null_mut()), AtomicPtr::new(ptr::null_mut())];
const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];
/// Bytes of the alternate signal stack given to a thread that has none.
const ALT_STACK_BYTES: usize = 64 * 1024;

/// Protects every guard gap and installs the fault handler, once per
/// process. A failure of either is reported on stderr and leaves only the
/// canary check (at every switch) in place.
pub(super) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for gap in fibre::guard_gaps() {
            // SAFETY: the gap is whole pages of the static region (page
            // aligned, a page per gap) that nothing reads or writes.
            if unsafe { libc::mprotect(gap.start as *mut libc::c_void, gap.len(), libc::PROT_NONE) } != 0 {
                eprintln!(
                    "roving: could not protect the fibre guard pages; overflows are caught only at switches"
                );
                return;
            }
        }
        for (signal, previous) in SIGNALS.iter().zip(&PREVIOUS) {
            // SAFETY: a zeroed `sigaction` is a valid value to fill in.
            let mut action: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
            action.sa_sigaction = on_fault as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            let old = Box::into_raw(Box::new(MaybeUninit::<libc::sigaction>::zeroed()));
            // SAFETY: valid pointers to a filled action and to room for the
            // old one; the handler is async-signal-safe (module docs).
            if unsafe { libc::sigaction(*signal, &action, old.cast()) } != 0 {
                eprintln!("roving: could not install the stack overflow handler");
                return;
            }
            previous.store(old.cast(), SeqCst);
        }
    });
}

/// Gives the calling thread an alternate signal stack if it has none, so
/// the fault handler can run when a fibre stack is exhausted. Threads the
/// standard library starts have one already.
pub(super) fn ensure_alternate_stack() {
    // SAFETY: reads the current setting into a local.
    let mut current: libc::stack_t = unsafe { MaybeUninit::zeroed().assume_init() };
    // SAFETY: a null new stack only queries.
    if unsafe { libc::sigaltstack(ptr::null(), &mut current) } != 0
        || current.ss_flags & libc::SS_DISABLE == 0
    {
        return;
    }
    // Kept for the thread's life: threads that are cores are few.
    let memory = Box::leak(vec![0u8; ALT_STACK_BYTES].into_boxed_slice());
    let stack = libc::stack_t { ss_sp: memory.as_mut_ptr().cast(), ss_flags: 0, ss_size: memory.len() };
    // SAFETY: `memory` lives forever and is used for nothing else.
    unsafe { libc::sigaltstack(&stack, ptr::null_mut()) };
}

extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    if let Some(hit) = fibre::guard_hit(address) {
        let mut line = Line::new();
        line.text("\nroving: stack overflow: ");
        match hit.strand {
            Some(strand) => {
                line.text("strand #");
                line.number(strand.get());
            }
            None => line.text("a strand"),
        }
        line.text(" ran off the bottom of fibre ");
        line.number(hit.fibre as u64);
        line.text(" (fault at 0x");
        line.hex(address as u64);
        line.text(" in its guard page); aborting\n");
        line.write();
        // SAFETY: ends the process; nothing to unwind on this stack.
        unsafe { libc::abort() };
    }
    let index = SIGNALS.iter().position(|&s| s == signal).unwrap_or(0);
    let previous = PREVIOUS[index].load(SeqCst);
    // SAFETY: stored once by `install`, never freed.
    let previous = unsafe { previous.as_ref() };
    match previous.map(|action| (action.sa_sigaction, action.sa_flags)) {
        Some((handler, flags)) if handler != libc::SIG_DFL && handler != libc::SIG_IGN => {
            if flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler took these arguments.
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { core::mem::transmute(handler) };
                handler(signal, info, context);
            } else {
                // SAFETY: as above, in its one-argument form.
                let handler: extern "C" fn(libc::c_int) = unsafe { core::mem::transmute(handler) };
                handler(signal);
            }
        }
        _ => {
            // Not ours, and nobody else's: the default action, when the
            // faulting instruction runs again on return.
            // SAFETY: restores the default disposition of this signal.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
}

/// A message built without allocating, for the signal handler.
struct Line {
    bytes: [u8; 256],
    len: usize,
}

impl Line {
    fn new() -> Self {
        Self { bytes: [0; 256], len: 0 }
    }

    fn text(&mut self, text: &str) {
        for &byte in text.as_bytes() {
            if self.len < self.bytes.len() {
                self.bytes[self.len] = byte;
                self.len += 1;
            }
        }
    }

    fn digits(&mut self, mut value: u64, base: u64) {
        let mut buffer = [0u8; 20];
        let mut at = buffer.len();
        loop {
            at -= 1;
            buffer[at] = b"0123456789abcdef"[(value % base) as usize];
            value /= base;
            if value == 0 {
                break;
            }
        }
        // SAFETY: the digits are ASCII.
        self.text(unsafe { core::str::from_utf8_unchecked(&buffer[at..]) });
    }

    fn number(&mut self, value: u64) {
        self.digits(value, 10);
    }

    fn hex(&mut self, value: u64) {
        self.digits(value, 16);
    }

    fn write(&self) {
        // SAFETY: writes our own bytes to stderr.
        unsafe { libc::write(libc::STDERR_FILENO, self.bytes.as_ptr().cast(), self.len) };
    }
}
