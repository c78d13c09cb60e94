//! Records with sub-array fields (numba's nested arrays, docs/semantics.md §5.16.1): the
//! fixtures under tests/fixtures/{numba,lang}/records_subarray*.py run on random records and
//! are compared with a CPU reference, through the library and through `pydevice run` with
//! structured `.npy` files.

use super::*;
use pydevice::runtime::npy::NpyArray;
use pydevice::runtime::records::NpyRecords;

fn fixture(path: &str) -> String {
    std::fs::read_to_string(crate::support::repo_path(&format!("tests/fixtures/{path}")))
        .expect("fixture")
}

fn close(got: f32, want: f64, what: &str) {
    let tol = 1e-5 * want.abs().max(1.0);
    assert!(
        (f64::from(got) - want).abs() <= tol,
        "{what}: {got} vs {want}"
    );
}

/// `np.dtype([('i', np.int32), ('j', np.float32, (3, 2))])`: packed, j at 4, 28 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct IjRec {
    i: i32,
    j: [[f32; 2]; 3],
}

/// `np.dtype([('g', 'i4'), ('h', 'f4', (2,))], align=True)`: h at 4, 12 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct GhRec {
    g: i32,
    h: [f32; 2],
}

const NESTED_SIG: &str = "Record(i[type=int32;offset=0],j[type=nestedarray(float32, (3, 2));\
    offset=4];28;False)[::1], Record(g[type=int32;offset=0],h[type=nestedarray(float32, \
    (2,));offset=4];12;True), float32[::1]";

fn random_ij(n: usize, seed: u64) -> Vec<IjRec> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| IjRec {
            i: r.i32(-1000, 1000),
            j: [(); 3].map(|_| [r.f32(-10.0, 10.0), r.f32(-10.0, 10.0)]),
        })
        .collect()
}

/// What numba/records_subarray.py's `nested` does to record `p` and `rec`: the record
/// after the kernel and `out[i]`.
fn nested_reference(p: IjRec, rec: GhRec) -> (IjRec, f64) {
    let mut s = 0f32;
    for row in p.j {
        s += row[0] + row[1];
    }
    let mut acc = f64::from(s) + f64::from(rec.h[1]) + 3.0 + 2.0 + f64::from(rec.g);
    acc += f64::from(rec.h[0]);
    acc += f64::from(rec.h[1]);
    let mut q = p;
    q.j[1][0] = p.i as f32;
    q.j[2][1] = rec.h[0];
    q.j[0][1] = (rec.h[0] + rec.h[1]) + p.j[0][0];
    (q, f64::from(acc as f32))
}

on_each_backend! {
/// numba-cuda test_record_dtype's operations on sub-array fields: read and write `r.j[k, l]`
/// of array elements, read those of a record argument (by value here), `len`, `.shape`,
/// iteration, a row view and a view passed to a device function.
fn subarray_fields_read_and_write_in_place(dev) {
    let k = kernel(
        &dev,
        &fixture("numba/records_subarray.py"),
        "nested",
        NESTED_SIG,
    );
    let n = 3001usize;
    let recs = random_ij(n, 61);
    let rec = GhRec {
        g: 17,
        h: [1.25, -3.5],
    };
    let (rb, ra) = vec1(&dev, &recs);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(
        &[ra, ArgValue::Bytes(bytes_of(&[rec])), oa],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let got: Vec<IjRec> = from_bytes(&dev.download(&rb).expect("download"));
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let (want, o) = nested_reference(recs[i], rec);
        assert_eq!(got[i], want, "record {i}");
        close(out[i], o, &format!("out[{i}]"));
    }
}
}

