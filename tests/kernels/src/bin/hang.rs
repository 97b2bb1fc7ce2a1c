//! Must fail: never finishes. The suite runs it with a short time limit and
//! expects the runner to kill QEMU, report a hang and leave nothing behind.
#![no_std]
#![no_main]

use roving::platform::{self, Depth};
use roving_test_kernels as _; // links the board

fn main() {
    roving_kernel::println!("hang: waiting forever");
    loop {
        platform::wait_for_event(Depth::Deep, None);
    }
}

roving_kernel::entry!(main);
