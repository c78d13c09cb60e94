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
#[cfg(feature = "runtime")]
pub mod cache;
pub mod cccl;
pub mod diag;
pub mod front;
pub mod ir;
pub mod kernel;
#[cfg(all(feature = "runtime", feature = "host"))]
pub mod kernels;
pub mod lower;
mod module;
pub mod random;
#[cfg(feature = "runtime")]
pub mod runtime;
mod stack;
pub mod target;
pub mod toolkit;
pub mod types;

pub use abi::KernelAbi;
pub use diag::{Diagnostic, Diagnostics, SourceFile, Span};
pub use kernel::{CompiledKernel, CudaSource, MultiArchKernel};
#[cfg(feature = "host")]
pub use lower::host::{HostError, HostFunction, HostValue};
#[cfg(feature = "ptx")]
pub use module::warm_up;
pub use module::{EntryInfo, Module, Specialization};
pub use target::{Arch, OptLevel};
pub use types::Type;

#[cfg(feature = "ptx")]
use lower::ptx::{LowerError, PtxOptions};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The spec's `machine_representation()`: the C++ ABI family device code follows when it
/// crosses into CUDA C++ — `"itanium"` on Linux (and other non-Windows hosts), `"msvc"` on
/// Windows. Device and host code can ask too (docs/semantics.md §1.6).
pub fn machine_representation() -> &'static str {
    target::machine_representation()
}

/// Any error of the library.
///
/// `Debug` prints what `Display` does (the rendered diagnostics, or the back end's or
/// runtime's message), so that `?` in an embedder's `main` prints a readable message;
/// `{:#?}` gives the variant and its structure.
#[derive(Clone)]
#[non_exhaustive]
pub enum Error {
    /// The program is ill-formed.
    Diagnostics(Diagnostics),
    /// The back end failed.
    #[cfg(feature = "ptx")]
    Lower(LowerError),
    /// Running it failed.
    #[cfg(feature = "runtime")]
    Runtime(runtime::RuntimeError),
    /// Building or calling host code failed.
    #[cfg(feature = "host")]
    Host(HostError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Diagnostics(d) => write!(f, "{d}"),
            #[cfg(feature = "ptx")]
            Error::Lower(e) => write!(f, "{e}"),
            #[cfg(feature = "runtime")]
            Error::Runtime(e) => write!(f, "{e}"),
            #[cfg(feature = "host")]
            Error::Host(e) => write!(f, "{e}"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return fmt::Display::fmt(self, f);
        }
        match self {
            Error::Diagnostics(d) => f.debug_tuple("Diagnostics").field(d).finish(),
            #[cfg(feature = "ptx")]
            Error::Lower(e) => f.debug_tuple("Lower").field(e).finish(),
            #[cfg(feature = "runtime")]
            Error::Runtime(e) => f.debug_tuple("Runtime").field(e).finish(),
            #[cfg(feature = "host")]
            Error::Host(e) => f.debug_tuple("Host").field(e).finish(),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Diagnostics(d) => Some(d),
            #[cfg(feature = "ptx")]
            Error::Lower(e) => Some(e),
            #[cfg(feature = "runtime")]
            Error::Runtime(e) => Some(e),
            #[cfg(feature = "host")]
            Error::Host(e) => Some(e),
        }
    }
}

impl From<Diagnostics> for Error {
    fn from(d: Diagnostics) -> Self {
        Error::Diagnostics(d)
    }
}
#[cfg(feature = "ptx")]
impl From<LowerError> for Error {
    fn from(e: LowerError) -> Self {
        Error::Lower(e)
    }
}
#[cfg(feature = "host")]
impl From<HostError> for Error {
    fn from(e: HostError) -> Self {
        Error::Host(e)
    }
}
#[cfg(feature = "runtime")]
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
    #[cfg(feature = "ptx")]
    fn ptx(&self) -> PtxOptions {
        PtxOptions {
            arch: self.arch,
            opt_level: self.opt_level,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    #[cfg(feature = "ptx")]
    fn multi_arch_selection_takes_the_newest_not_above_the_device() {
        let src = "from cuda import device\n@device.kernel\ndef k(a):\n    a[0] = 1\n";
        let m = Module::parse("k.py", src).expect("parse");
        let (args, _) = types::signature::parse_signature("int32[::1]").expect("sig");
        let archs = [Arch::SM_90, Arch::SM_75, Arch::SM_80];
        let k = m
            .compile_multi("k", &args, &archs, &CompileOptions::default())
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
    #[cfg(feature = "ptx")]
    fn compile_multi_takes_the_options_constants() {
        let src = "from cuda import device\nfrom cuda.device import ConstExpr\n@device.kernel\ndef k(a, n: ConstExpr[int]):\n    a[0] = n\n";
        let m = Module::parse("k.py", src).expect("parse");
        let (args, _) = types::signature::parse_signature("int32[::1]").expect("sig");
        let options = CompileOptions {
            constants: vec![("n".into(), ConstValue::Int(12345))],
            ..Default::default()
        };
        let k = m
            .compile_multi("k", &args, &[Arch::SM_80, Arch::SM_90], &options)
            .expect("compile");
        assert_eq!(k.variants.len(), 2);
        for v in &k.variants {
            assert!(v.ptx.contains("12345"), "{}", v.ptx);
        }
        // Without the constant: the diagnostic that asks for it.
        let e = m
            .compile_multi("k", &args, &[Arch::SM_80], &CompileOptions::default())
            .expect_err("n has no value");
        assert!(e.to_string().contains("E0218"), "{e}");
    }

    #[test]
    #[cfg(feature = "ptx")]
    fn errors_debug_as_their_rendered_message() {
        let src = "from cuda import device\n@device.kernel\ndef k(a):\n    a[0] = nope\n";
        let m = Module::parse("k.py", src).expect("parse");
        let (args, _) = types::signature::parse_signature("int32[::1]").expect("sig");
        let e = m
            .compile("k", &args, &CompileOptions::default())
            .expect_err("undefined name");
        let debug = format!("{e:?}");
        assert_eq!(debug, e.to_string());
        assert!(
            debug.contains("a[0] = nope") && debug.starts_with("error["),
            "{debug}"
        );
        let alt = format!("{e:#?}");
        assert!(alt.starts_with("Diagnostics("), "{alt}");
        assert!(!alt.contains("from cuda import device"), "{alt}");
        // What `?` in `main` prints: `Error: ` and the Debug text.
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert_eq!(format!("{boxed:?}"), debug);
        assert!(boxed.source().is_some());
    }

    #[test]
    #[cfg(feature = "ptx")]
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
        #[cfg(feature = "host")]
        assert_send_sync::<HostFunction>();
    }
}
