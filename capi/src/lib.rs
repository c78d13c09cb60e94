//! pydevice's C API: parse a Python module of device code, compile one of its kernels to PTX
//! for a signature and an architecture, read the kernel's parameter layout, and launch it on
//! a `CUstream` with the arguments packed into one buffer. `include/pydevice.h` is generated
//! from this file by cbindgen (README.md, "From C and C++", has a C++ host program).
//!
//! # Conventions
//! - **Errors are values.** A function that makes a handle returns `NULL` when it fails; the
//!   others return a [`PydeviceStatus`]. Either way, [`pydevice_last_error`] then gives the
//!   message (a compile error's rendered diagnostics, with the source line and a caret) and
//!   [`pydevice_last_status`] its kind. Both are per thread, and every API call clears them
//!   first.
//! - **No panics cross the boundary.** Every function runs under `catch_unwind`; a panic
//!   (a bug of pydevice) becomes [`PydeviceStatus::Panic`] with its message.
//! - **Every pointer is checked for `NULL`** (a `NULL` where a value is needed is
//!   [`PydeviceStatus::InvalidArgument`]); strings must be NUL-terminated UTF-8.
//! - **Ownership.** The caller owns each handle it is given and frees it with the matching
//!   `_free` (which accepts `NULL`). Strings and [`PydeviceParam`]s read from a kernel are
//!   borrowed from it: valid until the kernel is freed. A kernel does not borrow its module:
//!   the module may be freed first. Handles may be used from any thread, but the message of
//!   [`pydevice_last_error`] is valid only until the next API call on the same thread.

#![allow(non_camel_case_types)]

use pydevice::runtime::{Device, LaunchConfig, PackedArgs, RuntimeError, Stream};
use pydevice::{Arch, CompileOptions, CompiledKernel, Error, Module, Type};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// What an API call came to.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PydeviceStatus {
    /// It succeeded.
    Ok = 0,
    /// An argument was `NULL`, not UTF-8, out of range or malformed (a bad signature string,
    /// an unknown architecture, a launch buffer of the wrong size, an array descriptor its
    /// parameter's layout forbids).
    InvalidArgument = 1,
    /// The Python program is ill-formed: the message holds its rendered diagnostics.
    Program = 2,
    /// The back end failed to compile a well-formed program.
    Compile = 3,
    /// No CUDA driver is installed (no GPU on this machine): nothing was launched.
    NoDriver = 4,
    /// The driver refused the launch, or loading the kernel failed.
    Runtime = 5,
    /// pydevice panicked (a bug): the message says where.
    Panic = 6,
}

/// What a kernel parameter is, as the launch buffer holds it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PydeviceParamKind {
    /// A scalar (`int32`, `float64`, `bool`, `complex64`, ...), in its C representation.
    Scalar = 0,
    /// An array descriptor: the device address of element `[0, ..., 0]` (8 bytes), then
    /// `ndim` extents (`uint64_t`), then `ndim` strides counted in elements (`int64_t`).
    Array = 1,
    /// A tuple or vector (`float32x4`), laid out as a C struct of its elements.
    Tuple = 2,
    /// A `@struct` or record passed by value, laid out as the C struct `pydevice abi` prints.
    Struct = 3,
    /// A device address (a record passed by reference, an atomic reference).
    Pointer = 4,
    /// Anything else, laid out as `pydevice abi` prints.
    Other = 5,
}

/// One kernel parameter's place in the launch buffer of [`pydevice_kernel_launch`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PydeviceParam {
    /// The Python parameter name; borrowed from the kernel.
    pub name: *const c_char,
    /// Its type in the Python dialect (`float32[::1]`, `int32`); borrowed from the kernel.
    pub type_name: *const c_char,
    /// What it is.
    pub kind: PydeviceParamKind,
    /// The array's rank for [`PydeviceParamKind::Array`], else 0.
    pub ndim: u32,
    /// Its size in bytes.
    pub size: usize,
    /// Its alignment in bytes.
    pub align: usize,
    /// Where it starts in the launch buffer, in bytes (a multiple of 8).
    pub offset: usize,
}

/// A parsed module (opaque). Made by [`pydevice_module_parse`], freed by
/// [`pydevice_module_free`].
pub struct PydeviceModule {
    module: Module,
}

/// A compiled kernel (opaque): its PTX, parameter layout and, once launched, its loaded form
/// on each GPU it ran on. Made by [`pydevice_module_compile`], freed by
/// [`pydevice_kernel_free`].
pub struct PydeviceKernel {
    compiled: Arc<CompiledKernel>,
    ptx: CString,
    symbol: CString,
    /// The strings the [`PydeviceParam`]s point to.
    _names: Vec<CString>,
    _types: Vec<CString>,
    params: Vec<PydeviceParam>,
    args_size: usize,
}

