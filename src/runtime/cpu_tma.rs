//! TMA on the CPU back end (docs/semantics.md §22.1, §18.4): a tensor map of the CPU's own
//! layout ([`tensor_map_tiled`]; the device's is opaque too, so a map is only ever read by
//! the back end that made it) and the copies of `hopper.tma_load`, `tma_store` and
//! `tma_reduce_add` between a box of a global array and a block's shared memory, done when
//! they are issued (as the CPU's bulk copies are), the loaded bytes retired on the mbarrier.
//!
//! What the hardware does is done here element by element: the box's elements in shared
//! memory are dense, innermost dimension fastest; elements outside the array load as zero
//! and are not stored; the shared-memory image is swizzled as the map says (the 16-byte
//! chunk `c` of each 128-byte line `l` of the shared window is stored at chunk `c ^ (l % 8)`
//! for 128-byte swizzle, `c ^ (l % 4)` for 64 and `c ^ (l % 2)` for 32, see [`swizzle`]); a
//! multicast load writes the box to the same offset of every block of its mask in the
//! cluster and completes each one's mbarrier. A reduce-add adds each element atomically,
//! as the device's reduction is per element.

use super::DeviceArray;
use super::cpu::CpuError;
use super::tma::TensorMap;
use crate::lower::host::kernel::ThreadContext;
use crate::types::Scalar;

/// The first word of a CPU tensor map (`PYDCTMA` and a version byte).
const MAGIC: u64 = 0x5059_4443_544d_4101;

/// Encodes a tiled tensor map of host array `a` for the CPU back end: the counterpart of
/// `Device::tensor_map_tiled`, with the same checks and the same meaning (`box_shape` and
/// the array's order outermost first; `swizzle` 0, 32, 64 or 128 bytes). The map holds the
/// array's address: it is valid while the array is.
pub fn tensor_map_tiled(
    a: &DeviceArray,
    box_shape: &[u32],
    swizzle: u32,
) -> Result<TensorMap, CpuError> {
    if ![0, 32, 64, 128].contains(&swizzle) {
        return Err(CpuError::Argument(format!(
            "tensor map: the swizzle is 0, 32, 64 or 128 bytes, not {swizzle}"
        )));
    }
    super::tma::check(a, box_shape, swizzle).map_err(|e| CpuError::Argument(e.to_string()))?;
    let rank = a.shape.len();
    let size = a.dtype.size();
    let mut words = [0u64; 16];
    words[0] = MAGIC;
    words[1] = a.data;
    words[2] = rank as u64 | size << 8 | u64::from(swizzle) << 16 | u64::from(code(a.dtype)) << 32;
    // Innermost first, as PTX's coordinates are.
    for (k, d) in (0..rank).rev().enumerate() {
        words[3 + k] = a.shape[d];
        words[8 + k] = a.strides[d] as u64 * size;
        let b = u64::from(box_shape[d]);
        if k < 4 {
            words[13] |= b << (16 * k);
        } else {
            words[14] = b;
        }
    }
    Ok(TensorMap { words })
}

/// The element kinds `tma_reduce_add` adds (0: it does not).
fn code(s: Scalar) -> u8 {
    match s {
        Scalar::Float32 => 1,
        Scalar::Float64 => 2,
        Scalar::Int32 => 3,
        Scalar::UInt32 => 4,
        Scalar::Int64 => 5,
        Scalar::UInt64 => 6,
        _ => 0,
    }
}

/// A decoded map.
struct Map {
    base: u64,
    _rank: usize,
    size: u64,
    swizzle: u64,
    kind: u8,
    dims: [u64; 5],
    strides: [u64; 5],
    boxes: [u64; 5],
}

impl Map {
    /// Reads the map at `p`; `None` for what no CPU map looks like.
    ///
    /// # Safety
    ///
    /// `p` must be readable for 128 bytes.
    unsafe fn read(p: u64) -> Option<Map> {
        // SAFETY: the caller's promise.
        let w = unsafe { (p as *const [u64; 16]).read_unaligned() };
        if w[0] != MAGIC {
            return None;
        }
        let rank = (w[2] & 0xff) as usize;
        if !(1..=5).contains(&rank) {
            return None;
        }
        let mut m = Map {
            base: w[1],
            _rank: rank,
            size: (w[2] >> 8) & 0xff,
            swizzle: (w[2] >> 16) & 0xffff,
            kind: (w[2] >> 32) as u8,
            dims: [1; 5],
            strides: [0; 5],
            boxes: [1; 5],
        };
        for k in 0..rank {
            m.dims[k] = w[3 + k];
            m.strides[k] = w[8 + k];
            m.boxes[k] = if k < 4 {
                (w[13] >> (16 * k)) & 0xffff
            } else {
                w[14]
            };
        }
        Some(m)
    }

    fn box_bytes(&self) -> u64 {
        self.boxes.iter().product::<u64>() * self.size
    }

    /// Calls `f(shared offset in the box, global address or None outside the array)` for
    /// each element of the box at `coords`, innermost fastest.
    fn each(&self, coords: &[i32; 5], mut f: impl FnMut(u64, Option<u64>)) {
        let n = self.boxes.iter().product::<u64>();
        for e in 0..n {
            let mut rest = e;
            let mut addr = Some(self.base);
            for (k, &c) in coords.iter().enumerate() {
                let i = rest % self.boxes[k];
                rest /= self.boxes[k];
                let g = i64::from(c) + i as i64;
                if g < 0 || g as u64 >= self.dims[k] {
                    addr = None;
                } else if let Some(a) = addr {
                    addr = Some(a.wrapping_add(g as u64 * self.strides[k]));
                }
            }
            f(e * self.size, addr);
        }
    }
}

