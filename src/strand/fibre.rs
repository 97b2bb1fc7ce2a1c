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
//! claimed with a bitmap (`fetch_or`, no ABA) and set up by its claimer
//! before its strand count becomes 1 (`Claimed::publish`); a pool
//! *overloads* a fibre it holds by raising its strand count, which only
//! succeeds while the count is not zero: a fibre half-way through being
//! claimed, or on its way back to the bitmap, is never joined. The last
//! strand to leave gives the fibre back (`Fibre::strand_left`).

use super::control::Header;
use super::save::SaveArea;
use super::sizes::{FIBRES, GUARD_BYTES, STACK_BYTES};
use crate::atomics::unmodelled::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use crate::mailbox::inbox::Inbox;
use crate::pool::fork_join::JoinStack;
use crate::pool::handle::Pool;
use crate::pool::seam::PoolRef;
use crate::task::queue::TaskQueue;
use crate::task::{Action, Task};
use core::cell::UnsafeCell;
use core::ops::Range;
use core::ptr::{self, NonNull};

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

static TABLE: [Fibre; FIBRES] = {
    let mut table = [const { Fibre::new() }; FIBRES];
    let mut index = 0;
    while index < FIBRES {
        // Computed here once: the canary check at every switch then loads
        // one pointer instead of dividing by the table's stride.
        table[index].stack_bottom =
            (&raw const REGION).cast::<u8>().cast_mut().wrapping_add(index * SLOT_BYTES + GUARD_BYTES);
        index += 1;
    }
    table
};
static CLAIMED: [AtomicUsize; WORDS] = [const { AtomicUsize::new(0) }; WORDS];
/// Where the next claim or overload starts looking, to spread the load.
static CURSOR: AtomicUsize = AtomicUsize::new(0);
/// The mark of a quarantined fibre in its strand count (module docs).
const QUARANTINED: usize = 1 << (usize::BITS - 1);
/// Fibres quarantined now; they stay claimed until released.
static QUARANTINED_FIBRES: AtomicUsize = AtomicUsize::new(0);

/// One execution stack and its scheduling state.
#[repr(C)]
pub(crate) struct Fibre {
    /// First: the fibre is scheduled on cores as this task.
    pub(crate) task: Task,
    /// Strands made runnable on this fibre.
    pub(crate) inbox: Inbox,
    /// Strands living on this fibre; zero when free.
    strands: AtomicUsize,
    /// The pool that holds it, as a given-up `Pool` (`Pool::into_raw`).
    pool: AtomicPtr<()>,
    /// The core that last ran the fibre.
    pub(crate) last_core: AtomicUsize,
    /// Whether its strand must stay on `last_core` (the root strand).
    pub(crate) pinned: AtomicBool,
    /// The id of the resident strand, for fault reports (0: none).
    pub(crate) resident_id: AtomicU64,
    /// The lowest byte of the fibre's stack (above its guard gap).
    stack_bottom: *mut u8,
    /// The strand running on this fibre's stack, set by the core before it
    /// switches there: the running strand finds itself through the stack
    /// it runs on ([`Fibre::containing`]).
    pub(crate) running: AtomicPtr<Header>,
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
            running: AtomicPtr::new(ptr::null_mut()),
            stack_bottom: ptr::null_mut(),
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

    /// The fibre's task header, as a pointer that may be turned back into
    /// the fibre ([`Fibre::from_task`]): derived from the fibre, not from a
    /// reference to the field, whose provenance would cover the field alone.
    pub(crate) fn task(&'static self) -> NonNull<Task> {
        NonNull::from(self).cast()
    }

