//! Host execution of `@func`s through Cranelift.
//!
//! The fixtures of `tests/fixtures/host/` (each `# case: ARGS -> REPR` called on the host)
//! and `tests/fixtures/host/errors/` are test cases of `tests/fixtures.rs`; this file holds
//! the tests written in Rust.
//!
//! `cpu` runs whole kernels on the CPU back end (`pydevice::runtime::cpu`), the same
//! Cranelift code generator with fibers for the GPU threads.
//!
//! `c_abi_matches_gcc` calls the raw C ABI pointer from C code compiled by the system's C
//! compiler, with structs, tuples and vectors passed and returned by value.

use crate::support;

use pydevice::types::signature::parse_signature;
use pydevice::types::{Scalar, Type};
use pydevice::{HostValue, Module};
use support::host_values::{literal, types_of};

/// The functions the C ABI test calls, with argument values as Python literals.
const ABI_SRC: &str = r#"
from cuda import device
from cuda.device import int8, int16, int32, int64, uint8, uint16, float16, float32, float64, float32x4


@device.struct
class pair:
    x: float32
    y: float32


@device.struct
class mixed:
    i: int32
    a: float32
    b: float32


@device.struct
class big:
    a: float64
    b: float64
    c: float64


@device.struct
class small:
    c: int8
    h: float16
    s: int16


@device.struct
class ii:
    i: int64
    j: int64


@device.func
def scal(a: int8, b: uint16, c: float32, d: float64, e: bool, f: int64, g: int32, h: uint8, i: int16, j: float32) -> float64:
    return float64(a) + float64(b) * 10.0 + float64(c) * 100.0 + d * 1000.0 + float64(e) * 3.0 + float64(f) + float64(g) * 7.0 + float64(h) * 11.0 + float64(i) * 13.0 + float64(j)


@device.func
def swap(p: pair, m: mixed) -> mixed:
    return mixed(m.i + 1, p.y, p.x + m.a + m.b)


@device.func
def grow(b: big, p: pair, k: int32) -> big:
    return big(b.a + float64(p.x), b.b * float64(k), b.c - float64(p.y))


@device.func
def tup(x: float64, n: int64) -> tuple[int64, float64]:
    return (n * 2, x + float64(n))


@device.func
def tup2(x: float64, n: int32) -> tuple[float64, int32]:
    return (x * 0.5, n - 1)


@device.func
def vec4(v: float32x4, s: float32) -> float32x4:
    return float32x4(v.w * s, v.z, v.y, v.x + s)


@device.func
def halfs(s: small, h: float16) -> small:
    return small(s.c + int8(1), s.h + h, s.s * int16(2))


@device.func
def ints(a: ii, b: ii, c: int32, d: ii, e: ii, f: int32) -> int64:
    return a.i + a.j * 2 + b.i * 3 + b.j * 4 + int64(c) * 5 + d.i * 6 + d.j * 7 + e.i * 8 + e.j * 9 + int64(f) * 10


@device.func
def asum(s, a, k):
    t = float64(s)
    for i in range(len(a)):
        t += a[i]
    a[k] = -1.0
    return t * float64(k)
"#;

const ABI_C: &str = r#"
#include <stdint.h>
typedef struct { float x, y; } pair;
typedef struct { int32_t i; float a, b; } mixed;
typedef struct { double a, b, c; } big;
typedef struct { unsigned short x; } half;
typedef struct { int8_t c; half h; int16_t s; } small;
typedef struct { int64_t i, j; } ii;
typedef struct { int64_t a; double b; } t_id;
typedef struct { double a; int32_t b; } t_di;
typedef struct __attribute__((aligned(16))) { float x, y, z, w; } f4;
typedef struct { double *data; uint64_t shape[1]; uint64_t strides[1]; } darr;

