//! Time slicing on the host (`crate::preempt`), on x86_64 Linux: a ticker
//! thread per machine stands in for the cores' timers, and a signal for
//! their timer interrupts.
//!
//! - A core asks for a tick (`request_tick`) by storing its deadline; the
//!   ticker sleeps until the earliest one, then sends each core whose
//!   deadline passed `SIGURG` (a signal nothing else here uses; Go's
//!   runtime preempts with it too).
//! - The handler, on the core's own thread and on its alternate signal
//!   stack, asks `preempt::on_tick`. Told to preempt, it writes an
//!   interrupt-return frame below the interrupted stack pointer's red zone
//!   and points the interrupted context at the preemption entry
//!   (`crate::preempt`'s `entry_x86_64.rs`), so returning from the handler enters
//!   it.
//! - Interrupts "masked" (`Platform::disable_interrupts`: roving's spin
//!   locks) hold the tick off, as on bare metal; it is retried.
//! - It preempts only code of the program itself: a thread stopped inside
//!   the C library (inside `malloc`, say) may hold a lock that the next
//!   strand on that thread would take, and a thread cannot wait for
//!   itself. The tick is then retried.
//!
//! What the host cannot give: a strand preempted while it holds a lock of
//! the standard library (a `std::sync::Mutex`, `stdout`'s) keeps holding
//! it while other strands run on its thread. Such locks are not roving's
//! and not meant for strands (roving's `sync` is); the bare-metal
//! platforms have no such locks.

use super::Inner;
use crate::atomics::unmodelled::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use crate::preempt::{self, Tick};
use core::mem::MaybeUninit;
use std::cell::Cell;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::{self, Thread};
use std::time::Duration;

/// A core's tick: when it is due, and the thread to signal.
pub(super) struct CoreTick {
    /// The requested tick, in host ticks (nanoseconds); `NONE` if none.
    deadline: AtomicU64,
    /// The core's thread while it runs, for `pthread_kill`. The ticker
    /// signals only under this lock, and the thread clears it before it
    /// exits, so a signal never goes to a thread that is gone.
    thread: Mutex<Option<libc::pthread_t>>,
}

const NONE: u64 = u64::MAX;

impl CoreTick {
    pub(super) fn new() -> Self {
        Self { deadline: AtomicU64::new(NONE), thread: Mutex::new(None) }
    }
}

/// The machine's ticker: its thread, started by the first request, and
/// when it plans to wake next.
pub(super) struct Ticker {
    thread: OnceLock<Thread>,
    wakes_at: AtomicU64,
}

impl Ticker {
    pub(super) fn new() -> Self {
        Self { thread: OnceLock::new(), wakes_at: AtomicU64::new(NONE) }
    }
}

thread_local! {
    /// The calling core's tick state, for the request and the handler
    /// (a plain cell: a signal handler may read it).
    static MINE: Cell<*const CoreTick> = const { Cell::new(core::ptr::null()) };
    /// The calling core's machine's ticker.
    static TICKER: Cell<*const Ticker> = const { Cell::new(core::ptr::null()) };
}

/// Whether this build of the host can preempt: x86_64 Linux, not under a
/// sanitizer or Miri (which do not follow a context changed by a signal
/// handler).
pub(super) const SUPPORTED: bool =
    cfg!(all(target_arch = "x86_64", target_os = "linux", not(miri), not(roving_tsan)));

/// Makes the calling thread core `core` of `machine` for ticks, until the
/// returned guard drops.
pub(super) fn enter_core(machine: &Arc<Inner>, core: usize) -> CoreGuard {
    let tick = &machine.cores[core].tick;
    // SAFETY: `pthread_self` has no preconditions.
    *super::lock(&tick.thread) = Some(unsafe { libc::pthread_self() });
    tick.deadline.store(NONE, SeqCst);
    MINE.set(tick);
    TICKER.set(&machine.ticker);
    CoreGuard { machine: machine.clone(), core }
}

