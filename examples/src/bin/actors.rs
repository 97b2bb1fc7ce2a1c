//! Actors: eight counters take increments from tasks on every core, and a
//! console actor pinned to core 0 prints what they report (the way a
//! device driver stays on the core that owns its device). Nobody shuts the
//! pool down: once every actor has drained and gone dormant, the pool is
//! quiescent and `run` returns.
//!
//! `cargo run -p roving-examples --bin actors` (QEMU virt, 4 cores)
#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};
use roving::Pool;
use roving::actor::{Actor, ActorContext, Addr};
use roving_examples as _;
use roving_kernel::println;

/// Prints lines, always from its own core.
struct Console;

impl Actor for Console {
    type Message = String;
    fn handle(&mut self, line: String, context: &mut ActorContext<'_, Self>) {
        println!("actors: [core {}] {line}", context.core());
    }
}

/// Adds up what it is sent; reports the total when stopped.
struct Counter {
    name: usize,
    total: u64,
    console: Addr<Console>,
}

impl Actor for Counter {
    type Message = u64;
    fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
        self.total += n;
    }
    fn stopped(&mut self) {
        let line = format!("counter {} stopped at {}", self.name, self.total);
        self.console.send(line).expect("the console outlives the counters");
    }
}

const COUNTERS: usize = 8;
const PER_CORE: u64 = 1_000;

fn main() {
    let pool = Pool::new().expect("a pool of every core");
    let console = pool.spawn_actor_on(0, Console).expect("core 0 is in the pool");
    let counters: Vec<_> = (0..COUNTERS)
        .map(|name| pool.spawn_actor(Counter { name, total: 0, console: console.clone() }))
        .collect();
    let cores = pool.core_count();
    let sending = Arc::new(AtomicUsize::new(cores));
    pool.run(|| {
        for core in 0..cores {
            let (counters, sending) = (counters.clone(), sending.clone());
            // Every core sends 1..=PER_CORE to every counter, in order;
            // the last core to finish stops them. Each handles what it
            // was sent before its `stopped` hook reports.
            roving::post(core, move || {
                for n in 1..=PER_CORE {
                    counters.iter().for_each(|counter| counter.send(n).expect("counters run until stopped"));
                }
                if sending.fetch_sub(1, Ordering::AcqRel) == 1 {
                    for counter in &counters {
                        counter.stop();
                    }
                }
            })
            .expect("every core is in the pool");
        }
        console.send(format!("{COUNTERS} counters, {cores} cores sending")).expect("the console runs");
    })
    .expect("the pool runs");
    println!(
        "actors: the pool went quiescent; each counter should have stopped at {}",
        cores as u64 * PER_CORE * (PER_CORE + 1) / 2
    );
}

roving_kernel::entry!(main);
