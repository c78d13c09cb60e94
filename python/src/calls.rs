//! The repeated-call fast path of `ElementwiseKernel`, `ReductionKernel` and, through them,
//! `fuse` (`fuse.rs`): one native call per kernel call, as `device.launch` has (`fast.rs`).
//!
//! A [`CallCache`] belongs to one kernel. Its key is what decides a call completely: each
//! argument's kind as the launch fast path reads it (for a CuPy array: the dtype object, rank,
//! layout and GPU; for a Python `int`, `float` or `bool`: just that), every array's shape and
//! strides, and the call's own options (`size=`; `axis=` and `keepdims=`). For such a key the
//! general path's result is fixed but for addresses and scalar values: the output shape and
//! dtypes, the generated kernel(s), their launch shapes and every descriptor. So the entry
//! holds the general path's packed parameters and, per call, [`CallCache::call`] reads the
//! arguments, allocates the outputs with CuPy (`cupy.ndarray(shape, dtype)`, which
//! `cupy.empty` is), writes the new addresses and values into a copy of the packed buffer and
//! launches on CuPy's current stream (or the `stream=` given) without the GIL.
//!
//! An entry is made only from a call the general path has just launched
//! ([`CallCache::remember`]), and only when each argument's fast reading gives exactly the
//! address (or value) the general path passed: anything else (a first call, NumPy or PyTorch
//! arrays, 0-d arrays, typed NumPy scalars, outputs CuPy would place on another GPU than the
//! arrays') keeps taking the general path.

use std::sync::{Arc, Mutex, RwLock};

use pydevice::CompiledKernel;
use pydevice::abi::ArgValue;
use pydevice::runtime::{Device, LaunchConfig, LoadedKernel, PackedArgs, Stream};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::fast::{ArgKey, ArgVal, Key, read, stream_handle};

/// CuPy's array constructor (`cupy.ndarray`, called as `cupy.empty` calls it), its
/// current-stream function (`cupy.cuda.get_current_stream`) and, when CuPy is laid out as
/// [`Construct`] expects, the constructor's two steps, registered by the Python side when it
/// first meets a CuPy array; a benchmark or test without a GPU registers stand-ins
/// (`_native.set_cupy_hooks`).
static CUPY_HOOKS: RwLock<Option<Arc<Hooks>>> = RwLock::new(None);

/// `cupy.ndarray(shape, dtype)` in its two steps, without the Python-level `__new__` and
/// `__init__` around them: CuPy (13 and later) defines `ndarray` as a Python subclass of the
/// extension type `_ndarray_base`, whose `__new__(cls, *args, **kwargs)` calls
/// `_ndarray_base.__new__(cls, *args)` then `x._init(*args)` and whose `__init__` does nothing.
/// Calling the two directly makes the same array for about 60% of the cost.
struct Construct {
    /// `_ndarray_base.__new__`.
    new: Py<PyAny>,
    /// `cupy.ndarray`.
    cls: Py<PyAny>,
    /// `_ndarray_base._init`.
    init: Py<PyAny>,
}

struct Hooks {
    empty: Py<PyAny>,
    current_stream: Py<PyAny>,
    construct: Option<Construct>,
}

impl Hooks {
    /// A new C-contiguous array of `shape` and `dtype`.
    fn empty<'py>(
        &self,
        py: Python<'py>,
        shape: &Bound<'py, PyTuple>,
        dtype: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match &self.construct {
            Some(c) => {
                let x = c.new.bind(py).call1((c.cls.bind(py), shape, dtype))?;
                c.init.bind(py).call1((&x, shape, dtype))?;
                Ok(x)
            }
            None => self.empty.bind(py).call1((shape, dtype)),
        }
    }
}

