//! cupyx.jit's `jit.thrust.*` inside kernels (docs/semantics.md §15.5): iterators over
//! arrays (`a.begin()`, `a.end()`, `shared + n`), their arithmetic, and calls of Thrust's
//! algorithms, each lowered to a call of a generated CUDA C++ shim (`crate::cccl`).
//!
//! An iterator over an array is a value of a reserved struct type holding the generic
//! address of its element and the stride in bytes, so iterators over strided views (a row of
//! an F-ordered matrix) walk their stride as CuPy's do. `jit.thrust.make_counting_iterator(v)`
//! and `make_constant_iterator(v)` hold their value.

use super::*;
use crate::diag::Code;
use crate::types::StructType;

/// What a reserved iterator struct stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum IterKind {
    /// An iterator over array elements: `(address, stride in bytes)`.
    Array,
    /// `make_counting_iterator(v)`: `it[i]` is `v + i`.
    Counting,
    /// `make_constant_iterator(v)`: `it[i]` is `v`.
    Constant,
}

const PREFIX: &str = "jit.thrust.";

fn kind_name(k: IterKind) -> &'static str {
    match k {
        IterKind::Array => "iterator",
        IterKind::Counting => "counting_iterator",
        IterKind::Constant => "constant_iterator",
    }
}

/// The iterator type of `kind` over `dtype`.
pub(super) fn iter_type(kind: IterKind, dtype: Scalar) -> Type {
    let i64t = Type::Scalar(Scalar::Int64);
    let fields = match kind {
        IterKind::Array => vec![
            ("address".to_string(), i64t.clone()),
            ("stride".to_string(), i64t),
        ],
        _ => vec![("value".to_string(), Type::Scalar(dtype))],
    };
    Type::Struct(Box::new(StructType {
        name: format!("{PREFIX}{}[{}]", kind_name(kind), dtype.name()),
        fields,
        align: None,
        field_align: Vec::new(),
        record: None,
    }))
}

/// The kind and element type of an iterator type.
pub(super) fn iter_of(t: &Type) -> Option<(IterKind, Scalar)> {
    let Type::Struct(st) = t else { return None };
    let rest = st.name.strip_prefix(PREFIX)?;
    let (kind, elem) = rest.split_once('[')?;
    let elem = Scalar::from_name(elem.strip_suffix(']')?)?;
    let kind = [IterKind::Array, IterKind::Counting, IterKind::Constant]
        .into_iter()
        .find(|k| kind_name(*k) == kind)?;
    Some((kind, elem))
}

/// The C type of a number type that shims can take (`None`: not supported).
fn c_type(s: Scalar) -> Option<&'static str> {
    Some(match s {
        Scalar::Bool => "bool",
        Scalar::Int8 => "signed char",
        Scalar::UInt8 => "unsigned char",
        Scalar::Int16 => "short",
        Scalar::UInt16 => "unsigned short",
        Scalar::Int32 => "int",
        Scalar::UInt32 => "unsigned int",
        Scalar::Int64 => "long long",
        Scalar::UInt64 => "unsigned long long",
        Scalar::Float32 => "float",
        Scalar::Float64 => "double",
        _ => return None,
    })
}

/// One parameter of an algorithm.
#[derive(Copy, Clone, PartialEq, Eq)]
enum P {
    /// An iterator (`first`, `last`, `result`).
    It,
    /// A value compared with or stored into elements: converted to the element type of
    /// iterator argument `.0`.
    Elem(usize),
    /// A value with its own type (an initial value: the result has its type).
    Init,
}

/// What an algorithm returns.
#[derive(Copy, Clone, PartialEq, Eq)]
enum R {
    None,
    /// An iterator with the stride of iterator argument `.0`.
    It(usize),
    /// Two iterators, with the strides of arguments `.0` and `.1`.
    Pair(usize, usize),
    Bool,
    /// A count (`difference_type`): int64.
    Count,
    /// The element type of iterator argument `.0`.
    ElemOf(usize),
    /// The type of the `Init` argument.
    InitType,
}

use P::{Elem as E, Init as N, It as I};

