// One entry stub per interrupt vector, 16 bytes apart from _roving_vectors.
// Each pushes a zero where the CPU pushes no error code, then its vector
// number, and joins vector_common, which saves the general registers into a
// Frame (layout in exception.rs), calls the Rust handler and returns with
// IRETQ. The kernel is soft-float: no vector or x87 state to save.

.section .text.vectors, "ax"
.balign 16
.global _roving_vectors
_roving_vectors:
.set vector, 0
.rept 256
    .balign 16
    .if (vector == 8) || (vector >= 10 && vector <= 14) || (vector == 17) || (vector == 21) || (vector == 29) || (vector == 30)
    .else
    push    0
    .endif
    push    vector
    jmp     vector_common
    .set vector, vector + 1
.endr

vector_common:
    push    rax
    push    rbx
    push    rcx
    push    rdx
    push    rsi
    push    rdi
    push    rbp
    push    r8
    push    r9
    push    r10
    push    r11
    push    r12
    push    r13
    push    r14
    push    r15
    cld
    mov     rdi, rsp
    call    {handler}
    pop     r15
    pop     r14
    pop     r13
    pop     r12
    pop     r11
    pop     r10
    pop     r9
    pop     r8
    pop     rbp
    pop     rdi
    pop     rsi
    pop     rdx
    pop     rcx
    pop     rbx
    pop     rax
    add     rsp, 16                     // vector number and error code
    iretq
