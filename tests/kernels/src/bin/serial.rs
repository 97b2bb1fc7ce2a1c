//! Serial input: the suite pipes [`BYTES`] bytes of a known pattern into
//! the guest's serial port; they are read through the kernel's
//! interrupt-driven receiver and every one is checked, in order: the
//! first half by a strand through `embedded_io::Read` (blocking), the
//! second by an async task through `embedded_io_async::Read`. None may be
//! lost, and the receiver must report no overrun. Beside the reader, a
//! strand keeps a core busy (one: the host has few CPUs for the guest's),
//! so the reads block the reading strand, not its core.
//!
//! QEMU feeds the input from the moment it starts, before the kernel owns
//! the UART (as a terminal would on hardware), so the kernel must take the
//! UART over without emptying it. The pattern follows a preamble of
//! [`PREAMBLE`] bytes and [`START`], and every byte of the preamble must
//! arrive too.
//!
//! With `serial.lost_at_setup=1` on the command line, one byte was sent
//! while the boot was held (by a debugger) just after the kernel looked at
//! the UART and before it turned the FIFOs on, which empty it: the first
//! read must report that byte lost (`ReadError::Lost`), and the stats
//! count it; then the input as above.
#![no_std]
#![no_main]

extern crate alloc;

use core::sync::atomic::{AtomicBool, Ordering::SeqCst};
use core::time::Duration;
use roving::{Pool, platform, strand};
use roving_kernel::{boot_info, println, serial};
use roving_test_kernels::{expected_cores, pass};

/// What the suite sends after [`START`].
const BYTES: usize = 16 * 1024;
/// The line that precedes the pattern.
const START: &[u8] = b"\nroving-serial-start\n";
/// What precedes [`START`]: this many of [`PREAMBLE_BYTE`].
const PREAMBLE: usize = 512;
const PREAMBLE_BYTE: u8 = 0xa5;

/// Byte `i` of the pattern (`tests/qemu/suite` computes the same).
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 8)) as u8
}

static DONE: AtomicBool = AtomicBool::new(false);

/// What has been read so far, checked against the pattern.
#[derive(Clone, Copy)]
struct Check {
    at: usize,
    /// FNV-1a of the bytes read.
    checksum: u32,
    reads: u32,
}

impl Check {
    fn feed(&mut self, bytes: &[u8]) {
        self.reads += 1;
        for &byte in bytes {
            assert_eq!(byte, pattern(self.at), "byte {} of the pattern", self.at);
            self.checksum = (self.checksum ^ u32::from(byte)).wrapping_mul(0x0100_0193);
            self.at += 1;
        }
    }
}

/// Reads the preamble and [`START`], checking both; returns how many bytes
/// that followed [`START`] in the same read are left at the front of `buf`.
fn skip_to_start(buf: &mut [u8]) -> usize {
    let mut at = 0;
    let expected = |at: usize| if at < PREAMBLE { PREAMBLE_BYTE } else { START[at - PREAMBLE] };
    loop {
        let got =
            serial::read(buf).unwrap_or_else(|e| panic!("after {at} bytes of the preamble and marker: {e}"));
        for (i, &byte) in buf[..got].iter().enumerate() {
            assert_eq!(byte, expected(at), "byte {at} of the preamble and start marker");
            at += 1;
            if at == PREAMBLE + START.len() {
                buf.copy_within(i + 1..got, 0);
                return got - i - 1;
            }
        }
    }
}

/// Keeps a core busy until the reader is done, yielding; blocks briefly
/// now and then so a cancel (a failed run) ends it.
fn spin() {
    let mut turns = 0u32;
    while !DONE.load(SeqCst) {
        strand::yield_now().expect("a strand yields");
        turns += 1;
        if turns.is_multiple_of(1024) {
            strand::sleep(Duration::from_micros(1)).expect("not cancelled");
        }
    }
}

fn main() {
    assert_eq!(platform::core_count(), expected_cores());
    let line = serial::stats().line.expect("the console has an interrupt line: serial input is on");
    println!("serial: input on line {line}; send the start marker, then {BYTES} bytes");
    let lost_at_setup = boot_info().bootarg("serial.lost_at_setup") == Some("1");
    let started = platform::ticks();
    let (checksum, reads) = Pool::new()
        .expect("a pool")
        .run(|| {
            let spinners: alloc::vec::Vec<_> =
                (1..platform::core_count().min(2)).map(|_| strand::spawn(spin).expect("a strand")).collect();
            let mut buf = [0u8; 512];
            if lost_at_setup {
                match serial::read(&mut buf) {
                    Err(serial::ReadError::Lost { count: 1 }) => {}
                    other => panic!("the byte lost at setup was not reported: the first read gave {other:?}"),
                }
            }
            let ahead = skip_to_start(&mut buf);
            let mut check = Check { at: 0, checksum: 0x811c_9dc5, reads: 0 };
            check.feed(&buf[..ahead]);
            // The first half: a strand, through the blocking trait.
            while check.at < BYTES / 2 {
                let want = buf.len().min(BYTES / 2 - check.at);
                let got = embedded_io::Read::read(&mut serial::Serial, &mut buf[..want])
                    .unwrap_or_else(|e| panic!("after {} bytes: {e}", check.at));
                check.feed(&buf[..got]);
            }
            // The rest: an async task, through the async trait.
            let task = roving::executor::spawn_async(async move {
                let mut buf = [0u8; 512];
                while check.at < BYTES {
                    let want = buf.len().min(BYTES - check.at);
                    let got = embedded_io_async::Read::read(&mut serial::Serial, &mut buf[..want])
                        .await
                        .unwrap_or_else(|e| panic!("after {} bytes: {e}", check.at));
                    check.feed(&buf[..got]);
                }
                check
            });
            let check = task.expect("a task").join().expect("the reading task finishes");
            let (checksum, reads) = (check.checksum, check.reads);
            DONE.store(true, SeqCst);
            for spinner in spinners {
                spinner.join().expect("a spinner ends");
            }
            (checksum, reads)
        })
        .expect("the pool runs");
    let ticks = platform::ticks() - started;
    let stats = serial::stats();
    assert_eq!(stats.overruns, 0, "the UART overran");
    assert_eq!(stats.damaged, 0, "bytes arrived damaged");
    assert_eq!(stats.lost_at_setup, u64::from(lost_at_setup), "bytes lost when the FIFOs were turned on");
    if lost_at_setup {
        println!("serial: the byte sent while the kernel turned the UART's FIFOs on was reported lost, once");
    }
    println!(
        "serial: {BYTES} bytes read in order (by a strand, then an async task) in {reads} reads, FNV-1a {checksum:#010x}, {} ms; the ring filled {} times; 0 lost, the {PREAMBLE}-byte preamble sent during boot included",
        ticks * 1000 / platform::tick_hz(),
        stats.held_back
    );
    pass("serial");
}

roving_kernel::entry!(main);
