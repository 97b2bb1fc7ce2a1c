//! A signal one strand waits for, set from anywhere, an interrupt handler
//! included.

mod wait_async;

use super::WaitError;
use crate::platform::instant::Instant;
pub use crate::protocol::signal_word::Register;
use crate::protocol::signal_word::{ASYNC, SignalWord};
use crate::strand::control::{Header, state};
use crate::strand::park::wait_on_word;
use crate::strand::{BlockReason, scheduler};
use core::ptr::NonNull;
use core::time::Duration;
pub use wait_async::SignalWait;

/// A flag that one strand at a time waits for, and that anyone may raise,
/// including an interrupt handler: the way a device's interrupt becomes a
/// running strand.
///
/// [`signal`](Signal::signal) raises it, or, if a strand waits, hands it
/// straight to that strand and makes it runnable. [`wait`](Signal::wait)
/// takes it, blocking the strand (not its core) until it is raised.
/// Signals raised while nobody takes them coalesce into one.
///
/// **Interrupt-safe:** [`signal`](Signal::signal), [`is_set`](Signal::is_set)
/// and [`try_take`](Signal::try_take) never allocate, never take a lock,
/// and never wait, so a handler may call them whatever it interrupted. The
/// woken strand's pool is reached through a mailbox, as from outside the
/// pool.
///
/// ```
/// use roving::{Pool, platform::host::Machine, sync::Signal};
/// use std::sync::Arc;
///
/// let machine = Machine::new(2).unwrap();
/// let outside = machine.clone();
/// machine.run(move || {
///     let pool = Pool::new().unwrap();
///     pool.run(|| {
///         let ready = Arc::new(Signal::new());
///         let device = ready.clone();
///         // Stands in for an interrupt handler: not a core of the pool,
///         // but a member of its machine, so it may wake the cores.
///         std::thread::spawn(move || {
///             let _member = outside.enter();
///             device.signal();
///         });
///         ready.wait().unwrap();
///     })
///     .unwrap();
/// })
/// .unwrap();
/// ```
pub struct Signal {
    word: SignalWord,
}

impl Signal {
    /// A signal that is not raised.
    pub const fn new() -> Self {
        Self { word: SignalWord::new() }
    }

    /// Raises the signal, or hands it to the waiting strand. Interrupt-safe.
    pub fn signal(&self) {
        self.word.fire(|address| {
            if address & ASYNC != 0 {
                return Self::wake_async(address);
            }
            // SAFETY: the word held the address of a strand blocked (or
            // about to block) in `wait`; it stays live while the word is
            // `BUSY`, which it is until `fire` returns.
            let strand = unsafe { NonNull::new_unchecked(address as *mut Header) };
            scheduler::signal(strand, state::SIGNALLED)
        });
    }

    /// Whether the signal is raised and not yet taken. Interrupt-safe.
    pub fn is_set(&self) -> bool {
        self.word.is_set()
    }

    /// Takes the signal if it is raised; returns whether it was.
    /// Interrupt-safe.
    pub fn try_take(&self) -> bool {
        self.word.try_take()
    }

    /// Blocks the calling strand until the signal is raised, and takes it.
    ///
    /// # Errors
    ///
    /// [`WaitError::Occupied`] if another strand waits for it;
    /// [`WaitError::NotAStrand`] if it is not raised and the caller cannot
    /// block; [`WaitError::Interrupted`] in a cancelled strand.
    pub fn wait(&self) -> Result<(), WaitError> {
        self.wait_until(None)
    }

    /// As [`Signal::wait`], giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`]; otherwise as for [`Signal::wait`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<(), WaitError> {
        self.wait_until(Some(super::deadline_after(timeout)))
    }

    fn wait_until(&self, deadline: Option<Instant>) -> Result<(), WaitError> {
        crate::platform::refuse_in_handler(
            "Signal::wait",
            "a handler must not wait; it takes the signal with Signal::try_take, or raises it with Signal::signal",
        );
        let on = core::ptr::from_ref(self).addr();
        wait_on_word(&self.word, BlockReason::Signal, on, deadline, |strand| strand.as_ptr().addr())
    }
}

impl Default for Signal {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for Signal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Signal").field("set", &self.is_set()).finish()
    }
}
