//! A backtrace block of a kernel's report, as the kernel prints it
//! (`kernel/src/backtrace.rs`), and as this program prints it back:
//! unwound, and each frame named.

use crate::names::Names;
use crate::unwind::{Frame, Registers, Tables};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The line that opens a block.
pub const HEADING: &str = "backtrace, innermost first:";
/// The line that closes it.
const END: &str = "end of backtrace";

/// A block's lines after its heading, as they come.
#[derive(Default)]
pub struct Block {
    /// The lines' indentation (the heading's).
    indent: String,
    registers: Option<Registers>,
    /// Scanned return addresses: stack address to value.
    words: BTreeMap<u64, u64>,
    /// Scanned words that point up the stack (saved frame pointers, perhaps).
    saved: BTreeMap<u64, u64>,
    /// Lines that are neither registers nor frames (the kernel's notes).
    notes: Vec<String>,
}

/// What one line did to a block.
pub enum Fed {
    /// It belongs to the block, which goes on.
    More,
    /// It ended the block.
    Ended,
    /// It is not the block's: the block ended before it.
    NotMine,
}

impl Block {
    /// A block opened by `heading` (the whole line, without its newline),
    /// if it is a heading.
    pub fn open(heading: &str) -> Option<Self> {
        let indent = heading.strip_suffix(HEADING)?;
        indent.chars().all(char::is_whitespace).then(|| Self { indent: indent.to_owned(), ..Self::default() })
    }

    /// Takes the block's next line (without its newline).
    pub fn feed(&mut self, line: &str) -> Fed {
        let Some(text) = line.trim_end().strip_prefix(self.indent.as_str()) else { return Fed::NotMine };
        if text == END {
            return Fed::Ended;
        }
        if let Some(registers) = text.strip_prefix("registers ") {
            self.registers = parse_registers(registers);
            return if self.registers.is_some() { Fed::More } else { Fed::NotMine };
        }
        if let Some(saved) = text.strip_prefix("saved ") {
            let (Some((value, offset)), Some(registers)) = (saved.split_once(' '), &self.registers) else {
                return Fed::NotMine;
            };
            let (Some(value), Some(offset)) = (hex(value), offset.strip_prefix("sp+").and_then(hex)) else {
                return Fed::NotMine;
            };
            self.saved.insert(registers.sp + offset, value);
            return Fed::More;
        }
        if text.starts_with('(') {
            self.notes.push(text.to_owned());
            return Fed::More;
        }
        let mut fields = text.split(' ');
        let (Some(number), Some(address), place) = (fields.next(), fields.next(), fields.next()) else {
            return Fed::NotMine;
        };
        let is_number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
        let (Some(true), Some(address)) = (number.strip_prefix('#').map(is_number), hex(address)) else {
            return Fed::NotMine;
        };
        match (place, &self.registers) {
            // The pc and lr lines repeat the registers.
            (Some("pc" | "lr"), _) => {}
            (Some(offset), Some(registers)) => match offset.strip_prefix("sp+").and_then(hex) {
                Some(offset) => {
                    self.words.insert(registers.sp + offset, address);
                }
                None => return Fed::NotMine,
            },
            _ => return Fed::NotMine,
        }
        Fed::More
    }

    /// The block as printed back, each line with its newline.
    pub fn render(&self, tables: Option<&Tables<'_>>, names: &mut Names) -> String {
        let indent = &self.indent;
        let mut out = String::new();
        let Some(registers) = self.registers else {
            return format!("{indent}(a backtrace without its registers line: nothing to unwind)\n");
        };
        let _ = writeln!(out, "{indent}registers {}", show_registers(&registers));
        let unwound = match tables {
            Some(tables) => tables.unwind(registers, &self.words, &self.saved),
            None => crate::unwind::Unwound {
                frames: std::iter::once(Frame { address: registers.pc, exact: true, checked: true })
                    .chain(self.words.values().map(|&address| Frame {
                        address,
                        exact: false,
                        checked: false,
                    }))
                    .collect(),
                stale: 0,
            },
        };
        let frames = &unwound.frames;
        let mut number = 0;
        let mut i = 0;
        while i < frames.len() {
            let frame = frames[i];
            let repeats = frames[i + 1..].iter().take_while(|next| next.address == frame.address).count();
            let mark = if frame.checked { "" } else { " ?" };
            let _ = writeln!(
                out,
                "{indent}#{number} {:#018x}{mark}{}",
                frame.address,
                names.describe(frame.address, frame.exact).replace('\n', &format!("\n{indent}")),
            );
            if repeats > 0 {
                let _ = writeln!(out, "{indent}(the frame above {repeats} more times)");
            }
            number += 1 + repeats;
            i += 1 + repeats;
        }
        if frames.iter().any(|frame| !frame.checked) {
            let _ = writeln!(
                out,
                "{indent}(frames marked ? were found on the stack but not reached by the unwind tables)"
            );
        }
        if unwound.stale > 0 {
            let _ = writeln!(out, "{indent}({} stale return addresses on the stack left out)", unwound.stale);
        }
        for note in &self.notes {
            let _ = writeln!(out, "{indent}{note}");
        }
        out
    }
}

