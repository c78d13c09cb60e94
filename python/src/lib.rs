//! `pydevice._native`: the PyO3 glue between the `pydevice` Python package and the crate.
//!
//! It is kept thin on purpose: parsing, specialization, caching ([`KernelCache`]), argument
//! packing ([`pydevice::abi::pack`] through [`LoadedKernel::pack`]) and launching
//! ([`Device::launch_packed`]) are the crate's. This file only converts Python values to the
//! crate's types and back, and turns the crate's error values into the Python exception
//! classes of `pydevice.errors`. The Python side (`pydevice/_core.py`) reads decorated
//! functions' source, chooses specializations and describes arguments.

mod calls;
mod cli;
mod fast;
mod fuse;
mod interrupt;
mod kernels;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use pydevice::abi::{ArgValue, ArrayArg};
use pydevice::cache::KernelCache;
use pydevice::runtime::{Device, LaunchConfig, LoadedKernel, PackedArgs, RuntimeError, Stream};
use pydevice::types::signature::parse_type;
use pydevice::types::{Scalar, Type};
use pydevice::{Arch, CompileOptions, CompiledKernel, Error, HostFunction, HostValue};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use smallvec::SmallVec;

/// Raises the Python exception class `name` of `pydevice.errors` with `args`.
fn raise<'py, A: pyo3::call::PyCallArgs<'py>>(py: Python<'py>, name: &str, args: A) -> PyErr {
    let made = py
        .import("pydevice.errors")
        .and_then(|m| m.getattr(name))
        .and_then(|cls| cls.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// A list of dictionaries describing diagnostics, for `CompileError.diagnostics`.
fn diagnostics_list<'py>(
    py: Python<'py>,
    d: &pydevice::Diagnostics,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for diag in &d.list {
        let (line, column) = d.file.line_col(diag.primary.span.start);
        let (end_line, end_column) = d.file.line_col(diag.primary.span.end);
        let item = PyDict::new(py);
        item.set_item("code", diag.code.as_str())?;
        item.set_item("message", &diag.message)?;
        item.set_item(
            "severity",
            match diag.severity {
                pydevice::diag::Severity::Error => "error",
                pydevice::diag::Severity::Warning => "warning",
            },
        )?;
        item.set_item("file", &d.file.name)?;
        item.set_item("line", line)?;
        item.set_item("column", column)?;
        item.set_item("end_line", end_line)?;
        item.set_item("end_column", end_column)?;
        item.set_item("label", &diag.primary.message)?;
        item.set_item("notes", diag.notes.clone())?;
        item.set_item("rendered", d.file.render(diag))?;
        out.append(item)?;
    }
    Ok(out)
}

/// The Python exception for a crate error.
pub(crate) fn to_py(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Diagnostics(d) => match diagnostics_list(py, &d) {
            Ok(list) => raise(
                py,
                "CompileError",
                (d.render().trim_end().to_string(), list),
            ),
            Err(e) => e,
        },
        Error::Lower(e) => raise(py, "CompileError", (e.to_string(), PyList::empty(py))),
        Error::Host(pydevice::HostError::IndexOutOfBounds { line, column }) => {
            let text =
                Error::Host(pydevice::HostError::IndexOutOfBounds { line, column }).to_string();
            raise(py, "BoundsError", (text, String::new(), line, column))
        }
        Error::Host(pydevice::HostError::Argument(m)) => raise(py, "ArgumentError", (m,)),
        Error::Host(pydevice::HostError::Interrupted) => interrupt::interrupted(py),
        Error::Host(e @ pydevice::HostError::StackExhausted { .. }) => {
            raise(py, "HostRecursionError", (e.to_string(),))
        }
        Error::Host(e) => raise(py, "HostError", (e.to_string(),)),
        Error::Runtime(e) => runtime_to_py(py, e),
        // `pydevice::Error` is `#[non_exhaustive]`.
        other => raise(py, "CompileError", (other.to_string(), PyList::empty(py))),
    }
}

/// The Python exception for a run-time error.
pub(crate) fn runtime_to_py(py: Python<'_>, e: RuntimeError) -> PyErr {
    let text = e.to_string();
    match e {
        RuntimeError::NoDriver(_) => raise(py, "NoDriverError", (text,)),
        RuntimeError::Driver(_) => raise(py, "DriverError", (text,)),
        RuntimeError::Launch { kernel, .. } => raise(py, "LaunchError", (text, kernel)),
        RuntimeError::Fault { kernel, .. } => raise(py, "DeviceFault", (text, kernel)),
        RuntimeError::Argument(_) => raise(py, "ArgumentError", (text,)),
        RuntimeError::Shape(_) => raise(py, "ShapeMismatchError", (text,)),
        RuntimeError::WrongDevice {
            kernel,
            found,
            launch,
            ..
        } => raise(py, "DeviceMismatchError", (text, kernel, found, launch)),
        RuntimeError::Link { .. } => raise(py, "LinkError", (text,)),
        RuntimeError::IndexOutOfBounds {
            kernel,
            line,
            column,
            ..
        } => raise(py, "BoundsError", (text, kernel, line, column)),
        RuntimeError::Raised {
            kernel,
            line,
            column,
            report,
        } => raise(
            py,
            "KernelRaised",
            (
                text,
                kernel,
                line,
                column,
                report.file,
                report.message,
                report.thread,
                report.block,
            ),
        ),
        // `RuntimeError` is `#[non_exhaustive]`.
        _ => raise(py, "DriverError", (text,)),
    }
}

/// The process-wide specialization cache (memory, and disk once `set_disk_cache` is called).
fn cache() -> &'static RwLock<Arc<KernelCache>> {
    static CACHE: OnceLock<RwLock<Arc<KernelCache>>> = OnceLock::new();
    CACHE.get_or_init(|| RwLock::new(Arc::new(KernelCache::new())))
}

