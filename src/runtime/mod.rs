//! Running compiled kernels: the CUDA driver (loaded at run time, so building needs no CUDA
//! toolkit), modules, device memory and launches.
//!
//! [`Device::open`] checks that the driver library exists before touching it, so a machine
//! without a GPU gets [`RuntimeError::NoDriver`] rather than a crash. Launch failures are
//! error values naming the kernel.

pub mod npy;

use crate::abi::{ArgValue, KernelAbi, pack};
use crate::lower::Arch;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

/// What went wrong at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuntimeError {
    /// No CUDA driver library is installed (no GPU on this machine).
    NoDriver(String),
    /// The driver reported an error.
    Driver(String),
    /// Loading a module or launching a kernel failed.
    Launch {
        /// The kernel's symbol.
        kernel: String,
        /// The driver's message.
        message: String,
    },
    /// An argument does not match the kernel's parameters.
    Argument(String),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::NoDriver(m) => write!(f, "no CUDA driver: {m}"),
            RuntimeError::Driver(m) => write!(f, "CUDA driver error: {m}"),
            RuntimeError::Launch { kernel, message } => {
                write!(f, "kernel `{kernel}` failed: {message}")
            }
            RuntimeError::Argument(m) => write!(f, "bad kernel argument: {m}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

fn drv(e: impl fmt::Debug) -> RuntimeError {
    RuntimeError::Driver(format!("{e:?}"))
}

/// True when the CUDA driver library can be loaded on this machine.
pub fn driver_available() -> bool {
    driver_check().is_ok()
}

fn driver_check() -> Result<(), RuntimeError> {
    let mut last = String::new();
    for name in ["libcuda.so.1", "libcuda.so"] {
        // SAFETY: loading libcuda runs its initializers, which is what using it requires.
        match unsafe { libloading::Library::new(name) } {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(RuntimeError::NoDriver(last))
}

/// Launch geometry: grid and block shapes and dynamic shared memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid (x, y, z).
    pub grid: [u32; 3],
    /// Threads per block (x, y, z).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        }
    }
}

/// A GPU with a context and a stream.
pub struct Device {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

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

/// A kernel loaded into a device's context.
pub struct LoadedKernel {
    _module: Arc<CudaModule>,
    function: CudaFunction,
    abi: KernelAbi,
}

impl LoadedKernel {
    /// The kernel's ABI.
    pub fn abi(&self) -> &KernelAbi {
        &self.abi
    }
}

impl Device {
    /// Opens GPU `ordinal` (its primary context) and its default stream.
    pub fn open(ordinal: usize) -> Result<Device, RuntimeError> {
        driver_check()?;
        let n = CudaContext::device_count().map_err(drv)?;
        if n <= ordinal as i32 {
            return Err(RuntimeError::Driver(format!(
                "no GPU {ordinal}: {n} present"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(drv)?;
        let stream = ctx.default_stream();
        Ok(Device { ctx, stream })
    }

    /// The device's architecture (compute capability).
    pub fn arch(&self) -> Result<Arch, RuntimeError> {
        let (maj, min) = self.ctx.compute_capability().map_err(drv)?;
        Ok(Arch::new(maj as u32, min as u32))
    }

    /// The device's name.
    pub fn name(&self) -> Result<String, RuntimeError> {
        self.ctx.name().map_err(drv)
    }

    /// Loads PTX and looks the kernel described by `abi` up in it.
    pub fn load(&self, ptx: &str, abi: &KernelAbi) -> Result<LoadedKernel, RuntimeError> {
        let fail = |e: cudarc::driver::DriverError| RuntimeError::Launch {
            kernel: abi.symbol.clone(),
            message: format!("loading the module: {e:?}"),
        };
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(fail)?;
        let function = module.load_function(&abi.symbol).map_err(fail)?;
        Ok(LoadedKernel {
            _module: module,
            function,
            abi: abi.clone(),
        })
    }

    /// Copies bytes to new device memory.
    pub fn upload(&self, bytes: &[u8]) -> Result<DeviceBuffer, RuntimeError> {
        let slice = if bytes.is_empty() {
            self.stream.alloc_zeros::<u8>(1).map_err(drv)?
        } else {
            self.stream.clone_htod(bytes).map_err(drv)?
        };
        Ok(DeviceBuffer { slice })
    }

    /// Copies device memory back (waits for the stream).
    pub fn download(&self, buf: &DeviceBuffer) -> Result<Vec<u8>, RuntimeError> {
        self.stream.clone_dtoh(&buf.slice).map_err(drv)
    }

    /// The device address of a buffer, for [`ArgValue::Array`](crate::abi::ArgValue).
    pub fn address(&self, buf: &DeviceBuffer) -> u64 {
        let (ptr, _sync) = buf.slice.device_ptr(&self.stream);
        ptr
    }

    /// Launches a kernel asynchronously on the device's stream.
    pub fn launch(
        &self,
        kernel: &LoadedKernel,
        args: &[ArgValue],
        cfg: &LaunchConfig,
    ) -> Result<(), RuntimeError> {
        let params = &kernel.abi.params;
        if args.len() != params.len() {
            return Err(RuntimeError::Argument(format!(
                "`{}` takes {} arguments, {} given",
                kernel.abi.symbol,
                params.len(),
                args.len()
            )));
        }
        // Each parameter's bytes, in 8-byte aligned storage.
        let mut storage: Vec<Vec<u64>> = Vec::with_capacity(args.len());
        for (p, a) in params.iter().zip(args) {
            let bytes =
                pack(&p.ty, a).map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", p.name)))?;
            let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
            for (i, b) in bytes.iter().enumerate() {
                words[i / 8] |= u64::from(*b) << (8 * (i % 8));
            }
            storage.push(words);
        }
        let mut ptrs: Vec<*mut c_void> =
            storage.iter_mut().map(|w| w.as_mut_ptr().cast()).collect();
        let fail = |e: cudarc::driver::DriverError| RuntimeError::Launch {
            kernel: kernel.abi.symbol.clone(),
            message: format!("{e:?}"),
        };
        // SAFETY: `ptrs` holds one pointer per kernel parameter, each to bytes laid out as the
        // parameter's ABI says; they outlive the call, which copies them.
        unsafe {
            cudarc::driver::result::launch_kernel(
                kernel.function.cu_function(),
                (cfg.grid[0], cfg.grid[1], cfg.grid[2]),
                (cfg.block[0], cfg.block[1], cfg.block[2]),
                cfg.shared_bytes,
                self.stream.cu_stream(),
                &mut ptrs,
            )
        }
        .map_err(fail)
    }

    /// Waits for all work on the device's stream; reports an asynchronous kernel failure.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        self.stream.synchronize().map_err(drv)
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
        for _ in 0..warmup {
            self.launch(kernel, args, cfg)?;
        }
        let mut events = Vec::with_capacity(runs + 1);
        let first = self
            .ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(drv)?;
        first.record(&self.stream).map_err(drv)?;
        events.push(first);
        for _ in 0..runs {
            self.launch(kernel, args, cfg)?;
            let e = self
                .ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(drv)?;
            e.record(&self.stream).map_err(drv)?;
            events.push(e);
        }
        self.synchronize()?;
        events
            .windows(2)
            .map(|w| Ok(f64::from(w[0].elapsed_ms(&w[1]).map_err(drv)?) * 1000.0))
            .collect()
    }
}
