//! What an interrupt or exception hands its handlers: the registers the
//! vector stubs saved. A leaf: the vector handler, the fault report and
//! preemption all read it, and it reads none of them.

/// What the vector stubs save before calling the vector handler; the
/// layout is fixed by `vectors.s` and the CPU.
#[repr(C)]
#[derive(Debug)]
pub(super) struct Frame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}
