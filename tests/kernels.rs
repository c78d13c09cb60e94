//! `ElementwiseKernel` and `ReductionKernel` without a GPU: the generated kernels' source and
//! typed IR (goldens under `tests/fixtures/kernels/`, the IR validated), their PTX (accepted
//! by `ptxas` when present; goldens for the benchmark's shapes), and the diagnostics of bad
//! definitions and calls (`.stderr` goldens). `PYDEVICE_BLESS=1` rewrites the goldens.

mod support;

use pydevice::abi::ArgValue;
use pydevice::kernels::{ElementwiseKernel, Operand, ReductionKernel, ScalarArg, Strategy};
use pydevice::runtime::DeviceArray;
use pydevice::types::Scalar;
use pydevice::{Arch, Error};
use support::{check_golden, ptx_golden_text, repo_path};

const F32: Scalar = Scalar::Float32;
const F64: Scalar = Scalar::Float64;

fn arr(dtype: Scalar, shape: &[u64]) -> Operand {
    Operand::Array(DeviceArray::contiguous(0x7000_0000, dtype, shape))
}

fn strided(dtype: Scalar, shape: &[u64], strides: &[i64]) -> Operand {
    Operand::Array(DeviceArray {
        strides: strides.to_vec(),
        ..DeviceArray::contiguous(0x7000_0000, dtype, shape)
    })
}

fn py_float(v: f64) -> Operand {
    Operand::Scalar(ScalarArg::python(ArgValue::Float(v)))
}

fn golden(name: &str, ext: &str, got: &str) {
    let path = repo_path(&format!("tests/fixtures/kernels/{name}.{ext}"));
    if let Err(e) = check_golden(&path, got, name) {
        panic!("{e}");
    }
}

/// The typed IR of the generated `source`'s `entry` for `types`, validated, as a golden.
fn ir_golden(name: &str, source: &str, entry: &str, types: &[pydevice::Type]) {
    let m = pydevice::Module::parse(name, source).unwrap_or_else(|d| panic!("{d}"));
    let spec = m.specialize(entry, types).unwrap_or_else(|d| panic!("{d}"));
    pydevice::ir::validate(spec.program()).unwrap_or_else(|e| panic!("{e}"));
    golden(name, "ir", &spec.program().to_string());
}

fn ptxas(ptx: &str) {
    if pydevice::toolkit::ptxas().is_some() {
        pydevice::toolkit::ptxas_check(ptx, Arch::DEFAULT)
            .unwrap_or_else(|e| panic!("ptxas rejected the PTX: {e}\n{ptx}"));
    }
}

/// Generates, compiles and checks one elementwise call: the source golden, ptxas, and a PTX
/// golden when `ptx_golden`.
fn elementwise(
    name: &str,
    def: (&str, &str, &str, &str),
    operands: &[Operand],
    size: Option<u64>,
    ptx_golden: bool,
) {
    let k = ElementwiseKernel::new(def.0, def.1, def.2, def.3).unwrap_or_else(|e| panic!("{e}"));
    let r = k.resolve(operands, size).unwrap_or_else(|e| panic!("{e}"));
    let outs = r
        .missing
        .iter()
        .map(|&m| DeviceArray::contiguous(0x9000_0000, r.out_dtypes[m], &r.shape))
        .collect();
    let launch = k.bind(&r, outs).unwrap_or_else(|e| panic!("{e}"));
    let sig: Vec<String> = launch.types.iter().map(|t| t.to_string()).collect();
    golden(
        name,
        "gen.py",
        &format!("# types: {}\n{}", sig.join(", "), k.source(&launch)),
    );
    ir_golden(name, &k.source(&launch), def.3, &launch.types);
    let compiled = k.compile(&launch).unwrap_or_else(|e| panic!("{e}"));
    ptxas(&compiled.ptx);
    if ptx_golden {
        golden(name, "ptx", &ptx_golden_text(&compiled.ptx));
    }
}

const SQUARED_DIFF: (&str, &str, &str, &str) = (
    "float32 x, float32 y",
    "float32 z",
    "z = (x - y) * (x - y)",
    "squared_diff",
);

