//! Faults the machine must contain or report, one case per run, chosen
//! with `faults.case=NAME` on the kernel command line. Each case says what
//! the suite expects of it; `docs/guarantees.md` lists them in its fault
//! table.
//!
//! - `console`: core 1 stops for ever in the middle of a console line
//!   (built with feature `defmt`, in the middle of a frame, with interrupts
//!   masked), and then core 0 panics. The panic report must still get out,
//!   after the console's bounded wait: status 101 and the message.
//! - `oom`: a strand fills the heap, then spawns strands until a spawn
//!   fails. The failure is
//!   `SpawnError::OutOfMemory` with the closure back; every strand that
//!   was spawned finishes; once the memory is free again, spawning works.
//!   A strand that allocates (infallibly) in the full heap panics and
//!   fails alone, its failure made from the failure reserve: nothing
//!   panics twice, and no stack overflow is reported. Passes.
//! - `lost-core`: the firmware lists one core more than the machine has
//!   (the suite gives the PC a MADT with an extra local APIC, and each Pi
//!   a tree whose last core is never released). Starting it gives
//!   `StartCoreError::DidNotArrive` after the kernel's patience, and at
//!   once when asked again; the cores that came run a pool's work. Passes.
//! - `strand-fault` and `task-fault`: on each core in turn, a strand (an
//!   async task) reads an unmapped address. The fault fails it alone: its
//!   join gives `JoinError::Failed` (`TaskError::Failed`) with the fault in
//!   words and the address; strands computing on every core meanwhile
//!   finish, and the core that faulted runs the next strand (task) pinned
//!   to it. Before faults were contained, the first one ended the run with
//!   a fault report (status 102). Passes.
//! - `join-half`: a strand joins two halves, and its `b` half, taken by an
//!   idle core's loop (not a strand), panics; then one whose `b` faults;
//!   then one whose `b` joins in turn, and that inner `b` panics.
//!   Each time the half fails alone: the strand that joined fails with the
//!   half's failure (`JoinError::Failed`), and the core whose loop ran it
//!   runs the next strand pinned to it. Before, the panic stopped the
//!   machine (status 101), as nothing unwinds on bare metal. Passes.
//! - `async-mutex`: an async task panics while its future holds an
//!   `AsyncMutexGuard`, with a strand and a task waiting for the lock. The
//!   future is kept, its guard never dropped: the mutex is refused, so
//!   both waiters, and every later `lock`, `try_lock` and `lock_async`,
//!   get `Poisoned`. Then a task that awaits a lock it holds gets
//!   `WouldDeadlock`. Before, the waiters waited for ever, and so did
//!   that task. Passes.
//! - `handler`: a device's interrupt handler on core 1 panics, while a
//!   strand computes there; then one that reads an unmapped address; then
//!   one that panics in the middle of a console line (which must not keep
//!   the console from the other cores). Each
//!   time the handler fails alone: the report names its line, the line is
//!   masked (`LineStatus::failed`), and the strand it interrupted goes on;
//!   then a handler that works serves the line on that core. Before, the
//!   first panic ended the run (status 101), the fault too (102). Passes.
//! - `two-pools`: a pool on cores 0 and 1 whose root holds a mutex and
//!   joins a strand of a pool on cores 2 and 3 that wants it. Both pools
//!   get the report of a deadlock across 2 pools, with the ring, and the
//!   first one's run fails with it. Before, both waited for ever (a pool
//!   does not call itself deadlocked while another holds cores). Passes.
//! - `silent-core`: a strand on core 2 masks its interrupts and spins,
//!   after 16 tasks were posted to core 2 and with a strand pinned there
//!   blocked on an event that is set meanwhile. Within the pool's bound
//!   (100 ms here) and two scans, core 2 is reported silent, with the strand it
//!   ran, and taken out: the 16 tasks and the woken strand run on other
//!   cores, a post to core 2 is refused, and strands computing on the
//!   other cores finish. Then the spinning strand unmasks and yields: its
//!   core parks for good (it never runs the strand on), and the pool ends
//!   without it. Before, the tasks and the woken strand waited for ever.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use core::time::Duration;
use roving::platform::{self, StartCoreError};
use roving::time::Instant;
use roving_kernel::{boot_info, println};
use roving_test_kernels::{every_core_pool, pass, wait_until};

