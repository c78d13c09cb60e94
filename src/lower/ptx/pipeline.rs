//! Reusable LLVM pipelines (the C++ half is `pipeline.cpp`, which says why each is safe).
//!
//! For a module holding a single function that calls nothing (most kernels before any
//! helper is inlined: `vector_add`, `saxpy`), the optimizer skips the interprocedural part
//! of LLVM's pipeline; if that function has no loop either, it runs a straight-line pipeline
//! (one round of the function simplification passes) and code generation runs at `-O2` (see
//! [`Pipeline`], [`Shape`]). Every fixture's PTX is checked against the whole pipeline's.
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
//! generator could still match it. PTX compiles also share an LLVM context, a fresh one
//! every [`MODULES_PER_CODEGEN`] modules; each module holds a share of its context, which
//! is freed with the last of them. A `Backend` owns its [`TargetMachine`] and is deliberately
//! neither `Send` nor `Sync`: it lives in a thread-local cache (see `super::with_backend`).

use super::LowerError;
use inkwell::context::Context;
use inkwell::llvm_sys::core::{
    LLVMContextSetDiscardValueNames, LLVMDisposeModule, LLVMGetFirstGlobal,
};
use inkwell::llvm_sys::prelude::LLVMModuleRef;
use inkwell::llvm_sys::target_machine::LLVMTargetMachineRef;
use inkwell::module::Module;
use inkwell::targets::TargetMachine;
use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::mpsc::Receiver;

unsafe extern "C" {
    fn pydevice_optimizer_new(tm: LLVMTargetMachineRef, opt_level: u32) -> *mut c_void;
    fn pydevice_optimizer_run(handle: *mut c_void, module: LLVMModuleRef, allow_leaf: i32) -> i32;
    fn pydevice_optimizer_free(handle: *mut c_void);
    fn pydevice_codegen_new(tm: LLVMTargetMachineRef, straight_line: i32) -> *mut c_void;
    fn pydevice_codegen_run(
        handle: *mut c_void,
        module: LLVMModuleRef,
        text: *mut *const c_char,
        len: *mut usize,
    );
    fn pydevice_codegen_free(handle: *mut c_void);
    fn pydevice_forget_module(module: LLVMModuleRef);
    fn pydevice_register_passes();
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

/// Which pipeline the optimizer chose for a module (see pipeline.cpp).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// LLVM's whole per-module pipeline; code generation at the back end's level.
    Full,
    /// A leaf module with a loop: the leaf pipeline; code generation at the back end's level.
    Leaf,
    /// A loop-free leaf module: the leaf pipeline less its loop and vectorization stages,
    /// and code generation at `-O2` at most, whose only difference from `-O3` (EarlyCSE
    /// instead of GVN among the IR passes before instruction selection) leaves such
    /// straight-line code unchanged on every fixture (a test compares), without the IR
    /// passes that find nothing in such code (pipeline.cpp's `keep_codegen_pass`).
    StraightLeaf,
}

#[cfg(test)]
thread_local! {
    /// How many modules this thread optimized with the leaf pipeline, and how many of those
    /// were loop-free (for tests).
    pub(crate) static LEAF_RUNS: std::cell::Cell<(usize, usize)> =
        const { std::cell::Cell::new((0, 0)) };
}

#[cfg(test)]
thread_local! {
    /// Tests set this to code-generate loop-free leaf modules with every pass, including
    /// those pipeline.cpp's `keep_codegen_pass` leaves out of them.
    pub(crate) static KEEP_STRAIGHT_LINE_PASSES: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
}

/// Whether code generation skips the IR passes that find nothing in a module of `shape`.
fn skip_straight_line_passes(shape: Shape) -> bool {
    #[cfg(test)]
    if KEEP_STRAIGHT_LINE_PASSES.with(|k| k.get()) {
        return false;
    }
    shape == Shape::StraightLeaf
}

/// How many modules one code generator serves before it is replaced (and the modules it
/// served are freed). Assembling a code generator costs ~0.4 ms; a small kernel's module,
/// with its context, keeps a few hundred KiB alive until then.
pub(crate) const MODULES_PER_CODEGEN: usize = 32;

/// How many modules one code generator serves at most, counting those freed at once
/// (`Detached::has_globals`): a bound on whatever else a code generator might accumulate.
const MODULES_PER_CODEGEN_AT_MOST: usize = 1024;

