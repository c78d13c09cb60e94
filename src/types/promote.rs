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
    /// A Python `complex` (`1j`).
    Complex,
}

/// The types that Python's `int` and `float` stand for in a dialect.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Defaults {
    /// The type of `int` (`int32` in `cuda.device`).
    pub int: Scalar,
    /// The type of `float` (`float32` in `cuda.device`).
    pub float: Scalar,
    /// The type of `complex` (`complex64` in `cuda.device`).
    pub complex: Scalar,
}

impl Defaults {
    /// The `cuda.device` dialect: `int` is `int32`, `float` is `float32`.
    pub const CUDA_DEVICE: Defaults = Defaults {
        int: Scalar::Int32,
        float: Scalar::Float32,
        complex: Scalar::Complex64,
    };

    /// The numba-cuda dialect: `int` is `int64`, `float` is `float64`.
    pub const NUMBA: Defaults = Defaults {
        int: Scalar::Int64,
        float: Scalar::Float64,
        complex: Scalar::Complex128,
    };

    /// The type a weak number takes when nothing else decides it.
    pub fn of(self, w: Weak) -> Scalar {
        match w {
            Weak::Int => self.int,
            Weak::Float => self.float,
            Weak::Complex => self.complex,
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

/// The type an operand takes part in arithmetic as: `float32` for the fp8 storage formats,
/// the type itself otherwise.
pub fn arithmetic_type(s: Scalar) -> Scalar {
    if s.is_fp8() { Scalar::Float32 } else { s }
}

/// The result type of a binary arithmetic operation on two typed operands.
pub fn promote(a: Scalar, b: Scalar) -> Scalar {
    use Kind::*;
    let (a, b) = (arithmetic_type(a), arithmetic_type(b));
    if a == b {
        return a;
    }
    match (a.kind(), b.kind()) {
        (Complex, Complex) => Scalar::Complex128,
        (Complex, _) => Scalar::complex_of(promote(a.component(), b)),
        (_, Complex) => Scalar::complex_of(promote(a, b.component())),
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
    let strong = arithmetic_type(strong);
    match (strong.kind(), weak) {
        (Kind::Bool, w) => defaults.of(w),
        (Kind::Int | Kind::UInt, Weak::Int) => strong,
        (Kind::Int | Kind::UInt, Weak::Float) => defaults.float,
        (Kind::Int | Kind::UInt, Weak::Complex) => defaults.complex,
        (Kind::Float, Weak::Complex) => Scalar::complex_of(strong),
        (Kind::Float | Kind::Complex, _) => strong,
    }
}

/// The weak kind of an operation between two Python numbers.
pub fn promote_weak_weak(a: Weak, b: Weak) -> Weak {
    if a == Weak::Complex || b == Weak::Complex {
        Weak::Complex
    } else if a == Weak::Float || b == Weak::Float {
        Weak::Float
    } else {
        Weak::Int
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Scalar::*;

    /// The 15 dtypes of the table, in its column order.
    const COLUMNS: [Scalar; 15] = [
        Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, BFloat16, Float32,
        Float64, Complex64, Complex128,
    ];

    /// The expected result for every ordered pair of typed operands, written out so that a
    /// change to a rule shows up as a change here. Checked against NumPy 2.4's
    /// `np.result_type` (bfloat16 as ml_dtypes has it: float16's row, but float32 with
    /// float16).
    #[rustfmt::skip]
    const TABLE: [(Scalar, [Scalar; 15]); 15] = [
        // bool      i8          i16         i32         i64         u8          u16         u32         u64         f16         bf16        f32         f64         c64         c128
        (Bool,       [Bool,      Int8,       Int16,      Int32,      Int64,      UInt8,      UInt16,     UInt32,     UInt64,     Float16,    BFloat16,   Float32,    Float64,    Complex64,  Complex128]),
        (Int8,       [Int8,      Int8,       Int16,      Int32,      Int64,      Int16,      Int32,      Int64,      Float64,    Float16,    BFloat16,   Float32,    Float64,    Complex64,  Complex128]),
        (Int16,      [Int16,     Int16,      Int16,      Int32,      Int64,      Int16,      Int32,      Int64,      Float64,    Float32,    Float32,    Float32,    Float64,    Complex64,  Complex128]),
        (Int32,      [Int32,     Int32,      Int32,      Int32,      Int64,      Int32,      Int32,      Int64,      Float64,    Float64,    Float64,    Float64,    Float64,    Complex128, Complex128]),
        (Int64,      [Int64,     Int64,      Int64,      Int64,      Int64,      Int64,      Int64,      Int64,      Float64,    Float64,    Float64,    Float64,    Float64,    Complex128, Complex128]),
        (UInt8,      [UInt8,     Int16,      Int16,      Int32,      Int64,      UInt8,      UInt16,     UInt32,     UInt64,     Float16,    BFloat16,   Float32,    Float64,    Complex64,  Complex128]),
        (UInt16,     [UInt16,    Int32,      Int32,      Int32,      Int64,      UInt16,     UInt16,     UInt32,     UInt64,     Float32,    Float32,    Float32,    Float64,    Complex64,  Complex128]),
        (UInt32,     [UInt32,    Int64,      Int64,      Int64,      Int64,      UInt32,     UInt32,     UInt32,     UInt64,     Float64,    Float64,    Float64,    Float64,    Complex128, Complex128]),
        (UInt64,     [UInt64,    Float64,    Float64,    Float64,    Float64,    UInt64,     UInt64,     UInt64,     UInt64,     Float64,    Float64,    Float64,    Float64,    Complex128, Complex128]),
        (Float16,    [Float16,   Float16,    Float32,    Float64,    Float64,    Float16,    Float32,    Float64,    Float64,    Float16,    Float32,    Float32,    Float64,    Complex64,  Complex128]),
        (BFloat16,   [BFloat16,  BFloat16,   Float32,    Float64,    Float64,    BFloat16,   Float32,    Float64,    Float64,    Float32,    BFloat16,   Float32,    Float64,    Complex64,  Complex128]),
        (Float32,    [Float32,   Float32,    Float32,    Float64,    Float64,    Float32,    Float32,    Float64,    Float64,    Float32,    Float32,    Float32,    Float64,    Complex64,  Complex128]),
        (Float64,    [Float64,   Float64,    Float64,    Float64,    Float64,    Float64,    Float64,    Float64,    Float64,    Float64,    Float64,    Float64,    Float64,    Complex128, Complex128]),
        (Complex64,  [Complex64, Complex64,  Complex64,  Complex128, Complex128, Complex64,  Complex64,  Complex128, Complex128, Complex64,  Complex64,  Complex64,  Complex128, Complex64,  Complex128]),
        (Complex128, [Complex128,Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128, Complex128]),
    ];

    /// The typed operand with a Python `bool`, `int`, `float` and `complex` in `cuda.device`
    /// (NEP 50 with `int` = int32, `float` = float32, `complex` = complex64; a Python bool is
    /// the `bool` dtype, which never widens the other operand).
    #[rustfmt::skip]
    const WEAK: [(Scalar, [Scalar; 4]); 15] = [
        //            bool        int         float       complex
        (Bool,       [Bool,       Int32,      Float32,    Complex64]),
        (Int8,       [Int8,       Int8,       Float32,    Complex64]),
        (Int16,      [Int16,      Int16,      Float32,    Complex64]),
        (Int32,      [Int32,      Int32,      Float32,    Complex64]),
        (Int64,      [Int64,      Int64,      Float32,    Complex64]),
        (UInt8,      [UInt8,      UInt8,      Float32,    Complex64]),
        (UInt16,     [UInt16,     UInt16,     Float32,    Complex64]),
        (UInt32,     [UInt32,     UInt32,     Float32,    Complex64]),
        (UInt64,     [UInt64,     UInt64,     Float32,    Complex64]),
        (Float16,    [Float16,    Float16,    Float16,    Complex64]),
        (BFloat16,   [BFloat16,   BFloat16,   BFloat16,   Complex64]),
        (Float32,    [Float32,    Float32,    Float32,    Complex64]),
        (Float64,    [Float64,    Float64,    Float64,    Complex128]),
        (Complex64,  [Complex64,  Complex64,  Complex64,  Complex64]),
        (Complex128, [Complex128, Complex128, Complex128, Complex128]),
    ];

    #[test]
    fn every_pair_matches_the_table() {
        for ((left, row), col) in TABLE.iter().zip(COLUMNS) {
            assert_eq!(*left, col, "rows and columns in the same order");
            for (right, want) in COLUMNS.iter().zip(row.iter()) {
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
    fn every_typed_operand_with_every_python_number() {
        let d = Defaults::CUDA_DEVICE;
        for (s, row) in WEAK {
            let got = [
                promote(s, Bool),
                promote_weak(s, Weak::Int, d),
                promote_weak(s, Weak::Float, d),
                promote_weak(s, Weak::Complex, d),
            ];
            assert_eq!(got, row, "{s} with bool, int, float, complex");
        }
        // numba's dialect differs only in the defaults the weak numbers fall back to.
        let n = Defaults::NUMBA;
        assert_eq!(promote_weak(Int8, Weak::Float, n), Float64);
        assert_eq!(promote_weak(Int8, Weak::Complex, n), Complex128);
        assert_eq!(promote_weak(Float32, Weak::Complex, n), Complex64);
        let ww = |a, b| promote_weak_weak(a, b);
        assert_eq!(ww(Weak::Int, Weak::Int), Weak::Int);
        assert_eq!(ww(Weak::Int, Weak::Float), Weak::Float);
        assert_eq!(ww(Weak::Float, Weak::Complex), Weak::Complex);
        assert_eq!(ww(Weak::Int, Weak::Complex), Weak::Complex);
    }

    #[test]
    fn fp8_takes_part_as_float32() {
        for f8 in [Float8E4M3, Float8E5M2] {
            for s in Scalar::ALL {
                let want = promote(Float32, s);
                assert_eq!(promote(f8, s), want, "{f8} with {s}");
            }
            assert_eq!(promote_weak(f8, Weak::Int, Defaults::CUDA_DEVICE), Float32);
            assert_eq!(promote_weak(f8, Weak::Complex, Defaults::NUMBA), Complex64);
        }
    }
}
