//! `Pool::dump_strands` while the pool runs: strands blocked in several
//! ways (three on one mutex, two asleep, one joining another that waits
//! for an event, more strands than fibres so that some stacks are copied
//! out), and the root running; each line says what the strand does.
#![cfg(feature = "std")]

mod support;

use roving::Pool;
use roving::strand::{self, JoinHandle, StrandId, sizes};
use roving::sync::{Event, Mutex};
use std::sync::Arc;
use std::time::Duration;

/// Yields until `pool` has `count` blocked strands; returns its dump.
fn dump_when_blocked(pool: &Pool, count: usize) -> String {
    loop {
        let blocked = pool.strand_reports().iter().filter(|strand| strand.waiting().is_some()).count();
        if blocked >= count {
            let mut text = String::new();
            pool.dump_strands(&mut text).expect("a String takes any text");
            return text;
        }
        strand::yield_now().expect("the root is a strand");
    }
}

/// The line of `strand` in `dump`.
fn line_of(dump: &str, strand: StrandId) -> &str {
    let name = format!("strand {strand} ");
    dump.lines()
        .find(|line| line.trim_start().starts_with(&name))
        .unwrap_or_else(|| panic!("no {name}in:\n{dump}"))
}

#[test]
fn a_dump_says_what_each_live_strand_does() {
    support::run_pool(2, |pool| {
        let mutex = Arc::new(Mutex::new(0u32));
        let held = mutex.lock().expect("the root takes the mutex");
        let lockers: Vec<JoinHandle<()>> = (0..3)
            .map(|_| {
                let mutex = mutex.clone();
                strand::spawn(move || *mutex.lock().expect("the lock") += 1).expect("a fibre")
            })
            .collect();
        let sleepers: Vec<JoinHandle<()>> = (0..2)
            .map(|_| {
                strand::spawn(|| {
                    let _ = strand::sleep(Duration::from_secs(600));
                })
                .expect("a fibre")
            })
            .collect();
        let go = Arc::new(Event::new());
        let waiting = go.clone();
        let joiner = strand::spawn(move || {
            let child = strand::spawn(move || waiting.wait().expect("the event")).expect("a fibre");
            let child_id = child.id();
            child.join().expect("the child ends");
            child_id
        })
        .expect("a fibre");
        // More strands than fibres: some share one, their stacks
        // copied out while another is resident.
        let crowd: Vec<JoinHandle<()>> = (0..sizes::FIBRES + 4)
            .map(|_| {
                let go = go.clone();
                strand::spawn(move || go.wait().expect("the event")).expect("memory for a strand")
            })
            .collect();
        let blocked = 3 + 2 + 2 + crowd.len();
        let dump = dump_when_blocked(pool, blocked);

        let first = dump.lines().next().expect("a line for the pool");
        assert!(first.starts_with("pool at 0x"), "{dump}");
        assert!(first.ends_with(&format!("{} live strands", blocked + 1)), "{dump}");
        let root = line_of(&dump, strand::current().expect("the root is a strand"));
        assert!(root.contains("runs or is ready to run (last on core"), "{root}");
        for locker in &lockers {
            let line = line_of(&dump, locker.id());
            assert!(line.contains("waits for the mutex at 0x"), "{line}");
            assert!(!line.contains("held by"), "a live dump does not read the holder: {line}");
        }
        for sleeper in &sleepers {
            assert!(line_of(&dump, sleeper.id()).contains("waits (Sleeping)"), "{dump}");
        }
        let joiner_line = line_of(&dump, joiner.id());
        assert!(joiner_line.contains("waits to join strand #"), "{joiner_line}");
        for line in dump.lines().skip(1) {
            assert!(line.contains("; fibre ") && line.contains("; priority Normal"), "{line}");
        }
        let copied = dump.lines().filter(|line| line.contains(", copied out;")).count();
        assert!(
            copied >= 4,
            "{} strands, {} fibres, {copied} copied out:\n{dump}",
            blocked + 1,
            sizes::FIBRES
        );

        drop(held);
        go.set();
        for sleeper in &sleepers {
            sleeper.cancel().expect("a live strand");
        }
        lockers.into_iter().for_each(|locker| locker.join().expect("locked and ended"));
        sleepers.into_iter().for_each(|sleeper| drop(sleeper.join()));
        let child_id = joiner.join().expect("joined its child");
        assert!(joiner_line.contains(&format!("waits to join strand {child_id}")), "{joiner_line}");
        crowd.into_iter().for_each(|strand| strand.join().expect("woken"));
        assert_eq!(*mutex.lock().expect("the lock"), 3);
        let mut after = String::new();
        pool.dump_strands(&mut after).expect("text");
        assert!(after.lines().next().expect("a line").ends_with(": 1 live strands"), "{after}");
    })
    .expect("the pool runs");
}

