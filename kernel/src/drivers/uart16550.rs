//! A 16550-compatible UART on x86 I/O ports: the console and its receiver.
//!
//! Reading the line status register clears its overrun flag, and both the
//! writer (waiting for room to send) and the receiver read it, so each
//! counts an overrun it sees in [`OVERRUNS`]: neither may drop the other's.
//!
//! Turning the FIFOs on (or off) empties the receiver, and the 16550
//! gives no way to hold a sender off meanwhile, nor any trace afterwards:
//! a byte that lands in that instant is gone, uncounted. Looking at the
//! receiver first does not close the instant (a byte may land between
//! the look and the write), and under QEMU it is not rare when input is
//! piped in at boot, since the next byte tends to wait for the very
//! register access that empties the FIFO. So the kernel never changes the
//! FIFOs' mode: with the firmware's FIFOs on, it only sets their trigger
//! level (which empties nothing); with them off, the receiver holds one
//! byte, and the handler has one character time to read it (260 µs at
//! the 38,400 baud set here). A byte that comes sooner overruns it, which
//! the UART flags and the kernel counts: nothing is lost unseen.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use x86_64::instructions::port::Port;

/// Overruns seen in the line status register, by whoever read it.
pub(crate) static OVERRUNS: AtomicU64 = AtomicU64::new(0);

const DATA: u16 = 0;
const INTERRUPT_ENABLE: u16 = 1;
/// Read: interrupt identification. Write: FIFO control.
const INTERRUPT_ID: u16 = 2;
const FIFO_CONTROL: u16 = 2;
const LINE_CONTROL: u16 = 3;
const MODEM_CONTROL: u16 = 4;
const LINE_STATUS: u16 = 5;
/// With the divisor latch open, `DATA` and `INTERRUPT_ENABLE` hold the
/// divisor's low and high bytes.
const DIVISOR_LATCH: u8 = 1 << 7;
/// Line control: 8 data bits, no parity, one stop bit.
const EIGHT_N_ONE: u8 = 0b0000_0011;
/// The divisor of the UART's 115,200 baud base: 38,400 baud, a PC
/// console's usual speed.
const DIVISOR: u16 = 3;
/// FIFO control: on, the receive interrupt at 14 bytes.
const FIFOS_ON_TRIGGER_14: u8 = 0b1100_0001;
/// Interrupt identification: both bits set while the FIFOs are on.
const FIFOS_ARE_ON: u8 = 0b1100_0000;
/// Modem control: data terminal ready, request to send, and OUT2, which
/// gates the UART's interrupt line on a PC.
const READY_AND_OUT2: u8 = 0b0000_1011;
/// Interrupt enable: received data available.
const RECEIVED_DATA: u8 = 1 << 0;
/// Line status bits.
const DATA_READY: u8 = 1 << 0;
const OVERRUN: u8 = 1 << 1;
const ERRORS: u8 = 0b0001_1100; // parity, framing, break
const ROOM_TO_SEND: u8 = 1 << 5;

fn read(port: u16) -> u8 {
    // SAFETY: a register of the console's UART (the board's port).
    unsafe { Port::<u8>::new(port).read() }
}

fn write(port: u16, value: u8) {
    // SAFETY: as in `read`.
    unsafe { Port::<u8>::new(port).write(value) }
}

/// Reads the line status, counting an overrun it reports.
fn line_status(base: u16) -> u8 {
    let status = read(base + LINE_STATUS);
    if status & OVERRUN != 0 {
        OVERRUNS.fetch_add(1, Relaxed);
    }
    status
}

pub(crate) struct Uart16550(u16);

impl Uart16550 {
    /// # Safety
    ///
    /// `port` is the first of a 16550's eight I/O ports. A second instance
    /// may exist for an emergency report; both only ever send.
    pub(crate) unsafe fn new(port: u16) -> Self {
        // A port with no UART behind it reads as all ones ("FIFOs on"):
        // the writes below then reach nothing.
        if read(port + INTERRUPT_ID) & FIFOS_ARE_ON == FIFOS_ARE_ON {
            // The enable bit is unchanged and no clearing bit is set: only
            // the trigger level changes, and nothing is emptied.
            write(port + FIFO_CONTROL, FIFOS_ON_TRIGGER_14);
        }
        // Interrupts stay off until serial input binds the line.
        write(port + INTERRUPT_ENABLE, 0);
        write(port + LINE_CONTROL, DIVISOR_LATCH);
        let [low, high] = DIVISOR.to_le_bytes();
        write(port + DATA, low);
        write(port + INTERRUPT_ENABLE, high);
        write(port + LINE_CONTROL, EIGHT_N_ONE);
        write(port + MODEM_CONTROL, READY_AND_OUT2);
        Self(port)
    }

    /// A writer to the 16550 at `port`, which [`new`](Self::new) set up.
    ///
    /// # Safety
    ///
    /// As for [`new`](Self::new); writers only ever send.
    pub(crate) const unsafe fn writer(port: u16) -> Self {
        Self(port)
    }

    /// Sends one byte as it is (no line-end translation).
    pub(crate) fn send(&mut self, byte: u8) {
        while line_status(self.0) & ROOM_TO_SEND == 0 {
            core::hint::spin_loop();
        }
        write(self.0 + DATA, byte);
    }
}

impl fmt::Write for Uart16550 {
    /// Serial terminals expect CR LF.
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for byte in s.bytes() {
            if byte == b'\n' {
                self.send(b'\r');
            }
            self.send(byte);
        }
        Ok(())
    }
}

/// The receiving side of the console's 16550.
pub(crate) struct Receiver16550(u16);

impl Receiver16550 {
    /// # Safety
    ///
    /// `port` is the console's 16550, already opened as the console; this
    /// is its only receiver.
    pub(crate) const unsafe fn new(port: u16) -> Self {
        Self(port)
    }

    /// The next received byte, if any; `Err(())` for one that arrived
    /// damaged (parity, framing, break), which is dropped.
    pub(crate) fn next(&mut self) -> Option<Result<u8, ()>> {
        let status = line_status(self.0);
        if status & DATA_READY == 0 {
            return None;
        }
        let byte = read(self.0 + DATA);
        Some(if status & ERRORS != 0 { Err(()) } else { Ok(byte) })
    }

    /// Nothing to clear: the 16550's status follows its FIFO.
    pub(crate) fn clear_stale(&mut self) {}

    /// Turns the received-data interrupt on or off.
    pub(crate) fn set_interrupt(&mut self, on: bool) {
        write(self.0 + INTERRUPT_ENABLE, if on { RECEIVED_DATA } else { 0 });
    }
}
