//! Kernels run whole on the CPU (issue 33): the code comes from the host back end
//! (`lower::host::kernel`), each GPU thread runs as a fiber (a stackful coroutine of the
//! `corosensei` crate), and the blocks of a launch are spread over a pool of OS threads.
//!
//! A block's fibers run on one OS thread, each until it reaches a barrier, a warp
//! collective, or its end. When none can go on, the scheduler resolves what is complete: a
//! warp collective once every live lane of its mask waits at one with the same operation
//! and mask (lanes then exchange values through the warp, which gives the lockstep
//! semantics of the device), `activemask()` for the lanes that wait at the same call; then a
//! block barrier once every live thread of the block waits at one. A thread that has ended
//! no longer counts. If nothing can be resolved the launch deadlocked, and the error says
//! where each thread waits. A cooperative kernel (one with a grid sync) runs all its blocks
//! together on one OS thread, so that a grid barrier can complete.
//!
//! The schedule is fixed within a block (fibers in rank order, collectives resolved in
//! warp order); with [`CpuLaunch::deterministic`] blocks also run one after the other in
//! grid order, so a launch is reproducible even with atomics and races between blocks.
//! docs/semantics.md, "CPU back end", records the decisions.

use crate::abi::ArgValue;
use crate::lower::host::HostValue;
use crate::lower::host::kernel::{BarrierKind, KernelCode, ThreadContext, WarpOp};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Why a launch on the CPU failed.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuError {
    /// The arguments do not match the parameters.
    Argument(String),
    /// The launch configuration is invalid (an empty grid or block, more than 1024 threads
    /// per block).
    Config(String),
    /// A thread failed an `assert` or executed a `raise` (the first by block, then thread,
    /// order); that thread stopped, the others ran to their end.
    Raised {
        /// The source file.
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
        /// `AssertionError: message`, ...
        message: String,
        /// `thread_idx` of the failing thread.
        thread: [u32; 3],
        /// `block_idx` of the failing thread.
        block: [u32; 3],
    },
    /// An array index was out of range (the access was skipped; a load read zero).
    IndexOutOfBounds {
        /// The source file.
        file: String,
        /// 1-based line of the access.
        line: u32,
        /// 1-based column.
        column: u32,
        /// `thread_idx` of the first thread that did it.
        thread: [u32; 3],
        /// Its `block_idx`.
        block: [u32; 3],
    },
    /// Threads wait at barriers or warp collectives that can never complete.
    Deadlock(String),
    /// With [`CpuLaunch::race_check`]: two threads accessed the same byte of shared or
    /// global memory with no barrier between them, at least one of them storing (atomic
    /// operations excluded). The first pair found in the shared memory of the lowest block
    /// that has one, else the first in global memory; the launch ran to its end.
    Race {
        /// The source file.
        file: String,
        /// `"shared"` or `"global"`.
        space: &'static str,
        /// The byte offset in the block's shared memory, or the host address of the
        /// global byte.
        address: u64,
        /// The earlier access.
        first: Box<RaceAccess>,
        /// The later access, which found the earlier one.
        second: Box<RaceAccess>,
    },
    /// An OS resource (a fiber's stack) could not be had.
    Resource(String),
    /// The launch was stopped by [`crate::lower::host::interrupt::request`] (Ctrl-C in
    /// Python) before it ended: every thread stopped at its next loop back-edge, and no
    /// block started after it (`launch_raw_or_restore` then restores the arrays, as after
    /// any failed launch).
    Interrupted,
}

impl fmt::Display for CpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuError::Argument(m) | CpuError::Config(m) | CpuError::Resource(m) => {
                write!(f, "{m}")
            }
            CpuError::Raised {
                file,
                line,
                column,
                message,
                thread,
                block,
            } => write!(
                f,
                "{message} at {file}:{line}:{column} (thread {} of block {}; that thread stopped)",
                triple(*thread),
                triple(*block)
            ),
            CpuError::IndexOutOfBounds {
                file,
                line,
                column,
                thread,
                block,
            } => write!(
                f,
                "array index out of range at {file}:{line}:{column} (thread {} of block {})",
                triple(*thread),
                triple(*block)
            ),
            CpuError::Deadlock(m) => write!(f, "the kernel deadlocked: {m}"),
            CpuError::Interrupted => write!(f, "the launch was interrupted"),
            CpuError::Race {
                file,
                space,
                address,
                first,
                second,
            } => {
                let at = if *space == "shared" {
                    format!(
                        "shared memory (byte {address} of block {})",
                        triple(first.block)
                    )
                } else {
                    format!("global memory (address {address:#x})")
                };
                write!(
                    f,
                    "data race on {at}: {} at {file}:{}:{} by thread {} of block {}, and {} at {file}:{}:{} by thread {} of block {}, with no barrier between them",
                    first.what(),
                    first.line,
                    first.column,
                    triple(first.thread),
                    triple(first.block),
                    second.what(),
                    second.line,
                    second.column,
                    triple(second.thread),
                    triple(second.block),
                )
            }
        }
    }
}

impl std::error::Error for CpuError {}

/// One of the two accesses of a data race ([`CpuError::Race`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceAccess {
    /// 1-based line of the access.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Whether it stored.
    pub write: bool,
    /// `thread_idx` of the thread that made it.
    pub thread: [u32; 3],
    /// Its `block_idx`.
    pub block: [u32; 3],
}

impl RaceAccess {
    fn what(&self) -> &'static str {
        if self.write { "a store" } else { "a load" }
    }
}

fn triple(t: [u32; 3]) -> String {
    format!("({}, {}, {})", t[0], t[1], t[2])
}

/// The most dynamic shared memory a block may ask for on the CPU: 16 MiB.
pub const MAX_DYNAMIC_SHARED: u32 = 16 << 20;

/// The most threads a launch of a kernel that synchronizes the grid may have on the CPU:
/// they all run together, each a fiber with a stack of its own.
pub const MAX_COOPERATIVE_THREADS: u64 = 1 << 16;

/// How to run a launch on the CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuLaunch {
    /// Blocks in the grid (x, y, z).
    pub grid: [u32; 3],
    /// Threads per block (x, y, z).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
    /// OS threads that run blocks; 0 for one per available core.
    pub threads: usize,
    /// Run the blocks one after the other in grid order (x fastest) on the calling thread:
    /// the same interleaving, and so the same results, at every run.
    pub deterministic: bool,
    /// The seed of `random.rand`/`randn` (a fresh one when `None`), as the device's launch
    /// seed: thread `t` of the grid gets the same numbers as on a GPU.
    pub seed: Option<u64>,
    /// Check for data races (docs/semantics.md §22): every load and store of shared or
    /// global memory is recorded, and two by different threads of the same byte with no
    /// barrier between them, one a store, fail the launch with [`CpuError::Race`].
    /// Atomics are not recorded. Slower; works in both schedules.
    pub race_check: bool,
    /// The thread block cluster shape of the launch (the launch attribute); `None` for the
    /// kernel's own `cluster=` shape, or clusters of one block. The blocks of a cluster run
    /// together on one OS thread, their shared memory one after the other in rank order
    /// (distributed shared memory), and a cluster barrier waits for every live thread of
    /// the cluster.
    pub cluster: Option<[u32; 3]>,
}

impl CpuLaunch {
    /// A launch of `grid` blocks of `block` threads, with no dynamic shared memory, on
    /// every core.
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> CpuLaunch {
        CpuLaunch {
            grid,
            block,
            shared_bytes: 0,
            threads: 0,
            deterministic: false,
            seed: None,
            race_check: false,
            cluster: None,
        }
    }
}

/// A `@kernel` compiled for the CPU. `Send + Sync`; cheap to clone.
#[derive(Clone, Debug)]
pub struct CpuKernel {
    code: KernelCode,
    /// For each parameter: whether the kernel may store to the memory it holds.
    stores: std::sync::Arc<Vec<bool>>,
}

