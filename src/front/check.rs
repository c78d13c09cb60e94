//! Type checking and specialization: one entry function, given concrete argument types,
//! becomes an [`ir::Program`] in which every local, expression and called function has one
//! concrete type.
//!
//! Locals get their type from their assignments. A Python number (a literal, or a local only
//! ever bound to them) stays *weak* until a typed value is assigned to the same local, so
//! `acc = 0` followed by `acc += x[i]` makes `acc` a `float32` when `x` holds `float32`. When
//! an assignment changes what is known, the body is checked again; this converges because
//! knowledge only grows. Two typed assignments of different types are an error that points
//! at both.
//!
//! The checker also tracks which integer values are known to be non-negative, so that array
//! indexing only pays for Python's negative-index wrap-around where it can happen.

use super::builtins::{Builtin, Namespace};
use super::consts::{fold_binary, Const};
use super::{binary_op, FunctionDecl, Item, ParsedModule};
use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::ir::{
    self, Arena, ArrayProp, Axis, BinaryOp, Block, Expr, Function, FunctionKind, Handle,
    Index, Intrinsic, Literal, Local, Stmt, StmtKind, UnaryOp,
};
use crate::types::promote::{promote, promote_weak, promote_weak_weak, Defaults, Weak};
use crate::types::{Kind, Scalar, Type};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;
use std::collections::{HashMap, HashSet};

/// How many times a body is re-checked while local types are still being learned. Each
/// extra pass needs a local's type to have grown, so real programs need two or three.
const MAX_PASSES: usize = 12;

fn sp(node: &impl Ranged) -> Span {
    node.range().into()
}

/// Specializes `entry` for `args` and returns the typed program.
pub fn specialize(
    module: &ParsedModule,
    entry: &str,
    args: &[Type],
    defaults: Defaults,
) -> Result<ir::Program, Diagnostics> {
    let mut s = Specializer {
        m: module,
        defaults,
        functions: Arena::default(),
        instances: HashMap::new(),
        reported: HashSet::new(),
        stack: Vec::new(),
        diags: Vec::new(),
    };
    let fail = |list| Diagnostics {
        file: module.file.clone(),
        list,
    };
    let Some((idx, decl)) = module.function(entry) else {
        let names: Vec<_> = module
            .functions
            .iter()
            .filter(|f| f.kind.is_some())
            .map(|f| format!("`{}`", f.name))
            .collect();
        let note = if names.is_empty() {
            "the module defines no @kernel or @func".to_string()
        } else {
            format!("device functions in this module: {}", names.join(", "))
        };
        return Err(fail(vec![Diagnostic::error(
            "E0110",
            Span::default(),
            format!("no function named `{entry}` in this module"),
        )
        .with_note(note)]));
    };
    if decl.kind.is_none() {
        return Err(fail(vec![not_device_function(decl)]));
    }
    let def = module.def(decl);
    let nparams = def.parameters.args.len() + def.parameters.posonlyargs.len();
    if nparams != args.len() {
        return Err(fail(vec![Diagnostic::error(
            "E0107",
            decl.name_span,
            format!(
                "`{entry}` takes {nparams} argument{}, but {} type{} given",
                if nparams == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { " was" } else { "s were" }
            ),
        )]));
    }
    let handle = s.instantiate(idx, args.to_vec(), decl.name_span);
    let key = (idx, args.to_vec());
    s.commit(&key);
    match handle {
        Ok(entry) if s.diags.is_empty() => Ok(ir::Program {
            functions: s.functions,
            entry,
        }),
        _ => {
            if s.diags.is_empty() {
                // Defensive: a failed instance always reports why.
                s.diags.push(Diagnostic::error(
                    "E0999",
                    decl.name_span,
                    "internal error: specialization failed without a diagnostic",
                ));
            }
            Err(fail(s.diags))
        }
    }
}

fn not_device_function(decl: &FunctionDecl) -> Diagnostic {
    Diagnostic::error(
        "E0104",
        decl.name_span,
        format!("`{}` is not a device function", decl.name),
    )
    .with_note("decorate it with `@device.kernel` or `@device.func`")
}

struct Instance {
    handle: Option<Handle<Function>>,
    diags: Vec<Diagnostic>,
    /// Instances this one's final pass called, whose diagnostics it depends on.
    callees: Vec<(usize, Vec<Type>)>,
}

struct Specializer<'m> {
    m: &'m ParsedModule,
    defaults: Defaults,
    functions: Arena<Function>,
    instances: HashMap<(usize, Vec<Type>), Instance>,
    reported: HashSet<(usize, Vec<Type>)>,
    stack: Vec<(usize, Span)>,
    diags: Vec<Diagnostic>,
}

impl Specializer<'_> {
    /// Moves the diagnostics of an instance and of what it calls into the result, once.
    fn commit(&mut self, key: &(usize, Vec<Type>)) {
        if !self.reported.insert(key.clone()) {
            return;
        }
        let Some(inst) = self.instances.get(key) else {
            return;
        };
        let callees = inst.callees.clone();
        self.diags.extend(inst.diags.iter().cloned());
        for c in callees {
            self.commit(&c);
        }
    }

    /// Instantiates function `idx` for argument types. A recursive call is returned as the
    /// caller's own diagnostic; other failures were recorded with the instance.
    fn instantiate(
        &mut self,
        idx: usize,
        args: Vec<Type>,
        call: Span,
    ) -> Result<Handle<Function>, Option<Diagnostic>> {
        let key = (idx, args.clone());
        if let Some(inst) = self.instances.get(&key) {
            return inst.handle.ok_or(None);
        }
        let m = self.m;
        let decl = &m.functions[idx];
        if let Some(pos) = self.stack.iter().position(|(i, _)| *i == idx) {
            let mut d = Diagnostic::error(
                "E0105",
                call,
                format!("recursive call of `{}`", decl.name),
            )
            .with_label("this call recurses")
            .with_note("device code cannot recurse: the call depth must be known when compiling");
            for (i, span) in self.stack[pos + 1..].iter() {
                d = d.with_secondary(*span, format!("`{}` is called here", m.functions[*i].name));
            }
            return Err(Some(d));
        }
        self.stack.push((idx, call));
        let mut hints: HashMap<String, Hint> = HashMap::new();
        let mut pass = 0;
        let outcome = loop {
            let mut cx = FnCx::new(self, idx, &args, &mut hints);
            cx.run();
            pass += 1;
            if !cx.changed || pass == MAX_PASSES {
                break cx.finish();
            }
        };
        self.stack.pop();
        let (func, diags, callees) = outcome;
        let callee_failed = callees
            .iter()
            .any(|k| self.instances.get(k).is_some_and(|i| i.handle.is_none()));
        let handle = if diags.is_empty() && !callee_failed {
            let span = func.span;
            Some(self.functions.append(func, span))
        } else {
            None
        };
        self.instances.insert(
            key,
            Instance {
                handle,
                diags,
                callees,
            },
        );
        handle.ok_or(None)
    }
}

/// What earlier passes learned about a local (or, under `$return`, the return value).
#[derive(Clone, Debug)]
struct Hint {
    ty: Type,
    weak: Option<Weak>,
    first: Span,
    nonneg: bool,
}

/// A value of device code during checking.
#[derive(Clone, Debug)]
struct Val {
    e: Handle<Expr>,
    ty: Type,
    /// A Python number whose type adapts to the other operand.
    weak: Option<Weak>,
    /// The value, when known at compile time.
    konst: Option<Const>,
    /// Known to be an integer >= 0.
    nonneg: bool,
    span: Span,
}

/// What an expression denotes: a value, or an entity that only some uses accept.
#[derive(Clone, Debug)]
enum Value {
    Val(Val),
    Item(Item, Span),
    /// Already reported.
    Err,
}

struct FnCx<'s, 'm> {
    s: &'s mut Specializer<'m>,
    decl: &'m FunctionDecl,
    def: &'m ast::StmtFunctionDef,
    kind: FunctionKind,
    exprs: Arena<Expr>,
    types: Vec<Type>,
    locals: Arena<Local>,
    scope: HashMap<String, Handle<Local>>,
    params: usize,
    hints: &'s mut HashMap<String, Hint>,
    diags: Vec<Diagnostic>,
    callees: Vec<(usize, Vec<Type>)>,
    changed: bool,
    loops: usize,
    temps: usize,
    body: Option<Block>,
    /// Names the function assigns somewhere (its locals).
    assigned: HashSet<String>,
    /// Locals read before any assignment was seen in this pass.
    unresolved: Vec<(String, Span)>,
    /// Names assigned so far in this pass, in source order (parameters included).
    seen_assigned: HashSet<String>,
    /// For each enclosing loop, the names its body assigns (a read there may see the value
    /// of a previous iteration).
    loop_assigned: Vec<HashSet<String>>,
}

