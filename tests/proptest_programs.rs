//! Robustness: generated programs go through parse → check → lower without panicking, and
//! well-typed ones (by construction) compile to PTX. Arbitrary text must only ever give
//! diagnostics.

mod support;

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
