//! What every check must know about an [`Intrinsic`], declared once per intrinsic
//! ([`Intrinsic::flags`]): whether it is a barrier and of which scope, whether it must be
//! executed by converged threads, whether only a GPU can execute it, and whether its result
//! differs between the threads of a block. The divergence check (E0241) and the host
//! back end's device-only check read these flags instead of keeping their own lists, so a
//! new intrinsic is classified in one place (issue 33).
//!
//! Beside the flags, each intrinsic's Python spelling for diagnostics
//! ([`Intrinsic::python_name`]) and, for operations typed by their declaration alone, its
//! [`Signature`]: the front end, the checks and the back ends read these declarations
//! instead of keeping their own lists.
//!
//! This module only describes; it does not lower anything.

use super::{CgOp, HopperOp, Intrinsic, TensorOp};
use crate::types::{GroupKind, Scalar};

/// The threads a barrier waits for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BarrierScope {
    /// The threads named by a warp mask, or of a warp-sized tile: they may be a subset of
    /// the block chosen by a thread-dependent condition (`if lane_id < 16: syncwarp(0xFFFF)`
    /// is legal), so a warp barrier under divergence is not an error.
    Warp,
    /// Every thread of the block (`syncthreads`, `this_thread_block().sync()`).
    Block,
    /// Every thread of every block of the cluster (`cluster_sync`).
    Cluster,
    /// Every thread of the launch (`this_grid().sync()`).
    Grid,
}

impl BarrierScope {
    /// How diagnostics name the threads that must all reach it.
    pub fn threads(self) -> &'static str {
        match self {
            BarrierScope::Warp => "the threads of the mask",
            BarrierScope::Block => "every thread of the block",
            BarrierScope::Cluster => "every thread of the cluster",
            BarrierScope::Grid => "every thread of the grid",
        }
    }

    /// Whether every thread of a block must reach it (block, cluster and grid barriers):
    /// then a block-divergent condition around it is an error (E0241).
    pub fn spans_blocks(self) -> bool {
        self >= BarrierScope::Block
    }
}

/// The facts about an intrinsic that the checks need.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct IntrinsicFlags {
    /// It is a barrier: the threads of this scope must all reach it.
    pub barrier: Option<BarrierScope>,
    /// Its effect or result depends on which threads execute it together (barriers,
    /// shuffles, votes, matches, tensor-core operations): code motion must not change the
    /// set of threads that reach it (LLVM's `convergent`).
    pub convergent: bool,
    /// Only a GPU can execute it: a host `@func` cannot use it (E0243 in the front end; the
    /// host back end refuses it too).
    pub device_only: bool,
    /// Its result may differ between the threads of one block (`thread_idx`, `lane_id`, a
    /// shuffle, a tile's vote, a random draw), so a condition on it is thread-dependent.
    pub per_thread: bool,
}

impl IntrinsicFlags {
    const HOST: IntrinsicFlags = IntrinsicFlags {
        barrier: None,
        convergent: false,
        device_only: false,
        per_thread: false,
    };
    const DEVICE: IntrinsicFlags = IntrinsicFlags {
        device_only: true,
        ..IntrinsicFlags::HOST
    };
    const PER_THREAD: IntrinsicFlags = IntrinsicFlags {
        per_thread: true,
        ..IntrinsicFlags::DEVICE
    };
    /// A warp collective whose result differs between lanes or warps.
    const WARP: IntrinsicFlags = IntrinsicFlags {
        convergent: true,
        per_thread: true,
        ..IntrinsicFlags::DEVICE
    };

    fn barrier(scope: BarrierScope) -> IntrinsicFlags {
        IntrinsicFlags {
            barrier: Some(scope),
            convergent: true,
            ..IntrinsicFlags::DEVICE
        }
    }
}

/// The scope a group's barrier waits for.
fn group_scope(k: GroupKind) -> BarrierScope {
    match k {
        GroupKind::Block => BarrierScope::Block,
        GroupKind::Grid => BarrierScope::Grid,
        GroupKind::Coalesced | GroupKind::Tile(_) => BarrierScope::Warp,
    }
}

