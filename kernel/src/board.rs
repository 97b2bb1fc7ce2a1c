//! What a board tells the kernel: mostly constants, and at most one small
//! driver.
//!
//! A board crate fills in one [`Board`] and registers it with
//! [`set_board!`](crate::set_board). What a device tree says (cores, RAM,
//! the command line, a GIC) is read from it at boot when the loader passes
//! one; the board supplies what is needed before, or without, a device
//! tree, and what its firmware does not describe in a form the kernel reads
//! (a spin table, an interrupt controller of the board's own).

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
    #[cfg(target_arch = "aarch64")]
    Pl011 {
        /// Base of its registers.
        base: usize,
        /// The UART's reference clock in Hz, if the kernel must program the
        /// baud rate itself; `None` keeps the firmware's (or QEMU's) setting.
        clock_hz: Option<u32>,
    },
    /// A 16550-compatible UART at this x86 I/O port (COM1 is 0x3F8).
    #[cfg(target_arch = "x86_64")]
    Uart16550 {
        /// Its first I/O port.
        port: u16,
    },
}

impl ConsoleDevice {
    /// The same device with its registers at `base` (memory-mapped UARTs;
    /// a UART on I/O ports stays where it is).
    pub(crate) fn at(self, base: usize) -> Self {
        match self {
            #[cfg(target_arch = "aarch64")]
            Self::Pl011 { clock_hz, .. } => Self::Pl011 { base, clock_hz },
            #[cfg(target_arch = "x86_64")]
            Self::Uart16550 { .. } => {
                let _ = base;
                self
            }
        }
    }
}

/// A device's interrupt line, as a board names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// The controller's own number for the line: a GIC interrupt id (32
    /// and up for a device), a BCM2835 peripheral interrupt (0-63), an I/O
    /// APIC line (a global system interrupt).
    Number(u32),
    /// x86: an ISA IRQ, which the ACPI MADT's interrupt source overrides
    /// map to an I/O APIC line (QEMU's q35 puts IRQ 0 on line 2).
    #[cfg(target_arch = "x86_64")]
    Isa(u8),
}

/// A device's interrupt line, by the device's name
/// ([`interrupts::line_of`](crate::interrupts::line_of)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLine {
    /// The device, as programs ask for it ("rtc", "system timer 1").
    pub device: &'static str,
    /// Its line.
    pub line: Line,
}

/// How the kernel starts the cores other than the boot core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreStart {
    /// PSCI `CPU_ON`, over the conduit the device tree's `/psci` node names.
    #[cfg(target_arch = "aarch64")]
    Psci,
    /// A firmware spin table: the core whose MPIDR Aff0 is `n` waits in
    /// `WFE` until the 8-byte slot at `release + 8 * n` holds an address,
    /// then jumps there (the Raspberry Pi firmware's `armstub8`).
    #[cfg(target_arch = "aarch64")]
    SpinTable {
        /// Address of core 0's slot.
        release: usize,
    },
    /// x86: INIT, then two STARTUP inter-processor interrupts through the
    /// local APIC, into a real-mode trampoline; the cores are those the
    /// ACPI MADT lists.
    #[cfg(target_arch = "x86_64")]
    StartupIpi,
}

/// The interrupt controller that carries the kernel's two per-core
/// interrupts: the wake-up from another core, and the timer deadline.
#[derive(Clone, Copy)]
pub enum InterruptController {
    /// The GIC the device tree describes (GICv2 or GICv3).
    #[cfg(target_arch = "aarch64")]
    FromDeviceTree,
    /// A GICv2 (such as the GIC-400) at these addresses, unless the
    /// firmware's device tree names a GIC (then the tree's is used).
    #[cfg(target_arch = "aarch64")]
    GicV2 {
        /// The distributor (GICD).
        distributor: usize,
        /// The CPU interface (GICC).
        cpu_interface: usize,
    },
    /// The board's own driver.
    #[cfg(target_arch = "aarch64")]
    Board(&'static dyn InterruptChip),
    /// x86: each core's local APIC (wake-up IPIs and its one-shot timer).
    #[cfg(target_arch = "x86_64")]
    LocalApic,
}

impl core::fmt::Debug for InterruptController {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            #[cfg(target_arch = "aarch64")]
            Self::FromDeviceTree => f.write_str("FromDeviceTree"),
            #[cfg(target_arch = "aarch64")]
            Self::GicV2 { distributor, cpu_interface } => {
                write!(f, "GicV2 {{ distributor: {distributor:#x}, cpu_interface: {cpu_interface:#x} }}")
            }
            #[cfg(target_arch = "aarch64")]
            Self::Board(chip) => write!(f, "Board({})", chip.name()),
            #[cfg(target_arch = "x86_64")]
            Self::LocalApic => f.write_str("LocalApic"),
        }
    }
}

/// Which of the kernel's interrupts a core found pending.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    /// Another core asked this one to wake up.
    pub wake: bool,
    /// This core's timer deadline passed.
    pub timer: bool,
    /// Anything else the controller reported (counted as unexpected).
    pub other: bool,
}