/// The runtime functions the compiled code calls, by name.
fn symbols() -> Vec<(&'static str, *const u8)> {
    use crate::lower::host::kernel::{
        BARRIER_SYMBOL, RACE_SYMBOL, RANDOM_SYMBOLS, TMA_SYMBOL, WARP_SYMBOL, WGMMA_SYMBOL,
    };
    vec![
        (BARRIER_SYMBOL, barrier as *const u8),
        (WGMMA_SYMBOL, super::cpu_wgmma::wgmma as *const u8),
        (TMA_SYMBOL, super::cpu_tma::tma as *const u8),
        (WARP_SYMBOL, warp as *const u8),
        (RACE_SYMBOL, race as *const u8),
        (RANDOM_SYMBOLS[0], rand_f32 as *const u8),
        (RANDOM_SYMBOLS[1], rand_f64 as *const u8),
        (RANDOM_SYMBOLS[2], randn_f32 as *const u8),
        (RANDOM_SYMBOLS[3], randn_f64 as *const u8),
    ]
}

impl CpuKernel {
    /// JIT-compiles a kernel program that passed `lower::host::kernel_diagnostics`.
    pub fn compile(
        program: &crate::ir::Program,
    ) -> Result<CpuKernel, crate::lower::host::HostError> {
        let code = crate::lower::host::kernel::compile_kernel(program, &symbols())?;
        Ok(CpuKernel {
            code,
            stores: std::sync::Arc::new(program.entry_param_stores()),
        })
    }

    /// Whether the kernel may store to the memory parameter `index` holds (an array, or a
    /// tuple or struct of arrays), itself or through its callees: a caller passing read-only
    /// memory checks this first, as for a GPU launch.
    pub fn may_store(&self, index: usize) -> bool {
        self.stores.get(index).copied().unwrap_or(true)
    }

    /// Whether the kernel synchronizes the grid: on a GPU it must be launched cooperatively
    /// (the CPU runs all its blocks together whichever way it is launched).
    pub fn cooperative(&self) -> bool {
        self.code.cooperative()
    }

    /// The kernel's Python name.
    pub fn name(&self) -> &str {
        self.code.name()
    }

    /// `@kernel(cluster=)`: the thread block cluster shape every launch must have.
    pub fn cluster(&self) -> Option<[u32; 3]> {
        self.code.cluster()
    }

    /// Parameter types, in order.
    pub fn params(&self) -> &[crate::types::Type] {
        self.code.params()
    }

    /// Launches on arguments given as values; arrays are copied in, and what the kernel
    /// stored is copied back into them when it ends (also when it failed).
    pub fn launch(&self, args: &mut [HostValue], cfg: &CpuLaunch) -> Result<(), CpuError> {
        let (frame, arrays) = self
            .code
            .frame_of_values(args)
            .map_err(|e| CpuError::Argument(e.to_string()))?;
        // SAFETY: the descriptors in `frame` point into `arrays`, alive until the end of
        // the launch and as large as their shapes say.
        let r = unsafe { self.run(&frame, cfg) };
        KernelCode::copy_back(args, arrays);
        r
    }

    /// Launches on arguments laid out as a kernel's ([`crate::abi::pack`]): arrays as
    /// [`ArgValue::Array`] descriptors of **host** memory, read and written in place.
    /// Every element access is bounds-checked against the descriptor's shape.
    ///
    /// # Safety
    ///
    /// For each array, every element its shape and strides reach must be valid host memory
    /// of the parameter's dtype for the whole launch, readable and writable, written by no
    /// other code meanwhile.
    pub unsafe fn launch_raw(&self, args: &[ArgValue], cfg: &CpuLaunch) -> Result<(), CpuError> {
        let frame = self
            .code
            .frame_of_raw(args)
            .map_err(|e| CpuError::Argument(e.to_string()))?;
        // SAFETY: the caller vouches for the arrays.
        unsafe { self.run(&frame, cfg) }
    }

    /// As [`CpuKernel::launch_raw`], but a launch that fails leaves the arrays it may store
    /// to as they were, as a GPU launch on host arrays does (it copies them back only when
    /// the kernel succeeded): each such array (a top-level argument) is copied before the
    /// launch and restored from the copy if it fails. The copies are spread over the
    /// launch's worker threads; the kernel itself works in place.
    ///
    /// # Safety
    ///
    /// As for [`CpuKernel::launch_raw`].
    pub unsafe fn launch_raw_or_restore(
        &self,
        args: &[ArgValue],
        cfg: &CpuLaunch,
    ) -> Result<(), CpuError> {
        let workers = if cfg.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            cfg.threads
        };
        let mut saved = Vec::new();
        for (i, (a, t)) in args.iter().zip(self.params()).enumerate() {
            if let (ArgValue::Array(a), crate::types::Type::Array(at)) = (a, t)
                && self.may_store(i)
                && let Some((start, len)) = extent(a, at)
            {
                let mut copy = vec![0u8; len];
                // SAFETY: the caller vouches for every byte the array's shape reaches.
                let src = unsafe { std::slice::from_raw_parts(start as *const u8, len) };
                copy_parallel(&mut copy, src, workers)?;
                saved.push((start, copy));
            }
        }
        // SAFETY: the caller vouches for the arrays.
        let r = unsafe { self.launch_raw(args, cfg) };
        if r.is_err() {
            for (start, copy) in &saved {
                // SAFETY: as above, and the launch has ended.
                let dst = unsafe { std::slice::from_raw_parts_mut(*start as *mut u8, copy.len()) };
                copy_parallel(dst, copy, workers)?;
            }
        }
        r
    }

    /// Runs every block of the launch.
    ///
    /// # Safety
    ///
    /// The array descriptors in `frame` must point to memory valid for every element their
    /// shapes and strides reach.
    unsafe fn run(&self, frame: &[u64], cfg: &CpuLaunch) -> Result<(), CpuError> {
        let [bx, by, bz] = cfg.block;
        let [gx, gy, gz] = cfg.grid;
        let block_size = u64::from(bx) * u64::from(by) * u64::from(bz);
        let blocks = u64::from(gx) * u64::from(gy) * u64::from(gz);
        if block_size == 0 || blocks == 0 {
            return Err(CpuError::Config(format!(
                "a launch needs at least one block of one thread (grid {:?}, block {:?})",
                cfg.grid, cfg.block
            )));
        }
        if block_size > 1024 {
            return Err(CpuError::Config(format!(
                "a block has at most 1024 threads; {block_size} were asked for"
            )));
        }
        if let Some(max) = self.code.max_threads()
            && block_size > u64::from(max)
        {
            return Err(CpuError::Config(format!(
                "the kernel was compiled with max_threads={max}; a block of {block_size} threads was asked for"
            )));
        }
        if cfg.shared_bytes > MAX_DYNAMIC_SHARED {
            return Err(CpuError::Config(format!(
                "{} bytes of dynamic shared memory were asked for; the CPU back end gives a block at most {MAX_DYNAMIC_SHARED} (a GPU at most 227 KiB)",
                cfg.shared_bytes
            )));
        }
        if blocks > u64::from(u32::MAX) {
            return Err(CpuError::Config("the grid has too many blocks".into()));
        }
        if self.code.cooperative() && blocks * block_size > MAX_COOPERATIVE_THREADS {
            return Err(CpuError::Config(format!(
                "cooperative launch rejected: the grid has {blocks} blocks, but at most {} can be resident at once on the CPU back end with {block_size} threads per block (a kernel that synchronizes the grid runs all its threads together, at most {MAX_COOPERATIVE_THREADS})",
                MAX_COOPERATIVE_THREADS / block_size
            )));
        }
        let blocks = blocks as u32;
        let cluster =
            crate::runtime::cluster::check_cluster(cfg.grid, cfg.cluster, self.code.cluster())
                .map_err(|m| {
                    CpuError::Config(format!(
                        "launch refused: {m} (grid {}, block {})",
                        triple(cfg.grid),
                        triple(cfg.block)
                    ))
                })?
                .unwrap_or([1, 1, 1]);
        // The blocks of a cluster in rank order (x fastest), the clusters in grid order.
        let cluster_size = cluster[0] * cluster[1] * cluster[2];
        let in_clusters = |c: u32| -> Vec<u32> {
            let [cx, cy, _] = cluster;
            let (nx, ny) = (gx / cx, gy / cy);
            let (ox, oy, oz) = (c % nx * cx, c / nx % ny * cy, c / (nx * ny) * cluster[2]);
            (0..cluster_size)
                .map(|r| {
                    let (x, y, z) = (ox + r % cx, oy + r / cx % cy, oz + r / (cx * cy));
                    x + gx * (y + gy * z)
                })
                .collect()
        };
        let clusters = blocks / cluster_size;
        let units = if self.code.cooperative() {
            Units::Lists(vec![(0..clusters).flat_map(in_clusters).collect()])
        } else if cluster_size == 1 {
            // A block per unit, numbered as they are taken: no list to build (serially, before
            // the workers start) and drop.
            Units::Blocks(blocks)
        } else {
            Units::Lists((0..clusters).map(in_clusters).collect())
        };
        let interrupt = crate::lower::host::interrupt::flag_for_call();
        let seed = cfg.seed.unwrap_or_else(crate::random::draw_seed);
        let shared = Launch {
            code: &self.code,
            frame: frame.as_ptr() as usize,
            cfg,
            seed,
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
            race: cfg.race_check.then(RaceState::default),
            interrupt,
            cluster,
        };
        let workers = if cfg.deterministic {
            1
        } else if cfg.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            cfg.threads
        }
        .min(units.len())
        .max(1);
        if workers == 1 && self.code.synchronizes() {
            // Fibers have stacks of their own: the calling thread's does not matter.
            shared.work(&units);
        } else {
            // Kernels without barriers run their threads as plain calls on the workers'
            // stacks, which must hold the local arrays.
            let stack = self.code.stack_bytes().max(2 << 20) + (1 << 20);
            let pool = pool(workers, stack).map_err(CpuError::Resource)?;
            // Every worker of the pool takes units from the launch's counter until none is
            // left (a worker that finds none returns at once).
            pool.broadcast(|_| shared.work(&units));
        }
        if shared.interrupted() {
            return Err(CpuError::Interrupted);
        }
        let failure = shared
            .failure
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(e) = failure.as_ref().map(|(_, e)| e)
            && !matches!(
                e,
                CpuError::Raised { .. } | CpuError::IndexOutOfBounds { .. }
            )
        {
            return Err(e.clone());
        }
        // A race is reported before an error it may have caused.
        if let Some(found) = shared.race.and_then(|r| {
            r.records
                .into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .report()
        }) {
            return Err(self.race_error(found));
        }
        match failure {
            None => Ok(()),
            Some((_, e)) => Err(e),
        }
    }

    fn race_error(&self, found: RaceFound) -> CpuError {
        let access = |a: &Access, block: [u32; 3], thread: [u32; 3]| RaceAccess {
            line: (a.site >> 32) as u32,
            column: a.site as u32,
            write: a.write,
            thread,
            block,
        };
        CpuError::Race {
            file: self.code.file().to_string(),
            space: if found.region == 0 {
                "global"
            } else {
                "shared"
            },
            address: found.address,
            first: Box::new(access(&found.first, found.first_ids.1, found.first_ids.0)),
            second: Box::new(access(
                &found.second,
                found.second_ids.1,
                found.second_ids.0,
            )),
        }
    }
}

