//! What the compiler hands to the runtime: a kernel's PTX for one architecture with its
//! parameter layouts, and a kernel compiled for several architectures. Plain data that
//! serializes (the specialization cache stores it); it knows nothing of how it was compiled.

use crate::abi::KernelAbi;
use crate::target::Arch;
use serde::{Deserialize, Serialize};

/// A compiled kernel: its PTX and how to call it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompiledKernel {
    /// PTX assembly text.
    pub ptx: String,
    /// The architecture it was compiled for.
    pub arch: Arch,
    /// Its symbol and parameter layouts.
    pub abi: KernelAbi,
    /// CUDA C++ that the PTX calls (`.extern .func`): the shims of `jit.thrust.*` calls
    /// (`crate::cccl`), compiled by NVRTC and linked with the PTX when the kernel is loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda: Vec<CudaSource>,
}

/// One translation unit of CUDA C++ that a kernel links with when it is loaded.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CudaSource {
    /// A name for messages (NVRTC's file name).
    pub name: String,
    /// The source.
    pub source: String,
    /// Whether it includes CCCL (Thrust, CUB) and so needs `crate::cccl`'s NVRTC options.
    pub cccl: bool,
}

/// One kernel compiled for several architectures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MultiArchKernel {
    /// The variants, oldest architecture first.
    pub variants: Vec<CompiledKernel>,
}

impl MultiArchKernel {
    /// The variant to run on a device of architecture `device`: the newest one not newer
    /// than the device (Circle's upper-bound rule), or `None` when all are newer.
    pub fn select(&self, device: Arch) -> Option<&CompiledKernel> {
        self.variants
            .iter()
            .filter(|k| k.arch <= device)
            .max_by_key(|k| k.arch)
    }
}
