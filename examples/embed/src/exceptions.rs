//! Every exception is a fault here: this kernel takes no interrupts. The
//! table reports which entry was taken, with the syndrome and addresses,
//! and ends the run with status 102.

use aarch64_cpu::registers::{ELR_EL1, ESR_EL1, FAR_EL1, Readable, VBAR_EL1, Writeable};

core::arch::global_asm!(
    r#"
.section .text.vectors, "ax"
.global embed_vectors
.balign 2048
embed_vectors:
.set entry, 0
.rept 16
    .balign 128
    mov     x0, #entry
    b       {fault}
    .set entry, entry + 1
.endr
"#,
    fault = sym fault,
);

unsafe extern "C" {
    static embed_vectors: u8;
}

/// Points the calling core's `VBAR_EL1` at the table.
pub fn install() {
    VBAR_EL1.set(&raw const embed_vectors as u64);
}

const KINDS: [&str; 4] = ["synchronous", "IRQ", "FIQ", "SError"];
const FROM: [&str; 4] = ["EL1 on SP_EL0", "EL1", "EL0 (AArch64)", "EL0 (AArch32)"];

extern "C" fn fault(entry: u64) -> ! {
    let entry = entry as usize;
    crate::console::emergency(format_args!(
        "*** fault on core {}: {} exception from {}: ESR {:#x} at {:#x}, address {:#x}\n",
        aarch64_cpu::registers::TPIDR_EL1.get(),
        KINDS[entry % 4],
        FROM[entry / 4],
        ESR_EL1.get(),
        ELR_EL1.get(),
        FAR_EL1.get()
    ));
    crate::console::exit(102)
}
