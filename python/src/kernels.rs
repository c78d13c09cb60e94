//! `pydevice._native.Elementwise` and `Reduction`: thin glue over the crate's
//! [`pydevice::kernels`] builders. Python describes each argument as a tuple —
//! `("A", dtype, data, shape, strides)` for an array in device memory (strides in elements),
//! `("S", dtype_or_None, value)` for a scalar (`None`: a Python number), `None` for an output
//! to allocate — and allocates the missing outputs with the inputs' framework between
//! `resolve` and `launch`.
//!
//! `run_host` runs a call on the host instead (NumPy arrays, docs/semantics.md §20.8): the
//! descriptions then hold host addresses, which `pydevice._kernels` takes from the NumPy
//! arrays it holds for the whole call (their own data pointer, shape and strides).

use pydevice::abi::ArgValue;
use pydevice::kernels::{
    ElementwiseKernel, ElementwiseLaunch, GuResolved, Operand, ReductionKernel, ReductionLaunch,
    ReductionResolved, Resolved, ScalarArg,
};
use pydevice::runtime::{DeviceArray, Stream};
use pydevice::types::Scalar;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyComplex, PyDict, PyInt, PyList, PyTuple};
use std::sync::Arc;

use crate::calls::{CallCache, Launched, ReturnMode, bytes_list, packed_bytes};
use crate::{current_cache, device, runtime_to_py, to_py};

/// `size=` as part of a call's key: -1 for none; `None` when it cannot be one (the general
/// path raises for it).
fn size_key(size: Option<u64>) -> Option<[i64; 1]> {
    match size {
        None => Some([-1]),
        Some(s) => i64::try_from(s).ok().map(|s| [s]),
    }
}

/// `axis=` and `keepdims=` as part of a call's key (`None` for an `axis` the general path
/// normalizes itself: NumPy integers, lists).
pub(crate) fn axis_key(axis: &Bound<'_, PyAny>, keepdims: bool) -> PyResult<Option<Vec<i64>>> {
    let mut key = vec![i64::from(keepdims)];
    if axis.is_none() {
        key.push(-1);
    } else if axis.is_exact_instance_of::<PyInt>() {
        key.extend([1, axis.extract::<i64>()?]);
    } else if let Ok(t) = axis.cast_exact::<PyTuple>() {
        key.push(t.len() as i64);
        for x in t.iter() {
            if !x.is_exact_instance_of::<PyInt>() {
                return Ok(None);
            }
            key.push(x.extract::<i64>()?);
        }
    } else {
        return Ok(None);
    }
    Ok(Some(key))
}

/// The reduction's `axis` list from its key (the inverse of [`axis_key`]).
fn key_axis(key: &[i64]) -> Option<Vec<i64>> {
    (key[1] >= 0).then(|| key[2..].to_vec())
}

/// The addresses of described outputs.
fn addresses(outs: &Bound<'_, PyTuple>) -> PyResult<Vec<u64>> {
    Ok(arrays(outs)?.iter().map(|a| a.data).collect())
}

fn scalar_type(name: &str) -> PyResult<Scalar> {
    Scalar::from_name(name).ok_or_else(|| PyTypeError::new_err(format!("unknown dtype `{name}`")))
}

/// One argument description (see the module documentation).
fn operand(v: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if v.is_none() {
        return Ok(Operand::Absent);
    }
    let t = v.cast::<PyTuple>()?;
    let tag: String = t.get_item(0)?.extract()?;
    match tag.as_str() {
        "A" => {
            let dtype = scalar_type(&t.get_item(1)?.extract::<String>()?)?;
            Ok(Operand::Array(DeviceArray {
                data: t.get_item(2)?.extract()?,
                dtype,
                shape: t.get_item(3)?.extract()?,
                strides: t.get_item(4)?.extract()?,
                readonly: false,
                device: None,
            }))
        }
        "S" => {
            let dtype = match t.get_item(1)? {
                d if d.is_none() => None,
                d => Some(scalar_type(&d.extract::<String>()?)?),
            };
            let x = t.get_item(2)?;
            let value = if x.is_instance_of::<pyo3::types::PyBool>() {
                ArgValue::Bool(x.extract()?)
            } else if let Ok(i) = x.extract::<i64>() {
                ArgValue::Int(i)
            } else if let Ok(u) = x.extract::<u64>() {
                ArgValue::UInt(u)
            } else if let Ok(c) = x.cast::<PyComplex>() {
                ArgValue::Complex(c.real(), c.imag())
            } else {
                ArgValue::Float(x.extract()?)
            };
            Ok(Operand::Scalar(ScalarArg { value, dtype }))
        }
        other => Err(PyTypeError::new_err(format!(
            "unknown argument tag `{other}`"
        ))),
    }
}

