//! Time slices under QEMU (`docs/preemption.md`): in a pool with a 1 ms
//! slice, 8 strands per core spin without yielding while a pair of
//! strands makes `preempt.round_trips` round trips (default 200) over
//! channels (each spinner's share of the rounds printed, and every one
//! must have run); strands on
//! shared fibres check stack patterns through preemptions and copy-swaps;
//! strands allocate and free small blocks, checking each, through
//! preemptions inside the kernel heap;
//! strands keep values in every vector register across preemptions; a
//! strand preempted with 2 KiB of stack left goes on;
//! cancelled strands that compute end (spinners stopped, a checker's
//! `checkpoint` returning `Interrupted`, a shielded strand left alone
//! until its shield drops); spinners at each priority level share the
//! cores by weight; a strand woken by the test line's handler runs at
//! once at `High` and after a slice at `Normal`; and, with 2 cores or
//! more, core 0 destroys a pool of the others whose strands spin forever.
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
use roving::strand::Priority;
use roving::time::Instant;
use roving::{Config, Pool, platform};
use roving_kernel::interrupts::{self, Handled};
use roving_kernel::println;
use roving_test_kernels::{TestLine, bootarg_u64, expected_cores, pass};

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

        // The kernel heap's per-core lists, used by strands that are
        // preempted inside the allocator and resumed on other cores.
        let strands = 4 * cores as u64;
        let (blocks, preempted) =
            preempt_cases::allocations_under_preemption(&pool, strands, Duration::from_millis(500));
        assert!(blocks.iter().all(|&b| b > 0), "a strand freed no block: {blocks:?}");
        assert!(preempted > 20, "only {preempted} preemptions of the allocating strands");
        println!(
            "preempt: {strands} strands freed {} blocks through {preempted} preemptions, every block intact",
            blocks.iter().sum::<u64>()
        );

        let (kept, preempted) = preempt_cases::vector_registers(&pool, 2 * cores as u64, 2_500_000);
        assert!(kept.iter().all(|&k| k == preempt_cases::VECTOR_REGISTERS), "vector registers lost: {kept:?}");
        println!("preempt: every vector register intact through {preempted} preemptions");

        // The entry's frame takes under a kilobyte: what is left is under
        // the 4 KiB the preempted strand's own look needs, and more than
        // the way through the loop takes.
        let deep = preempt_cases::spinning_near_the_stack_bottom(&pool, cores as u64, 2048, 50);
        assert!(deep.rounds > 0 && deep.preempted > 0, "the deep strand spun {} rounds, {} preemptions", deep.rounds, deep.preempted);
        println!(
            "preempt: a strand with {} bytes of stack left, preempted with the rest {} times, spun on",
            deep.room, deep.preempted
        );

        let shares = preempt_cases::levels_share(cores as u64, Duration::from_millis(300));
        let total: u64 = shares.iter().sum();
        println!(
            "preempt: {cores} spinners per level: Low {:.1}%, Normal {:.1}%, High {:.1}% of the rounds",
            shares[0] as f64 * 100.0 / total as f64,
            shares[1] as f64 * 100.0 / total as f64,
            shares[2] as f64 * 100.0 / total as f64
        );
        assert!(shares.iter().all(|&r| r > 0), "a priority level starved: {shares:?}");
        assert!(shares[2] > shares[0], "High got less than Low: {shares:?}");

        interrupt_wakes(cores);

        let held = preempt_cases::held_off(&pool, Duration::from_millis(1));
        assert_eq!(held.rounds_while_held, 0, "a tick preempted a strand holding preemption off");
        let after = held.ran_after.expect("the spinner never ran after the hold ended");
        println!(
            "preempt: a strand holding preemption off kept its core for 50 slices; a tick took it {} us after",
            after.as_micros()
        );

    })
    .expect("the pool runs");
    cancels(cores);
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
    // Strands stopped while computing, alone on their fibres, left them
    // quarantined; this kernel keeps no pointer into their stacks.
    let quarantined = roving::strand::usage().fibres_quarantined;
    // SAFETY: nothing here points into a stopped strand's stack.
    let released = unsafe { roving::strand::release_quarantined_fibres() };
    assert_eq!(released, quarantined, "quarantined fibres not all given back");
    assert_eq!(roving::strand::usage().fibres_quarantined, 0);
    println!("preempt: {quarantined} fibres quarantined by strands stopped while computing, given back");
    pass("preempt");
}

