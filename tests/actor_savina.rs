//! Savina actor workloads on the host, with checksums: ping-pong (10^5
//! round trips), thread-ring (100 actors, 10^5 hops), counting (10^6
//! messages) and fork-join throughput (60 actors x 10^4 messages), on 4
//! cores; the first two also on 1 and 2.
#![cfg(feature = "std")]

#[path = "common/savina_cases.rs"]
mod savina_cases;
mod support;

use savina_cases::*;
use support::run_pool;

#[test]
fn ping_pong_round_trips() {
    for cores in [1, 2, 4] {
        let sum = run_pool(cores, |pool| ping_pong(pool, 100_000)).unwrap();
        assert_eq!(sum, ping_pong_expected(100_000), "{cores} cores");
    }
}

#[test]
fn thread_ring_passes_the_token() {
    for cores in [1, 2, 4] {
        let id = run_pool(cores, |pool| thread_ring(pool, 100, 100_000)).unwrap();
        assert_eq!(id, 100_000 % 100, "{cores} cores");
    }
}

#[test]
fn counting_sums_every_message() {
    let total = run_pool(4, |pool| counting(pool, 1_000_000)).unwrap();
    assert_eq!(total, 1_000_000 * 1_000_001 / 2);
}

#[test]
fn fork_join_throughput() {
    let sum = run_pool(4, |pool| fork_join(pool, 60, 10_000)).unwrap();
    assert_eq!(sum, fork_join_expected(60, 10_000));
}
