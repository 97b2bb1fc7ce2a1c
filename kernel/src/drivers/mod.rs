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
    /// Opens the board's console device, programming it where the board
    /// says to.
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

    /// A writer to the console device [`open`](Uart::open) programmed,
    /// without touching its settings.
    ///
    /// # Safety
    ///
    /// `device` was opened. Writers only ever send (wait for room, write
    /// the data register), which several may do at once: their bytes
    /// interleave, and nothing else goes wrong.
    pub(crate) unsafe fn writer(device: ConsoleDevice) -> Self {
        match device {
            #[cfg(target_arch = "aarch64")]
            // SAFETY: per this function's contract.
            ConsoleDevice::Pl011 { base, .. } => Self::Pl011(unsafe { pl011::Pl011::new(base, None) }),
            #[cfg(target_arch = "x86_64")]
            ConsoleDevice::Uart16550 { port } => {
                // SAFETY: per this function's contract.
                Self::Uart16550(unsafe { uart16550::Uart16550::writer(port) })
            }
            #[allow(unreachable_patterns)]
            other => panic!("this architecture has no driver for the console {other:?}"),
        }
    }
}

impl Uart {
    /// Sends `bytes` as they are: no line-end translation (binary data,
    /// `embedded-io` writes, defmt frames).
    pub(crate) fn write_bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match self {
                #[cfg(target_arch = "aarch64")]
                Self::Pl011(uart) => uart.send_raw(byte),
                #[cfg(target_arch = "x86_64")]
                Self::Uart16550(uart) => uart.send(byte),
            }
        }
    }
}

/// The console UART's receiving side.
pub(crate) struct Receiver {
    device: ReceiverDevice,
}

enum ReceiverDevice {
    #[cfg(target_arch = "aarch64")]
    Pl011(pl011::ReceiverPl011),
    #[cfg(target_arch = "x86_64")]
    Uart16550(uart16550::Receiver16550),
}

impl Receiver {
    /// The receiver of the board's console device.
    ///
    /// # Safety
    ///
    /// `device` is the board's console, opened as the console already;
    /// there is one receiver.
    pub(crate) unsafe fn open(device: ConsoleDevice) -> Self {
        let device = match device {
            #[cfg(target_arch = "aarch64")]
            ConsoleDevice::Pl011 { base, .. } => {
                // SAFETY: per this function's contract.
                ReceiverDevice::Pl011(unsafe { pl011::ReceiverPl011::new(base) })
            }
            #[cfg(target_arch = "x86_64")]
            ConsoleDevice::Uart16550 { port } => {
                // SAFETY: per this function's contract.
                ReceiverDevice::Uart16550(unsafe { uart16550::Receiver16550::new(port) })
            }
            #[allow(unreachable_patterns)]
            other => panic!("this architecture has no driver for the console {other:?}"),
        };
        Self { device }
    }

    /// The next received byte, if any; `Err(())` for one that arrived
    /// damaged or lost to an overrun.
    pub(crate) fn next(&mut self) -> Option<Result<u8, ()>> {
        match &mut self.device {
            #[cfg(target_arch = "aarch64")]
            ReceiverDevice::Pl011(uart) => uart.next(),
            #[cfg(target_arch = "x86_64")]
            ReceiverDevice::Uart16550(uart) => uart.next(),
        }
    }

    /// Clears interrupt status left from before the kernel took over.
    pub(crate) fn clear_stale(&mut self) {
        match &mut self.device {
            #[cfg(target_arch = "aarch64")]
            ReceiverDevice::Pl011(uart) => uart.clear_stale(),
            #[cfg(target_arch = "x86_64")]
            ReceiverDevice::Uart16550(uart) => uart.clear_stale(),
        }
    }

    /// Turns the receive interrupt on or off.
    pub(crate) fn set_interrupt(&mut self, on: bool) {
        match &mut self.device {
            #[cfg(target_arch = "aarch64")]
            ReceiverDevice::Pl011(uart) => uart.set_interrupt(on),
            #[cfg(target_arch = "x86_64")]
            ReceiverDevice::Uart16550(uart) => uart.set_interrupt(on),
        }
    }
}

/// Bytes the console UART emptied when the kernel turned its FIFOs on
/// (`pl011`'s module docs; the 16550 leaves no trace of them).
pub(crate) fn lost_at_setup() -> u64 {
    #[cfg(target_arch = "aarch64")]
    return pl011::LOST_AT_SETUP.load(core::sync::atomic::Ordering::Relaxed);
    #[cfg(target_arch = "x86_64")]
    return 0;
}

/// Bytes the console UART lost before software saw them: the overruns it
/// reported.
pub(crate) fn overruns() -> u64 {
    #[cfg(target_arch = "aarch64")]
    let reported = pl011::OVERRUNS.load(core::sync::atomic::Ordering::Relaxed);
    #[cfg(target_arch = "x86_64")]
    let reported = uart16550::OVERRUNS.load(core::sync::atomic::Ordering::Relaxed);
    reported
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
