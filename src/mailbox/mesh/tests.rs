//! The mesh's unit tests: reach, order and loss through every topology,
//! with threads as cores.

use super::stamps::{Ledger, stamped};
use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;

#[test]
fn every_core_reaches_every_other_in_at_most_its_link_count_of_hops() {
    let (small, large) = if cfg!(miri) { (12, &[257][..]) } else { (70, &[255, 256, 257, 1000, 1024][..]) };
    for cores in (1..=small).chain(large.iter().copied()) {
        let topology = Topology::new(cores);
        let links = topology.links();
        // The fewest doublings of one that reach the core count.
        assert_eq!(links, (0..).find(|&k| 1usize << k >= cores).unwrap(), "{cores} cores");
        let step = if cores > 100 { 37 } else { 1 };
        for from in (0..cores).step_by(step) {
            for to in (0..cores).step_by(step) {
                let hops = topology.hops(from, to);
                let distance = (to + cores - from) % cores;
                assert_eq!(hops, distance.count_ones() as usize, "{cores} cores: {from} to {to}");
                assert!(hops <= links);
            }
        }
    }
    // A ring: every hop is one core on.
    let ring = Topology::with_links(5, 1);
    assert_eq!((ring.links(), ring.hops(0, 4), ring.hops(3, 2)), (1, 4, 4));
}

/// Every core sends `each` messages to every other core, then all
/// drain in turn until nothing is left.
fn all_to_all_in_turns(topology: Topology, each: usize) -> DrainCounts {
    let cores = topology.cores();
    let mesh = Mesh::new(topology);
    let mut ledger = Ledger::new(cores);
    for seq in 0..each {
        for from in 0..cores {
            for to in (0..cores).filter(|&to| to != from) {
                // SAFETY: one thread plays every core in turn; the task is fresh.
                let _ = unsafe { mesh.send(from, to, stamped(from, to, seq)) }.expect("memory");
            }
        }
    }
    let mut total = DrainCounts::default();
    while !mesh.is_empty() {
        // SAFETY: this thread plays every core.
        total += unsafe { ledger.drain_each(&mesh) };
    }
    ledger.check(each * cores * (cores - 1), "all to all in turns");
    total
}

#[test]
fn messages_arrive_once_in_order_through_any_topology() {
    let all = [(2, 1), (3, 1), (4, 1), (4, 2), (8, 3), (13, 4), (16, 2)];
    let (topologies, each) = if cfg!(miri) { (&all[1..5], 2) } else { (&all[..], 20) };
    for &(cores, links) in topologies {
        let done = all_to_all_in_turns(Topology::with_links(cores, links), each);
        let topology = Topology::with_links(cores, links);
        let hops: usize = (0..cores)
            .flat_map(|from| (0..cores).map(move |to| (from, to)))
            .map(|(f, t)| topology.hops(f, t))
            .sum();
        // Each message is pushed once per hop: once by its sender, the
        // rest by the cores that forward it.
        assert_eq!(done.forwarded, each * (hops - cores * (cores - 1)), "{cores} cores, {links} links");
        if cores >= 3 && links == 1 {
            assert!(done.parcels_pushed < done.forwarded, "forwarded parcels were merged into batches");
        }
    }
}

/// Messages caught at every point of their routes (some cores have
/// drained, some not) are relayed once each, and each sender's come
/// out in the order it sent them.
#[test]
fn what_is_taken_out_in_transit_keeps_each_senders_order() {
    let (cores, each) = if cfg!(miri) { (5, 2) } else { (9, 6) };
    let mesh = Mesh::new(Topology::with_links(cores, 1));
    let mut ledger = Ledger::new(cores);
    let mut sent = 0;
    for seq in 0..each {
        for from in 0..cores {
            for to in (0..cores).filter(|&to| to != from) {
                // SAFETY: one thread plays every core in turn; the task is fresh.
                let _ = unsafe { mesh.send(from, to, stamped(from, to, seq)) }.expect("memory");
                sent += 1;
            }
        }
        // Between rounds, some cores drain: later messages queue
        // behind earlier ones at different points of the ring.
        for core in (0..cores).filter(|core| (core + seq) % 3 == 0) {
            // SAFETY: this thread plays every core.
            unsafe { mesh.drain(core, |task| ledger.receive(core, task), |_| {}) };
        }
    }
    // SAFETY: nothing else sends or drains.
    unsafe {
        mesh.empty_into(|to, queue| {
            core::iter::from_fn(|| queue.pop_front()).for_each(|task| ledger.receive(to, task))
        })
    };
    assert!(mesh.is_empty());
    ledger.check(sent, "taken out in transit");
}

