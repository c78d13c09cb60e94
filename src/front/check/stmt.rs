//! Statements: assignment (with local type inference), control flow, `for` over `range`,
//! and `return`.

use super::*;
use crate::diag::Code;

/// Calls `f` with each name an assignment binds in `stmts` (nested blocks included) and
/// whether it is a `for` loop's target.
fn each_assigned_name(stmts: &[ast::Stmt], f: &mut impl FnMut(&str, bool)) {
    fn target(e: &ast::Expr, loop_var: bool, f: &mut impl FnMut(&str, bool)) {
        match e {
            ast::Expr::Name(n) => f(n.id.as_str(), loop_var),
            ast::Expr::Tuple(ast::ExprTuple { elts, .. })
            | ast::Expr::List(ast::ExprList { elts, .. }) => {
                elts.iter().for_each(|x| target(x, loop_var, f))
            }
            _ => {}
        }
    }
    for s in stmts {
        match s {
            ast::Stmt::Assign(a) => a.targets.iter().for_each(|t| target(t, false, f)),
            ast::Stmt::AugAssign(a) => target(&a.target, false, f),
            ast::Stmt::AnnAssign(a) => target(&a.target, false, f),
            ast::Stmt::For(fs) => {
                target(&fs.target, true, f);
                each_assigned_name(&fs.body, f);
                each_assigned_name(&fs.orelse, f);
            }
            ast::Stmt::While(w) => {
                each_assigned_name(&w.body, f);
                each_assigned_name(&w.orelse, f);
            }
            ast::Stmt::If(i) => {
                each_assigned_name(&i.body, f);
                for c in &i.elif_else_clauses {
                    each_assigned_name(&c.body, f);
                }
            }
            _ => {}
        }
    }
}

/// Names a function assigns (its locals, by Python's scoping rule).
pub(super) fn assigned_names(stmts: &[ast::Stmt], out: &mut HashSet<String>) {
    each_assigned_name(stmts, &mut |n, _| {
        out.insert(n.to_string());
    });
}

/// Counts the places that assign each name (a `for` target and `x += 1` count too; a loop
/// variable counts twice, as it takes many values).
pub(super) fn count_assignments(stmts: &[ast::Stmt], out: &mut HashMap<String, usize>) {
    each_assigned_name(stmts, &mut |n, loop_var| {
        *out.entry(n.to_string()).or_default() += if loop_var { 2 } else { 1 };
    });
}

/// True when every path through the block ends in `return`.
pub(super) fn always_returns(block: &Block) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If {
            then, otherwise, ..
        } => always_returns(then) && always_returns(otherwise),
        _ => false,
    })
}

pub(super) fn contains_call(e: &ast::Expr) -> bool {
    use ruff_python_ast::visitor::{Visitor, walk_expr};
    struct V(bool);
    impl<'a> Visitor<'a> for V {
        fn visit_expr(&mut self, e: &'a ast::Expr) {
            if matches!(e, ast::Expr::Call(_)) {
                self.0 = true;
            }
            walk_expr(self, e);
        }
    }
    let mut v = V(false);
    v.visit_expr(e);
    v.0
}

fn stmt_name(s: &ast::Stmt) -> &'static str {
    use ast::Stmt::*;
    match s {
        FunctionDef(_) => "nested `def`",
        ClassDef(_) => "`class`",
        Delete(_) => "`del`",
        TypeAlias(_) => "`type`",
        With(_) => "`with`",
        Match(_) => "`match`",
        Raise(_) => "`raise`",
        Try(_) => "`try`",
        Import(_) | ImportFrom(_) => "`import` inside a function",
        Global(_) => "`global`",
        Nonlocal(_) => "`nonlocal`",
        _ => "this statement",
    }
}

impl FnCx<'_, '_> {
    pub(super) fn block(&mut self, stmts: &[ast::Stmt]) -> Block {
        let mut out = Vec::new();
        for s in stmts {
            self.stmt(s, &mut out);
        }
        out
    }

    pub(super) fn stmt(&mut self, s: &ast::Stmt, out: &mut Block) {
        let span = sp(s);
        match s {
            ast::Stmt::Expr(e) => {
                if matches!(e.value.as_ref(), ast::Expr::StringLiteral(_)) {
                    return; // a docstring
                }
                if let ast::Expr::Call(c) = e.value.as_ref()
                    && let Some(Item::Builtin(Builtin::NumbaCacheHint(true))) =
                        self.callee_item(&c.func)
                {
                    self.numba_store_hint(c, out);
                    return;
                }
                let v = self.expr(&e.value);
                if let Some(v) = self.value_of(v) {
                    out.push(Stmt {
                        kind: StmtKind::Eval(v.e),
                        span,
                    });
                }
            }
            ast::Stmt::Assign(a) => {
                let v = self.expr(&a.value);
                let Some(mut v) = self.value_of(v) else {
                    // Already reported: later uses of the targets stay quiet.
                    let mut names = HashSet::new();
                    assigned_names(std::slice::from_ref(s), &mut names);
                    self.seen_assigned.extend(names.iter().cloned());
                    self.poisoned.extend(names);
                    return;
                };
                if a.targets.len() > 1 {
                    let t = self.new_temp(v.ty.clone(), v.span);
                    out.push(Stmt {
                        kind: StmtKind::Assign(t, v.e),
                        span,
                    });
                    v.e = self.push(Expr::Local(t), v.ty.clone(), v.span);
                }
                for t in &a.targets {
                    let mut v = v.clone();
                    if a.targets.len() > 1 {
                        v.e = self.push(self.exprs[v.e].clone(), v.ty.clone(), v.span);
                    }
                    self.assign(t, v, out);
                }
            }
            ast::Stmt::AnnAssign(a) => {
                if let ast::Expr::Name(n) = a.target.as_ref() {
                    let want = match self.s.m.resolve_static(&a.annotation) {
                        Some(Item::Builtin(Builtin::Scalar(s))) => Some(s),
                        Some(Item::Builtin(Builtin::Int)) => Some(self.s.defaults.int),
                        Some(Item::Builtin(Builtin::Float)) => Some(self.s.defaults.float),
                        Some(Item::Builtin(Builtin::Complex)) => Some(self.s.defaults.complex),
                        Some(Item::Builtin(Builtin::Bool)) => Some(Scalar::Bool),
                        _ => None,
                    };
                    if let Some(want) = want {
                        let name = n.id.to_string();
                        match self.hints.get(&name) {
                            Some(h) if h.weak.is_none() && h.ty != Type::Scalar(want) => {
                                let first = h.first;
                                let had = h.ty.clone();
                                self.diags.push(
                                    Diagnostic::error(
                                        Code::E0201,
                                        sp(a.annotation.as_ref()),
                                        format!(
                                            "`{name}` is declared {want} but is assigned {had}"
                                        ),
                                    )
                                    .with_secondary(first, format!("assigned {had} here")),
                                );
                            }
                            Some(h) if h.weak.is_none() => {}
                            _ => {
                                self.hints.insert(
                                    name,
                                    Hint {
                                        ty: Type::Scalar(want),
                                        weak: None,
                                        first: span,
                                        nonneg: want.kind() == Kind::UInt,
                                        konst: None,
                                    },
                                );
                                self.changed |= self.scope.contains_key(n.id.as_str());
                            }
                        }
                    }
                }
                if let Some(value) = &a.value {
                    let v = self.expr(value);
                    if let Some(v) = self.value_of(v) {
                        self.assign(&a.target, v, out);
                    }
                }
            }
            ast::Stmt::AugAssign(a) => self.aug_assign(a, out),
            ast::Stmt::If(i) => {
                let mut clauses: Vec<(Option<&ast::Expr>, &[ast::Stmt], Span)> =
                    vec![(Some(i.test.as_ref()), &i.body[..], span)];
                clauses.extend(
                    i.elif_else_clauses
                        .iter()
                        .map(|c| (c.test.as_ref(), &c.body[..], sp(c))),
                );
                let block = self.if_chain(&clauses);
                out.extend(block);
            }
            ast::Stmt::While(w) => {
                if !w.orelse.is_empty() {
                    self.error(
                        Code::E0303,
                        sp(&w.orelse[0]),
                        "`while ... else` is not supported in device code",
                    );
                }
                let mut names = HashSet::new();
                assigned_names(&w.body, &mut names);
                self.loop_assigned.push(names);
                let cond = self.cond(&w.test);
                self.loops += 1;
                let body = self.block(&w.body);
                self.loops -= 1;
                self.loop_assigned.pop();
                if let Some(cond) = cond {
                    out.push(Stmt {
                        kind: StmtKind::Loop {
                            cond,
                            body,
                            continuing: Vec::new(),
                        },
                        span,
                    });
                }
            }
            ast::Stmt::For(f) => self.for_range(f, out),
            ast::Stmt::Break(_) | ast::Stmt::Continue(_) => {
                let brk = matches!(s, ast::Stmt::Break(_));
                if self.loops == 0 {
                    let w = if brk { "break" } else { "continue" };
                    self.error(Code::E0304, span, format!("`{w}` outside a loop"));
                } else {
                    if brk
                        && let Some(&(depth, flag)) = self.else_flags.last()
                        && depth == self.loops
                    {
                        // `for … else`: this loop was left by `break`.
                        let no = self.push(
                            Expr::Literal(Literal::Bool(false)),
                            Type::Scalar(Scalar::Bool),
                            span,
                        );
                        out.push(Stmt {
                            kind: StmtKind::Assign(flag, no),
                            span,
                        });
                    }
                    out.push(Stmt {
                        kind: if brk {
                            StmtKind::Break
                        } else {
                            StmtKind::Continue
                        },
                        span,
                    });
                }
            }
            ast::Stmt::Return(r) => self.ret(r, out),
            ast::Stmt::Pass(_) => {}
            ast::Stmt::FunctionDef(d) => {
                let body: Vec<&ast::Stmt> = d
                    .body
                    .iter()
                    .filter(|s| !matches!(s, ast::Stmt::Expr(e) if matches!(e.value.as_ref(), ast::Expr::StringLiteral(_))))
                    .collect();
                match (d.parameters.is_empty(), body.as_slice()) {
                    (true, [ast::Stmt::Return(ast::StmtReturn { value: Some(v), .. })]) => {
                        self.local_defs.insert(d.name.id.to_string(), v.as_ref().clone());
                    }
                    _ => self.diags.push(
                        Diagnostic::error(Code::E0301, d.name.range.into(), "nested functions are only supported as predicates")
                            .with_note("a predicate takes no parameters and its body is a single `return <condition>`; share other code through a `@device.func`"),
                    ),
                }
            }
            ast::Stmt::Assert(_) => self.diags.push(
                Diagnostic::error(
                    Code::E0302,
                    span,
                    "`assert` is not supported in device code yet",
                )
                .with_note("check the condition with `if` and write a sentinel to an output array"),
            ),
            other => {
                let what = stmt_name(other);
                self.error(
                    Code::E0301,
                    span,
                    format!("{what} is not supported in device code"),
                );
            }
        }
    }

