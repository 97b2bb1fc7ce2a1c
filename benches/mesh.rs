//! `make bench`: the forwarding mesh beside direct mailboxes, in one run.
//! Two cores: what the mesh's path costs where it forwards nothing (every
//! message is one hop). Three cores in a ring (one link each): what one
//! forward through a hop costs. Results go in BENCHMARKS.md; they set
//! `Mailboxes::MESH_ABOVE`.
//!
//! `cargo bench -p roving-bench --target host-tuple --bench mesh -- [quick]`

mod harness;

use harness::{compare, ratios};
use roving::{Config, Mailboxes};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const DIRECT: Mailboxes = Mailboxes::Direct;
const MESH: Mailboxes = Mailboxes::Mesh { links: usize::MAX };
const RING: Mailboxes = Mailboxes::Mesh { links: 1 };

/// Runs `main` as the root strand of a fresh pool of `cores` cores.
fn on_pool<R: Send + 'static>(cores: usize, mailboxes: Mailboxes, main: impl FnOnce() -> R + Send) -> R {
    harness::on_pool(Config::new().cores(cores).mailboxes(mailboxes), main)
}

/// Round trips between core 0 and core `far`.
fn ping_pong(cores: usize, far: usize, mailboxes: Mailboxes, trips: u64) -> Duration {
    let end = Arc::new(OnceLock::new());
    let start = {
        let end = end.clone();
        on_pool(cores, mailboxes, move || {
            let start = Instant::now();
            serve(far, trips, end);
            start
        })
    };
    end.get().expect("the rally ended").duration_since(start)
}

fn serve(far: usize, left: u64, end: Arc<OnceLock<Instant>>) {
    if left == 0 {
        end.set(Instant::now()).expect("one end");
        return;
    }
    roving::post(far, move || roving::post(0, move || serve(far, left - 1, end)).expect("post to core 0"))
        .expect("post to the far core");
}

/// `tasks` closures posted from core 0 to core `to`, until the last ran.
fn stream(cores: usize, to: usize, mailboxes: Mailboxes, tasks: u64) -> Duration {
    let ran = Arc::new(AtomicU64::new(0));
    let end = Arc::new(OnceLock::new());
    let start = {
        let (ran, end) = (ran.clone(), end.clone());
        on_pool(cores, mailboxes, move || {
            let start = Instant::now();
            for _ in 0..tasks {
                let (ran, end) = (ran.clone(), end.clone());
                roving::post(to, move || {
                    if ran.fetch_add(1, Relaxed) + 1 == tasks {
                        end.set(Instant::now()).expect("one end");
                    }
                })
                .expect("post");
            }
            start
        })
    };
    assert_eq!(ran.load(Relaxed), tasks, "every task ran");
    end.get().expect("the stream ended").duration_since(start)
}

/// One group: `what` costs `ops` of, with direct mailboxes and with the
/// mesh (`mesh`, named `name`), and their ratio.
fn side_by_side(
    what: &str,
    samples: usize,
    ops: u64,
    run: impl Fn(Mailboxes) -> Duration,
    name: &'static str,
    mesh: Mailboxes,
) {
    println!("\n{what} ({ops} per sample)");
    let rows = compare(samples, ops, &[("direct mailboxes", &|| run(DIRECT)), (name, &|| run(mesh))]);
    ratios(&rows, &["direct mailboxes"]);
}

fn main() {
    let (trips, tasks, samples) = harness::sizes((10_000, 100_000, 3), (50_000, 1_000_000, 11));
    harness::banner(samples);
    side_by_side(
        "mesh, 2 cores: ns per round trip between core 0 and core 1",
        samples,
        trips,
        |mailboxes| ping_pong(2, 1, mailboxes, trips),
        "mesh (no forward)",
        MESH,
    );
    side_by_side(
        "mesh, 2 cores: ns per task, core 0 to core 1",
        samples,
        tasks,
        |mailboxes| stream(2, 1, mailboxes, tasks),
        "mesh (no forward)",
        MESH,
    );
    side_by_side(
        "mesh, 3 cores: ns per round trip between core 0 and core 2",
        samples,
        trips,
        |mailboxes| ping_pong(3, 2, mailboxes, trips),
        "ring (one forward per trip)",
        RING,
    );
    side_by_side(
        "mesh, 3 cores: ns per task, core 0 to core 2",
        samples,
        tasks,
        |mailboxes| stream(3, 2, mailboxes, tasks),
        "ring (each task forwarded once)",
        RING,
    );
}
