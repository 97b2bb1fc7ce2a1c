//! One core's trace ring: a fixed number of slots that events overwrite,
//! oldest first, written without locks and read at any time.
//!
//! # Protocol
//!
//! Each slot holds a sequence word and the event (its tick count and its
//! packed data). The ring keeps `next`, the index the next event takes;
//! event `i` lives in slot `i % capacity`. A slot's sequence word is even
//! when the slot is whole, `2 (i + 1)` once event `i` is in it (0 before
//! any), and odd while a writer holds it.
//!
//! - **Record** event `i`: claim the index with a read-modify-write of
//!   `next` (a core and an interrupt handler that nests on it may both
//!   record). Then take the slot: compare-exchange its sequence word from
//!   the even value it holds to `2 (i + 1) - 1` (acquire). If the word is
//!   odd, a writer this one interrupted holds the slot, and if it is
//!   `2 (i + 1)` or more, a newer event is there: the event is dropped
//!   (nothing can wait for the holder, which cannot run until the handler
//!   returns). Fence (release), store the event, store `2 (i + 1)`
//!   (release).
//! - **Read** event `j`: load the sequence word (acquire); unless it is
//!   `2 (j + 1)`, the event is gone (overwritten or dropped) or not yet
//!   whole: skip it. Load the event, fence (acquire), load the sequence
//!   word again; keep the event only if it has not changed.
//!
//! # Why a kept event is never torn
//!
//! Writers of a slot take turns: between a writer's compare-exchange to an
//! odd value and its store of an even one, every other writer finds the
//! word odd and drops its event, so no two writers store into one slot at
//! once; and each takes the slot with an acquire that reads the previous
//! writer's release, so its stores follow that writer's.
//!
//! The reader's first load read `2 (j + 1)`, stored by the writer of event
//! `j` after its event (release, acquire): it sees that event's fields or
//! later ones. If it saw a later writer's field, that writer's release
//! fence comes after its compare-exchange and before the field's store,
//! and the reader's acquire fence after its load, so the reader's second
//! load of the sequence word reads that odd value or a later one, never
//! `2 (j + 1)` (only event `j`'s writer stores it, once). An event kept is
//! therefore one writer's whole event. `tests/loom_trace_ring.rs` checks
//! this with one writer, and with two writers on a ring of two slots.
//!
//! Events that are lost are counted, not hidden ([`Snapshot::lost`]):
//! those overwritten before the read, those being written while it read,
//! and those dropped because a writer they interrupted held their slot
//! (a handler that records a whole ring's worth while it interrupts a
//! writer).

use crate::atomics::{AtomicU64, Ordering::*, fence};
use alloc::boxed::Box;
use alloc::vec::Vec;

struct Slot {
    sequence: AtomicU64,
    ticks: AtomicU64,
    data: AtomicU64,
}

/// One core's ring of trace events (module docs).
pub struct Ring {
    slots: Box<[Slot]>,
    next: AtomicU64,
}

/// One event as recorded: when, and its packed data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its index in the ring's history (the first event is 0).
    pub index: u64,
    /// The tick count passed to [`Ring::record`].
    pub ticks: u64,
    /// The packed event.
    pub data: u64,
}

/// What a read of a ring found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The events still in the ring, oldest first.
    pub records: Vec<Record>,
    /// Events recorded but not in `records`: overwritten, or being written
    /// while the ring was read.
    pub lost: u64,
}

impl Ring {
    /// A ring of `capacity` events (at least one).
    pub fn new(capacity: usize) -> Self {
        let slot = || Slot { sequence: AtomicU64::new(0), ticks: AtomicU64::new(0), data: AtomicU64::new(0) };
        Self { slots: (0..capacity.max(1)).map(|_| slot()).collect(), next: AtomicU64::new(0) }
    }

    /// Records an event, overwriting the oldest if the ring is full.
    #[inline]
    pub fn record(&self, ticks: u64, data: u64) {
        let index = self.next.fetch_add(1, Relaxed);
        let slot = &self.slots[(index % self.slots.len() as u64) as usize];
        let whole = 2 * (index + 1);
        let mut seen = slot.sequence.load(Relaxed);
        loop {
            if seen & 1 == 1 || seen >= whole {
                return; // dropped, and counted as lost by readers
            }
            match slot.sequence.compare_exchange_weak(seen, whole - 1, Acquire, Relaxed) {
                Ok(_) => break,
                Err(actual) => seen = actual,
            }
        }
        fence(Release);
        slot.ticks.store(ticks, Relaxed);
        slot.data.store(data, Relaxed);
        slot.sequence.store(whole, Release);
    }

    /// Reads the ring: the whole events it holds, oldest first, and how
    /// many of those recorded it does not.
    pub fn snapshot(&self) -> Snapshot {
        let end = self.next.load(Acquire);
        let start = end.saturating_sub(self.slots.len() as u64);
        let mut records = Vec::with_capacity((end - start) as usize);
        for index in start..end {
            let slot = &self.slots[(index % self.slots.len() as u64) as usize];
            let whole = 2 * (index + 1);
            if slot.sequence.load(Acquire) != whole {
                continue;
            }
            let (ticks, data) = (slot.ticks.load(Relaxed), slot.data.load(Relaxed));
            fence(Acquire);
            if slot.sequence.load(Relaxed) == whole {
                records.push(Record { index, ticks, data });
            }
        }
        let lost = end - records.len() as u64;
        Snapshot { records, lost }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_ring_keeps_the_newest_events_and_counts_the_rest() {
        let ring = Ring::new(4);
        assert_eq!(ring.snapshot(), Snapshot::default());
        for event in 0..10 {
            ring.record(100 + event, event);
        }
        let snapshot = ring.snapshot();
        let data: Vec<u64> = snapshot.records.iter().map(|record| record.data).collect();
        assert_eq!(data, [6, 7, 8, 9]);
        assert_eq!(snapshot.records[0], Record { index: 6, ticks: 106, data: 6 });
        assert_eq!(snapshot.lost, 6);
    }

    #[test]
    fn a_ring_that_never_filled_loses_nothing() {
        let ring = Ring::new(8);
        for event in 0..3 {
            ring.record(event, event * 7);
        }
        let snapshot = ring.snapshot();
        assert_eq!(snapshot.lost, 0);
        assert_eq!(snapshot.records.iter().map(|record| record.data).collect::<Vec<_>>(), [0, 7, 14]);
    }

    #[test]
    fn a_reader_never_sees_a_torn_event() {
        const EVENTS: u64 = if cfg!(miri) { 300 } else { 200_000 };
        let ring = std::sync::Arc::new(Ring::new(16));
        let writer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                for event in 0..EVENTS {
                    ring.record(event, !event);
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() || reads == 0 {
            let snapshot = ring.snapshot();
            for record in &snapshot.records {
                assert_eq!(record.data, !record.ticks, "a torn event: {record:?}");
                assert_eq!(record.ticks, record.index, "an event under another index: {record:?}");
            }
            assert!(snapshot.records.windows(2).all(|pair| pair[0].index < pair[1].index));
            reads += 1;
        }
        writer.join().unwrap();
        assert_eq!(ring.snapshot().lost, EVENTS - 16);
    }
}
