//! The token ring shared by the host tests (`tests/sync.rs`) and the QEMU
//! kernel `strands`. Only `core`, `alloc` and roving: it builds for bare
//! metal.
#![allow(dead_code)]

extern crate alloc;

use alloc::vec::Vec;
use roving::strand;
use roving::sync::channel;

/// `strands` strands in a ring, each holding one token: every round each
/// sends the token it holds to the next strand's channel and takes one from
/// its own. The token a strand gets in round `r` must be the one that
/// started `r + 1` places before it, having made `r` hops before: every
/// token arrives, in order per channel. Run from a strand; returns the
/// tokens received.
pub fn token_ring(strands: usize, rounds: usize) -> u64 {
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..strands).map(|_| channel::bounded::<(usize, usize)>(2).expect("memory for a channel")).unzip();
    let members: Vec<_> = receivers
        .into_iter()
        .enumerate()
        .map(|(i, rx)| {
            let tx = senders[(i + 1) % strands].clone();
            strand::spawn(move || {
                let mut held = (i, 0);
                for round in 0..rounds {
                    tx.send(held).expect("the next strand is alive");
                    let (origin, hops) = rx.recv().expect("the previous strand is alive");
                    let expected = (i + strands * rounds - (round + 1)) % strands;
                    assert_eq!((origin, hops), (expected, round), "strand {i}, round {round}: wrong token");
                    held = (origin, hops + 1);
                }
                rounds as u64
            })
            .expect("spawning a ring member")
        })
        .collect();
    drop(senders);
    members.into_iter().map(|m| m.join().expect("the caller is a strand")).sum()
}