#[test]
fn squared_diff_contiguous_is_one_dimensional() {
    elementwise(
        "squared_diff_contiguous",
        SQUARED_DIFF,
        &[arr(F32, &[64, 1024]), arr(F32, &[64, 1024])],
        None,
        true,
    );
}

#[test]
fn past_two_to_the_31_elements_the_index_is_64_bit() {
    let n = (1u64 << 31) + 5;
    elementwise(
        "squared_diff_wide",
        SQUARED_DIFF,
        &[arr(F32, &[n]), arr(F32, &[n])],
        None,
        false,
    );
}

#[test]
fn squared_diff_broadcast_row_and_scalar() {
    elementwise(
        "squared_diff_broadcast",
        SQUARED_DIFF,
        &[arr(F32, &[2, 5]), arr(F32, &[5])],
        None,
        true,
    );
    elementwise(
        "squared_diff_scalar",
        SQUARED_DIFF,
        &[arr(F32, &[2, 5]), py_float(5.0)],
        None,
        false,
    );
}

#[test]
fn generic_kernels_with_a_declared_local_and_many_placeholders() {
    elementwise(
        "squared_diff_generic_f64_strided",
        (
            "T x, T y",
            "T z",
            "\n    diff = x - y\n    z = diff * diff\n",
            "squared_diff_generic",
        ),
        &[strided(F64, &[4, 3, 5], &[30, 10, 2]), arr(F64, &[4, 1, 5])],
        None,
        false,
    );
    elementwise(
        "squared_diff_super_generic",
        (
            "X x, Y y",
            "Z z",
            "z = (x - y) * (x - y)",
            "squared_diff_super_generic",
        ),
        &[arr(F32, &[8]), arr(Scalar::Int32, &[8]), arr(F64, &[8])],
        None,
        false,
    );
}

#[test]
fn raw_parameters_index_by_hand() {
    elementwise(
        "add_reverse",
        (
            "T x, raw T y",
            "T z",
            "z = x + y[_ind.size() - i - 1]",
            "add_reverse",
        ),
        &[arr(F32, &[100]), arr(F32, &[100])],
        None,
        false,
    );
    elementwise(
        "all_raw_with_size",
        ("raw T x", "raw T y", "y[i] = x[i] * 2", "double_raw"),
        &[arr(Scalar::Int64, &[10]), arr(Scalar::Int64, &[10])],
        Some(10),
        false,
    );
}

#[test]
fn an_output_assigned_on_one_branch_keeps_its_value_on_the_other() {
    elementwise(
        "relu_in_place",
        ("T x", "T y", "if x > 0:\n    y = x", "relu"),
        &[arr(F32, &[32]), arr(F32, &[32])],
        None,
        false,
    );
}

#[test]
fn typed_parameters_convert_and_math_names_are_imported() {
    elementwise(
        "convert_and_math",
        (
            "float32 x, int32 k",
            "float64 y",
            "y = sqrt(x) + k if x > 0 else float32(k)",
            "convert_and_math",
        ),
        &[arr(Scalar::Float16, &[7]), arr(Scalar::Int8, &[7])],
        None,
        false,
    );
}

/// The rendered diagnostics of a definition or call, as their golden holds them.
fn rendered(e: Error) -> String {
    match e {
        Error::Diagnostics(d) => d.render(),
        e => format!("{e}\n"),
    }
}

fn diagnostic(name: &str, def: (&str, &str, &str, &str), operands: Option<&[Operand]>) {
    let got = match ElementwiseKernel::new(def.0, def.1, def.2, def.3) {
        Err(e) => rendered(e),
        Ok(k) => {
            let ops = operands.unwrap_or_else(|| panic!("{name}: the definition is valid"));
            let r = k.resolve(ops, None);
            let e = match r {
                Err(e) => e,
                Ok(r) => {
                    let outs = r
                        .missing
                        .iter()
                        .map(|&m| DeviceArray::contiguous(0x9000_0000, r.out_dtypes[m], &r.shape))
                        .collect();
                    let launch = k.bind(&r, outs).unwrap_or_else(|e| panic!("{e}"));
                    k.compile(&launch)
                        .err()
                        .unwrap_or_else(|| panic!("{name}: compiled"))
                }
            };
            rendered(e)
        }
    };
    golden(&format!("errors/{name}"), "stderr", &got);
}

