//! Statements: the dispatch over statement kinds, `if` chains (with constant and target
//! conditions), `while`, `return`, and truth values. Assignments are in `assign.rs`, `for`
//! loops in `loops.rs`.

use super::*;
use crate::diag::Code;

/// Calls `f` with each name an assignment binds in `stmts` (nested blocks included) and
/// whether it takes many values: a `for` loop's target, or a name assigned in the body of a
/// `static_range` loop (each unrolled copy assigns it anew, the index a different constant, so
/// a local assigned once there is no constant expression).
fn each_assigned_name(stmts: &[ast::Stmt], f: &mut impl FnMut(&str, bool)) {
    walk_assigned(stmts, false, f)
}

fn walk_assigned(stmts: &[ast::Stmt], many: bool, f: &mut impl FnMut(&str, bool)) {
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
            ast::Stmt::Assign(a) => a.targets.iter().for_each(|t| target(t, many, f)),
            ast::Stmt::AugAssign(a) => target(&a.target, many, f),
            ast::Stmt::AnnAssign(a) => target(&a.target, many, f),
            ast::Stmt::For(fs) => {
                target(&fs.target, true, f);
                walk_assigned(&fs.body, many || is_static_range(&fs.iter), f);
                walk_assigned(&fs.orelse, many, f);
            }
            ast::Stmt::While(w) => {
                walk_assigned(&w.body, many, f);
                walk_assigned(&w.orelse, many, f);
            }
            ast::Stmt::If(i) => {
                walk_assigned(&i.body, many, f);
                for c in &i.elif_else_clauses {
                    walk_assigned(&c.body, many, f);
                }
            }
            _ => {}
        }
    }
}

/// Whether a loop's iterable is a call of `static_range` (`device.static_range(...)` or a
/// bare `static_range(...)`), judged by the name alone: this runs before names are resolved.
fn is_static_range(iter: &ast::Expr) -> bool {
    let ast::Expr::Call(c) = iter else {
        return false;
    };
    match c.func.as_ref() {
        ast::Expr::Name(n) => n.id.as_str() == "static_range",
        ast::Expr::Attribute(a) => a.attr.id.as_str() == "static_range",
        _ => false,
    }
}

/// Names a function assigns (its locals, by Python's scoping rule).
pub(super) fn assigned_names(stmts: &[ast::Stmt], out: &mut HashSet<String>) {
    each_assigned_name(stmts, &mut |n, _| {
        out.insert(n.to_string());
    });
}

/// Counts the places that assign each name (a `for` target and `x += 1` count too; a loop
/// variable, and a name assigned in a `static_range` body, count twice, as they take many
/// values).
pub(super) fn count_assignments(stmts: &[ast::Stmt], out: &mut HashMap<String, usize>) {
    each_assigned_name(stmts, &mut |n, loop_var| {
        *out.entry(n.to_string()).or_default() += if loop_var { 2 } else { 1 };
    });
}

/// True when no path through the block falls off its end: each ends in `return`, or in a
/// loop that never ends normally (`while True:` whose body has no `break` of its own). A
/// loop whose condition can be false, or that a `break` leaves, falls through.
pub(super) fn always_returns(block: &[Stmt], exprs: &Arena<Expr>) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If {
            then, otherwise, ..
        } => always_returns(then, exprs) && always_returns(otherwise, exprs),
        StmtKind::Loop { cond, body, .. } => {
            matches!(exprs[*cond], Expr::Literal(Literal::Bool(true))) && !breaks(body)
        }
        _ => false,
    })
}

/// Whether a `break` in `block` leaves the loop whose body it is (not an inner loop's).
fn breaks(block: &Block) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If {
            then, otherwise, ..
        } => breaks(then) || breaks(otherwise),
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

