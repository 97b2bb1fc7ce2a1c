//! Event loops: a socket object with no core of its own takes writes from
//! every core. Each write hands the socket a buffer; the socket passes it
//! to a wire that owns core 1 (its own event loop), and the buffer comes
//! back to the writer through a one-shot callback. The socket's state has
//! no lock: whichever caller finds it idle runs its operations, and the
//! others only queue theirs. Every handle is dropped with writes still in
//! flight; `LoopGroup::join` waits until every buffer has come back.
//!
//! `cargo run -p roving-examples --bin event_loop` (QEMU virt, 4 cores)
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use roving::Pool;
use roving::event_loop::{Callback, Loop, LoopGroup, Object};
use roving_examples as _;
use roving_kernel::println;

/// The socket's state: touched only by its loop's operations.
struct Socket {
    wire: Loop<Wire>,
    queued: usize,
}

/// The wire's state, on core 1.
#[derive(Default)]
struct Wire {
    bytes: u64,
}

impl Object for Socket {
    fn close(&mut self, _: &Loop<Self>) {
        println!("event_loop: socket closed with {} writes queued; they finish first", self.queued);
    }
}

/// Hands `buffer` to the socket; `done` gets it back once it is sent.
fn write(socket: &Loop<Socket>, buffer: Vec<u8>, done: Callback<Vec<u8>>) {
    socket
        .defer(move |socket: &mut Socket, this: &Loop<Socket>| {
            socket.queued += 1;
            // The wire's completion returns the buffer. A strong callback:
            // the socket lives until it fires, handles or not.
            let sent = this.callback(move |socket: &mut Socket, _: &Loop<Socket>, buffer: Vec<u8>| {
                socket.queued -= 1;
                done.fire(buffer).expect("a plain callback runs");
            });
            socket
                .wire
                .defer(move |wire: &mut Wire, _: &Loop<Wire>| {
                    wire.bytes += buffer.len() as u64;
                    sent.fire(buffer).expect("the socket takes completions");
                })
                .expect("the wire runs");
        })
        .expect("the socket takes writes");
}

const WRITES_PER_CORE: usize = 1_000;

fn main() {
    let pool = Pool::new().expect("a pool of every core");
    let cores = pool.core_count();
    let returned = alloc::sync::Arc::new(AtomicU64::new(0));
    let counted = returned.clone();
    pool.run(move || {
        let pool = Pool::current().expect("in the pool");
        let context = LoopGroup::new();
        let wire = Loop::on_core(&pool, 1 % cores, Wire::default()).expect("the wire's core is in the pool");
        let socket = context.object(Socket { wire: wire.clone(), queued: 0 });
        let writers: Vec<_> = (0..cores)
            .map(|core| {
                let (socket, returned) = (socket.clone(), returned.clone());
                pool.future_on(core, move || {
                    for n in 0..WRITES_PER_CORE {
                        let returned = returned.clone();
                        let back = Callback::new(move |buffer: Vec<u8>| {
                            returned.fetch_add(buffer.len() as u64, Ordering::Relaxed);
                        });
                        write(&socket, alloc::vec![0; n % 64 + 1], back);
                    }
                    // This core's handle goes now, with its writes in flight.
                })
                .expect("every core is in the pool")
            })
            .collect();
        // Once every writer has issued its writes, drop the last handle
        // and wait for every buffer to come back. (`join` closes what is
        // still open, so it comes after the writes are issued.)
        for writer in writers {
            writer.wait().expect("main is a strand");
        }
        drop(socket);
        context.join().expect("main is a strand");
        // A weak callback is skipped once its object is gone.
        let report = wire.weak_callback(|wire: &mut Wire, _: &Loop<Wire>, ()| {
            println!("event_loop: the wire sent {} bytes", wire.bytes);
        });
        report.fire(()).expect("the wire runs");
    })
    .expect("the pool runs");
    let expected: u64 = (0..WRITES_PER_CORE).map(|n| (n % 64 + 1) as u64).sum::<u64>() * cores as u64;
    println!("event_loop: every buffer came back: {} of {expected} bytes", counted.load(Ordering::Relaxed));
}

roving_kernel::entry!(main);
