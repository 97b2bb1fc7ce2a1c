//! What can go wrong with a pool, in types that say so.

use super::failure::Failure;
use crate::platform::StartCoreError;
use core::fmt;

/// A closure that was not accepted, and why. The closure comes back with
/// the error: [`PostError::into_inner`].
#[non_exhaustive]
pub enum PostError<F> {
    /// The pool has stopped (it was shut down, or it ran out of work and
    /// its [`run`](super::Pool::run) returned).
    Stopped(F),
    /// There is no core with this index on the machine.
    NoSuchCore {
        /// The index asked for.
        core: usize,
        /// Core indices run `0..cores`.
        cores: usize,
        /// The closure.
        closure: F,
    },
    /// The core is not one of the pool's cores now: it never was, or it
    /// left when the pool was resized.
    NotAMember {
        /// The index asked for.
        core: usize,
        /// The closure.
        closure: F,
    },
    /// Memory for the task could not be allocated.
    OutOfMemory(F),
    /// A free function ([`spawn_task`](crate::spawn_task), [`post`](crate::post)) was
    /// called outside any running pool's cores; use a [`Pool`](super::Pool)
    /// handle there instead.
    NotInPool(F),
    /// The pool belongs to another domain (`crate::domain`).
    OtherDomain(F),
}

impl<F> PostError<F> {
    /// The closure that was not accepted.
    pub fn into_inner(self) -> F {
        match self {
            Self::Stopped(f) | Self::OutOfMemory(f) | Self::NotInPool(f) | Self::OtherDomain(f) => f,
            Self::NoSuchCore { closure, .. } | Self::NotAMember { closure, .. } => closure,
        }
    }
}

impl<F> PostError<F> {
    /// The work that was not accepted, and what refusing it means for the
    /// actor or event loop it would have run: out of memory, or its pool
    /// gone.
    pub(crate) fn into_refusal(self) -> (F, DeliveryError<()>) {
        let refusal = match self {
            Self::OutOfMemory(_) => DeliveryError::OutOfMemory(()),
            _ => DeliveryError::PoolStopped(()),
        };
        (self.into_inner(), refusal)
    }

    /// The same error, carrying `g(f)` instead of `f`.
    pub(crate) fn map<G>(self, g: impl FnOnce(F) -> G) -> PostError<G> {
        match self {
            Self::Stopped(f) => PostError::Stopped(g(f)),
            Self::NoSuchCore { core, cores, closure } => {
                PostError::NoSuchCore { core, cores, closure: g(closure) }
            }
            Self::NotAMember { core, closure } => PostError::NotAMember { core, closure: g(closure) },
            Self::OutOfMemory(f) => PostError::OutOfMemory(g(f)),
            Self::NotInPool(f) => PostError::NotInPool(g(f)),
            Self::OtherDomain(f) => PostError::OtherDomain(g(f)),
        }
    }
}

impl<F> fmt::Debug for PostError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stopped(_) => f.write_str("Stopped(..)"),
            Self::NoSuchCore { core, cores, .. } => {
                f.debug_struct("NoSuchCore").field("core", core).field("cores", cores).finish_non_exhaustive()
            }
            Self::NotAMember { core, .. } => {
                f.debug_struct("NotAMember").field("core", core).finish_non_exhaustive()
            }
            Self::OutOfMemory(_) => f.write_str("OutOfMemory(..)"),
            Self::NotInPool(_) => f.write_str("NotInPool(..)"),
            Self::OtherDomain(_) => f.write_str("OtherDomain(..)"),
        }
    }
}

error_messages! {
    impl<F> PostError<F> {
        Self::Stopped(_) => "the pool has stopped; the closure was not queued";
        Self::NoSuchCore { core, cores, .. } => "no core {core}: core indices run 0..{cores}";
        Self::NotAMember { core, .. } => "core {core} is not one of this pool's cores now";
        Self::OutOfMemory(_) => "no memory left for the task";
        Self::NotInPool(_) => "not called on a core of a running pool; use a Pool handle";
        Self::OtherDomain(_) => "the pool belongs to another domain";
    }
}

