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
    let result = if addresses.is_empty() {
        filter(&mut kernel, io::stdin(), io::stdout().lock())
    } else {
        name_each(&mut kernel.names, &addresses)
    };
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

/// Copies `input` to `out`, backtrace blocks unwound.
fn filter(kernel: &mut Kernel, mut input: impl Read + Send + 'static, mut out: impl Write) -> io::Result<()> {
    // A reader thread, so that a partial line can be passed on when no
    // more comes for a while.
    let (sender, chunks) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
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
                // Inside a backtrace block a pause is the guest being slow
                // (a loaded host), not a prompt waiting for input: passing
                // the partial line on would end the block half-read.
                if !line.is_empty() && block.is_none() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Gives its chunks one read at a time, pausing before each.
    struct Slow(std::vec::IntoIter<&'static str>, Duration);

    impl Read for Slow {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            let Some(chunk) = self.0.next() else { return Ok(0) };
            std::thread::sleep(self.1);
            buffer[..chunk.len()].copy_from_slice(chunk.as_bytes());
            Ok(chunk.len())
        }
    }

    fn filtered(chunks: Vec<&'static str>, pause: Duration) -> String {
        let mut kernel = Kernel {
            names: Names::new(PathBuf::from("/nonexistent")),
            elf: "/nonexistent".into(),
            tables: None,
        };
        let mut out = Vec::new();
        let input = Slow(chunks.into_iter(), pause);
        filter(&mut kernel, input, &mut out).expect("filtered");
        String::from_utf8(out).expect("text")
    }

    #[test]
    fn a_pause_inside_a_block_keeps_the_block_whole() {
        let chunks = vec![
            "    backtrace, innermost first:\n    registers pc 0x10 sp 0x20 fp 0x0 lr 0x30\n",
            "    #0 0x0000000000000010 pc\n    #1 0x0000000000000030 lr\n    #2 0x00000000",
            "00000040 sp+0x8\n    end of backtrace\n",
        ];
        let at_once = filtered(chunks.clone(), Duration::ZERO);
        assert!(at_once.contains("(not unwound"), "the block was read as one:\n{at_once}");
        assert_eq!(filtered(chunks, PARTIAL_LINE_WAIT * 4), at_once, "a pause changed the block");
    }

    #[test]
    fn a_partial_line_outside_a_block_is_passed_on() {
        let out = filtered(vec!["shell> ", "help\n"], PARTIAL_LINE_WAIT * 4);
        assert_eq!(out, "shell> help\n");
    }
}
