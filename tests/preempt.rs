//! Time slicing on the host: strands that never yield share their cores,
//! with their stacks and vector registers intact (`roving::preempt`).
#![cfg(feature = "std")]

mod support;

use roving::platform::host::Machine;
use roving::sync::channel;
use roving::{Config, Pool, PoolError, strand};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};
use support::{with_turn, with_watchdog};

const SLICE: Duration = Duration::from_millis(1);

/// Runs `main` as the root strand of a pool of `cores` cores with a 1 ms
/// time slice; `None` where this host cannot preempt (under a sanitizer).
fn on_preempting_pool<R: Send>(cores: usize, main: impl FnOnce(&Pool) -> R + Send) -> Option<R> {
    with_turn(|| {
        with_watchdog(Duration::from_secs(120), "a preempting pool", || {
            Machine::new(cores)
                .unwrap()
                .run(|| match Pool::with_config(Config::new().time_slice(SLICE)) {
                    Ok(pool) => Some(pool.run(|| main(&pool)).unwrap()),
                    Err(PoolError::CannotPreempt) => None,
                    Err(other) => panic!("{other}"),
                })
                .unwrap()
        })
    })
}

/// Spins without yielding, blocking or calling roving, until `stop`;
/// returns how many rounds it made.
fn spin_until(stop: &AtomicBool) -> u64 {
    let mut rounds = 0u64;
    while !stop.load(SeqCst) {
        rounds = std::hint::black_box(rounds + 1);
    }
    rounds
}

#[test]
fn spinners_share_their_cores_and_a_ping_pong_pair_keeps_moving() {
    const CORES: usize = 2;
    const SPINNERS: usize = 8 * CORES;
    const ROUND_TRIPS: u32 = 200;
    let Some((pair_time, shares, preempted)) = on_preempting_pool(CORES, |pool| {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicU64::new(0));
        let spinners: Vec<_> = (0..SPINNERS)
            .map(|_| {
                let (stop, started) = (stop.clone(), started.clone());
                strand::spawn(move || {
                    started.fetch_add(1, SeqCst);
                    spin_until(&stop)
                })
                .unwrap()
            })
            .collect();
        // The pair: every message is answered, each a wait on a channel.
        let start = Instant::now();
        let (to_echo, echo_in) = channel::bounded::<u32>(1).unwrap();
        let (to_main, main_in) = channel::bounded::<u32>(1).unwrap();
        let echo = strand::spawn(move || {
            while let Ok(n) = echo_in.recv() {
                to_main.send(n + 1).unwrap();
            }
        })
        .unwrap();
        for n in 0..ROUND_TRIPS {
            to_echo.send(n).unwrap();
            assert_eq!(main_in.recv().unwrap(), n + 1);
        }
        let pair_time = start.elapsed();
        drop(to_echo);
        echo.join().unwrap();
        // Every spinner got a core while the others spun.
        while started.load(SeqCst) < SPINNERS as u64 {
            strand::sleep(Duration::from_millis(1)).unwrap();
        }
        strand::sleep(Duration::from_millis(200)).unwrap();
        stop.store(true, SeqCst);
        let rounds: Vec<u64> = spinners.into_iter().map(|s| s.join().unwrap()).collect();
        let total: u64 = rounds.iter().sum();
        let shares: Vec<f64> = rounds.iter().map(|&r| r as f64 / total as f64).collect();
        let preempted: u64 = pool.stats().iter().map(|s| s.preempted).sum();
        (pair_time, shares, preempted)
    }) else {
        eprintln!("this host cannot preempt (a sanitizer build): skipped");
        return;
    };
    eprintln!(
        "ping-pong: {ROUND_TRIPS} round trips in {pair_time:?} beside {SPINNERS} spinners; {preempted} preemptions; \
         spinner shares of the rounds: {}",
        shares.iter().map(|s| format!("{:.1}%", s * 100.0)).collect::<Vec<_>>().join(" ")
    );
    assert!(pair_time < Duration::from_secs(20), "the pair took {pair_time:?}");
    assert!(preempted > 0, "no strand was preempted");
    // Fair shares would be 1/16 each; none may starve.
    let fair = 1.0 / SPINNERS as f64;
    for share in &shares {
        assert!(
            *share > fair / 4.0,
            "a spinner got {:.2}% of the rounds (fair: {:.2}%)",
            share * 100.0,
            fair * 100.0
        );
    }
}