pub(crate) fn current_cache() -> Arc<KernelCache> {
    cache().read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Opened devices by ordinal, each opened once per process and kept open (the crate's
/// [`Device::open`] shares one state per ordinal; holding a handle here keeps it alive).
pub(crate) fn device(ordinal: usize) -> Result<Arc<Device>, RuntimeError> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<Device>>>> = OnceLock::new();
    let map = DEVICES.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = map.get(&ordinal) {
        return Ok(d.clone());
    }
    let d = Arc::new(Device::open(ordinal)?);
    map.insert(ordinal, d.clone());
    Ok(d)
}

/// A Python `bool`, `int` or `float` (NumPy scalars too, through `item()`) as the value of a
/// `ConstExpr` parameter.
fn const_value(v: &Bound<'_, PyAny>) -> PyResult<pydevice::ConstValue> {
    use pyo3::types::{PyBool, PyFloat, PyInt};
    if v.is_instance_of::<PyBool>() {
        return Ok(pydevice::ConstValue::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract().map(pydevice::ConstValue::Int).map_err(|_| {
            raise(
                v.py(),
                "ArgumentRangeError",
                (format!(
                    "a ConstExpr integer must fit in 128 bits; {} does not",
                    describe_value(v)
                ),),
            )
        });
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(pydevice::ConstValue::Float(v.extract()?));
    }
    if v.hasattr("item")? && v.hasattr("dtype")? {
        return const_value(&v.call_method0("item")?);
    }
    Err(PyTypeError::new_err(format!(
        "a ConstExpr argument must be a bool, an int or a float, not {}",
        v.get_type().name()?
    )))
}

/// The device a launch runs on when neither its stream nor its arrays say:
/// `PYDEVICE_DEVICE`, read by the Python side at import ([`set_default_device`]).
pub(crate) static DEFAULT_DEVICE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Sets the device launches run on when neither their stream nor their arrays say.
#[pyfunction]
fn set_default_device(ordinal: usize) {
    DEFAULT_DEVICE.store(ordinal, std::sync::atomic::Ordering::Relaxed);
}

/// The device launches run on when neither their stream nor their arrays say.
#[pyfunction]
fn default_device() -> usize {
    DEFAULT_DEVICE.load(std::sync::atomic::Ordering::Relaxed)
}

/// The number of GPUs (0 without a driver).
#[pyfunction]
fn device_count(py: Python<'_>) -> usize {
    py.detach(pydevice::runtime::device_count)
}

/// The GPU owning device pointer `ptr`, or `None` (managed or host memory, unknown pointer).
#[pyfunction]
fn pointer_device(py: Python<'_>, ptr: u64) -> PyResult<Option<usize>> {
    pydevice::runtime::pointer_device(ptr).map_err(|e| runtime_to_py(py, e))
}

/// The GPU of stream handle `handle`, or `None` for the default streams (0, 1, 2), which
/// follow the launch.
#[pyfunction]
pub(crate) fn stream_device(py: Python<'_>, handle: usize) -> PyResult<Option<usize>> {
    // SAFETY: the caller keeps the stream alive for the call.
    let s = unsafe { Stream::from_handle(handle) };
    s.device().map_err(|e| runtime_to_py(py, e))
}

/// Whether GPU `a` may access GPU `b`'s memory directly.
#[pyfunction]
fn can_access_peer(py: Python<'_>, a: usize, b: usize) -> PyResult<bool> {
    let r = py.detach(|| device(a)?.can_access_peer(&*device(b)?));
    r.map_err(|e| runtime_to_py(py, e))
}

/// Lets GPU `a`'s kernels access GPU `b`'s memory (`cuCtxEnablePeerAccess`, once per pair);
/// `False` when the driver does not allow it between them.
#[pyfunction]
fn enable_peer_access(py: Python<'_>, a: usize, b: usize) -> PyResult<bool> {
    let r = py.detach(|| device(a)?.enable_peer_access(&*device(b)?));
    r.map_err(|e| runtime_to_py(py, e))
}

/// Copies `nbytes` from `src` (device `src_device`, ordered on stream handle `src_stream`)
/// to `dst` (likewise): `"same_device"`, `"peer"` or `"host"`, the path taken (the crate's
/// [`pydevice::runtime::multi::copy`]); `via_host=True` forces the host path.
#[pyfunction]
#[pyo3(signature = (dst, dst_device, dst_stream, src, src_device, src_stream, nbytes, via_host=false))]
#[allow(clippy::too_many_arguments)]
fn copy(
    py: Python<'_>,
    dst: u64,
    dst_device: usize,
    dst_stream: usize,
    src: u64,
    src_device: usize,
    src_stream: usize,
    nbytes: usize,
    via_host: bool,
) -> PyResult<&'static str> {
    use pydevice::runtime::multi::{CopyPath, Endpoint, copy, copy_through_host};
    let r = py.detach(|| -> Result<CopyPath, RuntimeError> {
        let (dd, sd) = (device(dst_device)?, device(src_device)?);
        // SAFETY: the caller keeps both streams alive for the call.
        let (ds, ss) = unsafe {
            (
                Stream::from_handle(dst_stream),
                Stream::from_handle(src_stream),
            )
        };
        let (d, s) = (Endpoint::new(&dd, dst, &ds), Endpoint::new(&sd, src, &ss));
        if via_host {
            copy_through_host(d, s, nbytes)
        } else {
            copy(d, s, nbytes)
        }
    });
    match r.map_err(|e| runtime_to_py(py, e))? {
        CopyPath::SameDevice => Ok("same_device"),
        CopyPath::Peer => Ok("peer"),
        CopyPath::Host => Ok("host"),
    }
}

fn parse_arch(arch: &str) -> PyResult<Arch> {
    arch.parse::<Arch>()
        .map_err(|e| PyValueError::new_err(format!("architecture `{arch}`: {e}")))
}

/// An entry as Python sees it: `(name, is_kernel, params, each run-time parameter's
/// annotated type or None, ConstExpr parameters)`.
type EntryTuple = (String, bool, Vec<String>, Vec<Option<String>>, Vec<String>);

/// A parsed module of device code.
#[pyclass(frozen, module = "pydevice._native")]
struct Module {
    inner: Arc<pydevice::Module>,
}

impl Module {
    /// Resolves a type description from Python: a string in numba notation or a name the
    /// module defines (a `@struct` class, `float32x4`), or a tuple of descriptions.
    fn resolve(&self, spec: &Bound<'_, PyAny>) -> PyResult<Type> {
        self.resolve_at(spec, 0)
    }

    /// [`Module::resolve`] of a description nested `depth` tuples deep: deeper than
    /// [`pydevice::types::MAX_TYPE_DEPTH`] is an error, not a stack overflow.
    fn resolve_at(&self, spec: &Bound<'_, PyAny>, depth: usize) -> PyResult<Type> {
        if depth > pydevice::types::MAX_TYPE_DEPTH {
            return Err(PyTypeError::new_err(format!(
                "a type description nests tuples deeper than {} levels",
                pydevice::types::MAX_TYPE_DEPTH
            )));
        }
        if let Ok(s) = spec.extract::<String>() {
            if let Some(t) = self.inner.named_type(&s) {
                return Ok(t);
            }
            return parse_type(&s).map_err(|e| PyTypeError::new_err(format!("type `{s}`: {e}")));
        }
        if let Ok(t) = spec.cast::<PyTuple>() {
            let items = t
                .iter()
                .map(|i| self.resolve_at(&i, depth + 1))
                .collect::<PyResult<Vec<_>>>()?;
            return Ok(Type::Tuple(items));
        }
        Err(PyTypeError::new_err(format!(
            "a type description is a string or a tuple, not {}",
            spec.get_type().name()?
        )))
    }

    fn resolve_all(&self, specs: &Bound<'_, PyAny>) -> PyResult<Vec<Type>> {
        specs.try_iter()?.map(|s| self.resolve(&s?)).collect()
    }

    fn options(arch: Option<&str>, opt: u8) -> PyResult<CompileOptions> {
        Ok(CompileOptions {
            arch: match arch {
                Some(a) => parse_arch(a)?,
                None => Arch::DEFAULT,
            },
            opt_level: pydevice::OptLevel::try_from(opt)
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?,
            ..Default::default()
        })
    }
}

#[pymethods]
impl Module {
    /// Parses `source`; `name` (the file name) is used in diagnostics.
    #[new]
    fn new(py: Python<'_>, name: &str, source: &str) -> PyResult<Module> {
        let parsed = py.detach(|| pydevice::Module::parse(name, source));
        match parsed {
            Ok(m) => Ok(Module { inner: Arc::new(m) }),
            Err(d) => Err(to_py(py, Error::Diagnostics(d))),
        }
    }

    /// The `@kernel`/`@func` functions: `(name, is_kernel, params, the annotated type of
    /// each run-time parameter or None, the parameters hinted ConstExpr)`.
    fn entries(&self) -> Vec<EntryTuple> {
        self.inner
            .entries()
            .into_iter()
            .map(|e| {
                let ann = e
                    .param_annotations
                    .iter()
                    .map(|t| t.as_ref().map(|t| t.to_string()))
                    .collect();
                (e.name, e.is_kernel, e.params, ann, e.constexpr)
            })
            .collect()
    }

    /// Whether `name` is `@func(interop=True)`.
    fn is_interop(&self, name: &str) -> bool {
        self.inner.is_interop(name)
    }

    /// Whether the module is in the numba dialect (as the compiler sees it).
    fn is_numba(&self) -> bool {
        self.inner.is_numba()
    }

    /// The layout of a type (`@struct` name, vector, number, numba notation) as JSON.
    fn layout(&self, spec: &Bound<'_, PyAny>) -> PyResult<String> {
        let t = self.resolve(spec)?;
        Ok(serde_json::to_string(&pydevice::abi::layout_of(&t)).unwrap_or_default())
    }

    /// The printed form of a resolved type (checks a description).
    fn type_name(&self, spec: &Bound<'_, PyAny>) -> PyResult<String> {
        Ok(self.resolve(spec)?.to_string())
    }

    /// Compiles `entry` for `types` through the process-wide [`KernelCache`], without the GIL.
    /// `constants` gives the values of its `ConstExpr` parameters: `(name, bool | int |
    /// float)` pairs, part of the cache key.
    #[pyo3(signature = (entry, types, arch=None, opt=3, constants=None))]
    fn compile(
        &self,
        py: Python<'_>,
        entry: &str,
        types: &Bound<'_, PyAny>,
        arch: Option<&str>,
        opt: u8,
        constants: Option<Vec<(String, Bound<'_, PyAny>)>>,
    ) -> PyResult<Kernel> {
        let types = self.resolve_all(types)?;
        let mut options = Self::options(arch, opt)?;
        for (name, v) in constants.unwrap_or_default() {
            options.constants.push((name, const_value(&v)?));
        }
        let module = self.inner.clone();
        let entry = entry.to_string();
        let compiled =
            py.detach(move || current_cache().get_or_compile(&module, &entry, &types, &options));
        compiled
            .map(|k| Kernel { inner: k })
            .map_err(|e| to_py(py, e))
    }

    /// The typed IR of `entry` specialized for `types`, as text.
    #[pyo3(signature = (entry, types, arch=None))]
    fn typed_ir(
        &self,
        py: Python<'_>,
        entry: &str,
        types: &Bound<'_, PyAny>,
        arch: Option<&str>,
    ) -> PyResult<String> {
        let types = self.resolve_all(types)?;
        let arch = Self::options(arch, 3)?.arch;
        let spec = py.detach(|| self.inner.specialize_for(entry, &types, arch));
        spec.map(|s| s.program().to_string())
            .map_err(|d| to_py(py, Error::Diagnostics(d)))
    }

    /// The optimized LLVM IR of `entry` specialized for `types`.
    #[pyo3(signature = (entry, types, arch=None, opt=3))]
    fn llvm_ir(
        &self,
        py: Python<'_>,
        entry: &str,
        types: &Bound<'_, PyAny>,
        arch: Option<&str>,
        opt: u8,
    ) -> PyResult<String> {
        let types = self.resolve_all(types)?;
        let options = Self::options(arch, opt)?;
        let r = py.detach(|| -> Result<String, Error> {
            let spec = self.inner.specialize_for(entry, &types, options.arch)?;
            Ok(spec.to_llvm_ir(&options)?)
        });
        r.map_err(|e| to_py(py, e))
    }

    /// The parameter ABI of `entry` for `types`, as JSON (`KernelAbi`).
    fn abi(&self, py: Python<'_>, entry: &str, types: &Bound<'_, PyAny>) -> PyResult<String> {
        let types = self.resolve_all(types)?;
        let spec = py.detach(|| self.inner.specialize(entry, &types));
        spec.map(|s| serde_json::to_string(&s.abi()).unwrap_or_default())
            .map_err(|d| to_py(py, Error::Diagnostics(d)))
    }

    /// A CUDA C++ header of the module: its `@struct` types and the declarations of its
    /// `interop=True` functions whose parameters are all annotated.
    fn header(&self, py: Python<'_>, name: &str) -> PyResult<String> {
        self.inner
            .header(name)
            .map_err(|d| to_py(py, Error::Diagnostics(d)))
    }

    /// JIT-compiles `entry` for the host (Cranelift), without the GIL; `constants` gives the
    /// values of its `ConstExpr` parameters.
    #[pyo3(signature = (entry, types, constants=None))]
    fn host_function(
        &self,
        py: Python<'_>,
        entry: &str,
        types: &Bound<'_, PyAny>,
        constants: Option<Vec<(String, Bound<'_, PyAny>)>>,
    ) -> PyResult<HostFunc> {
        let types = self.resolve_all(types)?;
        let constants = constants
            .unwrap_or_default()
            .into_iter()
            .map(|(n, v)| Ok((n, const_value(&v)?)))
            .collect::<PyResult<Vec<_>>>()?;
        let f = py.detach(|| {
            self.inner
                .specialize_host_with(entry, &types, &constants)
                .map_err(pydevice::Error::from)
                .and_then(|s| s.to_host())
        });
        f.map(|f| HostFunc { inner: Arc::new(f) })
            .map_err(|e| to_py(py, e))
    }

    /// JIT-compiles `@kernel` `entry` to run whole on the CPU (the CPU back end), without
    /// the GIL; `constants` gives the values of its `ConstExpr` parameters.
    #[pyo3(signature = (entry, types, constants=None))]
    fn cpu_kernel(
        &self,
        py: Python<'_>,
        entry: &str,
        types: &Bound<'_, PyAny>,
        constants: Option<Vec<(String, Bound<'_, PyAny>)>>,
    ) -> PyResult<CpuKernel> {
        let types = self.resolve_all(types)?;
        let constants = constants
            .unwrap_or_default()
            .into_iter()
            .map(|(n, v)| Ok((n, const_value(&v)?)))
            .collect::<PyResult<Vec<_>>>()?;
        let k = py.detach(|| {
            self.inner
                .specialize_with(entry, &types, &constants, Arch::DEFAULT)
                .map_err(pydevice::Error::from)
                .and_then(|s| s.to_cpu())
        });
        k.map(|k| CpuKernel { inner: Arc::new(k) })
            .map_err(|e| to_py(py, e))
    }
}

/// A `@kernel` compiled for the CPU back end.
#[pyclass(frozen, module = "pydevice._native")]
struct CpuKernel {
    inner: Arc<pydevice::runtime::cpu::CpuKernel>,
}

/// The Python exception for a failed launch on the CPU.
fn cpu_to_py(py: Python<'_>, kernel: &str, e: pydevice::runtime::cpu::CpuError) -> PyErr {
    use pydevice::runtime::cpu::CpuError;
    let text = format!("kernel `{kernel}`: {e}");
    match e {
        CpuError::Argument(_) => raise(py, "ArgumentError", (text,)),
        CpuError::Config(_) | CpuError::Resource(_) => {
            raise(py, "LaunchError", (text, kernel.to_string()))
        }
        CpuError::Deadlock(_) => raise(py, "DeadlockError", (text, kernel.to_string())),
        CpuError::Interrupted => interrupt::interrupted(py),
        CpuError::Race {
            file,
            space,
            address,
            first,
            second,
        } => {
            let access = |a: &pydevice::runtime::cpu::RaceAccess| {
                (
                    a.line,
                    a.column,
                    a.write,
                    (a.thread[0], a.thread[1], a.thread[2]),
                    (a.block[0], a.block[1], a.block[2]),
                )
            };
            raise(
                py,
                "RaceError",
                (
                    text,
                    kernel.to_string(),
                    file,
                    space,
                    address,
                    access(&first),
                    access(&second),
                ),
            )
        }
        CpuError::IndexOutOfBounds { line, column, .. } => {
            raise(py, "BoundsError", (text, kernel.to_string(), line, column))
        }
        CpuError::Raised {
            file,
            line,
            column,
            message,
            thread,
            block,
        } => raise(
            py,
            "KernelRaised",
            (
                text,
                kernel.to_string(),
                line,
                column,
                file,
                message,
                (thread[0], thread[1], thread[2]),
                (block[0], block[1], block[2]),
            ),
        ),
    }
}

#[pymethods]
impl CpuKernel {
    /// Each parameter's type, printed.
    #[getter]
    fn param_types(&self) -> Vec<String> {
        self.inner.params().iter().map(|t| t.to_string()).collect()
    }

    /// Whether the kernel may store to the memory parameter `index` holds.
    fn may_store(&self, index: usize) -> bool {
        self.inner.may_store(index)
    }

    /// Whether the kernel synchronizes the grid (a GPU launches it only cooperatively).
    #[getter]
    fn cooperative(&self) -> bool {
        self.inner.cooperative()
    }

    /// Runs the kernel on `args` over a `grid` of `block` threads (3-tuples), without the
    /// GIL, reading and writing each array argument in place: an array is given as
    /// `(shape, address)`, the address of C-contiguous host memory of the parameter's dtype
    /// that the caller keeps alive, and writes to no other way, during the call (no copy
    /// in and out: the serial copies bounded the launch's scaling with cores). A launch that
    /// fails leaves the arrays as they were (`CpuKernel::launch_raw_or_restore`).
    /// `threads` OS threads (0: one per core); `deterministic` runs the blocks in grid order
    /// on one thread; `race_check` checks for data races (RaceError); `cluster` is the
    /// launch's thread block cluster shape. On Python's main thread, Ctrl-C stops the
    /// launch: its threads stop at their next loop back-edge and it raises
    /// `KeyboardInterrupt` (what Python's `SIGINT` handler raises).
    #[pyo3(signature = (args, grid, block, shared=0, seed=None, threads=0, deterministic=false, race_check=false, cluster=None))]
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        seed: Option<u64>,
        threads: usize,
        deterministic: bool,
        race_check: bool,
        cluster: Option<[u32; 3]>,
    ) -> PyResult<()> {
        let params = self.inner.params();
        if args.len() != params.len() {
            return Err(PyTypeError::new_err(format!(
                "`{}` takes {} arguments, {} given",
                self.inner.name(),
                params.len(),
                args.len()
            )));
        }
        let values = params
            .iter()
            .zip(args.iter())
            .map(|(t, v)| cpu_arg(t, &v))
            .collect::<PyResult<Vec<_>>>()?;
        let cfg = pydevice::runtime::cpu::CpuLaunch {
            grid,
            block,
            shared_bytes: shared,
            threads,
            deterministic,
            seed,
            race_check,
            cluster,
        };
        let k = self.inner.clone();
        interrupt::arm(py);
        // SAFETY: `pydevice._core` passes, for each array, the address of a C-contiguous
        // NumPy buffer of the shape given, which it keeps alive and does not touch during
        // the call, writable where the kernel may store to it (it checks `may_store`).
        let r = py.detach(|| unsafe { k.launch_raw_or_restore(&values, &cfg) });
        r.map_err(|e| cpu_to_py(py, self.inner.name(), e))
    }
}

/// A CPU kernel's argument of type `t`: an array as `(shape, address)` of C-contiguous host
/// memory, anything else as [`host_value`] reads it.
fn cpu_arg(t: &Type, v: &Bound<'_, PyAny>) -> PyResult<ArgValue> {
    if let Type::Array(_) = t {
        let (shape, data): (Vec<u64>, u64) = v.extract()?;
        let mut strides = vec![0i64; shape.len()];
        let mut stride = 1i64;
        for (s, d) in strides.iter_mut().zip(&shape).rev() {
            *s = stride;
            stride = stride.saturating_mul(i64::try_from(*d).unwrap_or(i64::MAX));
        }
        return Ok(ArgValue::Array(ArrayArg {
            data,
            shape,
            strides,
        }));
    }
    arg_of_host(host_value(t, v)?)
}

/// A [`HostValue`] as the kernel argument it stands for: a struct's fields in order. Arrays
/// are passed only as parameters of their own ([`cpu_arg`]).
fn arg_of_host(v: HostValue) -> PyResult<ArgValue> {
    Ok(match v {
        HostValue::None => ArgValue::Tuple(Vec::new()),
        HostValue::Bool(b) => ArgValue::Bool(b),
        HostValue::Int(i) => ArgValue::Int(i),
        HostValue::UInt(u) => ArgValue::UInt(u),
        HostValue::Float32(f) => ArgValue::Float(f64::from(f)),
        HostValue::Float64(f) => ArgValue::Float(f),
        HostValue::Complex64(re, im) => ArgValue::Complex(f64::from(re), f64::from(im)),
        HostValue::Complex128(re, im) => ArgValue::Complex(re, im),
        HostValue::Tuple(items) => ArgValue::Tuple(
            items
                .into_iter()
                .map(arg_of_host)
                .collect::<PyResult<_>>()?,
        ),
        HostValue::Struct { fields, .. } => ArgValue::Tuple(
            fields
                .into_iter()
                .map(|(_, v)| arg_of_host(v))
                .collect::<PyResult<_>>()?,
        ),
        HostValue::Array { .. } => {
            return Err(PyTypeError::new_err(
                "a CPU launch takes arrays as arguments of their own, not inside a tuple or struct",
            ));
        }
    })
}

/// A compiled kernel: PTX and ABI.
#[pyclass(frozen, module = "pydevice._native")]
struct Kernel {
    inner: Arc<CompiledKernel>,
}

#[pymethods]
impl Kernel {
    /// The PTX text.
    #[getter]
    fn ptx(&self) -> &str {
        &self.inner.ptx
    }

    /// The CUDA C++ the kernel links with when loaded (`jit.thrust` shims): a list of
    /// `(name, source)`; empty for most kernels.
    #[getter]
    fn cuda(&self) -> Vec<(String, String)> {
        self.inner
            .cuda
            .iter()
            .map(|c| (c.name.clone(), c.source.clone()))
            .collect()
    }

    /// The architecture, `sm_XX`.
    #[getter]
    fn arch(&self) -> String {
        self.inner.arch.to_string()
    }

    /// The kernel ABI as JSON.
    #[getter]
    fn abi_json(&self) -> String {
        serde_json::to_string(&self.inner.abi).unwrap_or_default()
    }

    /// Each parameter's type, printed.
    #[getter]
    fn param_types(&self) -> Vec<String> {
        self.inner
            .abi
            .params
            .iter()
            .map(|p| p.ty.to_string())
            .collect()
    }

    /// Whether the kernel may store to the memory that parameter `index` holds (an array,
    /// or a tuple or struct of arrays): read-only arrays are refused there.
    fn may_store(&self, index: usize) -> bool {
        self.inner.abi.may_store(index)
    }

    /// Loads the kernel on GPU `ordinal` (once per device and kernel).
    fn load(&self, py: Python<'_>, ordinal: usize) -> PyResult<Launcher> {
        let k = self.inner.clone();
        let r = py.detach(move || -> Result<_, RuntimeError> {
            let dev = device(ordinal)?;
            let loaded = dev.load_cached(&k)?;
            Ok((dev, loaded))
        });
        let (dev, loaded) = r.map_err(|e| runtime_to_py(py, e))?;
        let template = loaded.zeroed_args();
        Ok(Launcher::new(
            &self.inner.abi,
            ordinal,
            Some((dev, loaded)),
            template,
        ))
    }

    /// A launcher that does everything a launch does on the host (reading, checking and
    /// packing the arguments, releasing the GIL) except the driver call, without a GPU: for
    /// measuring the host cost of a launch (`bench/python/launch_host_cost.py`). It claims
    /// GPU `ordinal`; reflection on it raises.
    /// With `record=True` it keeps each launch's parameter bytes
    /// ([`Launcher::last_packed`]), for tests.
    #[pyo3(signature = (ordinal=0, record=false))]
    fn dry_run_launcher(&self, ordinal: usize, record: bool) -> Launcher {
        let template = PackedArgs::zeroed(&self.inner.abi);
        let mut l = Launcher::new(&self.inner.abi, ordinal, None, template);
        l.record = record;
        l
    }
}

/// A kernel loaded on a device, ready to launch.
#[pyclass(frozen, module = "pydevice._native")]
pub struct Launcher {
    /// The device and the kernel loaded on it; `None` for a dry-run launcher
    /// ([`Kernel::dry_run_launcher`]).
    gpu: Option<(Arc<Device>, Arc<LoadedKernel>)>,
    pub(crate) abi: pydevice::abi::KernelAbi,
    /// The GPU it launches on.
    pub(crate) ordinal: usize,
    pub(crate) params: Vec<Type>,
    /// A zeroed parameter buffer, cloned and filled in place per launch.
    pub(crate) template: PackedArgs,
    /// Per parameter, the scalar leaves of a struct passed by value (`abi::scalar_leaves`),
    /// laid out once: the fast path writes a `@struct` argument's fields straight there.
    pub(crate) leaves: Vec<Option<Vec<(u64, pydevice::types::Scalar)>>>,
    /// A dry-run launcher's last parameter bytes (for the tests that compare the fast path's
    /// packing with the Python path's).
    last: Mutex<Option<Vec<u8>>>,
    /// Whether a dry run keeps its bytes in `last` (off when measuring).
    record: bool,
}

impl Launcher {
    fn new(
        abi: &pydevice::abi::KernelAbi,
        ordinal: usize,
        gpu: Option<(Arc<Device>, Arc<LoadedKernel>)>,
        template: PackedArgs,
    ) -> Launcher {
        Launcher {
            gpu,
            abi: abi.clone(),
            ordinal,
            params: abi.params.iter().map(|p| p.ty.clone()).collect(),
            template,
            leaves: abi
                .params
                .iter()
                .map(|p| pydevice::abi::scalar_leaves(&p.ty))
                .collect(),
            last: Mutex::new(None),
            record: false,
        }
    }

    /// The device and the loaded kernel; an error for a dry-run launcher.
    fn gpu(&self) -> PyResult<(&Device, &LoadedKernel)> {
        match &self.gpu {
            Some((d, k)) => Ok((d, k)),
            None => Err(PyValueError::new_err(
                "a dry-run launcher has no GPU (it only measures host costs)",
            )),
        }
    }
}

/// A short sequence of integers (a shape or strides) without a heap allocation.
fn small<'py, T: FromPyObject<'py> + Copy, const N: usize>(
    v: &Bound<'py, PyAny>,
) -> PyResult<SmallVec<[T; N]>>
where
    [T; N]: smallvec::Array<Item = T>,
{
    let t = v.cast::<PyTuple>()?;
    let mut out = SmallVec::new();
    for x in t.iter() {
        out.push(x.extract::<T>()?);
    }
    Ok(out)
}

/// A short description of a Python value for an error message: its type, and its `repr`
/// when that is short.
fn describe_value(v: &Bound<'_, PyAny>) -> String {
    let ty = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into());
    match v.repr() {
        Ok(r) if r.to_string().chars().count() <= 40 => format!("{r} ({ty})"),
        _ => format!("a value of type {ty}"),
    }
}

/// A number argument for a parameter of number type `s`, converted as numba converts it:
/// a value of the parameter's kind that the type can hold. The error is pydevice's own
/// ([`raise`]d as `ArgumentError`, or `ArgumentRangeError` for an integer out of range),
/// never Python's conversion message.
fn scalar_arg(py: Python<'_>, s: Scalar, v: &Bound<'_, PyAny>) -> PyResult<ArgValue> {
    let wrong = |what: &str| {
        raise(
            py,
            "ArgumentError",
            (format!(
                "expected {what} for a {s} parameter, given {}",
                describe_value(v)
            ),),
        )
    };
    if s == Scalar::Bool {
        return v.extract().map(ArgValue::Bool).map_err(|_| wrong("a bool"));
    }
    if s.is_complex() {
        let part = |name: &str| -> PyResult<f64> {
            v.getattr(name)
                .and_then(|x| x.extract::<f64>())
                .map_err(|_| wrong("a number"))
        };
        return Ok(ArgValue::Complex(part("real")?, part("imag")?));
    }
    if s.is_float() {
        if v.is_instance_of::<pyo3::types::PyString>() || v.is_instance_of::<PyBytes>() {
            return Err(wrong("a real number"));
        }
        return v
            .extract()
            .map(ArgValue::Float)
            .map_err(|_| wrong("a real number"));
    }
    // An integer type: a Python int, a NumPy integer or bool (anything with `__index__`).
    let i: i128 = match v.extract::<i128>() {
        Ok(i) => i,
        Err(_) if v.hasattr("__index__").unwrap_or(false) => {
            return Err(raise(
                py,
                "ArgumentRangeError",
                (format!(
                    "{} is out of range for a {s} parameter",
                    describe_value(v)
                ),),
            ));
        }
        Err(_) => return Err(wrong("an integer")),
    };
    if !pydevice::ir::literal_fits(pydevice::ir::Literal::Int(i), s) {
        return Err(raise(
            py,
            "ArgumentRangeError",
            (format!("{i} is out of range for a {s} parameter"),),
        ));
    }
    Ok(if s.is_signed() {
        ArgValue::Int(i as i64)
    } else {
        ArgValue::UInt(i as u64)
    })
}

/// `e` with its message prefixed by `what` (which argument, which parameter) when it is one
/// of pydevice's `ArgumentError`s; other errors unchanged.
fn name_argument_error(py: Python<'_>, e: PyErr, what: &str) -> PyErr {
    let is_ours = py
        .import("pydevice.errors")
        .and_then(|m| m.getattr("ArgumentError"))
        .map(|cls| e.is_instance(py, &cls))
        .unwrap_or(false);
    if !is_ours {
        return e;
    }
    let value = e.value(py);
    let message = value
        .str()
        .map(|m| m.to_string())
        .unwrap_or_else(|_| "a bad argument".into());
    match value.get_type().call1((format!("{what}: {message}"),)) {
        Ok(v) => PyErr::from_value(v),
        Err(_) => e,
    }
}

/// Reads one argument value for a parameter of type `t` (see [`Launcher::launch`]).
fn arg_value(t: &Type, v: &Bound<'_, PyAny>) -> PyResult<ArgValue> {
    let py = v.py();
    Ok(match t {
        Type::Scalar(s) => scalar_arg(py, *s, v)?,
        Type::WarpMask => scalar_arg(py, Scalar::UInt32, v)?,
        Type::Array(_) => {
            let (data, shape, strides): (u64, Vec<u64>, Vec<i64>) = v.extract()?;
            ArgValue::Array(ArrayArg {
                data,
                shape,
                strides,
            })
        }
        Type::Struct(_) if v.cast::<PyBytes>().is_ok() => {
            ArgValue::Bytes(v.cast::<PyBytes>()?.as_bytes().to_vec())
        }
        Type::StructRef { .. } => ArgValue::UInt(v.extract()?),
        Type::Tuple(items) => ArgValue::Tuple(
            items
                .iter()
                .zip(v.try_iter()?)
                .map(|(t, v)| arg_value(t, &v?))
                .collect::<PyResult<_>>()?,
        ),
        Type::Vector { elem, len } => {
            let t = Type::Scalar(*elem);
            let mut out = Vec::with_capacity(*len as usize);
            for x in v.try_iter()? {
                out.push(arg_value(&t, &x?)?);
            }
            ArgValue::Tuple(out)
        }
        Type::Struct(st) => {
            let mut out = Vec::with_capacity(st.fields.len());
            for ((_, ft), x) in st.fields.iter().zip(v.try_iter()?) {
                out.push(arg_value(ft, &x?)?);
            }
            ArgValue::Tuple(out)
        }
        other => {
            return Err(PyTypeError::new_err(format!(
                "a `{other}` parameter cannot be passed from Python"
            )));
        }
    })
}

/// A `Dim3Like` from Python: an int, or a sequence of one to three ints.
pub(crate) fn dim3(v: &Bound<'_, PyAny>, what: &str) -> PyResult<[u32; 3]> {
    // The common case first, without allocating: a positive int.
    if v.is_exact_instance_of::<pyo3::types::PyInt>()
        && let Ok(i) = v.extract::<u32>()
        && i > 0
        && i <= i32::MAX as u32
    {
        return Ok([i, 1, 1]);
    }
    let ints: Vec<i64> = if let Ok(i) = v.extract::<i64>() {
        vec![i]
    } else {
        v.extract().map_err(|_| {
            PyTypeError::new_err(format!("{what} must be an int or a tuple of 1 to 3 ints"))
        })?
    };
    pydevice::runtime::Dim3::from_ints(&ints)
        .map(|d| d.to_array())
        .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

impl Launcher {
    /// Launches a filled parameter buffer on stream handle `stream`, without the GIL;
    /// `cooperative` through `Device::launch_cooperative_packed`, in thread block clusters of
    /// `cluster` blocks when given (§18.1).
    #[allow(clippy::too_many_arguments)]
    fn launch_packed(
        &self,
        py: Python<'_>,
        packed: &PackedArgs,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: usize,
        cooperative: bool,
        cluster: Option<[u32; 3]>,
    ) -> PyResult<()> {
        self.launch_packed_gil(
            py,
            packed,
            grid,
            block,
            shared,
            stream,
            cooperative,
            cluster,
            true,
        )
    }

    /// [`Launcher::launch_packed`], releasing the GIL around the driver call only when
    /// `release` is set. The fast path keeps it for a plain launch (not cooperative, at most
    /// 48 KiB of dynamic shared memory, no clusters): `cuLaunchKernel` only queues the kernel,
    /// and releasing and retaking the GIL was a measurable part of a launch's host time
    /// (about 1,500 of 15,000 host instructions, `bench/NOTES.md`). The cost of keeping it:
    /// when the driver's launch queue is full, `cuLaunchKernel` waits with the GIL held, so
    /// other Python threads wait too, and a Python host callback queued earlier on the same
    /// stream (`cuLaunchHostFunc` from Python) could never run; such programs set
    /// `PYDEVICE_LAUNCH_RELEASE_GIL=1`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_packed_gil(
        &self,
        py: Python<'_>,
        packed: &PackedArgs,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: usize,
        cooperative: bool,
        cluster: Option<[u32; 3]>,
        release: bool,
    ) -> PyResult<()> {
        let cfg = LaunchConfig {
            grid,
            block,
            shared_bytes: shared,
        };
        // SAFETY: the handle comes from a stream object the caller keeps alive for the call
        // (or is 0/1/2, the default streams).
        let stream = unsafe { Stream::from_handle(stream) };
        let Some((device, kernel)) = &self.gpu else {
            // A dry run: the same GIL release (when asked), no driver call; the bytes are kept.
            if release {
                py.detach(|| std::hint::black_box((packed, &cfg, &stream, cooperative, cluster)));
            } else {
                std::hint::black_box((packed, &cfg, &stream, cooperative, cluster));
            }
            if !self.record {
                return Ok(());
            }
            let bytes = (0..self.abi.params.len())
                .flat_map(|i| packed.param_bytes(&self.abi, i).unwrap_or_default())
                .collect();
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(bytes);
            return Ok(());
        };
        let launch = || {
            // Above 48 KiB of dynamic shared memory a kernel must opt in (Hopper's pipelined
            // kernels use up to 227 KiB, §18.4); the driver refuses what the device lacks.
            if shared > 48 << 10 {
                kernel.set_max_dynamic_shared(shared)?;
            }
            match cluster {
                Some(c) => device.launch_cluster(kernel, packed, &cfg, c, &stream),
                None if cooperative => {
                    device.launch_cooperative_packed(kernel, packed, &cfg, &stream)
                }
                None => device.launch_packed(kernel, packed, &cfg, &stream),
            }
        };
        let r = if release { py.detach(launch) } else { launch() };
        r.map_err(|e| runtime_to_py(py, e))
    }
}

#[pymethods]
impl Launcher {
    /// Launches asynchronously on the stream with handle `stream`: `values` holds one value per
    /// parameter (arrays as `(data, shape, strides_in_elements)`, numbers as Python numbers,
    /// tuples, vectors and structs as sequences, records as bytes). Packing is the crate's
    /// [`LoadedKernel::pack`]; the driver call runs without the GIL.
    /// `seed` is the seed of the kernel's random numbers (`cuda.device.random`); `None` draws
    /// a fresh one per launch. `cluster` (a `Dim3Like`) launches in thread block clusters of
    /// that shape (`cuLaunchKernelEx`, §18.1).
    #[pyo3(signature = (values, grid, block, shared=0, stream=0, seed=None, cooperative=false, cluster=None))]
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyTuple>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        shared: u32,
        stream: usize,
        seed: Option<u64>,
        cooperative: bool,
        cluster: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if values.len() != self.params.len() {
            return Err(PyTypeError::new_err(format!(
                "`{}` takes {} arguments, {} given",
                self.abi.symbol,
                self.params.len(),
                values.len()
            )));
        }
        let abi = &self.abi;
        let mut packed = self.template.clone();
        packed.set_seed(seed);
        for (i, (t, v)) in self.params.iter().zip(values.iter()).enumerate() {
            let r = if let Type::Array(_) = t {
                // Straight into the descriptor: `(data, shape, strides)`, no ArgValue.
                let item = v.cast::<PyTuple>().map_err(|_| {
                    PyTypeError::new_err("an array argument is passed as (data, shape, strides)")
                })?;
                let data: u64 = item.get_item(0)?.extract()?;
                let shape: SmallVec<[u64; 4]> = small(&item.get_item(1)?)?;
                let strides: SmallVec<[i64; 4]> = small(&item.get_item(2)?)?;
                packed.set_array(abi, i, data, &shape, &strides)
            } else {
                let value = arg_value(t, &v).map_err(|e| {
                    let what = format!("{}(): parameter `{}`", abi.symbol, abi.params[i].name);
                    name_argument_error(py, e, &what)
                })?;
                packed.set(abi, i, &value)
            };
            r.map_err(|e| runtime_to_py(py, e))?;
        }
        self.launch_packed(
            py,
            &packed,
            dim3(grid, "grid")?,
            dim3(block, "block")?,
            shared,
            stream,
            cooperative,
            match cluster.filter(|c| !c.is_none()) {
                Some(c) => Some(dim3(c, "cluster")?),
                None => None,
            },
        )
    }

    /// Launches `values` (as [`Launcher::launch`] takes them, packed once) `n` times back to
    /// back on stream `stream` from one Rust loop, with the GIL held, and returns the seconds
    /// the loop took: the floor under a launch from Python (the driver's `cuLaunchKernel` and
    /// the runtime's checks), for `bench/python/launch_3us.py`. A dry-run launcher skips the
    /// driver call.
    #[pyo3(signature = (values, grid, block, stream, n))]
    fn time_packed_loop(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyTuple>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        stream: usize,
        n: u64,
    ) -> PyResult<f64> {
        let abi = &self.abi;
        let mut packed = self.template.clone();
        for (i, (t, v)) in self.params.iter().zip(values.iter()).enumerate() {
            let r = match t {
                Type::Array(_) => {
                    let item = v.cast::<PyTuple>()?;
                    let data: u64 = item.get_item(0)?.extract()?;
                    let shape: SmallVec<[u64; 4]> = small(&item.get_item(1)?)?;
                    let strides: SmallVec<[i64; 4]> = small(&item.get_item(2)?)?;
                    packed.set_array(abi, i, data, &shape, &strides)
                }
                _ => packed.set(abi, i, &arg_value(t, &v)?),
            };
            r.map_err(|e| runtime_to_py(py, e))?;
        }
        let cfg = LaunchConfig {
            grid: dim3(grid, "grid")?,
            block: dim3(block, "block")?,
            shared_bytes: 0,
        };
        // SAFETY: as in `launch_packed`: the caller keeps the stream alive for the call.
        let stream = unsafe { Stream::from_handle(stream) };
        let t0 = std::time::Instant::now();
        for _ in 0..n {
            match &self.gpu {
                Some((device, kernel)) => device
                    .launch_packed(kernel, &packed, &cfg, &stream)
                    .map_err(|e| runtime_to_py(py, e))?,
                None => {
                    std::hint::black_box((&packed, &cfg, &stream));
                }
            }
        }
        Ok(t0.elapsed().as_secs_f64())
    }

    /// A dry-run launcher's last launch: each parameter's bytes, concatenated (`None`
    /// before its first launch, and always for a real launcher).
    fn last_packed<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.as_ref().map(|b| PyBytes::new(py, b))
    }

    /// Whether the kernel synchronizes the grid and so needs `cooperative=True`.
    #[getter]
    fn cooperative(&self) -> bool {
        self.abi.cooperative
    }

    /// The kernel's symbol.
    #[getter]
    fn name(&self) -> &str {
        &self.abi.symbol
    }

    /// The device ordinal.
    #[getter]
    fn device(&self) -> usize {
        self.ordinal
    }

    /// Registers, shared/local/const bytes, max threads per block, PTX and binary versions.
    fn attributes(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let a = self
            .gpu()?
            .1
            .attributes()
            .map_err(|e| runtime_to_py(py, e))?;
        let d = PyDict::new(py);
        d.set_item("registers", a.registers)?;
        d.set_item("shared_bytes", a.static_shared_bytes)?;
        d.set_item("local_bytes", a.local_bytes)?;
        d.set_item("const_bytes", a.const_bytes)?;
        d.set_item("max_threads_per_block", a.max_threads_per_block)?;
        d.set_item("max_dynamic_shared_bytes", a.max_dynamic_shared_bytes)?;
        d.set_item("ptx_version", a.ptx_version)?;
        d.set_item("binary_version", a.binary_version)?;
        Ok(d.unbind())
    }

    /// Occupancy at `threads` per block with `shared` dynamic shared bytes.
    #[pyo3(signature = (threads, shared=0))]
    fn occupancy(&self, py: Python<'_>, threads: u32, shared: u32) -> PyResult<Py<PyDict>> {
        let o = self
            .gpu()?
            .1
            .occupancy(threads, shared)
            .map_err(|e| runtime_to_py(py, e))?;
        let d = PyDict::new(py);
        d.set_item("block_threads", o.block_threads)?;
        d.set_item("dynamic_shared_bytes", o.dynamic_shared_bytes)?;
        d.set_item("active_blocks_per_sm", o.active_blocks_per_sm)?;
        d.set_item("active_warps_per_sm", o.active_warps_per_sm)?;
        d.set_item("max_warps_per_sm", o.max_warps_per_sm)?;
        d.set_item("fraction", o.fraction)?;
        Ok(d.unbind())
    }

    /// The block size that maximizes occupancy with `shared` dynamic shared bytes per block.
    #[pyo3(signature = (shared=0))]
    fn suggested_block_size(&self, py: Python<'_>, shared: u32) -> PyResult<(u32, u32)> {
        let s = self
            .gpu()?
            .1
            .suggested_block_size(shared)
            .map_err(|e| runtime_to_py(py, e))?;
        Ok((s.block_threads, s.min_grid_blocks))
    }

    /// Reports the first out-of-range access of a `bounds_check=True` kernel (after
    /// synchronizing) as `BoundsError`.
    fn check_bounds(&self, py: Python<'_>) -> PyResult<()> {
        let (device, kernel) = self.gpu()?;
        device
            .check_bounds(kernel)
            .map_err(|e| runtime_to_py(py, e))
    }
}

