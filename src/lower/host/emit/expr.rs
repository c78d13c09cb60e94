//! Lowering of IR expressions to Cranelift values (one per leaf of the expression's type),
//! array element addresses, and the bit-level views of scalars that atomics use.

use super::*;

impl FnCx<'_, '_> {
    pub(super) fn expr(&mut self, h: Handle<Expr>) -> R<Vec<Value>> {
        crate::stack::deep(|| self.expr_inner(h))
    }

    fn expr_inner(&mut self, h: Handle<Expr>) -> R<Vec<Value>> {
        let ty = self.ty(h).clone();
        if let Some(parts) = self.complex_expr(h, &ty)? {
            return Ok(parts);
        }
        let v = match &self.f.exprs[h] {
            Expr::Literal(lit) => {
                let s = ty.as_scalar().ok_or_else(|| err("non-scalar literal"))?;
                match (*lit, s.is_float()) {
                    (Literal::Bool(b), _) => self.b.ins().iconst(ct::I8, i64::from(b)),
                    (Literal::Int(i), false) => self.iconst(s, i),
                    (Literal::Int(i), true) => self.fconst(s, i as f64),
                    (Literal::Float(x), true) => self.fconst(s, x),
                    (Literal::Float(x), false) => self.iconst(s, i128::from(x as i64)),
                    (Literal::Complex(..), _) => {
                        return Err(err("a complex literal of a real type"));
                    }
                }
            }
            Expr::Local(l) => {
                let vars = self.vars[l.index()].clone();
                return Ok(vars.into_iter().map(|v| self.b.use_var(v)).collect());
            }
            Expr::Unary(op, a) => {
                let s = self.scalar_of(*a)?;
                let x = self.scalar(*a)?;
                self.unary(*op, s, x)?
            }
            Expr::Binary(op, a, b)
                if self.kernel.is_some()
                    && let Some(v) = self.contracted(*op, *a, *b)? =>
            {
                v
            }
            Expr::Binary(op, a, b) => {
                let s = self.scalar_of(*a)?;
                let x = self.scalar(*a)?;
                let y = self.scalar(*b)?;
                self.binary(*op, s, x, y)?
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let is_and = matches!(self.f.exprs[h], Expr::And(..));
                let s = ty
                    .as_scalar()
                    .ok_or_else(|| err("and/or on a non-scalar"))?;
                let x = self.scalar(*a)?;
                let truth = self.truthy(x, s);
                let rhs = self.b.create_block();
                let merge = self.b.create_block();
                self.b.append_block_param(merge, reg_type(s));
                let xs = [BlockArg::from(x)];
                if is_and {
                    self.b.ins().brif(truth, rhs, &[], merge, &xs);
                } else {
                    self.b.ins().brif(truth, merge, &xs, rhs, &[]);
                }
                self.b.switch_to_block(rhs);
                let y = self.scalar(*b)?;
                self.b.ins().jump(merge, &[BlockArg::from(y)]);
                self.b.switch_to_block(merge);
                self.b.block_params(merge)[0]
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = self.scalar(*cond)?;
                let (tb, eb, mb) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                for l in leaves(&ty).ok_or_else(|| err("select type"))? {
                    self.b.append_block_param(mb, reg_type(l.scalar));
                }
                self.b.ins().brif(c, tb, &[], eb, &[]);
                self.b.switch_to_block(tb);
                let x: Vec<BlockArg> = self.expr(*then)?.into_iter().map(BlockArg::from).collect();
                self.b.ins().jump(mb, &x);
                self.b.switch_to_block(eb);
                let y: Vec<BlockArg> = self
                    .expr(*otherwise)?
                    .into_iter()
                    .map(BlockArg::from)
                    .collect();
                self.b.ins().jump(mb, &y);
                self.b.switch_to_block(mb);
                return Ok(self.b.block_params(mb).to_vec());
            }
            Expr::Cast(a) => {
                let from = self.scalar_of(*a)?;
                let to = ty.as_scalar().ok_or_else(|| err("cast to a non-scalar"))?;
                let x = self.scalar(*a)?;
                self.cast(x, from, to)?
            }
            Expr::Call(callee, args) => {
                let mut vals = vec![self.error_word.ok_or_else(|| err("error word"))?];
                for a in args {
                    vals.extend(self.expr(*a)?);
                }
                let id = self.ids[callee.index()];
                let fr = self.m.declare_func_in_func(id, self.b.func);
                let c = self.b.ins().call(fr, &vals);
                let results = self.b.inst_results(c).to_vec();
                if self.can_raise {
                    self.propagate_raise()?;
                }
                return Ok(results);
            }
            Expr::Intrinsic(op, args) if self.kernel.is_some() && self.is_device_op(*op) => {
                return self.device_intrinsic(h, *op, args, &ty);
            }
            Expr::StaticArray { shape, .. }
                if self.kernel.is_some()
                    && ty.as_array().map(|a| a.space) == Some(crate::types::MemSpace::Shared) =>
            {
                return self.shared_array(h, shape, &ty);
            }
            Expr::DynamicShared if self.kernel.is_some() => return self.dynamic_shared(),
            Expr::ConstArray(c) if self.kernel.is_some() => return self.const_array(c),
            Expr::Intrinsic(op, args) => {
                let mut vals = Vec::new();
                let mut scalars = Vec::new();
                for a in args {
                    scalars.push(self.scalar_of(*a)?);
                    vals.push(self.scalar(*a)?);
                }
                self.intrinsic(*op, &scalars, &vals, &ty)?
            }
            Expr::Tuple(items) => {
                let mut out = Vec::new();
                for i in items {
                    out.extend(self.expr(*i)?);
                }
                return Ok(out);
            }
            Expr::Load { array, indices }
                if self
                    .ty(*array)
                    .as_array()
                    .is_some_and(|a| a.dtype.atomic_scalar().is_none()) =>
            {
                // A whole record (or vector) element, leaf by leaf; zero when out of range.
                let span = self.f.exprs.span(h);
                let (addr, ok, code, _) = self.element(*array, indices, span)?;
                let ls = leaves(&ty).ok_or_else(|| err(format!("a load of {ty}")))?;
                let (inb, oob, merge) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                for l in &ls {
                    self.b.append_block_param(merge, reg_type(l.scalar));
                }
                self.b.ins().brif(ok, inb, &[], oob, &[]);
                self.b.switch_to_block(inb);
                let vals: Vec<BlockArg> = self
                    .load_leaves(addr, &ty)?
                    .into_iter()
                    .map(BlockArg::from)
                    .collect();
                self.b.ins().jump(merge, &vals);
                self.b.switch_to_block(oob);
                self.record_error(code)?;
                let zs: Vec<BlockArg> = ls
                    .iter()
                    .map(|l| BlockArg::from(self.zero(reg_type(l.scalar))))
                    .collect();
                self.b.ins().jump(merge, &zs);
                self.b.switch_to_block(merge);
                return Ok(self.b.block_params(merge).to_vec());
            }
            Expr::Load { array, indices } => {
                let span = self.f.exprs.span(h);
                let (addr, ok, code, dtype) = self.element(*array, indices, span)?;
                let space = self.ty(*array).as_array().map(|a| a.space);
                let (inb, oob, merge) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                // A complex element is its two parts, one after the other.
                let parts = if dtype.is_complex() { 2 } else { 1 };
                let part = dtype.component();
                for _ in 0..parts {
                    self.b.append_block_param(merge, reg_type(part));
                }
                self.b.ins().brif(ok, inb, &[], oob, &[]);
                self.b.switch_to_block(inb);
                if let Some(space) = space {
                    self.race_check(space, addr, dtype.size(), false, code)?;
                }
                let mut vals = Vec::new();
                for k in 0..parts {
                    let off = (k * part.size()) as i32;
                    let raw = self.b.ins().load(mem_type(part), flags(), addr, off);
                    let v = from_memory(self.m, &mut self.b, &mut self.imports, part, raw)?;
                    vals.push(BlockArg::from(v));
                }
                self.b.ins().jump(merge, &vals);
                self.b.switch_to_block(oob);
                // An out-of-range load reads zero, after recording the error.
                self.record_error(code)?;
                let z = self.zero(reg_type(part));
                let zs = vec![BlockArg::from(z); parts as usize];
                self.b.ins().jump(merge, &zs);
                self.b.switch_to_block(merge);
                return Ok(self.b.block_params(merge).to_vec());
            }
            Expr::ArrayProp(a, p) => {
                let at = self
                    .ty(*a)
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("property of a non-array"))?;
                let d = self.expr(*a)?;
                let n = usize::from(at.ndim);
                match p {
                    ArrayProp::Shape(k) => d[1 + usize::from(*k)],
                    ArrayProp::Stride(k) => {
                        let es = elem_size(&at.dtype);
                        self.b
                            .ins()
                            .imul_imm_s(d[1 + n + usize::from(*k)], es as i64)
                    }
                    // Host pointers are plain addresses.
                    ArrayProp::Address => d[0],
                    ArrayProp::Size => {
                        let mut acc = self.b.ins().iconst(ct::I64, 1);
                        for k in 0..n {
                            acc = self.b.ins().imul(acc, d[1 + k]);
                        }
                        acc
                    }
                }
            }
            Expr::StaticArray { shape, align } => {
                // A local array: a stack slot of the function (one per call site, as on the
                // device), zeroed at each evaluation so no stale data is ever read.
                let at = ty
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("local array type"))?;
                let (elem, elem_align) = crate::lower::host::leaf::elem_layout(&at.dtype);
                let count = shape
                    .iter()
                    .try_fold(1u64, |acc, d| acc.checked_mul(*d))
                    .ok_or_else(|| err("local array too large"))?;
                let bytes = u32::try_from(count.saturating_mul(elem))
                    .map_err(|_| err("local array too large for the host stack"))?;
                let align = (*align).max(elem_align).max(1);
                let shift = align.trailing_zeros().min(12) as u8;
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    bytes.max(1),
                    shift,
                ));
                let ptr = self.b.ins().stack_addr(ct::I64, slot, 0);
                let zero = self.b.ins().iconst(ct::I8, 0);
                let size = self.b.ins().iconst(ct::I64, i64::from(bytes));
                let cfg = self.m.isa().frontend_config();
                self.b.call_memset(cfg, ptr, zero, size);
                let n = shape.len();
                let mut strides = vec![1u64; n];
                match at.layout {
                    crate::types::Layout::F => {
                        for k in 1..n {
                            strides[k] = strides[k - 1] * shape[k - 1];
                        }
                    }
                    _ => {
                        for k in (0..n.saturating_sub(1)).rev() {
                            strides[k] = strides[k + 1] * shape[k + 1];
                        }
                    }
                }
                let mut out = vec![ptr];
                for d in shape.iter().chain(&strides) {
                    out.push(self.b.ins().iconst(ct::I64, *d as i64));
                }
                return Ok(out);
            }
            Expr::ElementRef { array, indices } => {
                // Out of range: the error is recorded and the atomic acts on a scratch word
                // of the function instead, as on the device in bounds-checking mode.
                let span = self.f.exprs.span(h);
                let (addr, ok, code, _) = self.element(*array, indices, span)?;
                let word = self.error_word.ok_or_else(|| err("error word"))?;
                let old = self.b.ins().load(ct::I64, flags(), word, 0);
                let code = self.b.ins().iconst(ct::I64, code);
                let first = self.b.ins().icmp_imm_s(IntCC::Equal, old, 0);
                let new = self.b.ins().select(first, code, old);
                let new = self.b.ins().select(ok, old, new);
                self.b.ins().store(flags(), new, word, 0);
                let scratch = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    16,
                    4,
                ));
                let scratch = self.b.ins().stack_addr(ct::I64, scratch, 0);
                self.b.ins().select(ok, addr, scratch)
            }
            Expr::FieldRef(base, k) => {
                // The address of a field of the record a reference points to.
                let st = self.struct_of_ref(*base)?;
                let off = crate::abi::field_offsets(&Type::Struct(st))
                    .get(*k as usize)
                    .copied()
                    .ok_or_else(|| err("field of a record reference"))?;
                let addr = self.scalar(*base)?;
                self.b.ins().iadd_imm_s(addr, off as i64)
            }
            Expr::FieldArray(base, k) => {
                // A sub-array field as a C-contiguous view of the record's bytes (§5.16).
                let st = self.struct_of_ref(*base)?;
                let off = crate::abi::field_offsets(&Type::Struct(st.clone()))
                    .get(*k as usize)
                    .copied()
                    .ok_or_else(|| err("sub-array field of a record reference"))?;
                let shape = st.subarray_shape(*k as usize).to_vec();
                let addr = self.scalar(*base)?;
                let mut out = vec![self.b.ins().iadd_imm_s(addr, off as i64)];
                for n in &shape {
                    out.push(self.b.ins().iconst(ct::I64, *n as i64));
                }
                for d in 0..shape.len() {
                    let stride: u64 = shape[d + 1..].iter().product();
                    out.push(self.b.ins().iconst(ct::I64, stride as i64));
                }
                return Ok(out);
            }
            Expr::Deref(r) => {
                let addr = self.scalar(*r)?;
                return self.load_leaves(addr, &ty);
            }
            Expr::Atomic {
                op, target, args, ..
            } => {
                let dtype = match self.ty(*target) {
                    Type::Ref { dtype, .. } => *dtype,
                    _ => return Err(err("atomic on a non-reference")),
                };
                let ptr = self.scalar(*target)?;
                if dtype == Scalar::Complex64 {
                    let mut vals = Vec::new();
                    for a in args {
                        vals.push(self.parts(*a)?);
                    }
                    return self.complex_atomic(*op, ptr, &vals);
                }
                if dtype == Scalar::Complex128 {
                    let mut vals = Vec::new();
                    for a in args {
                        vals.push(self.parts(*a)?);
                    }
                    return self.wide_complex_atomic(*op, ptr, &vals);
                }
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.scalar(*a)?);
                }
                return self.atomic(*op, dtype, ptr, &vals);
            }
            Expr::View { array, subs } => {
                let span = self.f.exprs.span(h);
                return self.view(*array, subs, span);
            }
            Expr::Reshape {
                array,
                shape,
                fortran,
            } => {
                let span = self.f.exprs.span(h);
                return self.reshape(*array, shape, *fortran, span);
            }
            Expr::Reinterpret(a) => {
                // `a.view(dtype)` of a 1-D array: the same bytes, the extent scaled by the
                // element sizes, unit stride (as `lower::ptx` builds it).
                let from = self
                    .ty(*a)
                    .as_array()
                    .map(|at| elem_size(&at.dtype))
                    .ok_or_else(|| err("view of a non-array"))?;
                let to = ty
                    .as_array()
                    .map(|at| elem_size(&at.dtype))
                    .ok_or_else(|| err("view to a non-array"))?;
                let d = self.expr(*a)?;
                let bytes = self.b.ins().imul_imm_s(d[1], from as i64);
                let n = self.b.ins().udiv_imm_s(bytes, to.max(1) as i64);
                let one = self.b.ins().iconst(ct::I64, 1);
                return Ok(vec![d[0], n, one]);
            }
            Expr::Extract(a, i) => {
                let at = self.ty(*a).clone();
                let range = element_leaves(&at, *i).ok_or_else(|| err("extract"))?;
                let vals = self.expr(*a)?;
                return vals
                    .get(range)
                    .map(<[Value]>::to_vec)
                    .ok_or_else(|| err("extract out of range"));
            }
            other => {
                return Err(err(format!(
                    "{other:?} reached the host back end (the host check should have refused it)"
                )));
            }
        };
        Ok(vec![v])
    }

    /// The address of `array[indices]`, whether every index is in range (after Python's
    /// wrap of negative indices), the error code of the access (`line << 32 | column`), and
    /// the element type. The host always checks: an out-of-range access must not touch
    /// memory.
    pub(super) fn element(
        &mut self,
        array: Handle<Expr>,
        indices: &[Index],
        span: crate::diag::Span,
    ) -> R<(Value, Value, i64, Scalar)> {
        let at = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("indexing a non-array"))?;
        // A record's (or vector's) element: its place only; loads and stores go through
        // `element_ref` (the dtype returned is then a placeholder).
        let dtype = at.dtype.atomic_scalar().unwrap_or(Scalar::UInt8);
        let size = elem_size(&at.dtype);
        let n = usize::from(at.ndim);
        let d = self.expr(array)?;
        let mut offset = self.b.ins().iconst(ct::I64, 0);
        let mut ok = self.b.ins().iconst(ct::I8, 1);
        for (k, ix) in indices.iter().enumerate() {
            let s = self.scalar_of(ix.value)?;
            let v = self.scalar(ix.value)?;
            let mut i = match reg_type(s) {
                ct::I64 => v,
                _ if s.is_signed() => self.b.ins().sextend(ct::I64, v),
                _ => self.b.ins().uextend(ct::I64, v),
            };
            let shape = d[1 + k];
            if ix.wrap && s.is_signed() {
                let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, i, 0);
                let w = self.b.ins().iadd(i, shape);
                i = self.b.ins().select(neg, w, i);
            }
            let inb = self.b.ins().icmp(IntCC::UnsignedLessThan, i, shape);
            ok = self.b.ins().band(ok, inb);
            let term = self.b.ins().imul(i, d[1 + n + k]);
            offset = self.b.ins().iadd(offset, term);
        }
        let bytes = self.b.ins().imul_imm_s(offset, size as i64);
        let addr = self.b.ins().iadd(d[0], bytes);
        let (line, col) = self.program.file.line_col(span.start);
        Ok((addr, ok, ((line as i64) << 32) | col as i64, dtype))
    }

    /// An index as `i64`, after Python's wrap of a negative index by the extent `n`.
    fn index_i64(&mut self, ix: &Index, n: Value) -> R<Value> {
        let s = self.scalar_of(ix.value)?;
        let v = self.scalar(ix.value)?;
        let mut i = match reg_type(s) {
            ct::I64 => v,
            _ if s.is_signed() => self.b.ins().sextend(ct::I64, v),
            _ => self.b.ins().uextend(ct::I64, v),
        };
        if ix.wrap && s.is_signed() {
            let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, i, 0);
            let w = self.b.ins().iadd(i, n);
            i = self.b.ins().select(neg, w, i);
        }
        Ok(i)
    }

    /// Python's slice rules (`slice.indices`) over an extent `n` for a constant step, as
    /// the device computes them (`lower::ptx::emit::views`): negative bounds wrap once, then
    /// clamp to `[0, n]` for a positive step and to `[-1, n - 1]` for a negative one;
    /// missing bounds are the ends in the step's direction. Returns (first index, length).
    fn slice_bounds(
        &mut self,
        start: Option<Handle<Expr>>,
        stop: Option<Handle<Expr>>,
        step: i64,
        n: Value,
    ) -> R<(Value, Value)> {
        let zero = self.b.ins().iconst(ct::I64, 0);
        let (lower, upper) = if step > 0 {
            (zero, n)
        } else {
            let m1 = self.b.ins().iconst(ct::I64, -1);
            (m1, self.b.ins().iadd_imm_s(n, -1))
        };
        let bound = |cx: &mut Self, b: Option<Handle<Expr>>, default: Value| -> R<Value> {
            let Some(b) = b else { return Ok(default) };
            let s = cx.scalar_of(b)?;
            let v = cx.scalar(b)?;
            let x = match reg_type(s) {
                ct::I64 => v,
                _ if s.is_signed() => cx.b.ins().sextend(ct::I64, v),
                _ => cx.b.ins().uextend(ct::I64, v),
            };
            let neg = cx.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, 0);
            let wrapped = cx.b.ins().iadd(x, n);
            let x = cx.b.ins().select(neg, wrapped, x);
            let low = cx.b.ins().icmp(IntCC::SignedLessThan, x, lower);
            let x = cx.b.ins().select(low, lower, x);
            let high = cx.b.ins().icmp(IntCC::SignedGreaterThan, x, upper);
            Ok(cx.b.ins().select(high, upper, x))
        };
        let (first_default, stop_default) = if step > 0 {
            (lower, upper)
        } else {
            (upper, lower)
        };
        let s = bound(self, start, first_default)?;
        let e = bound(self, stop, stop_default)?;
        let diff = if step > 0 {
            self.b.ins().isub(e, s)
        } else {
            self.b.ins().isub(s, e)
        };
        let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, diff, 0);
        let diff = self.b.ins().select(neg, zero, diff);
        let by = step.unsigned_abs() as i64;
        let len = self.b.ins().iadd_imm_s(diff, by - 1);
        let len = self.b.ins().udiv_imm_s(len, by);
        Ok((s, len))
    }

    /// `array[subs]` (§5.12): a new descriptor. Integer subscripts move the data pointer
    /// and drop their dimension; slices move it to their first element and keep the
    /// dimension with the stride times the step. As every host access, an integer
    /// subscript out of range is recorded (the first error of the call) and the view is
    /// empty (every extent 0), so nothing is accessed through it.
    fn view(
        &mut self,
        array: Handle<Expr>,
        subs: &[crate::ir::Subscript],
        span: crate::diag::Span,
    ) -> R<Vec<Value>> {
        use crate::ir::Subscript;
        let at = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("view of a non-array"))?;
        let esize = elem_size(&at.dtype);
        let n = usize::from(at.ndim);
        let d = self.expr(array)?;
        let mut offset = self.b.ins().iconst(ct::I64, 0);
        let mut ok = self.b.ins().iconst(ct::I8, 1);
        let mut shape = Vec::new();
        let mut strides = Vec::new();
        let mut checked = false;
        for (k, sub) in subs.iter().enumerate() {
            let (ext, stride) = (d[1 + k], d[1 + n + k]);
            let first = match sub {
                Subscript::Index(ix) => {
                    checked = true;
                    let i = self.index_i64(ix, ext)?;
                    let inb = self.b.ins().icmp(IntCC::UnsignedLessThan, i, ext);
                    ok = self.b.ins().band(ok, inb);
                    i
                }
                Subscript::Slice { start, stop, step } => {
                    let (first, len) = self.slice_bounds(*start, *stop, *step, ext)?;
                    shape.push(len);
                    strides.push(if *step == 1 {
                        stride
                    } else {
                        self.b.ins().imul_imm_s(stride, *step)
                    });
                    first
                }
            };
            let term = self.b.ins().imul(first, stride);
            offset = self.b.ins().iadd(offset, term);
        }
        if checked {
            let (bad, cont) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(ok, cont, &[], bad, &[]);
            self.b.switch_to_block(bad);
            let (line, col) = self.program.file.line_col(span.start);
            self.record_error(((line as i64) << 32) | col as i64)?;
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(cont);
            let zero = self.b.ins().iconst(ct::I64, 0);
            for e in shape.iter_mut() {
                *e = self.b.ins().select(ok, *e, zero);
            }
        }
        let bytes = self.b.ins().imul_imm_s(offset, esize as i64);
        let data = self.b.ins().iadd(d[0], bytes);
        Ok(std::iter::once(data).chain(shape).chain(strides).collect())
    }

    /// `array.reshape(shape)` (§5.13), as the device computes it (`lower::ptx::emit::views`):
    /// the array must be contiguous in the requested order (extents of 1 may have any
    /// stride, an empty array any strides) and the new shape must have as many elements (the
    /// one `-1` extent, literal or given at run time, is the quotient). Where the device
    /// traps, the CPU records the error of the reshape's position (a `ValueError`, reported
    /// as a raise at that line) and gives an empty view, so nothing is accessed through it.
    /// The new strides are those of a contiguous array of the new shape.
    fn reshape(
        &mut self,
        array: Handle<Expr>,
        new_shape: &[Option<Handle<Expr>>],
        fortran: bool,
        span: crate::diag::Span,
    ) -> R<Vec<Value>> {
        let from = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("reshape of a non-array"))?;
        let n = usize::from(from.ndim);
        let d = self.expr(array)?;
        let mut ok = self.b.ins().iconst(ct::I8, 1);
        let order: Vec<usize> = if fortran {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        let mut size = self.b.ins().iconst(ct::I64, 1);
        for k in order {
            let (ext, stride) = (d[1 + k], d[1 + n + k]);
            let unit = self.b.ins().icmp_imm_s(IntCC::Equal, ext, 1);
            let packed = self.b.ins().icmp(IntCC::Equal, stride, size);
            let fine = self.b.ins().bor(unit, packed);
            ok = self.b.ins().band(ok, fine);
            size = self.b.ins().imul(size, ext);
        }
        let empty = self.b.ins().icmp_imm_s(IntCC::Equal, size, 0);
        ok = self.b.ins().bor(ok, empty);
        let one = self.b.ins().iconst(ct::I64, 1);
        let zero = self.b.ins().iconst(ct::I64, 0);
        let mut known = one;
        let mut holes = zero;
        // Each extent: (value, whether it is the hole).
        let mut dims: Vec<(Value, Value)> = Vec::new();
        for e in new_shape {
            match e {
                Some(h) => {
                    let s = self.scalar_of(*h)?;
                    let v = self.scalar(*h)?;
                    let v = match reg_type(s) {
                        ct::I64 => v,
                        _ if s.is_signed() => self.b.ins().sextend(ct::I64, v),
                        _ => self.b.ins().uextend(ct::I64, v),
                    };
                    let hole = self.b.ins().icmp_imm_s(IntCC::Equal, v, -1);
                    let valid = self
                        .b
                        .ins()
                        .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, v, -1);
                    ok = self.b.ins().band(ok, valid);
                    let factor = self.b.ins().select(hole, one, v);
                    known = self.b.ins().imul(known, factor);
                    let h64 = self.b.ins().uextend(ct::I64, hole);
                    holes = self.b.ins().iadd(holes, h64);
                    dims.push((v, hole));
                }
                None => {
                    holes = self.b.ins().iadd_imm_s(holes, 1);
                    let m1 = self.b.ins().iconst(ct::I64, -1);
                    let tru = self.b.ins().iconst(ct::I8, 1);
                    dims.push((m1, tru));
                }
            }
        }
        let at_most_one = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThanOrEqual, holes, 1);
        ok = self.b.ins().band(ok, at_most_one);
        let has_hole = self.b.ins().icmp_imm_s(IntCC::Equal, holes, 1);
        let zero_known = self.b.ins().icmp_imm_s(IntCC::Equal, known, 0);
        let divisor = self.b.ins().select(zero_known, one, known);
        let inferred = self.b.ins().udiv(size, divisor);
        let total = self.b.ins().imul(inferred, known);
        let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, known, 0);
        let fills = self.b.ins().icmp(IntCC::Equal, total, size);
        let hole_ok = self.b.ins().band(nz, fills);
        let exact = self.b.ins().icmp(IntCC::Equal, known, size);
        let fits = self.b.ins().select(has_hole, hole_ok, exact);
        ok = self.b.ins().band(ok, fits);
        let mut shape: Vec<Value> = Vec::new();
        for (v, hole) in dims {
            shape.push(self.b.ins().select(hole, inferred, v));
        }
        let (bad, cont) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(ok, cont, &[], bad, &[]);
        self.b.switch_to_block(bad);
        let (line, col) = self.program.file.line_col(span.start);
        self.record_error((crate::ir::RAISE_BIT | ((line as u64) << 32) | col as u64) as i64)?;
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
        for e in shape.iter_mut() {
            *e = self.b.ins().select(ok, *e, zero);
        }
        let m = shape.len();
        let mut strides = vec![one; m];
        let idx: Vec<usize> = if fortran {
            (0..m).collect()
        } else {
            (0..m).rev().collect()
        };
        let mut acc = one;
        for k in idx {
            strides[k] = acc;
            acc = self.b.ins().imul(acc, shape[k]);
        }
        Ok(std::iter::once(d[0]).chain(shape).chain(strides).collect())
    }

    /// Register value → integer bits of its memory form.
    pub(super) fn bits_of(&mut self, s: Scalar, v: Value) -> R<Value> {
        let raw = to_memory(self.m, &mut self.b, &mut self.imports, s, v)?;
        Ok(match s {
            Scalar::Float32 => self.b.ins().bitcast(ct::I32, flags(), raw),
            Scalar::Float64 => self.b.ins().bitcast(ct::I64, flags(), raw),
            _ => raw,
        })
    }

    /// Integer bits of a memory form → register value.
    pub(super) fn value_of_bits(&mut self, s: Scalar, bits: Value) -> R<Value> {
        let raw = match s {
            Scalar::Float32 => self.b.ins().bitcast(ct::F32, flags(), bits),
            Scalar::Float64 => self.b.ins().bitcast(ct::F64, flags(), bits),
            _ => bits,
        };
        from_memory(self.m, &mut self.b, &mut self.imports, s, raw)
    }
}

