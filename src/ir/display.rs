//! The readable text form of the IR (what `Display` prints and the `.ir` goldens hold).

use super::*;

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (_, func)) in self.functions.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{func}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FunctionKind::Kernel => "kernel",
            FunctionKind::Device => "func",
        };
        if self.external {
            write!(f, "extern ")?;
        }
        write!(f, "{kind} {}(", self.symbol)?;
        for (i, l) in self.param_locals().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{}: {}", self.locals[l].name, self.locals[l].ty)?;
        }
        if self.external {
            return writeln!(f, ") -> {}", self.ret);
        }
        writeln!(f, ") -> {} {{", self.ret)?;
        for (h, l) in self.locals.iter().skip(self.params) {
            writeln!(f, "    local %{} {}: {}", h.index(), l.name, l.ty)?;
        }
        print_block(self, &self.body, 1, f)?;
        writeln!(f, "}}")
    }
}

fn print_block(
    func: &Function,
    block: &Block,
    depth: usize,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let ind = "    ".repeat(depth);
    for s in block {
        match &s.kind {
            StmtKind::Eval(e) => writeln!(f, "{ind}{}", ExprFmt(func, *e))?,
            StmtKind::Assign(l, e) => {
                writeln!(f, "{ind}{} = {}", func.locals[*l].name, ExprFmt(func, *e))?
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => writeln!(
                f,
                "{ind}{}[{}] = {}",
                ExprFmt(func, *array),
                IndexFmt(func, indices),
                ExprFmt(func, *value)
            )?,
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                writeln!(f, "{ind}if {}:", ExprFmt(func, *cond))?;
                print_block(func, then, depth + 1, f)?;
                if !otherwise.is_empty() {
                    writeln!(f, "{ind}else:")?;
                    print_block(func, otherwise, depth + 1, f)?;
                }
            }
            StmtKind::Loop {
                cond,
                body,
                continuing,
                form,
            } => {
                let form = match form {
                    LoopForm::Plain => String::new(),
                    LoopForm::RuntimeStride => " [runtime stride]".to_string(),
                    LoopForm::Unroll(0) => " [unroll full]".to_string(),
                    LoopForm::Unroll(1) => " [unroll disabled]".to_string(),
                    LoopForm::Unroll(n) => format!(" [unroll {n}]"),
                };
                writeln!(f, "{ind}loop while {}{form}:", ExprFmt(func, *cond))?;
                print_block(func, body, depth + 1, f)?;
                if !continuing.is_empty() {
                    writeln!(f, "{ind}continuing:")?;
                    print_block(func, continuing, depth + 1, f)?;
                }
            }
            StmtKind::StoreRef { target, value } => writeln!(
                f,
                "{ind}*{} = {}",
                ExprFmt(func, *target),
                ExprFmt(func, *value)
            )?,
            StmtKind::Break => writeln!(f, "{ind}break")?,
            StmtKind::Continue => writeln!(f, "{ind}continue")?,
            StmtKind::Assert { cond, message } => {
                writeln!(f, "{ind}assert {}, {message:?}", ExprFmt(func, *cond))?
            }
            StmtKind::Raise { message } => writeln!(f, "{ind}raise {message:?}")?,
            StmtKind::Print(pieces) => {
                write!(f, "{ind}print")?;
                for p in pieces {
                    match p {
                        PrintPiece::Text(t) => write!(f, " {t:?}")?,
                        PrintPiece::Value { value, .. } => {
                            write!(f, " {}:{:?}", ExprFmt(func, *value), p.printf())?
                        }
                    }
                }
                writeln!(f)?;
            }
            StmtKind::Return(None) => writeln!(f, "{ind}return")?,
            StmtKind::Return(Some(e)) => writeln!(f, "{ind}return {}", ExprFmt(func, *e))?,
        }
    }
    Ok(())
}

struct IndexFmt<'a>(&'a Function, &'a [Index]);

impl fmt::Display for IndexFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, ix) in self.1.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            if ix.wrap {
                write!(f, "wrap ")?;
            }
            write!(f, "{}", ExprFmt(self.0, ix.value))?;
        }
        Ok(())
    }
}

struct ExprFmt<'a>(&'a Function, Handle<Expr>);

impl fmt::Display for ExprFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::stack::deep(|| self.fmt_expr(f))
    }
}

