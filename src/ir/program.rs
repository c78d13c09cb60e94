//! Programs and functions: what one specialization holds, and the symbols and options it shares with the back ends.

use super::*;

/// One specialization: an entry and everything it calls.
#[derive(Clone, Debug)]
pub struct Program {
    /// Every instantiated function; callees come before their callers.
    pub functions: Arena<Function>,
    /// The function that was asked for.
    pub entry: Handle<Function>,
    /// Options of the entry that apply to the whole program.
    pub options: ProgramOptions,
    /// The source, for line information and run-time error reports.
    pub file: crate::diag::SourceFile,
    /// `Some(sm)` when `target(...)` conditions were decided for architecture `sm` (90 for
    /// sm_90): the program is then valid for that architecture only.
    pub target_sm: Option<u32>,
    /// Whether the program synchronizes the whole grid (`cg.this_grid().sync()`): the
    /// kernel must then be launched cooperatively (docs/semantics.md §17.4).
    pub cooperative: bool,
    /// Whether the program uses the block's split barrier (`cg.barrier_arrive`): the kernel
    /// then initializes it on entry (docs/semantics.md §17.5).
    pub split_barrier: bool,
    /// Whether the program uses an instruction only sm_90a has (`wgmma`, `setmaxnreg`,
    /// §18.4): compiled for sm_90, its PTX then targets sm_90a.
    pub arch_specific: bool,
    /// The CUDA C++ definitions of the `extern` functions that stand for `jit.thrust.*`
    /// calls (`crate::cccl`), one per distinct symbol, in the order first called.
    pub cuda_shims: Vec<String>,
}

/// The value of [`Program::target_sm`] (and of the architecture a program is specialized
/// for) that stands for the host: `target(is_host)` holds there, `is_device` and every
/// `provides(smXX)` / `is_exactly(smXX)` do not.
pub const HOST_TARGET: u32 = 0;

/// Options given on the entry kernel (`@kernel(fastmath=True, ...)`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProgramOptions {
    /// `max_threads=`: emitted as `.maxntid`.
    pub max_threads: Option<u32>,
    /// `min_blocks=`: emitted as `.minnctapersm`.
    pub min_blocks: Option<u32>,
    /// numba's `max_registers=`: emitted as `.maxnreg`.
    pub max_registers: Option<u32>,
    /// Fast, less accurate floating point (approximate division and square root, flushing
    /// denormals to zero, reassociation).
    pub fastmath: bool,
    /// `contract=False`: no float multiplication is fused with the addition or subtraction
    /// that uses it. By default (false here) the program's own float32/float64 `+ - *` may be
    /// contracted into one `fma` (one rounding), as nvcc's default `-fmad=true` (§3.13).
    pub no_contract: bool,
    /// Source line information in the PTX (`.loc`).
    pub lineinfo: bool,
    /// `debug=True`: full DWARF (subprograms, line tables, local variables) for cuda-gdb,
    /// compiled at -O0; the runtime JIT-compiles it with debug information.
    pub debug: bool,
    /// Check every array index; an out-of-range access is skipped and reported.
    pub bounds_check: bool,
    /// `restrict=True`: the kernel's array parameters do not overlap when one is written
    /// (CUDA C++'s `__restrict__` on every pointer parameter); read-only ones are read
    /// through the non-coherent cache (`ld.global.nc`), docs/semantics.md §12.
    pub restrict: bool,
    /// `assertions=False`: `assert` statements are compiled out (not evaluated).
    pub skip_assertions: bool,
    /// `cluster=(x, y, z)` (sm_90): the thread block cluster shape the kernel must be
    /// launched with, emitted as `.explicitcluster` and `.reqnctapercluster x, y, z`.
    pub cluster: Option<[u32; 3]>,
}

/// The device global where a bounds-checked kernel records its first out-of-range access:
/// a `uint64` that is 0 while none happened, else `line << 32 | column` of the access; a
/// failed `assert` or a `raise` records `1 << 63 | line << 32 | column` there (the first
/// error of the launch wins), and the thread that recorded it fills [`ERROR_INFO_SYMBOL`].
pub const BOUNDS_ERROR_SYMBOL: &str = "__pyd_bounds_error";