#[test]
fn cxx_bodies_get_the_python_spelling() {
    diagnostic(
        "cxx_declaration",
        (
            "T x, T y",
            "T z",
            "\n    T diff = x - y;\n    z = diff * diff;\n",
            "squared_diff_generic",
        ),
        None,
    );
    diagnostic(
        "cxx_conditional",
        ("T x", "T z", "z = x > 0 ? x : -x", "absolute"),
        None,
    );
}

#[test]
fn bad_parameter_lists() {
    diagnostic(
        "bad_params",
        ("float32 x, floaty y, T", "T i, float32 x", "i = x", "bad"),
        None,
    );
}

#[test]
fn unresolved_placeholder_names_it() {
    diagnostic(
        "unresolved_placeholder",
        ("X x, Y y", "Z z", "z = (x - y) * (x - y)", "sd"),
        Some(&[arr(F32, &[4]), arr(F32, &[4])]),
    );
}

#[test]
fn errors_in_the_body_point_at_the_body() {
    diagnostic(
        "body_type_error",
        (
            "T x",
            "T z",
            "\n    w = x\n    w = 1.5 * undefined_name\n    z = w\n",
            "body_error",
        ),
        Some(&[arr(Scalar::Int32, &[4])]),
    );
    diagnostic(
        "loose_continue",
        ("T x", "T z", "if x < 0:\n    continue\nz = x", "skip"),
        None,
    );
    diagnostic(
        "body_syntax_error",
        ("T x", "T z", "z = (x +", "syntax"),
        None,
    );
}

const L2NORM: [&str; 7] = ["T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm"];

