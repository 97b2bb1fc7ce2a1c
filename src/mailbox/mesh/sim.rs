//! The mesh simulator (`make sim`, not in `make test`): the real mesh
//! code, driven by one thread playing every core in turn (deterministic,
//! up to 1024 cores), then by one OS thread per core (64, where the
//! interleavings are the host's). Prints hops per message, messages per
//! list drain, list memory per pool and lost or duplicated messages, and
//! draws `docs/mesh.svg`: hops and memory against the core count, next to
//! direct mailboxes.

use super::stamps::{Ledger, stamped};
use super::{DrainCounts, Mesh, Topology};
use crate::atomics::CachePadded;
use crate::mailbox::list::AtomicList;
use std::fmt::Write as _;

/// Core counts simulated.
const CORES: [usize; 10] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/// Messages each core sends, to receivers picked at random.
const PER_CORE: usize = 64;
/// Messages each core sends between drains, in the second run.
const BURST: usize = 16;
/// One list alone on its cache line.
const LIST_BYTES: usize = core::mem::size_of::<CachePadded<AtomicList>>();

/// What one simulated core count gave.
struct Row {
    cores: usize,
    links: usize,
    sent: usize,
    mean_hops: f64,
    most_hops: usize,
    per_drain: f64,
    /// The same when each core sends 16 messages between drains.
    per_drain_burst: f64,
    mesh_bytes: usize,
    direct_bytes: usize,
    lost: usize,
    duplicated: usize,
    misordered: usize,
}

/// A pool's lists with direct mailboxes: two lanes (closures, fibres),
/// each a list per ordered pair and one per core for code outside.
fn direct_bytes(cores: usize) -> usize {
    2 * cores * (cores + 1) * LIST_BYTES
}

/// The same with the mesh: two lanes, each a mesh and one outside list per
/// core.
fn mesh_bytes(mesh: &Mesh) -> usize {
    2 * (mesh.list_bytes() + mesh.topology().cores() * LIST_BYTES)
}

/// Simulates `cores` cores, each sending `burst` messages between drains.
fn simulate(cores: usize, burst: usize) -> Row {
    let topology = Topology::new(cores);
    let mesh = Mesh::new(topology);
    let mut ledger = Ledger::new(cores);
    let mut next_seq = vec![0usize; cores * cores];
    let mut random = 0x9e37_79b9_7f4a_7c15_u64 ^ cores as u64;
    let (mut sent, mut most_hops, mut total) = (0, 0, DrainCounts::default());
    for _round in 0..PER_CORE / burst {
        for from in (0..cores).flat_map(|from| core::iter::repeat_n(from, burst)) {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let to = (from + 1 + (random % (cores as u64 - 1)) as usize) % cores;
            let seq = &mut next_seq[from * cores + to];
            // SAFETY: this thread plays every core in turn; the task is fresh.
            let _ = unsafe { mesh.send(from, to, stamped(from, to, *seq)) }.expect("memory");
            *seq += 1;
            sent += 1;
            most_hops = most_hops.max(topology.hops(from, to));
        }
        // SAFETY: this thread plays every core.
        total += unsafe { ledger.drain_each(&mesh) };
    }
    while !mesh.is_empty() {
        // SAFETY: this thread plays every core.
        total += unsafe { ledger.drain_each(&mesh) };
    }
    let lost = sent - (ledger.received - ledger.duplicated - ledger.misdelivered);
    Row {
        cores,
        links: topology.links(),
        sent,
        mean_hops: (sent + total.forwarded) as f64 / sent as f64,
        most_hops,
        per_drain: (total.delivered + total.forwarded) as f64 / total.lists as f64,
        per_drain_burst: 0.0,
        mesh_bytes: mesh_bytes(&mesh),
        direct_bytes: direct_bytes(cores),
        lost,
        duplicated: ledger.duplicated,
        misordered: ledger.overtaking + ledger.misdelivered,
    }
}

#[test]
#[ignore = "the simulator: make sim"]
fn simulate_the_mesh() {
    println!(
        "mesh simulator: {PER_CORE} messages per core to random receivers, one thread playing every core; \
         messages per list taken when each core sends 1 between drains, and {BURST} (lost, duplicated and \
         wrong count both runs)"
    );
    println!(
        "{:>6} {:>6} {:>9} {:>10} {:>9} {:>11} {:>11} {:>14} {:>14} {:>6} {:>6} {:>6}",
        "cores",
        "links",
        "messages",
        "hops/msg",
        "most",
        "msgs/list",
        "burst 16",
        "mesh lists",
        "direct lists",
        "lost",
        "dups",
        "wrong"
    );
    let rows: Vec<Row> = CORES
        .iter()
        .map(|&cores| {
            let (single, burst) = (simulate(cores, 1), simulate(cores, BURST));
            Row {
                per_drain_burst: burst.per_drain,
                lost: single.lost + burst.lost,
                duplicated: single.duplicated + burst.duplicated,
                misordered: single.misordered + burst.misordered,
                ..single
            }
        })
        .collect();
    for row in &rows {
        println!(
            "{:>6} {:>6} {:>9} {:>10.2} {:>9} {:>11.2} {:>11.2} {:>14} {:>14} {:>6} {:>6} {:>6}",
            row.cores,
            row.links,
            row.sent,
            row.mean_hops,
            row.most_hops,
            row.per_drain,
            row.per_drain_burst,
            kib(row.mesh_bytes),
            kib(row.direct_bytes),
            row.lost,
            row.duplicated,
            row.misordered
        );
    }
    println!(
        "(wrong: delivered to another core, or before a message its sender sent earlier to the same core)"
    );
    for row in &rows {
        assert_eq!((row.lost, row.duplicated, row.misordered), (0, 0, 0), "{} cores", row.cores);
    }
    let threads = 64;
    let started = std::time::Instant::now();
    super::tests::threads_as_cores(Topology::new(threads), 20);
    println!(
        "{threads} OS threads as cores, each sending 20 messages to every other while draining and sleeping: \
         {} messages, none lost, duplicated or out of order, in {} ms",
        20 * threads * (threads - 1),
        started.elapsed().as_millis()
    );
    let svg = plot(&rows);
    let path = std::env::var("ROVING_SIM_SVG")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mesh.svg").into());
    std::fs::write(&path, svg).expect("writing the plot");
    println!("plot: {path}");
}

