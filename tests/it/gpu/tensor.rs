//! GPU tests of the tensor cores (§19): WMMA GEMMs for every fragment type (the
//! `tests/fixtures/lang/wmma_*.py` kernels), `mma.sync` m16n8k16 GEMMs for float16 and
//! bfloat16, and `ldmatrix`'s register layout, each against a CPU reference on random inputs.
//! Inputs are rounded to the input type first, so the reference sees what the tensor cores
//! see; the tolerance is the accumulator's rounding over K terms (exact for integers).

use super::*;
use pydevice::types::half::{bf16_bits, f16_bits};

fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    if exp == 0 {
        sign * man * 2f64.powi(-24)
    } else {
        sign * (1.0 + man / 1024.0) * 2f64.powi(exp - 15)
    }
}

fn bf16_value(h: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(h) << 16))
}

/// float32 → TF32 as `cvt.rna.tf32.f32` rounds it (to nearest, ties away from zero).
fn tf32_value(x: f32) -> f64 {
    let b = x.to_bits();
    let r = (b.wrapping_add(0x1000)) & !0x1fff;
    f64::from(f32::from_bits(r))
}

/// The input element types of a WMMA GEMM and how the test makes and reads them.
#[derive(Copy, Clone, Debug, PartialEq)]
enum In {
    F16,
    Bf16,
    Tf32,
    F64,
    S8,
    U8,
}

/// One matrix of random inputs: its bytes and the values the tensor cores see.
fn random_matrix(t: In, n: usize, r: &mut Rng) -> (Vec<u8>, Vec<f64>) {
    let mut bytes = Vec::new();
    let mut vals = Vec::new();
    for _ in 0..n {
        match t {
            In::F16 => {
                let h = f16_bits(f64::from(r.f32(-1.0, 1.0)));
                bytes.extend(h.to_le_bytes());
                vals.push(f16_value(h));
            }
            In::Bf16 => {
                let h = bf16_bits(f64::from(r.f32(-1.0, 1.0)));
                bytes.extend(h.to_le_bytes());
                vals.push(bf16_value(h));
            }
            In::Tf32 => {
                let x = r.f32(-1.0, 1.0);
                bytes.extend(x.to_le_bytes());
                vals.push(tf32_value(x));
            }
            In::F64 => {
                let x = f64::from(r.f32(-1.0, 1.0)) + f64::from(r.f32(-1.0, 1.0)) * 1e-8;
                bytes.extend(x.to_le_bytes());
                vals.push(x);
            }
            In::S8 => {
                let x = r.i32(-128, 128) as i8;
                bytes.extend(x.to_le_bytes());
                vals.push(f64::from(x));
            }
            In::U8 => {
                let x = r.i32(0, 256) as u8;
                bytes.extend(x.to_le_bytes());
                vals.push(f64::from(x));
            }
        }
    }
    (bytes, vals)
}

fn upload(dev: &Dev, bytes: &[u8], rows: usize, cols: usize) -> (Buffer, ArgValue) {
    let buf = dev.upload(bytes).expect("upload");
    let arg = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: vec![rows as u64, cols as u64],
        strides: vec![cols as i64, 1],
    });
    (buf, arg)
}

/// The accumulator types the tests read back.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Acc {
    F16,
    F32,
    F64,
    S32,
}

fn read_acc(t: Acc, bytes: &[u8]) -> Vec<f64> {
    match t {
        Acc::F16 => from_bytes::<u16>(bytes)
            .into_iter()
            .map(f16_value)
            .collect(),
        Acc::F32 => from_bytes::<f32>(bytes)
            .into_iter()
            .map(f64::from)
            .collect(),
        Acc::F64 => from_bytes::<f64>(bytes),
        Acc::S32 => from_bytes::<i32>(bytes)
            .into_iter()
            .map(f64::from)
            .collect(),
    }
}

fn acc_bytes(t: Acc) -> usize {
    match t {
        Acc::F16 => 2,
        Acc::F32 | Acc::S32 => 4,
        Acc::F64 => 8,
    }
}

