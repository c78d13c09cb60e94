//! Block barriers under thread-dependent control (E0241): the spec says `syncthreads()` and
//! its `_count`/`_and`/`_or` forms "shall be called by every thread in the thread block"
//! (§ *Thread Block Synchronization*), and the same holds of every barrier whose scope spans
//! the block: a group's `sync()` for the block or the grid, the split block barrier, the
//! cluster barriers. Which intrinsics those are is read from their declarations
//! ([`Intrinsic::flags`], `BarrierScope::spans_blocks`), not listed here. A barrier inside
//! an `if` or a loop whose condition depends on the thread (`if thread_idx.x == 0:
//! syncthreads()`) is reached by some threads of a block and not by others, so it is
//! diagnosed.
//!
//! This is a divergence analysis on the checked IR. A value is *thread-dependent* when it is
//! computed from `thread_idx`, `lane_id`, `lanemask_lt`, `activemask`, a shuffle, a vote or
//! match (which agree only within a warp), an atomic's result, a load through a
//! thread-dependent index, a local assigned a thread-dependent value or assigned under
//! thread-dependent control, an element of a thread's `local_array` that got a
//! thread-dependent value, or a call with a thread-dependent argument or whose callee returns
//! one. Block-uniform values are everything else: parameters, `block_idx`, `block_dim`,
//! `grid_dim`, `warp_size`, the `syncthreads_*` results, loads of shared or global memory
//! through uniform indices. A call of a `@func` that reaches a barrier counts as a barrier
//! at the call.
//!
//! It only reports what it can prove, so it misses some cases (documented in
//! `docs/semantics.md` §9.4): threads that left early through a thread-dependent `return`,
//! `break` or `continue` before a barrier, barriers reached through a `@func` parameter that is
//! thread-dependent only at some call sites (each function is analysed with uniform
//! parameters), and values that travel through shared or global memory.

use crate::diag::{Code, Diagnostic, Span};
use crate::ir::{BarrierScope, CgOp, Expr, Function, Handle, Intrinsic, Program, Stmt, StmtKind};
use crate::types::{MemSpace, Type};

/// What a caller needs to know about a function.
#[derive(Clone, Copy, Default)]
struct Summary {
    /// It returns a thread-dependent value (with uniform arguments).
    ret_dependent: bool,
    /// A barrier it reaches (its span), directly or through a call.
    barrier: Option<Span>,
}

/// E0241 for each barrier of `program` under thread-dependent control.
pub fn check(program: &Program) -> Vec<Diagnostic> {
    let mut summaries: Vec<Summary> = Vec::with_capacity(program.functions.len());
    let mut diags = Vec::new();
    // Callees come before their callers, but for recursive calls (see `Expr::Call` below).
    for (_, f) in program.functions.iter() {
        let mut a = Analysis {
            f,
            summaries: &summaries,
            dep: vec![false; f.locals.len()],
            changed: false,
            report: false,
            summary: Summary::default(),
            diags: Vec::new(),
            memo: Vec::new(),
        };
        if !f.external {
            // A monotone fixpoint: locals only ever become thread-dependent.
            loop {
                a.changed = false;
                a.memo = vec![None; f.exprs.len()];
                a.block(&f.body, None);
                if !a.changed {
                    break;
                }
            }
            a.report = true;
            a.memo = vec![None; f.exprs.len()];
            a.block(&f.body, None);
        }
        diags.append(&mut a.diags);
        summaries.push(a.summary);
    }
    diags
}

struct Analysis<'a> {
    f: &'a Function,
    summaries: &'a [Summary],
    /// Thread-dependent locals.
    dep: Vec<bool>,
    changed: bool,
    /// The last pass: record the summary and report barriers.
    report: bool,
    summary: Summary,
    diags: Vec<Diagnostic>,
    /// Each expression's answer in this pass (the IR may share an expression).
    memo: Vec<Option<bool>>,
}

