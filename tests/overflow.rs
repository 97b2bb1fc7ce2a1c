//! Stack overflow on the host: every way of running off a fibre stack is
//! reported, naming the strand, and the process stops at once (SIGABRT)
//! instead of dying of a bare SIGSEGV or running on with a smashed
//! neighbour.
//!
//! Each case runs in a child process (this test binary run again with one
//! case named in the environment), because it ends that process.
#![cfg(all(feature = "std", unix, not(miri)))]

mod support;

use roving::Pool;
use roving::platform::host::Machine;
use roving::strand;
use std::hint::black_box;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

const CASE: &str = "ROVING_OVERFLOW_CASE";

/// Runs `case` in a child process and checks that it reported an overflow
/// of a strand's stack and aborted.
fn overflows(test: &str, case: &str, body: fn()) {
    if std::env::var(CASE).as_deref() == Ok(case) {
        body();
        panic!("the case returned instead of overflowing");
    }
    let mut child = Command::new(std::env::current_exe().unwrap());
    child.args(["--exact", test, "--nocapture", "--test-threads=1"]).env(CASE, case);
    // Under ThreadSanitizer (`make tsan`), a frame bigger than the stack
    // writes into the neighbouring fibre's stack, which another core's
    // thread used: a real race, which is what this case makes on purpose,
    // and the sanitizer would end the child with its own report (now and
    // then, as its history of that memory allows) before the overflow's.
    // What is checked here is roving's report and abort.
    #[cfg(roving_tsan)]
    child.env("TSAN_OPTIONS", "report_bugs=0 handle_segv=0");
    let output = child.output().expect("run the case in a child process");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.signal(),
        Some(libc_sigabrt()),
        "{case}: not aborted: {:?}\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains("roving: stack overflow: strand #") && stderr.contains("ran off the bottom of fibre"),
        "{case}: no report naming the strand:\n{stderr}"
    );
}

fn libc_sigabrt() -> i32 {
    6
}

/// Runs `main` as a pool's root strand on a thread with room for big
/// captures.
fn on_pool_big_thread(main: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            Machine::new(2).unwrap().run(|| Pool::new().unwrap().run(main).unwrap()).unwrap();
        })
        .unwrap()
        .join()
        .unwrap();
}

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 16]);
    if black_box(depth) == u64::MAX { frame[0] } else { recurse(depth + 1) + frame[3] }
}

#[test]
fn infinite_recursion_in_a_strand_is_reported() {
    overflows("infinite_recursion_in_a_strand_is_reported", "recursion", || {
        on_pool_big_thread(|| {
            let child = strand::spawn(|| recurse(0)).unwrap();
            let _ = child.join();
        });
    });
}

#[test]
fn a_frame_bigger_than_the_stack_is_reported() {
    overflows("a_frame_bigger_than_the_stack_is_reported", "big frame", || {
        on_pool_big_thread(|| {
            let child = strand::spawn(|| {
                let big = black_box([7u8; 96 * 1024]);
                big[black_box(5)] as u64
            })
            .unwrap();
            let _ = child.join();
        });
    });
}

#[test]
fn a_root_strand_with_a_huge_capture_is_reported() {
    overflows("a_root_strand_with_a_huge_capture_is_reported", "huge capture", || {
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(|| {
                let captured = black_box([3u8; 1 << 20]);
                Machine::new(2)
                    .unwrap()
                    .run(move || Pool::new().unwrap().run(move || black_box(&captured)[9]).unwrap())
                    .unwrap();
            })
            .unwrap()
            .join()
            .unwrap();
    });
}

#[test]
fn a_fault_outside_the_guard_pages_is_left_to_the_default_action() {
    const NOT_OURS: &str = "not ours";
    if std::env::var(CASE).as_deref() == Ok(NOT_OURS) {
        let _machine = Machine::new(1).unwrap(); // installs the handler
        // SAFETY: deliberately faults, to see who reports it.
        unsafe { std::ptr::write_volatile(16 as *mut u64, 1) };
        unreachable!();
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_fault_outside_the_guard_pages_is_left_to_the_default_action", "--nocapture"])
        .env(CASE, NOT_OURS)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.signal(), Some(11), "a stray fault is a SIGSEGV as before: {stderr}");
    assert!(!stderr.contains("roving: stack overflow"), "{stderr}");
}
