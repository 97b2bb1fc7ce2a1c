//! The first instructions of every core, up to Rust.
//!
//! Core 0 arrives at `_start` from the loader; every other core arrives at
//! `secondary_start` from PSCI `CPU_ON`, with its index in `x0`. Each one
//! leaves EL2 if it came in there, turns on FP/SIMD (roving's context
//! switch saves `d8`-`d15`, which traps otherwise), takes its own boot
//! stack, keeps its index in `TPIDR_EL1`, and calls [`core_entry`]. Core 0
//! also zeroes `.bss` first. Nothing here touches memory through an
//! atomic: the MMU is still off.

use crate::{exceptions, mmu, platform};

/// Bytes of each core's boot stack. The pool's scheduler runs here;
/// strands run on roving's fibre stacks.
const STACK_BYTES: usize = 64 * 1024;

#[repr(C, align(16))]
struct Stacks([[u8; STACK_BYTES]; platform::MAX_CORES]);

static mut STACKS: Stacks = Stacks([[0; STACK_BYTES]; platform::MAX_CORES]);

core::arch::global_asm!(
    r#"
.section .text.boot, "ax"
.global _start
_start:
    mov     x19, #0
    bl      to_el1
    adrp    x0, __bss_start
    add     x0, x0, :lo12:__bss_start
    adrp    x1, __bss_end
    add     x1, x1, :lo12:__bss_end
0:  cmp     x0, x1
    b.hs    enter_rust
    stp     xzr, xzr, [x0], #16
    b       0b

.global embed_secondary_start
embed_secondary_start:
    mov     x19, x0
    bl      to_el1

// x19 = this core's index, x20 = the level it arrived at.
enter_rust:
    adrp    x1, {stacks}
    add     x1, x1, :lo12:{stacks}
    add     x2, x19, #1
    ldr     x3, ={stack_bytes}
    madd    x1, x2, x3, x1
    mov     sp, x1
    msr     tpidr_el1, x19
    mov     x0, x19
    mov     x1, x20
    bl      {core_entry}
1:  wfe
    b       1b

// Leaves the core at EL1 (from EL2 if it arrived there) with interrupts
// masked and FP/SIMD usable; x20 = the level it arrived at. Clobbers x0.
to_el1:
    mrs     x20, CurrentEL
    lsr     x20, x20, #2
    cmp     x20, #1
    b.eq    2f
    cmp     x20, #2
    b.ne    .                        // EL3 is not supported: the run times out
    mov     x0, #(1 << 31)           // HCR_EL2.RW: EL1 runs AArch64
    msr     hcr_el2, x0
    mov     x0, #3                   // CNTHCTL_EL2: EL1 may read the counter
    msr     cnthctl_el2, x0
    msr     cntvoff_el2, xzr         // one time base on every core
    mov     x0, #0x33ff              // CPTR_EL2: no FP/SIMD traps
    msr     cptr_el2, x0
    mov     x0, #0x3c5               // SPSR_EL2: EL1h, DAIF masked
    msr     spsr_el2, x0
    adr     x0, 2f
    msr     elr_el2, x0
    eret
2:  mov     x0, #(3 << 20)           // CPACR_EL1.FPEN: no FP/SIMD traps
    msr     cpacr_el1, x0
    isb
    ret
"#,
    stacks = sym STACKS,
    stack_bytes = const STACK_BYTES,
    core_entry = sym core_entry,
);

/// Every core's first Rust: memory attributes before any atomic, then the
/// exception vectors, then core 0 runs the program and the others wait to
/// be given work.
extern "C" fn core_entry(index: usize, arrived_at_el: u64) -> ! {
    mmu::enable();
    exceptions::install();
    platform::init_core();
    if index == 0 {
        platform::init_machine(arrived_at_el);
        crate::kernel_main()
    } else {
        platform::run_secondary(index)
    }
}
