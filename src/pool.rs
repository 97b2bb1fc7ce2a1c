//! Pools: a set of cores that share work.
//!
//! A [`Pool`] starts with cores `0..n` of the machine. [`Pool::run`] starts
//! them, runs `main` on the calling core, and then makes that core a worker
//! too; it returns when the pool is quiescent (no task pending anywhere and
//! every core asleep) or after [`Pool::shutdown`].
//!
//! While it runs, a pool can be resized: [`Pool::add_core`] takes a free
//! core (one no pool holds: [`free_cores`]), and [`Pool::remove_core`] lets
//! one go at its next step between tasks, losing nothing and running
//! nothing twice (`pool/worker.rs`, "Leaving the pool"); [`Pool::resize`]
//! does either until the pool has the size asked for.
//!
//! Work enters in two shapes:
//!
//! - [`Pool::post`] / [`post`]: run a closure *on a given
//!   core*. It travels through the mailbox for that ordered pair of cores.
//! - [`Pool::spawn_task`] / [`spawn_task`]: run a closure *on any
//!   core*. From a core of the pool it stays local (and is offered to idle
//!   cores); from outside it goes to the pool's injector.
//!
//! Both work before `run` too (from the boot core, say): the tasks wait in
//! the mailboxes and the injector until the cores start.
//!
//! ```
//! use roving::{Config, Pool, platform::host::Machine};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//!
//! Machine::new(4).unwrap().run(|| {
//!     let pool = Pool::new().unwrap();
//!     let done = Arc::new(AtomicUsize::new(0));
//!     let total = pool.run(|| {
//!         for core in 0..4 {
//!             let done = done.clone();
//!             roving::post(core, move || { done.fetch_add(1, Ordering::Relaxed); }).unwrap();
//!         }
//!     });
//!     assert!(total.is_ok());
//!     assert_eq!(done.load(Ordering::Relaxed), 4);
//! }).unwrap();
//! ```

pub(crate) mod async_tasks;
mod census;
mod config;
#[cfg(not(feature = "std"))]
pub(crate) mod contain;
mod core_owners;
pub(crate) mod core_turn;
pub(crate) mod current;
pub(crate) mod deadlock;
pub(crate) mod domain_id;
pub(crate) mod end_waiters;
mod error;
pub(crate) mod failure;
pub(crate) mod failure_reserve;
mod fibres;
pub(crate) mod fork_join;
pub(crate) mod handle;
mod idle_wait;
mod lifetime;
mod lifo_watch;
mod membership;
mod own_lists;
pub(crate) mod per_core;
pub(crate) mod polling;
mod post;
pub(crate) mod preempted;
mod quiet;
pub(crate) mod registry;
mod resize;
pub(crate) mod seam;
mod shared;
mod silent;
pub(crate) mod stats;
pub(crate) mod stop;
pub(crate) mod strands;
mod take_out;
mod worker;

pub use census::StrandInfo;
pub use config::{Config, Mailboxes};
pub use deadlock::{Deadlock, OnDeadlock, Waiter};
pub use error::{DeliveryError, DestroyError, PinError, PoolError, PostError, ResizeError, RunError};
pub use handle::Pool;
pub use resize::free_cores;
pub use stats::CoreStats;
pub use take_out::SilentCore;

use crate::atomics::Ordering::SeqCst;
use crate::platform::instant::Instant;
use crate::platform::{self, Depth, StartCoreError};
use crate::pool::domain_id::DomainId;
use crate::strand::{self, JoinHandle, Placement, SpawnError};
use crate::task::closure::Closure;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;
use current::Worker;
use shared::Shared;
use stop::{READY, RUNNING};

/// How long `run` keeps retrying a core that is still finishing the entry
/// of a previous pool.
const START_PATIENCE: Duration = Duration::from_secs(1);

impl Pool {
    /// A pool of every core of the machine, with the default [`Config`].
    ///
    /// # Errors
    ///
    /// As for [`Pool::with_config`].
    pub fn new() -> Result<Self, PoolError> {
        Self::with_config(Config::new())
    }

