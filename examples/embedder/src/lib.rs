//! `saxpyfw`: a toy array framework that embeds pydevice. It owns a kernel written in the
//! `cuda.device` dialect, checks it when the framework starts, specializes it for the
//! framework's dtypes, lays out its launch buffer from the ABI, and compiles it to PTX. Only
//! pydevice's public API is used; this is what a framework adds to its Cargo.toml:
//!
//! ```toml
//! [dependencies]
//! pydevice = "0.1"
//! ```

use pydevice::types::Type;
use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, CompiledKernel, Error, KernelAbi, Module};

/// The framework's kernel: `out = a * x + y`, element by element.
pub const SAXPY: &str = r#"
from cuda import device

@device.kernel
def saxpy(a, x, y, out):
    i = device.tid(1)
    if i < len(out):
        out[i] = a * x[i] + y[i]
"#;

/// The framework: the parsed, checked module.
pub struct Framework {
    module: Module,
}

/// One parameter of a kernel as the framework shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The Python name.
    pub name: String,
    /// The type, in Numba's notation.
    pub ty: String,
    /// Where it starts in the launch buffer.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

impl Framework {
    /// Parses and type-checks the framework's kernels. A broken kernel is an `Error` whose
    /// `Display` (and `Debug`) is the rendered diagnostic, source line included.
    pub fn new() -> Result<Framework, Error> {
        Framework::from_source("saxpy.py", SAXPY)
    }

    /// The same, for kernel source a user hands the framework.
    pub fn from_source(name: &str, source: &str) -> Result<Framework, Error> {
        let module = Module::parse(name, source)?;
        // Every fully annotated entry is checked now; unannotated ones at specialization.
        module.check()?;
        Ok(Framework { module })
    }

    /// The argument types of `saxpy` for a dtype (`"float32"`, `"float64"`).
    pub fn signature(dtype: &str) -> Vec<Type> {
        let sig = format!("{dtype}, {dtype}[::1], {dtype}[::1], {dtype}[::1]");
        parse_signature(&sig)
            .expect("the framework's own signature parses")
            .0
    }

    /// Specializes `saxpy` for `dtype` and returns its ABI: what the framework packs.
    pub fn abi(&self, dtype: &str) -> Result<KernelAbi, Error> {
        let spec = self
            .module
            .specialize("saxpy", &Framework::signature(dtype))?;
        Ok(spec.abi())
    }

    /// The parameters with their launch-buffer offsets.
    pub fn params(&self, dtype: &str) -> Result<Vec<Param>, Error> {
        let abi = self.abi(dtype)?;
        Ok(abi
            .params
            .iter()
            .zip(abi.param_offsets())
            .map(|(p, offset)| Param {
                name: p.name.clone(),
                ty: p.ty.to_string(),
                offset,
                size: p.layout.size,
            })
            .collect())
    }

    /// Compiles `saxpy` for `dtype` to PTX.
    pub fn compile(&self, dtype: &str) -> Result<CompiledKernel, Error> {
        self.module.compile(
            "saxpy",
            &Framework::signature(dtype),
            &CompileOptions::default(),
        )
    }
}
