//! An interactive shell on the serial console: `cargo run --bin shell`,
//! or `make run APP=shell` (any board). Type `help`.
//!
//! It runs as the root strand of a pool of every core. Each line is read
//! with `roving_kernel::serial::read_line`, which blocks the strand (the
//! core sleeps, or runs other strands) until the console's interrupt
//! handler has a line. Commands:
//!
//! | command | what it shows or does |
//! |---|---|
//! | `help` | the commands |
//! | `cores` | every core: interrupts taken, wake-ups answered, sleeps, the longest masked section and handler |
//! | `strands` | the pool's live strands and what each waits for |
//! | `pools` | the shell's pool: each core's tasks, steals, sleeps and wake-ups; the free cores |
//! | `lines` | bound interrupt lines, their cores and counts; serial input counters |
//! | `ping [n]` | `n` round trips (default 1000) to another core through its mailbox |
//! | `sleep <ms>` | sleeps the shell's strand, and says how long it slept |
//! | `echo <text>` | prints the text |
//! | `trace` | the pool's trace so far, as text for `tools/trace` (built with feature `trace`: `make trace APP=shell`) |
//! | `exit [status]` | ends the run |
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::time::Duration;
use roving::pool::StrandInfo;
use roving::time::Instant;
use roving::{Pool, future, platform, strand};
use roving_examples as _;
use roving_kernel::{cores, interrupts, println, serial};

const HELP: &[(&str, &str)] = &[
    ("help", "list the commands"),
    ("cores", "each core's interrupts, wake-ups, sleeps, longest masked section and handler"),
    ("strands", "the pool's live strands and what each waits for"),
    ("pools", "the shell's pool, core by core, and the free cores"),
    ("lines", "bound interrupt lines and serial input"),
    ("ping [n]", "n round trips to another core through its mailbox (default 1000)"),
    ("sleep <ms>", "sleep the shell's strand"),
    ("echo <text>", "print the text"),
    ("trace", "the pool's trace so far, for tools/trace (make trace APP=shell)"),
    ("exit [status]", "end the run"),
];

fn main() {
    interrupts::measure_masking(true);
    let pool = Pool::new().expect("a pool of every core");
    let shell_pool = pool.clone();
    let status = pool.run(move || shell(&shell_pool)).expect("the shell's pool");
    roving_kernel::exit(status);
}

/// Reads and runs commands until `exit`; returns the exit status.
fn shell(pool: &Pool) -> i32 {
    println!("roving shell on {} cores; type help", platform::core_count());
    let mut line = [0u8; 128];
    loop {
        roving_kernel::print!("roving> ");
        let len = match serial::read_line(&mut line) {
            Ok(len) => len,
            Err(lost @ serial::ReadError::Lost { .. }) => {
                println!("\n({lost})");
                continue;
            }
            Err(error) => {
                println!("shell: {error}");
                return 1;
            }
        };
        let Ok(text) = core::str::from_utf8(&line[..len]) else {
            println!("shell: not UTF-8");
            continue;
        };
        let mut words = text.split_ascii_whitespace();
        let Some(command) = words.next() else { continue };
        let rest = text.trim_start().strip_prefix(command).unwrap_or("").trim();
        match command {
            "help" => help(),
            "cores" => show_cores(),
            "strands" => show_strands(pool),
            "pools" => show_pools(pool),
            "lines" => show_lines(),
            "ping" => ping(rest),
            "sleep" => sleep(rest),
            "echo" => println!("{rest}"),
            "trace" => dump_trace(pool),
            "exit" => return rest.parse().unwrap_or(0),
            other => println!("{other}: no such command (help lists them)"),
        }
    }
}

/// Writes the pool's trace to the console, as `tools/trace` reads it.
#[cfg(feature = "trace")]
fn dump_trace(pool: &Pool) {
    struct Console;
    impl core::fmt::Write for Console {
        fn write_str(&mut self, text: &str) -> core::fmt::Result {
            roving_kernel::print!("{text}");
            Ok(())
        }
    }
    if pool.write_trace(&mut Console).is_err() {
        println!("trace: the console refused the dump");
    }
}

#[cfg(not(feature = "trace"))]
fn dump_trace(_: &Pool) {
    println!("trace: this shell was built without tracing; make trace APP=shell builds one with it");
}