fn main() {
    let case = boot_info().bootarg("faults.case").unwrap_or("none");
    println!("faults: case {case} on {} cores", platform::core_count());
    match case {
        "console" => stuck_console(),
        "lost-core" => lost_core(),
        "oom" => out_of_memory(),
        "strand-fault" => strand_fault(),
        "task-fault" => task_fault(),
        "join-half" => join_half(),
        "async-mutex" => async_mutex(),
        "handler" => handler_fault(),
        "two-pools" => two_pools(),
        "silent-core" => silent_core(),
        other => panic!(
            "faults.case={other}: expected console, lost-core, oom, strand-fault, task-fault, join-half, async-mutex, handler, two-pools or silent-core"
        ),
    }
    pass("faults");
}

/// Set once core 1 has started the line it never finishes.
static STUCK: AtomicBool = AtomicBool::new(false);

/// A value whose formatting never ends: a writer stuck mid-line.
struct NeverEnds;

impl fmt::Display for NeverEnds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a line that never ends: ")?;
        STUCK.store(true, SeqCst);
        loop {
            core::hint::spin_loop();
        }
    }
}

fn stuck_console() {
    assert!(platform::core_count() >= 2, "the console case needs two cores");
    platform::start_core(1, |_| println!("faults: {NeverEnds}"), 0).expect("core 1 starts");
    wait_until(|| STUCK.load(SeqCst), Duration::from_secs(10), format_args!("core 1 to hold the console"));
    panic!("deliberate panic while core 1 holds the console");
}

fn lost_core() {
    let lost = platform::core_count() - 1;
    let started = Instant::now();
    match platform::start_core(lost, |_| panic!("the lost core ran"), 0) {
        Err(error @ StartCoreError::DidNotArrive { core, .. }) if core == lost => {
            println!("faults: starting core {lost}: {error} (after {:?})", started.elapsed());
        }
        other => panic!("starting core {lost}, which the firmware lists but cannot start: {other:?}"),
    }
    let again = Instant::now();
    let answer = platform::start_core(lost, |_| panic!("the lost core ran"), 0);
    assert!(matches!(answer, Err(StartCoreError::DidNotArrive { .. })), "asked again: {answer:?}");
    assert!(again.elapsed() < Duration::from_millis(100), "asked again, it waited {:?}", again.elapsed());
    let cores: Vec<usize> = (0..lost).collect();
    let pool =
        roving::Pool::with_cores(&cores, roving::Config::new()).expect("a pool of the cores that came");
    let sum = pool
        .run(|| {
            let pool = roving::Pool::current().expect("in the pool");
            let parts: Vec<_> =
                (0..lost).map(|core| pool.future_on(core, move || core + 1).expect("a send")).collect();
            parts.into_iter().map(|part| part.wait().expect("a part")).sum::<usize>()
        })
        .expect("the pool's run");
    assert_eq!(sum, lost * (lost + 1) / 2);
    println!("faults: the {lost} cores that came ran a pool's work");
}

/// Fills the heap with blocks of falling sizes until not even a small one
/// fits; returns them (freeing them frees the heap again). The largest are
/// 64 KiB, which the caller frees four of: with 1 MiB blocks first, what
/// was left after them (and so whether any 64 KiB block fitted) depended
/// on the heap's size to the byte, and a Pi's changed with the kernel.
fn fill_heap() -> Vec<Vec<u8>> {
    let mut ballast: Vec<Vec<u8>> = Vec::new();
    ballast.try_reserve_exact(1 << 16).expect("room to list the ballast");
    for size in [64 << 10, 4 << 10, 256, 32] {
        while ballast.len() < ballast.capacity() {
            let mut block = Vec::new();
            if block.try_reserve_exact(size).is_err() {
                break;
            }
            ballast.push(block);
        }
    }
    ballast
}

