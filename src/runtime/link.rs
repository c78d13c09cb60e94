//! Linking our PTX with other device code into one module: CUDA C++ that defines the
//! `extern` functions a Python kernel calls (`@device.func(extern=True)`), or that calls our
//! `interop=True` functions.
//!
//! [`Device::link`] hands every [`LinkInput`] (PTX, cubin, fatbin, a relocatable object or
//! library, or CUDA C++ source that it compiles first with NVRTC) to the driver's JIT linker
//! (`cuLinkCreate` / `cuLinkAddData` / `cuLinkComplete`), which compiles the PTX for the
//! device and resolves symbols across inputs; the linked image is loaded as one module, whose
//! kernels launch as usual ([`LinkedModule::kernel`]) or by name through the raw driver
//! ([`LinkedModule::function`]).
//!
//! ```no_run
//! use pydevice::runtime::{Device, LinkInput};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let src = "from cuda import device\nfrom cuda.device import float32\n\
//!            @device.func(extern=True)\ndef twice(x: float32) -> float32: ...\n\
//!            @device.kernel\ndef k(xs):\n    xs[0] = twice(xs[0])\n";
//! let module = pydevice::Module::parse("k.py", src)?;
//! let dev = Device::open(0)?;
//! let k = module.compile("k", &pydevice::types::signature::parse_signature("float32[:]")?.0,
//!                        &pydevice::CompileOptions { arch: dev.arch()?, ..Default::default() })?;
//! let cpp = r#"extern "C" __device__ float twice(float x) { return 2 * x; }"#;
//! let linked = dev.link(&[LinkInput::compiled("k.py", &k), LinkInput::cuda("twice.cu", cpp)])?;
//! let kernel = linked.kernel(&k.abi)?;
//! # Ok(()) }
//! ```
//!
//! A symbol that no input defines is a [`RuntimeError::Link`] that names it: found before the
//! driver is asked when every input is PTX or CUDA C++ ([`undefined_functions`]), else taken
//! from the JIT linker's log.

use super::error::describe;
use super::{Device, LoadedKernel, RuntimeError};
use crate::abi::KernelAbi;
use crate::kernel::CompiledKernel;
use crate::target::Arch;
use cudarc::driver::sys::{self, CUjit_option, CUjitInputType};
use cudarc::driver::{CudaContext, CudaModule};
use std::ffi::{CString, c_void};
use std::sync::{Arc, OnceLock};

