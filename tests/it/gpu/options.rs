//! GPU tests of the `@kernel` options: launch bounds seen by the driver, bounds checking
//! reported as an error naming the kernel and line, fast math still close to exact, `contract`
//! fusing multiply-adds.

use super::*;

const OPTIONS: &str = r#"
from cuda import device

@device.kernel(max_threads=128, min_blocks=4, bounds_check=True, lineinfo=True)
def guarded(a, out, k):
    i = device.tid(1)
    if i < len(out):
        out[i] = a[i + k]
"#;

on_each_backend! {
fn launch_bounds_and_bounds_checking(dev) {
    let k = kernel(
        &dev,
        OPTIONS,
        "guarded",
        "float32[::1], float32[::1], int32",
    );
    // The driver's view of the PTX; the CPU back end checks the limit at launch (below).
    if let Loaded::Gpu(loaded) = &k.k {
        let attrs = loaded.attributes().expect("attributes");
        assert_eq!(attrs.max_threads_per_block, 128, "{attrs:?}");
    }
    let n = 1000;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (ob, oa) = vec1(&dev, &vec![-1f32; n]);
    // In range: no error, exact copy.
    k.launch(
        &[aa.clone(), oa.clone(), ArgValue::Int(0)],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    dev.check_bounds(&k.k).expect("no out-of-range access");
    // Shifted by 10: the last 10 reads are out of range, skipped (read as 0) and reported.
    k.launch(
        &[aa, oa, ArgValue::Int(10)],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let e = dev
        .check_bounds(&k.k)
        .expect_err("out-of-range reads must be reported");
    let text = e.to_string();
    // The device's report names the array and the index; the CPU back end's names the
    // kernel and the line only (docs/semantics.md §22.1).
    let index = dev.is_cpu() || text.contains("a[1000]");
    assert!(
        text.contains("guarded") && index && text.contains(":8:"),
        "{text}"
    );
    assert!(e.context_usable());
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let want = if i + 10 < n { a[i + 10] } else { 0.0 };
        assert_eq!(out[i], want, "index {i}");
    }
    // The record was cleared: a good launch passes again.
    let (_ab, aa) = vec1(&dev, &a);
    let (_ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(
        &[aa, oa, ArgValue::Int(0)],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    dev.check_bounds(&k.k).expect("cleared");
    // More threads per block than max_threads is refused, naming the kernel.
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let (_b, x) = vec1(&dev, &[0f32; 4]);
    let e = dev
        .launch(&k.k, &[x.clone(), x, ArgValue::Int(0)], &cfg)
        .expect_err("256 > max_threads");
    assert!(e.to_string().contains("guarded"), "{e}");
}
}

const FAST: &str = r#"
import math
from cuda import device

@device.kernel(fastmath=True)
def fast(x, out):
    i = device.tid(1)
    if i < len(x):
        out[i] = math.sqrt(x[i]) / (x[i] + 1.0) + math.exp(x[i] * 0.01)
"#;

on_each_backend! {
fn fastmath_stays_close(dev) {
    let k = kernel(&dev, FAST, "fast", "float32[::1], float32[::1]");
    let n = 10_000;
    let mut r = Rng(21);
    let x: Vec<f32> = (0..n).map(|_| r.f32(0.5, 100.0)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[xa, oa], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let v = f64::from(x[i]);
        let want = v.sqrt() / (v + 1.0) + (v * 0.01).exp();
        assert!(
            (f64::from(out[i]) - want).abs() < 1e-4 * want,
            "x={v}: {} vs {want}",
            out[i]
        );
    }
}
}

const CONTRACT: &str = r#"
from cuda import device

@device.kernel
def fused(a, b, c, out):
    i = device.tid(1)
    if i < len(a):
        out[i] = a[i] * b[i] + c[i]

@device.kernel(contract=False)
def separate(a, b, c, out):
    i = device.tid(1)
    if i < len(a):
        out[i] = a[i] * b[i] + c[i]
"#;

on_each_backend! {
/// By default `a * b + c` is one fused multiply-add (one rounding: Rust's `mul_add`), bit
/// for bit (§3.13); with `contract=False` the product and the sum are rounded separately.
fn contract_fuses_multiply_add(dev) {
    let sig = "float32[::1], float32[::1], float32[::1], float32[::1]";
    let n = 10_000;
    let mut r = Rng(33);
    let a: Vec<f32> = (0..n).map(|_| r.f32(-2.0, 2.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| r.f32(-2.0, 2.0)).collect();
    let c: Vec<f32> = (0..n).map(|_| r.f32(-2.0, 2.0)).collect();
    let mut differ = 0;
    for (name, fused) in [("fused", true), ("separate", false)] {
        let k = kernel(&dev, CONTRACT, name, sig);
        let (_ab, aa) = vec1(&dev, &a);
        let (_bb, ba) = vec1(&dev, &b);
        let (_cb, ca) = vec1(&dev, &c);
        let (ob, oa) = vec1(&dev, &vec![0f32; n]);
        k.launch(&[aa, ba, ca, oa], [blocks(n, 256), 1, 1], [256, 1, 1]);
        let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
        for i in 0..n {
            let want = if fused {
                a[i].mul_add(b[i], c[i])
            } else {
                a[i] * b[i] + c[i]
            };
            assert_eq!(
                out[i].to_bits(),
                want.to_bits(),
                "{name}: {} * {} + {}",
                a[i],
                b[i],
                c[i]
            );
            differ += usize::from(fused && want != a[i] * b[i] + c[i]);
        }
    }
    // The inputs tell the two apart (about a quarter of such sums round differently).
    assert!(
        differ > n / 10,
        "only {differ} of {n} fused results differ from separate ones"
    );
}
}

on_each_backend! {
fn bounds_checked_atomics_hit_a_scratch_word_and_report(dev) {
    let k = kernel(
        &dev,
        &fixture("kernel_options.py"),
        "guarded_atomics",
        "int32[::1], int32[::1]",
    );
    let n = 1000;
    let keys: Vec<i32> = (0..n as i32)
        .map(|i| if i == 500 { 99 } else { i % 16 })
        .collect();
    let (bb, ba) = vec1(&dev, &[0i32; 16]);
    let (_kb, ka) = vec1(&dev, &keys);
    k.launch(&[ba, ka], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let e = dev
        .check_bounds(&k.k)
        .expect_err("key 99 is out of range for 16 bins");
    assert!(e.to_string().contains("guarded_atomics"), "{e}");
    let bins: Vec<i32> = from_bytes(&dev.download(&bb).expect("download"));
    let mut want = [0i32; 16];
    for key in &keys {
        if (0..16).contains(key) {
            want[*key as usize] += 1;
        }
    }
    assert_eq!(
        bins,
        want.to_vec(),
        "in-range atomics are exact; the out-of-range one touched no bin"
    );
}
}
