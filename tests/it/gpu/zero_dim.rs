//! GPU test of numbers as zero-dimensional arrays and arrays' `.dtype` (docs/semantics.md
//! §5.3), against the CPU.

use super::*;

const ZERO_DIM: &str = r#"
from cuda import device

@device.func
def shift(x, by):
    if by is None:
        return x
    return x + by

@device.kernel
def k(a, b, out, s):
    i = device.tid(1)
    if i < len(out):
        v = a.dtype(b[i]) * s[()]
        out[i] = shift(v, None) + shift(v, s) + s.ndim + s.size + len(s.shape)
"#;

on_each_backend! {
fn zero_dim_numbers_and_dtype_random(dev) {
    let k = kernel(
        &dev,
        ZERO_DIM,
        "k",
        "float32[::1], int32[::1], float32[::1], float32",
    );
    let n = 5000;
    let mut r = Rng(31);
    let b: Vec<i32> = (0..n).map(|_| r.i32(-1000, 1000)).collect();
    let s = r.f32(-2.0, 2.0);
    let (_ab, aa) = vec1(&dev, &vec![0f32; n]);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(
        &[aa, ba, oa, ArgValue::Float(f64::from(s))],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let v = b[i] as f32 * s;
        let want = v + (v + s) + 1.0;
        assert!(
            (out[i] - want).abs() <= 1e-5 * want.abs().max(1.0),
            "index {i}: {} vs {want}",
            out[i]
        );
    }
}
}
