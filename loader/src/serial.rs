//! The PL011 as the loader uses it: bytes in with a deadline, lines out,
//! and the firmware's settings put back before the kernel starts (driver:
//! the `arm-pl011-uart` crate).

use arm_pl011_uart::{DataBits, LineConfig, PL011Registers, Parity, StopBits, Uart, UniqueMmioPointer};
use core::fmt;
use core::ptr::NonNull;

use crate::board::{UART_BASE, UART_CLOCK_HZ};
use crate::clock::Instant;

/// The transfer's speed (the console's, once the kernel runs, is its own;
/// `tools/load` switches when the kernel starts). 48 MHz divides to it
/// with 0.2% error.
pub const BAUD: u32 = 921_600;

/// The pause between two looks at an empty receiver: at [`BAUD`] a byte
/// takes 11 µs and the FIFO holds 16, so nothing overflows.
const POLL_PAUSE_US: u64 = 20;

/// The registers that hold the line settings, saved as the firmware left
/// them: the integer and fractional divisors, the line control and the
/// control register, in the order they must be written back.
const SETTINGS: [usize; 4] = [0x24, 0x28, 0x2c, 0x30];

/// What went wrong with a byte.
pub enum ReadError {
    /// None came before the deadline.
    TimedOut,
    /// One came damaged (framing, parity, break) or after an overrun.
    Damaged,
}

/// The board's console UART, at [`BAUD`].
pub struct Serial {
    uart: Uart<'static>,
    firmware_settings: [u32; 4],
}

fn register(offset: usize) -> *mut u32 {
    (UART_BASE + offset) as *mut u32
}

impl Serial {
    /// Saves the firmware's line settings and programs the UART for the
    /// transfer.
    ///
    /// # Safety
    ///
    /// Called once: the UART at `UART_BASE` is then this value's alone,
    /// reached with the MMU off (so as device memory).
    pub unsafe fn open() -> Self {
        // SAFETY: the UART's registers, per this function's contract.
        let firmware_settings = SETTINGS.map(|offset| unsafe { register(offset).read_volatile() });
        let registers = NonNull::new(UART_BASE as *mut PL011Registers).expect("the UART's base is not null");
        // SAFETY: per this function's contract, nothing else uses it.
        let mut uart = Uart::new(unsafe { UniqueMmioPointer::new(registers) });
        let config =
            LineConfig { data_bits: DataBits::Bits8, parity: Parity::None, stop_bits: StopBits::One };
        uart.enable(config, BAUD, UART_CLOCK_HZ).expect("48 MHz reaches 921600 baud");
        Self { uart, firmware_settings }
    }

    /// Sends bytes as they are.
    pub fn send(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            while self.uart.is_tx_fifo_full() {
                core::hint::spin_loop();
            }
            self.uart.write_word(byte);
        }
    }

    /// The next byte, if one comes before `deadline`.
    pub fn receive_by(&mut self, deadline: Instant) -> Result<u8, ReadError> {
        loop {
            match self.uart.read_word() {
                Ok(Some(byte)) => return Ok(byte),
                Err(_) => return Err(ReadError::Damaged),
                Ok(None) if deadline.has_passed() => return Err(ReadError::TimedOut),
                // Checking again at once would only find it empty again,
                // and under QEMU each look holds up the emulator's thread
                // that fills the FIFO.
                Ok(None) => Instant::now().after_us(POLL_PAUSE_US).wait(),
            }
        }
    }

    /// Reads and drops bytes until none has come for `quiet_ms`: the rest
    /// of a transfer that failed part-way.
    pub fn drain(&mut self, quiet_ms: u64) {
        while !matches!(self.receive_by(Instant::now().after_ms(quiet_ms)), Err(ReadError::TimedOut)) {}
    }

    /// Waits until the last byte sent has left the wire, then puts back
    /// the firmware's line settings, so the kernel finds the UART as a
    /// direct boot would have left it.
    pub fn restore_firmware_settings(mut self) {
        while !self.uart.is_tx_fifo_empty() || self.uart.is_busy() {
            core::hint::spin_loop();
        }
        self.uart.disable();
        for (offset, value) in SETTINGS.iter().zip(self.firmware_settings) {
            // SAFETY: the UART is ours (`open`); its own settings, written
            // with the UART off, the control register last.
            unsafe { register(*offset).write_volatile(value) };
        }
    }
}

impl fmt::Write for Serial {
    /// Serial terminals expect CR LF.
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                self.send(b"\r\n");
            }
            self.send(line.as_bytes());
        }
        Ok(())
    }
}