impl<'s, 'm> FnCx<'s, 'm> {
    fn new(
        s: &'s mut Specializer<'m>,
        idx: usize,
        args: &[Type],
        hints: &'s mut HashMap<String, Hint>,
    ) -> Self {
        let m = s.m;
        let decl = &m.functions[idx];
        let def = m.def(decl);
        let kind = decl.kind.unwrap_or(FunctionKind::Device);
        let mut cx = FnCx {
            s,
            decl,
            def,
            kind,
            exprs: Arena::default(),
            types: Vec::new(),
            locals: Arena::default(),
            scope: HashMap::new(),
            params: args.len(),
            hints,
            diags: Vec::new(),
            callees: Vec::new(),
            changed: false,
            loops: 0,
            temps: 0,
            body: None,
            assigned: HashSet::new(),
            unresolved: Vec::new(),
            seen_assigned: HashSet::new(),
            loop_assigned: Vec::new(),
        };
        assigned_names(&def.body, &mut cx.assigned);
        let params: Vec<&ast::ParameterWithDefault> = def
            .parameters
            .posonlyargs
            .iter()
            .chain(def.parameters.args.iter())
            .collect();
        for (p, ty) in params.iter().zip(args) {
            let name = p.parameter.name.id.to_string();
            let span = sp(&p.parameter);
            let h = cx.locals.append(
                Local {
                    name: name.clone(),
                    ty: ty.clone(),
                },
                span,
            );
            cx.scope.insert(name.clone(), h);
            cx.seen_assigned.insert(name.clone());
            let nonneg = matches!(ty, Type::Scalar(s) if s.kind() == Kind::UInt);
            cx.hints.entry(name).or_insert(Hint {
                ty: ty.clone(),
                weak: None,
                first: span,
                nonneg,
            });
            if let Some(ann) = &p.parameter.annotation {
                cx.check_annotation(ann, ty);
            }
            if let Some(d) = &p.default {
                cx.error(
                    "E0301",
                    sp(d.as_ref()),
                    "default parameter values are not supported in device functions",
                );
            }
        }
        let pr = &def.parameters;
        if let Some(v) = &pr.vararg {
            cx.error("E0301", sp(v.as_ref()), "`*args` is not supported in device functions");
        }
        if let Some(v) = &pr.kwarg {
            cx.error("E0301", sp(v.as_ref()), "`**kwargs` is not supported in device functions");
        }
        if !pr.kwonlyargs.is_empty() {
            cx.error(
                "E0301",
                sp(&pr.kwonlyargs[0]),
                "keyword-only parameters are not supported in device functions",
            );
        }
        cx
    }

    fn run(&mut self) {
        let def = self.def;
        let body = self.block(&def.body);
        for (name, span) in std::mem::take(&mut self.unresolved) {
            if self.hints.contains_key(&name) {
                self.changed = true; // learned later in this pass: check again
            } else {
                self.diags.push(
                    Diagnostic::error("E0111", span, format!("`{name}` is used before it is assigned"))
                        .with_note("assign it before this point on every path"),
                );
            }
        }
        if let Some(h) = self.hints.get("$return") {
            if h.ty != Type::None && !always_returns(&body) && self.diags.is_empty() {
                let first = h.first;
                self.diags.push(
                    Diagnostic::error("E0206", self.decl.name_span, format!("`{}` does not return a value on every path", self.decl.name))
                        .with_secondary(first, "it returns a value here")
                        .with_note("add a `return` at the end; falling off the end would return `None`"),
                );
            }
        }
        self.body = Some(body);
    }

    fn finish(self) -> (Function, Vec<Diagnostic>, Vec<(usize, Vec<Type>)>) {
        let ret = match (self.kind, self.hints.get("$return")) {
            (FunctionKind::Kernel, _) | (_, None) => Type::None,
            (_, Some(h)) => self.materialize(h),
        };
        let symbol = if self.kind == FunctionKind::Kernel || self.decl.options.interop {
            self.decl.name.clone()
        } else {
            format!("_pyd_{}_{}", self.decl.name, self.s.functions.len())
        };
        let func = Function {
            name: self.decl.name.clone(),
            symbol,
            kind: self.kind,
            interop: self.decl.options.interop,
            locals: self.locals,
            params: self.params,
            ret,
            exprs: self.exprs,
            types: self.types,
            body: self.body.unwrap_or_default(),
            span: self.decl.name_span,
        };
        (func, self.diags, self.callees)
    }
}

// ---- helpers ------------------------------------------------------------------------------

impl FnCx<'_, '_> {
    fn error(&mut self, code: &str, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(code, span, msg));
    }

    fn push(&mut self, e: Expr, ty: Type, span: Span) -> Handle<Expr> {
        self.types.push(ty);
        self.exprs.append(e, span)
    }

    fn materialize(&self, h: &Hint) -> Type {
        match h.weak {
            Some(w) => Type::Scalar(self.s.defaults.of(w)),
            None => h.ty.clone(),
        }
    }

    fn val(&self, e: Handle<Expr>, ty: Type, span: Span) -> Val {
        let nonneg = matches!(ty, Type::Scalar(s) if s.kind() == Kind::UInt);
        Val {
            e,
            ty,
            weak: None,
            konst: None,
            nonneg,
            span,
        }
    }

    fn new_temp(&mut self, ty: Type, span: Span) -> Handle<Local> {
        self.temps += 1;
        self.locals.append(
            Local {
                name: format!("${}", self.temps),
                ty,
            },
            span,
        )
    }

    /// A literal of scalar type `s` for a constant, or an error when it does not fit.
    fn literal(&mut self, c: &Const, s: Scalar, span: Span) -> Option<Handle<Expr>> {
        let lit = match (c, s.kind()) {
            (Const::Bool(b), Kind::Bool) => Literal::Bool(*b),
            (c, Kind::Bool) => Literal::Bool(c.as_f64().is_some_and(|v| v != 0.0)),
            (Const::Bool(b), Kind::Float) => Literal::Float(f64::from(u8::from(*b))),
            (Const::Int(i), Kind::Float) => Literal::Float(*i as f64),
            (Const::Float(f), Kind::Float) => {
                let v = if s == Scalar::Float32 { f64::from(*f as f32) } else { *f };
                if f.is_finite() && !v.is_finite() {
                    self.error("E0204", span, format!("{f} is out of range for {s}"));
                    return None;
                }
                Literal::Float(*f)
            }
            (Const::Bool(b), _) => Literal::Int(i128::from(*b)),
            (Const::Int(i), _) => {
                if !ir::literal_fits(Literal::Int(*i), s) {
                    self.diags.push(
                        Diagnostic::error(
                            "E0204",
                            span,
                            format!("Python integer {i} is out of bounds for {s}"),
                        )
                        .with_label(format!("does not fit in {s}"))
                        .with_note("NumPy 2 raises OverflowError here; write an explicit conversion if wrap-around is meant"),
                    );
                    return None;
                }
                Literal::Int(*i)
            }
            (Const::Float(_), _) => {
                self.error("E0207", span, format!("a float cannot be used as {s} implicitly"));
                return None;
            }
            (Const::Tuple(_), _) => {
                self.error("E0207", span, format!("a tuple cannot be used as {s}"));
                return None;
            }
        };
        Some(self.push(Expr::Literal(lit), Type::Scalar(s), span))
    }

    /// The value of a compile-time constant, as a weak Python number (or a tuple of them).
    fn const_val(&mut self, c: &Const, span: Span) -> Option<Val> {
        let (ty, weak) = match c {
            Const::Bool(_) => (Scalar::Bool, None),
            Const::Int(_) => (self.s.defaults.int, Some(Weak::Int)),
            Const::Float(_) => (self.s.defaults.float, Some(Weak::Float)),
            Const::Tuple(items) => {
                let mut es = Vec::new();
                let mut tys = Vec::new();
                for it in items {
                    let v = self.const_val(it, span)?;
                    let v = self.concrete(v)?;
                    es.push(v.e);
                    tys.push(v.ty);
                }
                let e = self.push(Expr::Tuple(es), Type::Tuple(tys.clone()), span);
                let mut v = self.val(e, Type::Tuple(tys), span);
                v.konst = Some(c.clone());
                return Some(v);
            }
        };
        let e = match c {
            Const::Int(i) if !ir::literal_fits(Literal::Int(*i), ty) => {
                // Too big for `int`: keep it exact in int64 until it meets a typed operand.
                let lit = Literal::Int(*i);
                if !ir::literal_fits(lit, Scalar::Int64) {
                    self.error("E0204", span, format!("Python integer {i} is out of bounds for int64"));
                    return None;
                }
                self.push(Expr::Literal(lit), Type::Scalar(Scalar::Int64), span)
            }
            _ => self.literal(c, ty, span)?,
        };
        let ty = self.types[e.index()].clone();
        Some(Val {
            e,
            ty,
            weak,
            konst: Some(c.clone()),
            nonneg: c.as_f64().is_some_and(|v| v >= 0.0) && c.as_int().is_some(),
            span,
        })
    }

    /// A weak value turned into its dialect default type (`int32`, `float32`).
    fn concrete(&mut self, v: Val) -> Option<Val> {
        match v.weak {
            None => Some(v),
            Some(w) => {
                let s = self.s.defaults.of(w);
                let e = self.convert(&v, s)?;
                Some(Val {
                    e,
                    ty: Type::Scalar(s),
                    weak: None,
                    ..v
                })
            }
        }
    }

    /// Converts a scalar value to `s`: constants become literals (checked to fit), others
    /// a cast.
    fn convert(&mut self, v: &Val, s: Scalar) -> Option<Handle<Expr>> {
        if v.ty == Type::Scalar(s) {
            return Some(v.e);
        }
        if v.weak.is_some() {
            if let Some(c) = &v.konst {
                return self.literal(c, s, v.span);
            }
        }
        match v.ty {
            Type::Scalar(_) => Some(self.push(Expr::Cast(v.e), Type::Scalar(s), v.span)),
            _ => {
                self.error(
                    "E0207",
                    v.span,
                    format!("expected a number of type {s}, found {}", v.ty),
                );
                None
            }
        }
    }

    /// Turns an entity into a value where one can stand for it.
    fn to_val(&mut self, v: Value) -> Option<Val> {
        match v {
            Value::Val(v) => Some(v),
            Value::Err => None,
            Value::Item(item, span) => match item {
                Item::Const(c) => self.const_val(&c, span),
                Item::Builtin(b @ (Builtin::LaneId | Builtin::WarpSize)) => {
                    let op = if b == Builtin::LaneId {
                        Intrinsic::LaneId
                    } else {
                        Intrinsic::WarpSize
                    };
                    let e = self.push(Expr::Intrinsic(op, vec![]), Type::Scalar(Scalar::Int32), span);
                    let mut v = self.val(e, Type::Scalar(Scalar::Int32), span);
                    v.nonneg = true;
                    Some(v)
                }
                Item::Builtin(
                    b @ (Builtin::ThreadIdx | Builtin::BlockIdx | Builtin::BlockDim | Builtin::GridDim),
                ) => {
                    let es: Vec<_> = [Axis::X, Axis::Y, Axis::Z]
                        .into_iter()
                        .map(|a| {
                            self.push(
                                Expr::Intrinsic(dim3_intrinsic(b, a), vec![]),
                                Type::Scalar(Scalar::UInt32),
                                span,
                            )
                        })
                        .collect();
                    let ty = Type::Vector {
                        elem: Scalar::UInt32,
                        len: 3,
                    };
                    let e = self.push(Expr::Tuple(es), ty.clone(), span);
                    Some(self.val(e, ty, span))
                }
                other => {
                    self.not_a_value(&other, span);
                    None
                }
            },
        }
    }

    fn not_a_value(&mut self, item: &Item, span: Span) {
        let d = match item {
            Item::Foreign(m) => Diagnostic::error(
                "E0106",
                span,
                format!("names from module `{m}` cannot be used in device code"),
            )
            .with_note("device code can use `cuda.device`, Python's builtins and module-level constants"),
            Item::Planned(n) => planned(n, span),
            Item::Host => Diagnostic::error(
                "E0106",
                span,
                "this global is not a compile-time constant, so device code cannot use it",
            )
            .with_note("module-level globals used in device code must be literals or arithmetic on them"),
            Item::Function(_) => Diagnostic::error("E0202", span, "a function is not a value in device code")
                .with_note("call it instead"),
            _ => Diagnostic::error("E0202", span, "this is not a value"),
        };
        self.diags.push(d);
    }

    fn check_annotation(&mut self, ann: &ast::Expr, ty: &Type) {
        let Some(want) = self.s.m.annotation_type(ann, self.s.defaults) else {
            return; // other annotations are documentation only
        };
        if &want != ty {
            self.diags.push(
                Diagnostic::error(
                    "E0207",
                    sp(ann),
                    format!("this parameter is annotated {want}, but the argument is {ty}"),
                )
                .with_label(format!("expects {want}")),
            );
        }
    }
}

