//! Serial input: bytes typed at (or piped into) the console UART.
//!
//! The kernel binds the console's interrupt line at boot (routed
//! to core 0; [`interrupts::route`] moves it). Its
//! handler drains the UART into a ring of [`CAPACITY`] bytes and raises a
//! [`Signal`]; a strand in [`read`] or [`read_line`] waits on that signal,
//! which blocks the strand, not its core, and an async task awaits it in
//! [`read_async`] or [`read_line_async`]. [`Serial`] is the console as the
//! embedded ecosystem's `embedded-io` and `embedded-io-async` traits see
//! it.
//!
//! Nothing is dropped silently:
//!
//! - When the ring is full the handler turns the UART's receive interrupt
//!   off and leaves the rest in the UART, whose FIFO then fills; the next
//!   read turns it back on. Under QEMU that is back-pressure (QEMU sends no
//!   more until there is room). On hardware, bytes that arrive while the
//!   FIFO is full are lost by the UART itself, which flags an overrun.
//! - Bytes sent while the machine boots wait in the UART: the kernel
//!   turns its FIFOs on only when that empties nothing (the receiver was
//!   empty, or they were on already), and otherwise leaves them as the
//!   firmware did, holding one byte (the sender holds back the rest, under
//!   QEMU; on hardware the UART flags an overrun).
//!   On a PL011 a byte that arrives in the few instructions between the
//!   kernel's look and its turning the FIFOs on is emptied with them; it
//!   is counted (`InputStats::lost_at_setup`). A 16550 leaves no trace of
//!   such a byte: on the PC it would go uncounted.
//! - Overruns, bytes that arrive damaged (parity, framing, break), and a
//!   byte lost at setup are counted in [`stats`] and reported by the next
//!   read as [`ReadError::Lost`], once.
//!
//! One reader at a time, strand or task; others wait their turn (a roving
//! `Mutex`, whose waiters are served in the order they came).

mod io;

pub use io::Serial;

use crate::board::board;
use crate::drivers::{self, Receiver};
use crate::interrupts::{self, Handled};
use crate::masking;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use heapless::spsc::{Consumer, Producer, Queue, QueueView};
use roving::sync::{Mutex, Signal, WaitError};

/// Bytes the ring holds.
pub const CAPACITY: usize = 4096;

/// The handler's side, taken with interrupts masked (`masking::locked`:
/// the handler, or a reader turning the interrupt back on).
struct Input {
    receiver: Option<Receiver>,
    producer: Producer<'static, u8>,
    /// The receive interrupt is off because the ring was full.
    paused: bool,
}

/// A reader's side.
struct Reader {
    consumer: Consumer<'static, u8>,
    /// The last byte of a line was a CR: a LF right after it is part of
    /// the same line end.
    after_cr: bool,
    /// Losses already reported by a read.
    reported: u64,
}

static ENDS: (spin::Mutex<Input>, Mutex<Reader>) = {
    static mut RING: &mut QueueView<u8> = &mut Queue::<u8, { CAPACITY + 1 }>::new();
    // SAFETY: `RING` is reachable only here, once, while statics are built.
    #[allow(static_mut_refs)]
    let (producer, consumer) = unsafe { RING.split_const() };
    (
        spin::Mutex::new(Input { receiver: None, producer, paused: false }),
        Mutex::new(Reader { consumer, after_cr: false, reported: 0 }),
    )
};

static ARRIVED: Signal = Signal::new();
static LINE: AtomicU32 = AtomicU32::new(NO_LINE);
const NO_LINE: u32 = u32::MAX;
static RECEIVED: AtomicU64 = AtomicU64::new(0);
static DAMAGED: AtomicU64 = AtomicU64::new(0);
static HELD_BACK: AtomicU64 = AtomicU64::new(0);

/// Why a read returned no bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// This board's console has no interrupt line the kernel could bind,
    /// so there is no serial input.
    NoInput,
    /// Bytes were lost before software saw them (`count` more since the
    /// last report): the UART overran, they arrived damaged, or one was
    /// emptied when the kernel turned the UART's FIFOs on. The bytes
    /// that did arrive are still there; read again.
    Lost {
        /// Losses since the last report.
        count: u64,
    },
    /// Waiting failed: [`WaitError::NotAStrand`] outside a strand,
    /// [`WaitError::Interrupted`] in a cancelled one.
    Wait(WaitError),
}

impl core::fmt::Display for ReadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::NoInput => f.write_str("this board's console has no serial input"),
            Self::Lost { count: 1 } => f.write_str("a byte of serial input was lost (overrun or damaged)"),
            Self::Lost { count } => write!(f, "{count} bytes of serial input were lost (overrun or damaged)"),
            Self::Wait(error) => write!(f, "waiting for serial input: {error}"),
        }
    }
}

impl core::error::Error for ReadError {}