    /// `if`/`elif`/`else` clauses, innermost last. A clause whose condition is
    /// `target(...)` is decided now: only the taken branch is checked (the other need not be
    /// valid for this target, as the spec's target specialization requires).
    fn if_chain(&mut self, clauses: &[(Option<&ast::Expr>, &[ast::Stmt], Span)]) -> Block {
        let Some(((test, body, span), rest)) = clauses.split_first() else {
            return Vec::new();
        };
        let Some(test) = test else {
            return self.block(body);
        };
        if let Some(decided) = self.static_target(test) {
            return match decided {
                Some(true) => self.block(body),
                Some(false) => self.if_chain(rest),
                None => Vec::new(),
            };
        }
        if let Some(decided) = self.constant_test(test) {
            return if decided {
                self.block(body)
            } else {
                self.if_chain(rest)
            };
        }
        let cond = self.cond(test);
        let then = self.block(body);
        let otherwise = self.if_chain(rest);
        match cond {
            Some(cond) => vec![Stmt {
                kind: StmtKind::If {
                    cond,
                    then,
                    otherwise,
                },
                span: *span,
            }],
            None => Vec::new(),
        }
    }

    /// numba's dead-branch pruning (numba dialect): an `if` whose test is a `bool` literal, a
    /// compile-time argument (a constant the callee is specialized on, §15.1) or a module
    /// constant keeps only the branch taken, so the other is neither typed nor compiled
    /// (`if neg_idx: bin = (bin[0] % n, ...)` with `neg_idx=False` does not unify `bin`'s
    /// type with the dead assignment's). `None` for any other test.
    fn constant_test(&mut self, test: &ast::Expr) -> Option<bool> {
        if !self.s.m.numba {
            return None;
        }
        let c = match test {
            ast::Expr::BooleanLiteral(b) => Const::Bool(b.value),
            ast::Expr::Name(n) if !self.assigned.contains(n.id.as_str()) => {
                match self.callee_item(test)? {
                    Item::Const(c) => c,
                    _ => return None,
                }
            }
            _ => return None,
        };
        fn truth(c: &Const) -> Option<bool> {
            Some(match c {
                Const::Bool(b) => *b,
                Const::Int(i) => *i != 0,
                Const::Float(f) => *f != 0.0,
                Const::Complex(re, im) => *re != 0.0 || *im != 0.0,
                Const::Tuple(t) => !t.is_empty(),
                Const::Typed(_, inner) => truth(inner)?,
                // NumPy's truth of an array depends on its size; not a constant test.
                Const::Array(_) => return None,
            })
        }
        truth(&c)
    }

    /// `Some(decision)` when `test` is a `target(...)` call (`Some(None)` after an error);
    /// `None` for any other condition.
    fn static_target(&mut self, test: &ast::Expr) -> Option<Option<bool>> {
        let ast::Expr::Call(c) = test else {
            return None;
        };
        if self.callee_item(&c.func) != Some(Item::Builtin(Builtin::Target)) {
            return None;
        }
        if c.arguments.args.len() != 1 || !c.arguments.keywords.is_empty() {
            self.error(Code::E0410, sp(c), "`target` takes one target description");
            return Some(None);
        }
        self.s.target_used = true;
        Some(self.target_desc(&c.arguments.args[0]))
    }

