//! numba's `@guvectorize([signature], layout, target='cuda')` over [`ElementwiseKernel`]
//! (docs/semantics.md §20.9).
//!
//! A generalized ufunc applies a function to *core* sub-arrays: with the layout
//! `'(m,n),(n)->(m)'` the function sees a matrix, a vector and an output vector, and the
//! dimensions in front of the core ones (the *loop* dimensions, broadcast across the
//! arguments) say how many times it runs. Here each signature becomes an all-`raw`
//! `ElementwiseKernel` whose loop index `i` runs over the loop dimensions: the body unravels
//! `i` and calls the function with the views `x[j0, j1]` of the arguments (an element, for a
//! scalar input). The function itself is the kernel's preamble, a `@device.func`.
//!
//! Outputs whose core is `()` are declared `float32[:]` and written `out[0] = …` (numba's
//! convention): they are passed as views of one element, an extent of 1 appended to the
//! output's shape.

use super::elementwise::ElementwiseKernel;
use super::{Definition, Operand, arg_error, broadcast_shapes};
use crate::Error;
use crate::cache::KernelCache;
use crate::diag::{Code, Diagnostic, Span};
use crate::kernels::ElementwiseLaunch;
use crate::runtime::DeviceArray;
use crate::types::Scalar;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One argument of a gufunc signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuArg {
    /// The element type.
    pub dtype: Scalar,
    /// Dimensions of the declared array; `None` for a scalar (`float32`).
    pub ndim: Option<usize>,
    /// Its core dimensions (symbols of the layout).
    pub core: Vec<String>,
    /// Whether an extent of 1 is appended to the argument (a `()` core declared as a 1-D
    /// array: numba's `out[0]`).
    pub unit: bool,
}

/// A generalized ufunc for one signature. `Send + Sync`.
///
/// ```
/// use pydevice::kernels::{GuVectorize, Operand};
/// use pydevice::runtime::DeviceArray;
/// use pydevice::types::Scalar;
///
/// let src = "@device.func\ndef dot(a, b, out):\n    s = a[0] * 0\n    for k in range(len(a)):\n        s += a[k] * b[k]\n    out[0] = s\n";
/// let g = GuVectorize::new("void(float32[:], float32[:], float32[:])", "(n),(n)->()", src, "dot", "dot_gufunc")
///     .expect("a valid gufunc");
/// let a = DeviceArray::contiguous(0x1000, Scalar::Float32, &[7, 3]);
/// let b = DeviceArray::contiguous(0x2000, Scalar::Float32, &[3]);
/// let r = g.resolve(&[Operand::Array(a), Operand::Array(b)]).expect("shapes agree");
/// assert_eq!(r.loop_shape, vec![7]);
/// assert_eq!(r.out_shapes, vec![vec![7]]);
/// ```
#[derive(Debug)]
pub struct GuVectorize {
    name: String,
    func: String,
    preamble: String,
    n_in: usize,
    args: Vec<GuArg>,
    /// The kernel of each loop rank, built on first use.
    kernels: Mutex<HashMap<usize, Arc<ElementwiseKernel>>>,
    cache: Option<Arc<KernelCache>>,
}

/// What a call decides before its outputs exist.
#[derive(Clone, Debug, PartialEq)]
pub struct GuResolved {
    /// The broadcast loop dimensions.
    pub loop_shape: Vec<u64>,
    /// Each output's shape (loop dimensions, then core ones).
    pub out_shapes: Vec<Vec<u64>>,
    /// Each output's dtype.
    pub out_dtypes: Vec<Scalar>,
    /// The outputs to allocate (indices into the outputs), C-contiguous.
    pub missing: Vec<usize>,
    operands: Vec<Operand>,
}

fn err(def: &Definition, code: Code, span: Span, msg: String, label: &str) -> Error {
    def.error(vec![Diagnostic::error(code, span, msg).with_label(label)])
}

/// The layout's argument lists: each argument's core dimension names with their spans.
type LayoutArgs = Vec<Vec<(String, Span)>>;

