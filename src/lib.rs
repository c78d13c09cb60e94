//! # pydevice
//!
//! A reusable compiler for CUDA SIMT code written in Python — the `cuda.device` dialect of
//! the draft *CUDA Python device* specification — to PTX, with a small runtime to launch it.
//! Frameworks embed it instead of writing their own device compiler.
//!
//! The pipeline, one module per stage, data flowing one way:
//!
//! 1. [`front`] parses Python with ruff's parser and records the module's device functions;
//! 2. [`front::check`] specializes an entry for argument [`types`] and builds the typed [`ir`];
//! 3. [`lower::ptx`] turns the IR into LLVM IR, optimizes it and emits PTX;
//! 4. [`abi`] describes how each parameter is laid out (serializable);
//! 5. [`runtime`] loads PTX through the CUDA driver and launches kernels;
//! 6. [`lower::host`] JIT-compiles a `@func` for the host through Cranelift
//!    ([`Module::host_function`]), since heterogeneous functions run on both sides.
//!
//! Beside them: [`target`] (the [`Arch`] and [`OptLevel`]), [`kernel`] (what a compile
//! produces), [`diag`] and [`toolkit`]. `tests/layers.rs` keeps every import pointing down
//! the order the README's Design section gives; [`ir::validate`] checks the IR between
//! checking and lowering in debug builds.
//!
//! ```
//! use pydevice::{Module, CompileOptions, types::signature::parse_signature};
//!
//! let src = r#"
//! from cuda import device
//!
//! @device.kernel
//! def saxpy(a, x, y, out):
//!     i = device.tid(1)
//!     if i < len(out):
//!         out[i] = a * x[i] + y[i]
//! "#;
//! let module = Module::parse("saxpy.py", src).expect("parses");
//! let (args, _) = parse_signature("float32, float32[::1], float32[::1], float32[::1]").unwrap();
//! let kernel = module.compile("saxpy", &args, &CompileOptions::default()).expect("compiles");
//! assert!(kernel.ptx.contains(".entry saxpy"));
//! assert_eq!(kernel.abi.params.len(), 4);
//! ```
//!
//! A `@func` runs on the host too:
//!
//! ```
//! use pydevice::{Module, HostValue, types::{Scalar, Type}};
//!
//! let src = "from cuda import device\n@device.func\ndef hyp(x: float, y: float) -> float:\n    return (x * x + y * y) ** 0.5\n";
//! let module = Module::parse("hyp.py", src).expect("parses");
//! let f32t = Type::Scalar(Scalar::Float32);
//! let hyp = module.host_function("hyp", &[f32t.clone(), f32t]).expect("compiles");
//! let r = hyp.call(&[HostValue::Float32(3.0), HostValue::Float32(4.0)]).expect("runs");
//! assert_eq!(r.to_string(), "5.0");
//! // The same function through its C ABI pointer:
//! let c: extern "C" fn(f32, f32) -> f32 = unsafe { std::mem::transmute(hyp.as_ptr()) };
//! assert_eq!(c(6.0, 8.0), 10.0);
//! ```
//!
//! Errors are values: [`Diagnostics`] for programs that break the language's rules (rendered
//! like rustc, with the source line), [`lower::ptx::LowerError`] and
//! [`runtime::RuntimeError`] for the rest, all gathered in [`Error`].

pub mod abi;
pub mod diag;
pub mod front;
pub mod ir;
pub mod kernel;
pub mod kernels;
pub mod lower;
pub mod random;
pub mod runtime;
mod stack;
pub mod target;
pub mod toolkit;
pub mod types;

pub use abi::KernelAbi;
pub use diag::{Diagnostic, Diagnostics, SourceFile, Span};
pub use kernel::{CompiledKernel, MultiArchKernel};
pub use lower::host::{HostError, HostFunction, HostValue};
pub use target::{Arch, OptLevel};
pub use types::Type;

use lower::ptx::{Emit, LowerError, PtxOptions};
use serde::{Deserialize, Serialize};
use std::fmt;
use types::promote::Defaults;

/// The spec's `machine_representation()`: the C++ ABI family device code follows when it
/// crosses into CUDA C++ — `"itanium"` on Linux (and other non-Windows hosts), `"msvc"` on
/// Windows. Device and host code can ask too (docs/semantics.md §1.6).
pub fn machine_representation() -> &'static str {
    target::machine_representation()
}