    /// The fibre whose task header is `task`.
    ///
    /// # Safety
    ///
    /// `task` is a fibre's [`Fibre::task`].
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
        self.stack_bottom
    }

    /// Bytes of this fibre's stack below `address`, a place on it: what a
    /// caller running on the stack may still use.
    #[inline]
    pub(crate) fn room_below(&self, address: usize) -> usize {
        address.saturating_sub(self.stack_bottom() as usize)
    }

    /// The fibre whose stack (not its guard gap) holds `address`, if any.
    #[inline]
    pub(crate) fn containing(address: usize) -> Option<&'static Fibre> {
        let offset = address.checked_sub(REGION.0.get() as usize)?;
        let index = offset / SLOT_BYTES;
        (index < FIBRES && offset % SLOT_BYTES >= GUARD_BYTES).then(|| &TABLE[index])
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
    /// The pool that holds the fibre. Only for a caller that knows the
    /// fibre holds one (it runs or holds one of the fibre's strands), and
    /// only while it does: the fibre keeps the pool alive until its last
    /// strand leaves.
    pub(crate) fn pool<'a>(&self) -> PoolRef<'a> {
        // SAFETY: set to a given-up pool before any strand is published on
        // the fibre, and kept until the last leaves (doc above).
        unsafe { PoolRef::from_raw(self.pool.load(Acquire)) }
    }

    /// Tries to add a strand to a fibre that `pool` holds and that already
    /// has strands.
    fn try_overload(&'static self, pool: PoolRef<'_>) -> Overload {
        if self.strands.load(Acquire) == 0 {
            return Overload::Unsettled;
        }
        if self.pinned.load(Relaxed) {
            return Overload::Refused;
        }
        let joined =
            self.strands.fetch_update(AcqRel, Acquire, |n| (n != 0 && n & QUARANTINED == 0).then_some(n + 1));
        match joined {
            Err(n) if n & QUARANTINED != 0 => return Overload::Refused,
            Err(_) => return Overload::Unsettled,
            Ok(_) => {}
        }
        crate::chaos::point();
        // Our count holds the fibre: its pool and pin are settled now.
        if self.pool().same(pool) && !self.pinned.load(Relaxed) {
            return Overload::Joined;
        }
        // Another pool's fibre (claimed again since we looked), or pinned
        // since: back out.
        if self.strand_left() { Overload::Unsettled } else { Overload::Refused }
    }

    /// The last step of giving a fibre with no strand back: forgets its
    /// strand's id and clears its claim bit, after which it may be claimed.
    fn unclaim(&self) {
        self.resident_id.store(0, Relaxed);
        let bit = self.index();
        CLAIMED[bit / WORD_BITS].fetch_and(!(1 << (bit % WORD_BITS)), Release);
    }

    /// Quarantines the fibre if the running strand `me`, about to be
    /// stopped without unwinding, is alone on it (module docs): returns
    /// whether it did. Called on the fibre's own stack by that strand.
    pub(crate) fn quarantine(&self) -> bool {
        self.strands.fetch_update(AcqRel, Acquire, |n| (n == 1).then_some(n | QUARANTINED)).is_ok()
    }

    /// Takes one strand off the count; the last one gives the fibre back
    /// (or, if it is quarantined, keeps it claimed for good), and then this
    /// returns `true`. Called by the core running the fibre, after it has
    /// unscheduled it, or by a spawner backing out.
    pub(crate) fn strand_left(&'static self) -> bool {
        let before = self.strands.fetch_sub(1, AcqRel);
        if before & !QUARANTINED != 1 {
            return false;
        }
        crate::chaos::point();
        let pool = self.pool.swap(ptr::null_mut(), AcqRel);
        self.pinned.store(false, Relaxed);
        self.running.store(ptr::null_mut(), Relaxed);
        // SAFETY: no strand is left, so no core runs the fibre: the state
        // is ours until the bitmap says the fibre is free (for good, if it
        // is quarantined).
        unsafe { self.owned() }.spare.free();
        if before & QUARANTINED != 0 {
            // The stack stays as its strand left it, and its claim bit set.
            // The stopped strand's id stays too, for a fault in its gap.
            QUARANTINED_FIBRES.fetch_add(1, Relaxed);
        } else {
            self.unclaim();
        }
        // SAFETY: given up by `Pool::into_raw` when the fibre was claimed,
        // and turned back here once.
        drop(unsafe { Pool::from_raw(pool) });
        true
    }
}

/// What became of one attempt to overload a fibre.
enum Overload {
    /// The strand was added.
    Joined,
    /// The fibre cannot take it: pinned, or another pool's.
    Refused,
    /// The fibre has no strand: it is free, or being claimed or given
    /// back. A scan that met one cannot conclude that no fibre is left.
    Unsettled,
}

/// A fibre claimed for a pool, whose first strand is not yet published:
/// its stack and state belong to the claimer, and no spawner overloads it
/// (its strand count is still zero).
pub(crate) struct Claimed(&'static Fibre);

impl Claimed {
    /// The fibre.
    pub(crate) fn fibre(&self) -> &'static Fibre {
        self.0
    }

    /// Publishes the fibre with its first strand, which is set up (resident,
    /// with its context) by now: from here on it may be scheduled, and, if
    /// not `pinned`, overloaded. `last_core` is where it runs first.
    pub(crate) fn publish(self, pinned: bool, last_core: usize) {
        let fibre = self.0;
        fibre.pinned.store(pinned, Relaxed);
        fibre.last_core.store(last_core, Relaxed);
        crate::chaos::point();
        fibre.strands.store(1, Release);
    }
}