/// Registers the allocation and current-stream functions of the CuPy fast path: `empty(shape,
/// dtype)` returns a new C-contiguous array, `current_stream()` an object whose `ptr` is the
/// stream's handle. `construct=(base_new, cls, init)` allocates as `x = base_new(cls, shape,
/// dtype); init(x, shape, dtype)` instead of `empty(shape, dtype)` (CuPy's `ndarray` without
/// its Python-level constructor, see [`Construct`]). `None` turns the fast path of the kernel
/// builders off.
#[pyfunction]
#[pyo3(signature = (empty, current_stream, construct=None))]
pub fn set_cupy_hooks(
    empty: Option<Py<PyAny>>,
    current_stream: Option<Py<PyAny>>,
    construct: Option<(Py<PyAny>, Py<PyAny>, Py<PyAny>)>,
) {
    let new = empty.zip(current_stream).map(|(empty, current_stream)| {
        Arc::new(Hooks {
            empty,
            current_stream,
            construct: construct.map(|(new, cls, init)| Construct { new, cls, init }),
        })
    });
    let old = std::mem::replace(
        &mut *CUPY_HOOKS.write().unwrap_or_else(|e| e.into_inner()),
        new,
    );
    drop(old);
}

/// The handle of CuPy's current stream (on CuPy's current GPU), through the registered
/// hooks; `None` when CuPy's hooks are not registered (the Python path decides).
pub(crate) fn cupy_current_stream(py: Python<'_>) -> PyResult<Option<usize>> {
    let Some(hooks) = hooks() else {
        return Ok(None);
    };
    let s = hooks.current_stream.bind(py).call0()?;
    Ok(match s.getattr(pyo3::intern!(py, "ptr")) {
        Ok(h) => Some(h.extract::<usize>()?),
        Err(_) => None,
    })
}

fn hooks() -> Option<Arc<Hooks>> {
    CUPY_HOOKS.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// What decides a call: the arguments' kinds, their shapes and strides, the call's options.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct CallKey {
    kinds: Key,
    dims: SmallVec<[i64; 12]>,
    options: SmallVec<[i64; 4]>,
}

/// Where a kernel parameter's per-call part comes from.
#[derive(Debug)]
enum Fill {
    /// The data address of argument `operand`, with the descriptor's shape and strides.
    Array {
        param: usize,
        operand: usize,
        shape: Vec<u64>,
        strides: Vec<i64>,
    },
    /// The data address of allocated output `output` (an index into the missing outputs).
    Output {
        param: usize,
        output: usize,
        shape: Vec<u64>,
        strides: Vec<i64>,
    },
    /// The value of scalar argument `operand`.
    Scalar { param: usize, operand: usize },
    /// The reduction's partial results (the scratch buffer).
    Partials {
        param: usize,
        shape: Vec<u64>,
        strides: Vec<i64>,
    },
}

/// A GPU and a kernel loaded on it.
pub type Gpu = (Arc<Device>, Arc<LoadedKernel>);

/// One kernel launch of a call.
struct Step {
    kernel: Arc<CompiledKernel>,
    /// `None` for a dry run (no GPU: `Elementwise.remember_dry_run`).
    gpu: Option<Gpu>,
    template: PackedArgs,
    cfg: LaunchConfig,
    /// A recording dry run's last parameter bytes, for the equivalence tests (`None`: not
    /// recording).
    last: Option<Mutex<Vec<Vec<u8>>>>,
}

/// A remembered call signature.
struct Entry {
    steps: SmallVec<[Step; 2]>,
    fills: Vec<Fill>,
    /// Per array argument: (operand, bytes its elements span past its address), the
    /// general path's check that the array does not run past the end of the address space.
    spans: SmallVec<[(usize, u64); 6]>,
    out_shape: Py<PyTuple>,
    /// The dtype object of each output to allocate.
    out_dtypes: Vec<Py<PyAny>>,
    /// Each output parameter: `Err(j)` the j-th allocated one, `Ok(k)` argument `k`.
    outputs: Vec<Result<usize, usize>>,
    /// The scratch buffer's size and dtype (`uint8`) when a step reads it.
    partials: Option<(Py<PyTuple>, Py<PyAny>)>,
    ordinal: i32,
    /// Whether anything is launched (an empty call launches nothing).
    launch: bool,
    _keep: SmallVec<[Py<PyAny>; 6]>,
}

