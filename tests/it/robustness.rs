//! Untrusted input and the public API's promise never to panic: sizes computed from input
//! with checked arithmetic (`.npy`, DLPack, CUDA Array Interface, array arguments), depth
//! bounds on nested input (signatures, CLI tuple arguments) checked on a small thread stack,
//! non-UTF-8 CLI arguments and file names, invalid types and values built through the API,
//! and PTX that depends on the input alone, whatever the thread compiled before.

use pydevice::abi::{ArgValue, ArrayArg, layout_of, pack};
use pydevice::runtime::dlpack::{DL_CUDA, DL_FLOAT, DLDataType, DLDevice, DLTensor};
use pydevice::runtime::{CudaArrayInterface, DeviceArray};
use pydevice::types::signature::{parse_signature, parse_type};
use pydevice::types::{Layout, Scalar, StructType, Type};
use pydevice::{CompileOptions, HostValue, Module};
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

/// Runs `f` on a thread with a 256 KiB stack (an embedder's worker thread, smaller than the
/// 2 MiB default), so that unbounded recursion on input shows up as a crash here.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the thread overflowed its stack or panicked")
}

#[test]
fn deeply_nested_signatures_are_an_error_not_a_stack_overflow() {
    let n = 20_000;
    let text = format!("{}int32{}", "(".repeat(n), ",)".repeat(n));
    let e = on_small_stack(move || parse_signature(&text).unwrap_err().to_string());
    assert!(e.contains("nest deeper than 64"), "{e}");
    let text = format!("void({}int32{})", "(".repeat(n), ",)".repeat(n));
    let e = on_small_stack(move || parse_type(&text).unwrap_err().to_string());
    assert!(!e.is_empty());
    // Records nest too.
    let mut rec = "int32".to_string();
    for _ in 0..200 {
        rec = format!("Record(a[type={rec};offset=0];4;False)");
    }
    let e = on_small_stack(move || parse_type(&rec).unwrap_err().to_string());
    assert!(e.contains("nest deeper"), "{e}");
    // Up to the bound is fine.
    let ok = format!("{}int32{}", "(".repeat(60), ",)".repeat(60));
    on_small_stack(move || parse_signature(&ok).unwrap());
}

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pydevice"))
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "pydevice-robust-{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const FUNC: &str =
    "from cuda import device\n\n@device.func\ndef f(x: int32) -> int32:\n    return x + 1\n";

