//! A kernel to look at under GDB (`tests/qemu/gdb-check`, with the
//! extension `tools/gdb-roving.py`). It blocks strands in known ways, then
//! calls `debuggee_ready`, where the debugger stops it:
//!
//! - the root (strand #1) holds a mutex, and three strands wait for it, in
//!   `lock_the_mutex`;
//! - two strands sleep for an hour, in `sleep_an_hour`;
//! - more strands than fibres wait for an event, in `wait_at_the_gate`,
//!   so that some share a fibre and their stacks are copied out.
//!
//! Then it lets them all go, cancels the sleepers, joins everything and
//! passes, so it also runs alone.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;
use roving::strand::{self, JoinHandle, sizes};
use roving::sync::{Event, Mutex};
use roving_kernel::println;
use roving_test_kernels::{self as _, every_core_pool, pass};

fn main() {
    let pool = every_core_pool();
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
        let here = roving::Pool::current().expect("the root runs in its pool");
        while here.strand_reports().iter().filter(|strand| strand.waiting().is_some()).count() < blocked {
            strand::yield_now().expect("the root is a strand");
        }
        println!("debuggee: {blocked} strands blocked; the mutex's waiters wait for strand #1");
        debuggee_ready();
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
fn wait_at_the_gate(gate: &Event) {
    gate.wait().expect("the gate opens");
}

roving_kernel::entry!(main);