/// Cancels of strands that compute, in a pool with 20 ms slices: the
/// grace a cancelled strand gets to reach a checkpoint is a slice of the
/// clock, and QEMU's cores are host threads that a busy host can stop for
/// longer than 1 ms (a checker given 1 ms slices was once stopped before
/// its next checkpoint here).
fn cancels(cores: usize) {
    let pool =
        Pool::with_config(Config::new().time_slice(Duration::from_millis(20))).expect("a preempting pool");
    let cancelled = pool
        .run(|| preempt_cases::cancel_computing(2 * cores, Duration::from_millis(20)))
        .expect("the pool runs");
    assert_eq!(cancelled.stopped, 2 * cores, "spinners not reported stopped by their cancel");
    assert!(cancelled.checkpoint_returned, "the checker did not return Interrupted from checkpoint");
    assert!(cancelled.shield_held, "the shielded strand was stopped inside its shield, or not at all");
    println!(
        "preempt: {} cancelled spinners, a checker and a shielded strand all ended in {} ms (20 ms slices)",
        2 * cores,
        cancelled.took.as_millis()
    );
}

/// The test line's handler stamps and signals the waiting strand.
fn on_test_line(_line: u32) -> Handled {
    if TestLine::new().quiet() {
        preempt_cases::FIRED_AT.store(platform::ticks(), SeqCst);
        preempt_cases::WAKE.signal();
    }
    Handled::Yes
}

/// A strand woken by an interrupt handler (the test line, on core 0)
/// while every core spins, at `High` and at `Normal`: the latencies are
/// printed (the bound is checked under -icount, by `slice_cost`).
fn interrupt_wakes(cores: usize) {
    let test = TestLine::new();
    // On the Pi 3 every line goes where the console's does.
    let console = interrupts::line_of("console").expect("the console has a line");
    interrupts::route(console, 0).expect("routing the console's line");
    interrupts::bind(test.line, 0, on_test_line).expect("binding the test line");
    let fire = || TestLine::new().fire();
    let gap = Duration::from_micros(200);
    let high = preempt_cases::wake_latencies(Priority::High, 2 * cores, 100, gap, fire);
    let normal = preempt_cases::wake_latencies(Priority::Normal, 2 * cores, 100, gap, fire);
    // The wake lands on a core whose strand spawns and joins, using its
    // core's queues under deferral: a handler that queues the woken strand
    // on the core it interrupted must leave them intact (every child's
    // result is checked, and every round must end).
    let (beside_spawners, children) =
        preempt_cases::wake_latencies_beside_spawners(Priority::High, 2 * cores, 100, gap / 4, fire);
    assert_eq!(beside_spawners.len(), 100, "a wake was lost");
    assert!(children.iter().all(|&c| c > 0), "a spawner never ran: {children:?}");
    interrupts::unbind(test.line).expect("unbinding the test line");
    let slice = platform::tick_hz() / 1000;
    let (high_median, normal_median) = (preempt_cases::median(&high), preempt_cases::median(&normal));
    println!(
        "preempt: handler entry to the woken strand, beside {} spinners: High median {high_median} ticks (max {}), Normal median {normal_median} (max {}); a slice is {slice}",
        2 * cores,
        high.iter().max().copied().unwrap_or(0),
        normal.iter().max().copied().unwrap_or(0)
    );
    println!(
        "preempt: beside {} strands spawning and joining: High median {} ticks, {} children joined",
        2 * cores,
        preempt_cases::median(&beside_spawners),
        children.iter().sum::<u64>()
    );
    // Not checked here: QEMU's cores are host threads, and on a busy host
    // a core cannot take its interrupt while its thread waits for a CPU.
    // A fresh-clone make test saw a High median of 342,648 ticks (5.5
    // slices) at 2 cores while another board's runs shared the host. The
    // bound is checked for every sample under -icount by the slice_cost
    // kernel, and High against Normal by the host test (20 ms slices).
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
