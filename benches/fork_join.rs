//! `make bench`: roving's `join` against rayon's, in one run: fib with a
//! join at every level, and the sum of a binary tree with a join at every
//! node, reported as ns per join; and a quicksort of 2,000,000 `u32`s
//! with a join at every split, as ns per element. Results go in
//! BENCHMARKS.md.
//!
//! `cargo bench -p roving-bench --target host-tuple --bench fork_join -- [quick]`

mod harness;

use harness::{compare, on_roving, overheads, ratios};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn fib_serial(n: u32) -> u64 {
    if n < 2 { u64::from(n) } else { fib_serial(n - 1) + fib_serial(n - 2) }
}

/// Joins `fib(n, cutoff)` makes: one per call with `n > cutoff`.
fn fib_joins(n: u32, cutoff: u32) -> u64 {
    if n <= cutoff { 0 } else { 1 + fib_joins(n - 1, cutoff) + fib_joins(n - 2, cutoff) }
}

macro_rules! fib_with {
    ($name:ident, $join:path) => {
        fn $name(n: u32, cutoff: u32) -> u64 {
            if n <= cutoff {
                return fib_serial(black_box(n));
            }
            let (a, b) = $join(|| $name(n - 1, cutoff), || $name(n - 2, cutoff));
            a + b
        }
    };
}
fib_with!(fib_roving, roving::join);
fib_with!(fib_rayon, rayon::join);

/// A complete binary tree, in heap order: node `i` has children `2i + 1`
/// and `2i + 2`.
struct Tree(Vec<u64>);

macro_rules! tree_sum_with {
    ($name:ident, $join:path) => {
        fn $name(tree: &Tree, node: usize) -> u64 {
            let Some(&value) = tree.0.get(node) else { return 0 };
            let (left, right) = $join(|| $name(tree, 2 * node + 1), || $name(tree, 2 * node + 2));
            value + left + right
        }
    };
}
tree_sum_with!(tree_roving, roving::join);
tree_sum_with!(tree_rayon, rayon::join);

/// Below this many elements a quicksort sorts serially.
const SORT_CUTOFF: usize = 1000;

/// Lomuto partition around the middle element; returns the pivot's index.
fn partition(v: &mut [u32]) -> usize {
    let last = v.len() - 1;
    v.swap(v.len() / 2, last);
    let mut store = 0;
    for i in 0..last {
        if v[i] < v[last] {
            v.swap(i, store);
            store += 1;
        }
    }
    v.swap(store, last);
    store
}

macro_rules! quicksort_with {
    ($name:ident, $join:path) => {
        fn $name(v: &mut [u32]) {
            if v.len() <= SORT_CUTOFF {
                v.sort_unstable();
                return;
            }
            let pivot = partition(v);
            let (low, high) = v.split_at_mut(pivot);
            $join(|| $name(low), || $name(&mut high[1..]));
        }
    };
}
quicksort_with!(quicksort_roving, roving::join);
quicksort_with!(quicksort_rayon, rayon::join);

/// `n` pseudo-random numbers (xorshift32, fixed seed).
fn unsorted(n: usize) -> Vec<u32> {
    let mut x = 0x2545_f491_u32;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

/// Sorts a fresh copy of `input` with `sort`, timing only the sort.
fn time_sort(input: &[u32], sort: impl FnOnce(&mut [u32])) -> Duration {
    let mut v = input.to_vec();
    let start = Instant::now();
    sort(&mut v);
    let elapsed = start.elapsed();
    assert!(v.is_sorted(), "the sort sorted");
    elapsed
}

fn rayon_pool(cores: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(cores).build().expect("a rayon pool")
}

fn timed<R: PartialEq + std::fmt::Debug>(expected: R, f: impl FnOnce() -> R) -> Duration {
    let start = Instant::now();
    let got = f();
    let elapsed = start.elapsed();
    assert_eq!(got, expected);
    elapsed
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "quick");
    let (fib_n, tree_nodes, samples) = if quick { (24, 1 << 18, 3) } else { (30, 1 << 22, 11) };
    println!(
        "roving-bench fork_join: {} hardware threads; median of {samples} rounds after a warm-up round",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    let tree = Tree((0..tree_nodes as u64).collect());
    let tree_sum: u64 = tree.0.iter().sum();
    // Every node joins once (leaves join two empty subtrees).
    let tree_joins = tree_nodes as u64;
    for cores in [1, 2] {
        let rayon = rayon_pool(cores);
        for cutoff in [1, 10] {
            let joins = fib_joins(fib_n, cutoff);
            let expected = fib_serial(fib_n);
            println!(
                "\nfib({fib_n}), join above n = {cutoff}: ns per join, {cores} core(s) ({joins} joins per sample)"
            );
            let rows = compare(
                samples,
                joins,
                &[
                    ("roving join", &|| {
                        on_roving(cores, move || timed(expected, || fib_roving(fib_n, cutoff)))
                    }),
                    ("rayon join", &|| rayon.install(|| timed(expected, || fib_rayon(fib_n, cutoff)))),
                    ("serial, no join (floor)", &|| timed(expected, || fib_roving_free(fib_n))),
                ],
            );
            ratios(&rows, &["rayon join"]);
            if cores == 1 && cutoff == 1 {
                overheads(&rows, "serial, no join (floor)", "rayon join");
            }
        }
        println!(
            "\ntree sum, {tree_nodes} nodes: ns per join, {cores} core(s) ({tree_joins} joins per sample)"
        );
        let tree = &tree;
        let rows = compare(
            samples,
            tree_joins,
            &[
                ("roving join", &|| on_roving(cores, move || timed(tree_sum, || tree_roving(tree, 0)))),
                ("rayon join", &|| rayon.install(|| timed(tree_sum, || tree_rayon(tree, 0)))),
            ],
        );
        ratios(&rows, &["rayon join"]);
    }
    let input = unsorted(if quick { 200_000 } else { 2_000_000 });
    let input = &input;
    let rayon = rayon_pool(2);
    println!(
        "\nquicksort of {} u32, join at every split above {SORT_CUTOFF}: ns per element, 2 cores",
        input.len()
    );
    let rows = compare(
        samples,
        input.len() as u64,
        &[
            ("roving join", &|| on_roving(2, move || time_sort(input, quicksort_roving))),
            ("rayon join", &|| rayon.install(|| time_sort(input, quicksort_rayon))),
            ("serial sort_unstable (floor)", &|| time_sort(input, <[u32]>::sort_unstable)),
        ],
    );
    ratios(&rows, &["rayon join"]);
}

/// The same recursion with no join: what the leaves cost.
fn fib_roving_free(n: u32) -> u64 {
    fib_serial(black_box(n))
}