#[test]
fn a_core_with_work_on_its_lists_does_not_arm() {
    let mesh = Mesh::new(Topology::with_links(3, 1));
    // SAFETY: one thread plays every core; fresh tasks.
    unsafe {
        assert_eq!(mesh.send(0, 2, stamped(0, 2, 0)), Ok(Sent::Queued));
        assert_eq!(mesh.send(0, 2, stamped(0, 2, 1)), Ok(Sent::Queued));
    }
    assert!(!mesh.arm(1), "parcels wait at the hop");
    assert!(mesh.arm(2));
    assert!(mesh.arm(2), "arming twice is harmless");
    let mut woken = Vec::new();
    // SAFETY: as above.
    let done = unsafe { mesh.drain(1, |_| unreachable!("nothing is for the hop"), |core| woken.push(core)) };
    assert_eq!(
        (done.forwarded, done.parcels_pushed, woken.as_slice()),
        (2, 1, &[2][..]),
        "one batch woke the receiver"
    );
    let mut ledger = Ledger::new(3);
    // SAFETY: as above.
    unsafe { mesh.drain(2, |task| ledger.receive(2, task), |_| {}) };
    ledger.check(2, "through the hop");
    assert_eq!(ledger.count(0, 2), 2);
}

#[test]
fn a_parcel_passes_sleeping_hops_without_waking_them() {
    // A ring of four: 0 to 3 goes through 1 and 2.
    let mesh = Mesh::new(Topology::with_links(4, 1));
    assert!(mesh.arm(1) && mesh.arm(2));
    // SAFETY: one thread plays every core; fresh tasks.
    unsafe {
        assert_eq!(mesh.send(0, 3, stamped(0, 3, 0)), Ok(Sent::Queued), "the receiver is awake");
        assert!(!mesh.has_work(1) && !mesh.has_work(2), "nothing stopped at the sleeping hops");
        assert!(mesh.arm(1) && mesh.arm(2), "and they still sleep");
        assert!(!mesh.arm(3), "the parcel is at the receiver");
    }
    let mut ledger = Ledger::new(4);
    // SAFETY: as above.
    unsafe { mesh.drain(3, |task| ledger.receive(3, task), |_| {}) };
    assert!(mesh.arm(3));
    // SAFETY: as above.
    unsafe {
        assert_eq!(mesh.send(0, 3, stamped(0, 3, 1)), Ok(Sent::Wake(3)), "only the receiver is woken");
        mesh.drain(3, |task| ledger.receive(3, task), |_| {});
    }
    ledger.check(2, "past two sleeping hops");
}

#[test]
fn a_forwarded_batch_passes_a_sleeping_hop_behind_what_went_before() {
    // A ring of four: 0 to 3 goes through 1 and 2.
    let mesh = Mesh::new(Topology::with_links(4, 1));
    let mut ledger = Ledger::new(4);
    let mut woken = Vec::new();
    // SAFETY: one thread plays every core; fresh tasks.
    unsafe {
        // The first goes to 2 the long way: 1 and 2 awake.
        assert_eq!(mesh.send(0, 3, stamped(0, 3, 0)), Ok(Sent::Queued));
        mesh.drain(1, |_| unreachable!(), |core| woken.push(core));
        // 1 sleeps: the second passes it and waits at 2 behind the first.
        assert!(mesh.arm(1));
        assert_eq!(mesh.send(0, 3, stamped(0, 3, 1)), Ok(Sent::Queued));
        assert_eq!(mesh.send(0, 2, stamped(0, 2, 0)), Ok(Sent::Queued));
        assert!(!mesh.has_work(1), "nothing stopped at the sleeping hop");
        // 3 sleeps: 2's batch for it wakes it, once.
        assert!(mesh.arm(3));
        let done = mesh.drain(2, |task| ledger.receive(2, task), |core| woken.push(core));
        assert_eq!((done.delivered, done.forwarded, done.parcels_pushed), (1, 2, 1), "one merged parcel");
        assert_eq!(woken, [3]);
        mesh.drain(3, |task| ledger.receive(3, task), |core| woken.push(core));
        woken.clear();
        // A batch from 1's drain that meets the sleeping 2 goes past it.
        let mesh = Mesh::new(Topology::with_links(4, 1));
        assert_eq!(mesh.send(0, 3, stamped(0, 3, 2)), Ok(Sent::Queued));
        assert_eq!(mesh.send(0, 2, stamped(0, 2, 1)), Ok(Sent::Queued));
        assert_eq!(mesh.send(0, 3, stamped(0, 3, 3)), Ok(Sent::Queued));
        assert!(mesh.arm(2));
        let done = mesh.drain(1, |_| unreachable!(), |core| woken.push(core));
        assert_eq!((done.forwarded, done.parcels_pushed), (3, 3), "three parcels, none merged");
        assert_eq!(woken, [2], "only the parcel for 2 woke it");
        mesh.drain(2, |task| ledger.receive(2, task), |core| woken.push(core));
        mesh.drain(3, |task| ledger.receive(3, task), |core| woken.push(core));
        assert_eq!(woken, [2]);
        assert!(mesh.is_empty());
    }
    ledger.check(6, "past sleeping hops");
}

