//! `make bench`: the programming models. Savina ping-pong, thread-ring and
//! counting on roving's actors against a raw SPSC ring between two threads
//! (the floor) and an actor loop built on crossbeam-channel; the `.then`
//! hop of futures against a mailbox message; and an event-loop operation
//! against a mutex per object. One run; results go in BENCHMARKS.md.
//!
//! `cargo bench -p roving-bench --target host-tuple --bench actors -- [quick]`

mod event_loop;
mod harness;
#[allow(dead_code, reason = "only the roving rally is used here")]
mod pingpong;
mod savina;
mod then_hop;

use harness::{compare, ratios};

/// Runs `main` on a fresh two-core roving pool (for `pingpong`).
fn on_roving<R: Send + 'static>(main: impl FnOnce() -> R + Send) -> R {
    harness::on_roving(2, main)
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "quick");
    let (trips, hops, counted, samples) =
        if quick { (10_000, 10_000, 100_000, 3) } else { (100_000, 100_000, 1_000_000, 11) };
    println!(
        "roving-bench actors: {} hardware threads; median of {samples} rounds after a warm-up round",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let floor = "SPSC ring, two threads (floor)";
    let crossbeam = "crossbeam-channel actor loop";

    println!("\nping-pong: ns per round trip ({trips} round trips per sample)");
    let rows = compare(
        samples,
        trips,
        &[
            (floor, &|| savina::ring_ping_pong(trips)),
            ("roving actors, pinned to two cores", &|| savina::roving_ping_pong(trips, true)),
            ("roving actors, unpinned", &|| savina::roving_ping_pong(trips, false)),
            (crossbeam, &|| savina::crossbeam_ping_pong(trips)),
        ],
    );
    ratios(&rows, &[floor, crossbeam]);

    println!("\nthread-ring: ns per hop, 100 actors ({hops} hops per sample)");
    let rows = compare(
        samples,
        hops,
        &[
            (floor, &|| savina::ring_thread_ring(hops)),
            ("roving actors", &|| savina::roving_thread_ring(100, hops)),
            (crossbeam, &|| savina::crossbeam_thread_ring(100, hops)),
        ],
    );
    ratios(&rows, &[floor, crossbeam]);

    println!("\ncounting: ns per message, one producer to one counter ({counted} messages per sample)");
    let rows = compare(
        samples,
        counted,
        &[
            (floor, &|| savina::ring_counting(counted)),
            ("roving actors", &|| savina::roving_counting(counted)),
            (crossbeam, &|| savina::crossbeam_counting(counted)),
        ],
    );
    ratios(&rows, &[floor, crossbeam]);

    let mailbox = "roving mailbox, one way (half a round trip)";
    println!("\nfutures: ns per `.then` hop between two cores ({hops} hops per sample)");
    let rows = compare(
        samples,
        hops,
        &[
            (mailbox, &|| pingpong::roving(hops / 2)),
            ("roving future, .then to the other core", &|| then_hop::roving_then(hops)),
        ],
    );
    ratios(&rows, &[mailbox]);

    let locked = "std Mutex per object, lock per operation";
    for threads in [1, 2] {
        println!(
            "\nevent loops: ns per operation, {threads} thread(s) on one object ({counted} operations per sample)"
        );
        let ops = counted / threads as u64;
        let rows = compare(
            samples,
            counted,
            &[
                (locked, &|| event_loop::mutex(threads, ops)),
                ("roving borrowed-caller loop, defer", &|| event_loop::roving_loop(threads, ops)),
            ],
        );
        ratios(&rows, &[locked]);
    }
}
