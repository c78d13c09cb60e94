//! The ABI checked against real compilers.
//!
//! - gcc: `layout_of` must agree with what gcc computes for the equivalent C structs of random
//!   nested structs, tuples, vectors and array descriptors with random alignment overrides
//!   (many types per C program, so one gcc run checks a whole batch).
//! - nvcc: `layout_of` must agree with nvcc's `sizeof`/`alignof`/`offsetof` for every CUDA type
//!   we map numbers and vectors to, and the header that `pydevice abi --header` writes (for a
//!   fixture module, and for random types) must compile, which checks its `static_assert`s.
//! - the `abi` command: JSON, text, exit codes.
//!
//! Without gcc or nvcc (with CCCL) a test says so and passes, except when env `CI` is set:
//! then it fails, since CI installs them (scripts/deps.sh).

use crate::support;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use pydevice::abi::header::{header, types_in};
use pydevice::abi::{TypeLayout, layout_of, passed_indirectly};
use pydevice::types::{Layout, MemSpace, Scalar, StructType, Type};
use pydevice::{CompileOptions, Module};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Says why a test did not run and passes, or fails in CI, which must run it.
fn skip(what: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{what}; CI must run this test (scripts/deps.sh installs what it needs)");
    }
    eprintln!("skipped: {what}");
}

/// A fresh scratch directory under the target directory.
fn scratch(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "abi-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn ok(out: &Output, what: &str, source: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}\n--- source ---\n{source}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Random types

const VECTOR_ELEMS: [Scalar; 14] = [
    Scalar::Int8,
    Scalar::Int16,
    Scalar::Int32,
    Scalar::Int64,
    Scalar::UInt8,
    Scalar::UInt16,
    Scalar::UInt32,
    Scalar::UInt64,
    Scalar::Float16,
    Scalar::BFloat16,
    Scalar::Float32,
    Scalar::Float64,
    Scalar::Float8E4M3,
    Scalar::Float8E5M2,
];

/// Random nested structs and tuples of numbers, vectors and array descriptors; structs get
/// random `align=` overrides. `empty` allows empty tuples and structs (C has none).
fn any_type(empty: bool) -> BoxedStrategy<Type> {
    let leaf = prop_oneof![
        4 => prop::sample::select(&Scalar::ALL[..]).prop_map(Type::Scalar),
        3 => (prop::sample::select(&VECTOR_ELEMS[..]), 1u8..=4)
            .prop_map(|(elem, len)| Type::Vector { elem, len }),
        1 => (prop::sample::select(&Scalar::ALL[..]), 1u8..=3)
            .prop_map(|(d, n)| Type::array(d, n, Layout::Any)),
    ];
    let min = usize::from(!empty);
    leaf.prop_recursive(3, 32, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), min..5).prop_map(Type::Tuple),
            (
                prop::collection::vec(
                    (
                        inner,
                        prop::sample::select(&[0u64, 0, 0, 1, 4, 8, 16, 32][..])
                    ),
                    min..5
                ),
                prop::option::of(prop::sample::select(&[1u64, 2, 4, 8, 16, 32, 64][..])),
            )
                .prop_map(|(fields, align)| {
                    // `device.align(t, n)` fields: some stronger than the type, some weaker
                    // (which change nothing).
                    let field_align = fields.iter().map(|(_, a)| *a).collect();
                    Type::Struct(Box::new(StructType {
                        name: String::new(),
                        fields: fields
                            .into_iter()
                            .enumerate()
                            .map(|(i, (t, _))| (format!("f{i}"), t))
                            .collect(),
                        align,
                        field_align,
                        record: None,
                    }))
                }),
        ]
    })
    .boxed()
}

/// Gives every struct a distinct name (`s0`, `s1`, ...), as the classes of a module have.
fn name_structs(t: &mut Type, n: &mut usize) {
    match t {
        Type::Struct(st) => {
            for (_, f) in &mut st.fields {
                name_structs(f, n);
            }
            st.name = format!("s{n}");
            *n += 1;
        }
        Type::Tuple(ts) => ts.iter_mut().for_each(|e| name_structs(e, n)),
        _ => {}
    }
}

fn named(mut types: Vec<Type>) -> Vec<Type> {
    let mut n = 0;
    types.iter_mut().for_each(|t| name_structs(t, &mut n));
    types
}

// ---------------------------------------------------------------------------------------------
// The equivalent C, compiled with gcc

fn c_scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "_Bool",
        Scalar::Int8 => "int8_t",
        Scalar::Int16 => "int16_t",
        Scalar::Int32 => "int32_t",
        Scalar::Int64 => "int64_t",
        Scalar::UInt8 => "uint8_t",
        Scalar::UInt16 => "uint16_t",
        Scalar::UInt32 => "uint32_t",
        Scalar::UInt64 => "uint64_t",
        // Two bytes of storage, like `__half` and `__nv_bfloat16`.
        Scalar::Float16 | Scalar::BFloat16 => "uint16_t",
        Scalar::Float32 => "float",
        Scalar::Float64 => "double",
        // `cuda::std::complex<T>` is `alignas(2 * sizeof(T))`; C's `_Complex float` is only
        // 4-aligned, so the C program declares these (nvcc checks the real ones).
        Scalar::Complex64 => "pyd_c64",
        Scalar::Complex128 => "pyd_c128",
        // One byte of storage, like `__nv_fp8_e4m3` and `__nv_fp8_e5m2`.
        Scalar::Float8E4M3 | Scalar::Float8E5M2 => "uint8_t",
    }
}

