//! Fixture tests: every fixture file is its own test case, so adding a case is adding a file,
//! and a failure names its case. Run one with `cargo test --test fixtures lang/vector_add`
//! (a substring filter; add `--exact` for exactly one), list them with `-- --list`.
//!
//! A fixture starts with header comments:
//!
//! ```text
//! # entry: kernel_name
//! # sig: float32[:], int32
//! # arch: sm_80            (optional; default sm_90)
//! ```
//!
//! The cases, by folder of `tests/fixtures/`:
//!
//! - `errors/NAME`: must fail to compile; the rendered diagnostics are compared with
//!   `NAME.stderr`.
//! - `lang/`, `numba/`, `cupyx/`, `structs/`: must compile, the PTX must be accepted by
//!   `ptxas`, the printed IR must match `NAME.ir` and the PTX, its `//` comments and trailing
//!   whitespace stripped, must match `NAME.ptx`. A `# sig:` may name a struct of the module
//!   as an array element (`particle[::1]`).
//! - `host/NAME`: the `@func` is called on the host for every `# case: ARGS -> REPR` line and
//!   must print REPR; compiled for the device, its PTX must match `NAME.ptx`.
//! - `host/errors/NAME`: must fail to build for the host; diagnostics compared with `.stderr`.
//! - `bench/NAME`: every benchmark kernel of `bench/kernels/` (signature as
//!   `bench/run_ours.py` passes its arguments): PTX accepted by `ptxas` and equal to
//!   `bench/kernels/NAME.ptx`.
//! - `corpus/FILE/ENTRY`: every kernel of the public-code corpus `bench/corpus/FILE.py`
//!   (its `# entry:` / `# sig:` header pairs) is compiled for sm_90 and assembled with
//!   `ptxas -v`; its stack frame and spill bytes may not exceed the figures stored in
//!   `bench/corpus/ptxas_goldens.json` (registers are stored too, for reading, not checked).
//!   `PYDEVICE_BLESS=1` rewrites the kernel's entry (lower figures are reported as a note, so
//!   that an improvement gets blessed). Without `ptxas` the case compiles only, unless `CI`
//!   or `PYDEVICE_REQUIRE_PTXAS` is set.
//!
//! A missing expected file is a failure. Set `PYDEVICE_BLESS=1` to (re)write them all. With
//! `CI` or `PYDEVICE_REQUIRE_PTXAS` set, a missing `ptxas` is a failure; otherwise the PTX is
//! not validated and a note says so.

mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use pydevice::types::signature::parse_signature;
use pydevice::types::{Layout, Type};
use pydevice::{Arch, CompileOptions, HostValue, Module};
use std::path::{Path, PathBuf};
use support::host_values::{header as header_values, literal, split_top, types_of};
use support::{check_golden, ptx_golden_text, repo_path};

// The benchmark kernels and their signatures: one table, shared with benches/compile.rs.
include!("bench_kernels.in");

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for dir in ["lang", "numba", "cupyx", "structs"] {
        for path in fixtures(dir) {
            trials.push(trial(&path, positive));
        }
    }
    for path in fixtures("errors") {
        trials.push(trial(&path, error));
    }
    for path in fixtures("host") {
        trials.push(trial(&path, host));
    }
    for path in fixtures("host/errors") {
        trials.push(trial(&path, host_error));
    }
    let bench_dir = repo_path("bench/kernels");
    let mut listed: Vec<&str> = BENCH_KERNELS.iter().map(|(name, _)| *name).collect();
    listed.sort_unstable();
    let on_disk: Vec<String> = py_files(&bench_dir)
        .iter()
        .map(|p| stem(p))
        .collect::<Vec<_>>();
    trials.push(Trial::test("bench/every_kernel_is_listed", move || {
        if on_disk == listed {
            Ok(())
        } else {
            Err(format!(
                "bench/kernels holds {on_disk:?} but BENCH_KERNELS in tests/fixtures.rs lists \
                 {listed:?}; add the new kernel with its signature"
            )
            .into())
        }
    }));
    for &(name, sig) in BENCH_KERNELS {
        let path = bench_dir.join(format!("{name}.py"));
        trials.push(Trial::test(format!("bench/{name}"), move || {
            bench(&path, name, sig).map_err(Failed::from)
        }));
    }
    trials.push(Trial::test(
        "corpus/ptxas_report_is_read_per_entry",
        ptxas_report_is_read_per_entry,
    ));
    trials.push(Trial::test("corpus/every_golden_names_a_kernel", || {
        every_golden_names_a_kernel().map_err(Failed::from)
    }));
    for (path, entry, sig) in corpus_kernels() {
        let name = format!("corpus/{}/{entry}", stem(&path));
        trials.push(Trial::test(name, move || {
            corpus(&path, &entry, &sig).map_err(Failed::from)
        }));
    }
    trials.push(Trial::test(
        "reused_pipelines_give_the_same_ptx_as_fresh_ones",
        reused_pipelines_give_the_same_ptx_as_fresh_ones,
    ));
    libtest_mimic::run(&args, trials).exit();
}

