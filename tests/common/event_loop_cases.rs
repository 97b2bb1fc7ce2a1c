//! Event-loop workloads shared by the host tests (`tests/event_loop.rs`)
//! and the QEMU kernel `event_loops`. Only `core`, `alloc` and roving: it
//! builds for bare metal. Run from a strand of a pool of `cores` cores.
//!
//! The object is an echo service of the usual shape: a request hands the
//! object a reply callback (the caller's "buffer"), the object passes the
//! work to a lower level, and the lower level's completion comes back
//! through a [`Loop::callback`] that keeps the object alive until it fires.
//! Some requests are parked in a fake device (itself an event loop) until
//! the test releases them, so their completions arrive after every public
//! handle is gone.
#![allow(dead_code)]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::SeqCst};
use roving::Pool;
use roving::event_loop::{Callback, Handle, Loop, LoopGroup, Object};
use roving::sync::Event;

/// A request refused because the echo was closed.
#[derive(Debug, PartialEq, Eq)]
pub struct Aborted;

/// What a request's caller gets back, exactly once.
pub type Reply = Callback<Result<u64, Aborted>>;

/// A request the device holds until released, and how to complete it.
pub struct Parked {
    value: u64,
    done: Callback<u64>,
}

/// The fake device's state: requests wait in it until [`release`]; after
/// that, they complete as they come.
#[derive(Default)]
pub struct Parking {
    parked: Vec<Parked>,
    released: bool,
}

/// The fake device.
pub type Device = Loop<Parking>;

/// Every this-many requests, one is parked in the device.
pub const PARK_EVERY: u64 = 10;

/// The echo object's state.
pub struct Echo {
    /// The overlap detector: set while an operation of the echo runs.
    busy: AtomicBool,
    closed: bool,
    pool: Pool,
    device: Device,
}

impl Echo {
    pub fn new(pool: Pool, device: Device) -> Self {
        Self { busy: AtomicBool::new(false), closed: false, pool, device }
    }

    fn enter(&self) {
        assert!(!self.busy.swap(true, SeqCst), "overlap: two operations of one object ran at once");
    }

    fn leave(&self) {
        self.busy.store(false, SeqCst);
    }
}

impl Object for Echo {
    fn close(&mut self, _: &Loop<Self>) {
        self.enter();
        self.closed = true;
        self.leave();
    }
}

/// Asks `echo` to double `value`; `reply` gets the answer, or [`Aborted`]
/// if the echo was closed first.
pub fn request(echo: &Handle<Echo>, value: u64, reply: Reply) {
    echo.defer(move |echo: &mut Echo, this: &Loop<Echo>| {
        echo.enter();
        if echo.closed {
            echo.leave();
            reply.fire(Err(Aborted)).expect("a plain callback runs");
            return;
        }
        // The lower level's completion owns the reply, so the object lives
        // until it fires, even if every handle is dropped first.
        let done = this.callback(move |echo: &mut Echo, _: &Loop<Echo>, doubled: u64| {
            echo.enter();
            reply.fire(Ok(doubled)).expect("a plain callback runs");
            echo.leave();
        });
        if value.is_multiple_of(PARK_EVERY) {
            echo.device
                .defer(move |device: &mut Parking, _: &Device| {
                    if device.released {
                        done.fire(value * 2).expect("the echo runs");
                    } else {
                        device.parked.push(Parked { value: value * 2, done });
                    }
                })
                .expect("the device runs");
        } else {
            echo.pool
                .spawn_task(move || {
                    done.fire(value * 2).expect("the echo runs");
                })
                .expect("the pool runs");
        }
        echo.leave();
    })
    .expect("the echo accepts requests");
}

/// Completes every parked request, and every later one as it comes.
pub fn release(device: &Device) {
    device
        .defer(|device: &mut Parking, _: &Device| {
            device.released = true;
            for Parked { value, done } in device.parked.drain(..) {
                done.fire(value).expect("the echo runs");
            }
        })
        .expect("the device runs");
}

/// What the replies showed.
#[derive(Debug, PartialEq, Eq)]
pub struct Report {
    /// Sum of every reply's value.
    pub sum: u64,
    /// Replies that fired after every public handle was dropped.
    pub after_handles: u64,
    /// Whether the object was still unfinished (kept alive by pending
    /// callbacks) with every handle gone.
    pub outlived_handles: bool,
}

struct Replies {
    fired: Vec<AtomicU8>,
    sum: AtomicU64,
    handles_gone: AtomicBool,
    after_handles: AtomicU64,
}

