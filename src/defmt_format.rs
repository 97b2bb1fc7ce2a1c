//! With feature `defmt`, every public error type is `defmt::Format`, so
//! firmware that logs with defmt can log roving's errors.
//!
//! Errors of plain values derive it, where they are defined: their
//! variants and fields go over the wire as data and are formatted on the
//! host. Errors that carry the caller's rejected work (a closure, a future,
//! a message, a handle), a failure's message or a deadlock report are
//! formatted as their `Display` text on the device; the rejected work is
//! never printed.

/// `defmt::Format` through `Display`, for the types listed.
macro_rules! format_as_display {
    ($($ty:ident $(<$param:ident>)?),* $(,)?) => {
        $(
            impl$(<$param>)? defmt::Format for $ty$(<$param>)? {
                fn format(&self, f: defmt::Formatter<'_>) {
                    defmt::write!(f, "{}", defmt::Display2Format(self));
                }
            }
        )*
    };
}

use crate::actor::{EndWaitError, InterruptSendError, InterruptSenderError};
use crate::domain::DomainError;
use crate::executor::TaskError;
use crate::future::FutureError;
use crate::platform::{StartCoreError, UnknownCore};
use crate::pool::{DeliveryError, PinError, PoolError, PostError, ResizeError, RunError};
use crate::strand::{CancelError, Failure, JoinError, ScopeError, SpawnError};
use crate::sync::channel::SendError as ChannelSendError;

format_as_display!(
    InterruptSendError<M>,
    EndWaitError,
    InterruptSenderError,
    DomainError<F>,
    TaskError,
    FutureError,
    StartCoreError,
    UnknownCore,
    PinError<T>,
    PoolError,
    PostError<F>,
    ResizeError,
    RunError,
    DeliveryError<M>,
    CancelError,
    Failure,
    JoinError<H>,
    ScopeError<F>,
    SpawnError<F>,
    ChannelSendError<T>,
);