#[test]
fn cli_tuple_arguments_nested_deeply_are_an_error() {
    let dir = temp_dir("deep-arg");
    let file = dir.join("f.py");
    std::fs::write(&file, FUNC).unwrap();
    let n = 20_000;
    let deep = format!("x={}int32:1{}", "(".repeat(n), ")".repeat(n));
    let out = cli()
        .arg("call")
        .arg(&file)
        .args(["--entry", "f", "--arg", &deep])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nests deeper than 64"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cli_takes_non_utf8_file_names_and_rejects_non_utf8_text_cleanly() {
    let dir = temp_dir("non-utf8");
    let name = std::ffi::OsStr::from_bytes(b"f\xff\xfe.py");
    let file = dir.join(name);
    std::fs::write(&file, FUNC).unwrap();
    // A file whose name is not UTF-8 is read and checked.
    let out = cli().arg("check").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("type-checked"), "{err}");
    // So is a function call.
    let out = cli()
        .arg("call")
        .arg(&file)
        .args(["--entry", "f", "--arg", "x=int32:41"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    // Text that is not UTF-8: a clear error, exit 2 (not a panic, 101).
    let out = cli()
        .arg("check")
        .arg(&file)
        .arg("--entry")
        .arg(std::ffi::OsStr::from_bytes(b"f\xff"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not valid UTF-8"), "{err}");
    let out = cli()
        .arg(std::ffi::OsStr::from_bytes(b"\xffcompile"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // An --arg file name that is not UTF-8 (missing): "cannot read", exit 2.
    let mut raw = b"x=".to_vec();
    raw.extend_from_slice(dir.as_os_str().as_bytes());
    raw.extend_from_slice(b"/a\xff.npy");
    let out = cli()
        .arg("call")
        .arg(&file)
        .args(["--entry", "f", "--arg"])
        .arg(std::ffi::OsStr::from_bytes(&raw))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot read"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn device_arrays_whose_sizes_overflow_are_rejected() {
    let a = |shape: &[u64], strides: &[i64]| DeviceArray {
        data: 0x7f00_0000_0000,
        dtype: Scalar::Float32,
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        readonly: false,
        device: None,
    };
    assert!(a(&[1 << 62], &[1]).check().is_err());
    assert!(a(&[u64::MAX], &[1]).check().is_err());
    assert!(a(&[4, 1 << 40], &[1 << 40, 1]).check().is_ok());
    assert!(a(&[1 << 20], &[i64::MAX]).check().is_err());
    assert!(a(&[3, 3], &[1]).check().is_err());
    assert!(
        a(&[0, 1 << 40], &[1, 1]).check().is_ok(),
        "empty arrays are fine"
    );
    let param = pydevice::abi::ParamAbi {
        name: "a".into(),
        ty: Type::array(Scalar::Float32, 1, Layout::C),
        layout: layout_of(&Type::array(Scalar::Float32, 1, Layout::C)),
    };
    let e = a(&[1 << 62], &[1]).to_arg(&param).unwrap_err().to_string();
    assert!(e.contains("too large"), "{e}");

    // The same through the ABI packer directly.
    let t = Type::array(Scalar::Float32, 1, Layout::Any);
    let v = ArgValue::Array(ArrayArg {
        data: 0x1000,
        shape: vec![1 << 62],
        strides: vec![1],
    });
    assert!(pack(&t, &v).is_err());

    // CUDA Array Interface: a typestr whose bit count overflows, huge shapes.
    let cai = |typestr: &str, shape: Vec<u64>, strides: Option<Vec<i64>>| CudaArrayInterface {
        shape,
        typestr: typestr.into(),
        data: (0x7f00_0000_0000, false),
        strides,
        version: 3,
        mask: None,
        stream: None,
        descr: None,
    };
    let e = cai("<i536870913", vec![4], None)
        .to_array()
        .unwrap_err()
        .to_string();
    assert!(e.contains("not supported"), "{e}");
    assert!(cai("<f4", vec![u64::MAX - 1], None).to_array().is_err());
    assert!(cai("<f4", vec![1 << 61, 4], None).to_array().is_err());
    assert!(
        cai("<f4", vec![1 << 30], Some(vec![i64::MAX - 3]))
            .to_array()
            .is_err()
    );
    assert!(cai("<f4", vec![4], None).to_array().is_ok());

    // DLPack: a shape whose size overflows.
    let mut shape = [1i64 << 62];
    let t = DLTensor {
        data: 0x7f00_0000_1000usize as *mut std::ffi::c_void,
        device: DLDevice {
            device_type: DL_CUDA,
            device_id: 0,
        },
        ndim: 1,
        dtype: DLDataType {
            code: DL_FLOAT,
            bits: 32,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    // SAFETY: a valid tensor description; the data pointer is never dereferenced.
    let e = unsafe { DeviceArray::from_dlpack(&t) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("too large"), "{e}");
}

#[test]
fn host_values_that_do_not_match_their_shape_are_errors() {
    let short = HostValue::Array {
        dtype: Scalar::Float32,
        shape: vec![4],
        data: vec![0; 8],
    };
    let text = short.to_string();
    assert!(text.contains("8 bytes"), "{text}");
    let huge = HostValue::Array {
        dtype: Scalar::Float32,
        shape: vec![u64::MAX, 2],
        data: vec![],
    };
    let _ = huge.to_string();
    let src = "from cuda import device\n\n@device.func\ndef first(a: \"float32[:]\") -> float32:\n    return a[0]\n";
    let m = Module::parse("f.py", src).unwrap();
    let f = m
        .host_function("first", &[Type::array(Scalar::Float32, 1, Layout::Any)])
        .unwrap();
    assert!(f.call(std::slice::from_ref(&short)).is_err());
    assert!(f.call(&[huge]).is_err());
}

#[test]
fn invalid_types_are_errors_everywhere() {
    // Vectors of 0 and 5 elements: a layout, no panic; refused when packed or compiled.
    for len in [0u8, 5, 255] {
        let t = Type::Vector {
            elem: Scalar::Float32,
            len,
        };
        let _ = layout_of(&t);
        assert!(t.validate().is_err());
        assert!(pack(&t, &ArgValue::Tuple(vec![])).is_err());
    }
    // A zero-dimensional array is an argument (its element's address, §5.3); given a
    // value of another rank it is an error.
    let t0 = Type::array(Scalar::Float32, 0, Layout::C);
    let v0 = ArgValue::Array(ArrayArg {
        data: 0x1000,
        shape: vec![],
        strides: vec![],
    });
    assert!(pack(&t0, &v0).is_ok());
    let v1 = ArgValue::Array(ArrayArg {
        data: 0x1000,
        shape: vec![3],
        strides: vec![4],
    });
    assert!(pack(&t0, &v1).is_err());
    // A struct aligned to 2**40.
    let st = Type::Struct(Box::new(StructType {
        name: "big".into(),
        fields: vec![("x".into(), Type::Scalar(Scalar::Float32))],
        align: Some(1 << 40),
        field_align: vec![],
        record: None,
    }));
    let e = st.validate().unwrap_err();
    assert!(e.contains("alignment"), "{e}");
    assert!(pack(&st, &ArgValue::Tuple(vec![ArgValue::Float(1.0)])).is_err());
    let src = "from cuda import device\n\n@device.kernel\ndef k(s, a):\n    a[0] = 1.0\n";
    let m = Module::parse("k.py", src).unwrap();
    let arr = Type::array(Scalar::Float32, 1, Layout::C);
    let opts = CompileOptions::default();
    for bad in [st, Type::None] {
        let e = match m.compile("k", &[bad.clone(), arr.clone()], &opts) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{bad:?} compiled"),
        };
        assert!(e.contains("E0115"), "{bad:?}: {e}");
    }
}

const CALLS: &str = r#"
from cuda import device
from cuda.device import float32

@device.func(extern=True)
def ext(x: float32) -> float32: ...

@device.kernel
def one(a):
    i = device.tid(1)
    a[i] = ext(a[i])

@device.kernel
def two(a):
    i = device.tid(1)
    a[i] = ext(a[i]) + ext(a[i] * 2.0)
"#;

/// PTX is a function of the input: 16 threads compiling the same kernels in different
/// orders, after different amounts of other work, give what one thread gives.
#[test]
fn ptx_does_not_depend_on_what_the_thread_compiled_before() {
    let jobs: Vec<(&str, &str)> = vec![
        ("one", "float32[::1]"),
        ("two", "float32[::1]"),
        ("one", "float32[:]"),
        ("two", "float32[:]"),
    ];
    let compile = |entry: &str, sig: &str| {
        let m = Module::parse("calls.py", CALLS).unwrap();
        let args = parse_signature(sig).unwrap().0;
        let k = m.compile(entry, &args, &CompileOptions::default()).unwrap();
        assert!(k.ptx.contains("callseq"), "{}", k.ptx);
        k.ptx
    };
    let expected: Vec<String> = std::thread::scope(|s| {
        jobs.iter()
            .map(|(e, sig)| s.spawn(move || compile(e, sig)).join().unwrap())
            .collect()
    });
    std::thread::scope(|s| {
        for t in 0..16 {
            let jobs = &jobs;
            let expected = &expected;
            s.spawn(move || {
                for round in 0..3 {
                    for k in 0..jobs.len() {
                        let j = (k + t + round) % jobs.len();
                        let (e, sig) = jobs[j];
                        assert_eq!(compile(e, sig), expected[j], "thread {t} round {round} {e}");
                    }
                }
            });
        }
    });
}

/// The CLI's `--sig` names the module's own `@struct` classes (`Particle[:]`), and its
/// `--const` gives `ConstExpr` values; bad values are usage errors (exit status 2).
#[test]
fn cli_sig_names_structs_and_const_gives_constexpr_values() {
    let dir = temp_dir("sig-structs");
    let file = dir.join("p.py");
    std::fs::write(
        &file,
        "from cuda import device\nfrom cuda.device import float32, ConstExpr\n\n@device.struct\nclass Particle:\n    x: float32\n    v: float32\n\n@device.kernel\ndef step(ps, dt, n: ConstExpr[int]):\n    i = device.tid(1)\n    if i < len(ps):\n        p = ps[i]\n        ps[i] = Particle(p.x + p.v * dt * n, p.v)\n",
    )
    .unwrap();
    let run = |sig: &str, konst: &str| {
        cli()
            .args(["compile"])
            .arg(&file)
            .args([
                "--entry", "step", "--sig", sig, "--const", konst, "--emit", "ir",
            ])
            .output()
            .unwrap()
    };
    let ok = run("Particle[:], float32", "n=3");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let ir = String::from_utf8_lossy(&ok.stdout);
    assert!(ir.contains("ps: Particle[:]") && ir.contains("3"), "{ir}");
    let c = run("void(Particle[::1], float32)", "n=3");
    assert!(String::from_utf8_lossy(&c.stdout).contains("ps: Particle[::1]"));
    let unknown = run("Nope[:], float32", "n=3");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown type `Nope`"));
    let bad = run("Particle[:], float32", "n=x");
    assert_eq!(bad.status.code(), Some(2));
    let missing = cli()
        .arg("compile")
        .arg(&file)
        .args(["--entry", "step", "--sig", "Particle[:], float32"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("E0218"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs the CLI in `dir` with `args`, killing it if it has not finished in 60 s (a read that
/// blocks on a FIFO must fail the test, not hang it).
fn cli_in(dir: &std::path::Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    use std::io::Read;
    let mut child = cli()
        .current_dir(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("pydevice {args:?} did not finish in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    std::process::Output {
        status,
        stdout,
        stderr,
    }
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// `--help`/`-h` on every subcommand and `--version` print to stdout with status 0; usage
/// errors print to stderr with status 2 (no arguments, an unknown option or subcommand, a
/// missing required option, a bad `--emit`); a program with errors exits with 1.
#[test]
fn cli_follows_the_conventions_of_help_version_and_exit_status() {
    let dir = temp_dir("conventions");
    std::fs::write(dir.join("f.py"), FUNC).unwrap();
    for sub in ["compile", "check", "abi", "run", "call"] {
        for flag in ["--help", "-h"] {
            let out = cli_in(&dir, &[os(sub), os(flag)]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{sub} {flag}: {text}");
            assert!(
                text.contains(&format!("Usage: pydevice {sub}")),
                "{sub} {flag}: {text}"
            );
        }
    }
    let top = cli_in(&dir, &[os("--help")]);
    let text = String::from_utf8_lossy(&top.stdout);
    assert_eq!(top.status.code(), Some(0));
    for sub in ["compile", "check", "abi", "run", "call"] {
        assert!(text.contains(sub), "{text}");
    }
    let v = cli_in(&dir, &[os("--version")]);
    assert_eq!(v.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&v.stdout).trim(),
        format!("pydevice {}", env!("CARGO_PKG_VERSION"))
    );
    let usage_errors: &[&[&str]] = &[
        &[],
        &["frobnicate", "f.py"],
        &["check", "f.py", "--bogus"],
        &["compile", "f.py"],
        &["compile", "f.py", "--entry", "f", "--emit", "asm"],
        &["abi", "f.py", "--json", "--header"],
        &["call", "f.py", "--entry"],
    ];
    for args in usage_errors {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| os(a)).collect();
        let out = cli_in(&dir, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!err.trim().is_empty(), "{args:?}");
    }
    std::fs::write(
        dir.join("bad.py"),
        "from cuda import device\n@device.func\ndef g(x):\n    return y\n",
    )
    .unwrap();
    let bad = cli_in(
        &dir,
        &[
            os("check"),
            os("bad.py"),
            os("--entry"),
            os("g"),
            os("--sig"),
            os("int32"),
        ],
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("error["));
    std::fs::remove_dir_all(&dir).ok();
}

/// `-o -` writes to standard output (no file named `-`), `-o FILE` to the file.
#[test]
fn cli_output_dash_is_stdout() {
    let dir = temp_dir("dash");
    std::fs::write(dir.join("f.py"), FUNC).unwrap();
    let args = [
        "compile", "f.py", "--entry", "f", "--sig", "int32", "--emit", "ir",
    ];
    let plain = cli_in(&dir, &args.map(os));
    assert_eq!(plain.status.code(), Some(0));
    let ir = String::from_utf8_lossy(&plain.stdout).into_owned();
    assert!(ir.contains("(x: int32) -> int32"), "{ir}");
    let mut dash: Vec<&std::ffi::OsStr> = args.map(os).to_vec();
    dash.extend([os("-o"), os("-")]);
    let out = cli_in(&dir, &dash);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), ir);
    assert!(!dir.join("-").exists(), "`-o -` wrote a file named `-`");
    let mut file: Vec<&std::ffi::OsStr> = args.map(os).to_vec();
    file.extend([os("-o"), os("out.ir")]);
    let out = cli_in(&dir, &file);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(dir.join("out.ir")).unwrap(), ir);
    std::fs::remove_dir_all(&dir).ok();
}

/// Source and `.npy` files are read only when they are regular files of at most 64 MiB: a
/// FIFO (with no writer, which would block a plain read for ever), a device, a directory or
/// a larger file is refused at once with a message saying why (exit status 2).
#[test]
fn cli_refuses_non_regular_and_oversized_inputs() {
    let dir = temp_dir("inputs");
    std::fs::write(dir.join("f.py"), FUNC).unwrap();
    let fifo = dir.join("pipe.py");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let big = dir.join("big.py");
    // Sparse: 64 MiB and one byte, nothing written.
    std::fs::File::create(&big)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    let big_npy = dir.join("big.npy");
    std::fs::File::create(&big_npy)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            vec!["check".into(), fifo.clone().into()],
            "not a regular file",
        ),
        (
            vec!["check".into(), "/dev/zero".into()],
            "not a regular file",
        ),
        (vec!["check".into(), dir.clone().into()], "a directory"),
        (
            vec!["check".into(), big.clone().into()],
            "larger than 64 MiB",
        ),
        (
            vec![
                "call".into(),
                "f.py".into(),
                "--entry".into(),
                "f".into(),
                "--arg".into(),
                format!("x={}", big_npy.display()).into(),
            ],
            "larger than 64 MiB",
        ),
        (
            vec![
                "call".into(),
                "f.py".into(),
                "--entry".into(),
                "f".into(),
                "--arg".into(),
                format!("x={}", fifo.display()).into(),
            ],
            "not a regular file",
        ),
    ];
    for (args, why) in &cases {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let out = cli_in(&dir, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("cannot read") && err.contains(why),
            "{args:?}: {err}"
        );
    }
    // At the limit the file is read: a 64 MiB `.npy` of zeros gets past reading to the
    // format's own error.
    let at_limit = dir.join("limit.npy");
    std::fs::File::create(&at_limit)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let arg = format!("x={}", at_limit.display());
    let out = cli_in(
        &dir,
        &[
            os("call"),
            os("f.py"),
            os("--entry"),
            os("f"),
            os("--arg"),
            os(&arg),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        !err.contains("cannot read") && err.contains("limit.npy"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A kernel defined twice under one name is the last definition in `check` and `compile`,
/// as in Python (docs/semantics.md §1.2.2): the first body (ill-typed here) is never
/// checked, and the PTX stores the second body's constant. A name rebound to a constant
/// after its `def` is no longer an entry (E0110).
#[test]
fn cli_redefined_kernel_is_the_last_definition() {
    let dir = temp_dir("redefined");
    let file = dir.join("k.py");
    std::fs::write(
        &file,
        "from cuda import device\nfrom cuda.device import float32\n\n\
         @device.func\ndef f(x: float32) -> float32:\n    return x + \"s\"\n\n\
         @device.func\ndef f(x: float32) -> float32:\n    return x * 2.0\n\n\
         @device.kernel\ndef k(a):\n    a[0] = a + 1.0\n\n\
         @device.kernel\ndef k(a):\n    a[0] = f(1234.5)\n\n\
         @device.kernel\ndef gone(a):\n    a[0] = 1.0\n\ngone = 3\n",
    )
    .unwrap();
    let check = cli().arg("check").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "{err}");
    assert!(
        err.contains("1 of 2 device function(s) type-checked"),
        "{err}"
    );
    let out = cli()
        .arg("compile")
        .arg(&file)
        .args(["--entry", "k", "--sig", "float32[::1]", "--emit", "ir"])
        .output()
        .unwrap();
    let ir = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(ir.contains("1234.5") && ir.contains("2.0"), "{ir}");
    let gone = cli()
        .arg("compile")
        .arg(&file)
        .args(["--entry", "gone", "--sig", "float32[::1]"])
        .output()
        .unwrap();
    assert_eq!(gone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("E0110"));
    std::fs::remove_dir_all(&dir).ok();
}

/// The CLI folds the module constants the Python package evaluates itself (issue 37):
/// `math` functions of constants, tuple unpacking, `N += 1`, `abs`/`min`/`max`/`int`/
/// `round`; a name a top-level block may rebind is a host global (E0106), not the value
/// of an earlier binding; a `math` call that raises in Python is not a constant.
#[test]
fn cli_folds_module_constants_as_python_does() {
    let dir = temp_dir("consts");
    let file = dir.join("c.py");
    std::fs::write(
        &file,
        "import math\nfrom cuda import device\n\n\
         GELU = math.sqrt(2.0 / math.pi)\nA, B, C = 32, 8, 4\n(D, E), F = (1, 2), 3\n\
         N = 40\nN += 2\nM = max(3, abs(-7), int(2.9), round(4.5), math.floor(2.5))\n\
         R = 5\nif GELU > 0:\n    R = 6\nBAD = math.sqrt(-1.0)\n\n\
         @device.kernel\ndef k(a, b):\n    \
         a[0] = GELU\n    b[0] = A * 1000 + B * 100 + C * 10 + D + E + F\n    b[1] = N\n    b[2] = M\n\n\
         @device.kernel\ndef r(b):\n    b[0] = R\n\n\
         @device.kernel\ndef bad(a):\n    a[0] = BAD\n",
    )
    .unwrap();
    let compile = |entry: &str| {
        let sig = match entry {
            "k" => "float32[::1], int32[::1]",
            "r" => "int32[::1]",
            _ => "float32[::1]",
        };
        cli()
            .arg("compile")
            .arg(&file)
            .args(["--entry", entry, "--sig", sig, "--emit", "ir"])
            .output()
            .unwrap()
    };
    let ok = compile("k");
    let ir = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // sqrt(2 / pi) as CPython computes it, B and C unpacked (not "name `B` is not defined").
    assert!(ir.contains("float32(0.7978845608028654)"), "{ir}");
    assert!(ir.contains("int32(32846)"), "{ir}");
    assert!(ir.contains("int32(42)"), "{ir}");
    // max(3, 7, 2, 4, 2) == 7
    assert!(ir.contains("int32(7)"), "{ir}");
    for entry in ["r", "bad"] {
        let out = compile(entry);
        assert_eq!(out.status.code(), Some(1), "{entry}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("E0106"), "{entry}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A body of stray tokens gives one syntax error per token: the CLI shows the first hundred
/// diagnostics and one that counts the rest, and rendering is linear (each diagnostic
/// renders only its own lines; before, 3,000 stray tokens took seconds and half a
/// megabyte of messages, 100 KB about five minutes and 10 MB).
#[test]
fn cli_many_stray_tokens_give_a_bounded_message() {
    let dir = temp_dir("stray");
    let file = dir.join("s.py");
    let body = "    a[0] = 1 $\n".repeat(3000);
    std::fs::write(
        &file,
        format!("from cuda import device\n\n@device.kernel\ndef k(a):\n{body}"),
    )
    .unwrap();
    let out = cli().arg("check").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("error[E0001]").count(), 100, "{err}");
    // Two errors a line (the token and the statement it leaves unfinished).
    assert!(
        err.contains("5901 more syntax errors from here on are not shown"),
        "{err}"
    );
    assert!(err.len() < 40_000, "{} bytes of messages", err.len());
    // Errors found by the checker (a name not defined, one per line) are capped when shown.
    let undefined: String = (0..3000).map(|i| format!("    a[0] = zz{i}\n")).collect();
    std::fs::write(
        &file,
        format!("from cuda import device\n\n@device.kernel\ndef k(a):\n{undefined}"),
    )
    .unwrap();
    let out = cli()
        .arg("compile")
        .arg(&file)
        .args(["--entry", "k", "--sig", "int32[::1]"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("error[E0101]").count(), 100, "{err}");
    assert!(
        err.contains("note: 2900 more diagnostics not shown"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A full-unroll request on a long loop is bounded (docs/semantics.md, `jit.range`): 20,000
/// iterations asked to unroll fully compiled for minutes; they are unrolled 1,024 times and
/// the loop stays, and LLVM prints nothing of its own.
#[test]
fn long_unroll_requests_are_bounded() {
    let src = "from cupyx import jit\n\n@jit.rawkernel()\ndef k(x, y):\n    tid = jit.threadIdx.x\n    \
               s = 0.0\n    for i in jit.range(20000, unroll=True):\n        s += x[i] * x[tid]\n    \
               y[tid] = s\n";
    let m = Module::parse("unroll.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let (sig, _) = parse_signature("float32[::1], float32[::1]").unwrap();
    let k =
        on_small_stack(move || m.compile("k", &sig, &CompileOptions::default())).expect("compiles");
    let fmas = k.ptx.matches("fma.rn").count();
    assert!((1..=1100).contains(&fmas), "{fmas} fma instructions");
    assert!(k.ptx.contains("bra"), "the loop remains");
}
