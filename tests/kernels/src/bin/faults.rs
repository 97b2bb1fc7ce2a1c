//! Faults the machine must contain or report, one case per run, chosen
//! with `faults.case=NAME` on the kernel command line. Each case says what
//! the suite expects of it; `docs/guarantees.md` lists them in its fault
//! table.
//!
//! - `console`: core 1 stops for ever in the middle of a console line
//!   (built with feature `defmt`, in the middle of a frame, with interrupts
//!   masked), and then core 0 panics. The panic report must still get out,
//!   after the console's bounded wait: status 101 and the message.
//! - `oom`: a strand fills the heap, then spawns strands until a spawn
//!   fails. The failure is
//!   `SpawnError::OutOfMemory` with the closure back; every strand that
//!   was spawned finishes; once the memory is free again, spawning works.
//!   A strand that allocates (infallibly) in the full heap panics and
//!   fails alone, its failure made from the failure reserve: nothing
//!   panics twice, and no stack overflow is reported. Passes.
//! - `lost-core`: the firmware lists one core more than the machine has
//!   (the suite gives the PC a MADT with an extra local APIC, and each Pi
//!   a tree whose last core is never released). Starting it gives
//!   `StartCoreError::DidNotArrive` after the kernel's patience, and at
//!   once when asked again; the cores that came run a pool's work. Passes.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::{self, StartCoreError};
use roving::time::Instant;
use roving_kernel::{boot_info, println};
use roving_test_kernels::{every_core_pool, pass, wait_until};

fn main() {
    let case = boot_info().bootarg("faults.case").unwrap_or("none");
    println!("faults: case {case} on {} cores", platform::core_count());
    match case {
        "console" => stuck_console(),
        "lost-core" => lost_core(),
        "oom" => out_of_memory(),
        other => panic!("faults.case={other}: expected console, lost-core or oom"),
    }
    pass("faults");
}

/// Set once core 1 has started the line it never finishes.
static STUCK: AtomicBool = AtomicBool::new(false);

/// A value whose formatting never ends: a writer stuck mid-line.
struct NeverEnds;

impl fmt::Display for NeverEnds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a line that never ends: ")?;
        STUCK.store(true, SeqCst);
        loop {
            core::hint::spin_loop();
        }
    }
}

fn stuck_console() {
    assert!(platform::core_count() >= 2, "the console case needs two cores");
    platform::start_core(1, |_| println!("faults: {NeverEnds}"), 0).expect("core 1 starts");
    wait_until(|| STUCK.load(SeqCst), Duration::from_secs(10), format_args!("core 1 to hold the console"));
    panic!("deliberate panic while core 1 holds the console");
}

fn lost_core() {
    let lost = platform::core_count() - 1;
    let started = Instant::now();
    match platform::start_core(lost, |_| panic!("the lost core ran"), 0) {
        Err(error @ StartCoreError::DidNotArrive { core, .. }) if core == lost => {
            println!("faults: starting core {lost}: {error} (after {:?})", started.elapsed());
        }
        other => panic!("starting core {lost}, which the firmware lists but cannot start: {other:?}"),
    }
    let again = Instant::now();
    let answer = platform::start_core(lost, |_| panic!("the lost core ran"), 0);
    assert!(matches!(answer, Err(StartCoreError::DidNotArrive { .. })), "asked again: {answer:?}");
    assert!(again.elapsed() < Duration::from_millis(100), "asked again, it waited {:?}", again.elapsed());
    let cores: Vec<usize> = (0..lost).collect();
    let pool =
        roving::Pool::with_cores(&cores, roving::Config::new()).expect("a pool of the cores that came");
    let sum = pool
        .run(|| {
            let pool = roving::Pool::current().expect("in the pool");
            let parts: Vec<_> =
                (0..lost).map(|core| pool.future_on(core, move || core + 1).expect("a send")).collect();
            parts.into_iter().map(|part| part.wait().expect("a part")).sum::<usize>()
        })
        .expect("the pool's run");
    assert_eq!(sum, lost * (lost + 1) / 2);
    println!("faults: the {lost} cores that came ran a pool's work");
}

/// Fills the heap with blocks of falling sizes until not even a small one
/// fits; returns them (freeing them frees the heap again).
fn fill_heap() -> Vec<Vec<u8>> {
    let mut ballast: Vec<Vec<u8>> = Vec::new();
    ballast.try_reserve_exact(1 << 16).expect("room to list the ballast");
    for size in [1 << 20, 64 << 10, 4 << 10, 256, 32] {
        while ballast.len() < ballast.capacity() {
            let mut block = Vec::new();
            if block.try_reserve_exact(size).is_err() {
                break;
            }
            ballast.push(block);
        }
    }
    ballast
}

fn out_of_memory() {
    use roving::strand::{self, SpawnError};
    let pool = every_core_pool();
    let spawned = pool
        .run(|| {
            let mut handles = Vec::with_capacity(100_000);
            // A strand that will allocate, infallibly, once the heap is
            // full: it must fail alone.
            let full = alloc::sync::Arc::new(roving::sync::Event::new());
            let greedy = {
                let full = full.clone();
                strand::spawn(move || {
                    full.wait().expect("waiting for a full heap");
                    alloc::vec![1u8; 4096].len()
                })
                .expect("a spawn")
            };
            let mut ballast = fill_heap();
            // Room for a storm of spawns: 256 KiB free again.
            for _ in 0..4 {
                let block =
                    ballast.iter().position(|block| block.capacity() == 64 << 10).expect("64 KiB blocks");
                drop(ballast.swap_remove(block));
            }
            let held: usize = ballast.iter().map(Vec::capacity).sum();
            let refused = loop {
                let spawn = strand::spawn(|| {
                    core::hint::black_box([7u8; 48]).iter().map(|&b| usize::from(b)).sum::<usize>()
                });
                match spawn {
                    Ok(handle) if handles.len() < handles.capacity() => handles.push(handle),
                    Ok(_) => panic!("{} strands spawned in a full heap", handles.len()),
                    Err(error) => break error,
                }
            };
            let out_of_memory = matches!(refused, SpawnError::OutOfMemory(_));
            full.set();
            // Joining allocates nothing (a sleep would: its timer entry).
            let greedy = greedy.join();
            drop(ballast);
            match greedy {
                Err(strand::JoinError::Failed(failure)) => {
                    assert!(
                        failure.message().contains("memory allocation of 4096 bytes failed"),
                        "{failure}"
                    );
                    println!("faults: a strand that allocated in the full heap failed alone: {failure}");
                }
                other => panic!("a strand that allocated in the full heap: {other:?}"),
            }
            let what = alloc::format!("{refused}");
            assert!(out_of_memory, "the spawn failed with {what}");
            let closure = refused.into_inner();
            println!(
                "faults: {} strands spawned into a heap filled with {} KiB, then: {what}",
                handles.len(),
                held >> 10
            );
            let count = handles.len();
            for handle in handles {
                assert_eq!(handle.join().expect("a spawned strand finishes"), 7 * 48);
            }
            let again = strand::spawn(closure).expect("a spawn once memory is free").join().expect("it runs");
            assert_eq!(again, 7 * 48);
            count
        })
        .expect("the pool's run");
    println!("faults: the {spawned} strands finished, and the refused closure ran once memory was free");
}

roving_kernel::entry!(main);
