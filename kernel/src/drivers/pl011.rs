//! The Arm PL011 UART: the console, and its receiver (driver: the
//! `arm-pl011-uart` crate).

use arm_pl011_uart::{
    DataBits, Error, Interrupts, LineConfig, PL011Registers, Parity, StopBits, Uart, UniqueMmioPointer,
};
use core::fmt;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Baud rate set when the kernel programs the UART itself.
const BAUD: u32 = 115_200;

/// Overruns the receiver saw (the PL011 flags them on the next byte read).
pub(crate) static OVERRUNS: AtomicU64 = AtomicU64::new(0);

fn uart(base: usize) -> Uart<'static> {
    let registers = NonNull::new(base as *mut PL011Registers).expect("PL011 base is not null");
    // SAFETY: the callers' contracts: `base` is a PL011 mapped as device
    // memory, and the instances made here touch disjoint registers
    // (the console writes; the receiver reads and masks).
    Uart::new(unsafe { UniqueMmioPointer::new(registers) })
}

pub(crate) struct Pl011(Uart<'static>);

impl Pl011 {
    /// # Safety
    ///
    /// `base` is a PL011's register block, mapped as device memory or
    /// reached with the MMU off. The console may open a second instance for
    /// an emergency report; both only ever write the data register. A
    /// receiver may exist beside them.
    pub(crate) unsafe fn new(base: usize, clock_hz: Option<u32>) -> Self {
        if let Some(clock) = clock_hz {
            // SAFETY: per this function's contract; the console is opened
            // before the kernel's receiver.
            unsafe { save_early_input(base) };
            let config =
                LineConfig { data_bits: DataBits::Bits8, parity: Parity::None, stop_bits: StopBits::One };
            // A clock the divisor cannot reach leaves the firmware's setting.
            let _ = uart(base).enable(config, BAUD, clock);
        }
        Self(uart(base))
    }
}

/// Keeps what the receiver holds before programming the UART turns its
/// FIFOs on, which empties them.
///
/// # Safety
///
/// As for [`Pl011::new`], and the kernel's receiver is not open yet.
unsafe fn save_early_input(base: usize) {
    // SAFETY: per this function's contract; this receiver is gone before
    // the kernel opens its own.
    let mut early = unsafe { ReceiverPl011::new(base) };
    super::early_input::save(|| early.next(), || !uart(base).is_rx_fifo_empty());
}

impl Pl011 {
    /// Sends one byte as it is (no line-end translation).
    pub(crate) fn send_raw(&mut self, byte: u8) {
        while self.0.is_tx_fifo_full() {
            core::hint::spin_loop();
        }
        self.0.write_word(byte);
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

/// The receiving side of the console's PL011.
pub(crate) struct ReceiverPl011(Uart<'static>);

impl ReceiverPl011 {
    /// # Safety
    ///
    /// `base` is the console's PL011, already opened as the console; this
    /// is its only receiver.
    pub(crate) unsafe fn new(base: usize) -> Self {
        Self(uart(base))
    }

    /// The next received byte, if any; `Err(())` for one that arrived
    /// damaged (parity, framing, break) or flagged an overrun (the crate
    /// does not hand that byte over), which is dropped.
    pub(crate) fn next(&mut self) -> Option<Result<u8, ()>> {
        match self.0.read_word() {
            Ok(byte) => byte.map(Ok),
            Err(Error::Overrun) => {
                OVERRUNS.fetch_add(1, Relaxed);
                Some(Err(()))
            }
            Err(_) => Some(Err(())),
        }
    }

    /// Turns the receive and receive-timeout interrupts on or off.
    pub(crate) fn set_interrupt(&mut self, on: bool) {
        let masks = if on { Interrupts::RXI | Interrupts::RTI } else { Interrupts::empty() };
        self.0.set_interrupt_masks(masks);
    }

    /// Clears interrupt status left from before the kernel took over
    /// (turning the FIFOs on empties them but leaves a receive interrupt
    /// raised, with nothing to read).
    pub(crate) fn clear_stale(&mut self) {
        self.0.clear_interrupts(Interrupts::all());
    }
}