    /// A pool as `config` says.
    ///
    /// # Errors
    ///
    /// [`PoolError::NoCores`] for a pool of zero cores;
    /// [`PoolError::TooManyCores`] for more cores than the machine has (or,
    /// on bare metal, than roving supports); [`PoolError::TooManySearchRounds`]
    /// and [`PoolError::DeepIdleTooLate`] for settings past their limits;
    /// on the host, [`PoolError::NotOnAMachine`] on a thread that is not a
    /// core of a [`Machine`](crate::platform::host::Machine).
    pub fn with_config(config: Config) -> Result<Self, PoolError> {
        config.check()?;
        let available = available_cores()?;
        let cores = config.cores.unwrap_or(available);
        if cores == 0 {
            return Err(PoolError::NoCores);
        }
        if cores > available {
            return Err(PoolError::TooManyCores { requested: cores, available });
        }
        let domain = DomainId::current();
        Ok(Self::wired(Shared::new(available, |core| core < cores, config, domain)))
    }

    /// A pool of the given cores of the machine, which must be free when it
    /// starts ([`Pool::start`], or [`Pool::run`] on one of them).
    ///
    /// # Errors
    ///
    /// [`PoolError::NoCores`] for an empty list; [`PoolError::NoSuchCore`]
    /// for an index the machine (or roving) does not have;
    /// [`PoolError::DuplicateCore`] for a core listed twice;
    /// [`PoolError::CoreCountMismatch`] if `config` sets a core count other
    /// than the list's length; and as for [`Pool::with_config`] for the
    /// other settings.
    pub fn with_cores(cores: &[usize], config: Config) -> Result<Self, PoolError> {
        Self::in_domain(cores, config, DomainId::current())
    }

    /// [`Pool::with_cores`], for `domain`.
    pub(crate) fn in_domain(cores: &[usize], config: Config, domain: DomainId) -> Result<Self, PoolError> {
        let available = available_cores()?;
        if cores.is_empty() {
            return Err(PoolError::NoCores);
        }
        if let Some(&core) = cores.iter().find(|&&core| core >= available) {
            return Err(PoolError::NoSuchCore { core, available });
        }
        if let Some((_, &core)) = cores.iter().enumerate().find(|&(i, core)| cores[..i].contains(core)) {
            return Err(PoolError::DuplicateCore { core });
        }
        if let Some(count) = config.cores
            && count != cores.len()
        {
            return Err(PoolError::CoreCountMismatch { config: count, listed: cores.len() });
        }
        config.check()?;
        Ok(Self::wired(Shared::new(available, |core| cores.contains(&core), config, domain)))
    }

    /// The handle of a pool just built, wired to the layers above the
    /// pool's own before anything can spawn into it: what to do with
    /// strands and with async tasks (`crate::strand::pool_ops::wire`,
    /// `crate::executor::wire`).
    fn wired(shared: Arc<Shared>) -> Self {
        registry::register(&shared);
        let pool = Self { shared };
        strand::pool_ops::wire(pool.pool_ref());
        crate::executor::wire(pool.pool_ref());
        pool
    }

    /// How many cores the pool has now (it starts with cores
    /// `0..core_count()`; [resizing](Pool::resize) changes which).
    pub fn core_count(&self) -> usize {
        self.shared.member_count()
    }

    /// The pool's cores now, by index.
    pub fn cores(&self) -> Vec<usize> {
        (0..self.shared.slots).filter(|&core| self.shared.is_member(core)).collect()
    }

