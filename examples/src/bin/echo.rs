//! An async echo server on the serial console: a task reads lines through
//! `embedded-io-async` and writes each one back, until `quit`. The reads
//! wait on the console's receive interrupt; nothing spins, and the cores
//! sleep while nobody types.
//!
//! `make run APP=echo`, then type (or pipe lines in).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use embedded_io_async::{Read, Write};
use roving::{Pool, executor};
use roving_examples as _;
use roving_kernel::println;
use roving_kernel::serial::Serial;

/// Echoes lines on `port` until one is `quit`; returns how many it
/// echoed. Written against the ecosystem's traits only: any async serial
/// port would do.
async fn serve<P: Read + Write>(port: &mut P) -> Result<usize, P::Error> {
    port.write_all(b"echo: type lines; 'quit' ends\r\n").await?;
    let (mut line, mut buf, mut echoed) = (Vec::new(), [0u8; 64], 0);
    loop {
        let got = port.read(&mut buf).await?;
        for &byte in &buf[..got] {
            if byte != b'\r' && byte != b'\n' {
                line.push(byte);
                continue;
            }
            match line.as_slice() {
                [] => continue,
                b"quit" => return Ok(echoed),
                text => {
                    port.write_all(b"echo: ").await?;
                    port.write_all(text).await?;
                    port.write_all(b"\r\n").await?;
                    echoed += 1;
                }
            }
            line.clear();
        }
    }
}

fn main() {
    let echoed = Pool::new()
        .expect("a pool")
        .run(|| {
            let server = executor::spawn_async(async { serve(&mut Serial).await });
            server.expect("a running pool takes tasks").join().expect("the server finishes")
        })
        .expect("the pool runs");
    match echoed {
        Ok(lines) => println!("echo: quit after {lines} lines"),
        Err(error) => {
            println!("echo: {error}");
            roving_kernel::exit(1);
        }
    }
}

roving_kernel::entry!(main);