/// The byte offset in the shared window where PTX's swizzle mode of `swizzle` bytes puts the
/// byte at window offset `off`: the 16-byte chunk index (bits 4 and up, as many as the mode
/// has chunks per line: 1, 2 or 3 bits) is XORed with the 128-byte line's index (bits 7 and
/// up): 128-byte swizzle `off ^ ((off >> 7) & 7) << 4`, 64-byte `& 3`, 32-byte `& 1`.
pub fn swizzle(off: u64, swizzle: u64) -> u64 {
    let mask = match swizzle {
        128 => 7,
        64 => 3,
        32 => 1,
        _ => return off,
    };
    off ^ (((off >> 7) & mask) << 4)
}

/// `__pyd_cpu_tma(ctx, op, smem, limit, map, bar, c0, c1, c2, c3, c4, mask) -> status`:
/// `op` 0 load (into `smem` of each block of the cluster in `mask`, or of the own block when
/// `mask` is 0, completing the mbarrier `bar` there), 1 store, 2 reduce-add (from `smem`);
/// `limit` is the end of the shared array `smem` points into. Returns 0, or 1 when the map
/// is not a CPU tensor map, the box does not fit in the shared array, or a reduce-add is
/// asked of an element type it does not add: then nothing is copied (the caller reports it
/// at the call) and a load still completes its mbarriers, so that waiters go on.
pub(crate) extern "C" fn tma(
    ctx: *mut ThreadContext,
    op: i32,
    smem: u64,
    limit: u64,
    map: u64,
    bar: u64,
    c0: i32,
    c1: i32,
    c2: i32,
    c3: i32,
    c4: i32,
    mask: i32,
) -> i32 {
    // SAFETY: called by kernel code with its context; `map` is an element reference into a
    // global array of at least 16 `uint64` (the front end checked the operand's kind).
    let (ctx, map) = unsafe { (&*ctx, Map::read(map)) };
    let coords = [c0, c1, c2, c3, c4];
    let own = {
        let [cx, cy, _] = ctx.cluster_dim;
        let p = |k: usize| ctx.block_idx[k] % ctx.cluster_dim[k];
        p(0) + p(1) * cx + p(2) * cx * cy
    };
    let size: u32 = ctx.cluster_dim.iter().product();
    let stride = ctx.cluster_stride;
    let bad = match &map {
        None => true,
        Some(m) => smem.saturating_add(m.box_bytes()) > limit || (op == 2 && m.kind == 0),
    };
    let window = |p: u64| p.wrapping_sub(ctx.shared);
    if op == 0 {
        let mask = if mask == 0 { 1u32 << own } else { mask as u32 };
        let bytes = map.as_ref().map_or(0, Map::box_bytes) as u32;
        for r in (0..size).filter(|r| mask & (1 << r) != 0) {
            let delta = (i64::from(r) - i64::from(own)) * stride as i64;
            let dst = smem.wrapping_add(delta as u64);
            if let (false, Some(m)) = (bad, &map) {
                let start = window(smem);
                m.each(&coords, |o, src| {
                    let at = dst - start + swizzle(start + o, m.swizzle);
                    // SAFETY: the box fits in the shared array (checked), and every block of
                    // the cluster has the same shared layout; `src` lies in the mapped array.
                    unsafe {
                        match src {
                            Some(s) => std::ptr::copy_nonoverlapping(
                                s as *const u8,
                                at as *mut u8,
                                m.size as usize,
                            ),
                            None => std::ptr::write_bytes(at as *mut u8, 0, m.size as usize),
                        }
                    }
                });
            }
            let b = bar.wrapping_add(delta as u64);
            crate::lower::host::runtime::mbar_complete_tx(b, bytes);
        }
        return i32::from(bad);
    }
    let (false, Some(m)) = (bad, &map) else {
        return 1;
    };
    let start = window(smem);
    m.each(&coords, |o, dst| {
        let Some(dst) = dst else { return };
        let src = smem - start + swizzle(start + o, m.swizzle);
        // SAFETY: as for the load, the other way.
        unsafe {
            if op == 1 {
                std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, m.size as usize);
                return;
            }
            use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
            // Elements are aligned: the map's address and strides are multiples of 16.
            match m.kind {
                1 | 2 => {
                    let wide = m.kind == 2;
                    let add = |bits: u64| -> u64 {
                        if wide {
                            let s = (src as *const f64).read_unaligned();
                            (f64::from_bits(bits) + s).to_bits()
                        } else {
                            let s = (src as *const f32).read_unaligned();
                            u64::from((f32::from_bits(bits as u32) + s).to_bits())
                        }
                    };
                    if wide {
                        let a = &*(dst as *const AtomicU64);
                        let _ = a.fetch_update(Relaxed, Relaxed, |v| Some(add(v)));
                    } else {
                        let a = &*(dst as *const AtomicU32);
                        let _ =
                            a.fetch_update(Relaxed, Relaxed, |v| Some(add(u64::from(v)) as u32));
                    }
                }
                3 | 4 => {
                    let s = (src as *const u32).read_unaligned();
                    (*(dst as *const AtomicU32)).fetch_add(s, Relaxed);
                }
                _ => {
                    let s = (src as *const u64).read_unaligned();
                    (*(dst as *const AtomicU64)).fetch_add(s, Relaxed);
                }
            }
        }
    });
    0
}
