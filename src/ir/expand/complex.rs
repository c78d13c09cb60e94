//! Complex division by Smith's algorithm (1962), the one statement of it for every back end.
//!
//! `(a + bi) / (c + di)` scales by the larger part of the divisor so that the intermediate
//! products neither overflow nor underflow where the quotient does not. Both branches are
//! computed and the right one selected; dividing by zero gives `a/0 + (b/0)i` part by part
//! (infinities, or NaN for 0/0), as NumPy does. The constant folder
//! (`front::consts`) computes the same formulas for literal operands.

use super::*;

/// The helper expression `e` of `f` must become a call of, if any: a complex `/`.
pub(super) fn wants_helper(f: &Function, e: Handle<Expr>) -> Option<Helper> {
    match (&f.exprs[e], f.ty(e).as_scalar()) {
        (Expr::Binary(BinaryOp::Div, _, _), Some(s)) if s.is_complex() => {
            Some(Helper::ComplexDiv(s))
        }
        _ => None,
    }
}

/// `complex_div(x, y)` for complex type `s`: Smith's algorithm, the operations in the
/// order the back ends emitted them before this expansion existed.
pub(super) fn division(s: Scalar, span: Span) -> Function {
    use BinaryOp::{Add, BitAnd, Div, Eq, Ge, Mul, Sub};
    let ct = Type::Scalar(s);
    let part = s.component();
    let pt = Type::Scalar(part);
    let mut b = Builder::new(
        &format!("complex_div_{s}"),
        &[("x", ct.clone()), ("y", ct.clone())],
        ct.clone(),
        span,
    );
    let (x, y) = (Handle::new(0), Handle::new(1));
    let get = |b: &mut Builder, z: Handle<Local>, op: ComplexOp, name: &str| {
        let r = b.read(z);
        let v = b.expr(Expr::Intrinsic(Intrinsic::Complex(op), vec![r]), pt.clone());
        b.let_(name, v)
    };
    let a = get(&mut b, x, ComplexOp::Real, "a");
    let bb = get(&mut b, x, ComplexOp::Imag, "b");
    let c = get(&mut b, y, ComplexOp::Real, "c");
    let d = get(&mut b, y, ComplexOp::Imag, "d");
    let abs = |b: &mut Builder, v: Handle<Local>, name: &str| {
        let r = b.read(v);
        let e = b.expr(Expr::Unary(UnaryOp::Abs, r), pt.clone());
        b.let_(name, e)
    };
    let abs_c = abs(&mut b, c, "abs_c");
    let abs_d = abs(&mut b, d, "abs_d");
    // |c| >= |d|: r = d/c, den = c + d r, q = ((a + b r) + (b - a r) i) / den
    let e = b.binary_l(Div, d, c);
    let r1 = b.let_("r1", e);
    let dr1 = b.binary_l(Mul, d, r1);
    let cc = b.read(c);
    let e = b.binary(Add, cc, dr1);
    let den1 = b.let_("den1", e);
    let br1 = b.binary_l(Mul, bb, r1);
    let aa = b.read(a);
    let e = b.binary(Add, aa, br1);
    let re1 = b.let_("re1", e);
    let ar1 = b.binary_l(Mul, a, r1);
    let bv = b.read(bb);
    let e = b.binary(Sub, bv, ar1);
    let im1 = b.let_("im1", e);
    let e = b.binary_l(Div, re1, den1);
    b.set(re1, e);
    let e = b.binary_l(Div, im1, den1);
    b.set(im1, e);
    // |c| < |d|: r = c/d, den = c r + d, q = ((a r + b) + (b r - a) i) / den
    let e = b.binary_l(Div, c, d);
    let r2 = b.let_("r2", e);
    let cr2 = b.binary_l(Mul, c, r2);
    let dv = b.read(d);
    let e = b.binary(Add, cr2, dv);
    let den2 = b.let_("den2", e);
    let ar2 = b.binary_l(Mul, a, r2);
    let bv = b.read(bb);
    let e = b.binary(Add, ar2, bv);
    let re2 = b.let_("re2", e);
    let br2 = b.binary_l(Mul, bb, r2);
    let av = b.read(a);
    let e = b.binary(Sub, br2, av);
    let im2 = b.let_("im2", e);
    let e = b.binary_l(Div, re2, den2);
    b.set(re2, e);
    let e = b.binary_l(Div, im2, den2);
    b.set(im2, e);
    // A zero divisor: each part over |c| (= 0), giving infinities or NaN.
    let e = b.binary_l(Div, a, abs_c);
    let re0 = b.let_("re0", e);
    let e = b.binary_l(Div, bb, abs_c);
    let im0 = b.let_("im0", e);
    let e = b.binary_l(Ge, abs_c, abs_d);
    let first = b.let_("first", e);
    let zero = |b: &mut Builder| b.expr(Expr::Literal(Literal::Float(0.0)), pt.clone());
    let cv = b.read(c);
    let z = zero(&mut b);
    let c0 = b.binary(Eq, cv, z);
    let dv = b.read(d);
    let z = zero(&mut b);
    let d0 = b.binary(Eq, dv, z);
    let e = b.binary(BitAnd, c0, d0);
    let both0 = b.let_("both0", e);
    let e = b.select_l(first, re1, re2);
    let re = b.let_("re", e);
    let e = b.select_l(first, im1, im2);
    let im = b.let_("im", e);
    let e = b.select_l(both0, re0, re);
    b.set(re, e);
    let e = b.select_l(both0, im0, im);
    b.set(im, e);
    let (rv, iv) = (b.read(re), b.read(im));
    let q = b.expr(
        Expr::Intrinsic(Intrinsic::Complex(ComplexOp::New), vec![rv, iv]),
        ct,
    );
    b.ret(q)
}