/// The first byte and the length of the memory an array's shape and strides reach, or
/// `None` when it has no element.
fn extent(a: &crate::abi::ArrayArg, at: &crate::types::ArrayType) -> Option<(u64, usize)> {
    let itemsize = crate::abi::layout_of(&at.dtype.ty()).size;
    if a.shape.contains(&0) || a.shape.len() != a.strides.len() {
        return None;
    }
    let (mut ahead, mut behind) = (itemsize, 0u64);
    for (&d, &s) in a.shape.iter().zip(&a.strides) {
        let reach = (d - 1)
            .checked_mul(s.unsigned_abs())?
            .checked_mul(itemsize)?;
        if s < 0 {
            behind = behind.checked_add(reach)?;
        } else {
            ahead = ahead.checked_add(reach)?;
        }
    }
    let start = a.data.checked_sub(behind)?;
    Some((start, usize::try_from(behind.checked_add(ahead)?).ok()?))
}

/// Copies `src` into `dst` (of the same length): over `workers` threads of the persistent
/// pool in chunks of at least 1 MiB when it is large, else on the calling thread.
fn copy_parallel(dst: &mut [u8], src: &[u8], workers: usize) -> Result<(), CpuError> {
    const CHUNK: usize = 1 << 20;
    if workers <= 1 || src.len() < 2 * CHUNK {
        dst.copy_from_slice(src);
        return Ok(());
    }
    let chunk = src.len().div_ceil(workers).max(CHUNK);
    let pool = pool(workers, 4 << 20).map_err(CpuError::Resource)?;
    pool.scope(|s| {
        for (d, c) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            s.spawn(move |_| d.copy_from_slice(c));
        }
    });
    Ok(())
}

/// The persistent pool of `workers` OS threads with stacks of at least `stack` bytes: made
/// at the first launch that asks for it and kept for the process, so that a launch starts
/// no thread (spawning them at every launch was a serial cost that bounded the scaling
/// with cores). Pools are kept per worker count (a launch's `threads`) and stack size,
/// rounded up to a power of two. A child process made by `fork` (Python's
/// `multiprocessing`) has none of its parent's threads: it makes pools of its own (the
/// parent's are abandoned there, not dropped, since their threads do not exist).
fn pool(workers: usize, stack: usize) -> Result<Arc<rayon_core::ThreadPool>, String> {
    type Pools = (u32, Vec<(usize, usize, Arc<rayon_core::ThreadPool>)>);
    static POOLS: Mutex<Pools> = Mutex::new((0, Vec::new()));
    let stack = stack.checked_next_power_of_two().unwrap_or(stack);
    let mut guard = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let (pid, pools) = &mut *guard;
    if *pid != std::process::id() {
        std::mem::forget(std::mem::take(pools));
        *pid = std::process::id();
    }
    if let Some((.., p)) = pools.iter().find(|(w, s, _)| *w == workers && *s >= stack) {
        return Ok(p.clone());
    }
    let p = rayon_core::ThreadPoolBuilder::new()
        .num_threads(workers)
        .stack_size(stack)
        .thread_name(|i| format!("pydevice-cpu-{i}"))
        .build()
        .map_err(|e| format!("no worker thread: {e}"))?;
    let p = Arc::new(p);
    // A larger stack replaces the pool of the same size.
    pools.retain(|(w, ..)| *w != workers);
    pools.push((workers, stack, p.clone()));
    Ok(p)
}

/// Runs `kernel` on the CPU: `grid` blocks of `block` threads with `shared_bytes` of dynamic
/// shared memory each, on `args` (arrays copied in and back), on every core.
pub fn launch(
    kernel: &CpuKernel,
    grid: [u32; 3],
    block: [u32; 3],
    args: &mut [HostValue],
    shared_bytes: u32,
) -> Result<(), CpuError> {
    let mut cfg = CpuLaunch::new(grid, block);
    cfg.shared_bytes = shared_bytes;
    kernel.launch(args, &cfg)
}

/// The units of a launch: the blocks that run together on one OS thread.
enum Units {
    /// Each of this many blocks on its own, in grid order.
    Blocks(u32),
    /// The blocks of each unit (a cluster's, or all of a cooperative launch), in rank order.
    Lists(Vec<Vec<u32>>),
}

