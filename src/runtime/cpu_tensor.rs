//! The tensor-core operations of a kernel run on the CPU (docs/semantics.md §22.1): warp
//! collectives over the 32 lanes' fragment buffers (`WarpOp::Tensor`, with the codes of
//! `lower::host::tensor_code`). Each lane passes the address of a buffer of
//! 8-byte entries (floats as `f64`, integers as `i64`, addresses as `u64`) that its code
//! filled (`lower::host::emit::tensor`); when the whole warp has arrived, [`run`] reads
//! every lane's operands, computes, and writes each lane's results into its buffer.
//!
//! - **WMMA** (`wmma.mma_sync`): how a fragment's elements are spread over the lanes is
//!   unspecified (CUDA: "opaque"); on the CPU element `s` of lane `l` is element
//!   `(l * E + s) % (R * C)` of the R×C matrix in row-major order (E the fragment's
//!   `num_elements`; fragments with more slots than elements hold each element twice or
//!   four times, as the device's do). Products are exact in `f64` (the inputs have at most
//!   24 significant bits: TF32 inputs are rounded first, to nearest with ties away, as
//!   `cvt.rna.tf32.f32`); a `float32` or `float16` result is the exact sum rounded once,
//!   within the device's error bound (its adds may truncate, in an unspecified order);
//!   `float64` accumulates with one `fma` per product in k order; `int32` wraps, or
//!   saturates with `satfinite`.
//! - **`mma.sync` m16n8k16** and **`ldmatrix`**: the register layouts of PTX (§19.2).

use crate::lower::host::tensor_code::{
    KIND_LDMATRIX, KIND_MMA16816, KIND_WMMA, wmma_fragments, wmma_offsets,
};
use crate::types::tensor::{Fragment, FragmentElem};

/// Entry `i` of a lane's buffer as `f64` (floats) or `i64` (integers).
///
/// # Safety
///
/// `p` is a live lane buffer with more than `i` entries.
unsafe fn get_f(p: u64, i: usize) -> f64 {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::read((p as *const f64).add(i)) }
}

/// # Safety
///
/// As [`get_f`].
unsafe fn get_i(p: u64, i: usize) -> i64 {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::read((p as *const i64).add(i)) }
}

/// # Safety
///
/// As [`get_f`], and the buffer is writable.
unsafe fn put_f(p: u64, i: usize, v: f64) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::write((p as *mut f64).add(i), v) }
}

/// # Safety
///
/// As [`put_f`].
unsafe fn put_i(p: u64, i: usize, v: i64) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::write((p as *mut i64).add(i), v) }
}

/// float32 → TF32 as `cvt.rna.tf32.f32` rounds it (to nearest, ties away from zero).
fn tf32(x: f64) -> f64 {
    let b = (x as f32).to_bits();
    if (b >> 23) & 0xff == 0xff {
        return x;
    }
    f64::from(f32::from_bits(b.wrapping_add(0x1000) & !0x1fff))
}

