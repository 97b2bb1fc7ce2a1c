//! Starting cores: bad requests get typed errors, a running core cannot be
//! started twice, and a core whose entry returned can be started again,
//! many times, with each start running exactly once.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::{self, StartCoreError, UnknownCore};
use roving_kernel::{MAX_CORES, cores};
use roving_test_kernels::{on_every_core, pass, wait_until};

const STARTS: u64 = 25;

static RUNS: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static RELEASE: AtomicUsize = AtomicUsize::new(0);
static HELD: AtomicUsize = AtomicUsize::new(0);

fn main() {
    let count = platform::core_count();
    fn noop(_: usize) {}
    assert_eq!(platform::start_core(count, noop, 0), Err(StartCoreError::NoSuchCore { core: count, count }));
    assert_eq!(
        platform::start_core(usize::MAX, noop, 0),
        Err(StartCoreError::NoSuchCore { core: usize::MAX, count })
    );
    assert_eq!(platform::start_core(0, noop, 0), Err(StartCoreError::AlreadyRunning { core: 0 }));
    assert_eq!(platform::wake(count), Err(UnknownCore { core: count, count }));

    if count > 1 {
        // A core that is running its entry refuses a second start.
        platform::start_core(1, hold, 0).expect("core 1 starts");
        wait_until(|| HELD.load(SeqCst) == 1, Duration::from_secs(10), format_args!("core 1 to run"));
        assert_eq!(platform::start_core(1, noop, 0), Err(StartCoreError::AlreadyRunning { core: 1 }));
        RELEASE.store(1, SeqCst);
        platform::wake(1).expect("in range");
    }
    for _ in 0..STARTS {
        on_every_core(count_run, Duration::from_secs(30));
    }
    for (core, runs) in RUNS.iter().enumerate().take(count) {
        assert_eq!(runs.load(SeqCst), STARTS, "core {core} ran a different number of entries");
        let expected_starts = if core == 0 { 1 } else { STARTS + u64::from(core == 1) };
        assert_eq!(
            cores::report(core).expect("in range").starts,
            expected_starts,
            "core {core}'s start count"
        );
    }
    pass("restart");
}

fn hold(_: usize) {
    HELD.store(1, SeqCst);
    while RELEASE.load(SeqCst) == 0 {
        platform::wait_for_event(platform::Depth::Deep, None);
    }
}

fn count_run(me: usize) {
    RUNS[me].fetch_add(1, SeqCst);
}

roving_kernel::entry!(main);