/// Any error of the library.
#[derive(Debug, Clone)]
pub enum Error {
    /// The program is ill-formed.
    Diagnostics(Diagnostics),
    /// The back end failed.
    Lower(LowerError),
    /// Running it failed.
    Runtime(runtime::RuntimeError),
    /// Building or calling host code failed.
    Host(HostError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Diagnostics(d) => write!(f, "{d}"),
            Error::Lower(e) => write!(f, "{e}"),
            Error::Runtime(e) => write!(f, "{e}"),
            Error::Host(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Diagnostics> for Error {
    fn from(d: Diagnostics) -> Self {
        Error::Diagnostics(d)
    }
}
impl From<LowerError> for Error {
    fn from(e: LowerError) -> Self {
        Error::Lower(e)
    }
}
impl From<HostError> for Error {
    fn from(e: HostError) -> Self {
        Error::Host(e)
    }
}
impl From<runtime::RuntimeError> for Error {
    fn from(e: runtime::RuntimeError) -> Self {
        Error::Runtime(e)
    }
}

/// Options for compiling to PTX.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// Target architecture.
    pub arch: Arch,
    /// Optimization level.
    pub opt_level: OptLevel,
    /// The values of the kernel's parameters hinted `ConstExpr` or `ConstExpr[T]`, by
    /// parameter name (docs/semantics.md §5.6). The kernel is specialized for them, as for
    /// its argument types: they are part of the cache key, and the parameters take no
    /// run-time argument (their types are left out of the argument types, and out of the
    /// launch's arguments).
    pub constants: Vec<(String, ConstValue)>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            arch: Arch::DEFAULT,
            opt_level: OptLevel::O3,
            constants: Vec::new(),
        }
    }
}

/// The compile-time value of a parameter hinted `ConstExpr` ([`CompileOptions::constants`]):
/// a Python `bool`, `int` or `float`. A `ConstExpr[T]` parameter converts it to `T` as
/// `T(value)` would, and rejects (E0218) a value of another kind (a float for an integer
/// type, say) or one `T` cannot hold.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum ConstValue {
    /// `True` / `False`.
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
}

impl PartialEq for ConstValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ConstValue::Bool(a), ConstValue::Bool(b)) => a == b,
            (ConstValue::Int(a), ConstValue::Int(b)) => a == b,
            // Bit equality: one NaN is one specialization, 0.0 and -0.0 are two.
            (ConstValue::Float(a), ConstValue::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl Eq for ConstValue {}

impl std::hash::Hash for ConstValue {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::mem::discriminant(self).hash(h);
        match self {
            ConstValue::Bool(b) => b.hash(h),
            ConstValue::Int(i) => i.hash(h),
            ConstValue::Float(f) => f.to_bits().hash(h),
        }
    }
}

impl fmt::Display for ConstValue {
    /// As Python writes it: `True`, `16`, `2.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::Bool(true) => f.write_str("True"),
            ConstValue::Bool(false) => f.write_str("False"),
            ConstValue::Int(i) => write!(f, "{i}"),
            ConstValue::Float(x) => write!(f, "{x:?}"),
        }
    }
}

impl std::str::FromStr for ConstValue {
    type Err = String;
    /// Python's spelling: `True`/`False`, an integer (`16`, `-3`, `0x10`), a float (`2.5`,
    /// `1e-3`, `inf`, `nan`).
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        match t {
            "True" => return Ok(ConstValue::Bool(true)),
            "False" => return Ok(ConstValue::Bool(false)),
            _ => {}
        }
        let (neg, digits) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let int = if let Some(h) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            i128::from_str_radix(&h.replace('_', ""), 16).ok()
        } else if digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') && !digits.is_empty() {
            digits.replace('_', "").parse::<i128>().ok()
        } else {
            None
        };
        if let Some(i) = int {
            return Ok(ConstValue::Int(if neg { -i } else { i }));
        }
        t.parse::<f64>().map(ConstValue::Float).map_err(|_| {
            format!("`{s}` is not a constant (write True, False, an integer or a float)")
        })
    }
}

