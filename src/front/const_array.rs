//! Module-level constant arrays (§1.3, §5.17): `NAME = np.array(<nested literal>, dtype=…)`
//! evaluated at compile time into the bytes device code reads them from.
//!
//! This file only turns literal nested lists into a dtype, a shape and bytes in memory order;
//! deciding that a call is `np.array`, typing reads and lowering live elsewhere.

use super::builtins::{Builtin, Namespace};
use super::consts::Const;
use super::{Item, ParsedModule};
use crate::types::{DType, MemSpace, Scalar, StructType, Type};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;
use std::sync::Arc;

/// The bytes of PTX's constant bank that module-level constant arrays may take in all; the
/// arrays that do not fit (in source order) live in global memory instead.
pub const CONST_BANK_BYTES: u64 = 64 * 1024;

pub use crate::ir::ConstArray;

/// The nested-list literal of an array, flattened: its shape and its elements in C order.
pub struct Nested {
    /// Extents, outermost first.
    pub shape: Vec<u64>,
    /// Elements in C order.
    pub items: Vec<Const>,
}

/// Flattens a nested list/tuple of numbers (given as a `Const::Tuple` tree) into a regular
/// shape; `None` when it is ragged. A bare number is a zero-dimensional array.
pub fn flatten(c: &Const) -> Option<Nested> {
    match c {
        Const::Tuple(items) => {
            let mut shape = vec![items.len() as u64];
            let mut out = Vec::new();
            let mut inner: Option<Vec<u64>> = None;
            for it in items {
                let n = flatten(it)?;
                match &inner {
                    None => inner = Some(n.shape.clone()),
                    Some(s) if *s == n.shape => {}
                    Some(_) => return None,
                }
                out.extend(n.items);
            }
            shape.extend(inner.unwrap_or_default());
            Some(Nested { shape, items: out })
        }
        Const::Array(_) => None,
        Const::Typed(_, c) => flatten(c),
        c => Some(Nested {
            shape: Vec::new(),
            items: vec![c.clone()],
        }),
    }
}

/// NumPy's default dtype for a literal: `bool` if all are bools, `int64` if all are ints
/// (or bools), `complex128` if any is complex, `float64` otherwise (an empty list too).
pub fn default_dtype(items: &[Const]) -> Scalar {
    if items.is_empty() {
        return Scalar::Float64;
    }
    if items.iter().all(|c| matches!(c, Const::Bool(_))) {
        Scalar::Bool
    } else if items
        .iter()
        .all(|c| matches!(c, Const::Bool(_) | Const::Int(_)))
    {
        Scalar::Int64
    } else if items.iter().any(|c| matches!(c, Const::Complex(..))) {
        Scalar::Complex128
    } else {
        Scalar::Float64
    }
}

/// One element's bytes as `dtype`; `None` when NumPy would refuse the value (an integer out
/// of range, a float for an integer dtype, a complex for a real one) or the dtype is not
/// supported in constant arrays (the float8 formats).
fn element_bytes(c: &Const, dtype: Scalar, out: &mut Vec<u8>) -> Option<()> {
    use Scalar::*;
    match dtype {
        Bool => out.push(u8::from(match c {
            Const::Bool(b) => *b,
            Const::Int(i) => *i != 0,
            Const::Float(f) => *f != 0.0,
            Const::Complex(re, im) => *re != 0.0 || *im != 0.0,
            _ => return None,
        })),
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 => {
            let i = c.as_int()?;
            if !crate::ir::literal_fits(crate::ir::Literal::Int(i), dtype) {
                return None;
            }
            let n = dtype.size() as usize;
            out.extend_from_slice(&(i as u128).to_le_bytes()[..n]);
        }
        Float16 => out.extend_from_slice(&crate::types::half::f16_bits(c.as_f64()?).to_le_bytes()),
        BFloat16 => {
            out.extend_from_slice(&crate::types::half::bf16_bits(c.as_f64()?).to_le_bytes())
        }
        Float32 => out.extend_from_slice(&(c.as_f64()? as f32).to_le_bytes()),
        Float64 => out.extend_from_slice(&c.as_f64()?.to_le_bytes()),
        Complex64 => {
            let (re, im) = c.as_complex()?;
            out.extend_from_slice(&(re as f32).to_le_bytes());
            out.extend_from_slice(&(im as f32).to_le_bytes());
        }
        Complex128 => {
            let (re, im) = c.as_complex()?;
            out.extend_from_slice(&re.to_le_bytes());
            out.extend_from_slice(&im.to_le_bytes());
        }
        Float8E4M3 | Float8E5M2 => return None,
    }
    Some(())
}