/// Stops ticks to the core's thread (module docs, [`CoreTick::thread`]).
pub(super) struct CoreGuard {
    machine: Arc<Inner>,
    core: usize,
}

impl Drop for CoreGuard {
    fn drop(&mut self) {
        let tick = &self.machine.cores[self.core].tick;
        *super::lock(&tick.thread) = None;
        tick.deadline.store(NONE, SeqCst);
        MINE.set(core::ptr::null());
        TICKER.set(core::ptr::null());
    }
}

/// `Platform::request_tick` for the calling core; async-signal-safe (the
/// handler calls it through `on_tick`). Returns `false` if the machine's
/// ticker has not been started: the caller (never the handler, which a
/// tick runs) then starts it with [`start_ticker`].
pub(super) fn request_tick(deadline: Option<u64>) -> bool {
    let (mine, ticker) = (MINE.get(), TICKER.get());
    if mine.is_null() || ticker.is_null() {
        return true; // not a core: nothing to tick
    }
    // SAFETY: set by `enter_core` and cleared before the machine can go.
    let (mine, ticker) = unsafe { (&*mine, &*ticker) };
    let deadline = deadline.unwrap_or(NONE);
    mine.deadline.store(deadline, SeqCst);
    let Some(thread) = ticker.thread.get() else { return false };
    if deadline < ticker.wakes_at.load(SeqCst) {
        thread.unpark();
    }
    true
}

/// `Platform::request_tick_on`: core `core` of `machine` is due a tick
/// now; the ticker is woken to send it (if it runs: a machine whose cores
/// never asked for a tick has no strand of a preempting pool to preempt).
pub(super) fn request_tick_on(machine: &Arc<Inner>, core: usize) {
    let Some(target) = machine.cores.get(core) else { return };
    target.tick.deadline.store(0, SeqCst);
    if let Some(thread) = machine.ticker.thread.get() {
        thread.unpark();
    }
}

/// Starts `machine`'s ticker, if it is not running.
pub(super) fn start_ticker(machine: &Arc<Inner>) {
    install();
    let weak = Arc::downgrade(machine);
    let _ = machine.ticker.thread.get_or_init(|| {
        thread::Builder::new()
            .name("roving-ticker".into())
            .spawn(move || tick_loop(&weak))
            .expect("roving: could not start the host's ticker thread")
            .thread()
            .clone()
    });
}

/// The longest the ticker sleeps, so it notices its machine is gone.
const NAP: Duration = Duration::from_millis(20);

fn tick_loop(machine: &Weak<Inner>) {
    loop {
        let Some(machine) = machine.upgrade() else { return };
        let now = super::now_ticks();
        let mut earliest = NONE;
        for core in &machine.cores {
            let deadline = core.tick.deadline.load(SeqCst);
            if deadline > now {
                earliest = earliest.min(deadline);
                continue;
            }
            if core.tick.deadline.compare_exchange(deadline, NONE, SeqCst, SeqCst).is_err() {
                continue; // re-armed meanwhile
            }
            if let Some(thread) = *super::lock(&core.tick.thread) {
                // SAFETY: the thread runs (it clears this under the lock
                // before it exits), and the handler is installed.
                unsafe { libc::pthread_kill(thread, libc::SIGURG) };
            }
        }
        machine.ticker.wakes_at.store(earliest, SeqCst);
        // Look again: a request stored before `wakes_at` did not unpark.
        let again = machine.cores.iter().any(|core| core.tick.deadline.load(SeqCst) < earliest);
        drop(machine);
        if !again {
            let wait = Duration::from_nanos(earliest.saturating_sub(super::now_ticks())).min(NAP);
            thread::park_timeout(wait);
        }
    }
}

/// How soon a tick that could not look is retried.
const RETRY_NANOS: u64 = 50_000;