/// A test case named after its fixture's path under `tests/fixtures` (no extension).
fn trial(path: &Path, run: fn(&Path) -> Result<(), String>) -> Trial {
    let name = case_name(path);
    let path = path.to_path_buf();
    Trial::test(name, move || run(&path).map_err(Failed::from))
}

/// `lang/vector_add` for `tests/fixtures/lang/vector_add.py`.
fn case_name(path: &Path) -> String {
    let rel = path
        .strip_prefix(repo_path("tests/fixtures"))
        .unwrap_or(path)
        .with_extension("");
    rel.to_string_lossy().replace('\\', "/")
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn py_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    out.sort();
    out
}

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let root = repo_path("tests/fixtures").join(dir);
    let out = py_files(&root);
    assert!(!out.is_empty(), "no fixtures in {}", root.display());
    out
}

struct Header {
    entry: Option<String>,
    sig: Option<String>,
    arch: Arch,
    /// `# const: NAME=VALUE, ...`: the values of `ConstExpr` parameters.
    constants: Vec<(String, pydevice::ConstValue)>,
}

fn header(src: &str) -> Result<Header, String> {
    let mut h = Header {
        entry: None,
        sig: None,
        arch: Arch::DEFAULT,
        constants: Vec::new(),
    };
    for line in src.lines().take_while(|l| l.starts_with('#')) {
        let l = line.trim_start_matches('#').trim();
        if let Some(v) = l.strip_prefix("entry:") {
            h.entry = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("sig:") {
            h.sig = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("const:") {
            for item in v.split(',') {
                let (n, x) = item
                    .split_once('=')
                    .ok_or_else(|| format!("bad `# const:` item `{item}`"))?;
                h.constants.push((
                    n.trim().to_string(),
                    x.parse().map_err(|e| format!("`# const:`: {e}"))?,
                ));
            }
        } else if let Some(v) = l.strip_prefix("arch:") {
            h.arch = v
                .trim()
                .parse()
                .map_err(|e| format!("bad `# arch:` in the fixture header: {e}"))?;
        }
    }
    Ok(h)
}

/// The name diagnostics give a fixture file: its folder and file name (`lang/x.py`).
fn name_of(p: &Path) -> String {
    format!(
        "{}/{}",
        p.parent()
            .and_then(|d| d.file_name())
            .unwrap_or_default()
            .to_string_lossy(),
        p.file_name().unwrap_or_default().to_string_lossy()
    )
}

/// The argument types of a `# sig:`, where an item may also be `STRUCT[...]`: an array of a
/// struct of `module` (`--sig` cannot name structs).
fn signature(module: &Module, sig: &str) -> Result<Vec<Type>, String> {
    let mut out = Vec::new();
    for item in split_top(sig) {
        if let Some((name, dims)) = item.strip_suffix(']').and_then(|s| s.split_once('['))
            && let Some(elem) = module.named_type(name.trim())
        {
            // `float64[()]`: zero-dimensional.
            let ndim = if dims.trim() == "()" {
                0
            } else {
                dims.split(',').count() as u8
            };
            let layout = if dims.trim_end().ends_with("::1") {
                Layout::C
            } else if ndim > 1 && dims.trim_start().starts_with("::1") {
                Layout::F
            } else {
                Layout::Any
            };
            out.push(
                Type::array_of(&elem, ndim, layout)
                    .ok_or_else(|| format!("`{item}`: no array of `{name}`"))?,
            );
        } else {
            out.extend(
                parse_signature(item)
                    .map_err(|e| format!("bad `# sig:` item `{item}`: {e}"))?
                    .0,
            );
        }
    }
    Ok(out)
}

/// What compiling a fixture gives.
struct Compiled {
    ir: String,
    ptx: String,
    arch: Arch,
}

/// Compiles a fixture; `Err` carries the rendered diagnostics.
fn compile(path: &Path) -> Result<Compiled, String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let h = header(&src)?;
    let module = Module::parse(&name_of(path), &src).map_err(|d| d.render())?;
    let entry = h
        .entry
        .ok_or("the fixture needs a `# entry:` header line")?;
    let args = match h.sig.as_deref() {
        Some(sig) => signature(&module, sig)?,
        // No `# sig:`: the decorator's signature (numba's `@cuda.jit("void(...)")`).
        None => module
            .entries()
            .into_iter()
            .find(|e| e.name == entry)
            .and_then(|e| e.annotated)
            .unwrap_or_default(),
    };
    let spec = module
        .specialize_with(&entry, &args, &h.constants, h.arch)
        .map_err(|d| d.render())?;
    pydevice::ir::validate(spec.program()).map_err(|e| e.to_string())?;
    let ir = spec.program().to_string();
    let k = spec
        .to_ptx(&CompileOptions {
            arch: h.arch,
            ..CompileOptions::default()
        })
        .map_err(|e| e.to_string())?;
    Ok(Compiled {
        ir,
        ptx: k.ptx,
        arch: h.arch,
    })
}

fn ptxas_required() -> bool {
    std::env::var_os("CI").is_some() || std::env::var_os("PYDEVICE_REQUIRE_PTXAS").is_some()
}

/// Validates PTX with `ptxas` when there is one (required in CI).
fn ptxas(ptx: &str, arch: Arch) -> Result<(), String> {
    if pydevice::toolkit::ptxas().is_none() {
        if ptxas_required() {
            return Err(format!(
                "ptxas is required in CI but was not found (searched {})",
                pydevice::toolkit::searched()
            ));
        }
        static NOTE: std::sync::Once = std::sync::Once::new();
        NOTE.call_once(|| {
            eprintln!(
                "note: ptxas not found; PTX of fixtures is not validated (run scripts/setup.sh)"
            )
        });
        return Ok(());
    }
    pydevice::toolkit::ptxas_check(ptx, arch)
        .map_err(|e| format!("ptxas rejected the PTX for {arch}:\n{e}\n{ptx}"))
}

/// Several failures of one case, reported together.
fn all(results: impl IntoIterator<Item = Result<(), String>>) -> Result<(), String> {
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n\n"))
    }
}

