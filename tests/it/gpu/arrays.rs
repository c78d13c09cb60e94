//! GPU tests of array views and layouts: column and row views of a matrix, strided
//! sub-blocks, `reshape` without copying, arrays of structured (record) elements and
//! `align`ed struct fields, each on random inputs against a CPU reference.

use super::*;

fn fixture(name: &str) -> String {
    crate::support::read_repo_file(&format!("tests/fixtures/lang/{name}.py"))
}

fn close(got: f32, want: f32, what: &str) {
    assert!(
        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
        "{what}: {got} vs {want}"
    );
}

on_each_backend! {
fn column_and_row_views_of_a_matrix(dev) {
    let k = kernel(
        &dev,
        &fixture("array_views"),
        "views",
        "float32[:, ::1], float32[::1], float32[::1], float32[:, :], float32[::1]",
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
    let (bb, ba) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[ma, ca, ra, sa, ba], [1, 1, 1], [64, 1, 1]);
    let back: Vec<f32> = from_bytes(&dev.download(&bb).expect("download"));
    for i in 0..n {
        // up = m[::-1, c - 1], odd = m[i, ::-2] (odd[0] = m[i, c - 1], ceil(c / 2) long),
        // rev = odd[::-1] (its last element is odd[0]), m[-1:-4:-1, 0][1] = m[n - 2, 0].
        let want = m[(n - 1 - i) * c + c - 1]
            + m[i * c + c - 1] * 10.0
            + (q as f32) * 1000.0
            + m[i * c + c - 1] * 100.0
            + m[(n - 2) * c] * 0.5;
        close(back[i], want, &format!("back[{i}]"));
    }
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
}

on_each_backend! {
fn reshape_views_without_copying(dev) {
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
}

/// `sample` of tests/fixtures/lang/struct_align_defaults.py: `value: device.align(float32,
/// 16)` puts `value` at 16; 32 bytes aligned to 16.
#[repr(C, align(16))]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct Sample {
    tag: i8,
    _pad: [u8; 15],
    value: f32,
    weight: f32,
    count: i32,
}

fn score(s: &Sample) -> f32 {
    s.value * s.weight + s.count as f32 + f32::from(s.tag)
}

on_each_backend! {
fn aligned_struct_fields_and_defaults(dev) {
    let src = fixture("struct_align_defaults");
    let k = kernel(&dev, &src, "aligned", "float32[::1], float32[::1]");
    let n = 3000usize;
    let mut r = Rng(33);
    let vals: Vec<f32> = (0..n).map(|_| r.f32(-2.0, 2.0)).collect();
    let (_vb, va) = vec1(&dev, &vals);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[va, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let v = vals[i];
        // a = sample(1, v) → weight 1.5, count 0; c = sample(3, v, 0.5); b = (2, v, 1.5, 3).
        let a = v * 1.5 + 1.0;
        let c = v * 0.5 + 3.0;
        let b = v * 1.5 + 3.0 + 2.0;
        close(out[i], a + c * 10.0 + b * 100.0 + 3.0, &format!("out[{i}]"));
    }

    // The same struct in a global array: element stride 32, `value` at 16.
    let module = Module::parse("struct_align_defaults.py", &src).expect("parse");
    let sample = module.named_type("sample").expect("struct type");
    let layout = pydevice::abi::layout_of(&sample);
    assert_eq!(
        (layout.size as usize, layout.align as usize),
        (
            std::mem::size_of::<Sample>(),
            std::mem::align_of::<Sample>()
        )
    );
    let arr = pydevice::Type::array_of(&sample, 1, pydevice::types::Layout::C).expect("array");
    let (rest, _) = parse_signature("float32[::1]").expect("sig");
    let compiled = dev.compile(
        &module,
        "scale",
        &[vec![arr], rest].concat(),
        &CompileOptions {
            arch: arch_for(&dev),
            ..CompileOptions::default()
        },
    );
    let k = Kernel {
        dev: &dev,
        k: compiled,
    };
    let ss: Vec<Sample> = (0..n)
        .map(|_| Sample {
            tag: r.i32(-100, 100) as i8,
            value: r.f32(-3.0, 3.0),
            weight: r.f32(-3.0, 3.0),
            count: r.i32(-1000, 1000),
            ..Sample::default()
        })
        .collect();
    let (sb, sa) = vec1(&dev, &ss);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[sa, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let got: Vec<Sample> = from_bytes(&dev.download(&sb).expect("download"));
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let s = ss[i];
        close(out[i], score(&s), &format!("score {i}"));
        let want = Sample {
            weight: s.weight * 2.0,
            count: s.count + i32::from(s.tag),
            ..s
        };
        assert_eq!(got[i], want, "sample {i}");
    }
}
}

/// An element of `np.dtype([('x', '<f4'), ('y', '<f4'), ('n', '<i4'), ('w', '<f8')],
/// align=True)`: w at 16, 24 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct Rec {
    x: f32,
    y: f32,
    n: i32,
    w: f64,
}

