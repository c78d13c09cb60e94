//! The back ends a GPU test's kernels run on: a CUDA device when one is present, and always
//! the CPU back end (`pydevice::runtime::cpu`, docs/semantics.md §22), so that CI, which
//! has no GPU, runs the kernels of the GPU tests. [`Dev`] offers the part of
//! `runtime::Device` the tests use (upload, download, launch, the error records) for both;
//! a test body is written once and run on each back end by `on_each_backend!` (in
//! `gpu/mod.rs`). What only a GPU has (the driver API, streams, timing, PTX) is reached
//! through `Deref` to `runtime::Device`, which a test may use only where it is GPU-only
//! ([`device`]); on the CPU back end it panics, naming the test's mistake.
//!
//! This file must not compute results: the tests' references stay in the tests.

use pydevice::abi::{ArgValue, KernelAbi};
use pydevice::runtime::cpu::{CpuError, CpuKernel, CpuLaunch};
use pydevice::runtime::{Device, DeviceBuffer, LaunchConfig, LoadedKernel, RuntimeError, Stream};
use pydevice::types::Type;
use pydevice::{Arch, CompileOptions, Module};
use std::alloc::Layout;
use std::fmt;
use std::sync::Mutex;

/// A back end that runs a test's kernels.
pub(crate) enum Dev {
    /// A CUDA device.
    Gpu(Device),
    /// The CPU back end: buffers are host memory, launches run on a thread pool.
    Cpu,
}

/// The back ends a test that runs anywhere runs on, in order: the GPU when a driver is
/// present, then the CPU back end. `PYDEVICE_TEST_BACKEND=gpu` or `=cpu` keeps one.
pub(crate) fn backends(test: &str) -> Vec<Dev> {
    let want = std::env::var("PYDEVICE_TEST_BACKEND").unwrap_or_default();
    let mut out = Vec::new();
    if want != "cpu" {
        match Device::open(0) {
            Ok(d) => out.push(Dev::Gpu(d)),
            Err(e) => eprintln!("{test}: no GPU run ({e})"),
        }
    }
    if want != "gpu" {
        out.push(Dev::Cpu);
    }
    for d in &out {
        eprintln!("{test}: runs on the {}", d.name());
    }
    out
}

/// The GPU for a test that needs one (timing, the driver API, streams, peer copies, PTX);
/// without a driver the test says why it is skipped and passes.
pub(crate) fn device(test: &str) -> Option<Dev> {
    if std::env::var("PYDEVICE_TEST_BACKEND").is_ok_and(|b| b == "cpu") {
        eprintln!("skipped {test}: GPU-only, and PYDEVICE_TEST_BACKEND=cpu");
        return None;
    }
    match Device::open(0) {
        Ok(d) => Some(Dev::Gpu(d)),
        Err(e) => {
            eprintln!("skipped {test}: {e}");
            None
        }
    }
}

impl std::ops::Deref for Dev {
    type Target = Device;

    fn deref(&self) -> &Device {
        match self {
            Dev::Gpu(d) => d,
            Dev::Cpu => panic!(
                "this test uses a CUDA driver API that the CPU back end does not have: make it GPU-only (`device`) or use a `Dev` method"
            ),
        }
    }
}

/// A buffer of the back end: device memory, or host memory for the CPU back end.
pub(crate) enum Buffer {
    /// Device memory.
    Gpu(DeviceBuffer),
    /// Host memory, 256-byte aligned as the driver's allocations are.
    Cpu(HostBuffer),
}

/// Zeroed host memory that a CPU launch reads and writes through its address.
pub(crate) struct HostBuffer {
    ptr: *mut u8,
    len: usize,
    layout: Layout,
}

impl HostBuffer {
    fn zeroed(len: usize) -> HostBuffer {
        let layout = Layout::from_size_align(len.max(1), 256).expect("layout");
        // SAFETY: the layout's size is at least 1.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        HostBuffer { ptr, len, layout }
    }

