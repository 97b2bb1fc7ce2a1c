//! A bounded multi-producer, multi-consumer channel for strands.
//!
//! ```
//! use roving::{Pool, platform::host::Machine, strand, sync::channel};
//!
//! Machine::new(2).unwrap().run(|| {
//!     let total = Pool::new().unwrap().run(|| {
//!         let (tx, rx) = channel::bounded::<u32>(4).unwrap();
//!         let producer = strand::spawn(move || for i in 0..100 { tx.send(i).unwrap(); }).unwrap();
//!         let mut total = 0;
//!         while let Ok(value) = rx.recv() {
//!             total += value;
//!         }
//!         producer.join().unwrap();
//!         total
//!     });
//!     assert_eq!(total.unwrap(), 4950);
//! }).unwrap();
//! ```

mod wait_async;

use super::WaitError;
use crate::platform::instant::Instant;
use crate::spin_lock::SpinLock;
use crate::strand::BlockReason;
use crate::strand::wait::{self, WaitQueue};
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;
pub use wait_async::{RecvFuture, SendFuture};

struct State<T> {
    buffer: VecDeque<T>,
    capacity: usize,
    senders: usize,
    receivers: usize,
    blocked_senders: WaitQueue,
    blocked_receivers: WaitQueue,
}

struct Channel<T> {
    state: SpinLock<State<T>>,
}

/// The sending half; clone it for more producers.
pub struct Sender<T> {
    channel: Arc<Channel<T>>,
}

/// The receiving half; clone it for more consumers.
pub struct Receiver<T> {
    channel: Arc<Channel<T>>,
}

/// Why a channel could not be made.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelError {
    /// A bounded channel needs room for at least one value.
    ZeroCapacity,
    /// No memory for the buffer.
    OutOfMemory,
}

error_messages! {
    impl ChannelError {
        Self::ZeroCapacity => "a bounded channel needs a capacity of at least 1";
        Self::OutOfMemory => "no memory for the channel's buffer";
    }
}

/// A value that was not sent, and why; the value comes back.
#[derive(PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError<T> {
    /// Every receiver is gone.
    Disconnected(T),
    /// The buffer is full (only from [`Sender::try_send`]).
    Full(T),
    /// The deadline passed with the buffer still full.
    TimedOut(T),
    /// The buffer is full and the caller cannot block.
    NotAStrand(T),
    /// No memory to record the deadline.
    OutOfMemory(T),
    /// The sending strand was cancelled while it waited for room.
    Interrupted(T),
}

impl<T> SendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            Self::Disconnected(v)
            | Self::Full(v)
            | Self::TimedOut(v)
            | Self::NotAStrand(v)
            | Self::OutOfMemory(v)
            | Self::Interrupted(v) => v,
        }
    }

    fn from_wait(error: WaitError, value: T) -> Self {
        match error {
            WaitError::TimedOut => Self::TimedOut(value),
            WaitError::OutOfMemory => Self::OutOfMemory(value),
            WaitError::Interrupted => Self::Interrupted(value),
            _ => Self::NotAStrand(value),
        }
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::Disconnected(_) => "Disconnected",
            Self::Full(_) => "Full",
            Self::TimedOut(_) => "TimedOut",
            Self::NotAStrand(_) => "NotAStrand",
            Self::OutOfMemory(_) => "OutOfMemory",
            Self::Interrupted(_) => "Interrupted",
        };
        write!(f, "{name}(..)")
    }
}

error_messages! {
    impl<T> SendError<T> {
        Self::Disconnected(_) => "every receiver is gone; the value was not sent";
        Self::Full(_) => "the channel is full; the value was not sent";
        Self::TimedOut(_) => "the channel stayed full until the deadline; the value was not sent";
        Self::NotAStrand(_) => "the channel is full and only a strand can wait; use try_send";
        Self::OutOfMemory(_) => "no memory to record the deadline; the value was not sent";
        Self::Interrupted(_) => "the strand was cancelled while waiting for room; the value was not sent";
    }
}

/// Why no value was received.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecvError {
    /// Every sender is gone and the buffer is empty.
    Disconnected,
    /// The buffer is empty (only from [`Receiver::try_recv`]).
    Empty,
    /// The deadline passed with the buffer still empty.
    TimedOut,
    /// The buffer is empty and the caller cannot block.
    NotAStrand,
    /// No memory to record the deadline.
    OutOfMemory,
    /// The receiving strand was cancelled while it waited.
    Interrupted,
}

impl RecvError {
    fn from_wait(error: WaitError) -> Self {
        match error {
            WaitError::TimedOut => Self::TimedOut,
            WaitError::OutOfMemory => Self::OutOfMemory,
            WaitError::Interrupted => Self::Interrupted,
            _ => Self::NotAStrand,
        }
    }
}

error_messages! {
    impl RecvError {
        Self::Disconnected => "every sender is gone and the channel is empty";
        Self::Empty => "the channel is empty";
        Self::TimedOut => "the channel stayed empty until the deadline";
        Self::NotAStrand => "the channel is empty and only a strand can wait; use try_recv";
        Self::OutOfMemory => "no memory to record the deadline";
        Self::Interrupted => "the strand was cancelled while waiting for a value";
    }
}

