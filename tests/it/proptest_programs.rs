//! Robustness: generated programs go through parse → check → lower without panicking, and
//! well-typed ones (by construction) compile to PTX. Arbitrary text must only ever give
//! diagnostics.

use crate::support;

use proptest::prelude::*;
use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, Module};

const NAMES: &[&str] = &["x", "y", "z"];
const BINOPS: &[&str] = &[
    "+", "-", "*", "//", "%", "/", "**", "&", "|", "^", "<<", ">>", "<", "<=", "==", "!=", "and",
    "or",
];
const DTYPES: &[&str] = &[
    "int8", "int32", "int64", "uint16", "uint32", "float32", "float64", "bool",
];

fn expr(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        (-300i64..300).prop_map(|i| i.to_string()),
        (-10.0f64..10.0).prop_map(|f| format!("{f:.3}")),
        prop::sample::select(NAMES).prop_map(str::to_string),
        Just("a[i]".to_string()),
        Just("b[i % len(b)]".to_string()),
        Just("i".to_string()),
        Just("True".to_string()),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = expr(depth - 1);
    prop_oneof![
        leaf,
        (sub.clone(), prop::sample::select(BINOPS), sub.clone())
            .prop_map(|(l, op, r)| format!("({l} {op} {r})")),
        (
            prop::sample::select(&["-", "~", "not ", "+"][..]),
            sub.clone()
        )
            .prop_map(|(op, e)| format!("({op}{e})")),
        (prop::sample::select(DTYPES), sub.clone()).prop_map(|(t, e)| format!("{t}({e})")),
        (sub.clone(), sub.clone(), sub.clone())
            .prop_map(|(a, c, b)| format!("({a} if {c} else {b})")),
        (sub.clone(), sub.clone()).prop_map(|(a, b)| format!("min({a}, {b})")),
        sub.clone().prop_map(|a| format!("abs({a})")),
        sub.prop_map(|a| format!("math.sqrt(abs(float64({a})))")),
    ]
    .boxed()
}

fn stmt(depth: u32) -> BoxedStrategy<Vec<String>> {
    let simple = prop_oneof![
        expr(2).prop_map(|e| vec![format!("x = int32({e})")]),
        expr(2).prop_map(|e| vec![format!("y = float64({e})")]),
        (
            prop::sample::select(&["+", "-", "*", "//", "%", "&", "<<"][..]),
            expr(1)
        )
            .prop_map(|(op, e)| vec![format!("x = int32(x {op} {e})")]),
        expr(2).prop_map(|e| vec![format!("a[i] = {e}")]),
        Just(vec!["device.syncthreads()".to_string()]),
    ];
    if depth == 0 {
        return simple.boxed();
    }
    let body = prop::collection::vec(stmt(depth - 1), 1..3).prop_map(|v| v.concat());
    prop_oneof![
        simple,
        (expr(1), body.clone(), body.clone()).prop_map(|(c, t, e)| {
            let mut out = vec![format!("if {c}:")];
            out.extend(t.iter().map(|l| format!("    {l}")));
            out.push("else:".into());
            out.extend(e.iter().map(|l| format!("    {l}")));
            out
        }),
        (0i64..5, body).prop_map(|(n, b)| {
            let mut out = vec![format!("for k in range({n}):")];
            out.extend(b.iter().map(|l| format!("    {l}")));
            out.push("    if k > 2:".into());
            out.push("        break".into());
            out
        }),
    ]
    .boxed()
}