/// The interrupted program's code: where a preemption may land.
static TEXT: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        crate::preempt::entry::detect_save_area();
        find_program_text();
        // SAFETY: a zeroed `sigaction` is a valid value to fill in.
        let mut action: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
        action.sa_sigaction = on_tick_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        // SAFETY: a valid action; the handler is async-signal-safe (it
        // reads thread-locals set up front, atomics, and the clock).
        let installed = unsafe { libc::sigaction(libc::SIGURG, &action, core::ptr::null_mut()) };
        assert_eq!(installed, 0, "roving: could not install the host's tick handler");
    });
}

/// Records the executable segment of the program itself (the first object
/// `dl_iterate_phdr` reports).
fn find_program_text() {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        _data: *mut libc::c_void,
    ) -> i32 {
        // SAFETY: the loader passes a valid description of the program.
        let info = unsafe { &*info };
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: `dlpi_phdr` has `dlpi_phnum` entries.
            let header = unsafe { &*info.dlpi_phdr.add(i) };
            if header.p_type == libc::PT_LOAD && header.p_flags & libc::PF_X != 0 {
                let start = info.dlpi_addr as usize + header.p_vaddr as usize;
                TEXT[0].store(start, SeqCst);
                TEXT[1].store(start + header.p_memsz as usize, SeqCst);
            }
        }
        1 // the program comes first; stop there
    }
    // SAFETY: the callback only reads what it is given.
    unsafe { libc::dl_iterate_phdr(Some(first), core::ptr::null_mut()) };
}

extern "C" fn on_tick_signal(_signal: libc::c_int, _info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let context = context.cast::<libc::ucontext_t>();
    // SAFETY: the kernel passes the interrupted context.
    let pc = unsafe { (*context).uc_mcontext.gregs[libc::REG_RIP as usize] } as usize;
    if super::MASKED.get()
        || !(TEXT[0].load(SeqCst)..TEXT[1].load(SeqCst)).contains(&pc)
        || preempt::entry::contains(pc)
    {
        // Masked (a spin lock is held), not the program's code, or the
        // preemption entry's own: look again soon.
        request_tick(Some(super::now_ticks() + RETRY_NANOS));
        return;
    }
    if preempt::on_tick() == Tick::Preempt {
        // SAFETY: the interrupted context is a strand of this thread's
        // core, outside roving's code (`on_tick` said so).
        unsafe { inject(context) };
    }
}

/// Points `context` at the preemption entry with the interrupt-return
/// frame it expects below the interrupted stack's red zone.
///
/// # Safety
///
/// `context` is the interrupted context of a strand, whose stack has room
/// below its red zone.
unsafe fn inject(context: *mut libc::ucontext_t) {
    // SAFETY: the kernel's saved registers of the interrupted code.
    let registers = unsafe { &mut (*context).uc_mcontext.gregs };
    let ip = registers[libc::REG_RIP as usize] as u64;
    let sp = registers[libc::REG_RSP as usize] as u64;
    let flags = registers[libc::REG_EFL as usize] as u64;
    let code_segment = registers[libc::REG_CSGSFS as usize] as u64 & 0xffff;
    let stack_segment: u64;
    // SAFETY: reads a segment register; no memory, no flags.
    unsafe {
        core::arch::asm!("mov {0:x}, ss", out(reg) stack_segment, options(nomem, nostack, preserves_flags))
    };
    const RED_ZONE: u64 = 128;
    let frame = ((sp - RED_ZONE - 5 * 8) & !15) as *mut u64;
    // SAFETY: below the red zone the strand's stack is free (contract).
    unsafe {
        frame.write(ip);
        frame.add(1).write(code_segment);
        frame.add(2).write(flags);
        frame.add(3).write(sp);
        frame.add(4).write(stack_segment & 0xffff);
    }
    registers[libc::REG_RSP as usize] = frame as i64;
    registers[libc::REG_RIP as usize] = preempt::entry_address() as i64;
}