fn out_of_memory() {
    use roving::strand::{self, SpawnError};
    let pool = every_core_pool();
    let spawned = pool
        .run(|| {
            let mut handles = Vec::with_capacity(100_000);
            // A strand that will allocate, infallibly, once the heap is
            // full: it must fail alone.
            let full = alloc::sync::Arc::new(roving::sync::Event::new());
            let greedy = {
                let full = full.clone();
                strand::spawn(move || {
                    full.wait().expect("waiting for a full heap");
                    alloc::vec![1u8; 4096].len()
                })
                .expect("a spawn")
            };
            let mut ballast = fill_heap();
            // Room for a storm of spawns: 256 KiB free again.
            for _ in 0..4 {
                let block =
                    ballast.iter().position(|block| block.capacity() == 64 << 10).expect("64 KiB blocks");
                drop(ballast.swap_remove(block));
            }
            let held: usize = ballast.iter().map(Vec::capacity).sum();
            let refused = loop {
                let spawn = strand::spawn(|| {
                    core::hint::black_box([7u8; 48]).iter().map(|&b| usize::from(b)).sum::<usize>()
                });
                match spawn {
                    Ok(handle) if handles.len() < handles.capacity() => handles.push(handle),
                    Ok(_) => panic!("{} strands spawned in a full heap", handles.len()),
                    Err(error) => break error,
                }
            };
            let out_of_memory = matches!(refused, SpawnError::OutOfMemory(_));
            full.set();
            // Joining allocates nothing (a sleep would: its timer entry).
            let greedy = greedy.join();
            drop(ballast);
            match greedy {
                Err(strand::JoinError::Failed(failure)) => {
                    assert!(
                        failure.message().contains("memory allocation of 4096 bytes failed"),
                        "{failure}"
                    );
                    println!("faults: a strand that allocated in the full heap failed alone: {failure}");
                }
                other => panic!("a strand that allocated in the full heap: {other:?}"),
            }
            let what = alloc::format!("{refused}");
            assert!(out_of_memory, "the spawn failed with {what}");
            let closure = refused.into_inner();
            println!(
                "faults: {} strands spawned into a heap filled with {} KiB, then: {what}",
                handles.len(),
                held >> 10
            );
            let count = handles.len();
            for handle in handles {
                assert_eq!(handle.join().expect("a spawned strand finishes"), 7 * 48);
            }
            let again = strand::spawn(closure).expect("a spawn once memory is free").join().expect("it runs");
            assert_eq!(again, 7 * 48);
            count
        })
        .expect("the pool's run");
    println!("faults: the {spawned} strands finished, and the refused closure ran once memory was free");
}

/// Inside the 512 GiB the page tables cover, but mapped by nothing.
const UNMAPPED: usize = 0x10_0000_0000;

fn read_unmapped() -> u64 {
    // SAFETY: none: this reads unmapped memory on purpose, and the fault
    // must fail only the strand or task that reads.
    unsafe { core::ptr::read_volatile(UNMAPPED as *const u64) }
}

/// Checks a failure made from the fault of [`read_unmapped`].
fn check_fault(what: &str, core: usize, failure: &roving::strand::Failure) {
    let message = failure.message();
    assert_eq!(failure.kind(), roving::strand::FailureKind::Faulted, "{what} on core {core}: {failure}");
    assert!(failure.location().is_none(), "{what} on core {core}: a fault has no source location: {failure}");
    assert!(
        message.contains("(address not mapped)")
            && message.contains(&alloc::format!("address {UNMAPPED:#x}")),
        "{what} on core {core} failed, but not with the fault: {failure}"
    );
}

/// Strands computing on every core while others fault; returns their
/// handles.
fn busy_strands() -> Vec<roving::strand::JoinHandle<u64>> {
    (0..platform::core_count() as u64 * 4)
        .map(|seed| {
            roving::strand::spawn(move || {
                (0..200_000u64).fold(seed, |sum, x| core::hint::black_box(sum.wrapping_mul(31) ^ x))
            })
            .expect("a busy strand")
        })
        .collect()
}

/// On each core in turn: `fault` makes something (`what`) that reads an
/// unmapped address there and gives its failure (or, as `Err`, what else
/// came of it); `next` runs the same kind of work there after it and
/// gives its answer, which must be three times the core.
fn fault_on_each_core(
    what: &str,
    fault: impl Fn(&roving::Pool, usize) -> Result<roving::strand::Failure, alloc::string::String>,
    next: impl Fn(&roving::Pool, usize) -> usize,
) {
    let pool = every_core_pool();
    pool.run(|| {
        let pool = roving::Pool::current().expect("in the pool");
        let busy = busy_strands();
        for core in 0..platform::core_count() {
            match fault(&pool, core) {
                Ok(failure) => {
                    check_fault(what, core, &failure);
                    if core == 0 {
                        println!("faults: {what} that read an unmapped address failed alone: {failure}");
                    }
                }
                Err(other) => panic!("{what} that read an unmapped address on core {core}: {other}"),
            }
            assert_eq!(next(&pool, core), core * 3, "{what} on core {core} after the fault");
        }
        for strand in busy {
            strand.join().expect("a busy strand finishes");
        }
    })
    .expect("the pool's run");
    println!(
        "faults: on each of {} cores {what} faulted and failed alone; the core ran the next one, and the busy strands finished",
        platform::core_count()
    );
}

