//! roving: a `no_std` multicore scheduler for machines with no operating system.
//!
//! Every hardware core is a worker of a [`Pool`]. Your code runs on every
//! core as strands (threads on static fibre stacks that block without
//! blocking their core), tasks, fork-join, actors, event loops, futures and
//! async tasks, all sharing one set of [`sync`] primitives.
//!
//! # Quick start
//!
//! On a desktop, with feature `std`, a [`Machine`](platform::host::Machine)
//! of OS threads stands in for the cores. The same code runs on a board,
//! where the kernel has already started the cores and `Machine` is not
//! needed:
//!
//! ```
//! use roving::{Pool, join, platform::host::Machine, strand, sync::channel};
//!
//! Machine::new(4).unwrap().run(|| {
//!     let pool = Pool::new().unwrap();
//!     let total = pool.run(|| {
//!         let (tx, rx) = channel::bounded(2).unwrap();
//!         // A strand may block; its core runs other work meanwhile.
//!         let worker = strand::spawn(move || {
//!             // Fork-join: the halves may run on two cores.
//!             let (a, b) = join(|| (0..500u64).sum::<u64>(), || (500..1000u64).sum::<u64>());
//!             tx.send(a + b).unwrap();
//!         })
//!         .unwrap();
//!         let sum = rx.recv().unwrap();
//!         worker.join().unwrap();
//!         sum
//!     });
//!     assert_eq!(total.unwrap(), 499_500);
//! })
//! .unwrap();
//! ```
//!
//! Every call that can fail returns a typed error, and a closure or value
//! that was refused comes back inside it.
//!
//! # Where it runs
//!
//! This crate is the portable part: it never names a register, an address
//! or a board. What it needs from the machine it gets through one narrow
//! seam, the [`Platform`](platform::Platform) trait, bound at link time
//! with [`set_platform!`]. Three implementations exist:
//!
//! - `roving-kernel` (in this repository) for bare metal: QEMU `virt`
//!   and the Raspberry Pi 3B and 4B (aarch64), and x86_64 PCs;
//! - [`platform::host`] behind feature `std`, where OS threads stand in for
//!   cores, so the portable core is tested and benchmarked as ordinary Rust;
//! - yours: a hobby-OS kernel implements [`Platform`](platform::Platform) and
//!   calls [`set_platform!`] once, without forking roving. The repository's
//!   `docs/embedding.md` is the checklist, and `examples/embed` a small
//!   kernel written on it.
//!
//! roving needs a global allocator (`alloc`): pools, and task storage
//! beyond the per-core caches, come from it.
//!
//! # What is here
//!
//! - [`Pool`]: cores that share work, with [`post`] (run a closure on a
//!   given core, through a lock-free mailbox per ordered pair of cores) and
//!   [`spawn_task`] (run it on any core); idle cores steal, then sleep under a
//!   no-lost-wake-up protocol and wake on the platform's doorbell. A
//!   running pool can be resized ([`Pool::resize`]) from the machine's
//!   [`free_cores`].
//! - [`strand`]: threads of execution on static fibre stacks, in a tree
//!   with join, cancel, scopes and contained failures; [`sync`]: the
//!   blocking primitives strands use (a mutex whose holder fails is
//!   poisoned and released).
//! - [`join()`]: fork-join in the style of rayon, with no fibre or
//!   allocation per job, for data-parallel code.
//! - [`domain`]: parts of a program that fail separately, each with its
//!   own root strand, pools and tree; a domain whose root fails is torn
//!   down while the others run on.
//! - The seam ([`platform`]) and time ([`time::Instant`]).
//! - [`actor`]: actors with one-word dormant state, scheduled as tasks on a
//!   pool; [`event_loop`]: objects whose operations are deferred closures
//!   run one at a time, on a core of their own or on the caller that finds
//!   them idle, with one-shot callbacks; [`future`]: closures sent to a
//!   core, with continuations on chosen cores, that strands and async code
//!   can wait for.
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `std` | [`platform::host`]: OS threads stand in for cores, so programs, tests and benchmarks run on a desktop. Without it the crate is `no_std` and registers no platform: a kernel registers its own. |
//! | `defmt` | every public error type is `defmt::Format`, for kernels that log with `defmt`. |
//! | `chaos` | tests only (implies `std`): random delays at the steps of roving's concurrent protocols, so stress tests meet rare interleavings. |
//!
//! # Design notes
//!
//! How each part works, with its invariants, is written up in the
//! repository's `docs/` (`docs/design.md` is the map); each lock-free
//! protocol also states its protocol and proof sketch next to its code.
#![cfg_attr(not(feature = "std"), no_std)]
// The docs are built, checked (`make lint`) and published with features
// std and trace; without them, the links to the host platform and the
// trace hooks have nothing to point at.
#![cfg_attr(not(all(feature = "std", feature = "trace")), allow(rustdoc::broken_intra_doc_links))]

extern crate alloc;

/// Records a trace event for core `$core` of the pool whose shared state
/// is `$shared` (`crate::trace`), with feature `trace`; without it, the
/// statement and its arguments compile to nothing.
#[cfg_attr(loom, allow(unused_macros))]
macro_rules! trace_point {
    ($shared:expr, $core:expr, $event:expr) => {
        #[cfg(feature = "trace")]
        $shared.record_trace($core, $event);
    };
}

