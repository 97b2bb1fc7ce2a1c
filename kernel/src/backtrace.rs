//! Backtraces for panic and fault reports.
//!
//! Kernels are built without frame pointers: keeping them in every
//! function cost up to 11% on the latency table's rows on virt and up to
//! 19% on the PC (`BENCHMARKS.md`). So a report does not walk frame
//! records; it scans. It prints the registers where the failing code
//! stopped, then each word of that code's stack, from its stack pointer to
//! the top, that could be a return address: an address in the kernel's
//! code right after a call instruction, with its place on the stack. That
//! costs nothing until a report, cannot fault (it reads only a stack the
//! kernel knows, and only the code it checks), and finds every real
//! return address; but it also finds stale ones, left in unused slots of
//! live frames by earlier calls.
//!
//! The runner (`tools/qemu-run`, through `tools/symbolize`) then unwinds
//! for real from the registers, with the unwind tables kept in the ELF
//! (`-C force-unwind-tables`, which adds no instruction): every scanned
//! address the unwinding reaches is a frame, every one it steps over is
//! stale, and each frame gets its function, file and line. Where the
//! tables do not reach (code built without them), the addresses that
//! follow are kept, marked unchecked.
//!
//! A report's lines, after its own:
//!
//! ```text
//!     backtrace, innermost first:
//!     registers pc 0x... sp 0x... fp 0x... lr 0x...
//!     #0 0x... pc              the exact address where the code stopped
//!     #1 0x... lr              AArch64: the link register, if it follows a call
//!     #2 0x... sp+0x38         a scanned return address and its offset from sp
//!     saved 0x... sp+0x40      a word that points further up the same stack
//!     end of backtrace
//! ```
//!
//! The `saved` words are there for the unwinding: some functions find
//! their caller's frame through the frame pointer register, whose value
//! their callee saved on the stack. They are the words that point above
//! themselves within the stack, as a saved frame pointer does.

use crate::{arch, boot_info::MAX_CORES};
use core::fmt;
use core::ops::Range;

/// The most scanned words a report prints.
const MAX_LINES: usize = 256;

/// The registers a backtrace starts from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Registers {
    /// Where the code stopped (exact, not a return address).
    pub pc: usize,
    /// Its stack pointer.
    pub sp: usize,
    /// Its frame pointer register (x29, rbp): a general register in code
    /// built without frame pointers, which the unwinding may need.
    pub fp: usize,
    /// AArch64's link register (x30), which holds the return address until
    /// a function saves it.
    pub lr: Option<usize>,
}

/// Per-core stacks laid end to end: `MAX_CORES` of `bytes` each from
/// `start`.
pub(crate) struct StackArray {
    /// Address of core 0's stack (its lowest byte).
    pub start: usize,
    /// Bytes of each core's stack.
    pub bytes: usize,
}

impl StackArray {
    fn around(&self, address: usize) -> Option<Range<usize>> {
        let offset = address.checked_sub(self.start)?;
        let core = offset / self.bytes;
        (core < MAX_CORES).then(|| {
            let low = self.start + core * self.bytes;
            low..low + self.bytes
        })
    }
}

/// The stack that `sp` is on, if the kernel knows it: a core's own stack,
/// or a fibre's (the usable part: a stack pointer in the guard gap below,
/// after an overflow, gets the stack above it).
pub(crate) fn stack_around(sp: usize) -> Option<Range<usize>> {
    if let Some(stack) = arch::stack_arrays().iter().find_map(|stacks| stacks.around(sp)) {
        return Some(stack);
    }
    let fibres = roving::platform::hooks::region();
    let fibre = sp.checked_sub(fibres.start)? / fibres.slot_bytes;
    let low = fibres.start + fibre * fibres.slot_bytes + fibres.guard_bytes;
    (fibre < fibres.fibres).then(|| low..low + fibres.stack_bytes)
}

