//! The lock-free protocols that the layers above build on, each alone in
//! its file: a state word (or a few) and the operations on it, with the
//! protocol written as a specification and a proof sketch beside the code.
//!
//! They depend only on the atomics and the task header, so the same files
//! build under `cfg(loom)`, where `tests/loom_*.rs` model-check them with
//! stand-ins for the rest of roving:
//!
//! | file | protocol | model | used by |
//! |---|---|---|---|
//! | [`actor_schedule`] | an actor's one word: its message list and its schedule flag | `loom_actor` | `actor`, `event_loop` |
//! | [`async_state`] | an async task's state word: queued, polled, done, cancelled, references | `loom_task` | `executor` |
//! | [`loop_handoff`] | who drains an event loop's queue, and when the drainer may leave | `loom_event_loop` | `event_loop` |
//! | [`own_side`] | who may touch a core's own queues: the core, or the core that takes it out once it stops answering | `loom_own_side` | the pool |
//! | [`core_hints`] | a hint per core that fibres or stealable tasks may wait there, so idle cores look only where one is raised | `loom_core_hints` | the mailboxes, the pool's stealing |
//! | [`join_frame`] | a fork-join job changing hands between its owner and a thief | `loom_join` | `join`, the pool's stealing |
//! | [`lifo_slot`] | a core's LIFO slot, and stealing a task that sat there | `loom_lifo` | the pool |
//! | [`signal_word`] | a signal's state word, with one waiter, raised from interrupt handlers | `loom_signal` | `sync::Signal`, `strand::park` |
//! | [`trace_ring`] | one core's ring of trace events, written without locks | `loom_trace_ring` | `trace` |
//! | [`urgent_mark`] | a core's mark that a woken strand outranks the one it runs, for its next tick | `loom_urgent` | `preempt`, the pool's wakes |
//!
//! The other lock-free protocols live with the part they serve and are
//! built under loom in place: the mailboxes (`crate::mailbox`), the sleep
//! protocol (`crate::sleep`) and the block caches (`crate::task::storage`).

pub mod actor_schedule;
pub mod async_state;
pub mod core_hints;
pub mod join_frame;
pub mod lifo_slot;
pub mod loop_handoff;
pub mod own_side;
pub mod signal_word;
pub mod urgent_mark;
// With feature trace, and in tests and loom models without it.
#[cfg(any(feature = "trace", test, loom))]
#[cfg_attr(not(feature = "trace"), allow(dead_code))]
pub mod trace_ring;
