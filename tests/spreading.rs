//! Work made on one core reaches the pool's idle cores, whichever mailboxes
//! the pool has (direct lists, the mesh, or a ring of one link per core)
//! and whatever the work is: closures, async tasks or strands.
//!
//! A host core is an OS thread, which the OS may leave off the CPU for
//! some milliseconds (tens, on an oversubscribed host): a burst shorter
//! than that can end on its core before any other thread runs at all, and
//! shows nothing about placement. So each part of a burst does 20 µs of
//! work (timed on this host) until the burst has reached a second core:
//! alone, a core would take some 200 ms over it.
//!
//! `make spreading` runs the hundred rounds below on an oversubscribed
//! host (twice as many busy threads as CPUs).
#![cfg(feature = "std")]

#[path = "common/async_cases.rs"]
mod async_cases;
#[path = "common/spreading_cases.rs"]
mod spreading_cases;
mod support;

use roving::{Config, CoreStats, Mailboxes};
use std::time::Duration;

/// Every kind of mailboxes, by the name `ROVING_MAILBOXES` gives it.
const MAILBOXES: [(&str, Mailboxes); 3] = [
    ("direct", Mailboxes::Direct),
    ("mesh", Mailboxes::Mesh { links: usize::MAX }),
    ("ring", Mailboxes::Mesh { links: 1 }),
];

/// What a burst is made of.
#[derive(Clone, Copy, Debug)]
enum Burst {
    Closures,
    AsyncTasks,
    Strands,
}

const BURSTS: [Burst; 3] = [Burst::Closures, Burst::AsyncTasks, Burst::Strands];

/// Work of one part of a burst, until it has reached a second core.
const PART: Duration = Duration::from_micros(20);

/// Runs one burst of `burst` on a pool of `cores` with `mailboxes`;
/// returns how many cores ran a part of it, and the pool's figures.
fn cores_reached(cores: usize, mailboxes: Mailboxes, burst: Burst, steps: u32) -> (usize, Vec<CoreStats>) {
    // 10,000 parts each: 200 ms on one core.
    support::run_pool_with(cores, Config::new().mailboxes(mailboxes), move |pool| {
        let cores = match burst {
            Burst::Closures => spreading_cases::closures(10_000, steps),
            Burst::AsyncTasks => {
                let (sum, cores) = async_cases::many_tasks(2_500, 3, steps);
                assert_eq!(sum, (0..2_500).sum::<u64>(), "every task returns its number");
                cores
            }
            Burst::Strands => spreading_cases::strands(2_500, 3, steps),
        };
        (cores, pool.stats())
    })
    .expect("the pool runs the burst")
}

/// Runs `rounds` bursts of every kind under every kind of mailboxes on a
/// pool of `cores`; fails with the first that stayed on one core.
fn every_burst_spreads(cores: usize, rounds: usize) {
    let steps = support::steps_taking(PART, async_cases::busy);
    for (name, mailboxes) in MAILBOXES {
        for burst in BURSTS {
            for round in 0..rounds {
                let (reached, stats) = cores_reached(cores, mailboxes, burst, steps);
                assert!(
                    reached > 1,
                    "{burst:?} with {name} mailboxes, round {round}: ran on {reached} core(s) of {cores}, \
                     none reached an idle core: {stats:#?}"
                );
            }
        }
    }
}

#[test]
fn a_burst_from_one_core_reaches_idle_cores_under_every_mailbox_kind() {
    for cores in [2, 4, 16] {
        every_burst_spreads(cores, 1);
    }
}

/// The same, a hundred times in a row, on an oversubscribed host (`make
/// spreading`, which `make test` runs).
#[test]
#[ignore = "a hundred rounds with the host oversubscribed: make spreading"]
fn a_hundred_bursts_reach_idle_cores_on_an_oversubscribed_host() {
    let _hogs = support::Hogs::start();
    every_burst_spreads(4, 100);
}