/// What `vector_types.h` declares: `__align__(sizeof(T) * N)` for 1, 2 and 4 elements (at
/// most 16: the 32-byte vectors are the `_16a` forms), none for 3.
fn cuda_vector_align(elem: Scalar, len: u8) -> u64 {
    match len {
        3 => elem.size(),
        n => (elem.size() * u64::from(n)).min(16),
    }
}

/// A C program that prints, for every type in `all`, a line `k sizeof alignof offsets...`.
fn c_program(all: &[Type]) -> String {
    let name = |t: &Type| match t {
        Type::Scalar(s) => c_scalar(*s).to_string(),
        t => format!("struct t{}", all.iter().position(|x| x == t).unwrap()),
    };
    let mut defs = String::new();
    let mut main = String::new();
    for (k, t) in all.iter().enumerate() {
        // `device.align(t, n)` members are `_Alignas(n)` where n is stronger than t's own
        // alignment (C11 forbids a weaker one; pydevice ignores it).
        let (align, members): (Option<u64>, Vec<(String, String)>) = match t {
            Type::Scalar(_) => (None, vec![]),
            Type::Vector { elem, len } => (
                Some(cuda_vector_align(*elem, *len)),
                ["x", "y", "z", "w"][..*len as usize]
                    .iter()
                    .map(|f| (c_scalar(*elem).to_string(), f.to_string()))
                    .collect(),
            ),
            Type::Tuple(ts) => (
                None,
                ts.iter()
                    .enumerate()
                    .map(|(i, e)| (name(e), format!("__{i}")))
                    .collect(),
            ),
            Type::Struct(st) => (
                st.align,
                st.fields
                    .iter()
                    .enumerate()
                    .map(|(i, (f, e))| {
                        let a = st.field_align(i);
                        let ty = if a > layout_of(e).align {
                            format!("_Alignas({a}) {}", name(e))
                        } else {
                            name(e)
                        };
                        (ty, f.clone())
                    })
                    .collect(),
            ),
            Type::Array(a) => (
                None,
                vec![
                    (
                        format!(
                            "{} *",
                            c_scalar(
                                a.dtype
                                    .scalar()
                                    .expect("the generator makes arrays of numbers")
                            )
                        ),
                        "data".into(),
                    ),
                    ("uint64_t".into(), format!("shape[{}]", a.ndim)),
                    ("uint64_t".into(), format!("strides[{}]", a.ndim)),
                ],
            ),
            other => panic!("no C for {other}"),
        };
        let n = name(t);
        if !matches!(t, Type::Scalar(_)) {
            let attr = align.map_or(String::new(), |a| format!("__attribute__((aligned({a}))) "));
            defs.push_str(&format!("// {t}\nstruct {attr}t{k} {{\n"));
            for (ty, f) in &members {
                defs.push_str(&format!("  {ty} {f};\n"));
            }
            defs.push_str("};\n");
        }
        main.push_str(&format!(
            "  printf(\"{k} %zu %zu\", sizeof({n}), _Alignof({n}));\n"
        ));
        for (_, f) in &members {
            let f = f.split('[').next().unwrap();
            main.push_str(&format!("  printf(\" %zu\", offsetof({n}, {f}));\n"));
        }
        main.push_str("  printf(\"\\n\");\n");
    }
    format!(
        "#include <stdint.h>\n#include <stddef.h>\n#include <stdio.h>\n\n\
         typedef struct __attribute__((aligned(8))) {{ float re, im; }} pyd_c64;\n\
         typedef struct __attribute__((aligned(16))) {{ double re, im; }} pyd_c128;\n\n{defs}\n\
         int main(void) {{\n{main}  return 0;\n}}\n"
    )
}

/// The line the C program should print for a type, from `layout_of`.
fn expected_line(k: usize, l: &TypeLayout) -> String {
    let mut s = format!("{k} {} {}", l.size, l.align);
    for f in &l.fields {
        s.push_str(&format!(" {}", f.offset));
    }
    s
}

fn gcc_found() -> bool {
    Command::new("gcc").arg("--version").output().is_ok()
}

/// Compiles and runs the C program for `roots` and compares every line with `layout_of`.
fn check_with_gcc(roots: &[Type]) -> Result<(), TestCaseError> {
    let all = types_in(roots);
    let src = c_program(&all);
    let dir = scratch("gcc");
    let (c, exe) = (dir.join("layouts.c"), dir.join("layouts"));
    std::fs::write(&c, &src).unwrap();
    let out = run(Command::new("gcc")
        .args(["-std=c11", "-O0", "-w", "-o"])
        .arg(&exe)
        .arg(&c));
    ok(&out, "gcc", &src);
    let printed = ok(&run(&mut Command::new(&exe)), "the layout program", &src);
    let _ = std::fs::remove_dir_all(&dir);
    for (k, (t, line)) in all.iter().zip(printed.lines()).enumerate() {
        let want = expected_line(k, &layout_of(t));
        prop_assert_eq!(
            line,
            want.as_str(),
            "gcc (left) and layout_of (right) differ on `{}` (struct t{} in the C below; \
             `k size align offsets...`)\n{}",
            t,
            k,
            src
        );
    }
    prop_assert_eq!(printed.lines().count(), all.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 200, ..ProptestConfig::default() })]

    /// 64 random types per case, all checked by one gcc run.
    #[test]
    fn layouts_match_gcc(types in prop::collection::vec(any_type(false), 64)) {
        if !gcc_found() {
            skip("gcc not found, so layouts are not checked against C");
            return Ok(());
        }
        check_with_gcc(&named(types))?;
    }
}

