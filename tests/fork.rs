//! A process that forks after compiling can compile in the child: the threads that prepare a
//! thread's first compile (`lower::ptx::prepare`) are done with LLVM when the compile returns,
//! whether it succeeded or failed in the front end, so the child inherits no lock held by a
//! thread it does not have, and it neither waits for those threads' channels nor for them at
//! exit. (Its own test binary: a fork copies only the forking thread, and other tests
//! compiling meanwhile could hold LLVM's locks.)

use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, Module};
use std::time::{Duration, Instant};

const SRC: &str = "from cuda import device\n\n@device.kernel\ndef add(a, b):\n    i = device.tid(1)\n    if i < len(a):\n        a[i] = a[i] + b[i]\n\n@device.kernel\ndef total(a, out):\n    s = 0.0\n    for j in range(len(a)):\n        s += a[j]\n    out[0] = s\n\n@device.kernel\ndef bad(a):\n    a[0] = undefined_name\n";

fn compile(entry: &str) -> bool {
    let module = Module::parse("fork.py", SRC).expect("parse");
    let (args, _) = parse_signature("float32[::1], float32[::1]").expect("signature");
    let (args, _) = if entry == "bad" {
        parse_signature("float32[::1]").expect("signature")
    } else {
        (args, Default::default())
    };
    module
        .compile(entry, &args, &CompileOptions::default())
        .is_ok_and(|k| k.ptx.contains(".entry"))
}

/// Forks; the child compiles both kernels and exits 0 if both compiled. Returns the child's
/// exit status, or `None` if it did not end within a minute (a deadlock).
fn child_compiles() -> Option<i32> {
    // SAFETY: the child only compiles and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = compile("add") && compile("total");
        // SAFETY: ends the child without running the parent's exit handlers twice.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let mut status = 0;
        // SAFETY: waits for our own child without blocking.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            return Some(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: ends the stuck child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    None
}

#[test]
fn a_child_forked_after_a_first_compile_compiles() {
    // A front-end error first (its set-up is settled before it returns), then a fork.
    assert!(!compile("bad"));
    assert_eq!(child_compiles(), Some(0));
    // A first successful compile on a fresh thread, then a fork from that thread.
    let status = std::thread::spawn(|| {
        assert!(compile("total"));
        child_compiles()
    })
    .join()
    .expect("thread");
    assert_eq!(status, Some(0));
}
