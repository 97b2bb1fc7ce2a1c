//! Time slices under QEMU (`docs/preemption.md`): in a pool with a 1 ms
//! slice, 8 strands per core spin without yielding while a pair of
//! strands makes `preempt.round_trips` round trips (default 200) over
//! channels (each spinner's share of the rounds printed, and every one
//! must have run); strands on
//! shared fibres check stack patterns through preemptions and copy-swaps;
//! strands keep values in every vector register across preemptions;
//! cancelled strands that compute end (spinners stopped, a checker's
//! `checkpoint` returning `Interrupted`, a shielded strand left alone
//! until its shield drops); and, with 2 cores or more, core 0 destroys a
//! pool of the others whose strands spin forever.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/preempt_cases.rs"]
mod preempt_cases;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::time::Instant;
use roving::{Config, Pool, platform};
use roving_kernel::println;
use roving_test_kernels::{self as _, bootarg_u64, expected_cores, pass};

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    no_ticks_without_a_slice(cores);
    let pool =
        Pool::with_config(Config::new().time_slice(Duration::from_millis(1))).expect("a preempting pool");
    pool.run(|| {
        let spinners = 8 * cores;
        let round_trips = bootarg_u64("preempt.round_trips", 200) as u32;
        let ticks_before: u64 = timer_interrupts(cores).iter().sum();
        let sharing = preempt_cases::spinners_beside_a_pair(&pool, spinners, round_trips, Duration::from_millis(300));
        // Each preemption came from a tick: the counter the cooperative
        // pool's check reads does count them.
        let ticks = timer_interrupts(cores).iter().sum::<u64>() - ticks_before;
        assert!(ticks >= sharing.preempted, "{ticks} timer interrupts for {} preemptions", sharing.preempted);
        let total: u64 = sharing.rounds.iter().sum();
        let mut shares = String::new();
        for rounds in &sharing.rounds {
            let _ = write!(shares, " {:.1}%", *rounds as f64 * 100.0 / total as f64);
        }
        println!(
            "preempt: {round_trips} round trips in {} ms beside {spinners} spinners, {} preemptions; shares:{shares}",
            sharing.pair_time.as_millis(),
            sharing.preempted
        );
        assert!(sharing.preempted > 0, "no strand was preempted");
        // Every spinner got the CPU. How fairly is printed, not checked:
        // QEMU's cores are host threads, and a host with fewer CPUs than
        // cores runs some of them less (the host test checks fairness).
        assert!(sharing.rounds.iter().all(|&r| r > 0), "a spinner never ran");
        println!("preempt: the worst spinner got {:.2} of a fair share", sharing.worst_share());

        let (checks, preempted) = preempt_cases::stacks_on_shared_fibres(&pool, 100, Duration::from_millis(500));
        assert!(checks.iter().sum::<u64>() > 0, "no stack was checked");
        assert!(preempted > 20, "only {preempted} preemptions of the checking strands");
        println!("preempt: 100 strands on shared fibres, {preempted} preemptions, every stack intact");

        let (kept, preempted) = preempt_cases::vector_registers(&pool, 2 * cores as u64, 5_000_000);
        assert!(kept.iter().all(|&k| k == preempt_cases::VECTOR_REGISTERS), "vector registers lost: {kept:?}");
        println!("preempt: every vector register intact through {preempted} preemptions");

        let cancelled = preempt_cases::cancel_computing(2 * cores, Duration::from_millis(20));
        assert_eq!(cancelled.stopped, 2 * cores, "spinners not reported stopped by their cancel");
        assert!(cancelled.checkpoint_returned, "the checker did not return Interrupted from checkpoint");
        assert!(cancelled.shield_held, "the shielded strand was stopped inside its shield, or not at all");
        println!(
            "preempt: {} cancelled spinners, a checker and a shielded strand all ended in {} ms",
            2 * cores,
            cancelled.took.as_millis()
        );
    })
    .expect("the pool runs");
    if cores >= 2 {
        // Core 0 destroys a pool of the other cores whose strands spin forever.
        let main = Pool::with_cores(&[0], Config::new()).expect("a pool on core 0");
        let others: Vec<usize> = (1..cores).collect();
        let destroyed = main
            .run(|| preempt_cases::destroy_spinning(&others, Duration::from_millis(1)))
            .expect("the pool on core 0 runs");
        assert_eq!(destroyed.stopped, destroyed.strands, "strands not reported stopped");
        println!(
            "preempt: destroy of a pool of {} strands spinning forever returned in {} ms, every strand stopped",
            destroyed.strands,
            destroyed.took.as_millis()
        );
    }
    pass("preempt");
}

/// A cooperative pool keeps every core busy for 50 ms: no core takes a
/// timer interrupt meanwhile (tickless: nothing asks for one).
fn no_ticks_without_a_slice(cores: usize) {
    let pool = Pool::new().expect("a cooperative pool");
    let ticks = pool
        .run(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let started = Arc::new(AtomicUsize::new(1));
            let pool = Pool::current().expect("in the pool");
            for core in 1..cores {
                let (stop, started) = (stop.clone(), started.clone());
                pool.post(core, move || {
                    started.fetch_add(1, SeqCst);
                    preempt_cases::spin_until(&stop);
                })
                .expect("a busy task");
            }
            while started.load(SeqCst) < cores {
                core::hint::spin_loop();
            }
            let before = timer_interrupts(cores);
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(50) {
                core::hint::spin_loop();
            }
            let after = timer_interrupts(cores);
            stop.store(true, SeqCst);
            after.iter().zip(&before).map(|(a, b)| a - b).collect::<Vec<u64>>()
        })
        .expect("the cooperative pool runs");
    assert!(ticks.iter().all(|&t| t == 0), "timer interrupts on busy cores of a cooperative pool: {ticks:?}");
    println!("preempt: a cooperative pool kept {cores} cores busy for 50 ms: no timer interrupt on any");
}

fn timer_interrupts(cores: usize) -> Vec<u64> {
    (0..cores).map(|core| roving_kernel::cores::report(core).expect("a core").timer_interrupts).collect()
}

roving_kernel::entry!(main);
