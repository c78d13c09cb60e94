//! Running compiled kernels: the CUDA driver (loaded at run time, so building needs no CUDA
//! toolkit), modules, device memory, streams and launches, for frameworks that embed the
//! library and bring their own memory and streams.
//!
//! - [`Device`] opens a GPU's primary context (shared with every other framework in the
//!   process), loads kernels ([`LoadedKernel`]) and launches them on a [`Stream`]: the
//!   library's own, one borrowed from another framework, or a default stream.
//! - Array arguments come from anywhere through [`DeviceArray`]: the library's
//!   [`DeviceBuffer`]s, raw pointers, DLPack tensors ([`dlpack`]) and CUDA Array Interface
//!   descriptions ([`cai`]); [`ArraySource`] applies the spec's "DLPack wins" rule.
//! - [`LaunchConfig`] takes the spec's `Dim3Like` grid and block ([`Dim3`]).
//! - [`link`] links our PTX with CUDA C++ (PTX, cubin, fatbin, objects, or source compiled
//!   with NVRTC) through the driver's JIT linker into one module ([`Device::link`]).
//! - [`reflect`] reads a kernel's registers, memory and occupancy without launching it.
//! - The specialization cache, which compiles each specialization once and loads it with
//!   [`Device::load_cached`], is [`crate::cache`]: it is a client of the compiler's API, above
//!   both it and this module.
//!
//! [`Device::open`] checks that the driver library exists before touching it, so a machine
//! without a GPU gets [`RuntimeError::NoDriver`] rather than a crash. Every failure is an
//! error value: see [`error`] for which ones leave the context usable.
//!
//! This module never reaches into the compiler's internals; it uses the public API
//! ([`crate::Module`], [`crate::CompiledKernel`], [`crate::abi`]).

pub mod array;
pub mod cai;
mod cluster;
pub mod config;
#[cfg(feature = "host")]
pub mod cpu;
pub(crate) mod cpu_tensor;
#[cfg(feature = "host")]
pub mod cpu_tma;
#[cfg(feature = "host")]
pub(crate) mod cpu_wgmma;
mod device_array;
pub mod dlpack;
pub mod error;
pub mod link;
pub mod multi;
pub mod npy;
pub mod params;
pub mod records;
pub mod reflect;
pub mod stream;
pub mod tma;

pub use array::ArraySource;
pub use cai::CudaArrayInterface;
pub use config::{Dim3, LaunchConfig};
pub use device_array::DeviceArray;
pub use error::{BoundsReport, RaiseReport, RuntimeError};
pub use link::{LinkInput, LinkedModule};
pub use multi::{CopyPath, Endpoint, device_count, pointer_device};
pub use reflect::{BlockSizeSuggestion, KernelAttributes, Occupancy};
pub use stream::Stream;
pub use tma::TensorMap;

use crate::abi::{ArgValue, KernelAbi, pack};
use crate::kernel::CompiledKernel;
use crate::target::Arch;
use crate::types::Scalar;
use cudarc::driver::sys::{CUdevice_attribute, CUfunction};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DriverError,
};
use error::{code, describe, driver_error, drv, is_sticky};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

/// True when the CUDA driver library can be loaded on this machine.
pub fn driver_available() -> bool {
    driver_check().is_ok()
}

