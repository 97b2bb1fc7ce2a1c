//! What one core saw in other cores' LIFO slots, so that it steals only a
//! task that sat there since its previous look (`super::lifo`).
//!
//! A core looks at no more than [`WINDOW`] slots at a time, and at each
//! window twice before it moves on: once to note what is there, once to
//! take what has not moved. Its memory and the cost of one look stay
//! bounded however many cores the pool has (16 words, not one per core),
//! and a pool of up to `WINDOW + 1` cores is watched whole at every look.
//! (An idle core looks once per search round, 32 rounds before it
//! sleeps: with a window of 64 the looks were a fifth of a core's way to
//! sleep at 64 cores, BENCHMARKS.md.)
//! On a larger pool a slot is looked at by a given core once every few
//! windows; the other idle cores look at it meanwhile, each from its own
//! place, so a task left in a busy core's slot is still found.

use alloc::boxed::Box;
use core::ptr::NonNull;

/// The most slots one look covers.
pub(crate) const WINDOW: usize = 16;

/// One core's view of the others' LIFO slots (module docs).
pub(crate) struct LifoWatch {
    /// By position in the window: the task seen there (its address), or 0.
    seen: Box<[usize]>,
    /// Where the window starts, counted from the core after this one.
    offset: usize,
    /// Looks at the current window so far.
    looks: u32,
}

impl LifoWatch {
    /// A watch for a core of a pool of `cores` cores.
    pub(crate) fn new(cores: usize) -> Self {
        Self {
            seen: alloc::vec![0; cores.saturating_sub(1).clamp(1, WINDOW)].into_boxed_slice(),
            offset: 0,
            looks: 0,
        }
    }

    /// One look by core `me` of a pool of `cores`: for each slot of the
    /// window, `peek` says what it holds; returns the first task that was
    /// there on the previous look too, if `steal` takes it, with the core
    /// it came from.
    pub(crate) fn look<T>(
        &mut self,
        me: usize,
        cores: usize,
        peek: impl Fn(usize) -> Option<NonNull<T>>,
        steal: impl Fn(usize, NonNull<T>) -> Option<NonNull<T>>,
    ) -> Option<(usize, NonNull<T>)> {
        let width = self.seen.len();
        let first = me + 1 + self.offset;
        if cores - 1 > width {
            self.looks += 1;
            if self.looks == 2 {
                self.looks = 0;
                self.offset = (self.offset + width) % cores;
            }
        }
        for (position, seen) in self.seen.iter_mut().enumerate() {
            let victim = (first + position) % cores;
            if victim == me {
                continue;
            }
            let now = peek(victim);
            let before = core::mem::replace(seen, now.map_or(0, |task| task.as_ptr() as usize));
            if let Some(task) = now
                && task.as_ptr() as usize == before
                && let Some(task) = steal(victim, task)
            {
                *seen = 0;
                return Some((victim, task));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Looks by core `me` until it steals the one task sitting in `victim`'s
    /// slot; returns how many looks that took.
    fn looks_until_stolen(cores: usize, me: usize, victim: usize) -> usize {
        let task = NonNull::<u64>::dangling();
        let mut watch = LifoWatch::new(cores);
        for looks in 1..=4 * cores {
            let peek = |core: usize| (core == victim).then_some(task);
            if watch.look(me, cores, peek, |_, task| Some(task)).is_some() {
                return looks;
            }
        }
        panic!("core {me} of {cores} never took the task in core {victim}'s slot");
    }

    #[test]
    fn a_small_pool_is_watched_whole_and_a_task_is_taken_on_the_second_look() {
        for cores in [2, 3, 9, WINDOW, WINDOW + 1] {
            for victim in 1..cores {
                assert_eq!(looks_until_stolen(cores, 0, victim), 2, "{cores} cores, victim {victim}");
            }
        }
    }

    #[test]
    fn a_large_pool_is_watched_a_window_at_a_time() {
        let cores = 300;
        assert_eq!(LifoWatch::new(cores).seen.len(), WINDOW);
        for victim in [1, 64, 65, 200, 299] {
            let looks = looks_until_stolen(cores, 7, victim);
            // Two looks per window, one window after another.
            assert!(looks >= 2 && looks <= 2 * cores.div_ceil(WINDOW) + 2, "victim {victim}: {looks} looks");
        }
        // Nothing is taken that was not there on the look before.
        let mut watch = LifoWatch::new(cores);
        let task = NonNull::<u64>::dangling();
        assert!(watch.look(7, cores, |core| (core == 8).then_some(task), |_, task| Some(task)).is_none());
    }
}
