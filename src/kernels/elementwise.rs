//! `ElementwiseKernel`: CuPy's elementwise kernel with a Python body (docs/semantics.md §20.1).
//!
//! A call goes in three steps, each usable alone: [`ElementwiseKernel::resolve`] decides the
//! types and the output shape from the arguments (no device needed), the caller allocates the
//! outputs that were not given (any framework; [`ElementwiseKernel::call`] does it through
//! the runtime), and [`ElementwiseKernel::bind`] makes the launch: the arrays broadcast and
//! their dimensions merged, the argument types the generated kernel is specialized for, and
//! its source ([`ElementwiseKernel::source`]).

use super::{
    Body, Definition, GeneratedSource, HostKernel, HostOutput, Operand, Param, ParamType,
    ScalarArg, SourceBuilder, arg_error, broadcast_shapes, broadcast_to, can_cast_same_kind,
    check_duplicates, collapse_dims, imports_for, parse_params,
};
use crate::abi::{ArgValue, ArrayArg};
use crate::cache::KernelCache;
use crate::diag::{Code, Diagnostic, Span};
use crate::runtime::{Device, DeviceArray, DeviceBuffer, LaunchConfig, Stream};
use crate::types::{Layout, Scalar, Type};
use crate::{CompileOptions, CompiledKernel, Error};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Threads per block of the generated kernels.
pub const BLOCK: u32 = 256;

/// A kernel defined by parameter lists and a Python body, specialized per call for the
/// arguments' dtypes, ranks and layouts. `Send + Sync`.
///
/// ```
/// use pydevice::kernels::{ElementwiseKernel, Operand};
/// use pydevice::runtime::DeviceArray;
/// use pydevice::types::Scalar;
///
/// let k = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
///     .expect("a valid definition");
/// let x = DeviceArray::contiguous(0x1000, Scalar::Float32, &[2, 5]);
/// let y = DeviceArray::contiguous(0x2000, Scalar::Float32, &[5]);
/// let r = k.resolve(&[Operand::Array(x), Operand::Array(y)], None).expect("types resolve");
/// assert_eq!(r.shape, vec![2, 5]);
/// assert_eq!(r.out_dtypes, vec![Scalar::Float32]);
/// ```
#[derive(Debug)]
pub struct ElementwiseKernel {
    name: String,
    def: Definition,
    ins: Vec<Param>,
    outs: Vec<Param>,
    body: Body,
    preamble: Option<Body>,
    options: CompileOptions,
    cache: Arc<KernelCache>,
    compiled: Mutex<HashMap<ElementwiseKey, Arc<CompiledKernel>>>,
    host_compiled: Mutex<HashMap<ElementwiseKey, HostKernel>>,
    cpu_compiled: Mutex<HashMap<ElementwiseKey, Arc<crate::runtime::cpu::CpuKernel>>>,
}

/// What a call's arguments decide before the outputs exist.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The broadcast shape: every non-raw output's shape.
    pub shape: Vec<u64>,
    /// The dtype of each output parameter.
    pub out_dtypes: Vec<Scalar>,
    /// The output parameters that were not given (indices into the output list): the caller
    /// allocates them, C-contiguous, with `shape` and their dtype.
    pub missing: Vec<usize>,
    /// `_ind.size()`: the number of elements the loop runs over.
    pub size: u64,
    /// The type each placeholder stands for.
    pub placeholders: Vec<(char, Scalar)>,
    operands: Vec<Operand>,
    /// Each parameter's resolved type (inputs, then outputs).
    param_types: Vec<Scalar>,
}

impl Resolved {
    /// The call's arguments, one per parameter ([`Operand::Absent`] for outputs to allocate).
    pub(crate) fn operands(&self) -> &[Operand] {
        &self.operands
    }

    /// Parameter `k`'s resolved type (inputs, then outputs).
    pub(crate) fn param_type(&self, k: usize) -> Scalar {
        self.param_types[k]
    }
}

/// One launch: the kernel's argument types and values, ready to compile and run.
#[derive(Clone, Debug)]
pub struct ElementwiseLaunch {
    /// The argument types the kernel is specialized for.
    pub types: Vec<Type>,
    /// The argument values, in the kernel's parameter order.
    pub args: Vec<ArgValue>,
    /// The elements the loop runs over.
    pub size: u64,
    /// Whether the loop index is 64-bit (it is 32-bit below 2**31 elements).
    pub wide_index: bool,
    /// The outputs, as given or allocated.
    pub outputs: Vec<DeviceArray>,
    /// Each placeholder's type.
    placeholders: Vec<(char, Scalar)>,
    /// Each parameter's resolved type.
    param_types: Vec<Scalar>,
    /// Dimensions of the merged shape.
    rank: usize,
    /// How each parameter's array is indexed (one per parameter; [`Indexing::Full`] for
    /// scalars and raw arrays).
    indexing: Vec<Indexing>,
    /// Whether the body has a `return`.
    returns: bool,
}

/// How the generated kernel indexes a non-raw array operand when the merged shape has more
/// than one dimension (§20.3). The arithmetic per element is the same in every case: only
/// the address computation differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Indexing {
    /// By the unravelled multi-index `_j0, _j1, ...` of the merged shape.
    Full,
    /// C-contiguous over the whole merged shape: passed as a 1-D view and indexed by `i`.
    Flat,
    /// Broadcast (stride 0) along the leading dimensions and C-contiguous over the trailing
    /// ones (a row broadcast to a matrix): passed as a 1-D view of the trailing block and
    /// indexed by `i` modulo its length.
    Inner,
}

