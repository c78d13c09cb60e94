//! Back ends: typed IR → machine code. `ptx` builds device code through LLVM's NVPTX target;
//! `host` builds native code for this machine through Cranelift (heterogeneous `@func`s).

pub mod host;
pub mod ptx;

pub use crate::target::Arch;
