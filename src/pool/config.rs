//! How a pool is built.

use core::time::Duration;

/// Settings for [`Pool::with_config`](super::Pool::with_config). Start from
/// [`Config::new`] (the defaults) and change what you need:
///
/// ```
/// use core::time::Duration;
/// let config = roving::Config::new().cores(2).deep_idle_after(Duration::from_millis(5));
/// assert_eq!(config.core_count(), Some(2));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub(crate) cores: Option<usize>,
    pub(crate) search_rounds: u32,
    pub(crate) deep_idle_after: Duration,
    pub(crate) stop_when_quiescent: bool,
    pub(crate) poller: Option<fn() -> bool>,
    pub(crate) on_deadlock: super::OnDeadlock,
    pub(crate) quiet_report: Option<Duration>,
    pub(crate) silent_core_after: Option<Duration>,
    pub(crate) time_slice: Option<Duration>,
    pub(crate) offer_spawns: bool,
    pub(crate) mailboxes: Mailboxes,
    pub(crate) reuse_stopped_stacks: bool,
}

/// How a pool's cores send each other tasks ([`Config::mailboxes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mailboxes {
    /// [`Mailboxes::Direct`] on a machine of at most
    /// [`Mailboxes::MESH_ABOVE`] cores, [`Mailboxes::Mesh`] with every link
    /// above that (the default).
    Auto,
    /// A list for every ordered pair of cores: a message is one push and
    /// one take, but a pool holds two lists per pair, on a cache line
    /// each (1 MiB at 64 cores, 16 MiB at 256), and an idle core reads one
    /// per core.
    Direct,
    /// The forwarding mesh (`docs/mesh.md`): each core has lists from at
    /// most `links` others (`usize::MAX`: ⌈log₂ N⌉ of them, so a message
    /// takes at most that many hops), and the cores between forward the
    /// rest in batches. Each sender's order is kept. `links: 1` makes a
    /// ring, where most messages are forwarded; tests use it.
    Mesh {
        /// The most links a core has (at least 1).
        links: usize,
    },
}

impl Mailboxes {
    /// The machine size above which [`Mailboxes::Auto`] picks the mesh.
    /// Up to 64 cores the direct lists take at most 1 MiB per pool; the
    /// mesh costs each forward a take and a push on the hop, and a
    /// wake-up when the hop sleeps (BENCHMARKS.md, "The forwarding mesh").
    pub const MESH_ABOVE: usize = 64;

    /// What `self` means on a machine of `slots` cores: direct or a mesh
    /// with that many links at most.
    pub(crate) fn resolve(self, slots: usize) -> Option<usize> {
        match self {
            Self::Auto if slots > Self::MESH_ABOVE => Some(usize::MAX),
            Self::Auto | Self::Direct => None,
            Self::Mesh { links } => Some(links.max(1)),
        }
    }
}

impl Config {
    /// The most [`Config::search_rounds`] a pool accepts: some tens of
    /// milliseconds of searching before a core may sleep.
    pub const MAX_SEARCH_ROUNDS: u32 = 1 << 16;

    /// The shortest [`Config::time_slice`] a pool accepts.
    pub const MIN_TIME_SLICE: Duration = Duration::from_micros(100);

    /// The longest [`Config::time_slice`] a pool accepts.
    pub const MAX_TIME_SLICE: Duration = Duration::from_secs(10);

    /// The longest [`Config::deep_idle_after`] a pool accepts.
    pub const MAX_DEEP_IDLE_AFTER: Duration = Duration::from_secs(3600);

    /// The shortest [`Config::report_quiet_after`] a pool accepts.
    pub const MIN_QUIET_REPORT: Duration = Duration::from_millis(1);

    /// The longest [`Config::report_quiet_after`] a pool accepts.
    pub const MAX_QUIET_REPORT: Duration = Duration::from_secs(24 * 3600);

    /// The shortest [`Config::silent_core_after`] a pool accepts.
    pub const MIN_SILENT_CORE_AFTER: Duration = Duration::from_millis(20);

    /// The longest [`Config::silent_core_after`] a pool accepts.
    pub const MAX_SILENT_CORE_AFTER: Duration = Duration::from_secs(3600);

    /// The default [`Config::silent_core_after`]: 1 s on bare metal, long
    /// enough that a core of an emulated machine whose thread waits for a
    /// busy host's CPU is not taken for silent (a board whose longest
    /// masked section is known can ask for far less); off on the host,
    /// whose cores are threads the host may hold off for longer still.
    pub const DEFAULT_SILENT_CORE_AFTER: Option<Duration> =
        if cfg!(feature = "std") { None } else { Some(Duration::from_secs(1)) };