/// Parses part 1 of `def`, the layout `(m,n),(n)->(m)`.
fn parse_layout(def: &Definition) -> Result<(LayoutArgs, LayoutArgs, Vec<Span>), Error> {
    let text = def.part(1);
    let base = def.starts[1];
    let at = |k: usize| base + k as u32;
    let bad = |k: usize, len: usize, msg: String| {
        err(
            def,
            Code::E0711,
            Span::new(at(k), at(k + len.max(1))),
            format!("{msg}; a layout is like `(m,n),(n)->(m)`"),
            "here",
        )
    };
    let Some(arrow) = text.find("->") else {
        return Err(bad(0, text.len(), "the layout has no `->`".into()));
    };
    let mut spans = Vec::new();
    let mut side = |from: usize, to: usize, out: bool| -> Result<LayoutArgs, Error> {
        let s = &text[from..to];
        let mut args = Vec::new();
        let mut k = 0;
        let bytes = s.as_bytes();
        let skip = |k: &mut usize| {
            while *k < bytes.len() && bytes[*k].is_ascii_whitespace() {
                *k += 1;
            }
        };
        loop {
            skip(&mut k);
            if k >= bytes.len() {
                if args.is_empty() {
                    let what = if out { "outputs" } else { "inputs" };
                    return Err(bad(from, s.len(), format!("the layout lists no {what}")));
                }
                return Err(bad(from + k, 0, "expected `(` after `,`".into()));
            }
            if bytes[k] != b'(' {
                return Err(bad(
                    from + k,
                    1,
                    format!("expected `(`, found `{}`", &s[k..k + 1]),
                ));
            }
            let open = k;
            let Some(close) = s[k..].find(')').map(|c| c + k) else {
                return Err(bad(from + k, s.len() - k, "this `(` is not closed".into()));
            };
            spans.push(Span::new(at(from + open), at(from + close + 1)));
            let mut dims = Vec::new();
            let inner = &s[k + 1..close];
            if !inner.trim().is_empty() {
                let mut off = k + 1;
                for d in inner.split(',') {
                    let name = d.trim();
                    let lead = d.len() - d.trim_start().len();
                    let span_k = from + off + lead;
                    if !super::is_identifier(name) {
                        return Err(bad(
                            span_k,
                            name.len(),
                            format!("`{name}` is not a dimension name (a Python identifier)"),
                        ));
                    }
                    dims.push((
                        name.to_string(),
                        Span::new(at(span_k), at(span_k + name.len())),
                    ));
                    off += d.len() + 1;
                }
            }
            args.push(dims);
            k = close + 1;
            skip(&mut k);
            if k >= bytes.len() {
                return Ok(args);
            }
            if bytes[k] != b',' {
                return Err(bad(
                    from + k,
                    1,
                    format!("expected `,` or the end, found `{}`", &s[k..k + 1]),
                ));
            }
            k += 1;
        }
    };
    let ins = side(0, arrow, false)?;
    let outs = side(arrow + 2, text.len(), true)?;
    // Every output dimension must be known from the inputs.
    for (name, span) in outs.iter().flatten() {
        if !ins.iter().flatten().any(|(n, _)| n == name) {
            return Err(def.error(vec![
                Diagnostic::error(
                    Code::E0711,
                    *span,
                    format!("output dimension `{name}` is not a dimension of any input, so no call could size it"),
                )
                .with_label("unknown size")
                .with_note("every output dimension must appear in an input's layout"),
            ]));
        }
    }
    Ok((ins, outs, spans))
}