/// Checks `got` (M×N, row-major, or column-major when `col`) against A·B computed in f64,
/// within `rel` of the sum of the products' magnitudes (0: exact).
fn check_gemm(
    what: &str,
    got: &[f64],
    a: &[f64],
    b: &[f64],
    (m, n, k): (usize, usize, usize),
    col: bool,
    rel: f64,
) {
    let mut worst = 0f64;
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut mag) = (0f64, 0f64);
            for p in 0..k {
                want += a[i * k + p] * b[p * n + j];
                mag += (a[i * k + p] * b[p * n + j]).abs();
            }
            let g = if col { got[j * m + i] } else { got[i * n + j] };
            let err = (g - want).abs();
            worst = worst.max(err / mag.max(1e-30));
            assert!(
                err <= rel * mag,
                "{what}: C[{i}, {j}] = {g}, want {want} (error {err:e}, allowed {:e})",
                rel * mag
            );
        }
    }
    eprintln!("{what}: {m}x{n}x{k}, worst relative error {worst:e} (allowed {rel:e})");
}

/// A `tests/fixtures/lang/wmma_*.py` GEMM (A row-major M×K, B given as Bᵀ N×K, C row-major)
/// on random M×N×K inputs.
fn wmma_gemm(
    dev: &Dev,
    test: &str,
    fixture: &str,
    t: In,
    acc: Acc,
    tile: (usize, usize),
    rel: f64,
) {
    if arch_for(dev).number() < 80 && !dev.is_cpu() {
        eprintln!("skipped {test}: needs sm_80");
        return;
    }
    let src = std::fs::read_to_string(crate::support::repo_path(&format!(
        "tests/fixtures/lang/{fixture}.py"
    )))
    .expect("fixture");
    let (ty, accty) = match (t, acc) {
        (In::F16, _) => ("float16", "float32"),
        (In::Bf16, _) => ("bfloat16", "float32"),
        (In::Tf32, _) => ("float32", "float32"),
        (In::F64, _) => ("float64", "float64"),
        (In::S8, _) => ("int8", "int32"),
        (In::U8, _) => ("uint8", "int32"),
    };
    let k = kernel(
        dev,
        &src,
        "gemm",
        &format!("{ty}[:, ::1], {ty}[:, ::1], {accty}[:, ::1]"),
    );
    let (m, n, kk) = (64, 96, 128);
    let mut r = Rng(0x7e57 + m as u64);
    let (ab, av) = random_matrix(t, m * kk, &mut r);
    let (bb, bv) = random_matrix(t, n * kk, &mut r);
    // B is passed transposed (N×K): b[p * n + j] for the reference is bt[j * k + p].
    let mut b_ref = vec![0f64; kk * n];
    for j in 0..n {
        for p in 0..kk {
            b_ref[p * n + j] = bv[j * kk + p];
        }
    }
    let (_a, aa) = upload(dev, &ab, m, kk);
    let (_b, ba) = upload(dev, &bb, n, kk);
    let (cb, ca) = upload(dev, &vec![0u8; m * n * acc_bytes(acc)], m, n);
    k.launch(
        &[aa, ba, ca],
        [(n / tile.1) as u32, (m / tile.0) as u32, 1],
        [32, 1, 1],
    );
    let got = read_acc(acc, &dev.download(&cb).expect("download"));
    check_gemm(test, &got, &av, &b_ref, (m, n, kk), false, rel);
}

// float32 accumulation of K = 128 products (exact products: the inputs have at most 11
// significant bits): the tensor cores' adds are not IEEE round-to-nearest (they may
// truncate, in an unspecified order), so each of the K sums may lose up to 2^-22 relative.
const F32_REL: f64 = 128.0 * 2.4e-7;

on_each_backend! {
fn wmma_f16_gemm_random(dev) {
    wmma_gemm(
        &dev,
        "wmma_f16_gemm_random",
        "wmma_f16",
        In::F16,
        Acc::F32,
        (16, 16),
        F32_REL,
    );
}
}

on_each_backend! {
fn wmma_bf16_gemm_random(dev) {
    wmma_gemm(
        &dev,
        "wmma_bf16_gemm_random",
        "wmma_bf16_sm80",
        In::Bf16,
        Acc::F32,
        (16, 16),
        F32_REL,
    );
}
}

