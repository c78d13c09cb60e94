//! `cuda.device.random` on the host (docs/semantics.md §6.4): `rand`/`randn` in `@func`s run
//! through Cranelift give the reference's numbers (`pydevice::random`) for the seed, thread
//! and call the host stream is set to — a property test over seeds, threads, call positions
//! and the four kinds of draw. Also: kernels that draw random numbers take the seed as a
//! trailing `.u64` parameter, others are unchanged; misuse is a diagnostic.

use proptest::prelude::*;
use pydevice::random as r;
use pydevice::types::signature::parse_signature;
use pydevice::types::{Scalar, Type};
use pydevice::{CompileOptions, HostValue, Module};

const DRAW: &str = r#"
from cuda import device
from cuda.device import random
from cuda.device.random import randn


@device.func
def skip(k: int) -> float:
    s = 0.0
    for _ in range(k):
        s += random.rand()
    return s


@device.func
def draw(k: int, which: int) -> device.float64:
    skip(k)
    if which == 0:
        return device.float64(random.rand())
    if which == 1:
        return random.rand(device.float64)
    if which == 2:
        return device.float64(randn())
    return randn(device.float64)
"#;

fn bits(v: &HostValue) -> u64 {
    match v {
        HostValue::Float64(x) => x.to_bits(),
        other => panic!("not a float64: {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Call `k` of thread `t` under seed `s`, of each kind, on the host is the reference's.
    #[test]
    fn host_draws_are_the_reference(seed in any::<u64>(), thread in any::<u64>(), k in 0i64..40, which in 0i64..4) {
        let m = Module::parse("draw.py", DRAW).unwrap();
        let i32t = Type::Scalar(Scalar::Int32);
        let f = m.host_function("draw", &[i32t.clone(), i32t]).unwrap();
        r::set_host_stream(seed, thread);
        let got = f.call(&[HostValue::Int(k), HostValue::Int(which)]).unwrap();
        let call = k as u64;
        let want = match which {
            0 => f64::from(r::rand_f32(seed, thread, call)),
            1 => r::rand_f64(seed, thread, call),
            2 => f64::from(r::randn_f32(seed, thread, call)),
            _ => r::randn_f64(seed, thread, call),
        };
        prop_assert_eq!(bits(&got), want.to_bits());
        // The next call continues the stream.
        prop_assert_eq!(r::host_stream().call, call + 1);
    }
}

fn ptx(src: &str, entry: &str, sig: &str) -> Result<pydevice::CompiledKernel, pydevice::Error> {
    let m = Module::parse("k.py", src).map_err(pydevice::Error::from)?;
    let (args, _) = parse_signature(sig).unwrap();
    m.compile(entry, &args, &CompileOptions::default())
}

#[test]
fn only_kernels_that_draw_take_the_seed() {
    let with = "from cuda import device\nfrom cuda.device import random\n\n@device.kernel\ndef k(a):\n    a[0] = random.rand()\n";
    let without = "from cuda import device\n\n@device.kernel\ndef k(a):\n    a[0] = 1.0\n";
    let k = ptx(with, "k", "float32[::1]").unwrap();
    assert!(k.abi.seed);
    assert!(k.ptx.contains(".param .u64 k_param_1"), "{}", k.ptx);
    let k = ptx(without, "k", "float32[::1]").unwrap();
    assert!(!k.abi.seed);
    assert!(!k.ptx.contains("k_param_1"));
    // The JSON ABI says so only when it is true.
    assert!(!serde_json::to_string(&k.abi).unwrap().contains("seed"));
}

#[test]
fn misuse_is_a_diagnostic() {
    let int = "from cuda import device\nfrom cuda.device import random\n\n@device.kernel\ndef k(a):\n    a[0] = random.rand(device.int32)\n";
    let e = ptx(int, "k", "int32[::1]").unwrap_err().to_string();
    assert!(e.contains("E0780"), "{e}");
    let interop = "from cuda import device\nfrom cuda.device import random\n\n@device.func(interop=True)\ndef f() -> float:\n    return random.rand()\n\n@device.kernel\ndef k(a):\n    a[0] = f()\n";
    let e = ptx(interop, "k", "float32[::1]").unwrap_err().to_string();
    assert!(e.contains("E0781"), "{e}");
    // On the host an interoperable function may draw (no hidden parameter there).
    let m = Module::parse("k.py", interop).unwrap();
    m.host_function("f", &[]).unwrap();
}

#[test]
fn the_header_declares_the_seed_parameter() {
    let src = "from cuda import device\nfrom cuda.device import random\nfrom cuda.device import float32\n\n@device.kernel(interop=True)\ndef k(a: \"float32[::1]\"):\n    a[0] = random.rand()\n";
    let m = Module::parse("k.py", src).unwrap();
    let (decls, _) = m.interop_functions().unwrap();
    let text = pydevice::abi::header::header("k", &[], &decls);
    assert!(
        text.contains(", cuda::std::uint64_t __pyd_seed);"),
        "{text}"
    );
}
