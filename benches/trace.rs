//! What tracing costs: roving's mailbox ping-pong and stream, in a build
//! without feature `trace` and in one with it. `make bench-trace` runs
//! this bench both ways; the with-trace run also counts the events each
//! task records, so the difference per task gives a cost per event.
//! Results go in BENCHMARKS.md.
//!
//! `cargo bench -p roving-bench --target host-tuple --bench trace [--features trace] -- [quick]`

mod harness;
#[allow(dead_code, reason = "this bench uses roving's contenders alone")]
mod pingpong;
#[allow(dead_code, reason = "this bench uses roving's contenders alone")]
mod stream;

use harness::compare;

/// Runs `main` on a fresh two-core roving pool.
fn on_roving<R: Send + 'static>(main: impl FnOnce() -> R + Send) -> R {
    harness::on_roving(2, main)
}

/// Events recorded per task over one stream of `tasks` from core 0 to
/// core 1, and how many the rings lost.
#[cfg(feature = "trace")]
fn events_per_task(tasks: u64) -> (f64, u64) {
    use roving::Pool;
    use roving::platform::host::Machine;
    let traces = Machine::new(2)
        .unwrap()
        .run(move || {
            let pool = Pool::new().unwrap();
            pool.run(move || {
                for _ in 0..tasks {
                    roving::post(1, || ()).unwrap();
                }
            })
            .unwrap();
            pool.trace()
        })
        .unwrap();
    let lost: u64 = traces.iter().map(|trace| trace.lost).sum();
    let events: u64 = traces.iter().map(|trace| trace.events.len() as u64).sum::<u64>() + lost;
    (events as f64 / tasks as f64, lost)
}

fn main() {
    let (trips, tasks, samples) = harness::sizes((10_000, 100_000, 3), (50_000, 1_000_000, 11));
    harness::banner(samples);
    let traced = if cfg!(feature = "trace") { "with feature trace" } else { "without feature trace" };
    println!("\ntracing: roving {traced}");
    compare(samples, trips, &[("ping-pong, ns per round trip", &|| pingpong::roving(trips))]);
    compare(samples, tasks, &[("stream, ns per task", &|| stream::roving(tasks, 1))]);
    #[cfg(feature = "trace")]
    {
        // Small enough that the default rings (4096 events) lose nothing.
        let (per_task, lost) = events_per_task(1000);
        println!("  events recorded per streamed task: {per_task:.2} ({lost} lost)");
    }
}
