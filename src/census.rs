//! A census of the cache lines that move between cores (feature `census`,
//! host only, for measurement).
//!
//! Two CPUs hide what a many-core machine pays for sharing: a line that
//! one core writes and another then reads or writes must travel between
//! their caches, and on a big machine that travel, not the instructions
//! around it, is the cost of a cross-core operation. With the feature on,
//! every atomic in roving (they all come from `crate::atomics`) reports
//! each access here, and this module plays a simple coherence protocol
//! over them, one thread standing for one core:
//!
//! - A **read** moves the line if another thread wrote it last and this
//!   thread has not read it since (the line comes over shared).
//! - A **write** (a store, a swap, a compare-exchange, a fetch-op, failed
//!   or not) moves the line if another thread wrote or read it since the
//!   last write and this thread holds no copy (the line comes over for
//!   writing). If this thread does hold a copy (it read the line since,
//!   or wrote it last), the write is an *upgrade*: the other copies are
//!   invalidated but no line moves, and the census counts it apart. So a
//!   read followed by a write of the same line, with no other thread in
//!   between, moves that line once.
//!
//! A line is 64 bytes, as on x86 and most ARM cores (roving pads its hot
//! words to 128 so as not to share a line with a neighbour even on the
//! cores with 128-byte lines). Only atomics are counted: the plain memory
//! a message carries (a task's own bytes, written by its sender and read
//! by its receiver) moves too, and the census's report says so rather
//! than count it.
//!
//! Each move is charged to the source line of the atomic access that made
//! it, so a report says which word of which protocol moved. The counts are
//! process-wide: a harness takes them ([`by_site`]) before and after an
//! operation, subtracts, and divides by the times it ran. `tests/census.rs`
//! is that harness.

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Bytes per cache line in the census's model.
pub const LINE_BYTES: usize = 64;

/// Lines moved, by what moved them, and upgrades.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moves {
    /// Lines a write fetched from another core.
    pub by_writes: u64,
    /// Lines a read fetched from the core that wrote them.
    pub by_reads: u64,
    /// Writes to a line this core held a copy of, which invalidated other
    /// cores' copies: no line moved.
    pub upgrades: u64,
}

impl Moves {
    /// The lines moved, by writes and reads together.
    pub fn total(&self) -> u64 {
        self.by_writes + self.by_reads
    }
}

impl core::ops::AddAssign for Moves {
    fn add_assign(&mut self, other: Self) {
        self.by_writes += other.by_writes;
        self.by_reads += other.by_reads;
        self.upgrades += other.upgrades;
    }
}

/// No thread has written the line.
const NOBODY: u32 = u32::MAX;

/// One line's state: who wrote it last, who has read it since.
struct Line {
    writer: u32,
    readers: Vec<u32>,
}

/// Lines by address, spread over shards so that threads touching
/// different lines rarely wait for each other.
const SHARDS: usize = 64;
static LINES: [Mutex<Option<HashMap<usize, Line>>>; SHARDS] = [const { Mutex::new(None) }; SHARDS];

/// Moves by the source line of the access that made them.
static SITES: Mutex<Option<HashMap<(&'static str, u32), Moves>>> = Mutex::new(None);

fn thread_id() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    thread_local! {
        static ID: Cell<u32> = const { Cell::new(NOBODY) };
    }
    ID.with(|id| {
        if id.get() == NOBODY {
            id.set(NEXT.fetch_add(1, Relaxed));
        }
        id.get()
    })
}

/// Plays one access by this thread to the word at `address`; `write` for
/// any read-modify-write too.
pub(crate) fn access(address: usize, write: bool, site: &'static Location<'static>) {
    let (me, line) = (thread_id(), address / LINE_BYTES);
    let moved = {
        let mut shard = LINES[line % SHARDS].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = shard
            .get_or_insert_with(HashMap::new)
            .entry(line)
            .or_insert(Line { writer: NOBODY, readers: Vec::new() });
        if write {
            let others =
                (state.writer != NOBODY && state.writer != me) || state.readers.iter().any(|&r| r != me);
            let mine = state.writer == me || state.readers.contains(&me);
            state.writer = me;
            state.readers.clear();
            match (others, mine) {
                (false, _) => None,
                (true, true) => Some(Moves { upgrades: 1, ..Moves::default() }),
                (true, false) => Some(Moves { by_writes: 1, ..Moves::default() }),
            }
        } else if state.writer == me || state.readers.contains(&me) {
            None
        } else {
            state.readers.push(me);
            (state.writer != NOBODY).then_some(Moves { by_reads: 1, ..Moves::default() })
        }
    };
    if let Some(moved) = moved {
        let mut sites = SITES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *sites.get_or_insert_with(HashMap::new).entry((site.file(), site.line())).or_default() += moved;
    }
}

/// The moves counted since the process began, by the source file and
/// line of the atomic access that made each; most first. A harness takes
/// this before and after an operation and subtracts.
pub fn by_site() -> Vec<((&'static str, u32), Moves)> {
    let sites = SITES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut all: Vec<_> = sites.iter().flatten().map(|(&site, &moves)| (site, moves)).collect();
    all.sort_by_key(|&(site, moves)| (core::cmp::Reverse(moves.total()), site));
    all
}
