//! A 16550-compatible UART on x86 I/O ports: the console (the `uart_16550`
//! crate initialises it) and its receiver.
//!
//! Reading the line status register clears its overrun flag, and both the
//! writer (waiting for room to send) and the receiver read it, so each
//! counts an overrun it sees in [`OVERRUNS`]: neither may drop the other's.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use uart_16550::SerialPort;
use x86_64::instructions::port::Port;

/// Overruns seen in the line status register, by whoever read it.
pub(crate) static OVERRUNS: AtomicU64 = AtomicU64::new(0);

const DATA: u16 = 0;
const INTERRUPT_ENABLE: u16 = 1;
const LINE_STATUS: u16 = 5;
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
        // Initialising clears the FIFOs. A port with no UART behind it
        // reads as all ones: nothing was received there.
        let has_byte = || {
            let status = read(port + LINE_STATUS);
            status != 0xff && status & DATA_READY != 0
        };
        super::early_input::save(|| has_byte().then(|| Ok(read(port + DATA))), has_byte);
        // SAFETY: per this function's contract.
        unsafe { SerialPort::new(port) }.init();
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
