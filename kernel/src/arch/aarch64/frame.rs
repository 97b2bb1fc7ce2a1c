//! What an exception hands its handlers: the registers the vectors saved
//! (`vectors.s` fixes the layout), which vector was taken, and from where.
//! A leaf: the exception entry, the fault report, preemption and the
//! semihosting probe all read it, and it reads none of them.

/// What the vectors save before calling the exception handler. The layout is
/// fixed by `vectors.s`.
#[repr(C)]
pub(super) struct Frame {
    /// x0..=x17.
    pub x: [u64; 18],
    pub x18: u64,
    /// Frame pointer.
    pub x29: u64,
    /// Link register.
    pub x30: u64,
    pub elr: u64,
    pub spsr: u64,
    pub fpcr: u64,
    pub fpsr: u64,
    _pad: u64,
    /// q0..=q31.
    pub q: [u128; 32],
}

pub(super) const FRAME_SIZE: usize = core::mem::size_of::<Frame>();
const _: () = assert!(FRAME_SIZE == 720 && FRAME_SIZE.is_multiple_of(16));

/// Which vector was taken: entry number `kind` of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Vector {
    Synchronous,
    Irq,
    Fiq,
    SError,
}

impl Vector {
    pub(super) fn of(kind: u64) -> Self {
        match kind % 4 {
            0 => Self::Synchronous,
            1 => Self::Irq,
            2 => Self::Fiq,
            _ => Self::SError,
        }
    }
}

/// Where the exception came from, from the entry number.
pub(super) fn origin(kind: u64) -> &'static str {
    match kind / 4 {
        0 => "EL1",
        1 => "EL1, inside an exception handler",
        2 => "EL0 (AArch64)",
        _ => "EL0 (AArch32)",
    }
}
