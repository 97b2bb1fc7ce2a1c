//! A hint per core that something may wait there for another core to take
//! ([`CoreHints`]): woken fibres in a core's mailboxes, tasks on its steal
//! list. An idle core reads the hints, a word of 64 cores at a time, and
//! looks only where one is raised, so its round costs a load per 64 cores
//! of the pool rather than a look at every core.
//!
//! # The protocol
//!
//! A hint sits over a set of lists (a receiver's fibre lists, a core's
//! steal list). Producers push onto the lists; takers take everything
//! from them.
//!
//! - A producer pushes, then reads the hint and raises it if low.
//! - A taker lowers the hint (if high), then takes.
//! - A thief that finds the hint low passes the lists over; one that finds
//!   it high takes as any taker does.
//!
//! **Guarantee:** once the producer's raise is done, whatever it pushed is
//! taken or lies under a high hint. So a low hint hides an item for no
//! longer than its producer takes to raise it.
//!
//! **Proof sketch.** A take of an empty list is only a load: on each side
//! a write (the push; the lowering) is followed by a read of what the
//! other side wrote (the hint; the list), the pattern in which each side
//! may miss the other's write unless all four accesses are `SeqCst`, which
//! they are (the lists' pushes and takes, and the hints' lowering, read
//! and raise). In their one total order, take a push that a taker's take
//! missed: it comes after that take, so after that taker's lowering, and
//! the producer's read of the hint, after its push, sees that lowering or
//! a later change: low, and it raises it, or raised again by another
//! producer. A later lowering by a taker is followed by that taker's own
//! take, which finds the item. The hint can also be high with nothing
//! waiting (taken after the raise): a thief then looks for nothing, as
//! every round did before the hints.
//!
//! The hints of 64 cores share a word, so raising and lowering are
//! read-modify-writes of one bit (`fetch_or`, `fetch_and`), which never
//! undo a neighbour's change as a plain store of the word would. Each is
//! preceded by a read, so that the common case (already high, already
//! low) writes nothing: a write would take the line from the cores that
//! read it.
//!
//! `tests/loom_core_hints.rs` checks the interleavings, with a neighbour
//! changing its own bit of the same word meanwhile (loom explores
//! schedules; the `SeqCst` argument above is what covers the weak-memory
//! case it does not).

use crate::atomics::AtomicU64;
use crate::atomics::CachePadded;
use crate::atomics::Ordering::{Relaxed, SeqCst};
use alloc::boxed::Box;

/// Cores per word.
const BITS: usize = 64;

/// One hint per core of a pool (module docs), each word of 64 on a cache
/// line of its own.
pub struct CoreHints {
    words: Box<[CachePadded<AtomicU64>]>,
}

impl CoreHints {
    /// Low hints for `cores` cores.
    pub fn new(cores: usize) -> Self {
        Self { words: (0..cores.div_ceil(BITS).max(1)).map(|_| CachePadded(AtomicU64::new(0))).collect() }
    }

    fn word_and_bit(&self, core: usize) -> (&AtomicU64, u64) {
        (&self.words[core / BITS].0, 1 << (core % BITS))
    }

    /// A producer pushed for `core`: raises its hint, if low.
    #[inline]
    pub fn raise(&self, core: usize) {
        let (word, bit) = self.word_and_bit(core);
        if word.load(SeqCst) & bit == 0 {
            word.fetch_or(bit, SeqCst);
        }
    }

    /// A taker is about to take `core`'s lists: lowers its hint, if high
    /// ([`CoreHints::lower_if_raised`], whose answer a taker that takes
    /// anyway does not need).
    #[inline]
    pub fn lower(&self, core: usize) {
        let _ = self.lower_if_raised(core);
    }

    /// A taker is about to take `core`'s lists: lowers its hint if high,
    /// and says whether it was. A taker told `false` may pass the lists
    /// over, as a thief that finds the hint low does (the guarantee in the
    /// module docs: what it would miss lies under a hint raised again).
    #[inline]
    pub fn lower_if_raised(&self, core: usize) -> bool {
        let (word, bit) = self.word_and_bit(core);
        let raised = word.load(SeqCst) & bit != 0;
        if raised {
            word.fetch_and(!bit, SeqCst);
        }
        raised
    }

    /// Whether `core`'s hint is raised: a receiver asking whether anything
    /// waits for it, and what the models and tests check (thieves walk
    /// [`CoreHints::raised_from`]). `SeqCst`, as a look at the lists was.
    #[inline]
    pub fn is_raised(&self, core: usize) -> bool {
        let (word, bit) = self.word_and_bit(core);
        word.load(SeqCst) & bit != 0
    }

    /// The cores whose hints are raised, from `start` (taken modulo the
    /// words' cores) on round to the core before it, reading each word
    /// once (`start`'s twice, its two parts).
    pub fn raised_from(&self, start: usize) -> Raised<'_> {
        let start = start % (self.words.len() * BITS);
        let mut raised = Raised { hints: self, first: start / BITS, bit: start % BITS, step: 0, bits: 0 };
        raised.bits = raised.load(0);
        raised
    }
}

/// The raised hints, in order from a start ([`CoreHints::raised_from`]).
pub struct Raised<'a> {
    hints: &'a CoreHints,
    /// The start's word, and its bit within it.
    first: usize,
    bit: usize,
    /// Words read so far, less one: the start's upper part is step 0, the
    /// other words follow, and the start's lower part is the last step.
    step: usize,
    /// What is left of the word being read.
    bits: u64,
}

impl Raised<'_> {
    fn words(&self) -> usize {
        self.hints.words.len()
    }

    /// The bits of step `step`.
    fn load(&self, step: usize) -> u64 {
        let word = (self.first + step) % self.words();
        let bits = self.hints.words[word].0.load(Relaxed);
        let upper = u64::MAX << self.bit;
        if step == 0 {
            bits & upper
        } else if step == self.words() {
            bits & !upper
        } else {
            bits
        }
    }
}

impl Iterator for Raised<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            if self.step == self.words() {
                return None;
            }
            self.step += 1;
            self.bits = self.load(self.step);
        }
        let bit = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some((self.first + self.step) % self.words() * BITS + bit)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn raised(hints: &CoreHints, start: usize) -> Vec<usize> {
        hints.raised_from(start).collect()
    }

    #[test]
    fn raised_hints_come_in_order_from_the_start_round_to_it() {
        let hints = CoreHints::new(200);
        for core in [0, 5, 63, 64, 130, 199] {
            hints.raise(core);
        }
        assert_eq!(raised(&hints, 0), [0, 5, 63, 64, 130, 199]);
        assert_eq!(raised(&hints, 6), [63, 64, 130, 199, 0, 5]);
        assert_eq!(raised(&hints, 64), [64, 130, 199, 0, 5, 63]);
        assert_eq!(raised(&hints, 131), [199, 0, 5, 63, 64, 130]);
        assert_eq!(raised(&hints, 199), [199, 0, 5, 63, 64, 130]);
        hints.lower(64);
        hints.lower(64);
        hints.lower(7);
        assert!(!hints.is_raised(64) && hints.is_raised(63));
        assert_eq!(raised(&hints, 64), [130, 199, 0, 5, 63]);
    }

    #[test]
    fn one_word_and_none_raised() {
        let hints = CoreHints::new(3);
        assert_eq!(raised(&hints, 2), [] as [usize; 0]);
        hints.raise(2);
        hints.raise(2);
        hints.raise(0);
        assert_eq!(raised(&hints, 1), [2, 0]);
        assert_eq!(raised(&hints, 2), [2, 0]);
        assert_eq!(raised(&hints, 0), [0, 2]);
    }
}
