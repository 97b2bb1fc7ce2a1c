//! All cores idle for a while, so `tests/qemu/idle-cpu` can measure how much
//! host CPU an idle guest costs. `roving.idle_ms=N` sets how long (default
//! 4000); `roving.idle_tier=light` idles in WFE instead of WFI, to show
//! what that costs under QEMU.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::{self, Depth};
use roving::time::Instant;
use roving_kernel::{boot_info, println};
use roving_test_kernels::{bootarg_u64, on_every_core, pass, sleep_until, wait_until};

static ASLEEP: AtomicUsize = AtomicUsize::new(0);
static DONE: AtomicUsize = AtomicUsize::new(0);

fn depth() -> Depth {
    match boot_info().bootarg("roving.idle_tier") {
        Some("light") => Depth::Light,
        _ => Depth::Deep,
    }
}

fn idle_for() -> Duration {
    Duration::from_millis(bootarg_u64("roving.idle_ms", 4000))
}

fn main() {
    on_every_core(idle_here, idle_for() + Duration::from_secs(30));
    pass("idle");
}

fn idle_here(me: usize) {
    let count = platform::core_count();
    if me != 0 {
        ASLEEP.fetch_add(1, SeqCst);
        platform::wake(0).expect("core 0 exists");
        while DONE.load(SeqCst) == 0 {
            platform::wait_for_event(depth(), None);
        }
        return;
    }
    wait_until(
        || ASLEEP.load(SeqCst) == count - 1,
        Duration::from_secs(10),
        format_args!("cores to go idle"),
    );
    let (idle, depth) = (idle_for(), depth());
    println!("idle: all {count} cores idle ({depth:?} tier) for {} ms", idle.as_millis());
    sleep_until(depth, Instant::now() + idle);
    DONE.store(1, SeqCst);
    platform::wake_all();
}

roving_kernel::entry!(main);
