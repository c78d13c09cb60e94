//! Whole kernels for the CPU: a `@kernel` lowered by the host emitter (`emit`), with the
//! device intrinsics as reads of a per-thread [`ThreadContext`] and calls of the runtime that
//! schedules the threads (`runtime::cpu`: each GPU thread a fiber). This file states the
//! contract between the two: the context's layout, the runtime's symbols and their
//! signatures, the operation codes, and the layout of the block's static shared memory.
//! It holds no scheduling; docs/semantics.md, "CPU back end", records the decisions.

use super::{HostError, HostValue, value};
use crate::abi::ArgValue;
use crate::ir::{Expr, Program};
use crate::types::{MemSpace, Type};
use std::collections::HashMap;
use std::sync::Arc;

/// What JIT-compiled kernel code reads of its thread: the first field of the runtime's
/// per-thread state, whose address every function of the kernel takes as its hidden first
/// parameter (the host's error word is its first field).
#[repr(C)]
#[derive(Clone, Debug, Default)]
pub struct ThreadContext {
    /// The thread's first error: `line << 32 | column` of an out-of-range index, or
    /// `RAISE_BIT | line << 32 | column` of a failed `assert` or a `raise`; 0 when none.
    pub error: u64,
    /// The lowest stack address the thread's code may use, read by every function's stack
    /// check (the word after the error word, as for host calls); 0: no check. A fiber's
    /// stack is sized for the kernel's frames when it is made.
    pub stack_limit: u64,
    /// `thread_idx.x, y, z`.
    pub thread_idx: [u32; 3],
    /// `block_idx.x, y, z`.
    pub block_idx: [u32; 3],
    /// `block_dim.x, y, z`.
    pub block_dim: [u32; 3],
    /// `grid_dim.x, y, z`.
    pub grid_dim: [u32; 3],
    /// `lane_id`: the linear index in the block modulo 32.
    pub lane: u32,
    /// The bytes of dynamic shared memory of the launch.
    pub dynamic_shared_size: u32,
    /// The address of the block's shared memory: the static arrays ([`SharedLayout`]), then
    /// the dynamic ones from [`SharedLayout::dynamic_offset`].
    pub shared: u64,
    /// The thread's linear index in its block (x fastest).
    pub rank: u32,
    /// Threads per block.
    pub block_size: u32,
    /// The block's linear index in the grid (x fastest).
    pub block_rank: u32,
    /// Blocks in the grid.
    pub num_blocks: u32,
    /// Nonzero when the launch checks for data races: every access to shared or global
    /// memory then calls [`RACE_SYMBOL`] first.
    pub race: u64,
    /// The address of the launch's interrupt flag (a `u32`, `lower::host::interrupt`):
    /// every function of the kernel with a loop polls it at each back-edge, and a thread
    /// that finds it set stops with the host's `INTERRUPTED` error word (Ctrl-C in Python).
    pub interrupt: u64,
    /// `cluster_dim.x, y, z`: the blocks of a thread block cluster (1, 1, 1 without one).
    pub cluster_dim: [u32; 3],
    /// The bytes between the shared memory of consecutive ranks of a cluster (the blocks of
    /// a cluster run together, their shared memory one after the other in rank order):
    /// `map_shared_rank` adds `(rank - own rank) *` this to an address.
    pub cluster_stride: u64,
}

/// Byte offsets of [`ThreadContext`]'s fields, as the emitted code reads them.
pub(crate) mod offset {
    use super::ThreadContext;
    use std::mem::offset_of;
    // Every function's stack check reads the word after the error word (`check_stack`).
    const _: () = assert!(offset_of!(ThreadContext, stack_limit) == 8);
    pub const THREAD_IDX: usize = offset_of!(ThreadContext, thread_idx);
    pub const BLOCK_IDX: usize = offset_of!(ThreadContext, block_idx);
    pub const BLOCK_DIM: usize = offset_of!(ThreadContext, block_dim);
    pub const GRID_DIM: usize = offset_of!(ThreadContext, grid_dim);
    pub const LANE: usize = offset_of!(ThreadContext, lane);
    pub const DYNAMIC_SHARED_SIZE: usize = offset_of!(ThreadContext, dynamic_shared_size);
    pub const SHARED: usize = offset_of!(ThreadContext, shared);
    pub const RANK: usize = offset_of!(ThreadContext, rank);
    pub const BLOCK_SIZE: usize = offset_of!(ThreadContext, block_size);
    pub const BLOCK_RANK: usize = offset_of!(ThreadContext, block_rank);
    pub const NUM_BLOCKS: usize = offset_of!(ThreadContext, num_blocks);
    pub const RACE: usize = offset_of!(ThreadContext, race);
    pub const INTERRUPT: usize = offset_of!(ThreadContext, interrupt);
    pub const CLUSTER_DIM: usize = offset_of!(ThreadContext, cluster_dim);
    pub const CLUSTER_STRIDE: usize = offset_of!(ThreadContext, cluster_stride);
}

