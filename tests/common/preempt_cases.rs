//! Time-slice cases shared by the host's `tests/preempt.rs` and the
//! `preempt` test kernel: each runs in the root strand of a pool with a
//! time slice, and returns what it measured for the caller to check.
#![allow(dead_code)]

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use core::time::Duration;
use roving::sync::channel;
use roving::time::Instant;
use roving::{Pool, strand};

/// Spins without yielding, blocking or calling roving, until `stop`;
/// returns how many rounds it made.
pub fn spin_until(stop: &AtomicBool) -> u64 {
    let mut rounds = 0u64;
    while !stop.load(SeqCst) {
        rounds = core::hint::black_box(rounds + 1);
    }
    rounds
}

/// What [`spinners_beside_a_pair`] saw.
pub struct Sharing {
    /// How long the pair's round trips took, all spinners spinning.
    pub pair_time: Duration,
    /// Each spinner's rounds.
    pub rounds: Vec<u64>,
    /// Preemptions, over all cores.
    pub preempted: u64,
}

impl Sharing {
    /// The smallest spinner's share of all rounds, as a fraction of a fair
    /// share (1.0: exactly fair).
    pub fn worst_share(&self) -> f64 {
        let total: u64 = self.rounds.iter().sum();
        let fair = total as f64 / self.rounds.len() as f64;
        self.rounds.iter().map(|&r| r as f64 / fair).fold(f64::INFINITY, f64::min)
    }
}

/// Sleeps (in 1 ms steps) until `count` reaches `n`.
fn wait_for_count(count: &AtomicU64, n: u64) {
    while count.load(SeqCst) < n {
        strand::sleep(Duration::from_millis(1)).expect("a sleep");
    }
}

/// Strands that each run `work(i, stop)` until told to stop, counting
/// themselves in as they start.
struct Crowd<T> {
    stop: Arc<AtomicBool>,
    started: Arc<AtomicU64>,
    handles: Vec<strand::JoinHandle<T>>,
}

impl<T: Send + 'static> Crowd<T> {
    fn spawn(count: u64, work: impl Fn(u64, &AtomicBool) -> T + Send + Sync + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicU64::new(0));
        let work = Arc::new(work);
        let handles = (0..count)
            .map(|i| {
                let (stop, started, work) = (stop.clone(), started.clone(), work.clone());
                strand::spawn(move || {
                    started.fetch_add(1, SeqCst);
                    work(i, &stop)
                })
                .expect("a strand of the crowd")
            })
            .collect();
        Self { stop, started, handles }
    }

    /// Waits (sleeping) until every strand has started.
    fn wait_until_all_started(&self) {
        wait_for_count(&self.started, self.handles.len() as u64);
    }

    /// Stops every strand and returns what each returned.
    fn stop(self) -> Vec<T> {
        self.stop.store(true, SeqCst);
        self.handles.into_iter().map(|s| s.join().expect("a strand of the crowd")).collect()
    }
}

/// `spinners` strands spin without yielding while a pair of strands makes
/// `round_trips` round trips over two channels; once the pair is done and
/// every spinner has started, the spinners spin `after` longer, then stop.
pub fn spinners_beside_a_pair(pool: &Pool, spinners: usize, round_trips: u32, after: Duration) -> Sharing {
    let crowd = Crowd::spawn(spinners as u64, |_, stop| spin_until(stop));
    let start = Instant::now();
    let (to_echo, echo_in) = channel::bounded::<u32>(1).expect("a channel");
    let (to_main, main_in) = channel::bounded::<u32>(1).expect("a channel");
    let echo = strand::spawn(move || {
        while let Ok(n) = echo_in.recv() {
            to_main.send(n + 1).expect("the pair's main end");
        }
    })
    .expect("the echo strand");
    for n in 0..round_trips {
        to_echo.send(n).expect("the echo end");
        assert_eq!(main_in.recv().expect("an answer"), n + 1);
    }
    let pair_time = start.elapsed();
    drop(to_echo);
    echo.join().expect("the echo strand");
    crowd.wait_until_all_started();
    strand::sleep(after).expect("a sleep");
    let rounds = crowd.stop();
    Sharing { pair_time, rounds, preempted: preemptions(pool) }
}

/// Preemptions so far, over all of `pool`'s cores.
pub fn preemptions(pool: &Pool) -> u64 {
    pool.stats().iter().map(|s| s.preempted).sum()
}

