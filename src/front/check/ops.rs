//! Operators: arithmetic, comparisons, `and`/`or`, conditional expressions, with the
//! promotion rules and constant folding.

use super::*;
use crate::diag::Code;

impl FnCx<'_, '_> {
    /// The common type of operands under the promotion rules (weak if all are weak).
    pub(super) fn common(&self, vals: &[&Val]) -> (Scalar, Option<Weak>) {
        let d = self.s.defaults;
        let mut acc: Option<(Scalar, Option<Weak>)> = None;
        for v in vals {
            let s = v.ty.as_scalar().unwrap_or(Scalar::Bool);
            acc = Some(match acc {
                None if v.weak.is_none() => (crate::types::promote::arithmetic_type(s), None),
                None => (s, v.weak),
                Some((a, aw)) => match (aw, v.weak) {
                    (Some(x), Some(y)) => {
                        let w = promote_weak_weak(x, y);
                        (d.of(w), Some(w))
                    }
                    (Some(x), None) => (promote_weak(s, x, d), None),
                    (None, Some(y)) => (promote_weak(a, y, d), None),
                    (None, None) => (promote(a, s), None),
                },
            });
        }
        acc.unwrap_or((d.int, Some(Weak::Int)))
    }

    pub(super) fn binary(&mut self, op: BinaryOp, l: Val, r: Val, span: Span) -> Option<Val> {
        if let Some(v) = self.iterator_binary(op, &l, &r, span) {
            return v;
        }
        let d = self.s.defaults;
        let (Some(ls), Some(rs)) = (l.ty.as_scalar(), r.ty.as_scalar()) else {
            let mut d = Diagnostic::error(
                Code::E0202,
                span,
                format!(
                    "unsupported operand types for `{}`: {} and {}",
                    op.symbol(),
                    l.ty,
                    r.ty
                ),
            )
            .with_secondary(l.span, format!("{}", l.ty))
            .with_secondary(r.span, format!("{}", r.ty));
            if matches!(l.ty, Type::Ref { .. }) || matches!(r.ty, Type::Ref { .. }) {
                d = d.with_note(
                    "an atomic object or reference is not a number: read its value with `.load()`",
                );
            }
            self.diags.push(d);
            return None;
        };
        let foldable = |v: &Val, s: Scalar| v.weak.is_some() || s == Scalar::Bool;
        if let (Some(a), Some(b)) = (&l.konst, &r.konst)
            && foldable(&l, ls)
            && foldable(&r, rs)
        {
            let both_bool = ls == Scalar::Bool && rs == Scalar::Bool;
            match fold_binary(op, a, b) {
                Some(Const::Int(i))
                    if both_bool
                        && matches!(
                            op,
                            BinaryOp::BitAnd
                                | BinaryOp::BitOr
                                | BinaryOp::BitXor
                                | BinaryOp::Min
                                | BinaryOp::Max
                        ) =>
                {
                    return self.const_val(&Const::Bool(i != 0), span);
                }
                Some(c) => return self.const_val(&c, span),
                None => {
                    let zero = b.as_complex() == Some((0.0, 0.0));
                    if matches!(op, BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::Mod) && zero {
                        self.error(
                            Code::E0208,
                            span,
                            "division by zero in a constant expression",
                        );
                        return None;
                    }
                    if a.as_int().is_some() && b.as_int().is_some() {
                        self.error(Code::E0204, span, "this constant expression overflows");
                        return None;
                    }
                    // Not foldable (e.g. `&` on floats): the general rules report it.
                }
            }
        }
        let (mut common, mut weak) = self.common(&[&l, &r]);
        use BinaryOp::*;
        if self.s.m.rules().widen_integer_arithmetic
            && weak.is_none()
            && common.is_integer()
            && common.bits() < 64
            && matches!(
                op,
                Add | AddNoWrap
                    | Sub
                    | Mul
                    | FloorDiv
                    | Mod
                    | Pow
                    | BitAnd
                    | BitOr
                    | BitXor
                    | Shl
                    | Shr
            )
        {
            // numba (NBEP 1): integer operations widen to intp, signed if either operand is
            // (a Python int is an intp constant): `uint32 * uint32` is a uint64 and
            // `uint32 + 1` an int64, where NumPy would keep 32 bits.
            let signed = |v: &Val, s: Scalar| v.weak == Some(Weak::Int) || s.is_signed();
            common = if signed(&l, ls) || signed(&r, rs) {
                Scalar::Int64
            } else {
                Scalar::UInt64
            };
        }
        if common.is_complex() {
            return self.complex_binary(op, l, r, common, weak, span);
        }
        let result;
        match op {
            Add | AddNoWrap | Sub | Mul | FloorDiv | Mod | Pow | Min | Max => {
                if common == Scalar::Bool && !matches!(op, Min | Max) {
                    common = d.int;
                }
                result = common;
            }
            Div => {
                if !common.is_float() && !common.is_complex() {
                    common = if common.bits() == 64 {
                        Scalar::Float64
                    } else {
                        d.float
                    };
                    weak = weak.map(|_| Weak::Float);
                }
                result = common;
            }
            BitAnd | BitOr | BitXor | Shl | Shr => {
                if common.is_float() {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0202,
                            span,
                            format!(
                                "`{}` needs integer operands, found {} and {}",
                                op.symbol(),
                                l.ty,
                                r.ty
                            ),
                        )
                        .with_note("convert with `int32(x)` (or another integer type) first"),
                    );
                    return None;
                }
                if common == Scalar::Bool && matches!(op, Shl | Shr) {
                    common = d.int;
                }
                result = common;
            }
            Eq | Ne | Lt | Le | Gt | Ge => {
                // A Python int outside the typed operand's range still compares correctly
                // (NumPy 2: `uint8(3) < -1` is False): compare in a wider type.
                let outside = |v: &Val| {
                    v.weak.is_some()
                        && v.konst
                            .as_ref()
                            .and_then(|c| c.as_int())
                            .is_some_and(|i| !ir::literal_fits(Literal::Int(i), common))
                };
                if common.is_integer() && (outside(&l) || outside(&r)) {
                    common = promote(common, Scalar::Int64);
                }
                result = Scalar::Bool;
                weak = None;
            }
        }
        if op == Pow
            && common.is_integer()
            && let Some(c) = r.konst.as_ref().and_then(|c| c.as_int())
            && c < 0
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0209,
                    r.span,
                    "integers to negative integer powers are not allowed",
                )
                .with_note("use a float base, e.g. `2.0 ** -1`"),
            );
            return None;
        }
        let a = self.convert(&l, common)?;
        let b = self.convert(&r, common)?;
        let e = self.push(Expr::Binary(op, a, b), Type::Scalar(result), span);
        let nonneg = result.kind() == Kind::UInt
            || (result.is_signed()
                && match op {
                    Add | AddNoWrap | Mul | FloorDiv | Min | Pow | BitOr | BitXor => {
                        l.nonneg && r.nonneg
                    }
                    Max | BitAnd => l.nonneg || r.nonneg,
                    Mod => r.nonneg,
                    Shr => l.nonneg,
                    _ => false,
                });
        Some(Val {
            e,
            ty: Type::Scalar(result),
            weak,
            konst: None,
            nonneg,
            span,
        })
    }

    pub(super) fn unary(&mut self, op: ast::UnaryOp, v: Val, span: Span) -> Option<Val> {
        let d = self.s.defaults;
        let Some(mut s) = v.ty.as_scalar() else {
            self.error(
                Code::E0202,
                span,
                format!("unsupported operand type for `{}`: {}", op.as_str(), v.ty),
            );
            return None;
        };
        let mut v = v;
        if s.is_fp8() && op != ast::UnaryOp::Not {
            // fp8 is a storage format: arithmetic reads it as float32.
            let e = self.convert(&v, Scalar::Float32)?;
            v = Val {
                e,
                ty: Type::Scalar(Scalar::Float32),
                ..v
            };
            s = Scalar::Float32;
        }
        if s.is_complex() && op == ast::UnaryOp::Invert {
            self.diags.push(complex_unsupported(span, "~", s));
            return None;
        }
        if let Some(c) = &v.konst {
            let folded = match (op, c) {
                (ast::UnaryOp::USub, Const::Complex(re, im)) => Some(Const::Complex(-re, -im)),
                (ast::UnaryOp::USub, Const::Int(i)) => Some(Const::Int(-i)),
                (ast::UnaryOp::USub, Const::Float(f)) => Some(Const::Float(-f)),
                (ast::UnaryOp::USub, Const::Bool(b)) => Some(Const::Int(-i128::from(*b))),
                (ast::UnaryOp::UAdd, Const::Bool(b)) => Some(Const::Int(i128::from(*b))),
                (ast::UnaryOp::UAdd, c) => Some(c.clone()),
                (ast::UnaryOp::Not, c) => Some(Const::Bool(c.as_f64() == Some(0.0))),
                (ast::UnaryOp::Invert, Const::Int(i)) => Some(Const::Int(!i)),
                (ast::UnaryOp::Invert, Const::Bool(b)) => Some(Const::Bool(!b)),
                _ => None,
            };
            if let Some(c) = folded
                && (v.weak.is_some() || s == Scalar::Bool)
            {
                return self.const_val(&c, span);
            }
        }
        match op {
            ast::UnaryOp::Not => {
                let b = self.truthy(v)?;
                let e = self.push(
                    Expr::Unary(UnaryOp::Not, b),
                    Type::Scalar(Scalar::Bool),
                    span,
                );
                Some(self.val(e, Type::Scalar(Scalar::Bool), span))
            }
            ast::UnaryOp::UAdd | ast::UnaryOp::USub => {
                let (e, ty) = if s == Scalar::Bool {
                    (self.convert(&v, d.int)?, d.int)
                } else {
                    (v.e, s)
                };
                if op == ast::UnaryOp::UAdd {
                    return Some(Val {
                        e,
                        ty: Type::Scalar(ty),
                        span,
                        ..v
                    });
                }
                let e = self.push(Expr::Unary(UnaryOp::Neg, e), Type::Scalar(ty), span);
                Some(Val {
                    e,
                    ty: Type::Scalar(ty),
                    weak: v.weak,
                    konst: None,
                    nonneg: ty.kind() == Kind::UInt,
                    span,
                })
            }
            ast::UnaryOp::Invert => {
                if s.is_float() {
                    self.error(
                        Code::E0202,
                        span,
                        format!("`~` needs an integer or bool operand, found {s}"),
                    );
                    return None;
                }
                let op = if s == Scalar::Bool {
                    UnaryOp::Not
                } else {
                    UnaryOp::Invert
                };
                let e = self.push(Expr::Unary(op, v.e), Type::Scalar(s), span);
                Some(Val {
                    e,
                    ty: Type::Scalar(s),
                    weak: v.weak,
                    konst: None,
                    nonneg: s.kind() == Kind::UInt,
                    span,
                })
            }
        }
    }

    /// `machine_representation() == "itanium"` (or `!=`, either order, or two calls): a
    /// comparison of compile-time strings, folded to a `bool` constant. `None` when `c` is
    /// not one.
    fn compare_strings(&mut self, c: &ast::ExprCompare) -> Option<Option<Val>> {
        let ([op], [right]) = (&*c.ops, &*c.comparators) else {
            return None;
        };
        let eq = match op {
            ast::CmpOp::Eq => true,
            ast::CmpOp::NotEq => false,
            _ => return None,
        };
        let text = |cx: &mut Self, e: &ast::Expr| -> Option<String> {
            match e {
                ast::Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
                ast::Expr::Call(call)
                    if call.arguments.is_empty()
                        && cx.callee_item(&call.func)
                            == Some(Item::Builtin(Builtin::MachineRepresentation)) =>
                {
                    Some(crate::target::machine_representation().to_string())
                }
                _ => None,
            }
        };
        let is_call = |e: &ast::Expr| matches!(e, ast::Expr::Call(_));
        if !is_call(&c.left) && !is_call(right) {
            return None; // two literals, or no string at all: the ordinary rules
        }
        let (l, r) = (text(self, &c.left)?, text(self, right)?);
        let span = sp(c);
        let bool_t = Type::Scalar(Scalar::Bool);
        let b = (l == r) == eq;
        let e = self.push(Expr::Literal(Literal::Bool(b)), bool_t.clone(), span);
        Some(Some(Val {
            konst: Some(Const::Bool(b)),
            ..self.val(e, bool_t, span)
        }))
    }

    pub(super) fn compare(&mut self, c: &ast::ExprCompare) -> Option<Val> {
        let span = sp(c);
        let bool_t = Type::Scalar(Scalar::Bool);
        if let Some(v) = self.compare_strings(c) {
            return v;
        }
        let mut acc: Option<Val> = None;
        for (k, (op, right)) in c.ops.iter().zip(c.comparators.iter()).enumerate() {
            let left = if k == 0 {
                c.left.as_ref()
            } else {
                &c.comparators[k - 1]
            };
            if k > 0 && contains_call(left) {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0305,
                        sp(left),
                        "a chained comparison cannot have a function call in the middle",
                    )
                    .with_note("assign the middle value to a name first, then compare"),
                );
                return None;
            }
            // `x == None` / `x != None` (cupyx's tests write them) are `is` / `is not`: a
            // device value is never equal to `None`.
            let with_none = matches!(op, ast::CmpOp::Eq | ast::CmpOp::NotEq)
                && (self.is_none(left) || self.is_none(right));
            if matches!(op, ast::CmpOp::Is | ast::CmpOp::IsNot) || with_none {
                let negate = matches!(op, ast::CmpOp::IsNot | ast::CmpOp::NotEq);
                let v = self.identity(left, right, negate, span)?;
                acc = Some(match acc {
                    None => v,
                    Some(a) => {
                        let e = self.push(Expr::And(a.e, v.e), bool_t.clone(), span);
                        self.val(e, bool_t.clone(), span)
                    }
                });
                continue;
            }
            let op = match op {
                ast::CmpOp::Eq => BinaryOp::Eq,
                ast::CmpOp::NotEq => BinaryOp::Ne,
                ast::CmpOp::Lt => BinaryOp::Lt,
                ast::CmpOp::LtE => BinaryOp::Le,
                ast::CmpOp::Gt => BinaryOp::Gt,
                ast::CmpOp::GtE => BinaryOp::Ge,
                other => {
                    self.error(
                        Code::E0202,
                        span,
                        format!("`{}` is not supported in device code", other.as_str()),
                    );
                    return None;
                }
            };
            let l = self.expr(left);
            let r = self.expr(right);
            let (l, r) = (self.value_of(l)?, self.value_of(r)?);
            if self.unsigned_sign_test(op, &l, &r, span) {
                return None;
            }
            let v = self.binary(op, l, r, span)?;
            acc = Some(match acc {
                None => v,
                Some(a) => {
                    let e = self.push(Expr::And(a.e, v.e), bool_t.clone(), span);
                    self.val(e, bool_t.clone(), span)
                }
            });
        }
        acc
    }

    /// E0291: a comparison of a `uint32`/`uint64` value with a constant that makes it
    /// always `False` (`u < 0`, `u <= -1`, `u == -3`; §3.1.1), or a `max`/`min` of one with
    /// a constant `<= 0` (`max(u, 0)` is `u`), in the `cuda.device` dialect. It is the sign test of code ported from CUDA C++, where
    /// `int x = (blockIdx.x * STEPS - HALO) * BX;` turns a wrapped `unsigned` result back
    /// into a negative `int`; here `x` stays `uint32`, so `x < 0` never holds and block 0's
    /// halo reads the far end. Returns whether it reported one.
    pub(super) fn unsigned_sign_test(
        &mut self,
        op: BinaryOp,
        l: &Val,
        r: &Val,
        span: Span,
    ) -> bool {
        if self.s.m.dialect != crate::front::dialect::Dialect::CudaDevice {
            return false;
        }
        // The index widths: `uint8`/`uint16` values are data (NumPy's rules compare them
        // with any Python int, `errors`-free: `lang/numpy_literal_rules`).
        let unsigned = |v: &Val| {
            v.konst.is_none()
                && v.weak.is_none()
                && matches!(&v.ty, Type::Scalar(Scalar::UInt32 | Scalar::UInt64))
        };
        // A Python int (a literal or a module constant), as a port writes `x < 0` and
        // `max(x, 0)`; a typed constant (`uint32(0)`) says its type on purpose.
        let int_const = |v: &Val| match &v.konst {
            Some(Const::Int(c)) if v.weak.is_some() => Some(*c),
            _ => None,
        };
        // As `u op c`, flipping `c op u`.
        let (u, c, op) = if unsigned(l)
            && let Some(c) = int_const(r)
        {
            (l, c, op)
        } else if unsigned(r)
            && let Some(c) = int_const(l)
        {
            let flipped = match op {
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::Le => BinaryOp::Ge,
                BinaryOp::Gt => BinaryOp::Lt,
                BinaryOp::Ge => BinaryOp::Le,
                o => o,
            };
            (r, c, flipped)
        } else {
            return false;
        };
        let Type::Scalar(s) = &u.ty else {
            return false;
        };
        // Only the tests whose outcome the port depends on: a sign test that never holds
        // (the clamp `if x < 0: x = 0` that never runs) and a clamp that does nothing. One
        // that always holds (`x >= 0 and x < n`) is a redundant guard, left alone.
        let what = match op {
            BinaryOp::Lt if c <= 0 => "this comparison is always False".to_string(),
            BinaryOp::Le if c < 0 => "this comparison is always False".to_string(),
            BinaryOp::Eq if c < 0 => "this comparison is always False".to_string(),
            BinaryOp::Max if c <= 0 => format!("`max` with {c} has no effect"),
            BinaryOp::Min if c <= 0 => format!("`min` with {c} is always {c}"),
            _ => return false,
        };
        self.diags.push(
            Diagnostic::error(
                Code::E0291,
                span,
                format!("{what}: the value is {s}, which is never negative"),
            )
            .with_secondary(u.span, format!("{s}"))
            .with_note(
                "unsigned arithmetic wraps (§3.1): `thread_idx.x - 1` is 4294967295 in thread 0, and `block_idx.x * N - HALO` never goes below 0; \
                 for signed arithmetic convert first, as CUDA C++'s `int x = ...` does: `int32(block_idx.x) * N - HALO`, or use `tid()`",
            ),
        );
        true
    }

    /// `l is r` (`negate`: `is not`) as numba decides it at compile time from the types: with
    /// `None` on one side, whether the other is `None` too; for two numbers, `==` when their
    /// types are the same (a Python number taking the dialect's default type, `True` a
    /// `bool`), otherwise `False`, as numba's `generic_is` falls back to `==` for immutable
    /// values of one type. Anything else (arrays, tuples) is E0202.
    /// Whether `e` is `None`: the literal, or a parameter given `None` (§5.3).
    pub(super) fn is_none(&mut self, e: &ast::Expr) -> bool {
        match e {
            ast::Expr::NoneLiteral(_) => true,
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                match self.statics.get(name) {
                    Some(item) => item == &Item::NoneArg,
                    // A module global bound to `None` (§15.4), unless a local shadows it.
                    None => {
                        !self.scope.contains_key(name)
                            && !self.assigned.contains(name)
                            && self.s.m.lookup(name) == Some(Item::NoneArg)
                    }
                }
            }
            _ => false,
        }
    }

    /// `x is None` / `x is not None` where `x` is a name or `None`: decided when compiling
    /// (device values are never `None`; a parameter given `None` always is). `None` for any
    /// other test.
    pub(super) fn static_none_test(&mut self, test: &ast::Expr) -> Option<bool> {
        let ast::Expr::Compare(c) = test else {
            return None;
        };
        let ([op], [r]) = (&*c.ops, &*c.comparators) else {
            return None;
        };
        let negate = match op {
            ast::CmpOp::Is => false,
            ast::CmpOp::IsNot => true,
            _ => return None,
        };
        let simple = |e: &ast::Expr| matches!(e, ast::Expr::Name(_) | ast::Expr::NoneLiteral(_));
        if !simple(&c.left) || !simple(r) {
            return None;
        }
        let (nl, nr) = (self.is_none(&c.left), self.is_none(r));
        if !nl && !nr {
            return None;
        }
        Some((nl && nr) != negate)
    }

    fn identity(&mut self, l: &ast::Expr, r: &ast::Expr, negate: bool, span: Span) -> Option<Val> {
        let none_l = self.is_none(l);
        let none_r = self.is_none(r);
        let answer = |cx: &mut Self, b: bool| cx.const_val(&Const::Bool(b != negate), span);
        if none_l || none_r {
            // A value is never `None` in device code (only a function's missing return is,
            // and that cannot be compared).
            return answer(self, none_l && none_r);
        }
        let lv = self.expr(l);
        let rv = self.expr(r);
        let (lv, rv) = (self.value_of(lv)?, self.value_of(rv)?);
        let (Some(_), Some(_)) = (lv.ty.as_scalar(), rv.ty.as_scalar()) else {
            self.error(
                Code::E0202,
                span,
                format!(
                    "`is` compares numbers or `None` in device code, found {} and {}",
                    lv.ty, rv.ty
                ),
            );
            return None;
        };
        let (lv, rv) = (self.concrete(lv)?, self.concrete(rv)?);
        if lv.ty != rv.ty {
            return answer(self, false);
        }
        let op = if negate { BinaryOp::Ne } else { BinaryOp::Eq };
        self.binary(op, lv, rv, span)
    }

    pub(super) fn bool_op(&mut self, b: &ast::ExprBoolOp) -> Option<Val> {
        let span = sp(b);
        let mut vals = Vec::new();
        for x in &b.values {
            let v = self.expr(x);
            vals.push(self.value_of(v)?);
        }
        if let Some(bad) = vals.iter().find(|v| v.ty.as_scalar().is_none()) {
            self.error(
                Code::E0205,
                bad.span,
                format!("`{}` needs numbers or bools, found {}", b.op, bad.ty),
            );
            return None;
        }
        let refs: Vec<&Val> = vals.iter().collect();
        let (common, weak) = if vals.iter().all(|v| v.ty == Type::Scalar(Scalar::Bool)) {
            (Scalar::Bool, None)
        } else {
            self.common(&refs)
        };
        let mut acc: Option<Handle<Expr>> = None;
        for v in &vals {
            let e = self.convert(v, common)?;
            acc = Some(match acc {
                None => e,
                Some(a) => {
                    let node = match b.op {
                        ast::BoolOp::And => Expr::And(a, e),
                        ast::BoolOp::Or => Expr::Or(a, e),
                    };
                    self.push(node, Type::Scalar(common), span)
                }
            });
        }
        let nonneg = vals.iter().all(|v| v.nonneg);
        Some(Val {
            e: acc?,
            ty: Type::Scalar(common),
            weak,
            konst: None,
            nonneg,
            span,
        })
    }

    pub(super) fn if_expr(&mut self, i: &ast::ExprIf) -> Option<Val> {
        let span = sp(i);
        let cond = self.cond(&i.test);
        let t = self.expr(&i.body);
        let f = self.expr(&i.orelse);
        let (cond, t, f) = (cond?, self.value_of(t)?, self.value_of(f)?);
        let (ty, weak, te, fe) = if t.ty == f.ty && t.weak == f.weak {
            (t.ty.clone(), t.weak, t.e, f.e)
        } else if t.ty.as_scalar().is_some() && f.ty.as_scalar().is_some() {
            let (common, weak) = self.common(&[&t, &f]);
            (
                Type::Scalar(common),
                weak,
                self.convert(&t, common)?,
                self.convert(&f, common)?,
            )
        } else {
            self.diags.push(
                Diagnostic::error(Code::E0202, span, format!("the branches of this conditional expression have different types: {} and {}", t.ty, f.ty))
                    .with_secondary(t.span, format!("{}", t.ty))
                    .with_secondary(f.span, format!("{}", f.ty)),
            );
            return None;
        };
        let e = self.push(
            Expr::Select {
                cond,
                then: te,
                otherwise: fe,
            },
            ty.clone(),
            span,
        );
        Some(Val {
            e,
            ty,
            weak,
            konst: None,
            nonneg: t.nonneg && f.nonneg,
            span,
        })
    }
}