/// Parses part 0 of `def`, the signature `void(float32[:], float32, float64[:, :])`: each
/// argument's dtype, array rank (`None`: a scalar) and span.
fn parse_signature(def: &Definition) -> Result<Vec<(Scalar, Option<usize>, Span)>, Error> {
    let text = def.part(0);
    let base = def.starts[0];
    let at = |k: usize| base + k as u32;
    let bad = |k: usize, len: usize, msg: String, label: &str| {
        err(
            def,
            Code::E0712,
            Span::new(at(k), at(k + len.max(1))),
            msg,
            label,
        )
    };
    let (Some(open), true) = (text.find('('), text.trim_end().ends_with(')')) else {
        return Err(bad(
            0,
            text.len(),
            "a gufunc signature is `void(TYPE, ...)`, such as `void(float32[:], float32[:], float32[:])`".into(),
            "not a signature",
        ));
    };
    let ret = text[..open].trim();
    if !ret.is_empty() && ret != "void" && ret != "none" {
        let lead = text.len() - text.trim_start().len();
        return Err(bad(
            lead,
            ret.len(),
            format!(
                "a gufunc returns nothing: its outputs are arguments, so the signature starts with `void`, not `{ret}`"
            ),
            "return type",
        ));
    }
    let close = text.trim_end().len() - 1;
    let inner = &text[open + 1..close];
    let mut out = Vec::new();
    let mut off = open + 1;
    // Split at commas outside brackets.
    let mut depth = 0;
    let mut start = 0;
    let mut items = Vec::new();
    for (k, c) in inner.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push((start, &inner[start..k]));
                start = k + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() || !items.is_empty() {
        items.push((start, &inner[start..]));
    }
    for (s, item) in items {
        let t = item.trim();
        let k = off + s + (item.len() - item.trim_start().len());
        let span = Span::new(at(k), at(k + t.len()));
        let (name, dims) = match t.find('[') {
            Some(b) if t.ends_with(']') => (&t[..b], Some(&t[b + 1..t.len() - 1])),
            Some(_) => {
                return Err(bad(
                    k,
                    t.len(),
                    format!("`{t}` is not a type"),
                    "not a type",
                ));
            }
            None => (t, None),
        };
        let Some(dtype) = Scalar::from_name(name.trim()).filter(|s| !s.is_fp8()) else {
            return Err(bad(
                k,
                name.trim().len(),
                format!(
                    "`{}` is not a number type: write a NumPy dtype name (`float32`, `int64`, …)",
                    name.trim()
                ),
                "unknown type",
            ));
        };
        let ndim = match dims {
            None => None,
            Some(d) => {
                let parts: Vec<&str> = d.split(',').map(str::trim).collect();
                if parts.iter().any(|p| *p != ":" && *p != "::1") {
                    return Err(bad(
                        k,
                        t.len(),
                        format!("`{t}`: each array dimension is written `:` (or `::1`)"),
                        "bad array type",
                    ));
                }
                Some(parts.len())
            }
        };
        out.push((dtype, ndim, span));
    }
    let _ = &mut off;
    Ok(out)
}