/// A board's own interrupt controller driver, for controllers the kernel
/// does not drive itself. Cores are named by hardware id (MPIDR affinity).
///
/// The kernel calls `init_core` once on every core before that core first
/// waits, `send_wake` from any core, and `acknowledge` from the interrupt
/// handler of the core that took the interrupt, with interrupts masked.
///
/// A controller that also carries device lines implements the `line`
/// methods too (the defaults say it has none). The kernel calls them with
/// interrupts masked, one at a time for a given line, and never for a line
/// outside [`device_lines`](InterruptChip::device_lines).
pub trait InterruptChip: Sync {
    /// The controller's name, for the boot banner.
    fn name(&self) -> &'static str;
    /// Routes the wake-up and the timer interrupt of the calling core (with
    /// hardware id `hw_id`) to it as IRQs, and clears a stale wake-up.
    fn init_core(&self, hw_id: u64);
    /// Raises the wake-up interrupt on core `hw_id`.
    fn send_wake(&self, hw_id: u64);
    /// Reports what is pending on the calling core `hw_id`, clearing the
    /// wake-up. The timer is level-triggered and is cleared by the kernel
    /// (it masks the timer), not here. Device lines are reported by
    /// [`next_line`](InterruptChip::next_line), not as `other`.
    fn acknowledge(&self, hw_id: u64) -> Pending;

    /// The device lines this controller has, if any.
    fn device_lines(&self) -> Option<core::ops::Range<u32>> {
        None
    }

    /// Whether every device line reaches the cores through one route, so
    /// routing one line routes them all.
    fn shared_route(&self) -> bool {
        false
    }

    /// The firmware device tree's `compatible` for each block of
    /// registers this controller drives, in the order
    /// [`place`](InterruptChip::place) numbers them. None by default: the
    /// board's addresses are used.
    fn tree_parts(&self) -> &'static [&'static str] {
        &[]
    }

    /// Moves block `index` of [`tree_parts`](InterruptChip::tree_parts) to
    /// `base`, where the firmware's device tree puts it (mapped as device
    /// memory). Called on the boot core before any
    /// [`init_core`](InterruptChip::init_core), and only when the tree has
    /// every block.
    fn place(&self, index: usize, base: usize) {
        let _ = (index, base);
    }

    /// Routes `line` to the core with hardware id `hw_id`.
    fn route_line(&self, line: u32, hw_id: u64) {
        let _ = (line, hw_id);
    }

    /// Enables (`true`) or disables `line`.
    fn enable_line(&self, line: u32, enabled: bool) {
        let _ = (line, enabled);
    }

    /// Makes `line` pending in software; `false` if the controller cannot.
    fn pend_line(&self, line: u32) -> bool {
        let _ = line;
        false
    }

    /// Whether `line` is pending (asserted and not yet taken), for the
    /// storm check of a handler that says it had work (`interrupts`). By
    /// default `false`: the controller cannot say.
    fn line_pending(&self, line: u32) -> bool {
        let _ = line;
        false
    }

    /// An enabled device line pending on the calling core `hw_id`, if any:
    /// the kernel runs its handler, then asks again.
    fn next_line(&self, hw_id: u64) -> Option<u32> {
        let _ = hw_id;
        None
    }
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
    /// Hardware ids of the cores to assume when there is no device tree,
    /// the boot core's among them; empty means the boot core alone.
    pub fallback_cores: &'static [u64],
    /// How secondary cores are started.
    pub core_start: CoreStart,
    /// Where the wake-up and timer interrupts come from.
    pub interrupts: InterruptController,
    /// The console UART's interrupt line: the kernel takes serial input
    /// through it (`crate::serial`). `None`: the console only writes.
    pub console_line: Option<Line>,
    /// Other devices' interrupt lines, for programs that drive them.
    pub device_lines: &'static [DeviceLine],
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

/// Names the QEMU machine (`-M`) that emulates this board, in the image
/// itself: `tools/qemu-run` reads it to boot any program linked with the
/// board, so `cargo run` needs no board argument. Use once, in the board
/// crate.
#[macro_export]
macro_rules! qemu_machine {
    ($machine:literal) => {
        #[used]
        #[unsafe(link_section = ".roving.qemu_machine")]
        static _ROVING_QEMU_MACHINE: [u8; $crate::board::qemu_tag_len($machine)] =
            $crate::board::qemu_tag($machine);
    };
}

const QEMU_TAG_PREFIX: &[u8] = b"roving-qemu-machine=";

#[doc(hidden)]
pub const fn qemu_tag_len(machine: &str) -> usize {
    QEMU_TAG_PREFIX.len() + machine.len() + 1
}

/// `roving-qemu-machine=<machine>;`, the string the runner looks for.
#[doc(hidden)]
pub const fn qemu_tag<const N: usize>(machine: &str) -> [u8; N] {
    let mut tag = [b';'; N];
    let mut i = 0;
    while i < QEMU_TAG_PREFIX.len() {
        tag[i] = QEMU_TAG_PREFIX[i];
        i += 1;
    }
    let name = machine.as_bytes();
    let mut j = 0;
    while j < name.len() {
        tag[i + j] = name[j];
        j += 1;
    }
    tag
}