/// How a kernel returns its outputs: one alone or a tuple (`0`), always a tuple (`1`, CuPy's
/// `return_tuple`), nothing (`2`, `no_return`).
pub type ReturnMode = u8;

/// One kernel's remembered call signatures.
pub struct CallCache {
    map: RwLock<FxHashMap<CallKey, Arc<Entry>>>,
    mode: ReturnMode,
}

/// At most this many signatures per kernel (each distinct shape is one); past it, all are
/// forgotten at once (a workload of ever-new shapes takes the general path).
pub(crate) const MAX_ENTRIES: usize = 512;

/// An argument as the fast path read it.
type ReadArgs = (Key, SmallVec<[ArgVal; 6]>, SmallVec<[Py<PyAny>; 6]>);

fn read_args(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Option<ReadArgs>> {
    let mut key = Key::new();
    let mut vals = SmallVec::new();
    let mut keep = SmallVec::new();
    for a in args.iter() {
        match read(py, &a)? {
            // CuPy arrays and Python numbers only: PyTorch outputs are allocated otherwise.
            Some((ArgKey::Array { torch: true, .. }, ..)) | None => return Ok(None),
            Some((k, v, d)) => {
                key.push(k);
                vals.push(v);
                keep.extend(d);
            }
        }
    }
    Ok(Some((key, vals, keep)))
}

fn call_key(kinds: Key, vals: &[ArgVal], options: &[i64]) -> CallKey {
    let mut dims = SmallVec::new();
    for v in vals {
        if let ArgVal::Array { shape, strides, .. } = v {
            dims.extend(shape.iter().map(|&s| s as i64));
            dims.extend(strides.iter().copied());
            dims.push(-1);
        }
    }
    CallKey {
        kinds,
        dims,
        options: options.iter().copied().collect(),
    }
}

/// The bytes an array's elements span past its address (as `DeviceArray::check` computes
/// them); `None` when that overflows (the general path raises).
fn span(shape: &[u64], strides: &[i64], itemsize: u64) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    let mut span = itemsize;
    for (&d, &s) in shape.iter().zip(strides) {
        span = (d - 1)
            .checked_mul(s.unsigned_abs())
            .and_then(|e| e.checked_mul(itemsize))
            .and_then(|e| span.checked_add(e))
            .filter(|v| *v <= i64::MAX as u64)?;
    }
    Some(span)
}

fn scalar_value(v: &ArgVal) -> Option<ArgValue> {
    match v {
        ArgVal::Int(x) => Some(ArgValue::Int(*x)),
        ArgVal::Float(x) => Some(ArgValue::Float(*x)),
        ArgVal::Bool(x) => Some(ArgValue::Bool(*x)),
        ArgVal::UInt(x) => Some(ArgValue::UInt(*x)),
        // (`read`, which this path uses, makes neither.)
        ArgVal::Array { .. } | ArgVal::Struct(_) => None,
    }
}

/// What the general path launched, for [`CallCache::remember`].
pub struct Launched<'a> {
    /// The argument values of every step, in parameter order (the partial results' slot
    /// included for a reduction).
    pub args: &'a [ArgValue],
    /// The kernels, their launch shapes and their GPUs (`None`: a dry run).
    pub steps: Vec<(Arc<CompiledKernel>, LaunchConfig, Option<Gpu>)>,
    /// Kernel parameters that are the call's arguments and outputs (the rest are sizes).
    pub n_params: usize,
    /// Inputs among them.
    pub n_in: usize,
    /// The outputs the call allocated (indices into the output parameters) and their
    /// addresses.
    pub missing: &'a [usize],
    pub allocated: &'a [u64],
    pub out_shape: &'a [u64],
    pub out_dtypes: Vec<String>,
    /// The partial results' parameter, size in bytes and shape, when a step reads them.
    pub partials: Option<(usize, u64, Vec<u64>)>,
    pub ordinal: usize,
    pub launch: bool,
    /// For a dry run: keep each call's parameter bytes ([`CallCache::last_packed`]).
    pub record: bool,
}

