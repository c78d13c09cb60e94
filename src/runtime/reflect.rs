//! Reflection without launching: what a loaded kernel costs (registers, shared, local and
//! constant memory, its thread limit, the PTX and binary versions), the dynamic shared memory
//! it may use, and how many of its blocks fit on a multiprocessor.
//!
//! Everything is read from the driver (`cuFuncGetAttribute`, `cuOccupancy*`) after the module
//! is loaded, which is when the driver compiles the PTX for the GPU; nothing is launched.

use super::error::{code, describe, is_sticky};
use super::{LoadedKernel, RuntimeError};
use cudarc::driver::DriverError;
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use serde::{Deserialize, Serialize};

/// A loaded kernel's resource use and limits, as the driver reports them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KernelAttributes {
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: u32,
    /// Statically allocated shared memory per block, in bytes.
    pub static_shared_bytes: u32,
    /// Local memory per thread (spills and local arrays), in bytes.
    pub local_bytes: u32,
    /// Constant memory used, in bytes.
    pub const_bytes: u32,
    /// The most threads a block of this kernel may have (limited by its registers and launch
    /// bounds).
    pub max_threads_per_block: u32,
    /// The most dynamic shared memory a launch may ask for now, in bytes (48 KiB by default;
    /// see [`LoadedKernel::set_max_dynamic_shared`]).
    pub max_dynamic_shared_bytes: u32,
    /// The virtual architecture the PTX was written for, as major × 10 + minor (90 for
    /// `compute_90`).
    pub ptx_version: u32,
    /// The architecture of the binary the driver made, as major × 10 + minor.
    pub binary_version: u32,
}

/// How many blocks of a kernel are resident on one multiprocessor at a block size.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Threads per block asked about.
    pub block_threads: u32,
    /// Dynamic shared memory per block asked about, in bytes.
    pub dynamic_shared_bytes: u32,
    /// Blocks resident on one multiprocessor.
    pub active_blocks_per_sm: u32,
    /// Warps resident on one multiprocessor.
    pub active_warps_per_sm: u32,
    /// The most warps a multiprocessor of this device holds.
    pub max_warps_per_sm: u32,
    /// `active_warps_per_sm / max_warps_per_sm`.
    pub fraction: f64,
}

/// The block size that maximizes occupancy (`cuOccupancyMaxPotentialBlockSize`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSizeSuggestion {
    /// Threads per block.
    pub block_threads: u32,
    /// The fewest blocks that fill the whole device at that size.
    pub min_grid_blocks: u32,
}

impl LoadedKernel {
    fn reflect_error(&self, what: &str, e: DriverError) -> RuntimeError {
        if is_sticky(code(&e)) {
            RuntimeError::Fault {
                kernel: self.name.to_string(),
                message: describe(&e),
            }
        } else {
            RuntimeError::Driver(format!(
                "{what} of kernel `{}`: {}",
                self.name,
                describe(&e)
            ))
        }
    }