int run(void **fp, double *out) {
    int k = 0;
    out[k++] = ((double (*)(int8_t, uint16_t, float, double, _Bool, int64_t, int32_t, uint8_t, int16_t, float))fp[0])(
        -5, 60000, 1.5f, 2.25, 1, -7000000000LL, 123, 200, -300, 0.75f);
    pair p = {1.5f, -2.5f};
    mixed m = {41, 0.25f, 8.0f};
    mixed r1 = ((mixed (*)(pair, mixed))fp[1])(p, m);
    out[k++] = r1.i; out[k++] = r1.a; out[k++] = r1.b;
    big b = {1.0, 2.0, 3.0};
    big r2 = ((big (*)(big, pair, int32_t))fp[2])(b, p, 7);
    out[k++] = r2.a; out[k++] = r2.b; out[k++] = r2.c;
    t_id r3 = ((t_id (*)(double, int64_t))fp[3])(0.5, 1LL << 40);
    out[k++] = (double)r3.a; out[k++] = r3.b;
    t_di r4 = ((t_di (*)(double, int32_t))fp[4])(9.0, -17);
    out[k++] = r4.a; out[k++] = r4.b;
    f4 v = {1.0f, 2.0f, 3.0f, 4.0f};
    f4 r5 = ((f4 (*)(f4, float))fp[5])(v, 0.5f);
    out[k++] = r5.x; out[k++] = r5.y; out[k++] = r5.z; out[k++] = r5.w;
    small s = {-3, {0x4000}, 1234};
    half h = {0x3C00};
    small r6 = ((small (*)(small, half))fp[6])(s, h);
    out[k++] = r6.c; out[k++] = r6.h.x; out[k++] = r6.s;
    ii a1 = {1, 2}, a2 = {3, 4}, a4 = {5, 6}, a5 = {7, 8};
    out[k++] = (double)((int64_t (*)(ii, ii, int32_t, ii, ii, int32_t))fp[7])(a1, a2, 9, a4, a5, 10);
    double buf[5] = {1.0, 2.0, 3.0, 4.0, 5.0};
    darr d = {buf, {5}, {1}};
    out[k++] = ((double (*)(int32_t, darr, int32_t))fp[8])(3, d, 2);
    out[k++] = buf[2];
    return k;
}
"#;

/// The leaves of a value as f64, half-precision ones as their bits (as the C side writes).
fn flatten(t: &Type, v: &HostValue, out: &mut Vec<f64>) {
    match (t, v) {
        (Type::Scalar(Scalar::Float16), HostValue::Float32(x)) => {
            let bits = half_bits(*x);
            out.push(f64::from(bits));
        }
        (_, HostValue::Bool(b)) => out.push(f64::from(u8::from(*b))),
        (_, HostValue::Int(i)) => out.push(*i as f64),
        (_, HostValue::UInt(u)) => out.push(*u as f64),
        (_, HostValue::Float32(x)) => out.push(f64::from(*x)),
        (_, HostValue::Float64(x)) => out.push(*x),
        (Type::Struct(st), HostValue::Struct { fields, .. }) => {
            for ((_, ft), (_, fv)) in st.fields.iter().zip(fields) {
                flatten(ft, fv, out);
            }
        }
        (Type::Tuple(ts), HostValue::Tuple(items)) => {
            for (et, ev) in ts.iter().zip(items) {
                flatten(et, ev, out);
            }
        }
        (Type::Vector { elem, .. }, HostValue::Tuple(items)) => {
            for ev in items {
                flatten(&Type::Scalar(*elem), ev, out);
            }
        }
        (t, v) => panic!("cannot flatten {v} as {t}"),
    }
}

/// IEEE half bits of an exactly representable value (normal numbers only; enough here).
fn half_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let m = ((b >> 13) & 0x3ff) as u16;
    sign | ((e as u16) << 10) | m
}

