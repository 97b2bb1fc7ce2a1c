//! Strands under QEMU: a ring of strands passes tokens through bounded
//! channels (every token checked, in order per channel), then 1,000
//! strands sleep at once and must all wake no earlier than asked.
//!
//! `roving.ring_strands` and `roving.ring_rounds` size the ring (default
//! 10,000 x 100). With `roving.idle_ms=N`, the sleepers sleep N ms, for
//! `tests/qemu/idle-cpu` to measure that sleeping strands keep no core out
//! of deep sleep.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/ring_cases.rs"]
mod ring_cases;

use alloc::vec::Vec;
use core::time::Duration;
use roving::time::Instant;
use roving::{platform, strand};
use roving_kernel::println;
use roving_test_kernels::{self as _, bootarg_u64, expected_cores, pass};

const SLEEPERS: usize = 1_000;

/// `SLEEPERS` strands sleep `duration` at once; returns the earliest and
/// latest wake-up relative to the asked time.
fn sleepers(duration: Duration) -> (Duration, Duration) {
    let started = Instant::now();
    let sleepers: Vec<_> = (0..SLEEPERS)
        .map(|_| {
            strand::spawn(move || {
                let start = Instant::now();
                strand::sleep(duration).expect("a strand may sleep");
                start.elapsed()
            })
            .expect("spawning a sleeper")
        })
        .collect();
    let slept: Vec<Duration> = sleepers.into_iter().map(|s| s.join().expect("main is a strand")).collect();
    let shortest = *slept.iter().min().expect("there are sleepers");
    assert!(shortest >= duration, "a strand woke after {shortest:?}, before the {duration:?} asked");
    (shortest, started.elapsed())
}

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let strands = bootarg_u64("roving.ring_strands", 10_000) as usize;
    let rounds = bootarg_u64("roving.ring_rounds", 100) as usize;
    let idle = Duration::from_millis(bootarg_u64("roving.idle_ms", 20));
    let pool = roving_test_kernels::every_core_pool();
    pool.run(|| {
        let started = Instant::now();
        let tokens = ring_cases::token_ring(strands, rounds);
        assert_eq!(tokens, (strands * rounds) as u64, "a token went missing");
        println!("ring: {strands} strands x {rounds} rounds in {} ms", started.elapsed().as_millis());
        // From a strand, while other cores allocate: it once always panicked.
        let (used, total) = roving_kernel::heap::usage();
        assert!(0 < used && used < total, "heap usage {used} of {total} bytes");
        println!("heap: {} KiB of {} KiB in use", used / 1024, total / 1024);
        if idle >= Duration::from_millis(100) {
            println!("idle: all {cores} cores idle, {SLEEPERS} strands asleep for {} ms", idle.as_millis());
        }
        let (shortest, all) = sleepers(idle);
        println!(
            "sleep: {SLEEPERS} strands slept {} ms: shortest {} us, all done after {} ms",
            idle.as_millis(),
            shortest.as_micros(),
            all.as_millis()
        );
    })
    .expect("the pool runs");
    pass("strands");
}

roving_kernel::entry!(main);