    pub(super) fn attribute(&self, a: CUfunction_attribute) -> Result<u32, RuntimeError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.reflect_error("reading attributes", e))?;
        // SAFETY: the function belongs to a module this kernel keeps loaded.
        let v = unsafe {
            cudarc::driver::result::function::get_function_attribute(self.cu_function(), a)
        }
        .map_err(|e| self.reflect_error("reading attributes", e))?;
        Ok(v.max(0) as u32)
    }

    /// The kernel's resource use and limits (no launch).
    pub fn attributes(&self) -> Result<KernelAttributes, RuntimeError> {
        use CUfunction_attribute as A;
        Ok(KernelAttributes {
            registers: self.attribute(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_shared_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            const_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            max_threads_per_block: self.attribute(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_dynamic_shared_bytes: self
                .attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            ptx_version: self.attribute(A::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: self.attribute(A::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }

    /// The device's attribute `a` (for the messages and occupancy).
    pub(crate) fn device_attribute(&self, a: CUdevice_attribute) -> Option<u32> {
        self.ctx.attribute(a).ok().map(|v| v.max(0) as u32)
    }

    /// Lets launches of this kernel ask for up to `bytes` of dynamic shared memory
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`); needed above 48 KiB. The
    /// device's limit is `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN` less the
    /// kernel's static shared memory; asking for more is an error naming the kernel (the
    /// context stays usable).
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<(), RuntimeError> {
        let fail = |e: DriverError| {
            if is_sticky(code(&e)) {
                return self.reflect_error("setting dynamic shared memory", e);
            }
            let optin = self.device_attribute(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            );
            let limit = optin.map_or(String::new(), |o| {
                format!("; this device allows at most {o} bytes per block, static included")
            });
            RuntimeError::Launch {
                kernel: self.name.to_string(),
                message: format!(
                    "cannot allow {bytes} bytes of dynamic shared memory: {}{limit}",
                    describe(&e)
                ),
            }
        };
        self.ctx.bind_to_thread().map_err(fail)?;
        let value = i32::try_from(bytes).unwrap_or(i32::MAX);
        // SAFETY: the function belongs to a module this kernel keeps loaded.
        unsafe {
            cudarc::driver::result::function::set_function_attribute(
                self.cu_function(),
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
        }
        .map_err(fail)
    }

    /// Blocks of `block_threads` threads with `dynamic_shared` bytes each that are resident on
    /// one multiprocessor at once (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub fn active_blocks_per_sm(
        &self,
        block_threads: u32,
        dynamic_shared: u32,
    ) -> Result<u32, RuntimeError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.reflect_error("occupancy", e))?;
        let threads = i32::try_from(block_threads).unwrap_or(i32::MAX);
        // SAFETY: the function belongs to a module this kernel keeps loaded.
        let n = unsafe {
            cudarc::driver::result::occupancy::max_active_block_per_multiprocessor(
                self.cu_function(),
                threads,
                dynamic_shared as usize,
            )
        }
        .map_err(|e| self.reflect_error("occupancy", e))?;
        Ok(n.max(0) as u32)
    }

    /// Occupancy at a block size: resident blocks and warps per multiprocessor, and the
    /// fraction of the multiprocessor's warps they are.
    pub fn occupancy(
        &self,
        block_threads: u32,
        dynamic_shared: u32,
    ) -> Result<Occupancy, RuntimeError> {
        let blocks = self.active_blocks_per_sm(block_threads, dynamic_shared)?;
        let warps_per_block = block_threads.div_ceil(32);
        let max_threads = self
            .device_attribute(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )
            .ok_or_else(|| {
                RuntimeError::Driver("cannot read the threads per multiprocessor".into())
            })?;
        let max_warps = (max_threads / 32).max(1);
        let active = blocks * warps_per_block;
        Ok(Occupancy {
            block_threads,
            dynamic_shared_bytes: dynamic_shared,
            active_blocks_per_sm: blocks,
            active_warps_per_sm: active,
            max_warps_per_sm: max_warps,
            fraction: f64::from(active) / f64::from(max_warps),
        })
    }

    /// The block size with the best occupancy when each block has `dynamic_shared` bytes of
    /// dynamic shared memory, and the fewest blocks that fill the device at that size.
    pub fn suggested_block_size(
        &self,
        dynamic_shared: u32,
    ) -> Result<BlockSizeSuggestion, RuntimeError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.reflect_error("occupancy", e))?;
        // SAFETY: the function belongs to a module this kernel keeps loaded; no callback is
        // passed, so the dynamic shared size is the constant given.
        let (grid, block) = unsafe {
            cudarc::driver::result::occupancy::max_potential_block_size(
                self.cu_function(),
                None,
                dynamic_shared as usize,
                0,
            )
        }
        .map_err(|e| self.reflect_error("occupancy", e))?;
        Ok(BlockSizeSuggestion {
            block_threads: block.max(0) as u32,
            min_grid_blocks: grid.max(0) as u32,
        })
    }
}
