//! `funnelshift_l` / `funnelshift_r`, the operation added to show what a new intrinsic costs
//! (issue 33): declared once in `ir` (name, signature, flags), one arm per back end. The same
//! kernel (`tests/fixtures/lang/funnelshift.py`) on random inputs, shift counts past 31
//! included, against a reference computed here: on the CPU back end (CI runs it) and on the
//! GPU (skipped, saying so, without a CUDA driver).

use pydevice::Module;
use pydevice::abi::{ArgValue, ArrayArg};
use pydevice::runtime::cpu::CpuLaunch;
use pydevice::types::signature::parse_signature;

const SRC: &str = include_str!("../fixtures/lang/funnelshift.py");
const SIG: &str = "uint32[::1], uint32[::1], uint32[::1], uint32[:, ::1]";
const N: usize = 3000;

/// CUDA's `__funnelshift_l`: the high word of `hi:lo << (s & 31)`.
fn reference_l(lo: u32, hi: u32, s: u32) -> u32 {
    let both = (u64::from(hi) << 32) | u64::from(lo);
    ((both << (s & 31)) >> 32) as u32
}

/// CUDA's `__funnelshift_r`: the low word of `hi:lo >> (s & 31)`.
fn reference_r(lo: u32, hi: u32, s: u32) -> u32 {
    let both = (u64::from(hi) << 32) | u64::from(lo);
    (both >> (s & 31)) as u32
}

/// Random words and counts from 0 to 99 (a third of them past 31).
fn inputs() -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let lo = (0..N).map(|_| next() as u32).collect();
    let hi = (0..N).map(|_| next() as u32).collect();
    let s = (0..N).map(|_| (next() % 100) as u32).collect();
    (lo, hi, s)
}

fn check(lo: &[u32], hi: &[u32], s: &[u32], out: &[u32]) {
    for i in 0..N {
        let at = format!("lo={:#x} hi={:#x} shift={}", lo[i], hi[i], s[i]);
        assert_eq!(
            out[i],
            reference_l(lo[i], hi[i], s[i]),
            "funnelshift_l {at}"
        );
        assert_eq!(
            out[N + i],
            reference_r(lo[i], hi[i], s[i]),
            "funnelshift_r {at}"
        );
        assert_eq!(out[2 * N + i], lo[i].rotate_left(8), "rotation {at}");
    }
}

fn arg(ptr: u64, shape: &[u64], strides: &[i64]) -> ArgValue {
    ArgValue::Array(ArrayArg {
        data: ptr,
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    })
}

#[test]
fn cpu_funnel_shifts_random() {
    let module = Module::parse("funnelshift.py", SRC).unwrap_or_else(|d| panic!("{d}"));
    let (types, _) = parse_signature(SIG).expect("signature");
    let k = module
        .cpu_kernel("funnel", &types)
        .unwrap_or_else(|e| panic!("{e}"));
    let (lo, hi, s) = inputs();
    let mut out = vec![0u32; 3 * N];
    let n = N as u64;
    let args = [
        arg(lo.as_ptr() as u64, &[n], &[1]),
        arg(hi.as_ptr() as u64, &[n], &[1]),
        arg(s.as_ptr() as u64, &[n], &[1]),
        arg(out.as_mut_ptr() as u64, &[3, n], &[n as i64, 1]),
    ];
    let mut cfg = CpuLaunch::new([N.div_ceil(128) as u32, 1, 1], [128, 1, 1]);
    cfg.threads = 2;
    // SAFETY: the arrays are alive across the launch and as large as their descriptors say.
    unsafe { k.launch_raw(&args, &cfg) }.unwrap_or_else(|e| panic!("{e}"));
    check(&lo, &hi, &s, &out);
}

#[test]
fn gpu_funnel_shifts_random() {
    use crate::gpu::{blocks, device, from_bytes, kernel, vec1};
    let Some(dev) = device("gpu_funnel_shifts_random") else {
        return;
    };
    let k = kernel(&dev, SRC, "funnel", SIG);
    let (lo, hi, s) = inputs();
    let (_lb, la) = vec1(&dev, &lo);
    let (_hb, ha) = vec1(&dev, &hi);
    let (_sb, sa) = vec1(&dev, &s);
    let (ob, _) = vec1(&dev, &vec![0u32; 3 * N]);
    let n = N as u64;
    let oa = arg(dev.address(&ob), &[3, n], &[n as i64, 1]);
    k.launch(&[la, ha, sa, oa], [blocks(N, 128), 1, 1], [128, 1, 1]);
    let out: Vec<u32> = from_bytes(&dev.download(&ob).expect("download"));
    check(&lo, &hi, &s, &out);
}