/// Builds the array of `nested` with `dtype` (NumPy's default when `None`), in C or Fortran
/// order. The name, span and memory space are filled in by the assignment.
pub fn build(nested: Nested, dtype: Option<Scalar>, fortran: bool) -> Option<ConstArray> {
    let dtype = dtype.unwrap_or_else(|| default_dtype(&nested.items));
    if !nested.items.iter().all(|c| match c {
        Const::Complex(..) => dtype.is_complex() || dtype == Scalar::Bool,
        Const::Float(_) => dtype.is_float() || dtype.is_complex() || dtype == Scalar::Bool,
        Const::Int(_) | Const::Bool(_) => true,
        _ => false,
    }) {
        return None;
    }
    let order: Vec<usize> = if fortran && nested.shape.len() > 1 {
        fortran_order(&nested.shape)
    } else {
        (0..nested.items.len()).collect()
    };
    let mut bytes = Vec::with_capacity(nested.items.len() * dtype.size() as usize);
    for i in order {
        element_bytes(&nested.items[i], dtype, &mut bytes)?;
    }
    Some(ConstArray {
        name: String::new(),
        span: crate::diag::Span::default(),
        dtype: DType::Scalar(dtype),
        shape: nested.shape,
        fortran,
        bytes,
        space: MemSpace::Const,
    })
}

/// The C-order positions of the elements in Fortran order (first index fastest).
fn fortran_order(shape: &[u64]) -> Vec<usize> {
    let n: u64 = shape.iter().product();
    let nd = shape.len();
    let mut c_strides = vec![1u64; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        c_strides[d] = c_strides[d + 1] * shape[d + 1];
    }
    (0..n)
        .map(|mut f| {
            let mut pos = 0;
            for d in 0..nd {
                let idx = f % shape[d];
                f /= shape[d];
                pos += idx * c_strides[d];
            }
            pos as usize
        })
        .collect()
}