/// A fibre for a new strand.
pub(crate) enum Acquired {
    /// A free fibre, now the pool's, to be published with its strand.
    Fresh(Claimed),
    /// A fibre the pool already holds, now counting one more strand.
    Overloaded(&'static Fibre),
}

impl Acquired {
    /// The fibre.
    pub(crate) fn fibre(&self) -> &'static Fibre {
        match self {
            Self::Fresh(claimed) => claimed.fibre(),
            Self::Overloaded(fibre) => fibre,
        }
    }
}

/// Finds a fibre for a new strand of `pool`: a free one if any, else, if
/// `share` allows it, one the pool already holds that `share` does not
/// rule out (copy-swap). `None` only after a whole scan in which every
/// fibre was held: a fibre that is free, or half-way through being
/// claimed or given back, when the scan passes it sends the search round
/// again.
///
/// The claim and the overload are separate passes, so a fibre given back
/// between them is missed by both; the rescan keeps that from being
/// reported as "no fibre". (It was, under load: a spawner lost its CPU
/// between the passes while another core ran every other strand to its
/// end.)
#[inline]
pub(crate) fn acquire(pool: PoolRef<'_>, share: Option<&dyn Fn(&Fibre) -> bool>) -> Option<Acquired> {
    match claim(pool) {
        Some(claimed) => Some(Acquired::Fresh(claimed)),
        None => acquire_when_all_held(pool, share),
    }
}

/// [`acquire`] once a first claim found every fibre held: out of line, so
/// that a spawn that finds a free fibre pays only for the claim.
#[cold]
#[inline(never)]
fn acquire_when_all_held(pool: PoolRef<'_>, share: Option<&dyn Fn(&Fibre) -> bool>) -> Option<Acquired> {
    acquire_with(pool, share, crate::chaos::point)
}

/// [`acquire`], calling `between` between the claim and the overload scan
/// (where a test gives fibres back).
fn acquire_with(
    pool: PoolRef<'_>,
    share: Option<&dyn Fn(&Fibre) -> bool>,
    mut between: impl FnMut(),
) -> Option<Acquired> {
    loop {
        if let Some(claimed) = claim(pool) {
            return Some(Acquired::Fresh(claimed));
        }
        between();
        let mut unsettled = false;
        let start = CURSOR.fetch_add(1, Relaxed) % FIBRES;
        for offset in 0..FIBRES {
            let fibre = &TABLE[(start + offset) % FIBRES];
            match share {
                Some(avoid) if !avoid(fibre) => match fibre.try_overload(pool) {
                    Overload::Joined => return Some(Acquired::Overloaded(fibre)),
                    Overload::Unsettled => unsettled = true,
                    Overload::Refused => {}
                },
                _ => unsettled |= fibre.strands.load(Acquire) == 0,
            }
        }
        if !unsettled {
            return None;
        }
        crate::atomics::spin_hint();
    }
}

