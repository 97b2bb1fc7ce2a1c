//! Just enough of a flattened device tree's header to move one whole.

/// The header's magic, big-endian at offset 0.
const MAGIC: u32 = 0xd00d_feed;
/// RAM below this is where the Pis' firmware may put a tree; any other
/// value in x0 is not read (it could name a hole in the address map).
const RAM_BELOW: usize = 0x4000_0000;

/// The size of the tree at `address` (the header's `totalsize`), if a tree
/// is there.
pub fn size(address: usize) -> Option<usize> {
    if address == 0 || !address.is_multiple_of(4) || address >= RAM_BELOW {
        return None;
    }
    // SAFETY: a 4-aligned address in the first GiB, which is RAM on both
    // Pis; the MMU is off, so it reads memory as it is.
    let word = |offset: usize| u32::from_be(unsafe { ((address + offset) as *const u32).read_volatile() });
    (word(0) == MAGIC).then(|| word(4) as usize)
}