/// Fills a stack array with a pattern from `seed`, then checks it over and
/// over without yielding until `stop`; returns how many checks passed
/// (panics at the first damaged word).
fn check_stack_until(seed: u64, stop: &AtomicBool) -> u64 {
    let pattern = |i: usize| seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i as u64);
    let mut words = [0u64; 128];
    for (i, word) in words.iter_mut().enumerate() {
        *word = pattern(i);
    }
    let mut checks = 0;
    while !stop.load(SeqCst) {
        let words = core::hint::black_box(&words);
        for (i, word) in words.iter().enumerate() {
            assert_eq!(*word, pattern(i), "strand {seed}: stack word {i} changed");
        }
        checks += 1;
    }
    checks
}

/// `strands` strands, more than the fibres, check patterns on their stacks
/// without yielding until each has started and then `duration` more;
/// returns each one's passed checks and the preemptions meanwhile.
pub fn stacks_on_shared_fibres(pool: &Pool, strands: u64, duration: Duration) -> (Vec<u64>, u64) {
    crowd_for(pool, strands, duration, check_stack_until)
}

/// `strands` strands run `work` until each has started and then
/// `duration` more; returns what each returned, and the preemptions
/// meanwhile.
fn crowd_for(
    pool: &Pool,
    strands: u64,
    duration: Duration,
    work: impl Fn(u64, &AtomicBool) -> u64 + Send + Sync + 'static,
) -> (Vec<u64>, u64) {
    let before = preemptions(pool);
    let crowd = Crowd::spawn(strands, work);
    crowd.wait_until_all_started();
    strand::sleep(duration).expect("a sleep");
    let returned = crowd.stop();
    (returned, preemptions(pool) - before)
}

/// Allocates and frees small blocks without yielding until `stop`, keeping
/// the last [`LIVE_BLOCKS`] alive: each is filled with a pattern from
/// `seed` and its number, and checked when it is freed. Returns how many
/// blocks passed (panics at the first damaged one). Under preemption a
/// strand may be stopped anywhere inside the allocator and resumed on
/// another core, so a heap that picked its per-core lists before masking
/// interrupts would hand one block out twice or lose one.
fn allocate_until(seed: u64, stop: &AtomicBool) -> u64 {
    let pattern =
        |block: u64, i: u64| (seed << 48 ^ block << 8).wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i);
    let mut live: [Option<(u64, Vec<u64>)>; LIVE_BLOCKS] = Default::default();
    let (mut made, mut checked) = (0u64, 0u64);
    while !stop.load(SeqCst) {
        let slot = (made % LIVE_BLOCKS as u64) as usize;
        if let Some((block, words)) = live[slot].take() {
            for (i, &word) in core::hint::black_box(&words).iter().enumerate() {
                assert_eq!(
                    word,
                    pattern(block, i as u64),
                    "strand {seed}: word {i} of block {block} changed"
                );
            }
            checked += 1;
        }
        // 16 to 256 bytes: the sizes the kernel heap keeps per core.
        let words = 2 + (made.wrapping_mul(7) + seed) % 31;
        live[slot] = Some((made, (0..words).map(|i| pattern(made, i)).collect()));
        made += 1;
    }
    checked
}

/// Blocks each [`allocate_until`] strand keeps alive.
const LIVE_BLOCKS: usize = 8;

/// `strands` strands, more than the cores, allocate and free small blocks
/// without yielding ([`allocate_until`]) until each has started and then
/// `duration` more; returns the blocks each found intact when it freed
/// them, and the preemptions meanwhile.
pub fn allocations_under_preemption(pool: &Pool, strands: u64, duration: Duration) -> (Vec<u64>, u64) {
    crowd_for(pool, strands, duration, allocate_until)
}

/// `strands` strands each keep values in every vector register through
/// `rounds` spins, four times, beside as many spinners that never touch
/// one (so that, with lazy vector state, some preemptions save the
/// registers and some do not, and a strand resumes after either kind);
/// returns how many registers each found intact at worst (all of them: 16
/// on x86_64, 32 on AArch64), and the preemptions meanwhile.
pub fn vector_registers(pool: &Pool, strands: u64, rounds: u64) -> (Vec<u32>, u64) {
    let before = preemptions(pool);
    let spinners = Crowd::spawn(strands, |_, stop| spin_until(stop));
    let handles: Vec<_> = (0..strands)
        .map(|i| {
            strand::spawn(move || (0..4).map(|_| vector_registers_kept(i << 32, rounds)).min().unwrap_or(0))
                .expect("a strand")
        })
        .collect();
    let kept = handles.into_iter().map(|s| s.join().expect("a strand")).collect();
    assert!(spinners.stop().iter().all(|&r| r > 0), "a spinner never ran");
    (kept, preemptions(pool) - before)
}

