//! Host execution of `@func`s through Cranelift.
//!
//! Every `tests/fixtures/host/*.py` names its entry (`# entry:`), optionally its argument
//! types (`# sig:`, else the annotations), and cases `# case: ARGS -> REPR`: the function is
//! called on the host with ARGS (Python literals) and its result must print as REPR. Each
//! fixture also compiles for the device (the same `@func` is heterogeneous).
//!
//! Every `tests/fixtures/host/errors/*.py` must fail to build for the host; its rendered
//! diagnostics are compared with the `.stderr` beside it (`PYDEVICE_BLESS=1` rewrites them).
//!
//! `c_abi_matches_gcc` calls the raw C ABI pointer from C code compiled by the system's C
//! compiler, with structs, tuples and vectors passed and returned by value.

use pydevice::types::signature::parse_signature;
use pydevice::types::{Scalar, Type};
use pydevice::{CompileOptions, HostValue, Module};
use std::path::{Path, PathBuf};

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no fixtures in {}", root.display());
    out
}

fn header<'a>(src: &'a str, key: &str) -> Vec<&'a str> {
    src.lines()
        .take_while(|l| l.starts_with('#'))
        .filter_map(|l| l.trim_start_matches('#').trim().strip_prefix(key))
        .map(str::trim)
        .collect()
}

fn types_of(module: &Module, entry: &str, sig: Option<&str>) -> Vec<Type> {
    match sig {
        Some(s) => parse_signature(s).expect("sig").0,
        None => module
            .entries()
            .into_iter()
            .find(|e| e.name == entry)
            .and_then(|e| e.annotated)
            .expect("annotated entry"),
    }
}

/// Splits `a, (b, c), d` at top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

/// A Python literal as a value of type `t`.
fn literal(t: &Type, s: &str) -> HostValue {
    match t {
        Type::Scalar(Scalar::Bool) => HostValue::Bool(s == "True"),
        Type::Scalar(sc) if sc.is_float() => HostValue::Float64(match s {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            s => s.parse().unwrap_or_else(|_| panic!("bad float `{s}`")),
        }),
        Type::Scalar(sc) if sc.is_signed() => HostValue::Int(s.parse().expect("int")),
        Type::Scalar(_) => HostValue::UInt(s.parse().expect("uint")),
        Type::Tuple(ts) => {
            let inner = s.trim_start_matches('(').trim_end_matches(')');
            HostValue::Tuple(
                ts.iter()
                    .zip(split_top(inner))
                    .map(|(t, s)| literal(t, s))
                    .collect(),
            )
        }
        Type::Vector { elem, len } => {
            let inner = s.trim_start_matches('(').trim_end_matches(')');
            let t = Type::Scalar(*elem);
            let items: Vec<_> = split_top(inner).iter().map(|s| literal(&t, s)).collect();
            assert_eq!(items.len(), usize::from(*len));
            HostValue::Tuple(items)
        }
        Type::Struct(st) => {
            let inner = s
                .split_once('(')
                .map(|x| x.1)
                .unwrap_or(s)
                .trim_end_matches(')');
            HostValue::Struct {
                name: st.name.clone(),
                fields: st
                    .fields
                    .iter()
                    .zip(split_top(inner))
                    .map(|((n, t), s)| {
                        let s = s.split_once('=').map(|x| x.1).unwrap_or(s);
                        (n.clone(), literal(t, s))
                    })
                    .collect(),
            }
        }
        other => panic!("no literal for {other}"),
    }
}

#[test]
fn host_fixtures_compute_the_expected_values() {
    let mut cases = 0;
    for path in fixtures("host") {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(&path).expect("read");
        let module = Module::parse(&name, &src).unwrap_or_else(|d| panic!("{}", d.render()));
        let entry = header(&src, "entry:")[0];
        let types = types_of(&module, entry, header(&src, "sig:").first().copied());
        let f = module
            .host_function(entry, &types)
            .unwrap_or_else(|e| match e {
                pydevice::Error::Diagnostics(d) => panic!("{name}:\n{}", d.render()),
                e => panic!("{name}: {e}"),
            });
        for case in header(&src, "case:") {
            let (args, want) = case.rsplit_once("->").expect("case: ARGS -> REPR");
            let args: Vec<HostValue> = types
                .iter()
                .zip(split_top(args.trim()))
                .map(|(t, s)| literal(t, s))
                .collect();
            let got = f
                .call(&args)
                .unwrap_or_else(|e| panic!("{name}: {case}: {e}"));
            assert_eq!(got.to_string(), want.trim(), "{name}: {case}");
            cases += 1;
        }
        // The same @func is valid device code too.
        let k = module
            .compile(entry, &types, &CompileOptions::default())
            .unwrap_or_else(|e| panic!("{name} on the device: {e}"));
        assert!(
            k.ptx.contains(".func"),
            "{name}: no device function in the PTX"
        );
    }
    assert!(cases > 20, "only {cases} cases");
}

#[test]
fn host_error_fixtures_report_the_expected_diagnostics() {
    for path in fixtures("host/errors") {
        let name = format!(
            "host/errors/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        let src = std::fs::read_to_string(&path).expect("read");
        let module = Module::parse(&name, &src).unwrap_or_else(|d| panic!("{}", d.render()));
        let entry = header(&src, "entry:")[0];
        let types = types_of(&module, entry, header(&src, "sig:").first().copied());
        let got = match module.host_function(entry, &types) {
            Ok(_) => panic!("{name}: built for the host, but should not"),
            Err(pydevice::Error::Diagnostics(d)) => d.render(),
            Err(e) => panic!("{name}: {e}"),
        };
        let expected = path.with_extension("stderr");
        if std::env::var_os("PYDEVICE_BLESS").is_some() {
            std::fs::write(&expected, &got).expect("write .stderr");
            continue;
        }
        let want = std::fs::read_to_string(&expected)
            .unwrap_or_else(|_| panic!("{name}: no {}", expected.display()));
        assert_eq!(got, want, "{name}: diagnostics differ");
    }
}