fn planned(name: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        "E0102",
        span,
        format!("`cuda.device.{name}` is not supported by this version of pydevice yet"),
    )
    .with_note("see the feature table in README.md")
}

fn dim3_intrinsic(b: Builtin, a: Axis) -> Intrinsic {
    match b {
        Builtin::ThreadIdx => Intrinsic::ThreadIdx(a),
        Builtin::BlockIdx => Intrinsic::BlockIdx(a),
        Builtin::BlockDim => Intrinsic::BlockDim(a),
        _ => Intrinsic::GridDim(a),
    }
}

// ---- statements ---------------------------------------------------------------------------

/// Names a function assigns (its locals, by Python's scoping rule).
fn assigned_names(stmts: &[ast::Stmt], out: &mut HashSet<String>) {
    fn target(e: &ast::Expr, out: &mut HashSet<String>) {
        match e {
            ast::Expr::Name(n) => {
                out.insert(n.id.to_string());
            }
            ast::Expr::Tuple(t) => t.elts.iter().for_each(|x| target(x, out)),
            ast::Expr::List(t) => t.elts.iter().for_each(|x| target(x, out)),
            _ => {}
        }
    }
    for s in stmts {
        match s {
            ast::Stmt::Assign(a) => a.targets.iter().for_each(|t| target(t, out)),
            ast::Stmt::AugAssign(a) => target(&a.target, out),
            ast::Stmt::AnnAssign(a) => target(&a.target, out),
            ast::Stmt::For(f) => {
                target(&f.target, out);
                assigned_names(&f.body, out);
                assigned_names(&f.orelse, out);
            }
            ast::Stmt::While(w) => {
                assigned_names(&w.body, out);
                assigned_names(&w.orelse, out);
            }
            ast::Stmt::If(i) => {
                assigned_names(&i.body, out);
                for c in &i.elif_else_clauses {
                    assigned_names(&c.body, out);
                }
            }
            _ => {}
        }
    }
}

/// True when every path through the block ends in `return`.
fn always_returns(block: &Block) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If {
            then, otherwise, ..
        } => always_returns(then) && always_returns(otherwise),
        _ => false,
    })
}