/// A `@func` compiled for the host.
#[pyclass(frozen, module = "pydevice._native")]
struct HostFunc {
    inner: Arc<HostFunction>,
}

/// A Python value as a host argument of type `t`. Arrays come as `(dtype, shape, bytes)`.
fn host_value(t: &Type, v: &Bound<'_, PyAny>) -> PyResult<HostValue> {
    Ok(match t {
        Type::Scalar(Scalar::Bool) => HostValue::Bool(v.extract()?),
        Type::Scalar(Scalar::Float64) => HostValue::Float64(v.extract()?),
        // A Python complex (or any number): its parts.
        Type::Scalar(s) if s.is_complex() => {
            let re: f64 = v.getattr("real")?.extract()?;
            let im: f64 = v.getattr("imag")?.extract()?;
            if *s == Scalar::Complex64 {
                HostValue::Complex64(re as f32, im as f32)
            } else {
                HostValue::Complex128(re, im)
            }
        }
        Type::Scalar(s) if s.is_float() => HostValue::Float32(v.extract::<f64>()? as f32),
        Type::Scalar(s) if s.is_signed() => HostValue::Int(v.extract()?),
        Type::Scalar(s) if !s.is_complex() => HostValue::UInt(v.extract()?),
        Type::Tuple(items) => HostValue::Tuple(
            items
                .iter()
                .zip(v.try_iter()?)
                .map(|(t, v)| host_value(t, &v?))
                .collect::<PyResult<_>>()?,
        ),
        Type::Vector { elem, .. } => {
            let t = Type::Scalar(*elem);
            HostValue::Tuple(
                v.try_iter()?
                    .map(|v| host_value(&t, &v?))
                    .collect::<PyResult<_>>()?,
            )
        }
        Type::Struct(st) => HostValue::Struct {
            name: st.name.clone(),
            fields: st
                .fields
                .iter()
                .zip(v.try_iter()?)
                .map(|((n, t), v)| Ok((n.clone(), host_value(t, &v?)?)))
                .collect::<PyResult<_>>()?,
        },
        Type::Array(a) if let Some(dtype) = a.dtype.scalar() => {
            // The bytes object's buffer at once: extracting a `Vec<u8>` would convert
            // element by element.
            let (shape, data): (Vec<u64>, Bound<'_, PyBytes>) = v.extract()?;
            HostValue::Array {
                dtype,
                shape,
                data: data.as_bytes().to_vec(),
            }
        }
        other => {
            return Err(PyTypeError::new_err(format!(
                "a `{other}` argument cannot be passed to a host call"
            )));
        }
    })
}

/// A host result as a Python value: structs as `(name, [(field, value)])` for the Python
/// side to rebuild.
fn host_result(py: Python<'_>, v: &HostValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        HostValue::None => py.None(),
        HostValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        HostValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        HostValue::UInt(u) => u.into_pyobject(py)?.into_any().unbind(),
        HostValue::Float32(f) => f64::from(*f).into_pyobject(py)?.into_any().unbind(),
        HostValue::Float64(f) => f.into_pyobject(py)?.into_any().unbind(),
        HostValue::Complex64(re, im) => {
            pyo3::types::PyComplex::from_doubles(py, f64::from(*re), f64::from(*im))
                .into_any()
                .unbind()
        }
        HostValue::Complex128(re, im) => pyo3::types::PyComplex::from_doubles(py, *re, *im)
            .into_any()
            .unbind(),
        HostValue::Tuple(items) => {
            let items = items
                .iter()
                .map(|i| host_result(py, i))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any().unbind()
        }
        HostValue::Struct { name, fields } => {
            let fields = fields
                .iter()
                .map(|(n, v)| Ok((n.clone(), host_result(py, v)?)))
                .collect::<PyResult<Vec<_>>>()?;
            ("struct", name.clone(), fields)
                .into_pyobject(py)?
                .into_any()
                .unbind()
        }
        HostValue::Array { data, .. } => PyBytes::new(py, data).into_any().unbind(),
    })
}

