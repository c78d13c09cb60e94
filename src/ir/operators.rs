//! Constants, Python operators and the axes of the thread hierarchy.

use super::*;

/// A constant.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Literal {
    /// A boolean.
    Bool(bool),
    /// An integer of the expression's type (two's complement bits for unsigned ones).
    Int(i128),
    /// A float of the expression's type.
    Float(f64),
    /// A complex number (real, imaginary) of the expression's (complex) type.
    Complex(f64, f64),
}

/// Unary operators.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `~x` on integers (on `bool`, logical not).
    Invert,
    /// `not x` on `bool`.
    Not,
    /// `abs(x)`
    Abs,
}

/// Binary operators; both operands have the result type, except shifts whose right operand
/// may be any integer, and comparisons whose result is `bool`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `+` that cannot overflow: the increment of a `range` loop's counter (Python's
    /// integers do not wrap), which lets the optimizer compute trip counts and unroll.
    AddNoWrap,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (operands are floats)
    Div,
    /// `//` (rounds toward negative infinity)
    FloorDiv,
    /// `%` (sign of the divisor)
    Mod,
    /// `**`
    Pow,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    Shl,
    /// `>>` (arithmetic for signed types)
    Shr,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl BinaryOp {
    /// True for the six comparisons.
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge)
    }

    /// The Python spelling.
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "+",
            AddNoWrap => "+nw",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Mod => "%",
            Pow => "**",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Shl => "<<",
            Shr => ">>",
            Min => "min",
            Max => "max",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
        }
    }
}

/// A dimension of the thread hierarchy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// `.x`
    X,
    /// `.y`
    Y,
    /// `.z`
    Z,
}

impl Axis {
    /// The axis of an index 0..3.
    pub fn from_index(i: usize) -> Option<Axis> {
        [Axis::X, Axis::Y, Axis::Z].get(i).copied()
    }

    /// The letter.
    pub fn letter(self) -> char {
        match self {
            Axis::X => 'x',
            Axis::Y => 'y',
            Axis::Z => 'z',
        }
    }
}

/// Whether a literal's value is representable in scalar type `s` (integers against the
/// type's range; floats and bools always are).
pub fn literal_fits(lit: Literal, s: Scalar) -> bool {
    match lit {
        Literal::Int(v) => {
            if s.is_float() || s.is_complex() || s == Scalar::Bool {
                return true;
            }
            let bits = s.bits();
            if s.is_signed() {
                let min = -(1i128 << (bits - 1));
                let max = (1i128 << (bits - 1)) - 1;
                (min..=max).contains(&v)
            } else {
                (0..(1i128 << bits)).contains(&v)
            }
        }
        _ => true,
    }
}
