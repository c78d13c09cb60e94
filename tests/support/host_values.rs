//! Host values from Python literals, and the fixture header lines, for tests that call
//! `@func`s on the host (`tests/host.rs`, the `host/` fixtures of `tests/fixtures.rs`).

use pydevice::types::signature::parse_signature;
use pydevice::types::{Scalar, Type};
use pydevice::{HostValue, Module};

/// The values of the header comment lines `# KEY VALUE` at the top of a fixture.
pub fn header<'a>(src: &'a str, key: &str) -> Vec<&'a str> {
    src.lines()
        .take_while(|l| l.starts_with('#'))
        .filter_map(|l| l.trim_start_matches('#').trim().strip_prefix(key))
        .map(str::trim)
        .collect()
}

/// The argument types of `entry`: from `sig` when given, else from its annotations.
pub fn types_of(module: &Module, entry: &str, sig: Option<&str>) -> Vec<Type> {
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
pub fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
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
pub fn literal(t: &Type, s: &str) -> HostValue {
    match t {
        Type::Scalar(Scalar::Bool) => HostValue::Bool(s == "True"),
        // `complex(RE, IM)`
        Type::Scalar(sc) if sc.is_complex() => {
            let inner = s
                .strip_prefix("complex(")
                .and_then(|x| x.strip_suffix(')'))
                .unwrap_or_else(|| panic!("bad complex `{s}`: write complex(RE, IM)"));
            let parts: Vec<f64> = split_top(inner)
                .iter()
                .map(|p| match literal(&Type::Scalar(Scalar::Float64), p) {
                    HostValue::Float64(x) => x,
                    _ => unreachable!(),
                })
                .collect();
            HostValue::Complex128(parts[0], parts[1])
        }
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
        Type::Array(at) => {
            // A 1-D array literal `[1.0, 2.0]`.
            let dtype = at.dtype.scalar().expect("array of numbers");
            let inner = s.trim_start_matches('[').trim_end_matches(']');
            let mut data = Vec::new();
            let items = split_top(inner);
            for item in &items {
                let bytes: Vec<u8> = match literal(&Type::Scalar(dtype), item) {
                    HostValue::Float64(x) if dtype == Scalar::Float32 => {
                        (x as f32).to_le_bytes().to_vec()
                    }
                    HostValue::Float64(x) => x.to_le_bytes().to_vec(),
                    HostValue::Int(i) => i.to_le_bytes()[..dtype.size() as usize].to_vec(),
                    HostValue::UInt(u) => u.to_le_bytes()[..dtype.size() as usize].to_vec(),
                    HostValue::Bool(b) => vec![u8::from(b)],
                    other => panic!("array element {other}"),
                };
                data.extend(bytes);
            }
            HostValue::Array {
                dtype,
                shape: vec![items.len() as u64],
                data,
            }
        }
        other => panic!("no literal for {other}"),
    }
}