/// The value of float16 bits.
fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    match exp {
        0 => sign * man * 2f64.powi(-24),
        31 if man == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + man / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Runs the tensor collective `code` over the warp's lane buffers (`None` for a lane that
/// has ended: its operands read as zeros and it gets no results).
///
/// # Safety
///
/// Every `Some` address is the live buffer of a lane suspended at this collective, laid out
/// as `code` says (the emitted code's promise), and the row addresses an `ldmatrix` buffer
/// holds are 0 or the addresses of 16 readable bytes.
pub(crate) unsafe fn run(code: u32, lanes: &[Option<u64>; 32]) {
    // SAFETY: forwarded.
    unsafe {
        match code & 15 {
            KIND_WMMA => wmma(code, lanes),
            KIND_MMA16816 => mma16816(lanes),
            KIND_LDMATRIX => ldmatrix(code, lanes),
            _ => {}
        }
    }
}

/// # Safety
///
/// As [`run`].
unsafe fn wmma(code: u32, lanes: &[Option<u64>; 32]) {
    let Some((fa, fb, fc, sat)) = wmma_fragments(code) else {
        return;
    };
    let off = wmma_offsets(&fa, &fb, &fc);
    let (m, n, k) = (
        usize::from(fa.shape.m),
        usize::from(fa.shape.n),
        usize::from(fa.shape.k),
    );
    let float = !matches!(fc.elem, FragmentElem::S32);
    // Gathers the R×C matrix of a fragment from the slots that hold each element first.
    let gather = |f: &Fragment, base: usize, rc: usize| -> Vec<(f64, i64)> {
        let e = f.num_elements() as usize;
        (0..rc)
            .map(|idx| match lanes[idx / e] {
                // SAFETY: a live lane buffer of this layout (`run`'s promise).
                Some(p) => unsafe {
                    if float {
                        (get_f(p, base + idx % e), 0)
                    } else {
                        (0.0, get_i(p, base + idx % e))
                    }
                },
                None => (0.0, 0),
            })
            .collect()
    };
    let mut a = gather(&fa, off[0], m * k);
    let mut b = gather(&fb, off[1], k * n);
    let c = gather(&fc, off[2], m * n);
    if fa.elem == FragmentElem::TF32 {
        for x in a.iter_mut().chain(b.iter_mut()) {
            x.0 = tf32(x.0);
        }
    }
    let mut d = vec![(0f64, 0i64); m * n];
    for i in 0..m {
        for j in 0..n {
            let r = &mut d[i * n + j];
            match fc.elem {
                FragmentElem::F64 => {
                    let mut acc = c[i * n + j].0;
                    for p in 0..k {
                        acc = a[i * k + p].0.mul_add(b[p * n + j].0, acc);
                    }
                    r.0 = acc;
                }
                FragmentElem::S32 => {
                    let mut acc = c[i * n + j].1;
                    for p in 0..k {
                        acc += a[i * k + p].1 * b[p * n + j].1;
                    }
                    r.1 = if sat {
                        acc.clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                    } else {
                        i64::from(acc as i32)
                    };
                }
                _ => {
                    // The products are exact in f64 and so is their sum over k ≤ 16 (at
                    // most 48 significant bits each); one rounding to the result type.
                    let mut acc = 0f64;
                    for p in 0..k {
                        acc += a[i * k + p].0 * b[p * n + j].0;
                    }
                    let sum = acc + c[i * n + j].0;
                    r.0 = if fc.elem == FragmentElem::F16 {
                        f16_value(crate::types::half::f16_bits(sum))
                    } else {
                        f64::from(sum as f32)
                    };
                }
            }
        }
    }
    let e = fc.num_elements() as usize;
    for (l, lane) in lanes.iter().enumerate() {
        let Some(p) = *lane else { continue };
        for s in 0..e {
            let v = d[(l * e + s) % (m * n)];
            // SAFETY: as above.
            unsafe {
                if float {
                    put_f(p, off[3] + s, v.0);
                } else {
                    put_i(p, off[3] + s, v.1);
                }
            }
        }
    }
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`: lane `l` (group
/// `g = l / 4`, `t = l % 4`) holds A's (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..),
/// B's (2t..2t+1, g), (2t+8..2t+9, g), and C's and D's (g, 2t..2t+1), (g+8, 2t..2t+1).
///
/// # Safety
///
/// As [`run`].
unsafe fn mma16816(lanes: &[Option<u64>; 32]) {
    let mut a = [[0f64; 16]; 16];
    let mut b = [[0f64; 8]; 16];
    let mut c = [[0f64; 8]; 16];
    for (l, lane) in lanes.iter().enumerate() {
        let Some(p) = *lane else { continue };
        let (g, t) = (l / 4, l % 4);
        // SAFETY: a live buffer of 20 entries (`run`'s promise).
        unsafe {
            for e in 0..2 {
                a[g][2 * t + e] = get_f(p, e);
                a[g + 8][2 * t + e] = get_f(p, 2 + e);
                a[g][2 * t + 8 + e] = get_f(p, 4 + e);
                a[g + 8][2 * t + 8 + e] = get_f(p, 6 + e);
                b[2 * t + e][g] = get_f(p, 8 + e);
                b[2 * t + 8 + e][g] = get_f(p, 10 + e);
                c[g][2 * t + e] = get_f(p, 12 + e);
                c[g + 8][2 * t + e] = get_f(p, 14 + e);
            }
        }
    }
    let d = |i: usize, j: usize| -> f64 {
        let mut acc = 0f64;
        for p in 0..16 {
            acc += a[i][p] * b[p][j];
        }
        f64::from((acc + c[i][j]) as f32)
    };
    for (l, lane) in lanes.iter().enumerate() {
        let Some(p) = *lane else { continue };
        let (g, t) = (l / 4, l % 4);
        for e in 0..2 {
            // SAFETY: as above.
            unsafe {
                put_f(p, 16 + e, d(g, 2 * t + e));
                put_f(p, 18 + e, d(g + 8, 2 * t + e));
            }
        }
    }
}

/// `ldmatrix.sync.aligned.m8n8.x{count}[.trans].b16`: lanes `8i..8i+7` give the row
/// addresses of matrix `i`; lane `l` gets, in its vector `i`, elements (g, 2t) and
/// (g, 2t+1) of matrix i (transposed: (2t, g) and (2t+1, g)). A row address of 0 (a lane
/// whose row was out of range) reads as zeros.
///
/// # Safety
///
/// As [`run`].
unsafe fn ldmatrix(code: u32, lanes: &[Option<u64>; 32]) {
    let count = ((code >> 4) & 7) as usize;
    let trans = code & (1 << 7) != 0;
    // SAFETY: entry 0 of a live buffer is its row address.
    let rows: Vec<u64> = lanes
        .iter()
        .map(|l| l.map_or(0, |p| unsafe { get_i(p, 0) } as u64))
        .collect();
    let read = |row: u64, col: usize| -> i64 {
        if row == 0 {
            return 0;
        }
        // SAFETY: a nonzero row address has 16 readable bytes (`run`'s promise).
        i64::from(unsafe { std::ptr::read_unaligned((row as *const u16).add(col)) })
    };
    for (l, lane) in lanes.iter().enumerate() {
        let Some(p) = *lane else { continue };
        let (g, t) = (l / 4, l % 4);
        for i in 0..count {
            for e in 0..2 {
                let v = if trans {
                    read(rows[8 * i + 2 * t + e], g)
                } else {
                    read(rows[8 * i + g], 2 * t + e)
                };
                // SAFETY: the buffer has 1 + 2 * count entries.
                unsafe { put_i(p, 1 + 2 * i + e, v) };
            }
        }
    }
}