impl Units {
    fn len(&self) -> usize {
        match self {
            Units::Blocks(n) => *n as usize,
            Units::Lists(v) => v.len(),
        }
    }
}

/// What the workers of one launch share.
struct Launch<'a> {
    code: &'a KernelCode,
    /// The address of the argument frame.
    frame: usize,
    cfg: &'a CpuLaunch,
    seed: u64,
    /// The next unit to run.
    next: AtomicUsize,
    /// Set after a deadlock: no new unit starts.
    stop: AtomicBool,
    /// The first failure by (block, thread) order, with that order's key.
    failure: Mutex<Option<((u32, u32), CpuError)>>,
    /// The race detector's records, when the launch checks for races.
    race: Option<RaceState>,
    /// The address of the interrupt flag (a `u32`) the threads poll
    /// (`lower::host::interrupt`).
    interrupt: u64,
    /// The cluster shape (1, 1, 1 without clusters).
    cluster: [u32; 3],
}

/// An access as the race detector records it.
#[derive(Copy, Clone, Debug)]
struct Access {
    /// The thread's rank in its block, and its block's rank in the grid.
    rank: u32,
    block: u32,
    /// The thread's [`Thread::epochs`] when it made the access.
    epochs: [u32; 3],
    /// `line << 32 | column`.
    site: u64,
    write: bool,
}

impl Access {
    /// Whether a barrier (or program order) separates `self` from `other`.
    fn ordered_with(&self, other: &Access) -> bool {
        if self.block == other.block && self.rank == other.rank {
            return true;
        }
        // A grid barrier separates any two threads of a cooperative launch.
        if self.epochs[1] != other.epochs[1] {
            return true;
        }
        if self.block != other.block {
            return false;
        }
        // A block barrier separates two threads of the block; `syncwarp` two of a warp.
        self.epochs[0] != other.epochs[0]
            || (self.rank / 32 == other.rank / 32 && self.epochs[2] != other.epochs[2])
    }
}

/// What the race detector knows of one byte: its last store, and the loads since.
#[derive(Default)]
struct Cell {
    write: Option<Access>,
    reads: Vec<Access>,
}

/// The loads of a byte kept per cell: enough for the kernels a race check is for.
const READS_PER_BYTE: usize = 32;

/// The first race found.
struct RaceFound {
    /// 0 for global memory, `1 + block rank` for a block's shared memory.
    region: u32,
    address: u64,
    first: Access,
    second: Access,
    /// (`thread_idx`, `block_idx`) of each.
    first_ids: ([u32; 3], [u32; 3]),
    second_ids: ([u32; 3], [u32; 3]),
}

/// The race detector's state for one launch, under one lock.
#[derive(Default)]
struct RaceState {
    records: Mutex<Records>,
}

/// What the race detector knows: every byte of shared memory (by block and offset) and of
/// global memory (by address) that was accessed, and the first race found in each region.
///
/// The report is chosen so that it does not depend on how the blocks' runs interleave
/// ([`Records::report`]): a region is recorded until its own first race, whatever races
/// other regions found meanwhile.
#[derive(Default)]
struct Records {
    cells: std::collections::HashMap<(u32, u64), Cell>,
    /// By region: 0 global memory, `1 + block rank` a block's shared memory.
    found: std::collections::BTreeMap<u32, RaceFound>,
}

impl Records {
    /// The race reported: the first in the shared memory of the lowest block that has one,
    /// else the first in global memory. Only a block's own threads touch its shared memory,
    /// on the block's fixed schedule, so that choice is the same at every run; which of two
    /// blocks racing on global memory comes first depends on the schedule unless the launch
    /// is deterministic.
    fn report(mut self) -> Option<RaceFound> {
        let shared = self.found.range(1..).next().map(|(r, _)| *r);
        self.found.remove(&shared.unwrap_or(0))
    }
}