    /// The defaults: every core of the machine, 32 search rounds before a
    /// core gets sleepy, the deep idle tier after 1 ms asleep, stop when
    /// quiescent, fail on a deadlock, and keep spawns on the spawning core.
    pub const fn new() -> Self {
        Self {
            cores: None,
            search_rounds: 32,
            deep_idle_after: Duration::from_millis(1),
            stop_when_quiescent: true,
            poller: None,
            on_deadlock: super::OnDeadlock::Fail,
            quiet_report: None,
            silent_core_after: Self::DEFAULT_SILENT_CORE_AFTER,
            time_slice: None,
            offer_spawns: false,
            mailboxes: Mailboxes::Auto,
            reuse_stopped_stacks: false,
        }
    }

    /// How the pool's cores send each other tasks (default
    /// [`Mailboxes::Auto`]).
    pub const fn mailboxes(mut self, mailboxes: Mailboxes) -> Self {
        self.mailboxes = mailboxes;
        self
    }

    /// Use cores `0..count` of the machine (default: all of them).
    pub const fn cores(mut self, count: usize) -> Self {
        self.cores = Some(count);
        self
    }

    /// The core count set with [`Config::cores`], if any.
    pub const fn core_count(&self) -> Option<usize> {
        self.cores
    }

    /// How many fruitless rounds of searching a core makes before it gets
    /// sleepy (default 32). More rounds trade idle CPU for
    /// wake-up latency. At most [`Config::MAX_SEARCH_ROUNDS`]: building a
    /// pool with more fails.
    pub const fn search_rounds(mut self, rounds: u32) -> Self {
        self.search_rounds = rounds;
        self
    }

    /// Whether a strand or task spawned (or a strand woken) on a core is
    /// offered to idle cores at once, waking a sleeping one if no idle core
    /// is awake to take it. Off by default: it waits in the core's LIFO
    /// slot and runs there next, which suits a spawner that then waits for
    /// it (a join, a channel hand-off, a `.then`): no wake-up, and the
    /// spawner's own wake-up stays on its core. An idle core that is awake
    /// may still take it once it has sat there through one of its search
    /// rounds, and a second spawn before the first ran offers the older
    /// ones as usual. Turn this on for a spawner that goes on computing
    /// while its children should start elsewhere at once.
    pub const fn offer_spawns(mut self, offer: bool) -> Self {
        self.offer_spawns = offer;
        self
    }

    /// How long a core sleeps in the light tier (`WFE`, cheap to wake)
    /// before it moves to the deep tier (`WFI`, woken by an interrupt).
    /// Under QEMU the light tier burns a host CPU, so keep this short there.
    /// At most [`Config::MAX_DEEP_IDLE_AFTER`]: building a pool with more
    /// fails.
    pub const fn deep_idle_after(mut self, after: Duration) -> Self {
        self.deep_idle_after = after;
        self
    }

    /// Whether [`Pool::run`](super::Pool::run) returns on its own once no
    /// task is pending anywhere and every core is asleep (default `true`).
    /// With `false`, it returns only after [`Pool::shutdown`](super::Pool::shutdown),
    /// which suits pools fed from interrupt handlers.
    pub const fn stop_when_quiescent(mut self, stop: bool) -> Self {
        self.stop_when_quiescent = stop;
        self
    }

    /// What the pool does if its strands deadlock (see
    /// [`OnDeadlock`](super::OnDeadlock)); default: fail with a report.
    /// Only a pool that stops when quiescent looks for deadlocks.
    pub const fn on_deadlock(mut self, action: super::OnDeadlock) -> Self {
        self.on_deadlock = action;
        self
    }

    /// For a pool that does not stop when quiescent
    /// ([`Config::stop_when_quiescent`] `false`): once every core has slept
    /// for `period` with nothing queued and no deadline armed while
    /// strands or async tasks wait, report them, as a deadlock report with
    /// [`Deadlock::quiet_for`](super::Deadlock::quiet_for) set, kept for
    /// [`Pool::deadlock`](super::Pool::deadlock) and printed as a warning.
    /// The pool goes on waiting: code outside it may yet wake them. Each
    /// quiet spell is reported once (twice at most, if the check woke two
    /// cores); by default, never.
    ///
    /// Between [`Config::MIN_QUIET_REPORT`] and [`Config::MAX_QUIET_REPORT`];
    /// building a pool with another period, or with one on a pool that
    /// stops when quiescent (which reports deadlocks at once), fails.
    pub const fn report_quiet_after(mut self, period: Duration) -> Self {
        self.quiet_report = Some(period);
        self
    }

