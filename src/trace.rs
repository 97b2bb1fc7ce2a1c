//! Tracing: what each core of a pool did and when, recorded into a ring
//! per core, with feature `trace`.
//!
//! Each trace point records one [`TraceEvent`] with the platform's tick count
//! into its core's ring (`src/protocol/trace_ring.rs`), which overwrites the
//! oldest event when full and counts what it lost.
//! [`Pool::trace`](crate::Pool::trace) reads the rings, and
//! [`Pool::write_trace`](crate::Pool::write_trace) writes them as text
//! ([`dump`]); a pool built with the feature also logs that text when its
//! `run` ends, so a bare-metal run's console carries its trace out
//! (`tools/trace` reads it). Without the feature the trace points
//! compile to nothing.
//!
//! The trace points so far: the pool loop's (tasks run, mailbox drains,
//! steals, work from the injector, sleeps and wake-ups); the strands'
//! (each turn's start and end, with why it ended, and copy-swap's stack
//! copies); the programming models' (actor turns, event-loop drains,
//! futures completed, `join`'s jobs published and taken back); and
//! interrupt handlers', from platform code ([`interrupt_begins`]). Each is recorded where
//! its [`CoreStats`](crate::CoreStats) counter is counted, so a trace that
//! lost nothing agrees with the counters exactly.

pub mod dump;
pub(crate) mod event;
pub(crate) mod rings;

pub use event::{CoreTrace, Counted, Left, Recorded, TraceEvent, Woken};
pub use rings::EVENTS_PER_CORE;

/// For platform code: an interrupt handler for `line` starts on the
/// calling core. Recorded in the trace of the pool the core works for, if
/// any; a handler may interrupt a trace point, which is safe (its event,
/// or rarely the interrupted one, is counted lost, never torn). The
/// roving-kernel crate calls it around every handler it dispatches, with
/// its feature `trace`.
#[cfg(feature = "trace")]
pub fn interrupt_begins(line: u32) {
    crate::pool::current::trace_interrupted(TraceEvent::InterruptBegins { line });
}

/// For platform code: the handler [`interrupt_begins`] announced returned.
#[cfg(feature = "trace")]
pub fn interrupt_ends(line: u32) {
    crate::pool::current::trace_interrupted(TraceEvent::InterruptEnds { line });
}

impl From<&crate::CoreStats> for Counted {
    fn from(stats: &crate::CoreStats) -> Self {
        let s = stats;
        Self {
            tasks_run: s.tasks_run,
            received: s.received,
            stolen: s.stolen,
            injected: s.injected,
            sleeps: s.sleeps,
            deep_sleeps: s.deep_sleeps,
            wakeups: s.wakeups,
        }
    }
}
