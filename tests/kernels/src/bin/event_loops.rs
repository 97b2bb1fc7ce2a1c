//! Event loops under QEMU: every core issues requests on one borrowed-caller
//! object, dropping its handle mid-flight (100,000 in all, each reply seen
//! exactly once, the object never running two operations at once), and a
//! reply callback that calls back into its own object is deferred.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/event_loop_cases.rs"]
mod event_loop_cases;

use event_loop_cases::{PARK_EVERY, expected_sum, many_callers, reentrant_request};
use roving::time::Instant;
use roving::{Pool, platform};
use roving_kernel::println;
use roving_test_kernels::{self as _, expected_cores, pass};

const REQUESTS: u64 = 100_000;

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let pool = Pool::new().expect("a pool of every core");
    pool.run(|| {
        let started = Instant::now();
        let report = many_callers(cores, REQUESTS);
        let took = started.elapsed();
        assert_eq!(report.sum, expected_sum(REQUESTS), "checksum of the replies");
        assert!(report.outlived_handles, "the object finished while callbacks were pending");
        assert!(report.after_handles >= REQUESTS / PARK_EVERY, "the parked replies fired before the handles went");
        let pool = Pool::current().expect("run from the pool");
        let order = reentrant_request(&pool);
        assert!(
            order.reply_started < order.call_returned
                && order.call_returned < order.reply_returned
                && order.reply_returned < order.deferred_ran
                && order.deferred_ran < order.second_reply,
            "a re-entrant call was not deferred: {order:?}"
        );
        println!(
            "event loops: {REQUESTS} requests from {cores} cores on one object in {} ms, {} replies after the handles were dropped; a re-entrant call deferred",
            took.as_millis(),
            report.after_handles
        );
    })
    .expect("the pool runs");
    pass("event_loops");
}

roving_kernel::entry!(main);