on_each_backend! {
/// The same kernel through `pydevice run`: structured `.npy` files with a sub-array field
/// (as `np.save` writes them), the record argument as a zero-dimensional one (passed by
/// reference, a numba module's record; the kernel only reads it).
fn cli_runs_on_subarray_records(dev) {
    // The GPU is for the `pydevice` child to open; `--cpu` where this run is the CPU\'s.
    let cli = dev.cli_flags();
    drop(dev);
    let n = 777usize;
    let recs = random_ij(n, 62);
    let rec = GhRec {
        g: -4,
        h: [0.5, 8.0],
    };
    let types = pydevice::types::signature::parse_signature(NESTED_SIG)
        .expect("signature")
        .0;
    let record = |t: &pydevice::Type| match t {
        pydevice::Type::Struct(st) => (**st).clone(),
        pydevice::Type::Array(a) => match &a.dtype {
            pydevice::types::DType::Struct(st) => (**st).clone(),
            _ => panic!("not records"),
        },
        _ => panic!("not records"),
    };
    let dir = std::env::temp_dir().join(format!("pyd-subarray-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |f: &str| dir.join(f);
    let recs_npy = NpyRecords {
        record: record(&types[0]),
        shape: vec![n as u64],
        fortran_order: false,
        data: bytes_of(&recs),
    };
    std::fs::write(path("recs.npy"), recs_npy.to_bytes()).unwrap();
    let rec_npy = NpyRecords {
        record: record(&types[1]),
        shape: vec![],
        fortran_order: false,
        data: bytes_of(&[rec]),
    };
    std::fs::write(path("rec.npy"), rec_npy.to_bytes()).unwrap();
    let zeros = NpyArray {
        dtype: pydevice::types::Scalar::Float32,
        shape: vec![n as u64],
        fortran_order: false,
        data: vec![0; 4 * n],
    };
    std::fs::write(path("out.npy"), zeros.to_bytes()).unwrap();
    let fx = crate::support::repo_path("tests/fixtures/numba/records_subarray.py")
        .display()
        .to_string();
    let arg = |k: &str, f: &str| format!("{k}={}", path(f).display());
    let bin = crate::support::pydevice_bin();
    let out = std::process::Command::new(bin)
        .args([
            "run", &fx, "--entry", "nested", "--grid", "7", "--block", "128",
        ])
        .args([
            "--arg",
            &arg("recs", "recs.npy"),
            "--arg",
            &arg("rec", "rec.npy"),
        ])
        .args(["--arg", &arg("out", "out.npy")])
        .args(["--out", &arg("recs", "recs_out.npy")])
        .args(["--out", &arg("out", "out_out.npy")])
        .args(cli)
        .output()
        .expect("pydevice run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = NpyRecords::parse(&std::fs::read(path("recs_out.npy")).unwrap()).expect("records");
    assert_eq!(back.record, recs_npy.record);
    let got: Vec<IjRec> = from_bytes(&back.data);
    let outs = NpyArray::parse(&std::fs::read(path("out_out.npy")).unwrap()).expect("out");
    let outs: Vec<f32> = from_bytes(&outs.data);
    for i in 0..n {
        let (want, o) = nested_reference(recs[i], rec);
        assert_eq!(got[i], want, "record {i}");
        close(outs[i], o, &format!("out[{i}]"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
}

/// numba-cuda test_record_dtype's record, `np.dtype([('a','f8'),('b','i4'),('c','c8'),
/// ('d','u1',(5,))], align=True)`: NumPy puts the complex64 at 12 (C++ would put it at 16).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct NumbaRec {
    a: f64,
    b: i32,
    c: [f32; 2],
    d: [u8; 5],
    pad: [u8; 7],
}

on_each_backend! {
/// numba/records_subarray_copy.py: whole sub-arrays assigned from another record's, from a
/// row of an int16 matrix and from a number; a complex field at NumPy's offset 12; a record
/// argument copied into the array.
fn subarray_fields_assigned_whole_at_numpy_offsets(dev) {
    let abcd = "Record(a[type=float64;offset=0],b[type=int32;offset=8],c[type=complex64;\
        offset=12],d[type=nestedarray(uint8, (5,));offset=20];32;True)";
    let sig = format!("int64, {abcd}[::1], {abcd}, int16[:, ::1]");
    let k = kernel(
        &dev,
        &fixture("numba/records_subarray_copy.py"),
        "copy",
        &sig,
    );
    let mut r = Rng(63);
    let mut rand = || NumbaRec {
        a: f64::from(r.f32(-100.0, 100.0)),
        b: r.i32(-1000, 1000),
        c: [r.f32(-10.0, 10.0), r.f32(-10.0, 10.0)],
        d: [(); 5].map(|_| r.i32(0, 256) as u8),
        pad: [0; 7],
    };
    let src: Vec<NumbaRec> = (0..8).map(|_| rand()).collect();
    let dest = rand();
    let grid: Vec<i16> = (0..12).map(|_| r.i32(0, 256) as i16).collect();
    let index = 2usize;
    let (sb, sa) = vec1(&dev, &src);
    let (_gb, ga) = array(&dev, &grid, &[2, 6], &[6, 1]);
    k.launch(
        &[
            ArgValue::Int(index as i64),
            sa,
            ArgValue::Bytes(bytes_of(&[dest])),
            ga,
        ],
        [1, 1, 1],
        [1, 1, 1],
    );
    let got: Vec<NumbaRec> = from_bytes(&dev.download(&sb).expect("download"));
    let mut want = src.clone();
    let mut d = dest;
    d.a = src[index].a;
    d.d = src[index].d;
    d.c = [src[index].c[0] * 2.0, src[index].c[1] * 2.0];
    want[index + 1].d = d.d;
    want[index + 1].c = d.c;
    want[index + 2].d = [7; 5];
    want[index + 3].d = [0, 1, 2, 3, 4].map(|k| grid[6 + k] as u8);
    want[index + 4] = NumbaRec {
        pad: src[index + 4].pad,
        ..d
    };
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!((g.a, g.b, g.c, g.d), (w.a, w.b, w.c, w.d), "record {i}");
    }
}
}

/// `np.dtype([('id','i4'), ('w','f4',(4,)), ('m','f8',(2,2))], align=True)`: w at 4, m at
/// 24, 56 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct WmRec {
    id: i32,
    w: [f32; 4],
    m: [[f64; 2]; 2],
}

on_each_backend! {
/// lang/records_subarray.py: the cuda.device spelling, `recs[i].w[k]` in place.
fn subarray_fields_in_cuda_device_code(dev) {
    let sig = "Record(id[type=int32;offset=0],w[type=nestedarray(float32, (4,));offset=4],\
        m[type=nestedarray(float64, (2, 2));offset=24];56;True)[::1], float32[::1]";
    let k = kernel(&dev, &fixture("lang/records_subarray.py"), "smooth", sig);
    let n = 2049usize;
    let mut r = Rng(64);
    let recs: Vec<WmRec> = (0..n)
        .map(|_| WmRec {
            id: r.i32(-5, 5),
            w: [(); 4].map(|_| r.f32(-10.0, 10.0)),
            m: [(); 2].map(|_| [f64::from(r.f32(-5.0, 5.0)), f64::from(r.f32(-5.0, 5.0))]),
        })
        .collect();
    let (rb, ra) = vec1(&dev, &recs);
    let (ob, oa) = vec1(&dev, &vec![0f32; n]);
    k.launch(&[ra, oa], [blocks(n, 128), 1, 1], [128, 1, 1]);
    let got: Vec<WmRec> = from_bytes(&dev.download(&rb).expect("download"));
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..n {
        let p = recs[i];
        let s = ((p.w[0] + p.w[1]) + p.w[2]) + p.w[3];
        let mut q = p;
        q.w[0] = s;
        q.m[1][0] = p.m[0][1] * 2.0;
        assert_eq!(got[i], q, "record {i}");
        let o = (s + (p.m[0][0] + p.m[1][1]) as f32) + 2.0;
        close(out[i], f64::from(o), &format!("out[{i}]"));
    }
}
}

const WRITE_BACK: &str = "from numba import cuda


@cuda.jit
def write(r, vals):
    r.i = r.i * 2 + 1
    for k in range(3):
        r.j[k, 0] = vals[k]
        r.j[k, 1] = r.j[k, 1] + vals[k]
";

/// What `WRITE_BACK` does to a record.
fn write_back_reference(p: IjRec, vals: &[f32]) -> IjRec {
    let mut q = p;
    q.i = p.i * 2 + 1;
    for (k, v) in vals.iter().enumerate() {
        q.j[k][0] = *v;
        q.j[k][1] = p.j[k][1] + *v;
    }
    q
}

on_each_backend! {
/// numba-cuda's test_record_write_array: a record argument passed by reference (its device
/// address, `Type::StructRef`), as numba passes it, so the kernel's stores reach it.
fn numba_record_arguments_by_reference_are_written(dev) {
    let module = pydevice::Module::parse("write.py", WRITE_BACK).expect("parse");
    let sig = "Record(i[type=int32;offset=0],j[type=nestedarray(float32, (3, 2));offset=4];28;False), float32[::1]";
    let (types, _) = parse_signature(sig).expect("signature");
    let pydevice::Type::Struct(st) = types[0].clone() else {
        panic!("not a record")
    };
    let types = vec![
        pydevice::Type::StructRef {
            st,
            space: pydevice::types::MemSpace::Global,
        },
        types[1].clone(),
    ];
    let compiled = dev.compile(
        &module,
        "write",
        &types,
        &CompileOptions {
            arch: arch_for(&dev),
            ..CompileOptions::default()
        },
    );
    let k = compiled;
    let rec = random_ij(1, 65)[0];
    let vals = [2.5f32, -1.0, 7.25];
    let rb = dev.upload(&bytes_of(&[rec])).expect("upload");
    let (_vb, va) = vec1(&dev, &vals);
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_bytes: 0,
    };
    dev.launch(&k, &[ArgValue::UInt(dev.address(&rb)), va], &cfg)
        .expect("launch");
    dev.synchronize().expect("synchronize");
    let got: Vec<IjRec> = from_bytes(&dev.download(&rb).expect("download"));
    assert_eq!(got[0], write_back_reference(rec, &vals));
}
}

on_each_backend! {
/// The same through `pydevice run`: a numba module's record argument from a
/// zero-dimensional `.npy` is passed by reference and `--out` writes it back.
fn cli_writes_numba_record_arguments_back(dev) {
    // The GPU is for the `pydevice` child to open; `--cpu` where this run is the CPU\'s.
    let cli = dev.cli_flags();
    drop(dev);
    let dir = std::env::temp_dir().join(format!("pyd-record-back-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |f: &str| dir.join(f);
    std::fs::write(path("write.py"), WRITE_BACK).unwrap();
    let rec = random_ij(1, 66)[0];
    let vals = [0.5f32, 4.0, -3.5];
    let pydevice::Type::Struct(st) = pydevice::types::signature::parse_type(
        "Record(i[type=int32;offset=0],j[type=nestedarray(float32, (3, 2));offset=4];28;False)",
    )
    .expect("record") else {
        panic!("not a record")
    };
    let npy = NpyRecords {
        record: *st,
        shape: vec![],
        fortran_order: false,
        data: bytes_of(&[rec]),
    };
    std::fs::write(path("r.npy"), npy.to_bytes()).unwrap();
    let v = NpyArray {
        dtype: pydevice::types::Scalar::Float32,
        shape: vec![3],
        fortran_order: false,
        data: bytes_of(&vals),
    };
    std::fs::write(path("vals.npy"), v.to_bytes()).unwrap();
    let arg = |k: &str, f: &str| format!("{k}={}", path(f).display());
    let bin = crate::support::pydevice_bin();
    let out = std::process::Command::new(bin)
        .arg("run")
        .arg(path("write.py"))
        .args(["--entry", "write", "--grid", "1", "--block", "1"])
        .args([
            "--arg",
            &arg("r", "r.npy"),
            "--arg",
            &arg("vals", "vals.npy"),
        ])
        .args(["--out", &arg("r", "r_out.npy")])
        .args(cli)
        .output()
        .expect("pydevice run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = NpyRecords::parse(&std::fs::read(path("r_out.npy")).unwrap()).expect("record");
    assert_eq!(back.record, npy.record);
    assert!(back.shape.is_empty());
    let got: Vec<IjRec> = from_bytes(&back.data);
    assert_eq!(got[0], write_back_reference(rec, &vals));
    let _ = std::fs::remove_dir_all(&dir);
}
}