/// Whether a statement must leave IR behind when it checks without error: an assignment to
/// an attribute or an element, or a call evaluated for its effect. (Other statements may
/// legitimately leave none: a name bound to a constant, a loop over an empty tuple, a
/// branch that `target(...)` removes.)
fn has_effect(s: &ast::Stmt) -> bool {
    let stores = |t: &ast::Expr| matches!(t, ast::Expr::Attribute(_) | ast::Expr::Subscript(_));
    match s {
        ast::Stmt::Expr(e) => matches!(e.value.as_ref(), ast::Expr::Call(_)),
        ast::Stmt::Assign(a) => a.targets.iter().any(stores),
        ast::Stmt::AugAssign(a) => stores(&a.target),
        ast::Stmt::AnnAssign(a) => a.value.is_some() && stores(&a.target),
        _ => false,
    }
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

/// The exceptions device code may raise (Python's built-in ones that a computation raises).
const BUILTIN_EXCEPTIONS: &[&str] = &[
    "Exception",
    "ArithmeticError",
    "AssertionError",
    "FloatingPointError",
    "IndexError",
    "KeyError",
    "LookupError",
    "NotImplementedError",
    "OverflowError",
    "RuntimeError",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
];

impl FnCx<'_, '_> {
    pub(super) fn block(&mut self, stmts: &[ast::Stmt]) -> Block {
        let mut out = Vec::new();
        for s in stmts {
            // `if x is None: return …` decided `True` (x was given `None`, §5.3): what
            // follows is unreachable, and is not checked (it may use `x` as a value).
            let taken =
                matches!(s, ast::Stmt::If(i) if self.static_none_test(&i.test) == Some(true));
            let before = out.len();
            self.stmt(s, &mut out);
            if taken && always_returns(&out[before..], &self.exprs) {
                break;
            }
        }
        out
    }

    /// Checks one statement into `out`. Checker invariant: a statement with an effect
    /// either adds IR to `out` or leaves an error behind (its own, or one reported where a
    /// value it uses failed); a path that drops code without a diagnostic is a compiler
    /// bug, caught here in debug builds (every fixture and property test runs them).
    pub(super) fn stmt(&mut self, s: &ast::Stmt, out: &mut Block) {
        let before = out.len();
        self.stmt_inner(s, out);
        debug_assert!(
            out.len() > before || !has_effect(s) || self.has_failed(),
            "checker dropped a statement without a diagnostic at {:?}",
            sp(s)
        );
    }

    fn stmt_inner(&mut self, s: &ast::Stmt, out: &mut Block) {
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
                if let ast::Expr::Call(c) = e.value.as_ref()
                    && let Some(Item::Builtin(b)) = self.callee_item(&c.func)
                    && crate::front::builtins::table::entry(b).rule()
                        == crate::front::builtins::table::Rule::TensorInPlace
                {
                    self.tensor_stmt(b, c, out);
                    return;
                }
                if let ast::Expr::Call(c) = e.value.as_ref()
                    && let Some(Item::Builtin(Builtin::Cg(
                        crate::front::builtins::CgFn::GroupMemcpy,
                    ))) = self.callee_item(&c.func)
                {
                    self.group_memcpy(c, out);
                    return;
                }
                if let ast::Expr::Call(c) = e.value.as_ref()
                    && let Some(Item::Builtin(Builtin::Print)) = self.callee_item(&c.func)
                {
                    self.print(c, span, out);
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
                // `d = provides(sm80) | is_host`: a local bound once to a target description
                // is a constant expression, which `target(d)` reads (§8).
                if let [ast::Expr::Name(n)] = a.targets.as_slice()
                    && self.is_target_desc(&a.value)
                {
                    if self.assign_sites.get(n.id.as_str()).copied() != Some(1) {
                        self.error(
                            Code::E0410,
                            sp(n),
                            format!("`{}` is bound to a target description, so it may be assigned only once", n.id),
                        );
                        return;
                    }
                    self.s.target_used = true;
                    if let Some(b) = self.target_desc(&a.value) {
                        let item = if b {
                            Builtin::AnyTarget
                        } else {
                            Builtin::NoTarget
                        };
                        self.statics.insert(n.id.to_string(), Item::Builtin(item));
                    }
                    self.seen_assigned.insert(n.id.to_string());
                    return;
                }
                // `t = out.dtype`, `t = float32x4`, `t = int`, `P = point`, `n = None`: a
                // local bound once to a type (or to `None`) is a compile-time alias, used as
                // the type itself is (`t(x)`, `local_array(n, t)`, `n is None`; §2.10).
                if let [ast::Expr::Name(n)] = a.targets.as_slice()
                    && self.assign_sites.get(n.id.as_str()).copied() == Some(1)
                    && !self.hints.contains_key(n.id.as_str())
                    && let Some(item) = self.type_value(&a.value)
                {
                    self.statics.insert(n.id.to_string(), item);
                    self.seen_assigned.insert(n.id.to_string());
                    return;
                }
                if let ast::Expr::Call(c) = a.value.as_ref()
                    && self.is_atomic_class_call(&a.value)
                {
                    self.atomic_object(&a.targets, c, out);
                    return;
                }
                // `r["name"] = "abc"`: a string literal stored into a record's text field.
                if let [t] = a.targets.as_slice()
                    && matches!(
                        a.value.as_ref(),
                        ast::Expr::StringLiteral(_) | ast::Expr::BytesLiteral(_)
                    )
                {
                    let field = match t {
                        ast::Expr::Subscript(s) => match s.slice.as_ref() {
                            ast::Expr::StringLiteral(k) => Some((&*s.value, k.value.to_str())),
                            _ => None,
                        },
                        ast::Expr::Attribute(at) => Some((&*at.value, at.attr.as_str())),
                        _ => None,
                    };
                    if let Some((base, field)) = field {
                        self.assign_text(base, field, &a.value, sp(t), out);
                        return;
                    }
                    if matches!(t, ast::Expr::Subscript(_)) {
                        self.assign_text_element(t, &a.value, sp(t), out);
                        return;
                    }
                }
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
                // `d: TargetDescription = provides(sm80)`, `s: SMSelector = sm90`: bound as
                // the same assignments without the hint are.
                if let (ast::Expr::Name(n), Some(value)) = (a.target.as_ref(), a.value.as_ref())
                    && let Some(Item::Builtin(
                        hint @ (Builtin::TargetDescription | Builtin::SmSelector),
                    )) = self.s.m.resolve_static(&a.annotation)
                {
                    let ok = match hint {
                        Builtin::TargetDescription => self.is_target_desc(value),
                        _ => matches!(self.callee_item(value), Some(Item::Builtin(Builtin::Sm(_)))),
                    };
                    if !ok {
                        let what = if hint == Builtin::TargetDescription {
                            "a target description (`is_host`, `provides(sm80)`, ... combined with |, & and ~)"
                        } else {
                            "an architecture selector `smXX`"
                        };
                        self.error(
                            Code::E0410,
                            sp(value.as_ref()),
                            format!(
                                "`{}` is hinted `{}`, so its value must be {what}",
                                n.id,
                                if hint == Builtin::TargetDescription {
                                    "TargetDescription"
                                } else {
                                    "SMSelector"
                                }
                            ),
                        );
                        return;
                    }
                    let plain = ast::StmtAssign {
                        node_index: a.node_index.clone(),
                        range: a.range,
                        targets: vec![a.target.as_ref().clone()],
                        value: value.clone(),
                    };
                    self.stmt(&ast::Stmt::Assign(plain), out);
                    return;
                }
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
                // `c: device.Atomic(int32) = device.Atomic(int32)` (§9.7).
                if let Some(value) = &a.value
                    && let ast::Expr::Call(c) = value.as_ref()
                    && self.is_atomic_class_call(value)
                {
                    self.atomic_object(std::slice::from_ref(a.target.as_ref()), c, out);
                    return;
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
                            form: LoopForm::Plain,
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
            ast::Stmt::Assert(a) => {
                let cond = self.cond(&a.test);
                let message = match a.msg.as_deref() {
                    None => Some("AssertionError".to_string()),
                    Some(ast::Expr::StringLiteral(m)) => {
                        Some(format!("AssertionError: {}", m.value.to_str()))
                    }
                    Some(m) => {
                        self.error(
                            Code::E0302,
                            sp(m),
                            "the message of an `assert` in device code must be a string literal",
                        );
                        None
                    }
                };
                if let (Some(cond), Some(message)) = (cond, message) {
                    out.push(Stmt {
                        kind: StmtKind::Assert { cond, message },
                        span,
                    });
                }
            }
            ast::Stmt::Raise(r) => {
                if let Some(message) = self.raise_message(r) {
                    out.push(Stmt {
                        kind: StmtKind::Raise { message },
                        span,
                    });
                }
            }
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

    /// What `raise E("text")` (or `raise E`, `raise E()`) says: `E: text`; E0302 for any
    /// other form.
    fn raise_message(&mut self, r: &ast::StmtRaise) -> Option<String> {
        let span = sp(r);
        if r.cause.is_some() {
            self.error(
                Code::E0302,
                span,
                "`raise ... from ...` is not supported in device code",
            );
            return None;
        }
        let Some(exc) = r.exc.as_deref() else {
            self.error(
                Code::E0302,
                span,
                "a bare `raise` has no exception to re-raise in device code",
            );
            return None;
        };
        let (class, args) = match exc {
            ast::Expr::Name(n) => (n, &[][..]),
            ast::Expr::Call(c) if c.arguments.keywords.is_empty() => match c.func.as_ref() {
                ast::Expr::Name(n) => (n, &c.arguments.args[..]),
                f => {
                    self.error(
                        Code::E0302,
                        sp(f),
                        "device code can raise only Python's built-in exceptions, by name",
                    );
                    return None;
                }
            },
            e => {
                self.error(
                    Code::E0302,
                    sp(e),
                    "device code can raise only `ExceptionClass(\"message\")`",
                );
                return None;
            }
        };
        let name = class.id.as_str();
        if !BUILTIN_EXCEPTIONS.contains(&name) {
            self.error(
                Code::E0302,
                sp(class),
                format!("`{name}` is not one of Python's built-in exceptions"),
            );
            return None;
        }
        match args {
            [] => Some(name.to_string()),
            [ast::Expr::StringLiteral(m)] => Some(format!("{name}: {}", m.value.to_str())),
            [a, ..] => {
                self.error(
                    Code::E0302,
                    sp(a),
                    "the exception's argument in device code must be one string literal",
                );
                None
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
        let reduced;
        let test = match self.target_in_boolop(test) {
            Some(Err(decided)) => {
                return if decided {
                    self.block(body)
                } else {
                    self.if_chain(rest)
                };
            }
            Some(Ok(e)) => {
                reduced = e;
                &reduced
            }
            None => test,
        };
        if let Some(decided) = self.static_target(test) {
            // Whether the host would take this branch: code the host never reaches may use
            // device-only entities in a `@func` (E0243).
            let outer = self.host_reachable;
            let out = match decided {
                Some(true) => {
                    self.host_reachable = outer && self.target_on_host(test);
                    self.block(body)
                }
                Some(false) => {
                    self.host_reachable = outer && !self.target_on_host(test);
                    self.if_chain(rest)
                }
                None => Vec::new(),
            };
            self.host_reachable = outer;
            return out;
        }
        if let Some(decided) = self
            .static_none_test(test)
            .or_else(|| self.constant_test(test))
        {
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
        if !self.s.m.rules().static_arguments {
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

    /// What `e` names when it is a type or `None` written as a value (§2.10): `None`, a
    /// number or vector type (`float32`, `int`, `float32x4`, `out.dtype`, `v.dtype`), a
    /// `@struct` class (also `points.dtype` of an array of records), or a local bound to one
    /// of these.
    fn type_value(&mut self, e: &ast::Expr) -> Option<Item> {
        if matches!(e, ast::Expr::NoneLiteral(_)) {
            return Some(Item::NoneArg);
        }
        // `points.dtype` of an array of records names its `@struct` class.
        if let ast::Expr::Attribute(a) = e
            && a.attr.id.as_str() == "dtype"
            && let ast::Expr::Name(n) = a.value.as_ref()
            && let Some(h) = self.hints.get(n.id.as_str())
            && let Type::Array(at) = &h.ty
            && let DType::Struct(st) = &at.dtype
        {
            return match self.s.m.items.get(&st.name) {
                Some(item @ Item::Struct(_)) => Some(item.clone()),
                _ => None,
            };
        }
        if !matches!(
            e,
            ast::Expr::Name(_) | ast::Expr::Attribute(_) | ast::Expr::Call(_)
        ) {
            return None;
        }
        // A call is a type only as `np.dtype(t)` (resolved without evaluating anything).
        let item = if matches!(e, ast::Expr::Call(_)) {
            self.s.m.resolve_static(e)?
        } else {
            self.callee_item(e)?
        };
        match item {
            Item::Builtin(
                Builtin::Scalar(_)
                | Builtin::Int
                | Builtin::Float
                | Builtin::Bool
                | Builtin::Complex
                | Builtin::Vector(..),
            )
            | Item::Builtin(Builtin::Sm(_))
            | Item::Struct(_)
            | Item::NoneArg => Some(item),
            _ => None,
        }
    }

    /// Whether `e` is written as a target description: `is_host`, `provides(sm80)`, and
    /// `|`, `&`, `~` of those.
    fn is_target_desc(&mut self, e: &ast::Expr) -> bool {
        match e {
            ast::Expr::BinOp(b) if matches!(b.op, ast::Operator::BitOr | ast::Operator::BitAnd) => {
                self.is_target_desc(&b.left) && self.is_target_desc(&b.right)
            }
            ast::Expr::UnaryOp(u) if u.op == ast::UnaryOp::Invert => {
                self.is_target_desc(&u.operand)
            }
            ast::Expr::Call(c) => matches!(
                self.callee_item(&c.func),
                Some(Item::Builtin(Builtin::IsExactly | Builtin::Provides))
            ),
            e => matches!(
                self.callee_item(e),
                Some(Item::Builtin(
                    Builtin::IsHost | Builtin::IsDevice | Builtin::AnyTarget | Builtin::NoTarget
                ))
            ),
        }
    }

    /// `target(...)` as an operand of `and`/`or` (§8): a decided operand is dropped where it
    /// cannot change the result (`True` in `and`, `False` in `or`) and decides the whole
    /// condition where it can, unless an operand before it calls something (whose effect
    /// must happen): then the condition is left alone. `None`: no `target` operand;
    /// `Some(Err(b))`: decided; `Some(Ok(e))`: the condition without its decided operands.
    fn target_in_boolop(&mut self, test: &ast::Expr) -> Option<Result<ast::Expr, bool>> {
        let ast::Expr::BoolOp(b) = test else {
            return None;
        };
        let is_and = b.op == ast::BoolOp::And;
        let mut kept: Vec<ast::Expr> = Vec::new();
        let mut any = false;
        for v in &b.values {
            let decided = match self.target_in_boolop(v) {
                Some(Err(d)) => Some(d),
                Some(Ok(e)) => {
                    any = true;
                    kept.push(e);
                    continue;
                }
                None => match self.static_target(v) {
                    Some(Some(d)) => Some(d),
                    Some(None) => return Some(Err(false)), // reported
                    None => None,
                },
            };
            match decided {
                None => kept.push(v.clone()),
                Some(d) => {
                    any = true;
                    if d != is_and {
                        // `False` in `and`, `True` in `or`: the value of the whole, if
                        // nothing before it must run.
                        if kept.iter().any(contains_call) {
                            return None;
                        }
                        return Some(Err(d));
                    }
                }
            }
        }
        if !any {
            return None;
        }
        Some(match kept.len() {
            0 => Err(is_and),
            1 => Ok(kept.remove(0)),
            _ => Ok(ast::Expr::BoolOp(ast::ExprBoolOp {
                values: kept,
                ..b.clone()
            })),
        })
    }

    /// Whether the `target(...)` test `test` (already decided for this target without an
    /// error) holds on the host.
    fn target_on_host(&mut self, test: &ast::Expr) -> bool {
        let ast::Expr::Call(c) = test else {
            return true;
        };
        let sm = std::mem::replace(&mut self.s.sm, crate::ir::HOST_TARGET);
        let on_host = self.target_desc(&c.arguments.args[0]);
        self.s.sm = sm;
        on_host.unwrap_or(true)
    }

    /// E0243 when `b`, used at `span`, is device-only (the builtin table's host column) and
    /// this is a `@func` of a dialect whose `@func`s are heterogeneous, outside any
    /// `target(...)` branch that the host does not take. The host itself reports such uses
    /// as E0501 when it compiles the function.
    pub(super) fn device_only_use(&mut self, b: Builtin, span: Span) {
        if self.kind != FunctionKind::Device
            || !self.host_reachable
            || !self.s.m.rules().heterogeneous_funcs
            || self.s.sm == crate::ir::HOST_TARGET
            || crate::front::builtins::table::entry(b).host_column()
                != crate::front::builtins::table::Host::DeviceOnly
        {
            return;
        }
        self.diags.push(
            Diagnostic::error(
                Code::E0243,
                span,
                format!(
                    "`{}` is device-only, but `{}` is a @func, which shall be heterogeneous",
                    super::calls::builtin_name(b),
                    self.decl.name
                ),
            )
            .with_note(
                "guard device-only code with `if target(is_device):` (and give the host its \
                 own branch under `if target(is_host):`), or move it into the @kernel that calls \
                 the function",
            ),
        );
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
            // A module-level name bound once to a target description (`NEWER = provides(sm80)`).
            ast::Expr::Name(n)
                if !self.scope.contains_key(n.id.as_str())
                    && !self.statics.contains_key(n.id.as_str())
                    && let Some(v) = self.s.m.global_value(n.id.as_str())
                    && self.is_target_desc(v) =>
            {
                self.target_desc(v)
            }
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
