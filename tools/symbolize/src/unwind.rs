//! Unwinding a scanned stack with the ELF's unwind tables.
//!
//! The kernel prints the registers where the code stopped and every word
//! of its stack that could be a return address, with its place. Unwinding
//! starts at the registers: the tables say, for each program counter, how
//! far above the stack pointer the caller's frame starts (the CFA) and
//! where in between the return address was saved. The saved return
//! address must then be one of the scanned words; it is the next frame,
//! and every scanned word below it was stale. When the tables cannot go
//! on (code without them, or a rule that needs a value the scan did not
//! keep), the scanned words still above are kept, marked unchecked.

use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, EndianSlice, LittleEndian, Register, RegisterRule,
    UnwindContext, UnwindSection,
};
use object::{Object, ObjectSection};
use std::collections::BTreeMap;

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// The registers the kernel printed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Registers {
    pub pc: u64,
    pub sp: u64,
    pub fp: u64,
    pub lr: Option<u64>,
}

/// A frame of the unwound backtrace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub address: u64,
    /// The exact address the code stopped at, not a return address.
    pub exact: bool,
    /// Reached by the unwind tables (not only found by the scan).
    pub checked: bool,
}

/// The result: the frames, and how many scanned words were stale.
#[derive(Debug, PartialEq)]
pub struct Unwound {
    pub frames: Vec<Frame>,
    pub stale: usize,
}

/// The registers unwinding tracks, by their DWARF numbers.
#[derive(Clone, Copy)]
struct Arch {
    sp: Register,
    fp: Register,
    /// A call pushes its return address (x86), so the caller's stack
    /// pointer is the address just above any return address on the stack.
    call_pushes_return_address: bool,
}

const AARCH64: Arch = Arch { sp: Register(31), fp: Register(29), call_pushes_return_address: false };
const X86_64: Arch = Arch { sp: Register(7), fp: Register(6), call_pushes_return_address: true };

/// An ELF's unwind tables: `.eh_frame`, then `.debug_frame` (which the
/// prebuilt `core` library has on some targets instead).
pub struct Tables<'a> {
    arch: Arch,
    eh_frame: Option<(EhFrame<Slice<'a>>, BaseAddresses)>,
    debug_frame: Option<DebugFrame<Slice<'a>>>,
}

/// Where the unwinding is: a frame's registers, as far as known.
struct Position {
    pc: u64,
    /// `pc` is where the code stopped, not a return address.
    exact: bool,
    sp: u64,
    fp: Option<u64>,
    /// The link register, known only in the innermost frame.
    lr: Option<u64>,
    /// Scanned words below this stack address are behind the unwinding.
    passed: u64,
}

/// What one step found.
enum Caller {
    /// The caller, and how many scanned words were passed over as stale.
    Found { position: Position, stale: usize },
    /// Nothing called this frame (or it returns to address 0).
    Outermost,
    /// The tables cannot say.
    Unknown,
}

/// What the tables say about one frame.
struct Step {
    cfa: (Register, i64),
    return_address: Option<RegisterRule<usize>>,
    frame_pointer: Option<RegisterRule<usize>>,
}

impl<'a> Tables<'a> {
    /// The tables of the ELF in `data`.
    pub fn load(data: &'a [u8]) -> Result<Self, String> {
        let file = object::File::parse(data).map_err(|e| format!("not an ELF: {e}"))?;
        let arch = match file.architecture() {
            object::Architecture::Aarch64 => AARCH64,
            object::Architecture::X86_64 => X86_64,
            other => return Err(format!("no unwinding for {other:?}")),
        };
        let eh_frame = file.section_by_name(".eh_frame").and_then(|section| {
            let bytes = section.data().ok()?;
            let bases = BaseAddresses::default().set_eh_frame(section.address());
            let mut table = EhFrame::new(bytes, LittleEndian);
            table.set_address_size(8);
            Some((table, bases))
        });
        let debug_frame = file.section_by_name(".debug_frame").and_then(|section| {
            let mut table = DebugFrame::new(section.data().ok()?, LittleEndian);
            table.set_address_size(8);
            Some(table)
        });
        Ok(Self { arch, eh_frame, debug_frame })
    }

