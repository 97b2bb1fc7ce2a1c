//! Fork-join cases shared by the host tests (`tests/join.rs`) and the QEMU
//! kernel `join`. Only `core` and roving: it builds for bare metal.
#![allow(dead_code)]

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use roving::{join, platform};

/// Elements in [`parallel_sum`].
pub const ELEMENTS: u64 = 100_000_000;
/// The element at `i`: `i % 1000`, so the sum has a closed form.
fn element(i: u64) -> u64 {
    i % 1000
}
/// The sum of [`ELEMENTS`] elements: 10^5 blocks of 0 + 1 + ... + 999.
pub const SUM: u64 = 499_500 * (ELEMENTS / 1000);

/// Bit `c` set: core `c` ran a leaf of [`parallel_sum`].
pub static LEAF_CORES: AtomicU64 = AtomicU64::new(0);

/// The sum of elements `lo..hi`, split in halves with `join` down to
/// `grain` elements.
pub fn parallel_sum(lo: u64, hi: u64, grain: u64) -> u64 {
    if hi - lo <= grain {
        if let Some(core) = platform::current_core() {
            LEAF_CORES.fetch_or(1 << (core % 64), Relaxed);
        }
        return (lo..hi).map(element).sum();
    }
    let mid = lo + (hi - lo) / 2;
    let (left, right) = join(|| parallel_sum(lo, mid, grain), || parallel_sum(mid, hi, grain));
    left + right
}

/// Fibonacci with a `join` at every level above `cutoff`.
pub fn fib(n: u32, cutoff: u32) -> u64 {
    if n <= cutoff {
        return fib_serial(n);
    }
    let (a, b) = join(|| fib(n - 1, cutoff), || fib(n - 2, cutoff));
    a + b
}

fn fib_serial(n: u32) -> u64 {
    if n < 2 { u64::from(n) } else { fib_serial(n - 1) + fib_serial(n - 2) }
}

/// fib(32).
pub const FIB_32: u64 = 2_178_309;

/// Distinct cores that ran a leaf of the last [`parallel_sum`].
pub fn leaf_cores() -> u32 {
    LEAF_CORES.swap(0, Relaxed).count_ones()
}
