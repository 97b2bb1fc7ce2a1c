//! Helpers shared by the host integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::thread;
use std::time::Duration;

/// Fails the test (by aborting, with a message) if `f` does not finish in
/// time: a lost wake-up shows up as a core parked forever.
pub fn with_watchdog<R>(limit: Duration, what: &'static str, f: impl FnOnce() -> R) -> R {
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    thread::spawn(move || {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if flag.load(SeqCst) {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        eprintln!("watchdog: {what} did not finish within {limit:?} (lost wake-up?)");
        std::process::abort();
    });
    let result = f();
    done.store(true, SeqCst);
    result
}

/// Fibres are one static set per process, so a test that fills them would
/// leave another test's root strand without one (`NoFibre`): the pool
/// tests of one binary take turns.
#[cfg(feature = "std")]
static FIBRES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` alone among this binary's pool tests (see [`FIBRES`]).
#[cfg(feature = "std")]
pub fn with_turn<R>(f: impl FnOnce() -> R) -> R {
    let _turn = FIBRES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    f()
}

/// Runs `main` as the root strand of a pool of every core of a host
/// machine of `cores`, under a watchdog, alone among this binary's pool
/// tests; `main` gets the pool.
#[cfg(feature = "std")]
pub fn run_pool<R: Send>(
    cores: usize,
    main: impl FnOnce(&roving::Pool) -> R + Send,
) -> Result<R, roving::RunError> {
    run_pool_with(cores, roving::Config::new(), main)
}

/// [`run_pool`] for a pool made with `config`.
#[cfg(feature = "std")]
pub fn run_pool_with<R: Send>(
    cores: usize,
    config: roving::Config,
    main: impl FnOnce(&roving::Pool) -> R + Send,
) -> Result<R, roving::RunError> {
    let _turn = FIBRES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    with_watchdog(Duration::from_secs(120), "a pool test", || {
        roving::platform::host::Machine::new(cores)
            .unwrap()
            .run(|| {
                let pool = roving::Pool::with_config(config).unwrap();
                pool.run(|| main(&pool))
            })
            .unwrap()
    })
}

/// [`run_pool`] for a `main` that does not need the pool, whose run must
/// succeed.
#[cfg(feature = "std")]
pub fn on_pool<R: Send>(cores: usize, main: impl FnOnce() -> R + Send) -> R {
    run_pool(cores, |_| main()).unwrap()
}

/// Work for a thread outside the pool.
pub type Outside = Box<dyn FnOnce() + Send>;

/// A thread outside the pool, from [`with_outside`].
pub struct OutsideHandle {
    done: Arc<roving::sync::Event>,
    thread: thread::JoinHandle<()>,
}

impl OutsideHandle {
    /// Waits for the thread's work to end, blocking the calling strand
    /// (never its core: a core blocked in the OS would hold up the tasks
    /// queued on it), then joins the thread, passing on its panic.
    pub fn join(self) {
        self.done.wait().expect("waiting for a thread outside the pool");
        if let Err(panic) = self.thread.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

/// Sets its event when dropped, even by a panic.
struct SetOnDrop(Arc<roving::sync::Event>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Runs `main` as the root strand of a pool of `cores` cores, under a
/// watchdog, alone among this binary's pool tests. `main` gets `outside`:
/// `outside(f)` runs `f` on a new thread outside the pool that stands in
/// for an interrupt handler (`Machine::enter_as_handler`): while it runs,
/// the pool is not reported deadlocked, as on bare metal while a line is
/// bound.
#[cfg(feature = "std")]
pub fn with_outside<R: Send>(
    cores: usize,
    main: impl FnOnce(&dyn Fn(Outside) -> OutsideHandle) -> R + Send,
) -> R {
    with_turn(|| {
        with_watchdog(Duration::from_secs(60), "a test with a thread outside the pool", || {
            let machine = roving::platform::host::Machine::new(cores).unwrap();
            let for_threads = machine.clone();
            machine
                .run(move || {
                    let outside = move |f: Outside| {
                        let machine = for_threads.clone();
                        let done = Arc::new(roving::sync::Event::new());
                        let set = SetOnDrop(done.clone());
                        // Until the thread has entered, an idle pool could
                        // look deadlocked: wait for that (briefly, in the
                        // OS: entering depends on no work of the pool).
                        let entered = Arc::new(std::sync::Barrier::new(2));
                        let thread_entered = entered.clone();
                        let thread = thread::spawn(move || {
                            let _handler = machine.enter_as_handler();
                            thread_entered.wait();
                            let _set = set;
                            f();
                        });
                        entered.wait();
                        OutsideHandle { done, thread }
                    };
                    roving::Pool::new().unwrap().run(|| main(&outside)).unwrap()
                })
                .unwrap()
        })
    })
}

/// Busy threads that keep every CPU of the host oversubscribed until dropped.
pub struct Hogs {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Hogs {
    /// Starts `ROVING_STRESS_HOGS` hogs, twice the host's CPUs by default.
    pub fn start() -> Self {
        let cpus = thread::available_parallelism().map_or(2, |n| n.get()) as u64;
        let count = std::env::var("ROVING_STRESS_HOGS").ok().and_then(|n| n.parse().ok()).unwrap_or(2 * cpus);
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = stop.clone();
                thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(SeqCst) {
                        for _ in 0..10_000 {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        }
                        std::hint::black_box(x);
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        for hog in self.threads.drain(..) {
            let _ = hog.join();
        }
    }
}

/// How many steps of `work` (one call doing `steps` steps) take about
/// `time` on this host: the fastest of a few timings, so a slice lost to
/// the OS does not inflate it.
pub fn steps_taking(time: Duration, work: fn(u32)) -> u32 {
    const PROBE: u32 = 100_000;
    let fastest = (0..5)
        .map(|_| {
            let start = std::time::Instant::now();
            work(PROBE);
            start.elapsed()
        })
        .min()
        .expect("five timings");
    let per_step = fastest.as_nanos().max(1) as f64 / f64::from(PROBE);
    ((time.as_nanos() as f64 / per_step) as u32).max(1)
}