fn positive(path: &Path) -> Result<(), String> {
    let c = compile(path).map_err(|e| format!("failed to compile:\n{e}"))?;
    all([
        check_golden(&path.with_extension("ir"), &c.ir, "the IR"),
        check_golden(
            &path.with_extension("ptx"),
            &ptx_golden_text(&c.ptx),
            "the PTX",
        ),
        ptxas(&c.ptx, c.arch),
    ])
}

fn error(path: &Path) -> Result<(), String> {
    let got = match compile(path) {
        Ok(_) => return Err("compiled, but it must be rejected".into()),
        Err(e) => e,
    };
    if got.contains("internal") {
        return Err(format!("internal error:\n{got}"));
    }
    check_golden(&path.with_extension("stderr"), &got, "the diagnostics")
}

fn host(path: &Path) -> Result<(), String> {
    // Relative, like the other fixtures: the name reaches the PTX (an assert's record names
    // its file), so an absolute path would make the golden depend on the checkout.
    let name = name_of(path);
    let src = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let module = Module::parse(&name, &src).map_err(|d| d.render())?;
    let entry = *header_values(&src, "entry:")
        .first()
        .ok_or("the fixture needs a `# entry:` header line")?;
    let types = types_of(&module, entry, header_values(&src, "sig:").first().copied());
    let f = module.host_function(entry, &types).map_err(|e| match e {
        pydevice::Error::Diagnostics(d) => d.render(),
        e => e.to_string(),
    })?;
    let cases = header_values(&src, "case:");
    if cases.is_empty() {
        return Err("no `# case: ARGS -> REPR` header line".into());
    }
    let mut failures = Vec::new();
    for case in cases {
        let (args, want) = case
            .rsplit_once("->")
            .ok_or_else(|| format!("`# case: {case}` is not `ARGS -> REPR`"))?;
        let args: Vec<HostValue> = types
            .iter()
            .zip(split_top(args.trim()))
            .map(|(t, s)| literal(t, s))
            .collect();
        match f.call(&args) {
            Ok(got) if got.to_string() == want.trim() => {}
            Ok(got) => failures.push(format!("{case}: got {got}")),
            Err(e) => failures.push(format!("{case}: {e}")),
        }
    }
    // The same @func is valid device code too.
    let k = module
        .compile(entry, &types, &CompileOptions::default())
        .map_err(|e| format!("on the device: {e}"))?;
    if !k.ptx.contains(".func") {
        failures.push("no device function in the PTX".into());
    }
    all([
        all(failures.into_iter().map(Err)),
        check_golden(
            &path.with_extension("ptx"),
            &ptx_golden_text(&k.ptx),
            "the PTX",
        ),
        ptxas(&k.ptx, CompileOptions::default().arch),
    ])
}

