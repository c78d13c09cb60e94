//! A reusable LLVM optimization pipeline (the C++ half is `pipeline.cpp`, which says why).
//!
//! Setting up LLVM's new pass manager (a PassBuilder with every analysis registered) costs
//! about as much as optimizing a small kernel, so a [`Backend`] does it once per thread,
//! architecture and optimization level. Code generation still builds LLVM's legacy pass
//! manager per module: NVPTX's AsmPrinter is not safe to reuse across modules. A `Backend`
//! owns its [`TargetMachine`] and is deliberately neither `Send` nor `Sync`: it lives in a
//! thread-local cache (see `super::with_backend`).

use super::LowerError;
use inkwell::llvm_sys::prelude::LLVMModuleRef;
use inkwell::llvm_sys::target_machine::LLVMTargetMachineRef;
use inkwell::module::Module;
use inkwell::targets::{FileType, TargetMachine};
use std::ffi::c_void;
use std::marker::PhantomData;

unsafe extern "C" {
    fn pydevice_optimizer_new(tm: LLVMTargetMachineRef, opt_level: u32) -> *mut c_void;
    fn pydevice_optimizer_run(handle: *mut c_void, module: LLVMModuleRef);
    fn pydevice_optimizer_free(handle: *mut c_void);
}

/// A target machine with its optimization pipeline, built once.
pub(crate) struct Backend {
    optimizer: *mut c_void,
    // Dropped after the optimizer, which points into it.
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
            machine,
            _not_send: PhantomData,
        }
    }

    /// The target machine the pipeline was built for.
    pub(crate) fn machine(&self) -> &TargetMachine {
        &self.machine
    }

    /// Runs the optimization pipeline on `module` (which must verify).
    pub(crate) fn optimize(&self, module: &Module<'_>) {
        // SAFETY: the optimizer is live; it clears its analyses after the run, so nothing
        // in it refers to `module` afterwards.
        unsafe { pydevice_optimizer_run(self.optimizer, module.as_mut_ptr()) }
    }

    /// Generates PTX for `module`.
    pub(crate) fn emit_ptx(&self, module: &Module<'_>) -> Result<String, LowerError> {
        let buf = self
            .machine
            .write_to_memory_buffer(module, FileType::Assembly)
            .map_err(|e| LowerError::Llvm(e.to_string()))?;
        Ok(String::from_utf8_lossy(buf.as_slice()).into_owned())
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        // SAFETY: the handle came from pydevice_optimizer_new and is freed exactly once,
        // before the target machine (a field dropped after this).
        unsafe { pydevice_optimizer_free(self.optimizer) }
    }
}
