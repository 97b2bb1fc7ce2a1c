//! A kernel of its own that embeds roving, from scratch: no
//! `roving-kernel`, no board crate, only the `Platform` trait
//! (`platform.rs`). It boots on QEMU virt (`tools/qemu-run`, 4 cores),
//! and `make test` runs it. `docs/embedding.md` is the checklist that each
//! part of it follows:
//!
//! - `boot.rs`: EL2 to EL1, FP/SIMD on, a stack per core, `.bss` zeroed;
//! - `mmu.rs`: RAM as normal cacheable memory, before the first atomic;
//! - `platform.rs`: the `Platform` implementation;
//! - `exceptions.rs`: faults reported, not hung on;
//! - this file: the heap, the panic handler, and a program that uses a
//!   pool, strands, a channel, `join` and a sleep, and checks each.
#![no_std]
#![no_main]

extern crate alloc;

mod boot;
mod console;
mod exceptions;
mod mmu;
mod platform;

use alloc::vec::Vec;
use core::time::Duration;
use linked_list_allocator::LockedHeap;
use roving::strand::JoinError;
use roving::sync::channel;
use roving::time::Instant;
use roving::{Pool, join, strand};

/// Bytes of heap: roving's pools, strand blocks beyond each core's cache,
/// and the program's own vectors.
const HEAP_BYTES: usize = 8 << 20;

#[global_allocator]
static HEAP: LockedHeap = LockedHeap::empty();

static mut HEAP_SPACE: [u8; HEAP_BYTES] = [0; HEAP_BYTES];

// tools/qemu-run boots an image on the machine it names this way.
#[used]
#[unsafe(link_section = ".rodata")]
static QEMU_MACHINE: [u8; 25] = *b"roving-qemu-machine=virt\0";

/// Core 0, with its MMU on: the heap, then a pool of every core.
fn kernel_main() -> ! {
    // SAFETY: the heap space is used by nothing else, and this runs once,
    // before anything allocates.
    unsafe { HEAP.lock().init((&raw mut HEAP_SPACE).cast(), HEAP_BYTES) };
    let pool = match Pool::new() {
        Ok(pool) => pool,
        Err(error) => fail(format_args!("no pool: {error}")),
    };
    println!("embed: a pool of {} cores; heap in use {} KiB", pool.core_count(), HEAP.lock().used() / 1024);
    match pool.run(|| program(&pool)) {
        Ok(()) => {
            println!("embed: heap in use after the run {} KiB", HEAP.lock().used() / 1024);
            println!("embed: every check passed");
            console::exit(0)
        }
        Err(error) => fail(format_args!("the program failed: {error}")),
    }
}

fn fail(why: core::fmt::Arguments<'_>) -> ! {
    println!("embed: {why}");
    console::exit(1)
}

/// The program: runs as the pool's root strand on core 0.
fn program(pool: &Pool) {
    every_core_answers(pool);
    strands_and_join();
    sleep_keeps_time();
    a_panic_fails_one_strand();
}

/// A task posted to each core reports where it ran: every core started,
/// and mail reaches it.
fn every_core_answers(pool: &Pool) {
    let cores = pool.cores();
    let (tx, rx) = channel::bounded(cores.len()).expect("a capacity above zero");
    for &core in &cores {
        let tx = tx.clone();
        let answer = move || tx.try_send(roving::platform::current_core()).expect("room for every answer");
        if pool.post(core, answer).is_err() {
            fail(format_args!("core {core} refused a task"));
        }
    }
    let mut answered: Vec<usize> =
        (0..cores.len()).map(|_| rx.recv().expect("every task answers").expect("on a core")).collect();
    answered.sort_unstable();
    assert_eq!(answered, cores, "each core answers once, from itself");
    println!("embed: cores {answered:?} each ran a task");
}

fn fib(n: u32) -> u64 {
    if n < 12 {
        return if n < 2 { n as u64 } else { fib(n - 1) + fib(n - 2) };
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// More strands than cores, each forking with `join`, reporting over a
/// channel and joined.
fn strands_and_join() {
    const STRANDS: u32 = 16;
    let (tx, rx) = channel::bounded(4).expect("a capacity above zero");
    let strands: Vec<_> = (0..STRANDS)
        .map(|i| {
            let tx = tx.clone();
            strand::spawn(move || {
                let n = 16 + i % 4;
                tx.send((n, fib(n))).expect("the receiver is alive");
                roving::platform::current_core()
            })
            .expect("a fibre for each strand")
        })
        .collect();
    for _ in 0..STRANDS {
        let (n, value) = rx.recv().expect("every strand reports");
        assert_eq!(value, [987, 1597, 2584, 4181][n as usize - 16], "fib({n})");
    }
    let mut ran_on: Vec<usize> =
        strands.into_iter().filter_map(|s| s.join().expect("no strand fails")).collect();
    ran_on.sort_unstable();
    ran_on.dedup();
    println!("embed: {STRANDS} strands computed fib with join, finishing on cores {ran_on:?}");
}

/// A strand's sleep ends after its deadline: the platform's ticks and
/// timed waits agree.
fn sleep_keeps_time() {
    let start = Instant::now();
    strand::sleep(Duration::from_millis(20)).expect("not cancelled");
    let slept = start.elapsed();
    assert!(slept >= Duration::from_millis(20), "slept {slept:?}");
    println!("embed: a 20 ms sleep took {} us", slept.as_micros());
}

/// A panicking strand fails alone; its joiner gets the failure.
fn a_panic_fails_one_strand() {
    let doomed = strand::spawn(|| -> u32 { panic!("on purpose") }).expect("a fibre");
    match doomed.join() {
        Err(JoinError::Failed(failure)) => {
            println!("embed: a strand's panic came back to its joiner: {failure}")
        }
        other => fail(format_args!("a panicking strand joined as {:?}", other.map_err(|_| ()))),
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    if roving::strand::current().is_some() {
        // Returns only if the strand cannot be failed (it was finishing).
        roving::platform::hooks::fail_running(info);
    }
    if roving::platform::hooks::running_task() {
        roving::platform::hooks::fail_running_task(info);
    }
    console::emergency(format_args!("*** panic on core {:?}: {info}\n", roving::platform::current_core()));
    console::exit(101)
}