impl Launch<'_> {
    /// Whether the launch was asked to stop (Ctrl-C in Python).
    fn interrupted(&self) -> bool {
        // SAFETY: `interrupt` is the address of one of `lower::host::interrupt`'s static
        // flags.
        unsafe { (*(self.interrupt as *const AtomicU32)).load(Ordering::Relaxed) != 0 }
    }

    fn fail(&self, key: (u32, u32), e: CpuError) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.as_ref().is_none_or(|(k, _)| key < *k) {
            *f = Some((key, e));
        }
    }

    /// Takes units until none is left, with the buffers this OS thread kept from its
    /// earlier units and launches ([`WorkerCache`]).
    fn work(&self, units: &Units) {
        let mut cache = CACHE.with(|c| std::mem::take(&mut *c.borrow_mut()));
        if cache.stack_size != self.code.stack_bytes() {
            cache.stacks.clear();
            cache.stack_size = self.code.stack_bytes();
        }
        loop {
            if self.stop.load(Ordering::Relaxed) || self.interrupted() {
                break;
            }
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let one;
            let unit: &[u32] = match units {
                Units::Blocks(n) if i < *n as usize => {
                    one = [i as u32];
                    &one
                }
                Units::Blocks(_) => break,
                Units::Lists(v) => match v.get(i) {
                    Some(u) => u,
                    None => break,
                },
            };
            if let Err((key, e)) = self.run_unit(unit, &mut cache) {
                if matches!(e, CpuError::Deadlock(_) | CpuError::Resource(_)) {
                    self.stop.store(true, Ordering::Relaxed);
                }
                self.fail(key, e);
            }
        }
        cache.trim();
        CACHE.with(|c| *c.borrow_mut() = cache);
    }

    /// Runs the blocks of one unit (one block, or all of a cooperative launch) as fibers.
    fn run_unit(
        &self,
        blocks: &[u32],
        cache: &mut WorkerCache,
    ) -> Result<(), ((u32, u32), CpuError)> {
        let cfg = self.cfg;
        let [bx, by, _] = cfg.block;
        let [gx, gy, gz] = cfg.grid;
        let bs = (cfg.block[0] * cfg.block[1] * cfg.block[2]) as usize;
        let layout = self.code.shared();
        let shared_bytes = layout.dynamic_offset() + u64::from(cfg.shared_bytes);
        // Each block's shared memory starts 16-byte aligned, zeroed.
        let words = usize::try_from(shared_bytes.div_ceil(16) * 2)
            .unwrap_or(usize::MAX)
            .max(2);
        let shared = &mut cache.shared;
        shared.clear();
        shared.resize(words.saturating_mul(blocks.len()), 0);
        let shared_base = shared.as_mut_ptr();
        let WorkerCache {
            threads,
            stacks,
            fibers: kept,
            ..
        } = cache;
        threads.clear();
        threads.reserve(blocks.len() * bs);
        for (k, &b) in blocks.iter().enumerate() {
            for r in 0..bs as u32 {
                threads.push(Thread {
                    ctx: ThreadContext {
                        error: 0,
                        stack_limit: 0,
                        thread_idx: [r % bx, (r / bx) % by, r / (bx * by)],
                        block_idx: [b % gx, (b / gx) % gy, b / (gx * gy)],
                        block_dim: cfg.block,
                        grid_dim: [gx, gy, gz],
                        lane: r % 32,
                        dynamic_shared_size: cfg.shared_bytes,
                        shared: shared_base.wrapping_add(k * words) as u64,
                        rank: r,
                        block_size: bs as u32,
                        block_rank: b,
                        num_blocks: gx * gy * gz,
                        race: u64::from(self.race.is_some()),
                        interrupt: self.interrupt,
                        cluster_dim: self.cluster,
                        cluster_stride: (words * 8) as u64,
                    },
                    yielder: std::ptr::null(),
                    wait: Wait::Run,
                    result: 0,
                    global: u64::from(b) * bs as u64 + u64::from(r),
                    seed: self.seed,
                    calls: 0,
                    epochs: [0; 3],
                    cluster_arrivals: 0,
                    race: self
                        .race
                        .as_ref()
                        .map_or(std::ptr::null(), |r| r as *const RaceState),
                });
            }
        }
        let n = threads.len();
        let tp = threads.as_mut_ptr();
        let entry = self.code.entry();
        let frame = self.frame;
        if !self.code.synchronizes() {
            // No barrier, no collective: each thread is a plain call, in rank order.
            for t in threads.iter_mut() {
                let mut unused = 0u64;
                // SAFETY: as for a fiber below; the code never suspends (it calls no
                // barrier or collective), so it needs no yielder.
                unsafe {
                    entry(
                        frame as *const u8,
                        (&mut unused as *mut u64).cast(),
                        (t as *mut Thread).cast::<ThreadContext>(),
                    )
                };
                t.wait = Wait::Done;
            }
            return self.first_error(threads);
        }
        // The fibers' slots are kept from unit to unit too (no allocation per block).
        let mut fibers = std::mem::take(kept);
        fibers.clear();
        fibers.reserve(n);
        for i in 0..n {
            let stack = match stacks.pop() {
                Some(s) => s,
                None => DefaultStack::new(self.code.stack_bytes()).map_err(|e| {
                    (
                        (blocks[0], 0),
                        CpuError::Resource(format!("no stack for a thread's fiber: {e}")),
                    )
                })?,
            };
            let t = tp.wrapping_add(i) as usize;
            fibers.push(Some(Coroutine::with_stack(
                stack,
                move |y: &Yielder<(), ()>, _: ()| {
                    let t = t as *mut Thread;
                    // SAFETY: `t` is this fiber's element of `threads`, which outlives the
                    // fiber; nothing else touches it while the fiber runs.
                    unsafe { (*t).yielder = y as *const Yielder<(), ()> };
                    let mut unused = 0u64;
                    // SAFETY: `entry` is the kernel's buffer wrapper; `frame` holds the
                    // parameters' layout (the caller of `run` vouches for the arrays); the
                    // context is the first field of the `repr(C)` `Thread`.
                    unsafe {
                        entry(
                            frame as *const u8,
                            (&mut unused as *mut u64).cast(),
                            t.cast::<ThreadContext>(),
                        )
                    };
                },
            )));
        }
        let cluster_size = (self.cluster[0] * self.cluster[1] * self.cluster[2]) as usize;
        let mut sched = Scheduler {
            threads: tp,
            n,
            bs,
            cs: bs * cluster_size,
        };
        let outcome = sched.run(&mut fibers, stacks);
        if let Err(why) = outcome {
            // The waiting fibers can never finish: their stacks are leaked rather than
            // unwound through JIT-compiled frames.
            for f in fibers.into_iter().flatten() {
                std::mem::forget(f);
            }
            let key = (blocks[0], 0);
            return Err((
                key,
                CpuError::Deadlock(self.describe_deadlock(threads, &why)),
            ));
        }
        // Every slot is empty now (each fiber's stack went back to `stacks`).
        fibers.clear();
        *kept = fibers;
        self.first_error(threads)
    }

    /// The first error of the unit's threads, by (block, thread) order.
    fn first_error(&self, threads: &[Thread]) -> Result<(), ((u32, u32), CpuError)> {
        let Some(t) = threads.iter().find(|t| t.ctx.error != 0) else {
            return Ok(());
        };
        let key = (t.ctx.block_rank, t.ctx.rank);
        let e = match self.code.describe_error(t.ctx.error) {
            crate::lower::host::HostError::Raised {
                file,
                line,
                column,
                message,
            } => CpuError::Raised {
                file,
                line,
                column,
                message,
                thread: t.ctx.thread_idx,
                block: t.ctx.block_idx,
            },
            crate::lower::host::HostError::IndexOutOfBounds { line, column } => {
                CpuError::IndexOutOfBounds {
                    file: self.code.file().to_string(),
                    line,
                    column,
                    thread: t.ctx.thread_idx,
                    block: t.ctx.block_idx,
                }
            }
            other => CpuError::Argument(other.to_string()),
        };
        Err((key, e))
    }

    fn describe_deadlock(&self, threads: &[Thread], why: &str) -> String {
        let mut out = why.to_string();
        let mut shown = 0;
        for t in threads {
            let (what, site) = match t.wait {
                Wait::Barrier { kind, site, .. } => (
                    match kind {
                        BarrierKind::Grid => "the grid barrier",
                        BarrierKind::ClusterWait => "a cluster barrier",
                        _ => "a block barrier",
                    },
                    site,
                ),
                Wait::Warp { op, mask, site, .. } => {
                    let _ = (op, mask);
                    ("a warp collective", site)
                }
                Wait::Run | Wait::Poll | Wait::Done => continue,
            };
            if shown == 4 {
                out.push_str("; ...");
                break;
            }
            out.push_str(&format!(
                "; thread {} of block {} waits at {what} ({})",
                triple(t.ctx.thread_idx),
                triple(t.ctx.block_idx),
                self.code.site(site)
            ));
            shown += 1;
        }
        out
    }
}

/// What a worker thread keeps from one unit to the next and from one launch to the next,
/// so that a block allocates nothing in the common case: its fibers' stacks (mapping a
/// stack is a system call), the threads' records and the blocks' shared memory.
#[derive(Default)]
struct WorkerCache {
    /// Free fiber stacks, each of `stack_size` bytes.
    stacks: Vec<DefaultStack>,
    stack_size: usize,
    /// The threads of the unit being run (their storage is what is kept).
    threads: Vec<Thread>,
    /// The shared memory of the unit's blocks, one after the other.
    shared: Vec<u64>,
    /// The unit's fibers' slots (their storage is what is kept).
    fibers: Vec<Option<Coroutine<(), (), (), DefaultStack>>>,
}

/// The most fiber stacks a worker keeps between launches (a block has at most 1024
/// threads; a cooperative launch can have far more).
const KEPT_STACKS: usize = 1024;

/// The most shared-memory words a worker keeps between launches (64 MiB).
const KEPT_SHARED_WORDS: usize = 8 << 20;

impl WorkerCache {
    /// Lets go of what is more than a worker should keep between launches.
    fn trim(&mut self) {
        self.stacks.truncate(KEPT_STACKS);
        self.threads.clear();
        if self.threads.capacity() > KEPT_STACKS {
            self.threads = Vec::new();
        }
        if self.shared.capacity() > KEPT_SHARED_WORDS {
            self.shared = Vec::new();
        }
        if self.fibers.capacity() > KEPT_STACKS {
            self.fibers = Vec::new();
        }
    }
}

thread_local! {
    /// This OS thread's [`WorkerCache`], taken by a launch's `work` and put back after.
    static CACHE: RefCell<WorkerCache> = RefCell::default();
}

/// What a thread is doing, as the scheduler sees it.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Wait {
    /// Runnable.
    Run,
    /// At a barrier of its block (or of the grid).
    Barrier {
        kind: BarrierKind,
        pred: bool,
        site: u64,
    },
    /// Polling: an atomic `wait` found its value unchanged; runnable again after the
    /// others had their turn.
    Poll,
    /// At a warp collective.
    Warp {
        op: WarpOp,
        mask: u32,
        value: u64,
        arg: u32,
        c: u32,
        site: u64,
    },
    /// Ended.
    Done,
}

/// A lane's part in a warp collective.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Collective {
    op: WarpOp,
    mask: u32,
    value: u64,
    arg: u32,
    c: u32,
    site: u64,
}

/// A GPU thread: the context the code reads (first, so that its address is the thread's),
/// then the scheduler's state.
#[repr(C)]
struct Thread {
    ctx: ThreadContext,
    /// The fiber's yielder, set when it starts.
    yielder: *const Yielder<(), ()>,
    wait: Wait,
    /// The result of the collective or barrier it waited at.
    result: u64,
    /// Its global linear index (the random stream's thread).
    global: u64,
    seed: u64,
    /// How many random numbers it drew.
    calls: u64,
    /// How many block barriers, grid barriers and `syncwarp`s it has passed (the race
    /// detector's clock).
    epochs: [u32; 3],
    /// The launch's race detector, or null.
    race: *const RaceState,
    /// How many times it arrived at its cluster's barrier (`cluster_arrive`).
    cluster_arrivals: u32,
}

