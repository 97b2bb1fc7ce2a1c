//! The events a trace records, and how each packs into the one word a
//! ring slot holds (`crate::protocol::trace_ring`). Public through
//! `crate::trace`; kept apart from it so that the pool, which records
//! them, sits above them (`docs/layout.md`).

use crate::strand::id::BlockReason;
use alloc::vec::Vec;

/// What a core did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceEvent {
    /// It started a task (a closure, a strand's fibre, an async task's
    /// poll): one per [`CoreStats::tasks_run`](crate::CoreStats).
    TaskBegin,
    /// The task it ran returned to its loop. A strand that hands its core
    /// straight to the next strand's fibre has no end of its own: the next
    /// [`TraceEvent::TaskBegin`] ends it.
    TaskEnd,
    /// It took `tasks` tasks from its mailboxes.
    Drained {
        /// How many.
        tasks: u32,
    },
    /// It took `tasks` tasks from another core: from core `from`'s steal
    /// list, fibre mailbox or LIFO slot, or (`from` is `None`) a fork-join
    /// job published by any core.
    Stole {
        /// The core it took them from, if one.
        from: Option<u32>,
        /// How many.
        tasks: u32,
    },
    /// It took `tasks` tasks from the injector (work from outside the pool).
    Injected {
        /// How many.
        tasks: u32,
    },
    /// It committed to sleep.
    Slept,
    /// Its sleep ended; `deep` says whether it reached the deep idle tier.
    Woke {
        /// Whether it slept in the deep tier.
        deep: bool,
        /// The claim that ended the sleep, the same number as the waker's
        /// [`TraceEvent::Wakeup`] records; `None` if the core ended it itself
        /// (it saw work, or a deadline came).
        claim: Option<u32>,
    },
    /// It woke core `core`: one per
    /// [`CoreStats::wakeups`](crate::CoreStats).
    Wakeup {
        /// The core it woke.
        core: u32,
        /// Which of `core`'s claims this was, if it claimed the core in its
        /// sleep: the [`TraceEvent::Woke`] with the same claim on `core` ends
        /// that sleep (none does if the core cancelled it before it began).
        /// `None`: the core was counting itself as a sleeper, and was
        /// nudged back to searching; that ends no sleep.
        claim: Option<u32>,
    },
    /// It made a blocked strand runnable: the low 32 bits of its
    /// [`StrandId`](crate::strand::StrandId), and what ended its wait. The
    /// strand's next [`TraceEvent::StrandIn`], on any core, is the turn this
    /// began; whatever ran on this core then (a strand's turn, a task, an
    /// interrupt handler) woke it.
    StrandWoken {
        /// The strand (its id's low 32 bits).
        strand: u32,
        /// What ended its wait.
        by: Woken,
    },
    /// A strand's turn began on it: the low 32 bits of its
    /// [`StrandId`](crate::strand::StrandId).
    StrandIn {
        /// The strand (its id's low 32 bits).
        strand: u32,
    },
    /// A strand's turn on it ended, and why. A strand that hands the core
    /// straight to another has the other's `StrandIn` first.
    StrandOut {
        /// The strand (its id's low 32 bits).
        strand: u32,
        /// Why its turn ended.
        left: Left,
    },
    /// Copy-swap: it copied the resident strand's stack out of the fibre,
    /// `bytes` long, to let another strand in.
    StackSaved {
        /// The bytes copied.
        bytes: u32,
    },
    /// Copy-swap: it copied a strand's stack back into its fibre.
    StackRestored {
        /// The bytes copied.
        bytes: u32,
    },
    /// An actor's turn on it ended (or yielded the core after its quota),
    /// having handled `messages` messages.
    ActorTurn {
        /// Messages handled in the turn.
        messages: u32,
    },
    /// It drained an event loop's queue, running `operations` operations.
    LoopDrained {
        /// Operations run.
        operations: u32,
    },
    /// A [`Future`](crate::future::Future) completed on it; `broken` if it
    /// holds an error rather than a value.
    FutureCompleted {
        /// Whether it completed with an error.
        broken: bool,
    },
    /// `join` published its oldest job for another core to take.
    JoinPublished,
    /// `join` took a published job back, nobody having taken it.
    JoinTakenBack,
    /// An interrupt handler for `line` started on it
    /// ([`interrupt_begins`](crate::trace::interrupt_begins)).
    InterruptBegins {
        /// The interrupt line.
        line: u32,
    },
    /// The handler for `line` returned ([`interrupt_ends`](crate::trace::interrupt_ends)).
    InterruptEnds {
        /// The interrupt line.
        line: u32,
    },
}

/// What ended a strand's wait ([`TraceEvent::StrandWoken`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// What it waited for happened: a signal, an unpark, a lock or
    /// channel handed on, a child finished.
    Signalled,
    /// Its deadline passed.
    TimedOut,
    /// It was cancelled.
    Cancelled,
}

