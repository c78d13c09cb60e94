//! The IR validator: the rules a [`Program`] must keep for the back ends to lower it.
//!
//! The checker builds the IR; the back ends trust it. This pass states that trust as rules
//! (as naga's `valid/` and Cranelift's verifier do) so a checker bug is reported as invalid
//! IR, with the function and the statement it is in, instead of an LLVM assertion or an
//! internal error deep in a back end. It runs in debug builds between checking and lowering
//! ([`crate`]'s `Module::specialize_*`) and in every fixture test.
//!
//! It checks structure (handles in range, callees before callers, `break` inside a loop),
//! types (operands of the types their operation takes, assignments and arguments of the
//! declared types), and returns: a function returns values of its declared type, and a
//! function that returns a value cannot reach the end of its body.
//!
//! It must not decide language rules: a program the checker accepted and lowered faithfully
//! is valid. Whatever it rejects is a compiler bug, never a user error.

use super::*;
use crate::types::ArrayType;

/// A rule the IR broke: in which function, at which statement (or the function's `def`),
/// and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// The function's symbol.
    pub function: String,
    /// The statement the rule was broken in, or the function's span.
    pub span: Span,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid IR in `{}`: {}", self.function, self.message)
    }
}

impl std::error::Error for ValidationError {}

/// Checks every rule of the IR over `program`; the first broken rule is the error.
pub fn validate(program: &Program) -> Result<(), ValidationError> {
    if program.entry.index() >= program.functions.len() {
        return Err(ValidationError {
            function: "<program>".into(),
            span: Span::default(),
            message: format!(
                "the entry is function {} of {}",
                program.entry.index(),
                program.functions.len()
            ),
        });
    }
    for (_, f) in program.functions.iter() {
        Validator {
            program,
            f,
            span: f.span,
            loops: 0,
        }
        .function()?;
    }
    Ok(())
}

struct Validator<'a> {
    program: &'a Program,
    f: &'a Function,
    /// The statement being checked (for the error).
    span: Span,
    /// How many loops enclose the statement.
    loops: usize,
}

type V = Result<(), ValidationError>;

/// Whether a value of type `a` can stand where `b` is expected with no conversion:
/// `WarpMask` is an `int32`, and an array's descriptor is the same whatever the layout
/// promises (a C-contiguous array is passed where any layout is taken).
fn same(a: &Type, b: &Type) -> bool {
    match (a, b) {
        _ if a == b => true,
        (Type::Array(x), Type::Array(y)) => {
            x.dtype == y.dtype && x.ndim == y.ndim && x.space == y.space
        }
        _ => a.as_scalar() == Some(Scalar::Int32) && b.as_scalar() == Some(Scalar::Int32),
    }
}