#[test]
fn a_cooperative_pool_never_preempts() {
    let preempted = with_turn(|| {
        with_watchdog(Duration::from_secs(60), "a cooperative pool", || {
            Machine::new(2)
                .unwrap()
                .run(|| {
                    let pool = Pool::new().unwrap();
                    pool.run(|| {
                        // Each spins 50 ms by the clock: cooperatively, nothing
                        // else could run on its core to stop it.
                        let spinners: Vec<_> = (0..2)
                            .map(|_| {
                                strand::spawn(|| {
                                    let start = Instant::now();
                                    while start.elapsed() < Duration::from_millis(50) {
                                        std::hint::spin_loop();
                                    }
                                })
                                .unwrap()
                            })
                            .collect();
                        spinners.into_iter().for_each(|s| s.join().unwrap());
                    })
                    .unwrap();
                    pool.stats().iter().map(|s| s.preempted).sum::<u64>()
                })
                .unwrap()
        })
    });
    assert_eq!(preempted, 0);
}

#[test]
fn a_time_slice_out_of_range_is_refused() {
    for slice in [Duration::from_micros(10), Duration::from_secs(11)] {
        let result =
            Machine::new(1).unwrap().run(|| Pool::with_config(Config::new().time_slice(slice)).err());
        assert_eq!(result.unwrap(), Some(PoolError::TimeSliceOutOfRange { slice }));
    }
}

/// Fills a stack array with a pattern from `seed`, then checks it over and
/// over without yielding until `stop`; returns how many checks passed
/// (panics at the first damaged word).
fn check_stack_until(seed: u64, stop: &AtomicBool) -> u64 {
    let mut words = [0u64; 256];
    for (i, word) in words.iter_mut().enumerate() {
        *word = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64);
    }
    let mut checks = 0;
    while !stop.load(SeqCst) {
        let words = std::hint::black_box(&words);
        for (i, word) in words.iter().enumerate() {
            assert_eq!(
                *word,
                seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64),
                "strand {seed}, word {i}"
            );
        }
        checks += 1;
    }
    checks
}

#[test]
fn stacks_survive_preemption_on_shared_fibres() {
    // More strands than fibres: most share a fibre and are copied off it
    // and back when another one of its strands is preempted in.
    const STRANDS: u64 = 150;
    let Some((checks, preempted)) = on_preempting_pool(2, |pool| {
        let stop = Arc::new(AtomicBool::new(false));
        let strands: Vec<_> = (0..STRANDS)
            .map(|seed| {
                let stop = stop.clone();
                strand::spawn(move || check_stack_until(seed, &stop)).unwrap()
            })
            .collect();
        strand::sleep(Duration::from_millis(1500)).unwrap();
        stop.store(true, SeqCst);
        let checks: Vec<u64> = strands.into_iter().map(|s| s.join().unwrap()).collect();
        (checks, pool.stats().iter().map(|s| s.preempted).sum::<u64>())
    }) else {
        return;
    };
    eprintln!("{STRANDS} strands, {preempted} preemptions, every stack intact");
    assert!(preempted > 100, "only {preempted} preemptions");
    assert!(checks.iter().all(|&c| c > 0), "a strand never ran: {checks:?}");
}

/// Puts `seed + i` in both halves of vector register `xmm{i}` for every
/// `i`, spins `rounds` times touching none of them, then returns how many
/// registers still hold their values.
#[cfg(target_arch = "x86_64")]
fn vector_registers_kept(seed: u64, rounds: u64) -> u32 {
    let kept: u64;
    // SAFETY: only registers, declared clobbered; no memory.
    unsafe {
        core::arch::asm!(
            "mov rax, {seed}",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
            "movq xmm\\n, rax",
            "punpcklqdq xmm\\n, xmm\\n",
            "inc rax",
            ".endr",
            "2:",
            "dec {rounds}",
            "jnz 2b",
            "xor {kept}, {kept}",
            "mov rax, {seed}",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
            "movq rdx, xmm\\n",
            "pextrq rcx, xmm\\n, 1",
            "cmp rdx, rax",
            "jne 3f",
            "cmp rcx, rax",
            "jne 3f",
            "inc {kept}",
            "3:",
            "inc rax",
            ".endr",
            seed = in(reg) seed,
            rounds = inout(reg) rounds => _,
            kept = out(reg) kept,
            out("rax") _, out("rcx") _, out("rdx") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(nomem, nostack),
        );
    }
    kept as u32
}

#[cfg(target_arch = "x86_64")]
#[test]
fn vector_registers_survive_preemption() {
    const STRANDS: u64 = 8;
    let Some((kept, preempted)) = on_preempting_pool(2, |pool| {
        let strands: Vec<_> = (0..STRANDS)
            .map(|i| {
                strand::spawn(move || (0..4).map(|_| vector_registers_kept(i << 32, 30_000_000)).min())
                    .unwrap()
            })
            .collect();
        let kept: Vec<_> = strands.into_iter().map(|s| s.join().unwrap().unwrap()).collect();
        (kept, pool.stats().iter().map(|s| s.preempted).sum::<u64>())
    }) else {
        return;
    };
    eprintln!("{STRANDS} strands checking xmm0-xmm15: {preempted} preemptions");
    assert!(preempted > 10, "only {preempted} preemptions");
    assert!(kept.iter().all(|&k| k == 16), "registers lost: {kept:?}");
}
