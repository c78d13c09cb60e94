//! Complex numbers: operators, construction, `.real` / `.imag` / `.conjugate()`, `abs`, and
//! the `cmath` module. The decisions are in docs/semantics.md §2.7.

use super::*;
use crate::diag::Code;
use crate::front::builtins::CmathFn;
use crate::ir::ComplexOp;

/// E0250: an operator Python and NumPy do not define on complex numbers.
pub(super) fn complex_unsupported(span: Span, op: &str, s: Scalar) -> Diagnostic {
    Diagnostic::error(
        Code::E0250,
        span,
        format!("`{op}` is not defined on complex numbers ({s})"),
    )
    .with_label("complex operand")
    .with_note("complex numbers support `+ - * /`, `**` with an integer constant, `==` and `!=`; compare `abs(z)` or the parts to order them")
}

/// The largest constant integer exponent `z ** n` expands to multiplications for.
const MAX_POW: i128 = 64;

impl FnCx<'_, '_> {
    /// `l op r` where the operands promote to the complex type `common`.
    pub(super) fn complex_binary(
        &mut self,
        op: BinaryOp,
        l: Val,
        r: Val,
        common: Scalar,
        weak: Option<Weak>,
        span: Span,
    ) -> Option<Val> {
        use BinaryOp::*;
        match op {
            Add | AddNoWrap | Sub | Mul | Div | Eq | Ne => {}
            Pow => return self.complex_pow(l, r, common, weak, span),
            other => {
                self.diags
                    .push(complex_unsupported(span, other.symbol(), common));
                return None;
            }
        }
        let a = self.convert(&l, common)?;
        let b = self.convert(&r, common)?;
        let (result, weak) = if matches!(op, Eq | Ne) {
            (Scalar::Bool, None)
        } else {
            (common, weak)
        };
        let e = self.push(Expr::Binary(op, a, b), Type::Scalar(result), span);
        let mut v = self.val(e, Type::Scalar(result), span);
        v.weak = weak;
        Some(v)
    }

    /// `z ** n` for a constant integer `n` (|n| <= 64): square-and-multiply, and one
    /// division for a negative `n` (`z ** 0` is 1, as in Python, even for 0 and NaN). Any
    /// other exponent is `ComplexOp::Pow`, CPython's polar-form `c_pow`.
    fn complex_pow(
        &mut self,
        l: Val,
        r: Val,
        common: Scalar,
        weak: Option<Weak>,
        span: Span,
    ) -> Option<Val> {
        let n = r
            .konst
            .as_ref()
            .filter(|_| r.weak.is_some() || r.ty.as_scalar().is_some_and(|s| s.is_integer()))
            .and_then(|c| c.as_int())
            .filter(|n| n.abs() <= MAX_POW);
        let Some(n) = n else {
            // Any other exponent: CPython's `c_pow` (polar form), as numba does.
            let base = self.convert(&l, common)?;
            let exp = self.convert(&r, common)?;
            let ty = Type::Scalar(common);
            let e = self.push(
                Expr::Intrinsic(Intrinsic::Complex(ComplexOp::Pow), vec![base, exp]),
                ty.clone(),
                span,
            );
            let mut v = self.val(e, ty, span);
            v.weak = weak;
            return Some(v);
        };
        let ty = Type::Scalar(common);
        let base = self.convert(&l, common)?;
        let one = self.push(Expr::Literal(Literal::Complex(1.0, 0.0)), ty.clone(), span);
        let mut acc: Option<Handle<Expr>> = None;
        let mut sq = base;
        let mut k = n.unsigned_abs();
        while k > 0 {
            if k & 1 == 1 {
                acc = Some(match acc {
                    None => sq,
                    Some(a) => self.push(Expr::Binary(BinaryOp::Mul, a, sq), ty.clone(), span),
                });
            }
            k >>= 1;
            if k > 0 {
                sq = self.push(Expr::Binary(BinaryOp::Mul, sq, sq), ty.clone(), span);
            }
        }
        let mut e = acc.unwrap_or(one);
        if n < 0 {
            e = self.push(Expr::Binary(BinaryOp::Div, one, e), ty.clone(), span);
        }
        let mut v = self.val(e, ty, span);
        v.weak = weak;
        Some(v)
    }