    /// How long a core of the pool may leave a ping unanswered (keep its
    /// interrupts masked) before the pool gives it up and takes it out,
    /// moving the work queued for it to its other cores; `None` never
    /// does. Only on a platform that can preempt
    /// ([`platform::can_preempt`](crate::platform::can_preempt)), whose
    /// timer interrupt answers the pings; elsewhere the setting is
    /// ignored. The strand it runs is lost with it, and
    /// [`Pool::silent_cores`](super::Pool::silent_cores) reports it
    /// (`docs/guarantees.md`, "A core that stops answering"). Default
    /// [`Config::DEFAULT_SILENT_CORE_AFTER`]; between
    /// [`Config::MIN_SILENT_CORE_AFTER`] and
    /// [`Config::MAX_SILENT_CORE_AFTER`], or building the pool fails.
    pub const fn silent_core_after(mut self, bound: Option<Duration>) -> Self {
        self.silent_core_after = bound;
        self
    }

    /// Preempt strands: a strand that has run for `slice` without blocking
    /// or yielding, while other work waits for its core, is made to yield
    /// by the core's timer interrupt, and resumes later where it stopped,
    /// every register intact (default: off, scheduling is cooperative).
    /// Only strands are preempted, never inside roving's own code; plain
    /// tasks, actor turns, event-loop operations and async tasks' polls
    /// are short by contract and run to their end. A cancelled strand
    /// that keeps computing, unshielded, is stopped within two slices and
    /// fails with [`FailureKind::Interrupted`](crate::strand::FailureKind::Interrupted).
    /// See `docs/preemption.md`.
    ///
    /// Between [`Config::MIN_TIME_SLICE`] and [`Config::MAX_TIME_SLICE`];
    /// building a pool with another slice, or on a platform whose timer
    /// cannot preempt, fails.
    pub const fn time_slice(mut self, slice: Duration) -> Self {
        self.time_slice = Some(slice);
        self
    }

    /// Lets the pool hand out again the fibre of a strand it stopped
    /// without unwinding (a panic on bare metal, a cancelled strand stopped
    /// while computing). By default such a fibre, if the strand had it to
    /// itself, is quarantined for good, so that values pinned on its stack
    /// keep their memory as `Pin` promises (`docs/guarantees.md`); each one
    /// is a fibre fewer for every pool ([`strand::usage`](crate::strand::usage)
    /// counts them).
    ///
    /// # Safety
    ///
    /// No strand of this pool lets code that outlives it reach a value on
    /// its stack (a pinned node of an intrusive list, say) that only the
    /// value's drop would unlink: once a stopped strand's fibre is reused,
    /// such a pointer would point into another strand's stack.
    pub const unsafe fn reuse_stopped_stacks(mut self) -> Self {
        self.reuse_stopped_stacks = true;
        self
    }

    /// The slice set with [`Config::time_slice`], if any.
    pub const fn slice(&self) -> Option<Duration> {
        self.time_slice
    }

    /// A hook an idle core calls (one core of the pool at a time) after its
    /// mailboxes and the injector came up empty, before it steals: poll a
    /// device, expire timers. It returns whether it made any work.
    pub const fn poller(mut self, poll: fn() -> bool) -> Self {
        self.poller = Some(poll);
        self
    }
}

impl Config {
    /// Whether the settings can work; the core count is checked where the
    /// machine is known.
    pub(crate) fn check(&self) -> Result<(), super::PoolError> {
        if self.search_rounds > Self::MAX_SEARCH_ROUNDS {
            return Err(super::PoolError::TooManySearchRounds { rounds: self.search_rounds });
        }
        if self.deep_idle_after > Self::MAX_DEEP_IDLE_AFTER {
            return Err(super::PoolError::DeepIdleTooLate { after: self.deep_idle_after });
        }
        if let Some(period) = self.quiet_report {
            if !(Self::MIN_QUIET_REPORT..=Self::MAX_QUIET_REPORT).contains(&period) {
                return Err(super::PoolError::QuietReportOutOfRange { period });
            }
            if self.stop_when_quiescent {
                return Err(super::PoolError::QuietReportWhenStopping);
            }
        }
        if let Some(bound) = self.silent_core_after
            && !(Self::MIN_SILENT_CORE_AFTER..=Self::MAX_SILENT_CORE_AFTER).contains(&bound)
        {
            return Err(super::PoolError::SilentCoreBoundOutOfRange { bound });
        }
        if let Some(slice) = self.time_slice {
            if !(Self::MIN_TIME_SLICE..=Self::MAX_TIME_SLICE).contains(&slice) {
                return Err(super::PoolError::TimeSliceOutOfRange { slice });
            }
            if !crate::platform::can_preempt() {
                return Err(super::PoolError::CannotPreempt);
            }
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}
