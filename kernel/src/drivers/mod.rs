//! Device drivers shared by several boards.

#[cfg(target_arch = "aarch64")]
pub(crate) mod pl011;
#[cfg(target_arch = "x86_64")]
pub(crate) mod uart16550;

use crate::board::ConsoleDevice;
use core::fmt;

/// The console's UART, whichever kind the board has.
pub(crate) enum Uart {
    #[cfg(target_arch = "aarch64")]
    Pl011(pl011::Pl011),
    #[cfg(target_arch = "x86_64")]
    Uart16550(uart16550::Uart16550),
}

impl Uart {
    /// Opens the board's console device.
    ///
    /// # Safety
    ///
    /// `device` is the board's console, reachable (mapped as device memory,
    /// or the MMU off; or I/O ports). The console may open a second
    /// instance for an emergency report.
    pub(crate) unsafe fn open(device: ConsoleDevice) -> Self {
        match device {
            #[cfg(target_arch = "aarch64")]
            ConsoleDevice::Pl011 { base, clock_hz } => {
                // SAFETY: per this function's contract.
                Self::Pl011(unsafe { pl011::Pl011::new(base, clock_hz) })
            }
            #[cfg(target_arch = "x86_64")]
            ConsoleDevice::Uart16550 { port } => {
                // SAFETY: per this function's contract.
                Self::Uart16550(unsafe { uart16550::Uart16550::new(port) })
            }
            #[allow(unreachable_patterns)]
            other => panic!("this architecture has no driver for the console {other:?}"),
        }
    }
}

impl fmt::Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match self {
            #[cfg(target_arch = "aarch64")]
            Self::Pl011(uart) => uart.write_str(s),
            #[cfg(target_arch = "x86_64")]
            Self::Uart16550(uart) => uart.write_str(s),
        }
    }
}
