//! GPU tests of `ConstExpr` kernel parameters (docs/semantics.md §5.6): one kernel, specialized
//! per value through the cache, each specialization checked against the CPU (on the CPU back
//! end, the same specializations compiled for the CPU run, and the cache still holds the PTX).

use super::*;
use pydevice::ConstValue;
use pydevice::cache::KernelCache;

const WINDOW: &str = r#"
from cuda import device
from cuda.device import ConstExpr, float32

@device.func
def window(a, start, width: ConstExpr[int]):
    buf = device.local_array(width, float32)
    for j in range(width):
        buf[j] = a[start + j]
    s = float32(0)
    for j in range(width):
        s += buf[j] * (j + 1)
    return s

@device.kernel
def k(a, out, width: ConstExpr[int], scale: ConstExpr[float]):
    i = device.tid(1)
    if i < len(out):
        out[i] = window(a, i, width) * scale
"#;

on_each_backend! {
fn constexpr_specialized_per_value(dev) {
    let module = Module::parse("window.py", WINDOW).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature("float32[::1], float32[::1]").expect("signature");
    let cache = KernelCache::new();
    let n = 10_000usize;
    let mut r = Rng(17);
    let a: Vec<f32> = (0..n + 8).map(|_| r.f32(-1.0, 1.0)).collect();
    let (_ab, aa) = vec1(&dev, &a);
    let mut ptx = Vec::new();
    for (width, scale) in [(3i128, 0.5f64), (5, 0.5), (3, -2.0), (8, 1.0)] {
        let options = CompileOptions {
            arch: arch_for(&dev),
            constants: vec![
                ("width".into(), ConstValue::Int(width)),
                ("scale".into(), ConstValue::Float(scale)),
            ],
            ..CompileOptions::default()
        };
        let compiled = cache
            .get_or_compile(&module, "k", &args, &options)
            .unwrap_or_else(|e| panic!("{e}"));
        // The ConstExpr parameters take no launch argument.
        assert_eq!(compiled.abi.params.len(), 2);
        ptx.push(compiled.ptx.clone());
        // The cached PTX on a GPU; on the CPU back end the same specialization, compiled
        // for the CPU with the same constants.
        let loaded = if dev.is_cpu() {
            dev.compile(&module, "k", &args, &options)
        } else {
            Loaded::Gpu(dev.load(&compiled.ptx, &compiled.abi).expect("load"))
        };
        let (ob, oa) = vec1(&dev, &vec![0f32; n]);
        let cfg = LaunchConfig {
            grid: [blocks(n, 128), 1, 1],
            block: [128, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&loaded, &[aa.clone(), oa], &cfg)
            .expect("launch");
        dev.synchronize().expect("synchronize");
        let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
        for i in 0..n {
            let mut s = 0f32;
            for j in 0..width as usize {
                s += a[i + j] * (j + 1) as f32;
            }
            let want = s * scale as f32;
            assert!(
                (out[i] - want).abs() <= 1e-5 * want.abs().max(1.0),
                "width {width} scale {scale} index {i}: {} vs {want}",
                out[i]
            );
        }
    }
    // Four values, four specializations; the same value again is the cached one.
    assert_eq!(cache.len(), 4);
    assert_ne!(ptx[0], ptx[1]);
    assert_ne!(ptx[0], ptx[2]);
}
}
