//! What the examples share: the board they boot on, chosen by cargo feature.
#![no_std]

pub use roving_boards::board;