/// What [`spinning_near_the_stack_bottom`] saw.
pub struct NearTheBottom {
    /// The deep strand's rounds.
    pub rounds: u64,
    /// The bytes of its stack it had left below the spinning frame.
    pub room: usize,
    /// Preemptions, over all cores, meanwhile.
    pub preempted: u64,
}

/// One strand descends its stack until at most `room` bytes are left
/// below it and spins there, beside `others` spinners that keep other work
/// waiting for its core, until the pool has made `preemptions_wanted`
/// more preemptions. Each preemption of that strand finds it with too
/// little stack for the preempted strand's own look for work, which must
/// leave through the core's loop instead: the look would overflow into
/// the guard gap.
pub fn spinning_near_the_stack_bottom(
    pool: &Pool,
    others: u64,
    room: usize,
    preemptions_wanted: u64,
) -> NearTheBottom {
    let before = preemptions(pool);
    let spinners = Crowd::spawn(others, |_, stop| spin_until(stop));
    let deep = Crowd::spawn(1, move |_, stop| {
        let on_the_stack = core::hint::black_box(0u8);
        let bottom = stack_bottom(core::ptr::addr_of!(on_the_stack) as usize);
        let mut left = 0;
        let rounds = descend(bottom, room, stop, &mut left);
        (rounds, left)
    });
    deep.wait_until_all_started();
    while preemptions(pool) - before < preemptions_wanted {
        strand::sleep(Duration::from_millis(5)).expect("a sleep");
    }
    let (rounds, left) = deep.stop()[0];
    assert!(spinners.stop().iter().all(|&r| r > 0), "a spinner never ran");
    NearTheBottom { rounds, room: left, preempted: preemptions(pool) - before }
}

/// The lowest address of the fibre stack that holds `address`.
fn stack_bottom(address: usize) -> usize {
    let region = roving::platform::hooks::region();
    let slot = (address - region.start) / region.slot_bytes;
    region.start + slot * region.slot_bytes + region.guard_bytes
}

/// Recurses, 256 bytes a frame, until at most `room` bytes are left
/// above `bottom`, then spins until `stop`; `left` is set to the room there.
#[inline(never)]
fn descend(bottom: usize, room: usize, stop: &AtomicBool, left: &mut usize) -> u64 {
    let frame = core::hint::black_box([0u8; 256]);
    let here = frame.as_ptr() as usize;
    if here - bottom <= room {
        *left = here - bottom;
        return spin_until(stop);
    }
    descend(bottom, room, stop, left) + u64::from(core::hint::black_box(frame)[0])
}

/// The vector registers there are.
#[cfg(target_arch = "x86_64")]
pub const VECTOR_REGISTERS: u32 = 16;
/// The vector registers there are.
#[cfg(target_arch = "aarch64")]
pub const VECTOR_REGISTERS: u32 = 32;

/// Puts `seed + i` in both halves of vector register `i` for every `i`,
/// spins `rounds` times touching none of them, then returns how many
/// registers still hold their values. The registers are saved first and
/// restored after, so nothing is declared clobbered: the PC's kernel is
/// built soft-float, where the compiler knows no vector registers.
#[cfg(target_arch = "x86_64")]
fn vector_registers_kept(seed: u64, rounds: u64) -> u32 {
    let mut saved = [0u128; 16];
    let kept: u64;
    // SAFETY: the vector registers are restored from `saved` (16 of 16
    // bytes each) before the end; the other registers are declared.
    unsafe {
        core::arch::asm!(
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
            "movdqu xmmword ptr [{saved} + 16 * \\n], xmm\\n",
            ".endr",
            "mov rax, {seed}",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
            "movq xmm\\n, rax",
            "punpcklqdq xmm\\n, xmm\\n",
            "inc rax",
            ".endr",
            "2:",
            "dec {rounds}",
            "jnz 2b",
            "xor {kept}, {kept}",
            "mov rax, {seed}",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
            "movq rdx, xmm\\n",
            "psrldq xmm\\n, 8",
            "movq rcx, xmm\\n",
            "cmp rdx, rax",
            "jne 3f",
            "cmp rcx, rax",
            "jne 3f",
            "inc {kept}",
            "3:",
            "inc rax",
            ".endr",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
            "movdqu xmm\\n, xmmword ptr [{saved} + 16 * \\n]",
            ".endr",
            saved = in(reg) saved.as_mut_ptr(),
            seed = in(reg) seed,
            rounds = inout(reg) rounds => _,
            kept = out(reg) kept,
            out("rax") _, out("rcx") _, out("rdx") _,
            options(nostack),
        );
    }
    kept as u32
}