/// How many modules one LLVM context serves before the back end starts a fresh one. Sharing
/// a context saves creating and destroying one per compile (~1.5% of a small kernel's) and
/// lets later modules find their types and constants already made.
const MODULES_PER_CONTEXT: usize = MODULES_PER_CODEGEN;

/// An LLVM module and (a share of) the context it lives in, owned through a raw handle so
/// that it can outlive the compile that built it.
pub(crate) struct Detached {
    module: LLVMModuleRef,
    // Dropped (the context freed with its last module) after `drop` disposes the module.
    _context: Rc<Context>,
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

impl Detached {
    /// Whether the module has global variables. Only a module with global variables can
    /// leave state in NVPTX's AsmPrinter keyed by one of its functions (`localDecls`, the
    /// shared variables demoted into a function, pipeline.cpp): a module without any is
    /// freed as soon as its PTX is generated, so the next compile reuses its memory while it
    /// is still in the CPU's caches, instead of the code generator keeping it until it is
    /// replaced. (Its other per-module state, NVPTX's annotation cache and the machine
    /// functions, is cleared at the end of each module.)
    fn has_globals(&self) -> bool {
        // SAFETY: the module is live (owned here).
        !unsafe { LLVMGetFirstGlobal(self.module) }.is_null()
    }
}

/// The first half of a [`Detached`]: a module whose owner was forgotten.
#[must_use = "complete it with `with_context`, or the module leaks"]
pub(crate) struct ModuleWithoutContext(LLVMModuleRef);

impl ModuleWithoutContext {
    /// Keeps a share of `context`, which must be the context the module was created in.
    pub(crate) fn with_context(self, context: Rc<Context>) -> Detached {
        Detached {
            module: self.0,
            _context: context,
        }
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        // SAFETY: the module is owned here (its inkwell owner was forgotten), and its context
        // is alive: this holds a share of it, released only after this.
        unsafe { LLVMDisposeModule(self.module) }
    }
}

/// A code generator and the modules it has seen that must outlive it.
struct CodeGen {
    handle: *mut c_void,
    /// The modules with global variables it generated code for (see `Detached::has_globals`).
    seen: Vec<Detached>,
    /// How many modules it generated code for.
    served: usize,
}

impl Drop for CodeGen {
    fn drop(&mut self) {
        // SAFETY: the handle came from pydevice_codegen_new and is freed once, before the
        // modules it has seen (dropped with `seen` after this).
        unsafe { pydevice_codegen_free(self.handle) }
    }
}

/// Makes a target machine (for [`Backend::new`]'s `-O3` code generator, on first use).
pub(crate) type MakeMachine = Box<dyn Fn() -> Result<TargetMachine, LowerError>>;

/// A target machine made when first needed.
struct LazyMachine {
    make: MakeMachine,
    machine: std::cell::OnceCell<TargetMachine>,
}

impl LazyMachine {
    fn get(&self) -> Result<&TargetMachine, LowerError> {
        if let Some(m) = self.machine.get() {
            return Ok(m);
        }
        let m = (self.make)()?;
        Ok(self.machine.get_or_init(|| m))
    }
}

/// A target machine with its optimization and code-generation pipelines, built once.
pub(crate) struct Backend {
    optimizer: *mut c_void,
    /// The code generator of `full` (or of `machine` when there is no `full`); the one of
    /// `machine` for straight-line leaves, without the passes that find nothing in them
    /// (pipeline.cpp's `keep_codegen_pass`); and (tests only) one of `machine` with them.
    codegens: [RefCell<Option<CodeGen>>; 3],
    // Dropped after the optimizer and the code generators, which point into them.
    /// The optimizer's target machine (its passes do not depend on the machine's
    /// code-generation level); with `full`, it generates only straight-line leaves (`-O2`).
    machine: TargetMachine,
    /// At `-O3`: the target at code-generation level `-O3`, for every other module, created
    /// when the first such module needs it. Creating an NVPTX target machine costs about a
    /// quarter of a small kernel's first compile (its `TargetLowering` tables), and a
    /// process that compiles only loop-free kernels never needs this one.
    full: Option<LazyMachine>,
    /// The context that PTX compiles create their modules in, and how many it has served.
    context: RefCell<(Rc<Context>, usize)>,
    /// The code generator of straight-line leaves (`codegens[1]`) while another thread
    /// assembles it ([`LeanCodegenSetup`]): its handle arrives here.
    pending_lean: RefCell<Option<(u32, Receiver<usize>)>>,
    // Raw LLVM handles: keep the backend on the thread that built it.
    _not_send: PhantomData<*mut ()>,
}

impl Backend {
    /// Builds the optimization pipeline for `machine` at `opt_level` (0 to 3). `full`, if
    /// given, makes the same target with code generation at `-O3`, for the modules that are
    /// not straight-line leaves (which `machine`, at `-O2`, then generates alone).
    pub(crate) fn new(machine: TargetMachine, full: Option<MakeMachine>, opt_level: u8) -> Backend {
        // SAFETY: the target machine is live; the optimizer keeps a pointer to it, and
        // `Backend` frees the optimizer before dropping `machine`.
        let optimizer =
            unsafe { pydevice_optimizer_new(machine.as_mut_ptr(), u32::from(opt_level.min(3))) };
        Backend {
            optimizer,
            codegens: [RefCell::new(None), RefCell::new(None), RefCell::new(None)],
            machine,
            full: full.map(|make| LazyMachine {
                make,
                machine: std::cell::OnceCell::new(),
            }),
            context: RefCell::new((ptx_context(), 0)),
            pending_lean: RefCell::new(None),
            _not_send: PhantomData,
        }
    }

