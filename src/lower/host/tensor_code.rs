//! The codes of the CPU back end's tensor-core collectives ([`WarpOp::Tensor`]): what the
//! emitted code (`emit::tensor`) and the runtime (`runtime::cpu_tensor`) agree on about an
//! operation and its lane buffers of 8-byte entries.
//!
//! [`WarpOp::Tensor`]: super::kernel::WarpOp::Tensor

use crate::types::tensor::{Fragment, FragmentElem, FragmentUse, MmaShape};

/// The kinds of tensor collective (the low 4 bits of the code).
pub const KIND_WMMA: u32 = 0;
/// `mma.mma_sync_m16n8k16`: 8 A, 4 B, 4 C entries, then 4 D.
pub const KIND_MMA16816: u32 = 1;
/// `mma.ldmatrix`: the lane's row address, then `2 * count` results (raw 16-bit values).
pub const KIND_LDMATRIX: u32 = 2;

/// The WMMA shapes, by their index in a code.
pub const SHAPES: [(u8, u8, u8); 5] = [
    (16, 16, 16),
    (32, 8, 16),
    (8, 32, 16),
    (16, 16, 8),
    (8, 8, 4),
];

/// The fragment element types, by their index in a code.
pub const ELEMS: [FragmentElem; 8] = [
    FragmentElem::F16,
    FragmentElem::BF16,
    FragmentElem::TF32,
    FragmentElem::F32,
    FragmentElem::F64,
    FragmentElem::S8,
    FragmentElem::U8,
    FragmentElem::S32,
];

/// The code of a WMMA `mma_sync` of A/B fragments of `input` and accumulators of `acc`.
pub fn wmma_code(
    shape: MmaShape,
    input: FragmentElem,
    acc: FragmentElem,
    sat: bool,
) -> Option<u32> {
    let s = SHAPES
        .iter()
        .position(|g| *g == (shape.m, shape.n, shape.k))? as u32;
    let i = ELEMS.iter().position(|e| *e == input)? as u32;
    let a = ELEMS.iter().position(|e| *e == acc)? as u32;
    Some(KIND_WMMA | s << 4 | i << 8 | a << 12 | u32::from(sat) << 16)
}

/// The fragments of a WMMA code: A, B and the accumulator, and `satfinite`.
pub fn wmma_fragments(code: u32) -> Option<(Fragment, Fragment, Fragment, bool)> {
    let (m, n, k) = *SHAPES.get(((code >> 4) & 15) as usize)?;
    let input = *ELEMS.get(((code >> 8) & 15) as usize)?;
    let acc = *ELEMS.get(((code >> 12) & 15) as usize)?;
    let shape = MmaShape { m, n, k };
    let frag = |usage, elem| Fragment {
        usage,
        shape,
        elem,
        layout: None,
    };
    Some((
        frag(FragmentUse::MatrixA, input),
        frag(FragmentUse::MatrixB, input),
        frag(FragmentUse::Accumulator, acc),
        code & (1 << 16) != 0,
    ))
}

/// The offsets (in entries) of A, B, C and D in a WMMA lane buffer.
pub fn wmma_offsets(a: &Fragment, b: &Fragment, c: &Fragment) -> [usize; 4] {
    let (ea, eb, ec) = (
        a.num_elements() as usize,
        b.num_elements() as usize,
        c.num_elements() as usize,
    );
    [0, ea, ea + eb, ea + eb + ec]
}