#[test]
fn fixed_layouts_match_gcc() {
    if !gcc_found() {
        return skip("gcc not found, so layouts are not checked against C");
    }
    // Over-aligned members: a float32x4 (16) after a byte, a struct aligned to 32 inside a
    // tuple, and a struct whose override is weaker than its members' alignment.
    let s = |name: &str, fields: Vec<Type>, align| {
        Type::Struct(Box::new(StructType {
            name: name.into(),
            fields: fields
                .into_iter()
                .enumerate()
                .map(|(i, t)| (format!("f{i}"), t))
                .collect(),
            align,
            field_align: Vec::new(),
            record: None,
        }))
    };
    let f4 = Type::Vector {
        elem: Scalar::Float32,
        len: 4,
    };
    let roots = vec![
        Type::Tuple(vec![Scalar::Int8.into(), f4.clone()]),
        Type::Tuple(vec![
            Scalar::Int8.into(),
            s("wide", vec![Scalar::Int8.into()], Some(32)),
        ]),
        s(
            "weak",
            vec![Scalar::Float64.into(), Scalar::Int8.into()],
            Some(2),
        ),
        s(
            "nested",
            vec![f4, Type::array(Scalar::Int8, 2, Layout::C)],
            None,
        ),
        // `value: device.align(float32, 16)` after an int8 (tests/fixtures/lang/
        // struct_align_defaults.py): value at 16, 32 bytes aligned to 16.
        Type::Struct(Box::new(StructType {
            name: "sample".into(),
            fields: vec![
                ("tag".into(), Scalar::Int8.into()),
                ("value".into(), Scalar::Float32.into()),
                ("weight".into(), Scalar::Float32.into()),
                ("count".into(), Scalar::Int32.into()),
            ],
            align: None,
            field_align: vec![0, 16, 0, 0],
            record: None,
        })),
    ];
    let sample = layout_of(roots.last().unwrap());
    assert_eq!((sample.size, sample.align), (32, 16));
    assert_eq!(
        sample.fields.iter().map(|f| f.offset).collect::<Vec<_>>(),
        [0, 16, 20, 24]
    );
    check_with_gcc(&roots).unwrap();
}

#[test]
fn empty_aggregates_take_one_byte_as_in_cxx() {
    for t in [
        Type::Tuple(vec![]),
        Type::Struct(Box::new(StructType {
            name: "empty".into(),
            fields: vec![],
            align: None,
            field_align: vec![],
            record: None,
        })),
    ] {
        let l = layout_of(&t);
        assert_eq!((l.size, l.align), (1, 1), "{t}");
    }
}

// ---------------------------------------------------------------------------------------------
// nvcc

/// nvcc, where CCCL's headers are beside it (`PYDEVICE_NVCC`, `CUDA_HOME`, `/usr/local/cuda`,
/// the `nvidia-cuda-nvcc` wheel, `PATH`); else why not.
fn nvcc() -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("PYDEVICE_NVCC") {
        candidates.push(p.into());
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = std::env::var_os(var) {
            candidates.push(Path::new(&p).join("bin/nvcc"));
        }
    }
    candidates.push("/usr/local/cuda/bin/nvcc".into());
    if let Ok(out) = Command::new("python3")
        .args(["-c", "import nvidia; print(nvidia.__path__[0])"])
        .output()
    {
        let root = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !root.is_empty() {
            candidates.push(Path::new(&root).join("cu13/bin/nvcc"));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("nvcc")));
    }
    let nvcc = candidates
        .into_iter()
        .find(|p| p.is_file())
        .ok_or("nvcc not found (pip install nvidia-cuda-nvcc)")?;
    let include = nvcc.parent().unwrap().join("../include");
    let cccl = ["cccl/cuda/std/cstdint", "cuda/std/cstdint"]
        .iter()
        .any(|p| include.join(p).is_file());
    if !cccl {
        return Err(format!(
            "{} has no CCCL headers beside it (pip install nvidia-cuda-cccl)",
            nvcc.display()
        ));
    }
    Ok(nvcc)
}

fn nvcc_or_skip() -> Option<PathBuf> {
    nvcc().map_err(|why| skip(&why)).ok()
}