fn host_error(path: &Path) -> Result<(), String> {
    let name = format!(
        "host/errors/{}",
        path.file_name().unwrap_or_default().to_string_lossy()
    );
    let src = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let module = Module::parse(&name, &src).map_err(|d| d.render())?;
    let entry = *header_values(&src, "entry:")
        .first()
        .ok_or("the fixture needs a `# entry:` header line")?;
    let types = types_of(&module, entry, header_values(&src, "sig:").first().copied());
    let got = match module.host_function(entry, &types) {
        Ok(_) => return Err("built for the host, but it must not".into()),
        Err(pydevice::Error::Diagnostics(d)) => d.render(),
        Err(e) => return Err(e.to_string()),
    };
    check_golden(&path.with_extension("stderr"), &got, "the diagnostics")
}

fn bench(path: &Path, entry: &str, sig: &str) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let module = Module::parse(&format!("{entry}.py"), &src).map_err(|d| d.render())?;
    let (args, _) = parse_signature(sig).map_err(|e| format!("bad signature `{sig}`: {e}"))?;
    let options = CompileOptions::default();
    let k = module
        .compile(entry, &args, &options)
        .map_err(|e| e.to_string())?;
    all([
        check_golden(
            &path.with_extension("ptx"),
            &ptx_golden_text(&k.ptx),
            "the PTX",
        ),
        ptxas(&k.ptx, options.arch),
    ])
}

/// The kernels of `bench/corpus/*.py`: each file's `# entry: NAME` header lines, each
/// followed by its `# sig: SIGNATURE` line.
fn corpus_kernels() -> Vec<(PathBuf, String, String)> {
    let mut out = Vec::new();
    for path in py_files(&repo_path("bench/corpus")) {
        let src =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let entries = header_values(&src, "entry:");
        let sigs = header_values(&src, "sig:");
        assert_eq!(
            entries.len(),
            sigs.len(),
            "{}: each `# entry:` line needs its `# sig:` line",
            path.display()
        );
        for (e, s) in entries.iter().zip(sigs.iter()) {
            out.push((path.clone(), e.to_string(), s.to_string()));
        }
    }
    out
}

/// What `ptxas -v` reports for one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct PtxasFigures {
    stack: u64,
    spill_stores: u64,
    spill_loads: u64,
    registers: u64,
}