    /// The unwinding rules at `pc`, if a table covers it.
    fn step(&self, pc: u64, context: &mut UnwindContext<usize>) -> Option<Step> {
        let ra_and_row = |fde: gimli::FrameDescriptionEntry<Slice<'a>>,
                          row: &gimli::UnwindTableRow<usize>| {
            let CfaRule::RegisterAndOffset { register, offset } = *row.cfa() else { return None };
            let ra = fde.cie().return_address_register();
            Some(Step {
                cfa: (register, offset),
                return_address: row.register(ra),
                frame_pointer: row.register(self.arch.fp),
            })
        };
        if let Some((table, bases)) = &self.eh_frame
            && let Ok(fde) = table.fde_for_address(bases, pc, EhFrame::cie_from_offset)
            && let Ok(row) = fde.unwind_info_for_address(table, bases, context, pc)
        {
            let row = row.clone();
            return ra_and_row(fde, &row);
        }
        let table = self.debug_frame.as_ref()?;
        let bases = BaseAddresses::default();
        let fde = table.fde_for_address(&bases, pc, DebugFrame::cie_from_offset).ok()?;
        let row = fde.unwind_info_for_address(table, &bases, context, pc).ok()?.clone();
        ra_and_row(fde, &row)
    }

    /// Unwinds from `registers` through the scanned return addresses
    /// `words` and other `saved` words (each stack address to value).
    pub fn unwind(
        &self,
        registers: Registers,
        words: &BTreeMap<u64, u64>,
        saved: &BTreeMap<u64, u64>,
    ) -> Unwound {
        let mut context = UnwindContext::new();
        let mut at = Position {
            pc: registers.pc,
            exact: true,
            sp: registers.sp,
            fp: Some(registers.fp),
            lr: registers.lr,
            passed: registers.sp,
        };
        let mut unwound =
            Unwound { frames: vec![Frame { address: at.pc, exact: true, checked: true }], stale: 0 };
        while unwound.frames.len() <= words.len() + 1 {
            match self.caller(&at, words, saved, &mut context) {
                Caller::Found { position, stale } => {
                    unwound.stale += stale;
                    unwound.frames.push(Frame { address: position.pc, exact: false, checked: true });
                    at = position;
                }
                Caller::Outermost => {
                    unwound.stale += words.range(at.passed..).count();
                    return unwound;
                }
                Caller::Unknown if self.arch.call_pushes_return_address => {
                    // The next scanned word is taken for the return
                    // address; where a call pushed it, the caller's stack
                    // pointer is just above, and the tables go on from there.
                    let Some((&slot, &address)) = words.range(at.passed..).next() else { break };
                    unwound.frames.push(Frame { address, exact: false, checked: false });
                    let above = slot + 8;
                    at = Position { pc: address, exact: false, sp: above, fp: None, lr: None, passed: above };
                }
                Caller::Unknown => break,
            }
        }
        // The tables stop here: keep what the scan found further up.
        let rest =
            words.range(at.passed..).map(|(_, &address)| Frame { address, exact: false, checked: false });
        unwound.frames.extend(rest);
        unwound
    }

    /// One step of the unwinding: the caller of the frame at `at`.
    fn caller(
        &self,
        at: &Position,
        words: &BTreeMap<u64, u64>,
        saved: &BTreeMap<u64, u64>,
        context: &mut UnwindContext<usize>,
    ) -> Caller {
        let probe = if at.exact { at.pc } else { at.pc - 1 };
        let Some(step) = self.step(probe, context) else { return Caller::Unknown };
        let base = match step.cfa.0 {
            r if r == self.arch.sp => Some(at.sp),
            r if r == self.arch.fp => at.fp,
            _ => None,
        };
        let Some(cfa) = base.map(|base| base.wrapping_add_signed(step.cfa.1)) else { return Caller::Unknown };
        let (pc, slot) = match step.return_address {
            Some(RegisterRule::Offset(offset)) => {
                let slot = cfa.wrapping_add_signed(offset);
                match words.get(&slot) {
                    Some(&value) => (value, Some(slot)),
                    None => return Caller::Unknown,
                }
            }
            Some(RegisterRule::Undefined) => return Caller::Outermost,
            None | Some(RegisterRule::SameValue) => match at.lr {
                Some(value) => (value, None),
                None => return Caller::Unknown,
            },
            Some(_) => return Caller::Unknown,
        };
        if pc == 0 {
            return Caller::Outermost;
        }
        // Scanned words below the saved return address were stale.
        let stale = words.range(at.passed..slot.unwrap_or(cfa).max(at.passed)).count();
        let fp = match step.frame_pointer {
            None | Some(RegisterRule::SameValue) => at.fp,
            Some(RegisterRule::Offset(offset)) => saved.get(&cfa.wrapping_add_signed(offset)).copied(),
            Some(_) => None,
        };
        let passed = slot.map_or(cfa, |slot| slot + 8).max(at.passed);
        Caller::Found { position: Position { pc, exact: false, sp: cfa, fp, lr: None, passed }, stale }
    }
}