fn kib(bytes: usize) -> String {
    format!("{} KiB", bytes.div_ceil(1024))
}

/// Two panels: hops per message, and list memory per pool (log scale),
/// against the core count (log scale).
fn plot(rows: &[Row]) -> String {
    let (width, height, margin) = (WIDTH, HEIGHT, MARGIN);
    let x = |cores: usize, left: f64| left + margin + (cores as f64).log2() / 10.0 * (width - margin - 10.0);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">"#,
        2.0 * width + 20.0,
        height + 40.0
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    // Hops: the mesh's mean and most; direct mailboxes are always 1.
    let top_hops = 10.0;
    let y_hops = |hops: f64| height - 20.0 - hops / top_hops * (height - 50.0);
    panel(
        &mut svg,
        0.0,
        "hops per message",
        &x,
        &(0..=10).step_by(2).map(|h| (y_hops(h as f64), h.to_string())).collect::<Vec<_>>(),
    );
    line(&mut svg, rows.iter().map(|r| (x(r.cores, 0.0), y_hops(r.mean_hops))), "#1f77b4");
    line(&mut svg, rows.iter().map(|r| (x(r.cores, 0.0), y_hops(r.most_hops as f64))), "#ff7f0e");
    line(&mut svg, rows.iter().map(|r| (x(r.cores, 0.0), y_hops(1.0))), "#2ca02c");
    legend(
        &mut svg,
        margin + 10.0,
        30.0,
        &[("#1f77b4", "mesh, mean"), ("#ff7f0e", "mesh, most"), ("#2ca02c", "direct")],
    );
    // Memory, log scale from 1 KiB to 1 GiB.
    let left = width + 20.0;
    let y_bytes = |bytes: usize| height - 20.0 - ((bytes as f64 / 1024.0).log2() / 20.0) * (height - 50.0);
    let ticks = [(1usize << 10, "1 KiB"), (1 << 20, "1 MiB"), (1 << 30, "1 GiB")];
    panel(
        &mut svg,
        left,
        "list memory per pool",
        &x,
        &ticks.iter().map(|&(b, l)| (y_bytes(b), l.to_string())).collect::<Vec<_>>(),
    );
    line(&mut svg, rows.iter().map(|r| (x(r.cores, left), y_bytes(r.mesh_bytes))), "#1f77b4");
    line(&mut svg, rows.iter().map(|r| (x(r.cores, left), y_bytes(r.direct_bytes))), "#2ca02c");
    legend(
        &mut svg,
        left + margin + 10.0,
        30.0,
        &[("#1f77b4", "mesh: O(N log N)"), ("#2ca02c", "direct: O(N²)")],
    );
    svg.push_str("</svg>\n");
    svg
}

/// A panel's size, and the room on its left for the axis labels.
const WIDTH: f64 = 360.0;
const HEIGHT: f64 = 240.0;
const MARGIN: f64 = 50.0;

fn panel(svg: &mut String, left: f64, title: &str, x: &dyn Fn(usize, f64) -> f64, y_ticks: &[(f64, String)]) {
    let (x0, x1, y0, y1) = (left + MARGIN, left + WIDTH - 10.0, HEIGHT - 20.0, 30.0);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="18" text-anchor="middle" font-size="13">{title}</text>"#,
        (x0 + x1) / 2.0
    );
    let _ = writeln!(svg, r#"<path d="M{x0},{y1} V{y0} H{x1}" stroke="black" fill="none"/>"#);
    for (y, label) in y_ticks {
        let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="end">{label}</text>"#, x0 - 4.0, y + 4.0);
        let _ = writeln!(svg, r##"<path d="M{x0},{y} H{x1}" stroke="#ddd"/>"##);
    }
    for cores in CORES {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">{cores}</text>"#,
            x(cores, left),
            y0 + 14.0
        );
    }
    let _ =
        writeln!(svg, r#"<text x="{}" y="{}" text-anchor="middle">cores</text>"#, (x0 + x1) / 2.0, y0 + 30.0);
}

fn line(svg: &mut String, points: impl Iterator<Item = (f64, f64)>, colour: &str) {
    let points: Vec<String> = points.map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = writeln!(
        svg,
        r#"<polyline points="{}" stroke="{colour}" stroke-width="2" fill="none"/>"#,
        points.join(" ")
    );
}

fn legend(svg: &mut String, x: f64, y: f64, entries: &[(&str, &str)]) {
    for (i, (colour, label)) in entries.iter().enumerate() {
        let y = y + 14.0 * i as f64;
        let _ = writeln!(svg, r#"<rect x="{x}" y="{}" width="12" height="3" fill="{colour}"/>"#, y - 4.0);
        let _ = writeln!(svg, r#"<text x="{}" y="{y}">{label}</text>"#, x + 16.0);
    }
}
