//! Compile-time constants: the values of module-level globals and folded literal arithmetic,
//! with Python's semantics (arbitrary-precision integers within `i128`, floor division).

use crate::ir::BinaryOp;

/// A value known at compile time.
#[derive(Clone, Debug, PartialEq)]
pub enum Const {
    /// `True` / `False`
    Bool(bool),
    /// A Python `int`.
    Int(i128),
    /// A Python `float`.
    Float(f64),
    /// A Python `complex` (real, imaginary).
    Complex(f64, f64),
    /// A tuple of constants.
    Tuple(Vec<Const>),
    /// A NumPy array written out in the source (§1.3).
    Array(std::sync::Arc<crate::ir::ConstArray>),
    /// A typed NumPy scalar such as `np.float32(6.2831855)` (§1.3.1): the value, already
    /// converted to the type, is not a weak Python number.
    Typed(crate::types::Scalar, Box<Const>),
}

impl Const {
    /// `value` converted to the NumPy scalar type `s` as `np.<s>(value)` converts it, for
    /// the types whose values constants hold exactly (bool, integers, float32, float64):
    /// integers must fit (NumPy 2 raises otherwise), floats to integers truncate toward zero,
    /// float32 rounds to nearest even. `None` otherwise.
    pub fn typed(s: crate::types::Scalar, value: &Const) -> Option<Const> {
        use crate::types::Scalar as S;
        let inner = match (s, value) {
            (_, Const::Tuple(_) | Const::Array(_) | Const::Typed(..) | Const::Complex(..)) => {
                return None;
            }
            (S::Bool, v) => Const::Bool(v.as_f64()? != 0.0),
            (S::Float64, v) => Const::Float(v.as_f64()?),
            (S::Float32, v) => Const::Float(f64::from(v.as_f64()? as f32)),
            (s, v) if s.is_integer() => {
                let i = match v {
                    Const::Float(f) if f.is_finite() => f.trunc() as i128,
                    Const::Float(_) => return None,
                    v => v.as_int()?,
                };
                if !crate::ir::literal_fits(crate::ir::Literal::Int(i), s) {
                    return None;
                }
                Const::Int(i)
            }
            _ => return None,
        };
        Some(Const::Typed(s, Box::new(inner)))
    }

    /// The value as a float, for mixed arithmetic.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Const::Bool(b) => Some(f64::from(u8::from(*b))),
            Const::Int(i) => Some(*i as f64),
            Const::Float(f) => Some(*f),
            Const::Typed(_, c) => c.as_f64(),
            Const::Complex(..) | Const::Tuple(_) | Const::Array(_) => None,
        }
    }

    /// The value as a complex number (real numbers with a zero imaginary part).
    pub fn as_complex(&self) -> Option<(f64, f64)> {
        match self {
            Const::Complex(re, im) => Some((*re, *im)),
            Const::Typed(_, c) => c.as_complex(),
            c => c.as_f64().map(|x| (x, 0.0)),
        }
    }

    /// The value as an integer, if it is one (or a bool).
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Const::Bool(b) => Some(i128::from(*b)),
            Const::Int(i) => Some(*i),
            Const::Typed(_, c) => c.as_int(),
            _ => None,
        }
    }
}

