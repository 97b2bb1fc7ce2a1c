//! Must fail, on x86 only: the machine resets itself (a triple fault), so
//! the guest never reports a status. Under `-no-reboot` QEMU then ends
//! with status 0, which the runner must not read as a pass.
//!
//! On other architectures there is no such way to end a run; the kernel
//! panics to say it does not apply.
#![no_std]
#![no_main]

use roving_test_kernels as _; // links the board

fn main() {
    roving_kernel::println!("reset: triple-faulting on purpose");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: deliberately fatal: with an empty IDT, the breakpoint cannot
    // be delivered, nor can the double fault that follows, and the
    // processor shuts down (QEMU: a reset, which -no-reboot turns into
    // the end of the run).
    unsafe {
        let empty = x86_64::structures::DescriptorTablePointer { limit: 0, base: x86_64::VirtAddr::zero() };
        x86_64::instructions::tables::lidt(&empty);
        core::arch::asm!("int3");
    }
    panic!("reset: only x86 machines reset on a triple fault");
}

roving_kernel::entry!(main);
