//! GPU tests of array views and layouts: column and row views of a matrix, strided
//! sub-blocks, `reshape` without copying, arrays of structured (record) elements and
//! `align`ed struct fields, each on random inputs against a CPU reference.

use super::*;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/lang/{name}.py",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn close(got: f32, want: f32, what: &str) {
    assert!(
        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
        "{what}: {got} vs {want}"
    );
}

#[test]
fn column_and_row_views_of_a_matrix() {
    let Some(dev) = device("column_and_row_views_of_a_matrix") else {
        return;
    };
    let k = kernel(
        &dev,
        &fixture("array_views"),
        "views",
        "float32[:, ::1], float32[::1], float32[::1], float32[:, :]",
    );
    let (n, c) = (37usize, 53usize);
    let mut r = Rng(31);
    let m: Vec<f32> = (0..n * c).map(|_| r.f32(-4.0, 4.0)).collect();
    let (_mb, ma) = array(&dev, &m, &[n as u64, c as u64], &[c as i64, 1]);
    let (cb, ca) = vec1(&dev, &vec![0f32; c]);
    let (rb, ra) = vec1(&dev, &vec![0f32; n]);
    let q = c.div_ceil(2);
    // The output block is Fortran-ordered, so the kernel's `sub[i, j]` uses both strides.
    let (sb, sa) = array(
        &dev,
        &vec![0f32; (n - 1) * q],
        &[(n - 1) as u64, q as u64],
        &[1, (n - 1) as i64],
    );
    k.launch(&[ma, ca, ra, sa], [1, 1, 1], [64, 1, 1]);
    let colsum: Vec<f32> = from_bytes(&dev.download(&cb).expect("download"));
    let rowsum: Vec<f32> = from_bytes(&dev.download(&rb).expect("download"));
    let sub: Vec<f32> = from_bytes(&dev.download(&sb).expect("download"));
    for j in 0..c {
        let want: f32 = (0..n).fold(0.0, |s, i| s + m[i * c + j]);
        close(colsum[j], want, &format!("column {j}"));
    }
    for i in 0..n {
        let row = &m[i * c..(i + 1) * c];
        let want = row.iter().fold(0.0f32, |s, x| s + x) + row[c - 1] * 100.0;
        close(rowsum[i], want, &format!("row {i}"));
    }
    for i in 0..n - 1 {
        for j in 0..q {
            let x = m[(i + 1) * c + 2 * j];
            close(sub[j * (n - 1) + i], x * 2.0 + x, &format!("sub[{i}, {j}]"));
        }
    }
}

#[test]
fn reshape_views_without_copying() {
    let Some(dev) = device("reshape_views_without_copying") else {
        return;
    };
    let k = kernel(
        &dev,
        &fixture("array_reshape"),
        "reshaped",
        "float32[::1], float32[::1], float32[:, ::1]",
    );
    let rows = 50usize;
    let (gr, gc) = (7usize, 9usize);
    let mut r = Rng(32);
    let flat: Vec<f32> = (0..rows * 4).map(|_| r.f32(-8.0, 8.0)).collect();
    let grid: Vec<f32> = (0..gr * gc).map(|_| r.f32(-8.0, 8.0)).collect();
    let (_fb, fa) = vec1(&dev, &flat);
    let (ob, oa) = vec1(&dev, &vec![0f32; rows]);
    let (gb, ga) = array(&dev, &grid, &[gr as u64, gc as u64], &[gc as i64, 1]);
    k.launch(&[fa, oa, ga], [1, 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let g: Vec<f32> = from_bytes(&dev.download(&gb).expect("download"));
    // Thread 0 overwrites out[0] with f[1, 2] + c3[0, 1, 0] * 100 = t[5] + t[3] * 100.
    close(out[0], 305.0, "out[0]");
    for i in 1..rows {
        close(
            out[i],
            flat[4 * i] + flat[4 * i + 3] * 10.0,
            &format!("out[{i}]"),
        );
    }
    for i in 0..gr * gc {
        assert_eq!(g[i], grid[i] + 1.0, "grid element {i}");
    }
}
