//! The `pydevice` command line: a thin client of the library's public API, its arguments
//! parsed by clap (derive).
//!
//! ```text
//! pydevice compile FILE.py --entry NAME [--sig SIG] [--const NAME=VALUE ...] [--arch sm_90] [--emit ptx|llvm|ir|abi] [-o OUT|-] [--debug]
//! pydevice check FILE.py [--entry NAME --sig SIG [--const NAME=VALUE ...]]
//! pydevice abi FILE.py [--type NAME ...] [--json | --header]
//! pydevice run FILE.py --entry NAME --grid X[,Y[,Z]] --block X[,Y[,Z]] [--shared N] [--arch smXX]
//!              --arg NAME=file.npy --arg NAME=dtype:value ... [--const NAME=VALUE ...] [--out NAME=path.npy] [--bench N]
//!              [--seed N] [--debug] [--cpu [--deterministic]]
//! pydevice call FILE.py --entry NAME --arg NAME=dtype:value ... [--seed N [--thread T]]
//! ```
//! Exit status: 0 on success (and for `--help`, `--version`), 1 when the program has errors
//! (diagnostics on stderr), 2 for usage errors and run-time failures (`error: ...` on
//! stderr). Source files and `.npy` files are read only when they are regular files of at
//! most [`MAX_INPUT_BYTES`].

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};
use pydevice::abi::{self, ArgValue, ArrayArg};
use pydevice::runtime::npy::NpyArray;
use pydevice::runtime::records::NpyRecords;
use pydevice::runtime::{Device, LaunchConfig};
use pydevice::types::{Layout, Scalar, Type};
use pydevice::{Arch, CompileOptions, HostValue, Module, OptLevel};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The largest source or `.npy` file the CLI reads: 64 MiB. A larger file, or one that is
/// not a regular file (a FIFO, a character device such as `/dev/zero`, a directory), is
/// refused with an error instead of being read without end.
const MAX_INPUT_BYTES: u64 = 64 << 20;

/// The dynamic shared memory a launch may ask for without raising the kernel's limit.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

const AFTER_HELP: &str = "\
SIG uses Numba's notation: \"float32[:], float64[:, ::1], int32\" or \"void(float32[:], int32)\",
and may name the module's own @struct classes (\"Particle[:], float32\").
--const gives the value of a parameter hinted ConstExpr (True, False, an integer or a float);
the kernel is specialized for it, and SIG and --arg leave that parameter out.
Source and .npy files must be regular files of at most 64 MiB.
Exit status: 0 success, 1 the program has errors, 2 usage or run-time error.";

/// Compiles CUDA SIMT kernels written in Python (the cuda.device, numba-cuda and cupyx.jit
/// dialects) to PTX, checks them, prints parameter layouts, launches kernels and runs
/// `@func`s on the host.
#[derive(Parser, Debug)]
#[command(
    name = "pydevice",
    version,
    about,
    after_help = AFTER_HELP,
    arg_required_else_help = true,
    // As the hand parser did: an option given twice takes its last value.
    args_override_self = true,
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Compiles an entry to PTX (or LLVM IR, pydevice's IR, or its ABI as JSON).
    Compile(CompileArgs),
    /// Type-checks a module, or one entry for a signature.
    Check(CheckArgs),
    /// Prints the layouts of the module's @struct classes or of named types, as text, JSON or
    /// a CUDA C++ header.
    Abi(AbiArgs),
    /// Compiles a kernel for the GPU, launches it once on .npy and scalar arguments, and
    /// writes arrays back.
    Run(RunArgs),
    /// Runs a @func on this machine (JIT-compiled through Cranelift) and prints its result as
    /// Python's repr would, on the last line.
    Call(CallArgs),
}

/// Text options take any argument the OS gives and refuse one that is not UTF-8 with a
/// message naming it (file names, which need not be UTF-8, are `OsString`/`PathBuf`).
fn text() -> impl TypedValueParser<Value = String> {
    OsStringValueParser::new().try_map(|s: OsString| {
        s.into_string()
            .map_err(|s| format!("not valid UTF-8: `{}`", s.to_string_lossy()))
    })
}

/// What `compile --emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Emit {
    /// PTX.
    Ptx,
    /// Optimized LLVM IR.
    Llvm,
    /// pydevice's typed IR as text.
    Ir,
    /// The parameter layouts as JSON.
    Abi,
}

