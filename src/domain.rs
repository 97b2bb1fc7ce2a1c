//! Domains: parts of one program that fail separately, like processes
//! that share one address space.
//!
//! A domain has its own root strand, its own pools and its own strand
//! tree. Everything that is not started in a domain belongs to the *main*
//! domain: the pools built at boot and the strands they run. [`Domain::start`]
//! makes a new one on free cores, with `main` as its root.
//!
//! # Isolation
//!
//! - A strand handle or a pool of one domain cannot be used from another:
//!   joining or cancelling the strand, or spawning strands or tasks into
//!   the pool or posting to it, is a typed error (`OtherDomain`). A handle sent to another domain is only
//!   inert data there.
//! - Domains talk through a channel that moves owned data
//!   ([`sync::channel::bounded`](crate::sync::channel::bounded), whose items are `Send` and,
//!   to cross domains, `'static`): make it before starting the domain and
//!   move one end into its `main`.
//! - When a domain's root fails (or a failure nobody handles reaches it),
//!   the domain is torn down: every strand in it is cancelled and waited
//!   for, then its pools stop and their cores go back to the free set. The
//!   other domains keep running. [`Domain::join`] returns the failure.
//! - When the root returns, the domain ends once nothing is left running
//!   in it, and [`Domain::join`] returns the root's value.
//!
//! What a domain does not isolate: memory. It is one address space, so a
//! domain that corrupts memory (with `unsafe`) can harm the others; and a
//! core fault outside strands stops the machine.

pub use crate::pool::domain_id::DomainId;
use crate::pool::{Config, Pool, PoolError, RunError};
use crate::strand::{Failure, JoinHandle, SpawnError};
use core::fmt;

/// A running domain, and the right to its outcome.
///
/// ```
/// use roving::domain::{Domain, DomainError};
/// use roving::platform::host::Machine;
///
/// Machine::new(3).unwrap().run(|| {
///     let fails = Domain::start(&[1], || -> u32 { panic!("this part fails") }).unwrap();
///     let works = Domain::start(&[2], || (1..=10u32).product::<u32>()).unwrap();
///     match fails.join() {
///         Err(DomainError::Failed(failure)) => assert_eq!(failure.message(), "this part fails"),
///         other => panic!("{other:?}"),
///     }
///     // The other domain ran on regardless.
///     assert_eq!(works.join().unwrap(), 3_628_800);
/// }).unwrap();
/// ```
#[must_use = "a domain's failure is only seen through its handle"]
pub struct Domain<T> {
    id: DomainId,
    pool: Pool,
    root: Option<JoinHandle<T>>,
}

impl<T: Send + 'static> Domain<T> {
    /// Starts a domain on `cores`, which must be free, with `main` as its
    /// root strand.
    ///
    /// # Errors
    ///
    /// [`DomainError::Pool`] for a bad core list, [`DomainError::Start`] if
    /// a core is not free or would not start, and [`DomainError::Spawn`]
    /// (with `main`) if its root strand could not be made. Nothing is left
    /// running.
    pub fn start<F>(cores: &[usize], main: F) -> Result<Self, DomainError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
    {
        Self::start_with_config(cores, Config::new(), main)
    }

    /// As [`Domain::start`], with the pool built from `config`. With a
    /// [time slice](Config::time_slice), a teardown stops even strands
    /// that never block or check, in bounded time (`docs/preemption.md`);
    /// without one it waits for them. The domain's own settings win over
    /// `config`'s: it never stops when quiescent, only when nothing is
    /// left running in it.
    ///
    /// # Errors
    ///
    /// As [`Domain::start`]; a `config` the pool refuses (a slice out of
    /// range, or one on a platform that cannot preempt) is
    /// [`DomainError::Pool`].
    pub fn start_with_config<F>(cores: &[usize], config: Config, main: F) -> Result<Self, DomainError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
    {
        let id = DomainId::fresh();
        let pool = Pool::in_domain(cores, config, id).map_err(DomainError::Pool)?;
        // The root is counted before the cores start, so the pool cannot
        // look finished before it runs.
        let root = pool.spawn_root(main).map_err(DomainError::Spawn)?;
        pool.start_domain().map_err(DomainError::Start)?;
        Ok(Self { id, pool, root: Some(root) })
    }

    /// The domain's id.
    pub fn id(&self) -> DomainId {
        self.id
    }

    /// The cores the domain's pool holds now (none once it has ended).
    pub fn cores(&self) -> alloc::vec::Vec<usize> {
        if self.is_finished() { alloc::vec::Vec::new() } else { self.pool.cores() }
    }

    /// Whether the domain has ended: its pool stopped and its cores are
    /// free again.
    pub fn is_finished(&self) -> bool {
        self.pool.has_ended()
    }

    /// Waits for the domain to end and returns its root's value, or the
    /// failure that tore it down. A strand that calls this blocks; other
    /// callers wait on their core.
    ///
    /// # Errors
    ///
    /// [`DomainError::Failed`] with the root's failure (others that also
    /// reached the root are counted in it).
    pub fn join(mut self) -> Result<T, DomainError<()>> {
        self.pool.wait_until_ended();
        let root = self.root.take().expect("joined once");
        let root_outcome = root.outcome().expect("a domain ends only after its root").map_err(Some);
        match (root_outcome, self.pool.take_failure()) {
            (Ok(value), None) => Ok(value),
            (Ok(_), Some(failure)) | (Err(None), Some(failure)) => Err(DomainError::Failed(failure)),
            (Err(Some(mut first)), other) => {
                if let Some(other) = other {
                    first.absorb(&other);
                }
                Err(DomainError::Failed(first))
            }
            (Err(None), None) => unreachable!("a root's failure is `Some`"),
        }
    }
}

impl<T> fmt::Debug for Domain<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Why a domain could not start, or how it ended.
#[non_exhaustive]
pub enum DomainError<F> {
    /// The core list was bad.
    Pool(PoolError),
    /// A core was not free, or would not start.
    Start(RunError),
    /// The root strand could not be made; `main` comes back inside.
    Spawn(SpawnError<F>),
    /// The domain was torn down by this failure.
    Failed(Failure),
}

impl<F> fmt::Debug for DomainError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pool(error) => f.debug_tuple("Pool").field(error).finish(),
            Self::Start(error) => f.debug_tuple("Start").field(error).finish(),
            Self::Spawn(error) => f.debug_tuple("Spawn").field(error).finish(),
            Self::Failed(failure) => f.debug_tuple("Failed").field(failure).finish(),
        }
    }
}

error_messages! {
    impl<F> DomainError<F> {
        Self::Pool(error) => "the domain's cores: {error}";
        Self::Start(error) => "starting the domain: {error}";
        Self::Spawn(error) => "the domain's root strand: {error}";
        Self::Failed(failure) => "the domain was torn down: {failure}";
    }
}
