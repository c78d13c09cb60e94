//! Linking libdevice, CUDA's math library shipped as LLVM bitcode.
//!
//! The bitcode is read from disk once per process and parsed into each module's context
//! only when that module calls a `__nv_` function. After linking, every libdevice function
//! is made internal, so the optimizer keeps only what the kernel uses.

use super::LowerError;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use std::sync::OnceLock;

fn bitcode() -> Result<&'static [u8], LowerError> {
    static BC: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    BC.get_or_init(|| crate::toolkit::libdevice().and_then(|p| std::fs::read(p).ok()))
        .as_deref()
        .ok_or_else(|| LowerError::LibdeviceNotFound(crate::toolkit::searched()))
}

/// Links libdevice into `module`.
pub fn link<'ctx>(ctx: &'ctx Context, module: &Module<'ctx>) -> Result<(), LowerError> {
    let bytes = bitcode()?;
    let buf = MemoryBuffer::create_from_memory_range(bytes, "libdevice");
    let lib = Module::parse_bitcode_from_buffer(&buf, ctx)
        .map_err(|e| LowerError::Llvm(format!("reading libdevice: {e}")))?;
    lib.set_triple(&module.get_triple());
    lib.set_data_layout(&module.get_data_layout());
    module
        .link_in_module(lib)
        .map_err(|e| LowerError::Llvm(format!("linking libdevice: {e}")))?;
    let mut f = module.get_first_function();
    while let Some(func) = f {
        let name = func.get_name().to_string_lossy();
        if name.starts_with("__nv_") && func.count_basic_blocks() > 0 {
            func.set_linkage(Linkage::Internal);
        }
        f = func.get_next_function();
    }
    // libdevice asks `__nvvm_reflect("__CUDA_FTZ")`; answer "no flush to zero".
    let i32t = ctx.i32_type();
    module.add_basic_value_flag(
        "nvvm-reflect-ftz",
        inkwell::module::FlagBehavior::Override,
        i32t.const_zero(),
    );
    Ok(())
}