/// The entry, its signature and its `ConstExpr` values.
#[derive(clap::Args, Debug)]
struct EntryArgs {
    /// The signature in Numba's notation; without it, the entry's annotations.
    #[arg(long, value_name = "SIG", value_parser = text())]
    sig: Option<String>,
    /// The value of a parameter hinted ConstExpr (True, False, an integer or a float).
    #[arg(long = "const", value_name = "NAME=VALUE", value_parser = text())]
    consts: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct CompileArgs {
    /// The Python source file.
    file: PathBuf,
    /// The @kernel or @func to compile.
    #[arg(long, value_name = "NAME", value_parser = text())]
    entry: String,
    #[command(flatten)]
    entry_args: EntryArgs,
    /// The target architecture (sm_90, 90, 9.0, compute_90).
    #[arg(long, value_name = "smXX", value_parser = text())]
    arch: Option<String>,
    /// What to write.
    #[arg(long, value_enum, default_value_t = Emit::Ptx)]
    emit: Emit,
    /// The optimization level, 0 to 3.
    #[arg(long, value_name = "0-3", value_parser = text())]
    opt: Option<String>,
    /// The output file; `-` (or none) is standard output.
    #[arg(short = 'o', value_name = "OUT")]
    output: Option<PathBuf>,
    /// Compiles as @kernel(debug=True): DWARF for cuda-gdb, at -O0.
    #[arg(long)]
    debug: bool,
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// The Python source file.
    file: PathBuf,
    /// Checks this entry only, for --sig (or its annotations).
    #[arg(long, value_name = "NAME", value_parser = text())]
    entry: Option<String>,
    #[command(flatten)]
    entry_args: EntryArgs,
}

#[derive(clap::Args, Debug)]
struct AbiArgs {
    /// The Python source file.
    file: PathBuf,
    /// A type to lay out: a @struct class, a vector such as float32x3, a number, or a type
    /// in Numba's notation (repeatable; default: every @struct class).
    #[arg(long = "type", value_name = "NAME", value_parser = text())]
    types: Vec<String>,
    /// Prints the layouts as JSON.
    #[arg(long, conflicts_with = "header")]
    json: bool,
    /// Prints a CUDA C++ header: the types, and extern "C" declarations of the module's
    /// interoperable functions unless --type narrows it.
    #[arg(long)]
    header: bool,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The Python source file.
    file: PathBuf,
    /// The @kernel to launch.
    #[arg(long, value_name = "NAME", value_parser = text())]
    entry: String,
    /// The grid: X[,Y[,Z]].
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = text())]
    grid: String,
    /// The block: X[,Y[,Z]].
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = text())]
    block: String,
    /// Bytes of dynamic shared memory per block (device.dynamic_shared_array()).
    #[arg(long, value_name = "N", value_parser = text())]
    shared: Option<String>,
    /// The architecture to compile for (default: the newest supported not above the device's).
    #[arg(long, value_name = "smXX", value_parser = text())]
    arch: Option<String>,
    /// An argument: NAME=FILE.npy, NAME=DTYPE:VALUE or NAME=(ITEM, ...) (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    args: Vec<OsString>,
    /// The value of a parameter hinted ConstExpr (True, False, an integer or a float).
    #[arg(long = "const", value_name = "NAME=VALUE", value_parser = text())]
    consts: Vec<String>,
    /// Writes an array argument back to a .npy file after the launch (repeatable).
    #[arg(long = "out", value_name = "NAME=FILE.npy")]
    outs: Vec<OsString>,
    /// Times N more launches and prints their median and minimum as JSON.
    #[arg(long, value_name = "N", value_parser = text())]
    bench: Option<String>,
    /// The seed of the kernel's random numbers (default: a fresh one).
    #[arg(long, value_name = "N", value_parser = text())]
    seed: Option<String>,
    /// Compiles as @kernel(debug=True): DWARF for cuda-gdb, at -O0.
    #[arg(long)]
    debug: bool,
    /// Runs the kernel on the CPU back end (docs/semantics.md "CPU back end"): no GPU
    /// needed; `--bench` then times launches on the CPU.
    #[arg(long, conflicts_with_all = ["arch", "debug"])]
    cpu: bool,
    /// With `--cpu`: runs the blocks one after the other in grid order (the same results at
    /// every run).
    #[arg(long, requires = "cpu")]
    deterministic: bool,
}

#[derive(clap::Args, Debug)]
struct CallArgs {
    /// The Python source file.
    file: PathBuf,
    /// The @func to run.
    #[arg(long, value_name = "NAME", value_parser = text())]
    entry: String,
    /// A scalar argument: NAME=DTYPE:VALUE (repeatable).
    #[arg(long = "arg", value_name = "NAME=DTYPE:VALUE")]
    args: Vec<OsString>,
    /// Draws cuda.device.random numbers as a launch with this seed does.
    #[arg(long, value_name = "N", value_parser = text())]
    seed: Option<String>,
    /// ... as thread T of that launch does (default 0).
    #[arg(long, value_name = "T", value_parser = text())]
    thread: Option<String>,
}

enum Failure {
    /// The program is ill-formed (diagnostics already printed).
    Program,
    /// A run-time failure, or a usage error found after parsing.
    Other(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure::Other(s)
    }
}

impl From<&str> for Failure {
    fn from(s: &str) -> Self {
        Failure::Other(s.to_string())
    }
}

/// Reads a source or `.npy` file: a regular file of at most [`MAX_INPUT_BYTES`]. The file
/// is opened without blocking, so a FIFO with no writer is refused instead of waiting, and
/// its type and size are read from the open file, not from the path.
fn read_input(path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, a socket or a device)"
        };
        return Err(format!(
            "cannot read {shown}: it is {what}; pydevice reads regular files only"
        ));
    }
    let too_big = || {
        format!(
            "cannot read {shown}: it is larger than {} MiB, the most pydevice reads",
            MAX_INPUT_BYTES >> 20
        )
    };
    if meta.len() > MAX_INPUT_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // A file that grows while it is read stops at the limit too.
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

fn load(path: &Path) -> Result<Module, Failure> {
    let bytes = read_input(path)?;
    let src = String::from_utf8(bytes)
        .map_err(|_| format!("cannot read {}: it is not UTF-8 text", path.display()))?;
    Module::parse(&path.to_string_lossy(), &src).map_err(|d| {
        eprint!("{}", d.render());
        Failure::Program
    })
}

fn arch_option(arch: Option<&str>) -> Result<Option<Arch>, String> {
    arch.map(|s| s.parse::<Arch>().map_err(|e| e.to_string()))
        .transpose()
}