fn operands(v: &Bound<'_, PyTuple>) -> PyResult<Vec<Operand>> {
    v.iter().map(|x| operand(&x)).collect()
}

/// Output descriptions `(dtype, data, shape, strides)`.
fn arrays(v: &Bound<'_, PyTuple>) -> PyResult<Vec<DeviceArray>> {
    v.iter()
        .map(|x| match operand(&x)? {
            Operand::Array(a) => Ok(a),
            _ => Err(PyTypeError::new_err("an output is described as an array")),
        })
        .collect()
}

/// What the three builders' classes (`Elementwise`, `Reduction`, `GuVectorize`) share: a
/// resolved call bound to its described outputs gives a launch, from which the generated
/// sources, the PTX and a run on the host follow. Their PyO3 methods `source`,
/// `host_source`, `ptx` and `run_host` are one call each to the functions below.
trait Builder: Sync {
    /// The resolved call (`ElementwiseCall`, ...).
    type Call;
    /// The crate's bound launch.
    type Launch: Sync;
    /// Binds `call` to the described outputs `outs`.
    fn bind_outs(
        &self,
        py: Python<'_>,
        call: &Self::Call,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<Self::Launch>;
    /// The generated kernel's source.
    fn kernel_source(&self, l: &Self::Launch) -> String;
    /// The generated host function's source (§20.8).
    fn host_function_source(&self, l: &Self::Launch) -> String;
    /// The PTX of the (first) kernel, compiled through the builder's cache.
    fn kernel_ptx(&self, l: &Self::Launch) -> Result<String, pydevice::Error>;
    /// Runs `l` on the host.
    ///
    /// # Safety
    /// Every array `l` describes is host memory that stays alive for the call.
    unsafe fn run_launch_on_host(&self, l: &Self::Launch) -> Result<(), pydevice::Error>;
}

fn generated_source<B: Builder>(
    b: &B,
    py: Python<'_>,
    call: &B::Call,
    outs: &Bound<'_, PyTuple>,
) -> PyResult<String> {
    Ok(b.kernel_source(&b.bind_outs(py, call, outs)?))
}

fn generated_host_source<B: Builder>(
    b: &B,
    py: Python<'_>,
    call: &B::Call,
    outs: &Bound<'_, PyTuple>,
) -> PyResult<String> {
    Ok(b.host_function_source(&b.bind_outs(py, call, outs)?))
}

/// Compiles without the GIL.
fn generated_ptx<B: Builder>(
    b: &B,
    py: Python<'_>,
    call: &B::Call,
    outs: &Bound<'_, PyTuple>,
) -> PyResult<String> {
    let l = b.bind_outs(py, call, outs)?;
    py.detach(|| b.kernel_ptx(&l)).map_err(|e| to_py(py, e))
}

/// Runs the device kernels on the CPU back end (`run`, given the bound launch), without the
/// GIL.
fn run_on_cpu<B: Builder>(
    b: &B,
    py: Python<'_>,
    call: &B::Call,
    outs: &Bound<'_, PyTuple>,
    run: impl Fn(&B::Launch) -> Result<(), pydevice::Error> + Send + Sync,
) -> PyResult<()> {
    let l = b.bind_outs(py, call, outs)?;
    py.detach(|| run(&l)).map_err(|e| to_py(py, e))
}

/// Runs without the GIL.
fn run_on_host<B: Builder>(
    b: &B,
    py: Python<'_>,
    call: &B::Call,
    outs: &Bound<'_, PyTuple>,
) -> PyResult<()> {
    let l = b.bind_outs(py, call, outs)?;
    // SAFETY: `pydevice._kernels` calls `run_host` only with NumPy arrays it keeps alive
    // during the call, described by their own data pointers, shapes and element strides.
    py.detach(|| unsafe { b.run_launch_on_host(&l) })
        .map_err(|e| to_py(py, e))
}

impl Builder for Elementwise {
    type Call = ElementwiseCall;
    type Launch = ElementwiseLaunch;
    fn bind_outs(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<ElementwiseLaunch> {
        self.k
            .bind(&call.r, arrays(outs)?)
            .map_err(|e| to_py(py, e))
    }
    fn kernel_source(&self, l: &ElementwiseLaunch) -> String {
        self.k.source(l)
    }
    fn host_function_source(&self, l: &ElementwiseLaunch) -> String {
        self.k.host_source(l)
    }
    fn kernel_ptx(&self, l: &ElementwiseLaunch) -> Result<String, pydevice::Error> {
        Ok(self.k.compile(l)?.ptx.clone())
    }
    unsafe fn run_launch_on_host(&self, l: &ElementwiseLaunch) -> Result<(), pydevice::Error> {
        // SAFETY: the caller's (the trait method's contract).
        unsafe { self.k.run_host(l) }
    }
}

impl Builder for Reduction {
    type Call = ReductionCall;
    type Launch = ReductionLaunch;
    fn bind_outs(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<ReductionLaunch> {
        self.k
            .bind(&call.r, arrays(outs)?)
            .map_err(|e| to_py(py, e))
    }
    fn kernel_source(&self, l: &ReductionLaunch) -> String {
        self.k.source(l)
    }
    fn host_function_source(&self, l: &ReductionLaunch) -> String {
        self.k.host_source(l)
    }
    fn kernel_ptx(&self, l: &ReductionLaunch) -> Result<String, pydevice::Error> {
        Ok(self.k.compile(l)?.0.ptx.clone())
    }
    unsafe fn run_launch_on_host(&self, l: &ReductionLaunch) -> Result<(), pydevice::Error> {
        // SAFETY: the caller's (the trait method's contract).
        unsafe { self.k.run_host(l) }
    }
}

impl Builder for GuVectorize {
    type Call = GuCall;
    type Launch = (Arc<ElementwiseKernel>, ElementwiseLaunch);
    fn bind_outs(
        &self,
        py: Python<'_>,
        call: &GuCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<Self::Launch> {
        self.g
            .bind(&call.r, arrays(outs)?)
            .map_err(|e| to_py(py, e))
    }
    fn kernel_source(&self, (k, l): &Self::Launch) -> String {
        k.source(l)
    }
    fn host_function_source(&self, (k, l): &Self::Launch) -> String {
        k.host_source(l)
    }
    fn kernel_ptx(&self, (k, l): &Self::Launch) -> Result<String, pydevice::Error> {
        Ok(k.compile(l)?.ptx.clone())
    }
    unsafe fn run_launch_on_host(&self, (k, l): &Self::Launch) -> Result<(), pydevice::Error> {
        // SAFETY: the caller's (the trait method's contract).
        unsafe { k.run_host(l) }
    }
}

/// A resolved elementwise call: the shape and dtypes of the outputs to allocate.
#[pyclass(frozen, module = "pydevice._native")]
pub struct ElementwiseCall {
    r: Resolved,
}

#[pymethods]
impl ElementwiseCall {
    /// The outputs' shape.
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.r.shape.clone()
    }