impl ParsedModule {
    /// Whether `e` names a member of NumPy (`np.array`, `numpy.asfortranarray`).
    fn numpy_function<'e>(&self, e: &'e Expr) -> Option<&'e str> {
        match e {
            Expr::Attribute(a)
                if self.resolve_static(&a.value) == Some(Item::Namespace(Namespace::Numpy)) =>
            {
                Some(a.attr.id.as_str())
            }
            _ => None,
        }
    }

    /// The dtype a `dtype=` argument names: a NumPy or numba type object, Python's `float`,
    /// `int`, `bool`, `complex`, or a string such as `'float32'`.
    fn const_dtype(&self, e: &Expr) -> Option<Scalar> {
        if let Expr::StringLiteral(s) = e {
            return super::numpy_scalar(s.value.to_str());
        }
        match self.resolve_static(e)? {
            Item::Builtin(Builtin::Scalar(s)) => Some(s),
            Item::Builtin(Builtin::Float) => Some(Scalar::Float64),
            Item::Builtin(Builtin::Int) => Some(Scalar::Int64),
            Item::Builtin(Builtin::Bool) => Some(Scalar::Bool),
            Item::Builtin(Builtin::Complex) => Some(Scalar::Complex128),
            _ => None,
        }
    }

    /// A nested list/tuple literal of constants as a `Const::Tuple` tree.
    fn literal_tree(&self, e: &Expr) -> Option<Const> {
        match e {
            Expr::List(l) => l
                .elts
                .iter()
                .map(|x| self.literal_tree(x))
                .collect::<Option<Vec<_>>>()
                .map(Const::Tuple),
            Expr::Tuple(t) => t
                .elts
                .iter()
                .map(|x| self.literal_tree(x))
                .collect::<Option<Vec<_>>>()
                .map(Const::Tuple),
            // `[0.0] * 4`: a repeated list (at most 2^24 elements).
            Expr::BinOp(b)
                if b.op == ast::Operator::Mult && matches!(b.left.as_ref(), Expr::List(_)) =>
            {
                let Const::Tuple(items) = self.literal_tree(&b.left)? else {
                    return None;
                };
                let n = usize::try_from(self.eval_const(&b.right)?.as_int()?.max(0)).ok()?;
                if items.len().checked_mul(n)? > 1 << 24 {
                    return None;
                }
                Some(Const::Tuple(
                    items
                        .iter()
                        .cycle()
                        .take(items.len() * n)
                        .cloned()
                        .collect(),
                ))
            }
            e => match self.eval_const(e)? {
                Const::Array(_) => None,
                c => Some(c),
            },
        }
    }

    /// The parts of an array-building call: the literal, the dtype asked for, Fortran order.
    fn array_parts(&self, c: &ast::ExprCall) -> Option<(Nested, Option<Scalar>, bool)> {
        let args = &c.arguments;
        let kw = |name: &str| {
            args.keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == name))
                .map(|k| &k.value)
        };
        let known = |names: &[&str]| {
            args.keywords.iter().all(|k| {
                k.arg
                    .as_ref()
                    .is_some_and(|a| names.contains(&a.id.as_str()))
            })
        };
        // `np.float64([...])`: a dtype called on a literal.
        if let Some(Item::Builtin(Builtin::Scalar(s))) = self.resolve_static(&c.func) {
            if args.args.len() != 1 || !args.keywords.is_empty() {
                return None;
            }
            let tree = self.literal_tree(&args.args[0])?;
            return Some((flatten(&tree)?, Some(s), false));
        }
        let f = self.numpy_function(&c.func)?;
        match f {
            "array" | "asarray" => {
                if !known(&["dtype", "order"]) {
                    return None;
                }
                let (data, mut dtype) = match args.args.as_ref() {
                    [d] => (d, None),
                    [d, t] => (d, Some(self.const_dtype(t)?)),
                    _ => return None,
                };
                if let Some(t) = kw("dtype") {
                    dtype = Some(self.const_dtype(t)?);
                }
                let fortran = match kw("order") {
                    None => false,
                    Some(Expr::StringLiteral(s)) => match s.value.to_str() {
                        "F" => true,
                        "C" | "K" | "A" => false,
                        _ => return None,
                    },
                    Some(_) => return None,
                };
                let tree = self.literal_tree(data)?;
                Some((flatten(&tree)?, dtype, fortran))
            }
            "asfortranarray" | "ascontiguousarray" => {
                if args.args.len() != 1 || !args.keywords.is_empty() {
                    return None;
                }
                let Expr::Call(inner) = &args.args[0] else {
                    return None;
                };
                let (n, dtype, _) = self.array_parts(inner)?;
                Some((n, dtype, f == "asfortranarray"))
            }
            _ => None,
        }
    }

    /// A structured dtype: `[('x', np.float64), ('y', 'int32')]`, or `np.dtype(that,
    /// align=True)` (also `np.dtype(dtype=that, align=True)`).
    fn record_spec(&self, e: &Expr) -> Option<RecordSpec> {
        match e {
            Expr::List(l) => {
                let mut fields = Vec::new();
                for f in &l.elts {
                    let Expr::Tuple(t) = f else { return None };
                    let [Expr::StringLiteral(name), ty] = t.elts.as_slice() else {
                        return None;
                    };
                    fields.push((name.value.to_str().to_string(), self.const_dtype(ty)?));
                }
                Some(RecordSpec {
                    fields,
                    aligned: false,
                })
            }
            Expr::Call(c) if self.numpy_function(&c.func) == Some("dtype") => {
                let mut inner = c.arguments.args.first();
                let mut aligned = false;
                for k in &c.arguments.keywords {
                    match (k.arg.as_ref().map(|a| a.id.as_str()), &k.value) {
                        (Some("dtype"), v) => inner = Some(v),
                        (Some("align"), Expr::BooleanLiteral(b)) => aligned = b.value,
                        _ => return None,
                    }
                }
                let mut spec = self.record_spec(inner?)?;
                spec.aligned = aligned;
                Some(spec)
            }
            _ => None,
        }
    }

    /// A module-level structured dtype used as a type (`dt = np.dtype([('i', np.int32),
    /// ('j', np.float32, (3, 2))])`, `align=True` too): the record struct an array of that
    /// dtype has, laid out at NumPy's offsets (packed, or aligned with `align=True`) as
    /// numba's `from_dtype` gives them. Fields are numbers or sub-arrays of numbers; `None`
    /// for anything else (the name then stays a host global).
    pub(crate) fn dtype_record(&self, e: &Expr) -> Option<StructType> {
        let (list, aligned) = match e {
            Expr::Call(c) if self.numpy_function(&c.func) == Some("dtype") => {
                let mut inner = c.arguments.args.first();
                let mut aligned = false;
                if c.arguments.args.len() > 1 {
                    return None;
                }
                for k in &c.arguments.keywords {
                    match (k.arg.as_ref().map(|a| a.id.as_str()), &k.value) {
                        (Some("dtype"), v) => inner = Some(v),
                        (Some("align"), Expr::BooleanLiteral(b)) => aligned = b.value,
                        _ => return None,
                    }
                }
                (inner?, aligned)
            }
            _ => return None,
        };
        let Expr::List(l) = list else { return None };
        let (mut end, mut max_align) = (0u64, 1u64);
        let mut fields = Vec::new();
        for f in &l.elts {
            let Expr::Tuple(t) = f else { return None };
            let (name, ty, shape) = match t.elts.as_slice() {
                [Expr::StringLiteral(n), ty] => (n, ty, Vec::new()),
                [Expr::StringLiteral(n), ty, shape] => {
                    let dims: Vec<&Expr> = match shape {
                        Expr::Tuple(s) => s.elts.iter().collect(),
                        e => vec![e],
                    };
                    let mut out = Vec::new();
                    for d in dims {
                        let v = self.eval_const(d)?.as_int()?;
                        out.push(u64::try_from(v).ok().filter(|v| *v > 0)?);
                    }
                    (n, ty, out)
                }
                _ => return None,
            };
            let s = self.const_dtype(ty)?;
            let a = s.size();
            if aligned {
                end = end.div_ceil(a) * a;
                max_align = max_align.max(a);
            }
            fields.push(crate::types::record::RecordField {
                name: name.value.to_str().to_string(),
                ty: Type::Scalar(s),
                offset: end,
                shape: shape.clone(),
                text: None,
            });
            end += a * shape.iter().product::<u64>();
        }
        let size = if aligned {
            end.div_ceil(max_align) * max_align
        } else {
            end
        };
        crate::types::record::record(&fields, size).ok()
    }

    /// A nested list of records (tuples): its shape and the records in C order.
    fn record_literal(&self, e: &Expr, n: usize) -> Option<(Vec<u64>, Vec<Vec<Const>>)> {
        match e {
            Expr::List(l) => {
                let mut inner: Option<Vec<u64>> = None;
                let mut out = Vec::new();
                for x in &l.elts {
                    let (sh, recs) = self.record_literal(x, n)?;
                    match &inner {
                        None => inner = Some(sh),
                        Some(s) if *s == sh => {}
                        Some(_) => return None,
                    }
                    out.extend(recs);
                }
                let mut shape = vec![l.elts.len() as u64];
                shape.extend(inner.unwrap_or_default());
                Some((shape, out))
            }
            Expr::Tuple(t) if t.elts.len() == n => {
                let rec = t
                    .elts
                    .iter()
                    .map(|x| match self.eval_const(x)? {
                        c @ (Const::Bool(_)
                        | Const::Int(_)
                        | Const::Float(_)
                        | Const::Complex(..)) => Some(c),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some((Vec::new(), vec![rec]))
            }
            _ => None,
        }
    }

    /// `np.array([(1.0, 2), ...], dtype=<structured dtype>)`: a constant record array.
    fn record_array(&self, c: &ast::ExprCall) -> Option<Const> {
        if !matches!(self.numpy_function(&c.func), Some("array" | "asarray")) {
            return None;
        }
        let args = &c.arguments;
        let dtype = args
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == "dtype"))
            .map(|k| &k.value)
            .or(args.args.get(1))?;
        let spec = self.record_spec(dtype)?;
        if args
            .keywords
            .iter()
            .any(|k| k.arg.as_ref().is_none_or(|a| a.id.as_str() != "dtype"))
            || args.args.len() > 2
        {
            return None;
        }
        let (shape, recs) = self.record_literal(args.args.first()?, spec.fields.len())?;
        if shape.is_empty() {
            return None;
        }
        build_records(&spec, shape, &recs, false).map(|a| Const::Array(Arc::new(a)))
    }

    /// A call that builds a constant: an array from a literal, or `float('nan')` and the
    /// like (`'inf'`, `'-inf'`, `'infinity'`, case-insensitive, as Python's `float` accepts).
    pub(crate) fn eval_const_call(&self, c: &ast::ExprCall) -> Option<Const> {
        if self.resolve_static(&c.func) == Some(Item::Builtin(Builtin::Float))
            && c.arguments.keywords.is_empty()
            && let [Expr::StringLiteral(s)] = c.arguments.args.as_ref()
        {
            let text = s.value.to_str().trim().to_ascii_lowercase();
            let (neg, word) = match text.strip_prefix('-') {
                Some(w) => (true, w.to_string()),
                None => (false, text.trim_start_matches('+').to_string()),
            };
            let v = match word.as_str() {
                "nan" => f64::NAN,
                "inf" | "infinity" => f64::INFINITY,
                w => w.parse::<f64>().ok()?,
            };
            return Some(Const::Float(if neg { -v } else { v }));
        }
        // `math.sqrt(2.0 / math.pi)`, `abs(-3)`, `min(4, N)`: folded as Python computes them
        // (docs/semantics.md §1.3), so the CLI and the Rust API accept the constants the
        // Python package evaluates itself.
        if c.arguments.keywords.is_empty()
            && !c
                .arguments
                .args
                .iter()
                .any(|a| matches!(a, Expr::Starred(_)))
        {
            match self.resolve_static(&c.func) {
                Some(Item::Builtin(Builtin::Math(f))) => {
                    let args = c
                        .arguments
                        .args
                        .iter()
                        .map(|a| self.eval_const(a))
                        .collect::<Option<Vec<_>>>()?;
                    return super::consts::fold_math(f, &args);
                }
                Some(Item::Builtin(
                    b
                    @ (Builtin::Abs | Builtin::Min | Builtin::Max | Builtin::Int | Builtin::Round),
                )) => {
                    let args = c
                        .arguments
                        .args
                        .iter()
                        .map(|a| self.eval_const(a))
                        .collect::<Option<Vec<_>>>()?;
                    return super::builtins::fold_builtin(b, &args);
                }
                Some(Item::Builtin(Builtin::Float))
                    if c.arguments.args.len() == 1
                        && !matches!(c.arguments.args[0], Expr::StringLiteral(_)) =>
                {
                    return match self.eval_const(&c.arguments.args[0])? {
                        v @ (Const::Int(_) | Const::Float(_) | Const::Bool(_)) => {
                            Some(Const::Float(v.as_f64()?))
                        }
                        _ => None,
                    };
                }
                _ => {}
            }
        }
        // `complex(re, im)` of real constants: exact parts (-0.0, NaN and infinities too).
        if self.resolve_static(&c.func) == Some(Item::Builtin(Builtin::Complex))
            && c.arguments.keywords.is_empty()
            && let [re, im] = c.arguments.args.as_ref()
        {
            let (re, im) = (self.eval_const(re)?, self.eval_const(im)?);
            if matches!(re, Const::Complex(..)) || matches!(im, Const::Complex(..)) {
                return None;
            }
            return Some(Const::Complex(re.as_f64()?, im.as_f64()?));
        }
        // `np.float32(6.2831855)`: a typed NumPy scalar.
        if let Some(Item::Builtin(Builtin::Scalar(s))) = self.resolve_static(&c.func)
            && c.arguments.keywords.is_empty()
            && let [arg] = c.arguments.args.as_ref()
            && !matches!(arg, Expr::List(_) | Expr::Tuple(_))
        {
            return Const::typed(s, &self.eval_const(arg)?);
        }
        if let Some(r) = self.record_array(c) {
            return Some(r);
        }
        let (nested, dtype, fortran) = self.array_parts(c)?;
        build(nested, dtype, fortran).map(|a| Const::Array(Arc::new(a)))
    }

    /// Names the arrays in a module-level constant assigned to `name` (elements of a tuple
    /// are `name[i]`), records where they are assigned, and places each in constant memory
    /// while the module's arrays fit in the 64 KiB bank, in global memory after that.
    pub(crate) fn name_const_arrays(
        &mut self,
        c: Const,
        name: &str,
        span: crate::diag::Span,
    ) -> Const {
        match c {
            Const::Array(a) if a.name.is_empty() => {
                let mut a = Arc::unwrap_or_clone(a);
                a.name = name.to_string();
                a.span = span;
                let size = a.bytes.len() as u64;
                if self.const_bytes + size <= CONST_BANK_BYTES {
                    self.const_bytes += size;
                } else {
                    a.space = MemSpace::Global;
                }
                Const::Array(Arc::new(a))
            }
            Const::Tuple(items) => Const::Tuple(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| self.name_const_arrays(x, &format!("{name}[{i}]"), span))
                    .collect(),
            ),
            c => c,
        }
    }
}

