//! Calls: builtins (conversions, `len`, `abs`, `min`/`max`, thread positioning) and device
//! functions, which are instantiated for their argument types.

use super::*;
use crate::diag::Code;
use crate::front::builtins::OperatorUnary;
use crate::front::builtins::table::{self, Rule};

/// The name diagnostics use for a builtin (the table's first spelling of it).
pub(super) fn builtin_name(b: Builtin) -> String {
    crate::front::builtins::table::name(b)
}

impl FnCx<'_, '_> {
    pub(super) fn call(&mut self, c: &ast::ExprCall) -> Value {
        if let Some(v) = self.thrust_call(c) {
            return v.map(Value::Val).unwrap_or(Value::Err);
        }
        if let Some(v) = self.cub_call(c) {
            return v.map(Value::Val).unwrap_or(Value::Err);
        }
        let fspan = sp(c.func.as_ref());
        let callee = match (self.callee_item(&c.func), c.func.as_ref()) {
            (Some(item), _) => {
                if let Item::Builtin(b) = item {
                    self.device_only_use(b, fspan);
                }
                Value::Item(item, fspan)
            }
            (None, ast::Expr::Attribute(a)) => {
                // A method call on a value (`ref.add(1)`, `arr.view(float32)`), or an
                // attribute of a namespace.
                let base = match self.place_or_value(&a.value) {
                    // A constant array's methods (`TABLE.sum()`).
                    Value::Item(Item::Const(k @ Const::Array(_)), s) => {
                        match self.const_val(&k, s) {
                            Some(v) => Value::Val(v),
                            None => Value::Err,
                        }
                    }
                    other => other,
                };
                match base {
                    // `r.dtype(x)` of an atomic reference or `v.dtype(x)` of a vector: a
                    // conversion to the element type.
                    Value::Val(Val {
                        ty:
                            Type::Ref {
                                dtype: s,
                                record: None,
                                ..
                            }
                            | Type::Vector { elem: s, .. },
                        ..
                    }) if a.attr.id.as_str() == "dtype" => {
                        return self
                            .builtin_call(Builtin::Scalar(s), c)
                            .map(Value::Val)
                            .unwrap_or(Value::Err);
                    }
                    Value::Val(v) => {
                        return self
                            .method_call(v, a.attr.id.as_str(), c)
                            .map(Value::Val)
                            .unwrap_or(Value::Err);
                    }
                    base => self.attr_of(base, a.attr.id.as_str(), fspan),
                }
            }
            (None, _) => self.expr(&c.func),
        };
        let v = match callee {
            Value::Err => None,
            Value::Item(Item::Function(idx), _) => self.user_call(idx, c, None),
            Value::Item(Item::Struct(idx), _) => self.struct_new(idx, c),
            Value::Item(Item::Builtin(b), _) => self.builtin_call(b, c),
            Value::Item(Item::Const(_), s) | Value::Item(Item::Namespace(_), s) => {
                self.error(Code::E0202, s, "this is not callable");
                None
            }
            Value::Item(other, s) => {
                self.not_a_value(&other, s);
                None
            }
            Value::Val(v) => {
                self.error(Code::E0202, v.span, format!("{} is not callable", v.ty));
                None
            }
        };
        v.map(Value::Val).unwrap_or(Value::Err)
    }