/// One piece of device code for [`Device::link`]. `name` appears in the linker's messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkInput {
    /// PTX text (ours: [`LinkInput::compiled`]; or nvcc's `-ptx -rdc=true`, NVRTC's).
    Ptx {
        /// A name for messages.
        name: String,
        /// The PTX.
        text: String,
    },
    /// A cubin (`nvcc -cubin -rdc=true`, `ptxas -c`).
    Cubin {
        /// A name for messages.
        name: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// A fatbin (`nvcc -fatbin -rdc=true`).
    Fatbin {
        /// A name for messages.
        name: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// A host object with relocatable device code embedded (`nvcc -rdc=true -c`).
    Object {
        /// A name for messages.
        name: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// A static library of such objects (`.a`).
    Library {
        /// A name for messages.
        name: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// CUDA C++ source, compiled at link time by NVRTC for the device's architecture as
    /// relocatable device code (`-rdc=true`), with the CUDA include directories that
    /// [`crate::toolkit::include_dirs`] finds and `options` (such as `-I...`, `-DNAME`).
    Cuda {
        /// A name for messages (and NVRTC's file name).
        name: String,
        /// The source.
        source: String,
        /// More NVRTC options.
        options: Vec<String>,
    },
}

impl LinkInput {
    /// A kernel or interoperable function we compiled.
    pub fn compiled(name: &str, kernel: &CompiledKernel) -> LinkInput {
        LinkInput::Ptx {
            name: name.to_string(),
            text: kernel.ptx.clone(),
        }
    }

    /// CUDA C++ source to compile with NVRTC.
    pub fn cuda(name: &str, source: &str) -> LinkInput {
        LinkInput::Cuda {
            name: name.to_string(),
            source: source.to_string(),
            options: Vec::new(),
        }
    }

    /// A file, its kind told by its extension: `.ptx`, `.cubin`, `.fatbin`, `.o`/`.obj`,
    /// `.a`/`.lib`, `.cu`.
    pub fn file(path: &std::path::Path) -> Result<LinkInput, RuntimeError> {
        let name = path.display().to_string();
        let read = || {
            std::fs::read(path).map_err(|e| RuntimeError::Link {
                undefined: Vec::new(),
                message: format!("reading {name}: {e}"),
            })
        };
        let text = |b: Vec<u8>| {
            String::from_utf8(b).map_err(|_| RuntimeError::Link {
                undefined: Vec::new(),
                message: format!("{name} is not UTF-8 text"),
            })
        };
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        Ok(match ext {
            "ptx" => LinkInput::Ptx {
                text: text(read()?)?,
                name,
            },
            "cu" | "cuh" => LinkInput::Cuda {
                source: text(read()?)?,
                name,
                options: Vec::new(),
            },
            "cubin" => LinkInput::Cubin {
                bytes: read()?,
                name,
            },
            "fatbin" => LinkInput::Fatbin {
                bytes: read()?,
                name,
            },
            "o" | "obj" => LinkInput::Object {
                bytes: read()?,
                name,
            },
            "a" | "lib" => LinkInput::Library {
                bytes: read()?,
                name,
            },
            other => {
                return Err(RuntimeError::Link {
                    undefined: Vec::new(),
                    message: format!(
                        "{name}: unknown kind of device code `.{other}` (expected .ptx, .cubin, \
                         .fatbin, .o, .a or .cu)"
                    ),
                });
            }
        })
    }

    /// The name given for messages.
    pub fn name(&self) -> &str {
        match self {
            LinkInput::Ptx { name, .. }
            | LinkInput::Cubin { name, .. }
            | LinkInput::Fatbin { name, .. }
            | LinkInput::Object { name, .. }
            | LinkInput::Library { name, .. }
            | LinkInput::Cuda { name, .. } => name,
        }
    }
}

/// Device code linked from several inputs and loaded into a device's context. `Send + Sync`.
pub struct LinkedModule {
    module: Arc<CudaModule>,
    ctx: Arc<CudaContext>,
    cubin: Vec<u8>,
    /// Whether a PTX input defines the bounds-check record, or a binary input might.
    bounds_global: bool,
}

impl LinkedModule {
    /// The kernel described by `abi` (a [`CompiledKernel`]'s), ready for [`Device::launch`].
    pub fn kernel(&self, abi: &KernelAbi) -> Result<LoadedKernel, RuntimeError> {
        let function = self.lookup(&abi.symbol)?;
        Ok(LoadedKernel {
            function,
            _module: self.module.clone(),
            ctx: self.ctx.clone(),
            name: Arc::from(abi.symbol.as_str()),
            abi: abi.clone(),
            bounds_global: self.bounds_global,
            cooperative_limits: std::sync::Mutex::default(),
            cluster: Default::default(),
        })
    }

    /// The driver's handle of kernel `name` (of any input, CUDA C++ kernels included), for
    /// launching through `cuLaunchKernel` with parameters packed as C++ host code packs them.
    /// Valid while this module lives.
    pub fn function(&self, name: &str) -> Result<sys::CUfunction, RuntimeError> {
        Ok(self.lookup(name)?.cu_function())
    }

    /// The linked image (a cubin for the device), to cache or inspect with `cuobjdump`.
    pub fn cubin(&self) -> &[u8] {
        &self.cubin
    }

    fn lookup(&self, name: &str) -> Result<cudarc::driver::CudaFunction, RuntimeError> {
        if name.contains('\0') {
            return Err(RuntimeError::Argument(format!("{name:?} is not a symbol")));
        }
        self.module
            .load_function(name)
            .map_err(|e| RuntimeError::Link {
                undefined: Vec::new(),
                message: format!("no kernel `{name}` in the linked module: {}", describe(&e)),
            })
    }
}

/// The functions that some PTX declares `.extern .func` and none of them defines
/// (`.visible .func` or `.weak .func`), sorted: what a link of exactly these texts would miss.
/// PTX's system calls (`vprintf`, `malloc`, `free`, `__assertfail`) are never missing.
///
/// ```
/// let caller = ".extern .func (.param .b32 func_retval0) twice\n(\n .param .b32 p\n)\n;";
/// let callee = ".visible .func (.param .b32 func_retval0) twice(\n .param .b32 p\n)\n{\n}";
/// assert_eq!(pydevice::runtime::link::undefined_functions(&[caller]), vec!["twice"]);
/// assert!(pydevice::runtime::link::undefined_functions(&[caller, callee]).is_empty());
/// ```
pub fn undefined_functions(ptx: &[&str]) -> Vec<String> {
    let mut declared = Vec::new();
    let mut defined = std::collections::HashSet::new();
    for text in ptx {
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(linkage), Some(".func")) = (words.next(), words.next()) else {
                continue;
            };
            // The name follows the optional return parameter `(.param ... func_retval0)`.
            let rest: String = words.collect::<Vec<_>>().join(" ");
            let rest = match rest.strip_prefix('(') {
                Some(r) => r.split_once(')').map_or("", |(_, after)| after),
                None => rest.as_str(),
            };
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            if name.is_empty() {
                continue;
            }
            match linkage {
                ".extern" => declared.push(name),
                ".visible" | ".weak" => {
                    defined.insert(name);
                }
                _ => {}
            }
        }
    }
    // PTX's system calls, which ptxas and the driver provide.
    const SYSCALLS: [&str; 4] = ["vprintf", "malloc", "free", "__assertfail"];
    declared.retain(|n| !defined.contains(n) && !SYSCALLS.contains(&n.as_str()));
    declared.sort();
    declared.dedup();
    declared
}

/// Whether NVRTC (`libnvrtc`) can be loaded: found by the dynamic loader's search, or in the
/// library directories of a CUDA installation ([`crate::toolkit::library_dirs`]: `$CUDA_HOME`,
/// `/usr/local/cuda`, the PyPI wheel), which are then loaded by path first.
pub fn nvrtc_available() -> bool {
    nvrtc_check().is_ok()
}

fn nvrtc_check() -> Result<(), RuntimeError> {
    static FOUND: OnceLock<Result<(), String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            // SAFETY: loading libnvrtc runs its initializers, which is what using it requires.
            if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Ok(());
            }
            for dir in crate::toolkit::library_dirs() {
                for name in ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"] {
                    let path = dir.join(name);
                    if !path.is_file() {
                        continue;
                    }
                    // SAFETY: as above. The library stays loaded for the life of the
                    // process, so cudarc's later load by soname finds this copy.
                    if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
                        std::mem::forget(lib);
                        // SAFETY: as above.
                        if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                            return Ok(());
                        }
                    }
                }
            }
            Err(format!(
                "libnvrtc not found on the loader's path nor in {}",
                crate::toolkit::searched()
            ))
        })
        .clone()
        .map_err(|message| RuntimeError::Link {
            undefined: Vec::new(),
            message,
        })
}