/// Claims a free fibre for `pool`, or `None` if every fibre is held.
#[inline]
fn claim(pool: PoolRef<'_>) -> Option<Claimed> {
    let start = CURSOR.fetch_add(1, Relaxed) % FIBRES;
    for offset in 0..FIBRES {
        let index = (start + offset) % FIBRES;
        let (word, bit) = (index / WORD_BITS, 1usize << (index % WORD_BITS));
        if CLAIMED[word].load(Relaxed) & bit != 0 || CLAIMED[word].fetch_or(bit, Acquire) & bit != 0 {
            continue;
        }
        let fibre = &TABLE[index];
        crate::chaos::point();
        // The fibre keeps the pool alive while it holds it. The pointer
        // comes from the pool's own `Arc`, so it may reach the counts.
        fibre.pool.store(pool.to_pool().into_raw(), Release);
        // SAFETY: the canary's word is the lowest of a stack we now hold.
        unsafe { fibre.stack_bottom().cast::<u64>().write_volatile(CANARY) };
        return Some(Claimed(fibre));
    }
    None
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

/// Whether `address` is in fibre memory: a fibre's own task, or something
/// on a strand's stack (a `join` job). A pool winding down runs only such
/// tasks.
pub(crate) fn holds(address: *const u8) -> bool {
    let inside = |start: *const u8, bytes: usize| {
        (start as usize..start as usize + bytes).contains(&(address as usize))
    };
    inside(TABLE.as_ptr().cast(), size_of_val(&TABLE))
        || inside(REGION.0.get().cast_const().cast(), FIBRES * SLOT_BYTES)
}

/// Whether `task` is a fibre's own task (the one `run` runs), rather than
/// any other kind of task.
pub(crate) fn is_fibre_task(task: NonNull<Task>) -> bool {
    let table = TABLE.as_ptr_range();
    (table.start.addr()..table.end.addr()).contains(&task.as_ptr().addr())
}

/// How many fibres some pool holds now (quarantined ones are no pool's).
pub(crate) fn claimed() -> usize {
    let bits: usize = CLAIMED.iter().map(|word| word.load(Relaxed).count_ones() as usize).sum();
    bits.saturating_sub(quarantined())
}

/// How many fibres are quarantined.
pub(crate) fn quarantined() -> usize {
    QUARANTINED_FIBRES.load(Relaxed)
}

/// Gives every quarantined fibre (module docs) back to the free set, and
/// returns how many there were. A fibre whose stopped strand has not yet
/// left it stays quarantined.
///
/// # Safety
///
/// Nothing reachable points into the stack of a strand that was stopped
/// without unwinding: whatever kept pointers to values pinned there (a
/// driver's intrusive list, say) has been torn down, or never existed.
pub unsafe fn release_quarantined() -> usize {
    let mut released = 0;
    for fibre in &TABLE {
        // Only a left fibre (count 0 with the mark): one whose strand is
        // still leaving keeps its mark, and its strand_left quarantines it.
        if fibre.strands.compare_exchange(QUARANTINED, 0, AcqRel, Relaxed).is_err() {
            continue;
        }
        QUARANTINED_FIBRES.fetch_sub(1, Relaxed);
        fibre.unclaim();
        released += 1;
    }
    released
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

/// The strand running on the fibre whose stack holds `stack_pointer`, if
/// any: for a kernel's fault handler, which runs on a stack of its own, to
/// ask whether the code a fault stopped was a strand's (and so can fail
/// alone, as for a panic).
pub fn strand_at(stack_pointer: usize) -> Option<super::StrandId> {
    let fibre = Fibre::containing(stack_pointer)?;
    let header = core::ptr::NonNull::new(fibre.running.load(Relaxed))?;
    // SAFETY: a running strand's header is live while it runs, and one
    // whose stack holds the stack pointer of code this core just stopped
    // cannot end while the caller, on the same core, looks.
    Some(unsafe { header.as_ref() }.id)
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    /// Holds every fibre for `pool`, each with one pinned strand (so none
    /// can be shared).
    fn hold_every_fibre(pool: PoolRef<'_>) -> Vec<&'static Fibre> {
        (0..FIBRES)
            .map(|_| match acquire(pool, None) {
                Some(Acquired::Fresh(claimed)) => {
                    let fibre = claimed.fibre();
                    claimed.publish(true, 0);
                    fibre
                }
                _ => panic!("a free fibre was not found"),
            })
            .collect()
    }

    #[test]
    fn no_fibre_only_when_every_fibre_is_held_and_a_fibre_given_back_mid_search_is_found() {
        let pool = Pool::detached(1);
        let pool = pool.pool_ref();
        let avoid_none = |_: &Fibre| false;
        for share in [None, Some(&avoid_none as &dyn Fn(&Fibre) -> bool)] {
            let held = hold_every_fibre(pool);
            assert_eq!(claimed(), FIBRES);
            assert!(acquire(pool, share).is_none(), "every fibre is held, and pinned");

            // Every fibre is given back after the claim scan found none
            // free and before the overload scan: the search must go round
            // again rather than report that no fibre is left.
            let mut give_back = Some(held);
            let found = acquire_with(pool, share, || {
                for fibre in give_back.take().into_iter().flatten() {
                    assert!(fibre.strand_left(), "the fibre's only strand left");
                }
            });
            let Some(Acquired::Fresh(claimed_now)) = found else {
                panic!("a fibre given back mid-search was missed");
            };
            let fibre = claimed_now.fibre();
            claimed_now.publish(false, 0);
            assert!(fibre.strand_left());
            assert_eq!(claimed(), 0, "every fibre is free again");
        }
    }
}
