//! `make bench`: roving's strands against corosensei, std threads and
//! tokio tasks, in one run. Results go in BENCHMARKS.md.
//!
//! `cargo bench -p roving-bench --target host-tuple --bench strands -- [quick]`

mod copy_swap;
mod crowds;
mod harness;
mod spawn_join;
mod switch;

use harness::{compare, ratios};
use std::time::Duration;

fn main() {
    let quick = std::env::args().any(|arg| arg == "quick");
    let (yields, switches, spawns, samples) =
        if quick { (20_000, 20_000, 2_000, 3) } else { (200_000, 100_000, 20_000, 11) };
    println!(
        "roving-bench strands: {} hardware threads, {} fibres of {} KiB; median of {samples} rounds after a warm-up round",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        roving::strand::sizes::FIBRES,
        roving::strand::sizes::STACK_BYTES / 1024,
    );

    println!("\nyield: ns per round trip to the scheduler and back, one core ({yields} per sample)");
    let rows = compare(
        samples,
        yields,
        &[
            ("roving context resume + suspend", &|| switch::bare_switch(yields, 0)),
            ("roving strand yield_now, alone on its core", &|| switch::strand_yield(yields)),
            ("roving strand yield_now, two strands in turn", &|| switch::strand_pair_yield(yields)),
            ("corosensei resume + suspend", &|| switch::corosensei(yields)),
        ],
    );
    ratios(&rows, &["corosensei resume + suspend"]);

    println!(
        "\ncopy-swap: ns per strand switch, one core, every fibre busy ({switches} switches per sample)"
    );
    copy_swap_group::<0>(samples, switches);
    copy_swap_group::<1024>(samples, switches);
    copy_swap_group::<4096>(samples, switches);
    copy_swap_group::<8192>(samples, switches);

    println!("\ncrowds on two cores: ns per yield (200 strands or tasks yielding 200 times each)");
    let rows = compare(
        samples,
        200 * 200,
        &[
            ("roving strands yield_now (64 fibres, copy-swap)", &|| crowds::strand_crowd_yield(200, 200)),
            ("tokio tasks yield_now", &|| crowds::tokio_crowd_yield(200, 200)),
        ],
    );
    ratios(&rows, &["tokio tasks yield_now"]);
    println!("\npairs on two cores: ns per pair (1,000 pairs passing one number each)");
    let rows = compare(
        samples,
        1000,
        &[
            ("roving strand pairs, bounded(1) channel", &|| crowds::strand_pairs(1000)),
            ("tokio task pairs, oneshot", &|| crowds::tokio_pairs(1000)),
        ],
    );
    ratios(&rows, &["tokio task pairs, oneshot"]);
    println!(
        "\nrallies on two cores: ns per round trip (30 pairs, 100 round trips each over capacity-1 channels)"
    );
    let rows = compare(
        samples,
        3000,
        &[
            ("roving strand pairs, bounded(1) channels", &|| crowds::strand_rallies(30, 100)),
            ("tokio task pairs, mpsc(1) channels", &|| crowds::tokio_rallies(30, 100)),
        ],
    );
    ratios(&rows, &["tokio task pairs, mpsc(1) channels"]);

    println!(
        "\nspawn + join: ns per child, one at a time ({spawns} per sample; std threads: a tenth, scaled)"
    );
    let rows = compare(
        samples,
        spawns,
        &[
            ("roving strand spawn + join", &|| spawn_join::strand(spawns)),
            ("std thread::spawn + join", &|| spawn_join::std_thread(spawns / 10) * 10),
            ("tokio spawn + await", &|| spawn_join::tokio(spawns)),
        ],
    );
    ratios(&rows, &["std thread::spawn + join", "tokio spawn + await"]);
}

/// One size of kept stack: strands sharing fibres against strands on their
/// own fibres that copy as much, with the bare switch plus copy as a floor.
fn copy_swap_group<const BYTES: usize>(samples: usize, switches: u64) {
    println!("  {BYTES} bytes kept on each strand's stack:");
    let shared: &dyn Fn() -> Duration = &|| copy_swap::shared_fibres::<BYTES>(switches);
    let own: &dyn Fn() -> Duration = &|| copy_swap::own_fibres_plus_memcpy::<BYTES>(switches);
    let bare: &dyn Fn() -> Duration = &|| switch::bare_switch(switches, BYTES);
    let rows = compare(
        samples,
        switches,
        &[
            ("strands sharing fibres (copy-swap)", shared),
            ("strands on own fibres + memcpy", own),
            ("bare context resume + suspend + memcpy", bare),
        ],
    );
    ratios(&rows, &["strands on own fibres + memcpy"]);
}