/// Runs `ptxas -v` for sm_90 and reads the figures of the `.entry` named `entry` from its
/// report (`N bytes stack frame, N bytes spill stores, N bytes spill loads`, then `Used N
/// registers`).
fn ptxas_figures(ptx: &str, entry: &str) -> Result<PtxasFigures, String> {
    let ptxas = pydevice::toolkit::ptxas().ok_or("ptxas not found")?;
    let dir = std::env::temp_dir().join(format!(
        "pydevice-corpus-{}-{entry}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join("k.ptx");
    std::fs::write(&src, ptx).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(&ptxas)
        .args(["-v", "-arch=sm_90", "-o"])
        .arg(dir.join("k.cubin"))
        .arg(&src)
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!("ptxas rejected the PTX:\n{text}"));
    }
    parse_ptxas_figures(&text, entry)
        .ok_or_else(|| format!("no figures for `{entry}` in ptxas's report:\n{text}"))
}

/// The number before `what` in `line` (`"256 bytes stack frame"` → 256).
fn number_before(line: &str, what: &str) -> Option<u64> {
    let head = &line[..line.find(what)?];
    head.split(|c: char| !c.is_ascii_digit())
        .rfind(|w| !w.is_empty())?
        .parse()
        .ok()
}

fn parse_ptxas_figures(report: &str, entry: &str) -> Option<PtxasFigures> {
    let lines: Vec<&str> = report.lines().collect();
    let start = lines.iter().position(|l| {
        l.contains("Compiling entry function") && l.contains(&format!("'{entry}'"))
    })?;
    let mut f = PtxasFigures {
        stack: 0,
        spill_stores: 0,
        spill_loads: 0,
        registers: 0,
    };
    let mut seen = (false, false);
    for line in &lines[start + 1..] {
        if line.contains("Compiling entry function") {
            break;
        }
        if line.contains("bytes stack frame") {
            f.stack = number_before(line, "bytes stack frame")?;
            f.spill_stores = number_before(line, "bytes spill stores")?;
            f.spill_loads = number_before(line, "bytes spill loads")?;
            seen.0 = true;
        }
        if line.contains("Used") && line.contains("registers") {
            f.registers = number_before(line, "registers")?;
            seen.1 = true;
        }
    }
    (seen.0 && seen.1).then_some(f)
}

/// `ptxas_goldens.json` holds no entry for a kernel the corpus no longer has (under
/// `PYDEVICE_BLESS`, such entries are dropped).
fn every_golden_names_a_kernel() -> Result<(), String> {
    let live: std::collections::BTreeSet<String> = corpus_kernels()
        .into_iter()
        .map(|(path, entry, _)| format!("{}/{entry}", stem(&path)))
        .collect();
    let _guard = GOLDENS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut goldens = read_goldens()?;
    let stale: Vec<String> = goldens
        .keys()
        .filter(|k| !live.contains(*k))
        .cloned()
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    if std::env::var_os("PYDEVICE_BLESS").is_some() {
        goldens.retain(|k, _| live.contains(k));
        let text = serde_json::to_string_pretty(&goldens).map_err(|e| e.to_string())?;
        return std::fs::write(goldens_path(), text + "\n").map_err(|e| e.to_string());
    }
    Err(format!(
        "{} has goldens for kernels the corpus does not have: {stale:?}; run with PYDEVICE_BLESS=1",
        goldens_path().display()
    ))
}

/// The figures of each entry come from its own section of a report that holds several.
fn ptxas_report_is_read_per_entry() -> Result<(), Failed> {
    let report = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
    256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 256 bytes cumulative stack size
ptxas info    : Compiling entry function 'ab' for 'sm_90'
ptxas info    : Function properties for ab
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
";
    let a = parse_ptxas_figures(report, "a");
    let ab = parse_ptxas_figures(report, "ab");
    let want_a = PtxasFigures {
        stack: 256,
        spill_stores: 8,
        spill_loads: 12,
        registers: 64,
    };
    let want_ab = PtxasFigures {
        stack: 0,
        spill_stores: 0,
        spill_loads: 0,
        registers: 12,
    };
    if a != Some(want_a) || ab != Some(want_ab) || parse_ptxas_figures(report, "b").is_some() {
        return Err(format!("read {a:?} for `a`, {ab:?} for `ab`").into());
    }
    Ok(())
}

/// The goldens of the corpus, one entry `FILE/ENTRY` a kernel, kept in key order.
type Goldens = std::collections::BTreeMap<String, PtxasFigures>;

