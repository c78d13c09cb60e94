//! `debug=True` (docs/semantics.md §12): full DWARF for cuda-gdb. The PTX has a `.file` for
//! the Python source, a `.loc` at every statement's line, the `.debug_*` sections with the
//! functions and their number-typed variables, is compiled at -O0 and accepted by `ptxas -g`;
//! `Module::with_debug_info` (the CLI's `--debug`) does the same to any kernel;
//! `lineinfo=True` alone keeps only line tables (optimized, without the debug mark).

use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, Module};

const SRC: &str = r#"from cuda import device

@device.func
def square(x: float) -> float:
    y = x * x
    return y

@device.kernel(OPTIONS)
def scale(a, f):
    i = device.tid(1)
    if i < len(a):
        v = a[i]
        a[i] = square(v) * f
"#;

fn ptx(options: &str, force: bool) -> String {
    let src = SRC.replace("(OPTIONS)", options);
    let m = Module::parse("k/scale.py", &src)
        .unwrap()
        .with_debug_info(force);
    let (args, _) = parse_signature("float32[::1], float32").unwrap();
    m.compile("scale", &args, &CompileOptions::default())
        .unwrap()
        .ptx
}

/// The DWARF strings of the PTX's `.debug_info`/`.debug_str` sections, which NVPTX writes as
/// `.b8` bytes: decoded back to text to look for names.
fn dwarf_text(ptx: &str) -> String {
    let bytes: Vec<u8> = ptx
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".b8 "))
        .flat_map(|l| l.split(',').filter_map(|b| b.trim().parse::<u8>().ok()))
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn debug_true_emits_dwarf_at_o0_that_ptxas_takes_with_g() {
    let p = ptx("(debug=True)", false);
    assert!(p.starts_with(pydevice::lower::ptx::DEBUG_MARK));
    assert!(p.contains(".file\t1 \"k/scale.py\""), "{p}");
    for line in [5, 10, 11, 12, 13] {
        assert!(
            p.contains(&format!(".loc\t1 {line} ")),
            "no .loc for line {line}:\n{p}"
        );
    }
    assert!(p.contains(".section\t.debug_info"));
    assert!(p.contains(".section\t.debug_abbrev"));
    // -O0: the locals live in the local depot, and `square` is still a function.
    assert!(p.contains("__local_depot"));
    assert!(p.contains(".func"), "{p}");
    let text = dwarf_text(&p);
    for name in ["square", "scale", "float32", "int32"] {
        assert!(text.contains(name), "DWARF lacks `{name}`: {text:?}");
    }
    if pydevice::toolkit::ptxas().is_some() {
        // Assembled with -g, as the runtime JIT-compiles it.
        pydevice::toolkit::ptxas_check(&p, CompileOptions::default().arch).unwrap();
    }
}

#[test]
fn with_debug_info_is_debug_true_and_lineinfo_is_lines_only() {
    assert_eq!(ptx("", true), ptx("(debug=True)", false));
    let lines = ptx("(lineinfo=True)", false);
    assert!(lines.contains(".loc\t1 12 "));
    assert!(!lines.starts_with(pydevice::lower::ptx::DEBUG_MARK));
    assert!(!lines.contains("__local_depot"));
    let plain = ptx("", false);
    assert!(!plain.contains(".loc"));
}