/// The fibers of one unit, in block-major rank order.
struct Scheduler {
    threads: *mut Thread,
    n: usize,
    /// Threads per block.
    bs: usize,
    /// Threads per cluster (a unit holds whole clusters, one after the other).
    cs: usize,
}

impl Scheduler {
    fn t(&mut self, i: usize) -> &mut Thread {
        // SAFETY: `i < n`, and no fiber runs while the scheduler holds this borrow.
        unsafe { &mut *self.threads.add(i) }
    }

    /// Runs the fibers until all have ended, or until none can go on (`Err`).
    fn run(
        &mut self,
        fibers: &mut [Option<Coroutine<(), (), (), DefaultStack>>],
        stacks: &mut Vec<DefaultStack>,
    ) -> Result<(), String> {
        loop {
            for (i, slot) in fibers.iter_mut().enumerate() {
                if self.t(i).wait == Wait::Poll {
                    self.t(i).wait = Wait::Run;
                }
                if self.t(i).wait != Wait::Run {
                    continue;
                }
                let Some(f) = slot.as_mut() else { continue };
                match f.resume(()) {
                    CoroutineResult::Yield(()) => {}
                    CoroutineResult::Return(()) => {
                        self.t(i).wait = Wait::Done;
                        if let Some(f) = slot.take() {
                            stacks.push(f.into_stack());
                        }
                    }
                }
            }
            if (0..self.n).all(|i| self.t(i).wait == Wait::Done) {
                return Ok(());
            }
            let mut progress = false;
            // Warps never straddle blocks: `bs` threads per block, warps of 32 within.
            for w in 0..(self.n / self.bs) * self.bs.div_ceil(32) {
                progress |= self.resolve_warps(w);
            }
            if !progress {
                progress = self.release_barriers();
            }
            if !progress && (0..self.n).any(|i| self.t(i).wait == Wait::Poll) {
                // Only polling threads can go on: what they wait for may come from
                // another block, on another OS thread.
                std::thread::yield_now();
                progress = true;
            }
            if !progress {
                return Err("no thread can go on".into());
            }
        }
    }

    /// The thread indices of warp `w` (counted over the unit, block by block).
    fn warp_lanes(&self, w: usize) -> std::ops::Range<usize> {
        let warps_per_block = self.bs.div_ceil(32);
        let (b, k) = (w / warps_per_block, w % warps_per_block);
        let start = b * self.bs + k * 32;
        let end = (b * self.bs + self.bs).min(start + 32);
        start..end.min(self.n)
    }

    /// Completes the collectives of warp `w` that every participant reached.
    fn resolve_warps(&mut self, w: usize) -> bool {
        let lanes = self.warp_lanes(w);
        let (base, width) = (lanes.start, lanes.len());
        // What each lane waits at, and which lanes have not ended.
        let mut waits = [None; 32];
        let mut live = 0u32;
        for (k, slot) in waits.iter_mut().enumerate().take(width) {
            match self.t(base + k).wait {
                Wait::Done => {}
                Wait::Warp {
                    op,
                    mask,
                    value,
                    arg,
                    c,
                    site,
                } => {
                    live |= 1 << k;
                    *slot = Some(Collective {
                        op,
                        mask,
                        value,
                        arg,
                        c,
                        site,
                    });
                }
                _ => live |= 1 << k,
            }
        }
        let mut done = 0u32;
        // Collectives with an explicit mask: every live lane of the mask waits at the same
        // operation with the same mask.
        for k in 0..width {
            let Some(me) = waits[k] else { continue };
            if done & (1 << k) != 0 || me.op == WarpOp::ActiveMask {
                continue;
            }
            let parts = me.mask & live;
            if parts & (1 << k) == 0 {
                continue;
            }
            let ready = (0..width)
                .filter(|p| parts & (1 << p) != 0)
                .all(|p| waits[p].is_some_and(|o| o.op == me.op && o.mask == me.mask));
            if ready {
                self.collective(me.op, base, parts, &waits);
                done |= parts;
            }
        }
        // `activemask()`: the lanes that wait at the same call.
        for k in 0..width {
            let Some(me) = waits[k] else { continue };
            if done & (1 << k) != 0 || me.op != WarpOp::ActiveMask {
                continue;
            }
            let group = (0..width)
                .filter(|&p| {
                    done & (1 << p) == 0
                        && waits[p].is_some_and(|o| o.op == WarpOp::ActiveMask && o.site == me.site)
                })
                .fold(0u32, |m, p| m | 1 << p);
            for p in 0..width {
                if group & (1 << p) != 0 {
                    let t = self.t(base + p);
                    t.result = u64::from(group);
                    t.wait = Wait::Run;
                }
            }
            done |= group;
        }
        done != 0
    }

    /// Computes a warp collective over the lanes `parts` of the warp starting at thread
    /// `base` and makes them runnable.
    fn collective(
        &mut self,
        op: WarpOp,
        base: usize,
        parts: u32,
        waits: &[Option<Collective>; 32],
    ) {
        let lanes = || (0..32u32).filter(move |l| parts & (1 << l) != 0);
        let value = |l: u32| waits[l as usize].map_or(0, |c| c.value);
        let first = lanes().next().map_or(0, value);
        let all_same = lanes().all(|l| value(l) == first);
        let ballot = lanes()
            .filter(|&l| value(l) != 0)
            .fold(0u64, |m, l| m | 1 << l);
        let reduced = match op {
            WarpOp::ReduceAdd | WarpOp::ReduceMin | WarpOp::ReduceMax => {
                reduce_tree(op, parts, waits)
            }
            _ => [0; 32],
        };
        if op == WarpOp::Tensor {
            let mut bufs = [None; 32];
            for l in lanes() {
                bufs[l as usize] = Some(value(l));
            }
            let code = lanes()
                .next()
                .map_or(0, |l| waits[l as usize].map_or(0, |c| c.arg));
            // SAFETY: each lane of `parts` is suspended at this collective with the address
            // of its buffer, laid out as the code says (`lower::host::emit::tensor`).
            unsafe { super::cpu_tensor::run(code, &bufs) };
        }
        for lane in lanes() {
            let Some(me) = waits[lane as usize] else {
                continue;
            };
            let r = match op {
                WarpOp::Sync | WarpOp::ActiveMask | WarpOp::Tensor => 0,
                WarpOp::All => u64::from(lanes().all(|l| value(l) != 0)),
                WarpOp::Any => u64::from(ballot != 0),
                WarpOp::Uni => u64::from(ballot == 0 || ballot == u64::from(parts)),
                WarpOp::Ballot => ballot,
                WarpOp::ShflIdx | WarpOp::ShflUp | WarpOp::ShflDown | WarpOp::ShflXor => {
                    let j = shfl_source(op, lane, me.arg, me.c);
                    if j < 32 && parts & (1 << j) != 0 {
                        value(j)
                    } else {
                        me.value
                    }
                }
                WarpOp::MatchAny => lanes()
                    .filter(|&l| value(l) == me.value)
                    .fold(0u64, |m, l| m | 1 << l),
                WarpOp::MatchAll => {
                    if all_same {
                        u64::from(parts) | 1 << 32
                    } else {
                        0
                    }
                }
                WarpOp::ReduceAdd | WarpOp::ReduceMin | WarpOp::ReduceMax => reduced[lane as usize],
            };
            let t = self.t(base + lane as usize);
            t.result = r;
            if op == WarpOp::Sync {
                t.epochs[2] = t.epochs[2].wrapping_add(1);
            }
            t.wait = Wait::Run;
        }
    }

