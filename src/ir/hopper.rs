//! The Hopper asynchronous-pipeline operations of `cuda.device.hopper` (docs/semantics.md
//! §18.4): mbarriers with transaction counts, the async-proxy fence, `elect.sync`,
//! `setmaxnreg`, bulk asynchronous copies (the TMA unit without a tensor map) and warpgroup
//! matrix multiply-accumulate (`wgmma`) on shared-memory matrix descriptors.
//!
//! Every operation here is device-only (see `flags.rs`); the front end has already checked
//! every shape, type and constant, so the back end only spells the instruction.

use super::Scalar;

/// An operation of `cuda.device.hopper`. Where an operand is an mbarrier, it is an
/// `ElementRef` to a `uint64` element of a shared array.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HopperOp {
    /// `mbarrier_init(bar, count)`: \[mbarrier, uint32 count\] (`mbarrier.init`).
    MbarrierInit,
    /// `mbarrier_arrive(bar)`: \[mbarrier\] → uint64 state (`mbarrier.arrive`).
    MbarrierArrive,
    /// `mbarrier_arrive_expect_tx(bar, bytes)`: \[mbarrier, uint32\] → uint64 state; raises the
    /// transaction count of the current phase by `bytes`, then arrives.
    MbarrierArriveExpectTx,
    /// `mbarrier_expect_tx(bar, bytes)`: \[mbarrier, uint32\]: raises the transaction count
    /// without arriving.
    MbarrierExpectTx,
    /// `mbarrier_try_wait_parity(bar, phase)`: \[mbarrier, uint32 parity\] → bool, whether the
    /// phase of that parity has completed (`mbarrier.try_wait.parity`, which may suspend the
    /// thread for a while first).
    MbarrierTryWaitParity,
    /// `mbarrier_wait_parity(bar, phase)`: \[mbarrier, uint32 parity\]: loops on
    /// `try_wait.parity` until the phase has completed.
    MbarrierWaitParity,
    /// `fence_mbarrier_init()`: `fence.mbarrier_init.release.cluster`, making initialized
    /// mbarriers visible to the cluster's other blocks and to the async proxy.
    FenceMbarrierInit,
    /// `fence_proxy_async()`: `fence.proxy.async.shared::cta`, ordering this thread's
    /// generic-proxy accesses to shared memory before later async-proxy ones (TMA, `wgmma`).
    FenceProxyAsync,
    /// `elect_one()` → bool: true in exactly one active lane of the warp (`elect.sync`).
    ElectOne,
    /// `setmaxnreg(count, inc)`: `setmaxnreg.{inc,dec}.sync.aligned.u32 count` (sm_90a).
    SetMaxNReg {
        /// Raise (`inc`) or lower (`dec`) the warp's register budget.
        inc: bool,
        /// The new per-thread register count: 24 to 256, a multiple of 8.
        count: u16,
    },
    /// `bulk_copy_to_shared(dst, src, bytes, bar)`: [shared ElementRef, global ElementRef,
    /// uint32 bytes, mbarrier]: `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx`
    /// (the TMA unit's one-dimensional copy; completion is counted on the mbarrier).
    BulkCopyToShared,
    /// `bulk_copy_to_global(dst, src, bytes)`: [global ElementRef, shared ElementRef, uint32
    /// bytes]: `cp.async.bulk.global.shared::cta.bulk_group`.
    BulkCopyToGlobal,
    /// `bulk_commit_group()`: `cp.async.bulk.commit_group`.
    BulkCommit,
    /// `bulk_wait_group(n, read)`: `cp.async.bulk.wait_group[.read] n`.
    BulkWait {
        /// How many of the most recent bulk groups may still be pending.
        n: u8,
        /// Wait only until the groups' sources have been read (`.read`).
        read: bool,
    },
    /// `tma_load(dst, tmap, coords, bar, multicast)`: [shared ElementRef, ElementRef to the
    /// tensor map (128 bytes in global memory), mbarrier, `dims` int32 coordinates
    /// (innermost first), and with `multicast` a uint16 mask of the cluster's blocks]:
    /// `cp.async.bulk.tensor.<dims>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`.
    TmaLoad {
        /// 1 to 5.
        dims: u8,
        /// `.multicast::cluster`: the tile lands in every block of the mask (sm_90a).
        multicast: bool,
    },
    /// `tma_store(tmap, coords, src)` (`reduce`: `tma_reduce_add`): [ElementRef to the tensor
    /// map, shared ElementRef, `dims` int32 coordinates]:
    /// `cp.async.bulk.tensor.<dims>d.global.shared::cta.tile.bulk_group`, or
    /// `cp.reduce.async.bulk.tensor.<dims>d.global.shared::cta.add.tile.bulk_group`.
    TmaStore {
        /// 1 to 5.
        dims: u8,
        /// Add into global memory instead of overwriting it.
        reduce: bool,
    },
    /// `tma_prefetch(tmap)`: [the tensor map, as for `TmaLoad`]: `prefetch.tensormap`, which
    /// brings the map into the TMA unit's cache ahead of the copies that use it.
    TmaPrefetch,
    /// `wgmma_desc(array, index, leading, stride, swizzle)`: [shared ElementRef, uint32
    /// leading-dimension byte offset, uint32 stride-dimension byte offset] → the uint64
    /// shared-memory matrix descriptor.
    WgmmaDesc(Swizzle),
    /// `shared_address(a\[i\])`: [shared ElementRef] → uint32, the element's address in the
    /// block's shared window (to align a dynamic shared buffer for TMA and `wgmma`).
    SharedAddress,
    /// `wgmma_fence()`: `wgmma.fence.sync.aligned`.
    WgmmaFence,
    /// `wgmma_commit_group()`: `wgmma.commit_group.sync.aligned`.
    WgmmaCommit,
    /// `wgmma_wait_group(n)`: `wgmma.wait_group.sync.aligned n`; for n = 0, args
    /// \[accumulator array, int32 literal register count\]* of the function's earlier
    /// `wgmma`s, whose registers are pinned after the wait (an empty `asm` that reads and rewrites them), so no read of
    /// an accumulator is scheduled before the MMAs writing it retire.
    WgmmaWait(u8),
    /// `wgmma(acc, a_desc, b_desc, shape, ...)`: [ElementRef to the accumulator local
    /// array's first element, uint64 A descriptor, uint64 B descriptor, bool scale_d]:
    /// `wgmma.mma_async.sync.aligned.m64nNkK.<acc>.<a>.<b>`, reading and writing the array's
    /// elements in registers.
    Wgmma(Wgmma),
}