fn strand_fault() {
    use roving::strand::JoinError;
    fault_on_each_core(
        "a strand",
        |pool, core| match pool.spawn_strand_on(core, read_unmapped).expect("a strand to fault").join() {
            Err(JoinError::Failed(failure)) => Ok(failure),
            other => Err(alloc::format!("{other:?}")),
        },
        |pool, core| pool.spawn_strand_on(core, move || core * 3).expect("a strand").join().expect("it runs"),
    );
}

fn task_fault() {
    use roving::executor::TaskError;
    fault_on_each_core(
        "an async task",
        |pool, core| match pool
            .spawn_async_on(core, async { read_unmapped() })
            .expect("a task to fault")
            .join()
        {
            Err(TaskError::Failed(failure)) => Ok(failure),
            other => Err(alloc::format!("{other:?}")),
        },
        |pool, core| {
            pool.spawn_async_on(core, async move { core * 3 }).expect("a task").join().expect("it runs")
        },
    );
}

/// Where the last `b` half of [`join_half`] ran: its core, and whether a
/// strand ran it (usize::MAX: not yet).
static HALF_CORE: AtomicUsize = AtomicUsize::new(usize::MAX);
static HALF_IN_STRAND: AtomicBool = AtomicBool::new(false);

/// Joins two halves in a strand of `pool` until an idle core's loop, not
/// a strand, takes the `b` half, which then `fails` (a panic or a fault);
/// returns the joining strand's failure and the core that ran `b`.
fn fail_a_join_half(pool: &roving::Pool, fails: fn()) -> (roving::strand::Failure, usize) {
    use roving::strand::JoinError;
    for _ in 0..100 {
        HALF_CORE.store(usize::MAX, SeqCst);
        let joiner = pool
            .spawn_strand(move || {
                roving::join(
                    // Long enough for an idle core to take `b`, whose end
                    // this half then waits for (it runs `b` itself if
                    // nobody took it).
                    || wait_until_quietly(|| HALF_CORE.load(SeqCst) != usize::MAX, Duration::from_secs(1)),
                    move || {
                        HALF_IN_STRAND.store(roving::strand::current().is_some(), SeqCst);
                        HALF_CORE.store(platform::current_core().expect("a core"), SeqCst);
                        fails();
                    },
                )
            })
            .expect("a joining strand");
        let outcome = joiner.join();
        let core = HALF_CORE.load(SeqCst);
        if HALF_IN_STRAND.load(SeqCst) {
            // The `b` half ran in a strand (inline, or a helping one):
            // a strand's failure, not the case here; try again.
            continue;
        }
        match outcome {
            Err(JoinError::Failed(failure)) => return (failure, core),
            other => panic!("a join whose b half failed on core {core}'s loop: {other:?}"),
        }
    }
    panic!("in 100 joins no idle core's loop took the b half");
}

/// Waits until `done`, or `limit` has passed; says nothing either way.
fn wait_until_quietly(done: impl Fn() -> bool, limit: Duration) {
    let start = Instant::now();
    while !done() && start.elapsed() < limit {
        core::hint::spin_loop();
    }
}

fn join_half() {
    let pool = every_core_pool();
    pool.run(|| {
        let pool = roving::Pool::current().expect("in the pool");
        let (failure, core) = fail_a_join_half(&pool, || panic!("the b half panics on purpose"));
        assert!(failure.message().contains("the b half panics on purpose"), "{failure}");
        println!(
            "faults: a join's b half that panicked on core {core}'s loop failed its joiner alone: {failure}"
        );
        let next = pool.spawn_strand_on(core, move || core * 3).expect("a strand");
        assert_eq!(next.join().expect("the core runs strands after the failed half"), core * 3);
        let (failure, core) = fail_a_join_half(&pool, || {
            read_unmapped();
        });
        check_fault("a join half", core, &failure);
        println!(
            "faults: a join's b half that faulted on core {core}'s loop failed its joiner alone: {failure}"
        );
        let next = pool.spawn_strand_on(core, move || core * 3).expect("a strand");
        assert_eq!(next.join().expect("the core runs strands after the failed half"), core * 3);
        // A half on a loop that joins in turn, and whose inner b panics
        // (wherever it runs: inline, on the same loop, on another's).
        let (failure, core) = fail_a_join_half(&pool, || {
            roving::join(
                || (0..10_000u64).fold(0, |sum, x| core::hint::black_box(sum ^ x)),
                || panic!("the inner b half panics on purpose"),
            );
        });
        assert!(failure.message().contains("the inner b half panics on purpose"), "{failure}");
        println!("faults: a join inside a b half on core {core}'s loop, whose own b panicked, failed the outer joiner: {failure}");
        let next = pool.spawn_strand_on(core, move || core * 3).expect("a strand");
        assert_eq!(next.join().expect("the core runs strands after the failed half"), core * 3);
    })
    .expect("the pool's run");
    println!("faults: the three join halves failed alone, and their cores went on");
}

