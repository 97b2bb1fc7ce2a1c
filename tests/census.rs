//! The line census (feature `census`): how many cache lines move between
//! cores per operation, at any number of host cores.
//!
//! `src/census.rs` plays a coherence protocol over every atomic access
//! roving makes, one thread standing for one core, and charges each move
//! to the source line that made it. Here each operation runs many times
//! in a pool of N cores, and the moves between a snapshot taken where it
//! starts and one taken where it ends are divided by the rounds. Idle
//! cores' own reads and writes in that window count too: they are part of
//! what the operation costs a machine of N cores.
//!
//! `make census` (in `make test`) runs every row at 2, 4, 16 and 64 cores
//! and prints the table in BENCHMARKS.md, with the source lines that moved
//! most; every row must stay within its bound (below) at every count.
#![cfg(feature = "census")]

mod support;

use roving::census::{self, Moves};
use roving::sync::Signal;
use roving::{Config, Mailboxes};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

type Sites = HashMap<(&'static str, u32), Moves>;

fn snapshot() -> Sites {
    census::by_site().into_iter().collect()
}

/// What moved between `before` and `after`.
fn between(before: &Sites, after: &Sites) -> Sites {
    after
        .iter()
        .filter_map(|(&site, &moves)| {
            let old = before.get(&site).copied().unwrap_or_default();
            let new = Moves {
                by_writes: moves.by_writes - old.by_writes,
                by_reads: moves.by_reads - old.by_reads,
                upgrades: moves.upgrades - old.upgrades,
            };
            (new != Moves::default()).then_some((site, new))
        })
        .collect()
}

/// How long an operation's cores are left alone before it starts: long
/// enough for every idle core to be asleep.
const SETTLE: Duration = Duration::from_millis(3);

/// One row: an operation's moves over its windows.
struct Row {
    name: &'static str,
    /// Operations measured, over every window.
    ops: usize,
    moves: Sites,
    /// Lines moved per operation in each window.
    per_window: Vec<f64>,
    /// Windows left out: a core slept in them.
    disturbed: usize,
}

impl Row {
    fn new(name: &'static str) -> Self {
        Self { name, ops: 0, moves: HashMap::new(), per_window: Vec::new(), disturbed: 0 }
    }

    /// Adds a window of `ops` operations.
    fn add(&mut self, window: Sites, ops: usize) {
        self.ops += ops;
        let mut lines = 0;
        for (site, moves) in window {
            lines += moves.total();
            *self.moves.entry(site).or_default() += moves;
        }
        self.per_window.push(lines as f64 / ops as f64);
    }

    /// Lines moved by writes, by reads, and upgrades, per operation, over
    /// every window.
    fn per_op(&self) -> (f64, f64, f64) {
        let mut sum = Moves::default();
        for &moves in self.moves.values() {
            sum += moves;
        }
        let ops = self.ops.max(1) as f64;
        (sum.by_writes as f64 / ops, sum.by_reads as f64 / ops, sum.upgrades as f64 / ops)
    }

    /// The median window's lines per operation: what the bound is checked
    /// against, so that a window a loaded host disturbed (a core not yet
    /// asleep) does not decide.
    fn median(&self) -> f64 {
        let mut sorted = self.per_window.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
    }

    /// The quietest window's lines per operation.
    fn least(&self) -> f64 {
        self.per_window.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn print(&self, cores: usize) {
        let (writes, reads, upgrades) = self.per_op();
        println!(
            "census: {cores} cores: {}: {:.2} lines per op, windows {:.2} to {:.2}, median {:.2} ({writes:.2} by writes, {reads:.2} by reads; {upgrades:.2} upgrades)",
            self.name,
            writes + reads,
            self.least(),
            self.per_window.iter().copied().fold(0.0, f64::max),
            self.median()
        );
        if self.disturbed > 0 {
            println!("    ({} windows left out: a core slept in them)", self.disturbed);
        }
        let mut sites: Vec<_> = self.moves.iter().collect();
        sites.sort_by_key(|&(&site, moves)| (core::cmp::Reverse(moves.total()), site));
        for ((file, line), moves) in sites.into_iter().filter(|(_, moves)| moves.total() > 0).take(16) {
            println!("    {:.2}  {file}:{line}", moves.total() as f64 / self.ops.max(1) as f64);
        }
    }
}

/// Where an operation's window ends, taken on whichever core sees its end.
static END: Mutex<Option<Sites>> = Mutex::new(None);
static ENDED: AtomicBool = AtomicBool::new(false);

fn end_window() {
    *END.lock().unwrap() = Some(snapshot());
    ENDED.store(true, SeqCst);
}

/// Every sleep the pool's cores have made.
fn sleeps(pool: &roving::Pool) -> u64 {
    pool.stats().iter().map(|core| core.sleeps).sum()
}

/// Spins (outside roving, uncounted) until a window has ended, for at
/// most ten seconds.
fn await_end(what: &str) -> Sites {
    let start = Instant::now();
    while !ENDED.swap(false, SeqCst) {
        assert!(start.elapsed() < Duration::from_secs(10), "{what}: never ended");
        std::hint::spin_loop();
    }
    END.lock().unwrap().take().expect("a snapshot")
}

/// The end of a rally, which core 0 must wait for without spinning: it
/// runs half the rally.
static RALLY_OVER: Signal = Signal::new();

/// Where a rally's windows begin and end: what had moved, and how many
/// sleeps the pool had made, every tenth message.
static MARKS: Mutex<Vec<(Sites, u64)>> = Mutex::new(Vec::new());

/// A rally of posts between core 0 and core 1, `left` round trips more,
/// marking a window every five (ten messages) without a pause between.
fn rally(left: usize) {
    if left.is_multiple_of(5) {
        let sleeps = roving::Pool::current().map_or(0, |pool| sleeps(&pool));
        MARKS.lock().unwrap().push((snapshot(), sleeps));
    }
    if left == 0 {
        RALLY_OVER.signal();
        return;
    }
    roving::post(1, move || roving::post(0, move || rally(left - 1)).expect("post to core 0"))
        .expect("post to core 1");
}

/// Runs `rounds` windows of one operation each, after two to warm up:
/// `ready` waits until the operation may start; then, once every idle
/// core has had time to fall asleep, `start` begins it, and its end (on
/// whichever core) closes the window; `finish` tidies up outside it.
fn windows(
    row: &mut Row,
    rounds: usize,
    mut ready: impl FnMut(),
    mut start: impl FnMut(),
    mut finish: impl FnMut(),
) {
    for round in 0..rounds + 2 {
        ready();
        std::thread::sleep(SETTLE);
        let before = snapshot();
        start();
        let after = await_end(row.name);
        finish();
        if round >= 2 {
            row.add(between(&before, &after), 1);
        }
    }
}

/// Spins (uncounted) until `flag` is set, and clears it.
fn until(flag: &AtomicBool) {
    while !flag.swap(false, SeqCst) {
        std::hint::spin_loop();
    }
}

/// A fan-out: the spawns that offer work to idle cores.
const FAN_OUT: usize = 3;
static LEFT: AtomicUsize = AtomicUsize::new(0);
static STOLEN: AtomicBool = AtomicBool::new(false);
static FANNED_OUT: Signal = Signal::new();

/// A fan-out's task: the first to run off core 0 ends the window.
fn fanned_out() {
    if roving::platform::current_core() != Some(0) && !STOLEN.swap(true, SeqCst) {
        end_window();
    }
    if LEFT.fetch_sub(1, SeqCst) == 1 {
        FANNED_OUT.signal();
    }
}

/// Runs every row on a pool of `cores`, `rounds` times each; returns them.
fn rows(cores: usize, rounds: usize) -> Vec<Row> {
    let far = cores - 1;
    let main = move |_: &roving::Pool| {
        let mut rows = Vec::new();

        // Messages back and forth, the receiver awake: per message, in
        // windows of ten, those in which no core slept (on a loaded host a
        // core may, when its partner loses the CPU).
        let mut row = Row::new("a message to an awake core (a rally of posts, per post)");
        rally(5 * (rounds + 2));
        RALLY_OVER.wait().expect("a wait");
        let marks = std::mem::take(&mut *MARKS.lock().unwrap());
        for pair in marks.windows(2).skip(2) {
            let ((before, slept), (after, sleeps)) = (&pair[0], &pair[1]);
            if sleeps == slept {
                row.add(between(before, after), 10);
            } else {
                row.disturbed += 1;
            }
        }
        rows.push(row);

        // A post to a sleeping core, to its closure's start.
        let mut row = Row::new("a post to a sleeping core, to its closure running (the wake-up included)");
        windows(&mut row, rounds, || (), || roving::post(far, end_window).expect("post"), || ());
        rows.push(row);

        // A strand on the far core, blocked, woken from core 0.
        let mut row = Row::new("a strand blocked on a sleeping core, signalled from another, to it running");
        static WAKE: Signal = Signal::new();
        static GO: AtomicBool = AtomicBool::new(false);
        let total = rounds + 2;
        roving::post(far, move || {
            let strand = roving::strand::spawn(move || {
                for _ in 0..total {
                    GO.store(true, SeqCst);
                    WAKE.wait().expect("a wait");
                    end_window();
                }
            })
            .expect("a strand");
            drop(strand);
        })
        .expect("post");
        windows(&mut row, rounds, || until(&GO), || WAKE.signal(), || ());
        rows.push(row);

        // An async task on the far core, woken from core 0.
        let mut row = Row::new("an async task on a sleeping core, woken from another, to its poll");
        static TASK_WAKE: Signal = Signal::new();
        let task = roving::spawn_async_on(far, async move {
            for _ in 0..total {
                GO.store(true, SeqCst);
                TASK_WAKE.wait_async().await.expect("a wait");
                end_window();
            }
        })
        .unwrap_or_else(|_| panic!("an async task"));
        windows(&mut row, rounds, || until(&GO), || TASK_WAKE.signal(), || ());
        task.join().expect("the task ends");
        rows.push(row);

        // A task spawned on a core that stays busy: another core, woken,
        // steals it.
        if cores > 1 {
            let mut row = Row::new(
                "three tasks spawned on a busy core, one stolen by a sleeping core, to it running (per steal)",
            );
            let ready = || {
                STOLEN.store(false, SeqCst);
                LEFT.store(FAN_OUT, SeqCst);
            };
            let start = || {
                for _ in 0..FAN_OUT {
                    roving::spawn_task(fanned_out).unwrap_or_else(|_| panic!("a task"));
                }
            };
            windows(&mut row, rounds, ready, start, || FANNED_OUT.wait().expect("a wait"));
            rows.push(row);
        }

        // Nothing to do: what sleeping cores move.
        let mut row = Row::new("an idle pool, per millisecond");
        std::thread::sleep(SETTLE);
        let before = snapshot();
        std::thread::sleep(Duration::from_millis(rounds as u64));
        row.add(between(&before, &snapshot()), rounds);
        rows.push(row);
        rows
    };
    support::run_pool_with(cores, Config::new().mailboxes(Mailboxes::Direct), main).expect("the pool runs")
}

/// A post to the farthest core of a ring (one link per core), every core
/// between asleep: what a forward past sleeping hops moves.
fn ring_row(cores: usize, rounds: usize) -> Row {
    support::run_pool_with(cores, Config::new().mailboxes(Mailboxes::Mesh { links: 1 }), |_| {
        let mut row = Row::new("a post around a ring to the farthest core, every hop asleep");
        windows(&mut row, rounds, || (), || roving::post(cores - 1, end_window).expect("post"), || ());
        row
    })
    .expect("the pool runs")
}

fn census_at(cores: usize, rounds: usize) -> Vec<Row> {
    let mut all = rows(cores, rounds);
    if cores > 2 {
        all.push(ring_row(cores, rounds));
    }
    for row in &all {
        row.print(cores);
    }
    all
}

/// The bound each row's median window must stay within at every core
/// count (for the rally, of the windows in which no core slept), in lines
/// per operation: under a line over what BENCHMARKS.md accounts for, and the
/// same at 2 cores as at 64, so that a change that adds a shared line to a
/// path, or makes one grow with the cores, fails here.
fn bound(name: &str) -> f64 {
    match name {
        n if n.starts_with("a message to an awake core") => 3.25,
        n if n.starts_with("a post to a sleeping core") => 7.75,
        n if n.starts_with("a strand blocked") => 15.75,
        n if n.starts_with("an async task") => 11.75,
        n if n.starts_with("three tasks spawned") => 10.75,
        n if n.starts_with("an idle pool") => 0.5,
        n if n.starts_with("a post around a ring") => 7.75,
        other => panic!("no bound for {other}"),
    }
}

#[test]
fn shared_lines_per_operation_stay_within_their_bounds() {
    let cores: Vec<usize> = std::env::var("ROVING_CENSUS_CORES")
        .map(|list| list.split(',').map(|n| n.trim().parse().expect("a core count")).collect())
        .unwrap_or_else(|_| vec![2, 4, 16, 64]);
    let rounds = std::env::var("ROVING_CENSUS_ROUNDS").map_or(40, |n| n.parse().expect("a round count"));
    let mut over = Vec::new();
    for &n in &cores {
        for row in census_at(n, rounds) {
            if row.per_window.is_empty() {
                println!("census: {n} cores: {}: every window was disturbed, nothing to check", row.name);
            } else if row.median() > bound(row.name) {
                over.push(format!(
                    "{n} cores: {}: {:.2} lines (bound {})",
                    row.name,
                    row.median(),
                    bound(row.name)
                ));
            }
        }
    }
    assert!(over.is_empty(), "rows over their bounds:\n{}", over.join("\n"));
}
