//! The math functions of Python's `math` and `cmath` modules that device code can call.

/// The functions of Python's `math` module that device code can call.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum MathFn {
    Sqrt,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Pow,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    Erfc,
    Gamma,
    Lgamma,
    Floor,
    Ceil,
    Trunc,
    Fabs,
    Copysign,
    Fmod,
    Hypot,
    Isnan,
    Isinf,
    Isfinite,
    Cbrt,
    /// `math.remainder(x, y)`: IEEE remainder
    Remainder,
    /// `math.nextafter(x, y)`
    Nextafter,
    /// `math.degrees(x)`: `x * (180 / pi)`, one multiplication, as numba does
    Degrees,
    /// `math.radians(x)`: `x * (pi / 180)`
    Radians,
    /// Round to the nearest integer, ties to even (`round(x)`, `cuda.fp16.hrint`; not a
    /// `math` function)
    Rint,
    /// `10 ** x` (`cuda.fp16.hexp10`; not a `math` function)
    Exp10,
    /// `1 / sqrt(x)` (`device.rsqrt`, numba's `cuda.libdevice.rsqrt`; not a `math`
    /// function): CUDA's `rsqrtf`/`rsqrt` on the device (docs/semantics.md §11.2)
    Rsqrt,
}

impl MathFn {
    /// Every function, for tables and tests.
    pub const ALL: [MathFn; 44] = {
        use MathFn::*;
        [
            Sqrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Pow, Sin, Cos, Tan, Asin, Acos, Atan,
            Atan2, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh, Erf, Erfc, Gamma, Lgamma, Floor, Ceil,
            Trunc, Fabs, Copysign, Fmod, Hypot, Isnan, Isinf, Isfinite, Cbrt, Remainder, Nextafter,
            Degrees, Radians, Rint, Exp10, Rsqrt,
        ]
    };

    /// The Python name (`math.<name>`).
    pub fn name(self) -> &'static str {
        use MathFn::*;
        match self {
            Sqrt => "sqrt",
            Exp => "exp",
            Exp2 => "exp2",
            Expm1 => "expm1",
            Log => "log",
            Log2 => "log2",
            Log10 => "log10",
            Log1p => "log1p",
            Pow => "pow",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Asin => "asin",
            Acos => "acos",
            Atan => "atan",
            Atan2 => "atan2",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Asinh => "asinh",
            Acosh => "acosh",
            Atanh => "atanh",
            Erf => "erf",
            Erfc => "erfc",
            Gamma => "gamma",
            Lgamma => "lgamma",
            Floor => "floor",
            Ceil => "ceil",
            Trunc => "trunc",
            Fabs => "fabs",
            Copysign => "copysign",
            Fmod => "fmod",
            Hypot => "hypot",
            Isnan => "isnan",
            Isinf => "isinf",
            Isfinite => "isfinite",
            Cbrt => "cbrt",
            Remainder => "remainder",
            Nextafter => "nextafter",
            Degrees => "degrees",
            Radians => "radians",
            Rint => "rint",
            Exp10 => "exp10",
            Rsqrt => "rsqrt",
        }
    }

    /// The C math library's name of the `double` version (`tgamma` for `gamma`, otherwise the
    /// Python name), which both back ends call: the host's C library as is (`f` appended for
    /// `float`), libdevice with its `__nv_` prefix. The one table of these names.
    pub fn c_name(self) -> &'static str {
        match self {
            MathFn::Gamma => "tgamma",
            f => f.name(),
        }
    }

    /// Looks a `math` function up by name (`rint`, `exp10` and `rsqrt` are internal: `math`
    /// has no such functions).
    pub fn from_name(s: &str) -> Option<MathFn> {
        MathFn::ALL
            .into_iter()
            .find(|f| f.name() == s && !matches!(f, MathFn::Rint | MathFn::Exp10 | MathFn::Rsqrt))
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        use MathFn::*;
        match self {
            Pow | Atan2 | Copysign | Fmod | Hypot | Remainder | Nextafter => 2,
            _ => 1,
        }
    }
}

/// Operations on complex numbers other than the arithmetic operators: construction, parts,
/// and the functions of Python's `cmath` module. The result type is the expression's.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ComplexOp {
    /// `complex64(re, im)`: two floats of the complex type's part type.
    New,
    /// `z.real`
    Real,
    /// `z.imag`
    Imag,
    /// `z.conjugate()`
    Conj,
    /// `abs(z)`, `cmath.abs`: the modulus, `hypot(re, im)`
    Abs,
    /// `cmath.phase(z)`: `atan2(im, re)`
    Phase,
    /// `cmath.exp`
    Exp,
    /// `cmath.log` (principal branch)
    Log,
    /// `cmath.log10`: `log(z)` with both parts divided by `ln 10`, as CPython computes it
    Log10,
    /// `cmath.sqrt` (principal branch)
    Sqrt,
    /// `cmath.sin`
    Sin,
    /// `cmath.cos`
    Cos,
    /// `cmath.tan`
    Tan,
    /// `cmath.asin`
    Asin,
    /// `cmath.acos`
    Acos,
    /// `cmath.atan`
    Atan,
    /// `cmath.sinh`
    Sinh,
    /// `cmath.cosh`
    Cosh,
    /// `cmath.tanh`
    Tanh,
    /// `cmath.asinh`
    Asinh,
    /// `cmath.acosh`
    Acosh,
    /// `cmath.atanh`
    Atanh,
    /// `cmath.rect(r, phi)`: two floats
    Rect,
    /// `z ** w` with two complex operands, where `w` is not a small integer constant
    /// (CPython's `c_pow`)
    Pow,
    /// `cmath.isfinite(z)`: both parts finite (bool)
    IsFinite,
    /// `cmath.isnan(z)`: either part NaN (bool)
    IsNan,
    /// `cmath.isinf(z)`: either part infinite (bool)
    IsInf,
}

impl ComplexOp {
    /// The `cmath` function of a name (`polar` is built from `Abs` and `Phase`).
    pub fn cmath(name: &str) -> Option<ComplexOp> {
        Some(match name {
            "exp" => ComplexOp::Exp,
            "log" => ComplexOp::Log,
            "log10" => ComplexOp::Log10,
            "sqrt" => ComplexOp::Sqrt,
            "sin" => ComplexOp::Sin,
            "cos" => ComplexOp::Cos,
            "tan" => ComplexOp::Tan,
            "asin" => ComplexOp::Asin,
            "acos" => ComplexOp::Acos,
            "atan" => ComplexOp::Atan,
            "sinh" => ComplexOp::Sinh,
            "cosh" => ComplexOp::Cosh,
            "tanh" => ComplexOp::Tanh,
            "asinh" => ComplexOp::Asinh,
            "acosh" => ComplexOp::Acosh,
            "atanh" => ComplexOp::Atanh,
            "phase" => ComplexOp::Phase,
            "rect" => ComplexOp::Rect,
            "isfinite" => ComplexOp::IsFinite,
            "isnan" => ComplexOp::IsNan,
            "isinf" => ComplexOp::IsInf,
            _ => return None,
        })
    }
}
