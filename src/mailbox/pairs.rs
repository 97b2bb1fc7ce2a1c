//! A pool's direct lists, sized by the cores that have been its members,
//! not by its machine.
//!
//! Each receiver has a *row*: a list per lane for code outside the pool
//! and, with direct mailboxes, a list per lane for each sender. A pool may
//! take any free core of its machine when it grows, and core indices are
//! the machine's, so a table of every ordered pair would cost the pool of
//! four cores on a 512-core machine as much as a pool of all 512 (two
//! lists of 128 bytes per pair: 67 MB). Instead:
//!
//! - a core's **row** is allocated when it first becomes a member (null
//!   until then: sends to it are refused, as to any core not a member);
//! - each core that becomes a member is given the next **column**, its own
//!   for the pool's life, so a sender's lists sit at a dense index;
//! - a row holds its columns in **chunks** of [`CHUNK`] senders, and a
//!   chunk is allocated in every row when the first column in it is given
//!   out.
//!
//! So a pool holds a row per core that has been a member, each of a chunk
//! per [`CHUNK`] such cores, and a word or two per machine core (the row
//! pointers and the columns). A receiver's drain reads the columns given
//! out, not every core of the machine.
//!
//! # Why publication needs no protocol of its own
//!
//! Rows, columns and chunks are only added, never moved or freed before
//! the pool is, and only by the pool's constructor or by a resize (one at
//! a time, each ordered after the last by the pool's resize flag). They
//! are written before what makes them reachable:
//!
//! - a row is stored (Release) before its core is a member, complete with
//!   a chunk for every column given out (the chunks it could be sent from);
//! - a new chunk is stored (Release) in every row, in the row's state
//!   (open for a member, closed for a core that left), before the column
//!   count that covers it is raised (Release), and both before the core
//!   that owns the column starts, which is the only core to push there;
//! - readers load pointers and the count with Acquire. A sender that
//!   finds no row is refused, as it would be by a closed row; a receiver
//!   sees every chunk the count it read covers.
//!
//! Opening and closing a row's lists is the lists' own protocol
//! (`super::list`); it touches every chunk the row holds, and runs only in
//! a resize or while nothing runs, so no chunk is added meanwhile.

use super::list::AtomicList;
use crate::atomics::CachePadded;
use crate::atomics::unmodelled::Ordering::{Acquire, Relaxed, Release};
use crate::atomics::unmodelled::{AtomicPtr, AtomicUsize};
use alloc::boxed::Box;
use core::ptr;

/// Senders per chunk: eight columns of two lanes, 2 KiB.
const CHUNK: usize = 8;

/// A sender's two lists into one receiver: closures, then fibres (the
/// lanes of `super::inbound`).
pub(crate) type Lanes = [CachePadded<AtomicList>; 2];

/// What a core without a column holds in `columns`.
const NO_COLUMN: usize = usize::MAX;

struct Chunk {
    senders: [Lanes; CHUNK],
}

impl Chunk {
    fn new(open: bool) -> Box<Self> {
        let chunk = Box::new(Self { senders: core::array::from_fn(|_| lanes()) });
        if !open {
            chunk.senders.iter().flatten().for_each(|list| _ = list.take_all_and_close());
        }
        chunk
    }
}

fn lanes() -> Lanes {
    [CachePadded(AtomicList::new()), CachePadded(AtomicList::new())]
}

/// One receiver's lists.
pub(crate) struct Row {
    /// From code outside the pool, by lane.
    pub(crate) outside: Lanes,
    /// From the pool's cores, by column; empty without direct mailboxes.
    chunks: Box<[AtomicPtr<Chunk>]>,
}

impl Row {
    /// Every sender's pair of lists in the row's chunks, given out or not
    /// (chunks are stored in order, so the first null ends them).
    fn all_senders(&self) -> impl Iterator<Item = &Lanes> {
        self.chunks
            .iter()
            .map_while(|chunk| {
                // SAFETY: a chunk stored is never freed before the row.
                unsafe { chunk.load(Acquire).as_ref() }
            })
            .flat_map(|chunk| chunk.senders.iter())
    }

    /// Every list of the row, opened or closed alike.
    fn lists(&self) -> impl Iterator<Item = &AtomicList> {
        core::iter::once(&self.outside).chain(self.all_senders()).flatten().map(|list| &list.0)
    }
}

/// The rows of a pool.
pub(crate) struct Pairs {
    /// By receiver core; null until it first becomes a member.
    rows: Box<[AtomicPtr<Row>]>,
    /// By sender core: its column, or [`NO_COLUMN`].
    columns: Box<[AtomicUsize]>,
    /// Columns given out; every row has the chunks they need.
    given: AtomicUsize,
    /// Whether rows hold a column per sender (direct mailboxes), or only
    /// the lists from outside (the mesh).
    per_sender: bool,
}