/// Loads the CUDA driver library once, for the life of the process, under its soname
/// `libcuda.so.1` (or `libcuda.so` where only that exists), before anything asks cudarc for it.
///
/// Keeping it loaded is what makes cuda-gdb work: cudarc opens the driver as `libcuda.so`,
/// and glibc answers that with the library already mapped from the same file, so the
/// process's link map names the driver `libcuda.so.1`, the name cuda-gdb recognizes it by.
/// Opened first as `libcuda.so`, cuda-gdb never attached its CUDA support to our launches
/// (H100, 2026-11-24: no kernel seen, not even with `break_on_launch`; with the driver
/// preloaded as `libcuda.so.1` it stopped at the Python line; docs/semantics.md §12).
fn driver_check() -> Result<(), RuntimeError> {
    static DRIVER: std::sync::OnceLock<Result<libloading::Library, String>> =
        std::sync::OnceLock::new();
    let loaded = DRIVER.get_or_init(|| {
        let mut last = String::new();
        for name in ["libcuda.so.1", "libcuda.so"] {
            // SAFETY: loading libcuda runs its initializers, which is what using it requires;
            // the handle lives in a static, so the library is never unloaded under cudarc.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Ok(lib),
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    });
    match loaded {
        Ok(_) => Ok(()),
        Err(e) => Err(RuntimeError::NoDriver(e.clone())),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A GPU: its primary context and default stream. `Send + Sync`: launch from any thread.
///
/// A `Device` is a handle: [`Device::open`] of an ordinal already open in the process (by any
/// thread) returns a handle to the same state, so every handle of one GPU shares its context,
/// its default stream and the kernels loaded on it ([`Device::load_cached`]: one module per
/// device and kernel). Handles of different ordinals share nothing; a kernel compiled once
/// (one `Arc<CompiledKernel>` from [`KernelCache`](crate::cache::KernelCache)) is loaded into each device it runs on.
/// See [`multi`] for peers, copies between GPUs and where memory and streams live.
#[derive(Clone)]
pub struct Device {
    s: Arc<DeviceState>,
}

/// What every handle of one GPU shares (see [`Device`]).
struct DeviceState {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The last kernel launched, named in faults reported later (launches are asynchronous).
    last_kernel: Mutex<Option<Arc<str>>>,
    /// Kernels loaded by [`Device::load_cached`], by the address of their `CompiledKernel`
    /// (kept alive here, so the address is not reused).
    loaded: Mutex<HashMap<usize, LoadedEntry>>,
    /// Peers whose memory this device's context may access (`cuCtxEnablePeerAccess` done),
    /// by ordinal; see [`Device::enable_peer_access`].
    peers: Mutex<Vec<usize>>,
}

/// A compiled kernel kept alive beside its loaded form (see [`Device::load_cached`]).
type LoadedEntry = (Arc<CompiledKernel>, Arc<LoadedKernel>);

/// Device memory owned by the library.
pub struct DeviceBuffer {
    slice: CudaSlice<u8>,
}

impl DeviceBuffer {
    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }
}

/// A kernel loaded into a device's context. `Send + Sync`.
pub struct LoadedKernel {
    function: CudaFunction,
    _module: Arc<CudaModule>,
    ctx: Arc<CudaContext>,
    name: Arc<str>,
    abi: KernelAbi,
    /// Whether the module defines the bounds-check record ([`crate::ir::BOUNDS_ERROR_SYMBOL`]):
    /// [`Device::check_bounds`] looks it up only then, so that no driver call fails
    /// (`cuModuleGetGlobal` returning `CUDA_ERROR_NOT_FOUND`, which compute-sanitizer
    /// reports) for kernels compiled without bounds checks.
    bounds_global: bool,
    /// The cooperative launch limits found so far, by (threads per block, dynamic shared
    /// bytes): [`Device::cooperative_limit`] asks the driver once per shape.
    cooperative_limits: Mutex<Vec<((u32, u32), u64)>>,
    /// The cluster shape the kernel was compiled for, read from the driver at its first
    /// launch (see `cluster.rs`).
    cluster: std::sync::OnceLock<Option<[u32; 3]>>,
}

/// Whether PTX text defines the bounds-check record, a `.global` variable named
/// [`crate::ir::BOUNDS_ERROR_SYMBOL`] (bounds-checked kernels define it).
pub(crate) fn defines_bounds_global(ptx: &str) -> bool {
    ptx.lines().any(|l| {
        let l = l.trim();
        l.contains(".global")
            && !l.starts_with(".extern")
            && l.strip_suffix(';').is_some_and(|d| {
                d.split_whitespace().last() == Some(crate::ir::BOUNDS_ERROR_SYMBOL)
            })
    })
}

/// Whether PTX text is a `debug=True` kernel's (its first line is
/// [`crate::lower::ptx::DEBUG_MARK`]): it is then JIT-compiled with
/// `CU_JIT_GENERATE_DEBUG_INFO`.
pub(crate) fn has_debug_info(ptx: &str) -> bool {
    ptx.starts_with(crate::lower::ptx::DEBUG_MARK)
}

impl LoadedKernel {
    /// The kernel's ABI.
    pub fn abi(&self) -> &KernelAbi {
        &self.abi
    }

    /// The kernel's symbol.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The ordinal of the GPU it is loaded on (the only one it can launch on).
    pub fn device(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The driver's handle, for other CUDA code (valid while this `LoadedKernel` lives).
    pub fn cu_function(&self) -> CUfunction {
        self.function.cu_function()
    }

    /// Packs arguments once, for launching many times with [`Device::launch_packed`].
    pub fn pack(&self, args: &[ArgValue]) -> Result<PackedArgs, RuntimeError> {
        let params = &self.abi.params;
        if args.len() != params.len() {
            return Err(RuntimeError::Argument(format!(
                "`{}` takes {} arguments, {} given",
                self.name,
                params.len(),
                args.len()
            )));
        }
        let mut words: Vec<u64> = Vec::new();
        let mut offsets = SmallVec::new();
        for (p, a) in params.iter().zip(args) {
            let bytes =
                pack(&p.ty, a).map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", p.name)))?;
            let start = words.len();
            offsets.push(start);
            words.resize(start + bytes.len().div_ceil(8).max(1), 0);
            for (i, b) in bytes.iter().enumerate() {
                words[start + i / 8] |= u64::from(*b) << (8 * (i % 8));
            }
        }
        Ok(PackedArgs {
            kernel: self.name.clone(),
            words,
            offsets,
            seed: None,
            devices: SmallVec::new(),
        })
    }
}

/// Arguments packed into their parameters' layouts, ready to launch again and again.
#[derive(Clone, Debug)]
pub struct PackedArgs {
    kernel: Arc<str>,
    /// Each parameter's bytes, each starting on an 8-byte boundary.
    words: Vec<u64>,
    /// Where each parameter starts in `words`.
    offsets: SmallVec<[usize; 8]>,
    /// The seed of the random numbers (`random.rand`/`randn`) of the launches; `None` draws
    /// a fresh one per launch.
    seed: Option<u64>,
    /// The GPU of each array argument whose GPU is known, as `(parameter, ordinal)`: checked
    /// against the launching device ([`PackedArgs::set_array_on`]).
    devices: SmallVec<[(u32, u32); 4]>,
}

impl PackedArgs {
    /// The same arguments, launched with random-number seed `seed` (`None`: a fresh seed per
    /// launch, [`crate::random::draw_seed`]). Only kernels that draw random numbers
    /// (`KernelAbi::seed`) read it; a given seed gives the same numbers at every launch.
    pub fn with_seed(mut self, seed: Option<u64>) -> PackedArgs {
        self.seed = seed;
        self
    }

    /// Sets the random-number seed of later launches (see [`PackedArgs::with_seed`]).
    pub fn set_seed(&mut self, seed: Option<u64>) {
        self.seed = seed;
    }

    /// The random-number seed, if one was set.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// The kernel they were packed for.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }
}

impl Device {
    /// Opens GPU `ordinal` (its primary context) and its default stream. Opening an ordinal
    /// that is already open in the process returns a handle to the same device (the same
    /// context, default stream and loaded kernels); [`Device::same`] tells.
    pub fn open(ordinal: usize) -> Result<Device, RuntimeError> {
        multi::open_shared(ordinal, || {
            driver_check()?;
            let n = CudaContext::device_count().map_err(drv)?;
            if n <= ordinal as i32 {
                return Err(RuntimeError::Driver(format!(
                    "no GPU {ordinal}: {n} present"
                )));
            }
            let ctx = CudaContext::new(ordinal).map_err(drv)?;
            let stream = ctx.default_stream();
            Ok(Arc::new(DeviceState {
                ctx,
                stream,
                last_kernel: Mutex::new(None),
                loaded: Mutex::new(HashMap::new()),
                peers: Mutex::new(Vec::new()),
            }))
        })
        .map(|s| Device { s })
    }

    /// Whether two handles are the same opened device (one state, one context).
    pub fn same(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.s, &other.s)
    }

    /// The GPU's ordinal.
    pub fn ordinal(&self) -> usize {
        self.s.ctx.ordinal()
    }

    /// The raw context handle (the device's primary context), for other CUDA code.
    pub fn cu_context(&self) -> cudarc::driver::sys::CUcontext {
        self.s.ctx.cu_ctx()
    }

    /// The device's architecture (compute capability).
    pub fn arch(&self) -> Result<Arch, RuntimeError> {
        let (maj, min) = self.s.ctx.compute_capability().map_err(drv)?;
        Arch::new(maj as u32, min as u32).map_err(|e| RuntimeError::Driver(e.to_string()))
    }

    /// The device's name.
    pub fn name(&self) -> Result<String, RuntimeError> {
        self.s.ctx.name().map_err(drv)
    }

    /// A device attribute (`CU_DEVICE_ATTRIBUTE_*`).
    pub fn attribute(&self, a: CUdevice_attribute) -> Result<i32, RuntimeError> {
        self.s.ctx.attribute(a).map_err(|e| self.error(e))
    }

    /// A driver error, with a fault named after the last kernel launched.
    fn error(&self, e: DriverError) -> RuntimeError {
        let last = lock(&self.s.last_kernel).clone();
        driver_error(e, last.as_deref())
    }

    /// Loads PTX and looks the kernel described by `abi` up in it. Loading is when the driver
    /// compiles the PTX for this GPU. PTX that calls `extern` functions (CUDA C++) cannot be
    /// loaded alone: that is a [`RuntimeError::Link`] naming them; use [`Device::link`].
    /// PTX that launches kernels from device code (§18.3) is linked with the CUDA device
    /// runtime (`libcudadevrt.a`) here.
    pub fn load(&self, ptx: &str, abi: &KernelAbi) -> Result<LoadedKernel, RuntimeError> {
        let undefined = link::undefined_functions(&[ptx]);
        if !undefined.is_empty()
            && undefined
                .iter()
                .all(|n| link::DEVICE_RUNTIME_FUNCTIONS.contains(&n.as_str()))
        {
            // A kernel that launches kernels (§18.3): linked with the device runtime.
            return self
                .link(&[LinkInput::Ptx {
                    name: abi.symbol.clone(),
                    text: ptx.to_string(),
                }])?
                .kernel(abi);
        }
        if !undefined.is_empty() {
            return Err(RuntimeError::Link {
                message: format!(
                    "`{}` calls functions defined in other code ({}): link it with that code \
                     (Device::link)",
                    abi.symbol,
                    undefined
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                undefined,
            });
        }
        let fail = |e: DriverError| {
            if is_sticky(code(&e)) {
                return self.error(e);
            }
            RuntimeError::Launch {
                kernel: abi.symbol.clone(),
                message: format!("loading the module: {}", describe(&e)),
            }
        };
        let image = if has_debug_info(ptx) {
            // `debug=True`: JIT-compiled with debug information (ptxas -g) for cuda-gdb.
            self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
            cudarc::nvrtc::Ptx::from_binary(link::JitLink::debug_cubin(&abi.symbol, ptx)?)
        } else {
            cudarc::nvrtc::Ptx::from_src(ptx)
        };
        let module = self.s.ctx.load_module(image).map_err(fail)?;
        let function = module.load_function(&abi.symbol).map_err(fail)?;
        Ok(LoadedKernel {
            function,
            _module: module,
            ctx: self.s.ctx.clone(),
            name: Arc::from(abi.symbol.as_str()),
            abi: abi.clone(),
            bounds_global: defines_bounds_global(ptx),
            cooperative_limits: Mutex::default(),
            cluster: Default::default(),
        })
    }

    /// Loads the variant of a multi-architecture kernel meant for this device: the newest
    /// architecture not newer than the device's.
    pub fn load_best(
        &self,
        kernel: &crate::kernel::MultiArchKernel,
    ) -> Result<LoadedKernel, RuntimeError> {
        let arch = self.arch()?;
        let k = kernel.select(arch).ok_or_else(|| {
            RuntimeError::Argument(format!(
                "no variant runs on {arch}: built for {}",
                kernel
                    .variants
                    .iter()
                    .map(|k| k.arch.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        self.load_compiled(k)
    }

    /// Loads a compiled kernel. One that carries CUDA C++ (`jit.thrust` shims,
    /// [`CompiledKernel::cuda`]) is linked with it ([`Device::link`]); NVRTC's PTX for it
    /// is cached by content ([`link::compile_cuda`]).
    pub fn load_compiled(&self, kernel: &CompiledKernel) -> Result<LoadedKernel, RuntimeError> {
        if kernel.cuda.is_empty() {
            return self.load(&kernel.ptx, &kernel.abi);
        }
        let mut inputs = vec![LinkInput::compiled(&kernel.abi.symbol, kernel)];
        for c in &kernel.cuda {
            let mut options = Vec::new();
            if c.cccl {
                options = crate::cccl::nvrtc_options().map_err(|message| RuntimeError::Link {
                    undefined: Vec::new(),
                    message,
                })?;
            }
            inputs.push(LinkInput::Cuda {
                name: c.name.clone(),
                source: c.source.clone(),
                options,
            });
        }
        self.link(&inputs)?.kernel(&kernel.abi)
    }

    /// Loads a compiled kernel once per device: later calls with the same `Arc` (as
    /// [`KernelCache`](crate::cache::KernelCache) hands out) return the same loaded kernel.
    pub fn load_cached(
        &self,
        kernel: &Arc<CompiledKernel>,
    ) -> Result<Arc<LoadedKernel>, RuntimeError> {
        let key = Arc::as_ptr(kernel) as usize;
        if let Some((_, k)) = lock(&self.s.loaded).get(&key) {
            return Ok(k.clone());
        }
        let loaded = Arc::new(self.load_compiled(kernel)?);
        let mut map = lock(&self.s.loaded);
        let entry = map
            .entry(key)
            .or_insert_with(|| (kernel.clone(), loaded.clone()));
        Ok(entry.1.clone())
    }

    /// Creates a stream owned by the library (non-blocking with respect to the legacy default
    /// stream); it is destroyed when the last clone of the [`Stream`] drops.
    pub fn create_stream(&self) -> Result<Stream, RuntimeError> {
        Ok(Stream::owned(
            self.s.ctx.new_stream().map_err(|e| self.error(e))?,
        ))
    }

    /// The legacy default stream, which [`Device::launch`] uses.
    pub fn default_stream(&self) -> Stream {
        Stream::default_stream()
    }

    /// Copies bytes to new device memory.
    pub fn upload(&self, bytes: &[u8]) -> Result<DeviceBuffer, RuntimeError> {
        let slice = if bytes.is_empty() {
            self.s.stream.alloc_zeros::<u8>(1)
        } else {
            self.s.stream.clone_htod(bytes)
        }
        .map_err(|e| self.error(e))?;
        Ok(DeviceBuffer { slice })
    }

    /// New device memory of `bytes` bytes, filled with zeros (on the default stream).
    pub fn alloc_zeroed(&self, bytes: usize) -> Result<DeviceBuffer, RuntimeError> {
        let slice = self
            .s
            .stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(|e| self.error(e))?;
        Ok(DeviceBuffer { slice })
    }

    /// Copies device memory back (waits for the default stream).
    pub fn download(&self, buf: &DeviceBuffer) -> Result<Vec<u8>, RuntimeError> {
        self.s
            .stream
            .clone_dtoh(&buf.slice)
            .map_err(|e| self.error(e))
    }

    /// The device address of a buffer, for [`ArgValue::Array`](crate::abi::ArgValue).
    pub fn address(&self, buf: &DeviceBuffer) -> u64 {
        let (ptr, _sync) = buf.slice.device_ptr(&self.s.stream);
        ptr
    }

    /// A typed view of a whole buffer or its beginning: `shape` C-contiguous elements of
    /// `dtype`, checked to fit in the buffer.
    pub fn array(
        &self,
        buf: &DeviceBuffer,
        dtype: Scalar,
        shape: &[u64],
    ) -> Result<DeviceArray, RuntimeError> {
        let bytes = shape
            .iter()
            .try_fold(dtype.size(), |acc, &e| acc.checked_mul(e))
            .ok_or_else(|| RuntimeError::Argument(format!("shape {shape:?} overflows")))?;
        if bytes > buf.len() as u64 {
            return Err(RuntimeError::Argument(format!(
                "a {dtype} array of shape {shape:?} needs {bytes} bytes; the buffer has {}",
                buf.len()
            )));
        }
        let mut a = DeviceArray::contiguous(self.address(buf), dtype, shape);
        a.device = Some(self.ordinal() as i32);
        Ok(a)
    }

    /// Makes later work on `waiter` wait until the work already submitted to `producer` is
    /// done, without blocking the host (an event recorded on `producer`, waited on by
    /// `waiter`). Use it with another framework's stream, such as the `stream` entry of a
    /// CUDA Array Interface (v3 asks consumers to do this).
    pub fn wait_stream(&self, waiter: &Stream, producer: &Stream) -> Result<(), RuntimeError> {
        use cudarc::driver::result::{event, stream};
        use cudarc::driver::sys::{CUevent_flags, CUevent_wait_flags};
        self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
        let ev =
            event::create(CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(|e| self.error(e))?;
        // SAFETY: `ev` was just created in this context; both streams are valid streams of it
        // (their constructors' promise). Destroying a recorded event is allowed before it
        // completes: the driver releases it once it has.
        let waited = unsafe {
            event::record(ev, producer.raw()).and_then(|()| {
                stream::wait_event(waiter.raw(), ev, CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
            })
        };
        // SAFETY: as above; `ev` is not used again.
        let destroyed = unsafe { event::destroy(ev) };
        waited.and(destroyed).map_err(|e| self.error(e))
    }

    /// Launches a kernel asynchronously on the legacy default stream.
    pub fn launch(
        &self,
        kernel: &LoadedKernel,
        args: &[ArgValue],
        cfg: &LaunchConfig,
    ) -> Result<(), RuntimeError> {
        self.launch_packed(kernel, &kernel.pack(args)?, cfg, &Stream::default_stream())
    }

    /// Launches a kernel asynchronously on `stream` with random-number seed `seed` (`None`
    /// draws one; kernels that use no `random.rand`/`randn` ignore it).
    pub fn launch_seeded(
        &self,
        kernel: &LoadedKernel,
        args: &[ArgValue],
        cfg: &LaunchConfig,
        stream: &Stream,
        seed: Option<u64>,
    ) -> Result<(), RuntimeError> {
        self.launch_packed(kernel, &kernel.pack(args)?.with_seed(seed), cfg, stream)
    }

    /// Launches a kernel asynchronously on `stream`.
    pub fn launch_on(
        &self,
        kernel: &LoadedKernel,
        args: &[ArgValue],
        cfg: &LaunchConfig,
        stream: &Stream,
    ) -> Result<(), RuntimeError> {
        self.launch_packed(kernel, &kernel.pack(args)?, cfg, stream)
    }

    /// Launches a kernel asynchronously on `stream` with arguments packed by
    /// [`LoadedKernel::pack`]: the cheapest launch, for launching the same arguments often.
    ///
    /// A rejected launch (bad shape, too much shared memory, too many registers for the block)
    /// is a [`RuntimeError::Launch`] naming the kernel and the numbers at fault; the context
    /// stays usable. A fault of an earlier kernel reported here is a [`RuntimeError::Fault`].
    ///
    /// A kernel that synchronizes the grid (`cg.this_grid().sync()`, [`KernelAbi::cooperative`])
    /// is refused here with a [`RuntimeError::Launch`]: it needs
    /// [`launch_cooperative`](Device::launch_cooperative).
    pub fn launch_packed(
        &self,
        kernel: &LoadedKernel,
        args: &PackedArgs,
        cfg: &LaunchConfig,
        stream: &Stream,
    ) -> Result<(), RuntimeError> {
        self.launch_with(kernel, args, cfg, stream, None)
    }

    /// [`Device::launch_packed`], in clusters of `cluster` blocks when given
    /// ([`Device::launch_cluster`]); refuses kernels that need a cooperative launch.
    fn launch_with(
        &self,
        kernel: &LoadedKernel,
        args: &PackedArgs,
        cfg: &LaunchConfig,
        stream: &Stream,
        cluster: Option<[u32; 3]>,
    ) -> Result<(), RuntimeError> {
        if kernel.abi.cooperative {
            return Err(RuntimeError::Launch {
                kernel: kernel.name.to_string(),
                message: "launch rejected: the kernel synchronizes the whole grid \
                          (`cg.this_grid().sync()`), so it needs a cooperative launch \
                          (`Device::launch_cooperative`; in Python \
                          `device.launch(..., cooperative=True)`)"
                    .to_string(),
            });
        }
        self.launch_raw(kernel, args, cfg, stream, false, cluster)
    }

    /// Launches a kernel cooperatively (`cuLaunchCooperativeKernel`) on `stream`: every
    /// block is resident at once, which `cg.this_grid().sync()` needs (docs/semantics.md
    /// §17.4). Any kernel may be launched this way. A grid with more blocks than the device
    /// holds at once (blocks per multiprocessor at this block size and shared memory ×
    /// multiprocessors) is refused with a [`RuntimeError::Launch`] that gives the limit.
    ///
    /// One loaded grid-synchronizing kernel must not run twice at the same time (on two
    /// streams): its launches share the module's barrier word.
    pub fn launch_cooperative(
        &self,
        kernel: &LoadedKernel,
        args: &[ArgValue],
        cfg: &LaunchConfig,
        stream: &Stream,
    ) -> Result<(), RuntimeError> {
        self.launch_cooperative_packed(kernel, &kernel.pack(args)?, cfg, stream)
    }

    /// [`launch_cooperative`](Device::launch_cooperative) with packed arguments.
    pub fn launch_cooperative_packed(
        &self,
        kernel: &LoadedKernel,
        args: &PackedArgs,
        cfg: &LaunchConfig,
        stream: &Stream,
    ) -> Result<(), RuntimeError> {
        let limit = self.cooperative_limit(kernel, cfg)?;
        let blocks = cfg.grid.iter().map(|&g| u64::from(g)).product::<u64>();
        if blocks > limit {
            return Err(RuntimeError::Launch {
                kernel: kernel.name.to_string(),
                message: format!(
                    "cooperative launch rejected: the grid has {blocks} blocks, but at most \
                     {limit} can be resident at once on this device with {} threads and {} \
                     bytes of dynamic shared memory per block ({cfg})",
                    cfg.threads_per_block(),
                    cfg.shared_bytes
                ),
            });
        }
        self.launch_raw(kernel, args, cfg, stream, true, None)
    }

    /// The most blocks of `cfg`'s shape a cooperative launch of `kernel` may have: resident
    /// blocks per multiprocessor × multiprocessors (0 when the device cannot launch
    /// cooperatively). Asked of the driver once per kernel and shape, then remembered.
    pub fn cooperative_limit(
        &self,
        kernel: &LoadedKernel,
        cfg: &LaunchConfig,
    ) -> Result<u64, RuntimeError> {
        use CUdevice_attribute as D;
        let threads = u32::try_from(cfg.threads_per_block()).unwrap_or(u32::MAX);
        let shape = (threads, cfg.shared_bytes);
        if let Some(&(_, l)) = lock(&kernel.cooperative_limits)
            .iter()
            .find(|(s, _)| *s == shape)
        {
            return Ok(l);
        }
        let limit = if self.attribute(D::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? == 0 {
            0
        } else {
            let sms = self.attribute(D::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
            let per_sm = kernel.active_blocks_per_sm(threads, cfg.shared_bytes)?;
            u64::from(per_sm) * u64::try_from(sms).unwrap_or(0)
        };
        lock(&kernel.cooperative_limits).push((shape, limit));
        Ok(limit)
    }

    fn launch_raw(
        &self,
        kernel: &LoadedKernel,
        args: &PackedArgs,
        cfg: &LaunchConfig,
        stream: &Stream,
        cooperative: bool,
        cluster: Option<[u32; 3]>,
    ) -> Result<(), RuntimeError> {
        if !Arc::ptr_eq(&args.kernel, &kernel.name) && *args.kernel != *kernel.name {
            return Err(RuntimeError::Argument(format!(
                "arguments packed for `{}` cannot launch `{}`",
                args.kernel, kernel.name
            )));
        }
        self.check_placement(kernel, args, stream)?;
        self.s
            .ctx
            .bind_to_thread()
            .map_err(|e| self.launch_error(kernel, cfg, e))?;
        let base = args.words.as_ptr();
        // The driver only reads through these pointers, during the call.
        let mut ptrs: SmallVec<[*mut c_void; 16]> = args
            .offsets
            .iter()
            .map(|&o| base.wrapping_add(o) as *mut c_void)
            .collect();
        // A kernel that draws random numbers takes the launch's seed after its parameters.
        let mut seed = args.seed.unwrap_or(0);
        if kernel.abi.seed {
            if args.seed.is_none() {
                seed = crate::random::draw_seed();
            }
            ptrs.push((&raw mut seed).cast());
        }
        let cluster = cluster::cluster_shape(kernel, cfg, cluster)?;
        if cooperative && cluster.is_some() {
            return Err(RuntimeError::Launch {
                kernel: kernel.name.to_string(),
                message: "launch rejected: a cooperative launch of a kernel compiled for thread \
                          block clusters is not supported"
                    .to_string(),
            });
        }
        // SAFETY: `ptrs` holds one pointer per kernel parameter (`pack` checked the count),
        // each to bytes laid out as the parameter's ABI says; they outlive the call, which
        // copies them. The function belongs to a module `kernel` keeps loaded in this context.
        unsafe {
            if cooperative {
                cudarc::driver::sys::cuLaunchCooperativeKernel(
                    kernel.function.cu_function(),
                    cfg.grid[0],
                    cfg.grid[1],
                    cfg.grid[2],
                    cfg.block[0],
                    cfg.block[1],
                    cfg.block[2],
                    cfg.shared_bytes,
                    stream.raw(),
                    ptrs.as_mut_ptr(),
                )
                .result()
            } else {
                match cluster {
                    Some(shape) => cluster::launch_ex(
                        kernel.function.cu_function(),
                        cfg,
                        shape,
                        stream,
                        &mut ptrs,
                    ),
                    None => cudarc::driver::result::launch_kernel(
                        kernel.function.cu_function(),
                        (cfg.grid[0], cfg.grid[1], cfg.grid[2]),
                        (cfg.block[0], cfg.block[1], cfg.block[2]),
                        cfg.shared_bytes,
                        stream.raw(),
                        &mut ptrs,
                    ),
                }
            }
        }
        .map_err(|e| self.launch_error(kernel, cfg, e))?;
        let mut last = lock(&self.s.last_kernel);
        if !last.as_ref().is_some_and(|l| Arc::ptr_eq(l, &kernel.name)) {
            *last = Some(kernel.name.clone());
        }
        Ok(())
    }

    /// Refuses a launch whose kernel, arrays or (library-owned) stream belong to another GPU,
    /// naming both GPUs. Memory and streams whose GPU is unknown (borrowed handles, arrays
    /// set without one) are not checked here: the driver faults on them or rejects the launch.
    fn check_placement(
        &self,
        kernel: &LoadedKernel,
        args: &PackedArgs,
        stream: &Stream,
    ) -> Result<(), RuntimeError> {
        let here = self.ordinal();
        let wrong = |what: String, there: usize| RuntimeError::WrongDevice {
            kernel: kernel.name.to_string(),
            what,
            found: there,
            launch: here,
        };
        if kernel.ctx.cu_ctx() != self.s.ctx.cu_ctx() {
            return Err(wrong(
                "the kernel was loaded on".to_string(),
                kernel.device(),
            ));
        }
        for &(i, d) in &args.devices {
            if d as usize != here {
                let name = kernel
                    .abi
                    .params
                    .get(i as usize)
                    .map_or_else(|| format!("#{i}"), |p| p.name.clone());
                return Err(wrong(format!("argument `{name}` is on"), d as usize));
            }
        }
        if let Some(d) = stream.owner_device()
            && d != here
        {
            return Err(wrong("the stream belongs to".to_string(), d));
        }
        Ok(())
    }

    /// Turns a failed launch into an error naming the kernel, with what was wrong.
    fn launch_error(
        &self,
        kernel: &LoadedKernel,
        cfg: &LaunchConfig,
        e: DriverError,
    ) -> RuntimeError {
        if is_sticky(code(&e)) {
            let last = lock(&self.s.last_kernel).clone();
            let culprit = last.as_deref().unwrap_or(&kernel.name).to_string();
            return RuntimeError::Fault {
                kernel: culprit,
                message: format!(
                    "{} (reported when launching `{}`)",
                    describe(&e),
                    kernel.name
                ),
            };
        }
        let mut why = Vec::new();
        let attrs = kernel.attributes().ok();
        let dev = |a: CUdevice_attribute| kernel.device_attribute(a);
        use CUdevice_attribute as D;
        if cfg.grid.contains(&0) || cfg.block.contains(&0) {
            why.push("grid and block extents must be at least 1".to_string());
        }
        let threads = cfg.threads_per_block();
        if let Some(a) = attrs
            && threads > u64::from(a.max_threads_per_block)
        {
            why.push(format!(
                "the block has {threads} threads; this kernel allows at most {}",
                a.max_threads_per_block
            ));
        }
        let block_max = [
            dev(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
            dev(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
            dev(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
        ];
        let grid_max = [
            dev(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
            dev(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
            dev(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
        ];
        for (what, dims, max) in [
            ("block", cfg.block, block_max),
            ("grid", cfg.grid, grid_max),
        ] {
            for d in 0..3 {
                if let Some(m) = max[d]
                    && dims[d] > m
                {
                    why.push(format!(
                        "{what} extent {} is {}; this device allows at most {m}",
                        ["x", "y", "z"][d],
                        dims[d]
                    ));
                }
            }
        }
        if let Some(a) = attrs
            && cfg.shared_bytes > a.max_dynamic_shared_bytes
        {
            let optin = dev(D::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .map_or(String::new(), |o| {
                    format!(", up to the device's {o} bytes less static shared memory")
                });
            why.push(format!(
                "{} bytes of dynamic shared memory asked for; the kernel allows {} (raise it with \
                 set_max_dynamic_shared{optin})",
                cfg.shared_bytes, a.max_dynamic_shared_bytes
            ));
        }
        if code(&e) == 701
            && let Some(a) = attrs
        {
            why.push(format!(
                "{} registers per thread × {threads} threads is more than a multiprocessor has",
                a.registers
            ));
        }
        let why = if why.is_empty() {
            String::new()
        } else {
            format!("; {}", why.join("; "))
        };
        RuntimeError::Launch {
            kernel: kernel.name.to_string(),
            message: format!("launch rejected: {}{why} ({cfg})", describe(&e)),
        }
    }

    /// Waits for all work on the legacy default stream (and, through its implicit
    /// synchronization, on blocking streams); reports an asynchronous kernel fault as a
    /// [`RuntimeError::Fault`] naming the last kernel launched.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        self.s.stream.synchronize().map_err(|e| self.error(e))
    }

    /// After a kernel has finished (synchronize first): reports the first error its threads
    /// recorded, an out-of-range access of a bounds-checked kernel
    /// (`@kernel(bounds_check=True)`) as [`RuntimeError::IndexOutOfBounds`], a failed `assert`
    /// or a `raise` as [`RuntimeError::Raised`], and clears the record. Kernels that record
    /// nothing (no bounds checks, no `assert`, no `raise`) always pass.
    pub fn check_bounds(&self, kernel: &LoadedKernel) -> Result<(), RuntimeError> {
        self.check_errors(kernel)
    }

    /// The same as [`Device::check_bounds`], under the name that says it reports `assert`
    /// and `raise` too.
    pub fn check_errors(&self, kernel: &LoadedKernel) -> Result<(), RuntimeError> {
        if !kernel.bounds_global {
            return Ok(()); // records nothing: neither bounds-checked nor asserting
        }
        self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
        let Ok(mut global) = kernel
            ._module
            .get_global(crate::ir::BOUNDS_ERROR_SYMBOL, &self.s.stream)
        else {
            return Ok(()); // records nothing
        };
        let mut bytes = [0u8; 8];
        self.s
            .stream
            .memcpy_dtoh(&global, &mut bytes)
            .map_err(|e| self.error(e))?;
        self.s.stream.synchronize().map_err(|e| self.error(e))?;
        let code = u64::from_le_bytes(bytes);
        if code == 0 {
            return Ok(());
        }
        let mut info = [0u8; crate::ir::ERROR_INFO_WORDS * 8];
        let info_global = kernel
            ._module
            .get_global(crate::ir::ERROR_INFO_SYMBOL, &self.s.stream)
            .ok();
        if let Some(g) = &info_global {
            self.s
                .stream
                .memcpy_dtoh(g, &mut info)
                .map_err(|e| self.error(e))?;
        }
        self.s
            .stream
            .memcpy_htod(&[0u8; 8], &mut global)
            .map_err(|e| self.error(e))?;
        self.s.stream.synchronize().map_err(|e| self.error(e))?;
        if code & crate::ir::RAISE_BIT == 0 {
            return Err(decode_bounds(&kernel.name, code, &info));
        }
        Err(decode_raise(&kernel.name, code, &info))
    }

    /// Waits for all work on `stream`; reports faults as [`Device::synchronize`] does.
    pub fn synchronize_stream(&self, stream: &Stream) -> Result<(), RuntimeError> {
        self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
        // SAFETY: `stream` is a valid stream of this context (the promise of its constructor).
        unsafe { cudarc::driver::result::stream::synchronize(stream.raw()) }
            .map_err(|e| self.error(e))
    }

    /// Sets the size of the device's `printf` FIFO, which holds the output of `print` in
    /// kernels until the next synchronization (1 MiB by default; output past it is lost, as
    /// in CUDA C++). Call it before the first launch that prints.
    pub fn set_print_buffer_size(&self, bytes: usize) -> Result<(), RuntimeError> {
        self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
        cudarc::driver::result::ctx::set_limit(
            cudarc::driver::sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE,
            bytes,
        )
        .map_err(|e| self.error(e))
    }

    /// The size of the device's `printf` FIFO (see [`Device::set_print_buffer_size`]).
    pub fn print_buffer_size(&self) -> Result<usize, RuntimeError> {
        self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
        cudarc::driver::result::ctx::get_limit(
            cudarc::driver::sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE,
        )
        .map_err(|e| self.error(e))
    }

    /// Waits for all work on the device, every stream included.
    pub fn synchronize_all(&self) -> Result<(), RuntimeError> {
        self.s.ctx.synchronize().map_err(|e| self.error(e))
    }

    /// Times `runs` launches with CUDA events and returns each launch's GPU time in
    /// microseconds. `warmup` untimed launches go first and are left running, then the timed
    /// launches are queued back to back with an event between each two, so host launch cost
    /// is not counted as kernel time (the method the peer benchmarks in `bench/` use).
    pub fn time_launches(
        &self,
        kernel: &LoadedKernel,
        args: &[ArgValue],
        cfg: &LaunchConfig,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>, RuntimeError> {
        let packed = kernel.pack(args)?;
        let stream = Stream::default_stream();
        for _ in 0..warmup {
            self.launch_packed(kernel, &packed, cfg, &stream)?;
        }
        let event = || {
            self.s
                .ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| self.error(e))
        };
        let mut events = Vec::with_capacity(runs + 1);
        let first = event()?;
        first.record(&self.s.stream).map_err(|e| self.error(e))?;
        events.push(first);
        for _ in 0..runs {
            self.launch_packed(kernel, &packed, cfg, &stream)?;
            let e = event()?;
            e.record(&self.s.stream).map_err(|e| self.error(e))?;
            events.push(e);
        }
        self.synchronize()?;
        events
            .windows(2)
            .map(|w| Ok(f64::from(w[0].elapsed_ms(&w[1]).map_err(drv)?) * 1000.0))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn runtime_types_cross_threads() {
        assert_send_sync::<Device>();
        assert_send_sync::<LoadedKernel>();
        assert_send_sync::<PackedArgs>();
        assert_send_sync::<Stream>();
        assert_send_sync::<crate::cache::KernelCache>();
    }

    #[test]
    fn the_bounds_record_is_found_only_where_defined() {
        let src = |check: bool| {
            let opt = if check { "(bounds_check=True)" } else { "" };
            format!("from cuda import device\n\n@device.kernel{opt}\ndef k(a):\n    a[0] = 1.0\n")
        };
        let args = crate::types::signature::parse_signature("float32[::1]")
            .unwrap()
            .0;
        let ptx = |check: bool| {
            crate::Module::parse("k.py", &src(check))
                .unwrap()
                .compile("k", &args, &crate::CompileOptions::default())
                .unwrap()
                .ptx
        };
        assert!(super::defines_bounds_global(&ptx(true)));
        assert!(!super::defines_bounds_global(&ptx(false)));
        assert!(!super::defines_bounds_global(
            ".extern .global .align 8 .u64 __pyd_bounds_error;"
        ));
        assert_send_sync::<DeviceArray>();
        assert_send_sync::<RuntimeError>();
    }
}

/// Word `k` of an `ERROR_INFO_SYMBOL` record.
fn info_word(info: &[u8], k: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&info[k * 8..k * 8 + 8]);
    u64::from_le_bytes(b)
}

/// The thread and block indices of an `ERROR_INFO_SYMBOL` record.
fn info_ids(info: &[u8]) -> ([u32; 3], [u32; 3]) {
    let (w0, w1, w2) = (info_word(info, 0), info_word(info, 1), info_word(info, 2));
    (
        [w0 as u32, (w0 >> 32) as u32, w1 as u32],
        [(w1 >> 32) as u32, w2 as u32, (w2 >> 32) as u32],
    )
}

/// The [`RuntimeError::IndexOutOfBounds`] of a bounds error word and the
/// `ERROR_INFO_SYMBOL` record (all zero when the module has none): thread and block, the
/// number of dimensions `n`, `n` indices, `n` extents, then the file and array names.
fn decode_bounds(kernel: &str, code: u64, info: &[u8]) -> RuntimeError {
    let (thread, block) = info_ids(info);
    let n = (info_word(info, 3) as usize).min(8);
    let indices = (0..n).map(|k| info_word(info, 4 + k) as i64).collect();
    let shape = (0..n).map(|k| info_word(info, 4 + n + k) as i64).collect();
    let mut text = info[(4 + 2 * n) * 8..].split(|b| *b == 0);
    let mut next = || String::from_utf8_lossy(text.next().unwrap_or_default()).into_owned();
    let file = next();
    let mut array = next();
    if array.is_empty() {
        array = "an array".to_string();
    }
    RuntimeError::IndexOutOfBounds {
        kernel: kernel.to_string(),
        line: (code >> 32) as u32,
        column: code as u32,
        report: Box::new(error::BoundsReport {
            file,
            array,
            indices,
            shape,
            thread,
            block,
        }),
    }
}

/// The [`RuntimeError::Raised`] of an error word with `RAISE_BIT` and the
/// `ERROR_INFO_SYMBOL` record (see `ir::ERROR_INFO_SYMBOL` for its layout).
fn decode_raise(kernel: &str, code: u64, info: &[u8]) -> RuntimeError {
    let (thread, block) = info_ids(info);
    let mut text = info[24..].split(|b| *b == 0);
    let mut next = || String::from_utf8_lossy(text.next().unwrap_or_default()).into_owned();
    let file = next();
    let message = next();
    RuntimeError::Raised {
        kernel: kernel.to_string(),
        line: ((code & !crate::ir::RAISE_BIT) >> 32) as u32,
        column: code as u32,
        report: Box::new(error::RaiseReport {
            file,
            message,
            thread,
            block,
        }),
    }
}

#[cfg(test)]
mod raise_tests {
    #[test]
    fn the_error_record_decodes_to_the_python_error() {
        let mut info = vec![0u8; crate::ir::ERROR_INFO_WORDS * 8];
        let w = |i: &mut Vec<u8>, k: usize, v: u64| {
            i[k * 8..k * 8 + 8].copy_from_slice(&v.to_le_bytes())
        };
        w(&mut info, 0, 5 | 1 << 32);
        w(&mut info, 1, 2 | 7 << 32);
        w(&mut info, 2, 3 | 4 << 32);
        let text = b"k.py\0AssertionError: bad\0";
        info[24..24 + text.len()].copy_from_slice(text);
        let code = crate::ir::RAISE_BIT | 12 << 32 | 5;
        let e = super::decode_raise("k", code, &info);
        assert_eq!(
            e.to_string(),
            "kernel `k` raised AssertionError: bad at k.py:12:5 (thread (5, 1, 2) of block (7, 3, 4); that thread stopped)"
        );
    }

    #[test]
    fn the_bounds_record_names_array_index_and_shape() {
        let mut info = vec![0u8; crate::ir::ERROR_INFO_WORDS * 8];
        let w = |i: &mut Vec<u8>, k: usize, v: u64| {
            i[k * 8..k * 8 + 8].copy_from_slice(&v.to_le_bytes())
        };
        w(&mut info, 0, 3);
        w(&mut info, 1, 1 << 32);
        w(&mut info, 3, 2);
        w(&mut info, 4, 1);
        w(&mut info, 5, (-9i64) as u64);
        w(&mut info, 6, 4);
        w(&mut info, 7, 8);
        let text = b"m.py\0grid\0";
        info[64..64 + text.len()].copy_from_slice(text);
        let e = super::decode_bounds("k", 7 << 32 | 9, &info);
        assert_eq!(
            e.to_string(),
            "kernel `k` indexed `grid[1, -9]` (shape (4, 8)) out of bounds at m.py:7:9, thread (3, 0, 0) of block (1, 0, 0) (the access was skipped)"
        );
        // A module without the record (all zero): the line and column only.
        let e = super::decode_bounds("k", 7 << 32 | 9, &[0u8; crate::ir::ERROR_INFO_WORDS * 8]);
        assert!(
            e.to_string()
                .contains("`an array` out of bounds at line 7, column 9"),
            "{e}"
        );
    }
}
