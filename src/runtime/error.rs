//! Run-time errors and how driver results become them.
//!
//! Every failure of the driver becomes a [`RuntimeError`] value; nothing here panics. The
//! CUDA driver distinguishes two kinds of launch failure, and so do we:
//!
//! - **Rejected launches** ([`RuntimeError::Launch`]): a bad grid or block shape, more dynamic
//!   shared memory than the kernel allows, too many registers for the block size, a module that
//!   does not load. The driver refuses the work before it runs; the context is unharmed and the
//!   next launch may succeed ([`RuntimeError::context_usable`] is `true`).
//! - **Faults** ([`RuntimeError::Fault`]): the kernel ran and did something illegal (an illegal
//!   or misaligned address, a trap, an illegal instruction, a timeout). These errors are
//!   *sticky*: the driver reports them at the next synchronization, or from the next call on
//!   the context, and the context stays unusable until the process ends (or, for a primary
//!   context, until every user resets the device). `context_usable` is `false`; recover by
//!   restarting the process, as every CUDA framework must.
//!
//! This module only classifies; it makes no driver calls except `cuGetErrorName`/`String`
//! for the message, which are valid once the driver is loaded.

use cudarc::driver::DriverError;
use std::fmt;

/// What went wrong at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No CUDA driver library is installed (no GPU on this machine).
    NoDriver(String),
    /// The driver reported an error outside a launch.
    Driver(String),
    /// A kernel could not be loaded or its launch was rejected before it ran (bad grid or block
    /// shape, too much shared memory, too many registers for the block). The context is still
    /// usable.
    Launch {
        /// The kernel's symbol.
        kernel: String,
        /// What the driver said, with the launch's numbers where they explain it.
        message: String,
    },
    /// A kernel faulted while running (illegal address, trap, misaligned access...). The
    /// error is sticky: the CUDA context is unusable from now on.
    Fault {
        /// The kernel's symbol: the last kernel launched on the device before the fault was
        /// reported. Launches are asynchronous, so with several kernels in flight an earlier
        /// one may be the culprit; synchronize after each launch to pin a fault down.
        kernel: String,
        /// What the driver said.
        message: String,
    },
    /// An argument does not match the kernel's parameters, or an array description (DLPack,
    /// CUDA Array Interface) is malformed or unsupported.
    Argument(String),
    /// An output array's shape is not the shape the arguments broadcast to (an elementwise
    /// kernel's given output). The message begins with CuPy's words, "Out shape is
    /// mismatched"; Python raises it as `ShapeMismatchError`, both an `ArgumentError` and the
    /// `ValueError` CuPy and NumPy raise for it (docs/semantics.md §20.3).
    Shape(String),
    /// A launch mixes GPUs: its kernel, an array argument or its stream belongs to GPU
    /// `found`, but the launch runs on GPU `launch`. Nothing was launched; the context is
    /// still usable.
    WrongDevice {
        /// The kernel's symbol.
        kernel: String,
        /// What is elsewhere, worded to be followed by the GPU: "argument `a` is on".
        what: String,
        /// The GPU it is on.
        found: usize,
        /// The GPU the launch runs on.
        launch: usize,
    },
    /// Device code could not be linked ([`Device::link`](super::Device::link)): a symbol no
    /// input defines, a CUDA C++ input NVRTC rejected (its log is in the message), NVRTC
    /// missing, or the driver's JIT linker refusing an input. The context is still usable.
    Link {
        /// The symbols that were referenced but defined by no input (may be empty).
        undefined: Vec<String>,
        /// What went wrong, with the compiler's or linker's log.
        message: String,
    },
    /// A thread of a kernel failed an `assert` or executed a `raise` (the first one of the
    /// launch to do so is reported); that thread stopped (PTX `exit`), the others ran on.
    /// The context is still usable.
    Raised {
        /// The kernel's symbol.
        kernel: String,
        /// Source line of the `assert`/`raise`.
        line: u32,
        /// Source column of it.
        column: u32,
        /// The file, the message and the thread.
        report: Box<RaiseReport>,
    },
    /// A kernel compiled with `bounds_check=True` indexed an array out of range; the access
    /// was skipped. The context is still usable.
    IndexOutOfBounds {
        /// The kernel's symbol.
        kernel: String,
        /// Source line of the first out-of-range access.
        line: u32,
        /// Source column of it.
        column: u32,
        /// The file, the array, the indices, the shape and the thread.
        report: Box<BoundsReport>,
    },
}

/// What [`RuntimeError::Raised`] reports besides the kernel and the position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaiseReport {
    /// The source file.
    pub file: String,
    /// What Python would print: `AssertionError: message`, `ValueError: message`.
    pub message: String,
    /// `thread_idx` (x, y, z) of the thread.
    pub thread: [u32; 3],
    /// `block_idx` (x, y, z) of the thread.
    pub block: [u32; 3],
}

/// What [`RuntimeError::IndexOutOfBounds`] reports besides the kernel and the position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundsReport {
    /// The source file (empty when the module recorded none).
    pub file: String,
    /// The array, as the source names it (`an array` for a computed one).
    pub array: String,
    /// The indices as written (a negative one before Python's wrap); empty for a view
    /// (`m[i, :]`), whose report names only the array.
    pub indices: Vec<i64>,
    /// The array's shape (as many dimensions as `indices`, at most 8).
    pub shape: Vec<i64>,
    /// `thread_idx` (x, y, z) of the thread.
    pub thread: [u32; 3],
    /// `block_idx` (x, y, z) of the thread.
    pub block: [u32; 3],
}