    /// Runs `core`'s share of work: posts `f` to run on that core.
    ///
    /// From a core of this pool this costs one compare-exchange on the
    /// mailbox of that pair of cores (none if `core` is the caller).
    ///
    /// # Errors
    ///
    /// [`PostError::NoSuchCore`], [`PostError::NotAMember`],
    /// [`PostError::Stopped`], [`PostError::OutOfMemory`] or
    /// [`PostError::OtherDomain`], each carrying `f` back.
    pub fn post<F: FnOnce() + Send + 'static>(&self, core: usize, f: F) -> Result<(), PostError<F>> {
        self.shared.post(core, Closure(f)).map_err(unclosure)
    }

    /// Spawns `f` to run on whichever core of the pool gets to it first.
    ///
    /// # Errors
    ///
    /// [`PostError::Stopped`], [`PostError::OutOfMemory`] or
    /// [`PostError::OtherDomain`], carrying `f`.
    pub fn spawn_task<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), PostError<F>> {
        self.shared.spawn(Closure(f)).map_err(unclosure)
    }

    /// Stops the pool. Posting and spawning afterwards fail with
    /// [`PostError::Stopped`] (or [`SpawnError::Stopped`]), and tasks not
    /// yet started are dropped unrun (counted in
    /// [`CoreStats::discarded`]).
    ///
    /// Strands still alive are cancelled and the cores keep running them,
    /// and only them, until they have ended, so their destructors run and
    /// their fibres are free again; then every core leaves its loop. A
    /// strand that cannot end (it ignores cancellation in a loop, or waits
    /// shielded for what will not come) is abandoned once every core is
    /// idle with no deadline armed; one that never yields keeps its core.
    /// Returns whether this call stopped it.
    pub fn shutdown(&self) -> bool {
        self.shared.stop()
    }

    /// Whether the pool has stopped taking work: it was shut down, or
    /// stopped by a failure. Its cores may still be winding down its
    /// strands (see [`Pool::shutdown`]).
    pub fn is_stopped(&self) -> bool {
        self.shared.refuses_work()
    }

    /// Spawns `f` as a strand on this pool; it may block (see
    /// [`strand`]). From a core of the pool it starts on
    /// that core (and is offered to idle ones); from outside, on whichever
    /// core picks it up.
    ///
    /// ```
    /// use roving::{Pool, platform::host::Machine};
    ///
    /// Machine::new(2).unwrap().run(|| {
    ///     let pool = Pool::new().unwrap();
    ///     // From outside any strand, before `run`: it waits for a core.
    ///     let answer = pool.spawn_strand(|| 6 * 7).unwrap();
    ///     let value = pool.run(move || answer.join().unwrap()).unwrap();
    ///     assert_eq!(value, 42);
    /// })
    /// .unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// [`SpawnError`] says why, with `f`: the pool stopped, the closure
    /// and result are larger than a control block may be, no fibre could
    /// be had, or memory ran out.
    pub fn spawn_strand<F, T>(&self, f: F) -> Result<JoinHandle<T>, SpawnError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        strand::spawn_in(self.pool_ref(), f, Placement::default()).map(JoinHandle::from_raw)
    }

    /// Strands of this pool that have been spawned and have not finished
    /// (blocked or not).
    pub fn live_strands(&self) -> usize {
        self.shared.strands.live()
    }

    /// Every live strand of this pool, entries first, each before the
    /// strands it spawned: what it does or waits for, its fibre, whether
    /// its stack is resident or copied out, and its priority. The pool
    /// keeps running meanwhile, so each is a snapshot
    /// ([`StrandReport`](crate::strand::StrandReport)).
    pub fn strand_reports(&self) -> Vec<crate::strand::StrandReport> {
        strand::reports(self.pool_ref())
    }

    /// Writes [`strand_reports`](Self::strand_reports) as text: a line for
    /// the pool, then a line per strand, in the words of the deadlock
    /// report. The pool keeps running.
    ///
    /// ```
    /// use roving::{Pool, platform::host::Machine, strand, sync::Event};
    /// use std::sync::Arc;
    ///
    /// Machine::new(2).unwrap().run(|| {
    ///     let pool = Pool::new().unwrap();
    ///     pool.run(|| {
    ///         let go = Arc::new(Event::new());
    ///         let waiting = go.clone();
    ///         let child = strand::spawn(move || waiting.wait().unwrap()).unwrap();
    ///         let here = Pool::current().unwrap();
    ///         while here.strand_reports().iter().all(|strand| strand.waiting().is_none()) {
    ///             strand::yield_now().unwrap();
    ///         }
    ///         let mut text = String::new();
    ///         here.dump_strands(&mut text).unwrap();
    ///         assert!(text.contains("waits (Event)"), "{text}");
    ///         go.set();
    ///         child.join().unwrap();
    ///     }).unwrap();
    /// }).unwrap();
    /// ```
    pub fn dump_strands(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        let reports = self.strand_reports();
        writeln!(
            out,
            "pool at {:#x}, cores {:?}: {} live strands",
            Arc::as_ptr(&self.shared) as usize,
            self.cores(),
            reports.len()
        )?;
        for report in &reports {
            writeln!(out, "  {report}")?;
        }
        Ok(())
    }

    /// The last deadlock found in this pool, if any (see [`OnDeadlock`]).
    pub fn deadlock(&self) -> Option<Deadlock> {
        self.shared.deadlock.lock().clone()
    }

    /// Each core's counters, by core index.
    pub fn stats(&self) -> Vec<CoreStats> {
        let stats = self.shared.cores.iter().map(|core| &*core.stats).enumerate().map(|(core, counters)| {
            let (idle_spells, counted_idle_spells, shared_sleep_writes) = self.shared.sleep.spell_stats(core);
            CoreStats { idle_spells, counted_idle_spells, shared_sleep_writes, ..counters.snapshot() }
        });
        stats.collect()
    }

    /// Each core's trace, by core index (feature `trace`): the newest
    /// events of each core, oldest first, and how many were lost
    /// ([`trace`](crate::trace)).
    #[cfg(feature = "trace")]
    pub fn trace(&self) -> Vec<crate::trace::event::CoreTrace> {
        self.shared.trace.read()
    }

    /// Writes each core's trace as text, in the format `tools/trace` reads
    /// ([`trace::dump`](crate::trace::dump)); feature `trace`.
    #[cfg(feature = "trace")]
    pub fn write_trace(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        let mut result = Ok(());
        let ended = self.is_stopped() && self.shared.running.load(SeqCst) == 0;
        crate::trace::dump::lines(&self.trace(), platform::tick_hz(), ended, |line| {
            if result.is_ok() {
                result = writeln!(out, "{line}");
            }
        });
        result
    }

    /// Starts the pool's other cores, runs `main` here as the pool's root
    /// strand, then works as one of the pool's cores until the pool is
    /// quiescent (no task, no live strand, every core asleep) or shut
    /// down. Returns `main`'s result once every core has left the pool.
    ///
    /// `main` is a strand pinned to this core, on a fibre of its own, so it
    /// may block (join strands, wait on [`sync`](crate::sync) primitives,
    /// sleep). Call `run` on a core of the pool (core 0 for a pool of all
    /// cores).
    ///
    /// Failures come back in two ways. `main` and every strand are
    /// strands: a panic in `main`, or in a strand whose failure reaches the
    /// top of its tree (nobody joined it, or its parent passed it up),
    /// stops the pool and comes back as `Err(`[`RunError::Failed`]`)`,
    /// with the message and place. A panic in a plain task (a closure from
    /// [`post`] or [`spawn_task`]), which has no strand to fail, stops the pool
    /// and is raised again here, on the host, once every core has left.
    ///
    /// # Errors
    ///
    /// [`RunError::NotAPoolCore`], [`RunError::AlreadyRan`],
    /// [`RunError::StartCore`] if a core could not be started, or
    /// [`RunError::NoFibre`] if no fibre was free for `main` (the pool is
    /// then stopped and `main` not run); [`RunError::MainDidNotFinish`] if
    /// the pool was shut down while `main` was blocked;
    /// [`RunError::Failed`] if `main` or an unjoined strand failed.
    ///
    /// # Panics
    ///
    /// On the host, with the panic of a plain task, as above.
    pub fn run<R>(&self, main: impl FnOnce() -> R) -> Result<R, RunError> {
        let shared = &*self.shared;
        let me = match platform::current_core() {
            Some(core) if shared.is_member(core) => core,
            core => return Err(RunError::NotAPoolCore { core, cores: shared.member_count() }),
        };
        let members = self.begin_running(me)?;
        for &core in members.iter().filter(|&&core| core != me) {
            if let Err(error) = self.start_core(core) {
                shared.stop();
                self.finish(me, false);
                members.iter().for_each(|&core| core_owners::release(core, shared));
                return Err(RunError::StartCore(error));
            }
        }
        let worker = Worker { shared, core: me };
        // SAFETY: `worker` outlives the guard, dropped before `finish`.
        let entered = unsafe { current::enter(&worker) };
        let mut result = None;
        let root = {
            let result = &mut result;
            let main = PinnedHere(move || *result = Some(main()));
            let body: alloc::boxed::Box<dyn FnOnce() + Send + '_> =
                alloc::boxed::Box::new(move || main.call());
            // SAFETY: the root strand finishes before `run` returns (the
            // pool is quiescent only when no strand lives), or, if the pool
            // is shut down first, never runs again; either way nothing it
            // borrows is used after this frame. `main` need not be `Send`:
            // the root strand is pinned to this core.
            let body: alloc::boxed::Box<dyn FnOnce() + Send + 'static> =
                unsafe { core::mem::transmute(body) };
            strand::spawn_in(
                self.pool_ref(),
                body,
                Placement { pin: Some(me), root: true, ..Placement::default() },
            )
        };
        let root = match root {
            Ok(root) => root,
            Err(error) => {
                drop(entered);
                shared.stop();
                self.finish(me, false);
                core_owners::release(me, shared);
                return Err(match error {
                    SpawnError::NoFibre(_) => RunError::NoFibre,
                    _ => RunError::MainDidNotFinish,
                });
            }
        };
        worker::work_entered(shared, me);
        drop(entered);
        self.finish(me, false);
        core_owners::release(me, shared);
        #[cfg(feature = "std")]
        if let Some(payload) = shared.panic.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            core::mem::forget(root);
            std::panic::resume_unwind(payload);
        }
        if !root.is_finished() {
            // Its stack still borrows this frame: never touch it again.
            core::mem::forget(root);
            return Err(shared
                .failure
                .lock()
                .take()
                .map_or(RunError::MainDidNotFinish, |f| RunError::Failed(*f)));
        }
        let root_failure = root.into_result().err();
        match (root_failure, shared.failure.lock().take()) {
            // The deadlock came first: the root failed of its cancel.
            (Some(root), Some(mut deadlock)) if deadlock.deadlock().is_some() => {
                deadlock.absorb(&root);
                Err(RunError::Failed(*deadlock))
            }
            (Some(mut first), Some(other)) => {
                first.absorb(&other);
                Err(RunError::Failed(first))
            }
            (Some(failure), None) => Err(RunError::Failed(failure)),
            (None, Some(failure)) => Err(RunError::Failed(*failure)),
            (None, None) => result.ok_or(RunError::MainDidNotFinish),
        }
    }

    /// Moves the pool from ready to running with `runner` as the core that
    /// lends itself (none: `usize::MAX`), and claims every member in the
    /// machine's table. Returns the members.
    fn begin_running(&self, runner: usize) -> Result<Vec<usize>, RunError> {
        let shared = &*self.shared;
        if shared.state.compare_exchange(READY, RUNNING, SeqCst, SeqCst).is_err() {
            return Err(RunError::AlreadyRan);
        }
        shared.runner.store(runner, SeqCst);
        let members = self.cores();
        if let Some(index) = members.iter().position(|&core| !core_owners::claim(core, shared)) {
            members[..index].iter().for_each(|&core| core_owners::release(core, shared));
            shared.stop();
            return Err(RunError::CoreTaken { core: members[index] });
        }
        Ok(members)
    }

    /// Starts `core` (claimed for this pool, a member) on the pool's loop,
    /// retrying while it finishes an earlier entry.
    fn start_core(&self, core: usize) -> Result<(), StartCoreError> {
        let deadline = Instant::now() + START_PATIENCE;
        loop {
            let arg = Arc::into_raw(self.shared.clone()) as usize;
            self.shared.running.fetch_add(1, SeqCst);
            match platform::start_core(core, core_entry, arg) {
                Ok(()) => return Ok(()),
                Err(error) => {
                    self.shared.running.fetch_sub(1, SeqCst);
                    // SAFETY: the core did not start, so the reference we
                    // made for it is still ours.
                    drop(unsafe { Arc::from_raw(arg as *const Shared) });
                    let busy = matches!(error, StartCoreError::AlreadyRunning { .. });
                    if !busy || Instant::now() >= deadline {
                        return Err(error);
                    }
                    platform::wait_for_event(Depth::Light, Some(Instant::now() + Duration::from_micros(100)));
                }
            }
        }
    }

    /// Waits for the started cores to leave, then discards what is left.
    /// (`in_strand`: the caller is a strand, which sleeps meanwhile.)
    /// Returns how many tasks were discarded, counted in `me`'s stats.
    fn finish(&self, me: usize, in_strand: bool) -> u64 {
        let shared = &*self.shared;
        resize::wait_until(in_strand, || shared.running.load(SeqCst) == 0);
        shared.wait_for_outside_posts();
        // SAFETY: every core has left and no outside post is in flight.
        let discarded = unsafe { shared.discard_everything(me) };
        stats::add(&shared.cores[me].stats.discarded, discarded);
        if discarded > 0 {
            crate::diag::info(format_args!(
                "a pool stopped with {discarded} tasks unrun; they were discarded"
            ));
        }
        // Every core has left: the trace is complete, and the log carries
        // it off a bare-metal machine.
        #[cfg(feature = "trace")]
        crate::trace::dump::lines(&self.trace(), platform::tick_hz(), true, crate::diag::trace_line);
        discarded
    }
}

