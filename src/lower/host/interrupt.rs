//! Stopping a running host call from outside it (Ctrl-C in Python): every function of a
//! host call with a loop loads, on entry, the address of an interrupt flag from its call's
//! context and polls the flag at each loop back-edge (`emit::raise::poll_interrupt`). A
//! call on a thread that [`watch`]es polls the process's flag, which [`request`] sets (it
//! is async-signal-safe: a `SIGINT` handler may call it); a call on any other thread, and
//! every call through the C ABI pointer, polls a flag that is never set. A stopped call
//! returns [`super::HostError::Interrupted`]; its array arguments hold the stores made
//! before it stopped. docs/semantics.md §16 records the decision.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

/// The flag that calls on watching threads poll.
static REQUESTED: AtomicU32 = AtomicU32::new(0);
/// The flag that every other call polls: never set.
pub(crate) static NEVER: AtomicU32 = AtomicU32::new(0);

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

/// Whether host calls made on this thread from now on stop at [`request`] (default: no).
/// Python's bindings watch on the main thread, the one Python delivers `SIGINT` to.
pub fn watch(on: bool) {
    WATCHING.with(|w| w.set(on));
}

/// Whether this thread [`watch`]es.
pub fn watching() -> bool {
    WATCHING.with(|w| w.get())
}

/// Asks the host calls running on watching threads to stop at their next loop back-edge.
/// Async-signal-safe (one atomic store). A request no call has seen yet is dropped when the
/// next watched call starts ([`super::HostFunction::call`] clears it), so a `SIGINT` that
/// arrived between calls does not stop the next one.
pub fn request() {
    REQUESTED.store(1, Ordering::Relaxed);
}

/// The flag address a call on this thread polls; clears a pending request first.
pub(crate) fn flag_for_call() -> u64 {
    if watching() {
        REQUESTED.store(0, Ordering::Relaxed);
        REQUESTED.as_ptr() as u64
    } else {
        NEVER.as_ptr() as u64
    }
}
