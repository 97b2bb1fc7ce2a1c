// x86_64 entry. Intel syntax (Rust's default for x86 assembly).
//
// Two loaders, one path. PVH: QEMU (or any PVH loader) reads the Xen ELF
// note below, loads the ELF at its physical addresses and jumps to
// _pvh_start. Multiboot2: GRUB (from a BIOS or UEFI disk) finds the header
// below, loads the ELF the same way and jumps to _multiboot2_start. Both
// arrive in 32-bit protected mode, paging off, interrupts off, with ebx =
// their boot information; ebp says which (0 PVH, 1 Multiboot2) from there
// on. QEMU's -kernel looks only for a Multiboot (version 1) header, which
// it would refuse on an ELF64, so it takes the PVH note.

.section .multiboot2, "a"
.balign 8
multiboot2_header:
    .long   0xE85250D6                  // magic
    .long   0                           // architecture: i386 (32-bit entry)
    .long   multiboot2_header_end - multiboot2_header
    .long   -(0xE85250D6 + (multiboot2_header_end - multiboot2_header))
    .balign 8                           // entry address tag
    .short  3, 0
    .long   12
    .long   _multiboot2_start
    // Relocatable tag (optional: a loader without it loads the image at
    // its link address): anywhere from 1 MiB that GRUB finds room for the
    // whole image, zeroed memory included, page-aligned, the lowest such
    // place first, and ending below 2 GiB, where the code's sign-extended
    // 32-bit addresses still reach. The entry applies the relocations
    // (apply_relocations below). tools/pc-disk may raise min_addr.
    .balign 8
    .short  10, 1
    .long   24
    .long   0x100000                    // min_addr
    .long   0x80000000                  // max_addr: the image's end
    .long   0x1000                      // align: a page, the most any of its data asks
    .long   1                           // preference: the lowest address
    .balign 8                           // end tag
    .short  0, 0
    .long   8
multiboot2_header_end:

.section .note.Xen, "a", @note
.balign 4
    .long   4                           // name size
    .long   8                           // descriptor size
    .long   18                          // XEN_ELFNOTE_PHYS32_ENTRY
    .asciz  "Xen"
    .balign 4
    .quad   _pvh_start
    .balign 4

// Moves every absolute address the image holds by its load offset, with
// ebx the Multiboot2 boot information (kept). The offset is the load base
// tag's address (type 21) less the link base; with no such tag, or an
// offset of 0, nothing moves. The places come from a module GRUB loaded,
// the table tools/pc-relocs writes: "RVRL", the count, the link base,
// then each place's offset from the link base, bit 31 set for a 64-bit
// field. Until the last place is patched, the code here reads only its
// own link-time immediates (which the table patches afterwards, unread)
// and addresses computed from the boot information, so it runs the same
// wherever the image is. With an offset but no table it says so on COM1
// and halts. At the end, the offset is kept in ROVING_LOAD_OFFSET (in
// .data: .bss is zeroed later).
.macro APPLY_RELOCATIONS
    lea     edi, [ebx + 8]              // the first tag
10: mov     eax, [edi]
    test    eax, eax
    jz      19f                         // the end tag: loaded where linked
    cmp     eax, 21
    je      11f
    mov     ecx, [edi + 4]
    add     ecx, 7
    and     ecx, -8
    add     edi, ecx
    jmp     10b
11: mov     edx, [edi + 8]              // the load base
    sub     edx, offset __image_start   // less the link base: the offset
    jz      19f
    lea     edi, [ebx + 8]
12: mov     eax, [edi]
    test    eax, eax
    jz      17f                         // no table
    cmp     eax, 3                      // a module
    jne     13f
    mov     esi, [edi + 8]
    cmp     dword ptr [esi], 0x4c525652 // "RVRL"
    jne     13f
    cmp     dword ptr [esi + 8], offset __image_start
    je      14f                         // the table of this link
13: mov     ecx, [edi + 4]
    add     ecx, 7
    and     ecx, -8
    add     edi, ecx
    jmp     12b
14: mov     ecx, [esi + 4]              // the count
    mov     edi, [esi + 8]
    add     edi, edx                    // the load base
    add     esi, 12
    mov     ebp, edx
    sar     ebp, 31                     // the offset's upper half, for 64-bit fields