/// `__pyd_cpu_barrier(ctx, kind, pred, site) -> int32`: a barrier of the block (or of the
/// grid); the result is what `syncthreads_count`/`_and`/`_or` return.
pub const BARRIER_SYMBOL: &str = "__pyd_cpu_barrier";
/// `__pyd_cpu_warp(ctx, op, mask, value, arg, c, site) -> int64`: a warp collective
/// ([`WarpOp`]) over the lanes of `mask`.
pub const WARP_SYMBOL: &str = "__pyd_cpu_warp";
/// `__pyd_cpu_race(ctx, addr, size, write, space, site) -> int32`: an access of `size`
/// bytes at `addr` (a store when `write` is 1) to shared (`space` 1) or global (0) memory,
/// at `site` (`line << 32 | column`), called only when the launch checks for races
/// ([`ThreadContext::race`]); the result is unused.
pub const RACE_SYMBOL: &str = "__pyd_cpu_race";
/// `__pyd_cpu_tma(ctx, op, smem, limit, map, bar, c0, c1, c2, c3, c4, mask) -> int32`: a
/// TMA copy between a tensor map's box and shared memory (`runtime::cpu_tma::tma`).
pub const TMA_SYMBOL: &str = "__pyd_cpu_tma";
/// `__pyd_cpu_wgmma(ctx, acc, a_desc, b_desc, info, scale_d, shared_bytes) -> int32`: the
/// calling thread's part of a `wgmma` (`runtime::cpu_wgmma::wgmma`).
pub const WGMMA_SYMBOL: &str = "__pyd_cpu_wgmma";
/// `rand(float32)`, `rand(float64)`, `randn(float32)`, `randn(float64)` of the thread's
/// Philox stream: `(ctx) -> float`.
pub const RANDOM_SYMBOLS: [&str; 4] = [
    "__pyd_cpu_rand_f32",
    "__pyd_cpu_rand_f64",
    "__pyd_cpu_randn_f32",
    "__pyd_cpu_randn_f64",
];

/// Every symbol the runtime must provide to [`compile_kernel`].
pub fn runtime_symbols() -> Vec<&'static str> {
    let mut v = vec![
        BARRIER_SYMBOL,
        WARP_SYMBOL,
        RACE_SYMBOL,
        TMA_SYMBOL,
        WGMMA_SYMBOL,
    ];
    v.extend(RANDOM_SYMBOLS);
    v
}

/// The barrier kinds of [`BARRIER_SYMBOL`].
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BarrierKind {
    /// `syncthreads()`, `this_thread_block().sync()`, `cg.barrier_wait`.
    Sync = 0,
    /// `syncthreads_count(pred)`: how many threads' predicates hold.
    Count = 1,
    /// `syncthreads_and(pred)`.
    And = 2,
    /// `syncthreads_or(pred)`.
    Or = 3,
    /// `this_grid().sync()`: every thread of the (cooperative) launch.
    Grid = 4,
    /// Not a barrier: an atomic `wait` saw the value it waits on unchanged, so the thread
    /// lets the others run (the threads of its unit, then other OS threads) and polls again.
    Poll = 5,
    /// `cluster_arrive()`: counts the thread's arrival at its cluster's barrier; does not
    /// wait.
    ClusterArrive = 6,
    /// `cluster_wait()`: waits until every live thread of the cluster has arrived as often
    /// as this one.
    ClusterWait = 7,
}

impl BarrierKind {
    /// The kind of a code the emitted code passes.
    pub fn from_code(c: i32) -> Option<BarrierKind> {
        [
            BarrierKind::Sync,
            BarrierKind::Count,
            BarrierKind::And,
            BarrierKind::Or,
            BarrierKind::Grid,
            BarrierKind::Poll,
            BarrierKind::ClusterArrive,
            BarrierKind::ClusterWait,
        ]
        .into_iter()
        .find(|k| *k as i32 == c)
    }

