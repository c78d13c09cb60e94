//! Differential test of host execution: random integer and float `@func` bodies are
//! JIT-compiled through Cranelift, called with random arguments, and compared with an
//! independent evaluation of the same expression tree in Rust that follows
//! docs/semantics.md §3 (wrap-around, Python `//` and `%`, division by zero gives 0, shifts by
//! the width or more, `min`/`max` by argument order, IEEE floats).

use proptest::prelude::*;
use pydevice::types::{Scalar, Type};
use pydevice::{HostValue, Module};

#[derive(Clone, Debug)]
enum E {
    Arg(usize),
    Lit(i64),
    Un(&'static str, Box<E>),
    Bin(&'static str, Box<E>, Box<E>),
    /// `(then if a CMP b else otherwise)`
    Sel(&'static str, Box<E>, Box<E>, Box<E>, Box<E>),
}

const INT_OPS: &[&str] = &[
    "+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "min", "max", "**",
];
const FLOAT_OPS: &[&str] = &["+", "-", "*", "/", "min", "max"];
const CMPS: &[&str] = &["<", "<=", ">", ">=", "==", "!="];

fn expr(float: bool, depth: u32) -> BoxedStrategy<E> {
    let leaf = prop_oneof![(0usize..3).prop_map(E::Arg), (-40i64..40).prop_map(E::Lit),];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = expr(float, depth - 1);
    let ops = if float { FLOAT_OPS } else { INT_OPS };
    let unops: &'static [&'static str] = if float {
        &["-", "abs"]
    } else {
        &["-", "~", "abs"]
    };
    prop_oneof![
        2 => leaf,
        4 => (prop::sample::select(ops), sub.clone(), sub.clone())
            .prop_map(|(op, a, b)| E::Bin(op, Box::new(a), Box::new(b))),
        1 => (prop::sample::select(unops), sub.clone()).prop_map(|(op, a)| E::Un(op, Box::new(a))),
        1 => (prop::sample::select(CMPS), sub.clone(), sub.clone(), sub.clone(), sub)
            .prop_map(|(c, a, b, t, o)| E::Sel(c, Box::new(a), Box::new(b), Box::new(t), Box::new(o))),
    ]
    .boxed()
}

fn render(e: &E, t: Scalar) -> String {
    match e {
        E::Arg(i) => ["x", "y", "z"][*i].to_string(),
        E::Lit(v) if t.is_float() => format!("{t}({:?})", *v as f64 / 8.0),
        E::Lit(v) if !t.is_signed() => format!("{t}({})", v.unsigned_abs()),
        E::Lit(v) => format!("{t}({v})"),
        E::Un("abs", a) => format!("abs({})", render(a, t)),
        E::Un(op, a) => format!("({op}{})", render(a, t)),
        E::Bin(op @ ("min" | "max"), a, b) => format!("{op}({}, {})", render(a, t), render(b, t)),
        // Integer powers with small non-negative exponents only (the exponent is masked).
        E::Bin("**", a, b) => format!("({} ** ({} & {t}(3)))", render(a, t), render(b, t)),
        E::Bin(op, a, b) => format!("({} {op} {})", render(a, t), render(b, t)),
        E::Sel(c, a, b, th, ot) => format!(
            "({} if {} {c} {} else {})",
            render(th, t),
            render(a, t),
            render(b, t),
            render(ot, t)
        ),
    }
}

/// Wraps an integer to the type's width and signedness.
fn wrap(v: i128, t: Scalar) -> i128 {
    let bits = t.bits();
    let m = v & ((1i128 << bits) - 1);
    if t.is_signed() && m >= 1i128 << (bits - 1) {
        m - (1i128 << bits)
    } else {
        m
    }
}

fn eval_int(e: &E, t: Scalar, args: &[i128; 3]) -> i128 {
    let bits = i128::from(t.bits());
    match e {
        E::Arg(i) => args[*i],
        E::Lit(v) if !t.is_signed() => i128::from(v.unsigned_abs()),
        E::Lit(v) => i128::from(*v),
        E::Un(op, a) => {
            let x = eval_int(a, t, args);
            wrap(
                match *op {
                    "-" => -x,
                    "~" => !x,
                    _ => x.abs(),
                },
                t,
            )
        }
        E::Bin(op, a, b) => {
            let x = eval_int(a, t, args);
            let y = eval_int(b, t, args);
            let r = match *op {
                "+" => x.wrapping_add(y),
                "-" => x.wrapping_sub(y),
                "*" => x.wrapping_mul(y),
                "//" if y == 0 => 0,
                "//" => x.div_euclid(y) - i128::from(y < 0 && x.rem_euclid(y) != 0),
                "%" if y == 0 => 0,
                "%" => {
                    let r = x.rem_euclid(y);
                    if y < 0 && r != 0 { r + y } else { r }
                }
                "&" => x & y,
                "|" => x | y,
                "^" => x ^ y,
                "<<" if y < 0 || y >= bits => 0,
                "<<" => x << y,
                ">>" if y < 0 || y >= bits => -i128::from(x < 0),
                ">>" => x >> y,
                "min" => {
                    if y < x {
                        y
                    } else {
                        x
                    }
                }
                "max" => {
                    if y > x {
                        y
                    } else {
                        x
                    }
                }
                "**" => {
                    let mut acc = 1i128;
                    for _ in 0..(y & 3) {
                        acc = wrap(acc.wrapping_mul(x), t);
                    }
                    acc
                }
                _ => unreachable!(),
            };
            wrap(r, t)
        }
        E::Sel(c, a, b, th, ot) => {
            let (x, y) = (eval_int(a, t, args), eval_int(b, t, args));
            if cmp(c, x.partial_cmp(&y)) {
                eval_int(th, t, args)
            } else {
                eval_int(ot, t, args)
            }
        }
    }
}

fn cmp(c: &str, o: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::*;
    match (c, o) {
        ("!=", None) => true,
        (_, None) => false,
        ("<", Some(o)) => o == Less,
        ("<=", Some(o)) => o != Greater,
        (">", Some(o)) => o == Greater,
        (">=", Some(o)) => o != Less,
        ("==", Some(o)) => o == Equal,
        (_, Some(o)) => o != Equal,
    }
}

/// Float evaluation in f64, rounded to float32 after every operation for `float32` (exact
/// for + - * /, whose double rounding is innocuous).
fn eval_float(e: &E, t: Scalar, args: &[f64; 3]) -> f64 {
    let round = |v: f64| {
        if t == Scalar::Float32 {
            f64::from(v as f32)
        } else {
            v
        }
    };
    match e {
        E::Arg(i) => args[*i],
        E::Lit(v) => round(*v as f64 / 8.0),
        E::Un(op, a) => {
            let x = eval_float(a, t, args);
            if *op == "-" { -x } else { x.abs() }
        }
        E::Bin(op, a, b) => {
            let x = eval_float(a, t, args);
            let y = eval_float(b, t, args);
            round(match *op {
                "+" => x + y,
                "-" => x - y,
                "*" => x * y,
                "/" => x / y,
                "min" => {
                    if y < x {
                        y
                    } else {
                        x
                    }
                }
                _ => {
                    if y > x {
                        y
                    } else {
                        x
                    }
                }
            })
        }
        E::Sel(c, a, b, th, ot) => {
            let (x, y) = (eval_float(a, t, args), eval_float(b, t, args));
            if cmp(c, x.partial_cmp(&y)) {
                eval_float(th, t, args)
            } else {
                eval_float(ot, t, args)
            }
        }
    }
}

fn source(e: &E, t: Scalar) -> String {
    format!(
        "from cuda import device\nfrom cuda.device import {t}\n\n\n@device.func\ndef f(x: {t}, y: {t}, z: {t}) -> {t}:\n    return {}\n",
        render(e, t)
    )
}

fn int_value(v: &HostValue) -> i128 {
    match v {
        HostValue::Int(i) => i128::from(*i),
        HostValue::UInt(u) => i128::from(*u),
        HostValue::Bool(b) => i128::from(*b),
        other => panic!("not an integer: {other}"),
    }
}

fn int_arg(raw: i64, t: Scalar) -> (i128, HostValue) {
    let v = wrap(i128::from(raw), t);
    let hv = if t.is_signed() {
        HostValue::Int(v as i64)
    } else {
        HostValue::UInt(v as u64)
    };
    (v, hv)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn integer_bodies_match_the_reference(
        e in expr(false, 3),
        t in prop::sample::select(&[Scalar::Int8, Scalar::Int16, Scalar::Int32, Scalar::Int64,
            Scalar::UInt8, Scalar::UInt16, Scalar::UInt32, Scalar::UInt64][..]),
        raw in prop::array::uniform3(prop_oneof![-70i64..70, any::<i64>()]),
    ) {
        let src = source(&e, t);
        let m = Module::parse("p.py", &src).map_err(|d| TestCaseError::fail(d.render()))?;
        let ty = Type::Scalar(t);
        let f = match m.host_function("f", &[ty.clone(), ty.clone(), ty]) {
            Ok(f) => f,
            Err(pydevice::Error::Diagnostics(d)) => {
                return Err(TestCaseError::fail(format!("{src}\n{}", d.render())));
            }
            Err(e) => return Err(TestCaseError::fail(format!("{src}\n{e}"))),
        };
        let args = raw.map(|r| int_arg(r, t));
        let want = eval_int(&e, t, &[args[0].0, args[1].0, args[2].0]);
        let got = f
            .call(&[args[0].1.clone(), args[1].1.clone(), args[2].1.clone()])
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(int_value(&got), want, "{}\nargs {:?}", src, raw);
    }

    #[test]
    fn float_bodies_match_ieee(
        e in expr(true, 3),
        t in prop::sample::select(&[Scalar::Float32, Scalar::Float64][..]),
        raw in prop::array::uniform3(prop_oneof![-100.0f64..100.0, Just(0.0), Just(-0.0),
            Just(f64::NAN), Just(f64::INFINITY), any::<f64>()]),
    ) {
        let src = source(&e, t);
        let m = Module::parse("p.py", &src).map_err(|d| TestCaseError::fail(d.render()))?;
        let ty = Type::Scalar(t);
        let f = m
            .host_function("f", &[ty.clone(), ty.clone(), ty])
            .map_err(|e| TestCaseError::fail(format!("{src}\n{e}")))?;
        let args = raw.map(|r| if t == Scalar::Float32 { f64::from(r as f32) } else { r });
        let want = eval_float(&e, t, &args);
        let got = f
            .call(&args.map(HostValue::Float64))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = match got {
            HostValue::Float32(x) => f64::from(x),
            HostValue::Float64(x) => x,
            other => return Err(TestCaseError::fail(format!("not a float: {other}"))),
        };
        prop_assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{}\nargs {:?}: host {} reference {}", src, args, got, want
        );
    }
}