// SAFETY: the raw pointers in `params` point into the `CString`s the kernel owns, which are
// never mutated; every other field is `Send + Sync`.
unsafe impl Send for PydeviceKernel {}
// SAFETY: as above; nothing is mutated through a shared kernel.
unsafe impl Sync for PydeviceKernel {}

/// The CUDA driver's stream, opaque (`CUstream` and `cudaStream_t` are pointers to it; `NULL`
/// is the legacy default stream). Declared only, as `cuda.h` declares it, so that both
/// headers can be included together.
pub struct CUstream_st {
    _opaque: [u8; 0],
}

/// A failure: its status and message.
struct Failure(PydeviceStatus, String);

impl Failure {
    fn invalid(message: impl Into<String>) -> Failure {
        Failure(PydeviceStatus::InvalidArgument, message.into())
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::Diagnostics(d) => Failure(PydeviceStatus::Program, d.render()),
            Error::Runtime(e) => e.into(),
            // Lowering, host and any later kinds (`Error` is non-exhaustive).
            e => Failure(PydeviceStatus::Compile, e.to_string()),
        }
    }
}

impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Failure {
        let status = match e {
            RuntimeError::NoDriver(_) => PydeviceStatus::NoDriver,
            RuntimeError::Argument(_) | RuntimeError::Shape(_) => PydeviceStatus::InvalidArgument,
            _ => PydeviceStatus::Runtime,
        };
        Failure(status, e.to_string())
    }
}

thread_local! {
    static LAST: RefCell<Option<(PydeviceStatus, CString)>> = const { RefCell::new(None) };
}

fn set_last(f: Failure) {
    // A message with a NUL byte (from a source string) is cut there rather than lost.
    let text = match CString::new(f.1) {
        Ok(c) => c,
        Err(e) => {
            let cut = e.nul_position();
            let mut bytes = e.into_vec();
            bytes.truncate(cut);
            CString::new(bytes).unwrap_or_default()
        }
    };
    LAST.with(|l| *l.borrow_mut() = Some((f.0, text)));
}

/// Runs `f` with the last error cleared, catching panics; a failure is recorded and turned
/// into `fail`.
fn guard<T>(fail: T, f: impl FnOnce() -> Result<T, Failure>) -> T {
    guard_with(move |_| fail, f)
}

/// [`guard`] for the functions that return a [`PydeviceStatus`]: a failure returns its own.
fn guard_status(f: impl FnOnce() -> Result<(), Failure>) -> PydeviceStatus {
    guard_with(|s| s, || f().map(|()| PydeviceStatus::Ok))
}

/// [`guard`], turning a failure's status into the value returned.
fn guard_with<T>(
    fail: impl FnOnce(PydeviceStatus) -> T,
    f: impl FnOnce() -> Result<T, Failure>,
) -> T {
    LAST.with(|l| *l.borrow_mut() = None);
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            let status = e.0;
            set_last(e);
            fail(status)
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            set_last(Failure(
                PydeviceStatus::Panic,
                format!("internal error in pydevice (please report it): {what}"),
            ));
            fail(PydeviceStatus::Panic)
        }
    }
}

/// A required string argument.
///
/// # Safety
/// `p` is `NULL` or a NUL-terminated string that outlives `'a`.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::invalid(format!("`{what}` is NULL")));
    }
    // SAFETY: not NULL, and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Failure::invalid(format!("`{what}` is not UTF-8")))
}

/// An optional string argument (`NULL` is `None`).
///
/// # Safety
/// As for [`text`].
unsafe fn opt_text<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: the caller's contract.
        unsafe { text(p, what) }.map(Some)
    }
}

/// A required handle.
///
/// # Safety
/// `p` is `NULL` or a live handle this API made.
unsafe fn handle<'a, T>(p: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::invalid(format!("`{what}` is NULL")))
}

/// The message of the last failed API call on this thread (for a program error, its
/// diagnostics rendered with the source lines), or `NULL` when the last call succeeded.
/// Owned by the library: valid until the next API call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn pydevice_last_error() -> *const c_char {
    LAST.with(|l| {
        l.borrow()
            .as_ref()
            .map_or(std::ptr::null(), |(_, m)| m.as_ptr())
    })
}

/// The status of the last failed API call on this thread, or `PYDEVICE_STATUS_OK` when the
/// last call succeeded. Unlike the other functions, it does not clear the last error.
#[unsafe(no_mangle)]
pub extern "C" fn pydevice_last_status() -> PydeviceStatus {
    LAST.with(|l| l.borrow().as_ref().map_or(PydeviceStatus::Ok, |(s, _)| *s))
}

