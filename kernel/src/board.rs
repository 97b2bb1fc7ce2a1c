//! What a board tells the kernel: mostly constants.
//!
//! A board crate fills in one [`Board`] and registers it with
//! [`set_board!`](crate::set_board). Everything the device tree can say
//! (cores, RAM, interrupt controller, how to start cores) is read from it at
//! boot; the board supplies only what is needed before, or without, a device
//! tree.

/// A physical address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub base: usize,
    /// Length in bytes.
    pub size: usize,
}

impl Region {
    /// One past the last byte.
    pub const fn end(&self) -> usize {
        self.base + self.size
    }
}

/// The device that carries the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleDevice {
    /// An Arm PL011 UART at this physical address.
    Pl011 {
        /// Base of its registers.
        base: usize,
        /// The UART's reference clock in Hz, if the kernel must program the
        /// baud rate itself; `None` keeps the firmware's (or QEMU's) setting.
        clock_hz: Option<u32>,
    },
}

/// A board's description.
#[derive(Debug)]
pub struct Board {
    /// Human-readable name, printed at boot.
    pub name: &'static str,
    /// Where the console is.
    pub console: ConsoleDevice,
    /// Where the device tree is when the loader does not pass its address.
    pub device_tree: Option<usize>,
    /// RAM to assume when there is no device tree.
    pub fallback_ram: Region,
    /// Address ranges holding device registers: mapped as device memory,
    /// never cached.
    pub device_memory: &'static [Region],
}

/// Registers the board of this program. Use exactly once, in the board crate.
#[macro_export]
macro_rules! set_board {
    ($board:expr) => {
        #[unsafe(no_mangle)]
        static _ROVING_BOARD: $crate::board::Board = $board;
    };
}

unsafe extern "Rust" {
    // Defined by `set_board!` with exactly this type.
    static _ROVING_BOARD: Board;
}

/// The board this program was built for.
pub fn board() -> &'static Board {
    // SAFETY: `set_board!` defines this immutable static with this type.
    unsafe { &_ROVING_BOARD }
}