/// Why a pool could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolError {
    /// A pool needs at least one core.
    NoCores,
    /// More cores were asked for than the machine (or roving) has.
    TooManyCores {
        /// The count asked for.
        requested: usize,
        /// The most this pool can have here.
        available: usize,
    },
    /// A core index the machine (or roving) does not have.
    NoSuchCore {
        /// The index given.
        core: usize,
        /// Core indices run `0..available`.
        available: usize,
    },
    /// A core listed twice for [`Pool::with_cores`](super::Pool::with_cores).
    DuplicateCore {
        /// The core listed more than once.
        core: usize,
    },
    /// [`Pool::with_cores`](super::Pool::with_cores) was given a list of
    /// cores and a [`Config`](super::Config) whose core count says otherwise.
    CoreCountMismatch {
        /// The count the config asks for.
        config: usize,
        /// How many cores the list names.
        listed: usize,
    },
    /// [`Config::search_rounds`](super::Config::search_rounds) above
    /// [`Config::MAX_SEARCH_ROUNDS`](super::Config::MAX_SEARCH_ROUNDS).
    TooManySearchRounds {
        /// The rounds asked for.
        rounds: u32,
    },
    /// [`Config::deep_idle_after`](super::Config::deep_idle_after) above
    /// [`Config::MAX_DEEP_IDLE_AFTER`](super::Config::MAX_DEEP_IDLE_AFTER).
    DeepIdleTooLate {
        /// The delay asked for.
        after: core::time::Duration,
    },
    /// [`Config::time_slice`](super::Config::time_slice) outside
    /// [`Config::MIN_TIME_SLICE`](super::Config::MIN_TIME_SLICE)..=[`Config::MAX_TIME_SLICE`](super::Config::MAX_TIME_SLICE).
    TimeSliceOutOfRange {
        /// The slice asked for.
        slice: core::time::Duration,
    },
    /// [`Config::report_quiet_after`](super::Config::report_quiet_after)
    /// outside [`Config::MIN_QUIET_REPORT`](super::Config::MIN_QUIET_REPORT)..=[`Config::MAX_QUIET_REPORT`](super::Config::MAX_QUIET_REPORT).
    QuietReportOutOfRange {
        /// The period asked for.
        period: core::time::Duration,
    },
    /// [`Config::silent_core_after`](super::Config::silent_core_after)
    /// outside [`Config::MIN_SILENT_CORE_AFTER`](super::Config::MIN_SILENT_CORE_AFTER)..=[`Config::MAX_SILENT_CORE_AFTER`](super::Config::MAX_SILENT_CORE_AFTER).
    SilentCoreBoundOutOfRange {
        /// The bound asked for.
        bound: core::time::Duration,
    },
    /// [`Config::report_quiet_after`](super::Config::report_quiet_after)
    /// on a pool that stops when quiescent: such a pool reports a deadlock
    /// as soon as it is quiet ([`OnDeadlock`](super::OnDeadlock)).
    QuietReportWhenStopping,
    /// A [`Config::time_slice`](super::Config::time_slice) was asked for,
    /// but this platform's timer cannot preempt strands
    /// ([`Platform::can_preempt`](crate::platform::Platform::can_preempt)).
    CannotPreempt,
    /// Host only: the calling thread is not a core of a
    /// [`Machine`](crate::platform::host::Machine). Build pools inside
    /// `Machine::run` (or a core it started, or `Machine::enter`).
    NotOnAMachine,
}

error_messages! {
    impl PoolError {
        Self::NoCores => "a pool needs at least one core";
        Self::TooManyCores { requested, available } =>
            "{requested} cores asked for; at most {available} are available";
        Self::NoSuchCore { core, available } => "no core {core}: core indices run 0..{available}";
        Self::DuplicateCore { core } => "core {core} is listed more than once";
        Self::CoreCountMismatch { config, listed } =>
            "the config asks for {config} cores but the list names {listed}";
        Self::TooManySearchRounds { rounds } =>
            "{rounds} search rounds asked for; at most {} (a core that never gets sleepy never sleeps)", super::Config::MAX_SEARCH_ROUNDS;
        Self::DeepIdleTooLate { after } =>
            "deep idle after {after:?} asked for; at most {:?}", super::Config::MAX_DEEP_IDLE_AFTER;
        Self::TimeSliceOutOfRange { slice } =>
            "a time slice of {slice:?} asked for; it must be between {:?} and {:?}", super::Config::MIN_TIME_SLICE, super::Config::MAX_TIME_SLICE;
        Self::QuietReportOutOfRange { period } =>
            "a quiet report after {period:?} asked for; it must be between {:?} and {:?}", super::Config::MIN_QUIET_REPORT, super::Config::MAX_QUIET_REPORT;
        Self::SilentCoreBoundOutOfRange { bound } =>
            "a silent core given up after {bound:?} asked for; it must be between {:?} and {:?}", super::Config::MIN_SILENT_CORE_AFTER, super::Config::MAX_SILENT_CORE_AFTER;
        Self::QuietReportWhenStopping =>
            "a quiet report asked for on a pool that stops when quiescent, which reports a deadlock as soon as it is quiet; build it with stop_when_quiescent(false)";
        Self::NotOnAMachine =>
            "a pool built on a thread outside any host Machine; build it inside Machine::run";
        Self::CannotPreempt => "a time slice asked for, but this platform's timer cannot preempt strands";
    }
}