/// Dumps taken over and over from a thread outside the pool while strands
/// are spawned, lock, sleep, block and finish on every core: every dump
/// must be whole (a line per strand it counts, each saying what its
/// strand does), however the strands move while it is read.
#[test]
fn dumps_while_strands_come_and_go() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    support::run_pool(3, |pool| {
        let done = Arc::new(AtomicBool::new(false));
        let watched = pool.clone();
        let stop = done.clone();
        let dumper = std::thread::spawn(move || {
            let mut dumps = 0;
            while !stop.load(SeqCst) {
                let mut text = String::new();
                watched.dump_strands(&mut text).expect("text");
                let mut lines = text.lines();
                let head = lines.next().expect("a line for the pool");
                let count: usize = head
                    .rsplit(": ")
                    .next()
                    .and_then(|tail| tail.split(' ').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{head}"));
                let strands: Vec<&str> = lines.collect();
                assert_eq!(strands.len(), count, "{text}");
                for line in strands {
                    let whole = line.starts_with("  strand #")
                        && line.contains("; fibre ")
                        && line.contains("; priority ");
                    assert!(whole, "{line}");
                }
                dumps += 1;
            }
            dumps
        });
        let mutex = Arc::new(Mutex::new(0u64));
        for _ in 0..200 {
            let children: Vec<JoinHandle<()>> = (0..8)
                .map(|i| {
                    let mutex = mutex.clone();
                    strand::spawn(move || {
                        *mutex.lock().expect("the lock") += 1;
                        if i % 2 == 0 {
                            strand::sleep(Duration::from_micros(50)).expect("a sleep");
                        }
                        let grandchild =
                            strand::spawn(|| strand::yield_now().expect("a strand")).expect("a fibre");
                        grandchild.join().expect("ends");
                    })
                    .expect("a fibre")
                })
                .collect();
            children.into_iter().for_each(|child| child.join().expect("ends"));
        }
        assert_eq!(*mutex.lock().expect("the lock"), 1600);
        done.store(true, SeqCst);
        // A blocking join of an OS thread: it ends within one dump.
        assert!(dumper.join().expect("the dumper never panics") > 0);
    })
    .expect("the pool runs");
}

/// A strand that a time slice stopped says so in the dump, until it runs
/// again (the host preempts on x86_64 Linux only).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn a_preempted_strand_is_dumped_as_preempted() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let config = roving::Config::new().time_slice(Duration::from_millis(1));
    support::run_pool_with(2, config, |pool| {
        let let_go = Arc::new(AtomicBool::new(false));
        // Two spinners: while the root keeps core 0, they share core 1,
        // and a slice ends whenever the other waits for the core.
        let spinners: Vec<JoinHandle<()>> = (0..2)
            .map(|_| {
                let let_go = let_go.clone();
                strand::spawn(move || {
                    while !let_go.load(Relaxed) {
                        std::hint::spin_loop();
                    }
                })
                .expect("a fibre")
            })
            .collect();
        let ids: Vec<String> =
            spinners.iter().map(|spinner| format!("strand {} was preempted", spinner.id())).collect();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let line = loop {
            let mut text = String::new();
            pool.dump_strands(&mut text).expect("text");
            if let Some(line) = text.lines().find(|line| ids.iter().any(|id| line.contains(id.as_str()))) {
                break line.to_owned();
            }
            let preempted: Vec<u64> = pool.stats().iter().map(|core| core.preempted).collect();
            assert!(
                std::time::Instant::now() < deadline,
                "no spinner seen preempted in 30 s ({preempted:?} preemptions by core):\n{text}"
            );
            strand::yield_now().expect("the root is a strand");
        };
        assert!(line.contains(" and waits for its turn (last on core "), "{line}");
        let_go.store(true, Relaxed);
        spinners.into_iter().for_each(|spinner| spinner.join().expect("let go"));
    })
    .expect("the pool runs");
}
