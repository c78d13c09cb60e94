//! Ctrl-C during a host call. CPython's `SIGINT` handler only sets a flag that the
//! interpreter reads between bytecodes, so a host `@func` looping natively (with the GIL
//! released) would never see it. Before each host call on Python's main thread (the one
//! Python delivers signals to), [`arm`] makes sure this module's handler is installed; it
//! asks the running host calls to stop ([`pydevice::lower::host::interrupt::request`]) and
//! then runs the handler it replaced (CPython's, or whatever was installed), so Python still
//! sees the signal. A stopped call returns `HostError::Interrupted`, and [`interrupted`]
//! runs Python's signal handlers: `KeyboardInterrupt` by default, or what a user's handler
//! raises. Host calls on other threads are not stopped, as Python interrupts only its main
//! thread.

use pydevice::lower::host::interrupt;
use pyo3::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The handler this module replaced: its address (`SIG_DFL`, `SIG_IGN` or a function).
static PREV_HANDLER: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
/// Whether the replaced handler takes `SA_SIGINFO`'s three arguments.
static PREV_SIGINFO: AtomicBool = AtomicBool::new(false);
/// The thread Python runs signal handlers on (`threading.main_thread()`), as `pthread_self`.
static MAIN: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this is Python's main thread; `None` until the first host call on it.
    static IS_MAIN: Cell<Option<bool>> = const { Cell::new(None) };
}

extern "C" fn on_sigint(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    let prev = PREV_HANDLER.load(Ordering::Relaxed);
    if prev == libc::SIG_IGN {
        return;
    }
    interrupt::request();
    if prev == libc::SIG_DFL {
        // SAFETY: async-signal-safe calls: restore the default action and raise again, so
        // the process ends as it would have without this handler.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return;
    }
    if PREV_SIGINFO.load(Ordering::Relaxed) {
        // SAFETY: `prev` is the `sa_sigaction` of the handler installed before this one,
        // which asked for `SA_SIGINFO`.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(prev) };
        f(sig, info, uctx);
    } else {
        // SAFETY: `prev` is the `sa_handler` of the handler installed before this one.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev) };
        f(sig);
    }
}

/// Whether the calling thread is Python's main thread.
fn is_main(py: Python<'_>) -> bool {
    if let Some(m) = IS_MAIN.with(|c| c.get()) {
        return m;
    }
    let main = match MAIN.load(Ordering::Relaxed) {
        0 => {
            let ident = py
                .import("threading")
                .and_then(|t| t.call_method0("main_thread"))
                .and_then(|t| t.getattr("ident"))
                .and_then(|i| i.extract::<usize>())
                .unwrap_or(usize::MAX);
            MAIN.store(ident, Ordering::Relaxed);
            ident
        }
        m => m,
    };
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() } as usize;
    let m = me == main;
    IS_MAIN.with(|c| c.set(Some(m)));
    interrupt::watch(m);
    m
}

/// Before a host call: on Python's main thread, installs [`on_sigint`] unless it is the
/// current `SIGINT` handler (Python's `signal.signal` may have replaced it since), keeping
/// the handler it replaces to run after it. One `sigaction` query per call on the main
/// thread.
pub(crate) fn arm(py: Python<'_>) {
    if !is_main(py) {
        return;
    }
    // SAFETY: sigaction with valid pointers; the structs are plain data.
    unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGINT, std::ptr::null(), &mut cur) != 0 {
            return;
        }
        let ours = on_sigint as *const () as usize;
        if cur.sa_sigaction == ours {
            return;
        }
        PREV_HANDLER.store(cur.sa_sigaction, Ordering::Relaxed);
        PREV_SIGINFO.store(cur.sa_flags & libc::SA_SIGINFO != 0, Ordering::Relaxed);
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = ours;
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | (cur.sa_flags & libc::SA_RESTART);
        new.sa_mask = cur.sa_mask;
        libc::sigaction(libc::SIGINT, &new, std::ptr::null_mut());
    }
}

/// The Python exception for a host call stopped by Ctrl-C: what Python's signal handlers
/// raise (`KeyboardInterrupt` by default), or `KeyboardInterrupt` if they raise nothing,
/// since the call cannot resume.
pub(crate) fn interrupted(py: Python<'_>) -> PyErr {
    match py.check_signals() {
        Err(e) => e,
        Ok(()) => pyo3::exceptions::PyKeyboardInterrupt::new_err("the host call was interrupted"),
    }
}
