//! Recursion on the depth of user input. The checker, the IR printer and both back ends
//! walk expressions recursively, and a program may nest expressions as deeply as it likes
//! (`-(-(-(…)))`, or a chain `a + a + … + a` of thousands of terms, which is a left-nested
//! tree). Each such walk calls [`deep`] at its recursive step: when less than [`RED_ZONE`]
//! of the current stack is left, the walk continues on a fresh heap-allocated segment
//! instead of overflowing, so any depth compiles on any thread (a 2 MiB test thread
//! included), at the cost of memory proportional to the depth.
//!
//! How much stack is left is measured against the lowest address the thread's stack may
//! reach, found once per thread ([`stack_limit`]). `stacker` finds it with
//! `pthread_getattr_np`, which is cheap on threads the program started but, on the process's
//! main thread (where the CLI, the benchmarks and most Python programs compile), reads and
//! parses `/proc/self/maps`: 0.16 M instructions and a few system calls, 3% of a first
//! compile, and more in a process with many mappings (Python with NumPy). For the main
//! thread the limit is derived from where its stack ends and `RLIMIT_STACK` instead.

use std::cell::Cell;

/// Stack that must be left before a recursive step runs on the current stack. It covers
/// the frames between two calls of [`deep`] in an unoptimized build (tens of KiB where a
/// step goes through several large `match` functions).
const RED_ZONE: usize = 256 * 1024;

/// Size of each extra stack segment.
const SEGMENT: usize = 4 * 1024 * 1024;

thread_local! {
    /// The lowest address this thread's current stack may reach; 0 until first asked.
    static LIMIT: Cell<usize> = const { Cell::new(0) };
}

/// An address in the caller's stack frame.
#[inline(always)]
fn stack_pointer() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Runs `f`, on a new stack segment when the current one is nearly used up.
#[inline]
pub(crate) fn deep<R>(f: impl FnOnce() -> R) -> R {
    let limit = LIMIT.with(|l| match l.get() {
        0 => {
            let limit = stack_limit();
            l.set(limit);
            limit
        }
        limit => limit,
    });
    if stack_pointer().saturating_sub(limit) >= RED_ZONE {
        f()
    } else {
        on_new_segment(f)
    }
}

/// Runs `f` on a fresh segment of [`SEGMENT`] bytes, whose limit [`deep`] then uses.
#[cold]
fn on_new_segment<R>(f: impl FnOnce() -> R) -> R {
    stacker::grow(SEGMENT, || {
        // This frame is near the segment's top: the segment ends less than `SEGMENT` below
        // it, by what the frames above took (far less than the 64 KiB allowed for them).
        let limit = stack_pointer().saturating_sub(SEGMENT) + 64 * 1024;
        struct Restore(usize);
        impl Drop for Restore {
            fn drop(&mut self) {
                LIMIT.with(|l| l.set(self.0));
            }
        }
        let _restore = Restore(LIMIT.with(|l| l.replace(limit)));
        f()
    })
}

/// The lowest address the calling thread's stack may reach (`usize::MAX` if unknown: then
/// every recursive step runs on a segment of known size).
fn stack_limit() -> usize {
    if let Some(limit) = main_thread_stack_limit() {
        return limit;
    }
    match stacker::remaining_stack() {
        Some(left) => stack_pointer().saturating_sub(left),
        None => usize::MAX,
    }
}

/// On Linux with glibc, the main thread's stack limit without reading `/proc/self/maps`:
/// the stack ends at glibc's `__libc_stack_end` (the stack pointer when the program started,
/// below only the arguments, environment and auxiliary vector) and may grow down to
/// `RLIMIT_STACK` below its true end. The arguments and environment take at most a quarter of
/// that limit (`execve` refuses more), so the limit returned leaves that much, and 64 KiB,
/// unused. `None` on other threads, other systems, or an unlimited stack.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main_thread_stack_limit() -> Option<usize> {
    // SAFETY: plain system calls; `dlsym` returns the address of glibc's `void
    // *__libc_stack_end` (or null), which is set before `main` and never changed.
    unsafe {
        if libc::getpid() as libc::c_long != libc::syscall(libc::SYS_gettid) {
            return None;
        }
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_STACK, &mut limit) != 0
            || limit.rlim_cur == libc::RLIM_INFINITY
        {
            return None;
        }
        let end = libc::dlsym(libc::RTLD_DEFAULT, c"__libc_stack_end".as_ptr());
        if end.is_null() {
            return None;
        }
        let end = *(end as *const usize);
        let size = usize::try_from(limit.rlim_cur).ok()?;
        let lowest = end.checked_sub(size)?;
        Some(lowest + size / 4 + 64 * 1024)
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main_thread_stack_limit() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limit lies below the current frame and no lower than `pthread_getattr_np`'s
    /// (stacker's), give or take the few bytes between two frames. On the main thread (the
    /// test runs there with `--test-threads=1`) that checks the `RLIMIT_STACK` estimate.
    #[test]
    fn the_stack_limit_lies_below_the_current_frame_and_above_the_os_limit() {
        let limit = stack_limit();
        assert!(limit < stack_pointer(), "{limit:#x}");
        if let Some(os) = stacker::remaining_stack() {
            let os_limit = stack_pointer() - os;
            assert!(
                limit + 4096 >= os_limit,
                "{limit:#x} below the OS's {os_limit:#x}"
            );
        }
    }

    /// Another thread than the main one is never given the main thread's estimate.
    #[test]
    fn only_the_main_thread_uses_the_estimate() {
        let other = std::thread::spawn(main_thread_stack_limit)
            .join()
            .expect("thread");
        assert_eq!(other, None);
    }

    /// Recursion far deeper than any thread's stack completes, on segments.
    #[test]
    fn deep_recursion_runs_on_segments() {
        fn depth(n: u32) -> u32 {
            if n == 0 {
                return 0;
            }
            let pad = std::hint::black_box([0u8; 512]);
            deep(|| depth(n - 1)) + u32::from(pad[0] == 0)
        }
        let n = 100_000;
        let got = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || depth(n))
            .expect("thread")
            .join()
            .expect("no overflow");
        assert_eq!(got, n);
    }
}