    pub(super) fn args(
        &mut self,
        c: &ast::ExprCall,
        name: &str,
        min: usize,
        max: usize,
    ) -> Option<Vec<Val>> {
        let span = sp(c);
        if let Some(k) = c.arguments.keywords.first() {
            self.error(
                Code::E0107,
                sp(k),
                format!("`{name}` takes no keyword arguments"),
            );
            return None;
        }
        let n = c.arguments.args.len();
        if n < min || n > max {
            let want = if min == max {
                format!("{min}")
            } else if max == usize::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            };
            self.error(
                Code::E0107,
                span,
                format!(
                    "`{name}` takes {want} argument{}, but {n} {} given",
                    if want == "1" { "" } else { "s" },
                    if n == 1 { "was" } else { "were" }
                ),
            );
            return None;
        }
        let mut out = Vec::new();
        for a in c.arguments.args.iter() {
            let v = self.expr(a);
            out.push(self.value_of(v)?);
        }
        Some(out)
    }

    pub(super) fn builtin_call(&mut self, b: Builtin, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let name = builtin_name(b);
        let d = self.s.defaults;
        let entry = table::entry(b);
        // One arm per typing rule; the table says which rule types `b`.
        match entry.rule() {
            Rule::Cmath => {
                let Builtin::Cmath(f) = b else {
                    return self.table_mismatch(b, span);
                };
                self.cmath_call(f, c)
            }
            Rule::NpReduce => {
                let Builtin::NpReduce(r) = b else {
                    return self.table_mismatch(b, span);
                };
                let a = self.bind(c, &format!("np.{}", r.name()), &["a"], 1)?;
                let v = self.eval(a[0]?)?;
                self.reduce_call(r, v, span)
            }
            Rule::UnrollOnly if b == Builtin::StaticRange => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0283,
                        span,
                        "`static_range(...)` can only be the iterable of a `for` loop",
                    )
                    .with_note("write `for i in device.static_range(n):`"),
                );
                None
            }
            Rule::UnrollOnly => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0307,
                        span,
                        "`literal_unroll(...)` can only be the iterable of a `for` loop",
                    )
                    .with_note("write `for x in literal_unroll(t):`"),
                );
                None
            }
            Rule::Conversion => {
                let target = match b {
                    Builtin::Scalar(s) => s,
                    Builtin::Int => d.int,
                    Builtin::Float => d.float,
                    Builtin::Complex => d.complex,
                    Builtin::Bool => Scalar::Bool,
                    _ => return self.table_mismatch(b, span),
                };
                if target.is_complex() {
                    return self.complex_new(target, c);
                }
                // `float("nan")`, `float("-inf")`, `float("1.5")`: Python's float of a
                // constant text is a constant number (numba folds it the same way).
                if target.is_float()
                    && c.arguments.keywords.is_empty()
                    && let [ast::Expr::StringLiteral(k)] = &*c.arguments.args
                {
                    let text = k.value.to_str();
                    let Some(f) = python_float_text(text) else {
                        self.error(
                            Code::E0202,
                            sp(k),
                            format!("`{name}({text:?})`: the text is not a number Python reads"),
                        );
                        return None;
                    };
                    let e = self.literal(&Const::Float(f), target, span)?;
                    return Some(self.val(e, Type::Scalar(target), span));
                }
                let mut args = self.args(c, &name, 0, 1)?;
                let Some(v) = args.pop() else {
                    let zero = if target.is_float() {
                        Const::Float(0.0)
                    } else if target == Scalar::Bool {
                        Const::Bool(false)
                    } else {
                        Const::Int(0)
                    };
                    let e = self.literal(&zero, target, span)?;
                    return Some(self.val(e, Type::Scalar(target), span));
                };
                self.conversion(v, target, span)
            }
            Rule::StringOnly => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0202,
                        span,
                        format!("`{name}()` is a string, and strings are not device values"),
                    )
                    .with_note(format!(
                        "compare it with a string literal: `if {name}() == \"itanium\":` is decided when compiling"
                    )),
                );
                None
            }
            Rule::TupleOf => {
                // `tuple(x)`: a tuple is itself; a vector (`block_dim`, a `Dim3`) gives the
                // tuple of its elements. The argument is read once per element, so it may
                // not call anything.
                let arg = c.arguments.args.first();
                let v = self.args(c, &name, 1, 1)?.pop()?;
                match v.ty.clone() {
                    Type::Tuple(_) => Some(v),
                    Type::Vector { elem, len } => {
                        let arg = arg?;
                        if contains_call(arg) {
                            self.error(
                                Code::E0202,
                                v.span,
                                "`tuple(...)` of a vector takes a name or an attribute: assign the value to a local first",
                            );
                            return None;
                        }
                        let mut es = vec![v.e];
                        for _ in 1..len {
                            let again = self.expr(arg);
                            es.push(self.value_of(again)?.e);
                        }
                        let es: Vec<_> = es
                            .into_iter()
                            .enumerate()
                            .map(|(k, e)| {
                                self.push(Expr::Extract(e, k as u32), Type::Scalar(elem), v.span)
                            })
                            .collect();
                        let ty = Type::Tuple(vec![Type::Scalar(elem); len as usize]);
                        let e = self.push(Expr::Tuple(es), ty.clone(), span);
                        Some(Val {
                            nonneg: elem.kind() == Kind::UInt,
                            ..self.val(e, ty, span)
                        })
                    }
                    other => {
                        self.error(
                            Code::E0202,
                            v.span,
                            format!("`tuple(...)` takes a tuple or a vector, not {other}"),
                        );
                        None
                    }
                }
            }
            Rule::Len => {
                let v = self.args(c, &name, 1, 1)?.pop()?;
                match &v.ty {
                    Type::Array(at) if at.ndim == 0 => {
                        // NumPy: "len() of unsized object".
                        self.error(
                            Code::E0202,
                            v.span,
                            "a zero-dimensional array has no length",
                        );
                        None
                    }
                    Type::Array(_) => {
                        let t = Type::Scalar(Scalar::Int64);
                        let e =
                            self.push(Expr::ArrayProp(v.e, ArrayProp::Shape(0)), t.clone(), span);
                        let mut r = self.val(e, t, span);
                        r.nonneg = true;
                        Some(r)
                    }
                    Type::Tuple(ts) => self.const_val(&Const::Int(ts.len() as i128), span),
                    Type::Vector { len, .. } => self.const_val(&Const::Int(i128::from(*len)), span),
                    other => {
                        self.error(Code::E0202, v.span, format!("{other} has no length"));
                        None
                    }
                }
            }
            Rule::Abs => {
                let v = self.args(c, &name, 1, 1)?.pop()?;
                let Some(s) = v.ty.as_scalar() else {
                    self.error(
                        Code::E0202,
                        v.span,
                        format!("`abs` needs a number, found {}", v.ty),
                    );
                    return None;
                };
                if s.is_complex() {
                    return self.complex_abs(v, span);
                }
                let (v, s) = if s.is_fp8() {
                    // fp8 is a storage format: arithmetic reads it as float32.
                    let e = self.convert(&v, Scalar::Float32)?;
                    let t = Type::Scalar(Scalar::Float32);
                    (Val { e, ty: t, ..v }, Scalar::Float32)
                } else {
                    (v, s)
                };
                if let (Some(k), true) = (&v.konst, v.weak.is_some() || s == Scalar::Bool) {
                    let c = match k {
                        Const::Int(i) => Const::Int(i.abs()),
                        Const::Float(f) => Const::Float(f.abs()),
                        Const::Bool(b) => Const::Int(i128::from(*b)),
                        t => t.clone(),
                    };
                    return self.const_val(&c, span);
                }
                let (e, s) = if s == Scalar::Bool {
                    (self.convert(&v, d.int)?, d.int)
                } else {
                    (v.e, s)
                };
                let e = self.push(Expr::Unary(UnaryOp::Abs, e), Type::Scalar(s), span);
                Some(Val {
                    e,
                    ty: Type::Scalar(s),
                    weak: v.weak,
                    konst: None,
                    nonneg: !s.is_float(),
                    span,
                })
            }
            Rule::Pow => {
                let a = self.bind(c, "pow", &["base", "exp", "mod"], 2)?;
                if let Some(m) = a[2] {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0603,
                            sp(m),
                            "`pow(x, y, mod)` (modular power) is not supported in device code",
                        )
                        .with_note("write `(x ** y) % mod`, or a loop of modular multiplications"),
                    );
                    return None;
                }
                let x = self.eval(a[0]?)?;
                let y = self.eval(a[1]?)?;
                self.binary(BinaryOp::Pow, x, y, span)
            }
            Rule::OperatorBinary | Rule::OperatorUnary => {
                let op = match b {
                    Builtin::OperatorBinary(op) => {
                        let a = self.bind(c, &name, &["a", "b"], 2)?;
                        let x = self.eval(a[0]?)?;
                        let y = self.eval(a[1]?)?;
                        return self.binary(op, x, y, span);
                    }
                    Builtin::OperatorUnary(op) => op,
                    _ => return self.table_mismatch(b, span),
                };
                let a = self.bind(c, &name, &["a"], 1)?;
                let x = self.eval(a[0]?)?;
                let op = match op {
                    OperatorUnary::Neg => ast::UnaryOp::USub,
                    OperatorUnary::Pos => ast::UnaryOp::UAdd,
                    OperatorUnary::Invert => ast::UnaryOp::Invert,
                    OperatorUnary::Not => ast::UnaryOp::Not,
                };
                self.unary(op, x, span)
            }
            Rule::MinMax => {
                let mut vals = self.args(c, &name, 1, usize::MAX)?;
                if vals.len() == 1 {
                    let v = vals.pop()?;
                    let Type::Tuple(ts) = &v.ty else {
                        self.error(
                            Code::E0202,
                            v.span,
                            format!("`{name}` of one argument needs a tuple, found {}", v.ty),
                        );
                        return None;
                    };
                    if ts.is_empty() {
                        self.error(Code::E0202, v.span, format!("`{name}` of an empty tuple"));
                        return None;
                    }
                    for (i, t) in ts.clone().into_iter().enumerate() {
                        let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), v.span);
                        let e = self.push(Expr::Extract(base, i as u32), t.clone(), v.span);
                        vals.push(self.val(e, t, v.span));
                    }
                }
                let op = if b == Builtin::Min {
                    BinaryOp::Min
                } else {
                    BinaryOp::Max
                };
                let mut acc = vals.remove(0);
                for v in vals {
                    if self.unsigned_sign_test(op, &acc, &v, span) {
                        return None;
                    }
                    acc = self.binary(op, acc, v, span)?;
                }
                Some(acc)
            }
            Rule::Positions => match b {
                Builtin::Tid | Builtin::GridSize => self.positions(b, c, false),
                // cuda.grid(n) is tid(n) as int64 (numba's intp), computed in int64.
                Builtin::NumbaGrid => self.positions(Builtin::Tid, c, true),
                Builtin::NumbaGridsize => self.positions(Builtin::GridSize, c, true),
                _ => self.table_mismatch(b, span),
            },
            rule @ (Rule::Nullary
            | Rule::LocalMemory
            | Rule::DynamicShared
            | Rule::SyncPredicate
            | Rule::Fence
            | Rule::AtomicRef
            | Rule::SyncWarp
            | Rule::Vote
            | Rule::Shfl
            | Rule::Match
            | Rule::Bits
            | Rule::Declared
            | Rule::FloatOp
            | Rule::WarpMask
            | Rule::Math
            | Rule::MathPair
            | Rule::Random) => self.device_call(rule, entry, b, c),
            Rule::Tensor | Rule::TensorInPlace => self.tensor_call(b, c),
            Rule::Vector => {
                let Builtin::Vector(elem, len) = b else {
                    return self.table_mismatch(b, span);
                };
                self.vector_new(elem, len, c)
            }
            rule @ (Rule::NumbaSyncthreads
            | Rule::NumbaVote
            | Rule::NumbaAtomic
            | Rule::Fp16
            | Rule::CacheHint
            | Rule::ConstArrayLike
            | Rule::Round
            | Rule::NumbaFence
            | Rule::Selp
            | Rule::ToFixedTuple
            | Rule::CupyxSharedMemory) => self.numba_call(rule, b, c),
            Rule::Cg => self.cg_call(b, c),
            rule @ (Rule::ClusterBarrier | Rule::MapSharedRank) => {
                self.cluster_call(rule, entry, b, c)
            }
            Rule::Hopper => self.hopper_call(entry, b, c),
            Rule::Asm => self.asm_call(entry, c),
            Rule::DeviceLaunch => self.device_launch(c),
            Rule::TargetOnly => {
                self.diags.push(
                    Diagnostic::error(Code::E0410, span, format!("`{name}(...)` may only appear in the whole condition of an `if` statement"))
                        .with_note("write `if target(is_device):`; the condition must be a constant target description"),
                );
                None
            }
            Rule::AlignType => {
                self.diags.push(
                    Diagnostic::error(Code::E0423, span, "`align(t, n)` is a type: it can be a @struct field's type or an array's dtype, not a value")
                        .with_note("declare a field `x: device.align(float32, 16)`, or `device.local_array(n, device.align(float32, 16))`"),
                );
                None
            }
            Rule::AtomicField => {
                self.diags.push(
                    Diagnostic::error(Code::E0261, span, "an `Atomic` object is made only by assigning it to a name, or as the dtype of an array")
                        .with_note("write `c = device.Atomic(dtype)` and use `c`, or `device.shared_array(n, device.Atomic(dtype))`"),
                );
                None
            }
            Rule::PrintOnly => {
                self.error(
                    Code::E0308,
                    span,
                    "`print(...)` is a statement here: its value (`None`) cannot be used",
                );
                None
            }
            Rule::LoopOnly => {
                self.error(
                    Code::E0304,
                    span,
                    "`range` can only be used as the iterable of a `for` loop",
                );
                None
            }
            Rule::NotCallable => {
                self.error(
                    Code::E0202,
                    sp(c.func.as_ref()),
                    format!("`{name}` is not callable"),
                );
                None
            }
        }
    }

    /// A builtin whose row names a typing rule that does not type it: a table error, which
    /// `front::builtins::table`'s tests and the fixture coverage test rule out.
    pub(super) fn table_mismatch(&mut self, b: Builtin, span: Span) -> Option<Val> {
        self.error(
            Code::E0999,
            span,
            format!(
                "internal error: the builtin table types `{}` with a rule that does not apply to it",
                builtin_name(b)
            ),
        );
        None
    }

    /// `tid(n)` / `grid_size(n)` (`b`), as int32 components; `wide`: as int64 ones, computed
    /// in int64 (numba's `cuda.grid`/`cuda.gridsize`).
    pub(super) fn positions(&mut self, b: Builtin, c: &ast::ExprCall, wide: bool) -> Option<Val> {
        let span = sp(c);
        let name = builtin_name(b);
        let v = self.args(c, &name, 1, 1)?.pop()?;
        let integer = v.ty.as_scalar().is_some_and(|s| s.is_integer());
        let n = match v.konst.as_ref().and_then(|k| k.as_int()) {
            Some(n @ 1..=3) if integer => n as usize,
            // A tuple, a float, a string: a type error (CuPy's TypeError), not a bad count.
            _ if !integer => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("`{name}` takes an integer 1, 2 or 3, not {}", v.ty),
                );
                return None;
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0210,
                        v.span,
                        format!("`{name}` needs a constant 1, 2 or 3"),
                    )
                    .with_label("ndims must satisfy 0 < ndims <= 3"),
                );
                return None;
            }
        };
        let u32t = Type::Scalar(Scalar::UInt32);
        // numba's `cuda.grid`/`gridsize` are int64 computed without overflow (`wide`).
        let out_t = Type::Scalar(if wide { Scalar::Int64 } else { Scalar::Int32 });
        let at = |cx: &mut Self, e: Handle<Expr>| {
            if wide {
                cx.push(Expr::Cast(e), out_t.clone(), span)
            } else {
                e
            }
        };
        let ct = if wide { out_t.clone() } else { u32t.clone() };
        let mut comps = Vec::new();
        for axis in [Axis::X, Axis::Y, Axis::Z].into_iter().take(n) {
            let (a, bb) = if b == Builtin::Tid {
                (Intrinsic::BlockIdx(axis), Intrinsic::BlockDim(axis))
            } else {
                (Intrinsic::GridDim(axis), Intrinsic::BlockDim(axis))
            };
            // `tid` reads the block size before the block index, as nvcc's
            // `blockDim.x * blockIdx.x + threadIdx.x` does: ptxas then reads the index with
            // S2R and the size with ULDC, where the other order gave S2UR and LDC and a
            // scan_block 1.8% slower on the H100 (bench/NOTES.md, "Session 17").
            let (x, y) = if b == Builtin::Tid {
                let y = self.push(Expr::Intrinsic(bb, vec![]), u32t.clone(), span);
                let y = at(self, y);
                let x = self.push(Expr::Intrinsic(a, vec![]), u32t.clone(), span);
                (at(self, x), y)
            } else {
                let x = self.push(Expr::Intrinsic(a, vec![]), u32t.clone(), span);
                let x = at(self, x);
                let y = self.push(Expr::Intrinsic(bb, vec![]), u32t.clone(), span);
                (x, at(self, y))
            };
            let mut e = if b == Builtin::Tid {
                self.push(Expr::Binary(BinaryOp::Mul, y, x), ct.clone(), span)
            } else {
                self.push(Expr::Binary(BinaryOp::Mul, x, y), ct.clone(), span)
            };
            if b == Builtin::Tid {
                let t = self.push(
                    Expr::Intrinsic(Intrinsic::ThreadIdx(axis), vec![]),
                    u32t.clone(),
                    span,
                );
                let t = at(self, t);
                e = self.push(Expr::Binary(BinaryOp::Add, e, t), ct.clone(), span);
            }
            comps.push(if wide {
                e
            } else {
                self.push(Expr::Cast(e), out_t.clone(), span)
            });
        }
        let (e, ty) = if n == 1 {
            (comps[0], out_t)
        } else {
            let ty = Type::Tuple(vec![out_t; n]);
            (self.push(Expr::Tuple(comps), ty.clone(), span), ty)
        };
        let mut r = self.val(e, ty, span);
        r.nonneg = true;
        Some(r)
    }

    /// `T(x)`: an explicit conversion, which may truncate or wrap.
    pub(super) fn conversion(&mut self, v: Val, target: Scalar, span: Span) -> Option<Val> {
        let Some(src) = v.ty.as_scalar() else {
            let mut d = Diagnostic::error(
                Code::E0207,
                v.span,
                format!("cannot convert {} to {target}", v.ty),
            );
            if matches!(v.ty, Type::Ref { .. }) {
                d = d.with_note(
                    "an atomic object or reference is not a number: read its value with `.load()`",
                );
            }
            self.diags.push(d);
            return None;
        };
        if src.is_complex() && !target.is_complex() && target != Scalar::Bool {
            let what = if v.weak.is_some() {
                "a Python complex".to_string()
            } else {
                src.to_string()
            };
            self.diags.push(complex_to_real(v.span, &what, target));
            return None;
        }
        if let (Some(k), true) = (&v.konst, v.weak.is_some() || src == Scalar::Bool) {
            let c = match (k, target.kind()) {
                (c, Kind::Bool) => {
                    Const::Bool(c.as_complex().is_some_and(|(r, i)| r != 0.0 || i != 0.0))
                }
                (Const::Float(f), Kind::Int | Kind::UInt) => {
                    if !f.is_finite() {
                        self.error(
                            Code::E0204,
                            v.span,
                            format!("cannot convert {f} to {target}"),
                        );
                        return None;
                    }
                    Const::Int(f.trunc() as i128)
                }
                (Const::Bool(b), Kind::Float) => Const::Float(f64::from(u8::from(*b))),
                (Const::Int(i), Kind::Float) => Const::Float(*i as f64),
                (Const::Bool(b), _) => Const::Int(i128::from(*b)),
                (c, _) => c.clone(),
            };
            let e = self.literal(&c, target, v.span)?;
            let mut r = self.val(e, Type::Scalar(target), span);
            r.konst = Some(c.clone());
            r.nonneg = c.as_int().is_some_and(|i| i >= 0) && !target.is_float();
            return Some(r);
        }
        let e = if target == Scalar::Bool {
            self.truthy(v.clone())?
        } else if src == target {
            v.e
        } else {
            self.push(Expr::Cast(v.e), Type::Scalar(target), span)
        };
        let mut r = self.val(e, Type::Scalar(target), span);
        r.nonneg |=
            v.nonneg && src.is_integer() && target.is_integer() && target.bits() >= src.bits();
        Some(r)
    }

    /// A call of a module function; `self_arg` is the receiver of a method call.
    pub(super) fn user_call(
        &mut self,
        idx: usize,
        c: &ast::ExprCall,
        self_arg: Option<Val>,
    ) -> Option<Val> {
        let span = sp(c);
        let m = self.s.m;
        let decl = &m.functions[idx];
        match decl.kind {
            None => {
                self.diags.push(
                    not_device_function(decl).with_secondary(span, "called from device code here"),
                );
                return None;
            }
            Some(FunctionKind::Kernel) => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0109,
                        span,
                        format!("kernel `{}` cannot be called from device code", decl.name),
                    )
                    .with_secondary(decl.name_span, "defined as a kernel here")
                    .with_note("launch kernels from the host; share code through a `@device.func`"),
                );
                return None;
            }
            Some(FunctionKind::Device) => {}
        }
        let def = m.def(decl);
        let params: Vec<&ast::ParameterWithDefault> = def
            .parameters
            .posonlyargs
            .iter()
            .chain(def.parameters.args.iter())
            .collect();
        let mut slots: Vec<Option<Val>> = vec![None; params.len()];
        let first = usize::from(self_arg.is_some());
        if let Some(v) = self_arg {
            if params.is_empty() {
                self.error(
                    Code::E0107,
                    span,
                    format!("method `{}` needs a `self` parameter", decl.name),
                );
                return None;
            }
            slots[0] = Some(v);
        }
        if c.arguments.args.len() + first > params.len() {
            self.diags.push(
                Diagnostic::error(
                    Code::E0107,
                    span,
                    format!(
                        "`{}` takes {} argument{}, but {} were given",
                        decl.name,
                        params.len(),
                        if params.len() == 1 { "" } else { "s" },
                        c.arguments.args.len()
                    ),
                )
                .with_secondary(decl.name_span, "defined here"),
            );
            return None;
        }
        let mut statics: Statics = vec![None; params.len()];
        for (i, a) in c.arguments.args.iter().enumerate() {
            if matches!(a, ast::Expr::NoneLiteral(_)) {
                statics[i + first] = Some(Item::NoneArg);
                continue;
            }
            let v = self.expr(a);
            if let Value::Item(item, _) = &v
                && self.s.m.rules().static_arguments
                && is_static_item(item)
            {
                statics[i + first] = Some(item.clone());
                continue;
            }
            slots[i + first] = Some(self.value_of(v)?);
        }
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                self.error(
                    Code::E0107,
                    sp(k),
                    "`**` arguments are not supported in device code",
                );
                return None;
            };
            let Some(pos) = params.iter().position(|p| p.parameter.name.id == name.id) else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0107,
                        sp(k),
                        format!("`{}` has no parameter named `{}`", decl.name, name.id),
                    )
                    .suggesting(
                        name.id.as_str(),
                        params.iter().map(|p| p.parameter.name.id.as_str()),
                    )
                    .with_secondary(decl.name_span, "defined here"),
                );
                return None;
            };
            if slots[pos].is_some() || statics[pos].is_some() {
                self.error(
                    Code::E0107,
                    sp(k),
                    format!("argument `{}` is given twice", name.id),
                );
                return None;
            }
            if matches!(k.value, ast::Expr::NoneLiteral(_)) {
                statics[pos] = Some(Item::NoneArg);
                continue;
            }
            let v = self.expr(&k.value);
            if let Value::Item(item, _) = &v
                && self.s.m.rules().static_arguments
                && is_static_item(item)
            {
                statics[pos] = Some(item.clone());
                continue;
            }
            slots[pos] = Some(self.value_of(v)?);
        }
        // `ConstExpr` parameters take constant expressions only, passed at compile time
        // (docs/semantics.md §5.6).
        for (pos, hint) in m.const_hints(idx).into_iter().enumerate() {
            let Some(hint) = hint else { continue };
            let pname = params[pos].parameter.name.id.as_str();
            let (given, at) = match (&statics[pos], &slots[pos]) {
                (Some(Item::Const(c)), _) => (Some(c.clone()), span),
                (None, Some(v)) => (v.konst.clone(), v.span),
                (None, None) => continue, // missing: reported below
                (Some(_), _) => (None, span),
            };
            let Some(c) = given else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0217,
                        at,
                        format!("parameter `{pname}` of `{}` is `ConstExpr`: its argument must be a constant expression", decl.name),
                    )
                    .with_label("not a constant expression")
                    .with_secondary(sp(&params[pos].parameter), "declared `ConstExpr` here")
                    .with_note("pass a literal, a module-level constant, or a local assigned once to a constant expression"),
                );
                return None;
            };
            match m.const_for_hint(hint, &c) {
                Ok(c) => {
                    statics[pos] = Some(Item::Const(c));
                    slots[pos] = None;
                }
                Err(want) => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0217,
                            at,
                            format!("parameter `{pname}` of `{}` takes {want}", decl.name),
                        )
                        .with_label("this constant does not fit the hint"),
                    );
                    return None;
                }
            }
        }
        let mut args = Vec::new();
        // For each run-time argument, its parameter's position.
        let mut positions = Vec::new();
        for (i, (p, slot)) in params.iter().zip(slots).enumerate() {
            if statics[i].is_some() {
                continue;
            }
            let Some(v) = slot else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0107,
                        span,
                        format!(
                            "missing argument `{}` in call of `{}`",
                            p.parameter.name.id, decl.name
                        ),
                    )
                    .with_secondary(decl.name_span, "defined here"),
                );
                return None;
            };
            let annotated =
                p.parameter
                    .annotation
                    .as_deref()
                    .and_then(|a| match m.resolve_static(a) {
                        Some(Item::Builtin(Builtin::Scalar(s))) => Some(s),
                        Some(Item::Builtin(Builtin::Int)) => Some(self.s.defaults.int),
                        Some(Item::Builtin(Builtin::Float)) => Some(self.s.defaults.float),
                        Some(Item::Builtin(Builtin::Complex)) => Some(self.s.defaults.complex),
                        Some(Item::Builtin(Builtin::Bool)) => Some(Scalar::Bool),
                        _ => None,
                    });
            let v = match (annotated, v.weak) {
                (Some(s), Some(_)) => {
                    let e = self.convert(&v, s)?;
                    Val {
                        e,
                        ty: Type::Scalar(s),
                        weak: None,
                        ..v
                    }
                }
                _ => self.concrete(v)?,
            };
            // A `WarpMask` given to an `int32`-hinted parameter is that `int32` (the spec
            // derives `WarpMask` from `int32`; §10.1), as an `int32` local takes one.
            let v = match (annotated, &v.ty) {
                (Some(Scalar::Int32), Type::WarpMask) => {
                    let i32t = Type::Scalar(Scalar::Int32);
                    let e = self.push(Expr::Cast(v.e), i32t.clone(), v.span);
                    Val {
                        e,
                        ty: i32t,
                        weak: None,
                        konst: None,
                        ..v
                    }
                }
                _ => v,
            };
            // A tuple display given to a `tuple[...]`-hinted parameter: its number literals
            // adapt to the hinted element types, as a literal given to `x: int32` does.
            let v = match p
                .parameter
                .annotation
                .as_deref()
                .and_then(|a| m.annotation_type(a, self.s.defaults))
            {
                Some(Type::Tuple(ts))
                    if v.ty != Type::Tuple(ts.clone()) && self.literal_elements_fit(&v, &ts) =>
                {
                    let e = self.convert_tuple(&v, &ts)?;
                    Val {
                        e,
                        ty: Type::Tuple(ts),
                        weak: None,
                        konst: None,
                        ..v
                    }
                }
                _ => v,
            };
            if v.ty == Type::None {
                self.error(
                    Code::E0207,
                    v.span,
                    "`None` cannot be passed to a device function",
                );
                return None;
            }
            args.push(v);
            positions.push(i);
        }
        // numba: a device function given one explicit signature (`cuda.jit("(int64, int64)",
        // device=True)`) is compiled for those types only, and a call converts its number
        // arguments to them, unsafe casts included, as numba's device calls do (§15.3).
        if self.s.m.rules().signature_converts_arguments
            && decl.options.external.is_none()
            && let Some(sig) = decl.signature.clone().or(decl.options.signature.clone())
            && sig.len() == params.len()
        {
            for (j, v) in args.iter_mut().enumerate() {
                if let (Type::Scalar(want), Type::Scalar(_)) = (&sig[positions[j]], &v.ty)
                    && v.ty != Type::Scalar(*want)
                {
                    let e = self.convert(v, *want)?;
                    *v = Val {
                        e,
                        ty: Type::Scalar(*want),
                        weak: None,
                        konst: None,
                        nonneg: false,
                        span: v.span,
                    };
                }
            }
        }
        let mut types: Vec<Type> = args.iter().map(|v| v.ty.clone()).collect();
        if let Some(ext) = &decl.options.external {
            types = self.extern_args(decl, ext, &mut args)?;
        }
        let first_key = (idx, types.clone(), statics_key(&statics));
        let mut result = self.s.instantiate(idx, types, statics.clone(), span);
        let mut key = first_key.clone();
        // As numba's literal dispatch: where the callee fails with its constant arguments as
        // run-time values (a shape, say), it is tried again with them as compile-time ones.
        let constant: Vec<usize> = (0..args.len())
            .filter(|&j| args[j].konst.is_some())
            .collect();
        if matches!(result, Err(None)) && !constant.is_empty() && self.s.m.rules().static_arguments
        {
            let mut statics2 = statics.clone();
            for &j in &constant {
                statics2[positions[j]] = args[j].konst.clone().map(Item::Const);
            }
            let rest: Vec<Val> = (0..args.len())
                .filter(|j| !constant.contains(j))
                .map(|j| args[j].clone())
                .collect();
            let types2: Vec<Type> = rest.iter().map(|v| v.ty.clone()).collect();
            let key2 = (idx, types2.clone(), statics_key(&statics2));
            if let Ok(h) = self.s.instantiate(idx, types2, statics2, span) {
                result = Ok(h);
                key = key2;
                args = rest;
            }
        }
        self.callees.push(key);
        let h = match result {
            Ok(h) => h,
            Err(Some(d)) => {
                self.diags.push(*d);
                return None;
            }
            Err(None) => return None,
        };
        let ret = self.s.functions[h].ret.clone();
        let e = self.push(
            Expr::Call(h, args.iter().map(|v| v.e).collect()),
            ret.clone(),
            span,
        );
        Some(self.val(e, ret, span))
    }

    /// The arguments of a call of an `extern` function, converted to its declared parameter
    /// types: Python numbers adapt, arrays of any layout pass as descriptors, anything else
    /// must already have the declared type (C++ would convert silently; we do not).
    fn extern_args(
        &mut self,
        decl: &FunctionDecl,
        ext: &super::super::external::ExternDecl,
        args: &mut [Val],
    ) -> Option<Vec<Type>> {
        let mut ok = true;
        for (v, want) in args.iter_mut().zip(&ext.params) {
            if &v.ty == want {
                continue;
            }
            match (want, &v.ty) {
                (Type::Scalar(s), _) if v.weak.is_some() => {
                    let e = self.convert(v, *s)?;
                    v.e = e;
                    v.ty = want.clone();
                    v.weak = None;
                }
                (Type::Array(w), Type::Array(a))
                    if w.dtype == a.dtype && w.ndim == a.ndim && w.space == a.space => {}
                _ => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0526,
                            v.span,
                            format!(
                                "`{}` takes {want} here, but the argument is {}",
                                decl.name, v.ty
                            ),
                        )
                        .with_secondary(decl.name_span, "declared `extern` here")
                        .with_note(if matches!(want, Type::Array(_)) {
                            "the C signature is fixed by the annotations: pass a global-memory array of that dtype and rank"
                        } else {
                            "the C signature is fixed by the annotations: convert explicitly, e.g. `float32(x)`"
                        }),
                    );
                    ok = false;
                }
            }
        }
        ok.then(|| ext.params.clone())
    }

    /// `point(1, 2, z=3)`: a struct value; each argument must have its field's type (Python
    /// numbers adapt to it).
    pub(super) fn struct_new(&mut self, idx: usize, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let st = self.s.m.struct_type(idx)?.clone();
        let names: Vec<&str> = st.fields.iter().map(|(n, _)| n.as_str()).collect();
        let defaults = self
            .s
            .m
            .structs
            .get(idx)
            .map(|d| d.defaults.clone())
            .unwrap_or_default();
        let required = defaults
            .iter()
            .position(Option::is_some)
            .unwrap_or(names.len());
        let a = self.bind(c, &st.name, &names, required)?;
        let mut es = Vec::new();
        for (i, ((fname, fty), e)) in st.fields.iter().zip(a).enumerate() {
            let v = match (e, defaults.get(i).and_then(|d| d.as_ref())) {
                (Some(e), _) => {
                    let v = self.expr(e);
                    self.value_of(v)?
                }
                (None, Some(d)) => self.const_val(&d.clone(), span)?,
                (None, None) => return None,
            };
            let h = match (fty, v.weak) {
                (Type::Scalar(s), Some(_)) => self.convert(&v, *s)?,
                _ if &v.ty == fty => v.e,
                (Type::Scalar(_), None) | (_, _) => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0207,
                            v.span,
                            format!("field `{fname}` of `{}` is {fty}, not {}", st.name, v.ty),
                        )
                        .with_note("convert explicitly, e.g. `float32(x)`"),
                    );
                    return None;
                }
            };
            es.push(h);
        }
        let ty = Type::Struct(Box::new(st));
        let e = self.push(Expr::Tuple(es), ty.clone(), span);
        Some(self.val(e, ty, span))
    }
}

