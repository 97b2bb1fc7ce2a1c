//! roving's [`Platform`] for this kernel: the seam the scheduler sees.

use crate::{arch, cores};
use roving::platform::{CoreEntry, Depth, InterruptState, Platform, StartCoreError, WakeSignal};

struct KernelPlatform;

// SAFETY: core indices come from each core's own TPIDR_EL1, set once per
// start; waits and wakes follow the doorbell protocol with the DSB-before-
// signal rule (arch idle module); ticks are the architected counter shared
// by all cores; `start` hands an entry to one core at a time (cores module).
unsafe impl Platform for KernelPlatform {
    fn current_core() -> Option<usize> {
        cores::current().map(|core| core.index)
    }

    fn core_count() -> usize {
        cores::count()
    }

    fn wait_for_event(depth: Depth, deadline: Option<u64>) {
        let me = cores::current().expect("every context on this kernel runs on a core");
        crate::idle::wait(me, depth, deadline);
    }

    fn wake(core: usize) {
        let target = cores::local(core);
        arch::idle::signal(target, target.doorbell.ring());
    }

    fn wake_all() {
        let mut any_event = false;
        for index in 0..cores::count() {
            let target = cores::local(index);
            match target.doorbell.ring() {
                WakeSignal::Event => any_event = true,
                signal => arch::idle::signal(target, signal),
            }
        }
        if any_event {
            arch::idle::broadcast_event();
        }
    }

    fn ticks() -> u64 {
        arch::timer::ticks()
    }

    fn tick_hz() -> u64 {
        arch::timer::hz()
    }

    fn start_core(core: usize, entry: CoreEntry, arg: usize) -> Result<(), StartCoreError> {
        cores::start(core, entry, arg)
    }

    fn disable_interrupts() -> InterruptState {
        InterruptState::from_raw(crate::masking::disable())
    }

    unsafe fn restore_interrupts(state: InterruptState) {
        crate::masking::restore(state.into_raw());
    }

    fn in_interrupt() -> bool {
        cores::in_interrupt()
    }

    fn current_core_outside_interrupt() -> Option<usize> {
        cores::current_outside_interrupt()
    }

    fn interrupts_bound() -> bool {
        crate::interrupts::programs_bound()
    }

    /// Every board's timer interrupt preempts (`arch::preempt`).
    fn can_preempt() -> bool {
        true
    }

    /// The core's one timer: the idle wait's deadline uses it too, but a
    /// core waits only when it runs no strand.
    fn request_tick(deadline: Option<u64>) {
        match deadline {
            Some(deadline) => arch::timer::arm(deadline),
            None => arch::timer::disarm(),
        }
    }

    /// From a handler on `core` itself, the end of this interrupt asks
    /// roving (`arch::preempt`): the woken strand runs when the handler
    /// returns, without a second interrupt. From a strand on `core`, its
    /// timer fires at once. Another core gets the tick flag and the
    /// wake-up interrupt.
    fn request_tick_on(core: usize) {
        if let Some(me) = cores::current().filter(|me| me.index == core) {
            if cores::in_interrupt() {
                me.want_tick();
            } else {
                arch::timer::arm(arch::timer::ticks());
            }
        } else if core < cores::count() {
            let target = cores::local(core);
            target.want_tick();
            arch::idle::signal(target, WakeSignal::Interrupt);
        }
    }
}

roving::set_platform!(KernelPlatform);
