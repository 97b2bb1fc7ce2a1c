//! Stress on the host: 4 cores, 1,000,000 tasks hopping between random
//! pairs of cores, in bursts separated by idle gaps long enough for every
//! core to fall asleep. Every task must run exactly once, on the core it was
//! posted to: checked by count and checksum per core. Repeated 20 times.
#![cfg(feature = "std")]

mod support;

use roving::platform::host::Machine;
use roving::{Config, Pool, platform};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::Duration;
use support::with_watchdog;

const CORES: usize = 4;
const REPETITIONS: usize = 20;
const BURSTS: u64 = 100;
const SEEDS_PER_BURST: u64 = 100;
const HOPS: u64 = 100; // tasks per seed, the seed included
const TASKS: u64 = BURSTS * SEEDS_PER_BURST * HOPS;
const GAP: Duration = Duration::from_millis(1);

/// What each core was sent and what it ran.
#[derive(Default)]
struct Ledger {
    sent: [AtomicU64; CORES],
    sent_sum: [AtomicU64; CORES],
    ran: [AtomicU64; CORES],
    ran_sum: [AtomicU64; CORES],
    wrong_core: AtomicU64,
}

impl Ledger {
    fn expect(&self, core: usize, id: u64) {
        self.sent[core].fetch_add(1, SeqCst);
        self.sent_sum[core].fetch_add(id, SeqCst);
    }

    fn total_ran(&self) -> u64 {
        self.ran.iter().map(|r| r.load(SeqCst)).sum()
    }
}

fn xorshift(mut x: u32) -> u32 {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x
}

/// One task: record it, then post the next hop of its chain to a random core.
fn hop(ledger: &'static Ledger, core: usize, id: u64, left: u64, rng: u32) {
    if platform::current_core() != Some(core) {
        ledger.wrong_core.fetch_add(1, SeqCst);
    }
    ledger.ran[core].fetch_add(1, SeqCst);
    ledger.ran_sum[core].fetch_add(id, SeqCst);
    if left > 0 {
        let rng = xorshift(rng);
        let next = rng as usize % CORES;
        ledger.expect(next, id + 1);
        roving::post(next, move || hop(ledger, next, id + 1, left - 1, rng)).expect("the pool is running");
    }
}

fn one_run(machine: &Machine, repetition: usize) {
    let ledger: &'static Ledger = Box::leak(Box::default());
    let outside = machine.clone();
    machine
        .run(move || {
            let pool = Pool::with_config(Config::new().stop_when_quiescent(false)).unwrap();
            let driver = {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    let _member = outside.enter();
                    let mut rng = 0x2545_f491_u32 ^ repetition as u32;
                    for burst in 0..BURSTS {
                        for seed in 0..SEEDS_PER_BURST {
                            rng = xorshift(rng);
                            let core = rng as usize % CORES;
                            let id = (burst * SEEDS_PER_BURST + seed) * HOPS;
                            ledger.expect(core, id);
                            let seed_rng = rng;
                            pool.post(core, move || hop(ledger, core, id, HOPS - 1, seed_rng)).unwrap();
                        }
                        let target = (burst + 1) * SEEDS_PER_BURST * HOPS;
                        while ledger.total_ran() < target {
                            std::thread::yield_now();
                        }
                        std::thread::sleep(GAP); // every core falls asleep
                    }
                    pool.shutdown();
                })
            };
            pool.run(|| ()).unwrap();
            driver.join().unwrap();
            let stats = pool.stats();
            assert_eq!(
                stats.iter().map(|s| s.discarded).sum::<u64>(),
                0,
                "tasks left at shutdown: {stats:?}"
            );
            assert!(stats.iter().all(|s| s.sleeps > 0), "a core never slept in the gaps: {stats:?}");
            // The tasks, and the one turn of `main`'s strand.
            assert_eq!(stats.iter().map(|s| s.tasks_run).sum::<u64>(), TASKS + 1);
        })
        .unwrap();
    assert_eq!(ledger.wrong_core.load(SeqCst), 0, "tasks ran on a core they were not posted to");
    for core in 0..CORES {
        assert_eq!(ledger.ran[core].load(SeqCst), ledger.sent[core].load(SeqCst), "count on core {core}");
        assert_eq!(
            ledger.ran_sum[core].load(SeqCst),
            ledger.sent_sum[core].load(SeqCst),
            "checksum on core {core}"
        );
    }
    assert_eq!(ledger.total_ran(), TASKS);
}

#[test]
fn a_million_tasks_between_random_pairs_twenty_times() {
    let machine = Machine::new(CORES).unwrap();
    with_watchdog(Duration::from_secs(600), "the stress test", || {
        for repetition in 0..REPETITIONS {
            one_run(&machine, repetition);
        }
    });
}
