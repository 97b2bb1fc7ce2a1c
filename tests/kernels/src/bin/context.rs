//! The context switch on bare metal: every core ping-pongs 10,000 times
//! with a context on its own stack. Each side keeps integers and floats
//! live across every resume and suspend (which the compiler must then keep
//! in registers the switch preserves or spill around it: x19-x28 and
//! d8-d15 on AArch64; rbx, rbp, r12-r15 on x86_64, which is soft-float
//! there), and both sides' results must match the same computation done
//! without switching.
#![no_std]
#![no_main]

use core::cell::UnsafeCell;
use core::hint::black_box;
use core::time::Duration;
use roving::raw::context::{Context, resume, suspend};
use roving_kernel::MAX_CORES;
use roving_test_kernels::{on_every_core, pass};

const ROUNDS: u64 = 10_000;
const STACK: usize = 16 * 1024;

/// One core's rally: the two contexts, the other side's stack and results.
#[repr(C, align(16))]
struct Rally {
    stack: [u8; STACK],
    main: Context,
    other: Context,
    result: (u64, f64),
}

struct Rallies([UnsafeCell<Rally>; MAX_CORES]);

// SAFETY: core `i` touches only element `i`.
unsafe impl Sync for Rallies {}

static RALLIES: Rallies = Rallies(
    [const {
        UnsafeCell::new(Rally {
            stack: [0; STACK],
            main: Context::empty(),
            other: Context::empty(),
            result: (0, 0.0),
        })
    }; MAX_CORES],
);

/// The work both sides do per round, in integers and floats.
type State = ([u64; 8], [f64; 8]);

fn step(round: u64, (mut ints, mut floats): State) -> State {
    for value in &mut ints {
        *value = value.rotate_left(5) ^ round;
    }
    for value in &mut floats {
        *value = *value * 1.000_001 + 0.5;
    }
    (ints, floats)
}

fn start(seed: u64) -> State {
    (
        core::array::from_fn(|i| black_box(seed.wrapping_mul(i as u64 + 3))),
        core::array::from_fn(|i| black_box(seed as f64 / (i as f64 + 7.0))),
    )
}

fn fold((ints, floats): State) -> (u64, f64) {
    (ints.iter().fold(0, |sum, value| sum ^ value), floats.iter().sum())
}

/// What a side computes in `rounds` rounds from `seed` when nothing switches.
fn without_switching(seed: u64, rounds: u64) -> (u64, f64) {
    fold((0..rounds).fold(start(seed), |state, round| step(round, state)))
}

extern "C" fn other_side(argument: usize) -> ! {
    let rally = argument as *mut Rally;
    let mut state = start(0x5eed);
    for round in 0..ROUNDS {
        // SAFETY: the core's own rally; `main` records the resume waiting here.
        unsafe { suspend(&raw mut (*rally).other, &raw const (*rally).main) };
        state = step(round, state);
    }
    // SAFETY: read by the main side only after this context is suspended.
    unsafe { (*rally).result = fold(state) };
    loop {
        // SAFETY: as above.
        unsafe { suspend(&raw mut (*rally).other, &raw const (*rally).main) };
    }
}

fn rally_on(core: usize) {
    let rally = RALLIES.0[core].get();
    // SAFETY: this core's own stack, unused by anything else.
    unsafe {
        (*rally).other = Context::new((*rally).stack.as_mut_ptr().add(STACK), other_side, rally as usize)
    };
    let mut mine = start(core as u64 + 1);
    for round in 0..=ROUNDS {
        // SAFETY: `other` was made above or saved by its own suspend.
        unsafe { resume(&raw const (*rally).other, &raw mut (*rally).main) };
        mine = step(round, mine);
    }
    assert!(
        fold(mine) == without_switching(core as u64 + 1, ROUNDS + 1),
        "core {core}: this side's registers changed across a switch"
    );
    // SAFETY: the other context is suspended for good.
    let result = unsafe { (*rally).result };
    assert!(
        result == without_switching(0x5eed, ROUNDS),
        "core {core}: the other side's registers changed across a switch"
    );
}

fn main() {
    on_every_core(rally_on, Duration::from_secs(60));
    pass("context");
}

roving_kernel::entry!(main);
