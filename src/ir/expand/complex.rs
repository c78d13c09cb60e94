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
    use BinaryOp::{BitAnd, Div, Eq, Ge};
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
    let (re1, im1) = smith_step(&mut b, [a, bb, c, d], false, "1");
    // |c| < |d|: r = c/d, den = c r + d, q = ((a r + b) + (b r - a) i) / den
    let (re2, im2) = smith_step(&mut b, [a, bb, c, d], true, "2");
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

/// One branch of Smith's algorithm for `[a, b, c, d]` (the dividend's and the divisor's
/// parts), scaled by the divisor's larger part: `c` when not `flip` (`r = d/c`,
/// `den = c + d r`, `re = a + b r`, `im = b - a r`), `d` when `flip` (`r = c/d`,
/// `den = c r + d`, `re = a r + b`, `im = b r - a`). Each sum is a product by `r` and a part,
/// in the order written (the operand order of the emitted IR is that of the back ends'
/// former expansions). Returns the locals holding `re / den` and `im / den`; `n` suffixes
/// the locals' names.
fn smith_step(
    b: &mut Builder,
    [a, bb, c, d]: [Handle<Local>; 4],
    flip: bool,
    n: &str,
) -> (Handle<Local>, Handle<Local>) {
    use BinaryOp::{Add, Div, Mul, Sub};
    let (big, small) = if flip { (d, c) } else { (c, d) };
    // `p op q r` (or `q r op p` when flipped): the product first, then the part.
    let term = |b: &mut Builder, op: BinaryOp, p: Handle<Local>, q: Handle<Local>, r| {
        let qr = b.binary_l(Mul, q, r);
        let pv = b.read(p);
        if flip {
            b.binary(op, qr, pv)
        } else {
            b.binary(op, pv, qr)
        }
    };
    let e = b.binary_l(Div, small, big);
    let r = b.let_(&format!("r{n}"), e);
    let e = term(b, Add, big, small, r);
    let den = b.let_(&format!("den{n}"), e);
    let (p, q) = if flip { (bb, a) } else { (a, bb) };
    let e = term(b, Add, p, q, r);
    let re = b.let_(&format!("re{n}"), e);
    let e = term(b, Sub, q, p, r);
    let im = b.let_(&format!("im{n}"), e);
    let e = b.binary_l(Div, re, den);
    b.set(re, e);
    let e = b.binary_l(Div, im, den);
    b.set(im, e);
    (re, im)
}