/// The bytes an element of an array of `dtype` takes (its C++ layout's size: a record's
/// with its padding).
pub(super) fn elem_size(dtype: &crate::types::DType) -> u64 {
    crate::lower::host::leaf::elem_layout(dtype).0
}

impl FnCx<'_, '_> {
    /// The record type a `StructRef` operand refers to.
    fn struct_of_ref(&self, r: Handle<Expr>) -> R<Box<crate::types::StructType>> {
        match self.ty(r) {
            Type::StructRef { st, .. } => Ok(st.clone()),
            other => Err(err(format!(
                "a field of {other}, not of a record reference"
            ))),
        }
    }

    /// A value of type `ty` read from memory at `addr`, leaf by leaf at its C++ offsets
    /// (`Deref`: a plain load).
    pub(super) fn load_leaves(&mut self, addr: Value, ty: &Type) -> R<Vec<Value>> {
        let ls = leaves(ty).ok_or_else(|| err(format!("a load of {ty}")))?;
        let mut out = Vec::new();
        for l in ls {
            let raw = self
                .b
                .ins()
                .load(mem_type(l.scalar), flags(), addr, l.offset as i32);
            out.push(from_memory(
                self.m,
                &mut self.b,
                &mut self.imports,
                l.scalar,
                raw,
            )?);
        }
        Ok(out)
    }

    /// Stores `vals`, a value of type `ty`, at `addr`, leaf by leaf (`StoreRef`).
    pub(super) fn store_leaves(&mut self, addr: Value, ty: &Type, vals: &[Value]) -> R<()> {
        let ls = leaves(ty).ok_or_else(|| err(format!("a store of {ty}")))?;
        if ls.len() != vals.len() {
            return Err(err("a store of the wrong number of leaves"));
        }
        for (l, v) in ls.iter().zip(vals) {
            let raw = to_memory(self.m, &mut self.b, &mut self.imports, l.scalar, *v)?;
            self.b.ins().store(flags(), raw, addr, l.offset as i32);
        }
        Ok(())
    }
}
