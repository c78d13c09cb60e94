//! `for` loops: over `range`, over arrays (numba), unrolled over tuples
//! (`literal_unroll`) and over sequences.

use super::*;
use crate::diag::Code;

impl FnCx<'_, '_> {
    pub(super) fn for_range(&mut self, f: &ast::StmtFor, out: &mut Block) {
        let span = sp(f);
        if let ast::Expr::Call(c) = f.iter.as_ref()
            && self.callee_item(&c.func) == Some(Item::Builtin(Builtin::LiteralUnroll))
        {
            return self.for_unroll(f, c, out);
        }
        if let ast::Expr::Call(c) = f.iter.as_ref()
            && self.callee_item(&c.func) == Some(Item::Builtin(Builtin::StaticRange))
        {
            return self.for_static_range(f, c, out);
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
            // `tuple(t)` of a tuple is the tuple (numba iterates it the same way).
            let tuple_call = matches!(f.iter.as_ref(), ast::Expr::Call(c)
                if self.callee_item(&c.func) == Some(Item::Builtin(Builtin::TupleType)));
            if tuple_call
                || matches!(
                    f.iter.as_ref(),
                    ast::Expr::Tuple(_) | ast::Expr::Name(_) | ast::Expr::Attribute(_)
                )
            {
                let v = match self.expr(&f.iter) {
                    // `for d in grid_dim:` iterates over the Dim3's three components.
                    v @ Value::Item(
                        Item::Builtin(
                            Builtin::ThreadIdx
                            | Builtin::BlockIdx
                            | Builtin::BlockDim
                            | Builtin::GridDim,
                        ),
                        _,
                    ) => self.value_of(v).map_or(Value::Err, Value::Val),
                    v => v,
                };
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
            if self.s.m.rules().iterate_arrays && self.for_arrays(f, out) {
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
        // cupyx's `jit.range(..., unroll=u)` (§15.4): the one keyword `range` takes.
        let unroll = match args.keywords.as_slice() {
            [kw] if kw.arg.as_ref().is_some_and(|a| a.id.as_str() == "unroll")
                && self.is_cupyx_range(&call.func) =>
            {
                match self.unroll_hint(&kw.value, &args.args) {
                    Some(u) => u,
                    None => return,
                }
            }
            _ => None,
        };
        let keywords =
            if unroll.is_some() || args.keywords.len() == 1 && self.is_cupyx_range(&call.func) {
                0
            } else {
                args.keywords.len()
            };
        if keywords != 0 || args.args.is_empty() || args.args.len() > 3 {
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
        // A run-time step whose loop counts in `int64` only because its arguments mix 32-bit
        // types (`range(thread_idx.x, n, block_size)` with `n: int32`: `uint32` with `int32`
        // promotes to `int64`, §3.7): every value of the loop then lies between `start` and
        // `stop`, both within [-2^31, 2^32), so `i += step` cannot overflow `int64` and the
        // loop needs no trip count. It is written as C writes it, versioned on the step's
        // sign: `if step > 0: i = start; while i < stop: ...; i += step` (and `elif step <
        // 0:` the same loop counting down), without the divisions that count the
        // iterations; the optimizer still computes the trip count of each copy to unroll
        // it, and in the first, where `step` is written as the zero extension of its 32 bits
        // (equal there), proves a counter that starts non-negative stays so (issue 31).
        let fits32 = |v: &Val| match (&v.weak, &v.konst) {
            (Some(_), Some(c)) => c.as_int().is_some_and(|i| i32::try_from(i).is_ok()),
            _ => {
                v.ty.as_scalar()
                    .is_some_and(|s| s.is_integer() && s.bits() <= 32)
            }
        };
        let narrow =
            counted && ty == Scalar::Int64 && fits32(&start) && fits32(&stop) && fits32(&step);
        let ctr = self.new_temp(tty.clone(), span);
        let (cond, value) = if narrow {
            out.push(Stmt {
                kind: StmtKind::Assign(ctr, start_e),
                span,
            });
            let c = self.push(Expr::Local(ctr), tty.clone(), span);
            let stop = copy(self, stop_e);
            let cond = bin(self, BinaryOp::Lt, c, stop);
            (cond, self.push(Expr::Local(ctr), tty.clone(), span))
        } else if counted {
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
        let st = if narrow {
            // `int64(uint32(step))`, which is `step` where `step > 0`.
            let st = copy(self, step_e);
            if step.nonneg {
                st
            } else {
                let u = self.push(Expr::Cast(st), Type::Scalar(Scalar::UInt32), span);
                self.push(Expr::Cast(u), tty.clone(), span)
            }
        } else if counted {
            lit(self, 1)
        } else {
            copy(self, step_e)
        };
        let inc = self.push(Expr::Binary(BinaryOp::AddNoWrap, c, st), tty.clone(), span);
        // An innermost loop counting up by a constant from a start of unknown sign, whose
        // body wraps an index computed from the counter, is versioned on `start >= 0`
        // (§5.1): the two copies are the same loop, and in the first the optimizer proves
        // the counter non-negative and drops the wrap (`data[k]` in spmv_csr).
        let version = step_sign == Some(1)
            && self.s.wraparound
            && !start.nonneg
            && !matches!(self.exprs[start_e], Expr::Literal(_))
            && wraps_counter(&body, ctr, &self.exprs);
        let form = match unroll {
            Some(u) => LoopForm::Unroll(u),
            None if counted => LoopForm::RuntimeStride,
            None => LoopForm::Plain,
        };
        let stmt = Stmt {
            kind: StmtKind::Loop {
                cond,
                body,
                continuing: vec![Stmt {
                    kind: StmtKind::Assign(ctr, inc),
                    span,
                }],
                form,
            },
            span,
        };
        if narrow {
            let down = if counts_up {
                Vec::new()
            } else {
                let Stmt {
                    kind: StmtKind::Loop { body, form, .. },
                    ..
                } = stmt.clone()
                else {
                    unreachable!("built as a loop above")
                };
                let c = self.push(Expr::Local(ctr), tty.clone(), span);
                let stop = copy(self, stop_e);
                let cond = bin(self, BinaryOp::Gt, c, stop);
                let c = self.push(Expr::Local(ctr), tty.clone(), span);
                let st = copy(self, step_e);
                let inc = self.push(Expr::Binary(BinaryOp::AddNoWrap, c, st), tty.clone(), span);
                // A negative run-time step is rare: that copy is not unrolled, unless the
                // program asked for it.
                let form = match form {
                    LoopForm::Unroll(_) => form,
                    _ => LoopForm::Unroll(1),
                };
                let down = Stmt {
                    kind: StmtKind::Loop {
                        cond,
                        body,
                        continuing: vec![Stmt {
                            kind: StmtKind::Assign(ctr, inc),
                            span,
                        }],
                        form,
                    },
                    span,
                };
                let (s, zero) = (copy(self, step_e), lit(self, 0));
                let negative = bin(self, BinaryOp::Lt, s, zero);
                vec![Stmt {
                    kind: StmtKind::If {
                        cond: negative,
                        then: vec![down],
                        otherwise: Vec::new(),
                    },
                    span,
                }]
            };
            let (s, zero) = (copy(self, step_e), lit(self, 0));
            let positive = bin(self, BinaryOp::Gt, s, zero);
            out.push(Stmt {
                kind: StmtKind::If {
                    cond: positive,
                    then: vec![stmt],
                    otherwise: down,
                },
                span,
            });
        } else if version {
            let (s, zero) = (copy(self, start_e), lit(self, 0));
            let cond = bin(self, BinaryOp::Ge, s, zero);
            out.push(Stmt {
                kind: StmtKind::If {
                    cond,
                    then: vec![stmt.clone()],
                    otherwise: vec![stmt],
                },
                span,
            });
        } else {
            out.push(stmt);
        }
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
            && matches!(
                self.callee_item(&c.func),
                Some(Item::Builtin(Builtin::Range))
            )
            && c.arguments.keywords.is_empty()
            && (1..=3).contains(&c.arguments.args.len())
        {
            // `enumerate(range(...))`, `zip(range(...), a)`: the range as (start, stop, step)
            let span = sp(e);
            let i64t = Type::Scalar(Scalar::Int64);
            let mut parts = Vec::new();
            for a in c.arguments.args.iter() {
                let v = self.eval(a)?;
                if !matches!(v.ty, Type::Scalar(s) if s.is_integer()) {
                    return None;
                }
                if v.konst.as_ref().and_then(|k| k.as_int()) == Some(0) && parts.len() == 2 {
                    self.error(Code::E0304, v.span, "`range()` step must not be zero");
                    return None;
                }
                parts.push(self.convert(&v, Scalar::Int64)?);
            }
            let lit = |me: &mut Self, x: i128| {
                me.push(Expr::Literal(Literal::Int(x)), i64t.clone(), span)
            };
            let (start, stop, step) = match parts[..] {
                [stop] => (lit(self, 0), stop, lit(self, 1)),
                [start, stop] => (start, stop, lit(self, 1)),
                [start, stop, step] => (start, stop, step),
                _ => return None,
            };
            let ty = Type::Tuple(vec![i64t.clone(); 3]);
            let t = self.push(Expr::Tuple(vec![start, stop, step]), ty.clone(), span);
            arrays.push(self.val(t, ty, span));
            return Some(ArrayIter::Range(arrays.len() - 1));
        }
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

    /// The number of items of a range held as `(start, stop, step)` in local `t`, as Python
    /// counts them: `ceil((stop - start) / step)`, at least 0.
    fn range_len(&mut self, t: Handle<Local>, ty: &Type, span: Span) -> Handle<Expr> {
        let i64t = Type::Scalar(Scalar::Int64);
        let bool_t = Type::Scalar(Scalar::Bool);
        let part = |me: &mut Self, k: u32| {
            let l = me.push(Expr::Local(t), ty.clone(), span);
            me.push(Expr::Extract(l, k), i64t.clone(), span)
        };
        let lit =
            |me: &mut Self, x: i128| me.push(Expr::Literal(Literal::Int(x)), i64t.clone(), span);
        let bin = |me: &mut Self, op: BinaryOp, a: Handle<Expr>, b: Handle<Expr>| {
            me.push(Expr::Binary(op, a, b), i64t.clone(), span)
        };
        // step > 0: (stop - start + step - 1) // step
        let (start, stop, step) = (part(self, 0), part(self, 1), part(self, 2));
        let d = bin(self, BinaryOp::Sub, stop, start);
        let d = bin(self, BinaryOp::Add, d, step);
        let one = lit(self, 1);
        let d = bin(self, BinaryOp::Sub, d, one);
        let step2 = part(self, 2);
        let up = bin(self, BinaryOp::FloorDiv, d, step2);
        // step < 0: (start - stop - step - 1) // -step
        let (start, stop, step) = (part(self, 0), part(self, 1), part(self, 2));
        let d = bin(self, BinaryOp::Sub, start, stop);
        let d = bin(self, BinaryOp::Sub, d, step);
        let one = lit(self, 1);
        let d = bin(self, BinaryOp::Sub, d, one);
        let zero = lit(self, 0);
        let step2 = part(self, 2);
        let neg = bin(self, BinaryOp::Sub, zero, step2);
        let down = bin(self, BinaryOp::FloorDiv, d, neg);
        let step3 = part(self, 2);
        let zero = lit(self, 0);
        let pos = self.push(
            Expr::Binary(BinaryOp::Gt, step3, zero),
            bool_t.clone(),
            span,
        );
        let n = self.push(
            Expr::Select {
                cond: pos,
                then: up,
                otherwise: down,
            },
            i64t.clone(),
            span,
        );
        let n2 = self.push(self.exprs[n].clone(), i64t.clone(), span);
        let zero = lit(self, 0);
        let empty = self.push(Expr::Binary(BinaryOp::Lt, n, zero), bool_t, span);
        let zero = lit(self, 0);
        self.push(
            Expr::Select {
                cond: empty,
                then: zero,
                otherwise: n2,
            },
            i64t,
            span,
        )
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
            ArrayIter::Range(i) => {
                // start + ctr * step
                let (tmp, ty) = &temps[*i];
                let part = |me: &mut Self, k: u32| {
                    let t = me.push(Expr::Local(*tmp), ty.clone(), span);
                    me.push(Expr::Extract(t, k), i64t.clone(), span)
                };
                let (start, step) = (part(self, 0), part(self, 2));
                let k = self.push(Expr::Local(ctr), i64t.clone(), span);
                let off = self.push(Expr::Binary(BinaryOp::Mul, k, step), i64t.clone(), span);
                let v = self.push(Expr::Binary(BinaryOp::Add, start, off), i64t.clone(), span);
                let v = self.val(v, i64t, span);
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

    /// Whether a `range` call's callee is cupyx's `jit.range` (an attribute of `cupyx.jit`,
    /// or a bare name in a cupyx module, where `from cupyx.jit import range` shadows Python's).
    fn is_cupyx_range(&self, func: &ast::Expr) -> bool {
        match func {
            ast::Expr::Attribute(a) => matches!(
                self.s.m.resolve_static(&a.value),
                Some(Item::Namespace(Namespace::CupyxJit))
            ),
            ast::Expr::Name(_) => self.s.m.rules().range_unroll_by_name,
            _ => false,
        }
    }

    /// The `unroll=` of `jit.range` as a [`LoopForm::Unroll`] count, or `None` for
    /// `unroll=None` (LLVM decides); errors are reported and give `Err` through `None` of
    /// the outer option. As CuPy: `True` unrolls fully, `False` not at all, an `int` `n` in
    /// `1 .. 2**31` that many times, and the bounds must then be constants (E0400); other
    /// values are E0401 (CuPy ignores an out-of-range count with a warning).
    fn unroll_hint(&mut self, e: &ast::Expr, bounds: &[ast::Expr]) -> Option<Option<u32>> {
        let span = sp(e);
        if self.is_none(e) {
            return Some(None);
        }
        let c = self.s.m.eval_const(e).or_else(|| {
            let v = self.expr(e);
            match v {
                Value::Val(v) => v.konst.clone(),
                _ => None,
            }
        });
        let u = match c {
            Some(Const::Bool(true)) => 0,
            Some(Const::Bool(false)) => 1,
            Some(ref k) if k.as_int().is_some() => {
                let n = k.as_int().unwrap_or(0);
                if !(1..1i128 << 31).contains(&n) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0401,
                            span,
                            format!(
                                "`unroll={n}` is not a count of iterations from 1 to 2**31 - 1"
                            ),
                        )
                        .with_note(
                            "write `unroll=True` to unroll fully, `unroll=False` not to unroll",
                        ),
                    );
                    return None;
                }
                n as u32
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0400,
                        span,
                        "`unroll` must be a compile-time `True`, `False`, `None` or `int`",
                    )
                    .with_note("as in CuPy, the unrolling is decided when the kernel is compiled"),
                );
                return None;
            }
        };
        let mut values = Vec::with_capacity(bounds.len());
        for b in bounds {
            let k = self.s.m.eval_const(b).or_else(|| match self.expr(b) {
                Value::Val(Val { konst: Some(k), .. }) => Some(k),
                _ => None,
            });
            values.push(k.as_ref().and_then(|k| k.as_int()));
            if k.is_none() {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0400,
                        sp(b),
                        "`jit.range(..., unroll=...)` needs constant start, stop and step",
                    )
                    .with_note("as in CuPy; leave `unroll` out to let the compiler decide"),
                );
                return None;
            }
        }
        // Unrolling is bounded (docs/semantics.md, `jit.range`): LLVM honours a full-unroll
        // request however long the loop, and 20,000 iterations took minutes to compile. A
        // loop of more than MAX_UNROLL iterations asked to unroll fully, or a count above
        // MAX_UNROLL, is unrolled MAX_UNROLL times (the same iterations either way).
        const MAX_UNROLL: i128 = 1024;
        let trips = match values.as_slice() {
            [Some(stop)] => Some((*stop).max(0)),
            [Some(start), Some(stop)] => Some((stop - start).max(0)),
            [Some(start), Some(stop), Some(step)] if *step != 0 => {
                let span = if *step > 0 {
                    stop - start
                } else {
                    start - stop
                };
                Some(((span + step.abs() - 1) / step.abs()).max(0))
            }
            _ => None,
        };
        let u = match (u, trips) {
            (0, Some(t)) if t > MAX_UNROLL => MAX_UNROLL as u32,
            (n, _) if n as i128 > MAX_UNROLL => MAX_UNROLL as u32,
            (n, _) => n,
        };
        Some(Some(u))
    }

    /// `for x in a:`, `for i, x in enumerate(a):`, `for x, y in zip(a, b):` (nested too) over
    /// 1-D arrays of numbers and tuples of one element type (numba dialect): a counted loop
    /// over `min(len(a), len(b), …)` that loads element `i`. False when the iterable is not
    /// one of these (the caller reports E0304).
    fn for_arrays(&mut self, f: &ast::StmtFor, out: &mut Block) -> bool {
        let span = sp(f);
        let mut arrays = Vec::new();
        let reported = self.diags.len();
        let Some(it) = self.array_iterable(&f.iter, &mut arrays) else {
            // an error inside the iterable (a zero `range` step) is the one to report
            return self.diags.len() > reported;
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
        let mut ranges = Vec::new();
        it.range_slots(&mut ranges);
        for (j, (t, ty)) in temps.iter().enumerate() {
            let len = if ranges.contains(&j) {
                self.range_len(*t, ty, span)
            } else if let Type::Tuple(ts) = ty {
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
                form: LoopForm::Plain,
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

    /// `for i in device.static_range(start, stop, step)` (§4.6.2): `range` over integer
    /// constants, unrolled while checking: the body is checked and emitted once per value,
    /// with `i` bound to that value as a constant (as `literal_unroll` binds its elements).
    fn for_static_range(&mut self, f: &ast::StmtFor, call: &ast::ExprCall, out: &mut Block) {
        let args = &call.arguments;
        if !args.keywords.is_empty() || args.args.is_empty() || args.args.len() > 3 {
            self.error(
                Code::E0107,
                sp(call),
                "`static_range` takes 1 to 3 positional arguments",
            );
            return;
        }
        let mut vals = Vec::new();
        for a in args.args.iter() {
            let v = self.expr(a);
            let Some(v) = self.value_of(v) else { return };
            let int = matches!(v.ty, Type::Scalar(s) if s.is_integer());
            match v.konst.as_ref().and_then(|c| c.as_int()) {
                Some(i) if int => vals.push((i, v.span)),
                _ => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0280,
                            v.span,
                            format!(
                                "`static_range` arguments must be integer constants, found {}",
                                if int {
                                    "a value known only at run time"
                                } else {
                                    "a non-integer"
                                }
                            ),
                        )
                        .with_note(
                            "the loop is unrolled when compiling; use `range` for a run-time bound",
                        ),
                    );
                    return;
                }
            }
        }
        let ((start, _), (stop, _), (step, step_span)) = match vals[..] {
            [stop] => ((0, stop.1), stop, (1, stop.1)),
            [start, stop] => (start, stop, (1, stop.1)),
            [start, stop, step] => (start, stop, step),
            _ => return,
        };
        if step == 0 {
            self.error(
                Code::E0280,
                step_span,
                "`static_range` step must not be zero",
            );
            return;
        }
        // Python's range: the values start, start + step, … before stop.
        let (span_len, by) = if step > 0 {
            (stop.saturating_sub(start), step)
        } else {
            (start.saturating_sub(stop), step.saturating_neg())
        };
        let span_len = span_len.max(0);
        let count = span_len / by + i128::from(span_len % by != 0);
        if count > MAX_STATIC_RANGE {
            self.diags.push(
                Diagnostic::error(
                    Code::E0281,
                    sp(call),
                    format!("`static_range` of {count} iterations; at most {MAX_STATIC_RANGE} are unrolled"),
                )
                .with_note("use `range` for a long loop"),
            );
            return;
        }
        if !f.orelse.is_empty() {
            self.error(
                Code::E0282,
                sp(&f.orelse[0]),
                "`for ... else` over `static_range` is not supported",
            );
            return;
        }
        let ast::Expr::Name(target) = f.target.as_ref() else {
            self.error(
                Code::E0301,
                sp(f.target.as_ref()),
                "the target of a `for` loop over `static_range` must be a single name",
            );
            return;
        };
        if let Some(jump) = loop_jump(&f.body) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0282,
                    jump,
                    "`break` and `continue` are not supported in a loop over `static_range`",
                )
                .with_note(
                    "the body is repeated once per value at compile time; use an `if` instead",
                ),
            );
            return;
        }
        let name = target.id.to_string();
        let saved = self.statics.remove(&name);
        for k in 0..count {
            self.statics
                .insert(name.clone(), Item::Const(Const::Int(start + k * step)));
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
                form: LoopForm::Plain,
            },
            span,
        });
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
    /// `range(...)` inside `enumerate`/`zip`: item `i` is `start + i * step`; the loop value
    /// with this index holds `(start, stop, step)` as int64.
    Range(usize),
}