/// The device global, present in modules with `assert` or `raise`, that the thread whose
/// error won [`BOUNDS_ERROR_SYMBOL`] fills: [`ERROR_INFO_WORDS`] `uint64`s, the first three
/// `thread_idx.x | thread_idx.y << 32`, `thread_idx.z | block_idx.x << 32`,
/// `block_idx.y | block_idx.z << 32`, then the NUL-terminated file name followed by the
/// NUL-terminated message (truncated to fit).
pub const ERROR_INFO_SYMBOL: &str = "__pyd_error_info";

/// The size of [`ERROR_INFO_SYMBOL`] in `uint64`s.
pub const ERROR_INFO_WORDS: usize = 32;

/// The bit of an error word that marks an `assert`/`raise` (not an out-of-range index).
pub const RAISE_BIT: u64 = 1 << 63;

/// What a function is to the outside.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// `@kernel`: launched from the host.
    Kernel,
    /// `@func`: called from device code.
    Device,
}

/// A local variable (parameters are locals too).
#[derive(Clone, Debug)]
pub struct Local {
    /// The Python name (hidden compiler temporaries start with `$`).
    pub name: String,
    /// Its one type.
    pub ty: Type,
}

/// A function instantiated for concrete parameter types.
#[derive(Clone, Debug)]
pub struct Function {
    /// The Python name.
    pub name: String,
    /// The symbol in PTX: the Python name for kernels and interoperable functions,
    /// a mangled name otherwise.
    pub symbol: String,
    /// Kernel or device function.
    pub kind: FunctionKind,
    /// Whether the symbol is visible to other languages (`interop=True`).
    pub interop: bool,
    /// Declared `extern`: defined in another language (CUDA C++) and linked in later; it has
    /// no locals but its parameters and no body, and is always `interop`.
    pub external: bool,
    /// Made by an IR expansion (`ir::expand`), not written by the program: a helper such as
    /// Smith's complex division. Its floating-point operations round one by one (never
    /// contracted into a fused multiply-add, whatever the program's `contract` option).
    pub expansion: bool,
    /// Locals; the first `params` of them are the parameters in order.
    pub locals: Arena<Local>,
    /// Number of parameters.
    pub params: usize,
    /// The return type (`None` for kernels).
    pub ret: Type,
    /// Expressions.
    pub exprs: Arena<Expr>,
    /// Type of each expression, parallel to `exprs`.
    pub types: Vec<Type>,
    /// The body.
    pub body: Block,
    /// Where the `def` is.
    pub span: Span,
}

impl Program {
    /// For each function (indexed like `functions`): whether it draws random numbers
    /// (`rand`/`randn`), itself or through a callee. Such functions take the thread's
    /// generator state, and a kernel that does takes the launch's seed.
    pub fn uses_random(&self) -> Vec<bool> {
        let mut out = vec![false; self.functions.len()];
        // Callees come before their callers, so one pass suffices but for recursion: repeat
        // until nothing changes.
        loop {
            let mut changed = false;
            for (h, f) in self.functions.iter() {
                if out[h.index()] {
                    continue;
                }
                let uses = f.exprs.iter().any(|(_, e)| match e {
                    Expr::Intrinsic(
                        Intrinsic::Rand
                        | Intrinsic::Randn
                        | Intrinsic::RandSeed
                        | Intrinsic::RandThread
                        | Intrinsic::RandCall,
                        _,
                    ) => true,
                    Expr::Call(callee, _) => out.get(callee.index()).copied().unwrap_or(false),
                    _ => false,
                });
                out[h.index()] = uses;
                changed |= uses;
            }
            if !changed {
                return out;
            }
        }
    }
}

impl Function {
    /// The type of an expression.
    pub fn ty(&self, e: Handle<Expr>) -> &Type {
        &self.types[e.index()]
    }

    /// The parameters' handles.
    pub fn param_locals(&self) -> impl Iterator<Item = Handle<Local>> + '_ {
        (0..self.params).map(Handle::new)
    }
}
