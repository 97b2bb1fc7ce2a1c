//! Stress on an oversubscribed host: the pool's cores share the machine's
//! CPUs with busy "hog" threads, so the OS takes a core's thread off its
//! CPU at any instruction, the way interrupts, cache misses and preemption
//! do on hardware. Built with feature `chaos` (as `make test` and
//! `make soak` run it), the protocols' own steps also yield, spin and
//! sleep at random (`src/chaos.rs`).
//!
//! Each round runs the workloads below on pools of 2, 3 and 4 cores, more
//! cores than the host has CPUs, and checks every result:
//!
//! - **spawn storm**: four strands each spawn and join 500 strands that end
//!   at once, so fibres are claimed, overloaded and given back all the
//!   time. It caught a use after free (a fibre scheduled by a wake-up that
//!   came after its last strand had ended and given it back) and
//!   `NoFibre` with fibres free (a fibre given back between the claim scan
//!   and the overload scan of one spawn).
//! - **lone spawner**: the root spawns and joins waves of 150 strands that
//!   end at once, more than there are fibres.
//! - **yield many**: 200 strands yield 200 times each.
//! - **pairs**: 1,000 pairs of strands pass one message over `bounded(1)`
//!   channels (2,000 strands on 64 fibres).
//!
//! After each pool ends, no fibre may still be held.
//!
//! `ROVING_STRESS_SECS` sets how long to go on (default 20 s; `make soak`
//! runs it far longer). `ROVING_STRESS_HOGS` sets how many hog threads
//! (default: two per CPU).
#![cfg(feature = "std")]

mod support;

use roving::strand::{self, JoinHandle};
use roving::sync::channel;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|value| value.parse().ok())
}

/// Busy threads that keep every CPU of the host oversubscribed until dropped.
struct Hogs {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Hogs {
    fn start() -> Self {
        let cpus = thread::available_parallelism().map_or(2, |n| n.get()) as u64;
        let count = env_number("ROVING_STRESS_HOGS").unwrap_or(2 * cpus);
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

fn join_all<T>(handles: Vec<JoinHandle<T>>) -> Vec<T> {
    handles.into_iter().map(|handle| handle.join().expect("a stress strand failed")).collect()
}

fn spawn_storm() -> u64 {
    let spawners: Vec<_> = (0..4u64)
        .map(|spawner| {
            strand::spawn(move || {
                let mut sum = 0;
                for batch in 0..5u64 {
                    let children = (0..100u64)
                        .map(|i| {
                            let value = spawner * 1_000 + batch * 100 + i;
                            strand::spawn(move || value).expect("spawn with fibres to share")
                        })
                        .collect();
                    sum += join_all(children).into_iter().sum::<u64>();
                }
                sum
            })
            .expect("spawn a spawner")
        })
        .collect();
    join_all(spawners).into_iter().sum()
}

fn expected_storm_sum() -> u64 {
    (0..4u64).flat_map(|s| (0..500u64).map(move |i| s * 1_000 + i)).sum()
}

/// One spawner, the root, spawns waves of strands that end at once: more
/// than there are fibres, so it overloads fibres that the other cores are
/// emptying and giving back meanwhile.
fn lone_spawner() -> u64 {
    (0..10u64)
        .map(|wave| {
            let children = (0..150u64)
                .map(|i| strand::spawn(move || wave * 150 + i).expect("spawn with fibres free or to share"))
                .collect();
            join_all(children).into_iter().sum::<u64>()
        })
        .sum()
}

fn yield_many() -> u64 {
    let children = (0..200)
        .map(|_| {
            strand::spawn(|| {
                for _ in 0..200 {
                    strand::yield_now().unwrap();
                }
                200u64
            })
            .expect("spawn a yielder")
        })
        .collect();
    join_all(children).into_iter().sum()
}

fn pairs() -> u64 {
    let mut children = Vec::new();
    for i in 0..1_000u64 {
        let (sender, receiver) = channel::bounded::<u64>(1).unwrap();
        children.push(strand::spawn(move || sender.send(i).map(|()| 0).unwrap()).expect("spawn a sender"));
        children.push(strand::spawn(move || receiver.recv().unwrap()).expect("spawn a receiver"));
    }
    join_all(children).into_iter().sum()
}

#[test]
fn strands_survive_an_oversubscribed_host() {
    let budget = Duration::from_secs(env_number("ROVING_STRESS_SECS").unwrap_or(20));
    let _hogs = Hogs::start();
    let start = Instant::now();
    let rounds = AtomicU64::new(0);
    while start.elapsed() < budget {
        for cores in [2, 3, 4] {
            let timed = |f: fn() -> u64| {
                let start = Instant::now();
                let value = f();
                (value, start.elapsed())
            };
            let ((lone, t0), (storm, t1), (yields, t2), (sum, t3)) = support::on_pool(cores, || {
                (timed(lone_spawner), timed(spawn_storm), timed(yield_many), timed(pairs))
            });
            if std::env::var_os("ROVING_STRESS_VERBOSE").is_some() {
                eprintln!(
                    "{cores} cores: lone spawner {t0:?}, storm {t1:?}, yield many {t2:?}, pairs {t3:?}"
                );
            }
            assert_eq!(lone, (0..1_500).sum::<u64>(), "lone spawner at {cores} cores");
            assert_eq!(storm, expected_storm_sum(), "spawn storm at {cores} cores");
            assert_eq!(yields, 200 * 200, "yield many at {cores} cores");
            assert_eq!(sum, (0..1_000).sum::<u64>(), "pairs at {cores} cores");
            assert_eq!(strand::usage().fibres_in_use, 0, "a fibre is still held after the pool ended");
        }
        rounds.fetch_add(1, SeqCst);
    }
    eprintln!("stress: {} rounds of 3 pools in {:.1?}", rounds.load(SeqCst), start.elapsed());
}
