//! Logging: records from every core, a strand and an async task through
//! the `log` facade, each one whole line on the console; and, built with
//! `LOG=defmt`, defmt frames decoded on the host, roving's error types
//! among their arguments.
//!
//! `make run APP=logging` (text), `make run APP=logging LOG=defmt`
//! (frames, decoded by defmt-print), `roving.log=debug` on the kernel
//! command line for more. With `logging.panic=1` on the command line, a
//! strand also panics: its report, with its backtrace (its frames named
//! by the runner), is an error record like any other, and the run goes on.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use roving::sync::channel::{self, RecvError};
use roving::{Pool, executor, platform, strand};
use roving_examples as _;
use roving_kernel::println;

fn main() {
    let pool = Pool::new().expect("a pool of every core");
    pool.run(|| {
        // A task on every core, each logging there; then a strand.
        let here = Pool::current().expect("main runs in the pool");
        let sent: Vec<_> = (0..platform::core_count())
            .map(|core| {
                here.future_on(core, move || log::info!("hello from a task on core {core}")).expect("sent")
            })
            .collect();
        sent.into_iter().for_each(|future| future.wait().expect("the task ran"));
        strand::spawn(|| log::info!("a strand on core {:?}", platform::current_core()))
            .expect("a fibre")
            .join()
            .expect("the strand ends");
        let task = executor::spawn_async(async {
            log::info!("an async task on core {:?}", platform::current_core());
        });
        task.expect("a running pool takes tasks").join().expect("the task ends");
        // An error value, logged: text through `log`, and with defmt as a
        // `defmt::Format` argument of a frame.
        let (_tx, rx) = channel::bounded::<u32>(1).expect("memory for a channel");
        let empty: RecvError = rx.try_recv().expect_err("nothing was sent");
        log::warn!("a receive found nothing: {empty}");
        #[cfg(feature = "defmt")]
        defmt::warn!("the same error as a defmt argument: {}", empty);
        log::debug!("a debug record, shown with roving.log=debug");
        if roving_kernel::boot_info().bootarg("logging.panic") == Some("1") {
            let failed = strand::spawn(deliberate_panic).expect("a fibre").join();
            log::warn!("the panicking strand's join: {failed:?}");
        }
    })
    .expect("the pool runs");
    println!("logging: done");
}

/// A strand that fails, for `logging.panic=1`.
fn deliberate_panic() {
    panic!("a deliberate panic in a strand (logging.panic=1)");
}

roving_kernel::entry!(main);
