//! Must fail: the last core reads an unmapped address. The suite expects
//! status 102 and a report naming the core, the exception in words and the
//! faulting address.
#![no_std]
#![no_main]

use core::time::Duration;
use roving::platform;
use roving_test_kernels::on_every_core;

/// Inside the 512 GiB the page tables cover, but mapped by nothing.
pub const UNMAPPED: usize = 0x10_0000_0000;

fn main() {
    on_every_core(fault_on_last, Duration::from_secs(30));
    panic!("the fault kernel did not fault");
}

fn fault_on_last(me: usize) {
    if me == platform::core_count() - 1 {
        // SAFETY: none; this test reads unmapped memory on purpose to check
        // that the fault is reported and ends the run.
        let value = unsafe { core::ptr::read_volatile(UNMAPPED as *const u64) };
        panic!("read {value:#x} from an unmapped address");
    }
}

roving_kernel::entry!(main);
