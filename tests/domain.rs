//! Domains on the host: a domain whose root fails is torn down while
//! another finishes its work; handles do not work across domains; owned
//! data crosses through a channel.
#![cfg(feature = "std")]

mod support;

use roving::domain::{Domain, DomainError, DomainId};
use roving::platform::host::Machine;
use roving::strand::{self, CancelError, JoinError, SpawnError, WaitError};
use roving::sync::channel::bounded;
use roving::{Config, Pool, PostError, free_cores, join};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use support::with_watchdog;

fn fib(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn on_machine<R: Send>(cores: usize, f: impl FnOnce() -> R + Send) -> R {
    with_watchdog(Duration::from_secs(60), "a domain test", || Machine::new(cores).unwrap().run(f).unwrap())
}

#[test]
fn a_failing_domain_is_torn_down_while_another_finishes() {
    let ended = Arc::new(AtomicUsize::new(0));
    let e = ended.clone();
    on_machine(4, move || {
        let a = Domain::start(&[1], move || -> u64 {
            // Children blocked when the root fails are cancelled and
            // waited for by the teardown.
            for _ in 0..5 {
                let e = e.clone();
                let child = strand::spawn(move || {
                    assert_eq!(strand::sleep(Duration::from_secs(3600)), Err(WaitError::Interrupted));
                    e.fetch_add(1, SeqCst);
                })
                .unwrap();
                drop(child);
            }
            strand::sleep(Duration::from_millis(5)).unwrap();
            panic!("domain A fails at once")
        })
        .unwrap();
        let b = Domain::start(&[2, 3], || fib(25)).unwrap();
        assert_ne!(a.id(), b.id());
        assert_ne!(a.id(), DomainId::MAIN);
        match a.join() {
            Err(DomainError::Failed(failure)) => assert_eq!(failure.message(), "domain A fails at once"),
            other => panic!("domain A should have failed, got {other:?}"),
        }
        assert_eq!(b.join().unwrap(), 75_025);
        assert_eq!(free_cores(), vec![0, 1, 2, 3], "both domains gave their cores back");
    });
    assert_eq!(ended.load(SeqCst), 5, "the failed domain's strands were cancelled and ended");
}

#[test]
fn handles_do_not_work_across_domains_and_owned_data_crosses_by_channel() {
    on_machine(4, || {
        let home = Pool::with_config(Config::new().cores(1)).unwrap();
        home.run(|| {
            let (to_home, from_domain) = bounded(4).unwrap();
            let (to_domain, from_home) = bounded::<u64>(1).unwrap();
            let domain = Domain::start(&[1, 2], move || {
                let strand = strand::spawn(|| 5).unwrap();
                let pool = Pool::with_cores(&[3], Config::new()).unwrap();
                pool.start().unwrap();
                to_home.send((strand, pool.clone(), vec![1u64, 2, 3])).unwrap();
                // Work with what comes back, then end the domain's pool.
                let n = from_home.recv().unwrap();
                pool.destroy().unwrap();
                n * 2
            })
            .unwrap();
            let (strand, pool, data) = from_domain.recv().unwrap();
            assert_eq!(data, vec![1, 2, 3], "owned data crossed");
            let id = strand.id();
            assert_eq!(strand.cancel(), Err(CancelError::OtherDomain { strand: id }));
            let strand = match strand.join() {
                Err(JoinError::OtherDomain(strand)) => strand,
                other => panic!("joined across domains: {other:?}"),
            };
            assert!(matches!(strand.try_join(), Err(JoinError::OtherDomain(_))));
            assert!(matches!(pool.spawn_strand(|| ()), Err(SpawnError::OtherDomain(_))));
            assert!(matches!(pool.spawn_task(|| ()), Err(PostError::OtherDomain(_))));
            assert!(matches!(pool.post(3, || ()), Err(PostError::OtherDomain(_))));
            to_domain.send(21).unwrap();
            assert_eq!(domain.join().unwrap(), 42);
        })
        .unwrap();
    });
}

#[test]
fn a_domain_needs_free_cores() {
    on_machine(2, || {
        let first = Domain::start(&[1], || strand::sleep(Duration::from_millis(20))).unwrap();
        match Domain::start(&[1], || ()) {
            Err(DomainError::Start(error)) => assert_eq!(error, roving::RunError::CoreTaken { core: 1 }),
            other => panic!("expected the core to be taken, got {other:?}"),
        }
        assert!(matches!(Domain::start(&[], || ()), Err(DomainError::Pool(roving::PoolError::NoCores))));
        assert_eq!(first.join().unwrap(), Ok(()));
    });
}

#[test]
fn a_failed_strands_handle_dropped_in_another_domain_fails_the_strands_domain() {
    on_machine(4, || {
        let home = Pool::with_config(Config::new().cores(1)).unwrap();
        let outcome = home.run(|| {
            let (to_home, from_domain) = bounded(1).unwrap();
            let (release, released) = bounded::<()>(1).unwrap();
            let domain = Domain::start(&[1, 2], move || {
                let failing = strand::spawn(|| panic!("failed in the domain")).unwrap();
                while !failing.is_finished() {
                    strand::sleep(Duration::from_millis(1)).unwrap();
                }
                to_home.send(failing).unwrap();
                // The failure comes back here and tears the domain down.
                released.recv()
            })
            .unwrap();
            let handle = from_domain.recv().unwrap();
            drop(handle);
            match domain.join() {
                Err(DomainError::Failed(failure)) => assert_eq!(failure.message(), "failed in the domain"),
                other => panic!("the domain should have failed, got {other:?}"),
            }
            drop(release);
            "home unharmed"
        });
        assert_eq!(outcome, Ok("home unharmed"), "the failure reached the domain that dropped the handle");
    });
}