impl ArrayIter {
    /// The indices of the loop values that are ranges, not arrays or tuples.
    fn range_slots(&self, out: &mut Vec<usize>) {
        match self {
            ArrayIter::Range(i) => out.push(*i),
            ArrayIter::Enumerate(inner) => inner.range_slots(out),
            ArrayIter::Zip(items) => items.iter().for_each(|it| it.range_slots(out)),
            ArrayIter::Array(_) | ArrayIter::Tuple(..) => {}
        }
    }
}

/// The most iterations a `static_range` loop unrolls (E0281): each is a copy of the body.
const MAX_STATIC_RANGE: i128 = 1024;

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

/// Whether `body` (a loop's) has no loop inside it and indexes an array with a wrapping index
/// (§5.1) computed from `ctr` or from a local assigned from it in the body: such a loop is
/// worth a second copy in which its counter is known non-negative.
fn wraps_counter(body: &Block, ctr: Handle<Local>, exprs: &Arena<Expr>) -> bool {
    fn stmts<'a>(b: &'a Block, out: &mut Vec<&'a Stmt>) -> bool {
        for s in b {
            out.push(s);
            let inner_ok = match &s.kind {
                StmtKind::Loop { .. } => false,
                StmtKind::If {
                    then, otherwise, ..
                } => stmts(then, out) && stmts(otherwise, out),
                _ => true,
            };
            if !inner_ok {
                return false;
            }
        }
        true
    }
    let mut all = Vec::new();
    if !stmts(body, &mut all) {
        return false;
    }
    // Whether expression `e` reads one of `locals`.
    let reads = |e: Handle<Expr>, locals: &HashSet<Handle<Local>>| {
        let mut todo = vec![e];
        while let Some(h) = todo.pop() {
            match &exprs[h] {
                Expr::Local(l) if locals.contains(l) => return true,
                other => todo.extend(other.operands()),
            }
        }
        false
    };
    let mut derived = HashSet::from([ctr]);
    loop {
        let before = derived.len();
        for s in &all {
            if let StmtKind::Assign(l, e) = &s.kind
                && !derived.contains(l)
                && reads(*e, &derived)
            {
                derived.insert(*l);
            }
        }
        if derived.len() == before {
            break;
        }
    }
    // The roots: every expression a statement evaluates.
    let mut roots = Vec::new();
    for s in &all {
        match &s.kind {
            StmtKind::Eval(e) | StmtKind::Assign(_, e) => roots.push(*e),
            StmtKind::Store {
                array,
                indices,
                value,
            } => {
                if indices.iter().any(|i| i.wrap && reads(i.value, &derived)) {
                    return true;
                }
                roots.extend([*array, *value]);
            }
            StmtKind::StoreRef { target, value } => roots.extend([*target, *value]),
            StmtKind::If { cond, .. } | StmtKind::Assert { cond, .. } => roots.push(*cond),
            StmtKind::Return(Some(e)) => roots.push(*e),
            StmtKind::Print(pieces) => roots.extend(pieces.iter().filter_map(|p| match p {
                ir::PrintPiece::Value { value, .. } => Some(*value),
                ir::PrintPiece::Text(_) => None,
            })),
            _ => {}
        }
    }
    let mut todo = roots;
    while let Some(h) = todo.pop() {
        let e = &exprs[h];
        let wrapped: Vec<Index> = match e {
            Expr::Load { indices, .. } | Expr::ElementRef { indices, .. } => indices.clone(),
            Expr::View { subs, .. } => subs
                .iter()
                .filter_map(|s| match s {
                    ir::Subscript::Index(i) => Some(*i),
                    ir::Subscript::Slice { .. } => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if wrapped.iter().any(|i| i.wrap && reads(i.value, &derived)) {
            return true;
        }
        todo.extend(e.operands());
    }
    false
}