/// A closure that is only ever run on the core it was made on (the root
/// strand is pinned), so it need not be `Send`.
struct PinnedHere<F>(F);

// SAFETY: see the type's documentation: it never changes cores.
unsafe impl<F> Send for PinnedHere<F> {}

impl<F: FnOnce()> PinnedHere<F> {
    fn call(self) {
        (self.0)()
    }
}

/// The entry of every core `run` starts.
/// Core indices a pool may use here: the machine's cores, up to roving's
/// limits. On the host, only a core of a `Machine` has any.
fn available_cores() -> Result<usize, PoolError> {
    #[cfg(feature = "std")]
    if !crate::platform::host::on_a_machine() {
        return Err(PoolError::NotOnAMachine);
    }
    Ok(current::limit(platform::core_count()).min(crate::sleep::counters::MAX_CORES))
}

fn core_entry(arg: usize) {
    // SAFETY: `Pool::start` passes a reference made by `Arc::into_raw`.
    let shared = unsafe { Arc::from_raw(arg as *const Shared) };
    let me = platform::current_core().expect("a started core has an index");
    worker::work(&shared, me);
    // A core that left in a resize is free once it is off the loop; at a
    // stop, each core gives itself back.
    core_owners::release(me, &shared);
    shared.running.fetch_sub(1, SeqCst);
    shared::ring(shared.runner.load(SeqCst));
}

