//! Numeric promotion: the Python Array API standard's table for two typed operands, NumPy 2's
//! answers where the standard has none (mixed integer and float kinds, `int64` with `uint64`),
//! and NEP 50's rule for Python scalars (literals), which adapt to the typed operand.
//!
//! The rules are documented, with examples, in `docs/semantics.md` ("Numeric promotion").

use super::{Kind, Scalar};

/// A Python number whose type is not fixed yet: a literal, or a name bound to one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Weak {
    /// A Python `int`.
    Int,
    /// A Python `float`.
    Float,
}

/// The types that Python's `int` and `float` stand for in a dialect.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Defaults {
    /// The type of `int` (`int32` in `cuda.device`).
    pub int: Scalar,
    /// The type of `float` (`float32` in `cuda.device`).
    pub float: Scalar,
}

impl Defaults {
    /// The `cuda.device` dialect: `int` is `int32`, `float` is `float32`.
    pub const CUDA_DEVICE: Defaults = Defaults {
        int: Scalar::Int32,
        float: Scalar::Float32,
    };

    /// The numba-cuda dialect: `int` is `int64`, `float` is `float64`.
    pub const NUMBA: Defaults = Defaults {
        int: Scalar::Int64,
        float: Scalar::Float64,
    };

    /// The type a weak number takes when nothing else decides it.
    pub fn of(self, w: Weak) -> Scalar {
        match w {
            Weak::Int => self.int,
            Weak::Float => self.float,
        }
    }
}

/// The smallest float of `f`'s family that holds every value of integer type `s`, as NumPy
/// decides for mixed kinds: 8-bit integers fit `float16` (and `bfloat16`, whose 8 significant
/// bits hold them exactly), 16-bit ones need `float32`, wider ones `float64`.
fn float_for_int(s: Scalar, f: Scalar) -> Scalar {
    match s.bits() {
        8 if f.bits() == 16 => f,
        8 | 16 => Scalar::Float32,
        _ => Scalar::Float64,
    }
}

/// The result type of a binary arithmetic operation on two typed operands.
pub fn promote(a: Scalar, b: Scalar) -> Scalar {
    use Kind::*;
    if a == b {
        return a;
    }
    match (a.kind(), b.kind()) {
        (Bool, _) => b,
        (_, Bool) => a,
        (Float, Float) if a.bits() == 16 && b.bits() == 16 => {
            // float16 with bfloat16: neither holds the other (ml_dtypes also gives float32).
            Scalar::Float32
        }
        (Int, Int) | (UInt, UInt) | (Float, Float) => {
            if a.bits() >= b.bits() {
                a
            } else {
                b
            }
        }
        (Int, UInt) | (UInt, Int) => {
            let (s, u) = if a.kind() == Int { (a, b) } else { (b, a) };
            if u.bits() < s.bits() {
                s
            } else if u.bits() < 64 {
                Scalar::int(true, u.bits() * 2).unwrap_or(Scalar::Int64)
            } else {
                // uint64 with any signed integer: no integer holds both (NumPy: float64).
                Scalar::Float64
            }
        }
        (Float, _) => promote(a, float_for_int(b, a)),
        (_, Float) => promote(float_for_int(a, b), b),
    }
}

/// The result type of an operation between a typed operand and a Python number.
pub fn promote_weak(strong: Scalar, weak: Weak, defaults: Defaults) -> Scalar {
    match (strong.kind(), weak) {
        (Kind::Bool, w) => defaults.of(w),
        (Kind::Int | Kind::UInt, Weak::Int) => strong,
        (Kind::Int | Kind::UInt, Weak::Float) => defaults.float,
        (Kind::Float, _) => strong,
    }
}