impl Pairs {
    /// Rows for a machine of `slots` cores, of which `members` are the
    /// pool's, each with a list per sender if `per_sender`.
    pub(crate) fn new(slots: usize, members: impl Fn(usize) -> bool, per_sender: bool) -> Self {
        let pairs = Self {
            rows: (0..slots).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
            columns: (0..slots).map(|_| AtomicUsize::new(NO_COLUMN)).collect(),
            given: AtomicUsize::new(0),
            per_sender,
        };
        for core in (0..slots).filter(|&core| members(core)) {
            // SAFETY: nothing else can see the pool yet.
            unsafe { pairs.open(core) };
        }
        pairs
    }

    /// Core `core`'s row, if it has ever been a member.
    #[inline]
    pub(crate) fn row(&self, core: usize) -> Option<&Row> {
        // SAFETY: a row stored is never freed before `self`.
        unsafe { self.rows.get(core)?.load(Acquire).as_ref() }
    }

    /// The lists from sender `from` into `row`, if `from` has ever been a
    /// member and mailboxes are direct.
    #[inline]
    pub(crate) fn from<'a>(&self, row: &'a Row, from: usize) -> Option<&'a Lanes> {
        let column = self.columns.get(from)?.load(Relaxed);
        let chunk = row.chunks.get(column / CHUNK)?;
        // SAFETY: as in `Row::all_senders`.
        let chunk = unsafe { chunk.load(Acquire).as_ref() }?;
        Some(&chunk.senders[column % CHUNK])
    }

    /// Calls `each` with every pair of lists into `row`, the outside ones
    /// then each sender's by column, until it returns something, which
    /// this returns. A loop over a slice per chunk, with one call site
    /// for `each`, so that a drain's walk (which never stops early) stays
    /// a tight loop.
    #[inline]
    pub(crate) fn find_into<'a, B>(
        &self,
        row: &'a Row,
        mut each: impl FnMut(&'a Lanes) -> Option<B>,
    ) -> Option<B> {
        let mut left = if self.per_sender { self.given.load(Acquire) } else { 0 };
        let mut lanes: &[Lanes] = core::slice::from_ref(&row.outside);
        let mut chunks = row.chunks.iter();
        loop {
            for pair in lanes {
                if let Some(found) = each(pair) {
                    return Some(found);
                }
            }
            if left == 0 {
                return None;
            }
            // SAFETY: as in `Row::all_senders`; the count covers the chunk.
            let chunk = chunks.next().and_then(|chunk| unsafe { chunk.load(Acquire).as_ref() })?;
            let here = left.min(CHUNK);
            lanes = &chunk.senders[..here];
            left -= here;
        }
    }

    /// Every list of every row.
    pub(crate) fn all(&self) -> impl Iterator<Item = &AtomicList> {
        (0..self.rows.len()).filter_map(|core| self.row(core)).flat_map(Row::lists)
    }

    /// Closes every list of `core`'s row, handing `keep` what each pair
    /// of lanes held (outside first, then by column).
    pub(crate) fn close(&self, core: usize, mut keep: impl FnMut([super::list::Chain; 2])) {
        let Some(row) = self.row(core) else { return };
        for lanes in core::iter::once(&row.outside).chain(row.all_senders()) {
            keep(lanes.each_ref().map(|list| list.take_all_and_close()));
        }
    }

    /// Makes `core`'s row ready for it to join: opens it again, or the
    /// first time makes it (and gives the core a column).
    ///
    /// # Safety
    ///
    /// The caller is the pool's constructor or a resize: nothing else
    /// adds rows or chunks, or closes or opens rows, meanwhile.
    pub(crate) unsafe fn open(&self, core: usize) {
        if let Some(row) = self.row(core) {
            row.lists().for_each(AtomicList::reopen);
            return;
        }
        if self.per_sender {
            self.give_column(core);
        }
        let given = self.given.load(Relaxed);
        let chunk_count = if self.per_sender { self.rows.len().div_ceil(CHUNK) } else { 0 };
        let chunks = (0..chunk_count)
            .map(|chunk| {
                let made = chunk * CHUNK < given;
                AtomicPtr::new(if made { Box::into_raw(Chunk::new(true)) } else { ptr::null_mut() })
            })
            .collect();
        let row = Box::new(Row { outside: lanes(), chunks });
        self.rows[core].store(Box::into_raw(row), Release);
    }

    /// Gives `core` the next column, first adding the chunk it needs to
    /// every row, in the row's state.
    fn give_column(&self, core: usize) {
        let column = self.given.load(Relaxed);
        if column.is_multiple_of(CHUNK) {
            for row in (0..self.rows.len()).filter_map(|at| self.row(at)) {
                // A row's outside lists are open exactly while it is a
                // member's (closed with every other list when it leaves).
                let open = !row.outside[0].is_closed();
                row.chunks[column / CHUNK].store(Box::into_raw(Chunk::new(open)), Release);
            }
        }
        self.columns[core].store(column, Relaxed);
        self.given.store(column + 1, Release);
    }
}

impl Drop for Pairs {
    fn drop(&mut self) {
        for row in self.rows.iter().map(|row| row.load(Relaxed)).filter(|row| !row.is_null()) {
            // SAFETY: made by `Box::into_raw` in `open`, and dropped once.
            let row = unsafe { Box::from_raw(row) };
            for chunk in row.chunks.iter().map(|chunk| chunk.load(Relaxed)).filter(|chunk| !chunk.is_null()) {
                // SAFETY: made by `Box::into_raw`, in this row only.
                drop(unsafe { Box::from_raw(chunk) });
            }
        }
    }
}