    /// Takes the code generator for straight-line leaves from `setup`, which assembles it
    /// for this back end's target machine on its own thread (see [`LeanCodegenSetup`]).
    /// Returns the thread, for a caller that must not exit before it ends.
    pub(crate) fn take_lean_codegen_from(
        &self,
        setup: LeanCodegenSetup,
    ) -> std::thread::JoinHandle<()> {
        *self.pending_lean.borrow_mut() = Some((std::process::id(), setup.handle));
        // From here on the back end waits for the handle before freeing the machine.
        let _ = setup.machine.send(self.machine.as_mut_ptr() as usize);
        setup.thread
    }

    /// The code generator another thread assembled for straight-line leaves, if one was
    /// asked for and has not been taken yet (waits for it).
    fn take_pending_lean(&self) -> Option<*mut c_void> {
        let (pid, receive) = self.pending_lean.borrow_mut().take()?;
        if !super::started_here(pid) {
            // Forked while the code generator was being assembled: the assembling thread is
            // not in this process. Make another when needed.
            std::mem::forget(receive);
            return None;
        }
        let handle = receive.recv().ok()? as *mut c_void;
        (!handle.is_null()).then_some(handle)
    }

    /// Waits for the code generator another thread is assembling for this back end, if any,
    /// and keeps it for the first straight-line leaf: afterwards no thread but the caller's
    /// uses the back end's LLVM objects. A no-op once done.
    pub(crate) fn finish_setup(&self) {
        if self.pending_lean.borrow().is_none() {
            return;
        }
        let Some(handle) = self.take_pending_lean() else {
            return;
        };
        let mut slot = self.codegens[1].borrow_mut();
        if slot.is_none() {
            *slot = Some(CodeGen {
                handle,
                seen: Vec::with_capacity(MODULES_PER_CODEGEN),
                served: 0,
            });
        } else {
            // SAFETY: the handle came from pydevice_codegen_new and was never used.
            unsafe { pydevice_codegen_free(handle) }
        }
    }

    /// The context for a new PTX compile's module: shared with up to
    /// [`MODULES_PER_CONTEXT`] modules, and set to discard value names (PTX never shows
    /// them, and LLVM otherwise spends ~4% of a small kernel's compile naming SROA's pieces).
    pub(crate) fn context(&self) -> Rc<Context> {
        let mut slot = self.context.borrow_mut();
        if slot.1 >= MODULES_PER_CONTEXT {
            *slot = (ptx_context(), 0);
        }
        slot.1 += 1;
        Rc::clone(&slot.0)
    }

    /// The target machine the pipelines were built for.
    pub(crate) fn machine(&self) -> &TargetMachine {
        &self.machine
    }