/// The argument types: from `--sig`, or from the entry's annotations.
fn signature(module: &Module, entry: &str, sig: Option<&str>) -> Result<Vec<Type>, Failure> {
    if let Some(sig) = sig {
        // Numba's notation, where the module's own `@struct` classes may be named.
        return module
            .parse_signature(sig)
            .map_err(|e| Failure::Other(format!("bad --sig: {e}")));
    }
    let info = module
        .entries()
        .into_iter()
        .find(|e| e.name == entry)
        .ok_or_else(|| {
            format!(
                "no @kernel or @func named `{entry}` in {}",
                module.file().name
            )
        })?;
    info.annotated.ok_or_else(|| {
        Failure::Other(format!(
            "`{entry}` has parameters without type annotations; give their types with --sig (parameters: {})",
            info.params.join(", ")
        ))
    })
}

fn report(e: pydevice::Error) -> Failure {
    match e {
        pydevice::Error::Diagnostics(d) => {
            eprint!("{}", d.render());
            Failure::Program
        }
        other => Failure::Other(other.to_string()),
    }
}

/// The `--const NAME=VALUE` options: the values of `ConstExpr` parameters.
fn constants(consts: &[String]) -> Result<Vec<(String, pydevice::ConstValue)>, Failure> {
    consts
        .iter()
        .map(|text| {
            let (name, value) = text
                .split_once('=')
                .ok_or_else(|| format!("bad --const `{text}`: write NAME=VALUE"))?;
            let v = value
                .parse::<pydevice::ConstValue>()
                .map_err(|e| format!("bad --const `{text}`: {e}"))?;
            Ok((name.trim().to_string(), v))
        })
        .collect()
}

/// A number option (`--seed`, `--bench`, ...), with a message naming it when it is not one.
fn number<T: std::str::FromStr>(value: Option<&str>, name: &str) -> Result<Option<T>, String> {
    value
        .map(|s| s.parse().map_err(|_| format!("bad --{name} `{s}`")))
        .transpose()
}

fn cmd_compile(a: &CompileArgs) -> Result<(), Failure> {
    let module = load(&a.file)?.with_debug_info(a.debug);
    let entry = a.entry.as_str();
    let args = signature(&module, entry, a.entry_args.sig.as_deref())?;
    let mut options = CompileOptions {
        arch: arch_option(a.arch.as_deref())?.unwrap_or(Arch::DEFAULT),
        constants: constants(&a.entry_args.consts)?,
        ..CompileOptions::default()
    };
    if let Some(o) = &a.opt {
        options.opt_level = o.parse().map_err(|_| format!("bad --opt `{o}`"))?;
    }
    if a.emit == Emit::Ptx {
        // LLVM's set-up overlaps the front end (`--debug` compiles at -O0).
        pydevice::warm_up(&CompileOptions {
            opt_level: if a.debug {
                OptLevel::O0
            } else {
                options.opt_level
            },
            ..options.clone()
        });
    }
    let spec = module
        .specialize_with(entry, &args, &options.constants, options.arch)
        .map_err(|d| report(d.into()))?;
    let text = match a.emit {
        Emit::Ptx => spec.to_ptx(&options).map_err(|e| report(e.into()))?.ptx,
        Emit::Llvm => spec.to_llvm_ir(&options).map_err(|e| report(e.into()))?,
        Emit::Ir => spec.program().to_string(),
        Emit::Abi => serde_json::to_string_pretty(&spec.abi()).map_err(|e| e.to_string())? + "\n",
    };
    match a.output.as_deref().filter(|o| o.as_os_str() != "-") {
        Some(out) => {
            std::fs::write(out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?
        }
        None => print!("{text}"),
    }
    Ok(())
}

fn cmd_check(a: &CheckArgs) -> Result<(), Failure> {
    let file = a.file.to_string_lossy();
    let module = load(&a.file)?;
    if let Some(entry) = &a.entry {
        let args = signature(&module, entry, a.entry_args.sig.as_deref())?;
        module
            .specialize_with(
                entry,
                &args,
                &constants(&a.entry_args.consts)?,
                Arch::DEFAULT,
            )
            .map_err(|d| report(d.into()))?;
        eprintln!("{file}: `{entry}` checked, no errors");
        return Ok(());
    }
    let unchecked = module.check().map_err(|d| report(d.into()))?;
    let n = module.entries().len();
    eprintln!(
        "{file}: {} of {n} device function(s) type-checked, no errors",
        n - unchecked.len()
    );
    if !unchecked.is_empty() {
        eprintln!(
            "note: not type-checked for lack of parameter annotations (use --entry and --sig): {}",
            unchecked.join(", ")
        );
    }
    Ok(())
}

fn cmd_abi(a: &AbiArgs) -> Result<(), Failure> {
    let path = &a.file;
    let file = path.to_string_lossy();
    let module = load(path)?;
    let named = &a.types;
    let mut roots = Vec::new();
    for name in named {
        let name = name.as_str();
        roots.push(module.named_type(name).ok_or_else(|| {
            if name.starts_with("Record(") {
                // Say why numba's record notation was refused (a packed dtype, usually).
                if let Err(why) = pydevice::types::signature::parse_type(name) {
                    return format!("`{name}`: {why}");
                }
            }
            format!(
                "no type `{name}` in {file} (a @struct class, a vector such as float32x3, \
                 a number type, or a type in Numba's notation)"
            )
        })?);
    }
    if named.is_empty() {
        roots = module.structs();
    }
    if a.header {
        // With --type, only those types; otherwise the whole module's interface.
        let functions = if named.is_empty() {
            interop_functions(&module)?
        } else {
            Vec::new()
        };
        let stem = path
            .file_stem()
            .map_or(file.to_string(), |s| s.to_string_lossy().into_owned());
        print!("{}", abi::header::header(&stem, &roots, &functions));
        return Ok(());
    }
    let layouts: Vec<abi::TypeLayout> = abi::header::types_in(&roots)
        .iter()
        .map(abi::layout_of)
        .collect();
    if a.json {
        let text = serde_json::to_string_pretty(&layouts).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(());
    }
    for l in &layouts {
        println!(
            "{} (C++ {}): size {}, align {}",
            l.name, l.cxx, l.size, l.align
        );
        for f in &l.fields {
            println!("  {:>4}  {}: {} ({} bytes)", f.offset, f.name, f.ty, f.size);
        }
    }
    if layouts.is_empty() {
        eprintln!("{file}: no @struct classes (name types with --type)");
    }
    Ok(())
}

/// The declarations of the module's `interop=True` entries whose parameters are all
/// annotated, then of its `extern` functions (`abi::header::interop_functions`).
fn interop_functions(module: &Module) -> Result<Vec<abi::header::FunctionDecl>, Failure> {
    let (out, left_out) = module.interop_functions().map_err(|d| report(d.into()))?;
    for name in left_out {
        eprintln!("note: `{name}` is left out of the header: its parameters need type annotations");
    }
    Ok(out)
}

fn dims(s: &str, what: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s
        .trim_matches(['(', ')', '[', ']'])
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!(
            "--{what} takes 1 to 3 comma-separated sizes, got `{s}`"
        ));
    }
    let mut d = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        d[i] = p.parse().map_err(|_| format!("bad --{what} size `{p}`"))?;
        if d[i] == 0 {
            return Err(format!("--{what} sizes must be positive"));
        }
    }
    Ok(d)
}

