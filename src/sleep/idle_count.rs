//! The count of idle cores, kept in one word per group of cores rather
//! than in the pool's one counters word.
//!
//! Counting a spell in and out is the commonest write of the sleep
//! protocol: a busy pool's cores run out of work and find more many times
//! a millisecond. In one word, every such write moves that word's cache
//! line away from all the cores that read it (each reads it after every
//! task), so its traffic grows with the square of the core count. Split by
//! group, a spell writes a line shared by its group's cores only.
//!
//! # Who reads it, and why a split count is enough
//!
//! - A core deciding whether to offer work (after each task) reads its own
//!   group's word: any idle core there can take an offer. Idle cores of
//!   other groups show up in the pool's counters word once they get
//!   sleepy or sleep (`super::SleepState::anyone_idle`).
//! - A waker that found sleepers ([`super::SleepState::new_jobs`]) adds up the
//!   groups, its own first, until it has counted enough idle cores to
//!   leave the sleepers alone, or has read every group.
//!
//! The words are read one at a time, so the total is not a snapshot, but
//! each core adds at most one to it, at the moment its group's word is
//! read. That is all the proof of no lost wake-up in `super` needs: when
//! every core has counted itself asleep before the announcement, the
//! sleeping count the announcement reads is the number of cores, and no
//! sum of idle counts exceeds it, so the waker finds no idle core to rely
//! on and wakes one. Anywhere else the count is a hint: too high, and a
//! core that was idle when its group was read searches again after the
//! announcement (it is still searching, or found work and will search
//! once that is done); too low, and a sleeper is woken that was not
//! needed.

use crate::atomics::{AtomicU32, CachePadded, Ordering::SeqCst};
use alloc::boxed::Box;

/// Cores per idle-count word: a pool of at most this many cores keeps one.
pub const GROUP: usize = 16;

/// The idle cores of a pool, counted by group.
pub struct IdleCount {
    groups: Box<[CachePadded<AtomicU32>]>,
    /// Cores per group, as a shift: a core's group is found after every
    /// task, and a division there cost a dozen instructions on x86_64.
    shift: u32,
}

impl IdleCount {
    /// Counts for `cores` cores in groups of `group` (at least 1), rounded
    /// up to a power of two.
    pub fn new(cores: usize, group: usize) -> Self {
        let shift = group.max(1).next_power_of_two().trailing_zeros();
        Self {
            groups: (0..=(cores.max(1) - 1) >> shift).map(|_| CachePadded(AtomicU32::new(0))).collect(),
            shift,
        }
    }

    fn of(&self, core: usize) -> &AtomicU32 {
        &self.groups[core >> self.shift]
    }

    /// `core` counts itself idle.
    pub fn add(&self, core: usize) {
        self.of(core).fetch_add(1, SeqCst);
    }

    /// `core`, counted idle until now, found work.
    pub fn sub(&self, core: usize) {
        self.of(core).fetch_sub(1, SeqCst);
    }

    /// Whether there is more than one group.
    pub fn has_groups(&self) -> bool {
        self.groups.len() > 1
    }

    /// Idle cores in `core`'s group.
    pub fn in_group_of(&self, core: usize) -> usize {
        self.of(core).load(SeqCst) as usize
    }

    /// Idle cores, the group of `start` first, until `enough` are found:
    /// returns the count, or `enough` or more if it stopped early.
    pub fn up_to(&self, start: usize, enough: usize) -> usize {
        let groups = self.groups.len();
        let first = (start >> self.shift) % groups;
        let mut idle = 0;
        for offset in 0..groups {
            idle += self.groups[(first + offset) % groups].load(SeqCst) as usize;
            if idle >= enough {
                break;
            }
        }
        idle
    }
}