/// Folds a call of a `math` function on constants as CPython's `math` module computes it
/// (the platform's libm, as CPython uses; `floor`, `ceil` and `trunc` give an `int`,
/// `isnan`/`isinf`/`isfinite` a `bool`). `None` where CPython raises: a domain error (a
/// NaN from arguments that are not NaN, `math.sqrt(-1.0)`, `math.log(0.0)`) or an overflow
/// (an infinity from finite arguments, `math.exp(1000.0)`), a complex or non-numeric
/// argument, the wrong number of arguments, and the functions CPython has but Rust's
/// standard library does not compute the same way (`erf`, `erfc`, `gamma`, `lgamma`,
/// `remainder`, `nextafter`): those stay host globals (docs/semantics.md §1.3).
pub fn fold_math(f: crate::ir::MathFn, args: &[Const]) -> Option<Const> {
    use crate::ir::MathFn as M;
    if args
        .iter()
        .any(|a| matches!(a, Const::Complex(..) | Const::Tuple(_) | Const::Array(_)))
    {
        return None;
    }
    let x: Vec<f64> = args.iter().map(Const::as_f64).collect::<Option<_>>()?;
    let to_int = |v: f64| -> Option<Const> {
        // Python: `math.floor(inf)` raises OverflowError, `math.floor(nan)` ValueError.
        (v.is_finite() && v.abs() < 1.0e38).then_some(Const::Int(v as i128))
    };
    let r = match (f, x.as_slice()) {
        (M::Floor, [a]) => {
            // An `int` argument is returned as it is (exact beyond 2**53).
            return match &args[0] {
                Const::Int(i) => Some(Const::Int(*i)),
                _ => to_int(a.floor()),
            };
        }
        (M::Ceil, [a]) => {
            return match &args[0] {
                Const::Int(i) => Some(Const::Int(*i)),
                _ => to_int(a.ceil()),
            };
        }
        (M::Trunc, [a]) => {
            return match &args[0] {
                Const::Int(i) => Some(Const::Int(*i)),
                _ => to_int(a.trunc()),
            };
        }
        (M::Isnan, [a]) => return Some(Const::Bool(a.is_nan())),
        (M::Isinf, [a]) => return Some(Const::Bool(a.is_infinite())),
        (M::Isfinite, [a]) => return Some(Const::Bool(a.is_finite())),
        (M::Sqrt, [a]) => a.sqrt(),
        (M::Exp, [a]) => a.exp(),
        (M::Exp2, [a]) => a.exp2(),
        (M::Expm1, [a]) => a.exp_m1(),
        (M::Log, [a]) => a.ln(),
        // CPython: `log(x, base)` is `log(x) / log(base)`.
        (M::Log, [a, b]) => {
            let (la, lb) = (a.ln(), b.ln());
            if lb == 0.0 || !la.is_finite() && a.is_finite() || !lb.is_finite() && b.is_finite() {
                return None;
            }
            la / lb
        }
        (M::Log2, [a]) => a.log2(),
        (M::Log10, [a]) => a.log10(),
        (M::Log1p, [a]) => a.ln_1p(),
        (M::Pow, [a, b]) => {
            // CPython: 0.0 ** negative raises; a negative base to a non-integral power too.
            if *a == 0.0 && *b < 0.0 {
                return None;
            }
            a.powf(*b)
        }
        (M::Sin, [a]) => a.sin(),
        (M::Cos, [a]) => a.cos(),
        (M::Tan, [a]) => a.tan(),
        (M::Asin, [a]) => a.asin(),
        (M::Acos, [a]) => a.acos(),
        (M::Atan, [a]) => a.atan(),
        (M::Atan2, [a, b]) => a.atan2(*b),
        (M::Sinh, [a]) => a.sinh(),
        (M::Cosh, [a]) => a.cosh(),
        (M::Tanh, [a]) => a.tanh(),
        (M::Asinh, [a]) => a.asinh(),
        (M::Acosh, [a]) => a.acosh(),
        (M::Atanh, [a]) => {
            // CPython: atanh(±1) is a domain error, not an infinity.
            if a.abs() == 1.0 {
                return None;
            }
            a.atanh()
        }
        (M::Fabs, [a]) => a.abs(),
        (M::Copysign, [a, b]) => a.copysign(*b),
        (M::Fmod, [a, b]) => {
            if *b == 0.0 || a.is_infinite() {
                return None;
            }
            a % b
        }
        (M::Hypot, [a, b]) => a.hypot(*b),
        (M::Cbrt, [a]) => a.cbrt(),
        (M::Degrees, [a]) => a * (180.0 / std::f64::consts::PI),
        (M::Radians, [a]) => a * (std::f64::consts::PI / 180.0),
        _ => return None,
    };
    let nan_in = x.iter().any(|v| v.is_nan());
    let inf_in = x.iter().any(|v| v.is_infinite());
    if r.is_nan() && !nan_in || r.is_infinite() && !inf_in {
        return None;
    }
    Some(Const::Float(r))
}

