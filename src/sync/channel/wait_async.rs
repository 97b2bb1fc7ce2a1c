//! The channel's async forms: [`Sender::send_async`] and
//! [`Receiver::recv_async`], queued with the strands that wait on the same
//! channel.

use super::{Receiver, RecvError, SendError, Sender};
use crate::sync::task_wait::QueuedWait;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

impl<T: Send> Sender<T> {
    /// Sends `value`, waiting without blocking while the channel is full:
    /// the async form of [`Sender::send`], for a task. Senders that wait,
    /// strands and tasks alike, are woken in the order they came as room
    /// appears. Dropped before it sent, the future drops the value.
    ///
    /// The future resolves to [`SendError::Disconnected`], with the value,
    /// once every receiver is gone.
    pub fn send_async(&self, value: T) -> SendFuture<'_, T> {
        SendFuture { sender: self, value: Some(value), wait: QueuedWait::new() }
    }
}

impl<T: Send> Receiver<T> {
    /// Receives a value, waiting without blocking while the channel is
    /// empty: the async form of [`Receiver::recv`], for a task. Receivers
    /// that wait, strands and tasks alike, are woken in the order they came
    /// as values arrive; a task dropped after it was woken passes the wake
    /// on, so no value waits while a receiver does.
    ///
    /// The future resolves to [`RecvError::Disconnected`] once every sender
    /// is gone and the buffer is drained.
    pub fn recv_async(&self) -> RecvFuture<'_, T> {
        RecvFuture { receiver: self, wait: QueuedWait::new() }
    }
}

/// The future of [`Sender::send_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct SendFuture<'a, T> {
    sender: &'a Sender<T>,
    value: Option<T>,
    wait: QueuedWait,
}

/// The future of [`Receiver::recv_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct RecvFuture<'a, T> {
    receiver: &'a Receiver<T>,
    wait: QueuedWait,
}

impl<T: Send> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the wait is structurally pinned; `value` is not (it is
        // moved out, never pinned).
        let (sender, value, wait) = unsafe {
            let this = self.get_unchecked_mut();
            (this.sender, &mut this.value, Pin::new_unchecked(&mut this.wait))
        };
        wait.poll(
            &sender.channel.state,
            |state| &mut state.blocked_senders,
            context.waker(),
            |state, _| {
                let mut value = || value.take().expect("a SendFuture polled after it finished");
                if state.receivers == 0 {
                    return Some(Err(SendError::Disconnected(value())));
                }
                if state.buffer.len() >= state.capacity {
                    return None;
                }
                state.buffer.push_back(value());
                state.blocked_receivers.wake_one();
                Some(Ok(()))
            },
        )
    }
}

impl<T> Drop for SendFuture<'_, T> {
    fn drop(&mut self) {
        // Woken for room it did not use: the next sender may use it.
        self.wait.leave(
            &self.sender.channel.state,
            |state| &mut state.blocked_senders,
            |state| {
                state.blocked_senders.wake_one();
            },
        );
    }
}

impl<T: Send> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the wait is structurally pinned: never moved out.
        let (receiver, wait) = unsafe {
            let this = self.get_unchecked_mut();
            (this.receiver, Pin::new_unchecked(&mut this.wait))
        };
        wait.poll(
            &receiver.channel.state,
            |state| &mut state.blocked_receivers,
            context.waker(),
            |state, _| match state.buffer.pop_front() {
                Some(value) => {
                    state.blocked_senders.wake_one();
                    Some(Ok(value))
                }
                None if state.senders == 0 => Some(Err(RecvError::Disconnected)),
                None => None,
            },
        )
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        // Woken for a value it did not take: the next receiver may take it.
        self.wait.leave(
            &self.receiver.channel.state,
            |state| &mut state.blocked_receivers,
            |state| {
                state.blocked_receivers.wake_one();
            },
        );
    }
}
