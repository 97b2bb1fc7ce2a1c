//! A panic in a strand fails that strand only: it is noted on the console
//! and handed to roving ([`roving::platform::hooks::fail_running`]), which records
//! the failure for the strand's joiner, abandons the strand's stack and
//! switches the core back to its scheduler. A panic in an async task's
//! poll, or in a `join` half a core's loop took, fails that work only, the
//! same way
//! ([`roving::platform::hooks::fail_running_task`]: the poll's frames are
//! abandoned back to the core's loop). A panic anywhere else (boot, the
//! scheduler, a plain task, or a strand failing while it finishes)
//! prints the core, the location and the message, then ends the run with
//! a non-zero status. A panic in a device's interrupt handler ends that
//! handler ([`roving::platform::hooks::fail_running_handler`]): the
//! dispatcher masks its line, and the interrupted code goes on.
//! A synchronous fault that `crate::fault` contains in a strand or task
//! arrives here as a panic too, and is reported as that fault.
//! A handler's panic is never taken for the strand it interrupted: there
//! roving reports no current strand.

use crate::backtrace::Backtrace;
use crate::{arch, cores, exit_code, logger};
use core::panic::PanicInfo;
use core::sync::atomic::Ordering::Relaxed;
use roving::platform::hooks;

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    if let Some(strand) = roving::strand::current() {
        // A cancel must not stop the strand at a tick while this reports
        // and fails it (a pool with a time slice stops cancelled strands
        // that compute); the shield ends with the strand.
        core::mem::forget(roving::strand::shield());
        let here = cores::current();
        let core = here.map_or(usize::MAX, |c| c.index);
        if here.is_some_and(|c| c.failing_strand.swap(strand.get(), Relaxed) == strand.get()) {
            // Failing the strand (which allocates its failure) panicked in
            // turn: without memory it can never be failed, and trying
            // again would nest panics until the stack overflows.
            arch::cpu::disable_interrupts();
            logger::emergency(format_args!(
                "*** strand {strand} on core {core} panicked again while it was being failed: {}\n\
                 *** (out of memory?) the strand cannot be failed; stopping",
                info.message()
            ));
            crate::exit(exit_code::PANIC);
        }
        report_contained(format_args!("strand {strand}"), core, "strand", info);
        crate::masking::abandon_strand_sections();
        // Returns only if the strand cannot be failed (it was finishing).
        hooks::fail_running(info);
    }
    if let Some(work) = hooks::running_work() {
        let core = cores::current().map_or(usize::MAX, |c| c.index);
        let what = match work {
            hooks::RunningWork::JoinHalf => "half, and its join's strand with it,",
            _ => "task",
        };
        report_contained(format_args!("{work}"), core, what, info);
        crate::masking::abandon_strand_sections();
        // Returns only if the task's failure could not be made (a panic
        // while making it): then the core stops below.
        hooks::fail_running_task(info);
    }
    if let Some(here) = cores::current()
        && hooks::running_handler()
        && !here.panicking.swap(true, Relaxed)
    {
        // `panicking` stays set while this reports: a panic in the report
        // ends the run below instead of coming back here.
        let line = crate::interrupts::handling(here.index).unwrap_or(u32::MAX);
        report_contained(format_args!("the handler of interrupt line {line}"), here.index, "handler", info);
        here.panicking.store(false, Relaxed);
        // Back to the dispatcher, which masks the line; the code the
        // handler interrupted goes on.
        hooks::fail_running_handler();
    }
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
    let backtrace = Backtrace::here();
    match (index, info.location()) {
        (Some(i), Some(at)) => logger::emergency(format_args!(
            "*** core {i} panicked{} at {at}:\n{}{backtrace}",
            InHandler(crate::interrupts::handling(i)),
            info.message()
        )),
        (Some(i), None) => logger::emergency(format_args!(
            "*** core {i} panicked{}:\n{}{backtrace}",
            InHandler(crate::interrupts::handling(i)),
            info.message()
        )),
        (None, Some(at)) => logger::emergency(format_args!(
            "*** panicked during early boot at {at}:\n{}{backtrace}",
            info.message()
        )),
        (None, None) => {
            logger::emergency(format_args!("*** panicked during early boot:\n{}{backtrace}", info.message()))
        }
    }
    crate::exit(exit_code::PANIC)
}

/// Reports a panic that fails `who` (on `core`) and not the core, with the
/// backtrace of `report_contained`'s caller (the panic handler's callers).
#[inline(always)]
fn report_contained(who: core::fmt::Arguments<'_>, core: usize, what: &str, info: &PanicInfo<'_>) {
    if let Some(registers) = cores::current().and_then(crate::fault::take_failing) {
        // A synchronous fault, contained (`crate::fault`): reported from
        // where it stopped the code; the `panic!` that carries its words
        // is no place of the code's.
        logger::emergency(format_args!(
            "*** {who} on core {core} took a fault: {} (the {what} failed){}",
            info.message(),
            Backtrace::of(registers)
        ));
        return;
    }
    let backtrace = Backtrace::here();
    match info.location() {
        Some(at) => logger::emergency(format_args!(
            "*** {who} on core {core} panicked at {at}: {} (the {what} failed){backtrace}",
            info.message()
        )),
        None => logger::emergency(format_args!(
            "*** {who} on core {core} panicked: {} (the {what} failed){backtrace}",
            info.message()
        )),
    }
}

/// Names the device line whose handler a core was running, if any.
struct InHandler(Option<u32>);

impl core::fmt::Display for InHandler {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(line) => write!(f, " in the handler of interrupt line {line}"),
            None => Ok(()),
        }
    }
}
