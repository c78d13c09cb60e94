//! References that outlive their storage (E0242): a `@func` that returns its own
//! `local_array`, a view of it, or an `atomic_ref` (or field reference) into it. A local
//! array lives in the frame of the call that made it, so the caller would use memory that no
//! longer belongs to it; the spec's `atomic_ref` says "Users shall preserve the lifetime of
//! `array` for as long as the returned `AtomicInterface` may be used. [User Requirement]",
//! and the same holds of views.
//!
//! A per-function walk of the checked IR: a value *points into the frame* when it is a
//! `local_array` made in this function, a view, reshape, reinterpretation, element or field
//! reference of such a value, a local ever assigned one, a tuple holding one, or the result
//! of a call given one (a callee may return a view of its argument). Shared arrays are
//! static (one per call site for the whole block) and may be returned.

use crate::diag::{Code, Diagnostic, Span};
use crate::ir::{Expr, Function, FunctionKind, Handle, Program, Stmt, StmtKind};
use crate::types::{MemSpace, Type};

/// E0242 for each `return` of a value that points into the returning function's frame.
pub fn check(program: &Program) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for (_, f) in program.functions.iter() {
        if f.external || f.kind == FunctionKind::Kernel || !may_point(&f.ret) {
            continue;
        }
        let mut w = Walk {
            f,
            owner: vec![None; f.locals.len()],
            changed: true,
        };
        while w.changed {
            w.changed = false;
            w.block(&f.body, &mut Vec::new());
        }
        let mut returns = Vec::new();
        w.block(&f.body, &mut returns);
        for (span, alloc) in returns {
            diags.push(
                Diagnostic::error(
                    Code::E0242,
                    span,
                    format!(
                        "`{}` returns a reference into its own `local_array`, which ends with the call",
                        f.name
                    ),
                )
                .with_secondary(alloc, "this local array belongs to the call")
                .with_note(
                    "make the array in the caller and pass it in, or return the values instead \
                     of a view or `atomic_ref` of them",
                ),
            );
        }
    }
    diags
}

/// Whether a value of type `t` can refer to memory (an array, a reference, or an aggregate
/// holding one).
fn may_point(t: &Type) -> bool {
    match t {
        Type::Array(_) | Type::Ref { .. } | Type::StructRef { .. } => true,
        Type::Tuple(ts) => ts.iter().any(may_point),
        _ => false,
    }
}

struct Walk<'a> {
    f: &'a Function,
    /// For each local that may point into the frame, the allocation it points into.
    owner: Vec<Option<Span>>,
    changed: bool,
}

impl Walk<'_> {
    fn block(&mut self, b: &[Stmt], returns: &mut Vec<(Span, Span)>) {
        for s in b {
            match &s.kind {
                StmtKind::Assign(l, e) => {
                    if let Some(a) = self.points(*e)
                        && self.owner[l.index()].is_none()
                    {
                        self.owner[l.index()] = Some(a);
                        self.changed = true;
                    }
                }
                StmtKind::If {
                    then, otherwise, ..
                } => crate::stack::deep(|| {
                    self.block(then, returns);
                    self.block(otherwise, returns);
                }),
                StmtKind::Loop {
                    body, continuing, ..
                } => crate::stack::deep(|| {
                    self.block(body, returns);
                    self.block(continuing, returns);
                }),
                StmtKind::Return(Some(e)) => {
                    if let Some(a) = self.points(*e) {
                        returns.push((s.span, a));
                    }
                }
                _ => {}
            }
        }
    }

    /// The frame allocation `e` may point into.
    fn points(&self, h: Handle<Expr>) -> Option<Span> {
        crate::stack::deep(|| self.points_inner(h))
    }

    fn points_inner(&self, h: Handle<Expr>) -> Option<Span> {
        let f = self.f;
        if !may_point(f.ty(h)) {
            return None;
        }
        match &f.exprs[h] {
            Expr::StaticArray { .. } => match f.ty(h) {
                Type::Array(at) if at.space == MemSpace::Local => Some(f.exprs.span(h)),
                _ => None,
            },
            Expr::Local(l) => self.owner[l.index()],
            Expr::View { array: a, .. }
            | Expr::Reshape { array: a, .. }
            | Expr::ElementRef { array: a, .. }
            | Expr::Load { array: a, .. }
            | Expr::Reinterpret(a)
            | Expr::FieldRef(a, _)
            | Expr::FieldArray(a, _)
            | Expr::Extract(a, _) => self.points(*a),
            Expr::Tuple(xs) | Expr::Call(_, xs) => xs.iter().find_map(|x| self.points(*x)),
            Expr::Select {
                then, otherwise, ..
            } => self.points(*then).or_else(|| self.points(*otherwise)),
            _ => None,
        }
    }
}
