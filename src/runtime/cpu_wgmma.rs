//! `hopper.wgmma` on the CPU back end (docs/semantics.md §22.1, §18.4): warpgroup matrix
//! multiply-accumulate from shared-memory matrix descriptors, computed by each thread for
//! the accumulator elements it holds (the device's fragment layout), reading A and B where
//! the descriptors say, so no thread waits for another: `wgmma_fence`, `commit_group` and
//! `wait_group` have nothing in flight.
//!
//! A descriptor (PTX's matrix descriptor) holds the matrix's start address in the shared
//! window (bits 0–13, in units of 16 bytes), the leading (16–29) and stride (32–45)
//! dimension byte offsets (in 16 bytes) and the swizzle mode (62–63: 0 none, 1 128-byte,
//! 2 64-byte, 3 32-byte). The CPU reads K-major operands (the layouts `wgmma` takes for
//! every input type): row `r`, byte `kb` of K of an operand lies, without swizzle, at
//! `start + (r / 8)·SBO + (kb / 16)·LBO + (r % 8)·16 + kb % 16` (8×16-byte core matrices);
//! with a swizzle of W bytes at `start + (r / 8)·SBO + (r % 8)·W + kb`, the window offset
//! then swizzled as TMA's (`cpu_tma::swizzle`). Transposed (MN-major) operands are refused
//! when the kernel is compiled for the CPU.
//!
//! Products are exact in `f64` for every input type, and a thread's sum over K is taken in
//! `f64` and rounded once to the accumulator's type before it is added (integers: `i32`,
//! wrapping), so a result is bit-exact whenever the device's is exact (as in the tests),
//! and otherwise within the device's own accumulation error.

use crate::lower::host::kernel::ThreadContext;
use crate::types::fp8::{E4M3, E5M2};

/// The input types' codes in the `info` word (`emit::hopper`): f16, bf16, tf32, e4m3, e5m2,
/// s8, u8.
fn load(kind: u32, p: u64) -> f64 {
    // SAFETY: `p` lies in the block's shared memory (the caller checked the operand's
    // range against the block's shared bytes).
    unsafe {
        match kind {
            0 => f64::from(crate::lower::host::leaf::f16_value(
                (p as *const u16).read_unaligned(),
            )),
            1 => f64::from(f32::from_bits(
                u32::from((p as *const u16).read_unaligned()) << 16,
            )),
            // tf32: the float32's 19 high bits.
            2 => f64::from(f32::from_bits(
                (p as *const u32).read_unaligned() & 0xffff_e000,
            )),
            3 => E4M3.decode(*(p as *const u8)),
            4 => E5M2.decode(*(p as *const u8)),
            5 => f64::from(*(p as *const i8)),
            _ => f64::from(*(p as *const u8)),
        }
    }
}

/// The bytes of one element of input type `kind`.
fn size(kind: u32) -> u64 {
    match kind {
        0 | 1 => 2,
        2 => 4,
        _ => 1,
    }
}

/// The window offset of row `r`, byte `kb` of K of the operand of descriptor `d`.
fn offset(d: u64, r: u64, kb: u64) -> u64 {
    let start = (d & 0x3fff) << 4;
    let lbo = ((d >> 16) & 0x3fff) << 4;
    let sbo = ((d >> 32) & 0x3fff) << 4;
    let width = match d >> 62 {
        1 => 128,
        2 => 64,
        3 => 32,
        _ => 0,
    };
    if width == 0 {
        start + (r / 8) * sbo + (kb / 16) * lbo + (r % 8) * 16 + kb % 16
    } else {
        super::cpu_tma::swizzle(start + (r / 8) * sbo + (r % 8) * width + kb, width)
    }
}

/// `__pyd_cpu_wgmma(ctx, acc, a_desc, b_desc, info, scale_d) -> status`: the calling
/// thread's part of `wgmma.mma_async` m64nNkK. `info`: N (bits 0–8), A's and B's input type
/// (9–11, 12–14), the accumulator (15–16: 0 float32, 1 float16, 2 int32). `acc` is the
/// thread's accumulator array (N/2 elements); element `i` is row `w·16 + lane/4 +
/// 8·((i/2)%2)`, column `8·(i/4) + 2·(lane%4) + i%2` of D (`w` the warp in the warpgroup).
/// Returns 1 (and changes nothing) when an operand does not lie in the block's shared
/// memory of `shared_bytes`; the caller reports it at the call.
pub(crate) extern "C" fn wgmma(
    ctx: *mut ThreadContext,
    acc: u64,
    a: u64,
    b: u64,
    info: i32,
    scale_d: i32,
    shared_bytes: u64,
) -> i32 {
    // SAFETY: called by kernel code with its context.
    let ctx = unsafe { &*ctx };
    let info = info as u32;
    let n = u64::from(info & 0x1ff);
    let (ka, kb_, kacc) = ((info >> 9) & 7, (info >> 12) & 7, (info >> 15) & 3);
    let es = size(ka);
    let k = 32 / es;
    let t = u64::from(ctx.rank % 128);
    let (w, lane) = (t / 32, t % 32);
    // Every byte the thread reads must lie in the block's shared memory.
    let rows = [w * 16 + lane / 4, w * 16 + lane / 4 + 8];
    let cols = (0..n / 8).flat_map(|j| [8 * j + 2 * (lane % 4), 8 * j + 2 * (lane % 4) + 1]);
    let outside = |d: u64, r: u64| (0..k).any(|kk| offset(d, r, kk * es) + es > shared_bytes);
    if rows.iter().any(|&r| outside(a, r)) || cols.clone().any(|c| outside(b, c)) {
        return 1;
    }
    for i in 0..n / 2 {
        let row = w * 16 + lane / 4 + 8 * ((i / 2) % 2);
        let col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
        let (mut fsum, mut isum) = (0f64, 0i32);
        for kk in 0..k {
            let pa = ctx.shared + offset(a, row, kk * es);
            let pb = ctx.shared + offset(b, col, kk * es);
            let (x, y) = (load(ka, pa), load(kb_, pb));
            if kacc == 2 {
                isum = isum.wrapping_add((x as i32).wrapping_mul(y as i32));
            } else {
                fsum += x * y;
            }
        }
        // SAFETY: `acc` is the thread's accumulator array of N/2 elements (checked by the
        // front end: a local array of that size).
        unsafe {
            match kacc {
                2 => {
                    let p = (acc as *mut i32).add(i as usize);
                    let old = if scale_d != 0 { p.read_unaligned() } else { 0 };
                    p.write_unaligned(old.wrapping_add(isum));
                }
                1 => {
                    let p = (acc as *mut u16).add(i as usize);
                    let old = if scale_d != 0 {
                        f64::from(crate::lower::host::leaf::f16_value(p.read_unaligned()))
                    } else {
                        0.0
                    };
                    let v = crate::lower::host::leaf::round_f16(old + fsum);
                    p.write_unaligned(crate::lower::host::leaf::f16_bits(v));
                }
                _ => {
                    let p = (acc as *mut f32).add(i as usize);
                    let old = if scale_d != 0 {
                        p.read_unaligned()
                    } else {
                        0.0
                    };
                    p.write_unaligned(old + fsum as f32);
                }
            }
        }
    }
    0
}