/// The span of an expression, for the assignment that names a constant array.
pub(crate) fn span_of(e: &impl Ranged) -> crate::diag::Span {
    e.range().into()
}

/// A structured dtype written in the source: its fields and whether `align=True` was given.
pub struct RecordSpec {
    /// Field names and number types, in order.
    pub fields: Vec<(String, Scalar)>,
    /// `align=True`.
    pub aligned: bool,
}

/// The record struct of `spec` with each field's byte offset, when its layout is C's: with
/// `align=True`, or packed fields that happen to sit where C puts them. `None` otherwise
/// (kernels lay records out as C structs, §5.16).
pub fn record_layout(spec: &RecordSpec) -> Option<(StructType, Vec<u64>)> {
    let mut offsets = Vec::new();
    let (mut c_off, mut packed_off, mut align) = (0u64, 0u64, 1u64);
    for (_, s) in &spec.fields {
        let a = s.size();
        c_off = c_off.div_ceil(a) * a;
        if !spec.aligned && c_off != packed_off {
            return None;
        }
        offsets.push(c_off);
        c_off += s.size();
        packed_off += s.size();
        align = align.max(a);
    }
    let itemsize = c_off.div_ceil(align) * align;
    if !spec.aligned && itemsize != packed_off {
        return None;
    }
    let fields: Vec<crate::types::record::RecordField> = spec
        .fields
        .iter()
        .zip(&offsets)
        .map(|((name, s), off)| {
            crate::types::record::RecordField::new(name, Type::Scalar(*s), *off)
        })
        .collect();
    let st = crate::types::record::record(&fields, itemsize).ok()?;
    Some((st, offsets))
}

