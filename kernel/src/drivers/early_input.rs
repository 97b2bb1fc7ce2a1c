//! Bytes that reached the console UART before the kernel programmed it.
//!
//! Programming a PL011 (turning its FIFOs on) empties its receiver, so
//! what a terminal or a pipe sent while the machine booted would be lost.
//! The console reads those bytes out first and keeps them here; the
//! receiver hands them over before anything newer. (The PC's 16550 is
//! programmed without emptying it, so it keeps nothing here.)

use core::sync::atomic::{AtomicBool, Ordering::Relaxed};
use heapless::Deque;

/// Bytes kept at most: a pipe's first lines, well beyond the PL011's
/// 32-byte receive FIFO.
pub(crate) const CAPACITY: usize = 256;

/// Reads of an empty receiver, after bytes came, before it counts as quiet
/// (milliseconds to tens of milliseconds). A sender that is not
/// a human (QEMU feeding a pipe) hands over its next byte as soon as the
/// last one is read, but QEMU feeds it from another host thread, which
/// may wait for a busy host CPU for a scheduler time slice or two;
/// programming the UART before it stops would empty its receiver again.
/// (A tenth of this lost a byte of the shell's script now and then, with
/// QEMU on a busy two-CPU host.) Only a boot that received bytes waits.
const QUIET_READS: u32 = 200_000;

pub(crate) type EarlyBytes = Deque<u8, CAPACITY>;

/// Written by the boot core while it opens the console, taken once by the
/// receiver; nothing touches it in an interrupt handler.
static EARLY: spin::Mutex<EarlyBytes> = spin::Mutex::new(Deque::new());

/// Whether the kernel discarded a byte at boot: [`save`] was full and the
/// receiver still held one, which programming the UART then emptied.
static DISCARDED: AtomicBool = AtomicBool::new(false);

/// Keeps the bytes `next_byte` yields (as a receiver's `next`: `None`
/// when it has none now, `Err` for a damaged byte, which is dropped). A
/// receiver empty at once returns at once: nothing was sent during boot.
/// Once bytes came, reading stops when the receiver stays empty for
/// [`QUIET_READS`] reads, or when [`CAPACITY`] bytes are kept; then, if
/// `has_byte` says one is waiting, it is counted as discarded (it is left
/// in the receiver, so the sender holds back any more, but programming the
/// UART empties it).
pub(super) fn save(mut next_byte: impl FnMut() -> Option<Result<u8, ()>>, has_byte: impl FnOnce() -> bool) {
    let mut early = EARLY.lock();
    let mut quiet = 0;
    let mut reads = 0;
    while quiet < QUIET_READS && reads < 2 * CAPACITY {
        if early.is_full() {
            if has_byte() {
                DISCARDED.store(true, Relaxed);
            }
            return;
        }
        match next_byte() {
            None if reads == 0 => return,
            None => quiet += 1,
            Some(byte) => {
                quiet = 0;
                reads += 1;
                if let Ok(byte) = byte {
                    let _ = early.push_back(byte); // room: checked above
                }
            }
        }
    }
}

/// Bytes the kernel discarded while it programmed the UART (0 or 1).
pub(super) fn discarded() -> u64 {
    u64::from(DISCARDED.load(Relaxed))
}

/// Takes the bytes kept.
pub(super) fn take() -> EarlyBytes {
    core::mem::replace(&mut *EARLY.lock(), Deque::new())
}