impl ConstValue {
    fn to_const(self) -> front::consts::Const {
        use front::consts::Const;
        match self {
            ConstValue::Bool(b) => Const::Bool(b),
            ConstValue::Int(i) => Const::Int(i),
            ConstValue::Float(f) => Const::Float(f),
        }
    }
}

impl CompileOptions {
    fn ptx(&self) -> PtxOptions {
        PtxOptions {
            arch: self.arch,
            opt_level: self.opt_level,
        }
    }
}

/// What a module-level function is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryInfo {
    /// The Python name.
    pub name: String,
    /// `true` for `@kernel`, `false` for `@func`.
    pub is_kernel: bool,
    /// Parameter names in order.
    pub params: Vec<String>,
    /// Parameter types from annotations, where every run-time parameter has one (the
    /// `ConstExpr` parameters are left out: they take compile-time values).
    pub annotated: Option<Vec<Type>>,
    /// The parameters hinted `ConstExpr` or `ConstExpr[T]`, which take their values at
    /// compile time ([`CompileOptions::constants`]), in order.
    pub constexpr: Vec<String>,
}

/// A parsed Python module of device code. `Send + Sync`: specialize it from many threads.
#[derive(Debug)]
pub struct Module {
    parsed: front::ParsedModule,
    defaults: Defaults,
    /// [`Module::with_debug_info`]: every kernel compiled as if `debug=True`.
    debug: bool,
}

/// One entry specialized for argument types: the typed IR, ready to lower.
#[derive(Clone, Debug)]
pub struct Specialization {
    program: ir::Program,
}

impl Module {
    /// Compiles every entry specialized from this module for the device as if it were
    /// `@kernel(debug=True)`: full DWARF for cuda-gdb, at -O0, JIT-compiled with debug
    /// information (the CLI's `--debug`). Host functions are not affected.
    pub fn with_debug_info(mut self, on: bool) -> Module {
        self.debug = on;
        self
    }

    /// The declarations a module's header holds: its `interop=True` entries whose parameters
    /// are all annotated (each specialized for its annotations, to learn its result), then the
    /// CUDA C++ functions it declares `extern`. Entries left out for want of annotations are
    /// named in the second list. Shared by the CLI (`pydevice abi --header`) and embedders.
    pub fn interop_functions(
        &self,
    ) -> Result<(Vec<abi::header::FunctionDecl>, Vec<String>), Diagnostics> {
        let module = self;
        let mut out = Vec::new();
        let mut left_out = Vec::new();
        for e in module.entries() {
            if !module.is_interop(&e.name) {
                continue;
            }
            let Some(types) = &e.annotated else {
                left_out.push(e.name.clone());
                continue;
            };
            let spec = module.specialize(&e.name, types)?;
            let program = spec.program();
            let ret = program.functions[program.entry].ret.clone();
            out.push(abi::header::FunctionDecl::new(
                &spec.abi(),
                e.is_kernel,
                ret,
            ));
        }
        out.extend(module.extern_functions());
        Ok((out, left_out))
    }

    /// The whole header of a module (what `pydevice abi FILE.py --header` prints): its
    /// `@struct` types and [`Module::interop_functions`].
    pub fn header(&self, module_name: &str) -> Result<String, Diagnostics> {
        let (functions, _) = self.interop_functions()?;
        Ok(abi::header::header(
            module_name,
            &self.structs(),
            &functions,
        ))
    }

    /// Parses a module; `name` is used in diagnostics.
    pub fn parse(name: &str, source: &str) -> Result<Module, Diagnostics> {
        let parsed = front::parse(SourceFile::new(name, source))?;
        let defaults = parsed.rules().defaults;
        Ok(Module {
            parsed,
            defaults,
            debug: false,
        })
    }

    /// Whether the module is in the numba-cuda dialect (it imports `numba`). Such a module
    /// takes a record argument either by value (`Type::Struct`) or, as numba does, by
    /// reference (`Type::StructRef` in global memory, passed as the record's device address),
    /// so that the kernel's stores reach the caller's record (docs/semantics.md §5.16.1).
    pub fn is_numba(&self) -> bool {
        self.parsed.dialect == front::dialect::Dialect::Numba
    }

