//! Recursion on the depth of user input. The checker, the IR printer and both back ends
//! walk expressions recursively, and a program may nest expressions as deeply as it likes
//! (`-(-(-(…)))`, or a chain `a + a + … + a` of thousands of terms, which is a left-nested
//! tree). Each such walk calls [`deep`] at its recursive step: when less than [`RED_ZONE`]
//! of the current stack is left, the walk continues on a fresh heap-allocated segment
//! instead of overflowing, so any depth compiles on any thread (a 2 MiB test thread
//! included), at the cost of memory proportional to the depth.

/// Stack that must be left before a recursive step runs on the current stack. It covers
/// the frames between two calls of [`deep`] in an unoptimized build (tens of KiB where a
/// step goes through several large `match` functions).
const RED_ZONE: usize = 256 * 1024;

/// Size of each extra stack segment.
const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `f`, on a new stack segment when the current one is nearly used up.
#[inline]
pub(crate) fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}