impl Validator<'_> {
    fn fail(&self, message: impl Into<String>) -> V {
        Err(ValidationError {
            function: self.f.symbol.clone(),
            span: self.span,
            message: message.into(),
        })
    }

    fn function(&mut self) -> V {
        let f = self.f;
        if f.params > f.locals.len() {
            return self.fail(format!(
                "{} parameters but {} locals",
                f.params,
                f.locals.len()
            ));
        }
        if f.types.len() != f.exprs.len() {
            return self.fail(format!(
                "{} expressions but {} types",
                f.exprs.len(),
                f.types.len()
            ));
        }
        if f.kind == FunctionKind::Kernel {
            if f.ret != Type::None {
                return self.fail(format!("a kernel returns {}", f.ret));
            }
            for l in f.param_locals() {
                if f.locals[l].ty == Type::None {
                    return self.fail(format!(
                        "kernel parameter `{}` has type None",
                        f.locals[l].name
                    ));
                }
            }
        }
        if f.external {
            if !f.body.is_empty() {
                return self.fail("an extern function has a body");
            }
            return Ok(());
        }
        // Each expression is reported at the statement that uses it.
        let mut spans: Vec<Option<Span>> = vec![None; f.exprs.len()];
        self.roots(&f.body, &mut spans)?;
        for h in (0..f.exprs.len()).rev() {
            let sp = spans[h];
            for o in f.exprs[Handle::new(h)].operands() {
                if let Some(slot) = spans.get_mut(o.index())
                    && slot.is_none()
                {
                    *slot = sp;
                }
            }
        }
        for (h, sp) in spans.into_iter().enumerate() {
            self.span = sp.unwrap_or(f.span);
            self.expr(Handle::new(h))?;
        }
        self.block(&f.body)?;
        self.span = f.span;
        if f.ret != Type::None && falls_through(f, &f.body) {
            return self.fail(format!(
                "the body can reach its end without returning a value of the declared type {}",
                f.ret
            ));
        }
        Ok(())
    }

    /// Records the statement span of each expression a statement uses directly.
    fn roots(&self, b: &Block, spans: &mut [Option<Span>]) -> V {
        for s in b {
            let mut mark = |h: Handle<Expr>| -> V {
                self.handle(h)?;
                spans[h.index()].get_or_insert(s.span);
                Ok(())
            };
            match &s.kind {
                StmtKind::Eval(e) | StmtKind::Assign(_, e) | StmtKind::Return(Some(e)) => mark(*e)?,
                StmtKind::Store {
                    array,
                    indices,
                    value,
                } => {
                    mark(*array)?;
                    mark(*value)?;
                    for i in indices {
                        mark(i.value)?;
                    }
                }
                StmtKind::StoreRef { target, value } => {
                    mark(*target)?;
                    mark(*value)?;
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    mark(*cond)?;
                    self.roots(then, spans)?;
                    self.roots(otherwise, spans)?;
                }
                StmtKind::Loop {
                    cond,
                    body,
                    continuing,
                    ..
                } => {
                    mark(*cond)?;
                    self.roots(body, spans)?;
                    self.roots(continuing, spans)?;
                }
                StmtKind::Assert { cond, .. } => mark(*cond)?,
                StmtKind::Raise { .. } => {}
                StmtKind::Print(pieces) => {
                    for p in pieces {
                        if let PrintPiece::Value { value, .. } = p {
                            mark(*value)?;
                        }
                    }
                }
                StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
            }
        }
        Ok(())
    }

    fn block(&mut self, b: &Block) -> V {
        b.iter().try_for_each(|s| self.stmt(s))
    }

    fn ty(&self, e: Handle<Expr>) -> &Type {
        self.f.ty(e)
    }

    fn expect(&self, e: Handle<Expr>, want: &Type, what: &str) -> V {
        if same(self.ty(e), want) {
            Ok(())
        } else {
            self.fail(format!("{what} is {}, expected {want}", self.ty(e)))
        }
    }

    fn array(&self, e: Handle<Expr>, what: &str) -> Result<&ArrayType, ValidationError> {
        match self.ty(e).as_array() {
            Some(a) => Ok(a),
            None => Err(ValidationError {
                function: self.f.symbol.clone(),
                span: self.span,
                message: format!("{what} is {}, not an array", self.ty(e)),
            }),
        }
    }

    fn local(&self, l: Handle<Local>) -> V {
        if l.index() < self.f.locals.len() {
            Ok(())
        } else {
            self.fail(format!("local %{} of {}", l.index(), self.f.locals.len()))
        }
    }

    fn stmt(&mut self, s: &Stmt) -> V {
        self.span = s.span;
        match &s.kind {
            StmtKind::Eval(e) => self.handle(*e),
            StmtKind::Assign(l, e) => {
                self.local(*l)?;
                self.handle(*e)?;
                let local = &self.f.locals[*l];
                self.expect(
                    *e,
                    &local.ty,
                    &format!("the value assigned to `{}`", local.name),
                )
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => {
                self.handle(*array)?;
                self.handle(*value)?;
                self.indices(*array, indices)?;
                let a = self.array(*array, "a stored-to array")?;
                self.expect(*value, &a.dtype.ty(), "the stored value")
            }
            StmtKind::StoreRef { target, value } => {
                self.handle(*target)?;
                self.handle(*value)?;
                match self.ty(*target) {
                    Type::Ref { dtype, .. } => {
                        self.expect(*value, &Type::Scalar(*dtype), "the stored value")
                    }
                    t => self.fail(format!("a store through {t}, not a reference")),
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.handle(*cond)?;
                self.expect(*cond, &Type::Scalar(Scalar::Bool), "an `if` condition")?;
                self.block(then)?;
                self.block(otherwise)
            }
            StmtKind::Loop {
                cond,
                body,
                continuing,
                ..
            } => {
                self.handle(*cond)?;
                self.expect(*cond, &Type::Scalar(Scalar::Bool), "a loop condition")?;
                self.loops += 1;
                self.block(body)?;
                self.block(continuing)?;
                self.loops -= 1;
                Ok(())
            }
            StmtKind::Break | StmtKind::Continue if self.loops == 0 => {
                self.fail("`break` or `continue` outside a loop")
            }
            StmtKind::Break | StmtKind::Continue => Ok(()),
            StmtKind::Assert { cond, .. } => {
                self.handle(*cond)?;
                self.expect(*cond, &Type::Scalar(Scalar::Bool), "an assertion")
            }
            StmtKind::Raise { .. } => Ok(()),
            StmtKind::Print(pieces) => {
                for p in pieces {
                    if let PrintPiece::Value { value, conv, .. } = p {
                        self.handle(*value)?;
                        let want = match conv {
                            PrintConv::Signed => Scalar::Int64,
                            PrintConv::Unsigned => Scalar::UInt64,
                            PrintConv::Float => Scalar::Float64,
                            PrintConv::Bool => Scalar::Bool,
                        };
                        self.expect(*value, &Type::Scalar(want), "a printed value")?;
                    }
                }
                Ok(())
            }
            StmtKind::Return(None) if self.f.ret != Type::None => self.fail(format!(
                "a `return` without a value in a function declared to return {}",
                self.f.ret
            )),
            StmtKind::Return(None) => Ok(()),
            StmtKind::Return(Some(e)) => {
                self.handle(*e)?;
                let ret = self.f.ret.clone();
                self.expect(*e, &ret, "the returned value")
            }
        }
    }

    fn indices(&mut self, array: Handle<Expr>, indices: &[Index]) -> V {
        let a = self.array(array, "an indexed value")?;
        if indices.len() != usize::from(a.ndim) {
            return self.fail(format!(
                "{} indices into a {}-dimensional array",
                indices.len(),
                a.ndim
            ));
        }
        for ix in indices {
            self.handle(ix.value)?;
            self.integer(ix.value, "an index")?;
        }
        Ok(())
    }

    fn integer(&self, e: Handle<Expr>, what: &str) -> V {
        match self.ty(e).as_scalar() {
            Some(s) if s.is_integer() => Ok(()),
            _ => self.fail(format!("{what} is {}, not an integer", self.ty(e))),
        }
    }

    fn scalar(&self, e: Handle<Expr>, what: &str) -> Result<Scalar, ValidationError> {
        self.ty(e).as_scalar().ok_or_else(|| ValidationError {
            function: self.f.symbol.clone(),
            span: self.span,
            message: format!("{what} is {}, not a number", self.ty(e)),
        })
    }

    fn handle(&self, h: Handle<Expr>) -> V {
        if h.index() < self.f.exprs.len() {
            Ok(())
        } else {
            self.fail(format!(
                "expression %{} of {}",
                h.index(),
                self.f.exprs.len()
            ))
        }
    }

    /// Checks expression `h`, whose operands come before it (so every expression is checked
    /// once, in order, without recursion).
    fn expr(&mut self, h: Handle<Expr>) -> V {
        let f = self.f;
        for o in f.exprs[h].operands() {
            if o.index() >= h.index() {
                return self.fail(format!(
                    "expression %{} uses %{}, which comes after it",
                    h.index(),
                    o.index()
                ));
            }
        }
        let ty = self.ty(h).clone();
        match &f.exprs[h] {
            Expr::Literal(lit) => {
                let Some(s) = ty.as_scalar() else {
                    return self.fail(format!("a literal of type {ty}"));
                };
                let ok = match lit {
                    Literal::Bool(_) => s == Scalar::Bool,
                    Literal::Int(_) => !s.is_complex() && literal_fits(*lit, s),
                    Literal::Float(_) => s.is_float() || s.is_fp8(),
                    Literal::Complex(..) => s.is_complex(),
                };
                if !ok {
                    return self.fail(format!("the literal {lit:?} does not fit {ty}"));
                }
            }
            Expr::Local(l) => {
                self.local(*l)?;
                let local = &f.locals[*l];
                if !same(&local.ty, &ty) {
                    return self.fail(format!(
                        "a read of `{}` ({}) typed {ty}",
                        local.name, local.ty
                    ));
                }
            }
            Expr::Unary(op, a) => {
                let s = self.scalar(*a, "an operand")?;
                if matches!(op, UnaryOp::Invert) && (s.is_float() || s.is_complex()) {
                    return self.fail(format!("`~` on {s}"));
                }
            }
            Expr::Binary(op, a, b) => {
                let s = self.scalar(*a, "an operand")?;
                let t = self.scalar(*b, "an operand")?;
                if s != t {
                    return self.fail(format!("{op:?} of {s} and {t}"));
                }
                let bitwise = matches!(
                    op,
                    BinaryOp::BitAnd
                        | BinaryOp::BitOr
                        | BinaryOp::BitXor
                        | BinaryOp::Shl
                        | BinaryOp::Shr
                );
                if bitwise && (s.is_float() || s.is_complex()) {
                    return self.fail(format!("{op:?} on {s}"));
                }
                if *op == BinaryOp::Div && !(s.is_float() || s.is_complex()) {
                    return self.fail(format!("true division on {s}"));
                }
            }
            Expr::And(..) | Expr::Or(..) => {
                if ty.as_scalar().is_none() {
                    return self.fail(format!("`and`/`or` of type {ty}"));
                }
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                self.expect(*cond, &Type::Scalar(Scalar::Bool), "a conditional's test")?;
                self.expect(*then, &ty, "a conditional's value")?;
                self.expect(*otherwise, &ty, "a conditional's value")?;
            }
            Expr::Cast(a) => {
                self.scalar(*a, "a converted value")?;
                if ty.as_scalar().is_none() {
                    return self.fail(format!("a conversion to {ty}"));
                }
            }
            Expr::Call(callee, args) => {
                // Callees usually come before their callers; a recursive call (§1.4) may name
                // its own function or a later one.
                if callee.index() >= self.program.functions.len() {
                    return self.fail(format!(
                        "a call of function {}, which does not exist",
                        callee.index()
                    ));
                }
                let g = &self.program.functions[*callee];
                if args.len() != g.params {
                    return self.fail(format!(
                        "a call of `{}` with {} arguments for {} parameters",
                        g.symbol,
                        args.len(),
                        g.params
                    ));
                }
                for (a, l) in args.iter().zip(g.param_locals()) {
                    let p = &g.locals[l];
                    self.expect(
                        *a,
                        &p.ty,
                        &format!("argument `{}` of `{}`", p.name, g.symbol),
                    )?;
                }
                if !same(&g.ret, &ty) {
                    return self.fail(format!(
                        "a call of `{}`, which returns {}, typed {ty}",
                        g.symbol, g.ret
                    ));
                }
            }
            Expr::Asm(a) => {
                let scalar = |t: &Type| matches!(t, Type::Scalar(s) if !s.is_complex());
                let ok = match &ty {
                    Type::None => true,
                    Type::Tuple(ts) => ts.iter().all(scalar),
                    t => scalar(t),
                };
                if !ok {
                    return self.fail(format!("inline PTX with a result of type {ty}"));
                }
                for x in &a.args {
                    self.scalar(*x, "an inline PTX operand")?;
                }
            }
            Expr::Launch(l) => {
                if l.kernel.index() >= self.program.functions.len() {
                    return self.fail(format!(
                        "a launch of function {}, which the program does not have",
                        l.kernel.index()
                    ));
                }
                let g = &self.program.functions[l.kernel];
                if g.kind != crate::ir::FunctionKind::Kernel || l.args.len() != g.params {
                    return self.fail(format!(
                        "a launch of `{}` (not a kernel, or with {} arguments for {})",
                        g.symbol,
                        l.args.len(),
                        g.params
                    ));
                }
                let dim3 = Type::Vector {
                    elem: Scalar::UInt32,
                    len: 3,
                };
                self.expect(l.grid, &dim3, "a launch's grid")?;
                self.expect(l.block, &dim3, "a launch's block")?;
                self.expect(
                    l.shared,
                    &Type::Scalar(Scalar::UInt32),
                    "a launch's shared bytes",
                )?;
                for (a, lo) in l.args.iter().zip(g.param_locals()) {
                    let p = &g.locals[lo];
                    self.expect(
                        *a,
                        &p.ty,
                        &format!("argument `{}` of `{}`", p.name, g.symbol),
                    )?;
                }
                if ty != Type::Scalar(Scalar::Int32) {
                    return self.fail(format!("a launch typed {ty}"));
                }
            }
            Expr::Intrinsic(Intrinsic::Math(m), args) => {
                if args.len() != m.arity() {
                    return self.fail(format!("math.{} with {} arguments", m.name(), args.len()));
                }
            }
            Expr::Intrinsic(..) => {}
            Expr::Load { array, indices } | Expr::ElementRef { array, indices } => {
                self.indices(*array, indices)?;
            }
            Expr::ArrayProp(a, _) | Expr::Reinterpret(a) => {
                self.array(*a, "the operand")?;
            }
            Expr::Tuple(_) => {
                if !matches!(ty, Type::Tuple(_) | Type::Vector { .. } | Type::Struct(_)) {
                    return self.fail(format!("a tuple of type {ty}"));
                }
            }
            Expr::Extract(a, i) => {
                let n = match self.ty(*a) {
                    Type::Tuple(ts) => ts.len(),
                    Type::Vector { len, .. } => usize::from(*len),
                    Type::Struct(st) => st.fields.len(),
                    t => return self.fail(format!("an element of {t}")),
                };
                if *i as usize >= n {
                    return self.fail(format!("element {i} of a {n}-element value"));
                }
            }
            Expr::StaticArray { .. } | Expr::DynamicShared | Expr::ConstArray(_) => {
                if ty.as_array().is_none() {
                    return self.fail(format!("an array of type {ty}"));
                }
            }
            Expr::View { array, subs } => {
                let a = self.array(*array, "a viewed value")?;
                if subs.len() != usize::from(a.ndim) {
                    return self.fail(format!(
                        "{} subscripts of a {}-dimensional array",
                        subs.len(),
                        a.ndim
                    ));
                }
                if ty.as_array().is_none() {
                    return self.fail(format!("a view of type {ty}"));
                }
            }
            Expr::Reshape { array, .. } => {
                self.array(*array, "a reshaped value")?;
                if ty.as_array().is_none() {
                    return self.fail(format!("a reshape to {ty}"));
                }
            }
            Expr::FieldRef(r, _) | Expr::FieldArray(r, _) => {
                if !matches!(self.ty(*r), Type::StructRef { .. }) {
                    return self.fail(format!("a field of {}", self.ty(*r)));
                }
            }
            Expr::Deref(r) => {
                if !matches!(self.ty(*r), Type::Ref { .. } | Type::StructRef { .. }) {
                    return self.fail(format!("a dereference of {}", self.ty(*r)));
                }
            }
            Expr::Atomic { target, .. } => {
                if !matches!(self.ty(*target), Type::Ref { .. }) {
                    return self.fail(format!("an atomic on {}", self.ty(*target)));
                }
            }
        }
        Ok(())
    }
}

/// Whether control can reach the end of `block` (and go on after it).
fn falls_through(f: &Function, block: &Block) -> bool {
    for s in block {
        match &s.kind {
            StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Raise { .. } => {
                return false;
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                if !falls_through(f, then) && !falls_through(f, otherwise) {
                    return false;
                }
            }
            StmtKind::Loop {
                cond,
                body,
                continuing,
                ..
            } => {
                let forever = matches!(f.exprs[*cond], Expr::Literal(Literal::Bool(true)));
                if forever && !breaks(body) && !breaks(continuing) {
                    return false;
                }
            }
            StmtKind::Eval(_)
            | StmtKind::Assign(..)
            | StmtKind::Store { .. }
            | StmtKind::StoreRef { .. }
            | StmtKind::Assert { .. }
            | StmtKind::Print(_) => {}
        }
    }
    true
}

/// Whether `block` holds a `break` out of the loop it is the body of (not of a nested loop).
fn breaks(block: &Block) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If {
            then, otherwise, ..
        } => breaks(then) || breaks(otherwise),
        _ => false,
    })
}