impl GuVectorize {
    /// A gufunc from numba's strings: one `signature` (`void(float32[:], float32[:],
    /// float32[:])`), the `layout` (`(n),(n)->()`), and the Python source `preamble` that
    /// defines the `@device.func` `func`; `name` names the generated kernel. Bad signatures
    /// and layouts are diagnostics pointing into them (E0711–E0713).
    pub fn new(
        signature: &str,
        layout: &str,
        preamble: &str,
        func: &str,
        name: &str,
    ) -> Result<GuVectorize, Error> {
        let def = Definition::new(name, "guvectorize", &[signature, layout]);
        let (ins, outs, arg_spans) = parse_layout(&def)?;
        let sig = parse_signature(&def)?;
        let n_in = ins.len();
        let n = n_in + outs.len();
        if sig.len() != n {
            return Err(def.error(vec![
                Diagnostic::error(
                    Code::E0713,
                    def.part_span(0),
                    format!(
                        "the signature has {} argument{}, but the layout has {n_in} input{} and {} output{}",
                        sig.len(),
                        if sig.len() == 1 { "" } else { "s" },
                        if n_in == 1 { "" } else { "s" },
                        outs.len(),
                        if outs.len() == 1 { "" } else { "s" },
                    ),
                )
                .with_label("argument count")
                .with_secondary(def.part_span(1), "layout"),
            ]));
        }
        let mut args = Vec::new();
        for (k, ((dtype, ndim, span), core)) in sig.iter().zip(ins.iter().chain(&outs)).enumerate()
        {
            let output = k >= n_in;
            let core_n = core.len();
            let unit = match ndim {
                None if output => {
                    return Err(def.error(vec![
                        Diagnostic::error(
                            Code::E0713,
                            *span,
                            format!("output {} is a scalar type; outputs are arrays the function writes (a `()` output is declared `{}[:]` and written `out[0] = …`)", k - n_in, dtype.name()),
                        )
                        .with_label("scalar output"),
                    ]));
                }
                None if core_n > 0 => {
                    return Err(def.error(vec![
                        Diagnostic::error(
                            Code::E0713,
                            *span,
                            format!("a scalar argument has the core layout `()`, but this one's is {}-dimensional", core_n),
                        )
                        .with_label("scalar")
                        .with_secondary(arg_spans[k], "its layout"),
                    ]));
                }
                None => false,
                Some(d) if *d == core_n => false,
                Some(1) if core_n == 0 => true,
                Some(d) => {
                    return Err(def.error(vec![
                        Diagnostic::error(
                            Code::E0713,
                            *span,
                            format!("this argument is a {d}-dimensional array, but its layout has {core_n} core dimension{}", if core_n == 1 { "" } else { "s" }),
                        )
                        .with_label("array rank")
                        .with_secondary(arg_spans[k], "its layout"),
                    ]));
                }
            };
            args.push(GuArg {
                dtype: *dtype,
                ndim: *ndim,
                core: core.iter().map(|(n, _)| n.clone()).collect(),
                unit,
            });
        }
        if !super::is_identifier(func) || !super::is_identifier(name) {
            return Err(arg_error(format!(
                "`{func}` and `{name}` must be Python identifiers"
            )));
        }
        Ok(GuVectorize {
            name: name.to_string(),
            func: func.to_string(),
            preamble: preamble.to_string(),
            n_in,
            args,
            kernels: Mutex::new(HashMap::new()),
            cache: None,
        })
    }

    /// Compiles through `cache` (shared with other kernels, or with a disk cache).
    pub fn with_cache(mut self, cache: Arc<KernelCache>) -> GuVectorize {
        self.cache = Some(cache);
        self
    }

    /// The arguments, inputs then outputs.
    pub fn args(&self) -> &[GuArg] {
        &self.args
    }

    /// The number of inputs.
    pub fn n_in(&self) -> usize {
        self.n_in
    }