    /// Releases every block (or the grid) whose live threads all wait at a barrier.
    fn release_barriers(&mut self) -> bool {
        let mut progress = false;
        let blocks = self.n / self.bs;
        for b in 0..blocks {
            let range = b * self.bs..(b + 1) * self.bs;
            // One pass (no allocation: this runs at every barrier of every block): whether
            // every live thread waits at a block barrier, how many live, how many true.
            let (mut n, mut count, mut all) = (0u64, 0u64, true);
            for i in range.clone() {
                match self.t(i).wait {
                    Wait::Done => {}
                    Wait::Barrier { kind, pred, .. } if kind.of_block() => {
                        n += 1;
                        count += u64::from(pred);
                    }
                    _ => {
                        all = false;
                        break;
                    }
                }
            }
            if n == 0 || !all {
                continue;
            }
            for i in range {
                let t = self.t(i);
                let Wait::Barrier { kind, .. } = t.wait else {
                    continue;
                };
                t.result = match kind {
                    BarrierKind::Count => count,
                    BarrierKind::And => u64::from(count == n),
                    BarrierKind::Or => u64::from(count > 0),
                    _ => 0,
                };
                t.epochs[0] = t.epochs[0].wrapping_add(1);
                t.wait = Wait::Run;
            }
            progress = true;
        }
        if progress {
            return true;
        }
        // A cluster barrier: a thread waiting at one goes on once every live thread of its
        // cluster has arrived as often as it has.
        for c in 0..self.n / self.cs {
            let range = c * self.cs..(c + 1) * self.cs;
            let least = range
                .clone()
                .filter_map(|i| {
                    let t = self.t(i);
                    (t.wait != Wait::Done).then_some(t.cluster_arrivals)
                })
                .min();
            let Some(least) = least else { continue };
            for i in range {
                let t = self.t(i);
                if let Wait::Barrier {
                    kind: BarrierKind::ClusterWait,
                    ..
                } = t.wait
                    && t.cluster_arrivals <= least
                {
                    // It orders the block's threads as a block barrier does (the race
                    // detector does not follow distributed shared memory across blocks).
                    t.result = 0;
                    t.epochs[0] = t.epochs[0].wrapping_add(1);
                    t.wait = Wait::Run;
                    progress = true;
                }
            }
        }
        if progress {
            return true;
        }
        // The grid barrier: every live thread of the (cooperative) unit waits at it.
        let live: Vec<usize> = (0..self.n)
            .filter(|&i| self.t(i).wait != Wait::Done)
            .collect();
        if !live.is_empty()
            && live.iter().all(|&i| {
                matches!(
                    self.t(i).wait,
                    Wait::Barrier {
                        kind: BarrierKind::Grid,
                        ..
                    }
                )
            })
        {
            for i in live {
                let t = self.t(i);
                t.result = 0;
                t.epochs[1] = t.epochs[1].wrapping_add(1);
                t.wait = Wait::Run;
            }
            return true;
        }
        false
    }
}

/// `cg.reduce` over the lanes `parts`, in the device's order of operations
/// (`lower::ptx::emit::groups`): a tile's butterfly (each step combines a lane's value with
/// that of lane `^ off`, for `off` from half the tile down to 1; a missing partner gives the
/// lane's own value, as a shuffle does), or a coalesced group's tree over ranks (rank `r`
/// takes rank `r + off` when `r % 2off == 0`) whose first member's total every member gets.
/// The operands: `arg` bit 0 signed integers, bit 1 a coalesced group; `c` the width of a
/// float (32 or 64), 0 for integers. Returns each lane's result.
fn reduce_tree(op: WarpOp, parts: u32, waits: &[Option<Collective>; 32]) -> [u64; 32] {
    let mut out = [0u64; 32];
    let Some(me) = (0..32).find_map(|l| waits[l].filter(|_| parts & (1 << l) != 0)) else {
        return out;
    };
    let signed = me.arg & 1 != 0;
    let coalesced = me.arg & 2 != 0;
    let combine = |a: u64, b: u64| -> u64 {
        match (me.c, op) {
            (32, WarpOp::ReduceAdd) => {
                u64::from((f32::from_bits(a as u32) + f32::from_bits(b as u32)).to_bits())
            }
            (32, WarpOp::ReduceMin) => u64::from(
                f32::from_bits(a as u32)
                    .min(f32::from_bits(b as u32))
                    .to_bits(),
            ),
            (32, _) => u64::from(
                f32::from_bits(a as u32)
                    .max(f32::from_bits(b as u32))
                    .to_bits(),
            ),
            (64, WarpOp::ReduceAdd) => (f64::from_bits(a) + f64::from_bits(b)).to_bits(),
            (64, WarpOp::ReduceMin) => f64::from_bits(a).min(f64::from_bits(b)).to_bits(),
            (64, _) => f64::from_bits(a).max(f64::from_bits(b)).to_bits(),
            (_, WarpOp::ReduceAdd) => a.wrapping_add(b),
            (_, WarpOp::ReduceMin) if signed => (a as i64).min(b as i64) as u64,
            (_, WarpOp::ReduceMin) => a.min(b),
            (_, _) if signed => (a as i64).max(b as i64) as u64,
            (_, _) => a.max(b),
        }
    };
    let value = |l: usize| waits[l].map_or(0, |c| c.value);
    if coalesced {
        let members: Vec<usize> = (0..32).filter(|l| parts & (1 << l) != 0).collect();
        let mut acc: Vec<u64> = members.iter().map(|&l| value(l)).collect();
        let mut off = 1;
        while off < 32 {
            for r in (0..acc.len()).step_by(2 * off) {
                if r + off < acc.len() {
                    acc[r] = combine(acc[r], acc[r + off]);
                }
            }
            off *= 2;
        }
        for &l in &members {
            out[l] = acc[0];
        }
        return out;
    }
    let n = me.mask.count_ones().max(1) as usize;
    let base = me.mask.trailing_zeros() as usize % 32;
    let mut acc = [0u64; 32];
    for (p, a) in acc.iter_mut().enumerate().take(n) {
        *a = value(base + p);
    }
    let mut off = n / 2;
    while off >= 1 {
        let prev = acc;
        for p in 0..n {
            let q = p ^ off;
            let other = if q < n && parts & (1 << (base + q)) != 0 {
                prev[q]
            } else {
                prev[p]
            };
            acc[p] = combine(prev[p], other);
        }
        off /= 2;
    }
    out[base..base + n].copy_from_slice(&acc[..n]);
    out
}

/// The source lane of a shuffle, as PTX's `shfl.sync` computes it (`c`: the clamp value
/// and the segment mask, `((32 - width) << 8) | clamp`); the lane itself when the source
/// is outside its segment.
fn shfl_source(op: WarpOp, lane: u32, b: u32, c: u32) -> u32 {
    let bval = b & 0x1f;
    let cval = c & 0x1f;
    let seg = (c >> 8) & 0x1f;
    let max = (lane & seg) | (cval & !seg);
    let min = lane & seg;
    let (j, ok) = match op {
        WarpOp::ShflUp => {
            let j = lane as i32 - bval as i32;
            (j, j >= max as i32)
        }
        WarpOp::ShflDown => {
            let j = (lane + bval) as i32;
            (j, j <= max as i32)
        }
        WarpOp::ShflXor => {
            let j = (lane ^ bval) as i32;
            (j, j <= max as i32)
        }
        _ => {
            let j = (min | (bval & !seg)) as i32;
            (j, j <= max as i32)
        }
    };
    if ok { j as u32 } else { lane }
}

/// The thread whose context `ctx` is.
///
/// # Safety
///
/// `ctx` must be the context of a live fiber's `Thread`, called from that fiber.
unsafe fn thread<'a>(ctx: *mut ThreadContext) -> &'a mut Thread {
    // SAFETY: the context is the first field of the `repr(C)` `Thread` (the caller's
    // promise); only this fiber touches it while it runs.
    unsafe { &mut *ctx.cast::<Thread>() }
}

