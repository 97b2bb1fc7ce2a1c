//! A pool's trace: one ring of events per core
//! (`crate::protocol::trace_ring`), sized at build time.

use super::event::{CoreTrace, Recorded, TraceEvent};
use alloc::vec::Vec;

/// Events each core's ring holds before the oldest are overwritten: 4096
/// (96 KiB per core), or what `ROVING_TRACE_EVENTS` says at build time.
pub const EVENTS_PER_CORE: usize = match option_env!("ROVING_TRACE_EVENTS") {
    Some(text) => parse_count(text),
    None => 4096,
};

/// A whole number from 1 up, at compile time.
const fn parse_count(text: &str) -> usize {
    let bytes = text.as_bytes();
    assert!(!bytes.is_empty(), "ROVING_TRACE_EVENTS must be a whole number of events");
    let (mut value, mut at) = (0usize, 0);
    while at < bytes.len() {
        assert!(bytes[at].is_ascii_digit(), "ROVING_TRACE_EVENTS must be a whole number of events");
        value = value * 10 + (bytes[at] - b'0') as usize;
        at += 1;
    }
    assert!(value > 0, "ROVING_TRACE_EVENTS must be at least 1");
    value
}

/// The platform's ticks per second, as the last pool built saw it: for a
/// debugger that reads the rings out of memory (`tools/gdb-roving.py`'s
/// `roving trace`) and cannot ask the platform. Kept (`used`): nothing in
/// the program reads it.
#[used]
pub(crate) static TICK_HZ: crate::atomics::unmodelled::AtomicU64 =
    crate::atomics::unmodelled::AtomicU64::new(0);

/// The rings of a pool, one per core.
pub(crate) struct Rings(alloc::boxed::Box<[crate::protocol::trace_ring::Ring]>);

impl Rings {
    pub(crate) fn new(cores: usize) -> Self {
        TICK_HZ.store(crate::platform::tick_hz(), crate::atomics::unmodelled::Ordering::Relaxed);
        Self((0..cores).map(|_| crate::protocol::trace_ring::Ring::new(EVENTS_PER_CORE)).collect())
    }

    /// Records `event` for core `core`, now.
    #[inline]
    pub(crate) fn record(&self, core: usize, event: TraceEvent) {
        self.0[core].record(crate::platform::ticks(), event.encode());
    }

    /// Every core's trace, by core index.
    pub(crate) fn read(&self) -> Vec<CoreTrace> {
        let read = |ring: &crate::protocol::trace_ring::Ring| {
            let snapshot = ring.snapshot();
            let events = snapshot.records.iter().filter_map(|record| {
                TraceEvent::decode(record.data).map(|event| Recorded { ticks: record.ticks, event })
            });
            CoreTrace { events: events.collect(), lost: snapshot.lost }
        };
        self.0.iter().map(read).collect()
    }
}