15: test    ecx, ecx
    jz      18f
    mov     eax, [esi]
    add     esi, 4
    dec     ecx
    btr     eax, 31
    jc      16f
    add     [edi + eax], edx
    jmp     15b
16: add     [edi + eax], edx
    adc     [edi + eax + 4], ebp
    jmp     15b
17: // Loaded elsewhere, with nothing to say where the addresses are.
    mov     esi, offset no_relocation_table
    add     esi, edx
    mov     dx, 0x3f8 + 5               // COM1's line status
171:mov     al, [esi]
    test    al, al
    jz      173f
172:in      al, dx
    test    al, 0x20                    // room to send
    jz      172b
    mov     al, [esi]
    sub     dx, 5
    out     dx, al
    add     dx, 5
    inc     esi
    jmp     171b
173:cli
    hlt
    jmp     173b
18: mov     [ROVING_LOAD_OFFSET], edx
    mov     [ROVING_LOAD_OFFSET + 4], ebp
19:
.endm

// Turns on PAE, loads CR3 with the identity map, sets EFER.LME and turns
// paging on: the core is then in compatibility mode until a far jump to a
// 64-bit code segment. Clobbers eax, ecx, edx. (A macro, not a function:
// neither the boot core nor a starting core has a stack yet.)
.macro ENTER_LONG_MODE
    mov     eax, cr4
    // PAE; OSFXSR and OSXMMEXCPT: SSE on, for strands that use it in
    // assembly (the kernel itself is soft-float), saved by fxsave when a
    // strand that used it since it last resumed is preempted (CR0.TS).
    or      eax, (1 << 5) | (1 << 9) | (1 << 10)
    mov     cr4, eax
    mov     eax, offset {pml4}
    mov     cr3, eax
    mov     ecx, 0xC0000080             // IA32_EFER
    rdmsr
    or      eax, 1 << 8                 // LME
    wrmsr
    mov     eax, cr0
    or      eax, (1 << 31) | (1 << 16) | (1 << 1) | 1  // PG | WP | MP | PE
    and     eax, ~(1 << 2)              // EM off: SSE instructions run
    mov     cr0, eax
.endm

// In 64-bit code: the data segment everywhere, null FS and GS.
.macro LONG_MODE_SEGMENTS
    mov     ax, 0x10
    mov     ds, ax
    mov     es, ax
    mov     ss, ax
    xor     eax, eax
    mov     fs, ax
    mov     gs, ax
.endm

// The boot GDT, also the one started cores use until Rust loads the
// kernel's: 0x08 64-bit code, 0x10 data, 0x18 32-bit code.
.macro BOOT_GDT_ENTRIES
    .quad   0
    .quad   0x00AF9A000000FFFF
    .quad   0x00CF92000000FFFF
    .quad   0x00CF9A000000FFFF
.endm

.section .rodata.boot_messages, "a"
no_relocation_table:
    .ascii  "roving: the loader put the kernel at another address than it was linked at, "
    .asciz  "and passed no relocation table (a Multiboot2 module, tools/pc-relocs); stopping\r\n"

.section .rodata.boot_gdt, "a"
.balign 8
boot_gdt:
    BOOT_GDT_ENTRIES
boot_gdt_pointer:
    .word   4 * 8 - 1
    .quad   boot_gdt

.section .text.boot, "ax"
.code32
.global _multiboot2_start
_multiboot2_start:
    cli
    cld
    // GRUB loads the image where it finds room (the relocatable tag), not
    // always where it was linked: before anything uses one of the image's
    // own absolute addresses, they are moved by the load offset.
    APPLY_RELOCATIONS
    mov     ebp, 1                      // Multiboot2 boot information
    jmp     boot_32

.global _pvh_start
_pvh_start:
    cli
    cld
    xor     ebp, ebp                    // PVH start info
boot_32:
    mov     esi, ebx                    // keep the boot information

    // Zero .bss: the page tables and stacks below live there.
    mov     edi, offset __bss_start
    mov     ecx, offset __bss_end
    sub     ecx, edi
    xor     eax, eax
    rep stosb

    // Identity map of the first 4 GiB in 2 MiB pages: PML4[0] -> PDPT,
    // PDPT[0..4] -> four page directories, 2048 entries of (address | PS | RW | P).
    mov     eax, offset {pml4}
    mov     ebx, offset {pdpt}
    or      ebx, 3
    mov     [eax], ebx
    mov     edi, offset {pdpt}
    mov     ebx, offset {pd}
    or      ebx, 3
    mov     ecx, 4
