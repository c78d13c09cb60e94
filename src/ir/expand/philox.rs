//! `random.rand` and `random.randn` (docs/semantics.md §6.4), stated once for every back end:
//! Philox4x32-10 and the conversions of its words to floats, as IR over integer and float
//! operations, so that every back end gives the same bits as the reference (`crate::random`,
//! which the tests compare with).
//!
//! A draw `rand(T)` becomes a call of a helper `philox_rand_T()` that reads the three
//! primitives the back ends map: [`Intrinsic::RandSeed`], [`Intrinsic::RandThread`] and
//! [`Intrinsic::RandCall`] (which advances the thread's stream). It computes the Philox block `philox4x32_10([call_lo, call_hi,
//! thread_lo, thread_hi], [seed_lo, seed_hi])` and converts it: `rand(float32)` from word 0,
//! `rand(float64)` from words 0 and 1, `randn` from all four by Box–Muller in `float64` with
//! the reference's polynomials (only `+ - * /`, `sqrt` and exact bit operations, each
//! rounded once: helpers are never contracted).

use super::*;

/// The multipliers of the two Philox S-boxes.
const M0: u64 = 0xD251_1F53;
const M1: u64 = 0xCD9E_8D57;
/// The Weyl-sequence increments of the two key words.
const W0: u64 = 0x9E37_79B9;
const W1: u64 = 0xBB67_AE85;

const U32: Scalar = Scalar::UInt32;
const U64: Scalar = Scalar::UInt64;

/// The helper expression `e` of `f` must become a call of, if any: a `rand` or `randn`.
pub(super) fn wants_helper(f: &Function, e: Handle<Expr>) -> Option<Helper> {
    match (&f.exprs[e], f.ty(e).as_scalar()) {
        (Expr::Intrinsic(op @ (Intrinsic::Rand | Intrinsic::Randn), _), Some(s)) => {
            Some(Helper::Random(*op == Intrinsic::Randn, s))
        }
        _ => None,
    }
}

/// `philox_rand_T` (`normal` false) or `philox_randn_T`, `T` float32 or float64.
pub(super) fn function(normal: bool, s: Scalar, span: Span) -> Function {
    let name = format!("philox_{}_{s}", if normal { "randn" } else { "rand" });
    let b = Builder::new(&name, &[], Type::Scalar(s), span);
    let mut c = Calc {
        b,
        t: Scalar::Float64,
    };
    // The stream's position, read in this order (the last advances the stream).
    let [seed, thread, call] = [
        Intrinsic::RandSeed,
        Intrinsic::RandThread,
        Intrinsic::RandCall,
    ]
    .map(|op| {
        let e = c.b.expr(Expr::Intrinsic(op, Vec::new()), Type::Scalar(U64));
        c.bind(e)
    });
    let w = block(&mut c, seed, thread, call);
    let v = match (normal, s) {
        (false, Scalar::Float32) => {
            // (x >> 8) · 2⁻²⁴, exact.
            let x = c.bin(BinaryOp::Shr, w[0], V::I(8, U32));
            c.t = Scalar::Float32;
            let x = c.cast(x, Scalar::Float32);
            c.mul(x, V::K(1.0 / 16_777_216.0))
        }
        (false, _) => uniform_f64(&mut c, w[0], w[1]),
        (true, _) => {
            let z = normal_f64(&mut c, w);
            if s == Scalar::Float64 {
                z
            } else {
                c.cast(z, s)
            }
        }
    };
    c.ret(v)
}

/// The low and high 32-bit words of a `uint64`.
fn split(c: &mut Calc, v: V) -> (V, V) {
    let lo = c.cast(v, U32);
    let h = c.bin(BinaryOp::Shr, v, V::I(32, U64));
    (lo, c.cast(h, U32))
}

/// Philox4x32-10 of counter `[call_lo, call_hi, thread_lo, thread_hi]` and key
/// `[seed_lo, seed_hi]`: four `uint32` words.
fn block(c: &mut Calc, seed: V, thread: V, call: V) -> [V; 4] {
    let (c0, c1) = split(c, call);
    let (c2, c3) = split(c, thread);
    let mut w = [c0, c1, c2, c3];
    let (mut k0, mut k1) = split(c, seed);
    // The 64-bit product of a word and a multiplier, as its high and low words.
    let mul_wide = |c: &mut Calc, a: V, m: u64| {
        let a = c.cast(a, U64);
        let p = c.mul(a, V::I(m, U64));
        split(c, p)
    };
    for r in 0..10 {
        if r > 0 {
            k0 = c.add(k0, V::I(W0, U32));
            k1 = c.add(k1, V::I(W1, U32));
        }
        let (lo0, hi0) = mul_wide(c, w[0], M0);
        let (lo1, hi1) = mul_wide(c, w[2], M1);
        let x0 = c.bin(BinaryOp::BitXor, hi1, w[1]);
        let x0 = c.bin(BinaryOp::BitXor, x0, k0);
        let x2 = c.bin(BinaryOp::BitXor, hi0, w[3]);
        let x2 = c.bin(BinaryOp::BitXor, x2, k1);
        w = [x0, lo1, x2, lo0];
    }
    w
}

