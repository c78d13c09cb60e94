//! The `pydevice` command line: a thin client of the library's public API.
//!
//! ```text
//! pydevice compile FILE.py --entry NAME --sig "float32[:], int32" [--const NAME=VALUE ...] [--arch sm_90] [--emit ptx|llvm|ir|abi] [-o OUT] [--debug]
//! pydevice check FILE.py [--entry NAME --sig SIG [--const NAME=VALUE ...]]
//! pydevice abi FILE.py [--type NAME ...] [--json | --header]
//! pydevice run FILE.py --entry NAME --grid X[,Y[,Z]] --block X[,Y[,Z]] [--shared N] [--arch smXX]
//!              --arg NAME=file.npy --arg NAME=dtype:value ... [--const NAME=VALUE ...] [--out NAME=path.npy] [--bench N]
//!              [--seed N] [--debug]
//! pydevice call FILE.py --entry NAME --arg NAME=dtype:value ... [--seed N [--thread T]]
//! ```
//! Exit status: 0 on success, 1 when the program has errors, 2 for usage or run-time errors.

use pydevice::abi::{self, ArgValue, ArrayArg};
use pydevice::runtime::npy::NpyArray;
use pydevice::runtime::records::NpyRecords;
use pydevice::runtime::{Device, LaunchConfig};
use pydevice::types::{Layout, Scalar, Type};
use pydevice::{Arch, CompileOptions, HostValue, Module};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage:
  pydevice compile FILE.py --entry NAME [--sig SIG] [--const NAME=VALUE ...] [--arch smXX] [--emit ptx|llvm|ir|abi] [-o OUT]
                   [--debug]
  pydevice check FILE.py [--entry NAME --sig SIG [--const NAME=VALUE ...]]
  pydevice abi FILE.py [--type NAME ...] [--json | --header]
  pydevice run FILE.py --entry NAME --grid X[,Y[,Z]] --block X[,Y[,Z]] [--shared N] [--arch smXX]
               --arg NAME=FILE.npy | --arg NAME=DTYPE:VALUE ... [--const NAME=VALUE ...] [--out NAME=FILE.npy] [--bench N]
               [--seed N] [--debug]
  pydevice call FILE.py --entry NAME --arg NAME=DTYPE:VALUE ... [--seed N [--thread T]]
SIG uses Numba's notation: \"float32[:], float64[:, ::1], int32\" or \"void(float32[:], int32)\".
--const gives the value of a parameter hinted ConstExpr (True, False, an integer or a float);
the kernel is specialized for it, and SIG and --arg leave that parameter out.
abi prints the layouts of the module's @struct classes, or of each --type (a class, a vector
such as float32x3, a number, or a type in Numba's notation), with the types they are made of;
--header prints them as a CUDA C++ header, with extern \"C\" declarations of the module's
interoperable functions unless --type narrows it to the named types.
--seed gives the seed of the kernel's random numbers (cuda.device.random); without it each
launch draws a fresh one. --shared N gives each block N bytes of dynamic shared memory
(device.dynamic_shared_array()); above 48 KiB the kernel is allowed that much first.
--debug compiles every kernel as @kernel(debug=True) does: DWARF
for cuda-gdb (`break FILE.py:LINE`), at -O0, JIT-compiled with debug information.
call runs a @func on this machine (JIT-compiled through Cranelift) and prints its result as
Python's repr would, on the last line.";

/// The dynamic shared memory a launch may ask for without raising the kernel's limit.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

/// Options that take no value.
const FLAGS: &[&str] = &["json", "header", "debug"];

