//! What an interrupt handler may call, called as one would: from a thread
//! that stands in for a handler (`Machine::enter_as_handler`: a member of
//! the machine, not a core, with `platform::in_interrupt()` true). In
//! debug builds, what a handler may not call refuses with a message that
//! names what to call instead.
#![cfg(feature = "std")]

mod support;

use roving::Pool;
use roving::actor::{Actor, ActorContext, InterruptSendError, InterruptSenderError};
use roving::platform::{self, host::Machine};
use roving::strand::{self, WaitError};
use roving::sync::{Event, Mutex, Semaphore, Signal, channel};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::Duration;

type Handler = support::Outside;

/// Runs `main` as the root of a pool of `cores` cores; `handler(f)` runs
/// `f` on a thread standing in for an interrupt handler.
fn with_handler<R: Send>(
    cores: usize,
    main: impl FnOnce(&dyn Fn(Handler) -> support::OutsideHandle) -> R + Send,
) -> R {
    support::with_outside(cores, |handler| {
        main(&|f: Handler| {
            handler(Box::new(move || {
                assert!(platform::in_interrupt());
                f();
            }))
        })
    })
}

#[test]
fn an_unparker_wakes_a_parked_strand_10_000_times_from_a_handler() {
    const ROUNDS: u64 = 10_000;
    let seen = with_handler(2, |handler| {
        let (raised, seen_by_strand) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        // Shared, so the handler never drops the last reference (which
        // may free memory: not interrupt-safe).
        let me = Arc::new(strand::unparker().unwrap());
        let device = {
            let (raised, seen, me) = (raised.clone(), seen_by_strand.clone(), me.clone());
            handler(Box::new(move || {
                for round in 1..=ROUNDS {
                    raised.store(round, SeqCst);
                    me.unpark();
                    while seen.load(SeqCst) != round {
                        std::thread::yield_now();
                    }
                }
            }))
        };
        while seen_by_strand.load(SeqCst) < ROUNDS {
            strand::park().unwrap();
            seen_by_strand.store(raised.load(SeqCst), SeqCst);
        }
        device.join();
        seen_by_strand.load(SeqCst)
    });
    assert_eq!(seen, ROUNDS);
}

#[test]
fn parking_keeps_one_token_times_out_and_is_cancelled() {
    support::on_pool(2, || {
        let me = strand::unparker().unwrap();
        me.unpark();
        me.unpark();
        // Two unparks before the park: one token, taken at once.
        strand::park().unwrap();
        assert_eq!(strand::park_timeout(Duration::from_millis(5)), Err(WaitError::TimedOut));
        let parked = strand::spawn(strand::park).unwrap();
        while parked.block_reason() != strand::BlockReason::Parked {
            strand::yield_now().unwrap();
        }
        parked.cancel().unwrap();
        assert_eq!(parked.join().unwrap(), Err(WaitError::Interrupted));
        // An unparker outlives its strand.
        let done = strand::spawn(|| strand::unparker().unwrap()).unwrap();
        let theirs = done.join().unwrap();
        theirs.unpark();
        assert!(format!("{theirs:?}").contains("Unparker"));
    });
}

#[test]
fn a_handler_sets_an_event_releases_a_semaphore_and_hands_over_values() {
    with_handler(3, |handler| {
        let event = Arc::new(Event::new());
        let permits = Arc::new(Semaphore::new(0));
        let (sender, receiver) = channel::bounded(4).unwrap();
        let waiter = {
            let event = event.clone();
            strand::spawn(move || event.wait()).unwrap()
        };
        let device = {
            let (event, permits) = (event.clone(), permits.clone());
            handler(Box::new(move || {
                event.set();
                permits.release(2).unwrap();
                for value in 0..4u32 {
                    sender.try_send(value).unwrap();
                }
                assert!(matches!(sender.try_send(99), Err(channel::SendError::Full(99))));
            }))
        };
        waiter.join().unwrap().unwrap();
        permits.acquire().unwrap();
        permits.acquire().unwrap();
        let values: Vec<u32> = (0..4).map(|_| receiver.recv().unwrap()).collect();
        assert_eq!(values, [0, 1, 2, 3]);
        device.join();
    });
}

/// Sums what it is sent, in order, and checks the order.
struct Summer {
    next: u64,
    out: Arc<AtomicU64>,
}

impl Actor for Summer {
    type Message = u64;
    fn handle(&mut self, n: u64, _: &mut ActorContext<'_, Self>) {
        assert_eq!(n, self.next, "messages from one sender arrive in order");
        self.next += 1;
        self.out.fetch_add(n, SeqCst);
    }
}