/// Compiles CUDA C++ to PTX with NVRTC for `arch`, as relocatable device code
/// (`-rdc=true`: its `extern "C" __device__` functions stay visible, and calls of functions
/// it only declares are left for the linker), with the CUDA include directories found on this
/// machine and `options`. A compile error is a [`RuntimeError::Link`] with NVRTC's log.
/// Results are cached in memory by content, and on disk under `$PYDEVICE_NVRTC_CACHE` when
/// it is set.
pub fn compile_cuda(
    name: &str,
    source: &str,
    arch: Arch,
    options: &[String],
) -> Result<String, RuntimeError> {
    nvrtc_check()?;
    // Cached by content: the same source, architecture and options give the same PTX, and
    // NVRTC takes seconds over Thrust's headers.
    static CACHE: OnceLock<std::sync::Mutex<std::collections::HashMap<String, String>>> =
        OnceLock::new();
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (source, arch.number(), options).hash(&mut h);
        format!("{:016x}-{}", h.finish(), source.len())
    };
    let cache = CACHE.get_or_init(Default::default);
    if let Some(ptx) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(ptx.clone());
    }
    let disk = std::env::var_os("PYDEVICE_NVRTC_CACHE")
        .map(std::path::PathBuf::from)
        .map(|d| d.join(format!("{key}.ptx")));
    if let Some(ptx) = disk.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, ptx.clone());
        return Ok(ptx);
    }
    let ptx = compile_cuda_uncached(name, source, arch, options)?;
    if let Some(p) = &disk {
        let _ = p.parent().map(std::fs::create_dir_all);
        let _ = std::fs::write(p, &ptx);
    }
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, ptx.clone());
    Ok(ptx)
}