impl Woken {
    /// From the strand state word's cause of waking.
    fn decode(code: u32) -> Option<Self> {
        [Woken::Signalled, Woken::TimedOut, Woken::Cancelled].get(code as usize).copied()
    }
}

/// Why a strand's turn ended ([`TraceEvent::StrandOut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Left {
    /// It yielded.
    Yielded,
    /// Its time slice ended.
    Preempted,
    /// It blocked, for this reason.
    Blocked(BlockReason),
    /// Its closure returned.
    Finished,
}

impl Left {
    fn encode(self) -> u32 {
        match self {
            Left::Yielded => 0,
            Left::Preempted => 1,
            Left::Finished => 2,
            Left::Blocked(reason) => 16 + reason as u32,
        }
    }

    fn decode(code: u32) -> Option<Self> {
        Some(match code {
            0 => Left::Yielded,
            1 => Left::Preempted,
            2 => Left::Finished,
            16..=271 => Left::Blocked(BlockReason::from_raw((code - 16) as u8)),
            _ => return None,
        })
    }
}

const NONE: u32 = 0xff_ffff;

impl TraceEvent {
    /// Packs the event into one word: kind in the top byte, then 24 bits
    /// and 32 bits of arguments.
    pub(crate) fn encode(self) -> u64 {
        let (kind, a, b): (u64, u32, u32) = match self {
            TraceEvent::TaskBegin => (0, 0, 0),
            TraceEvent::TaskEnd => (1, 0, 0),
            TraceEvent::Drained { tasks } => (2, 0, tasks),
            TraceEvent::Stole { from, tasks } => (3, from.map_or(NONE, |core| core.min(NONE - 1)), tasks),
            TraceEvent::Injected { tasks } => (4, 0, tasks),
            TraceEvent::Slept => (5, 0, 0),
            TraceEvent::Woke { deep, claim } => {
                (6, u32::from(deep) | u32::from(claim.is_some()) << 1, claim.unwrap_or(0))
            }
            TraceEvent::Wakeup { core, claim: Some(claim) } => (7, core.min(NONE - 1), claim),
            TraceEvent::Wakeup { core, claim: None } => (19, core.min(NONE - 1), 0),
            TraceEvent::StrandWoken { strand, by } => (20, by as u32, strand),
            TraceEvent::StrandIn { strand } => (8, 0, strand),
            TraceEvent::StrandOut { strand, left } => (9, left.encode(), strand),
            TraceEvent::StackSaved { bytes } => (10, 0, bytes),
            TraceEvent::StackRestored { bytes } => (11, 0, bytes),
            TraceEvent::ActorTurn { messages } => (12, 0, messages),
            TraceEvent::LoopDrained { operations } => (13, 0, operations),
            TraceEvent::FutureCompleted { broken } => (14, broken.into(), 0),
            TraceEvent::JoinPublished => (15, 0, 0),
            TraceEvent::JoinTakenBack => (16, 0, 0),
            TraceEvent::InterruptBegins { line } => (17, 0, line),
            TraceEvent::InterruptEnds { line } => (18, 0, line),
        };
        kind << 56 | u64::from(a & NONE) << 32 | u64::from(b)
    }

    /// Unpacks what [`TraceEvent::encode`] packed.
    pub(crate) fn decode(word: u64) -> Option<Self> {
        let (a, b) = ((word >> 32) as u32 & NONE, word as u32);
        Some(match word >> 56 {
            0 => TraceEvent::TaskBegin,
            1 => TraceEvent::TaskEnd,
            2 => TraceEvent::Drained { tasks: b },
            3 => TraceEvent::Stole { from: (a != NONE).then_some(a), tasks: b },
            4 => TraceEvent::Injected { tasks: b },
            5 => TraceEvent::Slept,
            6 => TraceEvent::Woke { deep: a & 1 != 0, claim: (a & 2 != 0).then_some(b) },
            7 => TraceEvent::Wakeup { core: a, claim: Some(b) },
            8 => TraceEvent::StrandIn { strand: b },
            9 => TraceEvent::StrandOut { strand: b, left: Left::decode(a)? },
            10 => TraceEvent::StackSaved { bytes: b },
            11 => TraceEvent::StackRestored { bytes: b },
            12 => TraceEvent::ActorTurn { messages: b },
            13 => TraceEvent::LoopDrained { operations: b },
            14 => TraceEvent::FutureCompleted { broken: a != 0 },
            15 => TraceEvent::JoinPublished,
            16 => TraceEvent::JoinTakenBack,
            17 => TraceEvent::InterruptBegins { line: b },
            18 => TraceEvent::InterruptEnds { line: b },
            19 => TraceEvent::Wakeup { core: a, claim: None },
            20 => TraceEvent::StrandWoken { strand: b, by: Woken::decode(a)? },
            _ => return None,
        })
    }
}

