//! Fibres: the static region of stacks, and which pool holds which.
//!
//! The region is one static array, in the linker section
//! `.bss.roving_fibres` (a bare-metal linker script can place it on its
//! own, page-aligned, outside the zeroed `.bss`). Slot `i` is a guard gap
//! of [`GUARD_BYTES`] and then stack `i` of [`STACK_BYTES`]; stacks grow
//! down, so an overflow runs into the gap of its own slot. A kernel with
//! an MMU unmaps the gaps ([`guard_gaps`]) so an overflow faults, and
//! [`guard_hit`] names the strand for the fault report. Without an MMU
//! (and on the host) a canary word at the bottom of every stack is checked
//! each time a strand switches out.
//!
//! A fibre is free, or held by one pool while strands live on it. It is
//! claimed with a bitmap (`fetch_or`, no ABA), and a pool *overloads* a
//! fibre it holds by raising its strand count, which only succeeds while
//! the count is not zero: a fibre on its way back to the bitmap is never
//! joined.

use super::control::Header;
use super::knobs::{FIBRES, GUARD_BYTES, STACK_BYTES};
use super::save::SaveArea;
use crate::join::JoinStack;
use crate::pool::shared::Shared;
use crate::task::inbox::Inbox;
use crate::task::queue::TaskQueue;
use crate::task::{Action, Task};
use alloc::sync::Arc;
use core::cell::UnsafeCell;
use core::ops::Range;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};

const SLOT_BYTES: usize = GUARD_BYTES + STACK_BYTES;
const WORD_BITS: usize = usize::BITS as usize;
const WORDS: usize = FIBRES.div_ceil(WORD_BITS);
/// Written at the bottom of every stack, checked at every switch out.
const CANARY: u64 = 0x5af3_c0de_f1b4_e5ed;

#[repr(C, align(4096))]
struct Region(UnsafeCell<[u8; FIBRES * SLOT_BYTES]>);

// SAFETY: a stack is touched only by the strand resident on it and by the
// one core that runs its fibre, which the fibre's inbox flag makes unique.
unsafe impl Sync for Region {}

#[cfg_attr(any(target_os = "none", target_os = "linux"), unsafe(link_section = ".bss.roving_fibres"))]
static REGION: Region = Region(UnsafeCell::new([0; FIBRES * SLOT_BYTES]));

static TABLE: [Fibre; FIBRES] = [const { Fibre::new() }; FIBRES];
static CLAIMED: [AtomicUsize; WORDS] = [const { AtomicUsize::new(0) }; WORDS];
/// Where the next claim or overload starts looking, to spread the load.
static CURSOR: AtomicUsize = AtomicUsize::new(0);

/// One execution stack and its scheduling state.
#[repr(C)]
pub(crate) struct Fibre {
    /// First: the fibre is scheduled on cores as this task.
    pub(crate) task: Task,
    /// Strands made runnable on this fibre.
    pub(crate) inbox: Inbox,
    /// Strands living on this fibre; zero when free.
    strands: AtomicUsize,
    /// The holding pool: an `Arc<Shared>` turned into a raw pointer.
    pool: AtomicPtr<Shared>,
    /// The core that last ran the fibre.
    pub(crate) last_core: AtomicUsize,
    /// Whether its strand must stay on `last_core` (the root strand).
    pub(crate) pinned: AtomicBool,
    /// The id of the resident strand, for fault reports (0: none).
    pub(crate) resident_id: AtomicU64,
    owned: UnsafeCell<Owned>,
    /// The resident strand's pending fork-join jobs (`crate::join`); it
    /// stays resident while any is pending, so no other strand shares this.
    pub(crate) joins: UnsafeCell<JoinStack>,
}

// SAFETY: `owned` is touched only by the core running the fibre (unique
// through the inbox flag), or by the claimer before anything is published.
unsafe impl Sync for Fibre {}

/// What only the core running a fibre touches.
pub(crate) struct Owned {
    /// The strand whose stack is in the fibre's stack (null: none).
    pub(crate) resident: *mut Header,
    /// Runnable strands taken from the inbox, in order.
    pub(crate) runnable: TaskQueue,
    /// A save area kept for the next strand to be swapped out.
    pub(crate) spare: SaveArea,
}

