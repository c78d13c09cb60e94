//! Reusable LLVM pipelines (the C++ half is `pipeline.cpp`, which says why each is safe).
//!
//! For a module holding a single function that calls nothing (most kernels before any
//! helper is inlined: `vector_add`, `saxpy`), the optimizer skips the interprocedural part
//! of LLVM's pipeline; see [`Pipeline`].
//!
//! Setting up LLVM's new pass manager (a PassBuilder with every analysis registered) costs
//! about as much as optimizing a small kernel, and assembling the legacy code-generation pass
//! manager costs about as much as generating its PTX; so a [`Backend`] builds both once per
//! thread, architecture and optimization level and runs them on module after module.
//!
//! The code generator has one hazard: NVPTX's AsmPrinter keys state by `Function*` and never
//! clears it. A [`Backend`] therefore keeps every module it generated code for alive
//! ([`Detached`]) until it replaces its code generator, which it does every
//! [`MODULES_PER_CODEGEN`] modules, so no function address is reused while the old code
//! generator could still match it. A `Backend` owns its [`TargetMachine`] and is deliberately
//! neither `Send` nor `Sync`: it lives in a thread-local cache (see `super::with_backend`).

use super::LowerError;
use inkwell::context::Context;
use inkwell::llvm_sys::core::{LLVMContextDispose, LLVMDisposeModule};
use inkwell::llvm_sys::prelude::{LLVMContextRef, LLVMModuleRef};
use inkwell::llvm_sys::target_machine::LLVMTargetMachineRef;
use inkwell::module::Module;
use inkwell::targets::TargetMachine;
use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::marker::PhantomData;

unsafe extern "C" {
    fn pydevice_optimizer_new(tm: LLVMTargetMachineRef, opt_level: u32) -> *mut c_void;
    fn pydevice_optimizer_run(handle: *mut c_void, module: LLVMModuleRef, allow_leaf: i32) -> i32;
    fn pydevice_optimizer_free(handle: *mut c_void);
    fn pydevice_codegen_new(tm: LLVMTargetMachineRef) -> *mut c_void;
    fn pydevice_codegen_run(
        handle: *mut c_void,
        module: LLVMModuleRef,
        text: *mut *const c_char,
        len: *mut usize,
    );
    fn pydevice_codegen_free(handle: *mut c_void);
    fn pydevice_forget_module(module: LLVMModuleRef);
}

/// Which optimization pipeline a module gets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pipeline {
    /// LLVM's per-module pipeline at the back end's level; for a *leaf module* (one defined
    /// function, no calls but to intrinsics, no global variables) the same pipeline less its
    /// interprocedural stages, which have nothing to do there (pipeline.cpp says which).
    Auto,
    /// Always the whole per-module pipeline (tests compare the two).
    #[cfg_attr(not(test), allow(dead_code))]
    Full,
}

