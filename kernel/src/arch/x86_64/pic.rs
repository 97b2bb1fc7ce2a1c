//! The legacy 8259 interrupt controllers: turned off. The BIOS leaves them
//! delivering the PIT's tick as vector 8, which would look like a double
//! fault the first time a core enabled interrupts. They are moved to
//! vectors 0x20..0x30 (so even a spurious one cannot pose as an exception)
//! and every line is masked; the local APIC does all the kernel needs.

use x86_64::instructions::port::Port;

const MASTER: u16 = 0x20;
const SLAVE: u16 = 0xA0;
/// Where the two controllers' eight vectors each start.
const MASTER_BASE: u8 = 0x20;
const SLAVE_BASE: u8 = 0x28;

/// Remaps and masks both controllers. Boot core, interrupts disabled.
pub(super) fn disable() {
    let mut master_command = Port::<u8>::new(MASTER);
    let mut master_data = Port::<u8>::new(MASTER + 1);
    let mut slave_command = Port::<u8>::new(SLAVE);
    let mut slave_data = Port::<u8>::new(SLAVE + 1);
    // SAFETY: the PC's 8259 ports; the standard initialisation sequence
    // (ICW1 edge-triggered with ICW4, ICW2 vector base, ICW3 cascade on
    // line 2, ICW4 8086 mode), then every line masked.
    unsafe {
        master_command.write(0x11);
        slave_command.write(0x11);
        master_data.write(MASTER_BASE);
        slave_data.write(SLAVE_BASE);
        master_data.write(4);
        slave_data.write(2);
        master_data.write(1);
        slave_data.write(1);
        master_data.write(0xff);
        slave_data.write(0xff);
    }
}