fn goldens_path() -> PathBuf {
    repo_path("bench/corpus/ptxas_goldens.json")
}

/// Serializes reads and rewrites of the goldens file between the trials' threads.
static GOLDENS_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn read_goldens() -> Result<Goldens, String> {
    match std::fs::read_to_string(goldens_path()) {
        Ok(text) => {
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", goldens_path().display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Goldens::new()),
        Err(e) => Err(format!("{}: {e}", goldens_path().display())),
    }
}

/// A corpus kernel: compiles, and ptxas's stack frame and spills stay within the golden.
fn corpus(path: &Path, entry: &str, sig: &str) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = stem(path);
    let module = Module::parse(&format!("{file}.py"), &src).map_err(|d| d.render())?;
    let (args, _) = parse_signature(sig).map_err(|e| format!("bad signature `{sig}`: {e}"))?;
    let options = CompileOptions {
        arch: Arch::SM_90,
        ..CompileOptions::default()
    };
    let k = module
        .compile(entry, &args, &options)
        .map_err(|e| e.to_string())?;
    if pydevice::toolkit::ptxas().is_none() {
        return ptxas(&k.ptx, options.arch);
    }
    let got = ptxas_figures(&k.ptx, entry)?;
    let key = format!("{file}/{entry}");
    let _guard = GOLDENS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut goldens = read_goldens()?;
    if std::env::var_os("PYDEVICE_BLESS").is_some() {
        goldens.insert(key, got);
        let text = serde_json::to_string_pretty(&goldens).map_err(|e| e.to_string())?;
        return std::fs::write(goldens_path(), text + "\n").map_err(|e| e.to_string());
    }
    let want = goldens.get(&key).ok_or_else(|| {
        format!(
            "no golden for `{key}` in {} (got {got:?}); run with PYDEVICE_BLESS=1",
            goldens_path().display()
        )
    })?;
    let mut worse = Vec::new();
    for (what, g, w) in [
        ("stack frame", got.stack, want.stack),
        ("spill stores", got.spill_stores, want.spill_stores),
        ("spill loads", got.spill_loads, want.spill_loads),
    ] {
        if g > w {
            worse.push(format!("{what}: {g} bytes, the golden has {w}"));
        } else if g < w {
            eprintln!(
                "note: {key}: {what} is {g} bytes, below the golden's {w}; bless it with PYDEVICE_BLESS=1"
            );
        }
    }
    if worse.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{key} got worse under ptxas -v (sm_90):\n  {}",
            worse.join("\n  ")
        ))
    }
}

/// The back end keeps its LLVM pass pipelines alive between compiles on a thread
/// (`src/lower/ptx/pipeline.cpp`). Compiling every fixture one after another on one thread
/// must give, for each, the PTX that a fresh thread (fresh pipelines) gives. Comments are
/// left out of the comparison: NVPTX numbers call sequences (`// callseq 3, 0`) with a counter
/// that lives in the target machine.
fn reused_pipelines_give_the_same_ptx_as_fresh_ones() -> Result<(), Failed> {
    let paths: Vec<PathBuf> = ["lang", "numba", "cupyx"]
        .iter()
        .flat_map(|d| fixtures(d))
        .collect();
    let ptx_of = |path: &Path| compile(path).map(|c| ptx_golden_text(&c.ptx));
    // Twice over, so every fixture also runs after all the others.
    let mut reused = Vec::new();
    for round in 0..2 {
        for path in &paths {
            let ptx = ptx_of(path);
            if round == 1 {
                reused.push(ptx);
            }
        }
    }
    let mut differ = Vec::new();
    for (path, reused) in paths.iter().zip(reused) {
        let p = path.clone();
        let fresh = std::thread::spawn(move || ptx_of(&p))
            .join()
            .map_err(|_| "compile thread panicked")?;
        if fresh != reused {
            differ.push(name_of(path));
        }
    }
    if differ.is_empty() {
        Ok(())
    } else {
        Err(
            format!("PTX from reused pipelines differs from fresh pipelines for: {differ:?}")
                .into(),
        )
    }
}