impl Fibre {
    const fn new() -> Self {
        Self {
            task: Task::new(run),
            inbox: Inbox::new(),
            strands: AtomicUsize::new(0),
            pool: AtomicPtr::new(ptr::null_mut()),
            last_core: AtomicUsize::new(0),
            pinned: AtomicBool::new(false),
            resident_id: AtomicU64::new(0),
            owned: UnsafeCell::new(Owned {
                resident: ptr::null_mut(),
                runnable: TaskQueue::new(),
                spare: SaveArea::empty(),
            }),
            joins: UnsafeCell::new(JoinStack::new()),
        }
    }

    /// The fibre's index in the region.
    pub(crate) fn index(&self) -> usize {
        (self as *const Fibre as usize - TABLE.as_ptr() as usize) / size_of::<Fibre>()
    }

    /// The fibre whose task header is `task`.
    ///
    /// # Safety
    ///
    /// `task` is the `task` field of a fibre of the table.
    pub(crate) unsafe fn from_task(task: NonNull<Task>) -> &'static Fibre {
        // SAFETY: `task` is the first field of a `#[repr(C)]` static fibre.
        unsafe { &*task.as_ptr().cast::<Fibre>() }
    }

    /// One past the highest byte of the stack; 16-byte aligned.
    pub(crate) fn stack_top(&self) -> *mut u8 {
        // SAFETY: inside the region (or one past a slot's end).
        unsafe { self.stack_bottom().add(STACK_BYTES) }
    }

    fn stack_bottom(&self) -> *mut u8 {
        // SAFETY: slot `index` is inside the region.
        unsafe { REGION.0.get().cast::<u8>().add(self.index() * SLOT_BYTES + GUARD_BYTES) }
    }

    /// Whether the canary at the bottom of the stack is intact.
    pub(crate) fn canary_intact(&self) -> bool {
        // SAFETY: the lowest word of the stack; a torn read would only
        // report a smash that is happening anyway.
        unsafe { self.stack_bottom().cast::<u64>().read_volatile() == CANARY }
    }

    /// The state only the core running the fibre may touch.
    ///
    /// # Safety
    ///
    /// The caller holds the fibre's schedule (it is running its task), or
    /// claimed it and has not published it; no other reference is live.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn owned(&self) -> &mut Owned {
        // SAFETY: exclusive by the contract above.
        unsafe { &mut *self.owned.get() }
    }

    /// The holding pool.
    pub(crate) fn pool(&self) -> *const Shared {
        self.pool.load(Acquire)
    }

    /// Adds a strand to a fibre that `pool` holds and that already has
    /// strands. Fails on a free or pinned fibre, or one of another pool.
    fn try_overload(&'static self, pool: &Shared) -> bool {
        if self.pinned.load(Relaxed) {
            return false;
        }
        let joined = self.strands.fetch_update(AcqRel, Acquire, |n| if n == 0 { None } else { Some(n + 1) });
        if joined.is_err() {
            return false;
        }
        if ptr::eq(self.pool(), pool) {
            return true;
        }
        // Another pool's fibre (claimed again since we looked): back out.
        self.strand_left();
        false
    }

    /// Takes one strand off the count; the last one gives the fibre back.
    /// Called by the core running the fibre, or by a spawner backing out.
    pub(crate) fn strand_left(&'static self) {
        if self.strands.fetch_sub(1, AcqRel) != 1 {
            return;
        }
        let pool = self.pool.swap(ptr::null_mut(), AcqRel);
        self.pinned.store(false, Relaxed);
        self.resident_id.store(0, Relaxed);
        // SAFETY: no strand is left, so no core runs the fibre: the state
        // is ours until the bitmap says the fibre is free.
        unsafe { self.owned() }.spare.free();
        let bit = self.index();
        CLAIMED[bit / WORD_BITS].fetch_and(!(1 << (bit % WORD_BITS)), Release);
        // SAFETY: made by `Arc::into_raw` when the fibre was claimed.
        drop(unsafe { Arc::from_raw(pool) });
    }
}