fn compile_cuda_uncached(
    name: &str,
    source: &str,
    arch: Arch,
    options: &[String],
) -> Result<String, RuntimeError> {
    let fail = |message: String| RuntimeError::Link {
        undefined: Vec::new(),
        message: format!("compiling `{name}` with NVRTC: {message}"),
    };
    if source.contains('\0') || name.contains('\0') {
        return Err(fail("the source contains a NUL byte".into()));
    }
    let mut opts = vec![
        format!("--gpu-architecture=compute_{}", arch.number()),
        "-rdc=true".to_string(),
    ];
    // The caller's `-I` folders are searched before the toolkit's: CUDA 13 puts its own CCCL
    // under `include/cccl`, and a `PYDEVICE_CCCL` given for jit.thrust must win over it (on
    // the H200 machine the toolkit's CCCL 3.0 was found first and failed to compile).
    let (includes, rest): (Vec<&String>, Vec<&String>) =
        options.iter().partition(|o| o.starts_with("-I"));
    opts.extend(rest.into_iter().cloned());
    let include_paths = includes
        .into_iter()
        .map(|o| o[2..].to_string())
        .chain(
            crate::toolkit::include_dirs()
                .iter()
                .map(|d| d.display().to_string()),
        )
        .collect();
    let compiled = cudarc::nvrtc::compile_ptx_with_opts(
        source,
        cudarc::nvrtc::CompileOptions {
            include_paths,
            options: opts,
            name: Some(name.to_string()),
            ..Default::default()
        },
    )
    .map_err(|e| match e {
        cudarc::nvrtc::CompileError::CompileError { log, .. } => {
            fail(log.to_string_lossy().into_owned())
        }
        other => fail(format!("{other:?}")),
    })?;
    Ok(compiled.to_src())
}

/// The driver's JIT link, with its logs; destroys the link state however it ends.
pub(super) struct JitLink {
    state: sys::CUlinkState,
    error_log: Vec<u8>,
    info_log: Vec<u8>,
    /// The option keys and values given to cuLinkCreate: the driver writes the logs' sizes
    /// back into `values`, so both must live as long as the link state.
    keys: [CUjit_option; 6],
    values: [*mut c_void; 6],
    /// How many of `keys` are given (the last two only with debug information).
    count: u32,
}

const LOG_BYTES: usize = 1 << 16;

