//! The trace's text dump: what [`Pool::write_trace`](crate::Pool::write_trace)
//! writes, what a pool built with feature `trace` logs when its `run`
//! ends, and what `tools/trace` reads.
//!
//! Every line starts with `roving-trace `, so the dump can be picked out
//! of a console log whatever the logger puts before it:
//!
//! ```text
//! roving-trace 2 cores=2 tick_hz=62500000 complete=yes
//! roving-trace core 0 offset=0 lost=0
//! roving-trace e 0 1234567 task-begin
//! roving-trace e 0 1234600 drained 5
//! roving-trace e 0 1234610 stole 1 2
//! roving-trace e 0 1234700 wakeup 1 31
//! roving-trace e 0 1234720 strand-woken 17 signalled
//! roving-trace core 1 offset=0 lost=12
//! roving-trace e 1 1234650 slept
//! roving-trace e 1 1234710 woke light 31
//! roving-trace end
//! ```
//!
//! The first line gives the format's version, the pool's cores, the
//! ticks per second, and whether the pool's run had ended (`complete=no`
//! for a dump taken mid-run, in which cores may be asleep and strands
//! running). Each core's events follow its `core` line, oldest
//! first: `e`, the core, the tick count, the event's name and its
//! arguments. `stole` gives the victim (`-` if none) and the count;
//! `wakeup` the core woken and the claim number (`nudged` if the core was
//! only sent back to searching); `woke` the tier (`light` or `deep`) and
//! the claim that ended the sleep (`-` if the core ended it itself), so a
//! `wakeup` pairs with the `woke` of its core that has its claim number;
//! `strand-woken` the strand made runnable and what ended its wait
//! (`signalled`, `timed-out` or `cancelled`); `strand-in` the strand (its id's low 32
//! bits), and `strand-out` the strand and why its turn ended (`yielded`,
//! `preempted`, `finished`, or `blocked` and the reason, as
//! `BlockReason` names it); `stack-saved` and `stack-restored` the bytes
//! copy-swap copied; `actor-turn` the messages handled, `loop-drained`
//! the operations run, `future-completed` `ok` or `broken`; `irq-begins`
//! and `irq-ends` the interrupt line. `offset` is what to add to the core's
//! ticks to put them on one clock: 0 on every platform roving has, whose
//! tick counters are machine-wide.

use super::{CoreTrace, Left, TraceEvent, Woken};
use core::fmt;

/// The dump format's version, on its first line.
pub const VERSION: u32 = 2;

/// The prefix of every line.
pub const PREFIX: &str = "roving-trace";