/// A kernel argument given on the command line.
enum CliArg {
    Array(NpyArray),
    /// A `.npy` file of records (a structured dtype made with `align=True`).
    Records(NpyRecords),
    Scalar(Scalar, ArgValue),
    /// A tuple of scalars and tuples: `(int64:1, (float64:2.5, bool:true))`.
    Tuple(Vec<CliArg>),
    /// A record passed by value: a zero-dimensional structured `.npy` file.
    Record(Type, Vec<u8>),
}

impl CliArg {
    /// The parameter type this argument gives its kernel parameter.
    fn ty(&self) -> Type {
        match self {
            CliArg::Scalar(s, _) => Type::Scalar(*s),
            CliArg::Array(arr) => {
                let layout = if arr.fortran_order && arr.shape.len() > 1 {
                    Layout::F
                } else {
                    Layout::C
                };
                Type::array(arr.dtype, arr.shape.len() as u8, layout)
            }
            CliArg::Records(r) => r.array_type(),
            CliArg::Tuple(items) => Type::Tuple(items.iter().map(CliArg::ty).collect()),
            CliArg::Record(t, _) => t.clone(),
        }
    }

    /// The value of a scalar, tuple or record argument (arrays are uploaded by the caller).
    fn value(&self) -> Option<ArgValue> {
        match self {
            CliArg::Scalar(_, v) => Some(v.clone()),
            CliArg::Tuple(items) => items
                .iter()
                .map(CliArg::value)
                .collect::<Option<Vec<_>>>()
                .map(ArgValue::Tuple),
            CliArg::Record(_, b) => Some(ArgValue::Bytes(b.clone())),
            CliArg::Array(_) | CliArg::Records(_) => None,
        }
    }
}

/// Splits `a, (b, c), d` at the commas outside parentheses.
fn split_top(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("unbalanced `)` in `{text}`"));
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced `(` in `{text}`"));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// A tuple argument `(ITEM, ...)`: each item `DTYPE:VALUE` (a complex one `complex64:(RE,IM)`)
/// or a nested tuple; `()` is the empty tuple and `(int64:1)` or `(int64:1,)` a 1-tuple.
fn parse_tuple(text: &str, depth: usize) -> Result<CliArg, String> {
    if depth > pydevice::types::MAX_TYPE_DEPTH {
        return Err(format!(
            "tuple argument nests deeper than {} levels",
            pydevice::types::MAX_TYPE_DEPTH
        ));
    }
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!("bad tuple `{text}`"))?;
    let mut items = Vec::new();
    let parts = split_top(inner)?;
    let last = parts.len() - 1;
    for (i, part) in parts.into_iter().enumerate() {
        let part = part.trim();
        if part.is_empty() {
            // `()` and the trailing comma of `(x,)`
            if i == last && (i == 0 || items.len() == i) {
                continue;
            }
            return Err(format!("empty item in tuple `{text}`"));
        }
        if part.starts_with('(') {
            items.push(parse_tuple(part, depth + 1)?);
            continue;
        }
        match parse_scalar(part)? {
            Some((s, v)) => items.push(CliArg::Scalar(s, v)),
            None => {
                return Err(format!(
                    "tuple item `{part}` must be DTYPE:VALUE or a tuple (arrays cannot be tuple items)"
                ));
            }
        }
    }
    Ok(CliArg::Tuple(items))
}