/// The shared-memory swizzle mode of a matrix descriptor (bits 62–63).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Swizzle {
    /// No swizzling (interleaved core matrices).
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle.
    B128,
}

impl Swizzle {
    /// The mode from its width in bytes (0 for none).
    pub fn from_bytes(n: i128) -> Option<Swizzle> {
        Some(match n {
            0 => Swizzle::None,
            32 => Swizzle::B32,
            64 => Swizzle::B64,
            128 => Swizzle::B128,
            _ => return None,
        })
    }

    /// The descriptor's two-bit field.
    pub fn code(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B128 => 1,
            Swizzle::B64 => 2,
            Swizzle::B32 => 3,
        }
    }

    /// The width in bytes (0 for none).
    pub fn bytes(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }
}

/// An input type of `wgmma.mma_async`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WgmmaInput {
    /// `.f16`
    F16,
    /// `.bf16`
    BF16,
    /// `.tf32`
    TF32,
    /// `.e4m3`
    E4M3,
    /// `.e5m2`
    E5M2,
    /// `.s8`
    S8,
    /// `.u8`
    U8,
}

impl WgmmaInput {
    /// Parses the Python spelling (`'bf16'`, `'e4m3'`, …).
    pub fn from_name(s: &str) -> Option<WgmmaInput> {
        Some(match s {
            "f16" | "float16" => WgmmaInput::F16,
            "bf16" | "bfloat16" => WgmmaInput::BF16,
            "tf32" => WgmmaInput::TF32,
            "e4m3" => WgmmaInput::E4M3,
            "e5m2" => WgmmaInput::E5M2,
            "s8" | "int8" => WgmmaInput::S8,
            "u8" | "uint8" => WgmmaInput::U8,
            _ => return None,
        })
    }

    /// The PTX type suffix.
    pub fn ptx(self) -> &'static str {
        match self {
            WgmmaInput::F16 => "f16",
            WgmmaInput::BF16 => "bf16",
            WgmmaInput::TF32 => "tf32",
            WgmmaInput::E4M3 => "e4m3",
            WgmmaInput::E5M2 => "e5m2",
            WgmmaInput::S8 => "s8",
            WgmmaInput::U8 => "u8",
        }
    }

    /// The K of one instruction: 32 bytes of the input type.
    pub fn k(self) -> u32 {
        match self {
            WgmmaInput::F16 | WgmmaInput::BF16 => 16,
            WgmmaInput::TF32 => 8,
            _ => 32,
        }
    }

    /// The family that A and B must share: 0 half, 1 tf32, 2 fp8, 3 int8.
    pub fn family(self) -> u8 {
        match self {
            WgmmaInput::F16 | WgmmaInput::BF16 => 0,
            WgmmaInput::TF32 => 1,
            WgmmaInput::E4M3 | WgmmaInput::E5M2 => 2,
            WgmmaInput::S8 | WgmmaInput::U8 => 3,
        }
    }
}