    /// Each output's dtype name.
    #[getter]
    fn out_dtypes(&self) -> Vec<String> {
        self.r.out_dtypes.iter().map(|s| s.to_string()).collect()
    }

    /// The outputs to allocate (indices into the output parameters).
    #[getter]
    fn missing(&self) -> Vec<usize> {
        self.r.missing.clone()
    }
}

/// `pydevice.ElementwiseKernel`'s compiled half.
#[pyclass(frozen, module = "pydevice._native")]
pub struct Elementwise {
    k: ElementwiseKernel,
    /// Remembered call signatures (the repeated-call fast path, `calls.rs`).
    pub(crate) fast: CallCache,
}

impl Elementwise {
    /// Remembers a launched call for the fast path (`dry`: no GPU, nothing loaded).
    #[allow(clippy::too_many_arguments)]
    fn remember_launch(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        size: Option<u64>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
        l: &pydevice::kernels::ElementwiseLaunch,
        ordinal: usize,
        dry: bool,
        record: bool,
    ) -> PyResult<bool> {
        let Some(options) = size_key(size) else {
            return Ok(false);
        };
        let k = py.detach(|| self.k.compile(l)).map_err(|e| to_py(py, e))?;
        let gpu = if dry {
            None
        } else {
            let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
            let loaded = dev.load_cached(&k).map_err(|e| runtime_to_py(py, e))?;
            Some((dev, loaded))
        };
        let allocated = addresses(outs)?;
        self.fast.remember(
            py,
            args,
            &options,
            Launched {
                args: &l.args,
                steps: vec![(k, l.config(), gpu)],
                n_params: l.args.len() - 1,
                n_in: self.k.in_params().len(),
                missing: &call.r.missing,
                allocated: &allocated,
                out_shape: &call.r.shape,
                out_dtypes: call.r.out_dtypes.iter().map(|s| s.to_string()).collect(),
                partials: None,
                ordinal,
                launch: l.size != 0,
                record,
            },
        )
    }
}

impl Elementwise {
    /// [`Elementwise::call_fast`], `None` for the general path.
    fn try_fast(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        // A `size=` that is not a non-negative int: the general path says why.
        let size = match size {
            None => None,
            Some(s) if s.is_none() => None,
            Some(s) if s.is_exact_instance_of::<PyInt>() => match s.extract::<u64>() {
                Ok(s) => Some(s),
                Err(_) => return Ok(None),
            },
            Some(_) => return Ok(None),
        };
        let Some(options) = size_key(size) else {
            return Ok(None);
        };
        let none = py.None().into_bound(py);
        self.fast.call(py, args, &options, stream.unwrap_or(&none))
    }
}

#[pymethods]
impl Elementwise {
    #[new]
    #[pyo3(signature = (in_params, out_params, operation, name, preamble="", mode=0))]
    fn new(
        py: Python<'_>,
        in_params: &str,
        out_params: &str,
        operation: &str,
        name: &str,
        preamble: &str,
        mode: ReturnMode,
    ) -> PyResult<Elementwise> {
        let k = ElementwiseKernel::with_preamble(in_params, out_params, operation, name, preamble)
            .map_err(|e| to_py(py, e))?
            .with_cache(current_cache());
        Ok(Elementwise {
            k,
            fast: CallCache::new(mode),
        })
    }

    /// The whole call when its signature was launched before (CuPy arrays and Python
    /// numbers; `calls.rs`): the outputs, as the kernel returns them. `NotImplemented`
    /// (having done nothing) when the general path must run.
    #[pyo3(signature = (args, size=None, stream=None))]
    fn call_fast(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        size: Option<&Bound<'_, PyAny>>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        Ok(self
            .try_fast(py, args, size, stream)?
            .unwrap_or_else(|| py.NotImplemented()))
    }

    /// How many call signatures the fast path holds.
    fn fast_len(&self) -> usize {
        self.fast.len()
    }

    /// For measuring and testing without a GPU: remembers the call of `args` (resolved as
    /// `call`, outputs `outs`) with a dry-run launch (everything but the driver call; with
    /// `record`, the parameter bytes are kept for [`Elementwise::last_packed`]).
    #[pyo3(signature = (args, call, outs, ordinal=0, size=None, record=false))]
    #[allow(clippy::too_many_arguments)]
    fn remember_dry_run(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
        ordinal: usize,
        size: Option<u64>,
        record: bool,
    ) -> PyResult<bool> {
        let l = self.bind_outs(py, call, outs)?;
        self.remember_launch(py, args, size, call, outs, &l, ordinal, true, record)
    }

    /// The parameter bytes of the general path for a call (one entry per kernel launched),
    /// for the equivalence tests.
    fn general_packed<'py>(
        &self,
        py: Python<'py>,
        call: &ElementwiseCall,
        outs: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyList>> {
        let l = self.bind_outs(py, call, outs)?;
        let k = py.detach(|| self.k.compile(&l)).map_err(|e| to_py(py, e))?;
        bytes_list(py, vec![packed_bytes(&k, &l.args)?])
    }

    /// A dry run's last parameter bytes for the signature of `args` (`None`: not
    /// remembered).
    #[pyo3(signature = (args, size=None))]
    fn last_packed<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        size: Option<u64>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(options) = size_key(size) else {
            return Ok(None);
        };
        match self.fast.last_packed(py, args, &options)? {
            Some(v) => Ok(Some(bytes_list(py, v)?)),
            None => Ok(None),
        }
    }

    /// Decides types and shapes (no GPU needed).
    #[pyo3(signature = (args, size=None))]
    fn resolve(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        size: Option<u64>,
    ) -> PyResult<ElementwiseCall> {
        let r = self
            .k
            .resolve(&operands(args)?, size)
            .map_err(|e| to_py(py, e))?;
        Ok(ElementwiseCall { r })
    }

    /// The generated kernel's source for a call and its allocated outputs.
    fn source(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        generated_source(self, py, call, outs)
    }

    /// The generated kernel's PTX (compiled and cached).
    fn ptx(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        generated_ptx(self, py, call, outs)
    }

    /// The generated host function's source (§20.8).
    fn host_source(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        generated_host_source(self, py, call, outs)
    }

    /// Runs on the host, without the GIL; every array described is host memory.
    fn run_host(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        run_on_host(self, py, call, outs)
    }

    /// Runs the device kernel on the CPU back end, without the GIL; every array described
    /// is host memory.
    fn launch_cpu(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        // SAFETY: `pydevice._kernels` calls `launch_cpu` only with NumPy arrays it keeps
        // alive during the call, described by their own data pointers, shapes and strides.
        run_on_cpu(self, py, call, outs, |l| unsafe { self.k.launch_cpu(l) })
    }

    /// Launches on GPU `ordinal`, stream handle `stream`, without the GIL. With
    /// `remember=(args, size)` (the call's Python arguments, CuPy's framework), later calls
    /// of the same signature take the fast path ([`Elementwise::call_fast`]).
    #[pyo3(signature = (call, outs, ordinal, stream, remember=None))]
    fn launch(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
        ordinal: usize,
        stream: usize,
        remember: Option<(Bound<'_, PyTuple>, Option<u64>)>,
    ) -> PyResult<()> {
        let l = self.bind_outs(py, call, outs)?;
        let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
        // SAFETY: the caller keeps the stream alive for the call (or passes 0, the default).
        let stream = unsafe { Stream::from_handle(stream) };
        py.detach(|| self.k.launch(&dev, &l, &stream))
            .map_err(|e| to_py(py, e))?;
        // Remembering is an optimization: a signature it cannot remember (say, a dtype NumPy
        // does not name) keeps taking the general path, and the call has succeeded.
        if let Some((args, size)) = remember {
            let _ = self.remember_launch(py, &args, size, call, outs, &l, ordinal, false, false);
        }
        Ok(())
    }
}

/// The `axis` list the Python side passes to `resolve` for an `axis=` the fast path keys on.
fn call_axes(axis: &Bound<'_, PyAny>) -> PyResult<Option<Vec<i64>>> {
    if axis.is_none() {
        return Ok(None);
    }
    if axis.is_exact_instance_of::<PyInt>() {
        return Ok(Some(vec![axis.extract()?]));
    }
    axis.extract::<Vec<i64>>().map(Some)
}

/// A resolved reduction call.
#[pyclass(frozen, module = "pydevice._native")]
pub struct ReductionCall {
    r: ReductionResolved,
}

#[pymethods]
impl ReductionCall {
    /// The outputs' shape.
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.r.out_shape.clone()
    }

    /// Each output's dtype name.
    #[getter]
    fn out_dtypes(&self) -> Vec<String> {
        self.r.out_dtypes.iter().map(|s| s.to_string()).collect()
    }

    /// The outputs to allocate.
    #[getter]
    fn missing(&self) -> Vec<usize> {
        self.r.missing.clone()
    }

    /// Bytes of device memory the partial results of a full or a split column reduction
    /// need.
    #[getter]
    fn partials_bytes(&self) -> u64 {
        self.r.partials_len() * self.r.reduce_type.size()
    }
}

/// `pydevice.ReductionKernel`'s compiled half.
#[pyclass(frozen, module = "pydevice._native")]
pub struct Reduction {
    k: ReductionKernel,
    /// The number of input parameters.
    n_in: usize,
    /// Remembered call signatures (the repeated-call fast path, `calls.rs`).
    pub(crate) fast: CallCache,
}

impl Reduction {
    /// Remembers a launched call for the fast path (`dry`: no GPU, nothing loaded);
    /// `partials` is the scratch address the launch used.
    #[allow(clippy::too_many_arguments)]
    fn remember_launch(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: &[i64],
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
        l: &pydevice::kernels::ReductionLaunch,
        partials: u64,
        ordinal: usize,
        dry: bool,
        record: bool,
    ) -> PyResult<bool> {
        let (main, fin) = py.detach(|| self.k.compile(l)).map_err(|e| to_py(py, e))?;
        let slot = l.args.len() - 3;
        let mut args_v = l.args.clone();
        let mut kernels = vec![(main, l.grid())];
        let mut scratch = None;
        // The crate's own launch plan (`ReductionKernel::launch` follows it too): a full or a
        // split column reduction has a final kernel over `len` partial results.
        if let (Some(fin), Some((len, fin_grid))) = (fin, l.final_pass()) {
            args_v[slot] = ArgValue::Array(pydevice::abi::ArrayArg {
                data: partials,
                shape: vec![len],
                strides: vec![1],
            });
            kernels.push((fin, fin_grid));
            scratch = Some((slot, len * call.r.reduce_type.size(), vec![len]));
        }
        let mut steps = Vec::new();
        for (k, cfg) in kernels {
            let gpu = if dry {
                None
            } else {
                let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
                let loaded = dev.load_cached(&k).map_err(|e| runtime_to_py(py, e))?;
                Some((dev, loaded))
            };
            steps.push((k, cfg, gpu));
        }
        let allocated = addresses(outs)?;
        self.fast.remember(
            py,
            args,
            options,
            Launched {
                args: &args_v,
                steps,
                n_params: slot,
                n_in: self.n_in,
                missing: &call.r.missing,
                allocated: &allocated,
                out_shape: &call.r.out_shape,
                out_dtypes: call.r.out_dtypes.iter().map(|s| s.to_string()).collect(),
                partials: scratch,
                ordinal,
                launch: l.n_out != 0,
                record,
            },
        )
    }
}

impl Reduction {
    /// [`Reduction::call_fast`], `None` for the general path.
    fn try_fast(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let none = py.None().into_bound(py);
        let Some(options) = axis_key(axis.unwrap_or(&none), keepdims)? else {
            return Ok(None);
        };
        self.fast.call(py, args, &options, stream.unwrap_or(&none))
    }
}

#[pymethods]
impl Reduction {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, reduce_type=None))]
    fn new(
        py: Python<'_>,
        in_params: &str,
        out_params: &str,
        map_expr: &str,
        reduce_expr: &str,
        post_map_expr: &str,
        identity: &str,
        name: &str,
        reduce_type: Option<&str>,
    ) -> PyResult<Reduction> {
        let k = ReductionKernel::new(
            in_params,
            out_params,
            map_expr,
            reduce_expr,
            post_map_expr,
            identity,
            name,
            reduce_type,
        )
        .map_err(|e| to_py(py, e))?
        .with_cache(current_cache());
        Ok(Reduction {
            k,
            // The definition parsed, so its parameters are the comma-separated entries.
            n_in: in_params
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .count(),
            fast: CallCache::new(0),
        })
    }

    /// The whole call when its signature was launched before (see
    /// [`Elementwise::call_fast`]); `NotImplemented` when the general path must run.
    #[pyo3(signature = (args, axis=None, keepdims=false, stream=None))]
    fn call_fast(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        Ok(self
            .try_fast(py, args, axis, keepdims, stream)?
            .unwrap_or_else(|| py.NotImplemented()))
    }

    /// How many call signatures the fast path holds.
    fn fast_len(&self) -> usize {
        self.fast.len()
    }

    /// The generated source of each specialization compiled so far, as
    /// `(description, source)` pairs (`ReductionKernel._cached_codes`).
    fn cached_codes(&self) -> Vec<(String, String)> {
        self.k.cached_codes()
    }

    /// For measuring and testing without a GPU (see [`Elementwise::remember_dry_run`]).
    #[pyo3(signature = (args, call, outs, partials, axis=None, keepdims=false, ordinal=0, record=false))]
    #[allow(clippy::too_many_arguments)]
    fn remember_dry_run(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
        partials: u64,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
        ordinal: usize,
        record: bool,
    ) -> PyResult<bool> {
        let none = py.None().into_bound(py);
        let Some(options) = axis_key(axis.unwrap_or(&none), keepdims)? else {
            return Ok(false);
        };
        let l = self.bind_outs(py, call, outs)?;
        self.remember_launch(
            py, args, &options, call, outs, &l, partials, ordinal, true, record,
        )
    }

    /// The general path's parameter bytes for a call with scratch memory at `partials` (one
    /// entry per kernel launched), for the equivalence tests.
    fn general_packed<'py>(
        &self,
        py: Python<'py>,
        call: &ReductionCall,
        outs: &Bound<'py, PyTuple>,
        partials: u64,
    ) -> PyResult<Bound<'py, PyList>> {
        let l = self.bind_outs(py, call, outs)?;
        let (main, fin) = py.detach(|| self.k.compile(&l)).map_err(|e| to_py(py, e))?;
        let mut args = l.args.clone();
        let mut out = Vec::new();
        if fin.is_some() {
            let slot = args.len() - 3;
            args[slot] = ArgValue::Array(pydevice::abi::ArrayArg {
                data: partials,
                shape: vec![l.blocks()],
                strides: vec![1],
            });
        }
        out.push(packed_bytes(&main, &args)?);
        if let Some(fin) = fin {
            out.push(packed_bytes(&fin, &args)?);
        }
        bytes_list(py, out)
    }

    /// A dry run's last parameter bytes for the signature of `args`.
    #[pyo3(signature = (args, axis=None, keepdims=false))]
    fn last_packed<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        axis: Option<&Bound<'py, PyAny>>,
        keepdims: bool,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let none = py.None().into_bound(py);
        let Some(options) = axis_key(axis.unwrap_or(&none), keepdims)? else {
            return Ok(None);
        };
        match self.fast.last_packed(py, args, &options)? {
            Some(v) => Ok(Some(bytes_list(py, v)?)),
            None => Ok(None),
        }
    }

    /// Decides types and shapes; `axis=None` reduces every axis.
    #[pyo3(signature = (args, axis=None, keepdims=false))]
    fn resolve(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        axis: Option<Vec<i64>>,
        keepdims: bool,
    ) -> PyResult<ReductionCall> {
        let r = self
            .k
            .resolve(&operands(args)?, axis.as_deref(), keepdims)
            .map_err(|e| to_py(py, e))?;
        Ok(ReductionCall { r })
    }

    /// The generated source.
    fn source(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        generated_source(self, py, call, outs)
    }

    /// The strategy's name (`Thread`, `Warp`, `Block`, `Grid`, `Columns`).
    fn strategy(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        Ok(format!("{:?}", self.bind_outs(py, call, outs)?.strategy))
    }

    /// The PTX of the (first) kernel.
    fn ptx(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        generated_ptx(self, py, call, outs)
    }

    /// The generated host function's source (§20.8).
    fn host_source(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        generated_host_source(self, py, call, outs)
    }

    /// Runs on the host, without the GIL; every array described is host memory.
    fn run_host(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        run_on_host(self, py, call, outs)
    }

    /// Runs the device kernels on the CPU back end, without the GIL; every array described
    /// is host memory.
    fn launch_cpu(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        // SAFETY: as for `Elementwise::launch_cpu`.
        run_on_cpu(self, py, call, outs, |l| unsafe { self.k.launch_cpu(l) })
    }

    /// Launches; `partials` is device memory of `call.partials_bytes` bytes (the partial
    /// results of a full or a split column reduction), or 0 when the call does not need it. With
    /// `remember=(args, axis, keepdims)` later calls of the same signature take the fast
    /// path ([`Reduction::call_fast`]).
    #[pyo3(signature = (call, outs, partials, ordinal, stream, remember=None))]
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
        partials: u64,
        ordinal: usize,
        stream: usize,
        remember: Option<(Bound<'_, PyTuple>, Bound<'_, PyAny>, bool)>,
    ) -> PyResult<()> {
        let l = self.bind_outs(py, call, outs)?;
        let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
        // SAFETY: as for `Elementwise::launch`.
        let stream = unsafe { Stream::from_handle(stream) };
        let p = (partials != 0).then_some(partials);
        py.detach(|| self.k.launch(&dev, &l, p, &stream))
            .map_err(|e| to_py(py, e))?;
        if let Some((args, axis, keepdims)) = remember
            && let Some(options) = axis_key(&axis, keepdims)?
            && key_axis(&options) == call_axes(&axis)?
        {
            // As for `Elementwise::launch`: a failure to remember is not the call's.
            let _ = self.remember_launch(
                py, &args, &options, call, outs, &l, partials, ordinal, false, false,
            );
        }
        Ok(())
    }
}

