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
    /// A number of a fixed type, such as a module-level `np.float32(6.28)` (the value is
    /// already rounded to the type). Not a Python number: it does not adapt to the other
    /// operand (§1.3) and is not folded with other constants.
    Typed(crate::types::Scalar, Box<Const>),
}

impl Const {
    /// The value as a float, for mixed arithmetic.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Const::Bool(b) => Some(f64::from(u8::from(*b))),
            Const::Int(i) => Some(*i as f64),
            Const::Float(f) => Some(*f),
            Const::Complex(..) | Const::Tuple(_) | Const::Typed(..) => None,
        }
    }

    /// The value as a complex number (real numbers with a zero imaginary part).
    pub fn as_complex(&self) -> Option<(f64, f64)> {
        match self {
            Const::Complex(re, im) => Some((*re, *im)),
            Const::Typed(..) => None,
            c => c.as_f64().map(|x| (x, 0.0)),
        }
    }

    /// The value as an integer, if it is one (or a bool).
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Const::Bool(b) => Some(i128::from(*b)),
            Const::Int(i) => Some(*i),
            Const::Typed(_, inner) => inner.as_int(),
            _ => None,
        }
    }
}

/// A constant converted to the number type `t` as NumPy's scalar constructors convert
/// Python numbers (`np.float32(6.28)` rounds to nearest; an integer must fit), for
/// `bool`, the integer types, `float32` and `float64`; `None` for anything else.
pub fn typed(t: crate::types::Scalar, c: &Const) -> Option<Const> {
    use crate::types::{Kind, Scalar};
    let inner = match (t.kind(), c) {
        (Kind::Bool, c) => Const::Bool(c.as_f64()? != 0.0),
        (Kind::Int | Kind::UInt, c) => {
            let i = c.as_int()?;
            if !crate::ir::literal_fits(crate::ir::Literal::Int(i), t) {
                return None;
            }
            Const::Int(i)
        }
        (Kind::Float, c) if t == Scalar::Float32 => Const::Float(f64::from(c.as_f64()? as f32)),
        (Kind::Float, c) if t == Scalar::Float64 => Const::Float(c.as_f64()?),
        _ => return None,
    };
    Some(Const::Typed(t, Box::new(inner)))
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
    if matches!(a, Const::Tuple(_) | Const::Typed(..))
        || matches!(b, Const::Tuple(_) | Const::Typed(..))
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