impl RuntimeError {
    /// Whether the CUDA context can still run work after this error. `false` only for
    /// [`RuntimeError::Fault`], whose driver errors are sticky.
    pub fn context_usable(&self) -> bool {
        !matches!(self, RuntimeError::Fault { .. })
    }

    /// The kernel the error names, if any.
    pub fn kernel(&self) -> Option<&str> {
        match self {
            RuntimeError::Launch { kernel, .. }
            | RuntimeError::Fault { kernel, .. }
            | RuntimeError::Raised { kernel, .. }
            | RuntimeError::WrongDevice { kernel, .. }
            | RuntimeError::IndexOutOfBounds { kernel, .. } => Some(kernel),
            _ => None,
        }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::NoDriver(m) => write!(f, "no CUDA driver: {m}"),
            RuntimeError::Driver(m) => write!(f, "CUDA driver error: {m}"),
            RuntimeError::Launch { kernel, message } => {
                write!(f, "kernel `{kernel}` failed: {message}")
            }
            RuntimeError::Fault { kernel, message } => write!(
                f,
                "kernel `{kernel}` faulted: {message} (the CUDA context is unusable from now on)"
            ),
            RuntimeError::Argument(m) => write!(f, "bad kernel argument: {m}"),
            RuntimeError::Shape(m) => write!(f, "{m}"),
            RuntimeError::WrongDevice {
                kernel,
                what,
                found,
                launch,
            } => write!(
                f,
                "kernel `{kernel}` launches on GPU {launch}, but {what} GPU {found} (move the \
                 data with a copy between GPUs, or launch on GPU {found})"
            ),
            RuntimeError::Link { message, .. } => {
                write!(f, "linking device code failed: {message}")
            }
            RuntimeError::Raised {
                kernel,
                line,
                column,
                report,
            } => {
                let RaiseReport {
                    file,
                    message,
                    thread,
                    block,
                } = report.as_ref();
                write!(
                    f,
                    "kernel `{kernel}` raised {message} at {file}:{line}:{column} (thread ({}, {}, {}) of block ({}, {}, {}); that thread stopped)",
                    thread[0], thread[1], thread[2], block[0], block[1], block[2]
                )
            }
            RuntimeError::IndexOutOfBounds {
                kernel,
                line,
                column,
                report,
            } => {
                let BoundsReport {
                    file,
                    array,
                    indices,
                    shape,
                    thread,
                    block,
                } = report.as_ref();
                let list = |v: &[i64]| {
                    let parts: Vec<String> = v.iter().map(i64::to_string).collect();
                    if parts.len() == 1 {
                        format!("({},)", parts[0])
                    } else {
                        format!("({})", parts.join(", "))
                    }
                };
                let place = if file.is_empty() {
                    format!("line {line}, column {column}")
                } else {
                    format!("{file}:{line}:{column}")
                };
                let what = if indices.is_empty() {
                    format!("`{array}`")
                } else {
                    let ix: Vec<String> = indices.iter().map(i64::to_string).collect();
                    format!("`{array}[{}]` (shape {})", ix.join(", "), list(shape))
                };
                write!(
                    f,
                    "kernel `{kernel}` indexed {what} out of bounds at {place}, thread ({}, {}, {}) of block ({}, {}, {}) (the access was skipped)",
                    thread[0], thread[1], thread[2], block[0], block[1], block[2]
                )
            }
        }
    }
}

impl std::error::Error for RuntimeError {}

/// The numeric `CUresult` of a driver error.
pub(crate) fn code(e: &DriverError) -> u32 {
    e.0 as u32
}

/// `CUDA_ERROR_NAME (code): description`, as the driver words it.
pub(crate) fn describe(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "CUDA_ERROR_UNKNOWN".into());
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name} ({}): {text}", code(e))
}

/// Whether a driver error code is sticky: the kernel faulted and the context is lost.
/// (CUDA driver API, `CUresult`: 214 ECC uncorrectable, 702 launch timeout, 710 assert,
/// 714 hardware stack error, 715 illegal instruction, 716 misaligned address, 717 invalid
/// address space, 718 invalid PC, 719 launch failed, 700 illegal address, 220 NVLink
/// uncorrectable.)
pub(crate) fn is_sticky(code: u32) -> bool {
    matches!(
        code,
        214 | 220 | 700 | 702 | 710 | 714 | 715 | 716 | 717 | 718 | 719
    )
}

/// A driver error outside a launch: a fault (sticky) is reported against `last_kernel`.
pub(crate) fn driver_error(e: DriverError, last_kernel: Option<&str>) -> RuntimeError {
    let message = describe(&e);
    if is_sticky(code(&e)) {
        RuntimeError::Fault {
            kernel: last_kernel.unwrap_or("<unknown>").to_string(),
            message,
        }
    } else {
        RuntimeError::Driver(message)
    }
}

/// Any debug-printable error as a [`RuntimeError::Driver`] (for cudarc's safe API).
pub(crate) fn drv(e: impl fmt::Debug) -> RuntimeError {
    RuntimeError::Driver(format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_faults_lose_the_context() {
        let f = RuntimeError::Fault {
            kernel: "k".into(),
            message: "m".into(),
        };
        assert!(!f.context_usable());
        assert_eq!(f.kernel(), Some("k"));
        assert!(f.to_string().contains("`k`"));
        let l = RuntimeError::Launch {
            kernel: "k".into(),
            message: "m".into(),
        };
        assert!(l.context_usable());
        assert!(RuntimeError::Argument("x".into()).context_usable());
        assert!(is_sticky(700) && is_sticky(719) && !is_sticky(1) && !is_sticky(701));
    }
}
