//! The repeated-launch fast path: one call from Python per launch.
//!
//! A [`Dispatcher`] belongs to one kernel. It maps a key made of each argument's kind (for a
//! CuPy array or PyTorch tensor: the dtype object, rank, layout and device; for a Python
//! `int`, `float` or `bool`: just that) and the GPU the launch runs on to the prepared
//! [`Launcher`] of that specialization. [`launch`] reads the arguments' facts straight from
//! the objects (the same facts DLPack would give, without making a capsule), finds the GPU
//! (the stream's, else the arrays', else the default one), looks the launcher up, writes
//! the arrays into a copy of its zeroed parameter buffer and launches without the GIL.
//! NumPy scalars (`np.float64(x)`, `np.int32(n)`, ...) and `@struct` instances have a fast
//! path too ([`read_launch_into`]): the Python side registers their types when it first meets
//! them ([`register_scalar_type`], [`register_struct_type`]) and the key holds the type. A
//! scalar's value is read from the object's memory, where NumPy's array scalars keep it
//! (`PyArrayScalar_VAL`: the C value right after the object header), once registration has
//! checked that layout on sample values against the value Python gives (else through
//! `__float__`/`__index__`, as before); a struct's fields are read by their interned names
//! into a flat list of scalar leaves (nested structs flattened), allocating nothing, and
//! written at the offsets each launcher laid out once for the struct's type.
//! Anything else (a first launch, host NumPy arrays, other array types, arrays on
//! different GPUs, bounds-checked kernels) returns to the Python path, which specializes
//! (or raises) and then [`Dispatcher::insert`]s the launcher.
//!
//! What a launch costs here is measured without a GPU by `bench/python/launch_host_cost.py`
//! (a dry-run launcher). The reads are the fewest that determine the launch: for a CuPy
//! array `data.ptr`, `data.device_id`, `dtype`, `_c_contiguous`, `ndim` and, for a
//! vector, `size` (else `shape`; strides and `itemsize` only for a non-contiguous array).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, RwLock};

use pydevice::abi::ArgValue;
use pydevice::types::Type;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyModule, PyString, PyTuple, PyType};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::{Launcher, dim3};

/// Whether the fast path releases the GIL around every launch (`PYDEVICE_LAUNCH_RELEASE_GIL=1`),
/// read once; by default a plain launch keeps it.
static RELEASE_GIL: LazyLock<bool> =
    LazyLock::new(|| std::env::var_os("PYDEVICE_LAUNCH_RELEASE_GIL").is_some_and(|v| v == "1"));

/// Array types with a fast path, registered by the Python side when it first meets them.
static CUPY_NDARRAY: OnceLock<Py<PyType>> = OnceLock::new();
static TORCH_TENSOR: OnceLock<Py<PyType>> = OnceLock::new();

/// The DLPack C exchange API of each registered array type (`None` inside: the type has none,
/// or one of a DLPack major version other than 1), looked up once at registration.
static CUPY_EXCHANGE: OnceLock<Option<Exchange>> = OnceLock::new();
static TORCH_EXCHANGE: OnceLock<Option<Exchange>> = OnceLock::new();

/// Registers `cupy.ndarray` (`kind="cupy"`) or `torch.Tensor` (`kind="torch"`), with the
/// type's DLPack C exchange API when it has one (`__dlpack_c_exchange_api__`).
#[pyfunction]
pub fn register_array_type(kind: &str, t: Bound<'_, PyType>) {
    let (cell, exchange) = match kind {
        "cupy" => (&CUPY_NDARRAY, &CUPY_EXCHANGE),
        "torch" => (&TORCH_TENSOR, &TORCH_EXCHANGE),
        _ => return,
    };
    let _ = exchange.set(exchange_api(&t));
    let _ = cell.set(t.unbind());
}

