//! How long interrupts stay masked, for `BENCHMARKS.md`: `benches/bare-metal`
//! runs this kernel under QEMU with `-icount shift=0,align=off,sleep=off`.
//! (The QEMU suite runs it once without `-icount`, to keep it working.)
//!
//! Work runs with interrupts open; only the short sections listed in
//! `docs/interrupts.md` mask them. This kernel turns on the kernel's timing
//! of those sections (`interrupts::measure_masking`) and runs one kind of
//! work per phase, then prints the longest section and the longest
//! handler any core saw in it, in cycles of the core's counter (under
//! `-icount shift=0`, instructions; with several cores running, the other
//! cores' instructions count too, so those figures are upper bounds):
//!
//! - **strands**: 100 strands pass tokens around a ring of `bounded(1)`
//!   channels, 100 rounds (wait queues, fibres, mailboxes);
//! - **timers**: 200 strands sleep 1 ms, 5 times (the timer heap, idle
//!   waits with deadlines);
//! - **spawn**: waves of 100 strands spawned and joined (fibres, the heap,
//!   the strand tree);
//! - **actors**: two actors pass a message back and forth 10,000 times;
//! - **interrupts**: the test line fires 1,000 times, its handler waking a
//!   strand each time (outside posts from a handler, the controller).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::time::Duration;
use roving::actor::{Actor, ActorContext, Addr};
use roving::sync::{Signal, channel};
use roving::{Pool, platform, strand};
use roving_kernel::interrupts::{self, Handled};
use roving_kernel::{cores, println};
use roving_test_kernels::{TestLine, expected_cores, pass};

static WOKEN: Signal = Signal::new();

fn handler(_line: u32) -> Handled {
    if TestLine::new().quiet() {
        WOKEN.signal();
    }
    Handled::Yes
}

fn main() {
    assert_eq!(platform::core_count(), expected_cores());
    let test = TestLine::new();
    interrupts::bind(test.line, 0, handler).expect("binding the test line");
    println!(
        "masked: per phase, the longest masked section and the longest handler on any of {} cores, in cycles of the core's counter",
        platform::core_count()
    );
    Pool::new()
        .expect("a pool")
        .run(|| {
            phase("strands", ring);
            phase("timers", timers);
            phase("spawn", spawn);
            phase("actors", actors);
            phase("interrupts", move || fire(test));
        })
        .expect("the pool runs");
    interrupts::measure_masking(false);
    pass("masked");
}

/// Runs `work` with timing on (and cleared), then prints the longest
/// section and handler.
fn phase(name: &str, work: impl FnOnce()) {
    interrupts::measure_masking(true);
    work();
    let (masked, handler) = (0..cores::count())
        .filter_map(cores::report)
        .fold((0, 0), |(m, h), report| (m.max(report.longest_masked), h.max(report.longest_handler)));
    println!("masked: {name}: longest masked section {masked}, longest handler {handler}");
}

fn ring() {
    const STRANDS: usize = 100;
    const ROUNDS: u64 = 100;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..STRANDS).map(|_| channel::bounded(1).unwrap()).unzip();
    let mut receivers: Vec<_> = receivers.into_iter().map(Some).collect();
    let strands: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(i, out)| {
            let input = receivers[(i + STRANDS - 1) % STRANDS].take().unwrap();
            strand::spawn(move || {
                if i == 0 {
                    out.send(0u64).unwrap();
                }
                for round in 0..ROUNDS {
                    let token = input.recv().unwrap();
                    // Strand 0 started the token, so it sends once less.
                    if i != 0 || round + 1 < ROUNDS {
                        out.send(token + 1).unwrap();
                    }
                }
            })
            .unwrap()
        })
        .collect();
    strands.into_iter().for_each(|s| s.join().unwrap());
}

fn timers() {
    let strands: Vec<_> = (0..200)
        .map(|_| {
            strand::spawn(|| {
                for _ in 0..5 {
                    strand::sleep(Duration::from_millis(1)).unwrap();
                }
            })
            .unwrap()
        })
        .collect();
    strands.into_iter().for_each(|s| s.join().unwrap());
}

fn spawn() {
    for wave in 0..10u64 {
        let sum: u64 =
            (0..100u64).map(|i| strand::spawn(move || wave + i).unwrap()).map(|s| s.join().unwrap()).sum();
        assert_eq!(sum, 100 * wave + 4950);
    }
}

/// Passes a count back and forth with its partner.
struct Player {
    partner: Option<Addr<Player>>,
    done: &'static Signal,
}

impl Actor for Player {
    type Message = (u32, Option<Addr<Player>>);
    fn handle(&mut self, (count, partner): Self::Message, _: &mut ActorContext<'_, Self>) {
        if let Some(partner) = partner {
            self.partner = Some(partner);
            return;
        }
        match (count, &self.partner) {
            (0, _) | (_, None) => {
                self.done.signal();
            }
            (count, Some(partner)) => partner.send((count - 1, None)).unwrap(),
        }
    }
}

fn actors() {
    static DONE: Signal = Signal::new();
    let pool = Pool::current().unwrap();
    let ping = pool.spawn_actor(Player { partner: None, done: &DONE });
    let pong = pool.spawn_actor(Player { partner: None, done: &DONE });
    ping.send((0, Some(pong.clone()))).unwrap();
    pong.send((0, Some(ping.clone()))).unwrap();
    ping.send((10_000, None)).unwrap();
    DONE.wait().unwrap();
    ping.stop();
    pong.stop();
}

fn fire(test: TestLine) {
    for _ in 0..1000 {
        test.fire();
        WOKEN.wait().unwrap();
    }
}

roving_kernel::entry!(main);