enum Failure {
    /// The program is ill-formed (diagnostics already printed).
    Program,
    /// Bad usage or a run-time failure.
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

struct Args {
    /// Positional arguments (file names), as the OS gave them.
    positional: Vec<OsString>,
    options: HashMap<String, Vec<OsString>>,
}

/// Options whose values name files (`--arg NAME=FILE`, `--out NAME=FILE`, `-o FILE`): kept
/// as the OS gave them, since a file name need not be UTF-8. Every other option is text.
const PATH_OPTIONS: &[&str] = &["o", "out", "arg"];

impl Args {
    fn parse(raw: &[OsString]) -> Result<Args, String> {
        let mut positional = Vec::new();
        let mut options: HashMap<String, Vec<OsString>> = HashMap::new();
        let mut i = 0;
        while i < raw.len() {
            let a = &raw[i];
            let bytes = a.as_encoded_bytes();
            let name_part = bytes
                .strip_prefix(b"--")
                .or_else(|| bytes.strip_prefix(b"-").filter(|n| *n == b"o"));
            if let Some(rest) = name_part {
                let (name, inline) = match rest.iter().position(|&b| b == b'=') {
                    Some(at) => (&rest[..at], Some(&rest[at + 1..])),
                    None => (rest, None),
                };
                let name = std::str::from_utf8(name)
                    .map_err(|_| format!("option `{}` is not valid UTF-8", a.to_string_lossy()))?
                    .to_string();
                let value = match inline {
                    // SAFETY: split at an ASCII `=` of a string from the OS, so both halves are
                    // valid OS strings (the documented contract of from_encoded_bytes_unchecked).
                    Some(v) => unsafe { OsString::from_encoded_bytes_unchecked(v.to_vec()) },
                    None if FLAGS.contains(&name.as_str()) => OsString::new(),
                    None => {
                        i += 1;
                        raw.get(i)
                            .ok_or_else(|| format!("`{}` needs a value", a.to_string_lossy()))?
                            .clone()
                    }
                };
                if !PATH_OPTIONS.contains(&name.as_str()) && value.to_str().is_none() {
                    return Err(format!(
                        "the value of `--{name}` is not valid UTF-8: `{}`",
                        value.to_string_lossy()
                    ));
                }
                options.entry(name).or_default().push(value);
            } else {
                positional.push(a.clone());
            }
            i += 1;
        }
        Ok(Args {
            positional,
            options,
        })
    }

    /// The last value of a text option (always UTF-8: checked by `parse`).
    fn one(&self, name: &str) -> Option<&str> {
        self.options
            .get(name)
            .and_then(|v| v.last())
            .and_then(|v| v.to_str())
    }

    /// The last value of a file-name option.
    fn one_os(&self, name: &str) -> Option<&OsStr> {
        self.options
            .get(name)
            .and_then(|v| v.last())
            .map(OsString::as_os_str)
    }

    /// Every value of a text option (always UTF-8: checked by `parse`).
    fn all(&self, name: &str) -> Vec<&str> {
        self.options
            .get(name)
            .map(|v| v.iter().filter_map(|s| s.to_str()).collect())
            .unwrap_or_default()
    }

