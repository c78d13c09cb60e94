//! Tensor-core types: the warp-wide matrix fragments of `device.wmma` (CUDA's
//! `nvcuda::wmma::fragment`) and the facts the front end and the PTX back end share about
//! them: which role, shape, element type and layout combinations exist, how many registers
//! a fragment holds, and of what kind.
//!
//! The combinations are those of CUDA's `nvcuda::wmma` and of LLVM 19's
//! `llvm.nvvm.wmma.*` intrinsics (`IntrinsicsNVVM.td`, `NVVM_MMA_OPS`); nothing else
//! lists them.

use super::Scalar;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a fragment holds in `D = A·B + C` (CUDA's `wmma::matrix_a`, `matrix_b`,
/// `accumulator`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FragmentUse {
    /// The M×K left operand.
    MatrixA,
    /// The K×N right operand.
    MatrixB,
    /// The M×N accumulator (C and D).
    Accumulator,
}

impl FragmentUse {
    /// The spelling of `wmma.fragment`'s `use` argument.
    pub fn name(self) -> &'static str {
        match self {
            FragmentUse::MatrixA => "matrix_a",
            FragmentUse::MatrixB => "matrix_b",
            FragmentUse::Accumulator => "accumulator",
        }
    }

    /// Parses [`FragmentUse::name`].
    pub fn from_name(s: &str) -> Option<FragmentUse> {
        [
            FragmentUse::MatrixA,
            FragmentUse::MatrixB,
            FragmentUse::Accumulator,
        ]
        .into_iter()
        .find(|u| u.name() == s)
    }

    /// Its name with an indefinite article (`a matrix_a`, `an accumulator`), for messages.
    pub fn with_article(self) -> String {
        match self {
            FragmentUse::Accumulator => "an accumulator".into(),
            u => format!("a {}", u.name()),
        }
    }

    /// PTX's letter for it in `wmma.load.{a,b,c}`.
    pub fn letter(self) -> &'static str {
        match self {
            FragmentUse::MatrixA => "a",
            FragmentUse::MatrixB => "b",
            FragmentUse::Accumulator => "c",
        }
    }
}

/// How a matrix lies in memory (CUDA's `wmma::row_major`, `wmma::col_major`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MatrixLayout {
    /// Rows are contiguous: element (i, j) is at `i * ldm + j`.
    RowMajor,
    /// Columns are contiguous: element (i, j) is at `j * ldm + i`.
    ColMajor,
}

impl MatrixLayout {
    /// The spelling of the `layout` arguments.
    pub fn name(self) -> &'static str {
        match self {
            MatrixLayout::RowMajor => "row_major",
            MatrixLayout::ColMajor => "col_major",
        }
    }

    /// Parses [`MatrixLayout::name`].
    pub fn from_name(s: &str) -> Option<MatrixLayout> {
        match s {
            "row_major" => Some(MatrixLayout::RowMajor),
            "col_major" => Some(MatrixLayout::ColMajor),
            _ => None,
        }
    }

    /// PTX's spelling (`row`, `col`).
    pub fn ptx(self) -> &'static str {
        match self {
            MatrixLayout::RowMajor => "row",
            MatrixLayout::ColMajor => "col",
        }
    }
}

/// The element type of a fragment: a number type, or TF32 (CUDA's
/// `wmma::precision::tf32`, `float32` in memory, 10 mantissa bits in the multiplication).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FragmentElem {
    /// `float16`
    F16,
    /// `bfloat16`
    BF16,
    /// `wmma.tf32`
    TF32,
    /// `float32` (accumulators)
    F32,
    /// `float64`
    F64,
    /// `int8`
    S8,
    /// `uint8`
    U8,
    /// `int32` (accumulators)
    S32,
}

impl FragmentElem {
    /// The element type of a number type, if fragments can hold it.
    pub fn of(s: Scalar) -> Option<FragmentElem> {
        Some(match s {
            Scalar::Float16 => FragmentElem::F16,
            Scalar::BFloat16 => FragmentElem::BF16,
            Scalar::Float32 => FragmentElem::F32,
            Scalar::Float64 => FragmentElem::F64,
            Scalar::Int8 => FragmentElem::S8,
            Scalar::UInt8 => FragmentElem::U8,
            Scalar::Int32 => FragmentElem::S32,
            _ => return None,
        })
    }

    /// The type of the elements in memory (and of `fill_fragment`'s value).
    pub fn scalar(self) -> Scalar {
        match self {
            FragmentElem::F16 => Scalar::Float16,
            FragmentElem::BF16 => Scalar::BFloat16,
            FragmentElem::TF32 | FragmentElem::F32 => Scalar::Float32,
            FragmentElem::F64 => Scalar::Float64,
            FragmentElem::S8 => Scalar::Int8,
            FragmentElem::U8 => Scalar::UInt8,
            FragmentElem::S32 => Scalar::Int32,
        }
    }

