//! The IR validator (`ir::validate`): programs the checker builds pass it, and IR that
//! breaks a rule, built here by editing a checked program, is rejected with a message that
//! names the rule. Also: the two programs of issue #23 whose IR disagreed with its
//! signature never reach LLVM.

use pydevice::ir::{self, BinaryOp, Expr, FunctionKind, Program, Stmt, StmtKind};
use pydevice::types::signature::parse_signature;
use pydevice::types::{Scalar, Type};
use pydevice::{Arch, CompileOptions, Error, Module};

fn program(src: &str, entry: &str, sig: &str) -> Program {
    let m = Module::parse("t.py", src).unwrap_or_else(|d| panic!("{}", d.render()));
    let (args, _) = parse_signature(sig).expect("sig");
    let spec = m
        .specialize(entry, &args)
        .unwrap_or_else(|d| panic!("{}", d.render()));
    spec.program().clone()
}

const CALLS: &str = "\
from cuda import device
from cuda.device import int32, int64


@device.func
def f(x: int64) -> int64:
    if x > 0:
        return x
    return x + 1


@device.kernel
def k(out, n):
    for i in range(n):
        out[i] = f(out[i])
";

fn calls() -> Program {
    program(CALLS, "k", "int64[::1], int32")
}

/// The function named `name` (by Python name) and its handle.
fn func(p: &mut Program, name: &str) -> ir::Handle<ir::Function> {
    p.functions
        .iter()
        .find(|(_, f)| f.name == name)
        .map(|(h, _)| h)
        .unwrap_or_else(|| panic!("no function {name}"))
}

fn rejects(p: &Program, want: &str) {
    match ir::validate(p) {
        Ok(()) => panic!("the validator accepted IR that {want}:\n{p}"),
        Err(e) => assert!(
            e.to_string().contains(want),
            "expected an error containing {want:?}, got: {e}"
        ),
    }
}

#[test]
fn checked_programs_are_valid() {
    ir::validate(&calls()).expect("valid");
}

#[test]
fn a_return_of_another_type_than_declared_is_rejected() {
    // #23: a `-> int32` function returning an int64 value.
    let mut p = calls();
    let f = func(&mut p, "f");
    p.functions[f].ret = Type::Scalar(Scalar::Int32);
    rejects(&p, "the returned value is int64, expected int32");
}

#[test]
fn a_value_function_that_can_fall_off_its_end_is_rejected() {
    // #23: a non-None function that can reach the end of its body (which returns None).
    let mut p = calls();
    let f = func(&mut p, "f");
    let last = p.functions[f].body.pop().expect("a last statement");
    assert!(matches!(last.kind, StmtKind::Return(Some(_))));
    rejects(
        &p,
        "can reach its end without returning a value of the declared type int64",
    );
}

#[test]
fn a_value_less_return_in_a_value_function_is_rejected() {
    let mut p = calls();
    let f = func(&mut p, "f");
    let span = p.functions[f].span;
    p.functions[f].body.push(Stmt {
        kind: StmtKind::Return(None),
        span,
    });
    rejects(
        &p,
        "a `return` without a value in a function declared to return int64",
    );
}

#[test]
fn a_call_typed_unlike_its_callee_is_rejected() {
    let mut p = calls();
    let k = func(&mut p, "k");
    let call = p.functions[k]
        .exprs
        .iter()
        .find(|(_, e)| matches!(e, Expr::Call(..)))
        .map(|(h, _)| h)
        .expect("a call of f");
    p.functions[k].types[call.index()] = Type::Scalar(Scalar::Int32);
    rejects(&p, "which returns int64, typed int32");
}

#[test]
fn a_break_outside_a_loop_is_rejected() {
    let mut p = calls();
    let k = func(&mut p, "k");
    let span = p.functions[k].span;
    p.functions[k].body.insert(
        0,
        Stmt {
            kind: StmtKind::Break,
            span,
        },
    );
    rejects(&p, "`break` or `continue` outside a loop");
}