/// Generates and compiles one reduction call: the source golden (both kernels of a full
/// reduction), ptxas on each, and the strategy picked.
fn reduction(
    name: &str,
    def: [&str; 7],
    reduce_type: Option<&str>,
    operands: &[Operand],
    axis: Option<&[i64]>,
    keepdims: bool,
    strategy: Strategy,
) {
    let k = ReductionKernel::new(
        def[0],
        def[1],
        def[2],
        def[3],
        def[4],
        def[5],
        def[6],
        reduce_type,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = k
        .resolve(operands, axis, keepdims)
        .unwrap_or_else(|e| panic!("{e}"));
    let outs = r
        .missing
        .iter()
        .map(|&m| DeviceArray::contiguous(0x9000_0000, r.out_dtypes[m], &r.out_shape))
        .collect();
    let launch = k.bind(&r, outs).unwrap_or_else(|e| panic!("{e}"));
    let sig: Vec<String> = launch.types.iter().map(|t| t.to_string()).collect();
    golden(
        name,
        "gen.py",
        &format!(
            "# types: {}\n# strategy: {:?}, out shape {:?}, {} x {}\n{}",
            sig.join(", "),
            launch.strategy,
            r.out_shape,
            launch.n_out,
            launch.n_red,
            k.source(&launch)
        ),
    );
    assert_eq!(launch.strategy, strategy, "{name}");
    ir_golden(name, &k.source(&launch), def[6], &launch.types);
    let (main, fin) = k.compile(&launch).unwrap_or_else(|e| panic!("{e}"));
    ptxas(&main.ptx);
    if let Some(f) = fin {
        ptxas(&f.ptx);
    }
}

#[test]
fn l2norm_along_every_axis() {
    let x = || arr(F32, &[2, 5]);
    reduction(
        "l2norm_axis1",
        L2NORM,
        None,
        &[x()],
        Some(&[1]),
        false,
        Strategy::Thread,
    );
    reduction(
        "l2norm_axis0_keepdims",
        L2NORM,
        None,
        &[x()],
        Some(&[0]),
        true,
        Strategy::Thread,
    );
    reduction(
        "l2norm_full",
        L2NORM,
        None,
        &[x()],
        None,
        false,
        Strategy::Grid,
    );
}

#[test]
fn strategies_follow_the_shape() {
    let rows = [arr(F32, &[64, 4096])];
    reduction(
        "sum_block_rows",
        L2NORM,
        None,
        &rows,
        Some(&[1]),
        false,
        Strategy::Block,
    );
    let many = [arr(F64, &[4096, 256])];
    reduction(
        "sum_warp_rows",
        L2NORM,
        None,
        &many,
        Some(&[-1]),
        false,
        Strategy::Warp,
    );
    let cols = [arr(F32, &[16, 2048])];
    reduction(
        "sum_thread_columns",
        L2NORM,
        None,
        &cols,
        Some(&[0]),
        false,
        Strategy::Thread,
    );
    let mid = [arr(F32, &[4, 5, 6])];
    reduction(
        "sum_middle_axis_keepdims",
        L2NORM,
        None,
        &mid,
        Some(&[1]),
        true,
        Strategy::Thread,
    );
    let x3 = [strided(F32, &[8, 16, 32], &[1024, 64, 2])];
    reduction(
        "sum_axes_0_2_strided",
        L2NORM,
        None,
        &x3,
        Some(&[0, 2]),
        false,
        Strategy::Block,
    );
}

/// The column strategy (docs/semantics.md §20.4): a tile of 32 outputs split over
/// `block_idx.y` with its `_final` kernel, a narrow tile of 4 outputs, a 3-D array reduced
/// over its middle axis, and complex numbers through the shared-memory tree.
#[test]
fn column_tiles_read_rows_coalesced() {
    let cols = [arr(F32, &[4096, 2048])];
    reduction(
        "sum_columns_tile",
        L2NORM,
        None,
        &cols,
        Some(&[0]),
        false,
        Strategy::Columns,
    );
    let narrow = [arr(F64, &[100_000, 3])];
    reduction(
        "sum_columns_narrow",
        L2NORM,
        None,
        &narrow,
        Some(&[0]),
        true,
        Strategy::Columns,
    );
    let mid = [arr(F32, &[6, 1000, 50])];
    reduction(
        "sum_middle_axis_columns",
        L2NORM,
        None,
        &mid,
        Some(&[1]),
        false,
        Strategy::Columns,
    );
    // Two reduced dimensions that do not merge: each row index is unravelled.
    let four = [arr(F32, &[6, 5, 40, 32])];
    reduction(
        "sum_axes_0_2_columns",
        L2NORM,
        None,
        &four,
        Some(&[0, 2]),
        false,
        Strategy::Columns,
    );
    // Few long rows: a tile of one row per block, split.
    let long = [arr(F32, &[16, 100_000])];
    reduction(
        "sum_rows_split",
        L2NORM,
        None,
        &long,
        Some(&[1]),
        false,
        Strategy::Columns,
    );
    let sum = ["T x", "T y", "x", "a + b", "y = a", "0", "csum"];
    let c = [arr(Scalar::Complex128, &[300, 100])];
    reduction(
        "csum_columns",
        sum,
        None,
        &c,
        Some(&[0]),
        false,
        Strategy::Columns,
    );
}

/// Which shape picks which strategy, tile and split (no compilation).
#[test]
fn strategy_selection_by_shape() {
    use pydevice::kernels::reduction::{choose_strategy, column_splits, column_tile};
    let k = ReductionKernel::new(
        L2NORM[0], L2NORM[1], L2NORM[2], L2NORM[3], L2NORM[4], L2NORM[5], L2NORM[6], None,
    )
    .unwrap();
    // (operand, axis) -> (strategy, tile, splits, partials)
    let pick = |x: Operand, axis: Option<&[i64]>| {
        let r = k.resolve(&[x], axis, false).unwrap();
        let outs = r
            .missing
            .iter()
            .map(|&m| DeviceArray::contiguous(0x9000_0000, r.out_dtypes[m], &r.out_shape))
            .collect();
        let l = k.bind(&r, outs).unwrap();
        assert!(r.partials_len() >= l.partials_len(), "{r:?}");
        (l.strategy, l.tile, l.splits, l.partials_len())
    };
    use Strategy::{Block, Columns, Grid, Thread, Warp};
    // The bench's shapes: (2^16, 1024) along axis 0 and 1, and the whole of it.
    assert_eq!(
        pick(arr(F32, &[65536, 1024]), Some(&[0])),
        (Columns, 32, 256, 256 * 1024)
    );
    assert_eq!(pick(arr(F32, &[65536, 1024]), Some(&[1])), (Warp, 1, 1, 0));
    assert_eq!(pick(arr(F32, &[65536, 1024]), None), (Grid, 1, 1, 1024));
    // Small column sums: too few rows to split.
    assert_eq!(pick(arr(F32, &[64, 16]), Some(&[0])), (Columns, 16, 1, 0));
    assert_eq!(pick(arr(F32, &[31, 16]), Some(&[0])), (Thread, 1, 1, 0));
    // Many outputs: a thread each; 2^17 outputs still tile (unsplit: 4096 tiles).
    assert_eq!(
        pick(arr(F32, &[64, 1 << 18]), Some(&[0])),
        (Thread, 1, 1, 0)
    );
    assert_eq!(
        pick(arr(F32, &[64, 1 << 17]), Some(&[0])),
        (Columns, 32, 1, 0)
    );
    // One column of a (n, 1) matrix is a full reduction; two columns a narrow tile.
    assert_eq!(
        pick(arr(F32, &[1 << 20, 1]), Some(&[0])),
        (Grid, 1, 1, 1024)
    );
    assert_eq!(
        pick(arr(F32, &[1 << 20, 2]), Some(&[0])),
        (Columns, 2, 256, 512)
    );
    // A 3-D array over its middle axis, and over (0, 2) (rows: the innermost is reduced).
    assert_eq!(
        pick(arr(F32, &[64, 4096, 64]), Some(&[1])),
        (Columns, 32, 16, 16 * 4096)
    );
    assert_eq!(
        pick(arr(F32, &[64, 256, 64]), Some(&[0, 2])),
        (Block, 1, 1, 0)
    );
    assert_eq!(
        pick(arr(F32, &[4, 8192, 64]), Some(&[0, 2])),
        (Warp, 1, 1, 0)
    );
    // A transposed view reduced over axis 0 reads rows; over axis 1 columns.
    let t = strided(F32, &[1024, 4096], &[1, 1024]);
    assert_eq!(pick(t.clone(), Some(&[0])), (Warp, 1, 1, 0));
    assert_eq!(pick(t, Some(&[1])), (Columns, 32, 16, 16 * 1024));
    // Few long rows: a block per row, split over `block_idx.y` once they are long enough.
    assert_eq!(pick(arr(F32, &[16, 4096]), Some(&[1])), (Block, 1, 1, 0));
    assert_eq!(
        pick(arr(F32, &[16, 100_000]), Some(&[1])),
        (Columns, 1, 12, 12 * 16)
    );
    assert_eq!(
        pick(arr(F32, &[16, 1 << 22]), Some(&[1])),
        (Columns, 1, 512, 512 * 16)
    );
    // The reduced axis denser than the kept one, few outputs: a block per output.
    let s = strided(F32, &[16, 4096], &[8192, 2]);
    assert_eq!(pick(s, Some(&[1])), (Block, 1, 1, 0));
    // The rule itself.
    assert_eq!(choose_strategy(1, 10, 1, 0), Grid);
    assert_eq!(choose_strategy(100, 4096, 1, 4096), Block);
    assert_eq!(choose_strategy(100, 1 << 16, 1, 1 << 16), Columns);
    assert_eq!(column_tile(100, 1), 1);
    assert_eq!(choose_strategy(5000, 15, 1, 15), Thread);
    assert_eq!(choose_strategy(5000, 31, 5000, 1), Thread);
    assert_eq!(choose_strategy(5000, 32, 5000, 1), Columns);
    assert_eq!(choose_strategy(1000, 64, 2, 64), Block);
    assert_eq!(choose_strategy(1000, 64, -64, 1), Columns);
    assert_eq!(
        (
            column_tile(1, 5),
            column_tile(3, 5),
            column_tile(32, -5),
            column_tile(1000, 0)
        ),
        (1, 4, 32, 32)
    );
    assert_eq!(column_splits(1024, 1 << 16, 32), 256);
    assert_eq!(column_splits(1 << 16, 1 << 16, 32), 4);
    assert_eq!(column_splits(1 << 18, 1 << 16, 32), 1);
    assert_eq!(column_splits(3, 1 << 30, 4), 1024);
    assert_eq!(column_splits(16, 100_000, 1), 12);
    assert_eq!(column_splits(64, 4096, 1), 1);
}

#[test]
fn complex128_reduces_through_shared_memory() {
    let sum = ["T x", "T y", "x", "a + b", "y = a", "0", "csum"];
    let x = [arr(Scalar::Complex128, &[1000])];
    reduction("csum_full", sum, None, &x, None, false, Strategy::Grid);
    let m = [arr(Scalar::Complex128, &[100, 100])];
    reduction(
        "csum_rows",
        sum,
        None,
        &m,
        Some(&[1]),
        false,
        Strategy::Warp,
    );
}

#[test]
fn a_reduce_type_and_raw_parameters_with_leading_axes() {
    let mean = [
        "T x",
        "float64 y",
        "x",
        "a + b",
        "y = a / _n",
        "0",
        "sum_as_f64",
    ];
    let _ = mean;
    let count = [
        "T x, raw T w",
        "float64 y",
        "x * w[i % 5]",
        "a + b",
        "y = a",
        "0",
        "weighted",
    ];
    let ops = [arr(F32, &[4, 5]), arr(F32, &[5])];
    reduction(
        "weighted_axis0",
        count,
        Some("float64"),
        &ops,
        Some(&[0]),
        false,
        Strategy::Thread,
    );
    let k = ReductionKernel::new(
        count[0], count[1], count[2], count[3], count[4], count[5], count[6], None,
    )
    .unwrap();
    let e = k.resolve(&ops, Some(&[1]), false).unwrap_err().to_string();
    assert!(e.contains("must lead the shape"), "{e}");
    let e = k.resolve(&ops, Some(&[2]), false).unwrap_err().to_string();
    assert!(e.contains("out of bounds"), "{e}");
}

#[test]
fn reduction_diagnostics() {
    let got =
        match ReductionKernel::new("T a", "T y", "a ? 1 : 0", "a + b", "y = a;", "0", "r", None) {
            Err(e) => rendered(e),
            Ok(_) => panic!("accepted"),
        };
    golden("errors/reduction_bad", "stderr", &got);
}

#[test]
fn a_python_preamble_defines_device_functions_for_the_body() {
    let k = ElementwiseKernel::with_preamble(
        "float32 x, float32 y",
        "float32 z",
        "z = hyp(x, y)",
        "hyp_ufunc",
        "@device.func\ndef hyp(a, b):\n    return sqrt(a * a + b * b)\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = k
        .resolve(&[arr(F32, &[16]), arr(F32, &[16])], None)
        .unwrap();
    let outs = vec![DeviceArray::contiguous(0x9000_0000, F32, &[16])];
    let launch = k.bind(&r, outs).unwrap();
    golden("preamble_hyp", "gen.py", &k.source(&launch));
    ptxas(&k.compile(&launch).unwrap_or_else(|e| panic!("{e}")).ptx);
    // An error in the preamble points into it (line 5 of the definition).
    let bad = ElementwiseKernel::with_preamble(
        "T x",
        "T z",
        "z = f(x)",
        "bad",
        "@device.func\ndef f(a):\n    return a + nope\n",
    )
    .unwrap();
    let r = bad.resolve(&[arr(F32, &[4])], None).unwrap();
    let launch = bad
        .bind(&r, vec![DeviceArray::contiguous(0x9000_0000, F32, &[4])])
        .unwrap();
    let e = rendered(bad.compile(&launch).unwrap_err());
    assert!(e.contains("<ElementwiseKernel bad>:6:16"), "{e}");
}
