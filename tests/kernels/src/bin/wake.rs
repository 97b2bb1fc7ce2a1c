//! No wake-up is lost, in either idle tier: core 0 ping-pongs with every
//! core, a token goes round all cores, and `wake_all` reaches everyone.
//! Every wait has a deadline, so a lost wake-up fails with a message naming
//! the core instead of hanging.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::{self, Depth};
use roving_kernel::{MAX_CORES, cores};
use roving_test_kernels::{bootarg_u64, on_every_core, pass, wait_for_change};

const STALL: Duration = Duration::from_secs(10);
const FINISH: u64 = u64::MAX;

static PING: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static PONG: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static TOKEN: AtomicU64 = AtomicU64::new(0);
static GENERATION: AtomicU64 = AtomicU64::new(0);
static ACK: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

fn rounds() -> u64 {
    bootarg_u64("roving.rounds", 200)
}

fn main() {
    let limit = Duration::from_secs(120);
    on_every_core(ping_pong, limit);
    on_every_core(token_ring, limit);
    on_every_core(generations, limit);
    for core in 0..platform::core_count() {
        let report = cores::report(core).expect("in range");
        assert_eq!(report.unexpected_interrupts, 0, "core {core} took interrupts nobody sent");
        if core != 0 {
            assert!(report.deep_sleeps > 0, "core {core} never slept deeply");
            assert!(report.interrupts > 0, "core {core} was never woken by an interrupt");
        }
    }
    pass("wake");
}

/// Core 0 pings each core in turn; the core answers. The responder sleeps
/// deeply for the first half of the rounds and lightly for the second.
fn ping_pong(me: usize) {
    let rounds = rounds();
    if me == 0 {
        for core in 1..platform::core_count() {
            for ping in 1..=rounds {
                PING[core].store(ping, SeqCst);
                platform::wake(core).expect("in range");
                wait_for_change(
                    ping - 1,
                    || PONG[core].load(SeqCst),
                    Depth::Light,
                    STALL,
                    format_args!("core {core}'s pong {ping}"),
                );
            }
            PING[core].store(FINISH, SeqCst);
            platform::wake(core).expect("in range");
        }
        return;
    }
    let mut seen = 0;
    loop {
        let depth = if seen < rounds / 2 { Depth::Deep } else { Depth::Light };
        seen =
            wait_for_change(seen, || PING[me].load(SeqCst), depth, STALL, format_args!("ping {}", seen + 1));
        if seen == FINISH {
            return;
        }
        PONG[me].store(seen, SeqCst);
        platform::wake(0).expect("core 0 exists");
    }
}

/// A token goes round the cores `rounds` times; only its holder moves it on,
/// and only the next holder is woken, until the last move wakes everyone.
fn token_ring(me: usize) {
    let count = platform::core_count() as u64;
    let end = rounds() * count;
    let mut token = TOKEN.load(SeqCst);
    while token < end {
        if token % count == me as u64 {
            token += 1;
            TOKEN.store(token, SeqCst);
            if token == end {
                platform::wake_all(); // everyone else is waiting to see the end
            } else {
                platform::wake(((me as u64 + 1) % count) as usize).expect("in range");
            }
            continue;
        }
        token = wait_for_change(
            token,
            || TOKEN.load(SeqCst),
            Depth::Deep,
            STALL,
            format_args!("the token (at {token})"),
        );
    }
}

/// Core 0 announces generations with `wake_all`; every core acknowledges.
fn generations(me: usize) {
    let count = platform::core_count();
    if me == 0 {
        for generation in 1..=rounds() {
            GENERATION.store(generation, SeqCst);
            platform::wake_all();
            for (core, ack) in ACK.iter().enumerate().take(count).skip(1) {
                wait_for_change(
                    generation - 1,
                    || ack.load(SeqCst),
                    Depth::Light,
                    STALL,
                    format_args!("core {core} to ack generation {generation}"),
                );
            }
        }
        GENERATION.store(FINISH, SeqCst);
        platform::wake_all();
        return;
    }
    let mut seen = 0;
    loop {
        seen = wait_for_change(
            seen,
            || GENERATION.load(SeqCst),
            Depth::Deep,
            STALL,
            format_args!("generation {}", seen + 1),
        );
        if seen == FINISH {
            return;
        }
        ACK[me].store(seen, SeqCst);
        platform::wake(0).expect("core 0 exists");
    }
}

roving_kernel::entry!(main);