    /// Evaluates a target description for the target being compiled (a GPU of
    /// `self.s.sm`): `is_device`, `provides(sm80) & ~is_exactly(sm90)`, ...
    fn target_desc(&mut self, e: &ast::Expr) -> Option<bool> {
        let sm = self.s.sm;
        let bad = |cx: &mut Self, e: &ast::Expr| {
            cx.diags.push(
                Diagnostic::error(Code::E0410, sp(e), "not a constant target description")
                    .with_note("use is_host, is_device, any_target, no_target, is_exactly(smXX), provides(smXX), combined with |, & and ~"),
            );
            None
        };
        match e {
            ast::Expr::BinOp(b) if matches!(b.op, ast::Operator::BitOr | ast::Operator::BitAnd) => {
                let l = self.target_desc(&b.left)?;
                let r = self.target_desc(&b.right)?;
                Some(if b.op == ast::Operator::BitOr {
                    l || r
                } else {
                    l && r
                })
            }
            ast::Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::Invert | ast::UnaryOp::Not) => {
                Some(!self.target_desc(&u.operand)?)
            }
            ast::Expr::Call(c) => match self.callee_item(&c.func) {
                Some(Item::Builtin(b @ (Builtin::IsExactly | Builtin::Provides))) => {
                    let arg = match (c.arguments.args.first(), c.arguments.args.len()) {
                        (Some(a), 1) => a,
                        _ => return bad(self, e),
                    };
                    let Some(Item::Builtin(Builtin::Sm(n))) = self.callee_item(arg) else {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0410,
                                sp(arg),
                                "expected an architecture selector such as `sm90`",
                            )
                            .with_note(
                                "supported: sm75, sm80, sm86, sm87, sm89, sm90, sm100, sm120",
                            ),
                        );
                        return None;
                    };
                    Some(if b == Builtin::IsExactly {
                        sm == n
                    } else {
                        sm >= n
                    })
                }
                _ => bad(self, e),
            },
            e => match self.callee_item(e) {
                Some(Item::Builtin(Builtin::AnyTarget)) => Some(true),
                Some(Item::Builtin(Builtin::NoTarget)) => Some(false),
                Some(Item::Builtin(Builtin::IsDevice)) => Some(sm != crate::ir::HOST_TARGET),
                Some(Item::Builtin(Builtin::IsHost)) => Some(sm == crate::ir::HOST_TARGET),
                _ => bad(self, e),
            },
        }
    }

    pub(super) fn ret(&mut self, r: &ast::StmtReturn, out: &mut Block) {
        let span = sp(r);
        let value = match r.value.as_deref() {
            None | Some(ast::Expr::NoneLiteral(_)) => None,
            Some(e) => {
                let v = self.expr(e);
                match self.value_of(v) {
                    Some(v) => Some(v),
                    None => return,
                }
            }
        };
        if self.kind == FunctionKind::Kernel {
            if let Some(v) = value {
                self.diags.push(
                    Diagnostic::error(Code::E0108, v.span, "a kernel cannot return a value")
                        .with_note("kernels return `None`; write results to an array argument"),
                );
                return;
            }
            out.push(Stmt {
                kind: StmtKind::Return(None),
                span,
            });
            return;
        }
        let v = match value {
            Some(v) => v,
            None => {
                let e = self.push(Expr::Tuple(vec![]), Type::None, span);
                self.val(e, Type::None, span)
            }
        };
        let Some(e) = self.merge("$return", v, span) else {
            return;
        };
        let e = (self.hints["$return"].ty != Type::None).then_some(e);
        out.push(Stmt {
            kind: StmtKind::Return(e),
            span,
        });
    }

    /// Records that `name` (a local, or `$return`) receives `v`, checks it against what is
    /// known, and returns `v` converted to the name's type.
    pub(super) fn merge(&mut self, name: &str, v: Val, span: Span) -> Option<Handle<Expr>> {
        let what = |n: &str| {
            if n == "$return" {
                "this function returns".to_string()
            } else {
                format!("`{n}` is assigned")
            }
        };
        let cupyx = self.s.m.cupyx && name != "$return";
        let Some(h) = self.hints.get(name).cloned() else {
            let v = if cupyx { self.concrete(v)? } else { v };
            let ty = match v.weak {
                Some(w) => Type::Scalar(self.s.defaults.of(w)),
                None => v.ty.clone(),
            };
            self.hints.insert(
                name.to_string(),
                Hint {
                    ty,
                    weak: v.weak,
                    first: span,
                    nonneg: v.nonneg,
                    konst: v.konst.clone(),
                },
            );
            return Some(v.e);
        };
        let mut nh = h.clone();
        if cupyx {
            // cupyx.jit: the first assignment fixed the type; later ones convert to it, as
            // NumPy's `same_kind` casting allows (CuPy rejects the others).
            if let (Type::Scalar(t), Some(from)) = (&h.ty, v.ty.as_scalar()) {
                let t = *t;
                let from_kind = match v.weak {
                    Some(Weak::Int) => Kind::Int,
                    Some(Weak::Float) => Kind::Float,
                    Some(Weak::Complex) => Kind::Complex,
                    None => from.kind(),
                };
                if kind_rank(from_kind) > kind_rank(t.kind()) {
                    let shown = if v.weak.is_some() {
                        format!("a Python {}", from_kind_name(from_kind))
                    } else {
                        format!("`{}`", v.ty)
                    };
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0201,
                            span,
                            format!(
                                "cannot assign {shown} to `{name}` of type `{t}` (cupyx.jit fixes a local's type at its first assignment and converts later ones only with NumPy's `same_kind` casting)"
                            ),
                        )
                        .with_secondary(h.first, format!("`{name}` became `{t}` here"))
                        .with_note(format!(
                            "convert explicitly, e.g. `{name} = {t}(...)`, or make the first assignment the wider type"
                        )),
                    );
                    return None;
                }
                return self.convert(&v, t);
            }
        }
        let compatible = match (h.weak, v.weak) {
            (Some(hw), None) => match &v.ty {
                Type::Scalar(s) => {
                    let ok = match hw {
                        Weak::Int => s.kind() != Kind::Bool,
                        Weak::Float => s.is_float(),
                        Weak::Complex => s.is_complex(),
                    };
                    if ok {
                        nh.ty = v.ty.clone();
                        nh.weak = None;
                    }
                    ok
                }
                _ => false,
            },
            (Some(hw), Some(vw)) => {
                let w = promote_weak_weak(hw, vw);
                if w != hw {
                    nh.weak = Some(w);
                    nh.ty = Type::Scalar(self.s.defaults.of(w));
                }
                true
            }
            (None, Some(vw)) => match &h.ty {
                Type::Scalar(s) => match vw {
                    Weak::Int => s.kind() != Kind::Bool,
                    Weak::Float => s.is_float() || s.is_complex(),
                    Weak::Complex => s.is_complex(),
                },
                _ => false,
            },
            (None, None) => match (&h.ty, &v.ty) {
                // numba unifies a local's assignments to their common type.
                (Type::Scalar(a), Type::Scalar(b)) if self.s.m.numba && a != b => {
                    nh.ty = Type::Scalar(promote(*a, *b));
                    true
                }
                // ... and tuples of numbers element by element, where the value is a tuple
                // display whose elements can be converted one by one.
                (Type::Tuple(a), Type::Tuple(b))
                    if self.s.m.numba
                        && a != b
                        && a.len() == b.len()
                        && matches!(self.exprs[v.e], Expr::Tuple(_))
                        && a.iter().chain(b).all(|t| matches!(t, Type::Scalar(_))) =>
                {
                    let ts = a
                        .iter()
                        .zip(b)
                        .map(|(x, y)| match (x, y) {
                            (Type::Scalar(x), Type::Scalar(y)) => Type::Scalar(promote(*x, *y)),
                            _ => x.clone(),
                        })
                        .collect();
                    nh.ty = Type::Tuple(ts);
                    true
                }
                _ => h.ty == v.ty,
            },
        };
        if !compatible {
            let describe = |w: Option<Weak>, t: &Type| match w {
                Some(Weak::Float) => "a Python float".to_string(),
                Some(Weak::Int) => "a Python int".to_string(),
                Some(Weak::Complex) => "a Python complex".to_string(),
                None => t.to_string(),
            };
            let had = describe(h.weak, &h.ty);
            let now = describe(v.weak, &v.ty);
            let first = if name == "$return" {
                "first return here"
            } else if self
                .scope
                .get(name)
                .is_some_and(|l| l.index() < self.params)
            {
                "the parameter is declared here"
            } else {
                "first assigned here"
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0201,
                    span,
                    format!("{} values of different types: {had} and {now}", what(name)),
                )
                .with_label(format!("this is {now}"))
                .with_secondary(h.first, format!("{first} ({had})"))
                .with_note(
                    "each local variable has one type; convert explicitly, e.g. `float32(x)`",
                ),
            );
            return None;
        }
        if h.nonneg && !v.nonneg {
            nh.nonneg = false;
        }
        if nh.ty != h.ty || nh.weak != h.weak || nh.nonneg != h.nonneg {
            self.hints.insert(name.to_string(), nh.clone());
            self.changed = true;
        }
        let target = self.materialize(&nh);
        match target {
            Type::Scalar(s) => self.convert(&v, s),
            Type::Tuple(ts) if v.ty != Type::Tuple(ts.clone()) => self.convert_tuple(&v, &ts),
            _ => Some(v.e),
        }
    }

    /// A tuple display converted element by element to the numbers `ts` (numba's unified
    /// tuple locals).
    fn convert_tuple(&mut self, v: &Val, ts: &[Type]) -> Option<Handle<Expr>> {
        let (Expr::Tuple(es), Type::Tuple(from)) = (self.exprs[v.e].clone(), &v.ty) else {
            return Some(v.e);
        };
        let mut out = Vec::new();
        for ((e, f), t) in es.iter().zip(from).zip(ts) {
            let (Type::Scalar(_), Type::Scalar(s)) = (f, t) else {
                return Some(v.e);
            };
            let x = Val {
                e: *e,
                ty: f.clone(),
                weak: None,
                konst: None,
                nonneg: false,
                span: v.span,
            };
            out.push(self.convert(&x, *s)?);
        }
        Some(self.push(Expr::Tuple(out), Type::Tuple(ts.to_vec()), v.span))
    }

    pub(super) fn assign(&mut self, target: &ast::Expr, v: Val, out: &mut Block) {
        let span = sp(target);
        match target {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                self.seen_assigned.insert(name.to_string());
                let Some(e) = self.merge(name, v, span) else {
                    return;
                };
                let h = self.local(name, span);
                let want = self.locals[h].ty.clone();
                if self.types[e.index()] != want {
                    // The local's type was learned later in this pass; the next pass redoes it.
                    self.changed = true;
                    return;
                }
                out.push(Stmt {
                    kind: StmtKind::Assign(h, e),
                    span,
                });
            }
            ast::Expr::Subscript(s) if matches!(s.slice.as_ref(), ast::Expr::StringLiteral(_)) => {
                // `records[i]['x'] = v`: numba's spelling of `records[i].x = v`.
                if let ast::Expr::StringLiteral(k) = s.slice.as_ref() {
                    self.assign_field(&s.value, k.value.to_str(), v, span, out);
                }
            }
            ast::Expr::Subscript(s) => {
                let base = self.expr(&s.value);
                let Some(base) = self.value_of(base) else {
                    return;
                };
                match &base.ty {
                    Type::Array(at) => {
                        let dtype = at.dtype.clone();
                        if self.check_writable(&base, span).is_none() {
                            return;
                        }
                        let Some(indices) = self.indices(&base, &s.slice) else {
                            return;
                        };
                        let Some(value) = self.store_element(&v, &dtype) else {
                            return;
                        };
                        out.push(Stmt {
                            kind: StmtKind::Store {
                                array: base.e,
                                indices,
                                value,
                            },
                            span,
                        });
                    }
                    Type::WarpMask if matches!(s.value.as_ref(), ast::Expr::Name(_)) => {
                        // m[i] = v  →  m = (m & ~(1 << i)) | (int(bool(v)) << i)
                        let i32t = Type::Scalar(Scalar::Int32);
                        let iv = self.expr(&s.slice);
                        let Some(iv) = self.value_of(iv) else { return };
                        if self.check_lane(&iv).is_none() {
                            return;
                        }
                        let Some(i) = self.convert(&iv, Scalar::Int32) else {
                            return;
                        };
                        let Some(b) = self.truthy(v) else { return };
                        let bit = self.push(Expr::Cast(b), i32t.clone(), span);
                        let one = self.push(Expr::Literal(Literal::Int(1)), i32t.clone(), span);
                        let i2 = self.push(self.exprs[i].clone(), i32t.clone(), span);
                        let sel =
                            self.push(Expr::Binary(BinaryOp::Shl, one, i), i32t.clone(), span);
                        let inv = self.push(Expr::Unary(UnaryOp::Invert, sel), i32t.clone(), span);
                        let m = self.push(Expr::Cast(base.e), i32t.clone(), span);
                        let cleared =
                            self.push(Expr::Binary(BinaryOp::BitAnd, m, inv), i32t.clone(), span);
                        let set =
                            self.push(Expr::Binary(BinaryOp::Shl, bit, i2), i32t.clone(), span);
                        let new =
                            self.push(Expr::Binary(BinaryOp::BitOr, cleared, set), i32t, span);
                        let e = self.push(Expr::Cast(new), Type::WarpMask, span);
                        let nv = self.val(e, Type::WarpMask, span);
                        self.assign(&s.value, nv, out);
                    }
                    Type::Vector { .. } if matches!(s.value.as_ref(), ast::Expr::Name(_)) => {
                        let iv = self.expr(&s.slice);
                        let Some(iv) = self.value_of(iv) else { return };
                        let Some(nv) = self.vector_with(&base, &iv, &v, span) else {
                            return;
                        };
                        self.assign(&s.value, nv, out);
                    }
                    Type::Tuple(_) | Type::Vector { .. } => self.diags.push(
                        Diagnostic::error(Code::E0211, span, format!("{} is immutable", base.ty))
                            .with_note("build a new tuple or vector instead"),
                    ),
                    other => self.error(
                        Code::E0203,
                        sp(s.value.as_ref()),
                        format!("{other} cannot be indexed"),
                    ),
                }
            }
            ast::Expr::Tuple(ast::ExprTuple { elts, .. })
            | ast::Expr::List(ast::ExprList { elts, .. }) => {
                let n = match &v.ty {
                    Type::Tuple(ts) => ts.len(),
                    Type::Vector { len, .. } => *len as usize,
                    other => {
                        self.error(Code::E0203, v.span, format!("cannot unpack {other}"));
                        return;
                    }
                };
                if n != elts.len() {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0203,
                            span,
                            format!("cannot unpack {} values into {} names", n, elts.len()),
                        )
                        .with_secondary(v.span, format!("this is {}", v.ty)),
                    );
                    return;
                }
                let t = self.new_temp(v.ty.clone(), v.span);
                out.push(Stmt {
                    kind: StmtKind::Assign(t, v.e),
                    span,
                });
                for (i, el) in elts.iter().enumerate() {
                    let ety = element_type(&v.ty, i);
                    let base = self.push(Expr::Local(t), v.ty.clone(), v.span);
                    let e = self.push(Expr::Extract(base, i as u32), ety.clone(), v.span);
                    let mut ev = self.val(e, ety, v.span);
                    ev.nonneg |= v.nonneg;
                    self.assign(el, ev, out);
                }
            }
            ast::Expr::Attribute(attr) => {
                self.assign_field(&attr.value, attr.attr.id.as_str(), v, span, out)
            }
            _ => self.error(
                Code::E0301,
                span,
                "this assignment target is not supported in device code",
            ),
        }
    }

    /// `target.field = v` where `target` is an array element of struct type (or `self` of a
    /// method that received one): stored in place. Struct values themselves are immutable.
    fn assign_field(
        &mut self,
        target: &ast::Expr,
        field: &str,
        v: Val,
        span: Span,
        out: &mut Block,
    ) {
        // `array[i].x = v` (or `self.x = v` in a method of a struct in an array):
        // stored in place. Struct values themselves are immutable.
        let base = self.place_or_value(target);
        let Value::Val(base) = base else { return };
        if let Type::StructRef {
            space: crate::types::MemSpace::Const,
            ..
        } = &base.ty
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0112,
                    span,
                    "this writes to a constant array, which device code can only read",
                )
                .with_note(
                    "module-level NumPy arrays are compile-time constants in constant memory",
                ),
            );
            return;
        }
        let Type::StructRef { st, .. } = &base.ty else {
            let note = if let Type::Vector { .. } = &base.ty {
                format!(
                    "vectors are immutable: build a new {} (on a local vector, `v[0] = x` rebinds it)",
                    base.ty
                )
            } else {
                "heterogeneous objects are immutable, and attributes cannot be added; fields of array elements can be assigned (`a[i].x = v`)".to_string()
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0211,
                    span,
                    "attributes cannot be assigned in device code",
                )
                .with_note(note),
            );
            return;
        };
        if let Some(i) = st.field(field)
            && !st.subarray_shape(i).is_empty()
        {
            let shape = st.subarray_shape(i).to_vec();
            if let Some(view) = self.field_of_ref(base, field, span) {
                self.assign_subarray(view, &shape, v, span, out);
            }
            return;
        }
        let fty = st.field(field).map(|i| st.fields[i].1.clone());
        let Some(Type::Scalar(fs)) = fty else {
            let what = match fty {
                Some(Type::Atomic { .. }) => "an Atomic field is written with `.store(value)`",
                Some(_) => "only number fields can be assigned in place in this version",
                None => "no such field",
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0211,
                    span,
                    format!("cannot assign field `{field}` of `{}`", st.name),
                )
                .with_note(what),
            );
            return;
        };
        let idx = st.field(field).unwrap_or(0) as u32;
        let space = match &base.ty {
            Type::StructRef { space, .. } => *space,
            _ => crate::types::MemSpace::Global,
        };
        if !matches!(v.ty, Type::Scalar(_) | Type::WarpMask) {
            self.error(
                Code::E0207,
                v.span,
                format!(
                    "cannot assign {} to field `{field}` of `{}` ({fs})",
                    v.ty, st.name
                ),
            );
            return;
        }
        let Some(value) = self.store_value(&v, fs) else {
            return;
        };
        let target = self.push(
            Expr::FieldRef(base.e, idx),
            Type::Ref { dtype: fs, space },
            span,
        );
        out.push(Stmt {
            kind: StmtKind::StoreRef { target, value },
            span,
        });
    }

    /// `r.j = v` for a sub-array field `j` (its view is `view`): every element of the
    /// sub-array gets the element of array `v` at the same index, or the number `v`, as
    /// NumPy assigns a whole field. Unrolled: sub-arrays are small and their shape is known.
    fn assign_subarray(&mut self, view: Val, shape: &[u64], v: Val, span: Span, out: &mut Block) {
        const MAX_UNROLLED: u64 = 256;
        let Type::Array(at) = &view.ty else { return };
        let at = at.clone();
        let count: u64 = shape.iter().product();
        let src_ndim = match &v.ty {
            Type::Array(sa) => Some(sa.ndim),
            _ => None,
        };
        if count > MAX_UNROLLED || src_ndim.is_some_and(|n| usize::from(n) != shape.len()) {
            let why = if count > MAX_UNROLLED {
                format!(
                    "it has {count} elements (whole sub-arrays of at most {MAX_UNROLLED} are assigned)"
                )
            } else {
                format!(
                    "it is {}-dimensional and the sub-array is {}-dimensional",
                    src_ndim.unwrap_or(0),
                    shape.len()
                )
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0215,
                    span,
                    format!("cannot assign {} to this sub-array field: {why}", v.ty),
                )
                .with_label("the whole sub-array is assigned here")
                .with_note("assign its elements in a loop: `r.j[k] = v[k]`"),
            );
            return;
        }
        let i64t = Type::Scalar(Scalar::Int64);
        for flat in 0..count {
            let mut rest = flat;
            let mut idx = vec![0u64; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            let indices: Vec<Index> = idx
                .iter()
                .map(|k| Index {
                    value: self.push(
                        Expr::Literal(Literal::Int(i128::from(*k))),
                        i64t.clone(),
                        span,
                    ),
                    wrap: false,
                })
                .collect();
            let item = match &v.ty {
                Type::Array(sa) => {
                    let t = sa.dtype.ty();
                    let e = self.push(
                        Expr::Load {
                            array: v.e,
                            indices: indices.clone(),
                        },
                        t.clone(),
                        span,
                    );
                    self.val(e, t, span)
                }
                _ => v.clone(),
            };
            let Some(value) = self.store_element(&item, &at.dtype) else {
                return;
            };
            out.push(Stmt {
                kind: StmtKind::Store {
                    array: view.e,
                    indices,
                    value,
                },
                span,
            });
        }
    }

    /// A value converted for storing into an array element: numbers convert (as NumPy's item
    /// assignment does), a record must have the array's struct type, a vector the array's
    /// vector type.
    pub(super) fn store_element(&mut self, v: &Val, dtype: &DType) -> Option<Handle<Expr>> {
        match dtype {
            DType::Scalar(s) => self.store_value(v, *s),
            DType::Struct(st) if v.ty == Type::Struct(st.clone()) => Some(v.e),
            // A reference to a record (numba's `recs[j] = recs[i]`): its value.
            DType::Struct(st) if matches!(&v.ty, Type::StructRef { st: r, .. } if r == st) => {
                Some(self.push(Expr::Deref(v.e), Type::Struct(st.clone()), v.span))
            }
            DType::Struct(st) => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("cannot store {} into an array of `{}`", v.ty, st.name),
                );
                None
            }
            // A vector is stored whole and as it is: build one of the array's type.
            DType::Vector { .. } if v.ty == dtype.ty() => Some(v.e),
            DType::Vector { .. } => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0207,
                        v.span,
                        format!("cannot store {} into an array of {dtype}", v.ty),
                    )
                    .with_note(format!(
                        "an element of a vector array is a whole {dtype}: build one with `{dtype}(...)`"
                    )),
                );
                None
            }
        }
    }

    pub(super) fn store_value(&mut self, v: &Val, dtype: Scalar) -> Option<Handle<Expr>> {
        match (&v.ty, v.weak, &v.konst) {
            (Type::Scalar(_), Some(_), Some(Const::Float(f))) if dtype.is_integer() => {
                let c = Const::Int(f.trunc() as i128);
                self.literal(&c, dtype, v.span)
            }
            (Type::Scalar(_) | Type::WarpMask, _, _) => self.convert(v, dtype),
            (other, _, _) => {
                let mut d = Diagnostic::error(
                    Code::E0207,
                    v.span,
                    format!("cannot store {other} into an array of {dtype}"),
                );
                if matches!(other, Type::Ref { .. }) {
                    d = d.with_note("an atomic reference (or Atomic field) is read with `.load()`");
                }
                self.diags.push(d);
                None
            }
        }
    }

    /// The local for `name` in this pass, created on first use with its current type.
    pub(super) fn local(&mut self, name: &str, span: Span) -> Handle<Local> {
        if let Some(h) = self.scope.get(name) {
            return *h;
        }
        let ty = self
            .hints
            .get(name)
            .map(|h| self.materialize(h))
            .unwrap_or(Type::None);
        let h = self.locals.append(
            Local {
                name: name.to_string(),
                ty,
            },
            span,
        );
        self.scope.insert(name.to_string(), h);
        h
    }

    pub(super) fn aug_assign(&mut self, a: &ast::StmtAugAssign, out: &mut Block) {
        let span = sp(a);
        let Some(op) = binary_op(a.op) else {
            self.error(
                Code::E0202,
                span,
                "the `@` operator is not supported in device code",
            );
            return;
        };
        let rhs = self.expr(&a.value);
        let Some(rhs) = self.value_of(rhs) else {
            return;
        };
        match a.target.as_ref() {
            ast::Expr::Name(n) => {
                let cur = self.read_name(n.id.as_str(), sp(n));
                let Some(cur) = self.value_of(cur) else {
                    return;
                };
                let Some(v) = self.binary(op, cur, rhs, span) else {
                    return;
                };
                self.assign(&a.target, v, out);
            }
            ast::Expr::Subscript(s) => {
                let base = self.expr(&s.value);
                let Some(base) = self.value_of(base) else {
                    return;
                };
                let Type::Array(at) = &base.ty else {
                    self.error(Code::E0211, span, format!("{} is immutable", base.ty));
                    return;
                };
                let Some(dtype) = at.dtype.scalar() else {
                    self.error(
                        Code::E0202,
                        span,
                        format!(
                            "`{}=` needs an array of numbers, found {}",
                            op.symbol(),
                            base.ty
                        ),
                    );
                    return;
                };
                if self.check_writable(&base, span).is_none() {
                    return;
                }
                let Some(indices) = self.indices(&base, &s.slice) else {
                    return;
                };
                // Evaluate the indices once: keep anything but locals and literals in temps.
                let mut fixed = Vec::new();
                for ix in indices {
                    let simple = matches!(self.exprs[ix.value], Expr::Local(_) | Expr::Literal(_));
                    let value = if simple {
                        ix.value
                    } else {
                        let ty = self.types[ix.value.index()].clone();
                        let t = self.new_temp(ty.clone(), span);
                        out.push(Stmt {
                            kind: StmtKind::Assign(t, ix.value),
                            span,
                        });
                        self.push(Expr::Local(t), ty, span)
                    };
                    fixed.push(Index {
                        value,
                        wrap: ix.wrap,
                    });
                }
                let again: Vec<Index> = fixed
                    .iter()
                    .map(|ix| {
                        let ty = self.types[ix.value.index()].clone();
                        let e = self.push(self.exprs[ix.value].clone(), ty, span);
                        Index {
                            value: e,
                            wrap: ix.wrap,
                        }
                    })
                    .collect();
                let load = self.push(
                    Expr::Load {
                        array: base.e,
                        indices: fixed,
                    },
                    Type::Scalar(dtype),
                    span,
                );
                let cur = self.val(load, Type::Scalar(dtype), span);
                let Some(v) = self.binary(op, cur, rhs, span) else {
                    return;
                };
                let Some(value) = self.store_value(&v, dtype) else {
                    return;
                };
                let array = self.push(self.exprs[base.e].clone(), base.ty.clone(), base.span);
                out.push(Stmt {
                    kind: StmtKind::Store {
                        array,
                        indices: again,
                        value,
                    },
                    span,
                });
            }
            _ => self.error(
                Code::E0211,
                span,
                "this augmented assignment target is not supported",
            ),
        }
    }

    pub(super) fn for_range(&mut self, f: &ast::StmtFor, out: &mut Block) {
        let span = sp(f);
        if let ast::Expr::Call(c) = f.iter.as_ref()
            && self.callee_item(&c.func) == Some(Item::Builtin(Builtin::LiteralUnroll))
        {
            return self.for_unroll(f, c, out);
        }
        let is_range = match f.iter.as_ref() {
            ast::Expr::Call(c) => matches!(
                self.callee_item(&c.func),
                Some(Item::Builtin(Builtin::Range))
            )
            .then_some(c),
            _ => None,
        };
        let Some(call) = is_range else {
            if let ast::Expr::Tuple(_) | ast::Expr::Name(_) | ast::Expr::Attribute(_) =
                f.iter.as_ref()
            {
                let v = self.expr(&f.iter);
                match v {
                    Value::Val(v) if matches!(v.ty, Type::Tuple(_) | Type::Vector { .. }) => {
                        if !f.orelse.is_empty() {
                            self.error(
                                Code::E0303,
                                sp(&f.orelse[0]),
                                "`for ... else` over a tuple is not supported in device code",
                            );
                        }
                        return self.for_sequence(f, v, out);
                    }
                    Value::Err => return,
                    _ => {}
                }
            }
            if self.s.m.numba && self.for_arrays(f, out) {
                return;
            }
            self.diags.push(
                Diagnostic::error(
                    Code::E0304,
                    sp(f.iter.as_ref()),
                    "device code can only loop over `range(...)`",
                )
                .with_note("write `for i in range(len(a)):` and index the array"),
            );
            return;
        };
        if !matches!(f.target.as_ref(), ast::Expr::Name(_)) {
            self.error(
                Code::E0301,
                sp(f.target.as_ref()),
                "the target of a `for` loop over `range` must be a single name",
            );
            return;
        }
        let args = &call.arguments;
        if !args.keywords.is_empty() || args.args.is_empty() || args.args.len() > 3 {
            self.error(
                Code::E0107,
                sp(call),
                "`range` takes 1 to 3 positional arguments",
            );
            return;
        }
        let mut vals = Vec::new();
        for a in args.args.iter() {
            let v = self.expr(a);
            let Some(v) = self.value_of(v) else { return };
            match v.ty {
                Type::Scalar(s) if s.is_integer() => vals.push(v),
                ref other => {
                    self.error(
                        Code::E0207,
                        v.span,
                        format!("`range` arguments must be integers, found {other}"),
                    );
                    return;
                }
            }
        }
        let (start, stop, step) = match vals.len() {
            1 => {
                let z = self.const_val(&Const::Int(0), span);
                let o = self.const_val(&Const::Int(1), span);
                let (Some(z), Some(o)) = (z, o) else { return };
                (z, vals.remove(0), o)
            }
            2 => {
                let o = self.const_val(&Const::Int(1), span);
                let Some(o) = o else { return };
                let b = vals.remove(1);
                (vals.remove(0), b, o)
            }
            _ => {
                let c = vals.remove(2);
                let b = vals.remove(1);
                (vals.remove(0), b, c)
            }
        };
        // The loop variable's type: weak if all three are, else their promotion.
        let strong: Vec<Scalar> = [&start, &stop, &step]
            .iter()
            .filter(|v| v.weak.is_none())
            .filter_map(|v| v.ty.as_scalar())
            .collect();
        let (ty, weak) = match strong.split_first() {
            None => (self.s.defaults.int, Some(Weak::Int)),
            // int64 with uint64 promotes to float64; `range` counts in int64 then, as numba's
            // `range_state64` does (it converts a uint64 argument to int64).
            Some((first, rest)) => match rest.iter().fold(*first, |a, b| promote(a, *b)) {
                t if t.is_integer() => (t, None),
                _ => (Scalar::Int64, None),
            },
        };
        let step_sign = step
            .konst
            .as_ref()
            .and_then(|c| c.as_int())
            .map(|i| i.signum());
        // A step known to be >= 0 (e.g. `grid_size(1)`) only ever counts up.
        let counts_up = step_sign == Some(1) || (step_sign.is_none() && step.nonneg);
        if step_sign == Some(0) {
            self.error(Code::E0208, step.span, "`range` step must not be zero");
            return;
        }
        let tty = Type::Scalar(ty);
        let snapshot = |cx: &mut Self, v: &Val, out: &mut Block| -> Option<Handle<Expr>> {
            let e = cx.convert(v, ty)?;
            if matches!(cx.exprs[e], Expr::Literal(_)) {
                return Some(e);
            }
            let t = cx.new_temp(tty.clone(), v.span);
            out.push(Stmt {
                kind: StmtKind::Assign(t, e),
                span,
            });
            Some(cx.push(Expr::Local(t), tty.clone(), v.span))
        };
        let Some(start_e) = snapshot(self, &start, out) else {
            return;
        };
        let Some(stop_e) = snapshot(self, &stop, out) else {
            return;
        };
        let Some(step_e) = snapshot(self, &step, out) else {
            return;
        };
        let bool_t = Type::Scalar(Scalar::Bool);
        let copy = |cx: &mut Self, e: Handle<Expr>| {
            cx.push(
                cx.exprs[e].clone(),
                cx.types[e.index()].clone(),
                cx.exprs.span(e),
            )
        };
        let lit =
            |cx: &mut Self, v: i128| cx.push(Expr::Literal(Literal::Int(v)), tty.clone(), span);
        let bin = |cx: &mut Self, op: BinaryOp, a: Handle<Expr>, b: Handle<Expr>| {
            let t = if op.is_comparison() {
                bool_t.clone()
            } else {
                tty.clone()
            };
            cx.push(Expr::Binary(op, a, b), t, span)
        };
        // With a constant step the counter itself is the induction variable. With a step known
        // only at run time, count the iterations first, as CPython's range does, and derive
        // the value from the count: the optimizer can then compute the trip count and unroll
        // (a grid-stride loop otherwise keeps one load in flight per warp).
        let counted = step_sign.is_none();
        let ctr = self.new_temp(tty.clone(), span);
        let (cond, value) = if counted {
            let select = |cx: &mut Self, cond, then, otherwise| {
                cx.push(
                    Expr::Select {
                        cond,
                        then,
                        otherwise,
                    },
                    tty.clone(),
                    span,
                )
            };
            // Iterations from `lo` up to `hi` by `step` (> 0):
            // (hi - lo - 1) // step + 1 when hi > lo, else 0.
            let count_between =
                |cx: &mut Self, hi: Handle<Expr>, lo: Handle<Expr>, step: Handle<Expr>| {
                    let (h, l) = (copy(cx, hi), copy(cx, lo));
                    let d = bin(cx, BinaryOp::Sub, h, l);
                    let one = lit(cx, 1);
                    let d1 = bin(cx, BinaryOp::Sub, d, one);
                    let q = bin(cx, BinaryOp::FloorDiv, d1, step);
                    let one = lit(cx, 1);
                    let n = bin(cx, BinaryOp::Add, q, one);
                    let (h, l) = (copy(cx, hi), copy(cx, lo));
                    let nonempty = bin(cx, BinaryOp::Gt, h, l);
                    let zero = lit(cx, 0);
                    select(cx, nonempty, n, zero)
                };
            let step = copy(self, step_e);
            let up = count_between(self, stop_e, start_e, step);
            let (s0, zero) = (copy(self, step_e), lit(self, 0));
            let positive = bin(self, BinaryOp::Gt, s0, zero);
            let down = if counts_up {
                lit(self, 0)
            } else {
                let (s1, zero) = (copy(self, step_e), lit(self, 0));
                let neg_step = bin(self, BinaryOp::Sub, zero, s1);
                let down = count_between(self, start_e, stop_e, neg_step);
                let (s2, zero) = (copy(self, step_e), lit(self, 0));
                let negative = bin(self, BinaryOp::Lt, s2, zero);
                let zero = lit(self, 0);
                select(self, negative, down, zero)
            };
            // A zero step counts no iterations (Python raises ValueError).
            let total = select(self, positive, up, down);
            let count = self.new_temp(tty.clone(), span);
            out.push(Stmt {
                kind: StmtKind::Assign(count, total),
                span,
            });
            let zero = lit(self, 0);
            out.push(Stmt {
                kind: StmtKind::Assign(ctr, zero),
                span,
            });
            let c = self.push(Expr::Local(ctr), tty.clone(), span);
            let n = self.push(Expr::Local(count), tty.clone(), span);
            let cond = bin(self, BinaryOp::Lt, c, n);
            // value = start + counter * step
            let c = self.push(Expr::Local(ctr), tty.clone(), span);
            let st = copy(self, step_e);
            let off = bin(self, BinaryOp::Mul, c, st);
            let b = copy(self, start_e);
            (cond, bin(self, BinaryOp::Add, b, off))
        } else {
            out.push(Stmt {
                kind: StmtKind::Assign(ctr, start_e),
                span,
            });
            let c = self.push(Expr::Local(ctr), tty.clone(), span);
            let stop = copy(self, stop_e);
            let op = if step_sign == Some(1) {
                BinaryOp::Lt
            } else {
                BinaryOp::Gt
            };
            let cond = bin(self, op, c, stop);
            (cond, self.push(Expr::Local(ctr), tty.clone(), span))
        };
        // `for … else`: a flag, true until a `break` of this loop clears it.
        let else_flag = if f.orelse.is_empty() {
            None
        } else {
            let bool_t = Type::Scalar(Scalar::Bool);
            let flag = self.new_temp(bool_t.clone(), span);
            let yes = self.push(Expr::Literal(Literal::Bool(true)), bool_t, span);
            out.push(Stmt {
                kind: StmtKind::Assign(flag, yes),
                span,
            });
            self.else_flags.push((self.loops + 1, flag));
            Some(flag)
        };
        self.loops += 1;
        let mut names = HashSet::new();
        assigned_names(&f.body, &mut names);
        self.loop_assigned.push(names);
        let mut body = Vec::new();
        let mut iv = self.val(value, tty.clone(), sp(f.target.as_ref()));
        iv.weak = weak;
        iv.nonneg = start.nonneg && counts_up;
        self.assign(&f.target, iv, &mut body);
        body.extend(self.block(&f.body));
        self.loops -= 1;
        self.loop_assigned.pop();
        if else_flag.is_some() {
            self.else_flags.pop();
        }
        let c = self.push(Expr::Local(ctr), tty.clone(), span);
        let st = if counted {
            lit(self, 1)
        } else {
            copy(self, step_e)
        };
        let inc = self.push(Expr::Binary(BinaryOp::AddNoWrap, c, st), tty.clone(), span);
        out.push(Stmt {
            kind: StmtKind::Loop {
                cond,
                body,
                continuing: vec![Stmt {
                    kind: StmtKind::Assign(ctr, inc),
                    span,
                }],
            },
            span,
        });
        if let Some(flag) = else_flag {
            let cond = self.push(Expr::Local(flag), Type::Scalar(Scalar::Bool), span);
            let then = self.block(&f.orelse);
            out.push(Stmt {
                kind: StmtKind::If {
                    cond,
                    then,
                    otherwise: Vec::new(),
                },
                span,
            });
        }
    }

    /// The iterable of a `for` over arrays: a 1-D array of numbers or a tuple of one element
    /// type (by its temp), or `enumerate`/`zip` of such iterables.
    fn array_iterable(&mut self, e: &ast::Expr, arrays: &mut Vec<Val>) -> Option<ArrayIter> {
        if let ast::Expr::Call(c) = e
            && let ast::Expr::Name(n) = c.func.as_ref()
            && matches!(n.id.as_str(), "enumerate" | "zip")
            && self.callee_item(&c.func).is_none()
            && c.arguments.keywords.is_empty()
        {
            let args = &c.arguments.args;
            if n.id.as_str() == "enumerate" {
                let [inner] = &args[..] else {
                    return None;
                };
                let it = self.array_iterable(inner, arrays)?;
                return Some(ArrayIter::Enumerate(Box::new(it)));
            }
            if args.is_empty() {
                return None;
            }
            let mut items = Vec::new();
            for a in args.iter() {
                items.push(self.array_iterable(a, arrays)?);
            }
            return Some(ArrayIter::Zip(items));
        }
        if !matches!(e, ast::Expr::Name(_) | ast::Expr::Attribute(_)) {
            return None;
        }
        let v = match self.expr(e) {
            Value::Val(v) => v,
            c @ Value::Item(Item::Const(_), _) => self.value_of(c)?,
            _ => return None,
        };
        match &v.ty {
            Type::Array(at) if at.ndim == 1 && at.dtype.scalar().is_some() => {
                arrays.push(v);
                Some(ArrayIter::Array(arrays.len() - 1))
            }
            Type::Tuple(ts) if ts.first().is_some_and(|t| ts.iter().all(|u| u == t)) => {
                let n = ts.len();
                arrays.push(v);
                Some(ArrayIter::Tuple(arrays.len() - 1, n))
            }
            _ => None,
        }
    }

    /// Binds a `for` target to iteration `ctr` of `it`: an array's element, `enumerate`'s
    /// `(index, item)`, `zip`'s items, unpacked into the target's names.
    fn bind_array_target(
        &mut self,
        target: &ast::Expr,
        it: &ArrayIter,
        temps: &[(Handle<Local>, Type)],
        ctr: Handle<Local>,
        body: &mut Block,
    ) -> Option<()> {
        let span = sp(target);
        let i64t = Type::Scalar(Scalar::Int64);
        let parts: Vec<&ast::Expr> = match target {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            ast::Expr::List(l) => l.elts.iter().collect(),
            _ => Vec::new(),
        };
        match it {
            ArrayIter::Array(i) => {
                let (tmp, ty) = &temps[*i];
                let Type::Array(at) = ty else {
                    return None;
                };
                let dtype = at.dtype.scalar()?;
                let a = self.push(Expr::Local(*tmp), ty.clone(), span);
                let k = self.push(Expr::Local(ctr), i64t, span);
                let load = self.push(
                    Expr::Load {
                        array: a,
                        indices: vec![Index {
                            value: k,
                            wrap: false,
                        }],
                    },
                    Type::Scalar(dtype),
                    span,
                );
                let v = self.val(load, Type::Scalar(dtype), span);
                self.assign(target, v, body);
                Some(())
            }
            ArrayIter::Tuple(i, n) => {
                let (tmp, ty) = &temps[*i];
                let Type::Tuple(ts) = ty else {
                    return None;
                };
                let ety = ts.first()?.clone();
                let bool_t = Type::Scalar(Scalar::Bool);
                // element `ctr`: a chain of selects the optimizer folds once unrolled
                let t = self.push(Expr::Local(*tmp), ty.clone(), span);
                let mut acc = self.push(Expr::Extract(t, (*n - 1) as u32), ety.clone(), span);
                for k in (0..*n - 1).rev() {
                    let c = self.push(Expr::Local(ctr), i64t.clone(), span);
                    let kk = self.push(Expr::Literal(Literal::Int(k as i128)), i64t.clone(), span);
                    let is_k = self.push(Expr::Binary(BinaryOp::Eq, c, kk), bool_t.clone(), span);
                    let t = self.push(Expr::Local(*tmp), ty.clone(), span);
                    let ek = self.push(Expr::Extract(t, k as u32), ety.clone(), span);
                    acc = self.push(
                        Expr::Select {
                            cond: is_k,
                            then: ek,
                            otherwise: acc,
                        },
                        ety.clone(),
                        span,
                    );
                }
                let v = self.val(acc, ety, span);
                self.assign(target, v, body);
                Some(())
            }
            ArrayIter::Enumerate(inner) => {
                let [first, second] = &parts[..] else {
                    self.error(
                        Code::E0301,
                        span,
                        "the target of a `for` over `enumerate(...)` must be two names: `i, x`",
                    );
                    return None;
                };
                let k = self.push(Expr::Local(ctr), i64t.clone(), span);
                let mut kv = self.val(k, i64t, span);
                kv.nonneg = true;
                self.assign(first, kv, body);
                self.bind_array_target(second, inner, temps, ctr, body)
            }
            ArrayIter::Zip(items) => {
                if parts.len() != items.len() {
                    self.error(
                        Code::E0301,
                        span,
                        format!(
                            "the target of a `for` over `zip(...)` of {} iterables must be {} names",
                            items.len(),
                            items.len()
                        ),
                    );
                    return None;
                }
                for (t, it) in parts.into_iter().zip(items) {
                    self.bind_array_target(t, it, temps, ctr, body)?;
                }
                Some(())
            }
        }
    }

    /// `for x in a:`, `for i, x in enumerate(a):`, `for x, y in zip(a, b):` (nested too) over
    /// 1-D arrays of numbers and tuples of one element type (numba dialect): a counted loop
    /// over `min(len(a), len(b), …)` that loads element `i`. False when the iterable is not
    /// one of these (the caller reports E0304).
    fn for_arrays(&mut self, f: &ast::StmtFor, out: &mut Block) -> bool {
        let span = sp(f);
        let mut arrays = Vec::new();
        let Some(it) = self.array_iterable(&f.iter, &mut arrays) else {
            return false;
        };
        if !f.orelse.is_empty() {
            self.error(
                Code::E0303,
                sp(&f.orelse[0]),
                "`for ... else` over arrays is not supported in device code",
            );
            return true;
        }
        let i64t = Type::Scalar(Scalar::Int64);
        let bool_t = Type::Scalar(Scalar::Bool);
        let mut temps = Vec::new();
        for a in &arrays {
            let t = self.new_temp(a.ty.clone(), span);
            out.push(Stmt {
                kind: StmtKind::Assign(t, a.e),
                span,
            });
            temps.push((t, a.ty.clone()));
        }
        // n = min of the lengths
        let count = self.new_temp(i64t.clone(), span);
        for (j, (t, ty)) in temps.iter().enumerate() {
            let len = if let Type::Tuple(ts) = ty {
                let n = ts.len() as i128;
                self.push(Expr::Literal(Literal::Int(n)), i64t.clone(), span)
            } else {
                let a = self.push(Expr::Local(*t), ty.clone(), span);
                self.push(Expr::ArrayProp(a, ArrayProp::Shape(0)), i64t.clone(), span)
            };
            let v = if j == 0 {
                len
            } else {
                let cur = self.push(Expr::Local(count), i64t.clone(), span);
                let len2 = self.push(self.exprs[len].clone(), i64t.clone(), span);
                let lt = self.push(Expr::Binary(BinaryOp::Lt, len, cur), bool_t.clone(), span);
                let cur2 = self.push(Expr::Local(count), i64t.clone(), span);
                self.push(
                    Expr::Select {
                        cond: lt,
                        then: len2,
                        otherwise: cur2,
                    },
                    i64t.clone(),
                    span,
                )
            };
            out.push(Stmt {
                kind: StmtKind::Assign(count, v),
                span,
            });
        }
        let ctr = self.counter_from_zero(&i64t, span, out);
        let c = self.push(Expr::Local(ctr), i64t.clone(), span);
        let n = self.push(Expr::Local(count), i64t.clone(), span);
        let cond = self.push(Expr::Binary(BinaryOp::Lt, c, n), bool_t, span);
        self.loops += 1;
        let mut names = HashSet::new();
        assigned_names(&f.body, &mut names);
        self.loop_assigned.push(names);
        let mut body = Vec::new();
        let bound = self.bind_array_target(&f.target, &it, &temps, ctr, &mut body);
        if bound.is_some() {
            body.extend(self.block(&f.body));
        }
        self.loops -= 1;
        self.loop_assigned.pop();
        if bound.is_none() {
            return true;
        }
        let c = self.push(Expr::Local(ctr), i64t.clone(), span);
        let one = self.push(Expr::Literal(Literal::Int(1)), i64t.clone(), span);
        let inc = self.push(Expr::Binary(BinaryOp::AddNoWrap, c, one), i64t, span);
        out.push(Stmt {
            kind: StmtKind::Loop {
                cond,
                body,
                continuing: vec![Stmt {
                    kind: StmtKind::Assign(ctr, inc),
                    span,
                }],
            },
            span,
        });
        true
    }

    /// `for x in literal_unroll(t):` (§4.6.1): over a compile-time constant tuple, the body
    /// is checked and emitted once per element with `x` bound to that element (so the
    /// elements may have different types: arrays of different shapes, numbers of different
    /// types); over a run-time tuple of one element type, an ordinary loop over it.
    fn for_unroll(&mut self, f: &ast::StmtFor, c: &ast::ExprCall, out: &mut Block) {
        let Some(a) = self.bind(c, "literal_unroll", &["container"], 1) else {
            return;
        };
        let Some(arg) = a[0] else { return };
        let v = self.expr(arg);
        let Some(v) = self.value_of(v) else { return };
        if !f.orelse.is_empty() {
            self.error(
                Code::E0303,
                sp(&f.orelse[0]),
                "`for ... else` over `literal_unroll` is not supported in device code",
            );
            return;
        }
        let items = match &v.konst {
            Some(Const::Tuple(items)) => items.clone(),
            _ => {
                if matches!(&v.ty, Type::Tuple(ts) if ts.windows(2).all(|w| w[0] == w[1])) {
                    return self.for_sequence(f, v, out);
                }
                self.diags.push(
                    Diagnostic::error(
                        Code::E0306,
                        v.span,
                        format!(
                            "`literal_unroll` needs a tuple known at compile time when its elements have different types, found {}",
                            v.ty
                        ),
                    )
                    .with_note("a module-level tuple of constants (numbers, constant arrays) is one"),
                );
                return;
            }
        };
        let ast::Expr::Name(target) = f.target.as_ref() else {
            self.error(
                Code::E0301,
                sp(f.target.as_ref()),
                "the target of a `for` loop over `literal_unroll` must be a single name",
            );
            return;
        };
        if let Some(jump) = loop_jump(&f.body) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0307,
                    jump,
                    "`break` and `continue` are not supported in a loop over `literal_unroll`",
                )
                .with_note(
                    "the body is repeated once per element at compile time; use an `if` instead",
                ),
            );
            return;
        }
        let name = target.id.to_string();
        let saved = self.statics.remove(&name);
        for item in items {
            self.statics.insert(name.clone(), Item::Const(item));
            let body = self.block(&f.body);
            out.extend(body);
        }
        self.statics.remove(&name);
        if let Some(s) = saved {
            self.statics.insert(name, s);
        }
    }

    /// `for x in (a, b, c):` over a tuple or vector whose elements have one type: a counted
    /// loop that picks element `i` (the optimizer unrolls it), so `break` and `continue` work.
    fn for_sequence(&mut self, f: &ast::StmtFor, v: Val, out: &mut Block) {
        let span = sp(f);
        let elems: Vec<Type> = match &v.ty {
            Type::Tuple(ts) => ts.clone(),
            Type::Vector { elem, len } => vec![Type::Scalar(*elem); *len as usize],
            _ => return,
        };
        let Some(ety) = elems.first().cloned() else {
            return;
        };
        if elems.iter().any(|t| *t != ety) {
            self.diags.push(
                Diagnostic::error(Code::E0304, v.span, format!("a `for` loop can only iterate over a tuple whose elements have one type, not {}", v.ty))
                    .with_note("unpack the tuple, or convert its elements to one type"),
            );
            return;
        }
        let n = elems.len();
        let (weak, nonneg) = match &v.konst {
            Some(Const::Tuple(items)) => (
                items
                    .iter()
                    .all(|c| matches!(c, Const::Int(_)))
                    .then_some(Weak::Int)
                    .or_else(|| {
                        items
                            .iter()
                            .all(|c| matches!(c, Const::Int(_) | Const::Float(_)))
                            .then_some(Weak::Float)
                    }),
                items.iter().all(|c| c.as_int().is_some_and(|i| i >= 0)),
            ),
            _ => (None, v.nonneg),
        };
        if !matches!(f.target.as_ref(), ast::Expr::Name(_)) {
            self.error(
                Code::E0301,
                sp(f.target.as_ref()),
                "the target of this `for` loop must be a single name",
            );
            return;
        }
        let i32t = Type::Scalar(Scalar::Int32);
        let bool_t = Type::Scalar(Scalar::Bool);
        let tmp = self.new_temp(v.ty.clone(), v.span);
        out.push(Stmt {
            kind: StmtKind::Assign(tmp, v.e),
            span,
        });
        let ctr = self.counter_from_zero(&i32t, span, out);
        let c = self.push(Expr::Local(ctr), i32t.clone(), span);
        let lim = self.push(Expr::Literal(Literal::Int(n as i128)), i32t.clone(), span);
        let cond = self.push(Expr::Binary(BinaryOp::Lt, c, lim), bool_t.clone(), span);
        self.loops += 1;
        let mut names = HashSet::new();
        assigned_names(&f.body, &mut names);
        self.loop_assigned.push(names);
        let mut body = Vec::new();
        let t = self.push(Expr::Local(tmp), v.ty.clone(), span);
        let mut acc = self.push(Expr::Extract(t, (n - 1) as u32), ety.clone(), span);
        for k in (0..n - 1).rev() {
            let c = self.push(Expr::Local(ctr), i32t.clone(), span);
            let kk = self.push(Expr::Literal(Literal::Int(k as i128)), i32t.clone(), span);
            let is_k = self.push(Expr::Binary(BinaryOp::Eq, c, kk), bool_t.clone(), span);
            let t = self.push(Expr::Local(tmp), v.ty.clone(), span);
            let ek = self.push(Expr::Extract(t, k as u32), ety.clone(), span);
            acc = self.push(
                Expr::Select {
                    cond: is_k,
                    then: ek,
                    otherwise: acc,
                },
                ety.clone(),
                span,
            );
        }
        let mut iv = self.val(acc, ety.clone(), sp(f.target.as_ref()));
        iv.weak = weak;
        iv.nonneg = nonneg;
        self.assign(&f.target, iv, &mut body);
        body.extend(self.block(&f.body));
        self.loops -= 1;
        self.loop_assigned.pop();
        let c = self.push(Expr::Local(ctr), i32t.clone(), span);
        let one = self.push(Expr::Literal(Literal::Int(1)), i32t.clone(), span);
        let inc = self.push(
            Expr::Binary(BinaryOp::AddNoWrap, c, one),
            i32t.clone(),
            span,
        );
        out.push(Stmt {
            kind: StmtKind::Loop {
                cond,
                body,
                continuing: vec![Stmt {
                    kind: StmtKind::Assign(ctr, inc),
                    span,
                }],
            },
            span,
        });
    }

    /// A condition: any number, tested for `!= 0` as Python's truth does.
    pub(super) fn cond(&mut self, e: &ast::Expr) -> Option<Handle<Expr>> {
        let v = self.expr(e);
        let v = self.value_of(v)?;
        self.truthy(v)
    }

    pub(super) fn truthy(&mut self, v: Val) -> Option<Handle<Expr>> {
        let span = v.span;
        match &v.ty {
            Type::Scalar(Scalar::Bool) => Some(v.e),
            Type::Scalar(s) if (s.is_complex() || s.is_fp8()) && v.konst.is_none() => {
                // Nonzero, part by part (complex) or ignoring the sign (fp8).
                Some(self.push(Expr::Cast(v.e), Type::Scalar(Scalar::Bool), span))
            }
            Type::Scalar(s) => {
                let s = *s;
                if let Some(c) = &v.konst {
                    let b = c.as_complex().is_some_and(|(r, i)| r != 0.0 || i != 0.0);
                    return Some(self.push(
                        Expr::Literal(Literal::Bool(b)),
                        Type::Scalar(Scalar::Bool),
                        span,
                    ));
                }
                let zero = if s.is_float() {
                    Literal::Float(0.0)
                } else {
                    Literal::Int(0)
                };
                let z = self.push(Expr::Literal(zero), Type::Scalar(s), span);
                Some(self.push(
                    Expr::Binary(BinaryOp::Ne, v.e, z),
                    Type::Scalar(Scalar::Bool),
                    span,
                ))
            }
            other => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0205,
                        span,
                        format!("the truth value of {other} is not defined in device code"),
                    )
                    .with_note("compare explicitly, e.g. `len(a) > 0`"),
                );
                None
            }
        }
    }
}