    /// PTX's name of the type (`f16`, `tf32`, `s32`).
    pub fn ptx(self) -> &'static str {
        match self {
            FragmentElem::F16 => "f16",
            FragmentElem::BF16 => "bf16",
            FragmentElem::TF32 => "tf32",
            FragmentElem::F32 => "f32",
            FragmentElem::F64 => "f64",
            FragmentElem::S8 => "s8",
            FragmentElem::U8 => "u8",
            FragmentElem::S32 => "s32",
        }
    }

    /// The name in the dialect (`float16`, `tf32`).
    pub fn name(self) -> &'static str {
        match self {
            FragmentElem::TF32 => "tf32",
            e => e.scalar().name(),
        }
    }

    /// The oldest architecture whose tensor cores take it (sm_75 is the oldest pydevice
    /// compiles for; f16 needs sm_70, int8 sm_72, the rest sm_80).
    pub fn min_sm(self) -> u32 {
        match self {
            FragmentElem::F16 | FragmentElem::F32 | FragmentElem::S8 | FragmentElem::U8 => 75,
            FragmentElem::S32 => 75,
            FragmentElem::BF16 | FragmentElem::TF32 | FragmentElem::F64 => 80,
        }
    }
}

/// One register of a fragment, as LLVM's intrinsics type it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FragmentReg {
    /// `<2 x half>`: two float16 elements.
    F16x2,
    /// `float`: one float32 element.
    F32,
    /// `double`: one float64 element.
    F64,
    /// `i32`: two bfloat16, four int8/uint8, one tf32 or one int32 element.
    I32,
}

/// The M×N×K shape of one tensor-core operation (CUDA's fragment template arguments
/// `m, n, k`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MmaShape {
    /// Rows of A, C and D.
    pub m: u8,
    /// Columns of B, C and D.
    pub n: u8,
    /// Columns of A, rows of B.
    pub k: u8,
}

impl fmt::Display for MmaShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m{}n{}k{}", self.m, self.n, self.k)
    }
}

/// The type of a warp-wide matrix fragment (`wmma.fragment(use, (m, n, k), dtype,
/// layout)`): a fixed set of registers in each thread of a warp, whose assignment of matrix
/// elements to threads is unspecified (CUDA's `nvcuda::wmma::fragment`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fragment {
    /// A, B or the accumulator.
    pub usage: FragmentUse,
    /// The operation's shape.
    pub shape: MmaShape,
    /// The element type.
    pub elem: FragmentElem,
    /// The layout of A and B fragments (accumulators take one at each load and store).
    pub layout: Option<MatrixLayout>,
}