/// `DTYPE:VALUE` as a scalar (None when the text does not start with a dtype name).
fn parse_scalar(value: &str) -> Result<Option<(Scalar, ArgValue)>, String> {
    if let Some((dtype, v)) = value.split_once(':')
        && let Some(s) = Scalar::from_name(dtype)
    {
        let av = if s == Scalar::Bool {
            match v.to_ascii_lowercase().as_str() {
                "true" | "1" => ArgValue::Bool(true),
                "false" | "0" => ArgValue::Bool(false),
                _ => return Err(format!("bad bool `{v}`")),
            }
        } else if s.is_complex() {
            // `RE,IM` or a real number.
            let bad = || format!("bad {s} `{v}` (write RE,IM)");
            let v = v
                .strip_prefix('(')
                .and_then(|x| x.strip_suffix(')'))
                .unwrap_or(v);
            match v.split_once(',') {
                Some((re, im)) => ArgValue::Complex(
                    re.trim().parse().map_err(|_| bad())?,
                    im.trim().parse().map_err(|_| bad())?,
                ),
                None => ArgValue::Float(v.parse().map_err(|_| bad())?),
            }
        } else if s.is_float() {
            ArgValue::Float(v.parse().map_err(|_| format!("bad {s} `{v}`"))?)
        } else if s.is_signed() {
            ArgValue::Int(v.parse().map_err(|_| format!("bad {s} `{v}`"))?)
        } else {
            ArgValue::UInt(v.parse().map_err(|_| format!("bad {s} `{v}`"))?)
        };
        return Ok(Some((s, av)));
    }
    Ok(None)
}

/// Splits `NAME=VALUE` as the OS gave it: the name must be UTF-8, the value may be any file
/// name.
fn split_name(text: &OsStr) -> Option<(&str, OsString)> {
    let bytes = text.as_encoded_bytes();
    let at = bytes.iter().position(|&b| b == b'=')?;
    let name = std::str::from_utf8(&bytes[..at]).ok()?;
    // SAFETY: split at an ASCII `=` of a string from the OS, so the rest is a valid OS
    // string (the documented contract of from_encoded_bytes_unchecked).
    let value = unsafe { OsString::from_encoded_bytes_unchecked(bytes[at + 1..].to_vec()) };
    Some((name, value))
}

fn parse_arg(text: &OsStr) -> Result<(String, CliArg), String> {
    let (name, value_os) = split_name(text).ok_or_else(|| {
        format!(
            "--arg `{}` must be NAME=VALUE (NAME in UTF-8)",
            text.to_string_lossy()
        )
    })?;
    let Some(value) = value_os.to_str() else {
        // Not text, so a file name.
        return parse_file_arg(name, Path::new(&value_os));
    };
    if value.trim_start().starts_with('(') {
        return Ok((name.to_string(), parse_tuple(value, 1)?));
    }
    if let Some((s, av)) = parse_scalar(value)? {
        return Ok((name.to_string(), CliArg::Scalar(s, av)));
    }
    parse_file_arg(name, Path::new(value))
}

/// `--arg NAME=FILE`: an array, array of records or record read from a `.npy` file.
fn parse_file_arg(name: &str, path: &Path) -> Result<(String, CliArg), String> {
    let value = path.display();
    let bytes = read_input(path)?;
    // A structured dtype's `descr` is a list of fields.
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    if head.contains("'descr': [") || pydevice::runtime::records::text_descr(&head).is_some() {
        let recs = NpyRecords::parse(&bytes).map_err(|e| format!("{value}: {e}"))?;
        if recs.shape.is_empty() {
            // One record, passed by value.
            let t = Type::Struct(Box::new(recs.record.clone()));
            return Ok((name.to_string(), CliArg::Record(t, recs.data)));
        }
        return Ok((name.to_string(), CliArg::Records(recs)));
    }
    let arr = NpyArray::parse(&bytes).map_err(|e| format!("{value}: {e}"))?;
    Ok((name.to_string(), CliArg::Array(arr)))
}

