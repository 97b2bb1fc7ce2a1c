//! With feature `defmt`, the console carries defmt frames instead of text:
//! a program's `defmt::info!` and the rest, roving's error types (which
//! are `defmt::Format` then), the `log` facade's records, `println!`, and
//! the kernel's own reports. `make run LOG=defmt` decodes them on the host
//! with `defmt-print`, from the interned strings in the ELF.
//!
//! Frames are rzCOBS-encoded and end with a zero byte (defmt's encoder).
//! A frame is written whole: its writer holds the console, with
//! interrupts masked on its core, from the first byte to the last, so
//! frames from several cores never mix and a handler never splits one.
//! Timestamps are microseconds since boot on the machine's counter.
//!
//! `print!` without a newline still makes a frame of its own (a line of
//! its own once decoded). Compile-time filtering is defmt's (`DEFMT_LOG`);
//! `make run LOG=defmt` builds with `DEFMT_LOG=trace` so that the runtime
//! level (`roving.log=`) decides, as in text mode.

use crate::console;
use core::cell::UnsafeCell;

#[defmt::global_logger]
struct Frames;

/// The frame under way; touched only by the console's holder.
struct Encoder(UnsafeCell<defmt::Encoder>);

// SAFETY: only the core holding the console (with interrupts masked)
// touches it.
unsafe impl Sync for Encoder {}

static ENCODER: Encoder = Encoder(UnsafeCell::new(defmt::Encoder::new()));

fn send(bytes: &[u8]) {
    console::write_held(bytes);
}

// SAFETY: `acquire` takes the console (one frame at a time, machine-wide,
// interrupts masked on the writer's core); the other three run only
// between it and `release`, on that core.
unsafe impl defmt::Logger for Frames {
    fn acquire() {
        let unfinished = console::hold();
        // SAFETY: we hold the console.
        let encoder = unsafe { &mut *ENCODER.0.get() };
        if unfinished {
            // A frame was left unfinished (a panic while this core
            // formatted one, or a holder that never let go). A new encoder
            // forgets its half-written symbol, and starts with a frame
            // separator, which ends the broken frame so the decoder finds
            // this one.
            *encoder = defmt::Encoder::new();
        }
        encoder.start_frame(send);
    }

    unsafe fn flush() {}

    unsafe fn release() {
        // SAFETY: we hold the console (the trait's contract).
        unsafe { (*ENCODER.0.get()).end_frame(send) };
        console::let_go();
    }

    unsafe fn write(bytes: &[u8]) {
        // SAFETY: as in `release`.
        unsafe { (*ENCODER.0.get()).write(bytes, send) };
    }
}

defmt::timestamp!("{=u64:us}", {
    let ticks = roving::platform::ticks();
    let hz = roving::platform::tick_hz().max(1);
    (u128::from(ticks) * 1_000_000 / u128::from(hz)) as u64
});
