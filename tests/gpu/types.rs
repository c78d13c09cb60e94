//! GPU tests of the type families: vectors passed by value and built in device code,
//! float16 and bfloat16 arithmetic, against CPU references that round as the types do.

use super::*;

/// float32 → float16 bits, rounding to nearest even (finite, normal-range values).
fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let man = b & 0x7f_ffff;
    if exp <= 0 {
        // Subnormal half: shift the implicit bit in.
        let m = (man | 0x80_0000) >> (1 - exp);
        let r =
            (m >> 13) + u32::from((m >> 12) & 1 == 1 && ((m & 0xfff) != 0 || (m >> 13) & 1 == 1));
        return sign | r as u16;
    }
    let mut h = ((exp as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f32::from(h & 0x3ff);
    if exp == 0 {
        sign * man * 2f32.powi(-24)
    } else {
        sign * (1.0 + man / 1024.0) * 2f32.powi(exp - 15)
    }
}

fn r16(x: f32) -> f32 {
    f16_value(f16_bits(x))
}

fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let rest = b & 0xffff;
    let mut h = b >> 16;
    if rest > 0x8000 || (rest == 0x8000 && h & 1 == 1) {
        h += 1;
    }
    h as u16
}

fn bf16_value(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

fn rb16(x: f32) -> f32 {
    bf16_value(bf16_bits(x))
}

#[test]
fn vectors_float16_and_bfloat16() {
    let Some(dev) = device("vectors_float16_and_bfloat16") else {
        return;
    };
    let k = kernel(
        &dev,
        &fixture("vectors_and_half.py"),
        "vec",
        "float32x4, int8x3, float16[::1], bfloat16[::1], float32[:, ::1]",
    );
    let n = 1024;
    let mut r = Rng(41);
    let h: Vec<u16> = (0..n).map(|_| f16_bits(r.f32(-30.0, 30.0))).collect();
    let b: Vec<u16> = (0..n).map(|_| bf16_bits(r.f32(-30.0, 30.0))).collect();
    let v = ArgValue::Tuple(vec![
        ArgValue::Float(1.0),
        ArgValue::Float(2.0),
        ArgValue::Float(3.0),
        ArgValue::Float(4.0),
    ]);
    let w = ArgValue::Tuple(vec![ArgValue::Int(5), ArgValue::Int(-6), ArgValue::Int(7)]);
    let (hb, ha) = vec1(&dev, &h);
    let (bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0f32; n * 6], &[n as u64, 6], &[6, 1]);
    k.launch(&[v, w, ha, ba, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let ho: Vec<u16> = from_bytes(&dev.download(&hb).expect("download"));
    let bo: Vec<u16> = from_bytes(&dev.download(&bb).expect("download"));
    for i in 0..n {
        let u = [4.0f32, 3.0, 2.0, 1.0];
        let s: f32 = u.iter().sum::<f32>() - u[i % 4] + 100.0;
        let row = &out[i * 6..i * 6 + 6];
        assert_eq!(
            &row[..4],
            &[s, 108.0, 5007.0, 3.5],
            "vector results, thread {i}"
        );
        let x = f16_value(h[i]);
        let want_h = r16(r16(r16(x * 2.0) + r16(x / 3.0)) - r16(x.abs().sqrt()));
        let got_h = f16_value(ho[i]);
        assert!(
            (got_h - want_h).abs() <= want_h.abs() * 1e-3 + 1e-3,
            "float16 {x}: {got_h} vs {want_h}"
        );
        let y = bf16_value(b[i]);
        let want_b = rb16(rb16(y * 2.0) + rb16(y * y));
        let got_b = bf16_value(bo[i]);
        assert!(
            (got_b - want_b).abs() <= want_b.abs() * 8e-3 + 1e-2,
            "bfloat16 {y}: {got_b} vs {want_b}"
        );
        assert_eq!(
            row[4],
            f16_value(h[i / 32 * 32]),
            "shfl of float16, thread {i}"
        );
        assert_eq!(row[5], x + y, "float(x) + float(y), thread {i}");
    }
}

const STRUCTS: &str = r#"
from cuda import device
from cuda.device import float32, int16

@device.struct
class box:
    lo: float32
    hi: float32
    tag: int16

    @device.func
    def clamp(self, v):
        return min(max(v, self.lo), self.hi)

    @device.func
    def widened(self, d):
        return box(self.lo - d, self.hi + d, self.tag + 1)

@device.kernel
def clamp_all(b, xs, out, tags):
    i = device.tid(1)
    if i < len(xs):
        w = b.widened(1.0)
        out[i] = w.clamp(xs[i])
        tags[i] = w.tag
"#;

#[test]
fn structs_by_value_with_methods() {
    let Some(dev) = device("structs_by_value_with_methods") else {
        return;
    };
    let module = Module::parse("structs.py", STRUCTS).expect("parse");
    let bt = module.named_type("box").expect("struct type");
    let layout = pydevice::abi::layout_of(&bt);
    assert_eq!((layout.size, layout.align), (12, 4));
    let f32a = pydevice::Type::array(
        pydevice::types::Scalar::Float32,
        1,
        pydevice::types::Layout::C,
    );
    let i16a = pydevice::Type::array(
        pydevice::types::Scalar::Int16,
        1,
        pydevice::types::Layout::C,
    );
    let arch = arch_for(&dev);
    let compiled = module
        .compile(
            "clamp_all",
            &[bt, f32a.clone(), f32a, i16a],
            &CompileOptions {
                arch,
                ..CompileOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let k = Kernel {
        dev: &dev,
        k: dev.load(&compiled.ptx, &compiled.abi).expect("load"),
    };
    let n = 3000;
    let mut r = Rng(51);
    let xs: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let (_xb, xa) = vec1(&dev, &xs);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    let (tb, ta) = vec1(&dev, &vec![0i16; n]);
    let b = ArgValue::Tuple(vec![
        ArgValue::Float(-2.5),
        ArgValue::Float(4.0),
        ArgValue::Int(41),
    ]);
    k.launch(&[b, xa, oa, ta], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let tags: Vec<i16> = from_bytes(&dev.download(&tb).expect("download"));
    for i in 0..n {
        assert_eq!(out[i], xs[i].clamp(-3.5, 5.0), "x={}", xs[i]);
        assert_eq!(tags[i], 42);
    }
}

/// The host mirror of `particle` in `tests/fixtures/structs/particles.py` (C layout).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Particle {
    x: f32,
    id: i32,
    v: f64,
}

#[test]
fn global_array_of_structs_updated_in_place() {
    let Some(dev) = device("global_array_of_structs_updated_in_place") else {
        return;
    };
    let src = std::fs::read_to_string(format!(
        "{}/tests/fixtures/structs/particles.py",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture");
    let module = Module::parse("particles.py", &src).expect("parse");
    let particle = module.named_type("particle").expect("struct type");
    assert_eq!(
        pydevice::abi::layout_of(&particle).size as usize,
        std::mem::size_of::<Particle>()
    );
    let ps_t = pydevice::Type::array_of(&particle, 1, pydevice::types::Layout::C).expect("array");
    let (rest, _) = parse_signature("int32[::1], float64").expect("sig");
    let arch = arch_for(&dev);
    let compiled = module
        .compile(
            "step",
            &[vec![ps_t], rest].concat(),
            &CompileOptions {
                arch,
                ..CompileOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let k = Kernel {
        dev: &dev,
        k: dev.load(&compiled.ptx, &compiled.abi).expect("load"),
    };
    let n = 5001;
    let mut r = Rng(77);
    let ps: Vec<Particle> = (0..n)
        .map(|_| Particle {
            x: r.f32(-100.0, 100.0),
            id: r.i32(-1000, 1000),
            v: f64::from(r.f32(-5.0, 5.0)),
        })
        .collect();
    let dt = 0.25f64;
    let (pb, pa) = vec1(&dev, &ps);
    let (ob, oa) = vec1(&dev, &vec![0i32; n]);
    k.launch(
        &[pa, oa, ArgValue::Float(dt)],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let got: Vec<Particle> = from_bytes(&dev.download(&pb).expect("download"));
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for (i, (p, g)) in ps.iter().zip(&got).enumerate() {
        let want = Particle {
            x: p.x + (p.v * dt) as f32,
            id: p.id + 1,
            v: p.v,
        };
        assert_eq!(*g, want, "particle {i}");
        assert_eq!(out[i], p.id * 2 + p.id + 1, "out {i}");
    }
}
