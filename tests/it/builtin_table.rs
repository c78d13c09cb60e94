//! The builtin table (`front::builtins::table`) against the rest of the repository:
//!
//! - every row is used by at least one fixture under `tests/fixtures/**`, so each builtin is
//!   compiled end to end somewhere (the test fails with the rows no fixture reaches);
//! - the host column agrees with the host back end: a host use of each builtin that the
//!   table says the host runs compiles through `Module::host_function`, and a use of each
//!   device-only one is a diagnostic with a span.

use pydevice::Module;
use pydevice::front::builtins::Namespace as N;
use pydevice::front::builtins::table::{self, FAMILIES, ROWS, Row, Rule};
use pydevice::types::signature::parse_signature;
use std::path::{Path, PathBuf};

fn fixture_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read fixtures").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "py") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
        &mut out,
    );
    out
}

/// Whether `word` occurs in `src` as a whole identifier.
fn has_word(src: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    src.match_indices(word).any(|(i, _)| {
        !src[..i].chars().next_back().is_some_and(ident)
            && !src[i + word.len()..].chars().next().is_some_and(ident)
    })
}

/// Whether fixture source `src` uses spelling `name` of namespace `ns`: the name occurs
/// (for a member of a dialect's sub-namespace, as `<namespace>.<name>`), and the file imports
/// the module the namespace belongs to.
fn uses(src: &str, ns: N, name: &str) -> bool {
    let qualified = |prefix: &str| src.contains(&format!("{prefix}.{name}"));
    match ns {
        N::Device => has_word(src, name) && src.contains("cuda"),
        N::Builtins => src.contains(&format!("{name}(")) && has_word(src, name),
        N::Math => qualified("math") || (src.contains("from math import") && has_word(src, name)),
        N::Cmath => qualified("cmath"),
        N::NumbaCuda => src.contains("numba") && has_word(src, name),
        N::Numba | N::NumbaTypes => src.contains("numba") && has_word(src, name),
        N::NumbaShared => qualified("shared"),
        N::NumbaLocal => qualified("local"),
        N::DeviceRandom => {
            qualified("random")
                || (src.contains("from cuda.device.random import") && has_word(src, name))
        }
        N::NumbaAtomic => qualified("atomic"),
        N::NumbaFp16 => qualified("fp16"),
        N::NumbaBf16 => qualified("bf16"),
        N::NumbaLibdevice => qualified("libdevice"),
        N::NumbaConst => qualified("const"),
        N::CupyxJit => src.contains("cupyx") && qualified("jit"),
        N::CupyxCg => src.contains("cupyx") && qualified("cg"),
        N::NumbaCg => src.contains("numba") && qualified("cg"),
        N::Numpy => qualified("np") || qualified("numpy") || qualified("cupy"),
        N::Operator => qualified("operator"),
        N::Cg => qualified("cg"),
        N::Wmma => qualified("wmma"),
        N::Mma => qualified("mma"),
        N::Hopper => qualified("hopper"),
        N::Cuda | N::Cupyx => has_word(src, name),
    }
}

#[test]
fn every_row_is_reached_by_a_fixture() {
    let sources: Vec<String> = fixture_files()
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read fixture"))
        .collect();
    let missing: Vec<String> = ROWS
        .iter()
        .filter(|r| {
            !r.names
                .iter()
                .any(|&(ns, n)| sources.iter().any(|s| uses(s, ns, n)))
        })
        .map(|r| format!("{:?} ({})", r.builtin, r.name()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} builtin row(s) are used by no fixture under tests/fixtures (add a small fixture): {}",
        missing.len(),
        missing.join(", ")
    );
}

/// A host function around `expr`: `x` is an int32, `y` a float32, `arr` an int32 array.
fn host_use(expr: &str) -> String {
    host_stmt(&format!("r = {expr}"))
}

/// A `@func` that runs `stmt` (a statement-only builtin such as `print` is used this way).
fn host_stmt(stmt: &str) -> String {
    format!(
        "import math\nimport operator\nfrom cuda import device\nfrom cuda.device import int32, float32\n\n\n@device.func\ndef f(x: int32, y: float32, arr: int32[::1]) -> int32:\n    {stmt}\n    return x\n"
    )
}

/// The argument the host use gives to a parameter, by its name.
fn argument(row: &Row, param: &str) -> &'static str {
    match param {
        "x" if row.rule == Rule::Len => "arr",
        "x" if row.rule == Rule::TupleOf => "(x, y)",
        "x" if row.rule == Rule::Conversion || row.rule == Rule::Bits => "x",
        "x" | "number" => "y",
        "a" | "b" | "c" | "base" | "real" => "y",
        "exp" => "2.0",
        "mask" => "0xFFFFFFFF",
        "pred" => "x > 0",
        "value" => "x",
        "src_lane" | "delta" | "flag" | "ndim" => "1",
        "lo" | "hi" | "shift" => "x",
        "shape" => "4",
        "dtype" => "int32",
        "array" => "arr",
        "index" => "0",
        "*args" => "x, 1",
        "template" => "\"mov.u32 $0, %laneid;\"",
        "result" => "int32",
        "kernel" => "f",
        "grid" | "block" => "1",
        _ => "",
    }
}