impl JitLink {
    /// A link; with `debug`, the driver's JIT compiles PTX with debug information
    /// (`CU_JIT_GENERATE_DEBUG_INFO`, ptxas's `-g`), as cuda-gdb needs.
    fn new(debug: bool) -> Result<Box<JitLink>, RuntimeError> {
        // Boxed: the driver keeps pointers to the logs and the options until the link is
        // destroyed, so they must not move.
        let mut link = Box::new(JitLink {
            state: std::ptr::null_mut(),
            error_log: vec![0; LOG_BYTES],
            info_log: vec![0; LOG_BYTES],
            keys: [
                CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
                CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                CUjit_option::CU_JIT_INFO_LOG_BUFFER,
                CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                CUjit_option::CU_JIT_GENERATE_DEBUG_INFO,
                CUjit_option::CU_JIT_GENERATE_LINE_INFO,
            ],
            values: [std::ptr::null_mut(); 6],
            count: if debug { 6 } else { 4 },
        });
        // Option values are pointer-sized: buffers as pointers, sizes as integers.
        link.values = [
            link.error_log.as_mut_ptr().cast(),
            LOG_BYTES as *mut c_void,
            link.info_log.as_mut_ptr().cast(),
            LOG_BYTES as *mut c_void,
            std::ptr::without_provenance_mut(1), // the integer 1: on
            std::ptr::without_provenance_mut(1), // the integer 1: on
        ];
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        let n = link.count;
        let (keys, values) = (link.keys.as_mut_ptr(), link.values.as_mut_ptr());
        // SAFETY: `keys` and `values` have `n` entries; they and the log buffers live in the
        // box, unmoved, until `Drop` destroys the state. A context is current (the caller
        // bound it).
        unsafe { sys::cuLinkCreate_v2(n, keys, values, &mut state) }
            .result()
            .map_err(|e| RuntimeError::Link {
                undefined: Vec::new(),
                message: format!("cuLinkCreate: {}", describe(&e)),
            })?;
        link.state = state;
        Ok(link)
    }

