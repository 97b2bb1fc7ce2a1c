//! A 16550-compatible UART on x86 I/O ports as a text console (driver: the
//! `uart_16550` crate, which also turns `\n` into CR LF).

use core::fmt;
use uart_16550::SerialPort;

pub(crate) struct Uart16550(SerialPort);

impl Uart16550 {
    /// # Safety
    ///
    /// `port` is the first of a 16550's eight I/O ports. A second instance
    /// may exist for an emergency report; both only ever send.
    pub(crate) unsafe fn new(port: u16) -> Self {
        // SAFETY: per this function's contract.
        let mut serial = unsafe { SerialPort::new(port) };
        serial.init();
        Self(serial)
    }
}

impl fmt::Write for Uart16550 {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_str(s)
    }
}