/// The error of a closure's post, carrying the bare closure.
fn unclosure<F>(error: PostError<Closure<F>>) -> PostError<F> {
    error.map(|Closure(f)| f)
}

/// Posts `f` to run on core `core` of the pool the calling core works for.
///
/// ```
/// use roving::{Pool, platform::{self, host::Machine}};
///
/// Machine::new(2).unwrap().run(|| {
///     let pool = Pool::new().unwrap();
///     pool.run(|| {
///         roving::post(1, || assert_eq!(platform::current_core(), Some(1))).unwrap();
///     }).unwrap();
/// }).unwrap();
/// ```
///
/// # Errors
///
/// [`PostError::NotInPool`] if the caller is not a core of a running pool;
/// otherwise as for [`Pool::post`].
pub fn post<F: FnOnce() + Send + 'static>(core: usize, f: F) -> Result<(), PostError<F>> {
    current::with(|worker| match worker {
        // SAFETY: a worker's pool outlives its time as the current worker.
        Some(worker) => unsafe { &*worker.shared }.post(core, Closure(f)),
        None => Err(PostError::NotInPool(Closure(f))),
    })
    .map_err(unclosure)
}

/// Spawns `f` on any core of the pool the calling core works for. It
/// waits in the calling core's LIFO slot and runs there next, unless an
/// idle core takes it first ([`Config::offer_spawns`] changes that).
///
/// ```
/// use roving::{Pool, platform::host::Machine};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// Machine::new(2).unwrap().run(|| {
///     let pool = Pool::new().unwrap();
///     let ran = Arc::new(AtomicUsize::new(0));
///     let counted = ran.clone();
///     pool.run(move || {
///         for _ in 0..10 {
///             let counted = counted.clone();
///             roving::spawn_task(move || _ = counted.fetch_add(1, Ordering::Relaxed)).unwrap();
///         }
///     }).unwrap();
///     // `run` returns once the pool is quiescent: every task has run.
///     assert_eq!(ran.load(Ordering::Relaxed), 10);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// [`PostError::NotInPool`] if the caller is not a core of a running pool;
/// otherwise as for [`Pool::spawn_task`].
pub fn spawn_task<F: FnOnce() + Send + 'static>(f: F) -> Result<(), PostError<F>> {
    current::with(|worker| match worker {
        // SAFETY: a worker's pool outlives its time as the current worker.
        Some(worker) => unsafe { &*worker.shared }.spawn(Closure(f)),
        None => Err(PostError::NotInPool(Closure(f))),
    })
    .map_err(unclosure)
}

/// A task's panic on the calling core's pool: recorded, then the pool
/// stops, `publish` running in between (`Shared::task_panicked`). Off a
/// pool's core `publish` runs and the panic keeps unwinding.
#[cfg(feature = "std")]
pub(crate) fn task_panicked(payload: alloc::boxed::Box<dyn core::any::Any + Send>, publish: impl FnOnce()) {
    current::with(|worker| match worker {
        // SAFETY: a worker's pool outlives its time as the current worker.
        Some(worker) => unsafe { &*worker.shared }.task_panicked(payload, publish),
        None => {
            publish();
            std::panic::resume_unwind(payload)
        }
    })
}
