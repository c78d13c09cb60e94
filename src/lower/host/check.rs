//! What the host cannot run, found before lowering: device-only intrinsics (thread
//! positioning, barriers, warp collectives), atomics, and values the host does not hold
//! (arrays, references). Each use is a diagnostic at its span, so lowering itself only
//! meets programs it can translate. [`check_kernel`] does the same for a `@kernel` run whole
//! on the CPU (`crate::lower::host::kernel`), which also runs the thread positions, barriers,
//! warp collectives and the cooperative groups that [`cpu_intrinsic`] lists.

use super::leaf::leaves;
use crate::diag::Code;
use crate::diag::{Diagnostic, Span};
use crate::ir::{
    AtomicOp, Expr, Function, FunctionKind, Handle, Intrinsic, Program, Stmt, StmtKind,
};
use crate::types::{Scalar, Type};
use std::collections::HashSet;

/// The largest local array the host puts on its stack: 512 KiB, the local memory a CUDA
/// thread may use.
const MAX_LOCAL_BYTES: u64 = 512 * 1024;

/// The note every device-only diagnostic carries.
const GUARD: &str = "guard device-only code with `if target(is_device):` (and give the host \
                     its own branch under `if target(is_host):`)";

/// The diagnostics that stop `program` from running on the host; empty when it can.
pub(crate) fn check(program: &Program) -> Vec<Diagnostic> {
    let mut c = Checker {
        diags: Vec::new(),
        seen: HashSet::new(),
        kernel: false,
    };
    let entry = &program.functions[program.entry];
    if entry.kind == FunctionKind::Kernel {
        c.diags.push(
            Diagnostic::error(
                Code::E0500,
                entry.span,
                format!(
                    "`{}` is a @kernel; only @func functions run on the host",
                    entry.name
                ),
            )
            .with_note("kernels need a grid of threads; launch them on a GPU"),
        );
        return c.diags;
    }
    for l in entry.param_locals() {
        let t = &entry.locals[l].ty;
        if host_leaves(t).is_none() {
            c.diags.push(
                Diagnostic::error(
                    if matches!(t, Type::Array(_)) {
                        Code::E0503
                    } else {
                        Code::E0504
                    },
                    entry.span,
                    format!(
                        "parameter `{}` has type {t}, which the host cannot pass yet",
                        entry.locals[l].name
                    ),
                )
                .with_note("host functions take numbers, tuples, vectors, @struct values and arrays of numbers"),
            );
        }
    }
    if host_leaves(&entry.ret).is_none() || matches!(entry.ret, Type::Array(_)) {
        c.diags.push(Diagnostic::error(
            if matches!(entry.ret, Type::Array(_)) {
                Code::E0503
            } else {
                Code::E0504
            },
            entry.span,
            format!(
                "`{}` returns {}, which the host cannot return yet",
                entry.name, entry.ret
            ),
        ));
    }
    for (_, f) in program.functions.iter() {
        if !f.external {
            c.block(program, f, &f.body);
        }
    }
    c.diags
}

/// The diagnostics that stop `@kernel` `program` from running whole on the CPU; empty when
/// it can.
pub(crate) fn check_kernel(program: &Program) -> Vec<Diagnostic> {
    let mut c = Checker {
        diags: Vec::new(),
        seen: HashSet::new(),
        kernel: true,
    };
    let entry = &program.functions[program.entry];
    if entry.kind != FunctionKind::Kernel {
        c.diags.push(Diagnostic::error(
            Code::E0500,
            entry.span,
            format!(
                "`{}` is a @func; the CPU back end launches @kernel functions",
                entry.name
            ),
        ));
        return c.diags;
    }
    for l in entry.param_locals() {
        let t = &entry.locals[l].ty;
        if leaves(t).is_none() {
            c.diags.push(
                Diagnostic::error(
                    Code::E0504,
                    entry.span,
                    format!(
                        "parameter `{}` has type {t}, which the CPU back end cannot pass yet",
                        entry.locals[l].name
                    ),
                )
                .with_note("kernels on the CPU take numbers, tuples, vectors, @struct values and arrays of numbers"),
            );
        }
    }
    for (_, f) in program.functions.iter() {
        if !f.external {
            c.block(program, f, &f.body);
        }
    }
    c.diags
}