#[test]
fn true_division_of_integers_is_rejected() {
    let mut p = calls();
    let f = func(&mut p, "f");
    let add = p.functions[f]
        .exprs
        .iter()
        .find(|(_, e)| matches!(e, Expr::Binary(BinaryOp::Add, ..)))
        .map(|(h, _)| h)
        .expect("x + 1");
    if let Expr::Binary(op, ..) = &mut p.functions[f].exprs[add] {
        *op = BinaryOp::Div;
    }
    rejects(&p, "true division on int64");
}

#[test]
fn a_kernel_that_returns_a_value_is_rejected() {
    let mut p = calls();
    let k = func(&mut p, "k");
    assert_eq!(p.functions[k].kind, FunctionKind::Kernel);
    p.functions[k].ret = Type::Scalar(Scalar::Int32);
    rejects(&p, "a kernel returns int32");
}

#[test]
fn an_expression_handle_out_of_range_is_rejected() {
    // A handle of `k`'s (the larger arena) used in `f`.
    let mut p = calls();
    let (k, f) = (func(&mut p, "k"), func(&mut p, "f"));
    let (far, _) = p.functions[k]
        .exprs
        .iter()
        .last()
        .expect("k has expressions");
    let n = p.functions[f].exprs.len();
    assert!(far.index() >= n);
    let span = p.functions[f].span;
    p.functions[f].body.insert(
        0,
        Stmt {
            kind: StmtKind::Eval(far),
            span,
        },
    );
    rejects(&p, &format!("expression %{} of {n}", far.index()));
}

/// Issue #23: the sm_90 specialization of this function returned an int64 literal from a
/// function typed `-> int32`, and LLVM rejected the module ("Function return type does not
/// match"). Whether or not the checker unifies the kept branches' types, the result is
/// either valid PTX or a diagnostic: never an error from LLVM.
#[test]
fn issue_23_target_branches_never_reach_llvm_with_a_mismatched_return() {
    let src = "\
from cuda import device
from cuda.device import target, is_host, provides, sm90


@device.func
def f():
    if target(is_host):
        return -1
    elif target(provides(sm90)):
        return 8421096268939604373
    else:
        return 0


@device.kernel
def k(out):
    out[0] = f()
";
    let m = Module::parse("t.py", src).expect("parses");
    let (args, _) = parse_signature("int64[::1]").expect("sig");
    for arch in [Arch::SM_90, Arch::SM_80] {
        let options = CompileOptions {
            arch,
            ..CompileOptions::default()
        };
        match m.compile("k", &args, &options) {
            Ok(k) => assert!(k.ptx.contains(".entry k")),
            // The validator's E0998 (debug builds) or a checker diagnostic.
            Err(Error::Diagnostics(_)) => {}
            Err(e) => panic!("{arch}: {e}"),
        }
    }
}

/// Issue #23: a `-> int32` function that can fall off its end after a `while … break`.
/// The checker must diagnose it (E0206); if it did not, the validator would (E0998), in
/// debug builds, before LLVM or the host's `(None, 9)`.
#[test]
fn issue_23_fall_off_after_break_is_a_diagnostic() {
    let src = "\
from cuda import device
from cuda.device import int32


@device.func
def f(n: int32) -> int32:
    while True:
        if n > 3:
            break
        return 9


@device.func
def g(n: int32) -> tuple[int32, int32]:
    return (f(n), 9)
";
    let m = Module::parse("t.py", src).expect("parses");
    let (args, _) = parse_signature("int32").expect("sig");
    let Err(d) = m.specialize("g", &args) else {
        panic!("a function that can fall off its end is rejected");
    };
    let text = d.render();
    assert!(
        text.contains("E0206") || text.contains("E0998"),
        "unexpected diagnostics:\n{text}"
    );
    assert!(m.host_function("g", &args).is_err());
}