    /// Sizes a call on `operands` (arrays: the inputs, then optionally the outputs,
    /// [`Operand::Absent`] for one to allocate): the loop dimensions broadcast, the core
    /// dimensions agree, the outputs' shapes. Each array must have the signature's dtype
    /// (convert first: `raw` arrays are not converted).
    pub fn resolve(&self, operands: &[Operand]) -> Result<GuResolved, Error> {
        let n = self.args.len();
        if operands.len() != self.n_in && operands.len() != n {
            return Err(arg_error(format!(
                "`{}` takes {} inputs and optionally {} outputs; {} arguments were given",
                self.func,
                self.n_in,
                n - self.n_in,
                operands.len()
            )));
        }
        let mut operands = operands.to_vec();
        operands.resize(n, Operand::Absent);
        let mut sizes: HashMap<&str, u64> = HashMap::new();
        let mut loops: Vec<Vec<u64>> = Vec::new();
        for (k, (o, a)) in operands.iter().zip(&self.args).enumerate().take(self.n_in) {
            let arr = match o {
                Operand::Array(arr) => arr,
                _ => {
                    return Err(arg_error(format!(
                        "input {k} of `{}` must be an array (give a scalar as a 0-d array)",
                        self.func
                    )));
                }
            };
            arr.check()?;
            if arr.dtype != a.dtype {
                return Err(arg_error(format!(
                    "input {k} of `{}` is {}, but the signature takes {}",
                    self.func, arr.dtype, a.dtype
                )));
            }
            let c = a.core.len();
            if arr.ndim() < c {
                return Err(arg_error(format!(
                    "input {k} of `{}` has {} dimensions, but its layout `({})` needs at least {c}",
                    self.func,
                    arr.ndim(),
                    a.core.join(",")
                )));
            }
            let lead = arr.ndim() - c;
            for (d, name) in a.core.iter().enumerate() {
                let ext = arr.shape[lead + d];
                match sizes.get(name.as_str()) {
                    Some(&s) if s != ext => {
                        return Err(arg_error(format!(
                            "core dimension `{name}` is {s} in one input and {ext} in input {k} of `{}`",
                            self.func
                        )));
                    }
                    _ => {
                        sizes.insert(name, ext);
                    }
                }
            }
            loops.push(arr.shape[..lead].to_vec());
        }
        let refs: Vec<&[u64]> = loops.iter().map(Vec::as_slice).collect();
        let loop_shape =
            broadcast_shapes(&refs).map_err(|e| arg_error(format!("loop dimensions: {e}")))?;
        let mut out_shapes = Vec::new();
        let mut missing = Vec::new();
        for (j, a) in self.args[self.n_in..].iter().enumerate() {
            let mut shape = loop_shape.clone();
            shape.extend(a.core.iter().map(|c| sizes[c.as_str()]));
            match &operands[self.n_in + j] {
                Operand::Array(arr) => {
                    arr.check()?;
                    if arr.dtype != a.dtype || arr.shape != shape {
                        return Err(arg_error(format!(
                            "output {j} of `{}` must be {} of shape {shape:?}; it is {} of shape {:?}",
                            self.func, a.dtype, arr.dtype, arr.shape
                        )));
                    }
                }
                Operand::Absent => missing.push(j),
                Operand::Scalar(_) => {
                    return Err(arg_error(format!(
                        "output {j} of `{}` must be an array",
                        self.func
                    )));
                }
            }
            out_shapes.push(shape);
        }
        Ok(GuResolved {
            loop_shape,
            out_dtypes: self.args[self.n_in..].iter().map(|a| a.dtype).collect(),
            out_shapes,
            missing,
            operands,
        })
    }

    /// The generated `ElementwiseKernel` for `rank` loop dimensions (built once).
    pub fn kernel(&self, rank: usize) -> Result<Arc<ElementwiseKernel>, Error> {
        if let Some(k) = super::lock(&self.kernels).get(&rank) {
            return Ok(k.clone());
        }
        let param = |k: usize, a: &GuArg| format!("raw {} x{k}", a.dtype.name());
        let ins: Vec<String> = self.args[..self.n_in]
            .iter()
            .enumerate()
            .map(|(k, a)| param(k, a))
            .collect();
        let outs: Vec<String> = self.args[self.n_in..]
            .iter()
            .enumerate()
            .map(|(j, a)| param(self.n_in + j, a))
            .collect();
        let mut body = String::new();
        // The loop index unravelled over the loop dimensions (C order), as the elementwise
        // kernel unravels its own index.
        if rank > 0 {
            body.push_str("_gr0 = i\n");
            for d in (1..rank).rev() {
                let r = rank - 1 - d;
                body.push_str(&format!(
                    "_gj{d} = _gr{r} % x0.shape[{d}]\n_gr{} = _gr{r} // x0.shape[{d}]\n",
                    r + 1
                ));
            }
            body.push_str(&format!("_gj0 = _gr{}\n", rank - 1));
        }
        let index: Vec<String> = (0..rank).map(|d| format!("_gj{d}")).collect();
        let call: Vec<String> = self
            .args
            .iter()
            .enumerate()
            .map(|(k, a)| match (a.ndim, rank) {
                (None, 0) => format!("x{k}[0]"),
                (_, 0) => format!("x{k}"),
                _ => format!("x{k}[{}]", index.join(", ")),
            })
            .collect();
        body.push_str(&format!("{}({})", self.func, call.join(", ")));
        let mut k = ElementwiseKernel::with_preamble(
            &ins.join(", "),
            &outs.join(", "),
            &body,
            &self.name,
            &self.preamble,
        )?;
        if let Some(c) = &self.cache {
            k = k.with_cache(c.clone());
        }
        let k = Arc::new(k);
        super::lock(&self.kernels).insert(rank, k.clone());
        Ok(k)
    }