fn help() {
    println!("commands:");
    for (command, what) in HELP {
        println!("  {command:<14} {what}");
    }
}

fn show_cores() {
    println!("core  interrupts  unexpected  wakes  light  deep  longest masked  longest handler (cycles)");
    for report in (0..cores::count()).filter_map(cores::report) {
        println!(
            "{:>4}  {:>10}  {:>10}  {:>5}  {:>5}  {:>4}  {:>14}  {:>15}",
            report.index,
            report.interrupts,
            report.unexpected_interrupts,
            report.rings_answered,
            report.light_sleeps,
            report.deep_sleeps,
            report.longest_masked,
            report.longest_handler
        );
    }
}

fn show_strands(pool: &Pool) {
    let strands: Vec<StrandInfo> = pool.strands();
    match strand::current() {
        Some(shell) => println!("{} live strands (this shell is strand {shell}):", strands.len()),
        None => println!("{} live strands:", strands.len()),
    }
    for info in strands {
        let what = match info.blocked {
            None => "running or ready",
            Some(_) if info.cancelled => "blocked, cancelled",
            Some(_) => "blocked",
        };
        match info.blocked {
            Some(reason) => println!("  strand {}: {what} ({reason:?})", info.id),
            None => println!("  strand {}: {what}", info.id),
        }
    }
}

fn show_pools(pool: &Pool) {
    println!(
        "the shell's pool: cores {:?}, {} live strands, stopped: {}",
        pool.cores(),
        pool.live_strands(),
        pool.is_stopped()
    );
    println!("core  tasks run  received  stolen  sleeps  deep  woke others");
    for (core, stats) in pool.cores().into_iter().zip(pool.stats()) {
        println!(
            "{core:>4}  {:>9}  {:>8}  {:>6}  {:>6}  {:>4}  {:>11}",
            stats.tasks_run, stats.received, stats.stolen, stats.sleeps, stats.deep_sleeps, stats.wakeups
        );
    }
    println!("free cores: {:?}", roving::free_cores());
}

fn show_lines() {
    for status in interrupts::bound() {
        let owner = if status.kernel { " (the kernel's: serial input)" } else { "" };
        println!(
            "line {} on core {}: fired {} times{}{}{owner}",
            status.line,
            status.core,
            status.fired,
            if status.masked { ", masked" } else { "" },
            match (status.stormed, status.failed) {
                (true, _) => " (storm)",
                (_, true) => " (its handler failed)",
                _ => "",
            }
        );
    }
    let input = serial::stats();
    let source = match input.line {
        Some(line) => alloc::format!("line {line}"),
        None => "off: the console has no interrupt line".into(),
    };
    println!(
        "serial input ({source}): {} bytes, {} overruns, {} damaged, ring full {} times",
        input.received, input.overruns, input.damaged, input.held_back
    );
}

fn ping(arg: &str) {
    let rounds: usize = if arg.is_empty() { 1000 } else { arg.parse().unwrap_or(0) };
    if rounds == 0 {
        println!("ping: give a number of round trips");
        return;
    }
    let here = platform::current_core().expect("a core");
    let there = (here + 1) % platform::core_count();
    let mut trips = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let sent = platform::ticks();
        let reply = future::future_on(there, platform::current_core).expect("a post to a core of the pool");
        assert_eq!(reply.wait().expect("the reply"), Some(there));
        trips.push(platform::ticks() - sent);
    }
    trips.sort_unstable();
    let ns = |ticks: u64| ticks * 1_000_000_000 / platform::tick_hz();
    println!(
        "ping: {rounds} round trips core {here} -> core {there} -> core {here}: median {} ns, fastest {} ns, slowest {} ns",
        ns(trips[rounds / 2]),
        ns(trips[0]),
        ns(trips[rounds - 1])
    );
}

fn sleep(arg: &str) {
    let Ok(ms) = arg.parse::<u64>() else {
        println!("sleep: give a number of milliseconds");
        return;
    };
    let start = Instant::now();
    match strand::sleep(Duration::from_millis(ms)) {
        Ok(()) => println!("slept {} us", Instant::now().duration_since(start).as_micros()),
        Err(error) => println!("sleep: {error}"),
    }
}

roving_kernel::entry!(main);