    /// `complex64()`, `complex64(x)`, `complex64(re, im)` (and `complex(...)`, the dialect's
    /// default complex type): the parts must be real numbers.
    pub(super) fn complex_new(&mut self, target: Scalar, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let mut args = self.args(c, target.name(), 0, 2)?;
        let ty = Type::Scalar(target);
        match args.len() {
            0 => {
                let e = self.literal(&Const::Complex(0.0, 0.0), target, span)?;
                Some(self.val(e, ty, span))
            }
            1 => {
                let v = args.pop()?;
                self.conversion(v, target, span)
            }
            _ => {
                let part = target.component();
                let mut parts = Vec::new();
                for a in &args {
                    match a.ty.as_scalar() {
                        Some(s) if s.is_complex() => {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::E0251,
                                    a.span,
                                    format!(
                                        "the parts of {target}(re, im) must be real numbers, found {s}"
                                    ),
                                )
                                .with_label("complex")
                                .with_note("take the part you mean: `z.real` or `z.imag`"),
                            );
                            return None;
                        }
                        Some(_) => {}
                        None => {
                            self.error(
                                Code::E0207,
                                a.span,
                                format!("cannot convert {} to {part}", a.ty),
                            );
                            return None;
                        }
                    }
                    let p = self.conversion(a.clone(), part, a.span)?;
                    parts.push(p.e);
                }
                let e = self.push(
                    Expr::Intrinsic(Intrinsic::Complex(ComplexOp::New), parts),
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
        }
    }

    /// `abs(z)`: the modulus, of the part type.
    pub(super) fn complex_abs(&mut self, v: Val, span: Span) -> Option<Val> {
        let s = v.ty.as_scalar()?;
        if let (Some(Const::Complex(re, im)), true) = (&v.konst, v.weak.is_some()) {
            return self.const_val(&Const::Float(re.hypot(*im)), span);
        }
        self.complex_part(ComplexOp::Abs, v, s.component(), span)
    }

    /// A float-valued operation on one complex value (`.real`, `.imag`, `abs`, `phase`).
    fn complex_part(&mut self, op: ComplexOp, v: Val, to: Scalar, span: Span) -> Option<Val> {
        let s = v.ty.as_scalar()?;
        let e = self.convert(&v, s)?;
        let ty = Type::Scalar(to);
        let e = self.push(
            Expr::Intrinsic(Intrinsic::Complex(op), vec![e]),
            ty.clone(),
            span,
        );
        let mut r = self.val(e, ty, span);
        // The parts of a Python complex are Python floats.
        r.weak = v.weak.map(|_| Weak::Float);
        Some(r)
    }

    /// `.real` and `.imag` of a number (a real number is its own real part, with a zero
    /// imaginary part, as in Python). `None` when `attr` is neither.
    pub(super) fn number_part(&mut self, v: &Val, attr: &str, span: Span) -> Option<Option<Val>> {
        let s = v.ty.as_scalar()?;
        let imag = match attr {
            "real" => false,
            "imag" => true,
            _ => return None,
        };
        if v.weak.is_some()
            && let Some((re, im)) = v.konst.as_ref().and_then(|c| c.as_complex())
        {
            return Some(self.const_val(&Const::Float(if imag { im } else { re }), span));
        }
        if s.is_complex() {
            let op = if imag {
                ComplexOp::Imag
            } else {
                ComplexOp::Real
            };
            return Some(self.complex_part(op, v.clone(), s.component(), span));
        }
        if !imag {
            return Some(Some(Val { span, ..v.clone() }));
        }
        let e = self.literal(&Const::Int(0), s, span);
        Some(e.map(|e| self.val(e, Type::Scalar(s), span)))
    }

    /// `z.conjugate()` (a real number is its own conjugate). `None` for other methods.
    pub(super) fn number_method(
        &mut self,
        v: &Val,
        method: &str,
        c: &ast::ExprCall,
    ) -> Option<Option<Val>> {
        let s = v.ty.as_scalar()?;
        if method != "conjugate" {
            return None;
        }
        let span = sp(c);
        if self.args(c, "conjugate", 0, 0).is_none() {
            return Some(None);
        }
        if !s.is_complex() {
            return Some(Some(Val { span, ..v.clone() }));
        }
        if v.weak.is_some()
            && let Some(Const::Complex(re, im)) = &v.konst
        {
            return Some(self.const_val(&Const::Complex(*re, -*im), span));
        }
        let ty = v.ty.clone();
        let e = self.push(
            Expr::Intrinsic(Intrinsic::Complex(ComplexOp::Conj), vec![v.e]),
            ty.clone(),
            span,
        );
        let mut r = self.val(e, ty, span);
        r.weak = v.weak;
        Some(Some(r))
    }

