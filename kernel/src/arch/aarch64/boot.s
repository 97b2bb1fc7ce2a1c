// First instructions of every core. Nothing here may touch memory through
// an atomic: the MMU is off, and exclusives need it on (see mmu.rs).
//
// Register conventions until Rust runs:
//   x19  what the loader passed in x0 (the boot core: maybe a DTB address;
//        a secondary: its dense core index, the PSCI context id)
//   x20  the exception level the core was entered at

.section .text.boot, "ax"

// The boot core, from the loader.
.global _start
_start:
    // The unwind tables' word that nothing called this: a debugger's or
    // a backtrace's unwinding ends here.
    .cfi_startproc
    .cfi_undefined x30
    mov     x19, x0
    bl      el1_from_any

    // Zero .bss (the boot stacks live there too; nothing uses them yet).
    adrp    x0, __bss_start
    add     x0, x0, :lo12:__bss_start
    adrp    x1, __bss_end
    add     x1, x1, :lo12:__bss_end
0:  cmp     x0, x1
    b.hs    1f
    stp     xzr, xzr, [x0], #16
    b       0b
1:
    mov     x0, #0
    bl      use_boot_stack
    mov     x0, x19
    mov     x1, x20
    bl      {boot_primary}
2:  wfi
    b       2b
    .cfi_endproc

// Every other core, from PSCI CPU_ON (x0 = context id = core index).
.global _roving_secondary_start
_roving_secondary_start:
    .cfi_startproc
    .cfi_undefined x30
    mov     x19, x0
    bl      el1_from_any
    mov     x0, x19
    bl      use_boot_stack
    mov     x0, x19
    mov     x1, x20
    bl      {boot_secondary}
3:  wfi
    b       3b
    .cfi_endproc

// A core released from a firmware spin table (spin_table.rs): x0 holds
// nothing, so look the core's dense index up by its MPIDR Aff0.
.global _roving_spin_start
_roving_spin_start:
    mrs     x0, mpidr_el1
    and     x0, x0, #0xff
    adrp    x1, {spin_index}
    add     x1, x1, :lo12:{spin_index}
    ldr     x0, [x1, x0, lsl #3]
    b       _roving_secondary_start

// Core x0's stacks: SP_EL0 = top of its boot stack, SP_EL1 = top of its
// exception stack, and SPSel = 0, so the kernel (and every strand) runs on
// SP_EL0 while exceptions are taken on SP_EL1. A stack overflow into a
// guard page then faults onto a stack that still works, and is reported.
// Clobbers x1, x2, x3.
use_boot_stack:
    add     x3, x0, #1
    mov     x1, #{stack_size}
    adrp    x2, {stacks}
    add     x2, x2, :lo12:{stacks}
    madd    x1, x3, x1, x2
    msr     sp_el0, x1
    mov     x1, #{exception_stack_size}
    adrp    x2, {exception_stacks}
    add     x2, x2, :lo12:{exception_stacks}
    madd    x1, x3, x1, x2
    mov     sp, x1
    msr     spsel, #0
    ret

// Leaves the core at EL1h with interrupts masked, the MMU and caches off,
// and FP/SIMD usable, whether it arrived at EL1 or EL2. x20 = entry EL.
// Clobbers x0.
el1_from_any:
    mrs     x0, CurrentEL
    lsr     x20, x0, #2
    cmp     x20, #2
    b.eq    from_el2
    cmp     x20, #1
    b.ne    unsupported_el
    ldr     x0, ={sctlr_el1}
    msr     sctlr_el1, x0
    mov     x0, #(3 << 20)              // CPACR_EL1.FPEN: no FP/SIMD traps
    msr     cpacr_el1, x0
    isb
    ret

from_el2:
    mov     x0, #(1 << 31)              // HCR_EL2.RW: EL1 runs AArch64; IRQs stay at EL1
    msr     hcr_el2, x0
    mov     x0, #3                      // CNTHCTL_EL2: EL1 may read the counter and use the timer
    msr     cnthctl_el2, x0
    msr     cntvoff_el2, xzr
    mrs     x0, midr_el1                // EL1 reads of MIDR/MPIDR return these
    msr     vpidr_el2, x0
    mrs     x0, mpidr_el1
    msr     vmpidr_el2, x0
    mov     x0, #0x33ff                 // CPTR_EL2: no FP/SIMD traps
    msr     cptr_el2, x0
    msr     hstr_el2, xzr
    mrs     x0, pmcr_el0                // MDCR_EL2: EL1 owns every PMU counter, no traps
    ubfx    x0, x0, #11, #5             // PMCR_EL0.N
    msr     mdcr_el2, x0
    mrs     x0, id_aa64pfr0_el1         // GICv3 system registers present?
    ubfx    x0, x0, #24, #4
    cbz     x0, 4f
    mrs     x0, S3_4_C12_C9_5           // ICC_SRE_EL2: SRE | DFB | DIB | Enable (EL1 may use them)
    orr     x0, x0, #0xf
    msr     S3_4_C12_C9_5, x0
    isb
4:  ldr     x0, ={sctlr_el1}
    msr     sctlr_el1, x0
    mov     x0, #(3 << 20)
    msr     cpacr_el1, x0
    mov     x0, #0x3c5                  // SPSR: EL1h with D, A, I, F masked
    msr     spsr_el2, x0
    msr     elr_el2, x30
    eret

// EL3 (QEMU secure=on) or anything else: say so through semihosting, stop.
unsupported_el:
    adr     x1, unsupported_el_message
    mov     w0, #0x04                   // SYS_WRITE0
    hlt     #0xf000
    adr     x1, unsupported_el_exit
    mov     w0, #0x18                   // SYS_EXIT
    hlt     #0xf000
5:  wfi
    b       5b

.balign 8
unsupported_el_exit:
    .quad   0x20026                     // ADP_Stopped_ApplicationExit
    .quad   {exit_fault}
unsupported_el_message:
    .asciz  "roving-kernel: entered at an exception level other than EL1 or EL2; cannot continue\n"
.balign 4