/// `cores` cores issue `total` requests between them on one echo, each
/// core dropping its handle right after its last request; then the parked
/// requests are released and the context joined. Panics if any reply
/// fired twice or never.
pub fn many_callers(cores: usize, total: u64) -> Report {
    let pool = Pool::current().expect("run from the pool");
    let context = LoopGroup::new();
    let device: Device = Loop::new(Parking::default());
    let replies = Arc::new(Replies {
        fired: (0..total).map(|_| AtomicU8::new(0)).collect(),
        sum: AtomicU64::new(0),
        handles_gone: AtomicBool::new(false),
        after_handles: AtomicU64::new(0),
    });
    let echo = context.object(Echo::new(pool.clone(), device.clone()));
    let issuers: Vec<_> = (0..cores)
        .map(|core| {
            let (echo, replies) = (echo.clone(), replies.clone());
            pool.future_on(core, move || {
                for value in (core as u64..total).step_by(cores) {
                    let replies = replies.clone();
                    request(
                        &echo,
                        value,
                        Callback::new(move |reply: Result<u64, Aborted>| {
                            let doubled = reply.expect("no request follows the close");
                            assert_eq!(doubled, value * 2, "a reply for another request");
                            let before = replies.fired[value as usize].fetch_add(1, SeqCst);
                            assert_eq!(before, 0, "a reply fired twice");
                            replies.sum.fetch_add(doubled, SeqCst);
                            if replies.handles_gone.load(SeqCst) {
                                replies.after_handles.fetch_add(1, SeqCst);
                            }
                        }),
                    );
                }
                // Dropped here, mid-flight: replies are still pending.
                drop(echo);
            })
            .expect("every core is in the pool")
        })
        .collect();
    drop(echo);
    for issuer in issuers {
        issuer.wait().expect("main is a strand");
    }
    replies.handles_gone.store(true, SeqCst);
    let outlived_handles = context.unfinished() == 1;
    release(&device);
    context.join().expect("main is a strand");
    assert_eq!(context.unfinished(), 0);
    for (value, fired) in replies.fired.iter().enumerate() {
        assert_eq!(fired.load(SeqCst), 1, "request {value}'s reply fired {} times", fired.load(SeqCst));
    }
    Report {
        sum: replies.sum.load(SeqCst),
        after_handles: replies.after_handles.load(SeqCst),
        outlived_handles,
    }
}

/// The sum [`many_callers`] must report.
pub fn expected_sum(total: u64) -> u64 {
    total * (total - 1)
}

/// When each step of [`reentrant_request`] happened, as stamps of one
/// counter.
#[derive(Debug)]
pub struct Reentry {
    /// The first reply started.
    pub reply_started: usize,
    /// The re-entrant call on the same object returned to the reply.
    pub call_returned: usize,
    /// The first reply returned.
    pub reply_returned: usize,
    /// The operation deferred by the re-entrant call ran.
    pub deferred_ran: usize,
    /// The second request's own reply came.
    pub second_reply: usize,
}

/// From inside a reply callback, which runs on the echo's loop while the
/// echo's overlap detector is set, calls back into the same echo: defers
/// an operation on it and issues a second request. The call must return at
/// once and the operation run after the callback (a run inside it would
/// trip the detector; a lock would deadlock).
pub fn reentrant_request(pool: &Pool) -> Reentry {
    let context = LoopGroup::new();
    let echo = context.object(Echo::new(pool.clone(), Loop::new(Parking::default())));
    let clock = Arc::new(AtomicU64::new(1));
    let stamps: Arc<[AtomicU64; 5]> = Arc::new(core::array::from_fn(|_| AtomicU64::new(0)));
    let stamp = |clock: &AtomicU64, stamps: &[AtomicU64; 5], step: usize| {
        stamps[step].store(clock.fetch_add(1, SeqCst), SeqCst);
    };
    // Set by the second reply: joining closes the echo, so wait for the
    // whole chain first.
    let answered = Arc::new(Event::new());
    let (again, clock1, stamps1, answered1) = (echo.clone(), clock.clone(), stamps.clone(), answered.clone());
    request(
        &echo,
        1,
        Callback::new(move |reply| {
            assert_eq!(reply, Ok(2));
            stamp(&clock1, &stamps1, 0);
            let (clock2, stamps2) = (clock1.clone(), stamps1.clone());
            again
                .defer(move |echo: &mut Echo, _: &Loop<Echo>| {
                    echo.enter();
                    stamp(&clock2, &stamps2, 3);
                    echo.leave();
                })
                .expect("the echo accepts operations");
            let (clock3, stamps3) = (clock1.clone(), stamps1.clone());
            request(
                &again,
                3,
                Callback::new(move |reply| {
                    assert_eq!(reply, Ok(6));
                    stamp(&clock3, &stamps3, 4);
                    answered1.set();
                }),
            );
            stamp(&clock1, &stamps1, 1);
            stamp(&clock1, &stamps1, 2);
        }),
    );
    drop(echo);
    answered.wait().expect("run from a strand");
    context.join().expect("run from a strand");
    let at = |step: usize| stamps[step].load(SeqCst) as usize;
    Reentry {
        reply_started: at(0),
        call_returned: at(1),
        reply_returned: at(2),
        deferred_ran: at(3),
        second_reply: at(4),
    }
}