/// DLPack's `DLDevice` (dlpack.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// DLPack's `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// DLPack's `DLTensor`, as `dltensor_from_py_object_no_sync` fills it (a view: the producer
/// owns `shape` and `strides`, valid while the object lives).
#[repr(C)]
struct DlTensor {
    data: *mut std::ffi::c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

/// `kDLCUDA`.
const DL_CUDA: i32 = 2;

/// DLPack 1.x's `DLPackExchangeAPI`: a header (version, older table), then the producer's
/// functions. Only the two read here are typed.
#[repr(C)]
struct ExchangeApi {
    major: u32,
    minor: u32,
    prev: *const std::ffi::c_void,
    managed_tensor_allocator: *const std::ffi::c_void,
    managed_tensor_from_py_object_no_sync: *const std::ffi::c_void,
    managed_tensor_to_py_object_no_sync: *const std::ffi::c_void,
    dltensor_from_py_object_no_sync:
        Option<unsafe extern "C" fn(*mut std::ffi::c_void, *mut DlTensor) -> std::os::raw::c_int>,
    current_work_stream:
        Option<unsafe extern "C" fn(i32, i32, *mut *mut std::ffi::c_void) -> std::os::raw::c_int>,
}

/// A type's exchange table (static in the producer: it lives as long as the process).
#[derive(Clone, Copy)]
struct Exchange(&'static ExchangeApi);

// SAFETY: the table is immutable, process-lifetime data of the producer (DLPack's contract),
// and its functions are called only with the GIL held.
unsafe impl Send for Exchange {}
unsafe impl Sync for Exchange {}

/// The DLPack C exchange API of type `t`: its `__dlpack_c_exchange_api__`, a capsule named
/// `dlpack_exchange_api` (or, as `__c_dlpack_exchange_api__`, an int: PyTorch 2.9), of DLPack major
/// version 1 with a `dltensor_from_py_object_no_sync`; `None` otherwise.
fn exchange_api(t: &Bound<'_, PyType>) -> Option<Exchange> {
    let py = t.py();
    // The DLPack 1.3 name first, then the name PyTorch 2.9 published it under (an int).
    let attr = t
        .getattr(pyo3::intern!(py, "__dlpack_c_exchange_api__"))
        .or_else(|_| t.getattr(pyo3::intern!(py, "__c_dlpack_exchange_api__")))
        .ok()?;
    let ptr = if let Ok(i) = attr.extract::<usize>() {
        i as *const ExchangeApi
    } else {
        // SAFETY: `attr` is a live object; PyCapsule_GetPointer checks that it is a capsule of
        // that name and sets an error (cleared below) when it is not.
        let p = unsafe {
            pyo3::ffi::PyCapsule_GetPointer(attr.as_ptr(), c"dlpack_exchange_api".as_ptr())
        };
        if p.is_null() {
            let _ = PyErr::take(py);
            return None;
        }
        p as *const ExchangeApi
    };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the producer publishes a pointer to its static table (DLPack's contract).
    let api: &'static ExchangeApi = unsafe { &*ptr };
    (api.major == 1 && api.dltensor_from_py_object_no_sync.is_some()).then_some(Exchange(api))
}

/// The dtype part of a key read through DLPack: its code, bits and lanes, with the top bit
/// set (no object address has it), so it never equals a dtype object's address.
fn dl_dtype_key(d: DlDataType) -> usize {
    (1usize << 63)
        | (usize::from(d.code) << 24)
        | (usize::from(d.bits) << 16)
        | usize::from(d.lanes)
}

/// Reads a CUDA array through its type's DLPack exchange API (`dltensor_from_py_object_no_sync`:
/// one C call, no Python attribute or method); `None` for memory elsewhere or an object the
/// producer refuses (its error cleared: the Python path decides).
fn read_dlpack(py: Python<'_>, x: Exchange, a: &Bound<'_, PyAny>, torch: bool) -> Option<Read> {
    let f = x.0.dltensor_from_py_object_no_sync?;
    let mut t = DlTensor {
        data: std::ptr::null_mut(),
        device: DlDevice::default(),
        ndim: 0,
        dtype: DlDataType::default(),
        shape: std::ptr::null(),
        strides: std::ptr::null(),
        byte_offset: 0,
    };
    // SAFETY: the object is of the type the table was published on (checked by the caller),
    // the GIL is held, and `t` is writable.
    if unsafe { f(a.as_ptr().cast(), &mut t) } != 0 {
        let _ = PyErr::take(py);
        return None;
    }
    if t.device.device_type != DL_CUDA || t.ndim <= 0 || t.shape.is_null() {
        return None;
    }
    let n = t.ndim as usize;
    // SAFETY: the producer filled `ndim` extents (and strides, when not null), valid while the
    // object lives, which the caller's borrow ensures.
    let shape: SmallVec<[u64; 4]> = unsafe { std::slice::from_raw_parts(t.shape, n) }
        .iter()
        .map(|&x| x as u64)
        .collect();
    let strides: SmallVec<[i64; 4]> = if t.strides.is_null() {
        c_strides(&shape)
    } else {
        // SAFETY: as above.
        SmallVec::from_slice(unsafe { std::slice::from_raw_parts(t.strides, n) })
    };
    let key = ArgKey::Array {
        torch,
        dtype: dl_dtype_key(t.dtype),
        ndim: n as u8,
        layout: layout_of(&shape, &strides),
        device: t.device.device_id,
    };
    let data = (t.data as u64).wrapping_add(t.byte_offset);
    Some((
        key,
        ArgVal::Array {
            data,
            shape,
            strides,
        },
        None,
    ))
}

/// The current work stream of a framework on GPU `device`, through its exchange API.
fn dlpack_current_stream(x: Exchange, device: i32) -> Option<usize> {
    let f = x.0.current_work_stream?;
    let mut s: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: the GIL is held; `s` is writable.
    (unsafe { f(DL_CUDA, device, &mut s) } == 0).then_some(s as usize)
}

/// How a registered NumPy scalar type's value is read (its dtype's kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScalarKind {
    /// `int8` ... `int64`: read as an `i64`.
    Int,
    /// `uint8` ... `uint64`: read as a `u64`.
    UInt,
    /// `float16`, `float32`, `float64`: read as an `f64` (exact for all three).
    Float,
    /// `bool_`.
    Bool,
}

/// A registered NumPy scalar type: its kind, and its item size when its value may be read
/// straight from the object (registration checked the layout), else `None`.
#[derive(Clone, Copy, Debug)]
struct ScalarType {
    kind: ScalarKind,
    raw: Option<u8>,
}

/// A type registered for the fast path besides arrays and Python numbers.
#[derive(Clone)]
enum Registered {
    /// A NumPy scalar type with a plain dtype.
    Scalar(ScalarType),
    /// A `@struct` class: its field names, in order (interned).
    Struct(Arc<[Py<PyString>]>),
}

/// Registered types by type object address, each with its type object (kept alive, so the
/// address stays unique).
type Registry = FxHashMap<usize, (Py<PyType>, Registered)>;

/// The registered types. Read on every launch with such an argument, written once per type.
static REGISTERED: LazyLock<RwLock<Registry>> = LazyLock::new(|| RwLock::new(Registry::default()));

/// Registers a NumPy scalar type whose dtype kind is `kind` (`"i"`, `"u"`, `"f"` or `"b"`;
/// other kinds, complex and structured types keep the Python path) and whose item size is
/// `itemsize` (0: unknown, the value is then always read through Python's number protocol).
#[pyfunction]
#[pyo3(signature = (t, kind, itemsize=0))]
pub fn register_scalar_type(t: Bound<'_, PyType>, kind: &str, itemsize: usize) {
    let kind = match kind {
        "i" => ScalarKind::Int,
        "u" => ScalarKind::UInt,
        "f" => ScalarKind::Float,
        "b" => ScalarKind::Bool,
        _ => return,
    };
    let raw = raw_layout_checked(&t, kind, itemsize);
    register(t, Registered::Scalar(ScalarType { kind, raw }));
}

/// How the fast path reads scalars of registered type `t` (for tests): `"memory"` (from the
/// object, the layout checked at registration), `"protocol"` (`__float__`/`__index__`), or
/// `None` when `t` is not a registered scalar type.
#[pyfunction]
pub fn scalar_read(t: Bound<'_, PyType>) -> Option<&'static str> {
    match registered(&t)? {
        Registered::Scalar(ScalarType { raw: Some(_), .. }) => Some("memory"),
        Registered::Scalar(_) => Some("protocol"),
        Registered::Struct(_) => None,
    }
}

/// Where a NumPy array scalar keeps its value: right after the object header (NumPy's
/// `PyArrayScalar_VAL`; `np.float64`'s layout is `float`'s, the same place).
const SCALAR_VALUE_OFFSET: usize = std::mem::size_of::<pyo3::ffi::PyObject>();

/// Whether scalars of type `t` (kind `kind`, item size `size`) may be read from memory: the
/// size is one the reader knows, the instances are large enough, and the value read from
/// sample instances equals the value Python's number protocol gives for each. `Some(size)`
/// then; `None` keeps the protocol.
fn raw_layout_checked(t: &Bound<'_, PyType>, kind: ScalarKind, size: usize) -> Option<u8> {
    let known = match kind {
        ScalarKind::Int | ScalarKind::UInt => matches!(size, 1 | 2 | 4 | 8),
        ScalarKind::Float => matches!(size, 2 | 4 | 8),
        ScalarKind::Bool => size == 1,
    };
    if !known {
        return None;
    }
    let py = t.py();
    let basic: usize = t
        .getattr(pyo3::intern!(py, "__basicsize__"))
        .and_then(|b| b.extract())
        .ok()?;
    if basic < SCALAR_VALUE_OFFSET + size {
        return None;
    }
    let samples: &[f64] = match kind {
        ScalarKind::Int => &[5.0, -7.0, 0.0, 100.0],
        ScalarKind::UInt => &[5.0, 3.0, 0.0, 200.0],
        ScalarKind::Float => &[5.0, -2.25, 0.0, 1.0e-3],
        ScalarKind::Bool => &[1.0, 0.0],
    };
    for &x in samples {
        let sample = if matches!(kind, ScalarKind::Float) {
            t.call1((x,))
        } else {
            t.call1((x as i64,))
        }
        .ok()?;
        if !sample.get_type().is(t) {
            return None;
        }
        let want = protocol_value(&sample, kind).ok()??;
        // SAFETY: `sample` is a live instance of `t`, whose instances are at least
        // `SCALAR_VALUE_OFFSET + size` bytes long (checked above).
        let got = unsafe { raw_value(sample.as_ptr(), kind, size as u8) };
        let same = match (&want, &got) {
            (ArgVal::Int(a), ArgVal::Int(b)) => a == b,
            (ArgVal::UInt(a), ArgVal::UInt(b)) => a == b,
            (ArgVal::Float(a), ArgVal::Float(b)) => a.to_bits() == b.to_bits(),
            (ArgVal::Bool(a), ArgVal::Bool(b)) => a == b,
            _ => false,
        };
        if !same {
            return None;
        }
    }
    Some(size as u8)
}

/// A scalar's value through Python's number protocol (`__index__`, `__float__`, truth): what
/// the Python path's `item()` gives, as a number; `None` for an integer outside 64 bits.
fn protocol_value(a: &Bound<'_, PyAny>, kind: ScalarKind) -> PyResult<Option<ArgVal>> {
    Ok(Some(match kind {
        ScalarKind::Int => match a.extract::<i64>() {
            Ok(x) => ArgVal::Int(x),
            Err(_) => return Ok(None),
        },
        ScalarKind::UInt => match a.extract::<u64>() {
            Ok(x) => ArgVal::UInt(x),
            Err(_) => return Ok(None),
        },
        ScalarKind::Float => ArgVal::Float(a.extract()?),
        ScalarKind::Bool => ArgVal::Bool(a.is_truthy()?),
    }))
}

/// The value of a NumPy scalar of `kind` and item size `size`, read from its memory.
///
/// # Safety
/// `p` must point to a live object of a type for which [`raw_layout_checked`] gave `size`.
unsafe fn raw_value(p: *mut pyo3::ffi::PyObject, kind: ScalarKind, size: u8) -> ArgVal {
    // SAFETY: the caller's contract: the value's bytes lie inside the object.
    unsafe {
        let v = p.cast::<u8>().add(SCALAR_VALUE_OFFSET);
        match (kind, size) {
            (ScalarKind::Int, 1) => ArgVal::Int(i64::from(v.cast::<i8>().read_unaligned())),
            (ScalarKind::Int, 2) => ArgVal::Int(i64::from(v.cast::<i16>().read_unaligned())),
            (ScalarKind::Int, 4) => ArgVal::Int(i64::from(v.cast::<i32>().read_unaligned())),
            (ScalarKind::Int, _) => ArgVal::Int(v.cast::<i64>().read_unaligned()),
            (ScalarKind::UInt, 1) => ArgVal::UInt(u64::from(v.read())),
            (ScalarKind::UInt, 2) => ArgVal::UInt(u64::from(v.cast::<u16>().read_unaligned())),
            (ScalarKind::UInt, 4) => ArgVal::UInt(u64::from(v.cast::<u32>().read_unaligned())),
            (ScalarKind::UInt, _) => ArgVal::UInt(v.cast::<u64>().read_unaligned()),
            (ScalarKind::Float, 2) => {
                ArgVal::Float(f16_bits_to_f64(v.cast::<u16>().read_unaligned()))
            }
            (ScalarKind::Float, 4) => ArgVal::Float(f64::from(v.cast::<f32>().read_unaligned())),
            (ScalarKind::Float, _) => ArgVal::Float(v.cast::<f64>().read_unaligned()),
            (ScalarKind::Bool, _) => ArgVal::Bool(v.read() != 0),
        }
    }
}

/// An IEEE half's value as a double, exactly (NaN payloads kept, as NumPy converts them).
fn f16_bits_to_f64(h: u16) -> f64 {
    let sign = u64::from(h >> 15) << 63;
    let exp = (h >> 10) & 0x1f;
    let frac = u64::from(h & 0x3ff);
    match exp {
        0 => {
            let m = frac as f64 * 2f64.powi(-24); // subnormal (or zero): exact
            if sign != 0 { -m } else { m }
        }
        0x1f => f64::from_bits(sign | 0x7ff0_0000_0000_0000 | (frac << 42)),
        e => f64::from_bits(sign | ((u64::from(e) + 1008) << 52) | (frac << 42)),
    }
}

/// Registers a `@struct` class with its field names, in declaration order.
#[pyfunction]
pub fn register_struct_type(t: Bound<'_, PyType>, fields: Vec<Bound<'_, PyString>>) {
    let py = t.py();
    let names: Arc<[Py<PyString>]> = fields
        .iter()
        .map(|f| PyString::intern(py, &f.to_string_lossy()).unbind())
        .collect();
    register(t, Registered::Struct(names));
}

fn register(t: Bound<'_, PyType>, r: Registered) {
    let old = REGISTERED
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(t.as_ptr() as usize, (t.unbind(), r));
    drop(old); // outside the lock: dropping a Python object may run Python code
}

/// The registration of `t`, copied out (the lock is never held across Python code).
fn registered(t: &Bound<'_, PyType>) -> Option<Registered> {
    let map = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    map.get(&(t.as_ptr() as usize)).map(|(_, r)| r.clone())
}

/// What determines the specialization, per argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ArgKey {
    Array {
        torch: bool,
        /// The dtype object's address; the map entry holds a reference, so it stays unique.
        dtype: usize,
        ndim: u8,
        /// 0: C-contiguous, 1: F-contiguous (and not C), 2: any.
        layout: u8,
        device: i32,
    },
    Int,
    Float,
    Bool,
    /// A registered NumPy scalar type (the type object's address; the registry keeps it).
    Scalar(usize),
    /// A registered `@struct` class (its address). Its fields' kinds follow it in the key,
    /// depth first (a nested struct's own marker, then its fields); the field count is the
    /// type's, so the listing is unambiguous and needs no allocation.
    Struct(usize),
}

/// An argument's value as read on the fast path.
pub(crate) enum ArgVal {
    Array {
        data: u64,
        shape: SmallVec<[u64; 4]>,
        strides: SmallVec<[i64; 4]>,
    },
    Int(i64),
    /// An unsigned NumPy integer.
    UInt(u64),
    Float(f64),
    Bool(bool),
    /// A `@struct` instance: its `n` scalar leaves (nested structs flattened depth first,
    /// the order of `abi::scalar_leaves`) follow it in the value list.
    Struct(u32),
}

pub(crate) type Key = SmallVec<[ArgKey; 8]>;

/// The values read for a launch: one per parameter, a struct's leaves after it.
pub(crate) type Vals = SmallVec<[ArgVal; 8]>;

/// How deeply nested a struct argument the fast path reads (deeper ones take the Python
/// path, which refuses past its own limit).
const MAX_STRUCT_DEPTH: usize = 16;

struct Prepared {
    launcher: Py<Launcher>,
    /// The dtype objects named in the key, kept alive.
    _dtypes: Vec<Py<PyAny>>,
}

/// One kernel's prepared launchers by argument kinds and GPU, and its last stream.
#[pyclass(frozen, module = "pydevice._native")]
pub struct Dispatcher {
    /// Hashed with rustc-hash's Fx hash: the keys are a few small integers per argument,
    /// made by this process, so SipHash's resistance to chosen keys buys nothing here.
    map: RwLock<FxHashMap<(Key, u32), Prepared>>,
    /// The last stream object (kept alive, so its address identifies it), its handle and its
    /// GPU (`None` for a default stream).
    stream: Mutex<Option<LastStream>>,
    /// How many launches took the fast path (for tests and benchmarks: `fast_launches`).
    fast_launches: AtomicU64,
}

/// A stream object, its handle and its GPU.
type LastStream = (Py<PyAny>, usize, Option<u32>);

fn layout_of(shape: &[u64], strides: &[i64]) -> u8 {
    let mut expect = 1i64;
    let mut c = true;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if n != 1 && s != expect {
            c = false;
            break;
        }
        expect = expect.wrapping_mul(n as i64);
    }
    if c {
        return 0;
    }
    expect = 1;
    for (&n, &s) in shape.iter().zip(strides) {
        if n != 1 && s != expect {
            return 2;
        }
        expect = expect.wrapping_mul(n as i64);
    }
    1
}

/// A device address from a Python int. Addresses are below 2**63 in practice, and reading
/// an `i64` (`PyLong_AsLong`) is several times cheaper than a `u64`
/// (`PyLong_AsUnsignedLongLong`, which goes through a byte array for ints of more than one
/// digit); larger values and errors take the `u64` path.
pub(crate) fn address(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    match v.extract::<i64>() {
        Ok(x) if x >= 0 => Ok(x as u64),
        _ => v.extract::<u64>(),
    }
}

/// Row-major strides, in elements, of a shape.
fn c_strides(shape: &[u64]) -> SmallVec<[i64; 4]> {
    let mut out: SmallVec<[i64; 4]> = SmallVec::from_elem(1, shape.len());
    let mut acc = 1i64;
    for d in (0..shape.len()).rev() {
        out[d] = acc;
        acc = acc.wrapping_mul(shape[d] as i64);
    }
    out
}

fn ints<T: for<'a> FromPyObject<'a>>(t: &Bound<'_, PyAny>) -> PyResult<Option<SmallVec<[T; 4]>>> {
    let Ok(t) = t.cast::<PyTuple>() else {
        return Ok(None);
    };
    let mut out = SmallVec::new();
    for x in t.iter() {
        out.push(x.extract::<T>()?);
    }
    Ok(Some(out))
}

/// One argument read on the fast path: its key, its value, and the dtype object to keep.
pub(crate) type Read = (ArgKey, ArgVal, Option<Py<PyAny>>);

/// Reads one argument; `None` when it has no fast path.
pub(crate) fn read(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<Option<Read>> {
    let t = a.get_type();
    if let Some(cp) = CUPY_NDARRAY.get()
        && t.is(cp.bind(py))
    {
        if let Some(Some(x)) = CUPY_EXCHANGE.get() {
            return Ok(read_dlpack(py, *x, a, false));
        }
        let mem = a.getattr(pyo3::intern!(py, "data"))?;
        let data = address(&mem.getattr(pyo3::intern!(py, "ptr"))?)?;
        let device: i32 = mem.getattr(pyo3::intern!(py, "device_id"))?.extract()?;
        // A C-contiguous array (the common case) needs neither its strides nor its item
        // size: they follow from the shape; a vector's shape is its `size` (an int, where
        // `shape` builds a tuple per read), strided or not.
        let contiguous = a
            .getattr(pyo3::intern!(py, "_c_contiguous"))
            .is_ok_and(|c| c.is_truthy().unwrap_or(false));
        let ndim: usize = a.getattr(pyo3::intern!(py, "ndim"))?.extract()?;
        if ndim == 0 {
            return Ok(None);
        }
        let shape: SmallVec<[u64; 4]> = if ndim == 1 {
            smallvec::smallvec![a.getattr(pyo3::intern!(py, "size"))?.extract::<u64>()?]
        } else {
            match ints::<u64>(&a.getattr(pyo3::intern!(py, "shape"))?)? {
                Some(s) if s.len() == ndim => s,
                _ => return Ok(None),
            }
        };
        let strides: SmallVec<[i64; 4]> = if contiguous {
            c_strides(&shape)
        } else {
            let itemsize: i64 = a.getattr(pyo3::intern!(py, "itemsize"))?.extract()?;
            let Some(bytes) = ints::<i64>(&a.getattr(pyo3::intern!(py, "strides"))?)? else {
                return Ok(None);
            };
            if itemsize == 0 || bytes.iter().any(|s| s % itemsize != 0) {
                return Ok(None);
            }
            bytes.iter().map(|s| s / itemsize).collect()
        };
        let dtype = a.getattr(pyo3::intern!(py, "dtype"))?;
        let key = ArgKey::Array {
            torch: false,
            dtype: dtype.as_ptr() as usize,
            ndim: shape.len() as u8,
            layout: if contiguous {
                0
            } else {
                layout_of(&shape, &strides)
            },
            device,
        };
        return Ok(Some((
            key,
            ArgVal::Array {
                data,
                shape,
                strides,
            },
            Some(dtype.unbind()),
        )));
    }
    if let Some(tt) = TORCH_TENSOR.get()
        && t.is(tt.bind(py))
    {
        if let Some(Some(x)) = TORCH_EXCHANGE.get() {
            return Ok(read_dlpack(py, *x, a, true));
        }
        let device: i32 = a.call_method0(pyo3::intern!(py, "get_device"))?.extract()?;
        if device < 0 {
            return Ok(None); // on the CPU: the Python path says why it is refused
        }
        let data = address(&a.call_method0(pyo3::intern!(py, "data_ptr"))?)?;
        let Some(shape) = ints::<u64>(&a.getattr(pyo3::intern!(py, "shape"))?)? else {
            return Ok(None);
        };
        let Some(strides) = ints::<i64>(&a.call_method0(pyo3::intern!(py, "stride"))?)? else {
            return Ok(None);
        };
        if shape.is_empty() {
            return Ok(None);
        }
        let dtype = a.getattr(pyo3::intern!(py, "dtype"))?;
        let key = ArgKey::Array {
            torch: true,
            dtype: dtype.as_ptr() as usize,
            ndim: shape.len() as u8,
            layout: layout_of(&shape, &strides),
            device,
        };
        return Ok(Some((
            key,
            ArgVal::Array {
                data,
                shape,
                strides,
            },
            Some(dtype.unbind()),
        )));
    }
    if a.is_exact_instance_of::<PyBool>() {
        return Ok(Some((ArgKey::Bool, ArgVal::Bool(a.extract()?), None)));
    }
    if a.is_exact_instance_of::<PyInt>() {
        return Ok(match a.extract::<i64>() {
            Ok(i) => Some((ArgKey::Int, ArgVal::Int(i), None)),
            Err(_) => None,
        });
    }
    if a.is_exact_instance_of::<PyFloat>() {
        return Ok(Some((ArgKey::Float, ArgVal::Float(a.extract()?), None)));
    }
    Ok(None)
}

/// Reads one kernel argument into `key` and `vals`: [`read`]'s kinds, NumPy scalars and
/// `@struct` instances of registered types; `false` (the lists then hold partial entries)
/// when it has no fast path. The value is what the Python path passes: a scalar's `item()`,
/// a struct's fields in order (each read the same way, nested structs flattened).
pub(crate) fn read_launch_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    key: &mut Key,
    vals: &mut Vals,
    keep: Option<&mut Vec<Py<PyAny>>>,
) -> PyResult<bool> {
    if let Some((k, v, d)) = read(py, a)? {
        key.push(k);
        vals.push(v);
        if let (Some(keep), Some(d)) = (keep, d) {
            keep.push(d);
        }
        return Ok(true);
    }
    let t = a.get_type();
    match registered(&t) {
        Some(Registered::Scalar(st)) => {
            let Some(v) = scalar_value(a, st)? else {
                return Ok(false);
            };
            key.push(ArgKey::Scalar(t.as_ptr() as usize));
            vals.push(v);
            Ok(true)
        }
        Some(Registered::Struct(names)) => {
            let at = vals.len();
            vals.push(ArgVal::Struct(0));
            if !read_fields(py, a, t.as_ptr() as usize, &names, key, vals, 0)? {
                return Ok(false);
            }
            vals[at] = ArgVal::Struct((vals.len() - at - 1) as u32);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// A registered NumPy scalar's value: from its memory when registration checked the
/// layout, else through the number protocol.
fn scalar_value(a: &Bound<'_, PyAny>, st: ScalarType) -> PyResult<Option<ArgVal>> {
    match st.raw {
        // SAFETY: `a` is a live instance of exactly the registered type (the registry is
        // keyed by exact type), for which `raw_layout_checked` gave this size.
        Some(size) => Ok(Some(unsafe { raw_value(a.as_ptr(), st.kind, size) })),
        None => protocol_value(a, st.kind),
    }
}

/// Reads the fields of struct `a` (type address `id`, field names `names`): its marker and
/// its fields' kinds into `key`, its scalar leaves into `vals`; `false` when a field has no
/// fast path (arrays in structs keep the Python path: their dtype objects would need
/// keeping alive here too).
fn read_fields(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    id: usize,
    names: &[Py<PyString>],
    key: &mut Key,
    vals: &mut Vals,
    depth: usize,
) -> PyResult<bool> {
    if depth >= MAX_STRUCT_DEPTH {
        return Ok(false);
    }
    key.push(ArgKey::Struct(id));
    for n in names {
        // A field the instance lacks takes the Python path, which says so.
        let Ok(f) = a.getattr(n.bind(py)) else {
            let _ = PyErr::take(py);
            return Ok(false);
        };
        if f.is_exact_instance_of::<PyFloat>() {
            key.push(ArgKey::Float);
            vals.push(ArgVal::Float(f.extract()?));
            continue;
        }
        if f.is_exact_instance_of::<PyBool>() {
            key.push(ArgKey::Bool);
            vals.push(ArgVal::Bool(f.extract()?));
            continue;
        }
        if f.is_exact_instance_of::<PyInt>() {
            let Ok(i) = f.extract::<i64>() else {
                return Ok(false);
            };
            key.push(ArgKey::Int);
            vals.push(ArgVal::Int(i));
            continue;
        }
        let t = f.get_type();
        match registered(&t) {
            Some(Registered::Scalar(st)) => {
                let Some(v) = scalar_value(&f, st)? else {
                    return Ok(false);
                };
                key.push(ArgKey::Scalar(t.as_ptr() as usize));
                vals.push(v);
            }
            Some(Registered::Struct(inner)) => {
                if !read_fields(py, &f, t.as_ptr() as usize, &inner, key, vals, depth + 1)? {
                    return Ok(false);
                }
            }
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// The value a scalar parameter (or struct field) of type `t` gets from a NumPy scalar or a
/// number read on the fast path, converted as the Python path's `arg_value` converts the
/// Python object; `None` where that path would raise or convert otherwise (the launch then
/// takes the Python path).
fn launch_value(t: &Type, v: &ArgVal) -> Option<ArgValue> {
    use pydevice::types::Scalar;
    Some(match (t, v) {
        (Type::Scalar(s), ArgVal::Bool(b)) if *s == Scalar::Bool => ArgValue::Bool(*b),
        (Type::Scalar(s), _) if *s == Scalar::Bool || s.is_complex() => return None,
        (Type::Scalar(s), ArgVal::Float(x)) if s.is_float() => ArgValue::Float(*x),
        (Type::Scalar(s), ArgVal::Int(x)) if s.is_float() => ArgValue::Float(*x as f64),
        (Type::Scalar(s), ArgVal::UInt(x)) if s.is_float() => ArgValue::Float(*x as f64),
        (Type::Scalar(s), ArgVal::Int(x)) if s.is_signed() => ArgValue::Int(*x),
        (Type::Scalar(s), ArgVal::UInt(x)) if s.is_signed() => {
            ArgValue::Int(i64::try_from(*x).ok()?)
        }
        (Type::Scalar(s), ArgVal::UInt(x)) if !s.is_float() => ArgValue::UInt(*x),
        (Type::Scalar(s), ArgVal::Int(x)) if !s.is_float() => {
            ArgValue::UInt(u64::try_from(*x).ok()?)
        }
        _ => return None,
    })
}

/// Reads every argument; `None` when one has no fast path, else the key, the values and
/// the number of arguments. The dtype objects named in the key are pushed to `keep` when
/// given (only [`Dispatcher::insert`] needs them).
fn read_all<'py>(
    py: Python<'py>,
    args: impl Iterator<Item = Bound<'py, PyAny>>,
    mut keep: Option<&mut Vec<Py<PyAny>>>,
) -> PyResult<Option<(Key, Vals, usize)>> {
    let mut key = Key::new();
    let mut vals = Vals::new();
    let mut n = 0;
    for a in args {
        if !read_launch_into(py, &a, &mut key, &mut vals, keep.as_deref_mut())? {
            return Ok(None);
        }
        n += 1;
    }
    Ok(Some((key, vals, n)))
}

/// The GPU of a stream handle: `None` for the default streams (0, 1 and 2).
fn handle_device(py: Python<'_>, h: usize) -> PyResult<Option<u32>> {
    if h <= 2 {
        return Ok(None);
    }
    Ok(crate::stream_device(py, h)?.map(|d| d as u32))
}

/// The GPU a launch runs on: the stream's, else the first array's, else the default one;
/// `None` when the arrays disagree with it or each other (the Python path raises the error
/// that names both).
fn launch_device(stream: Option<u32>, key: &Key) -> Option<u32> {
    let mut dev = stream;
    for k in key {
        if let ArgKey::Array { device, .. } = k {
            let d = *device as u32;
            match dev {
                None => dev = Some(d),
                Some(x) if x != d => return None,
                Some(_) => {}
            }
        }
    }
    Some(
        dev.unwrap_or_else(|| {
            crate::DEFAULT_DEVICE.load(std::sync::atomic::Ordering::Relaxed) as u32
        }),
    )
}

/// `torch._C._cuda_getCurrentRawStream` (PyTorch's current stream of a device, as an int),
/// looked up at the first launch of a tensor without a stream; `None` inside when this
/// PyTorch lacks it (the Python path then asks `torch.cuda.current_stream`).
static TORCH_RAW_STREAM: OnceLock<Option<Py<PyAny>>> = OnceLock::new();

/// The stream of a launch given `stream=None`, as the Python path's `_implicit_stream`
/// chooses it (docs/semantics.md §13.3): the current stream of the first array's framework
/// (PyTorch's on the tensor's device, CuPy's current stream), else the legacy default stream
/// (0). `None` when the fast path cannot tell (the Python path decides).
fn implicit_stream(py: Python<'_>, key: &Key) -> PyResult<Option<usize>> {
    for k in key {
        if let ArgKey::Array { torch, device, .. } = k {
            if !*torch {
                if let Some(Some(x)) = CUPY_EXCHANGE.get() {
                    return Ok(dlpack_current_stream(*x, *device));
                }
                return crate::calls::cupy_current_stream(py);
            }
            if let Some(Some(x)) = TORCH_EXCHANGE.get() {
                return Ok(dlpack_current_stream(*x, *device));
            }
            let f = match TORCH_RAW_STREAM.get() {
                Some(f) => f,
                None => {
                    // Looked up outside the cell's initializer: an import may release the
                    // GIL, and another thread must not wait on the cell while holding it.
                    let f = py
                        .import("torch._C")
                        .and_then(|m| m.getattr("_cuda_getCurrentRawStream"))
                        .ok()
                        .map(Bound::unbind);
                    let _ = TORCH_RAW_STREAM.set(f);
                    match TORCH_RAW_STREAM.get() {
                        Some(f) => f,
                        None => return Ok(None), // unreachable: set above; the Python path decides
                    }
                }
            };
            let Some(f) = f else {
                return Ok(None);
            };
            return Ok(Some(f.bind(py).call1((*device,))?.extract()?));
        }
    }
    Ok(Some(0))
}

/// The handle of a stream object with `__cuda_stream__` (cuda.core), `cuda_stream` (PyTorch)
/// or `ptr` (CuPy), as the Python path's `_resolve_stream` reads it; `None` for other kinds
/// (the Python path knows them, and the error).
pub(crate) fn stream_handle(py: Python<'_>, s: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    Ok(Some(
        if let Ok(p) = s.getattr(pyo3::intern!(py, "__cuda_stream__")) {
            let p = if p.is_callable() { p.call0()? } else { p };
            p.get_item(1)?.extract::<usize>()?
        } else if let Ok(h) = s.getattr(pyo3::intern!(py, "cuda_stream")) {
            h.extract::<usize>()?
        } else if let Ok(h) = s.getattr(pyo3::intern!(py, "ptr")) {
            h.extract::<usize>()?
        } else {
            return Ok(None);
        },
    ))
}

impl Dispatcher {
    /// Launches `args` when they have a prepared launcher; `false` (having done nothing)
    /// when they need the Python path.
    #[allow(clippy::too_many_arguments)]
    fn launch_from<'py>(
        &self,
        py: Python<'py>,
        args: impl Iterator<Item = Bound<'py, PyAny>>,
        grid: &Bound<'py, PyAny>,
        block: &Bound<'py, PyAny>,
        stream: &Bound<'py, PyAny>,
        shared: u32,
        cooperative: bool,
    ) -> PyResult<bool> {
        let Some((key, vals, _)) = read_all(py, args, None)? else {
            return Ok(false);
        };
        let place = if stream.is_none() {
            match implicit_stream(py, &key)? {
                Some(h) => Some((h, handle_device(py, h)?)),
                None => None,
            }
        } else {
            self.stream_place(py, stream)?
        };
        let Some((handle, stream_dev)) = place else {
            return Ok(false);
        };
        let Some(dev) = launch_device(stream_dev, &key) else {
            return Ok(false);
        };
        let launcher = {
            let map = self.map.read().unwrap_or_else(|e| e.into_inner());
            match map.get(&(key, dev)) {
                Some(p) => p.launcher.clone_ref(py),
                None => return Ok(false),
            }
        };
        let l = launcher.get();
        let abi = &l.abi;
        let mut packed = l.template.clone();
        // `j` walks the values (a struct's leaves follow it), `i` the parameters.
        let mut j = 0;
        for i in 0.. {
            let Some(v) = vals.get(j) else { break };
            j += 1;
            let r = match v {
                ArgVal::UInt(_) => {
                    let Some(value) = l.params.get(i).and_then(|t| launch_value(t, v)) else {
                        return Ok(false);
                    };
                    packed.set(abi, i, &value)
                }
                ArgVal::Struct(n) => {
                    // Leaf by leaf into the struct's layout, computed once per launcher.
                    let n = *n as usize;
                    let Some(flat) = vals.get(j..j + n) else {
                        return Ok(false);
                    };
                    j += n;
                    let Some(Some(leaves)) = l.leaves.get(i) else {
                        return Ok(false);
                    };
                    if flat.len() != leaves.len() {
                        return Ok(false);
                    }
                    let mut values: SmallVec<[ArgValue; 8]> = SmallVec::new();
                    for (&(_, s), v) in leaves.iter().zip(flat) {
                        match launch_value(&Type::Scalar(s), v) {
                            Some(x) => values.push(x),
                            None => return Ok(false),
                        }
                    }
                    packed.set_scalar_leaves(abi, i, leaves, &values)
                }
                ArgVal::Array {
                    data,
                    shape,
                    strides,
                } => packed.set_array(abi, i, *data, shape, strides),
                ArgVal::Int(x) => packed.set(abi, i, &ArgValue::Int(*x)),
                ArgVal::Float(x) => packed.set(abi, i, &ArgValue::Float(*x)),
                ArgVal::Bool(x) => packed.set(abi, i, &ArgValue::Bool(*x)),
            };
            // A value the parameter refuses (an integer out of its type's range, an array of
            // the wrong layout) takes the Python path, which raises the error that names the
            // argument (`ArgumentRangeError`, ...), the same on every launch.
            if r.is_err() {
                return Ok(false);
            }
        }
        let grid = dim3(grid, "grid")?;
        let block = dim3(block, "block")?;
        // A plain launch keeps the GIL (see `launch_packed_gil`); PYDEVICE_LAUNCH_RELEASE_GIL=1
        // releases it for every launch.
        let release = cooperative || shared > 48 << 10 || *RELEASE_GIL;
        l.launch_packed_gil(
            py,
            &packed,
            grid,
            block,
            shared,
            handle,
            cooperative,
            None,
            release,
        )?;
        self.fast_launches.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// The stream handle and GPU of a stream-like object, remembering the last one.
    fn stream_place(
        &self,
        py: Python<'_>,
        s: &Bound<'_, PyAny>,
    ) -> PyResult<Option<(usize, Option<u32>)>> {
        if s.is_none() {
            return Ok(Some((0, None)));
        }
        if s.is_exact_instance_of::<PyInt>() {
            let h: usize = s.extract()?;
            return Ok(Some((h, handle_device(py, h)?)));
        }
        // The lock is never held across Python code (which may switch threads).
        {
            let cache = self.stream.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((obj, h, d)) = cache.as_ref()
                && obj.as_ptr() == s.as_ptr()
            {
                return Ok(Some((*h, *d)));
            }
        }
        let Some(h) = stream_handle(py, s)? else {
            return Ok(None); // the Python path knows the other kinds (and the error)
        };
        let d = handle_device(py, h)?;
        let old = self
            .stream
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace((s.clone().unbind(), h, d));
        drop(old); // outside the lock: dropping a Python object may run Python code
        Ok(Some((h, d)))
    }
}

#[pymethods]
impl Dispatcher {
    #[new]
    fn new() -> Dispatcher {
        Dispatcher {
            map: RwLock::new(FxHashMap::default()),
            stream: Mutex::new(None),
            fast_launches: AtomicU64::new(0),
        }
    }

    /// Launches when the arguments have a prepared launcher; returns `False` (having done
    /// nothing) when they need the Python path.
    #[pyo3(signature = (args, grid, block, stream, shared=0, cooperative=false))]
    #[allow(clippy::too_many_arguments)]
    pub fn try_launch(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        stream: &Bound<'_, PyAny>,
        shared: u32,
        cooperative: bool,
    ) -> PyResult<bool> {
        self.launch_from(py, args.iter(), grid, block, stream, shared, cooperative)
    }

    /// Remembers `launcher` for arguments of the kinds of `args` (when they all have a fast
    /// path); returns whether it did.
    pub fn insert(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        launcher: Py<Launcher>,
    ) -> PyResult<bool> {
        let mut dtypes = Vec::new();
        let Some((key, _, n)) = read_all(py, args.iter(), Some(&mut dtypes))? else {
            return Ok(false);
        };
        if n != launcher.get().params.len() {
            return Ok(false);
        }
        let dev = launcher.get().ordinal as u32;
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        map.entry((key, dev)).or_insert(Prepared {
            launcher,
            _dtypes: dtypes,
        });
        Ok(true)
    }

    /// How many launches took the fast path since the dispatcher was made.
    #[getter]
    fn fast_launches(&self) -> u64 {
        self.fast_launches.load(Ordering::Relaxed)
    }

    /// How many prepared launchers it holds.
    fn __len__(&self) -> usize {
        self.map.read().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// `device.launch(f, *args, grid, block, stream=None, shared=0, seed=None, cooperative=False,
/// cluster=None, backend=None, peer=False)`: the fast path when `f`'s dispatcher has a launcher for these arguments, else
/// `f._launch(...)` (Python). `cooperative=True` launches with `cuLaunchCooperativeKernel` (every
/// block resident at once), which kernels that call `cg.this_grid().sync()` need. A fixed
/// `seed` or a launch in thread block clusters (`cluster=(x, y, z)`, §18.1) takes the Python
/// path.
///
/// `args` are the positional arguments (`f` first), `keywords` the keyword arguments as
/// (name, value) pairs.
fn launch_impl<'py>(
    py: Python<'py>,
    args: &[Bound<'py, PyAny>],
    keywords: &[(Bound<'py, PyAny>, Bound<'py, PyAny>)],
) -> PyResult<()> {
    let Some(f) = args.first() else {
        return Err(PyTypeError::new_err(
            "launch() missing 1 required positional argument: 'f'",
        ));
    };
    let mut grid = None;
    let mut block = None;
    let mut stream = py.None().into_bound(py);
    let mut shared = 0u32;
    let mut seed = py.None().into_bound(py);
    let mut cooperative = false;
    let mut cluster = py.None().into_bound(py);
    let mut backend = py.None().into_bound(py);
    let mut peer = false;
    let mut race_check = py.None().into_bound(py);
    let mut deterministic = false;
    let names = [
        pyo3::intern!(py, "grid"),
        pyo3::intern!(py, "block"),
        pyo3::intern!(py, "stream"),
        pyo3::intern!(py, "shared"),
        pyo3::intern!(py, "seed"),
        pyo3::intern!(py, "cooperative"),
        pyo3::intern!(py, "cluster"),
        pyo3::intern!(py, "backend"),
        pyo3::intern!(py, "peer"),
        pyo3::intern!(py, "race_check"),
        pyo3::intern!(py, "deterministic"),
    ];
    for (name, value) in keywords {
        // Keyword names are interned strings, so the pointer comparison nearly always
        // decides; the string comparison is for names built at run time.
        let which = names
            .iter()
            .position(|n| n.as_ptr() == name.as_ptr())
            .or_else(|| names.iter().position(|n| name.eq(n).unwrap_or(false)));
        match which {
            Some(0) => grid = Some(value.clone()),
            Some(1) => block = Some(value.clone()),
            Some(2) => stream = value.clone(),
            Some(4) => seed = value.clone(),
            Some(5) => cooperative = value.is_truthy()?,
            Some(6) => cluster = value.clone(),
            Some(7) => backend = value.clone(),
            Some(8) => peer = value.is_truthy()?,
            Some(9) => race_check = value.clone(),
            Some(10) => deterministic = value.is_truthy()?,
            Some(_) => {
                shared = value.extract().map_err(|_| {
                    PyTypeError::new_err("launch(): shared must be a non-negative int (bytes)")
                })?
            }
            None => {
                return Err(PyTypeError::new_err(format!(
                    "launch() got an unexpected keyword argument '{name}'"
                )));
            }
        }
    }
    let (Some(grid), Some(block)) = (grid, block) else {
        return Err(PyTypeError::new_err(
            "launch() missing required keyword arguments: 'grid' and 'block'",
        ));
    };
    // A fixed random-number seed or a cluster shape takes the Python path (the prepared
    // launchers draw a seed and launch without clusters).
    // `backend=`, `race_check=` and `deterministic=` (the CPU back end) and `peer=True`
    // (arrays of other GPUs) take the Python
    // path too.
    if seed.is_none()
        && cluster.is_none()
        && backend.is_none()
        && !peer
        && race_check.is_none()
        && !deterministic
        && let Ok(d) = f.getattr(pyo3::intern!(py, "_dispatcher"))
        && let Ok(d) = d.cast::<Dispatcher>()
        && d.get().launch_from(
            py,
            args[1..].iter().cloned(),
            &grid,
            &block,
            &stream,
            shared,
            cooperative,
        )?
    {
        return Ok(());
    }
    match f.getattr(pyo3::intern!(py, "_launch")) {
        Ok(slow) => {
            let rest = PyTuple::new(py, &args[1..])?;
            slow.call1((
                rest,
                grid,
                block,
                stream,
                shared,
                seed,
                cooperative,
                cluster,
                backend,
                peer,
                race_check,
                deterministic,
            ))?;
            Ok(())
        }
        Err(_) => Err(PyTypeError::new_err(format!(
            "launch: expected a @kernel, got {}",
            f.get_type().name()?
        ))),
    }
}

/// `kernel[grid, block, stream, shared]`: a kernel with its launch configuration, called with
/// the arguments (numba's form): the fast path when the kernel's dispatcher has a launcher
/// for them, else `kernel._launch(...)` (Python).
#[pyclass(frozen, module = "pydevice._native")]
pub struct Configured {
    kernel: Py<PyAny>,
    grid: Py<PyAny>,
    block: Py<PyAny>,
    stream: Py<PyAny>,
    shared: u32,
}

#[pymethods]
impl Configured {
    #[new]
    #[pyo3(signature = (kernel, grid, block, stream=None, shared=0))]
    fn new(
        py: Python<'_>,
        kernel: Py<PyAny>,
        grid: Py<PyAny>,
        block: Py<PyAny>,
        stream: Option<Py<PyAny>>,
        shared: u32,
    ) -> Configured {
        Configured {
            kernel,
            grid,
            block,
            stream: stream.unwrap_or_else(|| py.None()),
            shared,
        }
    }

    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        let (k, grid, block, stream) = (
            self.kernel.bind(py),
            self.grid.bind(py),
            self.block.bind(py),
            self.stream.bind(py),
        );
        if let Ok(d) = k.getattr(pyo3::intern!(py, "_dispatcher"))
            && let Ok(d) = d.cast::<Dispatcher>()
            && d.get()
                .launch_from(py, args.iter(), grid, block, stream, self.shared, false)?
        {
            return Ok(());
        }
        k.getattr(pyo3::intern!(py, "_launch"))?
            .call1((args, grid, block, stream, self.shared))?;
        Ok(())
    }
}

/// `METH_FASTCALL`: in the stable ABI from Python 3.10, implemented the same way by every
/// CPython since 3.7 (PyO3 does not use it for a module built for the 3.9 stable ABI).
const METH_FASTCALL: std::os::raw::c_int = 0x0080;

/// A `METH_FASTCALL | METH_KEYWORDS` C function: positional arguments then keyword values in
/// one array, the keyword names in a tuple.
type FastCall = unsafe extern "C" fn(
    *mut pyo3::ffi::PyObject,
    *const *mut pyo3::ffi::PyObject,
    pyo3::ffi::Py_ssize_t,
    *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject;

/// The C entry of `launch` (see [`launch_function`]).
unsafe extern "C" fn launch_fastcall(
    _module: *mut pyo3::ffi::PyObject,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject {
    let run = std::panic::AssertUnwindSafe(|| {
        // SAFETY: CPython calls C functions attached to the interpreter (holding the GIL).
        let py = unsafe { Python::assume_attached() };
        let n = nargs.max(0) as usize;
        // SAFETY: `args` holds `nargs` positional arguments followed by one value per
        // keyword name, all borrowed for the call; `kwnames` is NULL or a tuple of names.
        let (positional, keywords) = unsafe {
            let positional: SmallVec<[Bound<'_, PyAny>; 8]> = (0..n)
                .map(|i| Bound::from_borrowed_ptr(py, *args.add(i)))
                .collect();
            let mut keywords: SmallVec<[(Bound<'_, PyAny>, Bound<'_, PyAny>); 4]> = SmallVec::new();
            if !kwnames.is_null() {
                let names = Bound::from_borrowed_ptr(py, kwnames).cast_into::<PyTuple>();
                if let Ok(names) = names {
                    for (k, name) in names.iter().enumerate() {
                        keywords.push((name, Bound::from_borrowed_ptr(py, *args.add(n + k))));
                    }
                }
            }
            (positional, keywords)
        };
        match launch_impl(py, &positional, &keywords) {
            Ok(()) => py.None().into_ptr(),
            Err(e) => {
                e.restore(py);
                std::ptr::null_mut()
            }
        }
    });
    match std::panic::catch_unwind(run) {
        Ok(r) => r,
        Err(_) => {
            // SAFETY: as above.
            let py = unsafe { Python::assume_attached() };
            pyo3::exceptions::PySystemError::new_err("pydevice.launch panicked").restore(py);
            std::ptr::null_mut()
        }
    }
}

/// `launch` as a `METH_FASTCALL | METH_KEYWORDS` built-in function. Keywords arrive as a tuple
/// of interned names beside their values: no keyword dictionary is built and no name is
/// encoded, which PyO3's own calling convention for a module built for the Python 3.9 stable
/// ABI (`METH_VARARGS | METH_KEYWORDS`) does on every call, about a tenth of a launch's host
/// instructions (`bench/python/launch_host_cost.py` under callgrind).
pub fn launch_function<'py>(m: &Bound<'py, PyModule>) -> PyResult<Bound<'py, PyAny>> {
    static DEF: OnceLock<usize> = OnceLock::new();
    let def = *DEF.get_or_init(|| {
        let meth = launch_fastcall as FastCall;
        let def = Box::new(pyo3::ffi::PyMethodDef {
            ml_name: c"launch".as_ptr(),
            // SAFETY: the union's variants are all C function pointers; CPython calls this
            // one with the `METH_FASTCALL | METH_KEYWORDS` signature the flags announce.
            ml_meth: pyo3::ffi::PyMethodDefPointer {
                PyCFunction: unsafe {
                    std::mem::transmute::<FastCall, pyo3::ffi::PyCFunction>(meth)
                },
            },
            ml_flags: METH_FASTCALL | pyo3::ffi::METH_KEYWORDS,
            ml_doc: c"launch(f, *args, grid, block, stream=None, shared=0): runs kernel f on args (the spec's device.launch).".as_ptr(),
        });
        // The definition must outlive every function object made from it: leaked, once.
        Box::into_raw(def) as usize
    });
    let py = m.py();
    // SAFETY: `def` is a valid, immortal method definition; the module is the function's
    // `self` and `__module__`.
    unsafe {
        let f = pyo3::ffi::PyCFunction_NewEx(
            def as *mut pyo3::ffi::PyMethodDef,
            m.as_ptr(),
            m.name()?.as_ptr(),
        );
        Bound::from_owned_ptr_or_err(py, f)
    }
}
