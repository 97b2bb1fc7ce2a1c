//! Interrupts and exceptions: the IDT, and the GDT with one TSS per core.
//!
//! Work runs with interrupts enabled, so an interrupt may arrive in any
//! code outside the short masked sections (`crate::masking`); its handler
//! runs with them disabled (interrupt gates) and returns to it with every
//! register kept. Every exception but one is a fault: a strand or an async
//! task that takes one fails alone (`crate::fault`), and anywhere else it
//! is reported and the run ends. The exception is device-not-available
//! (#NM), which only roving's lazy vector state raises (CR0.TS, set by its
//! preemption entry): the handler clears TS and the SSE or x87 instruction
//! runs again.
//!
//! Every vector runs on a small stack of its core's own, named in its TSS:
//! a strand that overflows into its guard page then faults onto a stack
//! that still works, and is reported, instead of escalating to a double
//! and then a triple fault. Each core has 16 KiB for this. Interrupts
//! start at its top (IST 1), faults half way down (IST 2): an IST entry
//! starts at the same place every time, and a fault in a device's
//! handler, which that handler alone may fail (`crate::interrupts`), must
//! leave the handler's frames above as they were. So a handler has 8 KiB
//! before it would meet a fault's frames, and a fault's report 8 KiB.

use super::frame::Frame;
use super::{apic, fault, ioapic};
use crate::boot_info::MAX_CORES;
use core::arch::global_asm;
use spin::Once;
use x86_64::VirtAddr;
use x86_64::instructions::segmentation::{CS, DS, ES, SS, Segment};
use x86_64::instructions::tables::{lidt, load_tss};
use x86_64::registers::control::{Cr0, Cr0Flags};
use x86_64::structures::DescriptorTablePointer;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use x86_64::structures::tss::TaskStateSegment;

global_asm!(include_str!("vectors.s"), handler = sym handle_vector);

unsafe extern "C" {
    static _roving_vectors: u8;
}

/// Bytes between vector stubs (`vectors.s`).
const STUB_SIZE: u64 = 16;

/// Bytes of interrupt stack per core.
const INTERRUPT_STACK_SIZE: usize = 16 * 1024;

#[repr(C, align(16))]
struct InterruptStacks([[u8; INTERRUPT_STACK_SIZE]; MAX_CORES]);

/// Written only by the core that owns each stack, through IST 1 and 2.
static mut INTERRUPT_STACKS: InterruptStacks = InterruptStacks([[0; INTERRUPT_STACK_SIZE]; MAX_CORES]);

/// The lower part of each core's interrupt stack, where faults start (a
/// fault's handler either points the fault's return elsewhere or reports
/// it and ends the run). Not a stack of its own: with 512 KiB more of
/// them the image no longer fitted where GRUB under OVMF puts it, at
/// 1 MiB (the QEMU suite checks that place).
const FAULT_STACK_SIZE: usize = INTERRUPT_STACK_SIZE / 2;

/// The IST entries (1-based, as a gate names them).
const INTERRUPT_IST: u8 = 1;
const FAULT_IST: u8 = 2;

/// A 64-bit interrupt gate (Intel SDM vol. 3, "IDT Descriptors").
#[derive(Clone, Copy)]
#[repr(C)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    attributes: u8,
    offset_middle: u16,
    offset_high: u32,
    reserved: u32,
}

/// Present, ring 0, 64-bit interrupt gate (interrupts stay disabled).
const INTERRUPT_GATE: u8 = 0x8E;

impl Gate {
    fn new(handler: u64, selector: SegmentSelector, ist: u8) -> Self {
        Self {
            offset_low: handler as u16,
            selector: selector.0,
            ist,
            attributes: INTERRUPT_GATE,
            offset_middle: (handler >> 16) as u16,
            offset_high: (handler >> 32) as u32,
            reserved: 0,
        }
    }
}

#[repr(C, align(16))]
struct Idt([Gate; 256]);

/// `1 + 1 + 2 * MAX_CORES` entries: null, code, data, and a two-entry
/// TSS descriptor per core.
const GDT_ENTRIES: usize = 3 + 2 * MAX_CORES;

struct Descriptors {
    gdt: GlobalDescriptorTable<GDT_ENTRIES>,
    code: SegmentSelector,
    data: SegmentSelector,
    tss: [SegmentSelector; MAX_CORES],
}

/// Each core's interrupt stack, for a backtrace's walk to stay on.
pub(super) fn interrupt_stacks() -> crate::backtrace::StackArray {
    crate::backtrace::StackArray { start: &raw const INTERRUPT_STACKS as usize, bytes: INTERRUPT_STACK_SIZE }
}

static TSS: Once<[TaskStateSegment; MAX_CORES]> = Once::new();
static DESCRIPTORS: Once<Descriptors> = Once::new();
static IDT: Once<Idt> = Once::new();