impl Intrinsic {
    /// The intrinsic's flags: the one place that classifies it for the divergence check,
    /// the device-only checks and any other pass that must know (see [`IntrinsicFlags`]).
    pub fn flags(self) -> IntrinsicFlags {
        use BarrierScope as S;
        use Intrinsic as I;
        match self {
            // Pure arithmetic, also compiled for the host.
            I::Popc
            | I::Brev
            | I::BitCast
            | I::Clz
            | I::Ffs
            | I::FunnelShiftL
            | I::FunnelShiftR
            | I::Fma
            | I::Math(_)
            | I::Complex(_) => IntrinsicFlags::HOST,
            // Each thread's own Philox stream: the host runs it too (one stream).
            I::Rand | I::Randn | I::RandSeed | I::RandThread | I::RandCall => IntrinsicFlags {
                per_thread: true,
                ..IntrinsicFlags::HOST
            },
            // libdevice functions: GPU only.
            I::Ldexp | I::Frexp | I::Modf | I::Sincos | I::Sad | I::RoundDigits => {
                IntrinsicFlags::DEVICE
            }
            // The same in every thread of a block.
            I::BlockIdx(_)
            | I::BlockDim(_)
            | I::GridDim(_)
            | I::WarpSize
            | I::DynamicSharedSize
            | I::ClusterIdx(_)
            | I::ClusterDim(_)
            | I::BlockIdxInCluster(_)
            | I::BlockRankInCluster
            | I::ClusterSize
            | I::ThreadFence(..)
            | I::MapSharedRank => IntrinsicFlags::DEVICE,
            I::ThreadIdx(_) | I::LaneId | I::LaneMaskLt => IntrinsicFlags::PER_THREAD,
            // Which lanes are active here: convergence-dependent.
            I::ActiveMask => IntrinsicFlags::WARP,
            I::SyncThreads | I::SyncThreadsCount | I::SyncThreadsAnd | I::SyncThreadsOr => {
                IntrinsicFlags::barrier(S::Block)
            }
            I::SyncWarp => IntrinsicFlags::barrier(S::Warp),
            I::Vote(_) | I::Shfl(_) | I::MatchAny | I::MatchAll => IntrinsicFlags::WARP,
            I::ClusterArrive(_) | I::ClusterWait | I::ClusterSync => {
                IntrinsicFlags::barrier(S::Cluster)
            }
            I::Cg(op) => cg_flags(op),
            I::Tensor(op) => match op {
                // Fragments hold each thread's share of a matrix.
                TensorOp::Load(_)
                | TensorOp::Store(_)
                | TensorOp::Mma { .. }
                | TensorOp::MmaM16n8k16
                | TensorOp::Ldmatrix { .. } => IntrinsicFlags::WARP,
                TensorOp::Fill | TensorOp::Element | TensorOp::SetElement => IntrinsicFlags::DEVICE,
            },
            I::Hopper(op) => hopper_flags(op),
        }
    }
}

/// The flags of a Hopper operation (§18.4): all device-only.
fn hopper_flags(op: HopperOp) -> IntrinsicFlags {
    match op {
        // `elect.sync` picks one lane of those executing it together.
        HopperOp::ElectOne => IntrinsicFlags::WARP,
        // Warpgroup-wide `.sync.aligned` instructions: every thread of the warpgroup (and so
        // of its warps) executes them together.
        HopperOp::SetMaxNReg { .. }
        | HopperOp::WgmmaFence
        | HopperOp::WgmmaCommit
        | HopperOp::WgmmaWait(_)
        | HopperOp::Wgmma(_) => IntrinsicFlags {
            convergent: true,
            ..IntrinsicFlags::DEVICE
        },
        // A try-wait's answer differs between threads that ask at different times.
        HopperOp::MbarrierTryWaitParity => IntrinsicFlags::PER_THREAD,
        HopperOp::MbarrierInit
        | HopperOp::MbarrierArrive
        | HopperOp::MbarrierArriveExpectTx
        | HopperOp::MbarrierExpectTx
        | HopperOp::MbarrierWaitParity
        | HopperOp::FenceMbarrierInit
        | HopperOp::FenceProxyAsync
        | HopperOp::BulkCopyToShared
        | HopperOp::BulkCopyToGlobal
        | HopperOp::BulkCommit
        | HopperOp::BulkWait { .. }
        | HopperOp::TmaLoad { .. }
        | HopperOp::TmaStore { .. }
        | HopperOp::TmaPrefetch
        | HopperOp::SharedAddress
        | HopperOp::WgmmaDesc(_) => IntrinsicFlags::DEVICE,
    }
}

