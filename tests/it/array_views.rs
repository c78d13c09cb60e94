//! Views, negative steps and `reshape` checked without a GPU: on a `local_array` whose
//! contents and shape are constants, LLVM folds every view, slice bound and contiguity check
//! to constants, so the optimized LLVM IR stores exactly the numbers the kernel computes.
//! Each expected value is what NumPy gives for the same expression on
//! `np.arange(n)` (NumPy 2.4, listed beside each case), and no trap may remain.

use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, Module};

/// The constants the kernel stores to `out[0]`, `out[1]`, … in order.
fn stored_constants(src: &str) -> Vec<i64> {
    let module = Module::parse("views.py", src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature("int64[::1]").expect("sig");
    let spec = module
        .specialize_for("k", &args, CompileOptions::default().arch)
        .unwrap_or_else(|d| panic!("{d}"));
    let ll = spec
        .to_llvm_ir(&CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!ll.contains("llvm.trap"), "a check was not folded:\n{ll}");
    ll.lines()
        .filter_map(|l| l.trim().strip_prefix("store i64 "))
        .map(|rest| {
            let v = rest.split(',').next().unwrap_or_default();
            v.parse()
                .unwrap_or_else(|_| panic!("not a constant store: {rest}\n{ll}"))
        })
        .collect()
}

fn kernel(n: usize, body: &[&str]) -> String {
    let mut s = format!(
        "from cuda import device\nfrom cuda.device import int64\n\n@device.kernel\ndef k(out):\n    \
         a = device.local_array({n}, int64)\n    for j in range({n}):\n        a[j] = int64(j)\n"
    );
    for (i, line) in body.iter().enumerate() {
        s.push_str(&format!("    out[{i}] = {line}\n"));
    }
    s
}

#[test]
fn one_dimensional_slices_with_negative_steps_follow_python() {
    let cases: [(&str, i64); 17] = [
        ("len(a[::-1])", 10),
        ("a[::-1][0]", 9),
        ("len(a[5:1:-2])", 2),
        ("a[5:1:-2][1]", 3),
        ("len(a[-100:100:-1])", 0),
        ("len(a[100:-100:-1])", 10),
        ("a[100:-100:-1][9]", 0),
        ("len(a[-3::-3])", 3),
        ("a[-3::-3][2]", 1),
        ("len(a[2:7:3])", 2),
        ("a[2:7:3][1]", 5),
        ("len(a[3:3:-1])", 0),
        ("len(a[7:2])", 0),
        ("a[-4:][0]", 6),
        ("a[::3][::-1][0]", 9),
        ("a[1:-1][::-2][1]", 6),
        ("a[::-1].strides[0]", -8),
    ];
    let body: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let want: Vec<i64> = cases.iter().map(|c| c.1).collect();
    assert_eq!(stored_constants(&kernel(10, &body)), want, "{body:#?}");
}

#[test]
fn multi_dimensional_views_and_reshapes_follow_numpy() {
    // t = np.arange(24).reshape(2, 3, 4); f = np.arange(24).reshape((4, 6), order='F')
    let cases: [(&str, i64); 17] = [
        ("t[1, 2, 3]", 23),
        ("t[1][2][3]", 23),
        ("t[:, 1][1, 2]", 18),
        ("t[1, :, 2][1]", 18),
        ("t[-1, ::2, ::-3][1, 0]", 23),
        ("f[1, 2]", 9),
        ("f[:, 2][3]", 11),
        ("f[2][5]", 22),
        ("t[1].reshape(-1)[5]", 17),
        ("f.reshape((2, 12), order='F')[1, 3]", 7),
        ("t.strides[0]", 96),
        ("t[:, ::2].strides[1]", 64),
        ("t[0, 1:3].shape[0] * 10 + t[0, 1:3].shape[1]", 24),
        ("f[1:3, 1:5:2][1, 1]", 14),
        ("len(t[:, 7:])", 2),
        ("t[::-1, ::-1, ::-1][0, 0, 0]", 23),
        ("t.reshape(4, -1)[3, 5]", 23),
    ];
    let mut src = kernel(24, &[]);
    src.push_str("    t = a.reshape((2, 3, 4))\n    f = a.reshape((4, 6), order='F')\n");
    for (i, (e, _)) in cases.iter().enumerate() {
        src.push_str(&format!("    out[{i}] = {e}\n"));
    }
    let want: Vec<i64> = cases.iter().map(|c| c.1).collect();
    assert_eq!(stored_constants(&src), want, "{src}");
}

/// A reshape the memory cannot give without copying is a trap when the kernel runs, never a
/// wrong view: with constant strides LLVM folds the check, and the trap is all that is left.
#[test]
fn reshape_of_non_contiguous_views_traps() {
    for (view, shape) in [
        ("t[:, ::2]", "-1"),
        ("t[::-1]", "24"),
        ("t[:, 1]", "(8,)"),
        ("a", "(5, 5)"),
    ] {
        let mut src = kernel(24, &[]);
        src.push_str(&format!(
            "    t = a.reshape((2, 3, 4))\n    out[0] = {view}.reshape({shape}).size\n"
        ));
        let module = Module::parse("views.py", &src).unwrap_or_else(|d| panic!("{d}"));
        let (args, _) = parse_signature("int64[::1]").expect("sig");
        let ll = module
            .specialize_for("k", &args, CompileOptions::default().arch)
            .unwrap_or_else(|d| panic!("{d}"))
            .to_llvm_ir(&CompileOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            ll.contains("call void @llvm.trap"),
            "{view}.reshape({shape}):\n{ll}"
        );
    }
}