on_each_backend! {
fn wmma_bf16_m8n32k16_gemm_random(dev) {
    wmma_gemm(
        &dev,
        "wmma_bf16_m8n32k16_gemm_random",
        "wmma_bf16_m8n32k16",
        In::Bf16,
        Acc::F32,
        (8, 32),
        F32_REL,
    );
}
}

on_each_backend! {
fn wmma_tf32_gemm_random(dev) {
    wmma_gemm(
        &dev,
        "wmma_tf32_gemm_random",
        "wmma_tf32_sm80",
        In::Tf32,
        Acc::F32,
        (16, 16),
        F32_REL,
    );
}
}

on_each_backend! {
fn wmma_f64_gemm_random(dev) {
    wmma_gemm(
        &dev,
        "wmma_f64_gemm_random",
        "wmma_f64_sm80",
        In::F64,
        Acc::F64,
        (8, 8),
        128.0 * 2.3e-16,
    );
}
}

on_each_backend! {
fn wmma_s8_gemm_random(dev) {
    // |sum| ≤ 128 · 128 · 128 fits int32: satfinite never saturates, the result is exact.
    wmma_gemm(
        &dev,
        "wmma_s8_gemm_random",
        "wmma_s8_sm80",
        In::S8,
        Acc::S32,
        (32, 8),
        0.0,
    );
}
}

on_each_backend! {
fn wmma_u8_gemm_random(dev) {
    wmma_gemm(
        &dev,
        "wmma_u8_gemm_random",
        "wmma_u8_m8n32k16",
        In::U8,
        Acc::S32,
        (8, 32),
        0.0,
    );
}
}

on_each_backend! {
/// `lang/wmma_f16_shared.py`: tiles staged in shared memory (A column-major, B row-major),
/// a float16 accumulator, C stored column-major.
fn wmma_f16_accumulator_shared_col_major(dev) {
    let test = "wmma_f16_accumulator_shared_col_major";
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/wmma_f16_shared.py",
    ))
    .expect("fixture");
    let k = kernel(
        &dev,
        &src,
        "gemm_shared",
        "float16[:, ::1], float16[:, ::1], float16[:, ::1]",
    );
    let (m, n, kk) = (64, 32, 64);
    let mut r = Rng(99);
    let (ab, av) = random_matrix(In::F16, m * kk, &mut r);
    let (bb, bv) = random_matrix(In::F16, kk * n, &mut r);
    let (_a, aa) = upload(&dev, &ab, m, kk);
    let (_b, ba) = upload(&dev, &bb, kk, n);
    let (cb, ca) = upload(&dev, &vec![0u8; m * n * 2], n, m);
    k.launch(
        &[aa, ba, ca],
        [(n / 8) as u32, (m / 32) as u32, 1],
        [32, 1, 1],
    );
    let got = read_acc(Acc::F16, &dev.download(&cb).expect("download"));
    // float16 accumulation: each of the K partial sums may round by 2^-11 relative.
    check_gemm(test, &got, &av, &bv, (m, n, kk), true, 64.0 * 4.9e-4);
}
}

/// A multi-tile `mma.sync` GEMM: one warp per 16×8 tile of C, K in steps of 16 through
/// shared memory and `ldmatrix`.
const MMA_GEMM: &str = r#"
from cuda import device
from cuda.device import mma