/// Records a trace event for the calling core, if it is a worker of a
/// pool; as [`trace_point!`], nothing without feature `trace`.
#[cfg_attr(loom, allow(unused_macros))]
macro_rules! trace_here {
    ($event:expr) => {
        #[cfg(feature = "trace")]
        crate::pool::current::trace_here($event);
    };
}

// The README's quick start, compiled and run with the doctests.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../README.md")]
struct ReadmeQuickStart;

// First, so that every module sees its macro.
#[macro_use]
mod error_messages;
#[cfg(not(loom))]
#[doc(hidden)]
pub mod debug_table;
// Under loom only the lock-free protocols and what they stand on are
// built: the pool and strands hold static, const-initialised state that
// loom's atomics cannot provide.
#[cfg(not(loom))]
pub mod actor;
mod atomics;
/// The census of cache lines moved between cores (feature `census`).
#[cfg(feature = "census")]
pub mod census;
mod chaos;
#[cfg(all(feature = "defmt", not(loom)))]
mod defmt_format;
#[cfg_attr(loom, allow(unused))]
mod diag;
#[cfg(not(loom))]
pub mod domain;
#[cfg(not(loom))]
pub mod event_loop;
#[cfg(not(loom))]
pub mod executor;
#[cfg(not(loom))]
pub mod future;
#[cfg(not(loom))]
mod join;
mod mailbox;
#[cfg_attr(loom, allow(unused))]
pub mod platform;
#[cfg(not(loom))]
pub mod pool;
#[cfg(not(loom))]
pub mod preempt;
#[cfg_attr(loom, allow(unused))]
mod protocol;
#[cfg_attr(loom, allow(unused))]
pub mod raw {
    //! Unstable building blocks, for kernels that build their own
    //! scheduling on roving's parts. Nothing here is covered by semver:
    //! it may change in any release. Strands ([`crate::strand`]) are the
    //! stable, safe interface to the same machinery.

    pub mod context;
}
#[cfg_attr(loom, allow(unused))]
pub(crate) use raw::context;
mod sleep;
#[cfg_attr(loom, allow(unused))]
mod spin_lock;
#[cfg(not(loom))]
pub mod strand;
#[cfg(not(loom))]
pub mod sync;
mod task;
#[cfg_attr(loom, allow(unused))]
pub mod time;
#[cfg(not(loom))]
mod timers;
#[cfg(all(feature = "trace", not(loom)))]
pub mod trace;
// Without the feature, for its unit tests only.
#[cfg(all(not(feature = "trace"), test, not(loom)))]
#[allow(dead_code, unused_imports)]
mod trace;

#[cfg(not(loom))]
pub use executor::{block_on, spawn_async, spawn_async_on};
#[cfg(not(loom))]
pub use join::join;
#[cfg(not(loom))]
pub use pool::{
    Config, CoreStats, Deadlock, DestroyError, Mailboxes, OnDeadlock, PinError, Pool, PoolError, PostError,
    ResizeError, RunError, SilentCore, free_cores, post, spawn_task,
};

/// Internals, exposed only to the loom models in `tests/loom_*.rs` so they
/// check the real code. Not part of the API.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_api {
    pub use crate::mailbox::inbox::Inbox;
    pub use crate::mailbox::list::{AtomicList, Pushed};
    pub use crate::mailbox::mesh::routes::{Reading, Routes};
    pub use crate::mailbox::mesh::{Mesh, Sent, Topology};
    pub use crate::protocol::actor_schedule::{ActorPushed, Closing, Finished, Link, Schedule, reverse};
    pub use crate::protocol::async_state::{AfterPending, AsyncState, Start as TaskStart, Wake as TaskWake};
    pub use crate::protocol::core_hints::CoreHints;
    pub use crate::protocol::join_frame::{DONE as JOB_DONE, WakeOwner};
    pub use crate::protocol::lifo_slot::LifoSlot;
    pub use crate::protocol::loop_handoff::{Deferred, Drained, Handoff};
    pub use crate::protocol::own_side::{Look, OwnSide};
    pub use crate::protocol::signal_word::{
        Register as SignalRegister, SignalWord, StateWord, WAITING as SIGNAL_WAITING,
    };
    pub use crate::protocol::trace_ring::{Ring as TraceRing, Snapshot as TraceSnapshot};
    pub use crate::protocol::urgent_mark::{Taken as UrgentTaken, UrgentMark};
    pub use crate::sleep::watch::{NONE as NO_DEADLINE, Watch};
    pub use crate::sleep::{IdleState, Outcome, Roused, SleepState, Sleeper};
    pub use crate::task::queue::TaskQueue;
    pub use crate::task::storage::BlockCache;
    pub use crate::task::{Action, Task};
    /// A join job with no failure to carry: loom runs no strands.
    pub type JoinFrame = crate::protocol::join_frame::Frame<()>;
    /// A core's slot for such jobs.
    pub type JoinSlot = crate::protocol::join_frame::JobSlot<()>;
}