/// Hands each line of the dump of `traces` to `line`, without its end.
/// `complete` says the pool's run has ended, so every turn and sleep in
/// the traces has ended too.
pub fn lines(traces: &[CoreTrace], tick_hz: u64, complete: bool, mut line: impl FnMut(fmt::Arguments<'_>)) {
    let complete = if complete { "yes" } else { "no" };
    line(format_args!("{PREFIX} {VERSION} cores={} tick_hz={tick_hz} complete={complete}", traces.len()));
    for (core, trace) in traces.iter().enumerate() {
        line(format_args!("{PREFIX} core {core} offset=0 lost={}", trace.lost));
        for event in &trace.events {
            line(format_args!("{PREFIX} e {core} {} {}", event.ticks, Named(event.event)));
        }
    }
    line(format_args!("{PREFIX} end"));
}

/// An event as the dump names it.
struct Named(TraceEvent);

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            TraceEvent::TaskBegin => f.write_str("task-begin"),
            TraceEvent::TaskEnd => f.write_str("task-end"),
            TraceEvent::Drained { tasks } => write!(f, "drained {tasks}"),
            TraceEvent::Stole { from: Some(from), tasks } => write!(f, "stole {from} {tasks}"),
            TraceEvent::Stole { from: None, tasks } => write!(f, "stole - {tasks}"),
            TraceEvent::Injected { tasks } => write!(f, "injected {tasks}"),
            TraceEvent::Slept => f.write_str("slept"),
            TraceEvent::Woke { deep, claim } => {
                write!(f, "woke {}", if deep { "deep" } else { "light" })?;
                match claim {
                    Some(claim) => write!(f, " {claim}"),
                    None => f.write_str(" -"),
                }
            }
            TraceEvent::Wakeup { core, claim: Some(claim) } => write!(f, "wakeup {core} {claim}"),
            TraceEvent::Wakeup { core, claim: None } => write!(f, "wakeup {core} nudged"),
            TraceEvent::StrandWoken { strand, by } => {
                let by = match by {
                    Woken::Signalled => "signalled",
                    Woken::TimedOut => "timed-out",
                    Woken::Cancelled => "cancelled",
                };
                write!(f, "strand-woken {strand} {by}")
            }
            TraceEvent::StrandIn { strand } => write!(f, "strand-in {strand}"),
            TraceEvent::StrandOut { strand, left: Left::Yielded } => write!(f, "strand-out {strand} yielded"),
            TraceEvent::StrandOut { strand, left: Left::Preempted } => {
                write!(f, "strand-out {strand} preempted")
            }
            TraceEvent::StrandOut { strand, left: Left::Finished } => {
                write!(f, "strand-out {strand} finished")
            }
            TraceEvent::StrandOut { strand, left: Left::Blocked(reason) } => {
                write!(f, "strand-out {strand} blocked {reason:?}")
            }
            TraceEvent::StackSaved { bytes } => write!(f, "stack-saved {bytes}"),
            TraceEvent::StackRestored { bytes } => write!(f, "stack-restored {bytes}"),
            TraceEvent::ActorTurn { messages } => write!(f, "actor-turn {messages}"),
            TraceEvent::LoopDrained { operations } => write!(f, "loop-drained {operations}"),
            TraceEvent::FutureCompleted { broken } => {
                write!(f, "future-completed {}", if broken { "broken" } else { "ok" })
            }
            TraceEvent::JoinPublished => f.write_str("join-published"),
            TraceEvent::JoinTakenBack => f.write_str("join-taken-back"),
            TraceEvent::InterruptBegins { line } => write!(f, "irq-begins {line}"),
            TraceEvent::InterruptEnds { line } => write!(f, "irq-ends {line}"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::Recorded;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn a_dump_names_every_event_in_order() {
        let event = |ticks, event| Recorded { ticks, event };
        let traces = [
            CoreTrace {
                events: vec![
                    event(5, TraceEvent::TaskBegin),
                    event(6, TraceEvent::Stole { from: None, tasks: 1 }),
                    event(7, TraceEvent::Wakeup { core: 1, claim: Some(4) }),
                    event(8, TraceEvent::Wakeup { core: 1, claim: None }),
                    event(8, TraceEvent::StrandWoken { strand: 12, by: Woken::TimedOut }),
                ],
                lost: 0,
            },
            CoreTrace {
                events: vec![
                    event(9, TraceEvent::Woke { deep: true, claim: Some(4) }),
                    event(20, TraceEvent::Woke { deep: false, claim: None }),
                ],
                lost: 3,
            },
        ];
        let mut dump: Vec<String> = Vec::new();
        lines(&traces, 1000, true, |line| dump.push(line.to_string()));
        assert_eq!(
            dump,
            [
                "roving-trace 2 cores=2 tick_hz=1000 complete=yes",
                "roving-trace core 0 offset=0 lost=0",
                "roving-trace e 0 5 task-begin",
                "roving-trace e 0 6 stole - 1",
                "roving-trace e 0 7 wakeup 1 4",
                "roving-trace e 0 8 wakeup 1 nudged",
                "roving-trace e 0 8 strand-woken 12 timed-out",
                "roving-trace core 1 offset=0 lost=3",
                "roving-trace e 1 9 woke deep 4",
                "roving-trace e 1 20 woke light -",
                "roving-trace end",
            ]
        );
    }
}
