//! The host's dump of every strand on a signal (`dump_strands_on`): the
//! process gets SIGQUIT while a strand waits, writes each pool's strands
//! to standard error, and goes on. Alone in its binary: it points the
//! process's standard error at a pipe while it reads the dump.
#![cfg(all(feature = "std", target_os = "linux", not(miri)))]

mod support;

use roving::platform::host::{DumpSignalError, dump_all_strands, dump_strands_on};
use roving::strand;
use roving::sync::Event;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn signals_the_platform_uses_or_none_can_catch_are_refused() {
    assert_eq!(dump_strands_on(libc::SIGSEGV), Err(DumpSignalError::Reserved { signal: libc::SIGSEGV }));
    assert_eq!(dump_strands_on(libc::SIGURG), Err(DumpSignalError::Reserved { signal: libc::SIGURG }));
    let Err(DumpSignalError::Refused { signal, .. }) = dump_strands_on(libc::SIGKILL) else {
        panic!("SIGKILL cannot be caught")
    };
    assert_eq!(signal, libc::SIGKILL);
    assert!(matches!(dump_strands_on(100_000), Err(DumpSignalError::Refused { .. })));
}

/// Points standard error at a pipe for `f`, then restores it; returns what
/// was written, read until `until` appears (or 10 seconds pass).
fn capture_stderr(f: impl FnOnce(), until: &str) -> String {
    let mut ends = [0; 2];
    // SAFETY: room for two descriptors.
    assert_eq!(unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) }, 0);
    // SAFETY: plain descriptor calls on our own descriptors.
    let saved = unsafe { libc::dup(2) };
    // SAFETY: as above.
    unsafe { libc::dup2(ends[1], 2) };
    f();
    // SAFETY: the read end, owned from here on.
    let mut reader = unsafe { std::fs::File::from_raw_fd(ends[0]) };
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !text.contains(until) && Instant::now() < deadline {
        let mut buffer = [0u8; 4096];
        match reader.read(&mut buffer) {
            Ok(n) if n > 0 => text.push_str(&String::from_utf8_lossy(&buffer[..n])),
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    // SAFETY: restores standard error; closes the pipe's write end.
    unsafe {
        libc::dup2(saved, 2);
        libc::close(saved);
        libc::close(ends[1]);
    }
    text
}

#[test]
fn sigquit_prints_every_pools_strands_and_the_process_goes_on() {
    dump_strands_on(libc::SIGQUIT).expect("SIGQUIT can be caught");
    dump_strands_on(libc::SIGQUIT).expect("twice is harmless");
    support::run_pool(2, |here| {
        let go = Arc::new(Event::new());
        let waiting = go.clone();
        let child = strand::spawn(move || waiting.wait().expect("the event")).expect("a fibre");
        while here.strand_reports().iter().all(|strand| strand.waiting().is_none()) {
            strand::yield_now().expect("a strand");
        }
        let mut direct = String::new();
        dump_all_strands(&mut direct).expect("text");
        let line = format!("strand {} waits (Event)", child.id());
        assert!(direct.contains(&line), "{direct}");
        // SAFETY: raising a signal whose handler is installed.
        let dumped = capture_stderr(|| assert_eq!(unsafe { libc::raise(libc::SIGQUIT) }, 0), &line);
        assert!(dumped.contains("roving: ") && dumped.contains(" pools"), "{dumped}");
        assert!(dumped.contains(&line), "the dump on SIGQUIT lacks '{line}':\n{dumped}");
        go.set();
        child.join().expect("woken");
    })
    .expect("the pool runs");
}