1:  mov     [edi], ebx
    add     ebx, 4096
    add     edi, 8
    loop    1b
    mov     edi, offset {pd}
    mov     ebx, 0x83
    mov     ecx, 2048
2:  mov     [edi], ebx
    add     ebx, 0x200000
    add     edi, 8
    loop    2b

    ENTER_LONG_MODE
    lgdt    [boot_gdt_pointer]
    // ljmp 0x08, long_mode_start (encoded by hand, as in the trampoline)
    .byte   0xea
    .long   long_mode_start
    .word   0x08

.code64
long_mode_start:
    // The unwind tables' word that nothing called this: a debugger's or
    // a backtrace's unwinding ends here.
    .cfi_startproc
    .cfi_undefined rip
    LONG_MODE_SEGMENTS
    mov     rsp, offset {stacks}
    add     rsp, {stack_size}           // core 0's boot stack
    mov     edi, esi                    // the boot information, zero-extended
    mov     esi, ebp                    // and which loader's it is
    call    {boot_primary}
3:  hlt
    jmp     3b
    .cfi_endproc

// The real-mode trampoline every other core starts in (smp.rs copies it
// to TRAMPOLINE, below 1 MiB, and names its page in the STARTUP IPI). It
// runs at TRAMPOLINE whatever its link address, so it only uses addresses
// computed from TRAMPOLINE, and absolute addresses of the kernel.
.section .text.trampoline, "ax"
.global _roving_trampoline_start
.global _roving_trampoline_end
.code16
_roving_trampoline_start:
    cli
    cld
    mov     ax, cs
    mov     ds, ax
    // lgdt [trampoline_gdt_pointer - start], encoded by hand: the
    // assembler takes no label difference as a 16-bit memory operand.
    .byte   0x0f, 0x01, 0x16
    .word   trampoline_gdt_pointer - _roving_trampoline_start
    mov     eax, cr0
    or      eax, 1
    mov     cr0, eax
    // ljmpl 0x18, TRAMPOLINE + (trampoline_32 - start): 32-bit offset from 16-bit code.
    .byte   0x66, 0xea
    .long   {trampoline} + (trampoline_32 - _roving_trampoline_start)
    .word   0x18

.code32
trampoline_32:
    mov     ax, 0x10
    mov     ds, ax
    mov     es, ax
    mov     ss, ax
    ENTER_LONG_MODE
    // ljmp 0x08, TRAMPOLINE + (trampoline_64 - start)
    .byte   0xea
    .long   {trampoline} + (trampoline_64 - _roving_trampoline_start)
    .word   0x08

.code64
trampoline_64:
    LONG_MODE_SEGMENTS
    // This core's APIC id, as cpu::apic_id reads it: the x2APIC id
    // (CPUID.0xB:EDX) where leaf 0xB exists, else CPUID.1:EBX[31:24].
    xor     eax, eax
    cpuid
    cmp     eax, 0xb
    jb      5f
    mov     eax, 0xb
    xor     ecx, ecx
    cpuid
    mov     ebx, edx
    jmp     6f
5:  mov     eax, 1
    cpuid
    shr     ebx, 24
6:  // Its dense index: where the starting core wrote that id.
    movabs  rax, offset {apic_id_by_index}
    xor     edi, edi
7:  cmp     dword ptr [rax + rdi * 4], ebx
    je      8f
    inc     edi
    cmp     edi, {max_cores}
    jb      7b
    jmp     4f
8:
    // Its boot stack: stacks + (index + 1) * stack_size.
    lea     rax, [rdi + 1]
    imul    rax, rax, {stack_size}
    movabs  rcx, offset {stacks}
    add     rax, rcx
    mov     rsp, rax
    movabs  rax, offset {boot_secondary}
    call    rax
4:  hlt
    jmp     4b

.balign 8
trampoline_gdt:
    BOOT_GDT_ENTRIES
trampoline_gdt_pointer:
    .word   4 * 8 - 1
    .long   {trampoline} + (trampoline_gdt - _roving_trampoline_start)
_roving_trampoline_end:
