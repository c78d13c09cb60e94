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
use pyo3::types::{PyComplex, PyTuple};
use std::sync::Arc;

use crate::{current_cache, device, runtime_to_py, to_py};

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
}

impl Elementwise {
    fn bind(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<ElementwiseLaunch> {
        self.k
            .bind(&call.r, arrays(outs)?)
            .map_err(|e| to_py(py, e))
    }
}

#[pymethods]
impl Elementwise {
    #[new]
    #[pyo3(signature = (in_params, out_params, operation, name, preamble=""))]
    fn new(
        py: Python<'_>,
        in_params: &str,
        out_params: &str,
        operation: &str,
        name: &str,
        preamble: &str,
    ) -> PyResult<Elementwise> {
        let k = ElementwiseKernel::with_preamble(in_params, out_params, operation, name, preamble)
            .map_err(|e| to_py(py, e))?
            .with_cache(current_cache());
        Ok(Elementwise { k })
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
        Ok(self.k.source(&self.bind(py, call, outs)?))
    }

    /// The generated kernel's PTX (compiled and cached).
    fn ptx(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        let l = self.bind(py, call, outs)?;
        let k = py.detach(|| self.k.compile(&l)).map_err(|e| to_py(py, e))?;
        Ok(k.ptx.clone())
    }

    /// The generated host function's source (§20.8).
    fn host_source(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        Ok(self.k.host_source(&self.bind(py, call, outs)?))
    }

    /// Runs on the host, without the GIL; every array described is host memory.
    fn run_host(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        let l = self.bind(py, call, outs)?;
        // SAFETY: `pydevice._kernels` describes only NumPy arrays it keeps alive during the
        // call, by their own data pointers, shapes and element strides.
        py.detach(|| unsafe { self.k.run_host(&l) })
            .map_err(|e| to_py(py, e))
    }

    /// Launches on GPU `ordinal`, stream handle `stream`, without the GIL.
    fn launch(
        &self,
        py: Python<'_>,
        call: &ElementwiseCall,
        outs: &Bound<'_, PyTuple>,
        ordinal: usize,
        stream: usize,
    ) -> PyResult<()> {
        let l = self.bind(py, call, outs)?;
        let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
        // SAFETY: the caller keeps the stream alive for the call (or passes 0, the default).
        let stream = unsafe { Stream::from_handle(stream) };
        py.detach(|| self.k.launch(&dev, &l, &stream))
            .map_err(|e| to_py(py, e))
    }
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
}

impl Reduction {
    fn bind(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<ReductionLaunch> {
        self.k
            .bind(&call.r, arrays(outs)?)
            .map_err(|e| to_py(py, e))
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
        Ok(Reduction { k })
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
        Ok(self.k.source(&self.bind(py, call, outs)?))
    }

    /// The strategy's name (`Thread`, `Warp`, `Block`, `Grid`, `Columns`).
    fn strategy(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        Ok(format!("{:?}", self.bind(py, call, outs)?.strategy))
    }

    /// The PTX of the (first) kernel.
    fn ptx(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        let l = self.bind(py, call, outs)?;
        let (k, _) = py.detach(|| self.k.compile(&l)).map_err(|e| to_py(py, e))?;
        Ok(k.ptx.clone())
    }

    /// The generated host function's source (§20.8).
    fn host_source(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        Ok(self.k.host_source(&self.bind(py, call, outs)?))
    }

    /// Runs on the host, without the GIL; every array described is host memory.
    fn run_host(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<()> {
        let l = self.bind(py, call, outs)?;
        // SAFETY: as for `Elementwise::run_host`.
        py.detach(|| unsafe { self.k.run_host(&l) })
            .map_err(|e| to_py(py, e))
    }

    /// Launches; `partials` is device memory of `call.partials_bytes` bytes (the partial
    /// results of a full or a split column reduction), or 0 when the call does not need it.
    fn launch(
        &self,
        py: Python<'_>,
        call: &ReductionCall,
        outs: &Bound<'_, PyTuple>,
        partials: u64,
        ordinal: usize,
        stream: usize,
    ) -> PyResult<()> {
        let l = self.bind(py, call, outs)?;
        let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
        // SAFETY: as for `Elementwise::launch`.
        let stream = unsafe { Stream::from_handle(stream) };
        let partials = (partials != 0).then_some(partials);
        py.detach(|| self.k.launch(&dev, &l, partials, &stream))
            .map_err(|e| to_py(py, e))
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

impl GuVectorize {
    fn bind(
        &self,
        py: Python<'_>,
        call: &GuCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<(Arc<ElementwiseKernel>, ElementwiseLaunch)> {
        self.g
            .bind(&call.r, arrays(outs)?)
            .map_err(|e| to_py(py, e))
    }
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
        let (k, l) = self.bind(py, call, outs)?;
        Ok(k.source(&l))
    }

    /// The generated host function's source.
    fn host_source(
        &self,
        py: Python<'_>,
        call: &GuCall,
        outs: &Bound<'_, PyTuple>,
    ) -> PyResult<String> {
        let (k, l) = self.bind(py, call, outs)?;
        Ok(k.host_source(&l))
    }

    /// The generated kernel's PTX.
    fn ptx(&self, py: Python<'_>, call: &GuCall, outs: &Bound<'_, PyTuple>) -> PyResult<String> {
        let (k, l) = self.bind(py, call, outs)?;
        let c = py.detach(|| k.compile(&l)).map_err(|e| to_py(py, e))?;
        Ok(c.ptx.clone())
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
        let (k, l) = self.bind(py, call, outs)?;
        let dev = device(ordinal).map_err(|e| runtime_to_py(py, e))?;
        // SAFETY: as for `Elementwise::launch`.
        let stream = unsafe { Stream::from_handle(stream) };
        py.detach(|| k.launch(&dev, &l, &stream))
            .map_err(|e| to_py(py, e))
    }

    /// Runs on the host, without the GIL; every array described is host memory.
    fn run_host(&self, py: Python<'_>, call: &GuCall, outs: &Bound<'_, PyTuple>) -> PyResult<()> {
        let (k, l) = self.bind(py, call, outs)?;
        // SAFETY: as for `Elementwise::run_host`.
        py.detach(|| unsafe { k.run_host(&l) })
            .map_err(|e| to_py(py, e))
    }
}