/// Records what the calling fiber waits for, suspends it until the scheduler resumes it,
/// and returns the result the scheduler left.
///
/// The scheduler reads `wait` and writes `result` while the fiber is suspended, through
/// its own pointer to the thread: no `&mut Thread` may live across the suspension (the
/// optimizer would take the reference as exclusive and read a stale `result`, as release
/// builds did), so both go through the raw pointer, and `result` is read volatile.
///
/// # Safety
///
/// `t` must be the `Thread` of the calling fiber, which is running.
unsafe fn wait_for(t: *mut Thread, wait: Wait) -> u64 {
    // SAFETY: the caller's promise; the scheduler touches the thread only while the fiber is
    // suspended.
    unsafe {
        std::ptr::write(std::ptr::addr_of_mut!((*t).wait), wait);
        let y = (*t).yielder;
        // `yielder` was set by this fiber when it started and lives as long as it.
        (*y).suspend(());
        std::ptr::read_volatile(std::ptr::addr_of!((*t).result))
    }
}

extern "C" fn barrier(ctx: *mut ThreadContext, kind: i32, pred: i32, site: i64) -> i32 {
    if kind == BarrierKind::ClusterArrive as i32 {
        // SAFETY: called by kernel code with its context (the first field of its Thread).
        unsafe {
            let t = ctx.cast::<Thread>();
            (*t).cluster_arrivals = (*t).cluster_arrivals.wrapping_add(1);
        }
        return 0;
    }
    if kind == BarrierKind::Poll as i32 {
        let t = ctx.cast::<Thread>();
        // SAFETY: called by kernel code with its context; `yielder` is null only for a
        // thread run as a plain call, which then gives its OS thread away instead.
        unsafe {
            if (*t).yielder.is_null() {
                std::thread::yield_now();
            } else {
                wait_for(t, Wait::Poll);
            }
        }
        return 0;
    }
    let wait = Wait::Barrier {
        kind: BarrierKind::from_code(kind).unwrap_or(BarrierKind::Sync),
        pred: pred != 0,
        site: site as u64,
    };
    // SAFETY: called by kernel code, on its fiber, with its context (the first field of its
    // `repr(C)` `Thread`).
    unsafe { wait_for(ctx.cast::<Thread>(), wait) as i32 }
}

extern "C" fn warp(
    ctx: *mut ThreadContext,
    op: i32,
    mask: i32,
    value: i64,
    arg: i32,
    c: i32,
    site: i64,
) -> i64 {
    let wait = Wait::Warp {
        op: WarpOp::from_code(op).unwrap_or(WarpOp::Sync),
        mask: mask as u32,
        value: value as u64,
        arg: arg as u32,
        c: c as u32,
        site: site as u64,
    };
    // SAFETY: as in `barrier`.
    unsafe { wait_for(ctx.cast::<Thread>(), wait) as i64 }
}

/// The race detector's record of an access (docs/semantics.md §22): checks it against
/// the byte's last store and the loads since, then records it. The first race found in a
/// region (global memory, or one block's shared memory) is kept; after it nothing more is
/// recorded there.
extern "C" fn race(
    ctx: *mut ThreadContext,
    addr: i64,
    size: i32,
    write: i32,
    space: i32,
    site: i64,
) -> i32 {
    // SAFETY: called by kernel code, on its fiber (or its plain call), with its context.
    let t = unsafe { thread(ctx) };
    // SAFETY: `race` points to the launch's state, alive for the whole launch, or is null.
    let Some(state) = (unsafe { t.race.as_ref() }) else {
        return 0;
    };
    let me = Access {
        rank: t.ctx.rank,
        block: t.ctx.block_rank,
        epochs: t.epochs,
        site: site as u64,
        write: write != 0,
    };
    let (region, base) = if space == 1 {
        (
            t.ctx.block_rank + 1,
            (addr as u64).wrapping_sub(t.ctx.shared),
        )
    } else {
        (0, addr as u64)
    };
    let mut records = state.records.lock().unwrap_or_else(|e| e.into_inner());
    // After its first race, nothing more is recorded in that region.
    if records.found.contains_key(&region) {
        return 0;
    }
    let Records { cells, found } = &mut *records;
    for k in 0..u64::from(size.max(1) as u32) {
        let cell = cells.entry((region, base + k)).or_default();
        let conflict = cell.write.filter(|w| !w.ordered_with(&me)).or_else(|| {
            me.write
                .then(|| cell.reads.iter().find(|r| !r.ordered_with(&me)).copied())
                .flatten()
        });
        if let Some(first) = conflict {
            // The other thread's indices, from its ranks.
            let ids = |a: &Access| {
                let [bx, by, _] = t.ctx.block_dim;
                let [gx, gy, _] = t.ctx.grid_dim;
                let (r, b) = (a.rank, a.block);
                (
                    [r % bx, (r / bx) % by, r / (bx * by)],
                    [b % gx, (b / gx) % gy, b / (gx * gy)],
                )
            };
            found.insert(
                region,
                RaceFound {
                    region,
                    address: base + k,
                    first_ids: ids(&first),
                    second_ids: ids(&me),
                    first,
                    second: me,
                },
            );
            return 0;
        }
        if me.write {
            cell.write = Some(me);
            cell.reads.clear();
        } else {
            cell.reads
                .retain(|r| !(r.rank == me.rank && r.block == me.block));
            if cell.reads.len() < READS_PER_BYTE {
                cell.reads.push(me);
            }
        }
    }
    0
}

/// The next Philox block of the thread's stream (`crate::random`).
fn next_block(ctx: *mut ThreadContext) -> [u32; 4] {
    // SAFETY: called by kernel code, on its fiber, with its context.
    let t = unsafe { thread(ctx) };
    let b = crate::random::block(t.seed, t.global, t.calls);
    t.calls = t.calls.wrapping_add(1);
    b
}

extern "C" fn rand_f32(ctx: *mut ThreadContext) -> f32 {
    crate::random::uniform_f32(next_block(ctx)[0])
}

extern "C" fn rand_f64(ctx: *mut ThreadContext) -> f64 {
    let b = next_block(ctx);
    crate::random::uniform_f64(b[0], b[1])
}

extern "C" fn randn_f32(ctx: *mut ThreadContext) -> f32 {
    crate::random::normal_f64(next_block(ctx)) as f32
}

extern "C" fn randn_f64(ctx: *mut ThreadContext) -> f64 {
    crate::random::normal_f64(next_block(ctx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_sources_follow_ptx() {
        // Full warp.
        assert_eq!(shfl_source(WarpOp::ShflDown, 3, 4, 0x1f), 7);
        assert_eq!(shfl_source(WarpOp::ShflDown, 30, 4, 0x1f), 30);
        assert_eq!(shfl_source(WarpOp::ShflUp, 3, 4, 0), 3);
        assert_eq!(shfl_source(WarpOp::ShflUp, 9, 4, 0), 5);
        assert_eq!(shfl_source(WarpOp::ShflXor, 5, 1, 0x1f), 4);
        assert_eq!(shfl_source(WarpOp::ShflIdx, 5, 33, 0x1f), 1);
        // Width 8 (tile): segment of lanes 8..16.
        let seg = (32 - 8) << 8;
        assert_eq!(shfl_source(WarpOp::ShflDown, 14, 2, seg | 0x1f), 14);
        assert_eq!(shfl_source(WarpOp::ShflDown, 12, 2, seg | 0x1f), 14);
        assert_eq!(shfl_source(WarpOp::ShflUp, 9, 2, seg), 9);
        assert_eq!(shfl_source(WarpOp::ShflIdx, 13, 3, seg | 0x1f), 11);
    }

    #[test]
    fn kernels_cross_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CpuKernel>();
    }
}