fn cmd_run(a: &RunArgs) -> Result<(), Failure> {
    let seed: Option<u64> = a
        .seed
        .as_deref()
        .map(|s| {
            s.parse()
                .map_err(|_| format!("bad --seed `{s}` (an integer 0 to 2**64-1)"))
        })
        .transpose()?;
    let path = &a.file;
    let file = path.to_string_lossy();
    let module = load(path)?.with_debug_info(a.debug);
    let entry = a.entry.as_str();
    let grid = dims(&a.grid, "grid")?;
    let block = dims(&a.block, "block")?;
    let shared: u32 = number(a.shared.as_deref(), "shared")?.unwrap_or(0);
    let info = module
        .entries()
        .into_iter()
        .find(|e| e.name == entry && e.is_kernel)
        .ok_or_else(|| format!("no @kernel named `{entry}` in {file}"))?;
    let mut given: HashMap<String, CliArg> = HashMap::new();
    for text in &a.args {
        let (name, arg) = parse_arg(text)?;
        if !info.params.contains(&name) {
            return Err(Failure::Other(format!(
                "`{entry}` has no parameter `{name}` (parameters: {})",
                info.params.join(", ")
            )));
        }
        given.insert(name, arg);
    }
    let consts = constants(&a.consts)?;
    // `ConstExpr` parameters take `--const`, not `--arg`: they are not launch arguments.
    let params: Vec<String> = info
        .params
        .iter()
        .filter(|p| !info.constexpr.contains(p))
        .cloned()
        .collect();
    if let Some(p) = info.constexpr.iter().find(|p| given.contains_key(*p)) {
        return Err(Failure::Other(format!(
            "`{p}` is a `ConstExpr` parameter: give its value with --const {p}=VALUE"
        )));
    }
    let mut types = Vec::new();
    for p in &params {
        let arg = given
            .get(p)
            .ok_or_else(|| format!("missing --arg {p}=... (every parameter needs one)"))?;
        types.push(match arg {
            // numba passes a record argument by reference and copies it back.
            CliArg::Record(Type::Struct(st), _) if module.is_numba() => Type::StructRef {
                st: st.clone(),
                space: pydevice::types::MemSpace::Global,
            },
            arg => arg.ty(),
        });
    }
    if a.cpu {
        let run = CpuRun {
            entry,
            file: &file,
            params: &params,
            types: &types,
            given: &given,
            grid,
            block,
            shared,
            seed,
        };
        return run.go(a, &module, &consts);
    }
    let device = Device::open(0).map_err(|e| e.to_string())?;
    let arch = match arch_option(a.arch.as_deref())? {
        Some(x) => x,
        None => {
            let dev = device.arch().map_err(|e| e.to_string())?;
            // The newest supported architecture not above the device's.
            Arch::SUPPORTED
                .iter()
                .rev()
                .find(|x| **x <= dev)
                .copied()
                .unwrap_or(Arch::DEFAULT)
        }
    };
    let kernel = module
        .compile(
            entry,
            &types,
            &CompileOptions {
                arch,
                constants: consts,
                ..CompileOptions::default()
            },
        )
        .map_err(report)?;
    let loaded = device
        .load(&kernel.ptx, &kernel.abi)
        .map_err(|e| e.to_string())?;
    // More than the default 48 KiB of dynamic shared memory must be allowed first, as
    // cudaFuncSetAttribute does in CUDA C++ (docs/semantics.md §5.8).
    if shared > DEFAULT_DYNAMIC_SHARED {
        loaded
            .set_max_dynamic_shared(shared)
            .map_err(|e| e.to_string())?;
    }
    let mut buffers = HashMap::new();
    let values = launch_values(&params, &types, &given, |p, bytes| {
        let buf = device.upload(bytes).map_err(|e| e.to_string())?;
        let address = device.address(&buf);
        buffers.insert(p.to_string(), buf);
        Ok(address)
    })?;
    let cfg = LaunchConfig {
        grid,
        block,
        shared_bytes: shared,
    };
    // A kernel that synchronizes the grid is launched cooperatively (docs/semantics.md §17.4).
    let packed = loaded
        .pack(&values)
        .map_err(|e| e.to_string())?
        .with_seed(seed);
    let stream = pydevice::runtime::Stream::default_stream();
    if loaded.abi().cooperative {
        device.launch_cooperative_packed(&loaded, &packed, &cfg, &stream)
    } else {
        device.launch_packed(&loaded, &packed, &cfg, &stream)
    }
    .map_err(|e| e.to_string())?;
    device
        .synchronize()
        .map_err(|e| format!("kernel `{entry}` failed: {e}"))?;
    device
        .check_bounds(&loaded)
        .map_err(|e| format!("{file}: {e}"))?;
    write_outs(&a.outs, &given, |name| {
        buffers
            .get(name)
            .map(|b| device.download(b).map_err(|e| e.to_string()))
    })?;
    eprintln!(
        "ran `{entry}` on {} ({arch}) with grid {grid:?} block {block:?}",
        device.name().unwrap_or_default()
    );
    if let Some(runs) = number::<usize>(a.bench.as_deref(), "bench")? {
        let mut t = device
            .time_launches(&loaded, &values, &cfg, 5, runs.max(1))
            .map_err(|e| e.to_string())?;
        t.sort_by(f64::total_cmp);
        let median = t[t.len() / 2];
        println!(
            "{{\"kernel\":\"{entry}\",\"median_us\":{median:.3},\"min_us\":{:.3},\"runs\":{}}}",
            t[0],
            t.len()
        );
    }
    Ok(())
}

/// The launch arguments of `run`, in parameter order; `upload(name, bytes)` places an
/// array's (or a record passed by reference's) bytes where the kernel reads them and gives
/// their address.
fn launch_values(
    params: &[String],
    types: &[Type],
    given: &HashMap<String, CliArg>,
    mut upload: impl FnMut(&str, &[u8]) -> Result<u64, Failure>,
) -> Result<Vec<ArgValue>, Failure> {
    let mut values = Vec::new();
    for (p, ty) in params.iter().zip(types) {
        match &given[p] {
            CliArg::Record(_, bytes) if matches!(ty, Type::StructRef { .. }) => {
                values.push(ArgValue::UInt(upload(p, bytes)?));
            }
            arg @ (CliArg::Scalar(..) | CliArg::Tuple(_) | CliArg::Record(..)) => {
                values.push(arg.value().ok_or("an array inside a tuple")?)
            }
            CliArg::Array(arr) => values.push(ArgValue::Array(ArrayArg {
                data: upload(p, &arr.data)?,
                shape: arr.shape.clone(),
                strides: arr.element_strides(),
            })),
            CliArg::Records(r) => values.push(ArgValue::Array(ArrayArg {
                data: upload(p, &r.data)?,
                shape: r.shape.clone(),
                strides: r.element_strides(),
            })),
        }
    }
    Ok(values)
}

