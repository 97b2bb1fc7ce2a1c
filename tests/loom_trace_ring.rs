//! loom models of a core's trace ring (src/protocol/trace_ring.rs): a core records
//! three events into a ring of two slots while a reader takes a snapshot;
//! and two writers (a core and an interrupt handler that nests on it,
//! which loom can only run as a second thread) record two events each.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_trace_ring`
//!
//! Checked: every event a snapshot keeps is whole (its two fields from one
//! record) and one that was recorded, events come oldest first, each
//! writer's events in the order it recorded them, and once the writing is
//! done the ring holds only the newest events and counts the rest as lost.
//! A reader that does not load the sequence word again after reading an
//! event returns torn events here, and so did a first version whose
//! writers marked a slot busy with a plain store: an overtaken writer's
//! late stores landed in the newer event.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use roving::loom_api::{TraceRing, TraceSnapshot};

/// Writer `writer`'s event `event`: its ticks.
fn ticks_of(writer: u64, event: u64) -> u64 {
    writer * 10 + event
}

/// Each event's data is its ticks with a mark, so a torn event (the ticks
/// of one record with the data of another) shows.
fn data_of(ticks: u64) -> u64 {
    ticks ^ 0xabcd
}

/// Checks a snapshot of events whose ticks are among `recorded`.
fn check(snapshot: &TraceSnapshot, recorded: &[u64]) {
    for record in &snapshot.records {
        assert_eq!(record.data, data_of(record.ticks), "a torn event: {record:?}");
        assert!(recorded.contains(&record.ticks), "never recorded: {record:?}");
    }
    assert!(
        snapshot.records.windows(2).all(|pair| pair[0].index < pair[1].index),
        "out of order: {snapshot:?}"
    );
    for writer in 0..2 {
        let index_of = |event| snapshot.records.iter().find(|record| record.ticks == ticks_of(writer, event));
        if let (Some(first), Some(second)) = (index_of(0), index_of(1)) {
            assert!(first.index < second.index, "writer {writer}'s events swapped: {snapshot:?}");
        }
    }
}

/// A core records three events into two slots while a reader reads.
#[test]
fn a_snapshot_keeps_only_whole_events() {
    loom::model(|| {
        let ring = Arc::new(TraceRing::new(2));
        let writer = {
            let ring = ring.clone();
            thread::spawn(move || {
                for event in 0..3 {
                    ring.record(event, data_of(event));
                }
            })
        };
        let snapshot = ring.snapshot();
        check(&snapshot, &[0, 1, 2]);
        assert!(snapshot.records.iter().all(|record| record.ticks == record.index), "{snapshot:?}");
        writer.join().unwrap();
        let last = ring.snapshot();
        let indices: Vec<u64> = last.records.iter().map(|record| record.index).collect();
        assert_eq!((indices, last.lost), (vec![1, 2], 1), "a quiet ring of two slots: {last:?}");
    });
}

/// Two writers (a core and a handler nesting on it) share the ring: a
/// writer that finds its slot held by the other drops its event, which is
/// counted as lost, and no event is torn.
#[test]
fn two_writers_never_tear_an_event() {
    loom::model(|| {
        let ring = Arc::new(TraceRing::new(2));
        let writers: Vec<_> = (0..2u64)
            .map(|writer| {
                let ring = ring.clone();
                thread::spawn(move || {
                    for event in 0..2 {
                        let ticks = ticks_of(writer, event);
                        ring.record(ticks, data_of(ticks));
                    }
                })
            })
            .collect();
        check(&ring.snapshot(), &[0, 1, 10, 11]);
        for writer in writers {
            writer.join().unwrap();
        }
        let last = ring.snapshot();
        check(&last, &[0, 1, 10, 11]);
        assert!(last.records.iter().all(|record| record.index >= 2), "only the newest two: {last:?}");
        assert_eq!(last.records.len() as u64 + last.lost, 4);
    });
}
