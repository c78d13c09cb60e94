//! Thread block cluster launches (sm_90, §18.1): the cluster shape a kernel requires
//! (compiled with `@kernel(cluster=...)`, read back from the driver), the shape a launch asks
//! for (`cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`), and the check
//! that the grid is a whole number of clusters, made before the driver is called so that a
//! bad grid is refused with the numbers at fault.

use super::{Device, LaunchConfig, LoadedKernel, RuntimeError, Stream};
use cudarc::driver::sys;
use std::ffi::c_void;

impl LoadedKernel {
    /// The cluster shape the kernel was compiled for (`@kernel(cluster=(x, y, z))`, PTX's
    /// `.reqnctapercluster`), as the driver reports it; `None` for kernels without one.
    pub fn required_cluster(&self) -> Option<[u32; 3]> {
        *self.cluster.get_or_init(|| {
            use sys::CUfunction_attribute as A;
            let dims = [
                A::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                A::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                A::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
            ]
            .map(|a| self.attribute(a).unwrap_or(0));
            // A kernel without a compiled cluster shape reports 0 (older drivers and GPUs
            // may refuse the query: no shape either).
            dims.iter().all(|d| *d > 0).then_some(dims)
        })
    }
}

/// The cluster shape a launch runs with: the one asked for (`explicit`) or the kernel's own;
/// refuses a grid that is not a whole number of clusters, a zero extent, and a shape that
/// differs from the one the kernel was compiled for.
pub(super) fn cluster_shape(
    kernel: &LoadedKernel,
    cfg: &LaunchConfig,
    explicit: Option<[u32; 3]>,
) -> Result<Option<[u32; 3]>, RuntimeError> {
    // Three attribute queries the first time, then a cached answer.
    let required = kernel.required_cluster();
    check_cluster(cfg.grid, explicit, required)
        .map(|_| explicit)
        .map_err(|message| RuntimeError::Launch {
            kernel: kernel.name.to_string(),
            message: format!("launch refused: {message} ({cfg})"),
        })
}

/// The cluster shape a launch of `grid` blocks runs with: `explicit` (the launch's) or
/// `required` (the kernel's `cluster=`), `None` for neither; refuses a shape other than the
/// kernel's, a zero extent, and a grid that is not a whole number of clusters, saying
/// which numbers are at fault. Shared by the GPU launch and the CPU back end's.
pub(crate) fn check_cluster(
    grid: [u32; 3],
    explicit: Option<[u32; 3]>,
    required: Option<[u32; 3]>,
) -> Result<Option<[u32; 3]>, String> {
    let (shape, from) = match (explicit, required) {
        (Some(e), Some(r)) if e != r => {
            return Err(format!(
                "the launch asks for clusters of {} blocks, but the kernel was compiled with \
                 cluster={}",
                show(e),
                show(r)
            ));
        }
        (Some(e), _) => (e, "the launch's cluster shape"),
        (None, Some(r)) => (r, "the kernel's cluster= option"),
        (None, None) => return Ok(None),
    };
    if shape.contains(&0) {
        return Err(format!(
            "cluster extents must be at least 1, not {}",
            show(shape)
        ));
    }
    for d in 0..3 {
        if !grid[d].is_multiple_of(shape[d]) {
            return Err(format!(
                "grid extent {} is {}, not a multiple of {} ({} blocks in {}); the grid \
                 must be a whole number of clusters",
                ["x", "y", "z"][d],
                grid[d],
                from,
                shape[d],
                ["x", "y", "z"][d],
            ));
        }
    }
    Ok(Some(shape))
}

fn show(d: [u32; 3]) -> String {
    format!("({}, {}, {})", d[0], d[1], d[2])
}

/// Launches through `cuLaunchKernelEx` with a cluster dimension attribute.
///
/// # Safety
/// As `cuLaunchKernel`: `params` holds one pointer per kernel parameter, each to bytes laid
/// out as the parameter's ABI says, and `f` belongs to a module loaded in the current context.
pub(super) unsafe fn launch_ex(
    f: sys::CUfunction,
    cfg: &LaunchConfig,
    cluster: [u32; 3],
    stream: &Stream,
    params: &mut [*mut c_void],
) -> Result<(), cudarc::driver::DriverError> {
    // SAFETY: plain C data; every field the attribute's id selects is set below.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
        x: cluster[0],
        y: cluster[1],
        z: cluster[2],
    };
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid[0],
        gridDimY: cfg.grid[1],
        gridDimZ: cfg.grid[2],
        blockDimX: cfg.block[0],
        blockDimY: cfg.block[1],
        blockDimZ: cfg.block[2],
        sharedMemBytes: cfg.shared_bytes,
        hStream: stream.raw(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: `config` and `attr` outlive the call, which copies them; the caller vouches for
    // `f` and `params`.
    unsafe { sys::cuLaunchKernelEx(&config, f, params.as_mut_ptr(), std::ptr::null_mut()) }.result()
}

impl Device {
    /// Launches a kernel on `stream` in thread block clusters of `cluster` blocks (sm_90,
    /// `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`), with arguments
    /// packed by [`LoadedKernel::pack`]. The grid must be a whole number of clusters in
    /// every dimension, and a kernel compiled with `cluster=` must be launched with that
    /// shape: otherwise the launch is refused ([`RuntimeError::Launch`]) before it reaches
    /// the driver. A kernel compiled with `cluster=` needs no call of this: every launch
    /// runs it in its clusters.
    pub fn launch_cluster(
        &self,
        kernel: &LoadedKernel,
        args: &super::PackedArgs,
        cfg: &LaunchConfig,
        cluster: impl Into<super::Dim3>,
        stream: &Stream,
    ) -> Result<(), RuntimeError> {
        self.launch_with(kernel, args, cfg, stream, Some(cluster.into().to_array()))
    }
}