    /// Every value of a file-name option.
    fn all_os(&self, name: &str) -> &[OsString] {
        self.options.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    fn check_known(&self, known: &[&str]) -> Result<(), String> {
        for k in self.options.keys() {
            if !known.contains(&k.as_str()) {
                return Err(format!("unknown option `--{k}`\n{USAGE}"));
            }
        }
        Ok(())
    }
}

fn load(path: &OsStr) -> Result<Module, Failure> {
    let shown = Path::new(path).display();
    let src = std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    Module::parse(&path.to_string_lossy(), &src).map_err(|d| {
        eprint!("{}", d.render());
        Failure::Program
    })
}

fn arch_option(a: &Args) -> Result<Option<Arch>, String> {
    a.one("arch").map(|s| s.parse::<Arch>()).transpose()
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
fn constants(a: &Args) -> Result<Vec<(String, pydevice::ConstValue)>, Failure> {
    a.all("const")
        .into_iter()
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

fn cmd_compile(a: &Args) -> Result<(), Failure> {
    a.check_known(&["entry", "sig", "const", "arch", "emit", "o", "opt", "debug"])?;
    let [path] = a.positional.as_slice() else {
        return Err(Failure::Other(format!("compile takes one FILE\n{USAGE}")));
    };
    let module = load(path)?.with_debug_info(a.one("debug").is_some());
    let entry = a.one("entry").ok_or("compile needs --entry NAME")?;
    let args = signature(&module, entry, a.one("sig"))?;
    let mut options = CompileOptions {
        arch: arch_option(a)?.unwrap_or(Arch::DEFAULT),
        constants: constants(a)?,
        ..CompileOptions::default()
    };
    if let Some(o) = a.one("opt") {
        options.opt_level = o.parse().map_err(|_| format!("bad --opt `{o}`"))?;
    }
    let emit = a.one("emit").unwrap_or("ptx");
    if emit == "ptx" {
        // LLVM's set-up overlaps the front end (`--debug` compiles at -O0).
        pydevice::warm_up(&CompileOptions {
            opt_level: if a.one("debug").is_some() {
                pydevice::OptLevel::O0
            } else {
                options.opt_level
            },
            ..options.clone()
        });
    }
    let spec = module
        .specialize_with(entry, &args, &options.constants, options.arch)
        .map_err(|d| report(d.into()))?;
    let text = match emit {
        "ptx" => spec.to_ptx(&options).map_err(|e| report(e.into()))?.ptx,
        "llvm" => spec.to_llvm_ir(&options).map_err(|e| report(e.into()))?,
        "ir" => spec.program().to_string(),
        "abi" => serde_json::to_string_pretty(&spec.abi()).map_err(|e| e.to_string())? + "\n",
        other => {
            return Err(Failure::Other(format!(
                "unknown --emit `{other}` (ptx, llvm, ir, abi)"
            )));
        }
    };
    match a.one_os("o").filter(|o| *o != "-") {
        Some(out) => std::fs::write(out, text)
            .map_err(|e| format!("cannot write {}: {e}", Path::new(out).display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

fn cmd_check(a: &Args) -> Result<(), Failure> {
    a.check_known(&["entry", "sig", "const"])?;
    let [path] = a.positional.as_slice() else {
        return Err(Failure::Other(format!("check takes one FILE\n{USAGE}")));
    };
    let file = path.to_string_lossy();
    let module = load(path)?;
    if let Some(entry) = a.one("entry") {
        let args = signature(&module, entry, a.one("sig"))?;
        module
            .specialize_with(entry, &args, &constants(a)?, Arch::DEFAULT)
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

fn cmd_abi(a: &Args) -> Result<(), Failure> {
    a.check_known(&["type", "json", "header"])?;
    let [path] = a.positional.as_slice() else {
        return Err(Failure::Other(format!("abi takes one FILE\n{USAGE}")));
    };
    let (json, header) = (a.one("json").is_some(), a.one("header").is_some());
    if json && header {
        return Err("--json and --header do not go together".into());
    }
    let file = path.to_string_lossy();
    let module = load(path)?;
    let named = a.all("type");
    let mut roots = Vec::new();
    for &name in &named {
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
    if header {
        // With --type, only those types; otherwise the whole module's interface.
        let functions = if named.is_empty() {
            interop_functions(&module)?
        } else {
            Vec::new()
        };
        let stem = Path::new(path)
            .file_stem()
            .map_or(file.to_string(), |s| s.to_string_lossy().into_owned());
        print!("{}", abi::header::header(&stem, &roots, &functions));
        return Ok(());
    }
    let layouts: Vec<abi::TypeLayout> = abi::header::types_in(&roots)
        .iter()
        .map(abi::layout_of)
        .collect();
    if json {
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
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {value}: {e}"))?;
    // A structured dtype's `descr` is a list of fields.
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    if head.contains("'descr': [") {
        let recs = NpyRecords::parse(&bytes).map_err(|e| format!("{value}: {e}"))?;
        if recs.shape.is_empty() {
            // One record, passed by value.
            let t = Type::Struct(Box::new(recs.record.clone()));
            return Ok((name.to_string(), CliArg::Record(t, recs.data)));
        }
        return Ok((name.to_string(), CliArg::Records(recs)));
    }
    let arr = NpyArray::parse(&bytes).map_err(|e| format!("{value}: {e}"))?;
    if arr.shape.is_empty() {
        return Err(format!(
            "{value}: zero-dimensional arrays are not supported; pass a scalar as DTYPE:VALUE"
        ));
    }
    Ok((name.to_string(), CliArg::Array(arr)))
}

fn cmd_run(a: &Args) -> Result<(), Failure> {
    a.check_known(&[
        "entry", "grid", "block", "shared", "arch", "arg", "const", "out", "bench", "seed", "debug",
    ])?;
    let seed: Option<u64> = a
        .one("seed")
        .map(|s| {
            s.parse()
                .map_err(|_| format!("bad --seed `{s}` (an integer 0 to 2**64-1)"))
        })
        .transpose()?;
    let [path] = a.positional.as_slice() else {
        return Err(Failure::Other(format!("run takes one FILE\n{USAGE}")));
    };
    let file = path.to_string_lossy();
    let module = load(path)?.with_debug_info(a.one("debug").is_some());
    let entry = a.one("entry").ok_or("run needs --entry NAME")?;
    let grid = dims(a.one("grid").ok_or("run needs --grid")?, "grid")?;
    let block = dims(a.one("block").ok_or("run needs --block")?, "block")?;
    let shared: u32 = a
        .one("shared")
        .map(|s| s.parse().map_err(|_| format!("bad --shared `{s}`")))
        .transpose()?
        .unwrap_or(0);
    let info = module
        .entries()
        .into_iter()
        .find(|e| e.name == entry && e.is_kernel)
        .ok_or_else(|| format!("no @kernel named `{entry}` in {file}"))?;
    let mut given: HashMap<String, CliArg> = HashMap::new();
    for text in a.all_os("arg") {
        let (name, arg) = parse_arg(text)?;
        if !info.params.contains(&name) {
            return Err(Failure::Other(format!(
                "`{entry}` has no parameter `{name}` (parameters: {})",
                info.params.join(", ")
            )));
        }
        given.insert(name, arg);
    }
    let consts = constants(a)?;
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
    let device = Device::open(0).map_err(|e| e.to_string())?;
    let arch = match arch_option(a)? {
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
    let mut values = Vec::new();
    for (p, ty) in params.iter().zip(&types) {
        match &given[p] {
            CliArg::Record(_, bytes) if matches!(ty, Type::StructRef { .. }) => {
                let buf = device.upload(bytes).map_err(|e| e.to_string())?;
                values.push(ArgValue::UInt(device.address(&buf)));
                buffers.insert(p.clone(), buf);
            }
            arg @ (CliArg::Scalar(..) | CliArg::Tuple(_) | CliArg::Record(..)) => {
                values.push(arg.value().ok_or("an array inside a tuple")?)
            }
            CliArg::Array(arr) => {
                let buf = device.upload(&arr.data).map_err(|e| e.to_string())?;
                values.push(ArgValue::Array(ArrayArg {
                    data: device.address(&buf),
                    shape: arr.shape.clone(),
                    strides: arr.element_strides(),
                }));
                buffers.insert(p.clone(), buf);
            }
            CliArg::Records(r) => {
                let buf = device.upload(&r.data).map_err(|e| e.to_string())?;
                values.push(ArgValue::Array(ArrayArg {
                    data: device.address(&buf),
                    shape: r.shape.clone(),
                    strides: r.element_strides(),
                }));
                buffers.insert(p.clone(), buf);
            }
        }
    }
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
    for o in a.all_os("out") {
        let (name, out) = split_name(o).ok_or_else(|| {
            format!(
                "--out `{}` must be NAME=PATH (NAME in UTF-8)",
                o.to_string_lossy()
            )
        })?;
        let (Some(buf), Some(arg)) = (buffers.get(name), given.get(name)) else {
            return Err(Failure::Other(format!(
                "--out {name}: `{name}` is not an array argument"
            )));
        };
        let data = device.download(buf).map_err(|e| e.to_string())?;
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
    eprintln!(
        "ran `{entry}` on {} ({arch}) with grid {grid:?} block {block:?}",
        device.name().unwrap_or_default()
    );
    if let Some(n) = a.one("bench") {
        let runs: usize = n.parse().map_err(|_| format!("bad --bench `{n}`"))?;
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

fn cmd_call(a: &Args) -> Result<(), Failure> {
    a.check_known(&["entry", "arg", "seed", "thread"])?;
    let [path] = a.positional.as_slice() else {
        return Err(Failure::Other(format!("call takes one FILE\n{USAGE}")));
    };
    // `cuda.device.random` on the host: the stream of thread `--thread` (0) of a launch
    // with seed `--seed` (else a fresh seed).
    let number = |name: &str| -> Result<Option<u64>, String> {
        a.one(name)
            .map(|s| s.parse().map_err(|_| format!("bad --{name} `{s}`")))
            .transpose()
    };
    let thread = number("thread")?.unwrap_or(0);
    if let Some(seed) = number("seed")? {
        pydevice::random::set_host_stream(seed, thread);
    } else if a.one("thread").is_some() {
        pydevice::random::set_host_stream(pydevice::random::draw_seed(), thread);
    }
    let file = path.to_string_lossy();
    let module = load(path)?;
    let entry = a.one("entry").ok_or("call needs --entry NAME")?;
    let info = module
        .entries()
        .into_iter()
        .find(|e| e.name == entry)
        .ok_or_else(|| format!("no @func named `{entry}` in {file}"))?;
    let mut given: HashMap<String, (Scalar, ArgValue)> = HashMap::new();
    for text in a.all_os("arg") {
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
/// `cat`: Rust ignores SIGPIPE, so every `println!` would panic instead. Restoring the
/// default action before anything is printed covers every subcommand.
fn exit_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; resetting a
    // signal's disposition to its default has no other effect on this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    exit_quietly_on_closed_pipe();
    let raw: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some((cmd, rest)) = raw.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let cmd = cmd.to_string_lossy();
    let result = Args::parse(rest)
        .map_err(Failure::Other)
        .and_then(|a| match &*cmd {
            "compile" => cmd_compile(&a),
            "check" => cmd_check(&a),
            "abi" => cmd_abi(&a),
            "run" => cmd_run(&a),
            "call" => cmd_call(&a),
            "-h" | "--help" | "help" => {
                println!("{USAGE}");
                Ok(())
            }
            other => Err(Failure::Other(format!(
                "unknown command `{other}`\n{USAGE}"
            ))),
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Program) => ExitCode::from(1),
        Err(Failure::Other(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
    }
}