/// As on x86_64, with v0-v31.
#[cfg(target_arch = "aarch64")]
fn vector_registers_kept(seed: u64, rounds: u64) -> u32 {
    let kept: u64;
    // SAFETY: only registers, declared clobbered; no memory.
    unsafe {
        core::arch::asm!(
            "mov x9, {seed}",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
            "dup v\\n\\().2d, x9",
            "add x9, x9, #1",
            ".endr",
            "2:",
            "subs {rounds}, {rounds}, #1",
            "b.ne 2b",
            "mov {kept}, #0",
            "mov x9, {seed}",
            ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
            "mov x10, v\\n\\().d[0]",
            "mov x11, v\\n\\().d[1]",
            "cmp x10, x9",
            "ccmp x11, x9, #0, eq",
            "cinc {kept}, {kept}, eq",
            "add x9, x9, #1",
            ".endr",
            seed = in(reg) seed,
            rounds = inout(reg) rounds => _,
            kept = out(reg) kept,
            out("x9") _, out("x10") _, out("x11") _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _, out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nomem, nostack),
        );
    }
    kept as u32
}

/// Spins forever without yielding, blocking, checking or calling roving.
pub fn spin_forever() -> u64 {
    let mut rounds = 0u64;
    loop {
        rounds = core::hint::black_box(rounds.wrapping_add(1));
    }
}

/// Whether a join's outcome says the strand was stopped by its cancel
/// while computing.
pub fn stopped_by_cancel<T, H>(outcome: &Result<T, strand::JoinError<H>>) -> bool {
    matches!(outcome, Err(strand::JoinError::Failed(failure)) if failure.kind() == strand::FailureKind::Interrupted)
}

/// What [`cancel_computing`] saw.
pub struct Cancelled {
    /// From the cancels to the last of the strands ending.
    pub took: Duration,
    /// Spinners that never check, stopped by their cancel (all of them).
    pub stopped: usize,
    /// Whether the strand that calls `checkpoint` returned `Interrupted`
    /// from it, as its own value.
    pub checkpoint_returned: bool,
    /// Whether the shielded strand was left alone until its shield
    /// dropped, and stopped after.
    pub shield_held: bool,
}

/// Cancels strands that compute: `spinners` that never check, one that
/// calls `strand::checkpoint`, and one that holds a shield for
/// `shielded_for` after it sees the cancel, then spins on unshielded.
pub fn cancel_computing(spinners: usize, shielded_for: Duration) -> Cancelled {
    let started = Arc::new(AtomicU64::new(0));
    let spawn_counted = |work: fn() -> u64| {
        let started = started.clone();
        strand::spawn(move || {
            started.fetch_add(1, SeqCst);
            work()
        })
        .expect("a computing strand")
    };
    let spinning: Vec<_> = (0..spinners).map(|_| spawn_counted(spin_forever)).collect();
    let started_checker = started.clone();
    let checker = strand::spawn(move || -> Result<(), strand::WaitError> {
        started_checker.fetch_add(1, SeqCst);
        let mut rounds = 0u64;
        loop {
            rounds = core::hint::black_box(rounds + 1);
            if rounds.is_multiple_of(1024) {
                strand::checkpoint()?;
            }
        }
    })
    .expect("the checking strand");
    let dropped_shield = Arc::new(AtomicBool::new(false));
    let (started_shielded, dropped) = (started.clone(), dropped_shield.clone());
    let shielded = strand::spawn(move || {
        let shield = strand::shield();
        started_shielded.fetch_add(1, SeqCst);
        while !strand::cancelled() {
            core::hint::spin_loop();
        }
        let seen = Instant::now();
        while seen.elapsed() < shielded_for {
            core::hint::spin_loop();
        }
        dropped.store(true, SeqCst);
        drop(shield);
        spin_forever()
    })
    .expect("the shielded strand");
    wait_for_count(&started, spinners as u64 + 2);
    let start = Instant::now();
    spinning.iter().for_each(|s| s.cancel().expect("cancelling a spinner"));
    checker.cancel().expect("cancelling the checker");
    shielded.cancel().expect("cancelling the shielded strand");
    let stopped = spinning.into_iter().map(|s| s.join()).filter(stopped_by_cancel).count();
    let checkpoint_returned = matches!(checker.join(), Ok(Err(strand::WaitError::Interrupted)));
    let shielded_outcome = shielded.join();
    let shield_held = dropped_shield.load(SeqCst) && stopped_by_cancel(&shielded_outcome);
    Cancelled { took: start.elapsed(), stopped, checkpoint_returned, shield_held }
}

