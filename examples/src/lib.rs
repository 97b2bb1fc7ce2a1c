//! What the examples share: the board they boot on, chosen by cargo
//! feature, and the board's clock as an interrupting device.
#![no_std]

pub use roving_boards::board;

pub mod clock;