    fn bytes(&self) -> Vec<u8> {
        // SAFETY: `ptr` holds `len` initialized bytes; no launch runs while the test reads.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len).to_vec() }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// A kernel loaded on a back end.
pub(crate) enum Loaded {
    /// Loaded PTX.
    Gpu(LoadedKernel),
    /// Code for the CPU back end, with the error its threads recorded (an `assert`, a
    /// `raise`, an index out of range) until `check_errors` takes it, as on the device,
    /// and the parameters' layouts (the same as the PTX's).
    Cpu(CpuKernel, Mutex<Option<CpuError>>, Box<KernelAbi>),
}

impl Loaded {
    /// The thread block cluster shape the kernel was compiled with (`cluster=`).
    pub(crate) fn required_cluster(&self) -> Option<[u32; 3]> {
        match self {
            Loaded::Gpu(k) => k.required_cluster(),
            Loaded::Cpu(k, ..) => k.cluster(),
        }
    }

    /// The parameters' layouts, from which array sources (CAI, DLPack) make arguments.
    pub(crate) fn abi(&self) -> &KernelAbi {
        match self {
            Loaded::Gpu(k) => k.abi(),
            Loaded::Cpu(_, _, abi) => abi,
        }
    }
}

impl std::ops::Deref for Loaded {
    type Target = LoadedKernel;

    fn deref(&self) -> &LoadedKernel {
        match self {
            Loaded::Gpu(k) => k,
            Loaded::Cpu(..) => panic!(
                "this test inspects a loaded PTX module, which the CPU back end does not have: make it GPU-only"
            ),
        }
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        if let Loaded::Cpu(_, record, _) = self {
            let pending = record.get_mut().map_or(None, |r| r.take());
            if let Some(e) = pending
                && !std::thread::panicking()
            {
                panic!("a launch on the CPU back end failed and no check looked: {e}");
            }
        }
    }
}

/// What a launch is given: a kernel of either back end, or a PTX kernel a GPU-only test
/// loaded itself.
pub(crate) trait Launchable {
    /// The kernel as a back end's.
    fn loaded(&self) -> Target<'_>;
}

/// A kernel of one back end, borrowed.
pub(crate) enum Target<'a> {
    Gpu(&'a LoadedKernel),
    Cpu(&'a CpuKernel, &'a Mutex<Option<CpuError>>),
}

impl Launchable for Loaded {
    fn loaded(&self) -> Target<'_> {
        match self {
            Loaded::Gpu(k) => Target::Gpu(k),
            Loaded::Cpu(k, r, _) => Target::Cpu(k, r),
        }
    }
}

impl Launchable for LoadedKernel {
    fn loaded(&self) -> Target<'_> {
        Target::Gpu(self)
    }
}

/// An error of either back end; the CPU back end's names its kernel, as the device's do.
#[derive(Debug)]
pub(crate) enum DevError {
    Gpu(RuntimeError),
    Cpu(String, CpuError),
}

impl DevError {
    /// Whether the device can still run work (always, on the CPU back end).
    pub(crate) fn context_usable(&self) -> bool {
        match self {
            DevError::Gpu(e) => e.context_usable(),
            DevError::Cpu(..) => true,
        }
    }
}

impl fmt::Display for DevError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DevError::Gpu(e) => e.fmt(f),
            DevError::Cpu(kernel, e) => write!(f, "kernel `{kernel}`: {e}"),
        }
    }
}

impl From<RuntimeError> for DevError {
    fn from(e: RuntimeError) -> DevError {
        DevError::Gpu(e)
    }
}