    /// Runs the optimization pipeline on `module` (which must verify); says which.
    pub(crate) fn optimize(&self, module: &Module<'_>, pipeline: Pipeline) -> Shape {
        let allow_leaf = i32::from(pipeline == Pipeline::Auto);
        // SAFETY: the optimizer is live; it clears its analyses after the run, so nothing
        // in it refers to `module` afterwards.
        let shape = match unsafe {
            pydevice_optimizer_run(self.optimizer, module.as_mut_ptr(), allow_leaf)
        } {
            2 => Shape::StraightLeaf,
            1 => Shape::Leaf,
            _ => Shape::Full,
        };
        #[cfg(test)]
        LEAF_RUNS.with(|n| {
            let (leaves, straight) = n.get();
            n.set((
                leaves + usize::from(shape != Shape::Full),
                straight + usize::from(shape == Shape::StraightLeaf),
            ))
        });
        shape
    }

    /// Forgets what the target cached about `module`, which was optimized but will not be
    /// code-generated and is about to be freed.
    pub(crate) fn forget(&self, module: &Module<'_>) {
        // SAFETY: the module is live; this only erases a cache entry keyed by its address.
        unsafe { pydevice_forget_module(module.as_mut_ptr()) }
    }

    /// Generates PTX for `module`, optimized into `shape`. The backend keeps the module
    /// alive as long as the code generator that saw it.
    pub(crate) fn emit_ptx(&self, module: Detached, shape: Shape) -> Result<String, LowerError> {
        let lean = skip_straight_line_passes(shape);
        let (machine, mut slot) = match (&self.full, shape) {
            (_, Shape::StraightLeaf) if lean => (&self.machine, self.codegens[1].borrow_mut()),
            (None, _) => (&self.machine, self.codegens[0].borrow_mut()),
            (Some(_), Shape::StraightLeaf) => (&self.machine, self.codegens[2].borrow_mut()),
            (Some(full), _) => (full.get()?, self.codegens[0].borrow_mut()),
        };
        if slot.as_ref().is_some_and(|c| {
            c.seen.len() >= MODULES_PER_CODEGEN || c.served >= MODULES_PER_CODEGEN_AT_MOST
        }) {
            *slot = None;
        }
        if slot.is_none() {
            let prepared = match (&self.full, shape) {
                (_, Shape::StraightLeaf) if lean => self.take_pending_lean(),
                _ => None,
            };
            // SAFETY: the target machine outlives the code generator (field order above).
            let handle = prepared.unwrap_or_else(|| unsafe {
                pydevice_codegen_new(machine.as_mut_ptr(), i32::from(lean))
            });
            if handle.is_null() {
                return Err(LowerError::Llvm(
                    "the NVPTX target cannot emit assembly".into(),
                ));
            }
            *slot = Some(CodeGen {
                handle,
                seen: Vec::with_capacity(MODULES_PER_CODEGEN),
                served: 0,
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
        codegen.served += 1;
        if module.has_globals() {
            codegen.seen.push(module);
        }
        // Else `module` is freed now: see `Detached::has_globals`.
        Ok(ptx)
    }
}

/// A thread that assembles the code generator for straight-line leaves of a back end
/// being made, so that the thread making it and the compile that waits for it need not:
/// assembling it costs about a quarter of a first compile. It starts before the target
/// machine exists and registers LLVM's passes meanwhile (their first registration is ~15%
/// of the assembly); then [`Backend::take_lean_codegen_from`] gives it the machine. It only
/// reads the machine, which nothing writes to while it runs (the optimizer's passes read it
/// too, for the target's cost model); the back end's first code generation waits for the
/// result ([`Backend::emit_ptx`]), as does its `drop`, before the machine is freed.
pub(crate) struct LeanCodegenSetup {
    machine: std::sync::mpsc::Sender<usize>,
    handle: Receiver<usize>,
    thread: std::thread::JoinHandle<()>,
}

impl LeanCodegenSetup {
    /// Starts the thread (`None` if it cannot be started).
    pub(crate) fn start() -> Option<LeanCodegenSetup> {
        let (machine_send, machine) = std::sync::mpsc::channel::<usize>();
        let (send, handle) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("pydevice-codegen-setup".into())
            .spawn(move || {
                // SAFETY: registering passes has no preconditions (LLVM guards it).
                unsafe { pydevice_register_passes() };
                // No machine if the back end could not be made.
                let Ok(machine) = machine.recv() else { return };
                // SAFETY: the back end that owns the machine waits for this handle before
                // freeing it (see above); assembling a code generator only reads it.
                let handle = unsafe { pydevice_codegen_new(machine as LLVMTargetMachineRef, 1) };
                let _ = send.send(handle as usize);
            })
            .ok()?;
        Some(LeanCodegenSetup {
            machine: machine_send,
            handle,
            thread,
        })
    }

    /// Gives up (no back end was made): the thread ends after registering the passes; it is
    /// returned for a caller that must not exit before then.
    pub(crate) fn abandon(self) -> std::thread::JoinHandle<()> {
        self.thread
    }
}

/// A fresh context that discards value names, with pydevice's diagnostic handler.
fn ptx_context() -> Rc<Context> {
    let context = Context::create();
    // SAFETY: the context is live; this only sets a flag on it.
    unsafe { LLVMContextSetDiscardValueNames(context.raw(), 1) };
    install_diagnostic_handler(&context);
    Rc::new(context)
}

/// Errors LLVM reported through a context's diagnostic handler, with the context's address,
/// until [`take_llvm_errors`] collects them.
static LLVM_ERRORS: std::sync::Mutex<Vec<(usize, String)>> = std::sync::Mutex::new(Vec::new());

/// pydevice's handler of LLVM's diagnostics. LLVM's default prints every warning and remark
/// to stderr (the optimizer's "loop not unrolled: the optimizer was unable to perform the
/// requested transformation", with no Python source location, which the user cannot act on)
/// and ends the process on an error. Here warnings, remarks and notes are dropped, and errors
/// are kept for [`take_llvm_errors`], which turns them into a `LowerError`.
extern "C" fn on_llvm_diagnostic(
    info: inkwell::llvm_sys::prelude::LLVMDiagnosticInfoRef,
    context: *mut c_void,
) {
    use inkwell::llvm_sys::LLVMDiagnosticSeverity;
    use inkwell::llvm_sys::core::{
        LLVMDisposeMessage, LLVMGetDiagInfoDescription, LLVMGetDiagInfoSeverity,
    };
    // SAFETY: LLVM passes a live diagnostic for the duration of the call.
    if unsafe { LLVMGetDiagInfoSeverity(info) } != LLVMDiagnosticSeverity::LLVMDSError {
        return;
    }
    // SAFETY: as above; the description is a message LLVM allocated, disposed of here.
    let text = unsafe {
        let d = LLVMGetDiagInfoDescription(info);
        let t = std::ffi::CStr::from_ptr(d).to_string_lossy().into_owned();
        LLVMDisposeMessage(d);
        t
    };
    LLVM_ERRORS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((context as usize, text));
}

/// Routes `context`'s diagnostics to [`on_llvm_diagnostic`].
pub(crate) fn install_diagnostic_handler(context: &Context) {
    // SAFETY: the context is live; the handler is a plain function and its context argument
    // is only used as a key (the context's own address).
    unsafe {
        inkwell::llvm_sys::core::LLVMContextSetDiagnosticHandler(
            context.raw(),
            Some(on_llvm_diagnostic),
            context.raw().cast(),
        )
    }
}

/// The errors LLVM reported for the context at address `context` since the last call (each
/// compile of a thread's back end uses its context alone, so they are that compile's).
pub(crate) fn take_llvm_errors(context: usize) -> Vec<String> {
    let mut all = LLVM_ERRORS.lock().unwrap_or_else(|e| e.into_inner());
    let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|(c, _)| *c == context);
    *all = rest;
    mine.into_iter().map(|(_, t)| t).collect()
}

impl Drop for Backend {
    fn drop(&mut self) {
        // A code generator still being assembled reads the target machine: wait for it.
        if let Some(handle) = self.take_pending_lean() {
            // SAFETY: the handle came from pydevice_codegen_new and was never used.
            unsafe { pydevice_codegen_free(handle) }
        }
        // The code generators (and the modules they saw) first, then the optimizer; the
        // target machines, fields, are dropped after this.
        for codegen in &mut self.codegens {
            codegen.get_mut().take();
        }
        // SAFETY: the handle came from pydevice_optimizer_new and is freed exactly once.
        unsafe { pydevice_optimizer_free(self.optimizer) }
    }
}
