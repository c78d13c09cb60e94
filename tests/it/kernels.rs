//! `ElementwiseKernel` and `ReductionKernel` without a GPU: the generated kernels' source and
//! typed IR (goldens under `tests/fixtures/kernels/`, the IR validated), their PTX (accepted
//! by `ptxas` when present; goldens for the benchmark's shapes), and the diagnostics of bad
//! definitions and calls (`.stderr` goldens). `PYDEVICE_BLESS=1` rewrites the goldens.

use crate::support;

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

/// A kernel that unravels an index takes two elements per thread, so its body appears
/// three times in the source (§20.3): a problem in it is reported once; a body that may
/// `return` (ending the thread) keeps one element per thread.
#[test]
fn two_elements_per_thread_report_once_and_not_with_return() {
    let k = ElementwiseKernel::new("T x, T y", "T z", "z = x * undefined_name + y", "bad").unwrap();
    let ops = [arr(F32, &[6, 7]), arr(F32, &[7])];
    let r = k.resolve(&ops, None).unwrap();
    let outs = vec![DeviceArray::contiguous(0x9000_0000, F32, &r.shape)];
    let launch = k.bind(&r, outs).unwrap();
    assert_eq!(k.source(&launch).matches("undefined_name").count(), 3);
    match k.compile(&launch) {
        Err(pydevice::Error::Diagnostics(d)) => {
            assert_eq!(d.list.len(), 1, "{d}");
            assert!(d.list[0].message.contains("undefined_name"), "{d}");
        }
        other => panic!("expected one diagnostic, got {other:?}"),
    }
    assert_eq!(launch.config().grid[0], 1);
    let k = ElementwiseKernel::new(
        "T x, T y",
        "T z",
        "z = x - y\nif z < 0:\n    return",
        "early",
    )
    .unwrap();
    let r = k
        .resolve(&[arr(F32, &[600, 7]), arr(F32, &[7])], None)
        .unwrap();
    let outs = vec![DeviceArray::contiguous(0x9000_0000, F32, &r.shape)];
    let launch = k.bind(&r, outs).unwrap();
    let src = k.source(&launch);
    assert!(
        !src.contains("_s0") && src.contains("_p_y[_r0 % _p_y.shape[0]]"),
        "{src}"
    );
    assert_eq!(launch.config().grid[0], 4200u32.div_ceil(256));
    k.compile(&launch).unwrap_or_else(|e| panic!("{e}"));
    let k = ElementwiseKernel::new(SQUARED_DIFF.0, SQUARED_DIFF.1, SQUARED_DIFF.2, "sq").unwrap();
    let r = k
        .resolve(&[arr(F32, &[600, 7]), arr(F32, &[7])], None)
        .unwrap();
    let outs = vec![DeviceArray::contiguous(0x9000_0000, F32, &r.shape)];
    assert_eq!(
        k.bind(&r, outs).unwrap().config().grid[0],
        4200u32.div_ceil(512)
    );
    // Past 2**31 elements: one element per thread, the 64-bit index, flat and row views.
    let (rows, cols) = (3u64, 1u64 << 30);
    let r = k
        .resolve(&[arr(F32, &[rows, cols]), arr(F32, &[cols])], None)
        .unwrap();
    let outs = vec![DeviceArray::contiguous(0x9000_0000, F32, &r.shape)];
    let launch = k.bind(&r, outs).unwrap();
    let src = k.source(&launch);
    assert!(
        !src.contains("_s0")
            && src.contains("_p_x[i]")
            && src.contains("_p_y[_r0 % _p_y.shape[0]]"),
        "{src}"
    );
    ptxas(&k.compile(&launch).unwrap_or_else(|e| panic!("{e}")).ptx);
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
    // (6, 4000, 50): long enough for slices even with the narrowest tile (`column_shape`).
    let mid = [arr(F32, &[6, 4000, 50])];
    reduction(
        "sum_middle_axis_columns",
        L2NORM,
        None,
        &mid,
        Some(&[1]),
        false,
        Strategy::Columns,
    );
    // Many outputs of 1024 rows (`axis=0` of (1024, 256)): the tile narrowed to 8 outputs
    // (32 bytes of a row) needs no slices, where 32 would need 4 (`column_shape`).
    let wide = [arr(F32, &[1024, 256])];
    reduction(
        "sum_columns_narrowed",
        L2NORM,
        None,
        &wide,
        Some(&[0]),
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
    use pydevice::kernels::reduction::{choose_strategy, column_shape, column_splits, column_tile};
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
    // Many outputs of 1024 rows (the bench's red-wide) up to 2^24 elements: the tile is
    // narrowed (not below 32 bytes of a row) until one slice is enough, one kernel.
    for (dtype, n) in [(F32, 16), (F32, 256), (F32, 4096), (F64, 256), (F64, 4096)] {
        assert_eq!(
            pick(arr(dtype, &[1024, n]), Some(&[0])),
            (Columns, 8, 1, 0),
            "{dtype} (1024, {n})"
        );
    }
    assert_eq!(
        pick(arr(F32, &[1024, 16384]), Some(&[0])),
        (Columns, 8, 1, 0)
    );
    assert_eq!(
        pick(arr(F32, &[1024, 65536]), Some(&[0])),
        (Columns, 32, 4, 4 * 65536)
    );
    assert_eq!(
        pick(arr(Scalar::Complex128, &[1024, 256]), Some(&[0])),
        (Columns, 8, 1, 0)
    );
    // (300 outputs of 1000): tile 32 in 3 slices (30 blocks, 42 rows a thread); tile 16
    // would need no slice but give fewer blocks and longer loops, tile 8 gives more of both.
    assert_eq!(
        pick(arr(F32, &[6, 1000, 50]), Some(&[1])),
        (Columns, 8, 1, 0)
    );
    assert_eq!(pick(arr(F32, &[997, 1009]), Some(&[0])), (Columns, 8, 1, 0));
    // Too many rows for the narrowest tile to go unsplit: the wide tile, split.
    assert_eq!(
        pick(arr(F32, &[4096, 1024]), Some(&[0])),
        (Columns, 32, 16, 16 * 1024)
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
    assert_eq!(column_shape(256, 1024, 256, 4), (8, 1));
    assert_eq!(column_shape(256, 1024, 256, 8), (8, 1));
    // float64 stops at 4 outputs (32 bytes), int8 at 32 (no narrowing below it).
    assert_eq!(column_shape(1024, 4096, 1024, 8), (32, 16));
    assert_eq!(column_shape(256, 2048, 256, 8), (4, 1));
    assert_eq!(column_shape(256, 2048, 256, 1), (32, 8));
    assert_eq!(
        column_shape(100, 1 << 16, 1, 4),
        (1, column_splits(100, 1 << 16, 1))
    );
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

// ---- Host execution (docs/semantics.md §20.8) ----

/// A host array over `data` (C order unless `strides` are given).
fn host_arr<T>(data: &mut [T], dtype: Scalar, shape: &[u64], strides: Option<&[i64]>) -> Operand {
    let mut a = DeviceArray::contiguous(data.as_mut_ptr() as u64, dtype, shape);
    if let Some(s) = strides {
        a.strides = s.to_vec();
    }
    Operand::Array(a)
}

fn f32s(b: &pydevice::kernels::HostBuffer) -> Vec<f32> {
    b.bytes()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn host_calls_broadcast_strided_inputs_and_match_a_reference() {
    let k = ElementwiseKernel::new(
        SQUARED_DIFF.0,
        SQUARED_DIFF.1,
        SQUARED_DIFF.2,
        SQUARED_DIFF.3,
    )
    .unwrap();
    // x: a (3, 4) view of every other column of a (3, 8) array, walked backwards in rows;
    // y: a broadcast row of 4.
    let mut xs: Vec<f32> = (0..24).map(|v| v as f32 * 0.5).collect();
    let mut ys: Vec<f32> = vec![1.0, -2.0, 3.5, 0.25];
    let base = &mut xs[16..]; // row 2 of the (3, 8) array
    let x = host_arr(base, F32, &[3, 4], Some(&[-8, 2]));
    let y = host_arr(&mut ys, F32, &[4], None);
    // SAFETY: every element the views reach lies in `xs` and `ys`, alive for the call.
    let outs = unsafe { k.call_host(&[x, y], None) }.unwrap_or_else(|e| panic!("{e}"));
    let got = f32s(outs[0].buffer.as_ref().unwrap());
    let want: Vec<f32> = (0..12)
        .map(|e| {
            let (r, c) = (e / 4, e % 4);
            let xv = xs[(16 - 8 * r + 2 * c) as usize];
            let d = xv - ys[c as usize];
            d * d
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(outs[0].array.shape, vec![3, 4]);
    let l = {
        let r = k
            .resolve(&[arr(F32, &[3, 4]), arr(F32, &[4])], None)
            .unwrap();
        let outs = vec![DeviceArray::contiguous(0x9000_0000, F32, &r.shape)];
        k.bind(&r, outs).unwrap()
    };
    golden("host_squared_diff_broadcast", "gen.py", &k.host_source(&l));
}

/// Broadcasts that pass 1-D views (an operand C-contiguous over the whole shape indexed by
/// `i`, a trailing block broadcast along the leading axes indexed by `i` modulo its length,
/// §20.3) next to unravelled ones, on the host: the same values as a reference that walks
/// every operand by its strides, bit for bit, at odd extents, with a backwards operand.
#[test]
fn host_flat_and_inner_views_match_a_strided_reference() {
    let k = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd").unwrap();
    let full = [3u64, 5, 7, 9];
    let n: u64 = full.iter().product();
    let mut xs: Vec<f64> = (0..2 * n).map(|v| (v as f64 * 0.37).sin() * 4.0).collect();
    let mut ys: Vec<f64> = (0..n).map(|v| (v as f64 * 0.91).cos() * 3.0).collect();
    // (x's strides: None is C-contiguous; its offset into `xs`), y's shape (C-contiguous).
    type Case<'a> = (Option<[i64; 4]>, usize, &'a [u64]);
    let cases: [Case; 8] = [
        (None, 0, &[9]),
        (None, 0, &[7, 9]),
        (None, 0, &[5, 7, 9]),
        (None, 0, &[1, 7, 9]),
        (None, 0, &[5, 1, 9]),
        (None, 0, &[]),
        (Some([-315, 63, 9, 1]), 630, &[9]),
        (Some([315, 63, 9, -1]), 8, &[7, 9]),
    ];
    for (xst, off, ysh) in cases {
        let ylen: u64 = ysh.iter().product();
        let x = host_arr(&mut xs[off..], F64, &full, xst.as_ref().map(|s| &s[..]));
        let y = host_arr(&mut ys[..ylen as usize], F64, ysh, None);
        // SAFETY: every element the views reach lies in `xs` and `ys`, alive for the call.
        let outs = unsafe { k.call_host(&[x, y], None) }.unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<f64> = outs[0]
            .buffer
            .as_ref()
            .unwrap()
            .bytes()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let xst = xst.unwrap_or([315, 63, 9, 1]);
        // y's strides over the full shape: 0 along the axes it is broadcast on.
        let mut yst = [0i64; 4];
        let mut s = 1i64;
        for (d, &e) in ysh.iter().enumerate().rev() {
            let fd = 4 - ysh.len() + d;
            yst[fd] = if e == 1 { 0 } else { s };
            s *= e as i64;
        }
        let want: Vec<f64> = (0..n)
            .map(|e| {
                let ix = [e / 315, e / 63 % 5, e / 9 % 7, e % 9];
                let at = |st: &[i64; 4]| -> i64 { (0..4).map(|d| ix[d] as i64 * st[d]).sum() };
                let xv = xs[(off as i64 + at(&xst)) as usize];
                let d = xv - ys[at(&yst) as usize];
                d * d
            })
            .collect();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "x strides {xst:?} at {off}, y shape {ysh:?}"
        );
    }
}

#[test]
fn host_reductions_every_axis_with_keepdims() {
    let k = ReductionKernel::new(
        "T x",
        "T y",
        "x * x",
        "a + b",
        "y = sqrt(a)",
        "0",
        "l2norm",
        None,
    )
    .unwrap();
    let xs: Vec<f64> = (0..60).map(|v| f64::from(v) * 0.25 - 3.0).collect();
    let at = |i: usize, j: usize, l: usize| xs[i * 20 + j * 5 + l];
    for (axis, keep, shape, want) in [
        (
            None,
            false,
            vec![],
            vec![(0..60).map(|e| xs[e] * xs[e]).sum::<f64>().sqrt()],
        ),
        (
            Some(vec![1i64]),
            true,
            vec![3u64, 1, 5],
            (0..15)
                .map(|o| {
                    (0..4)
                        .map(|j| at(o / 5, j, o % 5).powi(2))
                        .sum::<f64>()
                        .sqrt()
                })
                .collect(),
        ),
        (
            Some(vec![0, -1]),
            false,
            vec![4],
            (0..4)
                .map(|j| {
                    (0..3)
                        .flat_map(|i| (0..5).map(move |l| (i, l)))
                        .map(|(i, l)| at(i, j, l).powi(2))
                        .sum::<f64>()
                        .sqrt()
                })
                .collect(),
        ),
    ] {
        let mut copy = xs.clone();
        let x = host_arr(&mut copy, F64, &[3, 4, 5], None);
        // SAFETY: `x` covers the 60 elements of `copy`, alive for the call.
        let outs =
            unsafe { k.call_host(&[x], axis.as_deref(), keep) }.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outs[0].array.shape, shape);
        let got: Vec<f64> = outs[0]
            .buffer
            .as_ref()
            .unwrap()
            .bytes()
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-12 * w.abs(), "{axis:?}: {g} vs {w}");
        }
        assert_eq!(got.len(), want.len());
        assert_eq!(copy, xs, "the input is only read");
    }
    let r = k
        .resolve(&[arr(F32, &[64, 300])], Some(&[1]), false)
        .unwrap();
    let outs = vec![DeviceArray::contiguous(0x9000_0000, F32, &r.out_shape)];
    let l = k.bind(&r, outs).unwrap();
    golden("host_l2norm_rows", "gen.py", &k.host_source(&l));
}

#[test]
fn complex_numbers_run_on_the_host() {
    // Complex arithmetic on the host (docs/semantics.md §16.1): (x * y) of complex64 pairs.
    let k = ElementwiseKernel::new("T x, T y", "T z", "z = x * y", "cmul").unwrap();
    let xs: Vec<(f32, f32)> = vec![(1.0, 2.0), (-0.5, 3.0), (0.0, -1.0), (2.5, 0.25)];
    let ys: Vec<(f32, f32)> = vec![(3.0, -1.0), (2.0, 2.0), (0.0, -1.0), (-4.0, 0.5)];
    let flat = |v: &[(f32, f32)]| v.iter().flat_map(|&(r, i)| [r, i]).collect::<Vec<f32>>();
    let (mut xb, mut yb) = (flat(&xs), flat(&ys));
    let x = host_arr(&mut xb, Scalar::Complex64, &[4], None);
    let y = host_arr(&mut yb, Scalar::Complex64, &[4], None);
    // SAFETY: the descriptors point at `xb`/`yb`, alive for the call; the output is owned.
    let outs = unsafe { k.call_host(&[x, y], None) }.unwrap_or_else(|e| panic!("{e}"));
    let got = f32s(outs[0].buffer.as_ref().expect("an allocated output"));
    for (j, (&(a, b), &(c, d))) in xs.iter().zip(&ys).enumerate() {
        let want = (a * c - b * d, a * d + b * c);
        assert_eq!((got[2 * j], got[2 * j + 1]), want, "element {j}");
    }
}

// ---- guvectorize (docs/semantics.md §20.9) ----

const MATVEC: &str = "@device.func\n\
def matvec(m, v, out):\n    for r in range(m.shape[0]):\n        s = m[r, 0] * 0\n        for c in range(m.shape[1]):\n            s += m[r, c] * v[c]\n        out[r] = s\n";

const DOT: &str = "@device.func\n\
def dot(a, b, k, out):\n    s = a[0] * 0\n    for j in range(len(a)):\n        s += a[j] * b[j]\n    out[0] = s * k\n";

#[test]
fn guvectorize_kernels_compile_for_the_device_and_run_on_the_host() {
    use pydevice::kernels::GuVectorize;
    let g = GuVectorize::new(
        "void(float64[:,:], float64[:], float64[:])",
        "(m,n),(n)->(m)",
        MATVEC,
        "matvec",
        "matvec_gufunc",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // m: (2, 3, 4, 5) C order; v: (4... ) broadcast over the first loop dimension: (3, 5).
    let mut ms: Vec<f64> = (0..120).map(|x| f64::from(x) * 0.5 - 7.0).collect();
    let mut vs: Vec<f64> = (0..15).map(|x| f64::from(x % 7) - 2.0).collect();
    let m = host_arr(&mut ms, F64, &[2, 3, 4, 5], None);
    let v = host_arr(&mut vs, F64, &[3, 5], None);
    let r = g.resolve(&[m, v]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.out_shapes, vec![vec![2, 3, 4]]);
    let mut out = vec![0f64; 24];
    let o = DeviceArray::contiguous(out.as_mut_ptr() as u64, F64, &[2, 3, 4]);
    let (k, launch) = g.bind(&r, vec![o]).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: the arrays are `ms`, `vs` and `out`, alive for the call, as large as their
    // shapes.
    unsafe { k.run_host(&launch) }.unwrap_or_else(|e| panic!("{e}"));
    for a in 0..2 {
        for b in 0..3 {
            for row in 0..4 {
                let want: f64 = (0..5)
                    .map(|c| ms[a * 60 + b * 20 + row * 5 + c] * vs[b * 5 + c])
                    .sum();
                assert_eq!(out[a * 12 + b * 4 + row], want, "[{a}, {b}, {row}]");
            }
        }
    }
    golden("gufunc_matvec", "gen.py", &k.source(&launch));
    ptxas(&k.compile(&launch).unwrap_or_else(|e| panic!("{e}")).ptx);

    // A scalar input (`()` declared `float32`) and a `()` output written `out[0]`, with a
    // 0-d scalar broadcast over the loop dimension.
    let g = GuVectorize::new(
        "void(float32[:], float32[:], float32, float32[:])",
        "(n),(n),()->()",
        DOT,
        "dot",
        "dot_gufunc",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut a: Vec<f32> = (0..12).map(|x| x as f32).collect();
    let mut b: Vec<f32> = vec![1.0, -1.0, 0.5, 2.0];
    let mut kk = [3.0f32];
    let ops = [
        host_arr(&mut a, F32, &[3, 4], None),
        host_arr(&mut b, F32, &[4], None),
        host_arr(&mut kk, F32, &[], None),
    ];
    let r = g.resolve(&ops).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.out_shapes, vec![vec![3]]);
    let mut out = vec![0f32; 3];
    let o = DeviceArray::contiguous(out.as_mut_ptr() as u64, F32, &[3]);
    let (k, launch) = g.bind(&r, vec![o]).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: as above.
    unsafe { k.run_host(&launch) }.unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<f32> = (0..3)
        .map(|r| (0..4).map(|j| a[r * 4 + j] * b[j]).sum::<f32>() * 3.0)
        .collect();
    assert_eq!(out, want);
    // The same through `call_host`, the output allocated.
    let ops = [
        host_arr(&mut a, F32, &[3, 4], None),
        host_arr(&mut b, F32, &[4], None),
        host_arr(&mut kk, F32, &[], None),
    ];
    // SAFETY: as above.
    let outs = unsafe { g.call_host(&ops) }.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outs[0].array.shape, vec![3]);
    assert_eq!(f32s(outs[0].buffer.as_ref().unwrap()), want);
    golden("gufunc_dot_scalar", "gen.py", &k.source(&launch));
    ptxas(&k.compile(&launch).unwrap_or_else(|e| panic!("{e}")).ptx);
}

#[test]
fn host_index_errors_point_into_the_definition() {
    let k = ElementwiseKernel::new("raw T x", "raw T y", "y[i] = x[i] * 2", "double_raw").unwrap();
    let mut x = vec![1i64; 10];
    let mut y = vec![0i64; 10];
    let ops = [
        host_arr(&mut x, Scalar::Int64, &[10], None),
        host_arr(&mut y, Scalar::Int64, &[10], None),
    ];
    // SAFETY: `x` and `y` hold the 10 elements their descriptors say; the 11th access is
    // bounds-checked and skipped.
    let e = unsafe { k.call_host(&ops, Some(11)) }.unwrap_err();
    match e {
        Error::Host(pydevice::HostError::IndexOutOfBounds { line, column }) => {
            // Line 3 of the definition is the body; column 8 is `x[i]`.
            assert_eq!((line, column), (3, 8));
        }
        e => panic!("expected an index error, got {e}"),
    }
    assert_eq!(y, vec![2i64; 10], "the elements in range were computed");
}