impl From<WaitError> for ReadError {
    fn from(error: WaitError) -> Self {
        Self::Wait(error)
    }
}

/// What serial input has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InputStats {
    /// The console's interrupt line, if serial input is on.
    pub line: Option<u32>,
    /// Bytes received into the ring.
    pub received: u64,
    /// Overruns the UART reported (bytes it lost).
    pub overruns: u64,
    /// Bytes that arrived damaged (parity, framing, break) and were dropped.
    pub damaged: u64,
    /// Bytes the UART emptied when the kernel turned its FIFOs on at boot
    /// (a PL011: one that came in the few instructions between the
    /// kernel's look at the receiver and that write).
    pub lost_at_setup: u64,
    /// Times the ring was full and input was held back in the UART.
    pub held_back: u64,
}

/// Serial input so far.
pub fn stats() -> InputStats {
    let line = LINE.load(Relaxed);
    InputStats {
        line: (line != NO_LINE).then_some(line),
        received: RECEIVED.load(Relaxed),
        overruns: drivers::overruns(),
        damaged: DAMAGED.load(Relaxed),
        lost_at_setup: drivers::lost_at_setup(),
        held_back: HELD_BACK.load(Relaxed),
    }
}

/// Binds the console's line on core 0 and turns its receive interrupt on.
/// Boot core, once the interrupt controller is up.
pub(crate) fn init() {
    let Some(line) = board().console_line.and_then(interrupts::resolve) else { return };
    // SAFETY: the board's console device, opened as the console already;
    // this is its one receiver.
    let receiver = unsafe { Receiver::open(crate::console::device()) };
    masking::locked(&ENDS.0, |input| input.receiver = Some(receiver));
    match interrupts::bind_kernel(line, 0, on_interrupt) {
        Ok(()) => {
            LINE.store(line, Relaxed);
            with_receiver(|receiver| {
                receiver.clear_stale();
                receiver.set_interrupt(true);
            });
            // What arrived during boot raised no interrupt the handler saw
            // (it came before the line was bound, or sits below the FIFO's
            // trigger level): drain it now.
            on_interrupt(line);
        }
        Err(error) => log::warn!(target: "roving_kernel", "no serial input: {error}"),
    }
}

fn with_receiver(f: impl FnOnce(&mut Receiver)) {
    masking::locked(&ENDS.0, |input| {
        if let Some(receiver) = input.receiver.as_mut() {
            f(receiver);
        }
    });
}

/// The console line's handler: drain the UART into the ring.
fn on_interrupt(_line: u32) -> Handled {
    let mut handled = Handled::No;
    let mut arrived = false;
    masking::locked(&ENDS.0, |input| {
        let Input { receiver: Some(receiver), producer, paused } = input else { return };
        loop {
            if !producer.ready() {
                receiver.set_interrupt(false);
                *paused = true;
                HELD_BACK.fetch_add(1, Relaxed);
                handled = Handled::Yes;
                break;
            }
            match receiver.next() {
                None => break,
                Some(Ok(byte)) => {
                    let _ = producer.enqueue(byte); // room: checked above
                    RECEIVED.fetch_add(1, Relaxed);
                    arrived = true;
                }
                Some(Err(())) => {
                    DAMAGED.fetch_add(1, Relaxed);
                }
            }
            handled = Handled::Yes;
        }
    });
    if arrived {
        ARRIVED.signal();
    }
    handled
}

/// Turns the receive interrupt back on if a full ring turned it off.
fn resume() {
    masking::locked(&ENDS.0, |input| {
        if input.paused {
            input.paused = false;
            if let Some(receiver) = input.receiver.as_mut() {
                receiver.set_interrupt(true);
            }
        }
    });
}

fn lost() -> u64 {
    drivers::overruns() + DAMAGED.load(Relaxed) + drivers::lost_at_setup()
}

impl Reader {
    /// Takes what the ring holds into `buf`; reports losses first.
    fn take(&mut self, buf: &mut [u8]) -> Result<usize, ReadError> {
        let lost = lost();
        if lost > self.reported {
            let count = lost - self.reported;
            self.reported = lost;
            return Err(ReadError::Lost { count });
        }
        let mut taken = 0;
        while taken < buf.len() {
            let Some(byte) = self.consumer.dequeue() else { break };
            buf[taken] = byte;
            taken += 1;
        }
        resume();
        Ok(taken)
    }

    /// Whether a read would return at once: a byte, or a loss to report.
    fn has_news(&self) -> bool {
        self.consumer.ready() || lost() != self.reported
    }

    /// Waits until the ring has a byte (or a loss to report).
    fn wait(&mut self) -> Result<(), ReadError> {
        while !self.has_news() {
            ARRIVED.wait()?;
        }
        Ok(())
    }

    /// [`Reader::wait`] for an async task.
    async fn wait_async(&mut self) -> Result<(), ReadError> {
        while !self.has_news() {
            ARRIVED.wait_async().await?;
        }
        Ok(())
    }