/// What [`destroy_spinning`] saw.
pub struct Destroyed {
    /// How long `Pool::destroy` took.
    pub took: Duration,
    /// Strands the pool ran, each spinning forever.
    pub strands: usize,
    /// Those reported stopped by the cancel (all of them).
    pub stopped: usize,
}

/// Starts a pool with a time slice of `slice` on `cores`, gives it 8
/// strands per core that spin forever (never blocking or checking), and
/// destroys it from the calling strand.
pub fn destroy_spinning(cores: &[usize], slice: Duration) -> Destroyed {
    let pool =
        Pool::with_cores(cores, roving::Config::new().time_slice(slice)).expect("a pool on free cores");
    pool.start().expect("the pool starts");
    let started = Arc::new(AtomicU64::new(0));
    let strands = 8 * cores.len();
    let handles: Vec<_> = (0..strands)
        .map(|_| {
            let started = started.clone();
            pool.spawn_strand(move || {
                started.fetch_add(1, SeqCst);
                spin_forever()
            })
            .expect("a spinner")
        })
        .collect();
    wait_for_count(&started, strands as u64);
    let start = Instant::now();
    pool.destroy().expect("destroying the pool");
    let took = start.elapsed();
    let stopped = handles.into_iter().map(|s| s.join()).filter(stopped_by_cancel).count();
    Destroyed { took, strands, stopped }
}

/// Raised for the waiting strand of [`wake_latencies`].
pub static WAKE: roving::sync::Signal = roving::sync::Signal::new();
/// `platform::ticks()` when the last wake was fired: set by whatever
/// signals [`WAKE`] (a handler's entry, or a strand), just before it does.
pub static FIRED_AT: AtomicU64 = AtomicU64::new(0);
/// The round the waiting strand waits for next.
static READY: AtomicU64 = AtomicU64::new(0);

/// `spinners` strands spin at `Normal` while a strand at `level` waits
/// for [`WAKE`] `rounds` times. A `Normal` strand that never blocks calls
/// `fire` `gap` after the waiter is ready for each round; `fire` must stamp
/// [`FIRED_AT`] and then signal [`WAKE`], itself or through an interrupt
/// handler. Returns the ticks from each stamp to the waiter running.
pub fn wake_latencies(
    level: strand::Priority,
    spinners: usize,
    rounds: u64,
    gap: Duration,
    fire: fn(),
) -> Vec<u64> {
    let crowd = Crowd::spawn(spinners as u64, |_, stop| spin_until(stop));
    let latencies = wake_latencies_beside(&crowd, level, rounds, gap, fire);
    crowd.stop();
    latencies
}

/// Computes a little, then spawns and joins one child strand, until
/// `stop`: each spawn and join works on the core's own queues, with
/// preemption deferred, and between them the strand runs its own code, as
/// most strands do. Returns how many children it joined; panics if one
/// returned the wrong value.
pub fn spawn_and_join_until(stop: &AtomicBool) -> u64 {
    let mut joined = 0u64;
    while !stop.load(SeqCst) {
        for round in 0..2_000u64 {
            core::hint::black_box(round);
        }
        let child = strand::spawn(move || joined.wrapping_mul(3)).expect("a child strand");
        assert_eq!(child.join().expect("a child strand"), joined.wrapping_mul(3), "a child's result");
        joined += 1;
    }
    joined
}