/// Parses a module of device code. `filename` names it in diagnostics; `source` is its
/// Python text. Both are copied. Returns a handle to free with [`pydevice_module_free`], or
/// `NULL` on failure ([`pydevice_last_error`] has the diagnostics).
///
/// # Safety
/// `filename` and `source` are `NULL` or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_module_parse(
    filename: *const c_char,
    source: *const c_char,
) -> *mut PydeviceModule {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller's contract.
        let (name, src) = unsafe { (text(filename, "filename")?, text(source, "source")?) };
        let module =
            Module::parse(name, src).map_err(|d| Failure(PydeviceStatus::Program, d.render()))?;
        Ok(Box::into_raw(Box::new(PydeviceModule { module })))
    })
}

/// Frees a module. `NULL` is ignored. Kernels compiled from it stay valid.
///
/// # Safety
/// `module` is `NULL` or a handle from [`pydevice_module_parse`] not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_module_free(module: *mut PydeviceModule) {
    guard((), || {
        if !module.is_null() {
            // SAFETY: made by `Box::into_raw` in `pydevice_module_parse`, freed once.
            drop(unsafe { Box::from_raw(module) });
        }
        Ok(())
    })
}

/// Compiles `entry`, a `@kernel` of `module`, to PTX.
///
/// `signature` gives the argument types as the CLI's `--sig` does, in numba's notation
/// (`"float32[::1], float32[::1], int32"`, or `"void(float32[:], int64)"`); `NULL` takes them
/// from the kernel's annotations. `arch` is the target (`"sm_90"`, `"sm_80"`, ...); `NULL`
/// is pydevice's default architecture. Returns a handle to free with
/// [`pydevice_kernel_free`], or `NULL` on failure: a compile error's message is its rendered
/// diagnostics, with the source line.
///
/// # Safety
/// `module` is `NULL` or a live module handle; the strings are `NULL` or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_module_compile(
    module: *const PydeviceModule,
    entry: *const c_char,
    signature: *const c_char,
    arch: *const c_char,
) -> *mut PydeviceKernel {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller's contract.
        let (m, entry, signature, arch) = unsafe {
            (
                &handle(module, "module")?.module,
                text(entry, "entry")?,
                opt_text(signature, "signature")?,
                opt_text(arch, "arch")?,
            )
        };
        let arch = match arch {
            Some(a) => a
                .parse::<Arch>()
                .map_err(|e| Failure::invalid(format!("bad arch `{a}`: {e}")))?,
            None => Arch::DEFAULT,
        };
        let info = m
            .entries()
            .into_iter()
            .find(|e| e.name == entry && e.is_kernel)
            .ok_or_else(|| {
                Failure::invalid(format!("no @kernel named `{entry}` in {}", m.file().name))
            })?;
        let types: Vec<Type> = match signature {
            Some(sig) => m
                .parse_signature(sig)
                .map_err(|e| Failure::invalid(format!("bad signature `{sig}`: {e}")))?,
            None => info.annotated.ok_or_else(|| {
                Failure::invalid(format!(
                    "`{entry}` has parameters without type annotations; give their types in \
                     `signature` (parameters: {})",
                    info.params.join(", ")
                ))
            })?,
        };
        let options = CompileOptions {
            arch,
            ..CompileOptions::default()
        };
        let compiled = m.compile(entry, &types, &options)?;
        Ok(Box::into_raw(Box::new(kernel_handle(compiled)?)))
    })
}

/// The handle of a compiled kernel: its strings and parameter table made once.
fn kernel_handle(compiled: CompiledKernel) -> Result<PydeviceKernel, Failure> {
    let nul = |what: &str| Failure(PydeviceStatus::Compile, format!("{what} holds a NUL byte"));
    let ptx = CString::new(compiled.ptx.clone()).map_err(|_| nul("the PTX"))?;
    let symbol = CString::new(compiled.abi.symbol.clone()).map_err(|_| nul("the symbol"))?;
    let (offsets, args_size) = PackedArgs::byte_offsets(&compiled.abi);
    let mut names = Vec::new();
    let mut types = Vec::new();
    let mut params = Vec::new();
    for (p, offset) in compiled.abi.params.iter().zip(offsets) {
        let name = CString::new(p.name.clone()).map_err(|_| nul("a parameter name"))?;
        let ty = CString::new(p.layout.name.clone()).map_err(|_| nul("a type name"))?;
        let (kind, ndim) = match &p.ty {
            Type::Scalar(_) => (PydeviceParamKind::Scalar, 0),
            Type::Array(a) => (PydeviceParamKind::Array, u32::from(a.ndim)),
            Type::Tuple(_) | Type::Vector { .. } => (PydeviceParamKind::Tuple, 0),
            Type::Struct(_) => (PydeviceParamKind::Struct, 0),
            Type::StructRef { .. } | Type::Ref { .. } => (PydeviceParamKind::Pointer, 0),
            _ => (PydeviceParamKind::Other, 0),
        };
        // The `CString`s' buffers do not move when the vectors grow.
        params.push(PydeviceParam {
            name: name.as_ptr(),
            type_name: ty.as_ptr(),
            kind,
            ndim,
            size: p.layout.size as usize,
            align: p.layout.align as usize,
            offset,
        });
        names.push(name);
        types.push(ty);
    }
    Ok(PydeviceKernel {
        compiled: Arc::new(compiled),
        ptx,
        symbol,
        _names: names,
        _types: types,
        params,
        args_size,
    })
}