/// The flags of a cooperative-groups operation.
fn cg_flags(op: CgOp) -> IntrinsicFlags {
    let tile = |k: GroupKind| matches!(k, GroupKind::Coalesced | GroupKind::Tile(_));
    match op {
        CgOp::Sync(k) => IntrinsicFlags::barrier(group_scope(k)),
        // The split block barrier: both halves are reached by every thread of the block.
        CgOp::BarrierArrive | CgOp::BarrierWait => IntrinsicFlags::barrier(BarrierScope::Block),
        // `coalesced_threads()` is the active mask where it is made.
        CgOp::Make(GroupKind::Coalesced) => IntrinsicFlags::WARP,
        CgOp::Make(_) => IntrinsicFlags::DEVICE,
        CgOp::ThreadRank(_) => IntrinsicFlags::PER_THREAD,
        // How many threads a coalesced group has depends on where it was made.
        CgOp::NumThreads(k) | CgOp::MetaSize(k) => IntrinsicFlags {
            per_thread: k == GroupKind::Coalesced,
            ..IntrinsicFlags::DEVICE
        },
        // Which tile of the block: differs between the block's tiles.
        CgOp::MetaRank(k) => IntrinsicFlags {
            per_thread: tile(k),
            ..IntrinsicFlags::DEVICE
        },
        CgOp::BlockRank | CgOp::NumBlocks => IntrinsicFlags::DEVICE,
        CgOp::Shfl(..) | CgOp::Vote(..) => IntrinsicFlags::WARP,
        // A reduction over a tile differs between tiles; over the block, it is the block's.
        CgOp::Reduce(k, _) => IntrinsicFlags {
            convergent: true,
            per_thread: tile(k),
            ..IntrinsicFlags::DEVICE
        },
        CgOp::MemcpyAsync(_) | CgOp::AsyncCommit | CgOp::AsyncWait(_) | CgOp::AsyncWaitAll => {
            IntrinsicFlags::DEVICE
        }
    }
}

/// The operand and result types of an intrinsic whose call is typed by its declaration
/// alone ([`Intrinsic::signature`]): the front end converts each argument to its parameter's
/// type, as a call of a typed function does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The parameters' types, in order.
    pub params: &'static [Scalar],
    /// The result's type.
    pub result: Scalar,
}

impl Intrinsic {
    /// The signature of an intrinsic whose typing is its declaration: the front end's
    /// generic rule (`Rule::Declared`) checks and converts the arguments from it, so a new
    /// operation of this kind needs no typing code. `None` for intrinsics with a typing
    /// rule of their own (generic over types, with optional operands, or returning tuples).
    pub fn signature(self) -> Option<Signature> {
        const U32: Scalar = Scalar::UInt32;
        match self {
            Intrinsic::FunnelShiftL | Intrinsic::FunnelShiftR => Some(Signature {
                params: &[U32, U32, U32],
                result: U32,
            }),
            _ => None,
        }
    }