fn floor_div(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn floor_mod(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

/// CPython's `float_divmod`: floor quotient and remainder with the divisor's sign, rounded
/// so that `q * y + r` is as close to `x` as floats allow (`1 // 0.1 == 9.0`).
pub fn py_float_divmod(x: f64, y: f64) -> (f64, f64) {
    let mut m = x % y;
    let mut div = (x - m) / y;
    if m != 0.0 {
        if (y < 0.0) != (m < 0.0) {
            m += y;
            div -= 1.0;
        }
    } else {
        m = 0f64.copysign(y);
    }
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 { f + 1.0 } else { f }
    } else {
        0f64.copysign(x / y)
    };
    (q, m)
}

/// Folds a binary operation on two numeric constants as Python would; `None` when Python
/// would raise (division by zero) or the result leaves `i128`.
pub fn fold_binary(op: BinaryOp, a: &Const, b: &Const) -> Option<Const> {
    use BinaryOp::*;
    if matches!(a, Const::Tuple(_) | Const::Array(_) | Const::Typed(..))
        || matches!(b, Const::Tuple(_) | Const::Array(_) | Const::Typed(..))
    {
        return None;
    }
    if matches!(a, Const::Complex(..)) || matches!(b, Const::Complex(..)) {
        return fold_complex(op, a.as_complex()?, b.as_complex()?);
    }
    let ints = match (a, b) {
        (Const::Float(_), _) | (_, Const::Float(_)) => None,
        _ => Some((a.as_int()?, b.as_int()?)),
    };
    if let Some((x, y)) = ints {
        let v = match op {
            Add | AddNoWrap => x.checked_add(y)?,
            Sub => x.checked_sub(y)?,
            Mul => x.checked_mul(y)?,
            Div => {
                if y == 0 {
                    return None;
                }
                return Some(Const::Float(x as f64 / y as f64));
            }
            FloorDiv => floor_div(x, y)?,
            Mod => floor_mod(x, y)?,
            Pow => {
                if y < 0 {
                    return Some(Const::Float((x as f64).powf(y as f64)));
                }
                x.checked_pow(u32::try_from(y).ok()?)?
            }
            BitAnd => x & y,
            BitOr => x | y,
            BitXor => x ^ y,
            Shl => x
                .checked_shl(u32::try_from(y).ok()?)
                .filter(|r| r >> y == x)?,
            Shr => x >> y.clamp(0, 127),
            Min => x.min(y),
            Max => x.max(y),
            Eq => return Some(Const::Bool(x == y)),
            Ne => return Some(Const::Bool(x != y)),
            Lt => return Some(Const::Bool(x < y)),
            Le => return Some(Const::Bool(x <= y)),
            Gt => return Some(Const::Bool(x > y)),
            Ge => return Some(Const::Bool(x >= y)),
        };
        return Some(Const::Int(v));
    }
    let (x, y) = (a.as_f64()?, b.as_f64()?);
    let v = match op {
        Add | AddNoWrap => x + y,
        Sub => x - y,
        Mul => x * y,
        Div if y != 0.0 => x / y,
        FloorDiv if y != 0.0 => py_float_divmod(x, y).0,
        Mod if y != 0.0 => py_float_divmod(x, y).1,
        Pow => x.powf(y),
        Min => {
            if y < x {
                y
            } else {
                x
            }
        }
        Max => {
            if y > x {
                y
            } else {
                x
            }
        }
        Eq => return Some(Const::Bool(x == y)),
        Ne => return Some(Const::Bool(x != y)),
        Lt => return Some(Const::Bool(x < y)),
        Le => return Some(Const::Bool(x <= y)),
        Gt => return Some(Const::Bool(x > y)),
        Ge => return Some(Const::Bool(x >= y)),
        _ => return None,
    };
    Some(Const::Float(v))
}

/// Folds `+ - * /`, `==` and `!=` on complex constants (Python's other operators raise
/// `TypeError` on complex numbers; the type checker reports them). Division uses Smith's
/// algorithm, as the generated code does.
fn fold_complex(op: BinaryOp, (a, b): (f64, f64), (c, d): (f64, f64)) -> Option<Const> {
    use BinaryOp::*;
    let (re, im) = match op {
        Add | AddNoWrap => (a + c, b + d),
        Sub => (a - c, b - d),
        Mul => (a * c - b * d, a * d + b * c),
        Div if c == 0.0 && d == 0.0 => return None,
        Div if c.abs() >= d.abs() => {
            let r = d / c;
            let den = c + d * r;
            ((a + b * r) / den, (b - a * r) / den)
        }
        Div => {
            let r = c / d;
            let den = c * r + d;
            ((a * r + b) / den, (b * r - a) / den)
        }
        Eq => return Some(Const::Bool(a == c && b == d)),
        Ne => return Some(Const::Bool(a != c || b != d)),
        _ => return None,
    };
    Some(Const::Complex(re, im))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn math_calls_fold_as_cpython_computes_them() {
        use crate::ir::MathFn as M;
        let f = |m, args: &[f64]| {
            fold_math(
                m,
                &args.iter().map(|x| Const::Float(*x)).collect::<Vec<_>>(),
            )
        };
        // CPython: math.sqrt(2.0 / math.pi) == 0.7978845608028654
        assert_eq!(
            f(M::Sqrt, &[2.0 / std::f64::consts::PI]),
            Some(Const::Float(0.7978845608028654))
        );
        assert_eq!(f(M::Floor, &[2.5]), Some(Const::Int(2)));
        assert_eq!(f(M::Ceil, &[-2.5]), Some(Const::Int(-2)));
        assert_eq!(f(M::Log, &[8.0, 2.0]), Some(Const::Float(3.0)));
        assert_eq!(f(M::Isnan, &[f64::NAN]), Some(Const::Bool(true)));
        // Where CPython raises, there is no constant.
        assert_eq!(f(M::Sqrt, &[-1.0]), None);
        assert_eq!(f(M::Log, &[0.0]), None);
        assert_eq!(f(M::Exp, &[1000.0]), None);
        assert_eq!(f(M::Sin, &[f64::INFINITY]), None);
        assert_eq!(f(M::Atanh, &[1.0]), None);
        assert_eq!(f(M::Floor, &[f64::INFINITY]), None);
        assert_eq!(f(M::Pow, &[0.0, -1.0]), None);
        assert_eq!(f(M::Erf, &[0.5]), None);
        assert_eq!(f(M::Sqrt, &[1.0, 2.0]), None);
        // NaN in, NaN out, as CPython's math.sqrt(nan).
        assert!(matches!(f(M::Sqrt, &[f64::NAN]), Some(Const::Float(x)) if x.is_nan()));
        assert_eq!(
            fold_math(M::Floor, &[Const::Int(1 << 60)]),
            Some(Const::Int(1 << 60))
        );
    }

    #[test]
    fn python_integer_semantics() {
        let f = |op, a, b| fold_binary(op, &Const::Int(a), &Const::Int(b));
        assert_eq!(f(BinaryOp::FloorDiv, -7, 2), Some(Const::Int(-4)));
        assert_eq!(f(BinaryOp::Mod, -7, 2), Some(Const::Int(1)));
        assert_eq!(f(BinaryOp::Mod, 7, -2), Some(Const::Int(-1)));
        assert_eq!(f(BinaryOp::Div, 1, 2), Some(Const::Float(0.5)));
        assert_eq!(f(BinaryOp::Pow, 2, -1), Some(Const::Float(0.5)));
        assert_eq!(f(BinaryOp::FloorDiv, 1, 0), None);
        assert_eq!(f(BinaryOp::Shl, 1, 10), Some(Const::Int(1024)));
    }

    #[test]
    fn float_floor_division_matches_cpython() {
        assert_eq!(
            fold_binary(BinaryOp::FloorDiv, &Const::Int(1), &Const::Float(0.1)),
            Some(Const::Float(9.0))
        );
        assert_eq!(
            fold_binary(BinaryOp::Mod, &Const::Int(1), &Const::Float(0.1)),
            Some(Const::Float(0.09999999999999995))
        );
        assert_eq!(py_float_divmod(-7.5, 2.0), (-4.0, 0.5));
    }

    #[test]
    fn complex_constants_fold_like_python() {
        let f = |op, a, b| fold_binary(op, &a, &b);
        let j = Const::Complex(0.0, 1.0);
        assert_eq!(
            f(BinaryOp::Add, Const::Int(2), Const::Complex(0.0, 3.0)),
            Some(Const::Complex(2.0, 3.0))
        );
        assert_eq!(
            f(BinaryOp::Mul, j.clone(), j.clone()),
            Some(Const::Complex(-1.0, 0.0))
        );
        assert_eq!(
            f(BinaryOp::Div, Const::Int(1), j.clone()),
            Some(Const::Complex(0.0, -1.0))
        );
        assert_eq!(f(BinaryOp::Div, j.clone(), Const::Int(0)), None);
        assert_eq!(
            f(BinaryOp::Eq, Const::Float(1.0), Const::Complex(1.0, 0.0)),
            Some(Const::Bool(true))
        );
        assert_eq!(f(BinaryOp::Lt, j.clone(), j), None);
    }

    #[test]
    fn python_float_semantics() {
        let r = fold_binary(BinaryOp::Mod, &Const::Float(-7.5), &Const::Int(2));
        assert_eq!(r, Some(Const::Float(0.5)));
    }
}
