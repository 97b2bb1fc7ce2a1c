//! A kernel to look at under GDB (`tests/qemu/gdb-check`, with the
//! extension `tools/gdb-roving.py`). It blocks strands in known ways, then
//! calls `debuggee_ready`, where the debugger stops it:
//!
//! - the root (strand #1) holds a mutex, and three strands wait for it, in
//!   `lock_the_mutex`;
//! - two strands sleep for an hour, in `sleep_an_hour`;
//! - more strands than fibres wait for an event, in `wait_at_the_gate`,
//!   so that some share a fibre and their stacks are copied out;
//! - two strands compute without end, in `spin_until_let_go`, under a
//!   1 ms time slice: with the root on one of two cores, at least one of
//!   them is preempted, waiting for its turn.
//!
//! Then it lets them all go, cancels the sleepers, joins everything and
//! passes, so it also runs alone.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};
use core::time::Duration;
use roving::strand::{self, JoinHandle, sizes};
use roving::sync::{Event, Mutex};
use roving::{Config, Pool};
use roving_kernel::println;
use roving_test_kernels::{self as _, mailboxes_asked, pass};

fn main() {
    let config = Config::new().mailboxes(mailboxes_asked()).time_slice(Duration::from_millis(1));
    let pool = Pool::with_config(config).expect("a pool of every core");
    pool.run(|| {
        let mutex = Arc::new(Mutex::new(0u32));
        let held = mutex.lock().expect("the root takes the mutex");
        let lockers: Vec<JoinHandle<()>> = (0..3)
            .map(|_| {
                let mutex = mutex.clone();
                strand::spawn(move || lock_the_mutex(&mutex)).expect("a fibre")
            })
            .collect();
        let sleepers: Vec<JoinHandle<()>> =
            (0..2).map(|_| strand::spawn(sleep_an_hour).expect("a fibre")).collect();
        let gate = Arc::new(Event::new());
        let crowd: Vec<JoinHandle<()>> = (0..sizes::FIBRES + 2)
            .map(|_| {
                let gate = gate.clone();
                strand::spawn(move || wait_at_the_gate(&gate)).expect("memory for a strand")
            })
            .collect();
        let blocked = lockers.len() + sleepers.len() + crowd.len();
        let here = Pool::current().expect("the root runs in its pool");
        while here.strand_reports().iter().filter(|strand| strand.waiting().is_some()).count() < blocked {
            strand::yield_now().expect("the root is a strand");
        }
        // The spinners last, so that nothing else waits for their cores.
        let let_go = Arc::new(AtomicBool::new(false));
        let spinners: Vec<JoinHandle<()>> = (0..2)
            .map(|_| {
                let let_go = let_go.clone();
                strand::spawn(move || spin_until_let_go(&let_go)).expect("a fibre")
            })
            .collect();
        // Until each spinner has been seen preempted: then, with the root
        // on one of the two cores, one of them at least is preempted
        // whenever the root stops here.
        let mut seen = [false; 2];
        let deadline = roving::time::Instant::now() + Duration::from_secs(20);
        while !seen.iter().all(|&preempted| preempted) {
            assert!(roving::time::Instant::now() < deadline, "a spinner was not preempted in 20 s");
            for report in here.strand_reports().iter().filter(|report| report.preempted()) {
                for (spinner, seen) in spinners.iter().zip(&mut seen) {
                    *seen |= spinner.id() == report.strand();
                }
            }
            strand::yield_now().expect("the root is a strand");
        }
        println!("debuggee: {blocked} strands blocked; the mutex's waiters wait for strand #1; 2 spinning");
        debuggee_ready();
        let_go.store(true, Relaxed);
        spinners.into_iter().for_each(|spinner| spinner.join().expect("let go"));
        drop(held);
        gate.set();
        sleepers.iter().for_each(|sleeper| sleeper.cancel().expect("a live strand"));
        lockers.into_iter().for_each(|locker| locker.join().expect("locked"));
        sleepers.into_iter().for_each(|sleeper| drop(sleeper.join()));
        crowd.into_iter().for_each(|strand| strand.join().expect("let through"));
        assert_eq!(*mutex.lock().expect("the lock"), 3);
    })
    .expect("the pool runs");
    pass("debuggee");
}

/// Where the debugger stops the kernel, every strand blocked.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn debuggee_ready() {
    core::hint::black_box(());
}

#[inline(never)]
fn lock_the_mutex(mutex: &Mutex<u32>) {
    *mutex.lock().expect("the lock") += 1;
}

#[inline(never)]
fn sleep_an_hour() {
    let _ = strand::sleep(Duration::from_secs(3600));
}

#[inline(never)]
fn spin_until_let_go(let_go: &AtomicBool) {
    while !let_go.load(Relaxed) {
        core::hint::spin_loop();
    }
}

#[inline(never)]
fn wait_at_the_gate(gate: &Event) {
    gate.wait().expect("the gate opens");
}

roving_kernel::entry!(main);
