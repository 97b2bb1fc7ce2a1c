//! The Arm PL011 UART as a text console (driver: the `arm-pl011-uart` crate).

use arm_pl011_uart::{DataBits, LineConfig, PL011Registers, Parity, StopBits, Uart, UniqueMmioPointer};
use core::fmt;
use core::ptr::NonNull;

/// Baud rate set when the kernel programs the UART itself.
const BAUD: u32 = 115_200;

pub(crate) struct Pl011(Uart<'static>);

impl Pl011 {
    /// # Safety
    ///
    /// `base` is a PL011's register block, mapped as device memory or
    /// reached with the MMU off. The console may open a second instance for
    /// an emergency report; both only ever write the data register.
    pub(crate) unsafe fn new(base: usize, clock_hz: Option<u32>) -> Self {
        let registers = NonNull::new(base as *mut PL011Registers).expect("PL011 base is not null");
        // SAFETY: per this function's contract.
        let mut uart = Uart::new(unsafe { UniqueMmioPointer::new(registers) });
        if let Some(clock) = clock_hz {
            let config =
                LineConfig { data_bits: DataBits::Bits8, parity: Parity::None, stop_bits: StopBits::One };
            // A clock the divisor cannot reach leaves the firmware's setting.
            let _ = uart.enable(config, BAUD, clock);
        }
        Self(uart)
    }
}

impl fmt::Write for Pl011 {
    /// Serial terminals expect CR LF.
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for (i, line) in s.split('\n').enumerate() {
            if i > 0 {
                self.0.write_str("\r\n")?;
            }
            self.0.write_str(line)?;
        }
        Ok(())
    }
}