impl Dev {
    /// `"GPU"` or `"CPU back end"`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Dev::Gpu(_) => "GPU",
            Dev::Cpu => "CPU back end",
        }
    }

    /// The CUDA device, if this is one.
    pub(crate) fn gpu(&self) -> Option<&Device> {
        match self {
            Dev::Gpu(d) => Some(d),
            Dev::Cpu => None,
        }
    }

    /// The options of `pydevice run` that launch on this back end (`--cpu` on the CPU).
    pub(crate) fn cli_flags(&self) -> &'static [&'static str] {
        match self {
            Dev::Gpu(_) => &[],
            Dev::Cpu => &["--cpu"],
        }
    }

    /// Whether this is the CPU back end.
    pub(crate) fn is_cpu(&self) -> bool {
        matches!(self, Dev::Cpu)
    }

    /// Compiles `entry` of `module` for this back end (PTX for `options.arch`, or CPU code
    /// specialized with the same constants) and loads it.
    pub(crate) fn compile(
        &self,
        module: &Module,
        entry: &str,
        args: &[Type],
        options: &CompileOptions,
    ) -> Loaded {
        match self {
            Dev::Gpu(d) => {
                let compiled = module
                    .compile(entry, args, options)
                    .unwrap_or_else(|e| panic!("{e}"));
                Loaded::Gpu(d.load(&compiled.ptx, &compiled.abi).expect("load"))
            }
            Dev::Cpu => {
                let spec = module
                    .specialize_with(entry, args, &options.constants, Arch::DEFAULT)
                    .unwrap_or_else(|d| panic!("{d}"));
                let k = spec.to_cpu().unwrap_or_else(|e| panic!("{e}"));
                Loaded::Cpu(k, Mutex::new(None), Box::new(spec.abi()))
            }
        }
    }

    /// Copies bytes to the back end.
    pub(crate) fn upload(&self, bytes: &[u8]) -> Result<Buffer, DevError> {
        match self {
            Dev::Gpu(d) => Ok(Buffer::Gpu(d.upload(bytes)?)),
            Dev::Cpu => {
                let b = HostBuffer::zeroed(bytes.len());
                // SAFETY: `b` holds `bytes.len()` bytes.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), b.ptr, bytes.len()) };
                Ok(Buffer::Cpu(b))
            }
        }
    }

    /// Copies a buffer back.
    pub(crate) fn download(&self, buf: &Buffer) -> Result<Vec<u8>, DevError> {
        match (self, buf) {
            (Dev::Gpu(d), Buffer::Gpu(b)) => Ok(d.download(b)?),
            (Dev::Cpu, Buffer::Cpu(b)) => Ok(b.bytes()),
            _ => panic!("a buffer of one back end given to the other"),
        }
    }

    /// The address a kernel argument gives for `buf`.
    pub(crate) fn address(&self, buf: &Buffer) -> u64 {
        match (self, buf) {
            (Dev::Gpu(d), Buffer::Gpu(b)) => d.address(b),
            (Dev::Cpu, Buffer::Cpu(b)) => b.ptr as u64,
            _ => panic!("a buffer of one back end given to the other"),
        }
    }

    /// A tiled TMA tensor map of `a` (memory of this back end): the driver's on a GPU, the
    /// CPU back end's own layout there (`runtime::cpu_tma`); each is read only by its back
    /// end's `tma_load`/`tma_store`.
    pub(crate) fn tensor_map_tiled(
        &self,
        a: &pydevice::runtime::DeviceArray,
        box_shape: &[u32],
        swizzle: u32,
    ) -> Result<pydevice::runtime::tma::TensorMap, DevError> {
        match self {
            Dev::Gpu(d) => Ok(d.tensor_map_tiled(a, box_shape, swizzle)?),
            Dev::Cpu => pydevice::runtime::cpu_tma::tensor_map_tiled(a, box_shape, swizzle)
                .map_err(|e| DevError::Cpu("tensor map".into(), e)),
        }
    }

    /// Waits for the launches (CPU launches are done when they return).
    pub(crate) fn synchronize(&self) -> Result<(), DevError> {
        match self {
            Dev::Gpu(d) => Ok(d.synchronize()?),
            Dev::Cpu => Ok(()),
        }
    }

    /// Launches on the default stream.
    pub(crate) fn launch<K: Launchable + ?Sized>(
        &self,
        k: &K,
        args: &[ArgValue],
        cfg: &LaunchConfig,
    ) -> Result<(), DevError> {
        self.launch_seeded(k, args, cfg, &Stream::default_stream(), None)
    }

    /// Launches with the seed of `random` (a fresh one when `None`). A kernel that
    /// synchronizes the grid is refused on the CPU back end too, as the driver refuses it.
    pub(crate) fn launch_seeded<K: Launchable + ?Sized>(
        &self,
        k: &K,
        args: &[ArgValue],
        cfg: &LaunchConfig,
        stream: &Stream,
        seed: Option<u64>,
    ) -> Result<(), DevError> {
        match (self, k.loaded()) {
            (Dev::Gpu(d), Target::Gpu(k)) => Ok(d.launch_seeded(k, args, cfg, stream, seed)?),
            (Dev::Cpu, Target::Cpu(k, _)) if k.cooperative() => Err(DevError::Cpu(
                k.name().to_string(),
                CpuError::Config(
                    "a kernel that synchronizes the grid needs a cooperative launch, as the driver and Python's launch require"
                        .into(),
                ),
            )),
            (Dev::Cpu, Target::Cpu(k, record)) => cpu_launch(k, record, args, cfg, seed, None),
            _ => panic!("a kernel of one back end launched on the other"),
        }
    }

    /// Launches in thread block clusters of `cluster` blocks (the launch attribute) and
    /// waits: on the CPU back end a cluster's blocks run together.
    pub(crate) fn launch_cluster<K: Launchable + ?Sized>(
        &self,
        k: &K,
        args: &[ArgValue],
        cfg: &LaunchConfig,
        cluster: [u32; 3],
    ) -> Result<(), DevError> {
        match (self, k.loaded()) {
            (Dev::Gpu(d), Target::Gpu(k)) => {
                let packed = k.pack(args)?;
                d.launch_cluster(k, &packed, cfg, cluster, &Stream::default_stream())?;
                Ok(d.synchronize()?)
            }
            (Dev::Cpu, Target::Cpu(k, record)) => {
                cpu_launch(k, record, args, cfg, None, Some(cluster))
            }
            _ => panic!("a kernel of one back end launched on the other"),
        }
    }

    /// Launches a kernel that synchronizes its grid (on the CPU back end, every launch of
    /// such a kernel runs its blocks together).
    pub(crate) fn launch_cooperative<K: Launchable + ?Sized>(
        &self,
        k: &K,
        args: &[ArgValue],
        cfg: &LaunchConfig,
        stream: &Stream,
    ) -> Result<(), DevError> {
        match (self, k.loaded()) {
            (Dev::Gpu(d), Target::Gpu(k)) => Ok(d.launch_cooperative(k, args, cfg, stream)?),
            (Dev::Cpu, Target::Cpu(k, record)) => cpu_launch(k, record, args, cfg, None, None),
            _ => panic!("a kernel of one back end launched on the other"),
        }
    }

    /// The most blocks a cooperative launch of `k` with `cfg` may have. The CPU back end
    /// runs every grid's blocks together, so it has no limit of its own; there the tests
    /// take 16 blocks, which keeps the fibers of one launch within a test's memory.
    pub(crate) fn cooperative_limit<K: Launchable + ?Sized>(
        &self,
        k: &K,
        cfg: &LaunchConfig,
    ) -> Result<u64, DevError> {
        match (self, k.loaded()) {
            (Dev::Gpu(d), Target::Gpu(k)) => Ok(d.cooperative_limit(k, cfg)?),
            (Dev::Cpu, Target::Cpu(..)) => Ok(16),
            _ => panic!("a kernel of one back end given to the other"),
        }
    }

    /// Reports (and clears) the first error the kernel's threads recorded.
    pub(crate) fn check_errors<K: Launchable + ?Sized>(&self, k: &K) -> Result<(), DevError> {
        match (self, k.loaded()) {
            (Dev::Gpu(d), Target::Gpu(k)) => Ok(d.check_errors(k)?),
            (Dev::Cpu, Target::Cpu(k, record)) => {
                match record.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    Some(e) => Err(DevError::Cpu(k.name().to_string(), e)),
                    None => Ok(()),
                }
            }
            _ => panic!("a kernel of one back end checked on the other"),
        }
    }

    /// The same as [`Dev::check_errors`].
    pub(crate) fn check_bounds<K: Launchable + ?Sized>(&self, k: &K) -> Result<(), DevError> {
        self.check_errors(k)
    }
}

