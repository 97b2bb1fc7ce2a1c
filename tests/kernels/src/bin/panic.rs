//! Must fail: the last core panics. The suite expects status 101 and a
//! report naming the core, this file and the message.
#![no_std]
#![no_main]

use core::time::Duration;
use roving::platform;
use roving_test_kernels::on_every_core;

fn main() {
    on_every_core(panic_on_last, Duration::from_secs(30));
    panic!("the panic kernel finished without its deliberate panic");
}

fn panic_on_last(me: usize) {
    if me == platform::core_count() - 1 {
        panic!("deliberate panic on core {me}");
    }
}

roving_kernel::entry!(main);