    /// The spelling of an intrinsic in Python, for diagnostics (an exhaustive match: no
    /// name derived from `Debug`).
    pub fn python_name(self) -> String {
        use crate::ir::{Shfl, Vote};
        let s = match self {
            Intrinsic::ThreadIdx(a) => return format!("thread_idx.{}", a.letter()),
            Intrinsic::BlockIdx(a) => return format!("block_idx.{}", a.letter()),
            Intrinsic::BlockDim(a) => return format!("block_dim.{}", a.letter()),
            Intrinsic::GridDim(a) => return format!("grid_dim.{}", a.letter()),
            Intrinsic::LaneId => "lane_id",
            Intrinsic::WarpSize => "warp_size",
            Intrinsic::SyncThreads => "syncthreads",
            Intrinsic::SyncThreadsCount => "syncthreads_count",
            Intrinsic::SyncThreadsAnd => "syncthreads_and",
            Intrinsic::SyncThreadsOr => "syncthreads_or",
            Intrinsic::ThreadFence(..) => "threadfence",
            Intrinsic::ActiveMask => "activemask",
            Intrinsic::LaneMaskLt => "lanemask_lt",
            Intrinsic::SyncWarp => "syncwarp",
            Intrinsic::Vote(Vote::All) => "all_sync",
            Intrinsic::Vote(Vote::Any) => "any_sync",
            Intrinsic::Vote(Vote::Uni) => "eq_sync",
            Intrinsic::Vote(Vote::Ballot) => "ballot_sync",
            Intrinsic::Shfl(Shfl::Idx) => "shfl_sync",
            Intrinsic::Shfl(Shfl::Up) => "shfl_up_sync",
            Intrinsic::Shfl(Shfl::Down) => "shfl_down_sync",
            Intrinsic::Shfl(Shfl::Xor) => "shfl_xor_sync",
            Intrinsic::MatchAny => "match_any_sync",
            Intrinsic::MatchAll => "match_all_sync",
            Intrinsic::DynamicSharedSize => "dynamic_shared_array",
            Intrinsic::ClusterIdx(a) => return format!("cluster_idx.{}", a.letter()),
            Intrinsic::ClusterDim(a) => return format!("cluster_dim.{}", a.letter()),
            Intrinsic::BlockIdxInCluster(a) => {
                return format!("block_idx_in_cluster.{}", a.letter());
            }
            Intrinsic::BlockRankInCluster => "block_rank_in_cluster",
            Intrinsic::ClusterSize => "cluster_size",
            Intrinsic::ClusterArrive(_) => "cluster_arrive",
            Intrinsic::ClusterWait => "cluster_wait",
            Intrinsic::ClusterSync => "cluster_sync",
            Intrinsic::MapSharedRank => "map_shared_rank",
            Intrinsic::Ldexp => "math.ldexp",
            Intrinsic::Frexp => "math.frexp",
            Intrinsic::Modf => "math.modf",
            Intrinsic::Sincos => "libdevice.sincos",
            Intrinsic::Sad => "libdevice.sad",
            Intrinsic::RoundDigits => "round",
            Intrinsic::Popc => "popc",
            Intrinsic::Brev => "brev",
            Intrinsic::BitCast => "bitcast",
            Intrinsic::Clz => "clz",
            Intrinsic::Ffs => "ffs",
            Intrinsic::Fma => "fma",
            Intrinsic::FunnelShiftL => "funnelshift_l",
            Intrinsic::FunnelShiftR => "funnelshift_r",
            Intrinsic::Math(f) => return format!("math.{}", f.name()),
            Intrinsic::Complex(_) => "complex arithmetic",
            Intrinsic::Rand => "random.rand",
            Intrinsic::Randn => "random.randn",
            Intrinsic::RandSeed | Intrinsic::RandThread | Intrinsic::RandCall => "random's stream",
            Intrinsic::Cg(_) => "cooperative groups (`cg`)",
            Intrinsic::Tensor(op) => op.python_name(),
            Intrinsic::Hopper(op) => return op.name(),
        };
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Axis, Shfl};

    #[test]
    fn barriers_are_classified_by_scope() {
        let scope = |i: Intrinsic| i.flags().barrier;
        assert_eq!(scope(Intrinsic::SyncThreads), Some(BarrierScope::Block));
        assert_eq!(scope(Intrinsic::SyncWarp), Some(BarrierScope::Warp));
        assert_eq!(scope(Intrinsic::ClusterSync), Some(BarrierScope::Cluster));
        assert_eq!(
            scope(Intrinsic::Cg(CgOp::Sync(GroupKind::Grid))),
            Some(BarrierScope::Grid)
        );
        assert_eq!(
            scope(Intrinsic::Cg(CgOp::Sync(GroupKind::Tile(32)))),
            Some(BarrierScope::Warp)
        );
        assert_eq!(scope(Intrinsic::Shfl(Shfl::Down)), None);
        assert!(
            Intrinsic::Cg(CgOp::ThreadRank(GroupKind::Block))
                .flags()
                .per_thread
        );
        assert!(!Intrinsic::BlockIdx(Axis::X).flags().per_thread);
        assert!(!Intrinsic::Math(crate::ir::MathFn::Sqrt).flags().device_only);
        assert!(Intrinsic::SyncThreads.flags().device_only);
        // Every Hopper operation is device-only (the CPU back end refuses it, E0501).
        for op in [
            HopperOp::MbarrierInit,
            HopperOp::ElectOne,
            HopperOp::FenceProxyAsync,
            HopperOp::WgmmaFence,
            HopperOp::BulkCommit,
            HopperOp::SetMaxNReg {
                inc: true,
                count: 240,
            },
        ] {
            assert!(Intrinsic::Hopper(op).flags().device_only, "{op:?}");
        }
    }
}