    /// The source.
    pub fn file(&self) -> &SourceFile {
        self.parsed.file()
    }

    /// The module's `@kernel` and `@func` functions.
    pub fn entries(&self) -> Vec<EntryInfo> {
        self.parsed
            .functions
            .iter()
            // `extern` declarations are not entries: their bodies are in another language.
            .filter(|f| f.options.external.is_none())
            .filter_map(|f| {
                let kind = f.kind?;
                let def = self.parsed.def(f);
                let params: Vec<_> = def
                    .parameters
                    .posonlyargs
                    .iter()
                    .chain(def.parameters.args.iter())
                    .collect();
                let is_const = |p: &&&ruff_python_ast::ParameterWithDefault| {
                    p.parameter
                        .annotation
                        .as_deref()
                        .is_some_and(|a| self.parsed.const_hint(a).is_some())
                };
                let constexpr: Vec<String> = params
                    .iter()
                    .filter(is_const)
                    .map(|p| p.parameter.name.id.to_string())
                    .collect();
                let annotated = f
                    .signature
                    .clone()
                    .filter(|s| s.len() == params.len())
                    .or_else(|| {
                        params
                            .iter()
                            .filter(|p| !is_const(p))
                            .map(|p| {
                                p.parameter
                                    .annotation
                                    .as_deref()
                                    .and_then(|a| self.parsed.annotation_type(a, self.defaults))
                            })
                            .collect::<Option<Vec<_>>>()
                    });
                Some(EntryInfo {
                    name: f.name.clone(),
                    is_kernel: kind == ir::FunctionKind::Kernel,
                    params: params
                        .iter()
                        .map(|p| p.parameter.name.id.to_string())
                        .collect(),
                    annotated,
                    constexpr,
                })
            })
            .collect()
    }

    /// The module's `extern` declarations (`@device.func(extern=True)`): the CUDA C++
    /// functions its device code calls, as `extern "C" __device__` declarations for a header
    /// ([`abi::header`]), so the C++ that defines them is checked against them.
    pub fn extern_functions(&self) -> Vec<abi::header::FunctionDecl> {
        self.parsed
            .functions
            .iter()
            .filter_map(|f| {
                let ext = f.options.external.as_ref()?;
                let def = self.parsed.def(f);
                let names = def
                    .parameters
                    .posonlyargs
                    .iter()
                    .chain(def.parameters.args.iter())
                    .map(|p| p.parameter.name.id.to_string());
                Some(abi::header::FunctionDecl {
                    symbol: ext.symbol.clone(),
                    kernel: false,
                    params: names.zip(ext.params.iter().cloned()).collect(),
                    ret: ext.ret.clone(),
                })
            })
            .collect()
    }

    /// The module's `@struct` classes, in declaration order.
    pub fn structs(&self) -> Vec<Type> {
        (0..self.parsed.structs.len())
            .filter_map(|i| self.parsed.struct_type(i))
            .map(|t| Type::Struct(Box::new(t.clone())))
            .collect()
    }

    /// Whether entry `name` was declared `interop=True` (an `extern "C"` symbol).
    pub fn is_interop(&self, name: &str) -> bool {
        self.parsed
            .function(name)
            .is_some_and(|(_, f)| f.options.interop)
    }

    /// The type a name stands for in this module: a `@struct` class, a vector type
    /// (`float32x4`) or a number type (`int16`); for building argument types.
    pub fn named_type(&self, name: &str) -> Option<Type> {
        match self.parsed.lookup(name) {
            Some(front::Item::Struct(i)) => self
                .parsed
                .struct_type(i)
                .map(|t| Type::Struct(Box::new(t.clone()))),
            _ => types::signature::parse_type(name).ok(),
        }
    }