impl CallCache {
    pub fn new(mode: ReturnMode) -> CallCache {
        CallCache {
            map: RwLock::new(FxHashMap::default()),
            mode,
        }
    }

    /// The number of remembered signatures.
    pub fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Remembers the call the general path has just launched for `args` (the Python
    /// arguments) and `options`; returns whether it did (every argument has a fast reading
    /// that gives exactly what the general path passed).
    pub fn remember(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: &[i64],
        l: Launched<'_>,
    ) -> PyResult<bool> {
        let Some((kinds, vals, mut keep)) = read_args(py, args)? else {
            return Ok(false);
        };
        if vals.len() > l.n_params || l.args.len() < l.n_params {
            return Ok(false);
        }
        let mut fills = Vec::new();
        let mut spans = SmallVec::new();
        for k in 0..l.n_params {
            let given = &l.args[k];
            if k < vals.len() {
                match (&vals[k], given) {
                    (
                        ArgVal::Array {
                            data,
                            shape,
                            strides,
                            ..
                        },
                        ArgValue::Array(a),
                    ) if a.data == *data => {
                        let itemsize = match l.steps[0].0.abi.params.get(k).map(|p| &p.ty) {
                            Some(pydevice::types::Type::Array(t)) => match t.dtype.scalar() {
                                Some(s) => s.size(),
                                None => return Ok(false),
                            },
                            _ => return Ok(false),
                        };
                        let Some(s) = span(shape, strides, itemsize) else {
                            return Ok(false);
                        };
                        spans.push((k, s));
                        fills.push(Fill::Array {
                            param: k,
                            operand: k,
                            shape: a.shape.clone(),
                            strides: a.strides.clone(),
                        });
                    }
                    (v, g) if scalar_value(v).as_ref() == Some(g) => {
                        fills.push(Fill::Scalar {
                            param: k,
                            operand: k,
                        });
                    }
                    _ => return Ok(false),
                }
            } else {
                let o = k - l.n_in;
                let Some(j) = l.missing.iter().position(|&m| m == o) else {
                    return Ok(false);
                };
                match given {
                    ArgValue::Array(a) if l.allocated.get(j) == Some(&a.data) => {
                        fills.push(Fill::Output {
                            param: k,
                            output: j,
                            shape: a.shape.clone(),
                            strides: a.strides.clone(),
                        });
                    }
                    _ => return Ok(false),
                }
            }
        }
        let mut partials = None;
        if let Some((param, bytes, shape)) = &l.partials {
            fills.push(Fill::Partials {
                param: *param,
                shape: shape.clone(),
                strides: vec![1],
            });
            let np = py.import("numpy")?;
            partials = Some((
                PyTuple::new(py, [*bytes])?.unbind(),
                np.getattr("dtype")?.call1(("uint8",))?.unbind(),
            ));
        }
        let dtype = py.import("numpy")?.getattr("dtype")?;
        let out_dtypes = l
            .missing
            .iter()
            .map(|&m| Ok(dtype.call1((l.out_dtypes[m].as_str(),))?.unbind()))
            .collect::<PyResult<Vec<_>>>()?;
        let n_out = l.n_params - l.n_in;
        let outputs = (0..n_out)
            .map(|o| match l.missing.iter().position(|&m| m == o) {
                Some(j) => Err(j),
                None => Ok(l.n_in + o),
            })
            .collect();
        let mut steps = SmallVec::new();
        for (kernel, cfg, gpu) in l.steps {
            let mut template = match &gpu {
                Some((_, loaded)) => loaded.zeroed_args(),
                None => PackedArgs::zeroed(&kernel.abi),
            };
            for (i, v) in l.args.iter().enumerate() {
                if template.set(&kernel.abi, i, v).is_err() {
                    return Ok(false);
                }
            }
            steps.push(Step {
                kernel,
                gpu,
                template,
                cfg,
                last: l.record.then(|| Mutex::new(Vec::new())),
            });
        }
        keep.push(dtype.unbind());
        let entry = Entry {
            steps,
            fills,
            spans,
            out_shape: PyTuple::new(py, l.out_shape)?.unbind(),
            out_dtypes,
            outputs,
            partials,
            ordinal: l.ordinal as i32,
            launch: l.launch,
            _keep: keep,
        };
        let key = call_key(kinds, &vals, options);
        let old = {
            let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
            let old = if map.len() >= MAX_ENTRIES {
                std::mem::take(&mut *map)
            } else {
                FxHashMap::default()
            };
            map.entry(key).or_insert_with(|| Arc::new(entry));
            old
        };
        drop(old); // outside the lock: dropping Python objects may run Python code
        Ok(true)
    }

    /// The call when its signature is remembered: the outputs as the kernel returns them;
    /// `None` (having launched nothing) when the general path must run.
    pub fn call(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: &[i64],
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let Some((kinds, vals, _keep)) = read_args(py, args)? else {
            return Ok(None);
        };
        self.call_read(py, args, kinds, vals, options, stream)
    }

    /// [`CallCache::call`] with the arguments already read (`fuse` reads them for its own
    /// key).
    pub(crate) fn call_read(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kinds: Key,
        vals: SmallVec<[ArgVal; 6]>,
        options: &[i64],
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let key = call_key(kinds, &vals, options);
        let entry = {
            let map = self.map.read().unwrap_or_else(|e| e.into_inner());
            match map.get(&key) {
                Some(e) => e.clone(),
                None => return Ok(None),
            }
        };
        for &(k, s) in &entry.spans {
            if let ArgVal::Array { data, .. } = &vals[k]
                && data.checked_add(s).is_none()
            {
                return Ok(None);
            }
        }
        let Some(hooks) = hooks() else {
            return Ok(None);
        };
        let handle = if stream.is_none() {
            // CuPy's current stream: its `ptr`, as the general path reads it.
            let s = hooks.current_stream.bind(py).call0()?;
            match s.getattr(pyo3::intern!(py, "ptr")) {
                Ok(h) => h.extract::<usize>()?,
                Err(_) => return Ok(None),
            }
        } else if stream.is_exact_instance_of::<pyo3::types::PyInt>() {
            stream.extract::<usize>()?
        } else {
            match stream_handle(py, stream)? {
                Some(h) => h,
                None => return Ok(None),
            }
        };
        // The outputs, on the current GPU (the general path allocates on the arrays' GPU:
        // elsewhere it runs).
        let shape = entry.out_shape.bind(py);
        let mut allocated: SmallVec<[(Bound<'_, PyAny>, u64); 2]> = SmallVec::new();
        for dt in &entry.out_dtypes {
            let a = hooks.empty(py, shape, dt.bind(py))?;
            let Some(ptr) = address_on(py, &a, entry.ordinal)? else {
                return Ok(None);
            };
            allocated.push((a, ptr));
        }
        let scratch = match &entry.partials {
            Some((bytes, dt)) => {
                let a = hooks.empty(py, bytes.bind(py), dt.bind(py))?;
                let Some(ptr) = address_on(py, &a, entry.ordinal)? else {
                    return Ok(None);
                };
                Some((a, ptr))
            }
            None => None,
        };
        if entry.launch {
            let mut packed: SmallVec<[PackedArgs; 2]> = SmallVec::new();
            for step in &entry.steps {
                let abi = &step.kernel.abi;
                let mut p = step.template.clone();
                for f in &entry.fills {
                    let r = match f {
                        Fill::Array {
                            param,
                            operand,
                            shape,
                            strides,
                        } => {
                            let ArgVal::Array { data, .. } = &vals[*operand] else {
                                return Ok(None);
                            };
                            p.set_array(abi, *param, *data, shape, strides)
                        }
                        Fill::Output {
                            param,
                            output,
                            shape,
                            strides,
                        } => p.set_array(abi, *param, allocated[*output].1, shape, strides),
                        Fill::Scalar { param, operand } => match scalar_value(&vals[*operand]) {
                            Some(v) => p.set(abi, *param, &v),
                            None => return Ok(None),
                        },
                        Fill::Partials {
                            param,
                            shape,
                            strides,
                        } => match &scratch {
                            Some((_, ptr)) => p.set_array(abi, *param, *ptr, shape, strides),
                            None => return Ok(None),
                        },
                    };
                    r.map_err(|e| crate::runtime_to_py(py, e))?;
                }
                packed.push(p);
            }
            // SAFETY: the stream is CuPy's current one (kept alive by CuPy for the thread)
            // or the object the caller passed and holds for the call.
            let stream = unsafe { Stream::from_handle(handle) };
            let r = py.detach(|| -> Result<(), pydevice::runtime::RuntimeError> {
                for (step, p) in entry.steps.iter().zip(&packed) {
                    match &step.gpu {
                        Some((dev, loaded)) => dev.launch_packed(loaded, p, &step.cfg, &stream)?,
                        None => {
                            std::hint::black_box((&stream, &step.cfg, p));
                            let Some(last) = &step.last else { continue };
                            let words: Vec<u8> = (0..step.kernel.abi.params.len())
                                .flat_map(|i| {
                                    p.param_bytes(&step.kernel.abi, i).unwrap_or_default()
                                })
                                .collect();
                            let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                            last.clear();
                            last.push(words);
                        }
                    }
                }
                Ok(())
            });
            r.map_err(|e| crate::runtime_to_py(py, e))?;
        }
        drop(scratch);
        let mut outs: SmallVec<[Bound<'_, PyAny>; 2]> = SmallVec::new();
        for o in &entry.outputs {
            outs.push(match o {
                Err(j) => allocated[*j].0.clone(),
                Ok(k) => args.get_item(*k)?,
            });
        }
        Ok(Some(match self.mode {
            2 => py.None(),
            0 if outs.len() == 1 => outs[0].clone().unbind(),
            _ => PyTuple::new(py, outs)?.into_any().unbind(),
        }))
    }

    /// A dry run's last parameter bytes per step (each parameter's bytes, concatenated), for
    /// the signature of `args` and `options`; `None` when it is not remembered.
    pub fn last_packed(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: &[i64],
    ) -> PyResult<Option<Vec<Vec<u8>>>> {
        let Some((kinds, vals, _)) = read_args(py, args)? else {
            return Ok(None);
        };
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        Ok(map.get(&call_key(kinds, &vals, options)).map(|e| {
            e.steps
                .iter()
                .filter_map(|s| s.last.as_ref())
                .flat_map(|l| l.lock().unwrap_or_else(|e| e.into_inner()).clone())
                .collect()
        }))
    }
}

/// The data address of a CuPy array the fast path allocated (`data.ptr`), when it is on GPU
/// `ordinal` (`data.device_id`).
fn address_on(py: Python<'_>, a: &Bound<'_, PyAny>, ordinal: i32) -> PyResult<Option<u64>> {
    let mem = a.getattr(pyo3::intern!(py, "data"))?;
    let device: i32 = mem.getattr(pyo3::intern!(py, "device_id"))?.extract()?;
    if device != ordinal {
        return Ok(None);
    }
    Ok(Some(crate::fast::address(
        &mem.getattr(pyo3::intern!(py, "ptr"))?,
    )?))
}

/// Packed bytes of every parameter of `kernel` for `args` (the general path's packing), for
/// the equivalence tests.
pub fn packed_bytes(kernel: &CompiledKernel, args: &[ArgValue]) -> PyResult<Vec<u8>> {
    let mut p = PackedArgs::zeroed(&kernel.abi);
    for (i, v) in args.iter().enumerate() {
        p.set(&kernel.abi, i, v)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    }
    Ok((0..kernel.abi.params.len())
        .flat_map(|i| p.param_bytes(&kernel.abi, i).unwrap_or_default())
        .collect())
}

/// A Python list of byte strings.
pub fn bytes_list<'py>(py: Python<'py>, v: Vec<Vec<u8>>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, v.into_iter().map(|b| pyo3::types::PyBytes::new(py, &b)))
}
