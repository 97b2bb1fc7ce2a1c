//! Time: the tick counter runs at a plausible rate, never goes backwards on
//! a core or between cores, and a wait with a deadline ends at (not
//! before) the deadline in either tier, woken by the timer interrupt.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::{self, Depth};
use roving::time::Instant;
use roving_kernel::cores;
use roving_test_kernels::{on_every_core, pass, sleep_until};

const NAP: Duration = Duration::from_millis(20);
/// Deadlines under TCG are late by whatever the host scheduler adds; this
/// bound only catches a timer that never fires.
const LATE_LIMIT: Duration = Duration::from_secs(2);

static LAST_SEEN: AtomicU64 = AtomicU64::new(0);

fn main() {
    let hz = platform::tick_hz();
    assert!((1_000_000..=10_000_000_000).contains(&hz), "tick rate {hz} Hz is implausible");
    let before = cores::report(0).expect("core 0").interrupts;
    on_every_core(check_time, Duration::from_secs(60));
    let after = cores::report(0).expect("core 0").interrupts;
    assert!(after > before, "core 0's deep waits with deadlines were not woken by the timer interrupt");
    pass("timer");
}

fn check_time(me: usize) {
    // Monotonic here, and never behind what another core saw before.
    for _ in 0..10_000 {
        let shared = LAST_SEEN.load(SeqCst);
        let now = platform::ticks();
        assert!(now >= shared, "core {me}: ticks {now} behind {shared} seen on another core");
        LAST_SEEN.fetch_max(now, SeqCst);
    }
    for depth in [Depth::Deep, Depth::Light, Depth::Deep] {
        let start = Instant::now();
        let deadline = start + NAP;
        // Nobody wakes this core: only the deadline can end these waits.
        sleep_until(depth, deadline);
        let waited = start.elapsed();
        assert!(waited >= NAP, "core {me}: a {NAP:?} wait ({depth:?}) ended after {waited:?}");
        assert!(waited < NAP + LATE_LIMIT, "core {me}: a {NAP:?} wait ({depth:?}) took {waited:?}");
    }
    // A deadline in the past returns at once.
    let past = Instant::now();
    platform::wait_for_event(Depth::Deep, Some(past));
}

roving_kernel::entry!(main);
