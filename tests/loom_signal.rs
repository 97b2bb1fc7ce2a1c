//! loom model of a signal's state word (`src/protocol/signal_word.rs`): a
//! waiter registers and then either is woken by the firer or is woken by
//! its deadline first and withdraws, while a firer (an interrupt handler,
//! modelled as a thread) raises the signal.
//!
//! Run with `make loom`, or:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p roving --release --target host-tuple --test loom_signal`
//!
//! Checked: the signal is never lost and never taken twice (the waiter got
//! it, or it is still set, exactly one of the two), the firer never
//! touches the waiter after the waiter has left, and a waiter back for the
//! next signal while the firer finishes is let in, not refused. Each model
//! runs on both words: a signal's (pointer-sized, the waiter's address)
//! and a strand's park token (a byte, the waiter known). Two more run an
//! async task's wait, whose every wake reaches it, waiting or dropped early.
//! And a fire that comes while another firer is still delivering, after
//! the waiter took that delivery and went back to wait again, must reach
//! that second wait (a first version let it coalesce with the delivery
//! under way, and the waiter waited for ever).
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU8, Ordering::SeqCst};
use loom::thread;
use roving::loom_api::{SIGNAL_WAITING, SignalRegister, SignalWord, StateWord};

const BLOCKED: u8 = 0;
const SIGNALLED: u8 = 1;
const TIMED_OUT: u8 = 2;

/// The waiting strand: its wait state (which of a wake and its deadline
/// ends the wait, as a control block's state word decides), and whether it
/// has left (after which nothing may touch it).
struct Waiter {
    state: AtomicU8,
    left: AtomicBool,
}

/// An address for the waiter of a signal: any aligned value above the
/// word's three.
const ADDRESS: usize = 64;

fn model<W: StateWord + Send + Sync + 'static>(
    deadline_races: bool,
    new: fn() -> SignalWord<W>,
    address: usize,
) {
    loom::model(move || {
        let word = Arc::new(new());
        let waiter = Arc::new(Waiter { state: AtomicU8::new(BLOCKED), left: AtomicBool::new(false) });
        let firer = {
            let (word, waiter) = (word.clone(), waiter.clone());
            thread::spawn(move || {
                word.fire(|got_address| {
                    assert_eq!(got_address, address);
                    assert!(!waiter.left.load(SeqCst), "the firer touched a waiter that had left");
                    waiter.state.compare_exchange(BLOCKED, SIGNALLED, SeqCst, SeqCst).is_ok()
                });
            })
        };
        let got = match word.register(address, thread::yield_now) {
            SignalRegister::Taken => true,
            SignalRegister::Occupied => unreachable!("one waiter"),
            SignalRegister::Registered => {
                if deadline_races && waiter.state.compare_exchange(BLOCKED, TIMED_OUT, SeqCst, SeqCst).is_ok()
                {
                    // The deadline won: leave, unless a signal came.
                    !word.withdraw(address, thread::yield_now)
                } else {
                    // Blocked until the firer's wake.
                    while waiter.state.load(SeqCst) != SIGNALLED {
                        thread::yield_now();
                    }
                    true
                }
            }
        };
        if got {
            // Back for the next signal at once, maybe before the firer's
            // last store: it must be let in, not refused.
            match word.register(address, thread::yield_now) {
                SignalRegister::Registered => assert!(word.withdraw(address, thread::yield_now)),
                other => panic!("the waiter's next wait was {other:?}"),
            }
        }
        waiter.left.store(true, SeqCst);
        firer.join().unwrap();
        let still_set = word.try_take();
        assert!(got ^ still_set, "the signal was lost or taken twice (got {got}, still set {still_set})");
    });
}

#[test]
fn a_signal_reaches_a_blocked_waiter_once() {
    model(false, SignalWord::new, ADDRESS);
}

#[test]
fn a_signal_racing_a_deadline_is_taken_once_and_never_touches_a_gone_waiter() {
    model(true, SignalWord::new, ADDRESS);
}

#[test]
fn a_park_token_reaches_its_parked_strand_once() {
    model(false, SignalWord::<AtomicU8>::new_byte, SIGNAL_WAITING);
}

