//! Statements, loops and the pieces of `print`.

use super::*;

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What it does.
    pub kind: StmtKind,
    /// Where it came from.
    pub span: Span,
}

/// What kind of loop a [`StmtKind::Loop`] is, as far as its unrolling is concerned: the
/// PTX lowering unrolls a small run-time-stride loop four times, and tells ptxas not to
/// unroll it again (docs/semantics.md §4.3; `RuntimeStrideUnrollPass` in
/// lower/ptx/pipeline.cpp).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoopForm {
    /// A `while` loop, a `range` loop with a constant step, a loop over an array.
    #[default]
    Plain,
    /// A `range` loop whose step is known only at run time (a grid- or block-stride loop,
    /// `range(tid, n, grid_size)`), counted: its trip count is computed before it starts.
    RuntimeStride,
    /// A loop the program asks to unroll (cupyx's `jit.range(..., unroll=u)`, §15.4): `0`
    /// unrolls it fully (`unroll=True`), `1` not at all (`unroll=False`), `n` `n` times
    /// (LLVM's `llvm.loop.unroll.full` / `.disable` / `.count`).
    Unroll(u32),
}

/// The kinds of statement.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// Evaluate for effect.
    Eval(Handle<Expr>),
    /// `local = value`
    Assign(Handle<Local>, Handle<Expr>),
    /// `array[indices] = value`
    Store {
        /// The array.
        array: Handle<Expr>,
        /// One index per dimension.
        indices: Vec<Index>,
        /// The value, of the array's dtype.
        value: Handle<Expr>,
    },
    /// `*target = value`: a plain store through a reference (`array[i].x = v`).
    StoreRef {
        /// The reference (`Ref`).
        target: Handle<Expr>,
        /// The value, of the referenced type.
        value: Handle<Expr>,
    },
    /// `if cond: then else: otherwise`
    If {
        /// A `bool`.
        cond: Handle<Expr>,
        /// Taken when true.
        then: Block,
        /// Taken when false.
        otherwise: Block,
    },
    /// A loop: test `cond` (a `bool`, evaluated each time round), run `body`, then
    /// `continuing` (where `continue` goes, e.g. a `for` loop's increment).
    Loop {
        /// Evaluated before each iteration.
        cond: Handle<Expr>,
        /// The body.
        body: Block,
        /// Run after the body and after `continue`.
        continuing: Block,
        /// What kind of loop it is, for the PTX lowering's unrolling.
        form: LoopForm,
    },
    /// Leave the innermost loop.
    Break,
    /// Go to the innermost loop's `continuing`.
    Continue,
    /// Leave the function.
    Return(Option<Handle<Expr>>),
    /// `assert cond, "message"`: when `cond` (a `bool`) is false, fail as [`StmtKind::Raise`]
    /// does with `AssertionError: message`. Compiled out with `assertions=False`
    /// ([`ProgramOptions::skip_assertions`]); `cond` is then not evaluated.
    Assert {
        /// The condition.
        cond: Handle<Expr>,
        /// What the error says: `AssertionError` or `AssertionError: message`.
        message: String,
    },
    /// `raise SomeError("message")`: record the error (the first one of the launch or call
    /// wins) and stop the thread; the host reports it as an error value naming the line.
    Raise {
        /// What the error says: `ValueError: message`.
        message: String,
    },
    /// `print(...)`: write the pieces, in order, to standard output (`vprintf` on the
    /// device, C `printf` on the host).
    Print(Vec<PrintPiece>),
}

/// One piece of a `print`: literal text or one value with its printf conversion.
#[derive(Clone, Debug, PartialEq)]
pub enum PrintPiece {
    /// Text written as is.
    Text(String),
    /// A value, formatted by `conv`.
    Value {
        /// The value: an `int64` for [`PrintConv::Signed`], a `uint64` for
        /// [`PrintConv::Unsigned`], a `float64` for [`PrintConv::Float`], a `bool` for
        /// [`PrintConv::Bool`] (the checker promotes as C varargs do, to 64 bits).
        value: Handle<Expr>,
        /// How it is written.
        conv: PrintConv,
        /// The printf flags, width and precision between `%` and the conversion letter
        /// (only the characters `-+ #0123456789.`).
        spec: String,
        /// The conversion letter: `d`/`x`/`X`/`o` for integers (after `ll`), `f`/`F`/`e`/`E`/
        /// `g`/`G` for floats, `s` for bools, or [`PrintPiece::REPR`] for a float written as
        /// Python's `repr` writes it (`spec` is then `.N`, [`PrintPiece::repr_digits`]).
        letter: char,
    },
}

/// The C type a printed value is passed as.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PrintConv {
    /// `long long` (`int64`).
    Signed,
    /// `unsigned long long` (`uint64`).
    Unsigned,
    /// `double` (`float64`).
    Float,
    /// A `bool`, written `True` or `False` (passed as a `const char *`).
    Bool,
}

impl PrintPiece {
    /// The letter of a float written as Python's `repr` writes it: on the host the shortest
    /// digits that read back to the value at its width (`1.0`, `0.1`, `1e+16`); printf has
    /// no such conversion, so the device writes `%.Ng` (`N` = [`PrintPiece::repr_digits`])
    /// followed by `.0` when the value is integral and below `10**N` (a `%s` argument).
    pub const REPR: char = 'r';

    /// The significant digits the device prints a float of type `s` with in place of its
    /// `repr`: one more than the decimal digits the type always keeps (C's `DBL_DIG + 1`),
    /// so a value written with that many digits prints as written: 16 for `float64`
    /// (Python's switch to exponent notation at `1e16` then matches), 7 for `float32`, 4
    /// for `float16`, 3 for `bfloat16`. The host reads the width back from it.
    pub fn repr_digits(s: crate::types::Scalar) -> u32 {
        use crate::types::Scalar;
        match s {
            Scalar::Float64 => 16,
            Scalar::Float16 => 4,
            Scalar::BFloat16 => 3,
            _ => 7,
        }
    }

    /// The printf directive of a value piece (`%lld`, `%.3f`, `%s`), or the text of a text
    /// piece with `%` doubled. A [`PrintPiece::REPR`] piece is `%.Ng%s` (the value, then
    /// `.0` or nothing).
    pub fn printf(&self) -> String {
        match self {
            PrintPiece::Text(t) => t.replace('%', "%%"),
            PrintPiece::Value { spec, letter, .. } if *letter == PrintPiece::REPR => {
                format!("%{spec}g%s")
            }
            PrintPiece::Value {
                conv, spec, letter, ..
            } => {
                let ll = match conv {
                    PrintConv::Signed | PrintConv::Unsigned => "ll",
                    PrintConv::Float | PrintConv::Bool => "",
                };
                format!("%{spec}{ll}{letter}")
            }
        }
    }
}

/// A sequence of statements.
pub type Block = Vec<Stmt>;