/// Frees a kernel. `NULL` is ignored. Work already launched is not affected.
///
/// # Safety
/// `kernel` is `NULL` or a handle from [`pydevice_module_compile`] not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_kernel_free(kernel: *mut PydeviceKernel) {
    guard((), || {
        if !kernel.is_null() {
            // SAFETY: made by `Box::into_raw` in `pydevice_module_compile`, freed once.
            drop(unsafe { Box::from_raw(kernel) });
        }
        Ok(())
    })
}

/// The kernel's PTX text (NUL-terminated), borrowed from the kernel; `NULL` when `kernel`
/// is `NULL`.
///
/// # Safety
/// `kernel` is `NULL` or a live kernel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_kernel_ptx(kernel: *const PydeviceKernel) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: the caller's contract.
        Ok(unsafe { handle(kernel, "kernel")? }.ptx.as_ptr())
    })
}

/// The kernel's symbol in the PTX (what `cuModuleGetFunction` takes), borrowed from the
/// kernel; `NULL` when `kernel` is `NULL`.
///
/// # Safety
/// `kernel` is `NULL` or a live kernel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_kernel_symbol(kernel: *const PydeviceKernel) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: the caller's contract.
        Ok(unsafe { handle(kernel, "kernel")? }.symbol.as_ptr())
    })
}

/// The number of the kernel's launch parameters (its `ConstExpr` parameters are not among
/// them); 0 when `kernel` is `NULL` (the last error says so).
///
/// # Safety
/// `kernel` is `NULL` or a live kernel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_kernel_param_count(kernel: *const PydeviceKernel) -> usize {
    guard(0, || {
        // SAFETY: the caller's contract.
        Ok(unsafe { handle(kernel, "kernel")? }.params.len())
    })
}

/// Writes parameter `index`'s name, type and place in the launch buffer to `*out`.
///
/// # Safety
/// `kernel` is `NULL` or a live kernel handle; `out` is `NULL` or points to writable memory
/// for one [`PydeviceParam`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_kernel_param(
    kernel: *const PydeviceKernel,
    index: usize,
    out: *mut PydeviceParam,
) -> PydeviceStatus {
    guard_status(|| {
        // SAFETY: the caller's contract.
        let k = unsafe { handle(kernel, "kernel")? };
        if out.is_null() {
            return Err(Failure::invalid("`out` is NULL"));
        }
        let p = k.params.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "`{}` has {} parameters; there is no parameter {index}",
                k.compiled.abi.symbol,
                k.params.len()
            ))
        })?;
        // SAFETY: not NULL, and writable by the caller's contract.
        unsafe { out.write(*p) };
        Ok(())
    })
}

/// The size in bytes of the launch buffer [`pydevice_kernel_launch`] takes: each parameter
/// at its [`PydeviceParam::offset`], the whole rounded up to 8 bytes. 0 when `kernel` is
/// `NULL`.
///
/// # Safety
/// `kernel` is `NULL` or a live kernel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_kernel_args_size(kernel: *const PydeviceKernel) -> usize {
    guard(0, || {
        // SAFETY: the caller's contract.
        Ok(unsafe { handle(kernel, "kernel")? }.args_size)
    })
}

/// The dynamic shared memory a launch gets without asking the driver for more.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

