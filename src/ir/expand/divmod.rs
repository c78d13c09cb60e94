//! Python's `//` and `%` on floats, as CPython's `float_divmod` computes them, stated once
//! for every back end: the remainder takes the divisor's sign (a zero remainder too), and
//! the quotient is rounded so that `q * y + r == x` as closely as floats allow. 16-bit
//! floats are computed in `float32` and rounded once, as the back ends always did.
//!
//! Integer `//` and `%` stay with the back ends: they are one machine division each, plus
//! Python's sign fix-up, which needs a truncating division the IR does not have.

use super::*;

/// The helper expression `e` of `f` must become a call of, if any: a float `//` or `%`.
pub(super) fn wants_helper(f: &Function, e: Handle<Expr>) -> Option<Helper> {
    match (&f.exprs[e], f.ty(e).as_scalar()) {
        (Expr::Binary(op @ (BinaryOp::FloorDiv | BinaryOp::Mod), _, _), Some(s))
            if s.is_float() && matches!(s.bits(), 16 | 32 | 64) =>
        {
            Some(Helper::FloatDivMod(*op, s))
        }
        _ => None,
    }
}

/// `float_floordiv(x, y)` or `float_mod(x, y)` for float type `s`, the operations in the
/// order the back ends emitted them before this expansion existed.
pub(super) fn float_divmod(op: BinaryOp, s: Scalar, span: Span) -> Function {
    use BinaryOp::{Add, BitAnd, BitXor, Div, Eq, Gt, Lt, Ne, Sub};
    let ty = Type::Scalar(s);
    let what = if op == BinaryOp::FloorDiv {
        "floordiv"
    } else {
        "mod"
    };
    let mut b = Builder::new(
        &format!("float_{what}_{s}"),
        &[("x", ty.clone()), ("y", ty.clone())],
        ty.clone(),
        span,
    );
    // The type computed in: float32 for the 16-bit floats.
    let w = if s.bits() == 16 { Scalar::Float32 } else { s };
    let wt = Type::Scalar(w);
    let widen = |b: &mut Builder, p: Handle<Local>, name: &str| {
        if w == s {
            return p;
        }
        let r = b.read(p);
        let e = b.expr(Expr::Cast(r), wt.clone());
        b.let_(name, e)
    };
    let x = widen(&mut b, Handle::new(0), "xw");
    let y = widen(&mut b, Handle::new(1), "yw");
    let k = |b: &mut Builder, v: f64| b.expr(Expr::Literal(Literal::Float(v)), wt.clone());
    let math = |b: &mut Builder, f: MathFn, args: Vec<Handle<Expr>>| {
        b.expr(Expr::Intrinsic(Intrinsic::Math(f), args), wt.clone())
    };
    let (xv, yv) = (b.read(x), b.read(y));
    let e = math(&mut b, MathFn::Fmod, vec![xv, yv]);
    let m = b.let_("m", e);
    let (mv, z) = (b.read(m), k(&mut b, 0.0));
    let e = b.binary(Ne, mv, z);
    let m_nonzero = b.let_("m_nonzero", e);
    let (yv, z) = (b.read(y), k(&mut b, 0.0));
    let y_neg = b.binary(Lt, yv, z);
    let (mv, z) = (b.read(m), k(&mut b, 0.0));
    let m_neg = b.binary(Lt, mv, z);
    let differ = b.binary(BitXor, y_neg, m_neg);
    let nz = b.read(m_nonzero);
    let e = b.binary(BitAnd, nz, differ);
    let adjust = b.let_("adjust", e);
    let result = if op == BinaryOp::Mod {
        let e = b.binary_l(Add, m, y);
        let m_adj = b.let_("m_adj", e);
        let e = b.select_l(adjust, m_adj, m);
        let r = b.let_("r", e);
        // A zero remainder takes the divisor's sign.
        let (z, yv) = (k(&mut b, 0.0), b.read(y));
        let e = math(&mut b, MathFn::Copysign, vec![z, yv]);
        let signed_zero = b.let_("signed_zero", e);
        let e = b.select_l(m_nonzero, r, signed_zero);
        b.let_("result", e)
    } else {
        let e = b.binary_l(Sub, x, m);
        let diff = b.let_("diff", e);
        let e = b.binary_l(Div, diff, y);
        let div = b.let_("div", e);
        let (dv, one) = (b.read(div), k(&mut b, 1.0));
        let e = b.binary(Sub, dv, one);
        let div_m1 = b.let_("div_m1", e);
        let e = b.select_l(adjust, div_m1, div);
        b.set(div, e);
        let dv = b.read(div);
        let e = math(&mut b, MathFn::Floor, vec![dv]);
        let fl = b.let_("fl", e);
        let e = b.binary_l(Sub, div, fl);
        let frac = b.let_("frac", e);
        let (fv, half) = (b.read(frac), k(&mut b, 0.5));
        let e = b.binary(Gt, fv, half);
        let up = b.let_("up", e);
        let (flv, one) = (b.read(fl), k(&mut b, 1.0));
        let e = b.binary(Add, flv, one);
        let fl1 = b.let_("fl1", e);
        let e = b.select_l(up, fl1, fl);
        let q = b.let_("q", e);
        let (dv, z) = (b.read(div), k(&mut b, 0.0));
        let e = b.binary(Eq, dv, z);
        let q_zero = b.let_("q_zero", e);
        // A zero quotient takes the sign of the true quotient.
        let xy = b.binary_l(Div, x, y);
        let z = k(&mut b, 0.0);
        let e = math(&mut b, MathFn::Copysign, vec![z, xy]);
        let signed_zero = b.let_("signed_zero", e);
        let e = b.select_l(q_zero, signed_zero, q);
        b.let_("result", e)
    };
    let r = b.read(result);
    let r = if w == s { r } else { b.expr(Expr::Cast(r), ty) };
    b.ret(r)
}