    fn log(&self) -> String {
        let text = |b: &[u8]| {
            let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).trim().to_string()
        };
        let (e, i) = (text(&self.error_log), text(&self.info_log));
        match (e.is_empty(), i.is_empty()) {
            (false, false) => format!("{e}\n{i}"),
            (false, true) => e,
            _ => i,
        }
    }

    /// Compiles one module of PTX with debug information (`debug=True` kernels) to a cubin.
    pub(super) fn debug_cubin(name: &str, ptx: &str) -> Result<Vec<u8>, RuntimeError> {
        let mut link = JitLink::new(true)?;
        let mut bytes = ptx.as_bytes().to_vec();
        bytes.push(0);
        link.add(CUjitInputType::CU_JIT_INPUT_PTX, name, &bytes)?;
        link.complete()
    }

    fn add(&mut self, kind: CUjitInputType, name: &str, data: &[u8]) -> Result<(), RuntimeError> {
        let cname = CString::new(name.replace('\0', "?")).unwrap_or_default();
        // SAFETY: the driver reads `data` (and, for PTX, up to its NUL) during the call only.
        unsafe {
            sys::cuLinkAddData_v2(
                self.state,
                kind,
                data.as_ptr() as *mut c_void,
                data.len(),
                cname.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(|e| self.failure(&format!("adding `{name}`: {}", describe(&e))))
    }

    fn complete(&mut self) -> Result<Vec<u8>, RuntimeError> {
        let mut image: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: the state is live; the image belongs to it, so it is copied before Drop.
        unsafe { sys::cuLinkComplete(self.state, &mut image, &mut size) }
            .result()
            .map_err(|e| self.failure(&format!("cuLinkComplete: {}", describe(&e))))?;
        if image.is_null() {
            return Err(self.failure("the linker produced no image"));
        }
        // SAFETY: the driver says `image` holds `size` bytes, valid until the state is destroyed.
        Ok(unsafe { std::slice::from_raw_parts(image.cast::<u8>(), size) }.to_vec())
    }

    /// A link error carrying the driver's log and the undefined symbols it names.
    fn failure(&self, what: &str) -> RuntimeError {
        let log = self.log();
        let undefined = undefined_in_log(&log);
        let head = if undefined.is_empty() {
            what.to_string()
        } else {
            format!("undefined symbol(s) {}", quoted(&undefined))
        };
        RuntimeError::Link {
            undefined,
            message: if log.is_empty() {
                head
            } else {
                format!("{head}\n{log}")
            },
        }
    }
}

impl Drop for JitLink {
    fn drop(&mut self) {
        if !self.state.is_null() {
            // SAFETY: the state was created by cuLinkCreate and is destroyed once.
            let _ = unsafe { sys::cuLinkDestroy(self.state) };
        }
    }
}

/// The names in the linker's `Undefined reference to 'name'` messages.
fn undefined_in_log(log: &str) -> Vec<String> {
    let mut out: Vec<String> = log
        .lines()
        .filter_map(|l| {
            let at = l.find("Undefined reference to '")? + "Undefined reference to '".len();
            l[at..].split('\'').next().map(str::to_string)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The CUDA device runtime's functions that a launch from device code calls (§18.3);
/// `libcudadevrt.a` defines them, and [`Device::link`] adds it when PTX needs them.
pub const DEVICE_RUNTIME_FUNCTIONS: [&str; 3] = [
    "__cudaCDP2GetLastError",
    "__cudaCDP2GetParameterBufferV2",
    "__cudaCDP2LaunchDeviceV2",
];

/// The bytes of the device runtime library, for the JIT linker.
fn device_runtime_library(undefined: &[String]) -> Result<(String, Vec<u8>), RuntimeError> {
    let missing = || RuntimeError::Link {
        undefined: undefined.to_vec(),
        message: format!(
            "the code launches kernels from device code ({}), which needs the CUDA device \
             runtime library libcudadevrt.a; none was found (searched {}; set \
             PYDEVICE_CUDADEVRT or CUDA_HOME)",
            quoted(undefined),
            crate::toolkit::searched()
        ),
    };
    let path = crate::toolkit::cudadevrt().ok_or_else(missing)?;
    let bytes = std::fs::read(&path).map_err(|e| RuntimeError::Link {
        undefined: undefined.to_vec(),
        message: format!("reading {}: {e}", path.display()),
    })?;
    Ok((path.display().to_string(), bytes))
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Device {
    /// Links device code from several inputs into one module with the driver's JIT linker
    /// and loads it: CUDA C++ inputs are compiled with NVRTC for this device first, PTX is
    /// compiled for this device by the linker. See [`crate::runtime::link`].
    pub fn link(&self, inputs: &[LinkInput]) -> Result<LinkedModule, RuntimeError> {
        let arch = self.arch()?;
        // CUDA C++ becomes PTX first; then, when everything is text, missing symbols are
        // found (and named) before the driver is asked.
        let mut ptx: Vec<Option<String>> = Vec::new();
        for input in inputs {
            ptx.push(match input {
                LinkInput::Cuda {
                    name,
                    source,
                    options,
                } => Some(compile_cuda(name, source, arch, options)?),
                LinkInput::Ptx { text, .. } => Some(text.clone()),
                _ => None,
            });
        }
        let texts: Vec<&str> = ptx.iter().flatten().map(String::as_str).collect();
        // Launches from device code need the device runtime, added here unless a library
        // was given (which may be it).
        let runtime_calls: Vec<String> = undefined_functions(&texts)
            .into_iter()
            .filter(|n| DEVICE_RUNTIME_FUNCTIONS.contains(&n.as_str()))
            .collect();
        let device_runtime = !runtime_calls.is_empty()
            && !inputs
                .iter()
                .any(|i| matches!(i, LinkInput::Library { .. }));
        if ptx.iter().all(Option::is_some) {
            let mut undefined = undefined_functions(&texts);
            if device_runtime {
                undefined.retain(|n| !DEVICE_RUNTIME_FUNCTIONS.contains(&n.as_str()));
            }
            if !undefined.is_empty() {
                return Err(RuntimeError::Link {
                    message: format!(
                        "undefined symbol(s) {}: declared `.extern` but defined by none of {}",
                        quoted(&undefined),
                        inputs
                            .iter()
                            .map(|i| format!("`{}`", i.name()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    undefined,
                });
            }
        }
        self.s.ctx.bind_to_thread().map_err(|e| self.error(e))?;
        let debug = ptx.iter().flatten().any(|t| super::has_debug_info(t));
        let mut link = JitLink::new(debug)?;
        for (input, text) in inputs.iter().zip(&ptx) {
            let name = input.name();
            match (input, text) {
                (_, Some(text)) => {
                    let mut bytes = text.clone().into_bytes();
                    bytes.push(0);
                    link.add(CUjitInputType::CU_JIT_INPUT_PTX, name, &bytes)?
                }
                (LinkInput::Cubin { bytes, .. }, None) => {
                    link.add(CUjitInputType::CU_JIT_INPUT_CUBIN, name, bytes)?
                }
                (LinkInput::Fatbin { bytes, .. }, None) => {
                    link.add(CUjitInputType::CU_JIT_INPUT_FATBINARY, name, bytes)?
                }
                (LinkInput::Object { bytes, .. }, None) => {
                    link.add(CUjitInputType::CU_JIT_INPUT_OBJECT, name, bytes)?
                }
                (LinkInput::Library { bytes, .. }, None) => {
                    link.add(CUjitInputType::CU_JIT_INPUT_LIBRARY, name, bytes)?
                }
                (LinkInput::Ptx { .. } | LinkInput::Cuda { .. }, None) => {
                    unreachable!("text inputs were turned into PTX above")
                }
            }
        }
        if device_runtime {
            let (name, bytes) = device_runtime_library(&runtime_calls)?;
            link.add(CUjitInputType::CU_JIT_INPUT_LIBRARY, &name, &bytes)?;
        }
        let cubin = link.complete()?;
        drop(link);
        let bounds_global = ptx.iter().any(|t| match t {
            Some(text) => super::defines_bounds_global(text),
            None => true,
        });
        let module = self
            .s
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin.clone()))
            .map_err(|e| RuntimeError::Link {
                undefined: Vec::new(),
                message: format!("loading the linked image: {}", describe(&e)),
            })?;
        Ok(LinkedModule {
            module,
            ctx: self.s.ctx.clone(),
            cubin,
            bounds_global,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_functions_follow_declarations_and_definitions() {
        let caller = "\
.extern .func  (.param .align 4 .b8 func_retval0[8]) make_pair
(
\t.param .b32 make_pair_param_0
)
;
.extern .func note
(
\t.param .b32 note_param_0
)
;
.visible .entry k(
)";
        let callee = "\
.visible .func  (.param .align 4 .b8 func_retval0[8]) make_pair(
\t.param .b32 make_pair_param_0
)
{
}";
        assert_eq!(undefined_functions(&[caller]), vec!["make_pair", "note"]);
        let printf = ".extern .func  (.param .b32 func_retval0) vprintf\n(\n.param .b64 a\n)\n;";
        assert!(undefined_functions(&[printf]).is_empty());
        assert_eq!(undefined_functions(&[caller, callee]), vec!["note"]);
        assert!(undefined_functions(&[callee]).is_empty());
    }

    #[test]
    fn the_linker_log_names_undefined_symbols() {
        let log = "error   : Undefined reference to 'cpp_scale' in 'k.ptx'\n\
                   error   : Undefined reference to 'cpp_l1' in 'k.ptx'";
        assert_eq!(undefined_in_log(log), vec!["cpp_l1", "cpp_scale"]);
    }

    #[test]
    fn link_inputs_by_extension() {
        let e = LinkInput::file(std::path::Path::new("x.unknown")).unwrap_err();
        assert!(matches!(e, RuntimeError::Link { .. }), "{e}");
        assert_eq!(LinkInput::cuda("a.cu", "").name(), "a.cu");
    }

    #[test]
    fn linked_modules_cross_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<LinkedModule>();
        assert_send_sync::<LinkInput>();
    }
}
