//! The Arm PL011 UART: the console, and its receiver (driver: the
//! `arm-pl011-uart` crate).
//!
//! Programming the UART turns its FIFOs on, and under QEMU turning them on
//! empties the receiver. The PL011 gives no way to hold a sender off
//! meanwhile, and with input piped in at boot the next byte tends to land
//! just before that write (5 runs of the echo example in 120 lost one,
//! with the boot-time read-out the kernel used to do first cut short). So
//! the kernel programs the UART only when that empties nothing: the FIFOs
//! are on already, or the receiver is empty at the first look, before any
//! read has asked the sender for more. Otherwise it leaves the line
//! settings as it found them and only makes sure the UART is on; the
//! receiver then holds one byte until serial input reads it.
//!
//! That leaves a window of a few instructions, between the look and the
//! write that turns the FIFOs on, where a byte that arrives is emptied
//! with them. It cannot be kept, but it is counted: the receive interrupt
//! it raised stays raised (the look clears it first), so a raised one with
//! nothing to read after the write is a byte lost ([`LOST_AT_SETUP`]), and
//! the next read of serial input reports it.

use crate::mmio::Registers;
use arm_pl011_uart::{
    DataBits, Error, Interrupts, LineConfig, PL011Registers, Parity, StopBits, Uart, UniqueMmioPointer,
};
use core::fmt;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Baud rate set when the kernel programs the UART itself.
const BAUD: u32 = 115_200;

/// Registers the crate gives no reading of: the line control (its FIFO
/// enable bit) and the control register (on, receive, transmit).
const LINE_CONTROL: usize = 0x2c;
const FIFOS_ON: u32 = 1 << 4;
const CONTROL: usize = 0x30;
const UART_RECEIVE_AND_TRANSMIT_ON: u32 = (1 << 9) | (1 << 8) | 1;

/// Overruns the receiver saw (the PL011 flags them on the next byte read).
pub(crate) static OVERRUNS: AtomicU64 = AtomicU64::new(0);

/// Bytes emptied with the FIFOs when the kernel turned them on (module
/// docs): at most one.
pub(crate) static LOST_AT_SETUP: AtomicU64 = AtomicU64::new(0);

/// The receive interrupts a byte raises, FIFOs on or off.
const RECEIVED: Interrupts = Interrupts::RXI.union(Interrupts::RTI);

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
            // SAFETY: per this function's contract.
            let registers = unsafe { Registers::at(base) };
            let fifos_on = registers.read32(LINE_CONTROL) & FIFOS_ON != 0;
            let mut uart = uart(base);
            // From here on a raised receive interrupt is a byte that came
            // after the look below.
            uart.clear_interrupts(RECEIVED);
            if fifos_on || uart.is_rx_fifo_empty() {
                program(&mut uart, clock);
                if !fifos_on && uart.is_rx_fifo_empty() && uart.raw_interrupt_status().intersects(RECEIVED) {
                    LOST_AT_SETUP.fetch_add(1, Relaxed);
                }
            } else {
                let control = registers.read32(CONTROL);
                registers.write32(CONTROL, control | UART_RECEIVE_AND_TRANSMIT_ON);
            }
        }
        Self(uart(base))
    }
}

/// Sets the line (8N1 at [`BAUD`]) and turns the FIFOs and the UART on.
/// Out of line: a debugger's breakpoint here stops the boot inside the
/// window the module docs describe (`tests/qemu/gdb-check` sends a byte
/// there).
#[inline(never)]
fn program(uart: &mut Uart<'static>, clock: u32) {
    let config = LineConfig { data_bits: DataBits::Bits8, parity: Parity::None, stop_bits: StopBits::One };
    // A clock the divisor cannot reach leaves the firmware's setting (and
    // the UART as it was).
    let _ = uart.enable(config, BAUD, clock);
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