/// A resolved `guvectorize` call: the outputs to allocate.
#[pyclass(frozen, module = "pydevice._native")]
pub struct GuCall {
    r: GuResolved,
}

#[pymethods]
impl GuCall {
    /// Each output's shape.
    #[getter]
    fn shapes(&self) -> Vec<Vec<u64>> {
        self.r.out_shapes.clone()
    }

    /// Each output's dtype name.
    #[getter]
    fn out_dtypes(&self) -> Vec<String> {
        self.r.out_dtypes.iter().map(|s| s.to_string()).collect()
    }

    /// The outputs to allocate.
    #[getter]
    fn missing(&self) -> Vec<usize> {
        self.r.missing.clone()
    }
}

/// `pydevice.guvectorize`'s compiled half: one signature (docs/semantics.md §20.9).
#[pyclass(frozen, module = "pydevice._native")]
pub struct GuVectorize {
    g: pydevice::kernels::GuVectorize,
}

#[pymethods]
impl GuVectorize {
    #[new]
    fn new(
        py: Python<'_>,
        signature: &str,
        layout: &str,
        preamble: &str,
        func: &str,
        name: &str,
    ) -> PyResult<GuVectorize> {
        let g = pydevice::kernels::GuVectorize::new(signature, layout, preamble, func, name)
            .map_err(|e| to_py(py, e))?
            .with_cache(current_cache());
        Ok(GuVectorize { g })
    }

    /// The number of inputs.
    #[getter]
    fn nin(&self) -> usize {
        self.g.n_in()
    }

    /// Each argument's dtype name and whether it is a scalar.
    #[getter]
    fn args(&self) -> Vec<(String, bool)> {
        self.g
            .args()
            .iter()
            .map(|a| (a.dtype.to_string(), a.ndim.is_none()))
            .collect()
    }

