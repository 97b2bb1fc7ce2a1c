// The EL1 exception vector table. Each entry saves the caller-saved state
// into a Frame (layout in exception.rs) and calls the Rust handler with the
// entry's number; if the handler returns, the state is restored and the
// interrupted code resumes. x19-x28 are preserved by the handler itself, as
// the procedure call standard requires. All 32 vector registers are saved:
// an IRQ can arrive in the middle of any code, and the standard only makes
// a callee keep the low 64 bits of v8-v15.

.macro VECTOR kind
.balign 0x80
    sub     sp, sp, #{frame_size}
    stp     x0, x1, [sp, #0]
    mov     x0, #\kind
    b       exception_entry
.endm

.section .text.vectors, "ax"
.balign 0x800
.global _roving_vectors
_roving_vectors:
    VECTOR 0      // current EL, SP_EL0: synchronous
    VECTOR 1      //                     IRQ
    VECTOR 2      //                     FIQ
    VECTOR 3      //                     SError
    VECTOR 4      // current EL, SP_ELx: synchronous
    VECTOR 5      //                     IRQ
    VECTOR 6      //                     FIQ
    VECTOR 7      //                     SError
    VECTOR 8      // lower EL, AArch64:  synchronous
    VECTOR 9      //                     IRQ
    VECTOR 10     //                     FIQ
    VECTOR 11     //                     SError
    VECTOR 12     // lower EL, AArch32:  synchronous
    VECTOR 13     //                     IRQ
    VECTOR 14     //                     FIQ
    VECTOR 15     //                     SError

exception_entry:
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x29, [sp, #144]
    mrs     x2, elr_el1
    stp     x30, x2, [sp, #160]
    mrs     x2, spsr_el1
    mrs     x3, fpcr
    stp     x2, x3, [sp, #176]
    mrs     x2, fpsr
    str     x2, [sp, #192]
    stp     q0, q1, [sp, #208]
    stp     q2, q3, [sp, #240]
    stp     q4, q5, [sp, #272]
    stp     q6, q7, [sp, #304]
    stp     q8, q9, [sp, #336]
    stp     q10, q11, [sp, #368]
    stp     q12, q13, [sp, #400]
    stp     q14, q15, [sp, #432]
    stp     q16, q17, [sp, #464]
    stp     q18, q19, [sp, #496]
    stp     q20, q21, [sp, #528]
    stp     q22, q23, [sp, #560]
    stp     q24, q25, [sp, #592]
    stp     q26, q27, [sp, #624]
    stp     q28, q29, [sp, #656]
    stp     q30, q31, [sp, #688]

    mov     x1, sp
    bl      {handler}

    ldp     q30, q31, [sp, #688]
    ldp     q28, q29, [sp, #656]
    ldp     q26, q27, [sp, #624]
    ldp     q24, q25, [sp, #592]
    ldp     q22, q23, [sp, #560]
    ldp     q20, q21, [sp, #528]
    ldp     q18, q19, [sp, #496]
    ldp     q16, q17, [sp, #464]
    ldp     q14, q15, [sp, #432]
    ldp     q12, q13, [sp, #400]
    ldp     q10, q11, [sp, #368]
    ldp     q8, q9, [sp, #336]
    ldp     q6, q7, [sp, #304]
    ldp     q4, q5, [sp, #272]
    ldp     q2, q3, [sp, #240]
    ldp     q0, q1, [sp, #208]
    ldr     x2, [sp, #192]
    msr     fpsr, x2
    ldp     x2, x3, [sp, #176]
    msr     spsr_el1, x2
    msr     fpcr, x3
    ldp     x30, x2, [sp, #160]
    msr     elr_el1, x2
    ldp     x18, x29, [sp, #144]
    ldp     x16, x17, [sp, #128]
    ldp     x14, x15, [sp, #112]
    ldp     x12, x13, [sp, #96]
    ldp     x10, x11, [sp, #80]
    ldp     x8, x9, [sp, #64]
    ldp     x6, x7, [sp, #48]
    ldp     x4, x5, [sp, #32]
    ldp     x2, x3, [sp, #16]
    ldp     x0, x1, [sp, #0]
    add     sp, sp, #{frame_size}
    eret
