//! The kernels of `gpu::numba_gaps` (what numba-cuda's own suite needed next) on the CPU
//! back end, against the same references: `cuda.bf16`'s NaN rules, `hisnan`/`hisinf`,
//! `float("nan")`, and numba's `cuda.cg.this_grid().sync()`.

use super::*;
use crate::gpu::numba_gaps::{
    BF16_EXTREMES_SIG, HEAT_SIG, bf16_inputs, check_bf16_extremes, heat_want,
};

#[test]
fn cpu_numba_bf16_extremes_random() {
    let k = compile(
        &fixture("numba/bf16_extremes.py"),
        "bf16_extremes",
        BF16_EXTREMES_SIG,
    );
    let n = 3001usize;
    let (a, b) = bf16_inputs(n, 97);
    let (_ab, aa) = vec1(&a);
    let (_bb, ba) = vec1(&b);
    let (ob, oa) = array(&vec![0f32; 6 * n], &[6, n as u64], &[n as i64, 1]);
    let (ib, ia) = vec1(&vec![7i32; n]);
    run(&k, &[aa, ba, oa, ia], [blocks(n, 128), 1, 1], [128, 1, 1]);
    check_bf16_extremes(&a, &b, &ob.read::<f32>(), &ib.read::<i32>());
}

#[test]
fn cpu_numba_cg_grid_sync_heat() {
    let k = compile(&fixture("numba/cg_grid_sync.py"), "heat", HEAT_SIG);
    let n = 1000usize;
    let mut r = Rng(5);
    let init: Vec<f64> = (0..n).map(|_| f64::from(r.f32(0.0, 100.0))).collect();
    let (b0, a0) = vec1(&init);
    let (b1, a1) = vec1(&vec![0f64; n]);
    let steps = 301usize;
    run(
        &k,
        &[a0, a1, ArgValue::Int(steps as i64), ArgValue::Float(0.25)],
        [blocks(n, 256), 1, 1],
        [256, 1, 1],
    );
    let (w0, w1) = heat_want(&init, steps, 0.25);
    for (got, want) in [(b0.read::<f64>(), w0), (b1.read::<f64>(), w1)] {
        for i in 0..n {
            assert!(
                (got[i] - want[i]).abs() <= 1e-12 * want[i].abs().max(1.0),
                "[{i}]: {} vs {}",
                got[i],
                want[i]
            );
        }
    }
}