impl FnCx<'_, '_> {
    /// Whether a tuple display `v` differs from the number types `ts` only in elements that
    /// are number literals `ts` holds.
    fn literal_elements_fit(&self, v: &Val, ts: &[Type]) -> bool {
        let (Expr::Tuple(es), Type::Tuple(from)) = (&self.exprs[v.e], &v.ty) else {
            return false;
        };
        es.len() == ts.len()
            && es.iter().zip(from).zip(ts).all(|((e, f), t)| {
                f == t
                    || match (&self.exprs[*e], t) {
                        (Expr::Literal(l), Type::Scalar(s)) => {
                            !matches!(l, crate::ir::Literal::Bool(_))
                                && crate::ir::literal_fits(*l, *s)
                                && (s.is_float() || !matches!(l, crate::ir::Literal::Float(_)))
                        }
                        _ => false,
                    }
            })
    }
}

/// Whether a call argument that names an entity is passed at compile time, in the numba
/// dialect (see [`Statics`]):
/// dtypes, builtins such as `cuda.atomic.add`, device functions, struct types. The thread
/// positions and `lane_id`/`warp_size` are values.
fn is_static_item(item: &Item) -> bool {
    match item {
        Item::Function(_) | Item::Struct(_) => true,
        Item::Builtin(b) => !matches!(
            b,
            Builtin::LaneId
                | Builtin::WarpSize
                | Builtin::ThreadIdx
                | Builtin::BlockIdx
                | Builtin::BlockDim
                | Builtin::GridDim
                | Builtin::ClusterIdx
                | Builtin::ClusterDim
                | Builtin::BlockIdxInCluster
                | Builtin::BlockRankInCluster
                | Builtin::ClusterSize
        ),
        _ => false,
    }
}