/// Every number and vector type we map to a CUDA C++ type, with nvcc's layout of that type.
#[test]
fn cuda_types_match_nvcc() {
    let Some(nvcc) = nvcc_or_skip() else { return };
    let mut types: Vec<Type> = Scalar::ALL.iter().map(|s| Type::Scalar(*s)).collect();
    for elem in VECTOR_ELEMS {
        for len in 1..=4 {
            let t = Type::Vector { elem, len };
            // The half-precision and fp8 vectors CUDA lacks are ours; the header test checks
            // them.
            if !layout_of(&t).cxx.starts_with("__pyd_") {
                types.push(t);
            }
        }
    }
    types.push(Type::None);
    types.push(Type::WarpMask);
    types.push(Type::Ref {
        record: None,
        dtype: Scalar::Float64,
        space: MemSpace::Global,
    });
    let mut main = String::new();
    for (k, t) in types.iter().enumerate() {
        let l = layout_of(t);
        main.push_str(&format!(
            "  printf(\"{k} %zu %zu\", sizeof({c}), alignof({c}));\n",
            c = l.cxx
        ));
        match t {
            // `__nv_fp8x2_e4m3` and friends hold their bytes in one `__x` member: build one
            // from distinct floats and find where each element's byte landed.
            Type::Vector { elem, len } if elem.is_fp8() => {
                let kind = if *elem == Scalar::Float8E4M3 {
                    "e4m3"
                } else {
                    "e5m2"
                };
                let vals: Vec<String> = (1..=*len).map(|i| format!("{i}.0f")).collect();
                main.push_str(&format!(
                    "  {{ {c} v(float{len}{{{}}}); const unsigned char* b = \
                     reinterpret_cast<const unsigned char*>(&v);\n",
                    vals.join(", "),
                    c = l.cxx
                ));
                for i in 1..=*len {
                    main.push_str(&format!(
                        "    for (int j = 0; j < {len}; ++j) if (b[j] == __nv_fp8_{kind}({i}.0f).__x) \
                         printf(\" %d\", j);\n"
                    ));
                }
                main.push_str("  }\n");
            }
            _ => {
                for f in &l.fields {
                    main.push_str(&format!(
                        "  printf(\" %zu\", offsetof({}, {}));\n",
                        l.cxx, f.name
                    ));
                }
            }
        }
        main.push_str("  printf(\"\\n\");\n");
    }
    // CUDA 13 deprecates these three for the `_16a` forms we use; the layouts are the same.
    for old in ["double4", "longlong4", "ulonglong4"] {
        main.push_str(&format!(
            "  printf(\"{old} %zu %zu %zu %zu\\n\", sizeof({old}), alignof({old}), \
             sizeof({old}_16a), alignof({old}_16a));\n"
        ));
    }
    let src = format!(
        "#include <cstdio>\n#include <cstddef>\n#include <cuda/std/cstdint>\n\
         #include <cuda/atomic>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\
         #include <cuda/std/complex>\n#include <cuda_fp8.h>\n\n\
         int main() {{\n{main}  return 0;\n}}\n"
    );
    let dir = scratch("nvcc-types");
    let (cu, exe) = (dir.join("types.cu"), dir.join("types"));
    std::fs::write(&cu, &src).unwrap();
    let out = run(Command::new(&nvcc)
        .args([
            "-arch=sm_90",
            "-Xcompiler",
            "-Wno-deprecated-declarations",
            "-o",
        ])
        .arg(&exe)
        .arg(&cu));
    ok(&out, "nvcc", &src);
    let printed = ok(
        &run(&mut Command::new(&exe)),
        "the nvcc layout program",
        &src,
    );
    let mut lines = printed.lines();
    let mut differ = Vec::new();
    for (k, t) in types.iter().enumerate() {
        let l = layout_of(t);
        let want = expected_line(k, &l);
        let got = lines.next().unwrap_or_default();
        if got != want {
            differ.push(format!(
                "{t} as {}: nvcc `{got}`, layout_of `{want}`",
                l.cxx
            ));
        }
    }
    for line in lines {
        let v: Vec<&str> = line.split(' ').collect();
        assert_eq!(
            v[1..3],
            v[3..5],
            "{}: deprecated and _16a forms differ",
            v[0]
        );
    }
    assert!(
        differ.is_empty(),
        "nvcc and layout_of differ (`k size align offsets...`):\n{}",
        differ.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn cli_path() -> &'static str {
    env!("CARGO_BIN_EXE_pydevice")
}

fn cli(args: &[&str]) -> Output {
    run(Command::new(cli_path()).args(args))
}

fn fixture() -> String {
    support::repo_path("tests/abi/interop.py")
        .to_string_lossy()
        .into_owned()
}

/// How nvcc passes the first parameter of a device function in its PTX: `None` for a pointer
/// (by invisible reference), else the `.align` and size of a by-value aggregate.
fn ptx_param(ptx: &str, func: &str) -> Option<(u64, u64)> {
    let decl = format!(".func {func}(");
    let mut lines = ptx.lines().skip_while(|l| !l.contains(&decl)).skip(1);
    let line = lines
        .next()
        .unwrap_or_else(|| panic!("no `{func}` in the PTX"));
    if line.contains(".param .b64 ") {
        return None;
    }
    let num = |s: Option<&str>| -> u64 {
        s.and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("unexpected parameter `{line}`"))
    };
    let align = num(line
        .split(".align ")
        .nth(1)
        .and_then(|s| s.split(' ').next()));
    let size = num(line.rsplit('[').next().and_then(|s| s.split(']').next()));
    Some((align, size))
}

