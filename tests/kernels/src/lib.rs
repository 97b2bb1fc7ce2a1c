//! Helpers shared by the QEMU test kernels in `src/bin/`.
//!
//! A test kernel fails by panicking (status 101, message shown by the
//! suite) and passes by returning from `main` after [`pass`]. The runner
//! tells it how many cores QEMU was given with `roving.cores=N` on the
//! kernel command line, so a kernel can tell "booted all cores" from
//! "booted what the device tree happened to say".
#![no_std]

pub use roving_boards::board;

mod test_line;
pub use test_line::TestLine;

use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::{self, CoreEntry, Depth};
use roving::time::Instant;
use roving_kernel::{boot_info, println};

/// The core count the runner asked QEMU for.
pub fn expected_cores() -> usize {
    let value = boot_info().bootarg("roving.cores").expect("the runner passes roving.cores=N");
    value.parse().expect("roving.cores is a number")
}

/// A pool of every core, with the mailboxes `roving.mailboxes` asks for
/// ([`mailboxes_asked`]).
pub fn every_core_pool() -> roving::Pool {
    roving::Pool::with_config(roving::Config::new().mailboxes(mailboxes_asked()))
        .expect("a pool of every core")
}

/// The mailboxes `roving.mailboxes` asks for: `direct`, `mesh`, or `ring`
/// (a mesh of one link per core, so most messages are forwarded); the
/// default picks by core count. Says which it was asked for, so the suite
/// can check the setting took.
pub fn mailboxes_asked() -> roving::Mailboxes {
    use roving::Mailboxes;
    let asked = boot_info().bootarg("roving.mailboxes");
    let mailboxes = match asked {
        None => Mailboxes::Auto,
        Some("direct") => Mailboxes::Direct,
        Some("mesh") => Mailboxes::Mesh { links: usize::MAX },
        Some("ring") => Mailboxes::Mesh { links: 1 },
        Some(other) => panic!("roving.mailboxes={other}: expected direct, mesh or ring"),
    };
    if let Some(asked) = asked {
        println!("mailboxes: {asked}");
    }
    mailboxes
}

/// A number from the command line, or `default`.
pub fn bootarg_u64(key: &str, default: u64) -> u64 {
    boot_info().bootarg(key).map_or(default, |v| v.parse().expect("a numeric boot argument"))
}

/// Cores that have returned from the current [`on_every_core`] entry.
static FINISHED: AtomicUsize = AtomicUsize::new(0);

/// Runs `entry(core index)` on every core, the boot core included, and
/// returns when all have returned; fails the test after `limit`. Cores
/// still parking after an earlier run are restarted once they have parked.
pub fn on_every_core(entry: CoreEntry, limit: Duration) {
    let count = platform::core_count();
    FINISHED.store(0, SeqCst);
    let deadline = Instant::now() + limit;
    for core in 1..count {
        loop {
            match platform::start_core(core, run_and_report, entry as usize) {
                Ok(()) => break,
                Err(platform::StartCoreError::AlreadyRunning { .. }) if Instant::now() < deadline => {
                    platform::wait_for_event(Depth::Light, Some(Instant::now() + Duration::from_millis(1)));
                }
                Err(error) => panic!("starting core {core}: {error}"),
            }
        }
    }
    entry(0);
    let remaining = deadline.duration_since(Instant::now());
    wait_until(|| FINISHED.load(SeqCst) == count - 1, remaining, format_args!("every core to return"));
}

fn run_and_report(entry: usize) {
    // SAFETY: `on_every_core` passes a `CoreEntry` as this argument.
    let entry: CoreEntry = unsafe { core::mem::transmute::<usize, CoreEntry>(entry) };
    entry(platform::current_core().expect("a started core has an index"));
    FINISHED.fetch_add(1, SeqCst);
    platform::wake(0).expect("core 0 exists");
}

/// Waits in `depth` until `progress()` changes from `before`. Fails the
/// test if a wait ends only because its deadline, `limit` away, passed: the
/// wake-up that should have ended it was lost (even if the progress it
/// announced is visible by then).
pub fn wait_for_change(
    before: u64,
    progress: impl Fn() -> u64,
    depth: Depth,
    limit: Duration,
    what: fmt::Arguments<'_>,
) -> u64 {
    let deadline = Instant::now() + limit;
    loop {
        let now = progress();
        if now != before {
            return now;
        }
        platform::wait_for_event(depth, Some(deadline));
        if Instant::now() >= deadline {
            panic!(
                "core {:?}: a {depth:?} wait for {what} ended only at its {limit:?} deadline (lost wake-up); progress is now {}",
                platform::current_core(),
                progress()
            );
        }
    }
}

/// Waits, in the light tier, until `done()`; fails the test after `limit`.
/// A lost wake-up shows up here as a timeout with `what` in the message.
pub fn wait_until(done: impl Fn() -> bool, limit: Duration, what: fmt::Arguments<'_>) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out after {limit:?} waiting for {what}");
        platform::wait_for_event(Depth::Light, Some(deadline));
    }
}

/// Waits in `depth` until `deadline`, whatever wakes the core before.
pub fn sleep_until(depth: Depth, deadline: Instant) {
    while Instant::now() < deadline {
        platform::wait_for_event(depth, Some(deadline));
    }
}

/// Prints the line the suite looks for. Return from `main` afterwards.
pub fn pass(test: &str) {
    println!("TEST {test}: PASS ({} cores)", platform::core_count());
}