/// A channel holding up to `capacity` values. Sending into a full channel
/// blocks the sending strand; receiving from an empty one blocks the
/// receiver. Values from one sender arrive in the order sent.
///
/// # Errors
///
/// [`ChannelError::ZeroCapacity`] or [`ChannelError::OutOfMemory`].
pub fn bounded<T: Send>(capacity: usize) -> Result<(Sender<T>, Receiver<T>), ChannelError> {
    if capacity == 0 {
        return Err(ChannelError::ZeroCapacity);
    }
    let mut buffer = VecDeque::new();
    buffer.try_reserve_exact(capacity).map_err(|_| ChannelError::OutOfMemory)?;
    let channel = Arc::new(Channel {
        state: SpinLock::new(State {
            buffer,
            capacity,
            senders: 1,
            receivers: 1,
            blocked_senders: WaitQueue::new(),
            blocked_receivers: WaitQueue::new(),
        }),
    });
    Ok((Sender { channel: channel.clone() }, Receiver { channel }))
}

impl<T: Send> Sender<T> {
    /// Sends `value`, blocking the strand while the channel is full.
    ///
    /// # Errors
    ///
    /// [`SendError::Disconnected`] or [`SendError::NotAStrand`], with the
    /// value; [`SendError::Interrupted`], with the value, if the strand is
    /// cancelled while it waits for room. A cancel reaches only a send that
    /// blocks: one that finds room succeeds in a cancelled strand, and one
    /// whose receivers are gone reports `Disconnected` even then.
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.send_until(value, None)
    }

    /// Sends `value`, giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`SendError::TimedOut`]; otherwise as for [`Sender::send`].
    pub fn send_timeout(&self, value: T, timeout: Duration) -> Result<(), SendError<T>> {
        self.send_until(value, Some(super::deadline_after(timeout)))
    }

    /// Sends `value` if there is room; never blocks.
    ///
    /// **Interrupt-safe:** the buffer was reserved when the channel was
    /// made, so this never allocates, and its lock masks interrupts: a
    /// handler may hand a value to a strand this way.
    ///
    /// # Errors
    ///
    /// [`SendError::Full`] or [`SendError::Disconnected`], with the value.
    pub fn try_send(&self, value: T) -> Result<(), SendError<T>> {
        let mut state = self.channel.state.lock();
        if state.receivers == 0 {
            return Err(SendError::Disconnected(value));
        }
        if state.buffer.len() >= state.capacity {
            return Err(SendError::Full(value));
        }
        state.buffer.push_back(value);
        state.blocked_receivers.wake_one();
        Ok(())
    }

    fn send_until(&self, mut value: T, deadline: Option<Instant>) -> Result<(), SendError<T>> {
        crate::platform::refuse_in_handler(
            "Sender::send",
            "a handler must not wait; Sender::try_send hands the value over, or gives it back if the channel is full",
        );
        loop {
            match self.try_send(value) {
                Err(SendError::Full(back)) => value = back,
                other => return other,
            }
            let waited = wait::wait_in(
                &self.channel.state,
                BlockReason::ChannelSend,
                deadline,
                |state| &mut state.blocked_senders,
                |state| state.receivers == 0 || state.buffer.len() < state.capacity,
            );
            if let Err(error) = waited {
                return Err(SendError::from_wait(error, value));
            }
        }
    }
}

impl<T: Send> Receiver<T> {
    /// Receives a value, blocking the strand while the channel is empty.
    ///
    /// # Errors
    ///
    /// [`RecvError::Disconnected`] once every sender is gone and the buffer
    /// is drained; [`RecvError::NotAStrand`]; [`RecvError::Interrupted`]
    /// if the strand is cancelled while it waits for a value. A cancel
    /// reaches only a receive that blocks: a value already buffered is
    /// returned in a cancelled strand, and a cancelled strand whose senders
    /// all ended first sees `Disconnected`, not `Interrupted`. A cancel
    /// that comes at the same moment as a value or the last sender's
    /// leaving loses to them: the strand gets the value or `Disconnected`.
    pub fn recv(&self) -> Result<T, RecvError> {
        self.recv_until(None)
    }

    /// Receives a value, giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`RecvError::TimedOut`]; otherwise as for [`Receiver::recv`].
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvError> {
        self.recv_until(Some(super::deadline_after(timeout)))
    }

    /// Receives a value if one is there; never blocks.
    ///
    /// # Errors
    ///
    /// [`RecvError::Empty`] or [`RecvError::Disconnected`].
    pub fn try_recv(&self) -> Result<T, RecvError> {
        let mut state = self.channel.state.lock();
        match state.buffer.pop_front() {
            Some(value) => {
                state.blocked_senders.wake_one();
                Ok(value)
            }
            None if state.senders == 0 => Err(RecvError::Disconnected),
            None => Err(RecvError::Empty),
        }
    }

    fn recv_until(&self, deadline: Option<Instant>) -> Result<T, RecvError> {
        crate::platform::refuse_in_handler("Receiver::recv", crate::platform::HANDLERS_WAKE);
        loop {
            match self.try_recv() {
                Err(RecvError::Empty) => {}
                other => return other,
            }
            let waited = wait::wait_in(
                &self.channel.state,
                BlockReason::ChannelReceive,
                deadline,
                |state| &mut state.blocked_receivers,
                |state| state.senders == 0 || !state.buffer.is_empty(),
            );
            if let Err(error) = waited {
                // Cancelled (or out of time) as a value came or the last
                // sender left: what happened to the channel is the answer.
                return match self.try_recv() {
                    Err(RecvError::Empty) => Err(RecvError::from_wait(error)),
                    settled => settled,
                };
            }
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.channel.state.lock().senders += 1;
        Self { channel: self.channel.clone() }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.channel.state.lock().receivers += 1;
        Self { channel: self.channel.clone() }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.channel.state.lock();
        state.senders -= 1;
        if state.senders == 0 {
            state.blocked_receivers.wake_all();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = self.channel.state.lock();
        state.receivers -= 1;
        if state.receivers == 0 {
            state.blocked_senders.wake_all();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sender { .. }")
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Receiver { .. }")
    }
}