    /// The launch of a resolved call with `outputs` for [`GuResolved::missing`]: the kernel
    /// and its launch (run with [`ElementwiseKernel::launch`] or, on host memory,
    /// [`ElementwiseKernel::run_host`]).
    pub fn bind(
        &self,
        r: &GuResolved,
        outputs: Vec<DeviceArray>,
    ) -> Result<(Arc<ElementwiseKernel>, ElementwiseLaunch), Error> {
        if outputs.len() != r.missing.len() {
            return Err(arg_error(format!(
                "{} outputs were to be allocated, but {} were given",
                r.missing.len(),
                outputs.len()
            )));
        }
        let mut operands = r.operands.clone();
        for (&j, a) in r.missing.iter().zip(outputs) {
            if a.dtype != r.out_dtypes[j] || a.shape != r.out_shapes[j] {
                return Err(arg_error(format!(
                    "the allocated output {j} must be {} of shape {:?}",
                    r.out_dtypes[j], r.out_shapes[j]
                )));
            }
            operands[self.n_in + j] = Operand::Array(a);
        }
        let rank = r.loop_shape.len();
        // Every argument as a view of the loop shape followed by its core dimensions:
        // stride 0 on broadcast loop dimensions, an extent of 1 appended for `unit` ones.
        let mut views = Vec::new();
        for (o, a) in operands.iter().zip(&self.args) {
            let Operand::Array(arr) = o else {
                return Err(arg_error("an argument was not given"));
            };
            let c = a.core.len();
            let lead = arr.ndim() - c;
            let mut shape = r.loop_shape.clone();
            let mut strides = vec![0i64; rank];
            for d in 0..lead {
                let at = rank - lead + d;
                if arr.shape[d] == r.loop_shape[at] {
                    strides[at] = arr.strides[d];
                }
            }
            shape.extend(&arr.shape[lead..]);
            strides.extend(&arr.strides[lead..]);
            if a.unit {
                shape.push(1);
                strides.push(1);
            }
            views.push(Operand::Array(DeviceArray {
                shape,
                strides,
                ..arr.clone()
            }));
        }
        let size: u64 = r.loop_shape.iter().product();
        let kernel = self.kernel(rank)?;
        let resolved = kernel.resolve(&views, Some(size))?;
        let launch = kernel.bind(&resolved, Vec::new())?;
        Ok((kernel, launch))
    }