#[test]
fn an_interrupt_sender_delivers_10_000_messages_in_order() {
    const MESSAGES: u64 = 10_000;
    let (sum, full) = with_handler(2, |handler| {
        let out = Arc::new(AtomicU64::new(0));
        let pool = Pool::current().unwrap();
        let actor = pool.spawn_actor(Summer { next: 0, out: out.clone() });
        let sender = actor.interrupt_sender(8).unwrap();
        let full = Arc::new(AtomicU64::new(0));
        let device = {
            let full = full.clone();
            handler(Box::new(move || {
                for n in 0..MESSAGES {
                    let mut message = n;
                    loop {
                        match sender.send(message) {
                            Ok(()) => break,
                            Err(InterruptSendError::Full(back)) => {
                                full.fetch_add(1, SeqCst);
                                message = back;
                                std::thread::yield_now();
                            }
                            Err(error) => panic!("{error}"),
                        }
                    }
                }
                assert_eq!(sender.dropped(), 0);
            }))
        };
        device.join();
        while out.load(SeqCst) != MESSAGES * (MESSAGES - 1) / 2 {
            strand::sleep(Duration::from_millis(1)).unwrap();
        }
        actor.stop();
        (out.load(SeqCst), full.load(SeqCst))
    });
    assert_eq!(sum, MESSAGES * (MESSAGES - 1) / 2);
    println!("an interrupt sender with 8 slots was full {full} times over {MESSAGES} messages");
}

#[test]
fn an_interrupt_sender_says_why_it_refuses() {
    support::on_pool(2, || {
        let out = Arc::new(AtomicU64::new(0));
        let actor = Pool::current().unwrap().spawn_actor(Summer { next: 0, out });
        assert!(matches!(actor.interrupt_sender(0), Err(InterruptSenderError::NoSlots)));
        let sender = actor.interrupt_sender(1).unwrap();
        actor.stop();
        assert!(matches!(sender.send(7), Err(InterruptSendError::Stopped(7))));
        assert_eq!(sender.send(8).unwrap_err().into_inner(), 8);
    });
}

/// Runs `f` as a handler and returns its panic message.
#[cfg(debug_assertions)]
fn refusal(machine: &Machine, f: impl FnOnce() + Send + 'static) -> String {
    let machine = machine.clone();
    std::thread::spawn(move || {
        let _handler = machine.enter_as_handler();
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("it must refuse");
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
    .join()
    .unwrap()
}

#[test]
#[cfg(debug_assertions)]
fn in_debug_builds_what_a_handler_may_not_call_refuses_and_names_the_alternative() {
    let machine = Machine::new(2).unwrap();
    let inside = machine.clone();
    machine
        .run(move || {
            let pool = Pool::new().unwrap();
            let pool_for_handler = pool.clone();
            let mutex = Arc::new(Mutex::new(0));
            let signal = Arc::new(Signal::new());
            let event = Arc::new(Event::new());
            let (sender, receiver) = channel::bounded::<u8>(1).unwrap();
            let cases: Vec<(&str, &str, Handler)> = vec![
                ("Mutex::lock", "Sender::try_send", {
                    let mutex = mutex.clone();
                    Box::new(move || drop(mutex.lock()))
                }),
                ("Mutex::try_lock", "Signal::signal", Box::new(move || drop(mutex.try_lock()))),
                (
                    "Signal::wait",
                    "Signal::try_take",
                    Box::new(move || {
                        let _ = signal.wait();
                    }),
                ),
                (
                    "Event::wait",
                    "Event::set",
                    Box::new(move || {
                        let _ = event.wait();
                    }),
                ),
                (
                    "strand::park",
                    "Unparker::unpark",
                    Box::new(|| {
                        let _ = strand::park();
                    }),
                ),
                (
                    "Sender::send",
                    "Sender::try_send",
                    Box::new(move || {
                        let _ = sender.send(1);
                    }),
                ),
                (
                    "Receiver::recv",
                    "Signal::signal",
                    Box::new(move || {
                        let _ = receiver.recv();
                    }),
                ),
                (
                    "posting work",
                    "InterruptSender",
                    Box::new(move || {
                        let _ = pool_for_handler.spawn_task(|| {});
                    }),
                ),
                ("making a pool", "Signal::signal", Box::new(|| drop(Pool::new()))),
            ];
            for (what, instead, case) in cases {
                let message = refusal(&inside, case);
                assert!(
                    message.contains(what) && message.contains("is not interrupt-safe"),
                    "{what}: {message}"
                );
                assert!(message.contains(instead), "{what}: the message names {instead}: {message}");
            }
            drop(pool);
        })
        .unwrap();
}
