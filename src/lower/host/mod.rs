//! The host side of heterogeneous functions: a `@func` specialized for the host target
//! (`target(is_host)` true) is lowered to Cranelift IR and JIT-compiled to native code.
//!
//! [`compile`] checks what the host cannot run (`check`: device-only intrinsics, atomics,
//! arrays — each a diagnostic at its use), lowers every function of the program
//! (`emit`), and returns a [`HostFunction`]: a typed [`HostFunction::call`] and a raw
//! function pointer with the platform C ABI (System V x86-64, aggregates classified as gcc
//! does, see `leaf::classify`). docs/semantics.md §16 records the decisions.

mod check;
mod cmath;
mod emit;
pub mod interrupt;
pub mod kernel;
pub(crate) mod leaf;
pub(crate) mod runtime;
pub mod tensor_code;
mod value;

pub use value::HostValue;

use crate::abi::ArgValue;
use crate::diag::Diagnostic;
use crate::ir::{Program, StmtKind};
use crate::types::Type;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{ArenaMemoryProvider, JITBuilder, JITModule};
use std::fmt;
use std::sync::Arc;

/// Why host code could not be built or called.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum HostError {
    /// The specialization decided `target(...)` for a GPU, not for the host.
    TargetMismatch {
        /// The architecture it was specialized for (90 for sm_90).
        specialized: u32,
    },
    /// Host execution needs x86-64 with the System V ABI (Linux, macOS, the BSDs).
    UnsupportedPlatform,
    /// Cranelift failed (a bug: the program passed the host checks).
    Codegen(String),
    /// A typed call got arguments that do not match the parameters.
    Argument(String),
    /// A failed `assert` or a `raise` stopped the call.
    Raised {
        /// The source file.
        file: String,
        /// 1-based line of the `assert`/`raise`.
        line: u32,
        /// 1-based column.
        column: u32,
        /// What Python would print: `AssertionError: message`, `ValueError: message`.
        message: String,
    },
    /// The call ran out of stack, as CPython's `RecursionError` ("maximum recursion depth
    /// exceeded"): recursion too deep, or a frame (a large `local_array`) larger than the
    /// stack left. Nothing overflowed: each function checks the stack on entry.
    StackExhausted {
        /// The stack the call ran on, in bytes.
        stack: usize,
    },
    /// The call was stopped at a loop back-edge by [`interrupt::request`] (Ctrl-C in
    /// Python, which raises `KeyboardInterrupt`).
    Interrupted,
    /// An array index was out of range (the access was skipped; a load read zero).
    IndexOutOfBounds {
        /// 1-based line of the access.
        line: u32,
        /// 1-based column.
        column: u32,
    },
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::TargetMismatch { specialized } => write!(
                f,
                "this specialization decided `target(...)` for sm_{specialized}; specialize it for the host (Module::specialize_host)"
            ),
            HostError::UnsupportedPlatform => {
                write!(f, "host execution needs an x86-64 System V platform")
            }
            HostError::Codegen(m) => write!(f, "host code generation failed: {m}"),
            HostError::Argument(m) => write!(f, "{m}"),
            HostError::Raised {
                file,
                line,
                column,
                message,
            } => write!(f, "{message} (at {file}:{line}:{column})"),
            HostError::StackExhausted { stack } => write!(
                f,
                "RecursionError: maximum recursion depth exceeded (the host call ran out of its {} KiB stack)",
                stack / 1024
            ),
            HostError::Interrupted => write!(f, "the host call was interrupted"),
            HostError::IndexOutOfBounds { line, column } => {
                write!(
                    f,
                    "array index out of range at line {line}, column {column}"
                )
            }
        }
    }
}

impl std::error::Error for HostError {}

/// The stack a host call gets when its thread has less than [`MIN_STACK`] left.
const HOST_STACK: usize = 8 << 20;
/// The least stack left on a thread for a host call to run on it.
const MIN_STACK: usize = 2 << 20;
/// Stack kept free below the lowest frame of compiled code, for the native helpers it calls
/// (libm, `printf`) and the signal handlers that may run on it.
const STACK_RESERVE: usize = 256 << 10;

/// The JIT-compiled code, freed when the last [`HostFunction`] using it is dropped.
struct Code {
    module: Option<JITModule>,
}

