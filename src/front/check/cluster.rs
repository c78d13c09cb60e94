//! Thread block clusters (sm_90), a pydevice extension of the specification (§18.1): the
//! cluster's positions, its barrier, and distributed shared memory (`map_shared_rank`).
//!
//! Every entity here needs sm_90; used while compiling for an older architecture it is
//! E0740, and the program becomes specific to the architecture it was checked for.

use super::*;
use crate::diag::Code;
use crate::front::builtins::table::{self, Op, Rule};
use crate::ir::MemoryOrder;
use crate::types::{ArrayType, MemSpace};

impl Specializer<'_> {
    /// Records that the program depends on the architecture; `Err(sm)` when it is older
    /// than sm_90. The host passes: the host checker refuses device-only entities itself.
    fn sm90(&mut self) -> Result<(), u32> {
        if self.sm == crate::ir::HOST_TARGET {
            return Ok(());
        }
        self.target_used = true;
        if self.sm >= 90 { Ok(()) } else { Err(self.sm) }
    }

    /// E0740 at `span` (the `cluster=` option) unless compiling for sm_90 or newer.
    pub(super) fn require_sm90(&mut self, what: &str, span: Span) {
        if let Err(sm) = self.sm90() {
            self.diags.push(sm90_diagnostic(what, sm, span));
        }
    }
}

fn sm90_diagnostic(what: &str, sm: u32, span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::E0740,
        span,
        format!(
            "{what} needs thread block clusters, which sm_90 introduced; this compiles for sm_{sm}"
        ),
    )
    .with_note("compile for sm_90 or newer, or guard the code with `if target(provides(sm90)):`")
}

impl FnCx<'_, '_> {
    /// E0740 when compiling for an architecture older than sm_90.
    pub(super) fn require_sm90(&mut self, what: &str, span: Span) -> Option<()> {
        match self.s.sm90() {
            Ok(()) => Some(()),
            Err(sm) => {
                self.diags.push(sm90_diagnostic(what, sm, span));
                None
            }
        }
    }

    /// The value of a cluster position entity (`cluster_idx`, `block_rank_in_cluster`, …),
    /// or of one axis of a `Dim3` one.
    pub(super) fn cluster_position(
        &mut self,
        b: Builtin,
        axis: Option<Axis>,
        span: Span,
    ) -> Option<Val> {
        let name = super::calls::builtin_name(b);
        self.require_sm90(&format!("`{name}`"), span)?;
        let dim3 = |a: Axis| match b {
            Builtin::ClusterIdx => Some(Intrinsic::ClusterIdx(a)),
            Builtin::ClusterDim => Some(Intrinsic::ClusterDim(a)),
            Builtin::BlockIdxInCluster => Some(Intrinsic::BlockIdxInCluster(a)),
            _ => None,
        };
        let u32t = Type::Scalar(Scalar::UInt32);
        match b {
            Builtin::BlockRankInCluster | Builtin::ClusterSize => {
                let op = if b == Builtin::ClusterSize {
                    Intrinsic::ClusterSize
                } else {
                    Intrinsic::BlockRankInCluster
                };
                let ty = Type::Scalar(Scalar::Int32);
                let e = self.push(Expr::Intrinsic(op, vec![]), ty.clone(), span);
                let mut v = self.val(e, ty, span);
                v.nonneg = true;
                Some(v)
            }
            _ => {
                if let Some(a) = axis {
                    let op = dim3(a)?;
                    let e = self.push(Expr::Intrinsic(op, vec![]), u32t.clone(), span);
                    return Some(self.val(e, u32t, span));
                }
                let mut es = Vec::new();
                for a in [Axis::X, Axis::Y, Axis::Z] {
                    let op = dim3(a)?;
                    es.push(self.push(Expr::Intrinsic(op, vec![]), u32t.clone(), span));
                }
                let ty = Type::Vector {
                    elem: Scalar::UInt32,
                    len: 3,
                };
                let e = self.push(Expr::Tuple(es), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
        }
    }

    /// A call of a cluster builtin typed by `rule`.
    pub(super) fn cluster_call(
        &mut self,
        rule: Rule,
        entry: table::Entry,
        b: Builtin,
        c: &ast::ExprCall,
    ) -> Option<Val> {
        let span = sp(c);
        let name = super::calls::builtin_name(b);
        let Op::Intrinsic(op) = entry.op() else {
            return self.table_mismatch(b, span);
        };
        let a = self.bind(c, &name, entry.params(), entry.required())?;
        self.require_sm90(&format!("`{name}`"), span)?;
        match rule {
            Rule::ClusterBarrier => {
                let op = match (op, a.first().copied().flatten()) {
                    (Intrinsic::ClusterArrive(_), Some(m)) => {
                        let order = self.memory_order(Some(m))?;
                        match order {
                            MemoryOrder::Release => Intrinsic::ClusterArrive(false),
                            MemoryOrder::Relaxed => Intrinsic::ClusterArrive(true),
                            other => {
                                self.diags.push(
                                    Diagnostic::error(
                                        Code::E0404,
                                        sp(m),
                                        format!("`cluster_arrive` cannot be `{}`", other.name()),
                                    )
                                    .with_note("`barrier.cluster.arrive` is 'release' (the default) or 'relaxed'; `cluster_wait` is the acquire side"),
                                );
                                return None;
                            }
                        }
                    }
                    (op, _) => op,
                };
                Some(self.intrinsic(op, vec![], Type::None, span))
            }
            Rule::MapSharedRank => {
                let arr = self.eval(a[0]?)?;
                let at = match &arr.ty {
                    Type::Array(at) if at.space == MemSpace::Shared => at.clone(),
                    other => {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0741,
                                arr.span,
                                format!("`map_shared_rank` needs a shared array, found {other}"),
                            )
                            .with_label("not in this block's shared memory")
                            .with_note("pass an array made by `shared_array(...)` or `dynamic_shared_array()`, or a view of one"),
                        );
                        return None;
                    }
                };
                let rank = self.int32_arg(a[1]?)?;
                let ty = Type::Array(ArrayType {
                    space: MemSpace::Cluster,
                    ..at
                });
                Some(self.intrinsic(op, vec![arr.e, rank], ty, span))
            }
            _ => self.table_mismatch(b, span),
        }
    }
}