/// A launch on the CPU back end on the tests' host buffers. What a device records rather
/// than fails the launch with (an `assert`, a `raise`, an index out of range) is recorded
/// here the same way; a record nobody took fails the test when the kernel is dropped.
fn cpu_launch(
    k: &CpuKernel,
    record: &Mutex<Option<CpuError>>,
    args: &[ArgValue],
    cfg: &LaunchConfig,
    seed: Option<u64>,
    cluster: Option<[u32; 3]>,
) -> Result<(), DevError> {
    let mut launch = CpuLaunch::new(cfg.grid, cfg.block);
    launch.shared_bytes = cfg.shared_bytes;
    launch.seed = seed;
    launch.cluster = cluster;
    // SAFETY: every array argument of a test on the CPU back end is the address of a
    // `HostBuffer` (`Dev::upload`) that the test keeps alive across the launch, with the
    // shape and strides of its data.
    match unsafe { k.launch_raw(args, &launch) } {
        Ok(()) => Ok(()),
        Err(e @ (CpuError::Raised { .. } | CpuError::IndexOutOfBounds { .. })) => {
            let mut r = record.lock().unwrap_or_else(|e| e.into_inner());
            if r.is_none() {
                *r = Some(e);
            }
            Ok(())
        }
        Err(e) => Err(DevError::Cpu(k.name().to_string(), e)),
    }
}
