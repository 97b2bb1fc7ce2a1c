//! Every pool's strands, on demand or on a signal, without stopping the
//! process (as a Go program prints its goroutines on SIGQUIT).
//!
//! [`dump_strands_on`] installs a handler for a signal of the caller's
//! choosing. The handler only writes a byte into a pipe, which is safe in a
//! signal handler; a thread of its own reads the pipe and writes
//! [`dump_all_strands`] to standard error, while every pool keeps running.
//! Each line is [`Pool::dump_strands`](crate::Pool::dump_strands)'s: a
//! snapshot of what the strand does, in the deadlock report's words.

use crate::pool::registry;
use std::fmt;
use std::io::Write;
use std::mem::MaybeUninit;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering::SeqCst};

/// Writes every live pool's [`dump_strands`](crate::Pool::dump_strands),
/// oldest pool first.
pub fn dump_all_strands(out: &mut impl fmt::Write) -> fmt::Result {
    let pools = registry::every_pool();
    writeln!(out, "roving: {} pools", pools.len())?;
    for pool in &pools {
        pool.dump_strands(out)?;
    }
    Ok(())
}

/// Why [`dump_strands_on`] could not install its handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpSignalError {
    /// The host platform uses this signal itself (`SIGSEGV` and `SIGBUS`
    /// for stack overflows, `SIGURG` for time slices).
    Reserved {
        /// The signal asked for.
        signal: i32,
    },
    /// The operating system refused: not a signal, or one that cannot be
    /// caught (`SIGKILL`, `SIGSTOP`).
    Refused {
        /// The signal asked for.
        signal: i32,
        /// The error number `sigaction` set.
        errno: i32,
    },
    /// The pipe from the handler to the dumping thread, or the thread,
    /// could not be made.
    NoPipe {
        /// The error number.
        errno: i32,
    },
}

error_messages! {
    impl DumpSignalError {
        Self::Reserved { signal } =>
            "signal {signal} is the host platform's own (stack overflows, time slices); choose another, such as SIGQUIT";
        Self::Refused { signal, errno } =>
            "the system refused a handler for signal {signal} (errno {errno}): not a signal that can be caught";
        Self::NoPipe { errno } => "no pipe or thread for the strand dump (errno {errno})";
    }
}

/// The pipe's write end, for the handler (-1 until made).
static WRITE_END: AtomicI32 = AtomicI32::new(-1);

/// From now on, each time the process receives `signal`, every live
/// pool's strands are written to standard error ([`dump_all_strands`]),
/// and the process goes on. Call it again for more signals; the same
/// signal twice is harmless.
///
/// ```no_run
/// roving::platform::host::dump_strands_on(libc::SIGQUIT).unwrap();
/// // kill -QUIT <pid> (or Ctrl-\ in the terminal) now prints every strand.
/// ```
///
/// # Errors
///
/// [`DumpSignalError`]: a signal the host platform uses, one the system
/// will not let a program catch, or no pipe or thread for the dump.
pub fn dump_strands_on(signal: i32) -> Result<(), DumpSignalError> {
    if [libc::SIGSEGV, libc::SIGBUS, libc::SIGURG].contains(&signal) {
        return Err(DumpSignalError::Reserved { signal });
    }
    static STARTED: OnceLock<Result<(), i32>> = OnceLock::new();
    STARTED.get_or_init(start_dumper).map_err(|errno| DumpSignalError::NoPipe { errno })?;
    // SAFETY: a zeroed `sigaction` is a valid value to fill in.
    let mut action: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
    action.sa_sigaction = on_dump_signal as *const () as usize;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: a valid action; the handler is async-signal-safe (an atomic
    // load and a `write`, with errno kept).
    if unsafe { libc::sigaction(signal, &action, core::ptr::null_mut()) } != 0 {
        return Err(DumpSignalError::Refused { signal, errno: errno() });
    }
    Ok(())
}

/// Makes the pipe and starts the thread that dumps when a byte arrives.
fn start_dumper() -> Result<(), i32> {
    let mut ends = [0; 2];
    // SAFETY: `ends` has room for the two descriptors.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno());
    }
    let [read_end, write_end] = ends;
    // The handler must never block: a full pipe already asks for a dump.
    // SAFETY: a descriptor just made.
    unsafe { libc::fcntl(write_end, libc::F_SETFL, libc::O_NONBLOCK) };
    std::thread::Builder::new()
        .name("roving-dump".into())
        .spawn(move || {
            let mut byte = [0u8; 64];
            // SAFETY: reads into a buffer of that length from our pipe.
            while unsafe { libc::read(read_end, byte.as_mut_ptr().cast(), byte.len()) } > 0 {
                let mut text = String::new();
                let _ = dump_all_strands(&mut text);
                let _ = std::io::stderr().lock().write_all(text.as_bytes());
            }
        })
        .map_err(|error| error.raw_os_error().unwrap_or(0))?;
    WRITE_END.store(write_end, SeqCst);
    Ok(())
}

extern "C" fn on_dump_signal(_signal: libc::c_int) {
    let saved = errno();
    let fd = WRITE_END.load(SeqCst);
    if fd >= 0 {
        // SAFETY: `write` is async-signal-safe; a one-byte buffer.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
    set_errno(saved);
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn set_errno(value: i32) {
    // SAFETY: the calling thread's errno location.
    unsafe { *libc::__errno_location() = value };
}
