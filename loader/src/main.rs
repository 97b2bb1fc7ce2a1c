//! roving's serial chainloader for the Raspberry Pi 3B and 4B
//! (docs/loader.md).
//!
//! It is a `kernel8.img` that stays on the SD card. The firmware loads it
//! at 0x80000 and enters it on core 0, with the other cores parked in the
//! firmware's spin table. It moves itself out of the kernel's way, asks
//! the host (`tools/load`) for a kernel over the UART, receives the image
//! with its length and checksum, and enters it at 0x80000 with the
//! registers the firmware passed: the kernel cannot tell it was
//! chainloaded. A failed transfer is reported and asked for again; the
//! other cores are never touched.
#![no_std]
#![no_main]

mod board;
mod clock;
mod device_tree;
mod serial;
mod transfer;

use core::fmt::Write;
use core::panic::PanicInfo;

use board::{KERNEL_ADDRESS, NAME};
use clock::Instant;
use serial::{BAUD, Serial};
use transfer::{Failure, HEADER_LEN, Header, MAGIC};

// The entry, run where the firmware loaded the image (0x80000): copy the
// image to where it is linked (`loader.ld`), continue there, and call
// `loader_main` with the firmware's four argument registers. Only
// position-independent instructions run before the jump: `adr` finds where
// the image is, and the literal pool holds the link addresses.
core::arch::global_asm!(
    r#"
    .section .text.entry, "ax"
    .global _start
_start:
    mrs     x9, mpidr_el1
    and     x9, x9, #0xff
    cbnz    x9, 3f                  // only core 0; another parks
    mov     x19, x0                 // the firmware's arguments, kept
    mov     x20, x1
    mov     x21, x2
    mov     x22, x3
    adr     x9, _start              // where the image is now
    ldr     x10, =__loader_start    // where it is linked
    ldr     x11, =__loader_image_end
    sub     x11, x11, x10
1:  ldp     x12, x13, [x9], #16
    stp     x12, x13, [x10], #16
    subs    x11, x11, #16
    b.gt    1b
    dsb     sy
    ic      iallu                   // the new copy's instructions, not stale ones
    dsb     sy
    isb
    ldr     x9, =2f
    br      x9
2:  ldr     x9, =__stack_top
    mov     sp, x9
    ldr     x9, =__bss_start
    ldr     x10, =__bss_end
4:  cmp     x9, x10
    b.hs    5f
    stp     xzr, xzr, [x9], #16
    b       4b
5:  mov     x0, x19
    mov     x1, x20
    mov     x2, x21
    mov     x3, x22
    bl      loader_main
3:  wfe
    b       3b
    .ltorg
"#
);

unsafe extern "C" {
    /// The start of the loader as linked: the end of the kernel's room.
    static __loader_start: u8;
    /// The end of the loader's memory, page-aligned.
    static __loader_end: u8;
}

/// How often the loader asks while nobody answers.
const ASK_EVERY_MS: u64 = 1000;
/// When it says that nobody has answered.
const NOTICE_AFTER_MS: u64 = 5000;
/// The quiet that ends the rest of a failed transfer.
const DRAIN_QUIET_MS: u64 = 250;

/// The four registers the firmware entered with: the device tree's
/// address in x0, then x1 to x3 (zero under the arm64 boot protocol).
#[derive(Clone, Copy)]
struct BootRegisters([usize; 4]);

#[unsafe(no_mangle)]
extern "C" fn loader_main(x0: usize, x1: usize, x2: usize, x3: usize) -> ! {
    let mut registers = BootRegisters([x0, x1, x2, x3]);
    // SAFETY: the only place the UART is opened; the MMU is off.
    let mut serial = unsafe { Serial::open() };
    let room = loader_start() - KERNEL_ADDRESS;
    let _ = write!(
        serial,
        "\nroving-loader ({NAME}): loads a kernel to {KERNEL_ADDRESS:#x} over this UART at {BAUD} baud (docs/loader.md); "
    );
    let _ = match device_tree::size(x0) {
        Some(size) => writeln!(serial, "the firmware's device tree is at {x0:#x} ({size} bytes)"),
        None => writeln!(serial, "the firmware passed no device tree (x0 = {x0:#x})"),
    };
    let since = Instant::now();
    // Whether to say, once, that nobody answers: not once a header came.
    let mut notice_due = true;
    for attempt in 1.. {
        await_magic(&mut serial, attempt, room, since, &mut notice_due);
        notice_due = false;
        let header = match transfer::receive_header(&mut serial) {
            Ok(header) => header,
            Err(failure) => {
                report(&mut serial, &failure, 0);
                serial.drain(DRAIN_QUIET_MS);
                continue;
            }
        };
        if let Err(reason) = check(&header, room) {
            let _ = writeln!(serial, "roving-loader: refused: {reason} [RVREFUSED]");
            serial.drain(DRAIN_QUIET_MS);
            continue;
        }
        // The kernel's bytes must not land on the tree it is to be given.
        registers.0[0] = move_tree_out_of(&mut serial, registers.0[0], header.span);
        // SAFETY: [KERNEL_ADDRESS, + length) is RAM that nothing uses: the
        // loader moved away from it, and the tree too (just above); the
        // header's span is checked to end below the loader.
        let memory = unsafe { core::slice::from_raw_parts_mut(KERNEL_ADDRESS as *mut u8, header.length) };
        match transfer::receive_image(&mut serial, memory, header.checksum) {
            Ok(()) => {
                let _ = writeln!(
                    serial,
                    "roving-loader: {} bytes, checksum {:08x} ok; starting the kernel at {KERNEL_ADDRESS:#x} [RVSTART]",
                    header.length, header.checksum
                );
                serial.restore_firmware_settings();
                // SAFETY: a whole image, checked, at the firmware's load
                // address, entered as the firmware would have entered it.
                unsafe { enter_kernel(registers) }
            }
            Err(failure) => {
                report(&mut serial, &failure, header.length);
                serial.drain(DRAIN_QUIET_MS);
            }
        }
    }
    unreachable!("attempts are counted for ever")
}