/// Builds a record array: `shape` and the records (each a tuple of field values) in C order.
pub fn build_records(
    spec: &RecordSpec,
    shape: Vec<u64>,
    records: &[Vec<Const>],
    fortran: bool,
) -> Option<ConstArray> {
    let (st, offsets) = record_layout(spec)?;
    let itemsize = {
        let align = spec.fields.iter().map(|(_, s)| s.size()).max().unwrap_or(1);
        let end = offsets
            .last()
            .zip(spec.fields.last())
            .map_or(0, |(o, (_, s))| o + s.size());
        end.div_ceil(align) * align
    };
    let order: Vec<usize> = if fortran && shape.len() > 1 {
        fortran_order(&shape)
    } else {
        (0..records.len()).collect()
    };
    let mut bytes = Vec::with_capacity(records.len() * itemsize as usize);
    for i in order {
        let rec = &records[i];
        if rec.len() != spec.fields.len() {
            return None;
        }
        let start = bytes.len();
        bytes.resize(start + itemsize as usize, 0);
        for ((v, (_, s)), off) in rec.iter().zip(&spec.fields).zip(&offsets) {
            let mut one = Vec::new();
            if matches!(v, Const::Float(_)) && !(s.is_float() || s.is_complex()) {
                return None;
            }
            element_bytes(v, *s, &mut one)?;
            let at = start + *off as usize;
            bytes[at..at + one.len()].copy_from_slice(&one);
        }
    }
    Some(ConstArray {
        name: String::new(),
        span: crate::diag::Span::default(),
        dtype: DType::Struct(Box::new(st)),
        shape,
        fortran,
        bytes,
        space: MemSpace::Const,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(items: Vec<Const>) -> Const {
        Const::Tuple(items)
    }

    #[test]
    fn nested_lists_flatten_and_take_numpys_default_dtype() {
        let c = t(vec![
            t(vec![Const::Int(1), Const::Int(2)]),
            t(vec![Const::Int(3), Const::Float(4.5)]),
        ]);
        let n = flatten(&c).unwrap();
        assert_eq!(n.shape, vec![2, 2]);
        assert_eq!(default_dtype(&n.items), Scalar::Float64);
        let ragged = t(vec![t(vec![Const::Int(1)]), t(vec![])]);
        assert!(flatten(&ragged).is_none());
    }

    #[test]
    fn fortran_order_puts_the_first_index_fastest() {
        assert_eq!(fortran_order(&[2, 3]), vec![0, 3, 1, 4, 2, 5]);
        let c = t(vec![
            t(vec![Const::Int(1), Const::Int(2), Const::Int(3)]),
            t(vec![Const::Int(4), Const::Int(5), Const::Int(6)]),
        ]);
        let a = build(flatten(&c).unwrap(), Some(Scalar::UInt8), true).unwrap();
        assert_eq!(a.bytes, vec![1, 4, 2, 5, 3, 6]);
    }

    #[test]
    fn values_numpy_refuses_are_not_constants() {
        let c = t(vec![Const::Int(300)]);
        assert!(build(flatten(&c).unwrap(), Some(Scalar::UInt8), false).is_none());
        let c = t(vec![Const::Float(1.5)]);
        assert!(build(flatten(&c).unwrap(), Some(Scalar::Int32), false).is_none());
        let c = t(vec![Const::Int(-1)]);
        let a = build(flatten(&c).unwrap(), Some(Scalar::Int16), false).unwrap();
        assert_eq!(a.bytes, vec![0xff, 0xff]);
    }
}
