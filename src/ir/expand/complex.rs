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
    use BinaryOp::{Div, Eq, Ge};
    let part = s.component();
    let ct = Type::Scalar(s);
    let b = Builder::new(
        &format!("complex_div_{s}"),
        &[("x", ct.clone()), ("y", ct.clone())],
        ct,
        span,
    );
    let mut c = Calc { b, t: part };
    let (a, bb) = c.parts(Handle::new(0), part);
    let (cc, d) = c.parts(Handle::new(1), part);
    let abs_c = c.fabs(cc);
    let abs_d = c.fabs(d);
    // |c| >= |d|: r = d/c, den = c + d r, q = ((a + b r) + (b - a r) i) / den
    let q1 = smith_step(&mut c, [a, bb, cc, d], false);
    // |c| < |d|: r = c/d, den = c r + d, q = ((a r + b) + (b r - a) i) / den
    let q2 = smith_step(&mut c, [a, bb, cc, d], true);
    // A zero divisor: each part over |c| (= 0), giving infinities or NaN.
    let q0 = (c.bin(Div, a, abs_c), c.bin(Div, bb, abs_c));
    let first = c.bin(Ge, abs_c, abs_d);
    let c0 = c.bin(Eq, cc, V::K(0.0));
    let d0 = c.bin(Eq, d, V::K(0.0));
    let both0 = c.and(c0, d0);
    let q = c.sel2(first, q1, q2);
    let q = c.sel2(both0, q0, q);
    c.ret_complex(q, s)
}

/// One branch of Smith's algorithm for `[a, b, c, d]` (the dividend's and the divisor's
/// parts), scaled by the divisor's larger part: `c` when not `flip` (`r = d/c`,
/// `den = c + d r`, `re = a + b r`, `im = b - a r`), `d` when `flip` (`r = c/d`,
/// `den = c r + d`, `re = a r + b`, `im = b r - a`). Each sum is a product by `r` and a part,
/// in the order written. Returns `(re / den, im / den)`.
fn smith_step(c: &mut Calc, [a, b, cc, d]: [V; 4], flip: bool) -> (V, V) {
    use BinaryOp::{Add, Div, Sub};
    let (big, small) = if flip { (d, cc) } else { (cc, d) };
    let r = c.div(small, big);
    // `p op q r` (or `q r op p` when flipped): the product first, then the part.
    let term = |c: &mut Calc, op: BinaryOp, p: V, q: V| {
        let qr = c.mul(q, r);
        if flip {
            c.bin(op, qr, p)
        } else {
            c.bin(op, p, qr)
        }
    };
    let den = term(c, Add, big, small);
    let (p, q) = if flip { (b, a) } else { (a, b) };
    let re = term(c, Add, p, q);
    let im = term(c, Sub, q, p);
    (c.bin(Div, re, den), c.bin(Div, im, den))
}