#[test]
fn c_abi_matches_gcc() {
    let dir = std::env::temp_dir().join(format!("pydevice_host_abi_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let c = dir.join("abi.c");
    let so = dir.join("libabi.so");
    std::fs::write(&c, ABI_C).expect("write C");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = std::process::Command::new(&cc)
        .args(["-O1", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&c)
        .status();
    match built {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{cc} failed on the ABI test ({s})"),
        Err(e) => {
            eprintln!("skipping c_abi_matches_gcc: no C compiler `{cc}` ({e})");
            return;
        }
    }
    let module = Module::parse("abi.py", ABI_SRC).unwrap_or_else(|d| panic!("{}", d.render()));
    let lit = |s: &str| s.to_string();
    // Each entry with the arguments the C side passes, as Python literals.
    let calls: Vec<(&str, Vec<String>)> = vec![
        (
            "scal",
            [
                "-5",
                "60000",
                "1.5",
                "2.25",
                "True",
                "-7000000000",
                "123",
                "200",
                "-300",
                "0.75",
            ]
            .map(lit)
            .to_vec(),
        ),
        (
            "swap",
            vec![lit("pair(1.5, -2.5)"), lit("mixed(41, 0.25, 8.0)")],
        ),
        (
            "grow",
            vec![lit("big(1.0, 2.0, 3.0)"), lit("pair(1.5, -2.5)"), lit("7")],
        ),
        ("tup", vec![lit("0.5"), (1i64 << 40).to_string()]),
        ("tup2", vec![lit("9.0"), lit("-17")]),
        ("vec4", vec![lit("(1.0, 2.0, 3.0, 4.0)"), lit("0.5")]),
        ("halfs", vec![lit("small(-3, 2.0, 1234)"), lit("1.0")]),
        (
            "ints",
            ["ii(1, 2)", "ii(3, 4)", "9", "ii(5, 6)", "ii(7, 8)", "10"]
                .map(lit)
                .to_vec(),
        ),
        (
            "asum",
            vec![lit("3"), lit("[1.0, 2.0, 3.0, 4.0, 5.0]"), lit("2")],
        ),
    ];
    let mut fns = Vec::new();
    let mut expected = Vec::new();
    for (name, args) in &calls {
        let sig = (*name == "asum").then_some("int32, float64[::1], int32");
        let types = types_of(&module, name, sig);
        let f = module
            .host_function(name, &types)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let vals: Vec<HostValue> = types.iter().zip(args).map(|(t, s)| literal(t, s)).collect();
        let r = f.call(&vals).unwrap_or_else(|e| panic!("{name}: {e}"));
        flatten(f.ret(), &r, &mut expected);
        fns.push(f);
    }
    expected.push(-1.0); // what asum stored into the C array
    let ptrs: Vec<*const std::ffi::c_void> = fns.iter().map(|f| f.as_ptr()).collect();
    let mut out = vec![f64::NAN; 64];
    // SAFETY: the library was just built from ABI_C; `run` has the declared signature and
    // calls each pointer with the C prototype of the @func at the same index.
    let n = unsafe {
        let lib = libloading::Library::new(&so).expect("load the C library");
        let run: libloading::Symbol<
            unsafe extern "C" fn(*const *const std::ffi::c_void, *mut f64) -> i32,
        > = lib.get(b"run").expect("run");
        run(ptrs.as_ptr(), out.as_mut_ptr())
    };
    assert_eq!(n as usize, expected.len(), "number of values");
    for (i, (g, w)) in out.iter().zip(&expected).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "value {i}: C got {g}, the typed call {w}"
        );
    }
    // And the typed calls computed what the Python means (spot checks).
    assert_eq!(expected[1..4], [42.0, -2.5, 9.75]);
    assert_eq!(expected[4..7], [2.5, 14.0, 5.5]);
    let n = expected.len();
    assert_eq!(
        expected[n - 3],
        1.0 + 4.0 + 9.0 + 16.0 + 45.0 + 30.0 + 42.0 + 56.0 + 72.0 + 100.0
    );
    assert_eq!(expected[n - 2], (3.0 + 15.0) * 2.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_call_prints_the_python_repr() {
    let file = support::repo_path("tests/fixtures/host/arith_int.py");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pydevice"))
        .arg("call")
        .arg(&file)
        .args([
            "--entry",
            "ops",
            "--arg",
            "x=int32:-7",
            "--arg",
            "y=int32:2",
        ])
        .output()
        .expect("run pydevice");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().last(), Some("(-4, 1, -14, -5, 49, 6)"));
    let file = support::repo_path("tests/fixtures/host/float_ops.py");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pydevice"))
        .arg("call")
        .arg(&file)
        .args([
            "--entry",
            "fops",
            "--arg",
            "x=float32:-7.5",
            "--arg",
            "y=float32:2",
        ])
        .output()
        .expect("run pydevice");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some("(-4.0, 0.5, -3.75, 56.25, -7.5, 2.0)")
    );
    // A device-only construct is a diagnostic (exit status 1), never a crash.
    let file = support::repo_path("tests/fixtures/host/errors/device_only.py");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pydevice"))
        .arg("call")
        .arg(&file)
        .args(["--entry", "f", "--arg", "x=int32:1"])
        .output()
        .expect("run pydevice");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("E0501"));
}

