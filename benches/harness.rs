//! A small timing harness. Every contender of a group runs a fixed amount
//! of work once per round, in turn, for several rounds (after one warm-up
//! round), so drift in the machine (other tenants of a virtual machine,
//! frequency changes) falls on all of them alike. The median time per
//! operation is reported.

use roving::platform::host::Machine;
use roving::{Config, Pool};
use std::time::Duration;

/// One contender: a name, and a run of the group's work that returns the
/// time it measured (set-up stays outside the timed part).
pub type Contender<'a> = (&'static str, &'a dyn Fn() -> Duration);

/// One contender's result.
pub struct Row {
    pub name: &'static str,
    pub ns_per_op: f64,
}

/// `quick` if the bench was given `quick` on its command line, else
/// `full`.
#[allow(dead_code, reason = "each bench includes this module; only some use this")]
pub fn sizes<T>(quick: T, full: T) -> T {
    if std::env::args().any(|arg| arg == "quick") { quick } else { full }
}

/// Prints what every group of the run reports.
#[allow(dead_code, reason = "each bench includes this module; only some use this")]
pub fn banner(samples: usize) {
    println!(
        "roving-bench: {} hardware threads; median of {samples} rounds after a warm-up round",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
}

/// Runs the group and prints one line per contender.
pub fn compare(rounds: usize, ops: u64, contenders: &[Contender]) -> Vec<Row> {
    let mut times = vec![Vec::with_capacity(rounds); contenders.len()];
    for round in 0..=rounds {
        for ((_, run), times) in contenders.iter().zip(&mut times) {
            let ns = run().as_nanos() as f64 / ops as f64;
            if round > 0 {
                times.push(ns);
            }
        }
    }
    contenders
        .iter()
        .zip(times)
        .map(|(&(name, _), mut times)| {
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            println!(
                "  {:<42} {:>9.1} ns   (min {:.1}, max {:.1})",
                name,
                median,
                times[0],
                times[times.len() - 1]
            );
            Row { name, ns_per_op: median }
        })
        .collect()
}

/// Prints each row's ratio to the named baselines.
#[allow(dead_code, reason = "each bench includes this module; only some use this")]
pub fn ratios(rows: &[Row], baselines: &[&str]) {
    let find = |name: &str| rows.iter().find(|row| row.name == name).map(|row| row.ns_per_op);
    for baseline in baselines {
        let Some(base) = find(baseline) else { continue };
        println!("  ratios to {baseline}:");
        for row in rows.iter().filter(|row| row.name != *baseline) {
            println!("    {:<40} {:>6.2}x", row.name, row.ns_per_op / base);
        }
    }
}

/// Runs `main` as the root strand of a fresh roving pool of `cores` cores
/// (on as many OS threads), with the default configuration otherwise, and
/// returns what it returned once the pool is quiescent.
#[allow(dead_code, reason = "each bench includes this module; only some use this")]
pub fn on_roving<R: Send + 'static>(cores: usize, main: impl FnOnce() -> R + Send) -> R {
    on_pool(Config::new().cores(cores), main)
}

/// As [`on_roving`], with the pool built from `config` (its core count
/// sets the machine's).
pub fn on_pool<R: Send + 'static>(config: Config, main: impl FnOnce() -> R + Send) -> R {
    let cores = config.core_count().expect("a core count");
    let machine = Machine::new(cores).expect("a host machine");
    machine
        .run(|| {
            let pool = Pool::with_config(config).expect("a pool");
            pool.run(main).expect("the pool ran")
        })
        .expect("the machine ran")
}

/// Prints each row's cost above `floor` (the same work without the
/// mechanism measured), and its ratio to `baseline`'s.
#[allow(dead_code, reason = "each bench includes this module; only some use this")]
pub fn overheads(rows: &[Row], floor: &str, baseline: &str) {
    let find = |name: &str| rows.iter().find(|row| row.name == name).map(|row| row.ns_per_op);
    let (Some(floor_ns), Some(base)) = (find(floor), find(baseline)) else { return };
    println!("  above {floor}, ratio to {baseline}'s:");
    for row in rows.iter().filter(|row| row.name != floor) {
        let over = row.ns_per_op - floor_ns;
        println!("    {:<40} {:>7.1} ns {:>6.2}x", row.name, over, over / (base - floor_ns));
    }
}
