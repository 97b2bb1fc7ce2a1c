//! The `log` facade on bare metal: every record is one whole line on the
//! console, tagged with its core, so lines from different cores never mix.
//!
//! The kernel installs it at boot, at the level `roving.log=<level>` names
//! on the command line (`error`, `warn`, `info`, `debug`, `trace` or
//! `off`; `info` when absent). roving's own diagnostics (a deadlock, a
//! pool's failure, work discarded when a pool stops) and the kernel's
//! (faults, panics, an interrupt storm, a device it could not set up) are
//! records, under the targets `roving` and `roving_kernel`; so are a
//! program's `log::info!` and the rest.
//!
//! An error goes out the way a fault report must: with interrupts masked,
//! and written beside the console's lock if its holder does not come back
//! (the console's emergency path). Before the logger is installed (early
//! boot) the kernel's reports take that path directly.

use crate::{console, cores};
use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering::Acquire, Ordering::Release};
use log::{Level, LevelFilter, Log, Metadata, Record};

struct Logger;

static LOGGER: Logger = Logger;
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the logger at `level` (the boot core, once the console is
/// open). Another logger installed first (by an embedding kernel) wins.
pub(crate) fn init(level: Option<&str>) {
    let filter = level.and_then(|name| name.parse::<LevelFilter>().ok()).unwrap_or(LevelFilter::Info);
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(filter);
        INSTALLED.store(true, Release);
    }
    if let Some(name) = level.filter(|name| name.parse::<LevelFilter>().is_err()) {
        log::warn!(target: "roving_kernel", "roving.log={name} is not a level; logging at info");
    }
}

/// Reports what must get out (a fault, a panic): as an error record once
/// the logger is installed, else straight to the console.
pub(crate) fn emergency(args: fmt::Arguments<'_>) {
    // Never filtered out: `roving.log=off` silences errors, not these.
    if INSTALLED.load(Acquire) && log::max_level() >= LevelFilter::Error {
        log::error!(target: "roving_kernel", "{args}");
    } else {
        console::emergency(format_args!("\n{args}\n"));
    }
}

/// The record's core, for its line.
struct Core(Option<usize>);

impl fmt::Display for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(index) => write!(f, "core {index}"),
            None => f.write_str("boot"),
        }
    }
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let core = Core(cores::current().map(|core| core.index));
        #[cfg(feature = "defmt")]
        {
            use defmt::Display2Format as Text;
            let (target, args) = (record.target(), record.args());
            match record.level() {
                // As in text mode, an error gets out past a stuck writer.
                Level::Error => {
                    console::urgently(|| defmt::error!("[{}] {=str}: {}", Text(&core), target, Text(args)));
                }
                Level::Warn => defmt::warn!("[{}] {=str}: {}", Text(&core), target, Text(args)),
                Level::Info => defmt::info!("[{}] {=str}: {}", Text(&core), target, Text(args)),
                Level::Debug => defmt::debug!("[{}] {=str}: {}", Text(&core), target, Text(args)),
                Level::Trace => defmt::trace!("[{}] {=str}: {}", Text(&core), target, Text(args)),
            }
        }
        #[cfg(not(feature = "defmt"))]
        {
            let line = format_args!("[{core}] {} {}: {}\n", record.level(), record.target(), record.args());
            if record.level() == Level::Error {
                console::emergency(line);
            } else {
                console::_print(line);
            }
        }
    }

    fn flush(&self) {}
}