    /// Argument types in Numba's notation ([`types::signature::parse_signature`]) where an
    /// item may also name one of the module's types ([`Module::named_type`]): a `@struct`
    /// class (`Particle`), or an array of one (`Particle[:]`, `Particle[:, ::1]`). What the
    /// CLI's `--sig` takes.
    pub fn parse_signature(&self, sig: &str) -> Result<Vec<Type>, String> {
        if let Ok((args, _)) = types::signature::parse_signature(sig) {
            return Ok(args);
        }
        // `void(...)` around the list.
        let inner = sig
            .trim()
            .strip_suffix(')')
            .and_then(|s| {
                ["void(", "none(", "None("]
                    .iter()
                    .find_map(|p| s.trim_start().strip_prefix(p))
            })
            .unwrap_or(sig);
        let mut out = Vec::new();
        for item in split_top_level(inner) {
            let name_of = |s: &str| {
                let s = s.trim();
                (!s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'))
                    .then(|| self.named_type(s))
                    .flatten()
            };
            if let Some((name, dims)) = item.strip_suffix(']').and_then(|s| s.split_once('['))
                && let Some(elem) = name_of(name)
            {
                let dims: Vec<&str> = dims.split(',').map(str::trim).collect();
                if dims.iter().any(|d| !matches!(*d, ":" | "::1")) {
                    return Err(format!("`{item}`: each dimension is `:` or `::1`"));
                }
                let ndim = u8::try_from(dims.len())
                    .map_err(|_| format!("`{item}`: too many dimensions"))?;
                let layout = if dims.last() == Some(&"::1") {
                    types::Layout::C
                } else if ndim > 1 && dims.first() == Some(&"::1") {
                    types::Layout::F
                } else {
                    types::Layout::Any
                };
                out.push(
                    Type::array_of(&elem, ndim, layout)
                        .ok_or_else(|| format!("`{item}`: no array of `{name}`"))?,
                );
            } else if let Some(t) = name_of(item) {
                out.push(t);
            } else {
                out.extend(types::signature::parse_signature(item)?.0);
            }
        }
        Ok(out)
    }

    /// Type-checks every entry whose parameters are all annotated; returns the names of the
    /// entries that could not be checked for lack of annotations.
    pub fn check(&self) -> Result<Vec<String>, Diagnostics> {
        let mut unchecked = Vec::new();
        let mut all: Vec<Diagnostic> = Vec::new();
        for e in self.entries() {
            match &e.annotated {
                // A `ConstExpr` parameter needs a value to specialize for.
                Some(_) if !e.constexpr.is_empty() => unchecked.push(e.name),
                Some(types) => {
                    if let Err(d) = self.specialize(&e.name, types) {
                        for x in d.list {
                            if !all.contains(&x) {
                                all.push(x);
                            }
                        }
                    }
                }
                None => unchecked.push(e.name),
            }
        }
        if all.is_empty() {
            Ok(unchecked)
        } else {
            Err(Diagnostics {
                file: self.file().clone(),
                list: all,
            })
        }
    }

    /// Specializes `entry` for argument types, for the default architecture
    /// ([`Arch::DEFAULT`]); see [`Module::specialize_for`].
    pub fn specialize(&self, entry: &str, args: &[Type]) -> Result<Specialization, Diagnostics> {
        self.specialize_for(entry, args, Arch::DEFAULT)
    }

    /// Specializes `entry` for argument types and a GPU architecture, which decides the
    /// `if target(...)` conditions of the code.
    pub fn specialize_for(
        &self,
        entry: &str,
        args: &[Type],
        arch: Arch,
    ) -> Result<Specialization, Diagnostics> {
        self.specialize_with(entry, args, &[], arch)
    }

    /// Specializes `entry` for argument types, the values of its `ConstExpr` parameters
    /// (by name; `args` leaves those parameters out) and a GPU architecture.
    pub fn specialize_with(
        &self,
        entry: &str,
        args: &[Type],
        constants: &[(String, ConstValue)],
        arch: Arch,
    ) -> Result<Specialization, Diagnostics> {
        self.check_arg_types(entry, args, true)?;
        let constants: Vec<_> = constants
            .iter()
            .map(|(n, v)| (n.clone(), v.to_const()))
            .collect();
        front::check::specialize(
            &self.parsed,
            entry,
            args,
            &constants,
            self.defaults,
            arch.number(),
        )
        .and_then(Specialization::checked)
        .and_then(Specialization::random_state_fits)
        .map(|mut spec| {
            if self.debug {
                spec.program.options.debug = true;
                spec.program.options.lineinfo = true;
            }
            spec
        })
    }

    /// Rejects argument types built through the API that no program could be specialized
    /// for ([`abi::check_type`]), and `None` as a kernel parameter on the device (a kernel
    /// parameter has a value), with E0115 at the entry's name.
    fn check_arg_types(&self, entry: &str, args: &[Type], device: bool) -> Result<(), Diagnostics> {
        let span = self
            .parsed
            .function(entry)
            .map_or(Span::default(), |(_, f)| f.name_span);
        let is_kernel = self
            .parsed
            .function(entry)
            .is_some_and(|(_, f)| f.kind == Some(ir::FunctionKind::Kernel));
        for (i, t) in args.iter().enumerate() {
            let why = match abi::check_type(t) {
                Err(why) => why,
                Ok(()) if device && is_kernel && *t == Type::None => {
                    "a kernel parameter cannot be `None`: it has no value to pass".to_string()
                }
                Ok(()) => continue,
            };
            return Err(Diagnostics {
                file: self.file().clone(),
                list: vec![Diagnostic::error(
                    diag::Code::E0115,
                    span,
                    format!("argument type {} of `{entry}` is invalid: {why}", i + 1),
                )],
            });
        }
        Ok(())
    }

    /// Specializes `entry` for argument types and the host: `target(is_host)` holds,
    /// `is_device` and every `provides(smXX)` do not (docs/semantics.md §16).
    pub fn specialize_host(
        &self,
        entry: &str,
        args: &[Type],
    ) -> Result<Specialization, Diagnostics> {
        self.specialize_host_with(entry, args, &[])
    }

    /// [`Module::specialize_host`] with the values of `entry`'s `ConstExpr` parameters.
    pub fn specialize_host_with(
        &self,
        entry: &str,
        args: &[Type],
        constants: &[(String, ConstValue)],
    ) -> Result<Specialization, Diagnostics> {
        self.check_arg_types(entry, args, false)?;
        let constants: Vec<_> = constants
            .iter()
            .map(|(n, v)| (n.clone(), v.to_const()))
            .collect();
        front::check::specialize(
            &self.parsed,
            entry,
            args,
            &constants,
            self.defaults,
            ir::HOST_TARGET,
        )
        .and_then(Specialization::checked)
    }

    /// Specializes `@func` `entry` for the host and JIT-compiles it to native code.
    pub fn host_function(&self, entry: &str, args: &[Type]) -> Result<HostFunction, Error> {
        self.specialize_host(entry, args)?.to_host()
    }

    /// Specializes `@kernel` `entry` for argument types and JIT-compiles it to run whole on
    /// the CPU ([`runtime::cpu`], docs/semantics.md "CPU back end"). The code is specialized
    /// as for [`Arch::DEFAULT`]: `target(is_device)` holds, as on a GPU.
    pub fn cpu_kernel(&self, entry: &str, args: &[Type]) -> Result<runtime::cpu::CpuKernel, Error> {
        self.specialize(entry, args)?.to_cpu()
    }

    /// Specializes and compiles `entry` to PTX.
    pub fn compile(
        &self,
        entry: &str,
        args: &[Type],
        options: &CompileOptions,
    ) -> Result<CompiledKernel, Error> {
        // LLVM's set-up for this architecture, if this thread has not done it, starts on
        // other threads now and overlaps the front end (see `warm_up`).
        let opt = if self.debug {
            0
        } else {
            options.opt_level.number()
        };
        lower::ptx::prepare(options.arch, opt);
        let compiled = self
            .specialize_with(entry, args, &options.constants, options.arch)
            .map_err(Error::from)
            .and_then(|spec| Ok(spec.to_ptx(options)?));
        if compiled.is_err() {
            // No set-up thread outlives the compile (see `lower::ptx::prepare`).
            lower::ptx::settle(options.arch, opt);
        }
        compiled
    }

    /// Compiles `entry` once per architecture; at load time the runtime picks the variant
    /// for the device ([`MultiArchKernel::select`]).
    pub fn compile_multi(
        &self,
        entry: &str,
        args: &[Type],
        archs: &[Arch],
        opt_level: OptLevel,
    ) -> Result<MultiArchKernel, Error> {
        let mut variants = Vec::new();
        for arch in archs {
            let options = CompileOptions {
                arch: *arch,
                opt_level,
                constants: Vec::new(),
            };
            variants.push(self.compile(entry, args, &options)?);
        }
        variants.sort_by_key(|k| k.arch);
        Ok(MultiArchKernel { variants })
    }
}

/// Starts LLVM's set-up for PTX compiles with `options`' architecture and optimization
/// level (the target machine, the optimizer, the code generator of loop-free kernels) on
/// background threads, unless the calling thread has it already. The next compile for the
/// same architecture and level on a thread that has none (any thread) takes it, waiting for
/// what is not finished, instead of making its own: about 40% of a first compile.
/// [`Module::compile`] does this itself as it starts, so that its front end overlaps the
/// set-up; call this earlier (at start-up, or as the CLI does before specializing) to take
/// more of the set-up off the first compile. The work (about 2 M instructions on other
/// cores, a few MB) is wasted if nothing is then compiled with those options. Kernels with
/// `debug=True` are compiled at `-O0`: warm up with [`OptLevel::O0`] for them.
pub fn warm_up(options: &CompileOptions) {
    lower::ptx::prepare(options.arch, options.opt_level.number());
}

impl Specialization {
    /// The checker's program, validated against the IR's rules ([`ir::validate`]) in debug
    /// builds: a broken rule is a compiler bug, reported as internal error E0998 at the
    /// statement, so that it never reaches a back end. Release builds skip the walk.
    fn checked(program: ir::Program) -> Result<Specialization, Diagnostics> {
        #[cfg(debug_assertions)]
        if let Err(e) = ir::validate(&program) {
            return Err(Diagnostics {
                file: program.file.clone(),
                list: vec![
                    Diagnostic::error(
                        diag::Code::E0998,
                        e.span,
                        format!("internal compiler error: {e}"),
                    )
                    .with_note("this is a bug in pydevice; please report it"),
                ],
            });
        }
        Ok(Specialization { program })
    }

