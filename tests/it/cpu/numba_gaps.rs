//! The kernels of `gpu::numba_gaps` (what numba-cuda's own suite needed next) on the CPU
//! back end, against the same references: `cuda.bf16`'s NaN rules, `hisnan`/`hisinf`,
//! `float("nan")`, and numba's `cuda.cg.this_grid().sync()`.

use super::*;
use crate::gpu::numba_gaps::{
    BF16_EXTREMES_SIG, ENUMERATE_RANGE_SIG, HEAT_SIG, bf16_inputs, check_bf16_extremes,
    enumerate_range_inputs, enumerate_range_want, heat_want,
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

/// `pydevice run --cpu`: the launch of `pydevice run` on the CPU back end, on the same `.npy`
/// files (the C-order and the Fortran-order array both written back), and `--bench` timing
/// launches there; `--arch` is a GPU option and is refused with it.
#[test]
fn cli_run_on_the_cpu() {
    use pydevice::runtime::npy::NpyArray;
    use pydevice::types::Scalar;
    let dir = std::env::temp_dir().join(format!("pydevice_cli_cpu_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let n = 1000usize;
    let mut r = Rng(9);
    let a: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| r.f32(-10.0, 10.0)).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let npy = |v: &[f32]| NpyArray {
        dtype: Scalar::Float32,
        shape: vec![v.len() as u64],
        fortran_order: false,
        data: bytes(v),
    };
    let (pa, pb, pc, po) = (
        dir.join("a.npy"),
        dir.join("b.npy"),
        dir.join("c.npy"),
        dir.join("o.npy"),
    );
    std::fs::write(&pa, npy(&a).to_bytes()).unwrap();
    std::fs::write(&pb, npy(&b).to_bytes()).unwrap();
    std::fs::write(&pc, npy(&vec![0.0; n]).to_bytes()).unwrap();
    let example = crate::support::repo_path("examples/vector_add.py");
    let arg = |k: &str, p: &std::path::Path| format!("{k}={}", p.display());
    let out = std::process::Command::new(crate::support::pydevice_bin())
        .arg("run")
        .arg(&example)
        .args([
            "--entry",
            "vector_add",
            "--grid",
            "4",
            "--block",
            "256",
            "--cpu",
        ])
        .args([
            "--arg",
            &arg("a", &pa),
            "--arg",
            &arg("b", &pb),
            "--arg",
            &arg("c", &pc),
        ])
        .args(["--out", &arg("c", &po), "--bench", "3"])
        .output()
        .expect("pydevice run --cpu");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"median_us\":") && stdout.contains("\"backend\":\"cpu\""),
        "{stdout}"
    );
    let got = NpyArray::parse(&std::fs::read(&po).unwrap()).expect("c back");
    let got: Vec<f32> = got
        .data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for i in 0..n {
        assert_eq!(got[i], a[i] + b[i], "c[{i}]");
    }
    let refused = std::process::Command::new(crate::support::pydevice_bin())
        .arg("run")
        .arg(&example)
        .args([
            "--entry",
            "vector_add",
            "--grid",
            "4",
            "--block",
            "256",
            "--cpu",
        ])
        .args(["--arch", "sm_90"])
        .output()
        .expect("pydevice run --cpu --arch");
    assert_eq!(refused.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cpu_numba_enumerate_range_random() {
    let k = compile(
        &fixture("numba/enumerate_range.py"),
        "enumerate_range",
        ENUMERATE_RANGE_SIG,
    );
    let n = 500usize;
    let (x, y, a) = enumerate_range_inputs(n);
    let (_xb, xa) = vec1(&x);
    let (_yb, ya) = vec1(&y);
    let (_ab, aa) = vec1(&a);
    let (ob, oa) = array(&vec![0i64; 4 * n], &[4, n as u64], &[n as i64, 1]);
    run(&k, &[xa, ya, aa, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    assert_eq!(ob.read::<i64>(), enumerate_range_want(&x, &y, &a));
}