    /// Whether every live thread of the block waits at it (`syncthreads` and its forms).
    pub fn of_block(self) -> bool {
        matches!(
            self,
            BarrierKind::Sync | BarrierKind::Count | BarrierKind::And | BarrierKind::Or
        )
    }
}

/// The warp collectives of [`WARP_SYMBOL`]. The value travels as 64 bits (zero-extended);
/// `arg` is a shuffle's lane, delta or xor flag; `c` a shuffle's clamp and segment mask as
/// PTX's `shfl.sync` takes them (`((32 - width) << 8) | clamp`).
#[repr(i32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WarpOp {
    /// `syncwarp(mask)`.
    Sync = 0,
    /// `all_sync(mask, pred)` → 0/1.
    All = 1,
    /// `any_sync(mask, pred)` → 0/1.
    Any = 2,
    /// `eq_sync(mask, pred)` → 0/1.
    Uni = 3,
    /// `ballot_sync(mask, pred)` → the mask of lanes whose predicate holds.
    Ballot = 4,
    /// `shfl_sync`.
    ShflIdx = 5,
    /// `shfl_up_sync`.
    ShflUp = 6,
    /// `shfl_down_sync`.
    ShflDown = 7,
    /// `shfl_xor_sync`.
    ShflXor = 8,
    /// `match_any_sync(mask, value)` → the lanes holding the same value.
    MatchAny = 9,
    /// `match_all_sync(mask, value)` → `mask | 1 << 32` when every lane holds the same
    /// value, else 0.
    MatchAll = 10,
    /// `activemask()`, `coalesced_threads()`: the lanes that reached this call together.
    ActiveMask = 11,
    /// `cg.reduce(g, v, 'add')` on integers (wrapping).
    ReduceAdd = 12,
    /// `cg.reduce(g, v, 'min')` on integers; `arg` is 1 when they are signed.
    ReduceMin = 13,
    /// `cg.reduce(g, v, 'max')` on integers; `arg` is 1 when they are signed.
    ReduceMax = 14,
    /// A tensor-core operation over the whole warp: `value` is the address of the lane's
    /// buffer, `arg` the operation's code (`runtime::cpu_tensor`); the result is 0.
    Tensor = 15,
}

impl WarpOp {
    /// The operation of a code the emitted code passes.
    pub fn from_code(c: i32) -> Option<WarpOp> {
        use WarpOp::*;
        [
            Sync, All, Any, Uni, Ballot, ShflIdx, ShflUp, ShflDown, ShflXor, MatchAny, MatchAll,
            ActiveMask, ReduceAdd, ReduceMin, ReduceMax, Tensor,
        ]
        .into_iter()
        .find(|k| *k as i32 == c)
    }
}

/// Where each static shared array of a program lives in its block's shared memory: one
/// allocation per `StaticArray` expression (per call site, as on the device).
#[derive(Clone, Debug, Default)]
pub struct SharedLayout {
    /// (function index, expression index) → byte offset.
    pub(crate) offsets: HashMap<(usize, usize), u64>,
    /// Bytes of static shared memory.
    pub static_bytes: u64,
}

impl SharedLayout {
    /// Lays out every shared `StaticArray` of `program`, each at its alignment.
    pub(crate) fn of(program: &Program) -> SharedLayout {
        let mut out = SharedLayout::default();
        for (fh, f) in program.functions.iter() {
            for (eh, e) in f.exprs.iter() {
                let Expr::StaticArray { shape, align } = e else {
                    continue;
                };
                let Some(at) = f.ty(eh).as_array() else {
                    continue;
                };
                if at.space != MemSpace::Shared {
                    continue;
                }
                let (elem, elem_align) = super::leaf::elem_layout(&at.dtype);
                let bytes = shape.iter().fold(elem, |acc, d| acc.saturating_mul(*d));
                let align = (*align).max(elem_align).max(1).next_power_of_two();
                let at_off = out.static_bytes.div_ceil(align) * align;
                out.offsets.insert((fh.index(), eh.index()), at_off);
                out.static_bytes = at_off.saturating_add(bytes);
            }
        }
        out
    }

    /// Where dynamic shared memory starts: after the static arrays, 16-byte aligned.
    pub fn dynamic_offset(&self) -> u64 {
        self.static_bytes.div_ceil(16) * 16
    }
}