#[pymethods]
impl HostFunc {
    /// Calls the function: returns `(result, [array bytes after the call, ...])`.
    fn call(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
    ) -> PyResult<(Py<PyAny>, Vec<Py<PyAny>>)> {
        let params = self.inner.params();
        if args.len() != params.len() {
            return Err(PyTypeError::new_err(format!(
                "`{}` takes {} arguments, {} given",
                self.inner.name(),
                params.len(),
                args.len()
            )));
        }
        let mut values = params
            .iter()
            .zip(args.iter())
            .map(|(t, v)| host_value(t, &v))
            .collect::<PyResult<Vec<_>>>()?;
        let f = self.inner.clone();
        interrupt::arm(py);
        let r = py.detach(|| f.call_mut(&mut values));
        let r = r.map_err(|e| to_py(py, Error::Host(e)))?;
        let arrays = values
            .iter()
            .filter(|v| matches!(v, HostValue::Array { .. }))
            .map(|v| host_result(py, v))
            .collect::<PyResult<Vec<_>>>()?;
        Ok((host_result(py, &r)?, arrays))
    }

    /// Calls the function on the arguments' own memory: array arguments (at any depth of a
    /// tuple or struct) come as `(data, shape, strides in elements)` of host memory that the
    /// caller keeps alive, readable, and writable where [`HostFunc::may_store`] says, for
    /// the call; the function reads and writes it in place, so two arguments that share
    /// memory see each other's stores, as on the device. Other values as
    /// [`Launcher::launch`] reads them (`names`, the parameters' names, for the errors).
    /// Returns the result.
    #[pyo3(signature = (args, names=None))]
    fn call_raw(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        names: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let params = self.inner.params();
        if args.len() != params.len() {
            return Err(PyTypeError::new_err(format!(
                "`{}` takes {} arguments, {} given",
                self.inner.name(),
                params.len(),
                args.len()
            )));
        }
        let values = params
            .iter()
            .zip(args.iter())
            .enumerate()
            .map(|(k, (t, v))| {
                arg_value(t, &v).map_err(|e| {
                    let name = names.as_ref().and_then(|n| n.get(k));
                    let what = match name {
                        Some(n) => {
                            format!("{}(): argument {k} (parameter `{n}`)", self.inner.name())
                        }
                        None => format!("{}(): argument {k}", self.inner.name()),
                    };
                    name_argument_error(py, e, &what)
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let f = self.inner.clone();
        // SAFETY: the Python side passes the data addresses of NumPy arrays it holds for the
        // call (the `args` tuple keeps them alive), with their own shapes and strides, and
        // only arrays it checked writable where the function may store
        // (`pydevice._core.Func.__call__`). Every element access is bounds-checked against
        // the descriptor, and `check_array` refused descriptors that wrap.
        interrupt::arm(py);
        let r = py.detach(|| unsafe { f.call_raw(&values) });
        let r = r.map_err(|e| to_py(py, Error::Host(e)))?;
        host_result(py, &r)
    }

    /// Whether the function may store to the memory parameter `index` holds.
    fn may_store(&self, index: usize) -> bool {
        self.inner.may_store(index)
    }

    /// The C ABI address of the compiled function.
    #[getter]
    fn address(&self) -> usize {
        self.inner.as_ptr() as usize
    }

    /// The parameter types, printed.
    #[getter]
    fn param_types(&self) -> Vec<String> {
        self.inner.params().iter().map(|t| t.to_string()).collect()
    }

    /// The result type, printed.
    #[getter]
    fn result_type(&self) -> String {
        self.inner.ret().to_string()
    }
}

/// Device memory owned by the package (for host NumPy arrays copied in and out).
#[pyclass(frozen, module = "pydevice._native")]
struct Buffer {
    device: Arc<Device>,
    buf: pydevice::runtime::DeviceBuffer,
}

#[pymethods]
impl Buffer {
    /// Copies `data` to new memory on GPU `ordinal`.
    #[staticmethod]
    fn upload(py: Python<'_>, ordinal: usize, data: &[u8]) -> PyResult<Buffer> {
        let r = py.detach(|| -> Result<_, RuntimeError> {
            let device = device(ordinal)?;
            let buf = device.upload(data)?;
            Ok(Buffer { device, buf })
        });
        r.map_err(|e| runtime_to_py(py, e))
    }

    /// The device address.
    #[getter]
    fn ptr(&self) -> u64 {
        self.device.address(&self.buf)
    }

    /// Copies the memory back (after the default stream's work).
    fn download<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let r = py.detach(|| self.device.download(&self.buf));
        let bytes = r.map_err(|e| runtime_to_py(py, e))?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// Reads a DLPack capsule (`__dlpack__()`'s result, `"dltensor"` or `"dltensor_versioned"`)
/// through the crate's [`pydevice::runtime::DeviceArray`] readers: returns
/// `(data, dtype, shape, strides_in_elements, device_or_None, read_only)`. The capsule keeps ownership
/// (its destructor releases the producer's tensor).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn dlpack_describe(
    py: Python<'_>,
    capsule: &Bound<'_, PyAny>,
) -> PyResult<(u64, String, Vec<u64>, Vec<i64>, Option<i32>, bool)> {
    use pyo3::ffi;
    let cap = capsule.as_ptr();
    // SAFETY: the capsule API checks the object's type and name; the pointer it returns is
    // the producer's managed tensor, valid while the capsule lives (we hold it).
    let array = unsafe {
        if ffi::PyCapsule_IsValid(cap, c"dltensor".as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, c"dltensor".as_ptr());
            pydevice::runtime::DeviceArray::from_dlpack_managed(p.cast())
        } else if ffi::PyCapsule_IsValid(cap, c"dltensor_versioned".as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, c"dltensor_versioned".as_ptr());
            pydevice::runtime::DeviceArray::from_dlpack_versioned(p.cast())
        } else {
            return Err(PyTypeError::new_err(
                "not a DLPack capsule (expected a `dltensor` or `dltensor_versioned` capsule)",
            ));
        }
    };
    let a = array.map_err(|e| runtime_to_py(py, e))?;
    Ok((
        a.data,
        a.dtype.to_string(),
        a.shape,
        a.strides,
        a.device,
        a.readonly,
    ))
}

/// Encodes a TMA tensor map (docs/semantics.md §18.4) of the array at device address
/// `data` on GPU `ordinal` (`dtype` a dtype name, `shape` and element `strides` outermost
/// first) whose boxes have `box_shape`, swizzled by `swizzle` bytes: the map's 16 words.
#[pyfunction]
#[pyo3(signature = (ordinal, data, dtype, shape, strides, box_shape, swizzle=0))]
#[allow(clippy::too_many_arguments)]
fn tensor_map_tiled(
    py: Python<'_>,
    ordinal: usize,
    data: u64,
    dtype: &str,
    shape: Vec<u64>,
    strides: Vec<i64>,
    box_shape: Vec<u32>,
    swizzle: u32,
) -> PyResult<Vec<u64>> {
    let dtype = pydevice::types::Scalar::from_name(dtype)
        .ok_or_else(|| PyValueError::new_err(format!("tensor map: unknown dtype `{dtype}`")))?;
    let a = pydevice::runtime::DeviceArray {
        data,
        dtype,
        shape,
        strides,
        readonly: false,
        device: None,
    };
    let r = py.detach(|| device(ordinal).and_then(|d| d.tensor_map_tiled(&a, &box_shape, swizzle)));
    r.map(|m| m.words.to_vec())
        .map_err(|e| runtime_to_py(py, e))
}

/// The CPU back end's tensor map (`pydevice::runtime::cpu_tma`) of host array `data`, with
/// the arguments and checks of [`tensor_map_tiled`]: its 16 words, which only kernels run
/// on the CPU back end read.
#[pyfunction]
#[pyo3(signature = (data, dtype, shape, strides, box_shape, swizzle=0))]
fn cpu_tensor_map_tiled(
    py: Python<'_>,
    data: u64,
    dtype: &str,
    shape: Vec<u64>,
    strides: Vec<i64>,
    box_shape: Vec<u32>,
    swizzle: u32,
) -> PyResult<Vec<u64>> {
    let dtype = pydevice::types::Scalar::from_name(dtype)
        .ok_or_else(|| PyValueError::new_err(format!("tensor map: unknown dtype `{dtype}`")))?;
    let a = pydevice::runtime::DeviceArray {
        data,
        dtype,
        shape,
        strides,
        readonly: false,
        device: None,
    };
    pydevice::runtime::cpu_tma::tensor_map_tiled(&a, &box_shape, swizzle)
        .map(|m| m.words.to_vec())
        .map_err(|e| cpu_to_py(py, "tensor map", e))
}

/// True when the CUDA driver library can be loaded.
#[pyfunction]
fn driver_available() -> bool {
    pydevice::runtime::driver_available()
}

/// The architecture of GPU `ordinal`, `sm_XX` (opens it).
#[pyfunction]
fn device_arch(py: Python<'_>, ordinal: usize) -> PyResult<String> {
    let r = py.detach(|| device(ordinal).and_then(|d| d.arch()));
    r.map(|a| a.to_string()).map_err(|e| runtime_to_py(py, e))
}

/// The name of GPU `ordinal`.
#[pyfunction]
fn device_name(py: Python<'_>, ordinal: usize) -> PyResult<String> {
    let r = py.detach(|| device(ordinal).and_then(|d| d.name()));
    r.map_err(|e| runtime_to_py(py, e))
}

/// Waits for the work on stream handle `stream` of GPU `ordinal`, reporting faults.
#[pyfunction]
#[pyo3(signature = (ordinal, stream=None))]
fn synchronize(py: Python<'_>, ordinal: usize, stream: Option<usize>) -> PyResult<()> {
    let r = py.detach(|| {
        let d = device(ordinal)?;
        match stream {
            // SAFETY: the caller keeps the stream alive for the call.
            Some(h) => d.synchronize_stream(&unsafe { Stream::from_handle(h) }),
            None => d.synchronize_all(),
        }
    });
    r.map_err(|e| runtime_to_py(py, e))
}

/// Turns the on-disk specialization cache on (a directory) or off (`None`). The directory is
/// created `0700`; one owned by another user or writable by others raises `ValueError`
/// (the cache's trust model: see the README).
///
/// `shared=True` trusts everyone who can write the directory and read its key (a cache
/// shared by a group on purpose: the crate's `DiskTrust::Shared`).
#[pyfunction]
#[pyo3(signature = (dir=None, shared=false))]
fn set_disk_cache(dir: Option<std::path::PathBuf>, shared: bool) -> PyResult<()> {
    let trust = if shared {
        pydevice::cache::DiskTrust::Shared
    } else {
        pydevice::cache::DiskTrust::Private
    };
    let c = match dir {
        Some(d) => KernelCache::with_disk_trusting(&d, trust).map_err(|e| {
            // The message in Python's terms: the option is `shared=True` here.
            let hint = if e.shareable {
                " (pass shared=True to pydevice.set_cache_dir to share a cache on purpose)"
            } else {
                ""
            };
            PyValueError::new_err(format!(
                "the kernel cache directory {} cannot be used: {}{hint}",
                e.path.display(),
                e.message
            ))
        })?,
        None => KernelCache::new(),
    };
    *cache().write().unwrap_or_else(|e| e.into_inner()) = Arc::new(c);
    Ok(())
}

/// The cache's counters: hits, misses, compiles, disk hits, writes, waits (for another
/// process compiling the same kernel), ignored entries and write errors.
#[pyfunction]
fn cache_stats(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let s = current_cache().stats();
    let d = PyDict::new(py);
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    d.set_item("compiles", s.compiles)?;
    d.set_item("disk_hits", s.disk_hits)?;
    d.set_item("disk_writes", s.disk_writes)?;
    d.set_item("disk_waits", s.disk_waits)?;
    d.set_item("disk_ignored", s.disk_ignored)?;
    d.set_item("disk_write_errors", s.disk_write_errors)?;
    Ok(d.unbind())
}

/// The spec's `machine_representation()`.
#[pyfunction]
fn machine_representation() -> &'static str {
    pydevice::machine_representation()
}

/// `random.seed(seed, thread=0)`: `rand`/`randn` in `@func`s called on the host (this OS
/// thread) continue the stream of `seed` as thread `thread` from its first call.
#[pyfunction]
#[pyo3(signature = (seed, thread=0))]
fn set_host_stream(seed: u64, thread: u64) {
    pydevice::random::set_host_stream(seed, thread);
}

/// The crate's version (also part of disk cache keys).
#[pyfunction]
fn compiler_version() -> &'static str {
    pydevice::cache::COMPILER_VERSION
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Module>()?;
    m.add_class::<Kernel>()?;
    m.add_class::<Launcher>()?;
    m.add_class::<HostFunc>()?;
    m.add_class::<CpuKernel>()?;
    m.add_class::<Buffer>()?;
    m.add_class::<kernels::Elementwise>()?;
    m.add_class::<kernels::KernelCall>()?;
    m.add_class::<kernels::ElementwiseCall>()?;
    m.add_class::<kernels::Reduction>()?;
    m.add_class::<kernels::ReductionCall>()?;
    m.add_class::<kernels::GuVectorize>()?;
    m.add_class::<kernels::GuCall>()?;
    m.add_class::<fast::Dispatcher>()?;
    m.add_class::<fuse::FuseDispatch>()?;
    m.add_class::<fast::Configured>()?;
    m.add("launch", fast::launch_function(m)?)?;
    m.add_function(wrap_pyfunction!(fast::register_array_type, m)?)?;
    m.add_function(wrap_pyfunction!(fast::register_scalar_type, m)?)?;
    m.add_function(wrap_pyfunction!(fast::register_struct_type, m)?)?;
    m.add_function(wrap_pyfunction!(fast::scalar_read, m)?)?;
    m.add_function(wrap_pyfunction!(calls::set_cupy_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(driver_available, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_describe, m)?)?;
    m.add_function(wrap_pyfunction!(device_arch, m)?)?;
    m.add_function(wrap_pyfunction!(tensor_map_tiled, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_tensor_map_tiled, m)?)?;
    m.add_function(wrap_pyfunction!(device_name, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(set_disk_cache, m)?)?;
    m.add_function(wrap_pyfunction!(cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(machine_representation, m)?)?;
    m.add_function(wrap_pyfunction!(compiler_version, m)?)?;
    m.add_function(wrap_pyfunction!(set_host_stream, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(default_device, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(pointer_device, m)?)?;
    m.add_function(wrap_pyfunction!(stream_device, m)?)?;
    m.add_function(wrap_pyfunction!(can_access_peer, m)?)?;
    m.add_function(wrap_pyfunction!(enable_peer_access, m)?)?;
    m.add_function(wrap_pyfunction!(copy, m)?)?;
    Ok(())
}