/// Writes the `--out NAME=FILE.npy` arrays; `download(name)` gives the bytes the kernel
/// left in argument `name`'s memory (`None` if it has none).
fn write_outs(
    outs: &[OsString],
    given: &HashMap<String, CliArg>,
    download: impl Fn(&str) -> Option<Result<Vec<u8>, String>>,
) -> Result<(), Failure> {
    for o in outs {
        let (name, out) = split_name(o).ok_or_else(|| {
            format!(
                "--out `{}` must be NAME=PATH (NAME in UTF-8)",
                o.to_string_lossy()
            )
        })?;
        let (Some(data), Some(arg)) = (download(name), given.get(name)) else {
            return Err(Failure::Other(format!(
                "--out {name}: `{name}` is not an array argument"
            )));
        };
        let data = data?;
        let bytes = match arg {
            CliArg::Array(arr) => NpyArray {
                data: data[..arr.data.len()].to_vec(),
                ..arr.clone()
            }
            .to_bytes(),
            CliArg::Records(r) => NpyRecords {
                data: data[..r.data.len()].to_vec(),
                ..r.clone()
            }
            .to_bytes(),
            // A record passed by reference: a zero-dimensional structured .npy.
            CliArg::Record(Type::Struct(st), b) => NpyRecords {
                record: (**st).clone(),
                shape: Vec::new(),
                fortran_order: false,
                data: data[..b.len()].to_vec(),
            }
            .to_bytes(),
            CliArg::Scalar(..) | CliArg::Tuple(_) | CliArg::Record(..) => {
                return Err(Failure::Other(format!(
                    "--out {name}: `{name}` is not an array argument"
                )));
            }
        };
        std::fs::write(&out, bytes)
            .map_err(|e| format!("cannot write {}: {e}", Path::new(&out).display()))?;
    }
    Ok(())
}

/// `pydevice run --cpu`: the launch of `cmd_run` on the CPU back end.
struct CpuRun<'a> {
    entry: &'a str,
    file: &'a str,
    params: &'a [String],
    types: &'a [Type],
    given: &'a HashMap<String, CliArg>,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    seed: Option<u64>,
}

impl CpuRun<'_> {
    fn go(
        &self,
        a: &RunArgs,
        module: &Module,
        consts: &[(String, pydevice::ConstValue)],
    ) -> Result<(), Failure> {
        use pydevice::runtime::cpu::{CpuKernel, CpuLaunch};
        let entry = self.entry;
        let t0 = std::time::Instant::now();
        let kernel: CpuKernel = module
            .specialize_with(entry, self.types, consts, Arch::DEFAULT)
            .map_err(pydevice::Error::from)
            .and_then(|s| s.to_cpu())
            .map_err(report)?;
        let compile_s = t0.elapsed().as_secs_f64();
        // Host copies of the arrays (and of records passed by reference), 16-byte aligned,
        // which the kernel reads and writes in place.
        let mut buffers: HashMap<String, (Vec<u128>, usize)> = HashMap::new();
        let aligned = |bytes: &[u8]| {
            let mut v = vec![0u128; bytes.len().div_ceil(16).max(1)];
            // SAFETY: a u128 buffer seen as its bytes; it holds at least `bytes.len()`.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 16)
            };
            dst[..bytes.len()].copy_from_slice(bytes);
            (v, bytes.len())
        };
        for (p, ty) in self.params.iter().zip(self.types) {
            match &self.given[p] {
                CliArg::Record(_, bytes) if matches!(ty, Type::StructRef { .. }) => {
                    buffers.insert(p.clone(), aligned(bytes));
                }
                CliArg::Array(arr) => {
                    buffers.insert(p.clone(), aligned(&arr.data));
                }
                CliArg::Records(r) => {
                    buffers.insert(p.clone(), aligned(&r.data));
                }
                _ => {}
            }
        }
        let mut values = Vec::new();
        for (p, ty) in self.params.iter().zip(self.types) {
            let addr = buffers.get_mut(p).map(|(v, _)| v.as_mut_ptr() as u64);
            match (&self.given[p], addr) {
                (CliArg::Record(..), Some(addr)) if matches!(ty, Type::StructRef { .. }) => {
                    values.push(ArgValue::UInt(addr))
                }
                (CliArg::Array(arr), Some(addr)) => values.push(ArgValue::Array(ArrayArg {
                    data: addr,
                    shape: arr.shape.clone(),
                    strides: arr.element_strides(),
                })),
                (CliArg::Records(r), Some(addr)) => values.push(ArgValue::Array(ArrayArg {
                    data: addr,
                    shape: r.shape.clone(),
                    strides: r.element_strides(),
                })),
                (arg, _) => values.push(arg.value().ok_or("an array inside a tuple")?),
            }
        }
        let mut cfg = CpuLaunch::new(self.grid, self.block);
        cfg.shared_bytes = self.shared;
        cfg.seed = self.seed;
        cfg.deterministic = a.deterministic;
        let t1 = std::time::Instant::now();
        // SAFETY: every array descriptor points into `buffers`, alive and unaliased until
        // the end of this function and as large as the .npy file's shape says.
        unsafe { kernel.launch_raw(&values, &cfg) }
            .map_err(|e| format!("kernel `{entry}` failed on the CPU: {e}"))?;
        let launch_s = t1.elapsed().as_secs_f64();
        for o in &a.outs {
            let (name, out) = split_name(o).ok_or_else(|| {
                format!(
                    "--out `{}` must be NAME=PATH (NAME in UTF-8)",
                    o.to_string_lossy()
                )
            })?;
            let (Some((buf, len)), Some(arg)) = (buffers.get(name), self.given.get(name)) else {
                return Err(Failure::Other(format!(
                    "--out {name}: `{name}` is not an array argument"
                )));
            };
            // SAFETY: the buffer's first `len` bytes, written by the launch.
            let data =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), *len) }.to_vec();
            let bytes = match arg {
                CliArg::Array(arr) => NpyArray {
                    data,
                    ..arr.clone()
                }
                .to_bytes(),
                CliArg::Records(r) => NpyRecords { data, ..r.clone() }.to_bytes(),
                CliArg::Record(Type::Struct(st), _) => NpyRecords {
                    record: (**st).clone(),
                    shape: Vec::new(),
                    fortran_order: false,
                    data,
                }
                .to_bytes(),
                _ => {
                    return Err(Failure::Other(format!(
                        "--out {name}: `{name}` is not an array argument"
                    )));
                }
            };
            std::fs::write(&out, bytes)
                .map_err(|e| format!("cannot write {}: {e}", Path::new(&out).display()))?;
        }
        eprintln!(
            "ran `{entry}` of {} on the CPU with grid {:?} block {:?} (compile {:.1} ms, launch {:.3} ms)",
            self.file,
            self.grid,
            self.block,
            compile_s * 1e3,
            launch_s * 1e3
        );
        if let Some(runs) = number::<usize>(a.bench.as_deref(), "bench")? {
            let mut t = Vec::new();
            for _ in 0..runs.max(1) {
                let s = std::time::Instant::now();
                // SAFETY: as for the launch above.
                unsafe { kernel.launch_raw(&values, &cfg) }
                    .map_err(|e| format!("kernel `{entry}` failed on the CPU: {e}"))?;
                t.push(s.elapsed().as_secs_f64() * 1e6);
            }
            t.sort_by(f64::total_cmp);
            println!(
                "{{\"kernel\":\"{entry}\",\"median_us\":{:.3},\"min_us\":{:.3},\"runs\":{},\"compile_us\":{:.1},\"first_us\":{:.3},\"backend\":\"cpu\"}}",
                t[t.len() / 2],
                t[0],
                t.len(),
                compile_s * 1e6,
                launch_s * 1e6
            );
        }
        Ok(())
    }
}