    /// One byte of a line being typed (see [`read_line`]): echoes it and
    /// edits `buf`, whose first `len` bytes are the line so far. Returns
    /// whether the line has ended.
    fn edit_line(&mut self, byte: u8, buf: &mut [u8], len: &mut usize) -> bool {
        let after_cr = core::mem::replace(&mut self.after_cr, byte == b'\r');
        match byte {
            b'\n' if after_cr => {}
            b'\r' | b'\n' => {
                crate::print!("\n");
                return true;
            }
            0x08 | 0x7f if *len > 0 => {
                *len -= 1;
                crate::print!("\x08 \x08");
            }
            0x08 | 0x7f => {}
            byte if *len < buf.len() => {
                buf[*len] = byte;
                *len += 1;
                echo(byte);
            }
            _ => {}
        }
        false
    }
}

fn reader() -> Result<roving::sync::MutexGuard<'static, Reader>, ReadError> {
    if LINE.load(Relaxed) == NO_LINE {
        return Err(ReadError::NoInput);
    }
    ENDS.1.lock().map_err(ReadError::Wait)
}

async fn reader_async() -> Result<roving::sync::AsyncMutexGuard<'static, Reader>, ReadError> {
    if LINE.load(Relaxed) == NO_LINE {
        return Err(ReadError::NoInput);
    }
    ENDS.1.lock_async().await.map_err(ReadError::Wait)
}

/// Reads at least one byte into `buf` (unless it is empty), blocking the
/// calling strand until one arrives; returns how many it read.
///
/// # Errors
///
/// [`ReadError::NoInput`] without serial input; [`ReadError::Lost`] once
/// for bytes lost since the last report; [`ReadError::Wait`] when the
/// caller cannot block (outside a strand) or is cancelled.
pub fn read(buf: &mut [u8]) -> Result<usize, ReadError> {
    let mut reader = reader()?;
    loop {
        let taken = reader.take(buf)?;
        if taken > 0 || buf.is_empty() {
            return Ok(taken);
        }
        reader.wait()?;
    }
}

/// Reads what has arrived into `buf` without blocking; 0 if nothing has,
/// or another strand is reading.
///
/// # Errors
///
/// As for [`read`], but never [`ReadError::Wait`].
pub fn try_read(buf: &mut [u8]) -> Result<usize, ReadError> {
    if LINE.load(Relaxed) == NO_LINE {
        return Err(ReadError::NoInput);
    }
    match ENDS.1.try_lock() {
        Ok(mut reader) => reader.take(buf),
        Err(_) => Ok(0),
    }
}

/// Reads one line into `buf`, as a terminal's line discipline would:
/// each byte typed is echoed, backspace (or DEL) erases the last one, and
/// CR, LF or CR LF ends the line (not stored). Returns the line's length.
/// Bytes past `buf`'s end are dropped (and not echoed) until the line ends.
///
/// # Errors
///
/// As for [`read`]. A loss reported mid-line leaves the bytes read so far
/// in `buf`; they are lost with the error.
pub fn read_line(buf: &mut [u8]) -> Result<usize, ReadError> {
    let mut reader = reader()?;
    let mut len = 0;
    loop {
        let mut byte = [0];
        if reader.take(&mut byte)? == 0 {
            reader.wait()?;
        } else if reader.edit_line(byte[0], buf, &mut len) {
            return Ok(len);
        }
    }
}

/// Reads at least one byte into `buf` (unless it is empty), waiting
/// without blocking until one arrives: [`read`] for an async task.
///
/// # Errors
///
/// As for [`read`], but never [`ReadError::Wait`].
pub async fn read_async(buf: &mut [u8]) -> Result<usize, ReadError> {
    let mut reader = reader_async().await?;
    loop {
        let taken = reader.take(buf)?;
        if taken > 0 || buf.is_empty() {
            return Ok(taken);
        }
        reader.wait_async().await?;
    }
}

/// Reads one line into `buf`, echoing and editing it: [`read_line`] for
/// an async task.
///
/// # Errors
///
/// As for [`read_async`].
pub async fn read_line_async(buf: &mut [u8]) -> Result<usize, ReadError> {
    let mut reader = reader_async().await?;
    let mut len = 0;
    loop {
        let mut byte = [0];
        if reader.take(&mut byte)? == 0 {
            reader.wait_async().await?;
        } else if reader.edit_line(byte[0], buf, &mut len) {
            return Ok(len);
        }
    }
}

/// Echoes a typed byte: itself if printable ASCII, `^X` for a control
/// byte, `?` for the rest.
fn echo(byte: u8) {
    match byte {
        0x20..=0x7e => crate::print!("{}", byte as char),
        0x00..=0x1f => crate::print!("^{}", (byte ^ 0x40) as char),
        _ => crate::print!("?"),
    }
}
