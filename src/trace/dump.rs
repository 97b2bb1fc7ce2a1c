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

use super::{CoreTrace, Event, Left, Woken};
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
struct Named(Event);

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Event::TaskBegin => f.write_str("task-begin"),
            Event::TaskEnd => f.write_str("task-end"),
            Event::Drained { tasks } => write!(f, "drained {tasks}"),
            Event::Stole { from: Some(from), tasks } => write!(f, "stole {from} {tasks}"),
            Event::Stole { from: None, tasks } => write!(f, "stole - {tasks}"),
            Event::Injected { tasks } => write!(f, "injected {tasks}"),
            Event::Slept => f.write_str("slept"),
            Event::Woke { deep, claim } => {
                write!(f, "woke {}", if deep { "deep" } else { "light" })?;
                match claim {
                    Some(claim) => write!(f, " {claim}"),
                    None => f.write_str(" -"),
                }
            }
            Event::Wakeup { core, claim: Some(claim) } => write!(f, "wakeup {core} {claim}"),
            Event::Wakeup { core, claim: None } => write!(f, "wakeup {core} nudged"),
            Event::StrandWoken { strand, by } => {
                let by = match by {
                    Woken::Signalled => "signalled",
                    Woken::TimedOut => "timed-out",
                    Woken::Cancelled => "cancelled",
                };
                write!(f, "strand-woken {strand} {by}")
            }
            Event::StrandIn { strand } => write!(f, "strand-in {strand}"),
            Event::StrandOut { strand, left: Left::Yielded } => write!(f, "strand-out {strand} yielded"),
            Event::StrandOut { strand, left: Left::Preempted } => write!(f, "strand-out {strand} preempted"),
            Event::StrandOut { strand, left: Left::Finished } => write!(f, "strand-out {strand} finished"),
            Event::StrandOut { strand, left: Left::Blocked(reason) } => {
                write!(f, "strand-out {strand} blocked {reason:?}")
            }
            Event::StackSaved { bytes } => write!(f, "stack-saved {bytes}"),
            Event::StackRestored { bytes } => write!(f, "stack-restored {bytes}"),
            Event::ActorTurn { messages } => write!(f, "actor-turn {messages}"),
            Event::LoopDrained { operations } => write!(f, "loop-drained {operations}"),
            Event::FutureCompleted { broken } => {
                write!(f, "future-completed {}", if broken { "broken" } else { "ok" })
            }
            Event::JoinPublished => f.write_str("join-published"),
            Event::JoinTakenBack => f.write_str("join-taken-back"),
            Event::InterruptBegins { line } => write!(f, "irq-begins {line}"),
            Event::InterruptEnds { line } => write!(f, "irq-ends {line}"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::TraceEvent;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn a_dump_names_every_event_in_order() {
        let event = |ticks, event| TraceEvent { ticks, event };
        let traces = [
            CoreTrace {
                events: vec![
                    event(5, Event::TaskBegin),
                    event(6, Event::Stole { from: None, tasks: 1 }),
                    event(7, Event::Wakeup { core: 1, claim: Some(4) }),
                    event(8, Event::Wakeup { core: 1, claim: None }),
                    event(8, Event::StrandWoken { strand: 12, by: Woken::TimedOut }),
                ],
                lost: 0,
            },
            CoreTrace {
                events: vec![
                    event(9, Event::Woke { deep: true, claim: Some(4) }),
                    event(20, Event::Woke { deep: false, claim: None }),
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