/// How an operand with (merged) `strides` is indexed over the merged `shape`.
fn indexing_for(shape: &[u64], strides: &[i64]) -> Indexing {
    let rank = shape.len();
    if rank < 2 {
        return Indexing::Full;
    }
    let mut c = vec![1i64; rank];
    for d in (0..rank - 1).rev() {
        c[d] = c[d + 1].wrapping_mul(shape[d + 1] as i64);
    }
    if strides == c.as_slice() {
        return Indexing::Flat;
    }
    // The first dimension with a non-zero stride: C-contiguous from there on (the merged
    // shape has no extent-1 dimensions, so a zero stride is a broadcast).
    let m = strides.iter().position(|&s| s != 0).unwrap_or(rank);
    if m > 0 && m < rank && strides[m..] == c[m..] {
        return Indexing::Inner;
    }
    Indexing::Full
}

impl ElementwiseLaunch {
    /// The launch shape: [`BLOCK`] threads per block, one thread per element, at most
    /// 2**31 - 1 threads (so that `tid(1)`, an `int32`, cannot overflow; the grid-stride loop
    /// covers larger sizes).
    ///
    /// A kernel that unravels an index below 2**31 elements takes two elements per thread
    /// (§20.3), so it gets half the threads.
    pub fn config(&self) -> LaunchConfig {
        let per_thread = if self.pairs() { 2 } else { 1 };
        let blocks = self
            .size
            .div_ceil(u64::from(BLOCK) * per_thread)
            .clamp(1, i32::MAX as u64 / u64::from(BLOCK));
        LaunchConfig::linear(blocks as u32, BLOCK)
    }

    /// Whether the device kernel takes two elements per thread and iteration: below 2**31
    /// elements when the merged shape keeps more than one dimension (some operand then needs
    /// more than `i` for its index), unless the body may `return`.
    fn pairs(&self) -> bool {
        !self.wide_index && self.rank > 1 && !self.returns
    }
}

/// An output of [`ElementwiseKernel::call`]: the array and, when the call allocated it, its
/// memory (keep it alive while the array is used).
pub struct Output {
    /// The array.
    pub array: DeviceArray,
    /// The memory the call allocated for it.
    pub buffer: Option<DeviceBuffer>,
}

/// The name of a parameter's array in the generated kernel (the body's name is its element).
fn array_name(p: &Param) -> String {
    if p.raw {
        p.name.clone()
    } else {
        format!("_p_{}", p.name)
    }
}

/// The Python spelling of a conversion to `s` in the generated code.
pub(crate) fn convert(s: Scalar) -> String {
    match s {
        Scalar::Bool => "bool".into(),
        s => format!("device.{}", s.name()),
    }
}

impl ElementwiseKernel {
    /// A kernel from CuPy's four strings: input parameters, output parameters, the Python
    /// body and the kernel's name. Errors are diagnostics pointing into those strings.
    pub fn new(
        in_params: &str,
        out_params: &str,
        operation: &str,
        name: &str,
    ) -> Result<ElementwiseKernel, Error> {
        Self::with_preamble(in_params, out_params, operation, name, "")
    }

    /// A kernel whose body may call the Python device functions of `preamble` (`@device.func`
    /// definitions, placed in the generated module; CuPy's `preamble` holds C++ instead).
    /// Diagnostics in the preamble point into it (the definition's fourth part).
    pub fn with_preamble(
        in_params: &str,
        out_params: &str,
        operation: &str,
        name: &str,
        preamble: &str,
    ) -> Result<ElementwiseKernel, Error> {
        let def = Definition::new(
            name,
            "ElementwiseKernel",
            &[in_params, out_params, operation, preamble],
        );
        let mut diags = Vec::new();
        if !super::is_identifier(name) || super::KEYWORDS.contains(&name) {
            diags.push(Diagnostic::error(
                Code::E0700,
                Span::default(),
                format!("the kernel's name `{name}` is not a Python identifier"),
            ));
        }
        let ins = parse_params(&def, 0, &mut diags);
        let outs = parse_params(&def, 1, &mut diags);
        if outs.is_empty() && diags.is_empty() {
            diags.push(Diagnostic::error(
                Code::E0700,
                def.part_span(1),
                "an elementwise kernel needs at least one output parameter",
            ));
        }
        check_duplicates(&ins.iter().chain(&outs).collect::<Vec<_>>(), &mut diags);
        let placeholders: Vec<char> = ins
            .iter()
            .chain(&outs)
            .filter_map(|p| match p.ty {
                ParamType::Placeholder(c) => Some(c),
                ParamType::Fixed(_) => None,
            })
            .collect();
        let body = Body::new(&def, 2, &placeholders, false, &mut diags);
        let preamble = if preamble.trim().is_empty() {
            None
        } else {
            Body::new(&def, 3, &[], false, &mut diags)
        };
        match body {
            Some(body) if diags.is_empty() => Ok(ElementwiseKernel {
                name: name.to_string(),
                def,
                ins,
                outs,
                body,
                preamble,
                options: CompileOptions::default(),
                cache: Arc::new(KernelCache::new()),
                compiled: Mutex::new(HashMap::new()),
                host_compiled: Mutex::new(HashMap::new()),
                cpu_compiled: Mutex::new(HashMap::new()),
            }),
            _ => Err(def.error(diags)),
        }
    }