impl Analysis<'_> {
    fn mark(&mut self, l: usize) {
        if !self.dep[l] {
            self.dep[l] = true;
            self.changed = true;
        }
    }

    /// `ctrl`: the span of the innermost thread-dependent condition around the block.
    fn block(&mut self, b: &[Stmt], ctrl: Option<Span>) {
        for s in b {
            crate::stack::deep(|| self.stmt(s, ctrl));
        }
    }

    fn stmt(&mut self, s: &Stmt, ctrl: Option<Span>) {
        match &s.kind {
            StmtKind::Eval(e) => {
                self.expr(*e, ctrl);
            }
            StmtKind::Assign(l, e) => {
                if self.expr(*e, ctrl) || ctrl.is_some() {
                    self.mark(l.index());
                }
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => {
                let mut d = self.expr(*array, ctrl);
                for i in indices {
                    d |= self.expr(i.value, ctrl);
                }
                d |= self.expr(*value, ctrl) || ctrl.is_some();
                self.private_store(*array, d);
            }
            StmtKind::StoreRef { target, value } => {
                self.expr(*target, ctrl);
                self.expr(*value, ctrl);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let inner = self.condition(*cond, ctrl);
                self.block(then, inner);
                self.block(otherwise, inner);
            }
            StmtKind::Loop {
                cond,
                body,
                continuing,
                ..
            } => {
                let inner = self.condition(*cond, ctrl);
                self.block(body, inner);
                self.block(continuing, inner);
                // The condition is evaluated again with the locals the body changed.
                self.condition(*cond, ctrl);
            }
            StmtKind::Return(Some(e)) => {
                if (self.expr(*e, ctrl) || ctrl.is_some()) && self.report {
                    self.summary.ret_dependent = true;
                }
            }
            StmtKind::Assert { cond, .. } => {
                self.expr(*cond, ctrl);
            }
            StmtKind::Print(pieces) => {
                for p in pieces {
                    if let crate::ir::PrintPiece::Value { value, .. } = p {
                        self.expr(*value, ctrl);
                    }
                }
            }
            StmtKind::Return(None)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Raise { .. } => {}
        }
    }

    /// The control a block under `cond` runs with.
    fn condition(&mut self, cond: Handle<Expr>, ctrl: Option<Span>) -> Option<Span> {
        if self.expr(cond, ctrl) {
            ctrl.or(Some(self.f.exprs.span(cond)))
        } else {
            ctrl
        }
    }

    /// A store into a thread's own `local_array` of a thread-dependent value makes the
    /// array's later loads thread-dependent (shared and global memory are not followed).
    fn private_store(&mut self, array: Handle<Expr>, dependent: bool) {
        if !dependent {
            return;
        }
        if let (Expr::Local(l), Type::Array(at)) = (&self.f.exprs[array], self.f.ty(array))
            && at.space == MemSpace::Local
        {
            self.mark(l.index());
        }
    }

    /// Whether `e` is thread-dependent; reports barriers under `ctrl` on the last pass.
    fn expr(&mut self, h: Handle<Expr>, ctrl: Option<Span>) -> bool {
        if let Some(d) = self.memo[h.index()] {
            return d;
        }
        // Expressions and blocks nest as deep as the source does (`stack::deep`).
        let d = crate::stack::deep(|| self.expr_inner(h, ctrl));
        self.memo[h.index()] = Some(d);
        d
    }

    fn expr_inner(&mut self, h: Handle<Expr>, ctrl: Option<Span>) -> bool {
        let f = self.f;
        let e = &f.exprs[h];
        let mut d = false;
        for o in e.operands() {
            d |= self.expr(o, ctrl);
        }
        match e {
            Expr::Local(l) => self.dep[l.index()],
            Expr::Intrinsic(op, _) => {
                let flags = op.flags();
                if let Some(scope) = flags.barrier.filter(|s| s.spans_blocks()) {
                    self.barrier(h, Some((*op, scope)), None, ctrl);
                    // The block's threads all get the same count, conjunction or disjunction.
                    return false;
                }
                d || flags.per_thread
            }
            Expr::Call(g, _) => {
                // Callees come before their callers, except in recursion (§1.4): a call of a
                // function not summarized yet returns a thread-dependent value and is not
                // known to reach a barrier (no false positives; such a barrier is missed).
                let s = self.summaries.get(g.index()).copied().unwrap_or(Summary {
                    ret_dependent: true,
                    barrier: None,
                });
                if let Some(inner) = s.barrier {
                    self.barrier(h, None, Some(inner), ctrl);
                }
                d || s.ret_dependent
            }
            Expr::Atomic { .. } => true,
            _ => d,
        }
    }

    /// Records a barrier (`op`, or a call that reaches `inner`) and reports it under a
    /// thread-dependent `ctrl`.
    fn barrier(
        &mut self,
        h: Handle<Expr>,
        op: Option<(Intrinsic, BarrierScope)>,
        inner: Option<Span>,
        ctrl: Option<Span>,
    ) {
        if !self.report {
            return;
        }
        let span = self.f.exprs.span(h);
        self.summary.barrier.get_or_insert(span);
        let Some(cond) = ctrl else { return };
        let (what, threads) = match op {
            Some((op, scope)) => (
                format!("`{}` (a {} barrier)", barrier_name(op), scope_name(scope)),
                scope.threads(),
            ),
            None => (
                "a call that reaches a block barrier".to_string(),
                "every thread of the block",
            ),
        };
        let mut d = Diagnostic::error(
            Code::E0241,
            span,
            format!("{what} under a condition that depends on the thread"),
        )
        .with_secondary(
            cond,
            "this condition differs between the threads of a block",
        );
        if let Some(inner) = inner {
            d = d.with_secondary(inner, "the barrier it reaches");
        }
        self.diags.push(d.with_note(format!(
            "{threads} must reach a barrier (the spec's User Requirement); \
             move it out of the condition, or make the condition the same for the whole block"
        )));
    }
}

/// How the source spells a barrier.
fn barrier_name(op: Intrinsic) -> &'static str {
    match op {
        Intrinsic::SyncThreads => "syncthreads",
        Intrinsic::SyncThreadsCount => "syncthreads_count",
        Intrinsic::SyncThreadsAnd => "syncthreads_and",
        Intrinsic::SyncThreadsOr => "syncthreads_or",
        Intrinsic::ClusterSync => "cluster_sync",
        Intrinsic::ClusterArrive(_) => "cluster_arrive",
        Intrinsic::ClusterWait => "cluster_wait",
        Intrinsic::Cg(CgOp::BarrierArrive) => "barrier_arrive",
        Intrinsic::Cg(CgOp::BarrierWait) => "barrier_wait",
        Intrinsic::Cg(CgOp::Sync(_)) => "sync()",
        Intrinsic::SyncWarp => "syncwarp",
        _ => "barrier",
    }
}

/// The scope's word in "a block barrier".
fn scope_name(s: BarrierScope) -> &'static str {
    match s {
        BarrierScope::Warp => "warp",
        BarrierScope::Block => "block",
        BarrierScope::Cluster => "cluster",
        BarrierScope::Grid => "grid",
    }
}
