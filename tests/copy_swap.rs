//! Copy-swap at scale: 100,000 strands on the fibres (64 by default), all
//! blocked at once, each keeping a stack array whose checksum must survive
//! every block and wake; and the memory they take, measured with a
//! counting allocator against the budget of a control block
//! (`ROVING_STRAND_BYTES`) plus the stack each strand really uses.
#![cfg(feature = "std")]

mod support;

use roving::platform::host::Machine;
use roving::strand::{self, JoinHandle, sizes};
use roving::sync::Event;
use roving::{Config, Pool};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

/// Bytes the global allocator has handed out and not had back.
static LIVE: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: forwards to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let memory = unsafe { System.alloc(layout) };
        if !memory.is_null() {
            LIVE.fetch_add(layout.size(), Relaxed);
        }
        memory
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Under `make tsan` every strand also holds a sanitizer fiber, whose
/// shadow stack is one more memory mapping: 100,000 of them reach the
/// kernel's limit of 65,530 mappings whenever neighbours fail to merge,
/// and the sanitizer dies of "out of memory". Scale is checked without it.
const STRANDS: usize = if cfg!(roving_tsan) { 20_000 } else { 100_000 };
const ROUNDS: u32 = 6;
const KEPT_WORDS: usize = 32;

/// Fills a 256-byte stack array from `seed`, waits at `gate` (so that all
/// strands are blocked at once), then blocks `ROUNDS` more times (yields
/// and short sleeps), checking the array after each. Returns its checksum.
fn keeper(seed: u64, arrived: &AtomicUsize, gate: &Event) -> u64 {
    let mut kept = [0u64; KEPT_WORDS];
    fill(&mut kept, seed);
    let expected = checksum(&kept);
    arrived.fetch_add(1, SeqCst);
    gate.wait().expect("a strand may wait");
    assert_eq!(
        checksum(black_box(&kept)),
        expected,
        "strand {seed}: stack changed while it waited at the gate"
    );
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            strand::yield_now().expect("a strand may yield");
        } else {
            strand::sleep(Duration::from_micros(20)).expect("a strand may sleep");
        }
        assert_eq!(checksum(black_box(&kept)), expected, "strand {seed}: stack changed in round {round}");
    }
    expected
}

/// Fills the stack array strand `seed` keeps (in place: no temporary
/// copy on the strand's stack).
fn fill(kept: &mut [u64; KEPT_WORDS], seed: u64) {
    for (i, word) in kept.iter_mut().enumerate() {
        *word = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(i as u32) ^ i as u64;
    }
}

fn checksum(words: &[u64; KEPT_WORDS]) -> u64 {
    words.iter().fold(0, |sum, word| sum.rotate_left(7) ^ word)
}

/// What the test saw, for its report.
struct Seen {
    heap_per_strand: usize,
    saved_per_strand: usize,
    handles_bytes: usize,
    blocked_in: Duration,
    finished_in: Duration,
}

#[test]
fn a_hundred_thousand_strands_share_the_fibres_and_keep_their_stacks_within_budget() {
    let seen = support::with_watchdog(Duration::from_secs(300), "100,000 strands", || {
        Machine::new(4)
            .unwrap()
            .run(|| Pool::with_config(Config::new().cores(4)).unwrap().run(spawn_block_and_check).unwrap())
            .unwrap()
    });
    println!(
        "copy-swap: {STRANDS} strands on {} fibres of {} KiB, all blocked after {} ms, done after {} ms; \
         heap per blocked strand {} bytes ({} of them its saved stack), plus {} bytes of handles",
        sizes::FIBRES,
        sizes::STACK_BYTES / 1024,
        seen.blocked_in.as_millis(),
        seen.finished_in.as_millis(),
        seen.heap_per_strand,
        seen.saved_per_strand,
        seen.handles_bytes
    );
}

fn spawn_block_and_check() -> Seen {
    let before = strand::usage();
    let arrived = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Event::new());
    let heap_before = LIVE.load(SeqCst);
    let started = Instant::now();
    let mut handles: Vec<JoinHandle<u64>> = Vec::with_capacity(STRANDS);
    for seed in 0..STRANDS as u64 {
        let (arrived, gate) = (arrived.clone(), gate.clone());
        handles.push(
            strand::spawn(move || keeper(seed, &arrived, &gate))
                .unwrap_or_else(|error| panic!("strand {seed} not spawned: {error:?}")),
        );
    }
    while arrived.load(SeqCst) < STRANDS {
        strand::sleep(Duration::from_millis(1)).unwrap();
    }
    // Each counted itself just before it blocked; let the last ones block.
    strand::sleep(Duration::from_millis(20)).unwrap();
    let blocked_in = started.elapsed();

    let heap = LIVE.load(SeqCst) - heap_before;
    let usage = strand::usage();
    assert_eq!(usage.fibres_in_use, sizes::FIBRES, "100,000 strands hold every fibre");
    let handles_bytes = handles.capacity() * size_of::<JoinHandle<u64>>();
    let saved = usage.saved_stack_bytes - before.saved_stack_bytes;
    // Budget: per strand, a control block of at most STRAND_BYTES plus the
    // stack it uses, which is what its save area holds (the resident
    // strands hold none; each fibre keeps one spare, counted in `saved`).
    let budget = STRANDS * sizes::STRAND_BYTES + saved + handles_bytes;
    assert!(
        heap <= budget,
        "{STRANDS} blocked strands hold {heap} heap bytes, over the budget of {budget} \
         ({} per control block, {saved} of saved stacks, {handles_bytes} of handles)",
        sizes::STRAND_BYTES
    );
    let saved_per_strand = saved / (STRANDS - sizes::FIBRES);
    assert!(
        saved_per_strand < sizes::STACK_BYTES / 8,
        "a blocked strand's save area averages {saved_per_strand} bytes: more than its used stack"
    );

    gate.set();
    for (seed, handle) in handles.into_iter().enumerate() {
        let sum = handle.join().expect("main is a strand");
        let mut kept = [0u64; KEPT_WORDS];
        fill(&mut kept, seed as u64);
        assert_eq!(sum, checksum(&kept), "strand {seed} returned a wrong checksum");
    }
    let finished_in = started.elapsed();
    let after = strand::usage();
    assert_eq!(after, before, "fibres and save areas are given back once the strands end");
    Seen {
        heap_per_strand: (heap - handles_bytes) / STRANDS,
        saved_per_strand,
        handles_bytes,
        blocked_in,
        finished_in,
    }
}