fn async_mutex() {
    use alloc::boxed::Box;
    use roving::executor::{self, TaskError};
    use roving::strand;
    use roving::sync::{Event, Mutex, TryLockError, WaitError};
    let pool = every_core_pool();
    pool.run(|| {
        let mutex: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
        let locked: &'static Event = Box::leak(Box::new(Event::new()));
        let fail: &'static Event = Box::leak(Box::new(Event::new()));
        let holder = executor::spawn_async(async move {
            let mut guard = mutex.lock_async().await.expect("the lock");
            *guard += 1;
            locked.set();
            fail.wait_async().await;
            panic!("the task holding the async mutex panics on purpose");
        })
        .expect("the holder");
        locked.wait().expect("the holder locked");
        let by_strand = strand::spawn(move || mutex.lock().map(|_| ()).err()).expect("a waiting strand");
        let by_task = executor::spawn_async(async move { mutex.lock_async().await.map(|_| ()).err() })
            .expect("a waiting task");
        // Time for both to queue (one that came later would be refused
        // at once, which is also right).
        strand::sleep(Duration::from_millis(20)).expect("a sleep");
        fail.set();
        match holder.join() {
            Err(TaskError::Failed(failure)) => assert!(failure.message().contains("on purpose"), "{failure}"),
            other => panic!("the holder should have failed: {other:?}"),
        }
        assert_eq!(by_strand.join().expect("the strand"), Some(WaitError::Poisoned));
        assert_eq!(by_task.join().expect("the task"), Some(WaitError::Poisoned));
        assert_eq!(mutex.try_lock().err(), Some(TryLockError::Poisoned));
        assert_eq!(mutex.lock().err(), Some(WaitError::Poisoned));
        let later = executor::spawn_async(async move { mutex.lock_async().await.map(|_| ()).err() });
        assert_eq!(later.expect("a later task").join().expect("it runs"), Some(WaitError::Poisoned));
        assert!(mutex.is_poisoned());
        println!(
            "faults: a task failed holding an async mutex: its waiters (a strand, a task) and later lockers got Poisoned"
        );
        let other: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
        let again = executor::spawn_async(async move {
            let guard = other.lock_async().await.expect("the lock");
            let again = other.lock_async().await.err();
            drop(guard);
            again
        })
        .expect("a task");
        assert_eq!(again.join().expect("it runs"), Some(WaitError::WouldDeadlock));
        println!("faults: a task that awaited a lock it held got WouldDeadlock");
    })
    .expect("the pool's run");
}

roving_kernel::entry!(main);

/// A value whose formatting panics: a handler that fails mid-line.
struct PanicsWhenShown;

impl fmt::Display for PanicsWhenShown {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("deliberate panic in the middle of a line")
    }
}

/// How often the strand that a `handler` case's handlers interrupt went
/// round, and whether it should stop.
static SPINS: AtomicUsize = AtomicUsize::new(0);
static STOP_SPINNING: AtomicBool = AtomicBool::new(false);
/// Firings served by the `handler` case's handler that works.
static SERVED: AtomicUsize = AtomicUsize::new(0);

