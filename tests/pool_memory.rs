//! What a pool costs in heap memory, by the number of cores: a pool of
//! every core of a machine of 4, 64, 256 and 512 cores, with direct
//! mailboxes and with the forwarding mesh, and a pool of 4 cores on each
//! machine. Run with `--nocapture` for the table (BENCHMARKS.md, "Memory
//! by pool"); the test fails if a pool outgrows the bounds below.
//!
//! Measured from the pool's creation to just before it runs: what it
//! holds for its life (per-core state, mailboxes, the mesh's routes, the
//! sleep state), not what its work allocates.
#![cfg(feature = "std")]

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
mod support;

use roving::platform::host::Machine;
use roving::{Config, Mailboxes, Pool};

/// The bytes a pool of `members` of a `machine`-core machine holds once
/// built, with `mailboxes`.
fn pool_bytes(machine: usize, members: usize, mailboxes: Mailboxes) -> usize {
    support::with_turn(|| {
        Machine::new(machine)
            .expect("a host machine")
            .run(|| {
                let cores: Vec<usize> = (0..members).collect();
                let before = counting_alloc::live();
                let pool = Pool::with_cores(&cores, Config::new().mailboxes(mailboxes)).expect("a pool");
                let bytes = counting_alloc::live() - before;
                drop(pool);
                usize::try_from(bytes).expect("a pool allocates")
            })
            .expect("the machine runs")
    })
}

fn kib(bytes: usize) -> String {
    format!("{:.0} KiB", bytes as f64 / 1024.0)
}

#[test]
fn a_pools_memory_by_its_cores() {
    const MESH: Mailboxes = Mailboxes::Mesh { links: usize::MAX };
    println!("| machine cores | every core, direct | every core, mesh | 4 cores, direct | 4 cores, mesh |");
    println!("|---|---|---|---|---|");
    for machine in [4, 64, 256, 512] {
        let direct = pool_bytes(machine, machine, Mailboxes::Direct);
        let mesh = pool_bytes(machine, machine, MESH);
        let four_direct = pool_bytes(machine, 4, Mailboxes::Direct);
        let four_mesh = pool_bytes(machine, 4, MESH);
        println!(
            "| {machine} | {} | {} | {} | {} |",
            kib(direct),
            kib(mesh),
            kib(four_direct),
            kib(four_mesh)
        );
        // Direct mailboxes: two lists per ordered pair, each padded to 128
        // bytes (two lines, against the prefetcher's pairing of lines), so
        // quadratic; the mesh grows like N log N at most. Bounds with room
        // for the per-core state (a few KiB a core).
        let lines = 128 * (2 * machine * (machine + 1));
        assert!(direct <= lines + machine * 16 * 1024, "{machine} cores, direct: {}", kib(direct));
        let log = machine.next_power_of_two().trailing_zeros().max(1) as usize;
        assert!(mesh <= machine * (16 * 1024 + log * 1024), "{machine} cores, mesh: {}", kib(mesh));
        // A pool of 4 holds mailboxes for its own 4 (a row each, of a chunk
        // of 8 senders: 2 KiB), not for every pair of the machine; what is
        // left grows with the machine by the per-core state (under 4 KiB a
        // core, docs/design.md, "Memory").
        for (kind, bytes) in [("direct", four_direct), ("mesh", four_mesh)] {
            assert!(bytes <= machine * 4 * 1024 + 64 * 1024, "4 of {machine} cores, {kind}: {}", kib(bytes));
        }
    }
}