/// The kernel's code: where a return address can point.
fn code() -> Range<usize> {
    unsafe extern "C" {
        // Both from the linker script (kernel/linker/).
        static __image_start: u8;
        static __text_end: u8;
    }
    (&raw const __image_start as usize)..(&raw const __text_end as usize)
}

/// Whether `word` is an address in the kernel's code right after a call.
fn is_return_address(word: usize, code: &Range<usize>) -> bool {
    // The call instruction before it must be inside the code too.
    const LONGEST_CALL: usize = 8;
    // SAFETY: the bytes before `word` are inside the kernel's code, which
    // is always mapped and readable.
    word >= code.start + LONGEST_CALL && word < code.end && unsafe { arch::follows_call(word) }
}

/// A backtrace to print: the registers the code stopped with.
pub(crate) struct Backtrace(Registers);

impl Backtrace {
    /// The backtrace of the calling function, from this point.
    #[inline(always)]
    pub(crate) fn here() -> Self {
        Self(arch::registers_here())
    }

    /// The backtrace of code stopped with `registers` (an exception's).
    pub(crate) fn of(registers: Registers) -> Self {
        Self(registers)
    }
}

impl fmt::Display for Backtrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Registers { pc, sp, fp, lr } = self.0;
        write!(
            f,
            "\n    backtrace, innermost first:\n    registers pc {:#x} sp {sp:#x} fp {fp:#x}",
            arch::linked_address(pc)
        )?;
        if let Some(lr) = lr {
            write!(f, " lr {:#x}", arch::linked_address(lr))?;
        }
        if arch::linked_address(pc) != pc {
            write!(
                f,
                "\n    (code addresses as linked; the image runs {:#x} bytes away)",
                pc.abs_diff(arch::linked_address(pc))
            )?;
        }
        write!(f, "\n    #0 {:#018x} pc", arch::linked_address(pc))?;
        let code = code();
        let mut frames = 1;
        if let Some(lr) = lr
            && is_return_address(lr, &code)
        {
            write!(f, "\n    #1 {:#018x} lr", arch::linked_address(lr))?;
            frames += 1;
        }
        match stack_around(sp) {
            Some(stack) => {
                let words =
                    Scan { next: sp.max(stack.start).next_multiple_of(size_of::<usize>()), end: stack.end };
                let mut shown = 0;
                let mut more = 0;
                for (at, word) in words {
                    let line = if is_return_address(word, &code) {
                        Some(Word::Return)
                    } else if word > at && word < stack.end && word.is_multiple_of(size_of::<usize>()) {
                        Some(Word::Saved)
                    } else {
                        None
                    };
                    match line {
                        None => {}
                        Some(_) if shown == MAX_LINES => more += 1,
                        Some(Word::Return) => {
                            write!(
                                f,
                                "\n    #{frames} {:#018x} sp+{:#x}",
                                arch::linked_address(word),
                                at - sp
                            )?;
                            frames += 1;
                            shown += 1;
                        }
                        Some(Word::Saved) => {
                            write!(f, "\n    saved {word:#018x} sp+{:#x}", at - sp)?;
                            shown += 1;
                        }
                    }
                }
                if more > 0 {
                    write!(f, "\n    ({more} more words further up the stack, not shown)")?;
                }
            }
            None => write!(f, "\n    (sp is on no stack the kernel knows: nothing scanned)")?,
        }
        f.write_str("\n    end of backtrace")
    }
}

/// What a scanned word may be.
enum Word {
    /// A return address: in the code, right after a call.
    Return,
    /// A saved frame pointer, perhaps: it points further up the stack.
    Saved,
}

/// The words of a stack from `next` up to `end`, with their addresses.
struct Scan {
    next: usize,
    end: usize,
}

impl Iterator for Scan {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        if self.next + size_of::<usize>() > self.end {
            return None;
        }
        let at = self.next;
        self.next += size_of::<usize>();
        // SAFETY: inside a stack the kernel knows, which is always mapped.
        Some((at, unsafe { (at as *const usize).read_volatile() }))
    }
}