/// Why [`Pool::run`](super::Pool::run) did not return `main`'s value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// The pool is running, or has run: a pool runs once.
    AlreadyRan,
    /// `run` must be called on one of the pool's cores.
    NotAPoolCore {
        /// The calling core, if it is a core at all.
        core: Option<usize>,
        /// The pool's size.
        cores: usize,
    },
    /// A core of the pool could not be started; the pool was stopped
    /// without running `main`.
    StartCore(StartCoreError),
    /// Another pool holds one of this pool's cores; nothing was run.
    CoreTaken {
        /// The first such core.
        core: usize,
    },
    /// No fibre was free for `main`'s strand: other pools hold them all.
    NoFibre,
    /// The pool was shut down while `main` was blocked, so it never
    /// returned (its strand is abandoned, not unwound).
    MainDidNotFinish,
    /// A failure nobody handled reached the pool: `main` (the root strand)
    /// failed, or passed up a child's failure, or a strand spawned from
    /// outside strands failed with its handle dropped. The pool was
    /// stopped.
    Failed(Failure),
}

error_messages! {
    impl RunError {
        Self::AlreadyRan => "this pool is running or has run; build a new one";
        Self::NotAPoolCore { core: Some(core), cores } =>
            "run was called on core {core}, which is not one of this pool's {cores} cores";
        Self::NotAPoolCore { core: None, .. } => "run was called on a thread that is not a core";
        Self::StartCore(error) => "starting the pool's cores: {error}";
        Self::CoreTaken { core } => "core {core} belongs to another pool";
        Self::NoFibre =>
            "no free fibre for main's strand: all are held or quarantined (build with more ROVING_FIBRES)";
        Self::MainDidNotFinish => "the pool was shut down while main was blocked";
        Self::Failed(failure) => "the pool stopped on a failure: {failure}";
    }
}

/// Why a pool's cores could not be changed ([`Pool::add_core`],
/// [`Pool::remove_core`], [`Pool::resize`]). Nothing was changed.
///
/// [`Pool::add_core`]: super::Pool::add_core
/// [`Pool::remove_core`]: super::Pool::remove_core
/// [`Pool::resize`]: super::Pool::resize
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResizeError {
    /// The pool is not running: resize it after `run` or `start`, before it
    /// stops. (Before it runs, choose its cores with [`Config`](super::Config).)
    NotRunning,
    /// There is no core with this index on the machine.
    NoSuchCore {
        /// The index given.
        core: usize,
        /// Core indices run `0..cores`.
        cores: usize,
    },
    /// The core is not free: another pool holds it, or it is still leaving
    /// one.
    CoreNotFree {
        /// The index given.
        core: usize,
    },
    /// The core is already one of this pool's.
    AlreadyMember {
        /// The index given.
        core: usize,
    },
    /// The core is not one of this pool's.
    NotAMember {
        /// The index given.
        core: usize,
    },
    /// The core runs the pool's `main` (its root strand is pinned there).
    RunsMain {
        /// The index given.
        core: usize,
    },
    /// The core stopped answering and was taken out of the pool while the
    /// call waited for it to leave ([`Pool::silent_cores`](super::Pool::silent_cores)).
    TakenOut {
        /// The index given.
        core: usize,
    },
    /// A pool keeps at least one core; destroy it instead.
    LastCore,
    /// The call was made by a task (not a strand) on the core it removes,
    /// which could then never leave.
    OnThatCore {
        /// The index given.
        core: usize,
    },
    /// Fewer cores are free than the new size needs.
    NotEnoughFreeCores {
        /// Cores the pool would need to gain.
        wanted: usize,
        /// Free cores there are.
        free: usize,
    },
    /// Another resize of this pool is under way.
    Busy,
    /// The core could not be started.
    StartCore(StartCoreError),
}

error_messages! {
    impl ResizeError {
        Self::NotRunning => "the pool is not running";
        Self::NoSuchCore { core, cores } => "no core {core}: core indices run 0..{cores}";
        Self::CoreNotFree { core } => "core {core} is not free: another pool holds it";
        Self::AlreadyMember { core } => "core {core} is already in this pool";
        Self::NotAMember { core } => "core {core} is not in this pool";
        Self::RunsMain { core } => "core {core} runs the pool's main and cannot leave";
        Self::TakenOut { core } => "core {core} stopped answering and was taken out of the pool";
        Self::LastCore => "a pool keeps at least one core";
        Self::OnThatCore { core } =>
            "a task on core {core} cannot remove it; call from a strand or another core";
        Self::NotEnoughFreeCores { wanted, free } => "{wanted} more cores needed, {free} free";
        Self::Busy => "another resize of this pool is under way";
        Self::StartCore(error) => "starting the core: {error}";
    }
}