fn handler_fault() {
    use roving_kernel::interrupts::{self, Handled, Handler};
    let test = roving_test_kernels::TestLine::new();
    let core = 1 % platform::core_count();
    // On the Pi 3 every line goes where the console's does.
    let console = interrupts::line_of("console").expect("the console has a line");
    interrupts::route(console, core).expect("routing the console's line");
    let failing: [(&str, Handler); 3] = [
        ("panicked", |line| panic!("deliberate panic in the handler of line {line}")),
        ("faulted", |_| {
            core::hint::black_box(read_unmapped());
            Handled::Yes
        }),
        // The console stays held by core 1 unless the failure lets it go:
        // the next line from another core would wait for ever.
        ("panicked in the middle of a line", |_| {
            println!("faults: a line its handler never ends: {}", PanicsWhenShown);
            Handled::Yes
        }),
    ];
    let pool = every_core_pool();
    pool.run(|| {
        let pool = roving::Pool::current().expect("in the pool");
        let spinner = pool
            .spawn_strand_on(core, || {
                while !STOP_SPINNING.load(SeqCst) {
                    SPINS.fetch_add(1, SeqCst);
                    core::hint::spin_loop();
                }
            })
            .expect("a strand to interrupt");
        let spinning = || {
            let before = SPINS.load(SeqCst);
            wait_until(|| SPINS.load(SeqCst) > before, Duration::from_secs(10), format_args!("the strand on core {core}"));
        };
        spinning();
        for (what, handler) in failing {
            interrupts::bind(test.line, core, handler).expect("binding the test line");
            test.fire();
            wait_until(
                || interrupts::status(test.line).expect("bound").failed,
                Duration::from_secs(10),
                format_args!("the handler that {what} to fail"),
            );
            let status = interrupts::status(test.line).expect("bound");
            assert!(status.masked, "the line of a handler that {what} is masked: {status:?}");
            spinning();
            interrupts::unbind(test.line).expect("unbinding the test line");
            println!(
                "faults: a handler that {what} on core {core} failed alone; its line was masked, and the strand it interrupted went on"
            );
        }
        interrupts::bind(test.line, core, |_| {
            let _ = roving_test_kernels::TestLine::new().quiet();
            SERVED.fetch_add(1, SeqCst);
            Handled::Yes
        })
        .expect("binding the test line");
        let before = SERVED.load(SeqCst);
        test.fire();
        wait_until(|| SERVED.load(SeqCst) > before, Duration::from_secs(10), format_args!("the handler that works"));
        interrupts::unbind(test.line).expect("unbinding the test line");
        STOP_SPINNING.store(true, SeqCst);
        spinner.join().expect("the interrupted strand finishes");
    })
    .expect("the pool's run");
    println!(
        "faults: three handlers failed alone (a panic, a fault, a panic mid-line); core {core} went on and served its line again"
    );
}

fn two_pools() {
    use alloc::sync::Arc;
    use roving::sync::Mutex;
    use roving::{Config, Pool, RunError};
    assert!(platform::core_count() >= 4, "two-pools needs 4 cores");
    let first = Pool::with_cores(&[0, 1], Config::new()).expect("the first pool");
    let second = Pool::with_cores(&[2, 3], Config::new()).expect("the second pool");
    let run = first.run(|| {
        second.start().expect("the second pool starts");
        let mutex = Arc::new(Mutex::new(()));
        let _held = mutex.lock().expect("the mutex");
        let wanted = mutex.clone();
        let other = second
            .spawn_strand(move || wanted.lock().map(|_| ()))
            .unwrap_or_else(|_| panic!("spawning into the second pool"));
        let _ = other.join();
    });
    let Err(RunError::Failed(failure)) = run else { panic!("the first pool's run: {run:?}") };
    let report = failure.deadlock().expect("a deadlock report");
    assert_eq!((report.pools, report.cycle.len(), report.waiting.len()), (2, 2, 2), "{failure}");
    assert_eq!(second.deadlock().as_ref(), Some(report), "the second pool got the same report");
    second.destroy().expect("the second pool ends");
    println!("faults: two pools' strands waiting on each other were reported to both: {failure}");
}

/// Set by the strand that goes silent once its interrupts are masked.
static SILENT: AtomicBool = AtomicBool::new(false);
/// Set to let it unmask them again.
static ANSWER_AGAIN: AtomicBool = AtomicBool::new(false);
/// Set if it ever runs on after unmasking (its core should park first).
static RAN_ON: AtomicBool = AtomicBool::new(false);
/// Tasks posted to the silent core that ran.
static POSTED_RAN: AtomicUsize = AtomicUsize::new(0);