/// [`leaves`] for host `@func`s: shared arrays, references into them and cooperative groups
/// exist only in kernels.
fn host_leaves(t: &Type) -> Option<Vec<super::leaf::Leaf>> {
    fn kernel_only(t: &Type) -> bool {
        match t {
            // Arrays of records and record references: in-place record elements, which
            // only kernels on the CPU run.
            Type::Array(a) => {
                a.space == crate::types::MemSpace::Shared || a.dtype.atomic_scalar().is_none()
            }
            Type::StructRef { .. } => true,
            Type::Ref { space, .. } => *space == crate::types::MemSpace::Shared,
            Type::Group(_) => true,
            t => super::leaf::elements(t).is_some_and(|es| es.iter().any(kernel_only)),
        }
    }
    if kernel_only(t) { None } else { leaves(t) }
}

/// The note of what the CPU back end does not run yet.
const CPU_NOTE: &str =
    "run this kernel on a GPU; docs/semantics.md, \"CPU back end\", lists what the CPU runs";

struct Checker {
    diags: Vec<Diagnostic>,
    seen: HashSet<(Span, Code)>,
    /// Checking a kernel for the CPU back end (not a host `@func`).
    kernel: bool,
}

impl Checker {
    fn report(&mut self, code: Code, span: Span, message: String, note: &str) {
        if self.seen.insert((span, code)) {
            self.diags
                .push(Diagnostic::error(code, span, message).with_note(note));
        }
    }

    fn block(&mut self, program: &Program, f: &Function, b: &[Stmt]) {
        for s in b {
            match &s.kind {
                StmtKind::Eval(e) | StmtKind::Assign(_, e) | StmtKind::Return(Some(e)) => {
                    self.expr(program, f, *e)
                }
                StmtKind::Store {
                    array,
                    indices,
                    value,
                } => {
                    self.expr(program, f, *array);
                    for i in indices {
                        self.expr(program, f, i.value);
                    }
                    self.expr(program, f, *value);
                }
                StmtKind::StoreRef { target, value } => {
                    self.expr(program, f, *target);
                    self.expr(program, f, *value);
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    self.expr(program, f, *cond);
                    self.block(program, f, then);
                    self.block(program, f, otherwise);
                }
                StmtKind::Loop {
                    cond,
                    body,
                    continuing,
                    ..
                } => {
                    self.expr(program, f, *cond);
                    self.block(program, f, body);
                    self.block(program, f, continuing);
                }
                StmtKind::Assert { cond, .. } => self.expr(program, f, *cond),
                StmtKind::Raise { .. } => {}
                StmtKind::Print(pieces) => {
                    for p in pieces {
                        if let crate::ir::PrintPiece::Value { value, .. } = p {
                            self.expr(program, f, *value);
                        }
                    }
                }
                StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
            }
        }
    }

    fn expr(&mut self, program: &Program, f: &Function, h: Handle<Expr>) {
        crate::stack::deep(|| self.expr_inner(program, f, h))
    }