    /// On the device, a function that draws random numbers takes the generator state as a
    /// hidden trailing parameter, which an `interop=True` function's C++ signature cannot
    /// have: E0781 at each such function.
    fn random_state_fits(self) -> Result<Specialization, Diagnostics> {
        let p = &self.program;
        let list: Vec<Diagnostic> = p
            .uses_random()
            .into_iter()
            .zip(p.functions.iter())
            .filter(|(uses, (_, f))| {
                *uses && f.interop && f.kind == ir::FunctionKind::Device
            })
            .map(|(_, (_, f))| {
                Diagnostic::error(
                    diag::Code::E0781,
                    f.span,
                    format!(
                        "`{}` is `interop=True` and draws random numbers (`random.rand`/`randn`, itself or through a callee)",
                        f.name
                    ),
                )
                .with_note("the generator state is a hidden parameter that its C++ signature cannot carry; draw the numbers in the caller and pass them in")
            })
            .collect();
        if list.is_empty() {
            return Ok(self);
        }
        Err(Diagnostics {
            file: p.file.clone(),
            list,
        })
    }

    /// The typed IR.
    pub fn program(&self) -> &ir::Program {
        &self.program
    }

    /// The entry's ABI.
    pub fn abi(&self) -> KernelAbi {
        let p = &self.program;
        let mut abi = KernelAbi::of(&p.functions[p.entry]);
        abi.seed = p.functions[p.entry].kind == ir::FunctionKind::Kernel
            && p.uses_random()[p.entry.index()];
        abi.cooperative = p.cooperative;
        abi
    }