/// The supported forms of each algorithm: its parameters after the policy, and its result.
fn forms(name: &str) -> &'static [(&'static [P], R)] {
    match name {
        "adjacent_difference" => &[(&[I, I, I], R::It(2))],
        "binary_search" => &[(&[I, I, E(0)], R::Bool), (&[I, I, I, I, I], R::It(4))],
        "lower_bound" | "upper_bound" => &[(&[I, I, E(0)], R::It(0)), (&[I, I, I, I, I], R::It(4))],
        "equal_range" => &[(&[I, I, E(0)], R::Pair(0, 0))],
        "copy" => &[(&[I, I, I], R::It(2))],
        "count" => &[(&[I, I, E(0)], R::Count)],
        "equal" => &[(&[I, I, I], R::Bool)],
        "is_sorted" => &[(&[I, I], R::Bool)],
        "is_sorted_until" => &[(&[I, I], R::It(0))],
        "fill" => &[(&[I, I, E(0)], R::None)],
        "find" => &[(&[I, I, E(0)], R::It(0))],
        "gather" | "scatter" => &[(&[I, I, I, I], R::None)],
        "inclusive_scan" => &[(&[I, I, I], R::It(2))],
        "exclusive_scan" => &[(&[I, I, I], R::It(2)), (&[I, I, I, E(2)], R::It(2))],
        "inclusive_scan_by_key" => &[(&[I, I, I, I], R::It(3))],
        "exclusive_scan_by_key" => &[(&[I, I, I, I], R::It(3)), (&[I, I, I, I, E(3)], R::It(3))],
        "inner_product" => &[(&[I, I, I, N], R::InitType)],
        "mismatch" => &[(&[I, I, I], R::Pair(0, 2))],
        "reduce" => &[(&[I, I], R::ElemOf(0)), (&[I, I, N], R::InitType)],
        "reduce_by_key" => &[(&[I, I, I, I, I], R::Pair(3, 4))],
        "remove" => &[(&[I, I, E(0)], R::It(0))],
        "remove_copy" => &[(&[I, I, I, E(0)], R::It(2))],
        "replace" => &[(&[I, I, E(0), E(0)], R::None)],
        "replace_copy" => &[(&[I, I, I, E(0), E(0)], R::It(2))],
        "reverse" => &[(&[I, I], R::None)],
        "reverse_copy" => &[(&[I, I, I], R::It(2))],
        "sequence" => &[
            (&[I, I], R::None),
            (&[I, I, E(0)], R::None),
            (&[I, I, E(0), E(0)], R::None),
        ],
        "set_difference" | "set_intersection" | "set_symmetric_difference" | "set_union" => {
            &[(&[I, I, I, I, I], R::It(4))]
        }
        "set_intersection_by_key" => &[(&[I, I, I, I, I, I, I], R::Pair(5, 6))],
        "set_difference_by_key" | "set_symmetric_difference_by_key" | "set_union_by_key" => {
            &[(&[I, I, I, I, I, I, I, I], R::Pair(6, 7))]
        }
        "sort" | "stable_sort" => &[(&[I, I], R::None)],
        "sort_by_key" | "stable_sort_by_key" => &[(&[I, I, I], R::None)],
        "swap_ranges" => &[(&[I, I, I], R::It(2))],
        "unique" => &[(&[I, I], R::It(0))],
        "unique_by_key" => &[(&[I, I, I], R::Pair(0, 2))],
        _ => &[],
    }
}

impl FnCx<'_, '_> {
    /// Whether `e` is `jit.thrust` of the cupyx dialect's `jit`.
    fn is_thrust_namespace(&self, e: &ast::Expr) -> bool {
        matches!(e, ast::Expr::Attribute(a) if a.attr.id.as_str() == "thrust"
            && matches!(self.s.m.resolve_static(&a.value),
                Some(Item::Namespace(crate::front::builtins::Namespace::CupyxJit))))
    }

    /// A call `jit.thrust.NAME(...)`, or `None` when the callee is something else.
    pub(super) fn thrust_call(&mut self, c: &ast::ExprCall) -> Option<Option<Val>> {
        let ast::Expr::Attribute(a) = c.func.as_ref() else {
            return None;
        };
        if !self.is_thrust_namespace(&a.value) {
            return None;
        }
        let name = a.attr.id.as_str();
        let span = sp(c);
        Some(match name {
            "make_counting_iterator" | "make_constant_iterator" => {
                self.make_iterator(name, c, span)
            }
            _ => self.algorithm(name, c, span),
        })
    }