on_each_backend! {
/// tests/fixtures/numba/records.py on random records, the array given as a plain descriptor,
/// through the CUDA Array Interface with a `descr` of fields, and as a uint8 array of the
/// records' bytes (how DLPack carries them).
fn structured_dtype_records_in_place(dev) {
    let path = crate::support::repo_path("tests/fixtures/numba/records.py");
    let src = std::fs::read_to_string(&path).expect("fixture");
    let sig = "Record(x[type=float32;offset=0],y[type=float32;offset=4],n[type=int32;offset=8],\
               w[type=float64;offset=16];24;True)[::1], float32[::1]";
    let k = kernel(&dev, &src, "shift", sig);
    let n = 4099usize;
    let mut r = Rng(34);
    let recs: Vec<Rec> = (0..n)
        .map(|_| Rec {
            x: r.f32(-10.0, 10.0),
            y: r.f32(-10.0, 10.0),
            n: r.i32(-1000, 1000),
            w: f64::from(r.f32(-10.0, 10.0)),
        })
        .collect();
    let check = |got: &[Rec], out: &[f32]| {
        for i in 0..n {
            let p = recs[i];
            let want = Rec {
                x: p.x + p.y,
                y: p.y,
                n: p.n * 2,
                w: p.w + f64::from(p.n * 2),
            };
            assert_eq!(got[i], want, "record {i}");
            close(out[i], want.x * 2.0 + p.y, &format!("out[{i}]"));
        }
    };
    let (rb, ra) = vec1(&dev, &recs);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[ra, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let got: Vec<Rec> = from_bytes(&dev.download(&rb).expect("download"));
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    check(&got, &out);

    // Through the CUDA Array Interface: typestr |V24 and the fields (padding included).
    let rb = dev.upload(&bytes_of(&recs)).expect("upload");
    let cai = pydevice::runtime::CudaArrayInterface::from_json(&format!(
        r#"{{"shape": [{n}], "typestr": "|V24", "data": [{}, false], "version": 3,
            "descr": [["x", "<f4"], ["y", "<f4"], ["n", "<i4"], ["", "|V4"], ["w", "<f8"]]}}"#,
        dev.address(&rb)
    ))
    .expect("cai");
    let ra = cai.to_arg(&k.k.abi().params[0]).expect("record argument");
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[ra, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let got: Vec<Rec> = from_bytes(&dev.download(&rb).expect("download"));
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    check(&got, &out);

    // As DLPack carries them: a uint8 array of shape (n, 24), the layout from the parameter.
    let rb = dev.upload(&bytes_of(&recs)).expect("upload");
    let raw = pydevice::runtime::DeviceArray::contiguous(
        dev.address(&rb),
        pydevice::types::Scalar::UInt8,
        &[n as u64, 24],
    );
    let ra = raw.to_arg(&k.k.abi().params[0]).expect("bytes as records");
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[ra, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let got: Vec<Rec> = from_bytes(&dev.download(&rb).expect("download"));
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    check(&got, &out);
}
}

on_each_backend! {
/// `pydevice run` with a structured `.npy` (as `np.save` writes an `align=True` dtype): the
/// records are uploaded, updated in place and written back with the same `descr`.
fn cli_runs_on_a_structured_npy(dev) {
    // The GPU is for the `pydevice` child to open; `--cpu` where this run is the CPU\'s.
    let cli = dev.cli_flags();
    drop(dev);
    use pydevice::runtime::npy::NpyArray;
    use pydevice::runtime::records::NpyRecords;
    let n = 1000usize;
    let mut r = Rng(35);
    let recs: Vec<Rec> = (0..n)
        .map(|_| Rec {
            x: r.f32(-10.0, 10.0),
            y: r.f32(-10.0, 10.0),
            n: r.i32(-1000, 1000),
            w: f64::from(r.f32(-10.0, 10.0)),
        })
        .collect();
    let sig = "Record(x[type=float32;offset=0],y[type=float32;offset=4],n[type=int32;offset=8],\
               w[type=float64;offset=16];24;True)";
    let pydevice::Type::Struct(record) = pydevice::types::signature::parse_type(sig).unwrap()
    else {
        panic!("not a record")
    };
    let dir = std::env::temp_dir().join(format!("pyd-records-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (rin, rout, oin, oout) = (
        dir.join("recs.npy"),
        dir.join("recs_out.npy"),
        dir.join("out.npy"),
        dir.join("out_out.npy"),
    );
    let npy = NpyRecords {
        record: *record,
        shape: vec![n as u64],
        fortran_order: false,
        data: bytes_of(&recs),
    };
    std::fs::write(&rin, npy.to_bytes()).unwrap();
    let zeros = NpyArray {
        dtype: pydevice::types::Scalar::Float32,
        shape: vec![n as u64],
        fortran_order: false,
        data: vec![0; 4 * n],
    };
    std::fs::write(&oin, zeros.to_bytes()).unwrap();
    let fixture = crate::support::repo_path("tests/fixtures/numba/records.py")
        .display()
        .to_string();
    let arg = |k: &str, p: &std::path::Path| format!("{k}={}", p.display());
    let bin = crate::support::pydevice_bin();
    let out = std::process::Command::new(bin)
        .args([
            "run", &fixture, "--entry", "shift", "--grid", "8", "--block", "128",
        ])
        .args(["--arg", &arg("recs", &rin), "--arg", &arg("out", &oin)])
        .args(["--out", &arg("recs", &rout), "--out", &arg("out", &oout)])
        .args(cli)
        .output()
        .expect("pydevice run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = NpyRecords::parse(&std::fs::read(&rout).unwrap()).expect("records back");
    assert_eq!(got.record, npy.record);
    let got: Vec<Rec> = from_bytes(&got.data);
    let outs = NpyArray::parse(&std::fs::read(&oout).unwrap()).expect("out back");
    let outs: Vec<f32> = from_bytes(&outs.data);
    for i in 0..n {
        let p = recs[i];
        let want = Rec {
            x: p.x + p.y,
            y: p.y,
            n: p.n * 2,
            w: p.w + f64::from(p.n * 2),
        };
        assert_eq!(got[i], want, "record {i}");
        close(outs[i], want.x * 2.0 + p.y, &format!("out[{i}]"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
}

const RESHAPE_CHILD: &str = "PYDEVICE_GPU_RESHAPE_TRAP_CHILD";

on_each_backend! {
/// A reshape of an array that is not contiguous at run time (a padded C matrix: row stride
/// larger than the row) traps instead of making a wrong view; the launch reports a fault.
/// The fault ruins the context, so on a GPU the launch runs in a child process. On the CPU
/// back end the reshape records a `ValueError` at its line and the view is empty.
fn reshape_of_a_padded_matrix_traps(dev) {
    if dev.is_cpu() {
        reshape_trap_run(&dev);
        return;
    }
    drop(dev);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "gpu::arrays::reshape_trap_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(RESHAPE_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("RESHAPE TRAPPED: "), "{stdout}");
    assert!(stdout.contains("CONTIGUOUS OK"), "{stdout}");
}
}

/// Runs only as the child of [`reshape_of_a_padded_matrix_traps`].
#[test]
fn reshape_trap_child() {
    if std::env::var_os(RESHAPE_CHILD).is_none() {
        return;
    }
    reshape_trap_run(&Dev::Gpu(Device::open(0).unwrap()));
}

/// The launches of [`reshape_of_a_padded_matrix_traps`]: a contiguous matrix flattened, then
/// a padded one, whose reshape must fail.
fn reshape_trap_run(dev: &Dev) {
    let src = "from cuda import device\n\n@device.kernel\ndef flat(m, out):\n    \
               f = m.reshape(-1)\n    i = device.tid(1)\n    if i < len(f):\n        \
               out[i] = f[i]\n";
    let k = kernel(dev, src, "flat", "float32[:, ::1], float32[::1]");
    let (rows, cols) = (4usize, 6usize);
    let data: Vec<f32> = (0..rows * 8).map(|x| x as f32).collect();
    // First a contiguous 4 x 8 matrix: the reshape is a plain view.
    let (_mb, ma) = array(dev, &data, &[rows as u64, 8], &[8, 1]);
    let (ob, oa) = vec1(dev, &vec![0f32; rows * 8]);
    k.launch(&[ma, oa], [1, 1, 1], [64, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    assert_eq!(out, data);
    println!("CONTIGUOUS OK");
    // Then the first 6 columns of it: row stride 8, not 6.
    let (_pb, pa) = array(dev, &data, &[rows as u64, cols as u64], &[8, 1]);
    let (ob, oa) = vec1(dev, &vec![0f32; rows * cols]);
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [64, 1, 1],
        shared_bytes: 0,
    };
    if dev.is_cpu() {
        dev.launch(&k.k, &[pa, oa], &cfg).expect("launch");
        let err = dev.check_errors(&k.k).expect_err("the reshape must fail");
        let text = err.to_string();
        assert!(
            text.contains("ValueError: cannot reshape") && text.contains(":5:"),
            "{text}"
        );
        let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
        assert!(
            out.iter().all(|x| *x == 0.0),
            "nothing read through the view"
        );
        return;
    }
    let err = match dev.launch(&k.k, &[pa, oa], &cfg) {
        Err(e) => e,
        Ok(()) => dev.synchronize().expect_err("the reshape must trap"),
    };
    println!("RESHAPE TRAPPED: {err}");
    assert!(!err.context_usable(), "{err:?}");
}

const CHECKED_ROWS: &str = r#"from cuda import device

@device.kernel(bounds_check=True)
def row_sums(m, out, k):
    i = device.tid(1)
    if i < len(out):
        row = m[i + k]
        s = 0.0
        for j in range(len(row)):
            s += row[j]
        out[i] = s + float(len(row))
"#;

on_each_backend! {
/// With `bounds_check=True`, a row view whose index is out of range is recorded (line 7) and
/// is empty, so the loop over it reads nothing.
fn bounds_checked_views_are_empty_when_out_of_range(dev) {
    let k = kernel(
        &dev,
        CHECKED_ROWS,
        "row_sums",
        "float32[:, ::1], float32[::1], int32",
    );
    let (n, c) = (300usize, 7usize);
    let mut r = Rng(36);
    let m: Vec<f32> = (0..n * c).map(|_| r.f32(-1.0, 1.0)).collect();
    let (_mb, ma) = array(&dev, &m, &[n as u64, c as u64], &[c as i64, 1]);
    let (ob, oa) = vec1(&dev, &vec![-1f32; n]);
    k.launch(&[ma.clone(), oa, ArgValue::Int(0)], [3, 1, 1], [128, 1, 1]);
    dev.check_bounds(&k.k).expect("in range");
    let shift = 5usize;
    let (ob2, oa2) = vec1(&dev, &vec![-1f32; n]);
    k.launch(
        &[ma, oa2, ArgValue::Int(shift as i64)],
        [3, 1, 1],
        [128, 1, 1],
    );
    let e = dev
        .check_bounds(&k.k)
        .expect_err("rows past the end are reported");
    // The report names the source position as file:line:column.
    assert!(e.to_string().contains(":7:"), "{e}");
    for (buf, k) in [(ob, 0usize), (ob2, shift)] {
        let out: Vec<f32> = from_bytes(&dev.download(&buf).expect("download"));
        for i in 0..n {
            let want = if i + k < n {
                m[(i + k) * c..(i + k + 1) * c]
                    .iter()
                    .fold(0.0f32, |s, x| s + x)
                    + c as f32
            } else {
                0.0
            };
            close(out[i], want, &format!("shift {k}, row {i}"));
        }
    }
}
}

#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct Pos {
    x: f32,
    y: f64,
}

/// `np.dtype([('id', 'i1'), ('pos', np.dtype([('x', '<f4'), ('y', '<f8')], align=True)),
/// ('k', '<u2')], align=True)`: pos at 8, k at 24, 32 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct Nested {
    id: i8,
    pos: Pos,
    k: u16,
}

on_each_backend! {
/// tests/fixtures/numba/records_nested.py: nested record fields written in place, through
/// the CUDA Array Interface with a nested `descr`.
fn nested_records_in_place(dev) {
    let path = crate::support::repo_path("tests/fixtures/numba/records_nested.py");
    let src = std::fs::read_to_string(&path).expect("fixture");
    let sig = "Record(id[type=int8;offset=0],pos[type=Record(x[type=float32;offset=0],\
               y[type=float64;offset=8];16;True);offset=8],k[type=uint16;offset=24];32;True)[::1], \
               float64[::1]";
    let k = kernel(&dev, &src, "move", sig);
    let n = 2049usize;
    let mut r = Rng(37);
    let recs: Vec<Nested> = (0..n)
        .map(|_| Nested {
            id: r.i32(-128, 128) as i8,
            pos: Pos {
                x: r.f32(-10.0, 10.0),
                y: f64::from(r.f32(-10.0, 10.0)),
            },
            k: r.i32(0, 65536) as u16,
        })
        .collect();
    let rb = dev.upload(&bytes_of(&recs)).expect("upload");
    let cai = pydevice::runtime::CudaArrayInterface::from_json(&format!(
        r#"{{"shape": [{n}], "typestr": "|V32", "data": [{}, false], "version": 3,
            "descr": [["id", "|i1"], ["", "|V7"],
                      ["pos", [["x", "<f4"], ["", "|V4"], ["y", "<f8"]]],
                      ["k", "<u2"], ["", "|V6"]]}}"#,
        dev.address(&rb)
    ))
    .expect("cai");
    let ra = cai.to_arg(&k.k.abi().params[0]).expect("record argument");
    let (ob, oa) = vec1(&dev, &vec![0f64; n]);
    k.launch(&[ra, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let got: Vec<Nested> = from_bytes(&dev.download(&rb).expect("download"));
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let p = recs[i];
        let want = Nested {
            id: p.id,
            pos: Pos {
                x: p.pos.x * 2.0,
                y: p.pos.y + f64::from(p.id),
            },
            k: p.k.wrapping_add(1),
        };
        assert_eq!(got[i], want, "record {i}");
        let o = want.pos.y + f64::from(want.pos.x) + f64::from(want.k);
        assert!(
            (out[i] - o).abs() <= 1e-12 * o.abs().max(1.0),
            "out[{i}]: {} vs {o}",
            out[i]
        );
    }
}
}

on_each_backend! {
/// `range` loops from a start of unknown sign (`lang/range_versioned.py`): the first loop is
/// compiled twice (§5.1), and about half the threads start it below zero, so both copies run;
/// negative loop variables and negative gathered indices must still wrap as Python's do.
fn versioned_range_loops_wrap_negative_indices(dev) {
    let k = kernel(
        &dev,
        &fixture("range_versioned"),
        "gather",
        "int32[::1], int32[::1], float32[::1], float32[::1]",
    );
    let (n, len) = (1000usize, 4096usize);
    let mut r = Rng(77);
    let bounds: Vec<i32> = (0..=n).map(|_| r.i32(-300, 300)).collect();
    let idx: Vec<i32> = (0..len).map(|_| r.i32(-(len as i32), len as i32)).collect();
    let data: Vec<f32> = (0..len).map(|_| r.f32(-1.0, 1.0)).collect();
    let (_b, ba) = vec1(&dev, &bounds);
    let (_i, ia) = vec1(&dev, &idx);
    let (_d, da) = vec1(&dev, &data);
    let (ob, oa) = vec1(&dev, &vec![f32::NAN; n]);
    k.launch(&[ba, ia, da, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    // Python's a[v]: a negative v counts from the end.
    let at = |v: i64, n: usize| {
        if v < 0 {
            (v + n as i64) as usize
        } else {
            v as usize
        }
    };
    // Threads whose loop ran from a negative start and from a non-negative one.
    let (mut from_negative, mut from_positive) = (0, 0);
    for i in 0..n {
        let (lo, hi) = (i64::from(bounds[i]), i64::from(bounds[i + 1]));
        let mut terms: Vec<f64> = Vec::new();
        for k in (lo..hi).step_by(4) {
            let g = i64::from(idx[at(k, len)]);
            terms.push(f64::from(data[at(k, len)]) * f64::from(data[at(g, len)]));
        }
        if lo < hi {
            if lo < 0 {
                from_negative += 1;
            } else {
                from_positive += 1;
            }
        }
        terms.extend((i..len).step_by(64).map(|m| f64::from(data[m])));
        terms.extend((-3i64..0).map(|m| f64::from(data[at(m, len)])));
        for row in lo..2 {
            terms.extend((0..2).map(|c| f64::from(data[at(row + c, len)])));
        }
        let last = i64::from(idx[at(i as i64 - 1, len)]);
        for _ in lo..4 {
            terms.push(f64::from(data[at(last, len)]));
        }
        let want: f64 = terms.iter().sum();
        let scale: f64 = terms.iter().map(|t| t.abs()).sum::<f64>().max(1.0);
        assert!(
            (f64::from(out[i]) - want).abs() <= 1e-5 * scale,
            "out[{i}] (start {lo}, stop {hi}): {} vs {want}",
            out[i]
        );
    }
    // Both copies of the versioned loop ran, many times.
    assert!(
        from_negative > 100 && from_positive > 100,
        "{from_negative} {from_positive}"
    );
}
}

on_each_backend! {
/// `@kernel(wraparound=False)` (`lang/wraparound_off.py`): a CSR matrix-vector product whose
/// gathers and `@func` index as C does, on a random matrix against the CPU.
fn wraparound_off_gathers_as_c_does(dev) {
    let k = kernel(
        &dev,
        &fixture("wraparound_off"),
        "spmv",
        "int32[::1], int32[::1], float32[::1], float32[::1], float32[::1]",
    );
    let (rows, cols) = (3000usize, 5000usize);
    let mut r = Rng(5);
    let mut indptr = vec![0i32];
    for _ in 0..rows {
        indptr.push(indptr.last().unwrap() + r.i32(0, 80));
    }
    let nnz = *indptr.last().unwrap() as usize;
    let indices: Vec<i32> = (0..nnz).map(|_| r.i32(0, cols as i32)).collect();
    let data: Vec<f32> = (0..nnz).map(|_| r.f32(-1.0, 1.0)).collect();
    let x: Vec<f32> = (0..cols).map(|_| r.f32(-1.0, 1.0)).collect();
    let (_p, pa) = vec1(&dev, &indptr);
    let (_i, ia) = vec1(&dev, &indices);
    let (_d, da) = vec1(&dev, &data);
    let (_x, xa) = vec1(&dev, &x);
    let (yb, ya) = vec1(&dev, &vec![f32::NAN; rows]);
    // A warp a row: 8 rows a block of 256.
    k.launch(&[pa, ia, da, xa, ya], [blocks(rows, 8), 1, 1], [256, 1, 1]);
    let y: Vec<f32> = from_bytes(&dev.download(&yb).expect("download"));
    for row in 0..rows {
        let (lo, hi) = (indptr[row] as usize, indptr[row + 1] as usize);
        let terms = (lo..hi).map(|k| f64::from(data[k]) * f64::from(x[indices[k] as usize]));
        let want: f64 = terms.clone().sum::<f64>() + f64::from(x[row]);
        let scale = terms.map(f64::abs).sum::<f64>() + 1.0;
        assert!(
            (f64::from(y[row]) - want).abs() <= 1e-5 * scale,
            "y[{row}]: {} vs {want}",
            y[row]
        );
    }
}
}

on_each_backend! {
/// llm.c's `permute_kernel` shape (issue 31): a 4-D index split by `//` and `%` of `int32`
/// shapes and rebuilt as `b * N * 3 * NH * d + ...`. SignVersionPass compiles it twice; the
/// copy taken for positive shapes has its wraps decided in a second condition round and its
/// divisions unsigned (pipeline.cpp). Random positive shapes, against the CPU's gather.
fn split_index_permute_with_positive_shapes(dev) {
    let src = r#"from cuda import device

@device.kernel
def permute(q, k, v, inp, B, N, NH, d):
    idx = device.block_idx.x * device.block_dim.x + device.thread_idx.x
    if idx < B * NH * N * d:
        b = idx // (NH * N * d)
        rest = idx % (NH * N * d)
        nh_ = rest // (N * d)
        rest = rest % (N * d)
        n = rest // d
        d_ = rest % d
        inp_idx = (b * N * 3 * NH * d) + (n * 3 * NH * d) + (nh_ * d) + d_
        q[idx] = inp[inp_idx]
        k[idx] = inp[inp_idx + NH * d]
        v[idx] = inp[inp_idx + 2 * (NH * d)]
"#;
    let kern = kernel(
        &dev,
        src,
        "permute",
        "float32[::1], float32[::1], float32[::1], float32[::1], int32, int32, int32, int32",
    );
    let mut r = Rng(31);
    for _ in 0..4 {
        let (b, n, nh, d) = (
            r.i32(1, 4) as usize,
            r.i32(1, 70) as usize,
            r.i32(1, 7) as usize,
            r.i32(1, 40) as usize,
        );
        let total = b * n * nh * d;
        let inp: Vec<f32> = (0..3 * total).map(|_| r.f32(-1.0, 1.0)).collect();
        let (_ib, ia) = vec1(&dev, &inp);
        let outs: Vec<_> = (0..3).map(|_| vec1(&dev, &vec![f32::NAN; total])).collect();
        let args = vec![
            outs[0].1.clone(),
            outs[1].1.clone(),
            outs[2].1.clone(),
            ia,
            ArgValue::Int(b as i64),
            ArgValue::Int(n as i64),
            ArgValue::Int(nh as i64),
            ArgValue::Int(d as i64),
        ];
        kern.launch(&args, [blocks(total, 128), 1, 1], [128, 1, 1]);
        for (which, (buf, _)) in outs.iter().enumerate() {
            let got: Vec<f32> = from_bytes(&dev.download(buf).expect("download"));
            for (idx, got) in got.iter().enumerate() {
                let (bb, rest) = (idx / (nh * n * d), idx % (nh * n * d));
                let (h, rest) = (rest / (n * d), rest % (n * d));
                let (nn, dd) = (rest / d, rest % d);
                let at = bb * n * 3 * nh * d + nn * 3 * nh * d + which * nh * d + h * d + dd;
                assert_eq!(
                    got.to_bits(),
                    inp[at].to_bits(),
                    "shape ({b}, {n}, {nh}, {d}), output {which}, idx {idx}"
                );
            }
        }
    }
}
}

on_each_backend! {
/// `tests/fixtures/lang/sign_versioning.py`'s `split_index` with negative shapes: the condition of
/// SignVersionPass fails (`T * C > 0 and C > 0` does not hold), so the original copy runs,
/// with Python's floor division and negative-index wrap; positive shapes take the fast copy.
/// Against the CPU.
fn split_index_with_a_negative_shape_takes_the_original_copy(dev) {
    let k = kernel(
        &dev,
        &fixture("sign_versioning"),
        "split_index",
        "float32[::1], float32[::1], int32, int32",
    );
    let n = 4096usize;
    let mut r = Rng(5);
    let inp: Vec<f32> = (0..n).map(|_| r.f32(-1.0, 1.0)).collect();
    let (_ib, ia) = vec1(&dev, &inp);
    for (t, c) in [(-16i64, 8i64), (-4, -16), (-1, -64), (16, 8), (3, 5)] {
        let (ob, oa) = vec1(&dev, &vec![f32::NAN; n]);
        k.launch(
            &[oa, ia.clone(), ArgValue::Int(t), ArgValue::Int(c)],
            [blocks(n, 128), 1, 1],
            [128, 1, 1],
        );
        let got: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
        // Python's floor division and modulo (no shape here is 0).
        let fdiv = |x: i64, y: i64| x.div_euclid(y) - i64::from(y < 0 && x.rem_euclid(y) != 0);
        let fmod = |x: i64, y: i64| x - y * fdiv(x, y);
        for idx in 0..n as i64 {
            let tc = t * c;
            let b = fdiv(idx, tc);
            let tt = fdiv(fmod(idx, tc), c);
            let cc = fmod(idx, c);
            let mut at = b * t * c + cc * t + tt;
            if at < 0 {
                at += n as i64;
            }
            assert!((0..n as i64).contains(&at), "T={t} C={c} idx {idx}: index {at}");
            assert_eq!(
                got[idx as usize].to_bits(),
                inp[at as usize].to_bits(),
                "T={t} C={c} idx {idx}"
            );
        }
    }
}
}
