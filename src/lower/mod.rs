//! Back ends: typed IR → machine code. `ptx` builds device code through LLVM's NVPTX target;
//! `host` builds native code for this machine through Cranelift (heterogeneous `@func`s).

#[cfg(feature = "host")]
pub mod host;
#[cfg(feature = "ptx")]
pub mod ptx;

pub use crate::target::Arch;
