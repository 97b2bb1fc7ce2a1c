//! A panic prints the core, the location and the message, then ends the
//! run with a non-zero status. (Containing a panic to its strand comes with
//! strands; until then a panic anywhere is fatal.)

use crate::{arch, console, cores, exit_code};
use core::panic::PanicInfo;
use core::sync::atomic::Ordering::Relaxed;

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    arch::cpu::disable_interrupts();
    let core = cores::current();
    if let Some(core) = core
        && arch::cpu::mmu_enabled()
        && core.panicking.swap(true, Relaxed)
    {
        // Panicked while reporting a panic: the first report is enough.
        crate::exit(exit_code::PANIC);
    }
    let index = core.map(|c| c.index);
    match (index, info.location()) {
        (Some(i), Some(at)) => {
            console::emergency(format_args!("\n*** core {i} panicked at {at}:\n{}\n", info.message()))
        }
        (Some(i), None) => console::emergency(format_args!("\n*** core {i} panicked:\n{}\n", info.message())),
        (None, Some(at)) => console::emergency(format_args!(
            "\n*** panicked during early boot at {at}:\n{}\n",
            info.message()
        )),
        (None, None) => {
            console::emergency(format_args!("\n*** panicked during early boot:\n{}\n", info.message()))
        }
    }
    crate::exit(exit_code::PANIC)
}