/// The number Python's `float(text)` gives for a constant text: an optional sign, then
/// `nan`, `inf` or `infinity` (any case), or a decimal number (digits may be grouped by
/// single underscores), surrounded by whitespace; `None` for any other text.
fn python_float_text(text: &str) -> Option<f64> {
    let t = text.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    let v = match lower.as_str() {
        "nan" => f64::NAN,
        "inf" | "infinity" => f64::INFINITY,
        _ => {
            let bytes = body.as_bytes();
            // an underscore only between two digits, as Python reads numbers
            let grouped = bytes.iter().enumerate().all(|(i, &b)| {
                b != b'_'
                    || (i > 0
                        && bytes[i - 1].is_ascii_digit()
                        && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
            });
            let ok = grouped
                && !body.starts_with(['+', '-'])
                && body
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b"._eE+-".contains(&b))
                && body.bytes().any(|b| b.is_ascii_digit());
            if !ok {
                return None;
            }
            body.replace('_', "").parse::<f64>().ok()?
        }
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod float_text_tests {
    use super::python_float_text as f;

    #[test]
    fn reads_what_python_float_reads() {
        assert!(f("nan").unwrap().is_nan());
        assert!(f(" -NaN ").unwrap().is_nan());
        assert_eq!(f("inf"), Some(f64::INFINITY));
        assert_eq!(f("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(f("+1.5e3"), Some(1500.0));
        assert_eq!(f("1_000.25"), Some(1000.25));
        assert_eq!(f("-0.0").map(f64::to_bits), Some((-0.0f64).to_bits()));
        for bad in [
            "", "abc", "1__0", "_1", "1_", "1_.5", "infinit", "0x10", "--1", "+-1", ".",
        ] {
            assert_eq!(f(bad), None, "{bad:?}");
        }
    }
}
