//! `pydevice.fuse`'s repeated-call fast path ([`FuseDispatch`]): a fused function's kernel
//! (an `ElementwiseKernel` or a `ReductionKernel` of `kernels.rs`) found by argument
//! signature, then called through that kernel's own fast path (`CallCache` of `calls.rs`).
//! It sits above both, so `calls` and `kernels` import only downward.

use std::sync::{Arc, RwLock};

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::calls::MAX_ENTRIES;
use crate::fast::{ArgKey, ArgVal, Key, read};
use crate::kernels::{Elementwise, Reduction, axis_key};

/// A fused function's kernel for one argument signature.
enum Fused {
    Elementwise(Py<Elementwise>),
    Reduction {
        kernel: Py<Reduction>,
        /// The reduction's key options (`axis=`, `keepdims=`).
        options: Vec<i64>,
    },
}

/// What decides a fused function's kernel, per argument: a CuPy array's kind, or a Python
/// number's kind and value (the value is written into the traced body).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum FuseArg {
    Array(ArgKey),
    Int(i64),
    Float(u64),
    Bool(bool),
}

/// `pydevice.fuse`'s repeated-call fast path: the kernel and the arguments it takes (the
/// arrays) by argument signature, then that kernel's own fast path.
#[pyclass(frozen, module = "pydevice._native")]
pub struct FuseDispatch {
    /// Signature -> (kernel, the arguments it takes, the dtype objects of the key kept alive).
    #[allow(clippy::type_complexity)]
    map: RwLock<
        FxHashMap<SmallVec<[FuseArg; 4]>, (Arc<Fused>, Vec<usize>, SmallVec<[Py<PyAny>; 4]>)>,
    >,
}

/// A fused call's arguments as read: its key, and each argument's kind and value.
type FuseRead = (
    SmallVec<[FuseArg; 4]>,
    SmallVec<[(ArgKey, ArgVal); 4]>,
    SmallVec<[Py<PyAny>; 4]>,
);

fn fuse_key(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Option<FuseRead>> {
    let mut key = SmallVec::new();
    let mut read_args = SmallVec::new();
    let mut keep = SmallVec::new();
    let mut arrays = false;
    for a in args.iter() {
        let Some((k, v, d)) = read(py, &a)? else {
            return Ok(None);
        };
        key.push(match (&k, &v) {
            (ArgKey::Array { torch: false, .. }, _) => {
                arrays = true;
                keep.extend(d);
                FuseArg::Array(k.clone())
            }
            (_, ArgVal::Int(x)) => FuseArg::Int(*x),
            (_, ArgVal::Float(x)) => FuseArg::Float(x.to_bits()),
            (_, ArgVal::Bool(x)) => FuseArg::Bool(*x),
            _ => return Ok(None),
        });
        read_args.push((k, v));
    }
    // Numbers alone: the function runs in Python (the general path).
    Ok(arrays.then_some((key, read_args, keep)))
}

#[pymethods]
impl FuseDispatch {
    #[new]
    fn new() -> FuseDispatch {
        FuseDispatch {
            map: RwLock::new(FxHashMap::default()),
        }
    }

    /// The fused call when this signature's kernel is known and takes its fast path;
    /// `NotImplemented` (having done nothing) otherwise.
    fn call(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let Some((key, mut read_args, _keep)) = fuse_key(py, args)? else {
            return Ok(py.NotImplemented());
        };
        let found = {
            let map = self.map.read().unwrap_or_else(|e| e.into_inner());
            map.get(&key).map(|(f, a, _)| (f.clone(), a.clone()))
        };
        let Some((fused, which)) = found else {
            return Ok(py.NotImplemented());
        };
        // The kernel's arguments (the arrays), read once: moved out of `read_args`.
        let sub = which
            .iter()
            .map(|&i| args.get_item(i))
            .collect::<PyResult<SmallVec<[_; 4]>>>()?;
        let sub = PyTuple::new(py, sub)?;
        let mut kinds = Key::new();
        let mut vals = SmallVec::new();
        for &i in &which {
            let Some(slot) = read_args.get_mut(i) else {
                return Ok(py.NotImplemented());
            };
            let (k, v) = std::mem::replace(slot, (ArgKey::Bool, ArgVal::Bool(false)));
            kinds.push(k);
            vals.push(v);
        }
        let none = py.None().into_bound(py);
        let r = match &*fused {
            Fused::Elementwise(k) => k
                .get()
                .fast
                .call_read(py, &sub, kinds, vals, &[-1], &none)?,
            Fused::Reduction { kernel, options } => kernel
                .get()
                .fast
                .call_read(py, &sub, kinds, vals, options, &none)?,
        };
        Ok(r.unwrap_or_else(|| py.NotImplemented()))
    }

    /// Remembers the kernel the general path built for `args`: its native half, the indices
    /// of the arguments it takes, and for a reduction `axis` and `keepdims`. Returns whether
    /// it did.
    #[pyo3(signature = (args, kernel, arrays, axis=None, keepdims=false))]
    fn insert(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kernel: &Bound<'_, PyAny>,
        arrays: Vec<usize>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
    ) -> PyResult<bool> {
        let Some((key, _, keep)) = fuse_key(py, args)? else {
            return Ok(false);
        };
        let fused = if let Ok(k) = kernel.cast::<Elementwise>() {
            Fused::Elementwise(k.clone().unbind())
        } else if let Ok(k) = kernel.cast::<Reduction>() {
            let none = py.None().into_bound(py);
            let Some(options) = axis_key(axis.unwrap_or(&none), keepdims)? else {
                return Ok(false);
            };
            Fused::Reduction {
                kernel: k.clone().unbind(),
                options,
            }
        } else {
            return Ok(false);
        };
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ENTRIES {
            let old = std::mem::take(&mut *map);
            drop(map);
            drop(old);
            map = self.map.write().unwrap_or_else(|e| e.into_inner());
        }
        let old = map.insert(key, (Arc::new(fused), arrays, keep));
        drop(map);
        drop(old);
        Ok(true)
    }
}
