//! One attempt to receive a kernel (docs/loader.md, "The protocol"): a
//! 16-byte header, then the image, each byte due within a second of the
//! one before.

use crate::clock::Instant;
use crate::serial::{ReadError, Serial};

/// The header's first four bytes. Anything the host sends before them
/// (a terminal's stray keys, line noise) is skipped.
pub const MAGIC: [u8; 4] = *b"RVK1";
/// The header's length, magic included.
pub const HEADER_LEN: usize = 16;
/// How long a transfer may pause between two bytes before it counts as
/// cut short.
pub const BYTE_TIMEOUT_MS: u64 = 1000;

/// What the host says it sends: the header after the magic, three
/// little-endian 32-bit words.
pub struct Header {
    /// The image's bytes, loaded from the kernel's address on.
    pub length: usize,
    /// The memory the kernel uses from its address on (its image and the
    /// zeroed memory after it): the span that must be free.
    pub span: usize,
    /// The image's CRC-32 (IEEE 802.3, as zlib computes it).
    pub checksum: u32,
}

/// Why an attempt failed.
pub enum Failure {
    /// A byte came damaged, at this offset into the header or image.
    Damaged { in_header: bool, at: usize },
    /// The transfer stopped after `received` of `expected` bytes.
    Short { in_header: bool, received: usize, expected: usize },
    /// The image arrived whole, but its checksum is not the header's.
    Checksum { expected: u32, computed: u32 },
}

/// Reads the rest of a header whose magic has just arrived.
pub fn receive_header(serial: &mut Serial) -> Result<Header, Failure> {
    let mut fields = [0u8; HEADER_LEN - MAGIC.len()];
    receive_into(serial, &mut fields, true)?;
    let word = |index: usize| {
        let bytes = [fields[4 * index], fields[4 * index + 1], fields[4 * index + 2], fields[4 * index + 3]];
        u32::from_le_bytes(bytes)
    };
    Ok(Header { length: word(0) as usize, span: word(1) as usize, checksum: word(2) })
}

/// Reads the image into `memory` and checks it against the header.
pub fn receive_image(serial: &mut Serial, memory: &mut [u8], checksum: u32) -> Result<(), Failure> {
    receive_into(serial, memory, false)?;
    match crc32fast::hash(memory) {
        computed if computed == checksum => Ok(()),
        computed => Err(Failure::Checksum { expected: checksum, computed }),
    }
}

/// Fills `buffer`; the CRC comes after, since at the transfer's speed the
/// UART's 16-byte FIFO leaves too little time between bytes for it.
fn receive_into(serial: &mut Serial, buffer: &mut [u8], in_header: bool) -> Result<(), Failure> {
    let expected = buffer.len();
    for (at, slot) in buffer.iter_mut().enumerate() {
        *slot = match serial.receive_by(Instant::now().after_ms(BYTE_TIMEOUT_MS)) {
            Ok(byte) => byte,
            Err(ReadError::Damaged) => return Err(Failure::Damaged { in_header, at }),
            Err(ReadError::TimedOut) => return Err(Failure::Short { in_header, received: at, expected }),
        };
    }
    Ok(())
}