/// The header of the fixture module (from the CLI) and of 64 random types, included together
/// by C++ that calls the fixture's device functions: nvcc checks every `static_assert`, that
/// the declarations are usable, and that two headers can be included together. Device
/// functions taking each aggregate type show how nvcc passes it: by value with the layout's
/// alignment and size, or by reference where `passed_indirectly` says so.
#[test]
fn headers_compile_with_nvcc() {
    let Some(nvcc) = nvcc_or_skip() else { return };
    let out = cli(&["abi", &fixture(), "--header"]);
    let module_header = ok(&out, "pydevice abi --header", "");

    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = prop::collection::vec(any_type(true), 64);
    let mut types = named(strategy.new_tree(&mut runner).unwrap().current());
    for elem in VECTOR_ELEMS {
        types.extend((1..=4).map(|len| Type::Vector { elem, len }));
    }
    let random_header = header("random", &types, &[]);

    let dir = scratch("nvcc-header");
    std::fs::write(dir.join("interop.h"), &module_header).unwrap();
    std::fs::write(dir.join("random.h"), &random_header).unwrap();
    let mut src = String::from(
        "\
#include \"interop.h\"
#include \"random.h\"
#include \"interop.h\"

__global__ void use(particle p, point q, float3 d, wide w, double* out) {
  out[0] = weigh(p, 2.0f);
  auto t = split(q, 3);
  point m = move(q, d);
  out[1] = t.__0 + t.__1 + t.__2 + m.x + half_sum(w, __float2half(1.0f), __float2bfloat16(2.0f));
}

",
    );
    let aggregates: Vec<Type> = types_in(&types)
        .into_iter()
        .filter(|t| !matches!(t, Type::Scalar(_)))
        .collect();
    for (k, t) in aggregates.iter().enumerate() {
        src.push_str(&format!(
            "extern \"C\" __device__ void pyd_param_{k}({} a) {{}}\n",
            layout_of(t).cxx
        ));
    }
    let cu = dir.join("use.cu");
    std::fs::write(&cu, &src).unwrap();
    let out = run(Command::new(&nvcc)
        .args(["-arch=sm_90", "-rdc=true", "-c", "-keep", "-o"])
        .arg(dir.join("use.o"))
        .arg(&cu)
        .current_dir(&dir));
    ok(
        &out,
        "nvcc on the generated headers",
        &format!("{src}\n--- interop.h ---\n{module_header}\n--- random.h ---\n{random_header}"),
    );
    let ptx = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "ptx"))
        .expect("nvcc -keep leaves the PTX");
    let ptx = std::fs::read_to_string(ptx).unwrap();
    let indirect = aggregates.iter().filter(|t| passed_indirectly(t)).count();
    assert!(
        indirect > 1 && indirect < aggregates.len() / 2,
        "{indirect} indirect"
    );
    let mut differ = Vec::new();
    for (k, t) in aggregates.iter().enumerate() {
        let l = layout_of(t);
        let want = (!passed_indirectly(t)).then_some((l.align, l.size));
        let got = ptx_param(&ptx, &format!("pyd_param_{k}"));
        if got != want {
            differ.push(format!(
                "{t} ({}): nvcc {got:?}, ours {want:?} (None: by reference)",
                l.cxx
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "device-function parameters, nvcc vs layout_of/passed_indirectly:\n{}",
        differ.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records at NumPy's offsets with sub-array fields (docs/semantics.md §5.16.1): nvcc checks
/// the header's `static_assert`s (offsets as NumPy prints them in `dtype.fields`, item size,
/// alignment) and passes each record as a parameter with our layout's size and alignment.
#[test]
fn record_headers_compile_with_nvcc() {
    let Some(nvcc) = nvcc_or_skip() else { return };
    let records = [
        // np.dtype([('a','f8'),('b','i4'),('c','c8'),('d','u1',(5,))], align=True)
        "Record(a[type=float64;offset=0],b[type=int32;offset=8],c[type=complex64;offset=12],\
         d[type=nestedarray(uint8, (5,));offset=20];32;True)",
        // np.dtype([('i', np.int32), ('j', np.float32, (3, 2))])
        "Record(i[type=int32;offset=0],j[type=nestedarray(float32, (3, 2));offset=4];28;False)",
        // np.dtype([('n','i1'),('p',p,(2,)),('z','c16')], align=True) with
        // p = np.dtype([('x','f4'),('y','i2')], align=True): n 0, p 4, z 24, itemsize 40.
        "Record(n[type=int8;offset=0],p[type=nestedarray(Record(x[type=float32;offset=0],\
         y[type=int16;offset=4];8;True), (2,));offset=4],z[type=complex128;offset=24];40;True)",
    ];
    let types: Vec<Type> = records
        .iter()
        .map(|r| pydevice::types::signature::parse_type(r).expect("record"))
        .collect();
    let h = header("records", &types, &[]);
    assert!(h.contains("  float j[3][2];\n"), "{h}");
    assert!(h.contains("  float c[2];\n"), "{h}");
    let dir = scratch("nvcc-records");
    std::fs::write(dir.join("records.h"), &h).unwrap();
    let mut src = String::from("#include \"records.h\"\n");
    for (k, t) in types.iter().enumerate() {
        src.push_str(&format!(
            "extern \"C\" __device__ void pyd_param_{k}({} a) {{}}\n",
            layout_of(t).cxx
        ));
    }
    let cu = dir.join("use.cu");
    std::fs::write(&cu, &src).unwrap();
    let out = run(Command::new(&nvcc)
        .args(["-arch=sm_90", "-rdc=true", "-c", "-keep", "-o"])
        .arg(dir.join("use.o"))
        .arg(&cu)
        .current_dir(&dir));
    ok(&out, "nvcc on record headers", &format!("{src}\n{h}"));
    let ptx = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "ptx"))
        .expect("nvcc -keep leaves the PTX");
    let ptx = std::fs::read_to_string(ptx).unwrap();
    for (k, t) in types.iter().enumerate() {
        let l = layout_of(t);
        assert_eq!(
            ptx_param(&ptx, &format!("pyd_param_{k}")),
            Some((l.align, l.size)),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A numba record argument by reference (docs/semantics.md §5.16.1): the parameter is the
/// record's device address, 8 bytes, and the kernel stores through it.
#[test]
fn numba_record_arguments_by_reference_are_addresses() {
    let src = "from numba import cuda\n\n@cuda.jit\ndef k(r):\n    r.i = 3\n    r.j[2, 1] = 10.0\n";
    let module = Module::parse("k.py", src).unwrap();
    assert!(module.is_numba());
    let rec = pydevice::types::signature::parse_type(
        "Record(i[type=int32;offset=0],j[type=nestedarray(float32, (3, 2));offset=4];28;False)",
    )
    .unwrap();
    let Type::Struct(st) = rec else {
        panic!("not a record")
    };
    let t = Type::StructRef {
        st,
        space: MemSpace::Global,
    };
    let k = module
        .compile("k", std::slice::from_ref(&t), &CompileOptions::default())
        .unwrap();
    assert_eq!(k.abi.params[0].layout.size, 8);
    assert!(k.ptx.contains("st.global"), "{}", k.ptx);
    assert!(
        k.ptx.contains("+24]"),
        "j[2, 1] is at byte 4 + 5 * 4: {}",
        k.ptx
    );
    let packed = pydevice::abi::pack(&t, &pydevice::abi::ArgValue::UInt(0x1234_5678)).unwrap();
    assert_eq!(packed, 0x1234_5678u64.to_le_bytes().to_vec());
}

// ---------------------------------------------------------------------------------------------
// The `abi` command

#[test]
fn cli_prints_struct_layouts_as_json() {
    let out = cli(&["abi", &fixture(), "--json"]);
    let text = ok(&out, "pydevice abi --json", "");
    let layouts: Vec<TypeLayout> = serde_json::from_str(&text).unwrap();
    let src = std::fs::read_to_string(fixture()).unwrap();
    let module = Module::parse("interop.py", &src).unwrap();
    let want: Vec<TypeLayout> = types_in(&module.structs()).iter().map(layout_of).collect();
    assert_eq!(layouts, want);
    let particle = layouts.iter().find(|l| l.name == "particle").unwrap();
    assert_eq!((particle.size, particle.align), (48, 16));
    let offsets: Vec<(&str, u64, &str)> = particle
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.ty.as_str()))
        .collect();
    assert_eq!(
        offsets,
        [
            ("pos", 0, "point"),
            ("mass", 16, "float64"),
            ("id", 24, "int32"),
            ("color", 28, "float32x3"),
            ("tag", 40, "int8")
        ]
    );
    // The JSON has the documented keys.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for key in ["name", "cxx", "size", "align", "fields"] {
        assert!(v[0].get(key).is_some(), "no `{key}` in {}", v[0]);
    }
    for key in ["name", "offset", "type", "size"] {
        assert!(v[0]["fields"][0].get(key).is_some(), "no `{key}`");
    }
}

#[test]
fn cli_prints_named_types() {
    let out = cli(&["abi", &fixture(), "--type", "float32x3", "--json"]);
    let layouts: Vec<TypeLayout> =
        serde_json::from_str(&ok(&out, "abi --type float32x3", "")).unwrap();
    assert_eq!(layouts.len(), 1);
    assert_eq!(
        (layouts[0].name.as_str(), layouts[0].cxx.as_str()),
        ("float32x3", "float3")
    );
    assert_eq!((layouts[0].size, layouts[0].align), (12, 4));

    // A class brings the types it is made of, parts first; numbers and Numba notation work.
    let out = cli(&[
        "abi",
        &fixture(),
        "--type",
        "particle",
        "--type",
        "int16",
        "--type",
        "(int8, float64x4)",
        "--json",
    ]);
    let layouts: Vec<TypeLayout> = serde_json::from_str(&ok(&out, "abi --type", "")).unwrap();
    let names: Vec<&str> = layouts.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "point",
            "float32x3",
            "particle",
            "int16",
            "float64x4",
            "tuple[int8, float64x4]"
        ]
    );
    assert_eq!((layouts[5].size, layouts[5].align), (48, 16));

    let out = cli(&["abi", &fixture(), "--type", "particle"]);
    let text = ok(&out, "abi --type particle", "");
    assert!(
        text.contains("particle (C++ particle): size 48, align 16"),
        "{text}"
    );
    assert!(
        text.contains("    28  color: float32x3 (12 bytes)"),
        "{text}"
    );

    let out = cli(&["abi", &fixture(), "--type", "point", "--header"]);
    let h = ok(&out, "abi --type point --header", "");
    assert!(
        h.contains("struct point {") && !h.contains("extern \"C\""),
        "{h}"
    );
}