    /// Lowers to PTX. A program whose `if target(...)` conditions were decided for one
    /// architecture only lowers for that architecture.
    pub fn to_ptx(&self, options: &CompileOptions) -> Result<CompiledKernel, LowerError> {
        if let Some(sm) = self.program.target_sm
            && sm != options.arch.number()
        {
            return Err(LowerError::ArchMismatch {
                specialized: sm,
                requested: options.arch.number(),
            });
        }
        let ptx = lower::ptx::compile(&self.program, &options.ptx(), Emit::Ptx)?;
        Ok(CompiledKernel {
            ptx,
            arch: options.arch,
            abi: self.abi(),
        })
    }

    /// JIT-compiles the entry (a `@func`) to native code for this machine through
    /// Cranelift. The specialization must come from [`Module::specialize_host`] when the
    /// code uses `target(...)`; device-only constructs reached on the host are diagnostics.
    pub fn to_host(&self) -> Result<HostFunction, Error> {
        if let Some(sm) = self.program.target_sm
            && sm != ir::HOST_TARGET
        {
            return Err(HostError::TargetMismatch { specialized: sm }.into());
        }
        let list = lower::host::host_diagnostics(&self.program);
        if !list.is_empty() {
            return Err(Error::Diagnostics(Diagnostics {
                file: self.program.file.clone(),
                list,
            }));
        }
        Ok(lower::host::compile(&self.program)?)
    }

