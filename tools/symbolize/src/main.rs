//! Names the frames of a roving kernel's backtraces, from the kernel's ELF.
//!
//! A panic or fault report on bare metal ends with a backtrace block
//! (`kernel/src/backtrace.rs`): the registers where the code stopped, and
//! every word of its stack that could be a return address. This program is
//! `tools/qemu-run`'s filter on the guest's console: it copies its input
//! to its output unchanged and as it comes, except each backtrace block,
//! which it unwinds with the ELF's unwind tables (dropping stale words)
//! and prints back with each frame's function, file and line, and a line
//! more for each call inlined there:
//!
//! ```text
//!     backtrace, innermost first:
//!     registers pc 0x4020192c sp 0x4027f360 fp 0x4027f4b0 lr 0x402017e0
//!     #0 0x000000004020192c roving_kernel::panic::panic at kernel/src/panic.rs:67:25
//!     #1 0x0000000040226ef0 core::panicking::panic_fmt at .../core/src/panicking.rs:80:14
//!     #2 0x0000000040201108 panic::panic_on_last at tests/kernels/src/bin/panic.rs:17:9
//!                inlined into ...
//!     (4 stale return addresses on the stack left out)
//! ```
//!
//! ```text
//! roving-symbolize KERNEL.elf                  filter standard input to output
//! roving-symbolize KERNEL.elf ADDRESS...       name each address (all exact)
//! ```

mod block;
mod names;
mod unwind;

use block::{Block, Fed};
use names::Names;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;
use unwind::Tables;

/// How long a partial line waits for the rest of itself before it is
/// passed on as it is (a prompt that waits for input has no newline).
const PARTIAL_LINE_WAIT: Duration = Duration::from_millis(30);

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(elf) = args.next().map(PathBuf::from) else {
        eprintln!("usage: roving-symbolize KERNEL.elf [ADDRESS...]");
        std::process::exit(2);
    };
    let addresses: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let mut kernel = Kernel { names: Names::new(elf.clone()), elf, tables: None };
    let result =
        if addresses.is_empty() { filter(&mut kernel) } else { name_each(&mut kernel.names, &addresses) };
    if let Err(error) = result
        && error.kind() != io::ErrorKind::BrokenPipe
    {
        eprintln!("roving-symbolize: {error}");
        std::process::exit(1);
    }
}

/// What is known of the kernel's ELF, read when the first block needs it.
struct Kernel {
    elf: PathBuf,
    names: Names,
    tables: Option<Result<Tables<'static>, String>>,
}

impl Kernel {
    fn render(&mut self, block: &Block) -> String {
        let elf = &self.elf;
        let tables = self.tables.get_or_insert_with(|| {
            let bytes = std::fs::read(elf).map_err(|e| format!("cannot read {}: {e}", elf.display()))?;
            Tables::load(Box::leak(bytes.into_boxed_slice()))
        });
        match tables {
            Ok(tables) => block.render(Some(tables), &mut self.names),
            Err(why) => format!("    (not unwound: {why})\n{}", block.render(None, &mut self.names)),
        }
    }
}

/// Names each address given on the command line.
fn name_each(names: &mut Names, addresses: &[String]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    for text in addresses {
        let Some(address) = block::hex(text) else {
            eprintln!("roving-symbolize: '{text}' is not a hexadecimal address (0x...)");
            std::process::exit(2);
        };
        writeln!(out, "{address:#018x}{}", names.describe(address, true))?;
    }
    Ok(())
}

/// Copies standard input to standard output, backtrace blocks unwound.
fn filter(kernel: &mut Kernel) -> io::Result<()> {
    // A reader thread, so that a partial line can be passed on when no
    // more comes for a while.
    let (sender, chunks) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut input = io::stdin().lock();
        let mut buffer = [0u8; 4096];
        loop {
            match input.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sender.send(buffer[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut out = io::stdout().lock();
    let mut line = Vec::new();
    // Whether the start of `line`'s line was already passed on.
    let mut line_started = false;
    let mut block: Option<Block> = None;
    loop {
        match chunks.recv_timeout(PARTIAL_LINE_WAIT) {
            Ok(chunk) => {
                for byte in chunk {
                    line.push(byte);
                    if byte == b'\n' {
                        let whole = !line_started;
                        take_line(kernel, &mut block, &line, whole, &mut out)?;
                        line.clear();
                        line_started = false;
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !line.is_empty() {
                    close(kernel, &mut block, &mut out)?;
                    out.write_all(&line)?;
                    line.clear();
                    line_started = true;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                close(kernel, &mut block, &mut out)?;
                out.write_all(&line)?;
                out.flush()?;
                return Ok(());
            }
        }
        out.flush()?;
    }
}

/// One line of input, with its newline: part of a block, or passed on.
fn take_line(
    kernel: &mut Kernel,
    block: &mut Option<Block>,
    line: &[u8],
    whole: bool,
    out: &mut impl Write,
) -> io::Result<()> {
    let text =
        whole.then(|| std::str::from_utf8(line).ok()).flatten().map(|t| t.trim_end_matches(['\n', '\r']));
    if let Some(open) = block {
        match text.map_or(Fed::NotMine, |text| open.feed(text)) {
            Fed::More => return Ok(()),
            Fed::Ended => return close(kernel, block, out),
            Fed::NotMine => close(kernel, block, out)?,
        }
    }
    out.write_all(line)?;
    *block = text.and_then(Block::open);
    Ok(())
}

/// Prints the open block, if any, and closes it.
fn close(kernel: &mut Kernel, block: &mut Option<Block>, out: &mut impl Write) -> io::Result<()> {
    match block.take() {
        Some(block) => out.write_all(kernel.render(&block).as_bytes()),
        None => Ok(()),
    }
}
