//! What the examples share: the board they boot on, chosen by cargo feature.
#![no_std]

#[cfg(feature = "qemu-virt")]
pub use roving_board_qemu_virt as board;