/// The expression a host use of `row` evaluates, in `cuda.device`'s or Python's spelling.
fn expression(row: &Row) -> Option<String> {
    let &(ns, name) = row
        .names
        .iter()
        .find(|(ns, _)| matches!(ns, N::Device | N::Builtins | N::Math))?;
    let callee = match ns {
        N::Device => format!("device.{name}"),
        N::Math => format!("math.{name}"),
        _ => name.to_string(),
    };
    match row.rule {
        // Not calls: used as values where they are values.
        Rule::NotCallable => {
            return matches!(
                name,
                "thread_idx" | "block_idx" | "block_dim" | "grid_dim" | "lane_id" | "warp_size"
            )
            .then(|| {
                if name.ends_with("_idx") || name.ends_with("_dim") {
                    format!("{callee}.x")
                } else {
                    callee
                }
            });
        }
        Rule::LoopOnly
        | Rule::UnrollOnly
        | Rule::TargetOnly
        | Rule::AlignType
        | Rule::AtomicField => {
            return None;
        }
        _ => {}
    }
    let args: Vec<&str> = row.params[..row.required()]
        .iter()
        .map(|p| argument(row, p))
        .collect();
    let call = format!("{callee}({})", args.join(", "));
    Some(match row.rule {
        // A string is not a value: it is compared with a literal.
        Rule::StringOnly => format!("int32({call} == \"itanium\")"),
        // A reference is not a host value; its operations are.
        Rule::AtomicRef => format!("{call}.add(1)"),
        Rule::MathPair if name == "ldexp" => format!("{callee}(y, x)"),
        _ => call,
    })
}

#[test]
fn host_column_agrees_with_the_host_back_end() {
    let args = parse_signature("int32, float32, int32[::1]")
        .expect("sig")
        .0;
    let mut disagree = Vec::new();
    let mut tried = 0;
    for row in ROWS {
        let Some(expr) = expression(row) else {
            continue;
        };
        tried += 1;
        let src = if row.rule == Rule::PrintOnly {
            host_stmt(&expr)
        } else {
            host_use(&expr)
        };
        let module =
            Module::parse("host_use.py", &src).unwrap_or_else(|d| panic!("{expr}: {}", d.render()));
        match (row.host.runs(), module.host_function("f", &args)) {
            (true, Ok(_)) => {}
            (true, Err(e)) => disagree.push(format!(
                "`{expr}`: the table says the host runs it, but:\n{e}"
            )),
            (false, Ok(_)) => disagree.push(format!(
                "`{expr}`: the table says device-only, but the host compiled it"
            )),
            (false, Err(pydevice::Error::Diagnostics(d))) => {
                if d.list.is_empty()
                    || d.list
                        .iter()
                        .any(|x| x.primary.span.start == x.primary.span.end)
                {
                    disagree.push(format!("`{expr}`: a diagnostic without a span"));
                }
            }
            (false, Err(e)) => disagree.push(format!("`{expr}`: not a diagnostic: {e}")),
        }
    }
    assert!(tried >= 40, "only {tried} rows have a host use");
    assert!(disagree.is_empty(), "{}", disagree.join("\n\n"));
}

#[test]
fn every_family_has_a_host_use_that_agrees() {
    let args = parse_signature("int32, float32, int32[::1]")
        .expect("sig")
        .0;
    // One member of each family that the host use can spell.
    let uses = [
        ("vector types", "device.float32x2(y, y)"),
        ("number types", "device.float32(x)"),
        ("functions of `math`", "math.sin(y)"),
        ("functions of `operator`", "operator.add(x, 1)"),
    ];
    for (what, expr) in uses {
        let f = FAMILIES
            .iter()
            .find(|f| f.what.starts_with(what))
            .unwrap_or_else(|| panic!("no family `{what}`"));
        let module = Module::parse("host_use.py", &host_use(expr)).expect("parse");
        let got = module.host_function("f", &args);
        assert_eq!(
            got.is_ok(),
            f.host.runs(),
            "{what}: `{expr}`: {:?}",
            got.err()
        );
    }
}

/// The recipe for adding a builtin, walked for `popc`: its row names it in `cuda.device` and
/// `numba.cuda`, types it with the shared `Bits` rule, produces `Intrinsic::Popc`, and says
/// the host runs it; member lookup, the diagnostics' name, the checker's dispatch and the
/// host back end all follow from the row.
#[test]
fn one_row_drives_lookup_dispatch_and_the_host() {
    use pydevice::ir::Intrinsic;
    let row = ROWS
        .iter()
        .find(|r| r.name() == "popc")
        .expect("a row for popc");
    // Lookup: each spelling finds the row's entity; the name is the first spelling.
    for &(ns, n) in row.names {
        assert_eq!(table::member(ns, n), Some(row.builtin));
    }
    assert_eq!(table::name(row.builtin), "popc");
    // Typing: the shared rule for bit counts, producing the row's IR operation.
    assert_eq!(row.rule, Rule::Bits);
    assert_eq!(row.op, table::Op::Intrinsic(Intrinsic::Popc));
    assert_eq!(row.params, ["x"]);
    let src = "from cuda import device\nfrom cuda.device import int32\n\n\n@device.func\ndef f(x: int32) -> int32:\n    return device.popc(x)\n";
    let module = Module::parse("popc.py", src).expect("parse");
    let args = parse_signature("int32").expect("sig").0;
    let ir = module
        .specialize_for("f", &args, pydevice::Arch::DEFAULT)
        .expect("check")
        .program()
        .to_string();
    assert!(ir.contains("popc("), "{ir}");
    // The row's parameter names are the call's keywords.
    let kw = src.replace("device.popc(x)", "device.popc(x=x)");
    assert!(
        Module::parse("popc.py", &kw)
            .expect("parse")
            .specialize_for("f", &args, pydevice::Arch::DEFAULT)
            .is_ok()
    );
    // Host: the row says the host runs it, and it does (popc(7) == 3).
    assert!(row.host.runs());
    let f = module.host_function("f", &args).expect("host");
    let got = f.call(&[pydevice::HostValue::Int(7)]).expect("call");
    assert_eq!(got, pydevice::HostValue::Int(3));
}
