//! `pydevice run --cpu` (the kernels of `gpu::numba_gaps` run on the CPU back end through
//! `on_each_backend!` there).

use super::*;

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
