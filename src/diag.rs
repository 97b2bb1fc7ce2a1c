//! roving's own diagnostics (a deadlock found, a failure nobody handles,
//! work dropped when a pool stops) go through the `log` facade, under the
//! target `roving`, so whatever logger the program installs shows them:
//! `roving-kernel`'s writes whole lines on the console.
//!
//! On the host, while no logger is installed (`log`'s level is still
//! `Off`), warnings and errors go to standard error instead, so a test or
//! a program that never set one up still hears of them.

use core::fmt;

/// A diagnostic at `level`.
fn report(level: log::Level, args: fmt::Arguments<'_>) {
    #[cfg(feature = "std")]
    if log::max_level() == log::LevelFilter::Off {
        if level <= log::Level::Warn {
            std::eprintln!("roving: {args}");
        }
        return;
    }
    log::log!(target: "roving", level, "{args}");
}

/// Something went wrong that the program may not handle.
pub(crate) fn error(args: fmt::Arguments<'_>) {
    report(log::Level::Error, args);
}

/// Something the program should know went as it should not.
pub(crate) fn warn(args: fmt::Arguments<'_>) {
    report(log::Level::Warn, args);
}

/// One line of a pool's trace dump, under its own target (`roving_trace`)
/// so a logger can send it elsewhere; it is logged at `info`, and on the
/// host it is dropped while no logger is installed.
#[cfg(feature = "trace")]
pub(crate) fn trace_line(args: fmt::Arguments<'_>) {
    log::log!(target: "roving_trace", log::Level::Info, "{args}");
}

/// Worth a line in a log that someone reads.
pub(crate) fn info(args: fmt::Arguments<'_>) {
    report(log::Level::Info, args);
}