/// The rows as a pool grows past a chunk while one core is away, with
/// real lists and tasks; `make test` runs these under Miri too.
#[cfg(all(test, feature = "std"))]
mod tests {
    use super::super::list::Pushed;
    use super::super::list::tests_support::{drain, push, stamped};
    use super::*;

    fn push_from(pairs: &Pairs, from: usize, to: usize) -> Option<Pushed> {
        let row = pairs.row(to)?;
        let task = stamped(from, 0);
        let pushed = push(&pairs.from(row, from).expect("a sender with a column")[0], task);
        if pushed == Pushed::Closed {
            let _ = drain(Some(task));
        }
        Some(pushed)
    }

    /// Every pair of lists into `row`, as the walk gives them.
    fn walked<'a>(pairs: &Pairs, row: &'a Row) -> Vec<&'a Lanes> {
        let mut walked = Vec::new();
        pairs.find_into(row, |lanes| -> Option<()> {
            walked.push(lanes);
            None
        });
        walked
    }

    /// Each sender's lists into `row`, by column.
    fn senders<'a>(pairs: &Pairs, row: &'a Row) -> Vec<&'a Lanes> {
        walked(pairs, row).split_off(1)
    }

    fn drain_row(pairs: &Pairs, core: usize) -> Vec<usize> {
        let row = pairs.row(core).expect("a row");
        senders(pairs, row)
            .into_iter()
            .flat_map(|lanes| drain(lanes[0].take_all()))
            .map(|(sender, _)| sender)
            .collect()
    }

    #[test]
    fn only_members_have_rows_and_columns() {
        let pairs = Pairs::new(512, |core| core < 4, true);
        assert!(pairs.row(3).is_some() && pairs.row(4).is_none() && pairs.row(511).is_none());
        let row = pairs.row(0).unwrap();
        assert!(pairs.from(row, 3).is_some() && pairs.from(row, 4).is_none());
        assert_eq!(senders(&pairs, row).len(), 4);
        assert_eq!(push_from(&pairs, 2, 0), Some(Pushed::Queued));
        assert_eq!(push_from(&pairs, 2, 9), None, "a core never a member has no row");
        assert_eq!(drain_row(&pairs, 0), [2]);
    }

    #[test]
    fn a_chunk_added_while_a_core_is_away_follows_its_row() {
        let pairs = Pairs::new(32, |core| core < 2, true);
        pairs.close(1, |chains| chains.into_iter().for_each(|chain| assert!(chain.is_none())));
        for core in 2..=CHUNK + 1 {
            // SAFETY: the test is the only thread.
            unsafe { pairs.open(core) };
        }
        let last = CHUNK + 1;
        assert_eq!(push_from(&pairs, last, 0), Some(Pushed::Queued), "a new chunk in a member's row is open");
        assert_eq!(push_from(&pairs, last, 1), Some(Pushed::Closed), "and closed in an absent core's");
        // SAFETY: as above.
        unsafe { pairs.open(1) };
        assert_eq!(push_from(&pairs, last, 1), Some(Pushed::Queued), "reopened with the rest of its row");
        assert_eq!(push_from(&pairs, 3, 1), Some(Pushed::Queued));
        assert_eq!(drain_row(&pairs, 1), [3, last]);
        assert_eq!(drain_row(&pairs, 0), [last]);
        assert_eq!(senders(&pairs, pairs.row(4).unwrap()).len(), CHUNK + 2);
    }

    #[test]
    fn the_walk_into_a_row_visits_the_outside_lists_then_every_column_once() {
        for (cores, per_sender) in [(1, true), (CHUNK, true), (2 * CHUNK + 3, true), (5, false)] {
            let pairs = Pairs::new(64, |core| core < cores, per_sender);
            let row = pairs.row(0).unwrap();
            let walked: Vec<_> = walked(&pairs, row).into_iter().map(|lanes| lanes as *const Lanes).collect();
            // Columns were given in the order the cores were opened.
            let expected: Vec<_> = core::iter::once(&row.outside)
                .chain((0..cores).filter_map(|core| pairs.from(row, core)))
                .map(|lanes| lanes as *const Lanes)
                .collect();
            assert_eq!(walked, expected, "{cores} cores");
            assert_eq!(walked.len(), 1 + if per_sender { cores } else { 0 });
            let second = pairs
                .find_into(row, |lanes| (!ptr::eq(lanes, &row.outside)).then_some(lanes as *const Lanes));
            assert_eq!(second, walked.get(1).copied(), "the walk stops at the first answer");
        }
    }

    #[test]
    fn the_mesh_keeps_only_the_lists_from_outside() {
        let pairs = Pairs::new(64, |core| core % 2 == 0, false);
        let row = pairs.row(0).unwrap();
        assert!(pairs.from(row, 2).is_none() && senders(&pairs, row).is_empty());
        assert_eq!(pairs.all().count(), 2 * 32);
    }
}
