//! Linking libdevice, CUDA's math library shipped as LLVM bitcode.
//!
//! Parsing all of libdevice (about 500 KB of bitcode) costs tens of milliseconds, so each
//! function a kernel calls is extracted once per process into a small bitcode module of its
//! own (the function and what it calls), cached, and linked on demand. A kernel that uses
//! `math.exp` then pays for parsing `__nv_expf` alone.

use super::LowerError;
use crate::ir::MathFn;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The libdevice function that computes `f` at a float width (`__nv_expf`, `__nv_exp`), for
/// the functions that come from libdevice; the others are LLVM intrinsics or plain
/// instructions (`None`). The name is the C library's ([`MathFn::c_name`]).
pub(crate) fn function_for(f: MathFn, f64: bool) -> Option<String> {
    use MathFn::*;
    let base = match f {
        Sqrt | Floor | Ceil | Trunc | Fabs | Copysign | Isnan | Isinf | Isfinite | Degrees
        | Radians | Rint => return None,
        f => f.c_name(),
    };
    Some(format!("__nv_{base}{}", if f64 { "" } else { "f" }))
}

fn bitcode() -> Result<&'static [u8], LowerError> {
    static BC: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    BC.get_or_init(|| crate::toolkit::libdevice().and_then(|p| std::fs::read(p).ok()))
        .as_deref()
        .ok_or_else(|| LowerError::LibdeviceNotFound(crate::toolkit::searched()))
}

/// The identity of the libdevice this process links (the SHA-256 of its bitcode, in
/// hexadecimal), or `"none"` when none is found: part of the on-disk cache's key, since the
/// math functions it defines reach the PTX.
pub fn identity() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| match bitcode() {
        Ok(bytes) => {
            use sha2::{Digest, Sha256};
            format!("{:x}", Sha256::digest(bytes))
        }
        Err(_) => "none".to_string(),
    })
}

/// Extracted functions, shared by all threads: name → bitcode of a module holding it.
fn extracted() -> &'static Mutex<HashMap<String, Arc<Vec<u8>>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Vec<u8>>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

thread_local! {
    /// This thread's parsed copy of libdevice, in a context of its own, for extraction.
    static WHOLE: OnceLock<(&'static Context, Module<'static>)> = const { OnceLock::new() };
}

/// The bitcode of a module that defines `name` (external) and, internally, what it calls.
fn extract(name: &str) -> Result<Arc<Vec<u8>>, LowerError> {
    if let Some(bc) = extracted()
        .lock()
        .map_err(|_| LowerError::Llvm("libdevice cache poisoned".into()))?
        .get(name)
    {
        return Ok(bc.clone());
    }
    let bytes = bitcode()?;
    let bc = WHOLE.with(|whole| -> Result<Vec<u8>, LowerError> {
        if whole.get().is_none() {
            // Leaked on purpose: one context and module per thread that extracts, for the
            // life of the process.
            let ctx: &'static Context = Box::leak(Box::new(Context::create()));
            let buf = MemoryBuffer::create_from_memory_range(bytes, "libdevice");
            let m = Module::parse_bitcode_from_buffer(&buf, ctx)
                .map_err(|e| LowerError::Llvm(format!("reading libdevice: {e}")))?;
            let _ = whole.set((ctx, m));
        }
        let (_, lib) = whole
            .get()
            .ok_or_else(|| LowerError::Llvm("libdevice not loaded".into()))?;
        if lib
            .get_function(name)
            .is_none_or(|f| f.count_basic_blocks() == 0)
        {
            return Err(LowerError::Llvm(format!(
                "libdevice has no function {name}"
            )));
        }
        let m = lib.clone();
        let mut f = m.get_first_function();
        while let Some(func) = f {
            if func.count_basic_blocks() > 0 && func.get_name().to_bytes() != name.as_bytes() {
                func.set_linkage(Linkage::Internal);
            }
            f = func.get_next_function();
        }
        let mut g = m.get_first_global();
        while let Some(gv) = g {
            if gv.get_initializer().is_some() {
                gv.set_linkage(Linkage::Internal);
            }
            g = gv.get_next_global();
        }
        // Drop everything the function does not reach.
        let tm = super::dce_machine()?;
        m.run_passes("globaldce", &tm, PassBuilderOptions::create())
            .map_err(|e| LowerError::Llvm(format!("extracting {name}: {e}")))?;
        Ok(m.write_bitcode_to_memory().as_slice().to_vec())
    })?;
    let bc = Arc::new(bc);
    extracted()
        .lock()
        .map_err(|_| LowerError::Llvm("libdevice cache poisoned".into()))?
        .insert(name.to_string(), bc.clone());
    Ok(bc)
}

/// Links into `module` the libdevice functions it declares (`__nv_*`), each made internal
/// so the optimizer keeps only what is used.
pub fn link<'ctx>(ctx: &'ctx Context, module: &Module<'ctx>) -> Result<(), LowerError> {
    let mut wanted = Vec::new();
    let mut f = module.get_first_function();
    while let Some(func) = f {
        let name = func.get_name().to_string_lossy().into_owned();
        if name.starts_with("__nv_") && func.count_basic_blocks() == 0 {
            wanted.push(name);
        }
        f = func.get_next_function();
    }
    for name in wanted {
        let bc = extract(&name)?;
        let buf = MemoryBuffer::create_from_memory_range_copy(&bc, &name);
        let lib = Module::parse_bitcode_from_buffer(&buf, ctx)
            .map_err(|e| LowerError::Llvm(format!("reading libdevice's {name}: {e}")))?;
        lib.set_triple(&module.get_triple());
        lib.set_data_layout(&module.get_data_layout());
        module
            .link_in_module(lib)
            .map_err(|e| LowerError::Llvm(format!("linking libdevice's {name}: {e}")))?;
        if let Some(func) = module.get_function(&name) {
            func.set_linkage(Linkage::Internal);
        }
    }
    // libdevice asks `__nvvm_reflect("__CUDA_FTZ")`; answer "no flush to zero".
    if module.get_flag("nvvm-reflect-ftz").is_none() {
        module.add_basic_value_flag(
            "nvvm-reflect-ftz",
            inkwell::module::FlagBehavior::Override,
            ctx.i32_type().const_zero(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name `function_for` gives is a function libdevice defines, at both widths.
    #[test]
    fn math_functions_name_libdevice_functions() {
        let Ok(bytes) = bitcode() else {
            eprintln!("note: libdevice not found; names not checked");
            return;
        };
        let ctx = Context::create();
        let buf = MemoryBuffer::create_from_memory_range(bytes, "libdevice");
        let lib = Module::parse_bitcode_from_buffer(&buf, &ctx).expect("libdevice parses");
        let mut named = 0;
        for f in MathFn::ALL {
            for f64 in [false, true] {
                if let Some(name) = function_for(f, f64) {
                    named += 1;
                    assert!(
                        lib.get_function(&name)
                            .is_some_and(|g| g.count_basic_blocks() > 0),
                        "{f:?} ({}) maps to {name}, which libdevice does not define",
                        if f64 { "f64" } else { "f32" }
                    );
                }
            }
        }
        assert_eq!(named, 64, "32 functions from libdevice, at two widths");
    }
}