    fn make_iterator(&mut self, name: &str, c: &ast::ExprCall, span: Span) -> Option<Val> {
        let args = self.args(c, &format!("jit.thrust.{name}"), 1, 1)?;
        let v = &args[0];
        let s = match v.ty {
            Type::Scalar(s) if v.weak.is_none() => s,
            Type::Scalar(_) => self.s.defaults.of(v.weak?),
            _ => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("`jit.thrust.{name}` takes a number, not {}", v.ty),
                );
                return None;
            }
        };
        let e = self.convert(v, s)?;
        let kind = if name == "make_counting_iterator" {
            IterKind::Counting
        } else {
            IterKind::Constant
        };
        let ty = iter_type(kind, s);
        let t = self.push(Expr::Tuple(vec![e]), ty.clone(), span);
        Some(self.val(t, ty, span))
    }

    /// `a.begin()` / `a.end()` of a one-dimensional array.
    pub(super) fn array_iterator(&mut self, v: &Val, end: bool, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let method = if end { "end" } else { "begin" };
        self.args(c, method, 0, 0)?;
        let at = v.ty.as_array()?.clone();
        let Some(s) = at.dtype.scalar().filter(|s| c_type(*s).is_some()) else {
            self.error(
                Code::E0212,
                span,
                format!(
                    "`{method}()` of {}: jit.thrust iterators are over bool, integer, float32 and float64 elements",
                    v.ty
                ),
            );
            return None;
        };
        if at.ndim != 1 {
            self.error(
                Code::E0212,
                span,
                format!("`{method}()` of a {}-dimensional array: index it down to one dimension first (`x[i].{method}()`)", at.ndim),
            );
            return None;
        }
        let i64t = Type::Scalar(Scalar::Int64);
        let addr = self.push(Expr::ArrayProp(v.e, ArrayProp::Address), i64t.clone(), span);
        let stride = self.push(
            Expr::ArrayProp(v.e, ArrayProp::Stride(0)),
            i64t.clone(),
            span,
        );
        let addr = if end {
            let n = self.push(
                Expr::ArrayProp(v.e, ArrayProp::Shape(0)),
                i64t.clone(),
                span,
            );
            let off = self.push(Expr::Binary(BinaryOp::Mul, n, stride), i64t.clone(), span);
            self.push(Expr::Binary(BinaryOp::Add, addr, off), i64t, span)
        } else {
            addr
        };
        let ty = iter_type(IterKind::Array, s);
        let t = self.push(Expr::Tuple(vec![addr, stride]), ty.clone(), span);
        Some(self.val(t, ty, span))
    }

    /// `iterator ± n`, `iterator - iterator`, and `array + n` (a pointer into shared memory):
    /// `None` when neither operand is an iterator (nor, in the cupyx dialect, `array + n`).
    pub(super) fn iterator_binary(
        &mut self,
        op: BinaryOp,
        l: &Val,
        r: &Val,
        span: Span,
    ) -> Option<Option<Val>> {
        let cupyx = self.s.m.dialect == crate::front::dialect::Dialect::Cupyx;
        let l_it = iter_of(&l.ty);
        let r_it = iter_of(&r.ty);
        let l_arr =
            cupyx && matches!(&l.ty, Type::Array(a) if a.ndim == 1) && r.ty.as_scalar().is_some();
        if l_it.is_none() && r_it.is_none() && !l_arr {
            return None;
        }
        let i64t = Type::Scalar(Scalar::Int64);
        // `array + n`: its begin, moved.
        let (l, lk) = if l_arr && op == BinaryOp::Add {
            let begin = self.begin_of(l, span)?;
            let k = iter_of(&begin.ty);
            (begin, k)
        } else {
            (l.clone(), l_it)
        };
        let bad = |cx: &mut Self| {
            cx.error(
                Code::E0202,
                span,
                format!(
                    "unsupported operand types for `{}`: {} and {}",
                    op.symbol(),
                    l.ty,
                    r.ty
                ),
            );
            Some(None)
        };
        match (lk, r_it, op) {
            (Some((IterKind::Array, s)), None, BinaryOp::Add | BinaryOp::Sub)
                if r.ty.as_scalar().is_some_and(|s| s.is_integer()) =>
            {
                let n = self.convert(r, Scalar::Int64)?;
                let addr = self.push(Expr::Extract(l.e, 0), i64t.clone(), span);
                let stride = self.push(Expr::Extract(l.e, 1), i64t.clone(), span);
                let off = self.push(Expr::Binary(BinaryOp::Mul, n, stride), i64t.clone(), span);
                let addr = self.push(Expr::Binary(op, addr, off), i64t, span);
                let ty = iter_type(IterKind::Array, s);
                let t = self.push(Expr::Tuple(vec![addr, stride]), ty.clone(), span);
                Some(Some(self.val(t, ty, span)))
            }
            (Some((IterKind::Array, a)), Some((IterKind::Array, b)), BinaryOp::Sub) if a == b => {
                let a1 = self.push(Expr::Extract(l.e, 0), i64t.clone(), span);
                let a2 = self.push(Expr::Extract(r.e, 0), i64t.clone(), span);
                let stride = self.push(Expr::Extract(l.e, 1), i64t.clone(), span);
                let d = self.push(Expr::Binary(BinaryOp::Sub, a1, a2), i64t.clone(), span);
                let q = self.push(
                    Expr::Binary(BinaryOp::FloorDiv, d, stride),
                    i64t.clone(),
                    span,
                );
                Some(Some(self.val(q, i64t, span)))
            }
            _ => bad(self),
        }
    }

    fn begin_of(&mut self, v: &Val, span: Span) -> Option<Val> {
        let at = v.ty.as_array()?.clone();
        let s = at.dtype.scalar().filter(|s| c_type(*s).is_some())?;
        let i64t = Type::Scalar(Scalar::Int64);
        let addr = self.push(Expr::ArrayProp(v.e, ArrayProp::Address), i64t.clone(), span);
        let stride = self.push(Expr::ArrayProp(v.e, ArrayProp::Stride(0)), i64t, span);
        let ty = iter_type(IterKind::Array, s);
        let t = self.push(Expr::Tuple(vec![addr, stride]), ty.clone(), span);
        Some(self.val(t, ty, span))
    }

    /// `it[i]` of a counting or constant iterator.
    pub(super) fn iterator_subscript(&mut self, base: &Val, s: &ast::ExprSubscript) -> Option<Val> {
        let span = sp(s);
        let (kind, elem) = iter_of(&base.ty)?;
        let i = self.expr(&s.slice);
        let i = self.value_of(i)?;
        if !i.ty.as_scalar().is_some_and(|s| s.is_integer()) {
            self.error(
                Code::E0203,
                i.span,
                format!("an iterator's index must be an integer, not {}", i.ty),
            );
            return None;
        }
        let t = Type::Scalar(elem);
        match kind {
            IterKind::Constant => {
                let e = self.push(Expr::Extract(base.e, 0), t.clone(), span);
                Some(self.val(e, t, span))
            }
            IterKind::Counting => {
                let v = self.push(Expr::Extract(base.e, 0), t.clone(), span);
                let n = self.convert(&i, elem)?;
                let e = self.push(Expr::Binary(BinaryOp::Add, v, n), t.clone(), span);
                Some(self.val(e, t, span))
            }
            IterKind::Array => {
                self.error(
                    Code::E0203,
                    span,
                    "subscripting an iterator over an array is not supported: subscript the array",
                );
                None
            }
        }
    }

    /// `jit.thrust.NAME(policy, ...)`.
    fn algorithm(&mut self, name: &str, c: &ast::ExprCall, span: Span) -> Option<Val> {
        let forms = forms(name);
        if forms.is_empty() {
            self.error(
                Code::E0102,
                sp(c.func.as_ref()),
                format!(
                    "`cupyx.jit.thrust.{name}` is not available in device code (cupyx dialect)"
                ),
            );
            return None;
        }
        let full = format!("jit.thrust.{name}");
        let max = forms.iter().map(|f| f.0.len()).max().unwrap_or(0) + 1;
        let min = forms.iter().map(|f| f.0.len()).min().unwrap_or(0) + 1;
        if c.arguments.args.len() < min
            || c.arguments.args.len() > max
            || !c.arguments.keywords.is_empty()
        {
            self.args(c, &full, min, max)?;
        }
        // The execution policy: `jit.thrust.device`, `seq` or `host`. Inside a kernel each
        // thread runs the algorithm sequentially whichever it is (module documentation).
        let policy = &c.arguments.args[0];
        let ok_policy = matches!(policy, ast::Expr::Attribute(p)
            if matches!(p.attr.id.as_str(), "device" | "seq" | "host") && self.is_thrust_namespace(&p.value));
        if !ok_policy {
            self.error(
                Code::E0207,
                sp(policy),
                format!("the first argument of `{full}` must be an execution policy: `jit.thrust.device` or `jit.thrust.seq`"),
            );
            return None;
        }
        let n = c.arguments.args.len() - 1;
        let Some(&(params, ret)) = forms.iter().find(|f| f.0.len() == n) else {
            self.error(
                Code::E0107,
                span,
                format!("`{full}` does not take {n} arguments after the policy"),
            );
            return None;
        };
        let mut vals = Vec::new();
        for a in &c.arguments.args[1..] {
            let v = self.expr(a);
            vals.push(self.value_of(v)?);
        }
        // Check and convert each argument; build the C parameters and the call's arguments.
        let i64t = Type::Scalar(Scalar::Int64);
        let mut cparams = Vec::new();
        let mut cargs = Vec::new();
        let mut ir_args = Vec::new();
        let mut ir_types = Vec::new();
        let mut sig = Vec::new();
        let mut elems: Vec<Option<Scalar>> = Vec::new();
        let mut init_ty = None;
        for (j, (p, v)) in params.iter().zip(&vals).enumerate() {
            match p {
                P::It => {
                    let it = if matches!(&v.ty, Type::Array(a) if a.ndim == 1) {
                        self.begin_of(v, v.span)
                    } else {
                        Some(v.clone())
                    };
                    let Some((IterKind::Array, s)) = it.as_ref().and_then(|it| iter_of(&it.ty))
                    else {
                        self.error(
                            Code::E0207,
                            v.span,
                            format!("argument {} of `{full}` must be an iterator over a number array (`a.begin()`, `a.end()`), not {}", j + 2, v.ty),
                        );
                        return None;
                    };
                    let it = it?;
                    let a = self.push(Expr::Extract(it.e, 0), i64t.clone(), v.span);
                    let st = self.push(Expr::Extract(it.e, 1), i64t.clone(), v.span);
                    ir_args.extend([a, st]);
                    ir_types.extend([i64t.clone(), i64t.clone()]);
                    cparams.push(format!("long long a{j}, long long s{j}"));
                    cargs.push(format!("pyd_it<{}>(a{j}, s{j})", c_type(s)?));
                    sig.push(format!("it_{}", s.name()));
                    elems.push(Some(s));
                }
                P::Elem(_) | P::Init => {
                    let target = match p {
                        P::Elem(k) => elems.get(*k).copied().flatten(),
                        _ => match v.ty {
                            Type::Scalar(s) if v.weak.is_none() => Some(s),
                            Type::Scalar(_) => v.weak.map(|w| self.s.defaults.of(w)),
                            _ => None,
                        },
                    };
                    let Some(s) = target.filter(|s| c_type(*s).is_some()) else {
                        self.error(
                            Code::E0207,
                            v.span,
                            format!(
                                "argument {} of `{full}` must be a number, not {}",
                                j + 2,
                                v.ty
                            ),
                        );
                        return None;
                    };
                    if v.ty.as_scalar().is_none() {
                        self.error(
                            Code::E0207,
                            v.span,
                            format!(
                                "argument {} of `{full}` must be a number, not {}",
                                j + 2,
                                v.ty
                            ),
                        );
                        return None;
                    }
                    let e = self.convert(v, s)?;
                    ir_args.push(e);
                    ir_types.push(Type::Scalar(s));
                    cparams.push(format!("{} v{j}", c_type(s)?));
                    cargs.push(format!("v{j}"));
                    sig.push(format!("v_{}", s.name()));
                    elems.push(None);
                    if *p == P::Init {
                        init_ty = Some(s);
                    }
                }
            }
        }
        let call = format!("thrust::{name}(thrust::seq, {})", cargs.join(", "));
        let (ret_ty, cret, body) = match ret {
            R::None => (Type::None, "void", format!("{call};")),
            R::It(_) => (i64t.clone(), "long long", format!("return {call}.addr();")),
            // The two iterators whole, so that the call's value is the pair itself: taking
            // its parts from one value evaluates the call once (an in-place algorithm such as
            // `unique_by_key` must not run twice).
            R::Pair(k1, k2) => (
                Type::Tuple(vec![
                    iter_type(IterKind::Array, elems[k1]?),
                    iter_type(IterKind::Array, elems[k2]?),
                ]),
                "pyd_iters",
                format!(
                    "auto r = {call};\n  return pyd_iters{{r.first.addr(), s{k1}, r.second.addr(), s{k2}}};"
                ),
            ),
            R::Bool => (
                Type::Scalar(Scalar::Int32),
                "int",
                format!("return {call} ? 1 : 0;"),
            ),
            R::Count => (i64t.clone(), "long long", format!("return {call};")),
            R::ElemOf(k) => {
                let s = elems[k]?;
                (Type::Scalar(s), c_type(s)?, format!("return {call};"))
            }
            R::InitType => {
                let s = init_ty?;
                (Type::Scalar(s), c_type(s)?, format!("return {call};"))
            }
        };
        let symbol = format!("__pyd_thrust_{name}__{}", sig.join("__"));
        let definition = format!(
            "extern \"C\" __device__ {cret} {symbol}({}) {{\n  {body}\n}}",
            cparams.join(", ")
        );
        let h = self.shim_function(&symbol, definition, &ir_types, &ret_ty, span);
        let callee_ret = self.s.functions[h].ret.clone();
        let e = self.push(Expr::Call(h, ir_args), callee_ret, span);
        // Turn the C result back into pydevice values.
        let it_at = |cx: &mut Self, addr: Handle<Expr>, k: usize| -> Option<Val> {
            let s = elems[k]?;
            let stride_e = stride_of(cx, &vals, k, span)?;
            let ty = iter_type(IterKind::Array, s);
            let t = cx.push(Expr::Tuple(vec![addr, stride_e]), ty.clone(), span);
            Some(cx.val(t, ty, span))
        };
        match ret {
            R::None => Some(self.val(e, Type::None, span)),
            R::It(k) => it_at(self, e, k),
            R::Pair(..) => Some(self.val(e, ret_ty, span)),
            R::Bool => {
                let v = self.val(e, Type::Scalar(Scalar::Int32), span);
                let b = self.convert(&v, Scalar::Bool)?;
                Some(self.val(b, Type::Scalar(Scalar::Bool), span))
            }
            R::Count | R::ElemOf(_) | R::InitType => Some(self.val(e, ret_ty, span)),
        }
    }

    /// The `extern` function that stands for a shim, declared once per symbol.
    fn shim_function(
        &mut self,
        symbol: &str,
        definition: String,
        params: &[Type],
        ret: &Type,
        span: Span,
    ) -> Handle<Function> {
        if let Some(h) = self.s.shim_symbols.get(symbol) {
            return *h;
        }
        let mut locals = Arena::default();
        for (i, t) in params.iter().enumerate() {
            locals.append(
                Local {
                    name: format!("p{i}"),
                    ty: t.clone(),
                },
                span,
            );
        }
        let func = Function {
            name: symbol.to_string(),
            symbol: symbol.to_string(),
            kind: FunctionKind::Device,
            interop: true,
            external: true,
            locals,
            params: params.len(),
            ret: ret.clone(),
            exprs: Arena::default(),
            types: Vec::new(),
            body: Vec::new(),
            span,
            expansion: false,
        };
        let h = self.s.functions.append(func, span);
        self.s.shim_symbols.insert(symbol.to_string(), h);
        self.s.cuda_shims.push((h, definition));
        h
    }
}

/// The stride of iterator argument `k` of a call, read again from its value.
fn stride_of(cx: &mut FnCx<'_, '_>, vals: &[Val], k: usize, span: Span) -> Option<Handle<Expr>> {
    let v = vals.get(k)?;
    let i64t = Type::Scalar(Scalar::Int64);
    if let Type::Array(_) = v.ty {
        return Some(cx.push(Expr::ArrayProp(v.e, ArrayProp::Stride(0)), i64t, span));
    }
    Some(cx.push(Expr::Extract(v.e, 1), i64t, span))
}