fn show_registers(registers: &Registers) -> String {
    let Registers { pc, sp, fp, lr } = registers;
    match lr {
        Some(lr) => format!("pc {pc:#x} sp {sp:#x} fp {fp:#x} lr {lr:#x}"),
        None => format!("pc {pc:#x} sp {sp:#x} fp {fp:#x}"),
    }
}

/// `pc 0x.. sp 0x.. fp 0x.. [lr 0x..]`.
fn parse_registers(text: &str) -> Option<Registers> {
    let mut registers = Registers::default();
    let mut fields = text.split(' ');
    let mut seen = 0;
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        let value = hex(value)?;
        match name {
            "pc" => registers.pc = value,
            "sp" => registers.sp = value,
            "fp" => registers.fp = value,
            "lr" => registers.lr = Some(value),
            _ => return None,
        }
        seen += 1;
    }
    (seen >= 3).then_some(registers)
}

/// A `0x` hexadecimal number.
pub fn hex(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(lines: &[&str]) -> (Block, Vec<bool>) {
        let mut block = Block::open(&format!("    {HEADING}")).expect("a heading");
        let fed = lines.iter().map(|line| matches!(block.feed(line), Fed::More)).collect();
        (block, fed)
    }

    #[test]
    fn only_an_indented_heading_opens_a_block() {
        assert!(Block::open("    backtrace, innermost first:").is_some());
        assert!(Block::open("backtrace, innermost first:").is_some());
        assert!(Block::open("x backtrace, innermost first:").is_none());
        assert!(Block::open("    backtrace").is_none());
    }

    #[test]
    fn a_block_keeps_its_registers_words_and_notes() {
        let (block, fed) = block(&[
            "    registers pc 0x4020192c sp 0x1000 fp 0x0 lr 0x402017e0",
            "    #0 0x000000004020192c pc",
            "    #1 0x00000000402017e0 lr",
            "    #2 0x0000000040201108 sp+0x58",
            "    saved 0x0000000000001100 sp+0x60",
            "    (3 more words further up the stack, not shown)",
        ]);
        assert_eq!(fed, [true; 6]);
        let registers = Registers { pc: 0x4020_192c, sp: 0x1000, fp: 0, lr: Some(0x4020_17e0) };
        assert_eq!(block.registers, Some(registers));
        assert_eq!(block.words.into_iter().collect::<Vec<_>>(), [(0x1058, 0x4020_1108)]);
        assert_eq!(block.saved.into_iter().collect::<Vec<_>>(), [(0x1060, 0x1100)]);
        assert_eq!(block.notes, ["(3 more words further up the stack, not shown)"]);
    }

    #[test]
    fn a_line_that_is_not_the_blocks_ends_it() {
        let (mut open, _) = block(&["    registers pc 0x1 sp 0x2 fp 0x3"]);
        assert!(matches!(open.feed("    end of backtrace"), Fed::Ended));
        for line in
            ["[core 0] INFO hello", "    #1 0x10", "    #1 0x10 sp+zz", "    #x 0x10 pc", "  #1 0x10 pc"]
        {
            assert!(matches!(open.feed(line), Fed::NotMine), "{line}");
        }
        let (mut without_registers, _) = block(&[]);
        assert!(matches!(without_registers.feed("    #1 0x10 sp+0x8"), Fed::NotMine));
    }

    #[test]
    fn without_tables_every_scanned_word_is_unchecked() {
        let (block, _) = block(&[
            "    registers pc 0x10 sp 0x1000 fp 0x0",
            "    #0 0x0000000000000010 pc",
            "    #1 0x0000000000000020 sp+0x8",
            "    #2 0x0000000000000020 sp+0x18",
        ]);
        let mut names = Names::new("/nonexistent/kernel.elf".into());
        let text = block.render(None, &mut names);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "    registers pc 0x10 sp 0x1000 fp 0x0");
        assert!(lines[1].starts_with("    #0 0x0000000000000010 (no name: cannot read"), "{}", lines[1]);
        assert!(lines[2].starts_with("    #1 0x0000000000000020 ? (no name"), "{}", lines[2]);
        assert_eq!(lines[3], "    (the frame above 1 more times)");
        assert!(lines[4].starts_with("    (frames marked ? were found"));
    }

    #[test]
    fn hex_numbers_need_their_prefix() {
        assert_eq!(hex("0x10"), Some(16));
        assert_eq!(hex("10"), None);
        assert_eq!(hex("0x"), None);
        assert_eq!(hex("0x00000000000000000010"), None);
    }
}