#[test]
fn arrays_are_written_in_place_and_bounds_checked() {
    let src = r#"from cuda import device
from cuda.device import float64


@device.func
def fill(a, m, k):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            m[i, j] = float64(i * 10 + j) + float64(a[j % len(a)])
    a[-1] = k
    return m.strides[0] + m.size * 1000


@device.func
def oob(a, k):
    a[k] = 5
    return a[k + 1]
"#;
    let m = Module::parse("arrays.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let (types, _) = parse_signature("int32[::1], float64[:, ::1], int32").expect("sig");
    let f = m
        .host_function("fill", &types)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut args = vec![
        HostValue::from_i32s(&[1, 2, 3]),
        HostValue::Array {
            dtype: Scalar::Float64,
            shape: vec![2, 4],
            data: vec![0; 64],
        },
        HostValue::Int(-9),
    ];
    let r = f.call_mut(&mut args).expect("call");
    assert_eq!(r.to_string(), "8032"); // strides[0] = 4 elements of 8 bytes; size 8
    assert_eq!(args[0].to_string(), "array([1, 2, -9], dtype=int32)");
    assert_eq!(
        args[1].to_string(),
        "array([[1.0, 3.0, 5.0, 4.0], [11.0, 13.0, 15.0, 14.0]], dtype=float64)"
    );
    // `call` works on copies: the arguments stay as they were.
    let before = args[0].clone();
    f.call(&args).expect("call");
    assert_eq!(args[0], before);

    let (types, _) = parse_signature("int32[::1], int64").expect("sig");
    let g = m
        .host_function("oob", &types)
        .unwrap_or_else(|e| panic!("{e}"));
    let a = HostValue::from_i32s(&[0, 0, 0]);
    assert_eq!(
        g.call(&[a.clone(), HostValue::Int(1)]).expect("in range"),
        HostValue::Int(0)
    );
    // a[3] (the load) is out of range: reported with its position, nothing else touched.
    let e = g
        .call(&[a.clone(), HostValue::Int(2)])
        .expect_err("out of range");
    assert_eq!(
        e.to_string(),
        "array index out of range at line 17, column 12"
    );
    let e = g.call(&[a, HostValue::Int(-7)]).expect_err("out of range");
    assert_eq!(
        e.to_string(),
        "array index out of range at line 16, column 5"
    );
}

#[test]
fn every_math_function_resolves_on_the_host() {
    use pydevice::ir::MathFn;
    for f in MathFn::ALL {
        // Not in Python's `math`: reached through `cuda.fp16.hrint`/`hexp10` only.
        if matches!(f, MathFn::Rint | MathFn::Exp10 | MathFn::Rsqrt) {
            continue;
        }
        for t in ["float32", "float64"] {
            let args = if f.arity() == 2 { "x, y" } else { "x" };
            let src = format!(
                "import math\nfrom cuda import device\nfrom cuda.device import {t}\n\n@device.func\ndef g(x: {t}, y: {t}):\n    return math.{}({args})\n",
                f.name()
            );
            let m = Module::parse("m.py", &src).unwrap_or_else(|d| panic!("{}", d.render()));
            let ty = Type::Scalar(Scalar::from_name(t).expect("dtype"));
            let g = m
                .host_function("g", &[ty.clone(), ty])
                .unwrap_or_else(|e| panic!("math.{} ({t}): {e}", f.name()));
            let r = g
                .call(&[HostValue::Float64(0.5), HostValue::Float64(2.0)])
                .unwrap_or_else(|e| panic!("math.{} ({t}): {e}", f.name()));
            let x = 0.5f64;
            let want = match f {
                MathFn::Sin => Some(x.sin()),
                MathFn::Exp => Some(x.exp()),
                MathFn::Log => Some(x.ln()),
                MathFn::Atan2 => Some(x.atan2(2.0)),
                MathFn::Pow => Some(x.powf(2.0)),
                MathFn::Hypot => Some(x.hypot(2.0)),
                MathFn::Cbrt => Some(x.cbrt()),
                MathFn::Gamma => Some(std::f64::consts::PI.sqrt()),
                _ => None,
            };
            if let Some(w) = want {
                let got: f64 = match r {
                    HostValue::Float32(v) => f64::from(v),
                    HostValue::Float64(v) => v,
                    ref other => panic!("math.{}: {other}", f.name()),
                };
                let tol = if t == "float32" { 1e-6 } else { 1e-15 };
                assert!(
                    (got - w).abs() <= tol * w.abs().max(1.0),
                    "math.{} ({t}): {got} vs {w}",
                    f.name()
                );
            }
        }
    }
}

#[test]
fn a_specialization_for_a_gpu_is_not_lowered_for_the_host() {
    let file = support::repo_path("tests/fixtures/host/target_host.py");
    let src = std::fs::read_to_string(&file).expect("read");
    let m = Module::parse("target_host.py", &src).unwrap_or_else(|d| panic!("{}", d.render()));
    let i32t = Type::Scalar(Scalar::Int32);
    // Decided `target(...)` for sm_90: the device branch was taken, so not for the host.
    let spec = m
        .specialize("where", std::slice::from_ref(&i32t))
        .expect("specialize");
    match spec.to_host() {
        Err(pydevice::Error::Host(pydevice::HostError::TargetMismatch { specialized: 90 })) => {}
        other => panic!("expected a target mismatch, got {other:?}"),
    }
    // A function without `target(...)` lowers from either specialization.
    let m = Module::parse(
        "plain.py",
        "from cuda import device\n@device.func\ndef f(x: int):\n    return x * 2\n",
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let f = m
        .specialize("f", &[i32t])
        .expect("specialize")
        .to_host()
        .expect("to_host");
    assert_eq!(
        f.call(&[HostValue::Int(21)]).expect("call"),
        HostValue::Int(42)
    );
}

#[test]
fn atomics_act_on_array_memory_and_are_bounds_checked() {
    let src = "from cuda import device\n\n\n@device.func\ndef bump(a, k):\n    return device.atomic_ref(a, k).add(1) + device.atomic_ref(a, k).sub(1)\n";
    let m = Module::parse("bump.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let (types, _) = parse_signature("int32[::1], int32").expect("sig");
    let f = m
        .host_function("bump", &types)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut args = vec![HostValue::from_i32s(&[5, 6]), HostValue::Int(-1)];
    assert_eq!(f.call_mut(&mut args).expect("call"), HostValue::Int(13));
    assert_eq!(args[0].to_string(), "array([5, 6], dtype=int32)");
    args[1] = HostValue::Int(2);
    let e = f.call_mut(&mut args).expect_err("out of range");
    assert_eq!(
        e.to_string(),
        "array index out of range at line 6, column 12"
    );
    assert_eq!(args[0].to_string(), "array([5, 6], dtype=int32)");
}

/// The same `@func` decides `target(...)` per target: `is_host` on the host, `provides(sm90)`
/// and older-arch branches on the device (tests/gpu/main.rs runs those on the H100).
#[test]
fn target_specialization_takes_the_host_branch_on_the_host() {
    let src = std::fs::read_to_string(support::repo_path(
        "tests/fixtures/lang/target_specialization.py",
    ))
    .expect("fixture");
    let m = Module::parse("target.py", &src).unwrap_or_else(|d| panic!("{}", d.render()));
    let level = m.host_function("level", &[]).expect("host function");
    assert_eq!(level.call(&[]).expect("call"), HostValue::Int(-1));
    // The kernel is a device entity: E0500 on the host.
    assert!(m.host_function("which", &[]).is_err());
}

/// `print` on the host writes through C `printf` to the process's standard output, so the
/// call runs in a child process (`pydevice call`) whose stdout is compared with the text
/// Python prints (floats without a spec as Python's `repr`, docs/semantics.md §4.5.1).
#[test]
fn print_on_the_host_writes_python_text() {
    let file = support::repo_path("tests/fixtures/host/print_host.py");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pydevice"))
        .arg("call")
        .arg(&file)
        .args([
            "--entry",
            "show",
            "--arg",
            "i=int32:3",
            "--arg",
            "x=float32:2.5",
        ])
        .output()
        .expect("run pydevice");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "i = 3 x = 2.5 False 100%\n\
         3: 2.500 [    3] fffffffffffffffd   2.50e+00|\n\
         (3, 2.5) ; (3,)\n\
         point(x=2.5, y=2.0) float32x2(2.5, 0.1) 200 -3\n\
         \n\
         3.0 0.1 1e+16 123456.5 1.5e-05 -0.0 0.1 2.5e+20 0.3333333333333333 10.0\n\
         5.5\n"
    );
}

/// `assert` and `raise` on the host stop the call with an error naming the line and the
/// message, as Python would; the function stays callable.
#[test]
fn assert_and_raise_on_the_host_name_the_line() {
    let src = std::fs::read_to_string(support::repo_path("tests/fixtures/host/assert_host.py"))
        .expect("fixture");
    let module = Module::parse("assert_host.py", &src).expect("parse");
    let f = module
        .host_function("checked", &[Type::Scalar(Scalar::Int32)])
        .expect("host");
    let fail = |x: i64| f.call(&[HostValue::Int(x)]).expect_err("fails").to_string();
    assert_eq!(fail(1), "AssertionError (at assert_host.py:19:5)");
    assert_eq!(
        fail(-2),
        "AssertionError: x must be non-negative (at assert_host.py:10:5)"
    );
    assert_eq!(fail(200), "ValueError: too large (at assert_host.py:12:9)");
    assert_eq!(f.call(&[HostValue::Int(3)]).expect("ok"), HostValue::Int(9));
}

/// `cmath.log10`, the operation added as one declaration and one IR expansion: the host runs
/// it with no arm of its own and agrees with CPython 3.11.
#[test]
fn cmath_log10_agrees_with_cpython() {
    let src = "import cmath\nfrom cuda import device\n\n\n@device.func\ndef lg(z):\n    return cmath.log10(z)\n";
    let cases = [
        ((0.3, -1.7), (0.23710813203812758, -0.6063290047497355)),
        ((-2.5, 0.25), (0.4001006955633588, 1.3210908080461967)),
        ((1e300, 1e300), (300.1505149978319, 0.3410940884604603)),
    ];
    let m = Module::parse("lg.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let f = m
        .host_function("lg", &[Type::Scalar(Scalar::Complex128)])
        .unwrap_or_else(|e| panic!("{e}"));
    for ((re, im), (wr, wi)) in cases {
        let got = f.call(&[HostValue::Complex128(re, im)]).expect("call");
        let HostValue::Complex128(gr, gi) = got else {
            panic!("not a complex128: {got}");
        };
        let close = |g: f64, w: f64| (g - w).abs() <= 1e-15 * w.abs();
        assert!(
            close(gr, wr) && close(gi, wi),
            "log10({re}, {im}) = ({gr}, {gi})"
        );
    }
}

/// Complex numbers on the host (docs/semantics.md §16.1): every `cmath` function, `phase`,
/// `abs`, a complex power and `rect`, on complex128 and complex64, against CPython 3.11's
/// `cmath` (values printed by CPython; the device computes the same formulas).
#[test]
fn complex_cmath_functions_agree_with_cpython() {
    type C = (f64, f64);
    let src = "import cmath\nfrom cuda import device\nfrom cuda.device import complex128\n\n\n@device.func\ndef cm(z):\n    \
        return (cmath.exp(z), cmath.log(z), cmath.sqrt(z), cmath.sin(z), cmath.cos(z), \
        cmath.tan(z), cmath.asin(z), cmath.acos(z), cmath.atan(z), cmath.sinh(z), \
        cmath.cosh(z), cmath.tanh(z), cmath.asinh(z), cmath.acosh(z), cmath.atanh(z), \
        cmath.phase(z), abs(z), z ** complex128(0.5, -0.25), cmath.rect(abs(z), 0.6))\n";
    #[rustfmt::skip]
    let cases: [(C, [C; 19]); 2] = [
        ((0.3, -1.7), [
            (-0.17392187543249002, -1.3386074785524524), (0.5459616502586565, -1.396124127786657),
            (1.0065454908157918, -0.8444725129224773), (0.8358243686191043, -2.527468723190649),
            (2.701992959680282, 0.7818376958374182), (0.035682500915865334, -0.9457340139741869),
            (0.1513854812624992, -1.3107496902488216), (1.4194108455323973, 1.3107496902488216),
            (1.4236790442393028, -0.6358752035135133), (-0.039235763211921855, -1.0366254194722615),
            (-0.13468611222056817, -0.30198205908019077), (2.9115207481259047, 1.1686311699363665),
            (1.1511827117610314, -1.3583551589067286), (1.3107496902488216, -1.4194108455323973),
            (0.07595582215779155, -1.049069489395666), (-1.396124127786657, 0.0),
            (1.7262676501632068, 0.0), (0.6223345143378979, -0.6867326868585237),
            (1.4247501725461358, 0.9747240357299888),
        ]),
        ((-2.5, 0.75), [
            (0.06006067979462966, 0.055952316678511464), (0.9593795799946813, 2.8501358591119264),
            (0.23460245866959442, 1.59844872098351), (-0.7748318813161045, -0.6587937997478095),
            (-1.0372272476741875, 0.49213365769419465), (0.3637701652914554, 0.807747138952803),
            (-1.257108656261786, 1.621135659801741), (2.8279049830566825, -1.621135659801741),
            (-1.2155990183547114, 0.09720644727604992), (-4.426867273187325, 4.180006197022092),
            (4.486927952981954, -4.12405388034358), (-0.9989569947031439, 0.01342872614662455),
            (-1.6823483519416833, 0.27296204931872853), (1.621135659801741, 2.8279049830566825),
            (-0.3790868723420221, 1.4445191889058668), (2.8501358591119264, 0.0),
            (2.6100766272276377, 0.0), (1.2389918433901095, 3.0525340302047193),
            (2.1541891980943015, 1.473760122548385),
        ]),
    ];
    let m = Module::parse("cm.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    for (ty, tol) in [(Scalar::Complex128, 1e-13), (Scalar::Complex64, 2e-6)] {
        let f = m
            .host_function("cm", &[Type::Scalar(ty)])
            .unwrap_or_else(|e| panic!("{e}"));
        for ((re, im), want) in &cases {
            let got = f.call(&[HostValue::Complex128(*re, *im)]).expect("call");
            let HostValue::Tuple(items) = got else {
                panic!("not a tuple: {got}");
            };
            assert_eq!(items.len(), want.len());
            for (k, (g, w)) in items.iter().zip(want).enumerate() {
                let (gr, gi) = match g {
                    HostValue::Complex128(a, b) => (*a, *b),
                    HostValue::Complex64(a, b) => (f64::from(*a), f64::from(*b)),
                    HostValue::Float64(a) => (*a, 0.0),
                    HostValue::Float32(a) => (f64::from(*a), 0.0),
                    other => panic!("result {k}: {other}"),
                };
                let close = |a: f64, b: f64| (a - b).abs() <= tol * b.abs().max(1.0);
                assert!(
                    close(gr, w.0) && close(gi, w.1),
                    "{ty} result {k} of cm({re}+{im}j): ({gr}, {gi}) vs {w:?}"
                );
            }
        }
    }
}

/// A `@struct` goes into a host function as the same `HostValue::Struct` it comes out as:
/// a result is a valid argument, and a value of another class, with other field names or
/// as a plain tuple is an argument error, not a silent reinterpretation.
#[test]
fn struct_values_go_in_as_they_come_out() {
    let src = "from cuda import device\nfrom cuda.device import float32, int32\n\n@device.struct\nclass Pt:\n    x: float32\n    n: int32\n\n@device.func\ndef bump(p: Pt) -> Pt:\n    return Pt(p.x * 2.0, p.n + 1)\n";
    let m = Module::parse("pt.py", src).expect("parse");
    let pt = m.named_type("Pt").expect("Pt");
    let f = m.host_function("bump", &[pt]).expect("compile");
    let arg = HostValue::Struct {
        name: "Pt".into(),
        fields: vec![
            ("x".into(), HostValue::Float32(1.5)),
            ("n".into(), HostValue::Int(2)),
        ],
    };
    let once = f.call(std::slice::from_ref(&arg)).expect("call");
    let HostValue::Struct { name, fields } = &once else {
        panic!("a struct result is a HostValue::Struct: {once:?}")
    };
    assert_eq!(name, "Pt");
    assert_eq!(fields[0], ("x".to_string(), HostValue::Float32(3.0)));
    let twice = f
        .call(std::slice::from_ref(&once))
        .expect("the result goes back in");
    assert_eq!(twice.to_string(), "Pt(x=6.0, n=4)");
    let tuple = HostValue::Tuple(vec![HostValue::Float32(1.5), HostValue::Int(2)]);
    let renamed = HostValue::Struct {
        name: "Pt".into(),
        fields: vec![
            ("y".into(), HostValue::Float32(1.5)),
            ("n".into(), HostValue::Int(2)),
        ],
    };
    for bad in [tuple, renamed] {
        let e = f.call(&[bad]).expect_err("not a Pt");
        assert!(e.to_string().contains("Pt"), "{e}");
    }
}

/// A tuple argument wider than `types::MAX_AGGREGATE_ELEMENTS` is refused (E0115) before
/// anything is compiled (16,000 elements took 19 s in the host back end, 100,000 ended in
/// a Cranelift verifier error); a narrower one compiles and runs.
#[test]
fn tuple_arguments_past_the_element_bound_are_an_error() {
    let src = "from cuda import device\n\n@device.func\ndef first(t):\n    return t[0]\n";
    let m = Module::parse("wide.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let i32t = Type::Scalar(Scalar::Int32);
    let wide = Type::Tuple(vec![i32t.clone(); 100_000]);
    let Err(err) = m.host_function("first", &[wide]) else {
        panic!("a 100,000-element tuple is refused");
    };
    let err = err.to_string();
    assert!(
        err.contains("E0115") && err.contains("more than 8192 elements"),
        "{err}"
    );
    let nested = Type::Tuple(vec![Type::Tuple(vec![i32t.clone(); 128]); 65]);
    assert!(m.host_function("first", &[nested]).is_err());
    let n = 256;
    let f = m
        .host_function("first", &[Type::Tuple(vec![i32t; n])])
        .expect("a tuple below the bound compiles");
    let arg = HostValue::Tuple((0..n as i64).map(|i| HostValue::Int(i + 7)).collect());
    assert_eq!(f.call(&[arg]).expect("call"), HostValue::Int(7));
}

/// Recursion deeper than the stack allows ends the host call with
/// `HostError::StackExhausted` (Python's `RecursionError`) instead of overflowing the native
/// stack (it killed the process with SIGSEGV); the module stays usable.
#[test]
fn unbounded_host_recursion_is_an_error_not_a_crash() {
    let src = "from cuda import device\nfrom cuda.device import int32\n\n\
               @device.func\ndef down(n: int32) -> int32:\n    if n == 0:\n        return 0\n    \
               return down(n - 1) + 1\n";
    let m = Module::parse("rec.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let f = m
        .host_function("down", &[Type::Scalar(Scalar::Int32)])
        .expect("host function");
    assert_eq!(
        f.call(&[HostValue::Int(1000)]).expect("call"),
        HostValue::Int(1000)
    );
    let err = f
        .call(&[HostValue::Int(-1)])
        .expect_err("no end to the recursion");
    assert!(
        matches!(err, pydevice::HostError::StackExhausted { .. }),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("RecursionError"), "{err}");
    // On a thread with a small stack too (the call moves to a stack of its own).
    let f2 = f.clone();
    let small = std::thread::Builder::new()
        .stack_size(128 << 10)
        .spawn(move || {
            (
                f2.call(&[HostValue::Int(-1)]).is_err(),
                f2.call(&[HostValue::Int(500)]),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(small.0);
    assert_eq!(small.1.expect("call"), HostValue::Int(500));
}

/// A 512 KiB `local_array` (the most a thread may have, §5.7) in a host `@func` runs on a
/// thread with a 256 KiB stack: the call moves to a stack of its own (it used to segfault).
#[test]
fn a_large_local_array_runs_on_a_small_thread_stack() {
    let src = "from cuda import device\nfrom cuda.device import int32, float32\n\n\
               @device.func\ndef big(n: int32) -> float32:\n    \
               buf = device.local_array(131072, float32)\n    \
               for i in range(131072):\n        buf[i] = float32(i % 7)\n    \
               return buf[n]\n";
    let m = Module::parse("big.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let f = m
        .host_function("big", &[Type::Scalar(Scalar::Int32)])
        .expect("host function");
    let r = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || f.call(&[HostValue::Int(131070)]))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r.expect("call"), HostValue::Float32(2.0));
}