    /// JIT-compiles the entry (a `@kernel`) to run whole on the CPU: each GPU thread a
    /// fiber, blocks over a pool of OS threads ([`runtime::cpu`]). What the CPU back end does
    /// not run yet is a diagnostic at its use.
    pub fn to_cpu(&self) -> Result<runtime::cpu::CpuKernel, Error> {
        let list = lower::host::kernel_diagnostics(&self.program);
        if !list.is_empty() {
            return Err(Error::Diagnostics(Diagnostics {
                file: self.program.file.clone(),
                list,
            }));
        }
        Ok(runtime::cpu::CpuKernel::compile(&self.program)?)
    }

    /// Lowers to optimized LLVM IR text (for inspection).
    pub fn to_llvm_ir(&self, options: &CompileOptions) -> Result<String, LowerError> {
        lower::ptx::compile(&self.program, &options.ptx(), Emit::LlvmIr)
    }
}

/// `s` split at the commas outside brackets and parentheses, each part trimmed.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn multi_arch_selection_takes_the_newest_not_above_the_device() {
        let src = "from cuda import device\n@device.kernel\ndef k(a):\n    a[0] = 1\n";
        let m = Module::parse("k.py", src).expect("parse");
        let (args, _) = types::signature::parse_signature("int32[::1]").expect("sig");
        let archs = [Arch::SM_90, Arch::SM_75, Arch::SM_80];
        let k = m
            .compile_multi("k", &args, &archs, OptLevel::O3)
            .expect("compile");
        assert_eq!(
            k.variants.iter().map(|v| v.arch).collect::<Vec<_>>(),
            vec![Arch::SM_75, Arch::SM_80, Arch::SM_90]
        );
        assert_eq!(k.select(Arch::SM_90).map(|v| v.arch), Some(Arch::SM_90));
        assert_eq!(k.select(Arch::SM_89).map(|v| v.arch), Some(Arch::SM_80));
        assert_eq!(k.select(Arch::SM_120).map(|v| v.arch), Some(Arch::SM_90));
        assert_eq!(k.select(Arch::new(7, 0).expect("sm_70")), None);
        assert!(k.variants[0].ptx.contains(".target sm_75"));
    }

    #[test]
    fn target_decisions_pin_a_specialization_to_its_arch() {
        let src = "from cuda import device\nfrom cuda.device import target, provides, sm80\n@device.kernel\ndef k(a):\n    if target(provides(sm80)):\n        a[0] = 1\n";
        let m = Module::parse("k.py", src).expect("parse");
        let (args, _) = types::signature::parse_signature("int32[::1]").expect("sig");
        let spec = m
            .specialize_for("k", &args, Arch::SM_80)
            .expect("specialize");
        let err = spec
            .to_ptx(&CompileOptions {
                arch: Arch::SM_75,
                opt_level: OptLevel::O3,
                ..Default::default()
            })
            .expect_err("pinned to sm_80");
        assert!(err.to_string().contains("sm_80"), "{err}");
        assert!(
            spec.to_ptx(&CompileOptions {
                arch: Arch::SM_80,
                opt_level: OptLevel::O3,
                ..Default::default()
            })
            .is_ok()
        );
    }

    #[test]
    fn machine_representation_is_itanium_on_linux() {
        if cfg!(target_os = "linux") {
            assert_eq!(machine_representation(), "itanium");
        }
    }

    #[test]
    fn public_types_cross_threads() {
        assert_send_sync::<Module>();
        assert_send_sync::<Specialization>();
        assert_send_sync::<CompiledKernel>();
        assert_send_sync::<Error>();
        assert_send_sync::<HostFunction>();
    }
}