fn program() -> impl Strategy<Value = String> {
    prop::collection::vec(stmt(2), 1..6).prop_map(|stmts| {
        let mut src = String::from("import math\nfrom cuda import device\nfrom cuda.device import *\n\n@device.kernel\ndef k(a, b):\n    i = device.tid(1)\n    x = 0\n    y = float64(1.5)\n    z = a[0]\n");
        for l in stmts.concat() {
            src.push_str("    ");
            src.push_str(&l);
            src.push('\n');
        }
        src
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_never_panic(src in program(), sig in prop::sample::select(&["float32[:], int32[:]", "int64[::1], float64[:]", "uint8[:], bool[:]"][..])) {
        let module = Module::parse("gen.py", &src).expect("generated programs are syntactically valid");
        let (args, _) = parse_signature(sig).expect("signature");
        match module.specialize("k", &args) {
            Ok(spec) => {
                // A program the checker accepts must lower: a back-end error here is a bug.
                let k = spec.to_ptx(&CompileOptions::default());
                prop_assert!(k.is_ok(), "checked program failed to lower: {:?}\n{}", k.err(), src);
            }
            Err(d) => {
                let text = d.render();
                prop_assert!(!text.contains("internal"), "internal error:\n{}\n{}", text, src);
                prop_assert!(d.has_errors());
            }
        }
    }

    #[test]
    fn arbitrary_text_only_gives_diagnostics(src in "(?s)[ -~\n\t]{0,300}") {
        if let Ok(module) = Module::parse("junk.py", &src) {
            let _ = module.check();
            for e in module.entries() {
                let args = vec![pydevice::Type::Scalar(pydevice::types::Scalar::Int32); e.params.len()];
                let _ = module.specialize(&e.name, &args);
            }
        }
    }

    #[test]
    fn mutated_fixtures_only_give_diagnostics(cut in 0usize..2000, len in 0usize..40, insert in "[ -~]{0,8}") {
        let src = std::fs::read_to_string(support::repo_path("tests/fixtures/lang/func_chain.py")).expect("fixture");
        let mut s: Vec<char> = src.chars().collect();
        let at = cut.min(s.len());
        let end = (at + len).min(s.len());
        s.splice(at..end, insert.chars());
        let text: String = s.into_iter().collect();
        if let Ok(module) = Module::parse("mut.py", &text) {
            let (args, _) = parse_signature("float32[:], float32[:]").expect("signature");
            if let Ok(spec) = module.specialize("apply", &args) {
                prop_assert!(spec.to_ptx(&CompileOptions::default()).is_ok(), "{}", text);
            }
        }
    }
}

/// A kernel whose one statement nests `depth` levels: `-(-(…a[1]…))` and a left-nested
/// chain `a[1] + a[1] + …`.
fn deep_kernel(depth: usize, chain: bool) -> String {
    let e = if chain {
        vec!["a[1]"; depth].join(" + ")
    } else {
        format!("{}a[1]{}", "-(".repeat(depth), ")".repeat(depth))
    };
    format!("from cuda import device\n\n@device.kernel\ndef k(a):\n    a[0] = {e}\n")
}

/// Checks, lowers and prints a deep program on a 2 MiB thread (as test threads and many
/// embedders have): the recursive walks grow their stack instead of overflowing.
fn compile_deep(src: String) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let module = Module::parse("deep.py", &src).map_err(|d| d.render())?;
            let (args, _) = parse_signature("float32[:]").expect("signature");
            let spec = module.specialize("k", &args).map_err(|d| d.render())?;
            let _ = spec.program().to_string();
            spec.to_ptx(&CompileOptions::default())
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .expect("spawn")
        .join()
        .expect("no panic")
}

#[test]
fn deep_expressions_compile_on_a_small_stack() {
    for chain in [false, true] {
        let depth = pydevice::front::MAX_NESTING - 10;
        compile_deep(deep_kernel(depth, chain)).expect("a program below the limit compiles");
    }
}

#[test]
fn expressions_beyond_the_nesting_limit_are_a_diagnostic() {
    for depth in [pydevice::front::MAX_NESTING + 1, 200_000] {
        for chain in [false, true] {
            let err = compile_deep(deep_kernel(depth, chain)).expect_err("too deep");
            assert!(err.contains("E0002"), "{}", &err[..err.len().min(300)]);
        }
    }
}

/// Parses, checks and lowers `src` for `entry`; any outcome but a panic or an abort is fine,
/// and a checked program must lower.
fn compiles_or_diagnoses(src: &str, entry: &str, sig: &str) -> Result<(), TestCaseError> {
    let Ok(module) = Module::parse("shape.py", src) else {
        return Ok(());
    };
    let (args, _) = parse_signature(sig).expect("signature");
    if let Ok(spec) = module.specialize(entry, &args) {
        let _ = spec.program().to_string();
        let k = spec.to_ptx(&CompileOptions::default());
        prop_assert!(
            k.is_ok(),
            "checked program failed to lower: {:?}\n{}",
            k.err(),
            src
        );
    }
    Ok(())
}

const NAME_PARTS: &[&str] = &["k", "_", "ядро", "函数", "é", "x1", "Ω", "𝔘"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The shapes of the audit's crashes: deep nesting of every expression form (on the test
    /// thread's 2 MiB stack), names of any script for kernels, interoperable and private
    /// functions, and nested aggregates passed through chains of functions.
    #[test]
    fn crash_shapes_only_give_diagnostics(
        depth in 1usize..3000,
        form in 0usize..5,
        kname in prop::collection::vec(prop::sample::select(NAME_PARTS), 1..3),
        fname in prop::collection::vec(prop::sample::select(NAME_PARTS), 1..3),
        interop in any::<bool>(),
        tuple_depth in 1usize..48,
        chain in 1usize..7,
    ) {
        let e = match form {
            0 => format!("{}a[1]{}", "-(".repeat(depth), ")".repeat(depth)),
            1 => vec!["a[1]"; depth].join(" + "),
            2 => format!("{}a[1]", "- ".repeat(depth)),
            3 => format!("{}a[1]{}", "abs(".repeat(depth.min(500)), ")".repeat(depth.min(500))),
            _ => format!("{}a[1]{}", "float32(".repeat(depth.min(500)), ")".repeat(depth.min(500))),
        };
        let src = format!("from cuda import device\n\n@device.kernel\ndef k(a):\n    a[0] = {e}\n");
        compiles_or_diagnoses(&src, "k", "float32[:]")?;

        let (kname, fname) = (kname.concat(), fname.concat());
        let deco = if interop { "@device.func(interop=True)" } else { "@device.func" };
        let src = format!(
            "from cuda import device\nfrom cuda.device import float32\n\n{deco}\ndef {fname}(x: float32) -> float32:\n    return x + 1\n\n@device.kernel\ndef {kname}(a):\n    a[0] = {fname}(a[1])\n"
        );
        if kname != fname {
            compiles_or_diagnoses(&src, &kname, "float32[:]")?;
        }

        let t = format!("{}a[0]{}", "(".repeat(tuple_depth), ",)".repeat(tuple_depth));
        let mut src = String::from("from cuda import device\n\n@device.func\ndef f0(x):\n    return x\n");
        for i in 1..=chain {
            src.push_str(&format!("\n@device.func\ndef f{i}(x):\n    return f{}((x, x))\n", i - 1));
        }
        src.push_str(&format!(
            "\n@device.kernel\ndef k(a):\n    t = {t}\n    u = f{chain}(a[1])\n    a[1] = t{}\n",
            "[0]".repeat(tuple_depth)
        ));
        compiles_or_diagnoses(&src, "k", "float32[:]")?;
    }
}