@device.kernel
def mma_gemm(a, b, c):
    sa = device.shared_array((16, 16), DT, align=16)
    sb = device.shared_array((16, 8), DT, align=16)
    lane = device.thread_idx.x
    m0 = device.block_idx.y * 16
    n0 = device.block_idx.x * 8
    acc = (device.float32(0.0), device.float32(0.0), device.float32(0.0), device.float32(0.0))
    for k0 in range(0, a.shape[1], 16):
        for i in range(lane, 256, 32):
            sa[i // 16, i % 16] = a[m0 + i // 16, k0 + i % 16]
        for i in range(lane, 128, 32):
            sb[i // 8, i % 8] = b[k0 + i // 8, n0 + i % 8]
        device.syncwarp()
        fa = mma.ldmatrix(sa, (lane % 16, lane // 16 * 8), 4)
        fb = mma.ldmatrix(sb, (lane % 16, 0), 2, trans=True)
        acc = mma.mma_sync_m16n8k16(fa, fb, acc)
        device.syncwarp()
    g = lane // 4
    t = lane % 4
    c[m0 + g, n0 + 2 * t] = acc[0]
    c[m0 + g, n0 + 2 * t + 1] = acc[1]
    c[m0 + g + 8, n0 + 2 * t] = acc[2]
    c[m0 + g + 8, n0 + 2 * t + 1] = acc[3]
"#;

fn mma_gemm(dev: &Dev, test: &str, t: In) {
    if arch_for(dev).number() < 80 && !dev.is_cpu() {
        eprintln!("skipped {test}: needs sm_80");
        return;
    }
    let dt = if t == In::F16 { "float16" } else { "bfloat16" };
    let src = MMA_GEMM.replace("DT", &format!("device.{dt}"));
    let k = kernel(
        dev,
        &src,
        "mma_gemm",
        &format!("{dt}[:, ::1], {dt}[:, ::1], float32[:, ::1]"),
    );
    let (m, n, kk) = (48, 40, 128);
    let mut r = Rng(0x3a3a);
    let (ab, av) = random_matrix(t, m * kk, &mut r);
    let (bb, bv) = random_matrix(t, kk * n, &mut r);
    let (_a, aa) = upload(dev, &ab, m, kk);
    let (_b, ba) = upload(dev, &bb, kk, n);
    let (cb, ca) = upload(dev, &vec![0u8; m * n * 4], m, n);
    k.launch(
        &[aa, ba, ca],
        [(n / 8) as u32, (m / 16) as u32, 1],
        [32, 1, 1],
    );
    let got = read_acc(Acc::F32, &dev.download(&cb).expect("download"));
    check_gemm(test, &got, &av, &bv, (m, n, kk), false, F32_REL);
}

on_each_backend! {
fn mma_m16n8k16_f16_gemm_random(dev) {
    mma_gemm(
        &dev,"mma_m16n8k16_f16_gemm_random", In::F16);
}
}

on_each_backend! {
fn mma_m16n8k16_bf16_gemm_random(dev) {
    mma_gemm(
        &dev,"mma_m16n8k16_bf16_gemm_random", In::Bf16);
}
}

on_each_backend! {
/// `ldmatrix` x4, with and without `.trans`, against the register layout of §19.2: lane
/// `l`'s vector i holds elements (g, 2t), (g, 2t+1) of matrix i (transposed: (2t, g),
/// (2t+1, g)), where matrix i is rows 8i..8i+7 of a 32×8 tile.
fn ldmatrix_layout(dev) {
    let src = r#"
from cuda import device
from cuda.device import mma


@device.kernel
def ld(src, out, out_t):
    s = device.shared_array((32, 8), device.uint16, align=16)
    lane = device.thread_idx.x
    for i in range(lane, 256, 32):
        s[i // 8, i % 8] = src[i // 8, i % 8]
    device.syncwarp()
    r = mma.ldmatrix(s, (lane, 0), 4)
    q = mma.ldmatrix(s, (lane, 0), 4, trans=True)
    out[lane, 0] = r[0][0]
    out[lane, 1] = r[0][1]
    out_t[lane, 0] = q[0][0]
    out_t[lane, 1] = q[0][1]
    out[lane, 2] = r[1][0]
    out[lane, 3] = r[1][1]
    out_t[lane, 2] = q[1][0]
    out_t[lane, 3] = q[1][1]
    out[lane, 4] = r[2][0]
    out[lane, 5] = r[2][1]
    out_t[lane, 4] = q[2][0]
    out_t[lane, 5] = q[2][1]
    out[lane, 6] = r[3][0]
    out[lane, 7] = r[3][1]
    out_t[lane, 6] = q[3][0]
    out_t[lane, 7] = q[3][1]
"#;
    let k = kernel(
        &dev,
        src,
        "ld",
        "uint16[:, ::1], uint16[:, ::1], uint16[:, ::1]",
    );
    let mut r = Rng(5);
    let tile: Vec<u16> = (0..256).map(|_| r.i32(0, 65536) as u16).collect();
    let (_s, sa) = upload(&dev, &bytes_of(&tile), 32, 8);
    let (ob, oa) = upload(&dev, &[0u8; 32 * 8 * 2], 32, 8);
    let (tb, ta) = upload(&dev, &[0u8; 32 * 8 * 2], 32, 8);
    k.launch(&[sa, oa, ta], [1, 1, 1], [32, 1, 1]);
    let out: Vec<u16> = from_bytes(&dev.download(&ob).expect("download"));
    let out_t: Vec<u16> = from_bytes(&dev.download(&tb).expect("download"));
    let at = |mat: usize, row: usize, col: usize| tile[(8 * mat + row) * 8 + col];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for i in 0..4 {
            for e in 0..2 {
                assert_eq!(
                    out[lane * 8 + 2 * i + e],
                    at(i, g, 2 * t + e),
                    "lane {lane} vector {i}.{e}"
                );
                assert_eq!(
                    out_t[lane * 8 + 2 * i + e],
                    at(i, 2 * t + e, g),
                    "trans: lane {lane} vector {i}.{e}"
                );
            }
        }
    }
}
}

on_each_backend! {
/// `bounds_check=True`: a WMMA load whose first element is out of range is reported (naming
/// the array) and skipped, the fragment reading as zeros; in range it copies the tile.
fn wmma_bounds_checked_load(dev) {
    let src = r#"
from cuda import device
from cuda.device import wmma


@device.kernel(bounds_check=True)
def tile(a, c, row):
    f = wmma.fragment("accumulator", (16, 16, 16), device.float32)
    wmma.load_matrix_sync(f, a, (row, 0), 16, "row_major")
    wmma.store_matrix_sync(c, (0, 0), f, 16, "row_major")
"#;
    let k = kernel(&dev, src, "tile", "float32[:, ::1], float32[:, ::1], int32");
    let a: Vec<f32> = (0..32 * 16).map(|i| i as f32 * 0.5).collect();
    let (_ab, aa) = upload(&dev, &bytes_of(&a), 32, 16);
    let (cb, ca) = upload(&dev, &bytes_of(&vec![-1f32; 256]), 16, 16);
    k.launch(
        &[aa.clone(), ca.clone(), ArgValue::Int(16)],
        [1, 1, 1],
        [32, 1, 1],
    );
    dev.check_bounds(&k.k).expect("in range");
    let c: Vec<f32> = from_bytes(&dev.download(&cb).expect("download"));
    assert_eq!(c, a[256..].to_vec());
    k.launch(&[aa, ca, ArgValue::Int(40)], [1, 1, 1], [32, 1, 1]);
    let e = dev
        .check_bounds(&k.k)
        .expect_err("an out-of-range tile must be reported");
    // The device names the array and the index; the CPU back end names the line (§22.1).
    if dev.is_cpu() {
        assert!(e.to_string().contains(":9:"), "{e}");
    } else {
        assert!(e.to_string().contains("a[40, 0]"), "{e}");
    }
    let c: Vec<f32> = from_bytes(&dev.download(&cb).expect("download"));
    assert!(c.iter().all(|x| *x == 0.0), "{c:?}");
}
}

on_each_backend! {
/// `lang/wmma_elements.py`: C = alpha·A·B + beta·C on one 16×16 tile, the scaling done on
/// the accumulator fragments' elements (`frag[i]`, `num_elements`).
fn wmma_fragment_elements_epilogue(dev) {
    let src = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/lang/wmma_elements.py",
    ))
    .expect("fixture");
    let k = kernel(
        &dev,
        &src,
        "gemm_epilogue",
        "float16[:, ::1], float16[:, ::1], float32[:, ::1], float32, float32",
    );
    let mut r = Rng(31);
    let (ab, av) = random_matrix(In::F16, 256, &mut r);
    let (bb, bv) = random_matrix(In::F16, 256, &mut r);
    let c0: Vec<f32> = (0..256).map(|_| r.f32(-1.0, 1.0)).collect();
    let (alpha, beta) = (1.5f32, -0.75f32);
    let (_a, aa) = upload(&dev, &ab, 16, 16);
    let (_b, ba) = upload(&dev, &bb, 16, 16);
    let (cb, ca) = upload(&dev, &bytes_of(&c0), 16, 16);
    k.launch(
        &[
            aa,
            ba,
            ca,
            ArgValue::Float(f64::from(alpha)),
            ArgValue::Float(f64::from(beta)),
        ],
        [1, 1, 1],
        [32, 1, 1],
    );
    let got: Vec<f32> = from_bytes(&dev.download(&cb).expect("download"));
    for i in 0..16 {
        for j in 0..16 {
            let mut ab_ij = 0f64;
            let mut mag = 0f64;
            for p in 0..16 {
                ab_ij += av[i * 16 + p] * bv[p * 16 + j];
                mag += (av[i * 16 + p] * bv[p * 16 + j]).abs();
            }
            let want = f64::from(alpha) * ab_ij + f64::from(beta) * f64::from(c0[i * 16 + j]);
            let tol = 16.0 * 2.4e-7 * mag * 1.5 + 1e-6;
            let g = f64::from(got[i * 16 + j]);
            assert!((g - want).abs() <= tol, "C[{i}, {j}] = {g}, want {want}");
        }
    }
}
}

on_each_backend! {
/// The benchmark's tensor-core GEMM, `bench/kernels/hgemm_mma.py` (cp.async pipeline into
/// XOR-swizzled shared tiles in 64 KiB of dynamic shared memory, `ldmatrix.x4`, `mma.sync`),
/// on shapes that reach its edges: fewer k steps than pipeline stages, a last L2 group of
/// fewer block rows than the others (18 = 16 + 2), non-square matrices, a long k loop.
fn hgemm_mma_bench_kernel_matches_the_cpu(dev) {
    let test = "hgemm_mma_bench_kernel_matches_the_cpu";
    if arch_for(&dev).number() < 80 && !dev.is_cpu() {
        eprintln!("skipped {test}: needs sm_80");
        return;
    }
    let src = std::fs::read_to_string(crate::support::repo_path("bench/kernels/hgemm_mma.py"))
        .expect("kernel");
    let k = kernel(
        &dev,
        &src,
        "hgemm_mma",
        "float16[:, ::1], float16[:, ::1], float32[:, ::1]",
    );
    // The kernel's SHARED (4 stages of 128 x 32 and 32 x 128 float16 tiles) and THREADS.
    let shared = 4 * (128 * 32 + 32 * 128) * 2;
    // The driver's opt-in above 48 KiB (the CPU back end takes up to 16 MiB as it is).
    if !dev.is_cpu() {
        k.k.set_max_dynamic_shared(shared).expect("allow 64 KiB");
    }
    let mut r = Rng(71);
    for (m, n, kk) in [(256, 384, 64), (2304, 256, 96), (128, 128, 1024)] {
        let (ab, av) = random_matrix(In::F16, m * kk, &mut r);
        let (bb, bv) = random_matrix(In::F16, kk * n, &mut r);
        let (_a, aa) = upload(&dev, &ab, m, kk);
        let (_b, ba) = upload(&dev, &bb, kk, n);
        let (cbuf, ca) = upload(&dev, &vec![0xFFu8; m * n * 4], m, n); // NaN until written
        let blocks = ((m / 128) * (n / 128)) as u32;
        k.launch_shared(&[aa, ba, ca], [blocks, 1, 1], [128, 1, 1], shared);
        let got = read_acc(Acc::F32, &dev.download(&cbuf).expect("download"));
        let what = format!("hgemm_mma {m}x{n}x{kk}");
        // float32 accumulation over kk terms: at most one rounding (2^-23 of the running
        // sum, which is below the sum of magnitudes) an addition, as F32_REL allows for 128.
        let rel = F32_REL.max(kk as f64 * 2.4e-7);
        check_gemm(&what, &got, &av, &bv, (m, n, kk), false, rel);
    }
}
}