/// The stack a thread's fiber needs: the local arrays of every function (an upper bound
/// without recursion), plus room for the calls and the C library (`printf`).
fn stack_bytes(program: &Program) -> usize {
    let mut local = 0u64;
    for (_, f) in program.functions.iter() {
        for (eh, e) in f.exprs.iter() {
            if let Expr::StaticArray { shape, .. } = e
                && let Some(at) = f.ty(eh).as_array()
                && at.space != MemSpace::Shared
            {
                let (elem, _) = super::leaf::elem_layout(&at.dtype);
                local = local.saturating_add(shape.iter().fold(elem, |a, d| a.saturating_mul(*d)));
            }
        }
    }
    let bytes = local.saturating_add(256 * 1024).div_ceil(4096) * 4096;
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// Whether any function of `program` reaches a barrier, a warp collective or an atomic
/// `wait` (what `emit::kernel` lowers to [`BARRIER_SYMBOL`] or [`WARP_SYMBOL`]).
fn synchronizes(program: &Program) -> bool {
    use crate::ir::{CgOp, Intrinsic};
    use crate::types::GroupKind;
    program.functions.iter().any(|(_, f)| {
        f.exprs.iter().any(|(_, e)| match e {
            Expr::Intrinsic(op, _) => match op {
                Intrinsic::SyncThreads
                | Intrinsic::SyncThreadsCount
                | Intrinsic::SyncThreadsAnd
                | Intrinsic::SyncThreadsOr
                | Intrinsic::ActiveMask
                | Intrinsic::SyncWarp
                | Intrinsic::Vote(_)
                | Intrinsic::Shfl(_)
                | Intrinsic::MatchAny
                | Intrinsic::MatchAll
                | Intrinsic::ClusterWait
                | Intrinsic::ClusterSync => true,
                Intrinsic::Hopper(o) => matches!(
                    o,
                    crate::ir::HopperOp::ElectOne
                        | crate::ir::HopperOp::MbarrierTryWaitParity
                        | crate::ir::HopperOp::MbarrierWaitParity
                ),
                Intrinsic::Tensor(t) => matches!(
                    t,
                    crate::ir::TensorOp::Mma { .. }
                        | crate::ir::TensorOp::MmaM16n8k16
                        | crate::ir::TensorOp::Ldmatrix { .. }
                ),
                Intrinsic::Cg(cg) => matches!(
                    cg,
                    CgOp::Make(GroupKind::Coalesced)
                        | CgOp::Sync(_)
                        | CgOp::Shfl(..)
                        | CgOp::Vote(..)
                        | CgOp::Reduce(..)
                        | CgOp::BarrierWait
                ),
                _ => false,
            },
            // A thread waiting for a value another thread of its block stores must let
            // that thread run: it polls as a fiber.
            Expr::Atomic {
                op: crate::ir::AtomicOp::Wait,
                ..
            } => true,
            _ => false,
        })
    })
}

/// A `@kernel` compiled to native code for this machine, run by a scheduler of fibers
/// (`runtime::cpu`). `Send + Sync`; cheap to clone.
#[derive(Clone)]
pub struct KernelCode {
    _code: Arc<super::Code>,
    entry: usize,
    name: String,
    params: Vec<Type>,
    file: Arc<str>,
    raises: Arc<Vec<(u32, u32, String)>>,
    shared: SharedLayout,
    stack_bytes: usize,
    cooperative: bool,
    synchronizes: bool,
    max_threads: Option<u32>,
    cluster: Option<[u32; 3]>,
}

impl std::fmt::Debug for KernelCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCode")
            .field("name", &self.name)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// The entry of a compiled kernel: `entry(args, unused, ctx)`, the arguments laid out as a
/// C++ struct of the parameters, `ctx` the thread's [`ThreadContext`].
pub type KernelEntry = unsafe extern "C" fn(*const u8, *mut u8, *mut ThreadContext);

impl KernelCode {
    /// The kernel's Python name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Parameter types, in order.
    pub fn params(&self) -> &[Type] {
        &self.params
    }

    /// The source file's name.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// `@kernel(max_threads=)`: the most threads a block of a launch may have.
    pub fn max_threads(&self) -> Option<u32> {
        self.max_threads
    }

    /// `@kernel(cluster=)`: the thread block cluster shape every launch must have.
    pub fn cluster(&self) -> Option<[u32; 3]> {
        self.cluster
    }

    /// The layout of the block's static shared memory.
    pub fn shared(&self) -> &SharedLayout {
        &self.shared
    }

    /// The stack each thread's fiber gets.
    pub fn stack_bytes(&self) -> usize {
        self.stack_bytes
    }

    /// Whether the kernel calls the scheduler (a barrier or a warp collective anywhere):
    /// when not, its threads can run one after the other as plain calls.
    pub fn synchronizes(&self) -> bool {
        self.synchronizes
    }

    /// Whether the kernel synchronizes the whole grid (all blocks must run together).
    pub fn cooperative(&self) -> bool {
        self.cooperative
    }

    /// The entry point. Valid while this `KernelCode` (or a clone) is alive.
    pub fn entry(&self) -> KernelEntry {
        // SAFETY: `entry` is the address of the JIT-compiled buffer wrapper, which has this
        // signature and lives as long as `self._code`.
        unsafe { std::mem::transmute::<usize, KernelEntry>(self.entry) }
    }

    /// Lays out arguments given as [`HostValue`]s: the frame (parameters as a C++ struct)
    /// and, per argument, the aligned copy of an array's elements that the frame points to
    /// (its length in bytes and storage). Copy them back with [`KernelCode::copy_back`].
    #[allow(clippy::type_complexity)]
    pub fn frame_of_values(
        &self,
        args: &[HostValue],
    ) -> Result<(Vec<u64>, Vec<Option<(usize, Vec<u64>)>>), HostError> {
        value::frame(&self.name, &self.params, args)
    }

    /// Writes the arrays a launch worked on back into the [`HostValue`]s they came from.
    pub fn copy_back(args: &mut [HostValue], arrays: Vec<Option<(usize, Vec<u64>)>>) {
        value::copy_back(args, arrays)
    }

    /// Lays out arguments given as [`ArgValue`]s (arrays as descriptors of host memory).
    pub fn frame_of_raw(&self, args: &[ArgValue]) -> Result<Vec<u64>, HostError> {
        value::raw_frame(&self.name, &self.params, args)
    }

    /// What a thread's error word means: `(file, line, column, Some(message))` for a
    /// failed `assert` or a `raise`, `None` for an out-of-range index.
    pub fn describe_error(&self, word: u64) -> HostError {
        if word & crate::ir::RAISE_BIT != 0 {
            let line = ((word & !crate::ir::RAISE_BIT) >> 32) as u32;
            let column = word as u32;
            let message = self
                .raises
                .iter()
                .find(|(l, c, _)| *l == line && *c == column)
                .map_or_else(|| "an exception".to_string(), |(_, _, m)| m.clone());
            HostError::Raised {
                file: self.file.to_string(),
                line,
                column,
                message,
            }
        } else {
            HostError::IndexOutOfBounds {
                line: (word >> 32) as u32,
                column: word as u32,
            }
        }
    }

    /// The position `site` (`line << 32 | column`) names, as `file:line:column`.
    pub fn site(&self, site: u64) -> String {
        format!("{}:{}:{}", self.file, site >> 32, site as u32)
    }
}

/// JIT-compiles a `@kernel` that passed [`super::kernel_diagnostics`] for the CPU;
/// `symbols` are the runtime's functions ([`runtime_symbols`] by name, each with the
/// signature documented there).
pub fn compile_kernel(
    program: &Program,
    symbols: &[(&'static str, *const u8)],
) -> Result<KernelCode, HostError> {
    for name in runtime_symbols() {
        if !symbols.iter().any(|(n, _)| *n == name) {
            return Err(HostError::Codegen(format!(
                "the runtime gave no `{name}` (a bug; please report it)"
            )));
        }
    }
    let shared = SharedLayout::of(program);
    let (code, ids) = super::jit(program, symbols, Some(&shared))?;
    let entry_fn = &program.functions[program.entry];
    Ok(KernelCode {
        entry: ids.1,
        _code: Arc::new(code),
        name: entry_fn.name.clone(),
        params: entry_fn
            .param_locals()
            .map(|l| entry_fn.locals[l].ty.clone())
            .collect(),
        file: program.file.name.as_str().into(),
        raises: Arc::new(super::raise_sites(program)),
        shared,
        stack_bytes: stack_bytes(program),
        cooperative: program.cooperative,
        synchronizes: synchronizes(program),
        max_threads: program.options.max_threads,
        cluster: program.options.cluster,
    })
}