impl ExprFmt<'_> {
    fn fmt_expr(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let func = self.0;
        let e = |h: Handle<Expr>| ExprFmt(func, h);
        let ty = func.ty(self.1);
        match &func.exprs[self.1] {
            Expr::Asm(a) => {
                write!(f, "asm[{}]({:?}, {:?}", ty, a.template, a.constraints)?;
                if a.volatile {
                    write!(f, ", volatile")?;
                }
                for x in &a.args {
                    write!(f, ", {}", e(*x))?;
                }
                write!(f, ")")
            }
            Expr::Launch(l) => {
                write!(
                    f,
                    "launch #{}[{}, {}, {}](",
                    l.kernel.index(),
                    e(l.grid),
                    e(l.block),
                    e(l.shared)
                )?;
                for (i, x) in l.args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*x))?;
                }
                write!(f, ")")
            }
            Expr::Literal(Literal::Bool(b)) => write!(f, "{}", if *b { "True" } else { "False" }),
            Expr::Literal(Literal::Int(i)) => write!(f, "{ty}({i})"),
            Expr::Literal(Literal::Float(x)) => write!(f, "{ty}({x:?})"),
            Expr::Literal(Literal::Complex(re, im)) => write!(f, "{ty}({re:?}, {im:?})"),
            Expr::Local(l) => write!(f, "{}", func.locals[*l].name),
            Expr::Unary(op, a) => {
                let s = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Invert => "~",
                    UnaryOp::Not => "not ",
                    UnaryOp::Abs => return write!(f, "abs({})", e(*a)),
                };
                write!(f, "({s}{})", e(*a))
            }
            Expr::Binary(op @ (BinaryOp::Min | BinaryOp::Max), a, b) => {
                write!(f, "{}({}, {})", op.symbol(), e(*a), e(*b))
            }
            Expr::Binary(op, a, b) => write!(f, "({} {} {})", e(*a), op.symbol(), e(*b)),
            Expr::And(a, b) => write!(f, "({} and {})", e(*a), e(*b)),
            Expr::Or(a, b) => write!(f, "({} or {})", e(*a), e(*b)),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => write!(f, "({} if {} else {})", e(*then), e(*cond), e(*otherwise)),
            Expr::Cast(a) => write!(f, "{ty}({})", e(*a)),
            Expr::Call(callee, args) => {
                write!(f, "call #{}(", callee.index())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*a))?;
                }
                write!(f, ")")
            }
            Expr::Intrinsic(op, args) => {
                write!(f, "{}", op.name())?;
                if !args.is_empty()
                    || matches!(
                        op,
                        Intrinsic::SyncThreads
                            | Intrinsic::ClusterArrive(_)
                            | Intrinsic::ClusterWait
                            | Intrinsic::ClusterSync
                            | Intrinsic::Hopper(_)
                    )
                {
                    write!(f, "(")?;
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            write!(f, ", ")?;
                        }
                        write!(f, "{}", e(*a))?;
                    }
                    write!(f, ")")?;
                }
                Ok(())
            }
            Expr::Load { array, indices } => {
                write!(f, "{}[{}]", e(*array), IndexFmt(func, indices))
            }
            Expr::ArrayProp(a, p) => match p {
                ArrayProp::Shape(d) => write!(f, "{}.shape[{d}]", e(*a)),
                ArrayProp::Stride(d) => write!(f, "{}.strides[{d}]", e(*a)),
                ArrayProp::Size => write!(f, "{}.size", e(*a)),
                ArrayProp::Address => write!(f, "address({})", e(*a)),
            },
            Expr::Tuple(items) => {
                write!(f, "{ty}(")?;
                for (i, a) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*a))?;
                }
                write!(f, ")")
            }
            Expr::Extract(a, i) => write!(f, "{}[{i}]", e(*a)),
            Expr::StaticArray { shape, align } => write!(f, "alloc {ty} {shape:?} align {align}"),
            Expr::DynamicShared => write!(f, "dynamic_shared_array()"),
            Expr::ConstArray(a) => write!(
                f,
                "const_array {} {:?} ({} bytes)",
                a.name,
                a.shape,
                a.bytes.len()
            ),
            Expr::View { array, subs } => {
                write!(f, "{}[", e(*array))?;
                for (i, sub) in subs.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    match sub {
                        Subscript::Index(ix) => write!(f, "{}", IndexFmt(func, &[*ix]))?,
                        Subscript::Slice { start, stop, step } => {
                            if let Some(s) = start {
                                write!(f, "{}", e(*s))?;
                            }
                            write!(f, ":")?;
                            if let Some(s) = stop {
                                write!(f, "{}", e(*s))?;
                            }
                            // As Python writes it: a step of 1 is left out.
                            if *step != 1 {
                                write!(f, ":{step}")?;
                            }
                        }
                    }
                }
                write!(f, "]")
            }
            Expr::Reshape {
                array,
                shape,
                fortran,
            } => {
                write!(f, "{}.reshape((", e(*array))?;
                for (i, n) in shape.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    match n {
                        Some(n) => write!(f, "{}", e(*n))?,
                        None => write!(f, "-1")?,
                    }
                }
                write!(f, "){}) -> {ty}", if *fortran { ", order='F'" } else { "" })
            }
            Expr::Reinterpret(a) => write!(f, "{}.view({ty})", e(*a)),
            Expr::FieldRef(a, i) => write!(f, "&{}->{i}", e(*a)),
            Expr::FieldArray(a, i) => write!(f, "{}->{i}[...]", e(*a)),
            Expr::Deref(a) => write!(f, "*{}", e(*a)),
            Expr::ElementRef { array, indices } => {
                write!(f, "atomic_ref({}, {})", e(*array), IndexFmt(func, indices))
            }
            Expr::Atomic {
                op,
                order,
                scope,
                target,
                args,
            } => {
                write!(f, "{}.{op:?}[{order:?}, {scope:?}](", e(*target))?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", e(*a))?;
                }
                write!(f, ")")
            }
        }
    }
}