    /// A `cmath` function. Real arguments are converted to the complex type that holds them
    /// (`float64` → `complex128`; Python numbers → the dialect's `complex`).
    pub(super) fn cmath_call(&mut self, f: CmathFn, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let name = match f {
            CmathFn::Polar => "cmath.polar".to_string(),
            CmathFn::Op(op) => format!("cmath.{op:?}").to_lowercase(),
        };
        let (min, max) = match f {
            CmathFn::Op(ComplexOp::Rect) => (2, 2),
            // log(z, base)
            CmathFn::Op(ComplexOp::Log) => (1, 2),
            _ => (1, 1),
        };
        let mut args = self.args(c, &name, min, max)?;
        for a in &args {
            if a.ty.as_scalar().is_none() {
                self.error(
                    Code::E0207,
                    a.span,
                    format!("`{name}` needs a number, found {}", a.ty),
                );
                return None;
            }
        }
        if f == CmathFn::Op(ComplexOp::Rect) {
            // rect(r, phi): two real numbers, a complex result.
            let refs: Vec<&Val> = args.iter().collect();
            let (common, weak) = self.common(&refs);
            if common.is_complex() {
                let bad = args.iter().find(|a| {
                    a.ty.as_scalar().is_some_and(|s| s.is_complex())
                        || a.weak == Some(Weak::Complex)
                })?;
                self.diags.push(complex_to_real(
                    bad.span,
                    "a complex number",
                    common.component(),
                ));
                return None;
            }
            let part = if weak.is_some() {
                self.s.defaults.complex.component()
            } else {
                Scalar::complex_of(promote(common, Scalar::Float32)).component()
            };
            let es = args
                .iter()
                .map(|a| self.convert(a, part))
                .collect::<Option<Vec<_>>>()?;
            let ty = Type::Scalar(Scalar::complex_of(part));
            let e = self.push(
                Expr::Intrinsic(Intrinsic::Complex(ComplexOp::Rect), es),
                ty.clone(),
                span,
            );
            return Some(self.val(e, ty, span));
        }
        if args.len() == 2 {
            // cmath.log(z, base) = log(z) / log(base), as CPython computes it.
            let base = args.pop()?;
            let z = args.pop()?;
            let z = self.as_complex_operand(z)?;
            let base = self.as_complex_operand(base)?;
            let (common, _) = self.common(&[&z, &base]);
            let ty = Type::Scalar(common);
            let mut logs = Vec::new();
            for v in [z, base] {
                let e = self.convert(&v, common)?;
                logs.push(self.push(
                    Expr::Intrinsic(Intrinsic::Complex(ComplexOp::Log), vec![e]),
                    ty.clone(),
                    span,
                ));
            }
            let e = self.push(
                Expr::Binary(BinaryOp::Div, logs[0], logs[1]),
                ty.clone(),
                span,
            );
            return Some(self.val(e, ty, span));
        }
        let v = args.into_iter().next()?;
        let z = self.as_complex_operand(v)?;
        let cs = z.ty.as_scalar()?;
        match f {
            CmathFn::Polar => {
                let m = self.complex_part(ComplexOp::Abs, z.clone(), cs.component(), span)?;
                let p = self.complex_part(ComplexOp::Phase, z, cs.component(), span)?;
                let m = self.concrete(m)?;
                let p = self.concrete(p)?;
                let ty = Type::Tuple(vec![m.ty.clone(), p.ty.clone()]);
                let e = self.push(Expr::Tuple(vec![m.e, p.e]), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            CmathFn::Op(ComplexOp::Phase) => {
                let p = self.complex_part(ComplexOp::Phase, z, cs.component(), span)?;
                self.concrete(p)
            }
            CmathFn::Op(op @ (ComplexOp::IsFinite | ComplexOp::IsNan | ComplexOp::IsInf)) => {
                let z = self.concrete(z)?;
                let ty = Type::Scalar(Scalar::Bool);
                let e = self.push(
                    Expr::Intrinsic(Intrinsic::Complex(op), vec![z.e]),
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
            CmathFn::Op(op) => {
                let z = self.concrete(z)?;
                let ty = z.ty.clone();
                let e = self.push(
                    Expr::Intrinsic(Intrinsic::Complex(op), vec![z.e]),
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
        }
    }

    /// A number as a complex value: complex values as they are, real ones converted to the
    /// complex type that holds them.
    fn as_complex_operand(&mut self, v: Val) -> Option<Val> {
        let s = v.ty.as_scalar()?;
        if s.is_complex() && v.weak.is_none() {
            return Some(v);
        }
        let target = if v.weak.is_some() {
            self.s.defaults.complex
        } else {
            Scalar::complex_of(promote(s, Scalar::Float32))
        };
        let e = self.convert(&v, target)?;
        let mut r = self.val(e, Type::Scalar(target), v.span);
        r.weak = None;
        Some(r)
    }
}