fn cmd_call(a: &CallArgs) -> Result<(), Failure> {
    let path = &a.file;
    // `cuda.device.random` on the host: the stream of thread `--thread` (0) of a launch
    // with seed `--seed` (else a fresh seed).
    let thread = number::<u64>(a.thread.as_deref(), "thread")?.unwrap_or(0);
    if let Some(seed) = number::<u64>(a.seed.as_deref(), "seed")? {
        pydevice::random::set_host_stream(seed, thread);
    } else if a.thread.is_some() {
        pydevice::random::set_host_stream(pydevice::random::draw_seed(), thread);
    }
    let file = path.to_string_lossy();
    let module = load(path)?;
    let entry = a.entry.as_str();
    let info = module
        .entries()
        .into_iter()
        .find(|e| e.name == entry)
        .ok_or_else(|| format!("no @func named `{entry}` in {file}"))?;
    let mut given: HashMap<String, (Scalar, ArgValue)> = HashMap::new();
    for text in &a.args {
        let (name, arg) = parse_arg(text)?;
        let CliArg::Scalar(s, v) = arg else {
            return Err(Failure::Other(format!(
                "--arg {name}: call takes scalars only, as DTYPE:VALUE"
            )));
        };
        if !info.params.contains(&name) {
            return Err(Failure::Other(format!(
                "`{entry}` has no parameter `{name}` (parameters: {})",
                info.params.join(", ")
            )));
        }
        given.insert(name, (s, v));
    }
    let mut types = Vec::new();
    let mut values = Vec::new();
    for p in &info.params {
        let (s, v) = given
            .get(p)
            .ok_or_else(|| format!("missing --arg {p}=DTYPE:VALUE (every parameter needs one)"))?;
        types.push(Type::Scalar(*s));
        values.push(match v {
            ArgValue::Bool(b) => HostValue::Bool(*b),
            ArgValue::Int(i) => HostValue::Int(*i),
            ArgValue::UInt(u) => HostValue::UInt(*u),
            ArgValue::Float(x) => HostValue::Float64(*x),
            ArgValue::Complex(re, im) => HostValue::Complex128(*re, *im),
            _ => return Err(Failure::Other(format!("--arg {p}: not a scalar"))),
        });
    }
    let f = module.host_function(entry, &types).map_err(report)?;
    let r = f.call(&values).map_err(|e| e.to_string())?;
    println!("{r}");
    Ok(())
}

/// A closed pipe (`pydevice abi FILE.py | head`) ends the process quietly, as it ends
/// `cat`: Rust (and Python, for the Python package's `pydevice` command) ignores SIGPIPE, so
/// every `println!` would panic instead. Restoring the default action before anything is
/// printed covers every subcommand.
fn exit_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `run`, in a process that is the command line (the binary,
    // or `python -m pydevice`); `signal` is thread-safe, and resetting a signal's
    // disposition to its default has no other effect on this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Runs the command line on `args` (the program's name first) and returns its exit status.
/// The binary's `main` calls it, and so does the Python package's `pydevice` command
/// (`python -m pydevice`), whose extension module includes this file (`python/src/cli.rs`):
/// one command line, whichever way it is installed.
pub(crate) fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    exit_quietly_on_closed_pipe();
    // Usage errors print clap's message and exit with status 2; `--help` and `--version`
    // print to stdout and exit 0.
    let cli = Cli::parse_from(args);
    let result = match &cli.command {
        Command::Compile(a) => cmd_compile(a),
        Command::Check(a) => cmd_check(a),
        Command::Abi(a) => cmd_abi(a),
        Command::Run(a) => cmd_run(a),
        Command::Call(a) => cmd_call(a),
    };
    match result {
        Ok(()) => 0,
        Err(Failure::Program) => 1,
        Err(Failure::Other(m)) => {
            eprintln!("error: {m}");
            2
        }
    }
}

fn main() -> ExitCode {
    ExitCode::from(run(std::env::args_os()))
}