/// One event and when it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The platform's tick count ([`platform::ticks`](crate::platform::ticks)).
    pub ticks: u64,
    /// What happened.
    pub event: TraceEvent,
}

/// One core's trace, as `Pool::trace` read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreTrace {
    /// The events still in the core's ring, oldest first.
    pub events: Vec<Recorded>,
    /// Events recorded but not in `events`: overwritten by newer ones, or
    /// being written while the ring was read.
    pub lost: u64,
}

/// What a core's trace says it did, in [`CoreStats`](crate::CoreStats)'
/// terms: the counters whose every step a trace point records. For a
/// trace that lost nothing, [`CoreTrace::counted`] equals what
/// `Counted::from` takes from the core's `CoreStats` (`tests/trace.rs`
/// and the `trace_cost` test kernel check it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counted {
    /// Tasks run ([`TraceEvent::TaskBegin`]).
    pub tasks_run: u64,
    /// Tasks taken from the core's mailboxes ([`TraceEvent::Drained`]).
    pub received: u64,
    /// Tasks stolen ([`TraceEvent::Stole`]).
    pub stolen: u64,
    /// Tasks taken from the injector ([`TraceEvent::Injected`]).
    pub injected: u64,
    /// Sleeps ([`TraceEvent::Slept`]).
    pub sleeps: u64,
    /// Sleeps that reached the deep tier ([`TraceEvent::Woke`] with `deep`).
    pub deep_sleeps: u64,
    /// Cores woken ([`TraceEvent::Wakeup`]).
    pub wakeups: u64,
}

impl CoreTrace {
    /// Adds up the events kept ([`Counted`]); lost events are not in it.
    pub fn counted(&self) -> Counted {
        let mut counted = Counted::default();
        for event in &self.events {
            let (counter, n) = match event.event {
                TraceEvent::TaskBegin => (&mut counted.tasks_run, 1),
                TraceEvent::Drained { tasks } => (&mut counted.received, tasks),
                TraceEvent::Stole { tasks, .. } => (&mut counted.stolen, tasks),
                TraceEvent::Injected { tasks } => (&mut counted.injected, tasks),
                TraceEvent::Slept => (&mut counted.sleeps, 1),
                TraceEvent::Woke { deep: true, .. } => (&mut counted.deep_sleeps, 1),
                TraceEvent::Wakeup { .. } => (&mut counted.wakeups, 1),
                _ => continue,
            };
            *counter += u64::from(n);
        }
        counted
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_event_survives_its_packing() {
        let events = [
            TraceEvent::TaskBegin,
            TraceEvent::TaskEnd,
            TraceEvent::Drained { tasks: u32::MAX },
            TraceEvent::Stole { from: Some(511), tasks: 3 },
            TraceEvent::Stole { from: None, tasks: 1 },
            TraceEvent::Injected { tasks: 7 },
            TraceEvent::Slept,
            TraceEvent::Woke { deep: true, claim: None },
            TraceEvent::Woke { deep: false, claim: Some(u32::MAX) },
            TraceEvent::Woke { deep: true, claim: Some(0) },
            TraceEvent::Wakeup { core: 300, claim: Some(7) },
            TraceEvent::Wakeup { core: 511, claim: None },
            TraceEvent::StrandWoken { strand: 9, by: Woken::Signalled },
            TraceEvent::StrandWoken { strand: u32::MAX, by: Woken::TimedOut },
            TraceEvent::StrandWoken { strand: 0, by: Woken::Cancelled },
            TraceEvent::StrandIn { strand: u32::MAX },
            TraceEvent::StrandOut { strand: 7, left: Left::Yielded },
            TraceEvent::StrandOut { strand: 7, left: Left::Preempted },
            TraceEvent::StrandOut { strand: 7, left: Left::Finished },
            TraceEvent::StrandOut { strand: 7, left: Left::Blocked(BlockReason::Parked) },
            TraceEvent::StrandOut { strand: 7, left: Left::Blocked(BlockReason::None) },
            TraceEvent::StackSaved { bytes: 4096 },
            TraceEvent::StackRestored { bytes: 1 },
            TraceEvent::ActorTurn { messages: 3 },
            TraceEvent::LoopDrained { operations: 9 },
            TraceEvent::FutureCompleted { broken: true },
            TraceEvent::FutureCompleted { broken: false },
            TraceEvent::JoinPublished,
            TraceEvent::JoinTakenBack,
            TraceEvent::InterruptBegins { line: 33 },
            TraceEvent::InterruptEnds { line: 1023 },
        ];
        for event in events {
            assert_eq!(TraceEvent::decode(event.encode()), Some(event));
        }
        assert_eq!(TraceEvent::decode(0xff << 56), None);
    }
}