#[cfg(test)]
thread_local! {
    /// How many modules this thread optimized with the leaf pipeline (for tests).
    pub(crate) static LEAF_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many modules one code generator serves before it is replaced (and the modules it
/// served are freed). Assembling a code generator costs ~0.4 ms; a small kernel's module,
/// with its context, keeps a few hundred KiB alive until then.
pub(crate) const MODULES_PER_CODEGEN: usize = 32;

/// An LLVM module and the context it lives in, owned through raw handles so that it can
/// outlive the compile that built it.
pub(crate) struct Detached {
    module: LLVMModuleRef,
    context: LLVMContextRef,
}

impl Detached {
    /// Takes ownership of `module`; [`ModuleWithoutContext::with_context`] completes it with
    /// the context it was created in (two steps, because the module borrows the context).
    pub(crate) fn module(module: Module<'_>) -> ModuleWithoutContext {
        let module_ref = module.as_mut_ptr();
        std::mem::forget(module);
        ModuleWithoutContext(module_ref)
    }
}

/// The first half of a [`Detached`]: a module whose owner was forgotten.
#[must_use = "complete it with `with_context`, or the module leaks"]
pub(crate) struct ModuleWithoutContext(LLVMModuleRef);

impl ModuleWithoutContext {
    /// Takes ownership of `context`, which must be the context the module was created in,
    /// holding no other module.
    pub(crate) fn with_context(self, context: Context) -> Detached {
        let context_ref = context.raw();
        std::mem::forget(context);
        Detached {
            module: self.0,
            context: context_ref,
        }
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        // SAFETY: both handles are owned here (their inkwell owners were forgotten in `new`),
        // and the module is disposed before its context.
        unsafe {
            LLVMDisposeModule(self.module);
            LLVMContextDispose(self.context);
        }
    }
}

/// A code generator and the modules it has seen (which must outlive it).
struct CodeGen {
    handle: *mut c_void,
    seen: Vec<Detached>,
}

impl Drop for CodeGen {
    fn drop(&mut self) {
        // SAFETY: the handle came from pydevice_codegen_new and is freed once, before the
        // modules it has seen (dropped with `seen` after this).
        unsafe { pydevice_codegen_free(self.handle) }
    }
}

/// A target machine with its optimization and code-generation pipelines, built once.
pub(crate) struct Backend {
    optimizer: *mut c_void,
    codegen: RefCell<Option<CodeGen>>,
    // Dropped after the optimizer and the code generator, which point into it.
    machine: TargetMachine,
    // Raw LLVM handles: keep the backend on the thread that built it.
    _not_send: PhantomData<*mut ()>,
}

impl Backend {
    /// Builds the optimization pipeline for `machine` at `opt_level` (0 to 3).
    pub(crate) fn new(machine: TargetMachine, opt_level: u8) -> Backend {
        // SAFETY: the target machine is live; the optimizer keeps a pointer to it, and
        // `Backend` frees the optimizer before dropping `machine`.
        let optimizer =
            unsafe { pydevice_optimizer_new(machine.as_mut_ptr(), u32::from(opt_level.min(3))) };
        Backend {
            optimizer,
            codegen: RefCell::new(None),
            machine,
            _not_send: PhantomData,
        }
    }

    /// The target machine the pipelines were built for.
    pub(crate) fn machine(&self) -> &TargetMachine {
        &self.machine
    }

    /// Runs the optimization pipeline on `module` (which must verify); says whether it was
    /// the leaf pipeline.
    pub(crate) fn optimize(&self, module: &Module<'_>, pipeline: Pipeline) -> bool {
        let allow_leaf = i32::from(pipeline == Pipeline::Auto);
        // SAFETY: the optimizer is live; it clears its analyses after the run, so nothing
        // in it refers to `module` afterwards.
        let leaf =
            unsafe { pydevice_optimizer_run(self.optimizer, module.as_mut_ptr(), allow_leaf) != 0 };
        #[cfg(test)]
        LEAF_RUNS.with(|n| n.set(n.get() + usize::from(leaf)));
        leaf
    }

    /// Forgets what the target cached about `module`, which was optimized but will not be
    /// code-generated and is about to be freed.
    pub(crate) fn forget(&self, module: &Module<'_>) {
        // SAFETY: the module is live; this only erases a cache entry keyed by its address.
        unsafe { pydevice_forget_module(module.as_mut_ptr()) }
    }

    /// Generates PTX for `module` (optimized). The backend keeps the module alive as long
    /// as the code generator that saw it.
    pub(crate) fn emit_ptx(&self, module: Detached) -> Result<String, LowerError> {
        let mut slot = self.codegen.borrow_mut();
        if slot
            .as_ref()
            .is_some_and(|c| c.seen.len() >= MODULES_PER_CODEGEN)
        {
            *slot = None;
        }
        if slot.is_none() {
            // SAFETY: the target machine outlives the code generator (field order above).
            let handle = unsafe { pydevice_codegen_new(self.machine.as_mut_ptr()) };
            if handle.is_null() {
                return Err(LowerError::Llvm(
                    "the NVPTX target cannot emit assembly".into(),
                ));
            }
            *slot = Some(CodeGen {
                handle,
                seen: Vec::with_capacity(MODULES_PER_CODEGEN),
            });
        }
        let Some(codegen) = slot.as_mut() else {
            return Err(LowerError::Llvm("no code generator".into()));
        };
        let mut text: *const c_char = std::ptr::null();
        let mut len = 0usize;
        // SAFETY: the handle and module are live; the text pointer is valid until the next
        // run, and is copied before then.
        let ptx = unsafe {
            pydevice_codegen_run(codegen.handle, module.module, &mut text, &mut len);
            if text.is_null() {
                String::new()
            } else {
                let bytes = std::slice::from_raw_parts(text.cast::<u8>(), len);
                String::from_utf8_lossy(bytes).into_owned()
            }
        };
        codegen.seen.push(module);
        Ok(ptx)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        // The code generator (and the modules it saw) first, then the optimizer; the target
        // machine, a field, is dropped after this.
        self.codegen.get_mut().take();
        // SAFETY: the handle came from pydevice_optimizer_new and is freed exactly once.
        unsafe { pydevice_optimizer_free(self.optimizer) }
    }
}