/// The weak kind of an operation between two Python numbers.
pub fn promote_weak_weak(a: Weak, b: Weak) -> Weak {
    if a == Weak::Float || b == Weak::Float {
        Weak::Float
    } else {
        Weak::Int
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Scalar::*;

    /// The expected result for every ordered pair, written out as a table so that a change
    /// to a rule shows up as a change here.
    const TABLE: &[(Scalar, &[Scalar])] = &[
        // rows: left operand; columns in Scalar::ALL order:
        // bool  i8  i16  i32  i64  u8  u16  u32  u64  f16  bf16  f32  f64
        (
            Bool,
            &[
                Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, BFloat16,
                Float32, Float64,
            ],
        ),
        (
            Int8,
            &[
                Int8, Int8, Int16, Int32, Int64, Int16, Int32, Int64, Float64, Float16, BFloat16,
                Float32, Float64,
            ],
        ),
        (
            Int16,
            &[
                Int16, Int16, Int16, Int32, Int64, Int16, Int32, Int64, Float64, Float32, Float32,
                Float32, Float64,
            ],
        ),
        (
            Int32,
            &[
                Int32, Int32, Int32, Int32, Int64, Int32, Int32, Int64, Float64, Float64, Float64,
                Float64, Float64,
            ],
        ),
        (
            Int64,
            &[
                Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Float64, Float64, Float64,
                Float64, Float64,
            ],
        ),
        (
            UInt8,
            &[
                UInt8, Int16, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16,
                BFloat16, Float32, Float64,
            ],
        ),
        (
            UInt16,
            &[
                UInt16, Int32, Int32, Int32, Int64, UInt16, UInt16, UInt32, UInt64, Float32,
                Float32, Float32, Float64,
            ],
        ),
        (
            UInt32,
            &[
                UInt32, Int64, Int64, Int64, Int64, UInt32, UInt32, UInt32, UInt64, Float64,
                Float64, Float64, Float64,
            ],
        ),
        (
            UInt64,
            &[
                UInt64, Float64, Float64, Float64, Float64, UInt64, UInt64, UInt64, UInt64,
                Float64, Float64, Float64, Float64,
            ],
        ),
        (
            Float16,
            &[
                Float16, Float16, Float32, Float64, Float64, Float16, Float32, Float64, Float64,
                Float16, Float32, Float32, Float64,
            ],
        ),
        (
            BFloat16,
            &[
                BFloat16, BFloat16, Float32, Float64, Float64, BFloat16, Float32, Float64, Float64,
                Float32, BFloat16, Float32, Float64,
            ],
        ),
        (
            Float32,
            &[
                Float32, Float32, Float32, Float64, Float64, Float32, Float32, Float64, Float64,
                Float32, Float32, Float32, Float64,
            ],
        ),
        (Float64, &[Float64; 13]),
    ];

    #[test]
    fn every_pair_matches_the_table() {
        for (left, row) in TABLE {
            for (right, want) in Scalar::ALL.iter().zip(row.iter()) {
                assert_eq!(promote(*left, *right), *want, "{left} with {right}");
            }
        }
    }

    #[test]
    fn promotion_is_symmetric() {
        for a in Scalar::ALL {
            for b in Scalar::ALL {
                assert_eq!(promote(a, b), promote(b, a), "{a} with {b}");
            }
        }
    }

    #[test]
    fn weak_numbers_adapt_to_the_typed_operand() {
        let d = Defaults::CUDA_DEVICE;
        for s in Scalar::ALL {
            let int = promote_weak(s, Weak::Int, d);
            let float = promote_weak(s, Weak::Float, d);
            match s.kind() {
                Kind::Bool => assert_eq!((int, float), (Int32, Float32)),
                Kind::Int | Kind::UInt => assert_eq!((int, float), (s, Float32)),
                Kind::Float => assert_eq!((int, float), (s, s)),
            }
        }
        assert_eq!(promote_weak_weak(Weak::Int, Weak::Float), Weak::Float);
        assert_eq!(promote_weak_weak(Weak::Int, Weak::Int), Weak::Int);
    }
}