    fn expr_inner(&mut self, program: &Program, f: &Function, h: Handle<Expr>) {
        let span = f.exprs.span(h);
        let e = &f.exprs[h];
        match e {
            // Reshapes and `view(dtype)`: new descriptors of the same memory.
            Expr::Reshape { .. } | Expr::Reinterpret(_) if self.kernel => {}
            // In-place record elements: addresses into the caller's or the block's memory.
            Expr::FieldRef(..) | Expr::FieldArray(..) | Expr::Deref(_) if self.kernel => {}
            // Constant arrays of numbers and of records (their bytes in the C layout, read
            // in place as arrays of records in global memory are).
            Expr::ConstArray(_) if self.kernel => return,
            Expr::Asm(_) | Expr::Launch(_) if self.kernel => {
                let what = if matches!(e, Expr::Asm(_)) {
                    "inline PTX (`asm`)"
                } else {
                    "a launch from device code"
                };
                self.report(
                    Code::E0501,
                    span,
                    format!("{what} is not supported by the CPU back end"),
                    CPU_NOTE,
                );
                return;
            }
            Expr::Intrinsic(Intrinsic::Cg(crate::ir::CgOp::Reduce(..)), _)
                if self.kernel
                    && f.ty(h).as_scalar().is_some_and(|s| {
                        s.is_float() && !matches!(s, Scalar::Float32 | Scalar::Float64)
                    }) =>
            {
                self.report(
                    Code::E0501,
                    span,
                    "`cg.reduce` of half-precision floats is not supported by the CPU back end yet"
                        .into(),
                    CPU_NOTE,
                );
                return;
            }
            Expr::Intrinsic(op, _) if self.kernel && !cpu_intrinsic(*op) => {
                self.report(
                    Code::E0501,
                    span,
                    format!(
                        "`{}` is not supported by the CPU back end yet",
                        op.python_name()
                    ),
                    CPU_NOTE,
                );
                return;
            }
            Expr::Intrinsic(..) if self.kernel => {}
            Expr::Atomic { op, target, .. }
                if self.kernel && !host_atomic(*op, f.ty(*target), true) =>
            {
                self.report(
                    Code::E0502,
                    span,
                    format!(
                        "atomic `{}` is not supported by the CPU back end yet",
                        op.method()
                    ),
                    "on the CPU every atomic operation is provided on elements of real number types, and `load`, `store`, `exch` and `cas` on complex64 and complex128",
                );
                return;
            }
            Expr::Atomic { .. } if self.kernel => {}
            Expr::StaticArray { .. } | Expr::DynamicShared
                if self.kernel && leaves(f.ty(h)).is_none() =>
            {
                self.report(
                    Code::E0503,
                    span,
                    "arrays of structs are not supported by the CPU back end yet".into(),
                    CPU_NOTE,
                );
                return;
            }
            // Shared, local and dynamic shared arrays of numbers run on the CPU.
            Expr::StaticArray { .. } | Expr::DynamicShared if self.kernel => {}
            Expr::Asm(_) | Expr::Launch(_) => {
                let what = if matches!(e, Expr::Asm(_)) {
                    "inline PTX (`asm`)"
                } else {
                    "a launch from device code"
                };
                self.report(
                    Code::E0501,
                    span,
                    format!("{what} exists only on the device"),
                    GUARD,
                );
                return;
            }
            Expr::Intrinsic(op, _) if device_only(*op) => {
                self.report(
                    Code::E0501,
                    span,
                    format!("`{}` exists only on the device", op.python_name()),
                    GUARD,
                );
                return;
            }
            Expr::Atomic { op, target, .. } if !host_atomic(*op, f.ty(*target), false) => {
                self.report(
                    Code::E0502,
                    span,
                    format!("atomic `{}` is not supported on the host yet", op.method()),
                    "on the host every atomic operation but `wait` is provided on elements of real number types, and `load`, `store`, `exch` and `cas` on complex64",
                );
                return;
            }
            // In-place record elements run in kernels on the CPU (above), not yet in host
            // `@func`s.
            Expr::Reshape { .. }
            | Expr::Reinterpret(_)
            | Expr::FieldRef(..)
            | Expr::FieldArray(..)
            | Expr::Deref(_) => {
                self.report(
                    Code::E0503,
                    span,
                    "reshapes, `view(dtype)` and in-place struct elements are not supported on the host yet"
                        .into(),
                    "index the array itself: `a[i]`, `a[i, j]`",
                );
                return;
            }
            Expr::StaticArray { .. } | Expr::DynamicShared if host_leaves(f.ty(h)).is_none() => {
                self.report(
                    Code::E0503,
                    span,
                    "shared arrays (and local arrays of structs) are not supported on the host"
                        .into(),
                    GUARD,
                );
                return;
            }
            Expr::StaticArray { shape, .. } => {
                let elem = f
                    .ty(h)
                    .as_array()
                    .map_or(1, |a| super::leaf::elem_layout(&a.dtype).0);
                let bytes = shape
                    .iter()
                    .try_fold(elem, |acc, d| acc.checked_mul(*d))
                    .unwrap_or(u64::MAX);
                if bytes > MAX_LOCAL_BYTES {
                    self.report(
                        Code::E0503,
                        span,
                        format!(
                            "this local array takes {bytes} bytes; on the host a local array may take at most {MAX_LOCAL_BYTES} (512 KiB, a thread's local memory on the device)"
                        ),
                        "local arrays live on the host thread's stack",
                    );
                    return;
                }
            }
            Expr::DynamicShared => {
                self.report(
                    Code::E0503,
                    span,
                    "dynamic shared memory is not supported on the host".into(),
                    GUARD,
                );
                return;
            }
            Expr::ConstArray(_) => {
                self.report(
                    Code::E0503,
                    span,
                    "module-level constant arrays are not supported on the host yet".into(),
                    GUARD,
                );
                return;
            }
            _ => {}
        }
        // A local holding an array is reported where the array comes from (a parameter
        // or an allocation), not at every use.
        if let Expr::Call(callee, _) = e
            && program.functions[*callee].external
        {
            let name = &program.functions[*callee].name;
            self.report(
                Code::E0505,
                span,
                format!("`{name}` is a CUDA C++ device function (`extern`); it exists only on the device"),
                GUARD,
            );
            return;
        }
        let has_leaves = if self.kernel {
            leaves(f.ty(h)).is_some()
        } else {
            host_leaves(f.ty(h)).is_some()
        };
        if !has_leaves && !matches!(e, Expr::Local(_)) {
            let code = if matches!(f.ty(h), Type::Array(_)) {
                Code::E0503
            } else {
                Code::E0504
            };
            self.report(
                code,
                span,
                format!(
                    "values of type {} are not supported on the host yet",
                    f.ty(h)
                ),
                "host functions compute on numbers, tuples, vectors and @struct values",
            );
            return;
        }
        for c in e.operands() {
            self.expr(program, f, c);
        }
    }
}