/// [`wake_latencies`] beside `spawners` strands that spawn and join
/// children ([`spawn_and_join_until`]) instead of spinning: the woken
/// strand's wake lands on cores whose strands keep using their core's
/// queues. Returns the latencies and each spawner's children.
pub fn wake_latencies_beside_spawners(
    level: strand::Priority,
    spawners: usize,
    rounds: u64,
    gap: Duration,
    fire: fn(),
) -> (Vec<u64>, Vec<u64>) {
    let crowd = Crowd::spawn(spawners as u64, |_, stop| spawn_and_join_until(stop));
    let latencies = wake_latencies_beside(&crowd, level, rounds, gap, fire);
    (latencies, crowd.stop())
}

fn wake_latencies_beside<T: Send + 'static>(
    crowd: &Crowd<T>,
    level: strand::Priority,
    rounds: u64,
    gap: Duration,
    fire: fn(),
) -> Vec<u64> {
    crowd.wait_until_all_started();
    READY.store(0, SeqCst);
    let _ = WAKE.try_take();
    let waiter = strand::spawn(move || {
        strand::set_priority(level).expect("in a strand");
        (1..=rounds)
            .map(|round| {
                READY.store(round, SeqCst);
                WAKE.wait().expect("woken");
                roving::platform::ticks() - FIRED_AT.load(SeqCst)
            })
            .collect::<Vec<u64>>()
    })
    .expect("the waiting strand");
    // The firer never blocks, as code an interrupt lands in would not: a
    // woken strand gets a core only by preempting it or a spinner.
    let firer = strand::spawn(move || {
        for round in 1..=rounds {
            while READY.load(SeqCst) < round {
                core::hint::spin_loop();
            }
            let ready = Instant::now();
            while ready.elapsed() < gap {
                core::hint::spin_loop();
            }
            fire();
        }
    })
    .expect("the firing strand");
    firer.join().expect("the firing strand");
    waiter.join().expect("the waiting strand")
}

/// The median of `samples`.
pub fn median(samples: &[u64]) -> u64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

/// `per_level` spinners at each priority level spin for `duration` once
/// all have started; returns each level's rounds (`Low`, `Normal`,
/// `High`).
pub fn levels_share(per_level: u64, duration: Duration) -> [u64; 3] {
    use strand::Priority;
    let levels = [Priority::Low, Priority::Normal, Priority::High];
    let crowd = Crowd::spawn(3 * per_level, move |i, stop| {
        strand::set_priority(levels[(i % 3) as usize]).expect("in a strand");
        (i % 3, spin_until(stop))
    });
    crowd.wait_until_all_started();
    strand::sleep(duration).expect("a sleep");
    let mut rounds = [0u64; 3];
    for (level, spun) in crowd.stop() {
        rounds[level as usize] += spun;
    }
    rounds
}

/// What [`held_off`] saw.
pub struct HeldOff {
    /// Rounds the spinner ran while the root held preemption off.
    pub rounds_while_held: u64,
    /// How soon after the hold ended the spinner ran (`None`: not in 10 s).
    pub ran_after: Option<Duration>,
}

/// A pool's `main` in a pool with slices of `slice`: a spinner pinned to
/// the root's own core waits behind the root while the root computes for
/// 50 slices holding preemption off (`strand::hold_preemption`), and runs
/// once the root lets go.
pub fn held_off(pool: &Pool, slice: Duration) -> HeldOff {
    let core = roving::platform::current_core().expect("main runs on a core");
    let (rounds, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    // Held before the spinner exists, so no tick can hand it the core first.
    let hold = strand::hold_preemption();
    let spinner = {
        let (rounds, stop) = (rounds.clone(), stop.clone());
        pool.spawn_strand_on(core, move || {
            while !stop.load(SeqCst) {
                rounds.fetch_add(1, SeqCst);
            }
        })
        .expect("the spinner")
    };
    let held_since = Instant::now();
    while held_since.elapsed() < slice * 50 {
        core::hint::spin_loop();
    }
    let rounds_while_held = rounds.load(SeqCst);
    drop(hold);
    let released = Instant::now();
    while rounds.load(SeqCst) == 0 && released.elapsed() < Duration::from_secs(10) {
        core::hint::spin_loop();
    }
    let ran_after = (rounds.load(SeqCst) > 0).then(|| released.elapsed());
    stop.store(true, SeqCst);
    spinner.join().expect("the spinner ends");
    HeldOff { rounds_while_held, ran_after }
}
