//! How every public error type of roving writes its message: one macro
//! that gives the type its `Display`, one message per variant (a format
//! string whose `{name}`s are the fields the pattern binds), and its
//! `Error`. Only `Failure`, whose message is assembled from parts, writes
//! its own.
//!
//! ```text
//! error_messages! {
//!     impl<F> PostError<F> {
//!         Self::Stopped(_) => "the pool has stopped; the closure was not queued";
//!         Self::NoSuchCore { core, cores, .. } => "no core {core}: core indices run 0..{cores}";
//!     }
//! }
//! ```

/// See the module documentation.
macro_rules! error_messages {
    ($(impl $(<$($generic:ident),+>)? $name:ident $(<$($argument_type:ident),+>)? {
        $($pattern:pat => $message:literal $(, $argument:expr)*;)+
    })+) => {
        $(
            impl $(<$($generic),+>)? core::fmt::Display for $name $(<$($argument_type),+>)? {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    match self {
                        $($pattern => write!(f, $message $(, $argument)*),)+
                    }
                }
            }

            impl $(<$($generic),+>)? core::error::Error for $name $(<$($argument_type),+>)? {}
        )+
    };
}