/// Whether the host lowers atomic `op` on a reference of type `target`.
fn host_atomic(op: AtomicOp, target: &Type, kernel: bool) -> bool {
    let Type::Ref { dtype, record, .. } = target else {
        return false;
    };
    if record.is_some() {
        // Struct elements (§9.2) are device-only: their 16-byte form has no Cranelift
        // counterpart, and the host does not convert structs to bits.
        return false;
    }
    if dtype.is_complex() {
        // complex64's 64 bits move as one, as on the device; in a kernel on the CPU,
        // complex128's 16 bytes move under a lock of the runtime
        // (`emit::atomics::wide_complex_atomic`); host `@func`s do not have them yet.
        return (*dtype == Scalar::Complex64 || (kernel && *dtype == Scalar::Complex128))
            && matches!(
                op,
                AtomicOp::Load | AtomicOp::Store | AtomicOp::Exch | AtomicOp::Cas
            );
    }
    match op {
        AtomicOp::Load
        | AtomicOp::Store
        | AtomicOp::Exch
        | AtomicOp::Cas
        | AtomicOp::Add
        | AtomicOp::Sub
        | AtomicOp::And
        | AtomicOp::Or
        | AtomicOp::Xor
        | AtomicOp::Notify => true,
        AtomicOp::Max
        | AtomicOp::Min
        | AtomicOp::NanMax
        | AtomicOp::NanMin
        | AtomicOp::Inc
        | AtomicOp::Dec => dtype.is_integer() || dtype.is_float(),
        // A single host thread waiting for a value only it could change would never return;
        // a kernel's thread on the CPU polls, letting the others run.
        AtomicOp::Wait => kernel,
    }
}