pub(super) fn element_type(t: &Type, i: usize) -> Type {
    match t {
        Type::Tuple(ts) => ts[i].clone(),
        Type::Vector { elem, .. } => Type::Scalar(*elem),
        _ => Type::None,
    }
}

/// NumPy's kind order for `same_kind` casting: a value converts to a kind at or after its own.
fn kind_rank(k: Kind) -> u8 {
    match k {
        Kind::Bool => 0,
        Kind::UInt => 1,
        Kind::Int => 2,
        Kind::Float => 3,
        Kind::Complex => 4,
    }
}

fn from_kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Bool => "bool",
        Kind::UInt | Kind::Int => "int",
        Kind::Float => "float",
        Kind::Complex => "complex",
    }
}

/// What a `for` over arrays iterates (see `for_arrays`).
enum ArrayIter {
    /// Element `i` of the array with this index among the loop's arrays.
    Array(usize),
    /// Element `i` of the tuple (of one element type) with this index, and its length.
    Tuple(usize, usize),
    /// `enumerate(inner)`: `(i, inner's item)`.
    Enumerate(Box<ArrayIter>),
    /// `zip(a, b, …)`: the items of each.
    Zip(Vec<ArrayIter>),
}

/// The first `break` or `continue` of `body` that belongs to the loop `body` is the body of
/// (not to a loop nested in it).
fn loop_jump(body: &[ast::Stmt]) -> Option<Span> {
    body.iter().find_map(|s| match s {
        ast::Stmt::Break(_) | ast::Stmt::Continue(_) => Some(sp(s)),
        ast::Stmt::If(i) => loop_jump(&i.body)
            .or_else(|| i.elif_else_clauses.iter().find_map(|c| loop_jump(&c.body))),
        ast::Stmt::With(w) => loop_jump(&w.body),
        ast::Stmt::Try(t) => loop_jump(&t.body),
        _ => None,
    })
}