fn contains_call(e: &ast::Expr) -> bool {
    use ruff_python_ast::visitor::{walk_expr, Visitor};
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
    fn block(&mut self, stmts: &[ast::Stmt]) -> Block {
        let mut out = Vec::new();
        for s in stmts {
            self.stmt(s, &mut out);
        }
        out
    }

    fn stmt(&mut self, s: &ast::Stmt, out: &mut Block) {
        let span = sp(s);
        match s {
            ast::Stmt::Expr(e) => {
                if matches!(e.value.as_ref(), ast::Expr::StringLiteral(_)) {
                    return; // a docstring
                }
                let v = self.expr(&e.value);
                if let Some(v) = self.to_val(v) {
                    out.push(Stmt {
                        kind: StmtKind::Eval(v.e),
                        span,
                    });
                }
            }
            ast::Stmt::Assign(a) => {
                let v = self.expr(&a.value);
                let Some(mut v) = self.to_val(v) else { return };
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
                                        "E0201",
                                        sp(a.annotation.as_ref()),
                                        format!("`{name}` is declared {want} but is assigned {had}"),
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
                                    },
                                );
                                self.changed |= self.scope.contains_key(n.id.as_str());
                            }
                        }
                    }
                }
                if let Some(value) = &a.value {
                    let v = self.expr(value);
                    if let Some(v) = self.to_val(v) {
                        self.assign(&a.target, v, out);
                    }
                }
            }
            ast::Stmt::AugAssign(a) => self.aug_assign(a, out),
            ast::Stmt::If(i) => {
                let cond = self.cond(&i.test);
                let then = self.block(&i.body);
                // elif/else clauses nest as else-branches, innermost last.
                let mut otherwise: Block = Vec::new();
                let mut chain: Vec<(Option<Handle<Expr>>, Block, Span)> = Vec::new();
                for c in &i.elif_else_clauses {
                    let cc = c.test.as_ref().map(|t| self.cond(t));
                    let body = self.block(&c.body);
                    match cc {
                        Some(Some(h)) => chain.push((Some(h), body, sp(c))),
                        Some(None) => chain.push((None, Vec::new(), sp(c))),
                        None => otherwise = body,
                    }
                }
                for (c, body, cspan) in chain.into_iter().rev() {
                    if let Some(c) = c {
                        otherwise = vec![Stmt {
                            kind: StmtKind::If {
                                cond: c,
                                then: body,
                                otherwise,
                            },
                            span: cspan,
                        }];
                    }
                }
                if let Some(cond) = cond {
                    out.push(Stmt {
                        kind: StmtKind::If {
                            cond,
                            then,
                            otherwise,
                        },
                        span,
                    });
                }
            }
            ast::Stmt::While(w) => {
                if !w.orelse.is_empty() {
                    self.error("E0303", sp(&w.orelse[0]), "`while ... else` is not supported in device code");
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
                    self.error("E0304", span, format!("`{w}` outside a loop"));
                } else {
                    out.push(Stmt {
                        kind: if brk { StmtKind::Break } else { StmtKind::Continue },
                        span,
                    });
                }
            }
            ast::Stmt::Return(r) => self.ret(r, out),
            ast::Stmt::Pass(_) => {}
            ast::Stmt::Assert(_) => self.diags.push(
                Diagnostic::error("E0302", span, "`assert` is not supported in device code yet")
                    .with_note("check the condition with `if` and write a sentinel to an output array"),
            ),
            other => {
                let what = stmt_name(other);
                self.error("E0301", span, format!("{what} is not supported in device code"));
            }
        }
    }

    fn ret(&mut self, r: &ast::StmtReturn, out: &mut Block) {
        let span = sp(r);
        let value = match r.value.as_deref() {
            None | Some(ast::Expr::NoneLiteral(_)) => None,
            Some(e) => {
                let v = self.expr(e);
                match self.to_val(v) {
                    Some(v) => Some(v),
                    None => return,
                }
            }
        };
        if self.kind == FunctionKind::Kernel {
            if let Some(v) = value {
                self.diags.push(
                    Diagnostic::error("E0108", v.span, "a kernel cannot return a value")
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
        let Some(e) = self.merge("$return", v, span) else { return };
        let e = (self.hints["$return"].ty != Type::None).then_some(e);
        out.push(Stmt {
            kind: StmtKind::Return(e),
            span,
        });
    }

    /// Records that `name` (a local, or `$return`) receives `v`, checks it against what is
    /// known, and returns `v` converted to the name's type.
    fn merge(&mut self, name: &str, v: Val, span: Span) -> Option<Handle<Expr>> {
        let what = |n: &str| {
            if n == "$return" {
                "this function returns".to_string()
            } else {
                format!("`{n}` is assigned")
            }
        };
        let Some(h) = self.hints.get(name).cloned() else {
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
                },
            );
            return Some(v.e);
        };
        let mut nh = h.clone();
        let compatible = match (h.weak, v.weak) {
            (Some(hw), None) => match &v.ty {
                Type::Scalar(s) => {
                    let ok = match hw {
                        Weak::Int => s.kind() != Kind::Bool,
                        Weak::Float => s.is_float(),
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
                if hw == Weak::Int && vw == Weak::Float {
                    nh.weak = Some(Weak::Float);
                    nh.ty = Type::Scalar(self.s.defaults.float);
                }
                true
            }
            (None, Some(vw)) => match &h.ty {
                Type::Scalar(s) => match vw {
                    Weak::Int => s.kind() != Kind::Bool,
                    Weak::Float => s.is_float(),
                },
                _ => false,
            },
            (None, None) => h.ty == v.ty,
        };
        if !compatible {
            let had = if h.weak == Some(Weak::Float) { "a Python float".to_string() } else if h.weak == Some(Weak::Int) { "a Python int".to_string() } else { h.ty.to_string() };
            let now = match v.weak {
                Some(Weak::Float) => "a Python float".to_string(),
                Some(Weak::Int) => "a Python int".to_string(),
                None => v.ty.to_string(),
            };
            let first = if name == "$return" {
                "first return here"
            } else if self.scope.get(name).is_some_and(|l| l.index() < self.params) {
                "the parameter is declared here"
            } else {
                "first assigned here"
            };
            self.diags.push(
                Diagnostic::error(
                    "E0201",
                    span,
                    format!("{} values of different types: {had} and {now}", what(name)),
                )
                .with_label(format!("this is {now}"))
                .with_secondary(h.first, format!("{first} ({had})"))
                .with_note("each local variable has one type; convert explicitly, e.g. `float32(x)`"),
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
            _ => Some(v.e),
        }
    }

    fn assign(&mut self, target: &ast::Expr, v: Val, out: &mut Block) {
        let span = sp(target);
        match target {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                self.seen_assigned.insert(name.to_string());
                let Some(e) = self.merge(name, v, span) else { return };
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
            ast::Expr::Subscript(s) => {
                let base = self.expr(&s.value);
                let Some(base) = self.to_val(base) else { return };
                match &base.ty {
                    Type::Array(at) => {
                        let dtype = at.dtype;
                        let Some(indices) = self.indices(&base, &s.slice) else { return };
                        let Some(value) = self.store_value(&v, dtype) else { return };
                        out.push(Stmt {
                            kind: StmtKind::Store {
                                array: base.e,
                                indices,
                                value,
                            },
                            span,
                        });
                    }
                    Type::Tuple(_) | Type::Vector { .. } => self.diags.push(
                        Diagnostic::error("E0211", span, format!("{} is immutable", base.ty))
                            .with_note("build a new tuple or vector instead"),
                    ),
                    other => self.error("E0203", sp(s.value.as_ref()), format!("{other} cannot be indexed")),
                }
            }
            ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }) => {
                let n = match &v.ty {
                    Type::Tuple(ts) => ts.len(),
                    Type::Vector { len, .. } => *len as usize,
                    other => {
                        self.error("E0203", v.span, format!("cannot unpack {other}"));
                        return;
                    }
                };
                if n != elts.len() {
                    self.diags.push(
                        Diagnostic::error(
                            "E0203",
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
            ast::Expr::Attribute(_) => self.diags.push(
                Diagnostic::error("E0211", span, "attributes cannot be assigned in device code")
                    .with_note("heterogeneous objects are immutable, and attributes cannot be added"),
            ),
            _ => self.error("E0301", span, "this assignment target is not supported in device code"),
        }
    }

    /// A value converted for storing into an array of `dtype` (any number converts, as
    /// NumPy's item assignment does).
    fn store_value(&mut self, v: &Val, dtype: Scalar) -> Option<Handle<Expr>> {
        match (&v.ty, v.weak, &v.konst) {
            (Type::Scalar(_), Some(_), Some(Const::Float(f))) if dtype.is_integer() => {
                let c = Const::Int(f.trunc() as i128);
                self.literal(&c, dtype, v.span)
            }
            (Type::Scalar(_), _, _) => self.convert(v, dtype),
            (other, _, _) => {
                self.error("E0207", v.span, format!("cannot store {other} into an array of {dtype}"));
                None
            }
        }
    }

    /// The local for `name` in this pass, created on first use with its current type.
    fn local(&mut self, name: &str, span: Span) -> Handle<Local> {
        if let Some(h) = self.scope.get(name) {
            return *h;
        }
        let ty = self.hints.get(name).map(|h| self.materialize(h)).unwrap_or(Type::None);
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

    fn aug_assign(&mut self, a: &ast::StmtAugAssign, out: &mut Block) {
        let span = sp(a);
        let Some(op) = binary_op(a.op) else {
            self.error("E0202", span, "the `@` operator is not supported in device code");
            return;
        };
        let rhs = self.expr(&a.value);
        let Some(rhs) = self.to_val(rhs) else { return };
        match a.target.as_ref() {
            ast::Expr::Name(n) => {
                let cur = self.read_name(n.id.as_str(), sp(n));
                let Some(cur) = self.to_val(cur) else { return };
                let Some(v) = self.binary(op, cur, rhs, span) else { return };
                self.assign(&a.target, v, out);
            }
            ast::Expr::Subscript(s) => {
                let base = self.expr(&s.value);
                let Some(base) = self.to_val(base) else { return };
                let Type::Array(at) = &base.ty else {
                    self.error("E0211", span, format!("{} is immutable", base.ty));
                    return;
                };
                let dtype = at.dtype;
                let Some(indices) = self.indices(&base, &s.slice) else { return };
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
                    fixed.push(Index { value, wrap: ix.wrap });
                }
                let again: Vec<Index> = fixed
                    .iter()
                    .map(|ix| {
                        let ty = self.types[ix.value.index()].clone();
                        let e = self.push(self.exprs[ix.value].clone(), ty, span);
                        Index { value: e, wrap: ix.wrap }
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
                let Some(v) = self.binary(op, cur, rhs, span) else { return };
                let Some(value) = self.store_value(&v, dtype) else { return };
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
            _ => self.error("E0211", span, "this augmented assignment target is not supported"),
        }
    }

    fn for_range(&mut self, f: &ast::StmtFor, out: &mut Block) {
        let span = sp(f);
        if !f.orelse.is_empty() {
            self.error("E0303", sp(&f.orelse[0]), "`for ... else` is not supported in device code");
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
            self.diags.push(
                Diagnostic::error("E0304", sp(f.iter.as_ref()), "device code can only loop over `range(...)`")
                    .with_note("write `for i in range(len(a)):` and index the array"),
            );
            return;
        };
        if !matches!(f.target.as_ref(), ast::Expr::Name(_)) {
            self.error("E0301", sp(f.target.as_ref()), "the target of a `for` loop over `range` must be a single name");
            return;
        }
        let args = &call.arguments;
        if !args.keywords.is_empty() || args.args.is_empty() || args.args.len() > 3 {
            self.error("E0107", sp(call), "`range` takes 1 to 3 positional arguments");
            return;
        }
        let mut vals = Vec::new();
        for a in args.args.iter() {
            let v = self.expr(a);
            let Some(v) = self.to_val(v) else { return };
            match v.ty {
                Type::Scalar(s) if s.is_integer() => vals.push(v),
                ref other => {
                    self.error("E0207", v.span, format!("`range` arguments must be integers, found {other}"));
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
            Some((first, rest)) => (rest.iter().fold(*first, |a, b| promote(a, *b)), None),
        };
        let step_sign = step.konst.as_ref().and_then(|c| c.as_int()).map(|i| i.signum());
        if step_sign == Some(0) {
            self.error("E0208", step.span, "`range` step must not be zero");
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
        let Some(start_e) = snapshot(self, &start, out) else { return };
        let Some(stop_e) = snapshot(self, &stop, out) else { return };
        let Some(step_e) = snapshot(self, &step, out) else { return };
        let ctr = self.new_temp(tty.clone(), span);
        out.push(Stmt {
            kind: StmtKind::Assign(ctr, start_e),
            span,
        });
        let bool_t = Type::Scalar(Scalar::Bool);
        let copy = |cx: &mut Self, e: Handle<Expr>| cx.push(cx.exprs[e].clone(), cx.types[e.index()].clone(), cx.exprs.span(e));
        let cmp = |cx: &mut Self, op: BinaryOp| {
            let c = cx.push(Expr::Local(ctr), tty.clone(), span);
            let s = copy(cx, stop_e);
            cx.push(Expr::Binary(op, c, s), bool_t.clone(), span)
        };
        let cond = match step_sign {
            Some(1) => cmp(self, BinaryOp::Lt),
            Some(_) => cmp(self, BinaryOp::Gt),
            None => {
                let up = cmp(self, BinaryOp::Lt);
                let down = cmp(self, BinaryOp::Gt);
                let zero = self.push(Expr::Literal(Literal::Int(0)), tty.clone(), span);
                let s1 = copy(self, step_e);
                let pos = self.push(Expr::Binary(BinaryOp::Gt, s1, zero), bool_t.clone(), span);
                let up = self.push(Expr::And(pos, up), bool_t.clone(), span);
                let zero = self.push(Expr::Literal(Literal::Int(0)), tty.clone(), span);
                let s2 = copy(self, step_e);
                let neg = self.push(Expr::Binary(BinaryOp::Lt, s2, zero), bool_t.clone(), span);
                let down = self.push(Expr::And(neg, down), bool_t.clone(), span);
                self.push(Expr::Or(up, down), bool_t.clone(), span)
            }
        };
        self.loops += 1;
        let mut names = HashSet::new();
        assigned_names(&f.body, &mut names);
        self.loop_assigned.push(names);
        let mut body = Vec::new();
        let cur = self.push(Expr::Local(ctr), tty.clone(), span);
        let mut iv = self.val(cur, tty.clone(), sp(f.target.as_ref()));
        iv.weak = weak;
        iv.nonneg = start.nonneg && step_sign == Some(1);
        self.assign(&f.target, iv, &mut body);
        body.extend(self.block(&f.body));
        self.loops -= 1;
        self.loop_assigned.pop();
        let c = self.push(Expr::Local(ctr), tty.clone(), span);
        let st = copy(self, step_e);
        let inc = self.push(Expr::Binary(BinaryOp::Add, c, st), tty.clone(), span);
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
    fn cond(&mut self, e: &ast::Expr) -> Option<Handle<Expr>> {
        let v = self.expr(e);
        let v = self.to_val(v)?;
        self.truthy(v)
    }

    fn truthy(&mut self, v: Val) -> Option<Handle<Expr>> {
        let span = v.span;
        match &v.ty {
            Type::Scalar(Scalar::Bool) => Some(v.e),
            Type::Scalar(s) => {
                let s = *s;
                if let Some(c) = &v.konst {
                    let b = c.as_f64().is_some_and(|x| x != 0.0);
                    return Some(self.push(Expr::Literal(Literal::Bool(b)), Type::Scalar(Scalar::Bool), span));
                }
                let zero = if s.is_float() { Literal::Float(0.0) } else { Literal::Int(0) };
                let z = self.push(Expr::Literal(zero), Type::Scalar(s), span);
                Some(self.push(Expr::Binary(BinaryOp::Ne, v.e, z), Type::Scalar(Scalar::Bool), span))
            }
            other => {
                self.diags.push(
                    Diagnostic::error("E0205", span, format!("the truth value of {other} is not defined in device code"))
                        .with_note("compare explicitly, e.g. `len(a) > 0`"),
                );
                None
            }
        }
    }
}

fn element_type(t: &Type, i: usize) -> Type {
    match t {
        Type::Tuple(ts) => ts[i].clone(),
        Type::Vector { elem, .. } => Type::Scalar(*elem),
        _ => Type::None,
    }
}

// ---- expressions --------------------------------------------------------------------------

impl FnCx<'_, '_> {
    fn expr(&mut self, e: &ast::Expr) -> Value {
        let span = sp(e);
        use ast::Expr as E;
        let v = match e {
            E::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i.as_i64().map(i128::from).or_else(|| i.as_u64().map(i128::from)) {
                    Some(v) => self.const_val(&Const::Int(v), span),
                    None => {
                        self.error("E0204", span, "this integer literal does not fit in 64 bits");
                        None
                    }
                },
                ast::Number::Float(f) => self.const_val(&Const::Float(*f), span),
                ast::Number::Complex { .. } => {
                    self.error("E0202", span, "complex numbers are not supported in device code yet");
                    None
                }
            },
            E::BooleanLiteral(b) => self.const_val(&Const::Bool(b.value), span),
            E::Name(n) => return self.read_name(n.id.as_str(), span),
            E::Attribute(a) => return self.attribute(a),
            E::Subscript(s) => self.subscript(s),
            E::BinOp(b) => {
                let Some(op) = binary_op(b.op) else {
                    self.error("E0202", span, "the `@` operator is not supported in device code");
                    return Value::Err;
                };
                let l = self.expr(&b.left);
                let r = self.expr(&b.right);
                match (self.to_val(l), self.to_val(r)) {
                    (Some(l), Some(r)) => self.binary(op, l, r, span),
                    _ => None,
                }
            }
            E::UnaryOp(u) => {
                let v = self.expr(&u.operand);
                self.to_val(v).and_then(|v| self.unary(u.op, v, span))
            }
            E::BoolOp(b) => self.bool_op(b),
            E::Compare(c) => self.compare(c),
            E::If(i) => self.if_expr(i),
            E::Call(c) => return self.call(c),
            E::Tuple(t) => {
                let mut es = Vec::new();
                let mut tys = Vec::new();
                for x in &t.elts {
                    let v = self.expr(x);
                    let Some(v) = self.to_val(v).and_then(|v| self.concrete(v)) else {
                        return Value::Err;
                    };
                    es.push(v.e);
                    tys.push(v.ty);
                }
                let ty = Type::Tuple(tys);
                let e = self.push(Expr::Tuple(es), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            E::NoneLiteral(_) => {
                self.error("E0202", span, "`None` can only be returned in device code");
                None
            }
            other => {
                let what = match other {
                    E::StringLiteral(_) | E::FString(_) | E::TString(_) | E::BytesLiteral(_) => "strings are",
                    E::List(_) | E::ListComp(_) => "lists are",
                    E::Dict(_) | E::DictComp(_) => "dicts are",
                    E::Set(_) | E::SetComp(_) => "sets are",
                    E::Lambda(_) => "lambdas are",
                    E::Generator(_) => "generators are",
                    E::Named(_) => "assignment expressions (`:=`) are",
                    E::Slice(_) => "slices are",
                    _ => "this expression is",
                };
                self.error("E0202", span, format!("{what} not supported in device code"));
                None
            }
        };
        v.map(Value::Val).unwrap_or(Value::Err)
    }

    fn read_name(&mut self, name: &str, span: Span) -> Value {
        if self.scope.contains_key(name) || self.assigned.contains(name) {
            let reachable = self.seen_assigned.contains(name)
                || self.loop_assigned.iter().any(|names| names.contains(name));
            if !reachable {
                self.diags.push(
                    Diagnostic::error("E0111", span, format!("`{name}` is used before it is assigned"))
                        .with_note("assign it before this point on every path"),
                );
                return Value::Err;
            }
            let Some(hint) = self.hints.get(name).cloned() else {
                self.unresolved.push((name.to_string(), span));
                return Value::Err;
            };
            let h = self.local(name, span);
            let ty = self.locals[h].ty.clone();
            let e = self.push(Expr::Local(h), ty.clone(), span);
            return Value::Val(Val {
                e,
                ty,
                weak: hint.weak,
                konst: None,
                nonneg: hint.nonneg,
                span,
            });
        }
        match self.s.m.lookup(name) {
            Some(item) => Value::Item(item, span),
            None => {
                self.error("E0101", span, format!("name `{name}` is not defined"));
                Value::Err
            }
        }
    }

    /// What a call's callee names, without evaluating it (locals shadow module names).
    fn callee_item(&mut self, e: &ast::Expr) -> Option<Item> {
        if let ast::Expr::Name(n) = e {
            if self.scope.contains_key(n.id.as_str()) {
                return None;
            }
        }
        self.s.m.resolve_static(e)
    }

    fn attribute(&mut self, a: &ast::ExprAttribute) -> Value {
        let span = sp(a);
        let attr = a.attr.id.as_str();
        let base = self.expr(&a.value);
        let v = match base {
            Value::Err => return Value::Err,
            Value::Item(Item::Namespace(Namespace::Cuda), _) if attr == "device" => {
                return Value::Item(Item::Namespace(Namespace::Device), span);
            }
            Value::Item(Item::Namespace(Namespace::Device), _) => {
                return match super::builtins::device_member(attr) {
                    Some(b) => Value::Item(Item::Builtin(b), span),
                    None if super::builtins::is_planned_device_member(attr) => {
                        self.diags.push(planned(attr, span));
                        Value::Err
                    }
                    None => {
                        self.error("E0102", span, format!("`cuda.device` has no member `{attr}`"));
                        Value::Err
                    }
                };
            }
            Value::Item(
                Item::Builtin(b @ (Builtin::ThreadIdx | Builtin::BlockIdx | Builtin::BlockDim | Builtin::GridDim)),
                _,
            ) if matches!(attr, "x" | "y" | "z") => {
                let axis = match attr {
                    "x" => Axis::X,
                    "y" => Axis::Y,
                    _ => Axis::Z,
                };
                let ty = Type::Scalar(Scalar::UInt32);
                let e = self.push(Expr::Intrinsic(dim3_intrinsic(b, axis), vec![]), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            other => {
                let Some(v) = self.to_val(other) else { return Value::Err };
                self.value_attribute(v, attr, span)
            }
        };
        v.map(Value::Val).unwrap_or(Value::Err)
    }

    fn value_attribute(&mut self, v: Val, attr: &str, span: Span) -> Option<Val> {
        let i64t = Type::Scalar(Scalar::Int64);
        match (&v.ty, attr) {
            (Type::Array(at), "shape" | "strides") => {
                let n = at.ndim;
                let es: Vec<_> = (0..n)
                    .map(|d| {
                        let p = if attr == "shape" { ArrayProp::Shape(d) } else { ArrayProp::Stride(d) };
                        let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), v.span);
                        self.push(Expr::ArrayProp(base, p), i64t.clone(), span)
                    })
                    .collect();
                let ty = Type::Tuple(vec![i64t; n as usize]);
                let e = self.push(Expr::Tuple(es), ty.clone(), span);
                let mut r = self.val(e, ty, span);
                r.nonneg = attr == "shape";
                Some(r)
            }
            (Type::Array(_), "size") => {
                let e = self.push(Expr::ArrayProp(v.e, ArrayProp::Size), i64t.clone(), span);
                let mut r = self.val(e, i64t, span);
                r.nonneg = true;
                Some(r)
            }
            (Type::Array(at), "ndim") => self.const_val(&Const::Int(i128::from(at.ndim)), span),
            (Type::Vector { len, .. }, "size") => self.const_val(&Const::Int(i128::from(*len)), span),
            (Type::Vector { elem, len }, "x" | "y" | "z" | "w") => {
                let i = match attr {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    _ => 3,
                };
                if i >= *len {
                    self.error("E0212", span, format!("{} has no attribute `{attr}`", v.ty));
                    return None;
                }
                let ty = Type::Scalar(*elem);
                let e = self.push(Expr::Extract(v.e, i as u32), ty.clone(), span);
                let mut r = self.val(e, ty, span);
                r.nonneg |= v.nonneg;
                Some(r)
            }
            (ty, _) => {
                self.diags.push(
                    Diagnostic::error("E0212", span, format!("{ty} has no attribute `{attr}` in device code"))
                        .with_label("unknown attribute"),
                );
                None
            }
        }
    }

    fn subscript(&mut self, s: &ast::ExprSubscript) -> Option<Val> {
        let span = sp(s);
        let base = self.expr(&s.value);
        let base = self.to_val(base)?;
        match &base.ty {
            Type::Array(at) => {
                let dtype = at.dtype;
                let indices = self.indices(&base, &s.slice)?;
                let ty = Type::Scalar(dtype);
                let e = self.push(
                    Expr::Load {
                        array: base.e,
                        indices,
                    },
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
            Type::Tuple(_) | Type::Vector { .. } => {
                let n = match &base.ty {
                    Type::Tuple(ts) => ts.len(),
                    Type::Vector { len, .. } => *len as usize,
                    _ => 0,
                };
                let iv = self.expr(&s.slice);
                let iv = self.to_val(iv)?;
                let Some(i) = iv.konst.as_ref().and_then(|c| c.as_int()).filter(|_| iv.ty.as_scalar().is_some_and(|s| s.kind() != Kind::Float)) else {
                    self.diags.push(
                        Diagnostic::error("E0203", iv.span, format!("{} can only be indexed by a constant integer", base.ty))
                            .with_note("the elements may have different types, so the index must be known when compiling"),
                    );
                    return None;
                };
                let idx = if i < 0 { i + n as i128 } else { i };
                if idx < 0 || idx >= n as i128 {
                    self.diags.push(
                        Diagnostic::error("E0203", iv.span, format!("index {i} is out of range for {}", base.ty))
                            .with_label(format!("valid indices are {} to {}", -(n as i64), n as i64 - 1)),
                    );
                    return None;
                }
                let ty = element_type(&base.ty, idx as usize);
                let e = self.push(Expr::Extract(base.e, idx as u32), ty.clone(), span);
                let mut r = self.val(e, ty, span);
                r.nonneg |= base.nonneg;
                if let Some(Const::Tuple(items)) = &base.konst {
                    r.konst = items.get(idx as usize).cloned();
                    if let Some(c) = &r.konst {
                        return self.const_val(&c.clone(), span);
                    }
                }
                Some(r)
            }
            other => {
                self.error("E0203", base.span, format!("{other} cannot be indexed"));
                None
            }
        }
    }

    /// The indices of an array access: one integer per dimension.
    fn indices(&mut self, array: &Val, slice: &ast::Expr) -> Option<Vec<Index>> {
        let Type::Array(at) = &array.ty else { return None };
        let ndim = at.ndim as usize;
        let mut vals: Vec<Val> = Vec::new();
        let parts: Vec<&ast::Expr> = match slice {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            e => vec![e],
        };
        for p in parts {
            if let ast::Expr::Slice(_) = p {
                self.diags.push(
                    Diagnostic::error("E0203", sp(p), "slicing arrays is not supported by this version of pydevice yet")
                        .with_note("index every dimension with an integer"),
                );
                return None;
            }
            let v = self.expr(p);
            let v = self.to_val(v)?;
            match &v.ty {
                Type::Tuple(ts) if ts.iter().all(|t| t.as_scalar().is_some_and(|s| s.is_integer())) => {
                    for (i, t) in ts.iter().enumerate() {
                        let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), v.span);
                        let e = self.push(Expr::Extract(base, i as u32), t.clone(), v.span);
                        let mut ev = self.val(e, t.clone(), v.span);
                        ev.nonneg |= v.nonneg;
                        vals.push(ev);
                    }
                }
                _ => vals.push(v),
            }
        }
        if vals.len() != ndim {
            let d = Diagnostic::error(
                "E0203",
                sp(slice),
                format!("{} has {ndim} dimension{}, but {} ind{} given", array.ty, if ndim == 1 { "" } else { "s" }, vals.len(), if vals.len() == 1 { "ex was" } else { "ices were" }),
            );
            let d = if vals.len() < ndim {
                d.with_note("indexing fewer dimensions (a view) is not supported by this version yet")
            } else {
                d
            };
            self.diags.push(d);
            return None;
        }
        let mut out = Vec::new();
        for v in vals {
            match v.ty.as_scalar() {
                Some(s) if s.is_integer() => {}
                _ => {
                    self.diags.push(
                        Diagnostic::error("E0203", v.span, format!("array indices must be integers, found {}", v.ty))
                            .with_label("not an integer"),
                    );
                    return None;
                }
            }
            let e = if v.weak.is_some() { self.convert(&v, Scalar::Int64)? } else { v.e };
            out.push(Index { value: e, wrap: !v.nonneg });
        }
        Some(out)
    }
}

// ---- operators ----------------------------------------------------------------------------

impl FnCx<'_, '_> {
    /// The common type of operands under the promotion rules (weak if all are weak).
    fn common(&self, vals: &[&Val]) -> (Scalar, Option<Weak>) {
        let d = self.s.defaults;
        let mut acc: Option<(Scalar, Option<Weak>)> = None;
        for v in vals {
            let s = v.ty.as_scalar().unwrap_or(Scalar::Bool);
            acc = Some(match acc {
                None => (s, v.weak),
                Some((a, aw)) => match (aw, v.weak) {
                    (Some(x), Some(y)) => {
                        let w = promote_weak_weak(x, y);
                        (d.of(w), Some(w))
                    }
                    (Some(x), None) => (promote_weak(s, x, d), None),
                    (None, Some(y)) => (promote_weak(a, y, d), None),
                    (None, None) => (promote(a, s), None),
                },
            });
        }
        acc.unwrap_or((d.int, Some(Weak::Int)))
    }

    fn binary(&mut self, op: BinaryOp, l: Val, r: Val, span: Span) -> Option<Val> {
        let d = self.s.defaults;
        let (Some(ls), Some(rs)) = (l.ty.as_scalar(), r.ty.as_scalar()) else {
            self.diags.push(
                Diagnostic::error(
                    "E0202",
                    span,
                    format!("unsupported operand types for `{}`: {} and {}", op.symbol(), l.ty, r.ty),
                )
                .with_secondary(l.span, format!("{}", l.ty))
                .with_secondary(r.span, format!("{}", r.ty)),
            );
            return None;
        };
        let foldable = |v: &Val, s: Scalar| v.weak.is_some() || s == Scalar::Bool;
        if let (Some(a), Some(b)) = (&l.konst, &r.konst) {
            if foldable(&l, ls) && foldable(&r, rs) {
                let both_bool = ls == Scalar::Bool && rs == Scalar::Bool;
                match fold_binary(op, a, b) {
                    Some(Const::Int(i)) if both_bool && matches!(op, BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor | BinaryOp::Min | BinaryOp::Max) => {
                        return self.const_val(&Const::Bool(i != 0), span);
                    }
                    Some(c) => return self.const_val(&c, span),
                    None => {
                        let zero = b.as_f64() == Some(0.0);
                        if matches!(op, BinaryOp::Div | BinaryOp::FloorDiv | BinaryOp::Mod) && zero {
                            self.error("E0208", span, "division by zero in a constant expression");
                            return None;
                        }
                        if a.as_int().is_some() && b.as_int().is_some() {
                            self.error("E0204", span, "this constant expression overflows");
                            return None;
                        }
                        // Not foldable (e.g. `&` on floats): the general rules report it.
                    }
                }
            }
        }
        let (mut common, mut weak) = self.common(&[&l, &r]);
        use BinaryOp::*;
        let result;
        match op {
            Add | Sub | Mul | FloorDiv | Mod | Pow | Min | Max => {
                if common == Scalar::Bool && !matches!(op, Min | Max) {
                    common = d.int;
                }
                result = common;
            }
            Div => {
                if !common.is_float() {
                    common = if common.bits() == 64 { Scalar::Float64 } else { d.float };
                    weak = weak.map(|_| Weak::Float);
                }
                result = common;
            }
            BitAnd | BitOr | BitXor | Shl | Shr => {
                if common.is_float() {
                    self.diags.push(
                        Diagnostic::error(
                            "E0202",
                            span,
                            format!("`{}` needs integer operands, found {} and {}", op.symbol(), l.ty, r.ty),
                        )
                        .with_note("convert with `int32(x)` (or another integer type) first"),
                    );
                    return None;
                }
                if common == Scalar::Bool && matches!(op, Shl | Shr) {
                    common = d.int;
                }
                result = common;
            }
            Eq | Ne | Lt | Le | Gt | Ge => {
                result = Scalar::Bool;
                weak = None;
            }
        }
        if op == Pow && common.is_integer() {
            if let Some(c) = r.konst.as_ref().and_then(|c| c.as_int()) {
                if c < 0 {
                    self.diags.push(
                        Diagnostic::error("E0209", r.span, "integers to negative integer powers are not allowed")
                            .with_note("use a float base, e.g. `2.0 ** -1`"),
                    );
                    return None;
                }
            }
        }
        let a = self.convert(&l, common)?;
        let b = self.convert(&r, common)?;
        let e = self.push(Expr::Binary(op, a, b), Type::Scalar(result), span);
        let nonneg = result.kind() == Kind::UInt
            || (result.is_signed()
                && match op {
                    Add | Mul | FloorDiv | Min | Pow | BitOr | BitXor => l.nonneg && r.nonneg,
                    Max | BitAnd => l.nonneg || r.nonneg,
                    Mod => r.nonneg,
                    Shr => l.nonneg,
                    _ => false,
                });
        Some(Val {
            e,
            ty: Type::Scalar(result),
            weak,
            konst: None,
            nonneg,
            span,
        })
    }

    fn unary(&mut self, op: ast::UnaryOp, v: Val, span: Span) -> Option<Val> {
        let d = self.s.defaults;
        let Some(s) = v.ty.as_scalar() else {
            self.error("E0202", span, format!("unsupported operand type for `{}`: {}", op.as_str(), v.ty));
            return None;
        };
        if let Some(c) = &v.konst {
            let folded = match (op, c) {
                (ast::UnaryOp::USub, Const::Int(i)) => Some(Const::Int(-i)),
                (ast::UnaryOp::USub, Const::Float(f)) => Some(Const::Float(-f)),
                (ast::UnaryOp::USub, Const::Bool(b)) => Some(Const::Int(-i128::from(*b))),
                (ast::UnaryOp::UAdd, Const::Bool(b)) => Some(Const::Int(i128::from(*b))),
                (ast::UnaryOp::UAdd, c) => Some(c.clone()),
                (ast::UnaryOp::Not, c) => Some(Const::Bool(c.as_f64() == Some(0.0))),
                (ast::UnaryOp::Invert, Const::Int(i)) => Some(Const::Int(!i)),
                (ast::UnaryOp::Invert, Const::Bool(b)) => Some(Const::Bool(!b)),
                _ => None,
            };
            if let Some(c) = folded {
                if v.weak.is_some() || s == Scalar::Bool {
                    return self.const_val(&c, span);
                }
            }
        }
        match op {
            ast::UnaryOp::Not => {
                let b = self.truthy(v)?;
                let e = self.push(Expr::Unary(UnaryOp::Not, b), Type::Scalar(Scalar::Bool), span);
                Some(self.val(e, Type::Scalar(Scalar::Bool), span))
            }
            ast::UnaryOp::UAdd | ast::UnaryOp::USub => {
                let (e, ty) = if s == Scalar::Bool {
                    (self.convert(&v, d.int)?, d.int)
                } else {
                    (v.e, s)
                };
                if op == ast::UnaryOp::UAdd {
                    return Some(Val { e, ty: Type::Scalar(ty), span, ..v });
                }
                let e = self.push(Expr::Unary(UnaryOp::Neg, e), Type::Scalar(ty), span);
                Some(Val {
                    e,
                    ty: Type::Scalar(ty),
                    weak: v.weak,
                    konst: None,
                    nonneg: ty.kind() == Kind::UInt,
                    span,
                })
            }
            ast::UnaryOp::Invert => {
                if s.is_float() {
                    self.error("E0202", span, format!("`~` needs an integer or bool operand, found {s}"));
                    return None;
                }
                let op = if s == Scalar::Bool { UnaryOp::Not } else { UnaryOp::Invert };
                let e = self.push(Expr::Unary(op, v.e), Type::Scalar(s), span);
                Some(Val {
                    e,
                    ty: Type::Scalar(s),
                    weak: v.weak,
                    konst: None,
                    nonneg: s.kind() == Kind::UInt,
                    span,
                })
            }
        }
    }

    fn compare(&mut self, c: &ast::ExprCompare) -> Option<Val> {
        let span = sp(c);
        let bool_t = Type::Scalar(Scalar::Bool);
        let mut acc: Option<Val> = None;
        for (k, (op, right)) in c.ops.iter().zip(c.comparators.iter()).enumerate() {
            let left = if k == 0 { c.left.as_ref() } else { &c.comparators[k - 1] };
            if k > 0 && contains_call(left) {
                self.diags.push(
                    Diagnostic::error("E0305", sp(left), "a chained comparison cannot have a function call in the middle")
                        .with_note("assign the middle value to a name first, then compare"),
                );
                return None;
            }
            let op = match op {
                ast::CmpOp::Eq => BinaryOp::Eq,
                ast::CmpOp::NotEq => BinaryOp::Ne,
                ast::CmpOp::Lt => BinaryOp::Lt,
                ast::CmpOp::LtE => BinaryOp::Le,
                ast::CmpOp::Gt => BinaryOp::Gt,
                ast::CmpOp::GtE => BinaryOp::Ge,
                other => {
                    self.error("E0202", span, format!("`{}` is not supported in device code", other.as_str()));
                    return None;
                }
            };
            let l = self.expr(left);
            let r = self.expr(right);
            let (l, r) = (self.to_val(l)?, self.to_val(r)?);
            let v = self.binary(op, l, r, span)?;
            acc = Some(match acc {
                None => v,
                Some(a) => {
                    let e = self.push(Expr::And(a.e, v.e), bool_t.clone(), span);
                    self.val(e, bool_t.clone(), span)
                }
            });
        }
        acc
    }

    fn bool_op(&mut self, b: &ast::ExprBoolOp) -> Option<Val> {
        let span = sp(b);
        let mut vals = Vec::new();
        for x in &b.values {
            let v = self.expr(x);
            vals.push(self.to_val(v)?);
        }
        if let Some(bad) = vals.iter().find(|v| v.ty.as_scalar().is_none()) {
            self.error("E0205", bad.span, format!("`{}` needs numbers or bools, found {}", b.op, bad.ty));
            return None;
        }
        let refs: Vec<&Val> = vals.iter().collect();
        let (common, weak) = if vals.iter().all(|v| v.ty == Type::Scalar(Scalar::Bool)) {
            (Scalar::Bool, None)
        } else {
            self.common(&refs)
        };
        let mut acc: Option<Handle<Expr>> = None;
        for v in &vals {
            let e = self.convert(v, common)?;
            acc = Some(match acc {
                None => e,
                Some(a) => {
                    let node = match b.op {
                        ast::BoolOp::And => Expr::And(a, e),
                        ast::BoolOp::Or => Expr::Or(a, e),
                    };
                    self.push(node, Type::Scalar(common), span)
                }
            });
        }
        let nonneg = vals.iter().all(|v| v.nonneg);
        Some(Val {
            e: acc?,
            ty: Type::Scalar(common),
            weak,
            konst: None,
            nonneg,
            span,
        })
    }

    fn if_expr(&mut self, i: &ast::ExprIf) -> Option<Val> {
        let span = sp(i);
        let cond = self.cond(&i.test);
        let t = self.expr(&i.body);
        let f = self.expr(&i.orelse);
        let (cond, t, f) = (cond?, self.to_val(t)?, self.to_val(f)?);
        let (ty, weak, te, fe) = if t.ty == f.ty && t.weak == f.weak {
            (t.ty.clone(), t.weak, t.e, f.e)
        } else if t.ty.as_scalar().is_some() && f.ty.as_scalar().is_some() {
            let (common, weak) = self.common(&[&t, &f]);
            (Type::Scalar(common), weak, self.convert(&t, common)?, self.convert(&f, common)?)
        } else {
            self.diags.push(
                Diagnostic::error("E0202", span, format!("the branches of this conditional expression have different types: {} and {}", t.ty, f.ty))
                    .with_secondary(t.span, format!("{}", t.ty))
                    .with_secondary(f.span, format!("{}", f.ty)),
            );
            return None;
        };
        let e = self.push(Expr::Select { cond, then: te, otherwise: fe }, ty.clone(), span);
        Some(Val {
            e,
            ty,
            weak,
            konst: None,
            nonneg: t.nonneg && f.nonneg,
            span,
        })
    }
}

// ---- calls --------------------------------------------------------------------------------

fn builtin_name(b: Builtin) -> String {
    use Builtin::*;
    match b {
        Kernel => "kernel".into(),
        Func => "func".into(),
        Scalar(s) => s.name().into(),
        Int => "int".into(),
        Float => "float".into(),
        Bool => "bool".into(),
        ThreadIdx => "thread_idx".into(),
        BlockIdx => "block_idx".into(),
        BlockDim => "block_dim".into(),
        GridDim => "grid_dim".into(),
        LaneId => "lane_id".into(),
        WarpSize => "warp_size".into(),
        Tid => "tid".into(),
        GridSize => "grid_size".into(),
        SyncThreads => "syncthreads".into(),
        Range => "range".into(),
        Len => "len".into(),
        Abs => "abs".into(),
        Min => "min".into(),
        Max => "max".into(),
    }
}

impl FnCx<'_, '_> {
    fn call(&mut self, c: &ast::ExprCall) -> Value {
        let fspan = sp(c.func.as_ref());
        let callee = match self.callee_item(&c.func) {
            Some(item) => Value::Item(item, fspan),
            None => self.expr(&c.func),
        };
        let v = match callee {
            Value::Err => None,
            Value::Item(Item::Function(idx), _) => self.user_call(idx, c),
            Value::Item(Item::Builtin(b), _) => self.builtin_call(b, c),
            Value::Item(Item::Const(_), s) | Value::Item(Item::Namespace(_), s) => {
                self.error("E0202", s, "this is not callable");
                None
            }
            Value::Item(other, s) => {
                self.not_a_value(&other, s);
                None
            }
            Value::Val(v) => {
                self.error("E0202", v.span, format!("{} is not callable", v.ty));
                None
            }
        };
        v.map(Value::Val).unwrap_or(Value::Err)
    }

    fn args(&mut self, c: &ast::ExprCall, name: &str, min: usize, max: usize) -> Option<Vec<Val>> {
        let span = sp(c);
        if let Some(k) = c.arguments.keywords.first() {
            self.error("E0107", sp(k), format!("`{name}` takes no keyword arguments"));
            return None;
        }
        let n = c.arguments.args.len();
        if n < min || n > max {
            let want = if min == max {
                format!("{min}")
            } else if max == usize::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            };
            self.error("E0107", span, format!("`{name}` takes {want} argument{}, but {n} {} given", if want == "1" { "" } else { "s" }, if n == 1 { "was" } else { "were" }));
            return None;
        }
        let mut out = Vec::new();
        for a in c.arguments.args.iter() {
            let v = self.expr(a);
            out.push(self.to_val(v)?);
        }
        Some(out)
    }

    fn builtin_call(&mut self, b: Builtin, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let name = builtin_name(b);
        let d = self.s.defaults;
        match b {
            Builtin::Scalar(_) | Builtin::Int | Builtin::Float | Builtin::Bool => {
                let target = match b {
                    Builtin::Scalar(s) => s,
                    Builtin::Int => d.int,
                    Builtin::Float => d.float,
                    _ => Scalar::Bool,
                };
                let mut args = self.args(c, &name, 0, 1)?;
                let Some(v) = args.pop() else {
                    let zero = if target.is_float() { Const::Float(0.0) } else if target == Scalar::Bool { Const::Bool(false) } else { Const::Int(0) };
                    let e = self.literal(&zero, target, span)?;
                    return Some(self.val(e, Type::Scalar(target), span));
                };
                self.conversion(v, target, span)
            }
            Builtin::Len => {
                let v = self.args(c, &name, 1, 1)?.pop()?;
                match &v.ty {
                    Type::Array(_) => {
                        let t = Type::Scalar(Scalar::Int64);
                        let e = self.push(Expr::ArrayProp(v.e, ArrayProp::Shape(0)), t.clone(), span);
                        let mut r = self.val(e, t, span);
                        r.nonneg = true;
                        Some(r)
                    }
                    Type::Tuple(ts) => self.const_val(&Const::Int(ts.len() as i128), span),
                    Type::Vector { len, .. } => self.const_val(&Const::Int(i128::from(*len)), span),
                    other => {
                        self.error("E0202", v.span, format!("{other} has no length"));
                        None
                    }
                }
            }
            Builtin::Abs => {
                let v = self.args(c, &name, 1, 1)?.pop()?;
                let Some(s) = v.ty.as_scalar() else {
                    self.error("E0202", v.span, format!("`abs` needs a number, found {}", v.ty));
                    return None;
                };
                if let (Some(k), true) = (&v.konst, v.weak.is_some() || s == Scalar::Bool) {
                    let c = match k {
                        Const::Int(i) => Const::Int(i.abs()),
                        Const::Float(f) => Const::Float(f.abs()),
                        Const::Bool(b) => Const::Int(i128::from(*b)),
                        t => t.clone(),
                    };
                    return self.const_val(&c, span);
                }
                let (e, s) = if s == Scalar::Bool { (self.convert(&v, d.int)?, d.int) } else { (v.e, s) };
                let e = self.push(Expr::Unary(UnaryOp::Abs, e), Type::Scalar(s), span);
                Some(Val { e, ty: Type::Scalar(s), weak: v.weak, konst: None, nonneg: !s.is_float(), span })
            }
            Builtin::Min | Builtin::Max => {
                let mut vals = self.args(c, &name, 1, usize::MAX)?;
                if vals.len() == 1 {
                    let v = vals.pop()?;
                    let Type::Tuple(ts) = &v.ty else {
                        self.error("E0202", v.span, format!("`{name}` of one argument needs a tuple, found {}", v.ty));
                        return None;
                    };
                    if ts.is_empty() {
                        self.error("E0202", v.span, format!("`{name}` of an empty tuple"));
                        return None;
                    }
                    for (i, t) in ts.clone().into_iter().enumerate() {
                        let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), v.span);
                        let e = self.push(Expr::Extract(base, i as u32), t.clone(), v.span);
                        vals.push(self.val(e, t, v.span));
                    }
                }
                let op = if b == Builtin::Min { BinaryOp::Min } else { BinaryOp::Max };
                let mut acc = vals.remove(0);
                for v in vals {
                    acc = self.binary(op, acc, v, span)?;
                }
                Some(acc)
            }
            Builtin::Tid | Builtin::GridSize => {
                let v = self.args(c, &name, 1, 1)?.pop()?;
                let n = match v.konst.as_ref().and_then(|k| k.as_int()) {
                    Some(n @ 1..=3) if v.ty.as_scalar().is_some_and(|s| s.is_integer()) => n as usize,
                    _ => {
                        self.diags.push(
                            Diagnostic::error("E0210", v.span, format!("`{name}` needs a constant 1, 2 or 3"))
                                .with_label("ndims must satisfy 0 < ndims <= 3"),
                        );
                        return None;
                    }
                };
                let u32t = Type::Scalar(Scalar::UInt32);
                let i32t = Type::Scalar(Scalar::Int32);
                let mut comps = Vec::new();
                for axis in [Axis::X, Axis::Y, Axis::Z].into_iter().take(n) {
                    let (a, bb) = if b == Builtin::Tid {
                        (Intrinsic::BlockIdx(axis), Intrinsic::BlockDim(axis))
                    } else {
                        (Intrinsic::GridDim(axis), Intrinsic::BlockDim(axis))
                    };
                    let x = self.push(Expr::Intrinsic(a, vec![]), u32t.clone(), span);
                    let y = self.push(Expr::Intrinsic(bb, vec![]), u32t.clone(), span);
                    let mut e = self.push(Expr::Binary(BinaryOp::Mul, x, y), u32t.clone(), span);
                    if b == Builtin::Tid {
                        let t = self.push(Expr::Intrinsic(Intrinsic::ThreadIdx(axis), vec![]), u32t.clone(), span);
                        e = self.push(Expr::Binary(BinaryOp::Add, e, t), u32t.clone(), span);
                    }
                    comps.push(self.push(Expr::Cast(e), i32t.clone(), span));
                }
                let (e, ty) = if n == 1 {
                    (comps[0], i32t)
                } else {
                    let ty = Type::Tuple(vec![i32t; n]);
                    (self.push(Expr::Tuple(comps), ty.clone(), span), ty)
                };
                let mut r = self.val(e, ty, span);
                r.nonneg = true;
                Some(r)
            }
            Builtin::SyncThreads => {
                self.args(c, &name, 0, 0)?;
                let e = self.push(Expr::Intrinsic(Intrinsic::SyncThreads, vec![]), Type::None, span);
                Some(self.val(e, Type::None, span))
            }
            Builtin::Range => {
                self.error("E0304", span, "`range` can only be used as the iterable of a `for` loop");
                None
            }
            _ => {
                self.error("E0202", sp(c.func.as_ref()), format!("`{name}` is not callable"));
                None
            }
        }
    }

    /// `T(x)`: an explicit conversion, which may truncate or wrap.
    fn conversion(&mut self, v: Val, target: Scalar, span: Span) -> Option<Val> {
        let Some(src) = v.ty.as_scalar() else {
            self.error("E0207", v.span, format!("cannot convert {} to {target}", v.ty));
            return None;
        };
        if let (Some(k), true) = (&v.konst, v.weak.is_some() || src == Scalar::Bool) {
            let c = match (k, target.kind()) {
                (c, Kind::Bool) => Const::Bool(c.as_f64().is_some_and(|x| x != 0.0)),
                (Const::Float(f), Kind::Int | Kind::UInt) => {
                    if !f.is_finite() {
                        self.error("E0204", v.span, format!("cannot convert {f} to {target}"));
                        return None;
                    }
                    Const::Int(f.trunc() as i128)
                }
                (Const::Bool(b), Kind::Float) => Const::Float(f64::from(u8::from(*b))),
                (Const::Int(i), Kind::Float) => Const::Float(*i as f64),
                (Const::Bool(b), _) => Const::Int(i128::from(*b)),
                (c, _) => c.clone(),
            };
            let e = self.literal(&c, target, v.span)?;
            let mut r = self.val(e, Type::Scalar(target), span);
            r.konst = Some(c.clone());
            r.nonneg = c.as_int().is_some_and(|i| i >= 0) && !target.is_float();
            return Some(r);
        }
        let e = if target == Scalar::Bool {
            self.truthy(v.clone())?
        } else if src == target {
            v.e
        } else {
            self.push(Expr::Cast(v.e), Type::Scalar(target), span)
        };
        let mut r = self.val(e, Type::Scalar(target), span);
        r.nonneg |= v.nonneg && src.is_integer() && target.is_integer() && target.bits() >= src.bits();
        Some(r)
    }

    fn user_call(&mut self, idx: usize, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let m = self.s.m;
        let decl = &m.functions[idx];
        match decl.kind {
            None => {
                self.diags.push(not_device_function(decl).with_secondary(span, "called from device code here"));
                return None;
            }
            Some(FunctionKind::Kernel) => {
                self.diags.push(
                    Diagnostic::error("E0109", span, format!("kernel `{}` cannot be called from device code", decl.name))
                        .with_secondary(decl.name_span, "defined as a kernel here")
                        .with_note("launch kernels from the host; share code through a `@device.func`"),
                );
                return None;
            }
            Some(FunctionKind::Device) => {}
        }
        let def = m.def(decl);
        let params: Vec<&ast::ParameterWithDefault> =
            def.parameters.posonlyargs.iter().chain(def.parameters.args.iter()).collect();
        let mut slots: Vec<Option<Val>> = vec![None; params.len()];
        if c.arguments.args.len() > params.len() {
            self.diags.push(
                Diagnostic::error("E0107", span, format!("`{}` takes {} argument{}, but {} were given", decl.name, params.len(), if params.len() == 1 { "" } else { "s" }, c.arguments.args.len()))
                    .with_secondary(decl.name_span, "defined here"),
            );
            return None;
        }
        for (i, a) in c.arguments.args.iter().enumerate() {
            let v = self.expr(a);
            slots[i] = Some(self.to_val(v)?);
        }
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                self.error("E0107", sp(k), "`**` arguments are not supported in device code");
                return None;
            };
            let Some(pos) = params.iter().position(|p| p.parameter.name.id == name.id) else {
                self.diags.push(
                    Diagnostic::error("E0107", sp(k), format!("`{}` has no parameter named `{}`", decl.name, name.id))
                        .with_secondary(decl.name_span, "defined here"),
                );
                return None;
            };
            if slots[pos].is_some() {
                self.error("E0107", sp(k), format!("argument `{}` is given twice", name.id));
                return None;
            }
            let v = self.expr(&k.value);
            slots[pos] = Some(self.to_val(v)?);
        }
        let mut args = Vec::new();
        for (p, slot) in params.iter().zip(slots) {
            let Some(v) = slot else {
                self.diags.push(
                    Diagnostic::error("E0107", span, format!("missing argument `{}` in call of `{}`", p.parameter.name.id, decl.name))
                        .with_secondary(decl.name_span, "defined here"),
                );
                return None;
            };
            let annotated = p.parameter.annotation.as_deref().and_then(|a| match m.resolve_static(a) {
                Some(Item::Builtin(Builtin::Scalar(s))) => Some(s),
                Some(Item::Builtin(Builtin::Int)) => Some(self.s.defaults.int),
                Some(Item::Builtin(Builtin::Float)) => Some(self.s.defaults.float),
                Some(Item::Builtin(Builtin::Bool)) => Some(Scalar::Bool),
                _ => None,
            });
            let v = match (annotated, v.weak) {
                (Some(s), Some(_)) => {
                    let e = self.convert(&v, s)?;
                    Val { e, ty: Type::Scalar(s), weak: None, ..v }
                }
                _ => self.concrete(v)?,
            };
            if v.ty == Type::None {
                self.error("E0207", v.span, "`None` cannot be passed to a device function");
                return None;
            }
            args.push(v);
        }
        let types: Vec<Type> = args.iter().map(|v| v.ty.clone()).collect();
        self.callees.push((idx, types.clone()));
        let h = match self.s.instantiate(idx, types, span) {
            Ok(h) => h,
            Err(Some(d)) => {
                self.diags.push(d);
                return None;
            }
            Err(None) => return None,
        };
        let ret = self.s.functions[h].ret.clone();
        let e = self.push(Expr::Call(h, args.iter().map(|v| v.e).collect()), ret.clone(), span);
        Some(self.val(e, ret, span))
    }
}
