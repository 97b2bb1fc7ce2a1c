//! Property tests against simple models: random operations, then every
//! result checked, with no loss, duplication or reordering within a
//! sender. (The mailbox list's own model test is in `src/mailbox/list.rs`.)
#![cfg(feature = "std")]

mod support;

use proptest::prelude::*;
use roving::sync::channel::{self, RecvError, SendError};
use roving::{platform, strand};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

#[derive(Clone, Debug)]
enum ChannelOp {
    TrySend(u32),
    TryRecv,
}

fn channel_op() -> impl Strategy<Value = ChannelOp> {
    prop_oneof![any::<u32>().prop_map(ChannelOp::TrySend), Just(ChannelOp::TryRecv)]
}

proptest! {
    #![proptest_config(config(256))]

    /// One thread's `try_send` and `try_recv` against a bounded queue.
    #[test]
    fn a_channel_behaves_as_a_bounded_queue(capacity in 1..5usize, ops in prop::collection::vec(channel_op(), 0..100)) {
        let (sender, receiver) = channel::bounded::<u32>(capacity).unwrap();
        let mut model = VecDeque::new();
        for op in ops {
            match op {
                ChannelOp::TrySend(value) => match sender.try_send(value) {
                    Ok(()) => {
                        prop_assert!(model.len() < capacity, "accepted past capacity");
                        model.push_back(value);
                    }
                    Err(SendError::Full(back)) => {
                        prop_assert_eq!(back, value, "a refused value comes back");
                        prop_assert_eq!(model.len(), capacity, "refused with room left");
                    }
                    Err(other) => prop_assert!(false, "unexpected {:?}", other),
                },
                ChannelOp::TryRecv => match receiver.try_recv() {
                    Ok(value) => prop_assert_eq!(Some(value), model.pop_front()),
                    Err(RecvError::Empty) => prop_assert!(model.is_empty(), "empty with values queued"),
                    Err(other) => prop_assert!(false, "unexpected {:?}", other),
                },
            }
        }
        drop(sender);
        let rest: Vec<u32> = std::iter::from_fn(|| receiver.try_recv().ok()).collect();
        prop_assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
        prop_assert_eq!(receiver.try_recv(), Err(RecvError::Disconnected));
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// Strands on several cores send through one channel with blocking
    /// sends; one strand receives. Each sender's values arrive once, in
    /// order, and none is lost.
    #[test]
    fn concurrent_senders_lose_nothing_and_keep_their_order(
        cores in 1..5usize,
        capacity in 1..4usize,
        counts in prop::collection::vec(0..150u32, 1..5),
    ) {
        let senders = counts.len();
        let received = support::on_pool(cores, move || {
            let (sender, receiver) = channel::bounded::<(usize, u32)>(capacity).unwrap();
            let handles: Vec<_> = counts
                .iter()
                .enumerate()
                .map(|(who, &count)| {
                    let sender = sender.clone();
                    strand::spawn(move || (0..count).for_each(|seq| sender.send((who, seq)).unwrap())).unwrap()
                })
                .collect();
            drop(sender);
            let received: Vec<_> = std::iter::from_fn(|| receiver.recv().ok()).collect();
            handles.into_iter().for_each(|handle| handle.join().unwrap());
            (received, counts)
        });
        let (received, counts) = received;
        let mut next = vec![0u32; senders];
        for (who, seq) in received {
            prop_assert_eq!(seq, next[who], "sender {}'s values out of order or repeated", who);
            next[who] += 1;
        }
        prop_assert_eq!(next, counts, "a value was lost");
    }

    /// Random posts from the root strand to chosen cores, and spawns: each
    /// runs exactly once, a post on the core it names, and the posts to
    /// each core run in the order they were made.
    #[test]
    fn posted_work_runs_once_where_it_was_sent_and_in_order(
        cores in 1..5usize,
        targets in prop::collection::vec(prop::option::of(0..4usize), 0..300),
    ) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        let targets_run = targets.clone();
        support::on_pool(cores, move || {
            for (id, target) in targets_run.into_iter().enumerate() {
                let log = log.clone();
                let record = move || log.lock().unwrap().push((id, platform::current_core()));
                match target {
                    Some(core) => roving::post(core % cores, record).unwrap(),
                    None => roving::spawn_task(record).unwrap(),
                }
            }
        });
        let log = kept.lock().unwrap();
        let mut seen = vec![false; targets.len()];
        let mut last_on = vec![None::<usize>; cores];
        for &(id, core) in log.iter() {
            prop_assert!(!seen[id], "task {} ran twice", id);
            seen[id] = true;
            if let Some(target) = targets[id] {
                let want = target % cores;
                prop_assert_eq!(core, Some(want), "task {} ran away from the core it was posted to", id);
                prop_assert!(last_on[want].is_none_or(|last| last < id), "posts to core {} ran out of order", want);
                last_on[want] = Some(id);
            }
        }
        prop_assert!(seen.iter().all(|&ran| ran), "a task never ran");
    }
}