    /// The whole call on the host (§20.8), on arrays whose `data` are host addresses:
    /// resolves, allocates the missing outputs (C-contiguous, zeroed), runs and returns the
    /// outputs.
    ///
    /// # Safety
    ///
    /// Every array operand must be valid host memory for every element its shape and
    /// strides reach, as [`super::HostKernel::run`] requires.
    pub unsafe fn call_host(&self, operands: &[Operand]) -> Result<Vec<super::HostOutput>, Error> {
        let r = self.resolve(operands)?;
        let mut arrays = Vec::new();
        let mut buffers = Vec::new();
        for &j in &r.missing {
            let (a, b) = super::allocate_host(&[0], &[r.out_dtypes[j]], &r.out_shapes[j])?;
            arrays.extend(a);
            buffers.extend(b);
        }
        // The outputs as the caller sees them (without the views' appended extents).
        let mut outputs = Vec::new();
        let mut fresh = arrays.iter();
        for (j, o) in r.operands[self.n_in..].iter().enumerate() {
            match o {
                Operand::Array(a) => outputs.push(a.clone()),
                _ => outputs.push(
                    fresh
                        .next()
                        .cloned()
                        .ok_or_else(|| arg_error(format!("output {j} was not allocated")))?,
                ),
            }
        }
        let (kernel, launch) = self.bind(&r, arrays)?;
        // SAFETY: the caller vouches for the operands; the allocated outputs are `buffers`.
        unsafe { kernel.run_host(&launch)? };
        Ok(super::host_outputs(outputs, &r.missing, &mut buffers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "@device.func\ndef f(a, b, out):\n    out[0] = a[0]\n";

    fn new(sig: &str, layout: &str) -> Result<GuVectorize, String> {
        GuVectorize::new(sig, layout, SRC, "f", "f_gufunc").map_err(|e| e.to_string())
    }

    #[test]
    fn layouts_and_signatures_are_checked_with_spans() {
        let sig3 = "void(float32[:], float32[:], float32[:])";
        assert!(new(sig3, "(n),(n)->()").is_ok());
        assert!(
            new(
                "void(float32[:,:], float32[:], float32[:])",
                "(m,n),(n)->(m)"
            )
            .is_ok()
        );
        assert!(new("(float32[::1], float32, float32[:])", " (n) , () -> (n) ").is_ok());
        let e = new(sig3, "(n),(n)").unwrap_err();
        assert!(e.contains("E0711") && e.contains("no `->`"), "{e}");
        let e = new(sig3, "(n),(2n)->()").unwrap_err();
        assert!(
            e.contains("E0711") && e.contains("`2n` is not a dimension name"),
            "{e}"
        );
        let e = new(sig3, "(n),(n->()").unwrap_err();
        assert!(e.contains("E0711"), "{e}");
        let e = new(sig3, "(n),(n)->(m)").unwrap_err();
        assert!(
            e.contains("E0711") && e.contains("output dimension `m`"),
            "{e}"
        );
        let e = new("float32(float32[:], float32[:], float32[:])", "(n),(n)->()").unwrap_err();
        assert!(e.contains("E0712") && e.contains("returns nothing"), "{e}");
        let e = new("void(float33[:], float32[:], float32[:])", "(n),(n)->()").unwrap_err();
        assert!(e.contains("E0712") && e.contains("`float33`"), "{e}");
        let e = new("void(float32[:], float32[:])", "(n),(n)->()").unwrap_err();
        assert!(e.contains("E0713") && e.contains("2 arguments"), "{e}");
        let e = new("void(float32[:], float32[:], float32)", "(n),(n)->()").unwrap_err();
        assert!(e.contains("E0713") && e.contains("scalar type"), "{e}");
        let e = new("void(float32[:,:], float32[:], float32[:])", "(n),(n)->()").unwrap_err();
        assert!(e.contains("E0713") && e.contains("2-dimensional"), "{e}");
        let e = new("void(float32, float32[:], float32[:])", "(n),(n)->()").unwrap_err();
        assert!(e.contains("E0713") && e.contains("scalar argument"), "{e}");
    }

    #[test]
    fn loop_dimensions_broadcast_and_core_dimensions_agree() {
        let g = new(
            "void(float64[:,:], float64[:], float64[:])",
            "(m,n),(n)->(m)",
        )
        .unwrap();
        let a =
            |shape: &[u64]| Operand::Array(DeviceArray::contiguous(0x1000, Scalar::Float64, shape));
        let r = g.resolve(&[a(&[5, 1, 3, 4]), a(&[6, 4])]).unwrap();
        assert_eq!(r.loop_shape, vec![5, 6]);
        assert_eq!(r.out_shapes, vec![vec![5, 6, 3]]);
        let e = g.resolve(&[a(&[3, 4]), a(&[5])]).unwrap_err().to_string();
        assert!(e.contains("core dimension `n` is 4"), "{e}");
        let e = g.resolve(&[a(&[4]), a(&[4])]).unwrap_err().to_string();
        assert!(e.contains("at least 2"), "{e}");
        let e = g
            .resolve(&[a(&[2, 3, 4]), a(&[3, 4])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("loop dimensions"), "{e}");
        let e = g
            .resolve(&[a(&[3, 4]), a(&[4]), a(&[4])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be float64 of shape [3]"), "{e}");
    }
}