#[test]
fn cli_header_declares_interop_functions() {
    let out = cli(&["abi", &fixture(), "--header"]);
    let h = ok(&out, "abi --header", "");
    assert!(h.starts_with("// interop: "), "{h}");
    assert!(h.contains("#pragma once\n"));
    for decl in [
        "extern \"C\" __device__ double weigh(particle p, float k);",
        "extern \"C\" __device__ point move(point p, float3 d);",
        "extern \"C\" __global__ void scale(cuda::interoperable_array_descriptor<float, 1> xs, \
         cuda::interoperable_array_descriptor<double, 2> grid, particle p, wide w, __pyd_tuple_",
    ] {
        assert!(h.contains(decl), "no `{decl}` in\n{h}");
    }
    // Not interoperable, or not annotated: not declared (the latter with a note).
    assert!(
        !h.contains(" helper(") && !h.contains(" unannotated("),
        "{h}"
    );
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("`unannotated` is left out"), "{note}");
}

#[test]
fn cli_exit_codes() {
    let code = |out: Output| out.status.code();
    assert_eq!(code(cli(&["abi", &fixture(), "--type", "nosuch"])), Some(2));
    assert_eq!(
        code(cli(&["abi", &fixture(), "--json", "--header"])),
        Some(2)
    );
    assert_eq!(code(cli(&["abi", &fixture(), "--bogus", "x"])), Some(2));
    assert_eq!(code(cli(&["abi"])), Some(2));
    let dir = scratch("cli");
    let bad = dir.join("bad.py");
    std::fs::write(
        &bad,
        "from cuda import device\n\n@device.struct\nclass p:\n    x: nosuch\n",
    )
    .unwrap();
    let out = cli(&["abi", bad.to_str().unwrap(), "--json"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("bad.py:5"), "diagnostics are rendered: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// The lowering against the layouts

/// The `.param` of a kernel's first parameter: (alignment, size).
fn first_param(ptx: &str) -> (u64, u64) {
    let line = ptx
        .lines()
        .find(|l| l.contains("_param_0"))
        .expect("a parameter");
    let align = line
        .split(".align ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no alignment in `{line}`"));
    let size = line
        .rsplit('[')
        .next()
        .and_then(|s| s.split(']').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no size in `{line}`"));
    (align, size)
}

/// Kernels take tuples with the size and alignment that `layout_of` gives (and `pack` fills).
#[test]
fn kernel_parameters_have_the_abi_layout() {
    let src = "from cuda import device\n\n@device.kernel\ndef k(t, out):\n    out[0] = 1.0\n";
    let module = Module::parse("k.py", src).unwrap();
    let v = |elem, len| Type::Vector { elem, len };
    let cases = [
        Type::Tuple(vec![Scalar::Int8.into(), v(Scalar::Float32, 4)]),
        Type::Tuple(vec![Scalar::Int8.into(), v(Scalar::Float64, 2)]),
        Type::Tuple(vec![Scalar::Bool.into(), v(Scalar::Int16, 2)]),
        Type::Tuple(vec![v(Scalar::Float16, 3), v(Scalar::BFloat16, 2)]),
        Type::Scalar(Scalar::Complex64),
        Type::Scalar(Scalar::Complex128),
        Type::Tuple(vec![Scalar::Float8E4M3.into(), Scalar::Complex128.into()]),
        Type::Tuple(vec![Scalar::Float8E5M2.into(), Scalar::Complex64.into()]),
        Type::Tuple(vec![
            Scalar::Int8.into(),
            Type::Tuple(vec![Scalar::Int8.into(), v(Scalar::UInt8, 4)]),
        ]),
    ];
    let mut differ = Vec::new();
    for t in cases {
        let out = Type::array(Scalar::Float32, 1, Layout::C);
        let k = module
            .compile("k", &[t.clone(), out], &CompileOptions::default())
            .unwrap();
        let l = layout_of(&t);
        let got = first_param(&k.ptx);
        if got != (l.align, l.size) {
            differ.push(format!(
                "{t}: PTX .align {} [{}], layout_of align {} size {}",
                got.0, got.1, l.align, l.size
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The `.entry`/`.func` signature of `name` in PTX, on one line with single spaces.
fn ptx_signature(ptx: &str, name: &str) -> String {
    let head = format!(" {name}(");
    let lines: Vec<&str> = ptx
        .lines()
        .skip_while(|l| {
            !(l.starts_with(".visible") && l.ends_with(&head[1..]) && l.contains(&head))
        })
        .collect();
    let end = lines
        .iter()
        .position(|l| l.trim() == ")")
        .unwrap_or_else(|| panic!("no signature of `{name}` in the PTX"));
    lines[..=end]
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every interoperable function of the fixture has, in our PTX, the signature nvcc gives the
/// header's declaration of it: parameters and results in the same `.param` form, alignment
/// and size, and `__half2`-holding values by reference.
#[test]
fn interop_signatures_match_nvcc() {
    let Some(nvcc) = nvcc_or_skip() else { return };
    let path = fixture();
    let module = Module::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut stubs = String::new();
    let mut ours = Vec::new();
    for e in module.entries() {
        let Some(args) = e.annotated.filter(|_| module.is_interop(&e.name)) else {
            continue;
        };
        let k = module
            .compile(&e.name, &args, &CompileOptions::default())
            .unwrap();
        ours.push((e.name.clone(), ptx_signature(&k.ptx, &e.name)));
        let spec = module.specialize(&e.name, &args).unwrap();
        let ret = spec.program().functions[spec.program().entry].ret.clone();
        let params: Vec<String> = args
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{} p{i}", layout_of(t).cxx))
            .collect();
        let (kind, ret, body) = match (e.is_kernel, &ret) {
            (true, _) => ("__global__", "void".to_string(), ""),
            (false, Type::None) => ("__device__", "void".to_string(), ""),
            (false, t) => ("__device__", layout_of(t).cxx, " return {};"),
        };
        stubs.push_str(&format!(
            "extern \"C\" {kind} {ret} {}({}) {{{body} }}\n",
            e.name,
            params.join(", ")
        ));
    }
    assert!(ours.len() >= 5, "the fixture's interop functions: {ours:?}");
    let dir = scratch("nvcc-signatures");
    let out = run(Command::new(cli_path())
        .args(["abi", &path, "--header"])
        .current_dir(&dir));
    std::fs::write(dir.join("interop.h"), ok(&out, "abi --header", "")).unwrap();
    let src = format!("#include \"interop.h\"\n\n{stubs}");
    std::fs::write(dir.join("stubs.cu"), &src).unwrap();
    let out = run(Command::new(&nvcc)
        .args([
            "-arch=sm_90",
            "-rdc=true",
            "-ptx",
            "-o",
            "stubs.ptx",
            "stubs.cu",
        ])
        .current_dir(&dir));
    ok(&out, "nvcc -ptx", &src);
    let theirs = std::fs::read_to_string(dir.join("stubs.ptx")).unwrap();
    let differ: Vec<String> = ours
        .iter()
        .filter(|(name, sig)| *sig != ptx_signature(&theirs, name))
        .map(|(name, sig)| {
            format!(
                "{name}:\n  ours: {sig}\n  nvcc: {}",
                ptx_signature(&theirs, name)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `device.align(float32, 16)` field: the header spells it `alignas(16) float value;` and
/// nvcc agrees with its `static_assert`s (offset 16, 32 bytes aligned to 16). The GPU test
/// `aligned_struct_fields_and_defaults` runs kernels on arrays of them.
#[test]
fn aligned_struct_fields_match_nvcc() {
    let path = support::repo_path("tests/fixtures/lang/struct_align_defaults.py");
    let path = &*path.to_string_lossy();
    let out = cli(&["abi", path, "--header"]);
    let h = ok(&out, "pydevice abi --header", "");
    assert!(h.contains("alignas(16) float value;"), "{h}");
    let Some(nvcc) = nvcc_or_skip() else { return };
    let dir = scratch("nvcc-aligned");
    std::fs::write(dir.join("aligned.h"), &h).unwrap();
    let src = "#include \"aligned.h\"\n\
        __global__ void touch(sample* s) { s[threadIdx.x].weight = s[threadIdx.x].value; }\n";
    let cu = dir.join("aligned.cu");
    std::fs::write(&cu, src).unwrap();
    let out = run(Command::new(&nvcc)
        .args(["-arch=sm_90", "-c", "-o"])
        .arg(dir.join("aligned.o"))
        .arg(&cu));
    ok(
        &out,
        "nvcc on the aligned-field header",
        &format!("{src}\n{h}"),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// numba's record notation in `--type`: an aligned record prints its C layout; a packed one
/// is refused with the reason and what to do.
#[test]
fn cli_abi_prints_records_and_explains_packed_ones() {
    let path = support::repo_path("tests/fixtures/numba/records.py");
    let path = &*path.to_string_lossy();
    let out = cli(&[
        "abi",
        path,
        "--type",
        "Record(id[type=int8;offset=0],w[type=float64;offset=8];16;True)",
    ]);
    let text = ok(&out, "pydevice abi --type Record(...)", "");
    assert!(text.contains("size 16, align 8"), "{text}");
    assert!(text.contains("     8  w: float64"), "{text}");
    let out = cli(&[
        "abi",
        path,
        "--type",
        "Record(id[type=int8;offset=0],w[type=float64;offset=1];9;False)",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("align=True") && err.contains("`w` is at byte 1"),
        "{err}"
    );
}

/// `pydevice abi FILE.py | head` (and every other subcommand whose reader goes away): the
/// process ends quietly, by SIGPIPE as `cat` does, instead of panicking on a closed pipe.
#[cfg(unix)]
#[test]
fn cli_exits_quietly_when_its_output_pipe_closes() {
    use std::os::unix::process::ExitStatusExt;
    let dir = std::env::temp_dir().join(format!("pydevice-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("many.py");
    let mut src = String::from("from cuda import device\nfrom cuda.device import float32\n");
    for i in 0..2000 {
        src.push_str(&format!(
            "\n@device.struct\nclass S{i}:\n    x: float32\n    y: float32\n"
        ));
    }
    std::fs::write(&file, src).expect("write");
    let path = file.to_string_lossy().to_string();
    for args in [vec!["abi", &path[..]], vec!["abi", &path[..], "--header"]] {
        let mut child = Command::new(cli_path())
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        drop(child.stdout.take()); // the reader goes away before the output is written
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(
            out.status.signal(),
            Some(13),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