/// Launches the kernel on `stream` with a grid of `grid[0..3]` blocks of `block[0..3]`
/// threads and `shared_mem` bytes of dynamic shared memory (more than 48 KiB is asked of the
/// driver first). `args` holds the arguments, `args_size` bytes
/// ([`pydevice_kernel_args_size`]), each at its parameter's offset in its C layout; it is
/// read during the call only. Array descriptors are checked (rank, a contiguous dimension's
/// stride, a null data pointer); the memory they point to is the caller's business.
///
/// The GPU is the stream's (`NULL`, the legacy default stream, and the per-thread default
/// stream launch on GPU 0) and the context its primary context, the one the CUDA runtime
/// uses. The kernel is loaded there at its first launch and kept loaded until it is freed.
/// The launch is asynchronous: a fault while it runs shows at the caller's next
/// synchronization. Returns `PYDEVICE_STATUS_NO_DRIVER` when there is no CUDA driver.
///
/// # Safety
/// `kernel` is `NULL` or a live kernel handle; `grid` and `block` are `NULL` or point to
/// three `uint32_t`; `args` is `NULL` or points to `args_size` readable bytes; `stream` is
/// `NULL`, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD` or a live stream of a primary context
/// that stays alive while the launch is submitted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pydevice_kernel_launch(
    kernel: *const PydeviceKernel,
    stream: *mut CUstream_st,
    grid: *const u32,
    block: *const u32,
    shared_mem: u32,
    args: *const c_void,
    args_size: usize,
) -> PydeviceStatus {
    guard_status(|| {
        // SAFETY: the caller's contract.
        let k = unsafe { handle(kernel, "kernel")? };
        let dims = |p: *const u32, what: &str| -> Result<[u32; 3], Failure> {
            if p.is_null() {
                return Err(Failure::invalid(format!("`{what}` is NULL")));
            }
            // SAFETY: not NULL, and three readable `uint32_t` by the caller's contract.
            Ok(unsafe { [p.read(), p.add(1).read(), p.add(2).read()] })
        };
        let (grid, block) = (dims(grid, "grid")?, dims(block, "block")?);
        let bytes: &[u8] = if args_size == 0 {
            &[]
        } else if args.is_null() {
            return Err(Failure::invalid(format!(
                "`args` is NULL but `args_size` is {args_size}"
            )));
        } else {
            // SAFETY: not NULL, `args_size` readable bytes by the caller's contract, read
            // only during this call.
            unsafe { std::slice::from_raw_parts(args.cast::<u8>(), args_size) }
        };
        let packed = PackedArgs::from_bytes(&k.compiled.abi, bytes)?;
        if !pydevice::runtime::driver_available() {
            return Err(Failure(
                PydeviceStatus::NoDriver,
                format!(
                    "cannot launch `{}`: no CUDA driver is installed on this machine",
                    k.compiled.abi.symbol
                ),
            ));
        }
        // SAFETY: a valid stream handle (or a default-stream value) by the caller's contract.
        let stream = unsafe { Stream::from_handle(stream as usize) };
        let device = Device::open(stream.device()?.unwrap_or(0))?;
        let loaded = device.load_cached(&k.compiled)?;
        if shared_mem > DEFAULT_DYNAMIC_SHARED {
            loaded.set_max_dynamic_shared(shared_mem)?;
        }
        let cfg = LaunchConfig::new(grid, block).with_shared(shared_mem);
        if loaded.abi().cooperative {
            device.launch_cooperative_packed(&loaded, &packed, &cfg, &stream)?;
        } else {
            device.launch_packed(&loaded, &packed, &cfg, &stream)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_message() -> String {
        let p = pydevice_last_error();
        assert!(!p.is_null(), "no last error");
        // SAFETY: a NUL-terminated message the library owns, read before the next call.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let s = guard_status(|| panic!("boom {}", 7));
        assert_eq!(s, PydeviceStatus::Panic);
        assert_eq!(pydevice_last_status(), PydeviceStatus::Panic);
        assert!(last_message().contains("boom 7"), "{}", last_message());
        let p: *mut PydeviceModule = guard(std::ptr::null_mut(), || panic!("static"));
        assert!(p.is_null());
        assert!(last_message().contains("static"));
        // The next call clears it.
        assert_eq!(guard_status(|| Ok(())), PydeviceStatus::Ok);
        assert!(pydevice_last_error().is_null());
        assert_eq!(pydevice_last_status(), PydeviceStatus::Ok);
    }

    #[test]
    fn a_message_with_a_nul_is_cut_there() {
        let s = guard_status(|| Err(Failure::invalid("before\0after")));
        assert_eq!(s, PydeviceStatus::InvalidArgument);
        assert_eq!(last_message(), "before");
    }

    #[test]
    fn the_last_error_is_per_thread() {
        let _ = guard_status(|| Err(Failure::invalid("here")));
        std::thread::spawn(|| assert!(pydevice_last_error().is_null()))
            .join()
            .unwrap();
        assert_eq!(last_message(), "here");
    }
}