#[test]
fn a_park_token_racing_a_deadline_is_taken_once_and_never_touches_a_gone_strand() {
    model(true, SignalWord::<AtomicU8>::new_byte, SIGNAL_WAITING);
}

/// An async task's wait: every wake reaches it, so it either sees the
/// firer take its address (delivered) or, dropped first, leaves; with
/// `drop_early` it leaves at once, without looking, as a future dropped
/// mid-wait does. The signal is either delivered or still set, never both
/// and never neither, and the firer never touches the node after it left.
fn model_async(drop_early: bool) {
    const TAGGED: usize = ADDRESS | 4;
    loom::model(move || {
        let word = Arc::new(SignalWord::new());
        let left = Arc::new(AtomicBool::new(false));
        let firer = {
            let (word, left) = (word.clone(), left.clone());
            thread::spawn(move || {
                word.fire(|got_address| {
                    assert_eq!(got_address, TAGGED);
                    assert!(!left.load(SeqCst), "the firer touched a wait that had left");
                    true
                });
            })
        };
        let got = match word.register(TAGGED, thread::yield_now) {
            SignalRegister::Taken => true,
            SignalRegister::Occupied => unreachable!("one waiter"),
            SignalRegister::Registered if drop_early => word.leave_delivered(TAGGED, thread::yield_now),
            SignalRegister::Registered => {
                while word.still_waiting(TAGGED, thread::yield_now) {
                    thread::yield_now();
                }
                true
            }
        };
        left.store(true, SeqCst);
        firer.join().unwrap();
        let still_set = word.try_take();
        assert!(got ^ still_set, "the signal was lost or taken twice (got {got}, still set {still_set})");
    });
}

#[test]
fn a_signal_reaches_an_async_waiter_once() {
    model_async(false);
}

#[test]
fn a_signal_racing_a_dropped_async_wait_is_delivered_or_kept() {
    model_async(true);
}

/// A firer's wake of the waiting strand: it reaches it if it is blocked.
fn wake(waiter: &Waiter) -> bool {
    waiter.state.compare_exchange(BLOCKED, SIGNALLED, SeqCst, SeqCst).is_ok()
}

/// Firer A delivers to the waiter's first wait; firer B is started only
/// once the waiter has that signal, so B's is a new one, and the waiter's
/// second wait must get it, however late A's last store comes.
fn model_fire_during_delivery<W: StateWord + Send + Sync + 'static>(
    new: fn() -> SignalWord<W>,
    address: usize,
) {
    loom::model(move || {
        let word = Arc::new(new());
        let waiter = Arc::new(Waiter { state: AtomicU8::new(BLOCKED), left: AtomicBool::new(false) });
        let firer_a = {
            let (word, waiter) = (word.clone(), waiter.clone());
            thread::spawn(move || word.fire(|_| wake(&waiter)))
        };
        // One wait: blocked until a firer's wake, or the signal taken.
        let wait = || match word.register(address, thread::yield_now) {
            SignalRegister::Taken => {}
            SignalRegister::Occupied => unreachable!("one waiter"),
            SignalRegister::Registered => {
                while waiter.state.load(SeqCst) != SIGNALLED {
                    thread::yield_now();
                }
            }
        };
        wait();
        // Woken: blocked again for the next wait. B fires only now, while
        // A may still be finishing its delivery.
        waiter.state.store(BLOCKED, SeqCst);
        let firer_b = {
            let (word, waiter) = (word.clone(), waiter.clone());
            thread::spawn(move || word.fire(|_| wake(&waiter)))
        };
        wait();
        firer_a.join().unwrap();
        firer_b.join().unwrap();
        assert!(!word.try_take(), "two signals, two waits: nothing may be left over");
    });
}

#[test]
fn a_fire_during_a_delivery_reaches_the_next_wait() {
    model_fire_during_delivery(SignalWord::new, ADDRESS);
}

#[test]
fn a_park_token_raised_during_a_delivery_reaches_the_next_park() {
    model_fire_during_delivery(SignalWord::<AtomicU8>::new_byte, SIGNAL_WAITING);
}
