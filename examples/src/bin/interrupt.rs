//! A device's interrupt wakes a strand.
//!
//! The board's clock is the device: QEMU virt's PL031 real-time clock
//! (an alarm a second ahead), the PC's CMOS clock (its periodic interrupt,
//! twice a second) or a Raspberry Pi's system timer (a compare a second
//! ahead). Its line, which the board names, is bound to a handler on core
//! 0; the handler quiets the clock and raises a `Signal`; a strand of the
//! pool waits on the signal. Its core sleeps, or runs other work, until the
//! device interrupts. Three ticks, then the run ends.
//!
//! (QEMU's raspi4b does not connect the system timer to the GIC, so there
//! no tick comes and the example says so after three seconds; a real Pi 4
//! ticks.)
#![no_std]
#![no_main]

use core::time::Duration;
use roving::sync::Signal;
use roving::time::Instant;
use roving::{Pool, strand};
use roving_examples::clock;
use roving_kernel::interrupts::{self, Handled};
use roving_kernel::println;

static TICK: Signal = Signal::new();

fn on_clock(_line: u32) -> Handled {
    clock::acknowledge(); // quiet the device
    TICK.signal(); // interrupt-safe: wakes the strand waiting below
    Handled::Yes
}

fn main() {
    let line = interrupts::line_of(clock::DEVICE).expect("the board names its clock's line");
    interrupts::bind(line, 0, on_clock).expect("the clock's line is free");
    println!("interrupt: {} on line {line}, handled on core 0", clock::DEVICE);
    let started = Instant::now();
    let ticks = Pool::new()
        .expect("a pool")
        .run(|| {
            let mut ticks = 0;
            for _ in 0..3 {
                clock::arm();
                match TICK.wait_timeout(Duration::from_secs(3)) {
                    Ok(()) => ticks += 1,
                    Err(error) => {
                        println!(
                            "interrupt: no tick within 3 s ({error}): this machine's clock does not interrupt"
                        );
                        break;
                    }
                }
                let at = Instant::now().duration_since(started).as_millis();
                println!("interrupt: tick {ticks} at {at} ms, on strand {:?}", strand::current());
            }
            ticks
        })
        .expect("the pool runs");
    roving_kernel::exit(if ticks == 3 { 0 } else { 1 });
}

roving_kernel::entry!(main);
