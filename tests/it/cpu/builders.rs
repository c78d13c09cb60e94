//! `ElementwiseKernel::launch_cpu` and `ReductionKernel::launch_cpu` (docs/semantics.md
//! §22.4): the generated device kernels, run on the CPU back end on host memory, against a
//! reference computed here; a full reduction (the Grid strategy, whose partial results the
//! CPU keeps in host memory for the second kernel) and a column reduction.

use pydevice::kernels::{ElementwiseKernel, Operand, ReductionKernel};
use pydevice::runtime::DeviceArray;
use pydevice::types::Scalar;

fn host(v: &mut [f64], shape: &[u64]) -> DeviceArray {
    DeviceArray::contiguous(v.as_mut_ptr() as u64, Scalar::Float64, shape)
}

#[test]
fn cpu_elementwise_and_reduction_kernels_run_their_device_code() {
    let n = 1usize << 17;
    let mut x: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 - 50.0).collect();
    let mut y: Vec<f64> = (0..n).map(|i| ((i * 11) % 7) as f64).collect();
    let mut z = vec![0.0f64; n];
    let k = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd_cpu")
        .expect("kernel");
    let r = k
        .resolve(
            &[
                Operand::Array(host(&mut x, &[n as u64])),
                Operand::Array(host(&mut y, &[n as u64])),
            ],
            None,
        )
        .expect("resolve");
    let l = k.bind(&r, vec![host(&mut z, &[n as u64])]).expect("bind");
    // SAFETY: x, y and z are live host buffers of n float64 each.
    unsafe { k.launch_cpu(&l) }.expect("launch");
    for i in 0..n {
        assert_eq!(z[i], (x[i] - y[i]) * (x[i] - y[i]), "element {i}");
    }

    let sum = ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", "sum_cpu", None)
        .expect("kernel");
    // A full reduction of the n values (integers: the sum is exact in any order).
    let mut out = vec![0.0f64; 1];
    let r = sum
        .resolve(&[Operand::Array(host(&mut x, &[n as u64]))], None, false)
        .expect("resolve");
    let l = sum.bind(&r, vec![host(&mut out, &[])]).expect("bind");
    assert_eq!(format!("{:?}", l.strategy), "Grid");
    // SAFETY: as above.
    unsafe { sum.launch_cpu(&l) }.expect("launch");
    assert_eq!(out[0], x.iter().sum::<f64>());
    // Over the rows of a (30, 100) matrix: one sum per column.
    let mut cols = vec![0.0f64; 100];
    let r = sum
        .resolve(
            &[Operand::Array(host(&mut x, &[30, 100]))],
            Some(&[0]),
            false,
        )
        .expect("resolve");
    let l = sum.bind(&r, vec![host(&mut cols, &[100])]).expect("bind");
    // SAFETY: as above.
    unsafe { sum.launch_cpu(&l) }.expect("launch");
    for (c, got) in cols.iter().enumerate() {
        let want: f64 = (0..30).map(|row| x[row * 100 + c]).sum();
        assert_eq!(*got, want, "column {c}");
    }
}