// SAFETY: after `finalize_definitions` the module is never used again except to free its
// memory on drop; the code it owns is immutable and callable from any thread (it touches
// no state but its arguments and the stack).
unsafe impl Send for Code {}
// SAFETY: as above; `&Code` gives no access to the module.
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: every HostFunction holding pointers into this module holds this
            // `Arc<Code>`; it is the last one, so no pointer into the code survives.
            unsafe { m.free_memory() };
        }
    }
}

/// A `@func` compiled to native code for this machine. `Send + Sync`; cheap to clone.
#[derive(Clone)]
pub struct HostFunction {
    /// Owns the code the two pointers point into.
    _code: Arc<Code>,
    c_abi: usize,
    buffer: usize,
    name: String,
    params: Vec<Type>,
    ret: Type,
    /// The source file, for [`HostError::Raised`].
    file: Arc<str>,
    /// Every `assert` and `raise` of the program: line, column, message.
    raises: Arc<Vec<(u32, u32, String)>>,
    /// Per parameter: whether the function may store to memory it holds
    /// ([`Program::param_stores`]).
    stores: Arc<Vec<bool>>,
}

/// Every `assert` and `raise` of `program`: line, column, message.
fn raise_sites(program: &Program) -> Vec<(u32, u32, String)> {
    fn walk(program: &Program, b: &crate::ir::Block, out: &mut Vec<(u32, u32, String)>) {
        for s in b {
            match &s.kind {
                StmtKind::Assert { message, .. } | StmtKind::Raise { message } => {
                    let (l, c) = program.file.line_col(s.span.start);
                    out.push((l as u32, c as u32, message.clone()));
                }
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    walk(program, then, out);
                    walk(program, otherwise, out);
                }
                StmtKind::Loop {
                    body, continuing, ..
                } => {
                    walk(program, body, out);
                    walk(program, continuing, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for (_, f) in program.functions.iter() {
        walk(program, &f.body, &mut out);
        // A reshape that cannot view its array fails as a raise at its position (the
        // device traps there).
        for (h, e) in f.exprs.iter() {
            if matches!(e, crate::ir::Expr::Reshape { .. }) {
                let (l, c) = program.file.line_col(f.exprs.span(h).start);
                out.push((l as u32, c as u32, RESHAPE_ERROR.to_string()));
            }
        }
    }
    out
}

/// What a failed `reshape` says on the CPU.
const RESHAPE_ERROR: &str = "ValueError: cannot reshape the array: it is not contiguous in the \
                             requested order, or the new shape has another number of elements";

impl fmt::Debug for HostFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostFunction")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("ret", &self.ret)
            .finish_non_exhaustive()
    }
}

impl HostFunction {
    /// The Python name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the function may store to the memory parameter `index` holds (an array, or a
    /// tuple or struct of arrays), itself or through its callees; `false` for a parameter
    /// that holds no memory. A caller passing read-only memory checks this first.
    pub fn may_store(&self, index: usize) -> bool {
        self.stores.get(index).copied().unwrap_or(true)
    }

    /// Parameter types, in order.
    pub fn params(&self) -> &[Type] {
        &self.params
    }

    /// The result type.
    pub fn ret(&self) -> &Type {
        &self.ret
    }

    /// Calls the function with typed values (numbers convert to the parameter's type where
    /// they fit; tuples and vectors as [`HostValue::Tuple`]; a `@struct` as the
    /// [`HostValue::Struct`] a result of that class is, with the class and field names
    /// checked, so a struct goes in as it comes out).
    pub fn call(&self, args: &[HostValue]) -> Result<HostValue, HostError> {
        self.invoke(args).map(|(r, _)| r)
    }

    /// Like [`HostFunction::call`], and afterwards copies what the function stored into
    /// array arguments back into them.
    pub fn call_mut(&self, args: &mut [HostValue]) -> Result<HostValue, HostError> {
        let (r, arrays) = self.invoke(args)?;
        value::copy_back(args, arrays);
        Ok(r)
    }

    /// Runs the buffer wrapper; returns the result and, per argument, the array copy it
    /// worked on (its length in bytes and storage).
    #[allow(clippy::type_complexity)]
    fn invoke(
        &self,
        args: &[HostValue],
    ) -> Result<(HostValue, Vec<Option<(usize, Vec<u64>)>>), HostError> {
        let (buf, arrays) = value::frame(&self.name, &self.params, args)?;
        // SAFETY: the array descriptors in `buf` point into `arrays`, alive and as large as
        // their shapes say.
        let r = unsafe { self.run_frame(&buf)? };
        Ok((r, arrays))
    }

    /// Calls the function on values laid out as a kernel's arguments are
    /// ([`crate::abi::pack`]): numbers as [`ArgValue`] numbers, arrays as
    /// [`ArgValue::Array`] descriptors (data address, shape, strides in elements, which may
    /// be 0 or negative) of **host** memory, read and written in place. Every element
    /// access is still bounds-checked against the descriptor's shape.
    ///
    /// # Safety
    ///
    /// For each array, every element its shape and strides reach from `data` must be valid
    /// host memory of the parameter's dtype for the whole call: readable, and writable where
    /// the function stores, with no other thread writing it meanwhile.
    pub unsafe fn call_raw(&self, args: &[ArgValue]) -> Result<HostValue, HostError> {
        let buf = value::raw_frame(&self.name, &self.params, args)?;
        // SAFETY: the caller vouches for the arrays' memory.
        unsafe { self.run_frame(&buf) }
    }

    /// Runs the buffer wrapper on a frame of the parameters' layout and decodes the error
    /// word and the result.
    ///
    /// # Safety
    ///
    /// The array descriptors in `buf` must point to memory valid for every element their
    /// shapes and strides reach.
    unsafe fn run_frame(&self, buf: &[u64]) -> Result<HostValue, HostError> {
        let size = crate::abi::layout_of(&self.ret).size;
        let mut out = vec![0u64; size.div_ceil(8) as usize + 1];
        // SAFETY: `buffer` is the address of the JIT-compiled
        // `extern "C" fn(*const u8, *mut u8, *mut u64)` wrapper, alive while `self._code`
        // is; it reads the parameters' layout from `buf` (the caller vouches for the arrays;
        // every access is bounds-checked) and writes the result's layout into `out` and any
        // index error into the context's first word; the stack limit is the second.
        let f: extern "C" fn(*const u8, *mut u8, *mut u64) =
            unsafe { std::mem::transmute(self.buffer) };
        let out_ptr: *mut u8 = out.as_mut_ptr().cast();
        // The call's context: the error word, then the lowest stack address its functions
        // may use (`emit::raise::check_stack`), which leaves `STACK_RESERVE` for the native
        // helpers they call, then the address of the flag its loops poll
        // (`interrupt::flag_for_call`). A thread with less than `MIN_STACK` left (a small thread stack,
        // deep native recursion) runs the call on a fresh stack of `HOST_STACK`.
        let flag = interrupt::flag_for_call();
        let run = || {
            let marker = 0u8;
            let here = std::ptr::addr_of!(marker) as u64;
            let left = stacker::remaining_stack().unwrap_or(0) as u64;
            let limit = here
                .saturating_sub(left)
                .saturating_add(STACK_RESERVE as u64);
            let mut ctx = [0u64, limit, flag];
            f(buf.as_ptr().cast(), out_ptr, ctx.as_mut_ptr());
            (ctx[0], left as usize)
        };
        let (w, stack) = match stacker::remaining_stack() {
            Some(left) if left >= MIN_STACK => run(),
            _ => stacker::grow(HOST_STACK, run),
        };
        let word = w;
        if word == emit::INTERRUPTED {
            return Err(HostError::Interrupted);
        }
        if word == emit::STACK_EXHAUSTED {
            return Err(HostError::StackExhausted { stack });
        }
        if word & crate::ir::RAISE_BIT != 0 {
            let line = ((word & !crate::ir::RAISE_BIT) >> 32) as u32;
            let column = word as u32;
            let message = self
                .raises
                .iter()
                .find(|(l, c, _)| *l == line && *c == column)
                .map_or_else(|| "an exception".to_string(), |(_, _, m)| m.clone());
            return Err(HostError::Raised {
                file: self.file.to_string(),
                line,
                column,
                message,
            });
        }
        if word != 0 {
            return Err(HostError::IndexOutOfBounds {
                line: (word >> 32) as u32,
                column: word as u32,
            });
        }
        value::unpack(&self.ret, value::as_bytes_mut(&mut out), 0)
    }

    /// The address of the function with the platform C ABI: called from C as the function
    /// `R f(P1, P2, ...)` whose parameter and result types are the C equivalents of the
    /// Python ones (`abi::layout_of(t).cxx`; `float16` as CUDA's `__half`, a struct holding
    /// an `unsigned short`). Valid while this `HostFunction` (or a clone) is alive.
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        self.c_abi as *const std::ffi::c_void
    }
}

/// The diagnostics that keep `program` from running on the host (empty when it can).
pub fn host_diagnostics(program: &Program) -> Vec<Diagnostic> {
    check::check(program)
}

/// The diagnostics that keep `@kernel` `program` from running whole on the CPU (empty when
/// it can).
pub fn kernel_diagnostics(program: &Program) -> Vec<Diagnostic> {
    check::check_kernel(program)
}

/// JIT-compiles a program that passed [`host_diagnostics`].
pub fn compile(program: &Program) -> Result<HostFunction, HostError> {
    if let Some(sm) = program.target_sm
        && sm != crate::ir::HOST_TARGET
    {
        return Err(HostError::TargetMismatch { specialized: sm });
    }
    let (code, (c_ptr, buf_ptr)) = jit(program, &[], None)?;
    let entry = &program.functions[program.entry];
    Ok(HostFunction {
        _code: Arc::new(code),
        c_abi: c_ptr,
        buffer: buf_ptr,
        name: entry.name.clone(),
        params: entry
            .param_locals()
            .map(|l| entry.locals[l].ty.clone())
            .collect(),
        ret: entry.ret.clone(),
        file: program.file.name.as_str().into(),
        raises: Arc::new(raise_sites(program)),
        stores: Arc::new(program.entry_param_stores()),
    })
}

/// The address space reserved for one compiled module's code and data (see `compile`): far
/// more than the largest kernel needs, and within the ±2 GiB of x86-64 PC-relative
/// references.
const JIT_ARENA_BYTES: usize = 256 << 20;

/// JIT-compiles every function of `program` with the runtime's `extra` symbols; returns the
/// code and the addresses of the entry's C ABI wrapper (0 for a kernel, `kernel` given)
/// and buffer wrapper.
fn jit(
    program: &Program,
    extra: &[(&'static str, *const u8)],
    kernel: Option<&kernel::SharedLayout>,
) -> Result<(Code, (usize, usize)), HostError> {
    if !cfg!(all(target_arch = "x86_64", not(windows))) {
        return Err(HostError::UnsupportedPlatform);
    }
    let cg = |e: &dyn fmt::Display| HostError::Codegen(e.to_string());
    let mut fb = settings::builder();
    for (k, v) in [
        ("opt_level", "speed"),
        ("is_pic", "false"),
        ("use_colocated_libcalls", "false"),
        ("enable_multi_ret_implicit_sret", "true"),
    ] {
        fb.set(k, v).map_err(|e| cg(&e))?;
    }
    let isa = cranelift_native::builder()
        .map_err(|e| cg(&e))?
        .finish(settings::Flags::new(fb))
        .map_err(|e| cg(&e))?;
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    // One reserved range for the module's code and data. With separate allocations (the
    // default provider), a module's code and its data could land more than 2 GiB apart in a
    // large process, and the 32-bit PC-relative references between them could not be
    // written (cranelift-jit panics: seen on the 16-core GPU host's release build, hgemm's
    // CPU run). Reserving costs address space only (PROT_NONE until used).
    let arena = ArenaMemoryProvider::new_with_size(JIT_ARENA_BYTES).map_err(|e| cg(&e))?;
    jb.memory_provider(Box::new(arena));
    for (name, ptr) in runtime::symbols().into_iter().chain(extra.iter().copied()) {
        jb.symbol(name, ptr);
    }
    let mut module = JITModule::new(jb);
    let lowered = emit::lower(&mut module, program, kernel);
    let (c_abi, buffer) = match lowered {
        Ok(ids) => ids,
        Err(e) => {
            // SAFETY: nothing was finalized; no pointer into the module exists.
            unsafe { module.free_memory() };
            return Err(e);
        }
    };
    if let Err(e) = module.finalize_definitions() {
        // SAFETY: as above.
        unsafe { module.free_memory() };
        return Err(cg(&e));
    }
    let c_ptr = c_abi.map_or(0, |id| module.get_finalized_function(id) as usize);
    let buf_ptr = module.get_finalized_function(buffer) as usize;
    Ok((
        Code {
            module: Some(module),
        },
        (c_ptr, buf_ptr),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_functions_cross_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<HostFunction>();
    }
}