/// Whether an intrinsic needs a GPU (thread positions, barriers, warp operations). An
/// exhaustive match, so a new intrinsic must say whether the host runs it; the host emitter
/// (`emit/intrinsics.rs`) lowers exactly those that are not device-only, and the builtin
/// table's host column is tested against this (`tests/builtin_table.rs`).
pub(crate) fn device_only(op: Intrinsic) -> bool {
    op.flags().device_only
}

/// Whether the CPU back end runs intrinsic `op` in a kernel: every one the host runs, the
/// thread positions, block barriers, warp collectives, fences, random numbers and the
/// cooperative groups but those listed here. An exhaustive match, so a new intrinsic must
/// say whether the CPU runs it.
pub(crate) fn cpu_intrinsic(op: Intrinsic) -> bool {
    use crate::ir::CgOp;
    use crate::types::GroupKind;
    match op {
        Intrinsic::ThreadIdx(_)
        | Intrinsic::BlockIdx(_)
        | Intrinsic::BlockDim(_)
        | Intrinsic::GridDim(_)
        | Intrinsic::LaneId
        | Intrinsic::WarpSize
        | Intrinsic::SyncThreads
        | Intrinsic::SyncThreadsCount
        | Intrinsic::SyncThreadsAnd
        | Intrinsic::SyncThreadsOr
        | Intrinsic::ThreadFence(..)
        | Intrinsic::ActiveMask
        | Intrinsic::LaneMaskLt
        | Intrinsic::SyncWarp
        | Intrinsic::Vote(_)
        | Intrinsic::Shfl(_)
        | Intrinsic::MatchAny
        | Intrinsic::MatchAll
        | Intrinsic::DynamicSharedSize => true,
        Intrinsic::Cg(op) => match op {
            CgOp::Make(_)
            | CgOp::ThreadRank(_)
            | CgOp::NumThreads(_)
            | CgOp::Sync(_)
            | CgOp::MetaRank(_)
            | CgOp::MetaSize(_)
            | CgOp::BlockRank
            | CgOp::NumBlocks
            | CgOp::BarrierArrive
            | CgOp::BarrierWait
            | CgOp::MemcpyAsync(_)
            | CgOp::AsyncCommit
            | CgOp::AsyncWait(_)
            | CgOp::AsyncWaitAll => true,
            CgOp::Shfl(kind, _) | CgOp::Vote(kind, _) => {
                matches!(kind, GroupKind::Tile(_) | GroupKind::Coalesced)
            }
            // In the device's order of operations (half precision is refused by the check,
            // with the type at hand).
            CgOp::Reduce(kind, _) => matches!(kind, GroupKind::Tile(_) | GroupKind::Coalesced),
        },
        Intrinsic::Ldexp
        | Intrinsic::Frexp
        | Intrinsic::Modf
        | Intrinsic::Sincos
        | Intrinsic::Sad
        | Intrinsic::RoundDigits => true,
        // Thread block clusters: a cluster's blocks run together (`runtime::cpu`).
        Intrinsic::ClusterIdx(_)
        | Intrinsic::ClusterDim(_)
        | Intrinsic::BlockIdxInCluster(_)
        | Intrinsic::BlockRankInCluster
        | Intrinsic::ClusterSize
        | Intrinsic::ClusterArrive(_)
        | Intrinsic::ClusterWait
        | Intrinsic::ClusterSync
        | Intrinsic::MapSharedRank => true,
        // mbarriers, bulk copies, TMA with the CPU's tensor maps, `wgmma` on K-major
        // operands, `elect_one` and the fences (`emit::hopper`); not `wgmma` of a
        // transposed (MN-major) operand.
        Intrinsic::Hopper(h) => match h {
            crate::ir::HopperOp::Wgmma(w) => !w.trans_a && !w.trans_b,
            _ => true,
        },
        // WMMA, `mma.sync` m16n8k16 and `ldmatrix` (`emit::tensor`).
        Intrinsic::Tensor(_) => true,
        op => !device_only(op),
    }
}