/// Builds the GDT, the TSSs and the IDT. Boot core, once.
pub(super) fn init_tables() {
    let tss = TSS.call_once(|| {
        core::array::from_fn(|core| {
            let mut tss = TaskStateSegment::new();
            let base = &raw const INTERRUPT_STACKS as usize + core * INTERRUPT_STACK_SIZE;
            tss.interrupt_stack_table[usize::from(INTERRUPT_IST) - 1] =
                VirtAddr::new((base + INTERRUPT_STACK_SIZE) as u64);
            tss.interrupt_stack_table[usize::from(FAULT_IST) - 1] =
                VirtAddr::new((base + FAULT_STACK_SIZE) as u64);
            tss
        })
    });
    let descriptors = DESCRIPTORS.call_once(|| {
        let mut gdt = GlobalDescriptorTable::empty();
        let code = gdt.append(Descriptor::kernel_code_segment());
        let data = gdt.append(Descriptor::kernel_data_segment());
        let tss = core::array::from_fn(|core| gdt.append(Descriptor::tss_segment(&tss[core])));
        Descriptors { gdt, code, data, tss }
    });
    IDT.call_once(|| {
        let stubs = &raw const _roving_vectors as u64;
        Idt(core::array::from_fn(|vector| {
            let ist = if vector < 32 { FAULT_IST } else { INTERRUPT_IST };
            Gate::new(stubs + vector as u64 * STUB_SIZE, descriptors.code, ist)
        }))
    });
    // SAFETY: every core loads this IDT before it runs a strand, and
    // `handle_vector` answers #NM by clearing CR0.TS and returning to the
    // instruction; nothing in the kernel sets TS.
    unsafe { roving::platform::hooks::use_lazy_vector_state() };
}

/// Device not available (#NM): an SSE or x87 instruction under CR0.TS.
const DEVICE_NOT_AVAILABLE: u8 = 7;

/// Clears CR0.TS: the strand that raised #NM owns the vector registers
/// until its next preemption (roving's lazy vector state).
fn give_vector_registers() {
    // SAFETY: clearing TS only lets SSE and x87 instructions run; the
    // kernel is in ring 0.
    unsafe { core::arch::asm!("clts", options(nomem, nostack, preserves_flags)) };
}

/// Loads the GDT, this core's TSS and the IDT on the calling core.
pub(super) fn install_this_core(index: usize) {
    let descriptors = DESCRIPTORS.get().expect("the boot core built the tables");
    let idt = IDT.get().expect("the boot core built the tables");
    descriptors.gdt.load();
    // SAFETY: the selectors name this GDT's flat kernel code and data
    // segments and this core's own TSS, loaded on this core only.
    unsafe {
        CS::set_reg(descriptors.code);
        SS::set_reg(descriptors.data);
        DS::set_reg(descriptors.data);
        ES::set_reg(descriptors.data);
        load_tss(descriptors.tss[index]);
    }
    let pointer = DescriptorTablePointer {
        limit: (core::mem::size_of::<Idt>() - 1) as u16,
        base: VirtAddr::from_ptr(idt as *const Idt),
    };
    // SAFETY: a complete IDT in a static, every gate pointing at a stub.
    unsafe { lidt(&pointer) };
    // No strand's vector state is in this core's registers yet: with TS
    // set, only a strand that uses them has them saved when preempted.
    // SAFETY: TS only makes SSE and x87 instructions raise #NM, which
    // `handle_vector` answers.
    unsafe { Cr0::update(|flags| flags.insert(Cr0Flags::TASK_SWITCHED)) };
}

/// Called by the stubs with the saved state.
extern "C" fn handle_vector(frame: &mut Frame) {
    match frame.vector as u8 {
        apic::SPURIOUS_VECTOR => {}
        vector if vector < 32 => match vector {
            DEVICE_NOT_AVAILABLE => give_vector_registers(),
            // A strand or task that faults fails alone.
            _ if fault::contain(frame) => {}
            _ => fault::report_and_exit(frame),
        },
        vector => {
            crate::cores::as_interrupt_handler(|| handle_interrupt(vector));
            super::preempt::after_interrupt(frame);
        }
    }
}

/// A device or kernel interrupt (not a fault), acknowledged at the end.
fn handle_interrupt(vector: u8) {
    let line = ioapic::line_of_vector(vector);
    let expected = match (vector, line) {
        (apic::WAKE_VECTOR, _) => true,
        (apic::TIMER_VECTOR, _) => {
            super::timer::disarm();
            if let Some(me) = crate::cores::current() {
                me.timer_fired();
            }
            true
        }
        (_, Some(line)) => crate::interrupts::dispatch(line),
        _ => false,
    };
    if let Some(me) = crate::cores::current() {
        me.count_interrupt(expected);
    }
    apic::eoi();
    if let Some(line) = line {
        crate::interrupts::ended(line);
    }
}