    /// Compiles through `cache` (shared with other kernels, or with a disk cache) instead of
    /// a cache of its own.
    pub fn with_cache(mut self, cache: Arc<KernelCache>) -> ElementwiseKernel {
        self.cache = cache;
        self
    }

    /// Compiles with `options` (architecture, optimization level).
    pub fn with_options(mut self, options: CompileOptions) -> ElementwiseKernel {
        self.options = options;
        self
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input parameters.
    pub fn in_params(&self) -> &[Param] {
        &self.ins
    }

    /// The output parameters.
    pub fn out_params(&self) -> &[Param] {
        &self.outs
    }

    /// Decides the types and the output shape of a call on `operands` (the inputs, then
    /// optionally the outputs, [`Operand::Absent`] for one to allocate). `size` is CuPy's
    /// `size=`, required when every array is `raw`.
    pub fn resolve(&self, operands: &[Operand], size: Option<u64>) -> Result<Resolved, Error> {
        resolve(
            &self.name, &self.def, &self.ins, &self.outs, operands, size, true,
        )
    }

    /// The launch for a resolved call, with `outputs` for the parameters
    /// [`Resolved::missing`] names (in that order).
    pub fn bind(
        &self,
        resolved: &Resolved,
        outputs: Vec<DeviceArray>,
    ) -> Result<ElementwiseLaunch, Error> {
        if outputs.len() != resolved.missing.len() {
            return Err(arg_error(format!(
                "{} outputs were to be allocated, but {} were given",
                resolved.missing.len(),
                outputs.len()
            )));
        }
        let mut operands = resolved.operands.clone();
        let n_in = self.ins.len();
        for (&k, a) in resolved.missing.iter().zip(outputs) {
            let p = &self.outs[k];
            let want = resolved.out_dtypes[k];
            if a.dtype != want || (!p.raw && a.shape != resolved.shape) {
                return Err(arg_error(format!(
                    "the allocated output `{}` must be {} of shape {:?}; it is {} of shape {:?}",
                    p.name, want, resolved.shape, a.dtype, a.shape
                )));
            }
            operands[n_in + k] = Operand::Array(a);
        }
        self.launch_for(resolved, operands)
    }

    fn launch_for(
        &self,
        resolved: &Resolved,
        operands: Vec<Operand>,
    ) -> Result<ElementwiseLaunch, Error> {
        let params: Vec<&Param> = self.ins.iter().chain(&self.outs).collect();
        // The broadcast views of the non-raw arrays, merged.
        let views: Vec<(usize, DeviceArray)> = operands
            .iter()
            .enumerate()
            .filter_map(|(k, o)| match o {
                Operand::Array(a) if !params[k].raw => Some((k, broadcast_to(a, &resolved.shape))),
                _ => None,
            })
            .collect();
        let strides: Vec<Vec<i64>> = views.iter().map(|(_, a)| a.strides.clone()).collect();
        let (shape, strides) = collapse_dims(&resolved.shape, &strides);
        let rank = shape.len();
        let mut wide = resolved.size > i32::MAX as u64;
        let mut types = Vec::new();
        let mut args = Vec::new();
        let mut outputs = Vec::new();
        let mut indexing = vec![Indexing::Full; operands.len()];
        for (k, o) in operands.iter().enumerate() {
            let p = params[k];
            let t = resolved.param_types[k];
            match o {
                Operand::Array(a) if p.raw => {
                    wide |= a.len() > i32::MAX as u64;
                    let (sh, st) = if a.ndim() == 0 {
                        (vec![1], vec![1])
                    } else {
                        (a.shape.clone(), a.strides.clone())
                    };
                    let view = DeviceArray {
                        shape: sh,
                        strides: st,
                        ..a.clone()
                    };
                    types.push(view.array_type());
                    args.push(ArgValue::Array(ArrayArg {
                        data: a.data,
                        shape: view.shape.clone(),
                        strides: view.strides.clone(),
                    }));
                }
                Operand::Array(a) => {
                    let v = views.iter().position(|(j, _)| *j == k).unwrap_or(0);
                    let st = &strides[v];
                    let how = indexing_for(&shape, st);
                    indexing[k] = how;
                    if how == Indexing::Full {
                        let layout = if st.last() == Some(&1) {
                            Layout::C
                        } else {
                            Layout::Any
                        };
                        types.push(Type::array(a.dtype, rank as u8, layout));
                        args.push(ArgValue::Array(ArrayArg {
                            data: a.data,
                            shape: shape.clone(),
                            strides: st.clone(),
                        }));
                    } else {
                        // A 1-D view of the same memory: the whole array, or the trailing
                        // block its broadcast repeats.
                        let m = st.iter().position(|&s| s != 0).unwrap_or(0);
                        let len: u64 = shape[m..].iter().product();
                        types.push(Type::array(a.dtype, 1, Layout::C));
                        args.push(ArgValue::Array(ArrayArg {
                            data: a.data,
                            shape: vec![len],
                            strides: vec![1],
                        }));
                    }
                }
                Operand::Scalar(s) => {
                    types.push(Type::Scalar(t));
                    args.push(s.value.clone());
                }
                Operand::Absent => {
                    return Err(arg_error(format!(
                        "output `{}` was not given and not allocated",
                        p.name
                    )));
                }
            }
            if k >= self.ins.len()
                && let Operand::Array(a) = o
            {
                outputs.push(a.clone());
            }
        }
        types.push(Type::Scalar(if wide {
            Scalar::Int64
        } else {
            Scalar::Int32
        }));
        args.push(ArgValue::Int(resolved.size as i64));
        Ok(ElementwiseLaunch {
            types,
            args,
            size: resolved.size,
            wide_index: wide,
            outputs,
            placeholders: resolved.placeholders.clone(),
            param_types: resolved.param_types.clone(),
            rank,
            indexing,
            returns: self.body.names.returns,
        })
    }

    /// The generated kernel for argument types `types` (the last is the loop bound); with
    /// `host`, a `@device.func` that loops over every element in order instead (run on the
    /// host through Cranelift, §20.8).
    fn generate(
        &self,
        launch: &ElementwiseLaunch,
        host: bool,
    ) -> (GeneratedSource, HashMap<String, String>) {
        let types = &launch.types;
        let rank = launch.rank;
        let params: Vec<&Param> = self.ins.iter().chain(&self.outs).collect();
        let mut renames = HashMap::new();
        let mut b = SourceBuilder::new(self.def.part_span(2));
        b.line(0, "from cuda import device");
        if self.body.names.loaded.contains("math")
            || self
                .preamble
                .as_ref()
                .is_some_and(|p| p.names.loaded.contains("math"))
        {
            b.line(0, "import math");
        }
        let mut defined: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        defined.extend(["i", "_ind_size"]);
        let ph: Vec<String> = launch
            .placeholders
            .iter()
            .map(|(c, _)| c.to_string())
            .collect();
        defined.extend(ph.iter().map(String::as_str));
        for (c, s) in &launch.placeholders {
            if self.body.names.loaded.contains(&c.to_string()) {
                let line = if *s == Scalar::Bool {
                    format!("{c} = bool")
                } else {
                    format!("from cuda.device import {} as {c}", s.name())
                };
                b.line(0, &line);
            }
        }
        let mut names = self.body.names.clone();
        if let Some(p) = &self.preamble {
            names.loaded.extend(p.names.loaded.iter().cloned());
            names.stored.extend(p.names.stored.iter().cloned());
        }
        let (math, device) = imports_for(&names, &defined);
        if !math.is_empty() {
            b.line(0, &format!("from math import {}", math.join(", ")));
        }
        if !device.is_empty() {
            b.line(0, &format!("from cuda.device import {}", device.join(", ")));
        }
        if let Some(p) = &self.preamble {
            b.line(0, "");
            b.line(0, "");
            b.body(0, p);
        }
        b.line(0, "");
        b.line(0, "");
        b.line(
            0,
            if host {
                "@device.func"
            } else {
                "@device.kernel"
            },
        );
        let names: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(k, p)| {
                if types[k].as_array().is_some() {
                    array_name(p)
                } else {
                    p.name.clone()
                }
            })
            .chain(["_ind_size".to_string()])
            .collect();
        for (p, n) in params.iter().zip(&names) {
            if *n != p.name {
                renames.insert(n.clone(), p.name.clone());
            }
        }
        b.line(0, &format!("def {}({}):", self.name, names.join(", ")));
        // The multi-index of element `i` in the merged shape, from the first non-raw array
        // indexed by it; arrays C-contiguous over the merged shape are indexed by `i` itself,
        // and a broadcast trailing block by `i` modulo its length (`Indexing`).
        let how = |k: usize| {
            if rank > 1 {
                launch.indexing[k]
            } else {
                Indexing::Full
            }
        };
        let first = params
            .iter()
            .enumerate()
            .find(|(k, p)| !p.raw && types[*k].as_array().is_some() && how(*k) == Indexing::Full)
            .map(|(_, p)| array_name(p));
        let inner: Vec<usize> = (0..params.len())
            .filter(|&k| {
                !params[k].raw && types[k].as_array().is_some() && how(k) == Indexing::Inner
            })
            .collect();
        // On the device below 2**31 elements every extent and `i` fit in `uint32`: the
        // multi-index is unravelled with unsigned 32-bit division by extents read once before
        // the loop (no floor corrections, and the divisor's reciprocal is loop-invariant).
        let narrow_index = !host && launch.pairs();
        debug_assert!(!narrow_index || first.is_some() || !inner.is_empty());
        if narrow_index {
            if let Some(a) = &first {
                for d in 1..rank {
                    b.line(4, &format!("_n{d} = device.uint32({a}.shape[{d}])"));
                }
            }
            for &k in &inner {
                b.line(
                    4,
                    &format!("_w{k} = device.uint32({}.shape[0])", array_name(params[k])),
                );
            }
        }
        let n_in = self.ins.len();
        // The arrays loaded before the body: an output too when the body reads it, or when
        // the body branches and may leave it unassigned (it then keeps its value, as in CuPy).
        // Each with its array type.
        let loaded_arrays: Vec<(usize, _)> = (0..params.len())
            .filter_map(|k| {
                let names = &self.body.names;
                let p = params[k];
                let output = k >= n_in;
                let at = types[k].as_array()?;
                (!p.raw
                    && (names.loaded.contains(&p.name)
                        || (output && names.branches && names.stored.contains(&p.name))))
                .then_some((k, at))
            })
            .collect();
        let loaded: Vec<usize> = loaded_arrays.iter().map(|&(k, _)| k).collect();
        let stored: Vec<usize> = (n_in..params.len())
            .filter(|&k| !params[k].raw && self.body.names.stored.contains(&params[k].name))
            .collect();
        // The unravelled multi-index of the element at `base` (`_r0` or `_s0`, digits `_j`
        // or `_k`): its lines at `indent`, and each array's index.
        let element = |b: &mut SourceBuilder, indent: usize, base: char, digit: char| {
            let full_index = match (&first, rank) {
                (None, _) | (_, 1) => "i".to_string(),
                (Some(a), _) => {
                    for d in (1..rank).rev() {
                        let r = rank - 1 - d;
                        let n = if narrow_index {
                            format!("_n{d}")
                        } else {
                            format!("{a}.shape[{d}]")
                        };
                        b.line(indent, &format!("_{digit}{d} = _{base}{r} % {n}"));
                        b.line(indent, &format!("_{base}{} = _{base}{r} // {n}", r + 1));
                    }
                    b.line(indent, &format!("_{digit}0 = _{base}{}", rank - 1));
                    (0..rank)
                        .map(|d| format!("_{digit}{d}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            };
            (0..params.len())
                .map(|k| match how(k) {
                    Indexing::Full => full_index.clone(),
                    Indexing::Flat if narrow_index => format!("_{base}0"),
                    Indexing::Flat => "i".to_string(),
                    Indexing::Inner if narrow_index => format!("_{base}0 % _w{k}"),
                    Indexing::Inner => format!("_{base}0 % {}.shape[0]", array_name(params[k])),
                })
                .collect::<Vec<String>>()
        };
        let load = |b: &mut SourceBuilder,
                    indent: usize,
                    index: &[String],
                    to: &dyn Fn(usize) -> String| {
            for &(k, at) in &loaded_arrays {
                let p = params[k];
                let want = launch.param_types[k];
                let load = format!("{}[{}]", array_name(p), index[k]);
                let value = if at.dtype != want && k < n_in {
                    format!("{}({load})", convert(want))
                } else {
                    load
                };
                b.line_at(indent, &format!("{} = {value}", to(k)), p.span);
            }
        };
        let body_and_store = |b: &mut SourceBuilder, indent: usize, index: &[String]| {
            b.body(indent, &self.body);
            for &k in &stored {
                let p = params[k];
                b.line_at(
                    indent,
                    &format!("{}[{}] = {}", array_name(p), index[k], p.name),
                    p.span,
                );
            }
        };
        let name = |k: usize| params[k].name.clone();
        if narrow_index {
            // Two elements per thread and iteration, `_step` apart (each coalesced): both
            // indices unravelled and every load of both issued before the first body, so that
            // twice the bytes are in flight (the launch has half the threads,
            // `ElementwiseLaunch::config`); a last lone element takes the one-element path.
            // Indices are `uint32`: below 2**31 elements `_r0 + _step` cannot wrap.
            b.line(4, "_size = device.uint32(_ind_size)");
            b.line(4, "_step = device.uint32(device.grid_size(1))");
            b.line(4, "_r0 = device.uint32(device.tid(1))");
            b.line(4, "while _r0 < _size:");
            b.line(8, "_s0 = _r0 + _step");
            b.line(8, "if _s0 < _size:");
            let ia = element(&mut b, 12, 'r', 'j');
            let ib = element(&mut b, 12, 's', 'k');
            load(&mut b, 12, &ia, &name);
            load(&mut b, 12, &ib, &|k| format!("_v{k}"));
            b.line(12, "i = device.int32(_r0)");
            body_and_store(&mut b, 12, &ia);
            for &k in &loaded {
                b.line_at(12, &format!("{} = _v{k}", name(k)), params[k].span);
            }
            b.line(12, "i = device.int32(_s0)");
            body_and_store(&mut b, 12, &ib);
            b.line(12, "_r0 = _s0 + _step");
            b.line(8, "else:");
            b.line(12, "i = device.int32(_r0)");
            let ia = element(&mut b, 12, 'r', 'j');
            load(&mut b, 12, &ia, &name);
            body_and_store(&mut b, 12, &ia);
            b.line(12, "_r0 = _size");
            return (b.finish(), renames);
        }
        // Below 2**31 elements a `while` loop (no trip-count division, CuPy's loop); above,
        // `range` keeps the 64-bit index proven non-negative.
        if host {
            // One thread: every element in C order; `i` has the device's type.
            b.line(4, "for i in range(_ind_size):");
        } else if launch.wide_index {
            b.line(
                4,
                "for i in range(device.tid(1), _ind_size, device.grid_size(1)):",
            );
        } else {
            b.line(4, "i = device.tid(1)");
            b.line(4, "_step = device.grid_size(1)");
            b.line(4, "while i < _ind_size:");
        }
        if rank > 1 && (first.is_some() || !inner.is_empty()) {
            b.line(8, "_r0 = i");
        }
        let index = element(&mut b, 8, 'r', 'j');
        load(&mut b, 8, &index, &name);
        body_and_store(&mut b, 8, &index);
        if !launch.wide_index && !host {
            b.line(8, "i += _step");
        }
        (b.finish(), renames)
    }

    /// The generated kernel's Python source for a launch.
    pub fn source(&self, launch: &ElementwiseLaunch) -> String {
        self.generate(launch, false).0.text
    }

    /// The generated host function's Python source for a launch (§20.8).
    pub fn host_source(&self, launch: &ElementwiseLaunch) -> String {
        self.generate(launch, true).0.text
    }

    /// The host function for a launch (§20.8): generated, checked and JIT-compiled through
    /// Cranelift on the first request for its argument types, then reused. It takes the
    /// launch's arguments ([`ElementwiseLaunch::args`]) with host addresses.
    pub fn compile_host(&self, launch: &ElementwiseLaunch) -> Result<HostKernel, Error> {
        let key = (
            (launch.types.clone(), launch.wide_index),
            launch.indexing.clone(),
        );
        super::cached_host_kernel(
            &self.host_compiled,
            key,
            &format!("<ElementwiseKernel {}>", self.name),
            &self.def,
            &self.name,
            &launch.types,
            || self.generate(launch, true),
        )
    }

    /// Runs a launch on the host: every element in C order, on the calling thread.
    ///
    /// # Safety
    ///
    /// Every array of the launch (inputs, and the outputs given or allocated) must be host
    /// memory valid for every element its shape and strides reach, as
    /// [`HostKernel::run`] requires.
    pub unsafe fn run_host(&self, launch: &ElementwiseLaunch) -> Result<(), Error> {
        let k = self.compile_host(launch)?;
        if launch.size == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for the arrays.
        unsafe { k.run(&launch.args) }
    }

    /// Runs a launch's device kernel (the one [`ElementwiseKernel::launch`] runs on a GPU) on
    /// the CPU back end (docs/semantics.md §22.4): the same grid, blocks and code, on arrays
    /// in host memory. Compiled on the first call for these types, then reused.
    ///
    /// # Safety
    ///
    /// As [`ElementwiseKernel::run_host`]: every array of the launch is host memory valid for
    /// every element its shape and strides reach.
    pub unsafe fn launch_cpu(&self, launch: &ElementwiseLaunch) -> Result<(), Error> {
        let key = (
            (launch.types.clone(), launch.wide_index),
            launch.indexing.clone(),
        );
        let k = super::cached_cpu_kernel(
            &self.cpu_compiled,
            key,
            &format!("<ElementwiseKernel {}>", self.name),
            &self.def,
            &self.name,
            &launch.types,
            || self.generate(launch, false),
        )?;
        if launch.size == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for the arrays.
        unsafe { super::launch_on_cpu(&k, &launch.args, &launch.config()) }
    }

    /// The whole call on the host, on arrays in host memory (their `data` are host
    /// addresses): resolves, allocates the missing outputs (C-contiguous, zeroed), runs
    /// and returns the outputs.
    ///
    /// # Safety
    ///
    /// As [`ElementwiseKernel::run_host`]: every array operand must be valid host memory
    /// for every element its shape and strides reach.
    pub unsafe fn call_host(
        &self,
        operands: &[Operand],
        size: Option<u64>,
    ) -> Result<Vec<HostOutput>, Error> {
        let r = self.resolve(operands, size)?;
        let (arrays, mut buffers) = super::allocate_host(&r.missing, &r.out_dtypes, &r.shape)?;
        let launch = self.bind(&r, arrays)?;
        // SAFETY: the caller vouches for the operands; the allocated outputs are `buffers`.
        unsafe { self.run_host(&launch)? };
        Ok(super::host_outputs(
            launch.outputs,
            &r.missing,
            &mut buffers,
        ))
    }

    /// The compiled kernel for a launch: generated, checked and compiled on the first request
    /// for its argument types, then reused (a repeated call generates nothing).
    pub fn compile(&self, launch: &ElementwiseLaunch) -> Result<Arc<CompiledKernel>, Error> {
        let key = (
            (launch.types.clone(), launch.wide_index),
            launch.indexing.clone(),
        );
        if let Some(k) = super::lock(&self.compiled).get(&key) {
            return Ok(k.clone());
        }
        let (source, renames) = self.generate(launch, false);
        let file = format!("<ElementwiseKernel {}>", self.name);
        let k = self
            .cache
            .get_or_compile_source(
                &file,
                &source.text,
                &self.name,
                &launch.types,
                &self.options,
            )
            .map_err(|e| match e {
                Error::Diagnostics(d) => source.map(d, &self.def, &renames),
                e => e,
            })?;
        super::lock(&self.compiled).insert(key, k.clone());
        Ok(k)
    }

    /// Compiles (on the first call for these types), loads and launches asynchronously on
    /// `stream`. Nothing is launched for an empty operation.
    pub fn launch(
        &self,
        device: &Device,
        launch: &ElementwiseLaunch,
        stream: &Stream,
    ) -> Result<(), Error> {
        let k = self.compile(launch)?;
        if launch.size == 0 {
            return Ok(());
        }
        let loaded = device.load_cached(&k)?;
        let packed = loaded.pack(&launch.args)?;
        device.launch_packed(&loaded, &packed, &launch.config(), stream)?;
        Ok(())
    }

    /// The whole call: resolves, allocates the missing outputs through `device`, launches on
    /// the default stream and returns the outputs.
    pub fn call(
        &self,
        device: &Device,
        operands: &[Operand],
        size: Option<u64>,
    ) -> Result<Vec<Output>, Error> {
        let r = self.resolve(operands, size)?;
        let (arrays, buffers) = allocate(device, &r.missing, &r.out_dtypes, &r.shape)?;
        let launch = self.bind(&r, arrays)?;
        self.launch(device, &launch, &device.default_stream())?;
        let mut buffers: Vec<Option<DeviceBuffer>> = buffers.into_iter().map(Some).collect();
        Ok(launch
            .outputs
            .into_iter()
            .enumerate()
            .map(|(k, array)| Output {
                array,
                buffer: r
                    .missing
                    .iter()
                    .position(|&m| m == k)
                    .and_then(|j| buffers[j].take()),
            })
            .collect())
    }
}

/// Allocates C-contiguous outputs through the runtime.
pub(crate) fn allocate(
    device: &Device,
    missing: &[usize],
    dtypes: &[Scalar],
    shape: &[u64],
) -> Result<(Vec<DeviceArray>, Vec<DeviceBuffer>), Error> {
    let mut arrays = Vec::new();
    let mut buffers = Vec::new();
    for &k in missing {
        let n: u64 = shape.iter().product();
        let buf = device.alloc_zeroed((n * dtypes[k].size()) as usize)?;
        arrays.push(device.array(&buf, dtypes[k], shape)?);
        buffers.push(buf);
    }
    Ok((arrays, buffers))
}

/// What a compiled kernel is remembered by: the argument types and whether the index is
/// 64-bit.
pub(crate) type SpecKey = (Vec<Type>, bool);

/// What an elementwise kernel is remembered by: its [`SpecKey`] and how each array is
/// indexed (two launches of the same types may index them differently).
type ElementwiseKey = (SpecKey, Vec<Indexing>);

/// Resolves placeholders, checks dtypes and broadcasts (shared with the reduction, which
/// passes `broadcast_outputs: false`: its outputs have the reduced shape).
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve(
    name: &str,
    def: &Definition,
    ins: &[Param],
    outs: &[Param],
    operands: &[Operand],
    size: Option<u64>,
    broadcast_outputs: bool,
) -> Result<Resolved, Error> {
    let n_in = ins.len();
    let n_all = n_in + outs.len();
    if operands.len() != n_in && operands.len() != n_all {
        return Err(arg_error(format!(
            "`{name}` takes {n_in} input{} and optionally {} output{}; {} arguments were given",
            if n_in == 1 { "" } else { "s" },
            outs.len(),
            if outs.len() == 1 { "" } else { "s" },
            operands.len()
        )));
    }
    let mut operands = operands.to_vec();
    operands.resize(n_all, Operand::Absent);
    let params: Vec<&Param> = ins.iter().chain(outs).collect();
    for (k, o) in operands.iter().enumerate() {
        match o {
            Operand::Absent if k < n_in => {
                return Err(arg_error(format!(
                    "input `{}` was not given",
                    params[k].name
                )));
            }
            Operand::Scalar(_) if k >= n_in => {
                return Err(arg_error(format!(
                    "output `{}` must be an array, not a scalar",
                    params[k].name
                )));
            }
            Operand::Scalar(_) if params[k].raw => {
                return Err(arg_error(format!(
                    "`raw` parameter `{}` must be an array, not a scalar",
                    params[k].name
                )));
            }
            Operand::Array(a) => a.check()?,
            _ => {}
        }
    }
    // Placeholders: outputs first, then inputs; arrays, then typed scalars, then Python
    // numbers.
    let mut placeholders: Vec<(char, Scalar, usize)> = Vec::new();
    let order: Vec<usize> = (n_in..n_all).chain(0..n_in).collect();
    for pass in 0..3 {
        for &k in &order {
            let ParamType::Placeholder(c) = params[k].ty else {
                continue;
            };
            let t = match (&operands[k], pass) {
                (Operand::Array(a), 0) => a.dtype,
                (Operand::Scalar(ScalarArg { dtype: Some(d), .. }), 1) => *d,
                (Operand::Scalar(s @ ScalarArg { dtype: None, .. }), 2) => s.natural_dtype(),
                _ => continue,
            };
            match placeholders.iter().find(|(p, ..)| *p == c) {
                Some(&(_, have, from)) if pass == 0 && have != t => {
                    return Err(def.error(vec![
                        Diagnostic::error(
                            Code::E0703,
                            params[k].type_span,
                            format!(
                                "type placeholder `{c}` is {have} from `{}` but {t} from `{}`",
                                params[from].name, params[k].name
                            ),
                        )
                        .with_secondary(params[from].type_span, format!("`{c}` is {have} here"))
                        .with_note("arrays of one placeholder must have one dtype; convert one with astype"),
                    ]));
                }
                Some(_) => {}
                None => placeholders.push((c, t, k)),
            }
        }
    }
    let mut param_types = Vec::new();
    let mut unresolved = Vec::new();
    for p in &params {
        match p.ty {
            ParamType::Fixed(s) => param_types.push(s),
            ParamType::Placeholder(c) => match placeholders.iter().find(|(x, ..)| *x == c) {
                Some(&(_, t, _)) => param_types.push(t),
                None => {
                    if !unresolved.iter().any(|(x, _)| *x == c) {
                        unresolved.push((c, p.type_span));
                    }
                    param_types.push(Scalar::Float32);
                }
            },
        }
    }
    if !unresolved.is_empty() {
        return Err(def.error(
            unresolved
                .into_iter()
                .map(|(c, span)| {
                    Diagnostic::error(
                        Code::E0702,
                        span,
                        format!("type placeholder `{c}` cannot be resolved from the arguments"),
                    )
                    .with_label("no argument decides this type")
                    .with_note(format!(
                        "give the output array explicitly, so that its dtype decides `{c}`"
                    ))
                })
                .collect(),
        ));
    }
    // Dtypes of given values against their parameters.
    for (k, o) in operands.iter().enumerate() {
        let p = params[k];
        let want = param_types[k];
        let (have, what) = match o {
            Operand::Array(a) => (a.dtype, "array"),
            Operand::Scalar(s) => (s.natural_dtype(), "scalar"),
            Operand::Absent => continue,
        };
        if have == want {
            continue;
        }
        if k >= n_in && matches!(o, Operand::Array(_)) {
            // CuPy's rule for a given output (`_decide_params_type_core`): its dtype must be
            // the parameter's, never converted (a store would otherwise saturate or wrap).
            return Err(arg_error(format!(
                "output `{}` is {want}, but the array given is {have}: an output array must \
                 have its parameter's dtype (CuPy: \"Type is mismatched. {} {have} {want}\"); \
                 give a {want} array, or convert the result afterwards with astype",
                p.name, p.name
            )));
        }
        let ok = match o {
            Operand::Array(_) if p.raw => false,
            Operand::Scalar(s) if s.dtype.is_none() => {
                // A Python number converts to any type of its kind or a later one.
                can_cast_same_kind(have, want) || (have == Scalar::Int64 && want.is_integer())
            }
            _ => can_cast_same_kind(have, want),
        };
        if !ok {
            return Err(arg_error(format!(
                "`{}` is {}{}, but the {what} given is {have}{}",
                p.name,
                if p.raw { "raw " } else { "" },
                want,
                if p.raw {
                    " (a raw array is not converted)"
                } else {
                    " (NumPy's same_kind rule does not allow the conversion)"
                }
            )));
        }
    }
    // Broadcast the non-raw arrays.
    let shapes: Vec<&[u64]> = operands
        .iter()
        .enumerate()
        .filter(|(k, _)| !params[*k].raw && (broadcast_outputs || *k < n_in))
        .filter_map(|(_, o)| match o {
            Operand::Array(a) => Some(a.shape.as_slice()),
            _ => None,
        })
        .collect();
    let any_array = !shapes.is_empty();
    let shape = broadcast_shapes(&shapes).map_err(arg_error)?;
    let (shape, size) = match (any_array, size) {
        (false, Some(n)) if n > i64::MAX as u64 => {
            return Err(arg_error(format!(
                "size={n} is more than an int64 loop index can count"
            )));
        }
        (false, Some(n)) => (vec![n], n),
        (false, None) if operands.iter().any(|o| matches!(o, Operand::Array(_))) => {
            return Err(arg_error(format!(
                "every array argument of `{name}` is raw: give `size=`, the number of elements to loop over"
            )));
        }
        (true, Some(n)) if n != shape.iter().product::<u64>() => {
            return Err(arg_error(format!(
                "size={n} was given, but the arrays broadcast to shape {shape:?}"
            )));
        }
        _ => {
            let n = shape.iter().product();
            (shape, n)
        }
    };
    if broadcast_outputs {
        for (k, o) in operands.iter().enumerate().skip(n_in) {
            if let Operand::Array(a) = o
                && !params[k].raw
                && a.shape != shape
            {
                // CuPy's words first (its tests match them), then which output and why.
                return Err(crate::Error::Runtime(crate::runtime::RuntimeError::Shape(
                    format!(
                        "Out shape is mismatched: output `{}` has shape {:?}, but the arguments broadcast to {shape:?}",
                        params[k].name, a.shape
                    ),
                )));
            }
        }
    }
    let missing = (0..outs.len())
        .filter(|&k| matches!(operands[n_in + k], Operand::Absent))
        .collect();
    Ok(Resolved {
        shape,
        out_dtypes: param_types[n_in..].to_vec(),
        missing,
        size,
        placeholders: placeholders.iter().map(|&(c, t, _)| (c, t)).collect(),
        operands,
        param_types,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(dtype: Scalar, shape: &[u64]) -> Operand {
        Operand::Array(DeviceArray::contiguous(0x10000, dtype, shape))
    }

    #[test]
    fn placeholders_resolve_outputs_first_and_name_the_unresolved() {
        let k = ElementwiseKernel::new("X x, Y y", "Z z", "z = (x - y) * (x - y)", "sd").unwrap();
        let e = k
            .resolve(
                &[arr(Scalar::Float32, &[4]), arr(Scalar::Float32, &[4])],
                None,
            )
            .unwrap_err();
        assert!(e.to_string().contains("E0702"), "{e}");
        assert!(e.to_string().contains("placeholder `Z`"), "{e}");
        let r = k
            .resolve(
                &[
                    arr(Scalar::Float32, &[4]),
                    arr(Scalar::Int32, &[4]),
                    arr(Scalar::Float64, &[4]),
                ],
                None,
            )
            .unwrap();
        assert_eq!(r.out_dtypes, vec![Scalar::Float64]);
        assert!(r.missing.is_empty());
    }

    #[test]
    fn bad_calls_are_argument_errors() {
        let k = ElementwiseKernel::new("T x, T y", "T z", "z = x + y", "add").unwrap();
        let f = Scalar::Float32;
        let msg = |o: &[Operand]| k.resolve(o, None).unwrap_err().to_string();
        assert!(msg(&[arr(f, &[3])]).contains("takes 2 inputs"));
        assert!(msg(&[arr(f, &[3]), arr(f, &[4])]).contains("do not broadcast"));
        assert!(msg(&[arr(f, &[3]), arr(Scalar::Float64, &[3])]).contains("E0703"));
        assert!(msg(&[arr(f, &[3]), arr(f, &[3]), arr(f, &[1])]).contains("has shape [1]"));
    }
}
