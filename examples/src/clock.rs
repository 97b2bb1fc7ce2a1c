//! The board's clock as an interrupting device, for the examples that
//! wake work from a device's interrupt (`interrupt`, `driver_task`).
//!
//! QEMU virt's PL031 real-time clock (an alarm a second ahead), the PC's
//! CMOS clock (its periodic interrupt, twice a second) or a Raspberry Pi's
//! system timer (a compare a second ahead). [`DEVICE`] is the name the
//! board gives its line; [`arm`] asks for the next tick; [`acknowledge`],
//! from the handler, quiets the device. (QEMU's raspi4b does not connect
//! the system timer to the GIC: no tick comes there.)

pub use device::{DEVICE, acknowledge, arm};

/// QEMU virt's PL031 real-time clock: its match register raises the line
/// when the seconds counter reaches it.
#[cfg(all(target_arch = "aarch64", feature = "qemu-virt"))]
mod device {
    /// The name the board gives the device's interrupt line.
    pub const DEVICE: &str = "rtc";
    const BASE: usize = 0x0901_0000;
    const DATA: usize = 0x00;
    const MATCH: usize = 0x04;
    const MASK: usize = 0x10;
    const CLEAR: usize = 0x1C;

    fn register(offset: usize) -> *mut u32 {
        (BASE + offset) as *mut u32
    }

    /// The alarm a second ahead, its interrupt on.
    pub fn arm() {
        // SAFETY: the PL031's registers, mapped as device memory with the
        // rest of QEMU virt's first gigabyte; this example is its only user.
        unsafe {
            let now = register(DATA).read_volatile();
            register(MATCH).write_volatile(now + 1);
            register(MASK).write_volatile(1);
        }
    }

    /// Quiets the device (its handler calls this).
    pub fn acknowledge() {
        // SAFETY: as in `arm`; a write to the clear register lowers the line.
        unsafe { register(CLEAR).write_volatile(1) };
    }
}

/// A Raspberry Pi's system timer: compare 3 raises its line when the 1 MHz
/// counter reaches it.
#[cfg(all(target_arch = "aarch64", any(feature = "raspi3b", feature = "raspi4b")))]
mod device {
    use crate::board::SYSTEM_TIMER;

    /// The name the board gives the device's interrupt line.
    pub const DEVICE: &str = "system timer 3";
    const STATUS: usize = 0x00;
    const COUNTER_LOW: usize = 0x04;
    const COMPARE3: usize = 0x18;
    const MATCH3: u32 = 1 << 3;

    fn register(offset: usize) -> *mut u32 {
        (SYSTEM_TIMER + offset) as *mut u32
    }

    /// Compare 3 a second ahead.
    pub fn arm() {
        // SAFETY: the system timer's registers, mapped as device memory
        // with the peripherals; this example is compare 3's only user.
        unsafe {
            let now = register(COUNTER_LOW).read_volatile();
            register(COMPARE3).write_volatile(now.wrapping_add(1_000_000));
        }
    }

    /// Quiets the device (its handler calls this).
    pub fn acknowledge() {
        // SAFETY: as in `arm`; writing the match bit clears it.
        unsafe { register(STATUS).write_volatile(MATCH3) };
    }
}

/// The PC's CMOS clock (MC146818): its periodic interrupt, twice a second.
#[cfg(target_arch = "x86_64")]
mod device {
    use x86_64::instructions::port::Port;

    /// The name the board gives the device's interrupt line.
    pub const DEVICE: &str = "rtc";
    const REGISTER_A: u8 = 0x0A;
    const REGISTER_B: u8 = 0x0B;
    const REGISTER_C: u8 = 0x0C;
    /// Register A's rate field: 2 Hz.
    const TWO_HZ: u8 = 15;
    /// Register B: periodic interrupts on.
    const PERIODIC: u8 = 1 << 6;

    fn read(register: u8) -> u8 {
        // SAFETY: the CMOS clock's index and data ports; this example is
        // their only user, and the handler reads register C only after
        // `arm` is done with them.
        unsafe {
            Port::<u8>::new(0x70).write(register);
            Port::<u8>::new(0x71).read()
        }
    }

    fn write(register: u8, value: u8) {
        // SAFETY: as in `read`.
        unsafe {
            Port::<u8>::new(0x70).write(register);
            Port::<u8>::new(0x71).write(value);
        }
    }

    /// Periodic interrupts at 2 Hz (once: they keep coming).
    pub fn arm() {
        roving::platform::without_interrupts(|| {
            write(REGISTER_A, (read(REGISTER_A) & 0xF0) | TWO_HZ);
            write(REGISTER_B, read(REGISTER_B) | PERIODIC);
        });
    }

    /// Quiets the device (its handler calls this): reading register C
    /// acknowledges the interrupt.
    pub fn acknowledge() {
        let _ = read(REGISTER_C);
    }
}