/// A `float64` uniform in [0, 1) from two words: the top 53 bits of `hi:lo` times 2⁻⁵³.
fn uniform_f64(c: &mut Calc, hi: V, lo: V) -> V {
    let h = c.cast(hi, U64);
    let h = c.bin(BinaryOp::Shl, h, V::I(32, U64));
    let l = c.cast(lo, U64);
    let bits = c.bin(BinaryOp::BitOr, h, l);
    let bits = c.bin(BinaryOp::Shr, bits, V::I(11, U64));
    let x = c.cast(bits, Scalar::Float64);
    c.mul(x, V::K(1.0 / 9_007_199_254_740_992.0))
}

/// `p(z) = k[0] + k[1] z + …` by Horner's rule, highest coefficient first.
fn horner(c: &mut Calc, k: &[f64], z: V) -> V {
    let mut p = V::K(k[k.len() - 1]);
    for &a in k[..k.len() - 1].iter().rev() {
        let pz = c.mul(p, z);
        p = c.add(pz, V::K(a));
    }
    p
}

/// A standard normal from a block (`crate::random::normal_f64`): `sqrt(-2 ln(1 - u1)) ·
/// cos(2π u2)` with the reference's `ln` and `cos_2pi`.
fn normal_f64(c: &mut Calc, w: [V; 4]) -> V {
    use crate::random::{COS_COEFFS, LN_COEFFS, SIN_COEFFS};
    let u1 = uniform_f64(c, w[0], w[1]);
    let u2 = uniform_f64(c, w[2], w[3]);
    // ln(y), y = 1 - u1: y = m · 2^e with m in [√½, √2), then e · ln 2 + ln m.
    let y = c.sub(V::K(1.0), u1);
    let bits = c.bitcast(y, U64);
    let e = c.bin(BinaryOp::Shr, bits, V::I(52, U64));
    let e = c.bin(BinaryOp::BitAnd, e, V::I(0x7ff, U64));
    let e = c.cast(e, Scalar::Int64);
    let e = c.sub(e, V::I(1023, Scalar::Int64));
    let mant = c.bin(BinaryOp::BitAnd, bits, V::I(0x000f_ffff_ffff_ffff, U64));
    let mant = c.bin(BinaryOp::BitOr, mant, V::I(0x3ff0_0000_0000_0000, U64));
    let m = c.bitcast(mant, Scalar::Float64);
    let big = c.bin(BinaryOp::Gt, m, V::K(std::f64::consts::SQRT_2));
    let half = c.mul(m, V::K(0.5));
    let m = c.sel(big, half, m);
    let bumped = c.add(e, V::I(1, Scalar::Int64));
    let e = c.sel(big, bumped, e);
    let (m1, p1) = (c.sub(m, V::K(1.0)), c.add(m, V::K(1.0)));
    let s = c.div(m1, p1);
    let s2 = c.mul(s, s);
    let p = horner(c, &LN_COEFFS, s2);
    let ef = c.cast(e, Scalar::Float64);
    let eln2 = c.mul(ef, V::K(std::f64::consts::LN_2));
    let two_s = c.mul(V::K(2.0), s);
    let sp = c.mul(two_s, p);
    let ln = c.add(eln2, sp);
    let l2 = c.mul(V::K(-2.0), ln);
    let r = c.math(MathFn::Sqrt, &[l2]);
    // cos(2π u2): the quadrant q and fraction of 4 u2 are exact.
    let t = c.mul(u2, V::K(4.0));
    let q = c.cast(t, U32);
    let qf = c.cast(q, Scalar::Float64);
    let fr = c.sub(t, qf);
    let swap = c.bin(BinaryOp::Gt, fr, V::K(0.5));
    let one_fr = c.sub(V::K(1.0), fr);
    let g = c.sel(swap, one_fr, fr);
    let x = c.mul(g, V::K(std::f64::consts::FRAC_PI_2));
    let z = c.mul(x, x);
    let hs = horner(c, &SIN_COEFFS, z);
    let sin = c.mul(x, hs);
    let cos = horner(c, &COS_COEFFS, z);
    let a = c.sel(swap, sin, cos);
    let bb = c.sel(swap, cos, sin);
    let (na, nb) = (c.neg(a), c.neg(bb));
    let mut is = |n: u64| c.bin(BinaryOp::Eq, q, V::I(n, U32));
    let (q3, q2, q1) = (is(3), is(2), is(1));
    let v = c.sel(q3, bb, a);
    let v = c.sel(q2, na, v);
    let v = c.sel(q1, nb, v);
    c.mul(r, v)
}