fn silent_core() {
    use alloc::sync::Arc;
    use roving::sync::Event;
    const SILENT_CORE: usize = 2;
    // The bound the case states; the default (1 s) leaves room for a
    // loaded host.
    const SILENT_AFTER: Duration = Duration::from_millis(100);
    const POSTS: usize = 16;
    assert!(platform::core_count() >= 4, "silent-core needs 4 cores");
    let config = roving::Config::new().mailboxes(roving_test_kernels::mailboxes_asked());
    let pool = roving::Pool::with_config(config.silent_core_after(Some(SILENT_AFTER)))
        .expect("a pool of every core");
    pool.run(|| {
        let pool = roving::Pool::current().expect("in the pool");
        let event = Arc::new(Event::new());
        let pinned = {
            let event = event.clone();
            pool.spawn_strand_on(SILENT_CORE, move || {
                event.wait().expect("the event");
                platform::current_core()
            })
            .expect("a strand pinned to the silent core")
        };
        // Let the pinned strand block before its core goes silent.
        roving::strand::sleep(Duration::from_millis(5)).expect("a sleep");
        let silent = pool
            .spawn_strand_on(SILENT_CORE, || {
                platform::without_interrupts(|| {
                    SILENT.store(true, SeqCst);
                    while !ANSWER_AGAIN.load(SeqCst) {
                        core::hint::spin_loop();
                    }
                });
                let _ = roving::strand::yield_now();
                RAN_ON.store(true, SeqCst);
            })
            .expect("the strand that goes silent");
        wait_until_quietly(|| SILENT.load(SeqCst), Duration::from_secs(2));
        assert!(SILENT.load(SeqCst), "the strand never started on core {SILENT_CORE}");
        let began = Instant::now();
        for _ in 0..POSTS {
            pool.post(SILENT_CORE, || _ = POSTED_RAN.fetch_add(1, SeqCst)).expect("a post to the silent core");
        }
        event.set();
        let busy = busy_strands();
        // The bound, two scans, and room for a loaded host.
        let silent_seen = || !pool.silent_cores().is_empty();
        sleep_until_done(silent_seen, Duration::from_secs(5));
        let found_after = began.elapsed();
        let reports = pool.silent_cores();
        let [report] = reports.as_slice() else { panic!("silent cores: {reports:?}") };
        assert_eq!(report.core, SILENT_CORE, "{report}");
        assert!(report.taken_out, "{report}");
        assert_eq!(report.strand, Some(silent.id()), "{report}");
        assert!(report.silent_for >= SILENT_AFTER, "{report}");
        sleep_until_done(|| POSTED_RAN.load(SeqCst) == POSTS, Duration::from_secs(2));
        assert_eq!(POSTED_RAN.load(SeqCst), POSTS, "tasks posted to core {SILENT_CORE} were lost");
        let woke_on = pinned.join().expect("the pinned strand, woken while its core was silent");
        assert_ne!(woke_on, Some(SILENT_CORE));
        match pool.post(SILENT_CORE, || {}) {
            Err(roving::PostError::NotAMember { core, .. }) => assert_eq!(core, SILENT_CORE),
            other => panic!("a post to the core taken out: {:?}", other.map_err(|error| alloc::format!("{error}"))),
        }
        for strand in busy {
            strand.join().expect("a busy strand finishes");
        }
        let silent_id = silent.id();
        match silent.join() {
            Err(roving::strand::JoinError::Failed(failure)) => {
                assert_eq!(failure.kind(), roving::strand::FailureKind::CoreSilent { core: SILENT_CORE }, "{failure}");
                println!("faults: joining the lost strand: {failure}");
            }
            other => panic!("joining strand {silent_id}, lost with core {SILENT_CORE}: {other:?}"),
        }
        ANSWER_AGAIN.store(true, SeqCst);
        roving::strand::sleep(Duration::from_millis(200)).expect("a sleep");
        assert!(!RAN_ON.load(SeqCst), "the silent core ran its strand on after it was taken out");
        println!("faults: {report}; found {found_after:?} after it went silent, its {POSTS} tasks and a woken strand ran elsewhere");
    })
    .expect("the pool's run, without its silent core");
    println!("faults: a silent core was taken out of its pool, which ended without it");
}

/// Sleeps the calling strand in 1 ms steps until `done()` or `limit`.
fn sleep_until_done(done: impl Fn() -> bool, limit: Duration) {
    let start = Instant::now();
    while !done() && start.elapsed() < limit {
        roving::strand::sleep(Duration::from_millis(1)).expect("a sleep");
    }
}