/// One thread plays every core; cores drain in a scrambled order and arm
/// their lists whenever they find nothing, so parcels pass some hops and
/// stop at others, on every route.
#[test]
fn parcels_passing_sleeping_hops_keep_each_senders_order() {
    let (cores, each) = if cfg!(miri) { (5, 2) } else { (9, 12) };
    for links in [1, 2] {
        let mesh = Mesh::new(Topology::with_links(cores, links));
        let mut ledger = Ledger::new(cores);
        let mut sent = 0;
        let mut turn = 0u64;
        let mut scrambled = || {
            turn = turn.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (turn >> 33) as usize
        };
        for seq in 0..each {
            for from in 0..cores {
                for to in (0..cores).filter(|&to| to != from) {
                    // SAFETY: one thread plays every core in turn; the task is fresh.
                    let _ = unsafe { mesh.send(from, to, stamped(from, to, seq)) }.expect("memory");
                    sent += 1;
                }
                let core = scrambled() % cores;
                // SAFETY: as above.
                unsafe { mesh.drain(core, |task| ledger.receive(core, task), |_| {}) };
                if scrambled() % 2 == 0 {
                    let _ = mesh.arm(core);
                }
            }
        }
        while !mesh.is_empty() {
            // SAFETY: as above.
            unsafe { ledger.drain_each(&mesh) };
        }
        ledger.check(sent, &format!("{cores} cores, {links} links, hops passed"));
    }
}

/// One thread per core: every core sends to every other while draining,
/// and sleeps (on a doorbell, after arming its lists) when it has
/// nothing to do, until it has received everything sent to it.
#[test]
fn threads_as_cores_lose_nothing_with_forced_forwarding() {
    for cores in [2, 3, 4] {
        threads_as_cores(Topology::with_links(cores, 1), if cfg!(miri) { 3 } else { 2_000 });
    }
    threads_as_cores(Topology::new(8), if cfg!(miri) { 2 } else { 500 });
}

pub(super) fn threads_as_cores(topology: Topology, each: usize) {
    let cores = topology.cores();
    let mesh = Arc::new(Mesh::new(topology));
    let doorbells: Arc<Vec<AtomicBool>> = Arc::new((0..cores).map(|_| AtomicBool::new(false)).collect());
    let finished = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(cores));
    let threads: Vec<_> = (0..cores)
        .map(|me| {
            let (mesh, doorbells, finished, start) =
                (mesh.clone(), doorbells.clone(), finished.clone(), start.clone());
            thread::spawn(move || {
                let ring = |core: usize| {
                    doorbells[core].store(true, SeqCst);
                    thread::yield_now();
                };
                let mut ledger = Ledger::new(cores);
                let expected = each * (cores - 1);
                start.wait();
                let mut sent = 0;
                let mut done_counted = false;
                loop {
                    // Send a few, then look at the lists.
                    for _ in 0..3 {
                        if sent == each * (cores - 1) {
                            break;
                        }
                        let (seq, offset) = (sent / (cores - 1), sent % (cores - 1));
                        let to = (me + 1 + offset) % cores;
                        // SAFETY: this thread is core `me`; fresh task.
                        let pushed = unsafe { mesh.send(me, to, stamped(me, to, seq)) }.expect("memory");
                        if let Sent::Wake(core) = pushed {
                            ring(core);
                        }
                        sent += 1;
                    }
                    // SAFETY: as above.
                    unsafe { mesh.drain(me, |task| ledger.receive(me, task), ring) };
                    if ledger.received == expected && sent == each * (cores - 1) && !done_counted {
                        done_counted = true;
                        finished.fetch_add(1, SeqCst);
                    }
                    if finished.load(SeqCst) == cores && !mesh.has_work(me) {
                        break;
                    }
                    if sent == each * (cores - 1) && mesh.arm(me) {
                        // Asleep until rung; someone must ring if a push
                        // found our lists armed. Others finishing ring
                        // too, so nobody sleeps past the end.
                        let asleep = std::time::Instant::now();
                        while !doorbells[me].swap(false, SeqCst) {
                            if finished.load(SeqCst) == cores {
                                break;
                            }
                            assert!(
                                ledger.received == expected || asleep.elapsed().as_secs() < 60,
                                "core {me} of {cores} slept 60 s short of its messages: a wake-up was lost"
                            );
                            thread::yield_now();
                        }
                    }
                }
                (me, ledger)
            })
        })
        .collect();
    for thread in threads {
        let (me, ledger) = thread.join().expect("a core thread");
        ledger.check(each * (cores - 1), &format!("core {me} of {cores}"));
    }
    assert!(mesh.is_empty());
}