/// Claims a free fibre for `pool` with one strand on it, or `None` if
/// every fibre is held.
pub(crate) fn claim(pool: &Shared) -> Option<&'static Fibre> {
    let start = CURSOR.fetch_add(1, Relaxed) % FIBRES;
    for offset in 0..FIBRES {
        let index = (start + offset) % FIBRES;
        let (word, bit) = (index / WORD_BITS, 1usize << (index % WORD_BITS));
        if CLAIMED[word].load(Relaxed) & bit != 0 || CLAIMED[word].fetch_or(bit, Acquire) & bit != 0 {
            continue;
        }
        let fibre = &TABLE[index];
        // SAFETY: every `Shared` lives in an `Arc` (`Pool`), which the
        // caller's reference keeps alive; the fibre now holds one more.
        unsafe { Arc::increment_strong_count(pool) };
        fibre.pool.store(ptr::from_ref(pool).cast_mut(), Release);
        fibre.strands.store(1, Release);
        // SAFETY: the canary's word is the lowest of a stack we now hold.
        unsafe { fibre.stack_bottom().cast::<u64>().write_volatile(CANARY) };
        return Some(fibre);
    }
    None
}

/// Adds one strand to a fibre `pool` already holds (copy-swap), other than
/// those `avoid` names, or `None` if it holds none that can take one.
pub(crate) fn overload(pool: &Shared, avoid: impl Fn(&Fibre) -> bool) -> Option<&'static Fibre> {
    let start = CURSOR.fetch_add(1, Relaxed) % FIBRES;
    (0..FIBRES)
        .map(|offset| &TABLE[(start + offset) % FIBRES])
        .find(|fibre| !avoid(fibre) && fibre.try_overload(pool))
}

/// The fibre's task function: run its next runnable strand.
///
/// # Safety
///
/// As for [`TaskFn`](crate::task::TaskFn).
unsafe fn run(task: NonNull<Task>, action: Action, _cache: NonNull<crate::task::storage::BlockCache>) {
    // SAFETY: fibre tasks are only ever the `task` field of a fibre.
    let fibre = unsafe { Fibre::from_task(task) };
    super::scheduler::run_fibre(fibre, action);
}

/// The fibre region, for a kernel that maps guard gaps or reports faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FibreRegion {
    /// Address of the first slot (page-aligned).
    pub start: usize,
    /// Fibres in the region.
    pub fibres: usize,
    /// Bytes of each slot: a guard gap, then the stack.
    pub slot_bytes: usize,
    /// Bytes of the guard gap at the bottom of each slot.
    pub guard_bytes: usize,
    /// Bytes of each stack.
    pub stack_bytes: usize,
}

/// How many fibres some pool holds now.
pub(crate) fn claimed() -> usize {
    CLAIMED.iter().map(|word| word.load(Relaxed).count_ones() as usize).sum()
}

/// Where the fibre stacks are.
pub fn region() -> FibreRegion {
    FibreRegion {
        start: REGION.0.get() as usize,
        fibres: FIBRES,
        slot_bytes: SLOT_BYTES,
        guard_bytes: GUARD_BYTES,
        stack_bytes: STACK_BYTES,
    }
}

/// The guard gaps below every stack: what a kernel with an MMU leaves
/// unmapped, so that a stack overflow faults instead of corrupting memory.
pub fn guard_gaps() -> impl Iterator<Item = Range<usize>> {
    let region = region();
    (0..region.fibres).map(move |i| {
        let start = region.start + i * region.slot_bytes;
        start..start + region.guard_bytes
    })
}

/// A fault address that fell in a guard gap: which fibre overflowed and
/// which strand was on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardHit {
    /// The fibre whose stack overflowed.
    pub fibre: usize,
    /// The id of the strand resident on it, if any.
    pub strand: Option<super::StrandId>,
}

/// If `address` is in a guard gap, the fibre and strand it belongs to; for
/// a kernel's fault report.
pub fn guard_hit(address: usize) -> Option<GuardHit> {
    let region = region();
    let offset = address.checked_sub(region.start)?;
    let fibre = offset / region.slot_bytes;
    if fibre >= region.fibres || offset % region.slot_bytes >= region.guard_bytes {
        return None;
    }
    let strand = super::StrandId::from_raw(TABLE[fibre].resident_id.load(Relaxed));
    Some(GuardHit { fibre, strand })
}