    /// Sizes a call (no GPU needed).
    fn resolve(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<GuCall> {
        let r = self.g.resolve(&operands(args)?).map_err(|e| to_py(py, e))?;
        Ok(GuCall { r })
    }

    /// The generated kernel's source.
    fn source(&self, py: Python<'_>, call: &GuCall, outs: &Bound<'_, PyTuple>) -> PyResult<String> {
        generated_source(self, py, call, outs)
    }

    /// The generated host function's source.
    fn host_source(
        &self,
        py: Python<'_>,
        call: &GuCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        generated_host_source(self, py, call, outs)
    }

    /// The generated kernel's PTX.
    fn ptx(&self, py: Python<'_>, call: &GuCall, outs: &Bound<'_, PyTuple>) -> PyResult<String> {
        generated_ptx(self, py, call, outs)
    }

    /// Launches on GPU `ordinal`, stream handle `stream`, without the GIL.
    fn launch(
        &self,
        py: Python<'_>,
        call: &GuCall,
        outs: &Bound<'_, PyTuple>,
        ordinal: usize,
        stream: usize,
    ) -> PyResult<()> {
        let (k, l) = self.bind_outs(py, call, outs)?;
        let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
        // SAFETY: as for `Elementwise::launch`.
        let stream = unsafe { Stream::from_handle(stream) };
        py.detach(|| k.launch(&dev, &l, &stream))
            .map_err(|e| to_py(py, e))
    }

    /// Runs on the host, without the GIL; every array described is host memory.
    fn run_host(&self, py: Python<'_>, call: &GuCall, outs: &Bound<'_, PyTuple>) -> PyResult<()> {
        run_on_host(self, py, call, outs)
    }
}

/// The native half a [`KernelCall`] calls.
enum Native {
    Elementwise(Py<Elementwise>),
    Reduction(Py<Reduction>),
}

/// The base class of `pydevice.ElementwiseKernel` and `pydevice.ReductionKernel`: their
/// `__call__`, in native code (the type's call slot), so that a call whose signature was
/// launched before takes the repeated-call fast path (`calls.rs`) without a Python frame in
/// between. Anything else (a first call, keyword arguments it does not know, the NumPy and
/// PyTorch paths, errors) calls the subclass's `_call(*args, **kwargs)`, the general path.
/// The subclass binds its native half once, with `_set_native`.
#[pyclass(subclass, frozen, module = "pydevice._native")]
pub struct KernelCall {
    native: std::sync::OnceLock<Native>,
}

impl KernelCall {
    /// The fast path for `args` and keyword arguments `kwargs`; `None` for the general path.
    fn try_fast(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let Some(native) = self.native.get() else {
            return Ok(None);
        };
        // Keyword arguments by name; one the fast path does not know (or a name that is not
        // a string) takes the general path, which knows them or raises.
        let mut size = None;
        let mut stream = None;
        let mut axis = None;
        let mut keepdims = false;
        let mut out = None;
        if let Some(kw) = kwargs {
            let reduction = matches!(native, Native::Reduction(_));
            for (k, v) in kw.iter() {
                if k.eq(pyo3::intern!(py, "stream"))? {
                    stream = Some(v);
                } else if !reduction && k.eq(pyo3::intern!(py, "size"))? {
                    size = Some(v);
                } else if reduction && k.eq(pyo3::intern!(py, "axis"))? {
                    axis = Some(v);
                } else if reduction && k.eq(pyo3::intern!(py, "keepdims"))? {
                    // `keepdims` of another type than bool: the general path converts it.
                    if !v.is_exact_instance_of::<pyo3::types::PyBool>() {
                        return Ok(None);
                    }
                    keepdims = v.is_truthy()?;
                } else if reduction && k.eq(pyo3::intern!(py, "out"))? {
                    out = Some(v);
                } else {
                    return Ok(None);
                }
            }
        }
        match native {
            Native::Elementwise(k) => k.get().try_fast(py, args, size.as_ref(), stream.as_ref()),
            Native::Reduction(k) => {
                // `out=` is the last argument, as the general path appends it.
                let args = match out {
                    Some(o) if !o.is_none() => {
                        let mut v: Vec<Bound<'_, PyAny>> = args.iter().collect();
                        v.push(o);
                        PyTuple::new(py, v)?
                    }
                    _ => args.clone(),
                };
                k.get()
                    .try_fast(py, &args, axis.as_ref(), keepdims, stream.as_ref())
            }
        }
    }
}

#[pymethods]
impl KernelCall {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> KernelCall {
        KernelCall {
            native: std::sync::OnceLock::new(),
        }
    }

    /// Binds the native half (`_native.Elementwise` or `_native.Reduction`) whose fast path
    /// `__call__` takes; once.
    fn _set_native(&self, k: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = if let Ok(e) = k.cast::<Elementwise>() {
            Native::Elementwise(e.clone().unbind())
        } else if let Ok(r) = k.cast::<Reduction>() {
            Native::Reduction(r.clone().unbind())
        } else {
            return Err(PyTypeError::new_err(
                "_set_native takes a _native.Elementwise or _native.Reduction",
            ));
        };
        self.native
            .set(n)
            .map_err(|_| PyTypeError::new_err("the kernel's native half is already bound"))
    }

    /// The call: the fast path when it knows the signature, else `self._call(*args,
    /// **kwargs)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if let Some(r) = slf.get().try_fast(py, args, kwargs)? {
            return Ok(r);
        }
        Ok(slf
            .as_any()
            .getattr(pyo3::intern!(py, "_call"))?
            .call(args, kwargs)?
            .unbind())
    }
}