fn loader_start() -> usize {
    core::ptr::addr_of!(__loader_start) as usize
}

/// Asks for a kernel, then waits for the header's magic, skipping anything
/// else, and asks again every [`ASK_EVERY_MS`]; if `notice_due`, says once
/// that nobody has answered, [`NOTICE_AFTER_MS`] after `since`.
fn await_magic(serial: &mut Serial, attempt: u64, room: usize, since: Instant, notice_due: &mut bool) {
    let ask = |serial: &mut Serial| {
        let _ = writeln!(
            serial,
            "roving-loader: ready for a kernel [RVLOAD1 attempt={attempt} address={KERNEL_ADDRESS:#x} room={room:#x}]"
        );
    };
    ask(serial);
    let mut matched = 0;
    let mut ask_at = Instant::now().after_ms(ASK_EVERY_MS);
    while matched < MAGIC.len() {
        match serial.receive_by(ask_at) {
            Ok(byte) if byte == MAGIC[matched] => matched += 1,
            Ok(byte) => matched = usize::from(byte == MAGIC[0]),
            Err(serial::ReadError::Damaged) => matched = 0,
            Err(serial::ReadError::TimedOut) => {
                if *notice_due && since.after_ms(NOTICE_AFTER_MS).has_passed() {
                    *notice_due = false;
                    let _ = writeln!(
                        serial,
                        "roving-loader: no kernel has come in {} s; on the host, run `make load BOARD={NAME} PORT=<serial device>` (docs/real-hardware.md). Still waiting.",
                        NOTICE_AFTER_MS / 1000
                    );
                }
                ask(serial);
                ask_at = Instant::now().after_ms(ASK_EVERY_MS);
            }
        }
    }
}

/// Why a header cannot be served, if it cannot.
fn check(header: &Header, room: usize) -> Result<(), &'static str> {
    if header.length == 0 {
        Err("the kernel is empty")
    } else if header.span < header.length {
        Err("the header's span is shorter than its image")
    } else if header.span > room {
        Err("the kernel's image and zeroed memory reach the loader (docs/loader.md, \"Where things go\")")
    } else {
        Ok(())
    }
}

/// The tree's address once it is out of `[KERNEL_ADDRESS, + span)`: moved
/// unchanged, byte for byte, to just above the loader if it lay there.
fn move_tree_out_of(serial: &mut Serial, tree: usize, span: usize) -> usize {
    let Some(size) = device_tree::size(tree) else { return tree };
    if tree >= KERNEL_ADDRESS + span || tree + size <= KERNEL_ADDRESS {
        return tree;
    }
    let to = core::ptr::addr_of!(__loader_end) as usize;
    // SAFETY: a whole tree (its header's size) is read from where the
    // firmware put it, to the RAM above the loader, which nothing uses
    // (ptr::copy allows overlap, though the two are apart).
    unsafe { core::ptr::copy(tree as *const u8, to as *mut u8, size) };
    let _ = writeln!(
        serial,
        "roving-loader: the device tree at {tree:#x} lies in the kernel's memory; moved it to {to:#x}"
    );
    to
}

fn report(serial: &mut Serial, failure: &Failure, length: usize) {
    let _ = match *failure {
        Failure::Damaged { in_header: true, at } => {
            writeln!(
                serial,
                "roving-loader: byte {} of the header arrived damaged; send it again",
                at + MAGIC.len()
            )
        }
        Failure::Damaged { in_header: false, at } => writeln!(
            serial,
            "roving-loader: byte {at} of {length} arrived damaged (framing, parity or overrun); send it again"
        ),
        Failure::Short { in_header: true, received, .. } => writeln!(
            serial,
            "roving-loader: short transfer: the header stopped after {} of {HEADER_LEN} bytes; waiting for the next",
            received + MAGIC.len()
        ),
        Failure::Short { in_header: false, received, expected } => writeln!(
            serial,
            "roving-loader: short transfer: {received} of {expected} bytes, then nothing for {} s; waiting for the next",
            transfer::BYTE_TIMEOUT_MS / 1000
        ),
        Failure::Checksum { expected, computed } => writeln!(
            serial,
            "roving-loader: checksum mismatch: the header says {expected:08x}, the {length} bytes give {computed:08x}; send it again"
        ),
    };
}

/// Enters the kernel with the firmware's registers.
///
/// # Safety
///
/// A whole kernel image is at [`KERNEL_ADDRESS`].
unsafe fn enter_kernel(registers: BootRegisters) -> ! {
    let [x0, x1, x2, x3] = registers.0;
    // SAFETY: per this function's contract. The instruction cache may
    // still hold the loader's own first copy at that address, so it is
    // invalidated first; data went straight to memory (caches off).
    unsafe {
        core::arch::asm!(
            "dsb sy",
            "ic iallu",
            "dsb sy",
            "isb",
            "br {entry}",
            entry = in(reg) KERNEL_ADDRESS,
            in("x0") x0,
            in("x1") x1,
            in("x2") x2,
            in("x3") x3,
            options(noreturn, nostack),
        )
    }
}

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    // SAFETY: the loader is single-threaded and ends here; a second
    // instance only writes the data register.
    let mut serial = unsafe { Serial::open() };
    let _ = writeln!(serial, "roving-loader: panicked: {info}");
    loop {
        aarch64_cpu::asm::wfe();
    }
}