/// Why [`Pool::destroy`](super::Pool::destroy) did not destroy the pool.
/// Nothing was changed.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DestroyError {
    /// The pool is not running: never started, or already stopped.
    NotRunning,
    /// The pool's [`run`](super::Pool::run) lends it a core for `main`: it
    /// ends when `main` returns, and is the last pool of its caller.
    RunsMain,
    /// Called from one of the pool's own cores, which would have to leave
    /// the pool while running the call.
    FromInside,
}

error_messages! {
    impl DestroyError {
        Self::NotRunning => "the pool is not running";
        Self::RunsMain => "the pool runs main; it ends when main returns";
        Self::FromInside => "a pool cannot be destroyed from one of its own cores";
    }
}

/// Why something could not be pinned to a core of a pool: an actor
/// ([`Pool::spawn_actor_on`](crate::Pool::spawn_actor_on)) or an event
/// loop ([`Loop::on_core`](crate::event_loop::Loop::on_core)). Each
/// variant carries it back: [`PinError::into_inner`].
#[non_exhaustive]
pub enum PinError<T> {
    /// The machine (or roving) has no core `core`; it has `cores`.
    NoSuchCore {
        /// The core asked for.
        core: usize,
        /// How many cores there are.
        cores: usize,
        /// What was to be pinned.
        value: T,
    },
    /// Core `core` is not one of the pool's now.
    NotAMember {
        /// The core asked for.
        core: usize,
        /// What was to be pinned.
        value: T,
    },
}

impl<T> PinError<T> {
    /// What was to be pinned.
    pub fn into_inner(self) -> T {
        match self {
            Self::NoSuchCore { value, .. } | Self::NotAMember { value, .. } => value,
        }
    }

    /// The same error, carrying `value` instead.
    pub(crate) fn carrying<U>(self, value: U) -> PinError<U> {
        match self {
            Self::NoSuchCore { core, cores, .. } => PinError::NoSuchCore { core, cores, value },
            Self::NotAMember { core, .. } => PinError::NotAMember { core, value },
        }
    }
}

impl<T> fmt::Debug for PinError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchCore { core, cores, .. } => {
                f.debug_struct("NoSuchCore").field("core", core).field("cores", cores).finish_non_exhaustive()
            }
            Self::NotAMember { core, .. } => {
                f.debug_struct("NotAMember").field("core", core).finish_non_exhaustive()
            }
        }
    }
}

error_messages! {
    impl<T> PinError<T> {
        Self::NoSuchCore { core, cores, .. } => "no core {core}: there are {cores}";
        Self::NotAMember { core, .. } => "core {core} is not in the pool";
    }
}

/// Why a message to an [actor](crate::actor) or an operation onto an
/// [event loop](crate::event_loop) was not queued. Each variant carries it
/// back: [`DeliveryError::into_inner`].
#[non_exhaustive]
pub enum DeliveryError<M> {
    /// The receiver is stopped: an actor that was stopped (or stopped
    /// itself), or an event loop whose operation panicked or whose pool
    /// stopped with its drain pending.
    Stopped(M),
    /// The receiver's pool has stopped, so nothing of it can run. The
    /// receiver is stopped with it.
    PoolStopped(M),
    /// Sent from a strand or core of another domain.
    OtherDomain(M),
    /// Memory for it (or for the task it would have started, which stops
    /// the receiver) could not be had.
    OutOfMemory(M),
}

impl<M> DeliveryError<M> {
    /// What was not queued.
    pub fn into_inner(self) -> M {
        match self {
            Self::Stopped(m) | Self::PoolStopped(m) | Self::OtherDomain(m) | Self::OutOfMemory(m) => m,
        }
    }

    /// The same error about something else.
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> DeliveryError<N> {
        match self {
            Self::Stopped(m) => DeliveryError::Stopped(f(m)),
            Self::PoolStopped(m) => DeliveryError::PoolStopped(f(m)),
            Self::OtherDomain(m) => DeliveryError::OtherDomain(f(m)),
            Self::OutOfMemory(m) => DeliveryError::OutOfMemory(f(m)),
        }
    }
}

impl<M> fmt::Debug for DeliveryError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stopped(_) => "Stopped(..)",
            Self::PoolStopped(_) => "PoolStopped(..)",
            Self::OtherDomain(_) => "OtherDomain(..)",
            Self::OutOfMemory(_) => "OutOfMemory(..)",
        })
    }
}

error_messages! {
    impl<M> DeliveryError<M> {
        Self::Stopped(_) => "the receiver is stopped; what was sent comes back";
        Self::PoolStopped(_) => "the receiver's pool has stopped; what was sent comes back";
        Self::OtherDomain(_) => "the receiver belongs to another domain; send owned data through a channel";
        Self::OutOfMemory(_) => "out of memory; what was sent comes back";
    }
}
