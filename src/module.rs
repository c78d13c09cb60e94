//! [`Module`]: a parsed Python module of device code, and what it makes: its entries
//! ([`EntryInfo`]), specializations for argument types ([`Specialization`]) and, through the
//! back ends, compiled kernels and host functions. The compiler's API, used by the crate
//! root's re-exports, the cache, the CLI and embedders.

#[cfg(feature = "ptx")]
use crate::CompileOptions;
#[cfg(any(feature = "ptx", feature = "host"))]
use crate::Error;
use crate::abi::{self, KernelAbi};
use crate::diag::{self, Diagnostic, Diagnostics, SourceFile, Span};
#[cfg(feature = "ptx")]
use crate::kernel::{CompiledKernel, MultiArchKernel};
#[cfg(any(feature = "ptx", feature = "host"))]
use crate::lower;
#[cfg(feature = "host")]
use crate::lower::host::{HostError, HostFunction};
#[cfg(feature = "ptx")]
use crate::lower::ptx::{Emit, LowerError};
use crate::target::Arch;
use crate::types::{self, Type, promote::Defaults};
use crate::{ConstValue, front, ir};
use serde::{Deserialize, Serialize};

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
    /// Each run-time parameter's annotated type, `None` where it has no annotation (or one
    /// that is not a type): what a caller converts its argument to, even when other
    /// parameters are not annotated.
    pub param_annotations: Vec<Option<Type>>,
    /// The parameters hinted `ConstExpr` or `ConstExpr[T]`, which take their values at
    /// compile time ([`crate::CompileOptions::constants`]), in order.
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
                let signature = f.signature.clone().filter(|s| s.len() == params.len());
                let param_annotations: Vec<Option<Type>> = match &signature {
                    Some(s) => s.iter().cloned().map(Some).collect(),
                    None => params
                        .iter()
                        .filter(|p| !is_const(p))
                        .map(|p| {
                            p.parameter
                                .annotation
                                .as_deref()
                                .and_then(|a| self.parsed.annotation_type(a, self.defaults))
                        })
                        .collect(),
                };
                let annotated = signature.or_else(|| {
                    param_annotations
                        .iter()
                        .cloned()
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
                    param_annotations,
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

    /// Argument types in Numba's notation where an item may also name one of the module's
    /// `@struct` classes, alone or as an array's element (`Particle`, `Particle[:, ::1]`):
    /// [`types::signature::parse_signature_with`] with the module's classes. What the CLI's
    /// `--sig` takes; a whole signature (`void(...)`) is accepted and its return type
    /// dropped.
    ///
    /// ```
    /// use pydevice::Module;
    /// let src = "from cuda import device\nfrom cuda.device import float32\n\
    ///            @device.struct\nclass Particle:\n    x: float32\n";
    /// let m = Module::parse("p.py", src).unwrap();
    /// let args = m.parse_signature("Particle[::1], float32").unwrap();
    /// assert_eq!(args[0].to_string(), "Particle[::1]");
    /// assert!(m.parse_signature("Nope[:]").is_err());
    /// ```
    pub fn parse_signature(
        &self,
        sig: &str,
    ) -> Result<Vec<Type>, types::signature::SignatureError> {
        let structs = |name: &str| match self.parsed.lookup(name) {
            Some(front::Item::Struct(i)) => self
                .parsed
                .struct_type(i)
                .map(|t| Type::Struct(Box::new(t.clone()))),
            _ => None,
        };
        Ok(types::signature::parse_signature_with(sig, &structs)?.0)
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
    #[cfg(feature = "host")]
    pub fn host_function(&self, entry: &str, args: &[Type]) -> Result<HostFunction, Error> {
        self.specialize_host(entry, args)?.to_host()
    }

    /// Specializes `@kernel` `entry` for argument types and JIT-compiles it to run whole on
    /// the CPU ([`crate::runtime::cpu`], docs/semantics.md "CPU back end"). The code is specialized
    /// as for [`Arch::DEFAULT`]: `target(is_device)` holds, as on a GPU.
    #[cfg(all(feature = "host", feature = "runtime"))]
    pub fn cpu_kernel(
        &self,
        entry: &str,
        args: &[Type],
    ) -> Result<crate::runtime::cpu::CpuKernel, Error> {
        self.specialize(entry, args)?.to_cpu()
    }

    /// Specializes and compiles `entry` to PTX.
    #[cfg(feature = "ptx")]
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

    /// Compiles `entry` once per architecture, each with `options` (its optimization level
    /// and `ConstExpr` constants; its `arch` is replaced by each of `archs`); at load time
    /// the runtime picks the variant for the device ([`MultiArchKernel::select`]).
    #[cfg(feature = "ptx")]
    pub fn compile_multi(
        &self,
        entry: &str,
        args: &[Type],
        archs: &[Arch],
        options: &CompileOptions,
    ) -> Result<MultiArchKernel, Error> {
        let mut variants = Vec::new();
        for arch in archs {
            let options = CompileOptions {
                arch: *arch,
                ..options.clone()
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
/// `debug=True` are compiled at `-O0`: warm up with [`crate::OptLevel::O0`] for them.
#[cfg(feature = "ptx")]
pub fn warm_up(options: &CompileOptions) {
    lower::ptx::prepare(options.arch, options.opt_level.number());
}

impl Specialization {
    /// The checker's program, with the shared IR expansions applied ([`ir::expand::run`]),
    /// validated against the IR's rules ([`ir::validate`]) in debug
    /// builds: a broken rule is a compiler bug, reported as internal error E0998 at the
    /// statement, so that it never reaches a back end. Release builds skip the walk.
    fn checked(mut program: ir::Program) -> Result<Specialization, Diagnostics> {
        ir::expand::run(&mut program);
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
        let entry = &p.functions[p.entry];
        abi.read_only = p
            .entry_param_stores()
            .iter()
            .enumerate()
            .filter(|&(k, &stores)| {
                !stores
                    && entry
                        .param_locals()
                        .nth(k)
                        .is_some_and(|l| ir::holds_memory(&entry.locals[l].ty))
            })
            .map(|(k, _)| k)
            .collect();
        abi
    }

    /// Lowers to PTX. A program whose `if target(...)` conditions were decided for one
    /// architecture only lowers for that architecture.
    #[cfg(feature = "ptx")]
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
        let cuda = if self.program.cuda_shims.is_empty() {
            Vec::new()
        } else {
            vec![crate::kernel::CudaSource {
                name: format!(
                    "{}_thrust.cu",
                    self.program.functions[self.program.entry].symbol
                ),
                source: crate::cccl::translation_unit(&self.program.cuda_shims),
                cccl: true,
            }]
        };
        Ok(CompiledKernel {
            ptx,
            arch: options.arch,
            abi: self.abi(),
            cuda,
        })
    }

    /// JIT-compiles the entry (a `@func`) to native code for this machine through
    /// Cranelift. The specialization must come from [`Module::specialize_host`] when the
    /// code uses `target(...)`; device-only constructs reached on the host are diagnostics.
    #[cfg(feature = "host")]
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
    /// fiber, blocks over a pool of OS threads ([`crate::runtime::cpu`]). What the CPU back end does
    /// not run yet is a diagnostic at its use.
    #[cfg(all(feature = "host", feature = "runtime"))]
    pub fn to_cpu(&self) -> Result<crate::runtime::cpu::CpuKernel, Error> {
        let list = lower::host::kernel_diagnostics(&self.program);
        if !list.is_empty() {
            return Err(Error::Diagnostics(Diagnostics {
                file: self.program.file.clone(),
                list,
            }));
        }
        Ok(crate::runtime::cpu::CpuKernel::compile(&self.program)?)
    }

    /// Lowers to optimized LLVM IR text (for inspection).
    #[cfg(feature = "ptx")]
    pub fn to_llvm_ir(&self, options: &CompileOptions) -> Result<String, LowerError> {
        lower::ptx::compile(&self.program, &options.ptx(), Emit::LlvmIr)
    }
}