/// The shape and types of one `wgmma.mma_async` (M is always 64).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Wgmma {
    /// N: 8 to 256, a multiple of 8 (int8 above 32: of 16).
    pub n: u16,
    /// A's type.
    pub a: WgmmaInput,
    /// B's type.
    pub b: WgmmaInput,
    /// The accumulator's type: float32, float16 or int32.
    pub acc: Scalar,
    /// A is K-major (false) or M-major (true); f16/bf16 only.
    pub trans_a: bool,
    /// B is K-major (false) or N-major (true); f16/bf16 only.
    pub trans_b: bool,
}

impl Wgmma {
    /// How many accumulator elements each thread of the warpgroup holds (64·N/128).
    pub fn acc_elems(self) -> u32 {
        u32::from(self.n) / 2
    }

    /// How many 32-bit registers hold the accumulator (two float16 elements share one).
    pub fn acc_regs(self) -> u32 {
        if self.acc == Scalar::Float16 {
            self.acc_elems() / 2
        } else {
            self.acc_elems()
        }
    }

    /// The instruction's mnemonic and types, without operands.
    pub fn mnemonic(self) -> String {
        let acc = match self.acc {
            Scalar::Float16 => "f16",
            Scalar::Int32 => "s32",
            _ => "f32",
        };
        format!(
            "wgmma.mma_async.sync.aligned.m64n{}k{}.{acc}.{}.{}",
            self.n,
            self.a.k(),
            self.a.ptx(),
            self.b.ptx()
        )
    }
}

impl HopperOp {
    /// The builtin that produces it, as Python spells it (for diagnostics and printed IR).
    pub fn name(self) -> String {
        match self {
            HopperOp::MbarrierInit => "hopper.mbarrier_init".into(),
            HopperOp::MbarrierArrive => "hopper.mbarrier_arrive".into(),
            HopperOp::MbarrierArriveExpectTx => "hopper.mbarrier_arrive_expect_tx".into(),
            HopperOp::MbarrierExpectTx => "hopper.mbarrier_expect_tx".into(),
            HopperOp::MbarrierTryWaitParity => "hopper.mbarrier_try_wait_parity".into(),
            HopperOp::MbarrierWaitParity => "hopper.mbarrier_wait_parity".into(),
            HopperOp::FenceMbarrierInit => "hopper.fence_mbarrier_init".into(),
            HopperOp::FenceProxyAsync => "hopper.fence_proxy_async".into(),
            HopperOp::ElectOne => "hopper.elect_one".into(),
            HopperOp::SetMaxNReg { inc, count } => {
                format!(
                    "hopper.setmaxnreg.{}.{count}",
                    if inc { "inc" } else { "dec" }
                )
            }
            HopperOp::BulkCopyToShared => "hopper.bulk_copy_to_shared".into(),
            HopperOp::BulkCopyToGlobal => "hopper.bulk_copy_to_global".into(),
            HopperOp::BulkCommit => "hopper.bulk_commit_group".into(),
            HopperOp::BulkWait { n, read } => {
                format!(
                    "hopper.bulk_wait_group{}.{n}",
                    if read { ".read" } else { "" }
                )
            }
            HopperOp::TmaLoad { dims, multicast } => format!(
                "hopper.tma_load.{dims}d{}",
                if multicast { ".multicast" } else { "" }
            ),
            HopperOp::TmaStore { dims, reduce } => format!(
                "hopper.{}.{dims}d",
                if reduce {
                    "tma_reduce_add"
                } else {
                    "tma_store"
                }
            ),
            HopperOp::TmaPrefetch => "hopper.tma_prefetch".into(),
            HopperOp::WgmmaDesc(s) => format!("hopper.wgmma_desc.swizzle{}", s.bytes()),
            HopperOp::SharedAddress => "hopper.shared_address".into(),
            HopperOp::WgmmaFence => "hopper.wgmma_fence".into(),
            HopperOp::WgmmaCommit => "hopper.wgmma_commit_group".into(),
            HopperOp::WgmmaWait(n) => format!("hopper.wgmma_wait_group.{n}"),
            HopperOp::Wgmma(w) => format!(
                "hopper.{}{}{}",
                w.mnemonic()
                    .trim_start_matches("wgmma.mma_async.sync.aligned."),
                if w.trans_a { ".trans_a" } else { "" },
                if w.trans_b { ".trans_b" } else { "" }
            ),
        }
    }

    /// Whether only the architecture-specific sm_90a has it (`wgmma`, `setmaxnreg`).
    pub fn arch_specific(self) -> bool {
        matches!(
            self,
            HopperOp::SetMaxNReg { .. }
                | HopperOp::TmaLoad {
                    multicast: true,
                    ..
                }
                | HopperOp::WgmmaFence
                | HopperOp::WgmmaCommit
                | HopperOp::WgmmaWait(_)
                | HopperOp::Wgmma(_)
        )
    }
}
