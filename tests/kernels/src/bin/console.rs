//! Every core prints at once, with `println!` and through the `log`
//! facade; the suite checks that no line was broken or mixed with another
//! core's (`tests/qemu/suite` reads the output), and that a record below
//! the level set on the command line (`roving.log=info`) is left out.
#![no_std]
#![no_main]

use core::time::Duration;
use roving_kernel::println;
use roving_test_kernels::{on_every_core, pass};

/// Lines per core.
pub const LINES: usize = 200;

fn main() {
    on_every_core(shout, Duration::from_secs(60));
    pass("console");
}

fn shout(me: usize) {
    for line in 0..LINES {
        println!(
            "console core={me:02} line={line:03} abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ end"
        );
        log::info!("logged core={me:02} line={line:03} abcdefghijklmnopqrstuvwxyz0123456789 end");
        log::debug!("logged below the level: never printed");
    }
}

roving_kernel::entry!(main);