/// A WMMA shape `(m, n, k)` and the input types it takes.
type WmmaShape = ((u8, u8, u8), &'static [FragmentElem]);

/// The WMMA shapes, with the input types each takes (CUDA's `nvcuda::wmma`).
const WMMA: &[WmmaShape] = {
    use FragmentElem::*;
    &[
        ((16, 16, 16), &[F16, BF16, S8, U8]),
        ((32, 8, 16), &[F16, BF16, S8, U8]),
        ((8, 32, 16), &[F16, BF16, S8, U8]),
        ((16, 16, 8), &[TF32]),
        ((8, 8, 4), &[F64]),
    ]
};

impl Fragment {
    /// Whether CUDA has this fragment type; `Err` says why not.
    pub fn check(&self) -> Result<(), String> {
        use FragmentElem::*;
        let s = self.shape;
        let Some((_, inputs)) = WMMA.iter().find(|(g, _)| *g == (s.m, s.n, s.k)) else {
            return Err(format!(
                "there is no WMMA shape {s}; the shapes are m16n16k16, m32n8k16, m8n32k16 \
                 (float16, bfloat16, int8, uint8), m16n16k8 (tf32) and m8n8k4 (float64)"
            ));
        };
        let acc_ok = |e: FragmentElem| match e {
            F16 => inputs.contains(&F16),
            F32 => inputs.iter().any(|e| matches!(e, F16 | BF16 | TF32)),
            S32 => inputs.contains(&S8),
            F64 => inputs.contains(&F64),
            BF16 | TF32 | S8 | U8 => false,
        };
        let ok = match self.usage {
            FragmentUse::MatrixA | FragmentUse::MatrixB => inputs.contains(&self.elem),
            FragmentUse::Accumulator => acc_ok(self.elem),
        };
        if !ok {
            let what = match self.usage {
                FragmentUse::Accumulator => [F16, F32, S32, F64]
                    .into_iter()
                    .filter(|e| acc_ok(*e))
                    .map(FragmentElem::name)
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => inputs
                    .iter()
                    .map(|e| e.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            return Err(format!(
                "{} fragment of shape {s} cannot hold {}; it holds {what}",
                self.usage.with_article(),
                self.elem.name()
            ));
        }
        match (self.usage, self.layout) {
            (FragmentUse::Accumulator, Some(_)) => {
                Err("an accumulator fragment has no layout; give one to `load_matrix_sync` and `store_matrix_sync` instead".into())
            }
            (FragmentUse::MatrixA | FragmentUse::MatrixB, None) => Err(format!(
                "a {} fragment needs a layout, 'row_major' or 'col_major'",
                self.usage.name()
            )),
            _ => Ok(()),
        }
    }

    /// The registers each thread holds: their kind and number (LLVM's `WMMA_REGS`).
    pub fn regs(&self) -> (FragmentReg, u32) {
        use FragmentElem::*;
        let s = (self.shape.m, self.shape.n, self.shape.k);
        let a = self.usage == FragmentUse::MatrixA;
        match (self.usage, self.elem) {
            (FragmentUse::Accumulator, F16) => (FragmentReg::F16x2, 4),
            (FragmentUse::Accumulator, F32) => (FragmentReg::F32, 8),
            (FragmentUse::Accumulator, S32) => (FragmentReg::I32, 8),
            (FragmentUse::Accumulator, _) => (FragmentReg::F64, 2),
            (_, F16) => (FragmentReg::F16x2, 8),
            (_, TF32) => (FragmentReg::I32, 4),
            (_, F64) => (FragmentReg::F64, 1),
            (_, BF16) => match (s, a) {
                ((16, 16, 16), _) => (FragmentReg::I32, 4),
                ((8, 32, 16), true) | ((32, 8, 16), false) => (FragmentReg::I32, 2),
                _ => (FragmentReg::I32, 8),
            },
            // int8 and uint8.
            _ => match (s, a) {
                ((16, 16, 16), _) => (FragmentReg::I32, 2),
                ((8, 32, 16), true) | ((32, 8, 16), false) => (FragmentReg::I32, 1),
                _ => (FragmentReg::I32, 4),
            },
        }
    }

    /// The number of elements each thread holds (CUDA's `num_elements`).
    pub fn num_elements(&self) -> u32 {
        let (reg, n) = self.regs();
        let per = match (reg, self.elem) {
            (FragmentReg::F16x2, _) => 2,
            (FragmentReg::I32, FragmentElem::BF16) => 2,
            (FragmentReg::I32, FragmentElem::S8 | FragmentElem::U8) => 4,
            _ => 1,
        };
        n * per
    }

    /// The rows and columns of the matrix this fragment holds.
    pub fn rows_cols(&self) -> (u8, u8) {
        let s = self.shape;
        match self.usage {
            FragmentUse::MatrixA => (s.m, s.k),
            FragmentUse::MatrixB => (s.k, s.n),
            FragmentUse::Accumulator => (s.m, s.n),
        }
    }
}

impl fmt::Display for Fragment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fragment[{}, {}, {}",
            self.usage.name(),
            self.shape,
            self.elem.name()
        )?;
        if let Some(l) = self.layout {
            write!(f, ", {}", l.name())?;
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(usage: FragmentUse, m: u8, n: u8, k: u8, elem: FragmentElem) -> Fragment {
        let layout = (usage != FragmentUse::Accumulator).then_some(MatrixLayout::RowMajor);
        Fragment {
            usage,
            shape: MmaShape { m, n, k },
            elem,
            layout,
        }
    }

    #[test]
    fn cuda_combinations_are_accepted_and_others_refused() {
        use FragmentElem::*;
        use FragmentUse::*;
        assert!(frag(MatrixA, 16, 16, 16, F16).check().is_ok());
        assert!(frag(Accumulator, 16, 16, 16, F16).check().is_ok());
        assert!(frag(Accumulator, 16, 16, 8, F32).check().is_ok());
        assert!(frag(MatrixB, 16, 16, 8, TF32).check().is_ok());
        assert!(frag(Accumulator, 8, 8, 4, F64).check().is_ok());
        assert!(frag(Accumulator, 32, 8, 16, S32).check().is_ok());
        assert!(frag(MatrixA, 16, 16, 8, F16).check().is_err());
        assert!(frag(MatrixA, 16, 16, 16, F32).check().is_err());
        assert!(frag(Accumulator, 16, 16, 8, F16).check().is_err());
        assert!(frag(Accumulator, 8, 8, 4, F32).check().is_err());
        assert!(frag(MatrixA, 16, 8, 16, F16).check().is_err());
    }

    #[test]
    fn register_counts_match_llvm() {
        use FragmentElem::*;
        use FragmentUse::*;
        assert_eq!(
            frag(MatrixA, 16, 16, 16, F16).regs(),
            (FragmentReg::F16x2, 8)
        );
        assert_eq!(frag(MatrixA, 8, 32, 16, BF16).regs(), (FragmentReg::I32, 2));
        assert_eq!(frag(MatrixB, 8, 32, 16, BF16).regs(), (FragmentReg::I32, 8));
        assert_eq!(frag(MatrixA, 32, 8, 16, U8).regs(), (FragmentReg::I32, 4));
        assert_eq!(frag(MatrixB, 32, 8, 16, S8).regs(), (FragmentReg::I32, 1));
        assert_eq!(frag(MatrixA, 16, 16, 16, F16).num_elements(), 16);
        assert_eq!(frag(Accumulator, 16, 16, 16, F32).num_elements(), 8);
        assert_eq!(frag(MatrixA, 16, 16, 16, S8).num_elements(), 8);
    }
}
