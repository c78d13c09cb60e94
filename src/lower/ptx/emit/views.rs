//! Lowering of array views (`a[1:3, ::2]`, `a[:, 0]`, the row `a[i]`) and `reshape`: both
//! only compute a new descriptor (data pointer, shape, strides in elements) from the old
//! one; neither touches the elements.

use super::*;
use crate::ir::Subscript;

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// An index as `i64`, after Python's wrap of a negative index by the extent `n`.
    fn index_i64(&mut self, ix: &Index, n: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let i64t = self.e.ctx.i64_type();
        let s = self.scalar(ix.value)?;
        let v = self.value(ix.value)?.into_int_value();
        let i = self
            .b()
            .build_int_cast_sign_flag(v, i64t, s.is_signed(), "")?;
        if !(ix.wrap && s.is_signed()) {
            return Ok(i);
        }
        let neg = self
            .b()
            .build_int_compare(IntPredicate::SLT, i, i64t.const_zero(), "")?;
        let wrapped = self.b().build_int_add(i, n, "")?;
        Ok(self.b().build_select(neg, wrapped, i, "")?.into_int_value())
    }

    /// Python's slice rules (`slice.indices`) over an extent `n` for a constant step:
    /// negative bounds wrap once, then clamp to `[0, n]` for a positive step and to
    /// `[-1, n - 1]` for a negative one; missing bounds are the ends in the step's direction.
    /// Returns (first index, length).
    fn slice_bounds(
        &mut self,
        start: Option<Handle<Expr>>,
        stop: Option<Handle<Expr>>,
        step: i64,
        n: IntValue<'ctx>,
    ) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let i64t = self.e.ctx.i64_type();
        let zero = i64t.const_zero();
        let minus1 = i64t.const_all_ones();
        let (lower, upper) = if step > 0 {
            (zero, n)
        } else {
            (
                minus1,
                self.b().build_int_sub(n, i64t.const_int(1, false), "")?,
            )
        };
        let bound = |cx: &mut Self,
                     b: Option<Handle<Expr>>,
                     default: IntValue<'ctx>|
         -> R<IntValue<'ctx>> {
            let Some(b) = b else { return Ok(default) };
            let x = cx.value(b)?.into_int_value();
            let b = cx.b();
            let neg = b.build_int_compare(IntPredicate::SLT, x, zero, "")?;
            let wrapped = b.build_int_add(x, n, "")?;
            let x = b.build_select(neg, wrapped, x, "")?.into_int_value();
            let low = b.build_int_compare(IntPredicate::SLT, x, lower, "")?;
            let x = b.build_select(low, lower, x, "")?.into_int_value();
            let high = b.build_int_compare(IntPredicate::SGT, x, upper, "")?;
            Ok(b.build_select(high, upper, x, "")?.into_int_value())
        };
        let (first_default, stop_default) = if step > 0 {
            (lower, upper)
        } else {
            (upper, lower)
        };
        let s = bound(self, start, first_default)?;
        let e = bound(self, stop, stop_default)?;
        let b = self.b();
        // The distance walked in the step's direction, if positive.
        let diff = if step > 0 {
            b.build_int_sub(e, s, "")?
        } else {
            b.build_int_sub(s, e, "")?
        };
        let neg = b.build_int_compare(IntPredicate::SLT, diff, zero, "")?;
        let diff = b.build_select(neg, zero, diff, "")?.into_int_value();
        let by = step.unsigned_abs();
        let len = b.build_int_add(diff, i64t.const_int(by - 1, false), "")?;
        let len = b.build_int_unsigned_div(len, i64t.const_int(by, false), "")?;
        Ok((s, len))
    }

    /// `array[subs]`: integer subscripts move the data pointer and drop their dimension;
    /// slices move it to their first element and keep the dimension with the stride times
    /// the step. In bounds-checking mode an integer subscript out of range is recorded (as a
    /// load's is) and the view is empty, so nothing is accessed through it.
    pub(super) fn view(
        &mut self,
        array: Handle<Expr>,
        subs: &[Subscript],
        ty: &Type,
        span: crate::diag::Span,
    ) -> R<BasicValueEnum<'ctx>> {
        let from = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("view of a non-array"))?;
        let to = ty
            .as_array()
            .cloned()
            .ok_or_else(|| err("view to a non-array"))?;
        let desc = self.value(array)?.into_struct_value();
        let i64t = self.e.ctx.i64_type();
        let mut offset = i64t.const_zero();
        let mut shape = Vec::new();
        let mut strides = Vec::new();
        let checked = self.e.program.options.bounds_check
            && subs.iter().any(|s| matches!(s, Subscript::Index(_)));
        let mut ok = self.e.ctx.bool_type().const_int(1, false);
        for (d, sub) in subs.iter().enumerate() {
            let d = d as u8;
            let n = self.dim(desc, 1, d)?;
            let stride = self.stride(desc, &from, d)?;
            let first = match sub {
                Subscript::Index(ix) => {
                    let i = self.index_i64(ix, n)?;
                    if checked {
                        let inb = self.b().build_int_compare(IntPredicate::ULT, i, n, "")?;
                        ok = self.b().build_and(ok, inb, "")?;
                    }
                    i
                }
                Subscript::Slice { start, stop, step } => {
                    let (first, len) = self.slice_bounds(*start, *stop, *step, n)?;
                    shape.push(len);
                    let s = if *step == 1 {
                        stride
                    } else {
                        self.b()
                            .build_int_mul(stride, i64t.const_int(*step as u64, true), "")?
                    };
                    strides.push(s);
                    first
                }
            };
            let term = self.b().build_int_mul(first, stride, "")?;
            offset = self.b().build_int_add(offset, term, "")?;
        }
        if checked {
            let (line, col) = self.e.program.file.line_col(span.start);
            let check = BoundsCheck {
                ok,
                code: (line as u64) << 32 | col as u64,
                array: self.array_name(array),
                indices: Vec::new(),
                shape: Vec::new(),
            };
            if let Some(cont) = self.guard(Some(check))? {
                self.b().build_unconditional_branch(cont)?;
                self.b().position_at_end(cont);
            }
            let zero = i64t.const_zero();
            for n in shape.iter_mut() {
                *n = self.b().build_select(ok, *n, zero, "")?.into_int_value();
            }
        }
        let data = self
            .b()
            .build_extract_value(desc, 0, "")?
            .into_pointer_value();
        let et = self.e.mem_type(&from.dtype.ty());
        // SAFETY of the GEP: an element offset within (or one past) the array; no
        // `inbounds` is claimed.
        let data = unsafe { self.b().build_gep(et, data, &[offset], "")? };
        self.descriptor(&to, data, &shape, &strides)
    }

    /// `array.reshape(shape)`: checks at run time that the array is contiguous in the
    /// requested order (extents of 1 may have any stride, an empty array any strides) and
    /// that the new shape has as many elements (the one `-1` extent, literal or found at run
    /// time, is the quotient); traps otherwise. The new strides are those of a contiguous array of the new shape.
    pub(super) fn reshape(
        &mut self,
        array: Handle<Expr>,
        new_shape: &[Option<Handle<Expr>>],
        fortran: bool,
        ty: &Type,
    ) -> R<BasicValueEnum<'ctx>> {
        let from = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("reshape of a non-array"))?;
        let to = ty
            .as_array()
            .cloned()
            .ok_or_else(|| err("reshape to a non-array"))?;
        let desc = self.value(array)?.into_struct_value();
        let ctx = self.e.ctx;
        let i64t = ctx.i64_type();
        let one = i64t.const_int(1, false);
        let zero = i64t.const_zero();
        let mut ok = ctx.bool_type().const_int(1, false);
        let order: Vec<u8> = if fortran {
            (0..from.ndim).collect()
        } else {
            (0..from.ndim).rev().collect()
        };
        let mut size = one;
        for d in order {
            let n = self.dim(desc, 1, d)?;
            let s = self.stride(desc, &from, d)?;
            let b = self.b();
            let unit = b.build_int_compare(IntPredicate::EQ, n, one, "")?;
            let packed = b.build_int_compare(IntPredicate::EQ, s, size, "")?;
            let fine = b.build_or(unit, packed, "")?;
            ok = b.build_and(ok, fine, "")?;
            size = b.build_int_mul(size, n, "")?;
        }
        let empty = self
            .b()
            .build_int_compare(IntPredicate::EQ, size, zero, "")?;
        ok = self.b().build_or(ok, empty, "")?;
        // An extent given at run time may be -1 as well as a literal one (numba's
        // `a.reshape(n)` with `n == -1`): each extent is (value, is it the hole).
        let minus1 = i64t.const_all_ones();
        let tru = ctx.bool_type().const_int(1, false);
        let mut known = one;
        let mut holes = zero;
        let mut dims: Vec<(IntValue<'ctx>, IntValue<'ctx>)> = Vec::new();
        for n in new_shape {
            match n {
                Some(h) => {
                    let v = self.value(*h)?.into_int_value();
                    let b = self.b();
                    let hole = b.build_int_compare(IntPredicate::EQ, v, minus1, "")?;
                    let valid = b.build_int_compare(IntPredicate::SGE, v, minus1, "")?;
                    ok = b.build_and(ok, valid, "")?;
                    let factor = b.build_select(hole, one, v, "")?.into_int_value();
                    known = b.build_int_mul(known, factor, "")?;
                    let h64 = b.build_int_z_extend(hole, i64t, "")?;
                    holes = b.build_int_add(holes, h64, "")?;
                    dims.push((v, hole));
                }
                None => {
                    holes = self.b().build_int_add(holes, one, "")?;
                    dims.push((minus1, tru));
                }
            }
        }
        let b = self.b();
        let at_most_one = b.build_int_compare(IntPredicate::ULE, holes, one, "")?;
        ok = b.build_and(ok, at_most_one, "")?;
        let has_hole = b.build_int_compare(IntPredicate::EQ, holes, one, "")?;
        let zero_known = b.build_int_compare(IntPredicate::EQ, known, zero, "")?;
        let divisor = b.build_select(zero_known, one, known, "")?.into_int_value();
        let inferred = b.build_int_unsigned_div(size, divisor, "")?;
        let total = b.build_int_mul(inferred, known, "")?;
        let nz = b.build_not(zero_known, "")?;
        let fills = b.build_int_compare(IntPredicate::EQ, total, size, "")?;
        let hole_ok = b.build_and(nz, fills, "")?;
        let exact = b.build_int_compare(IntPredicate::EQ, known, size, "")?;
        let fits = b
            .build_select(has_hole, hole_ok, exact, "")?
            .into_int_value();
        ok = b.build_and(ok, fits, "")?;
        let mut shape: Vec<IntValue<'ctx>> = Vec::new();
        for (v, hole) in dims {
            let x = self
                .b()
                .build_select(hole, inferred, v, "")?
                .into_int_value();
            shape.push(x);
        }
        let good = self.new_block("reshape.ok");
        let bad = self.new_block("reshape.trap");
        self.b().build_conditional_branch(ok, good, bad)?;
        self.b().position_at_end(bad);
        let trap = self.e.intrinsic("llvm.trap", &[])?;
        self.b().build_call(trap, &[], "")?;
        self.b().build_unreachable()?;
        self.b().position_at_end(good);
        let mut strides = vec![one; shape.len()];
        let idx: Vec<usize> = if fortran {
            (0..shape.len()).collect()
        } else {
            (0..shape.len()).rev().collect()
        };
        let mut acc = one;
        for d in idx {
            strides[d] = acc;
            acc = self.b().build_int_mul(acc, shape[d], "")?;
        }
        let data = self
            .b()
            .build_extract_value(desc, 0, "")?
            .into_pointer_value();
        self.descriptor(&to, data, &shape, &strides)
    }
}
