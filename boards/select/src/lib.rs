//! The board a program boots on, chosen once for the examples and the test
//! kernels: on AArch64 by cargo feature (exactly one of `qemu-virt`,
//! `raspi3b`, `raspi4b`). Linking this crate links the board.
#![no_std]

#[cfg(all(target_arch = "aarch64", feature = "qemu-virt"))]
pub use roving_board_qemu_virt as board;
#[cfg(all(target_arch = "aarch64", feature = "raspi3b"))]
pub use roving_board_raspi3b as board;
#[cfg(all(target_arch = "aarch64", feature = "raspi4b"))]
pub use roving_board_raspi4b as board;
#[cfg(target_arch = "x86_64")]
pub use roving_board_x86_pc as board;
#[cfg(all(
    target_arch = "aarch64",
    any(
        all(feature = "qemu-virt", feature = "raspi3b"),
        all(feature = "qemu-virt", feature = "raspi4b"),
        all(feature = "raspi3b", feature = "raspi4b")
    )
))]
compile_error!("choose one AArch64 board: add --no-default-features before --features raspi3b or raspi4b");
#[cfg(all(
    target_arch = "aarch64",
    not(any(feature = "qemu-virt", feature = "raspi3b", feature = "raspi4b"))
))]
compile_error!("choose an AArch64 board: --features qemu-virt, raspi3b or raspi4b");
