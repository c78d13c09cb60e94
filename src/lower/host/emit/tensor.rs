//! The tensor-core operations of a kernel run whole on the CPU (§19 on the CPU, docs/
//! semantics.md §22.1). A WMMA fragment is its `num_elements` leaves of the element type
//! (float16/bfloat16/TF32 held as `f32`, as every host value); element `s` of lane `l` is
//! element `(l * E + s) % (R * C)` of the fragment's R×C matrix in row-major order
//! (`runtime::cpu_tensor`). Loads, stores, fills and element accesses are per lane; the
//! multiplications and `ldmatrix` are warp collectives ([`WarpOp::Tensor`]) over a buffer
//! of 8-byte entries per lane that the runtime reads and writes.

use super::super::kernel::{WarpOp, offset};
use super::super::tensor_code as cpu_tensor;
use super::*;
use crate::ir::{Expr, TensorOp};
use crate::types::tensor::{Fragment, FragmentElem, MatrixLayout};

impl FnCx<'_, '_> {
    /// A tensor-core intrinsic of a kernel on the CPU.
    pub(super) fn tensor(
        &mut self,
        h: Handle<Expr>,
        op: TensorOp,
        args: &[Handle<Expr>],
        ty: &Type,
    ) -> R<Vec<Value>> {
        let arg = |k: usize| -> R<Handle<Expr>> {
            args.get(k)
                .copied()
                .ok_or_else(|| err("missing operand of a tensor operation"))
        };
        match op {
            TensorOp::Fill => {
                let fr = fragment(ty)?;
                let v = self.scalar(arg(0)?)?;
                Ok(vec![v; fr.num_elements() as usize])
            }
            TensorOp::Element => {
                let fr = fragment(self.ty(arg(0)?))?;
                let vals = self.expr(arg(0)?)?;
                let slot = self.spill(&fr, &vals)?;
                let at = self.element_slot(&fr, slot, arg(1)?)?;
                let t = reg_type(elem_scalar(&fr));
                Ok(vec![self.b.ins().load(t, flags(), at, 0)])
            }
            TensorOp::SetElement => {
                let fr = fragment(self.ty(arg(0)?))?;
                let vals = self.expr(arg(0)?)?;
                let slot = self.spill(&fr, &vals)?;
                let at = self.element_slot(&fr, slot, arg(1)?)?;
                let v = self.scalar(arg(2)?)?;
                self.b.ins().store(flags(), v, at, 0);
                let t = reg_type(elem_scalar(&fr));
                let size = i32::try_from(t.bytes()).map_err(|_| err("element size"))?;
                Ok((0..vals.len() as i32)
                    .map(|i| self.b.ins().load(t, flags(), slot, i * size))
                    .collect())
            }
            TensorOp::Load(layout) => {
                let fr = fragment(ty)?;
                let layout = fr.layout.unwrap_or(layout);
                let ldm = self.scalar(arg(1)?)?;
                self.load_store(h, &fr, layout, arg(0)?, ldm, None)
            }
            TensorOp::Store(layout) => {
                let fr = fragment(self.ty(arg(1)?))?;
                let vals = self.expr(arg(1)?)?;
                let ldm = self.scalar(arg(2)?)?;
                self.load_store(h, &fr, layout, arg(0)?, ldm, Some(&vals))?;
                Ok(Vec::new())
            }
            TensorOp::Mma { satfinite } => {
                let fa = fragment(self.ty(arg(0)?))?;
                let fb = fragment(self.ty(arg(1)?))?;
                let fc = fragment(self.ty(arg(2)?))?;
                let fd = fragment(ty)?;
                let code = cpu_tensor::wmma_code(fa.shape, fa.elem, fc.elem, satfinite)
                    .ok_or_else(|| err("a WMMA shape the CPU does not know"))?;
                let off = cpu_tensor::wmma_offsets(&fa, &fb, &fc);
                let total = off[3] + fd.num_elements() as usize;
                let buf = self.tensor_buffer(total)?;
                for (k, f) in [(0, &fa), (1, &fb), (2, &fc)] {
                    let vals = self.expr(arg(k)?)?;
                    self.put_entries(buf, off[k], elem_scalar(f), &vals)?;
                }
                self.tensor_collective(buf, code, h)?;
                self.get_entries(buf, off[3], elem_scalar(&fd), fd.num_elements() as usize)
            }
            TensorOp::MmaM16n8k16 => {
                let buf = self.tensor_buffer(20)?;
                let mut at = 0;
                for k in 0..3 {
                    let vals = self.expr(arg(k)?)?;
                    let s = if k == 2 {
                        Scalar::Float32
                    } else {
                        Scalar::Float16
                    };
                    self.put_entries(buf, at, s, &vals)?;
                    at += vals.len();
                }
                if at != 16 {
                    return Err(err("mma_sync_m16n8k16 operands of the wrong size"));
                }
                self.tensor_collective(buf, cpu_tensor::KIND_MMA16816, h)?;
                self.get_entries(buf, 16, Scalar::Float32, 4)
            }
            TensorOp::Ldmatrix { count, trans } => {
                let Expr::ElementRef { array, indices } = &self.f.exprs[arg(0)?] else {
                    return Err(err("ldmatrix without an element reference"));
                };
                let (array, indices) = (*array, indices.clone());
                let at = self
                    .ty(array)
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("ldmatrix of a non-array"))?;
                let s = at
                    .dtype
                    .atomic_scalar()
                    .ok_or_else(|| err("ldmatrix of a non-number array"))?;
                let span = self.f.exprs.span(arg(0)?);
                let (addr, ok, code, _) = self.element(array, &indices, span)?;
                // The row's 16 bytes must lie in the array, as the first element must.
                let (_, hi) = self.extent(array)?;
                let end = self.b.ins().iadd_imm_s(addr, 16);
                let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, hi);
                let ok = self.b.ins().band(ok, fits);
                self.check_or_record(ok, code)?;
                let zero = self.b.ins().iconst(ct::I64, 0);
                let row = self.b.ins().select(ok, addr, zero);
                let n = 1 + 2 * usize::from(count);
                let buf = self.tensor_buffer(n)?;
                self.b.ins().store(flags(), row, buf, 0);
                let code =
                    cpu_tensor::KIND_LDMATRIX | u32::from(count) << 4 | u32::from(trans) << 7;
                self.tensor_collective(buf, code, h)?;
                let mut out = Vec::new();
                for k in 1..n {
                    let raw = self.b.ins().load(ct::I64, flags(), buf, (8 * k) as i32);
                    let bits = self.b.ins().ireduce(ct::I16, raw);
                    out.push(from_memory(
                        self.m,
                        &mut self.b,
                        &mut self.imports,
                        s,
                        bits,
                    )?);
                }
                Ok(out)
            }
        }
    }

    /// A zeroed stack buffer of `n` 8-byte entries; its address.
    fn tensor_buffer(&mut self, n: usize) -> R<Value> {
        let bytes = u32::try_from(8 * n).map_err(|_| err("tensor buffer"))?;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            bytes,
            3,
        ));
        let addr = self.b.ins().stack_addr(ct::I64, slot, 0);
        let zero = self.b.ins().iconst(ct::I64, 0);
        for k in 0..n {
            self.b.ins().store(flags(), zero, addr, (8 * k) as i32);
        }
        Ok(addr)
    }

    /// The warp collective of a tensor operation with code `code` over the lane buffers.
    fn tensor_collective(&mut self, buf: Value, code: u32, h: Handle<Expr>) -> R<()> {
        let mask = self.b.ins().iconst(ct::I32, -1);
        let code = self.b.ins().iconst(ct::I32, i64::from(code));
        self.warp(WarpOp::Tensor, mask, Some(buf), Some(code), 0, h)?;
        Ok(())
    }

    /// Stores register values of type `s` as entries `at..` (floats as `f64`, integers
    /// as `i64`).
    fn put_entries(&mut self, buf: Value, at: usize, s: Scalar, vals: &[Value]) -> R<()> {
        for (k, v) in vals.iter().enumerate() {
            let e = if s.is_float() {
                if s == Scalar::Float64 {
                    *v
                } else {
                    self.b.ins().fpromote(ct::F64, *v)
                }
            } else if reg_type(s) == ct::I64 {
                *v
            } else if s.is_signed() {
                self.b.ins().sextend(ct::I64, *v)
            } else {
                self.b.ins().uextend(ct::I64, *v)
            };
            self.b.ins().store(flags(), e, buf, (8 * (at + k)) as i32);
        }
        Ok(())
    }

    /// Entries `at..at + n` as register values of type `s`.
    fn get_entries(&mut self, buf: Value, at: usize, s: Scalar, n: usize) -> R<Vec<Value>> {
        let mut out = Vec::new();
        for k in at..at + n {
            let off = (8 * k) as i32;
            out.push(if s.is_float() {
                let x = self.b.ins().load(ct::F64, flags(), buf, off);
                if s == Scalar::Float64 {
                    x
                } else {
                    self.b.ins().fdemote(ct::F32, x)
                }
            } else {
                let x = self.b.ins().load(ct::I64, flags(), buf, off);
                let t = reg_type(s);
                if t == ct::I64 {
                    x
                } else {
                    self.b.ins().ireduce(t, x)
                }
            });
        }
        Ok(out)
    }

    /// The fragment's leaves in a stack slot, one register-sized entry each; its address.
    fn spill(&mut self, fr: &Fragment, vals: &[Value]) -> R<Value> {
        let t = reg_type(elem_scalar(fr));
        let size = t.bytes();
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            size * vals.len() as u32,
            3,
        ));
        let addr = self.b.ins().stack_addr(ct::I64, slot, 0);
        for (k, v) in vals.iter().enumerate() {
            self.b
                .ins()
                .store(flags(), *v, addr, (size as usize * k) as i32);
        }
        Ok(addr)
    }

    /// The address of entry `index` (an integer the checker reduced modulo the element
    /// count) of a spilled fragment.
    fn element_slot(&mut self, fr: &Fragment, slot: Value, index: Handle<Expr>) -> R<Value> {
        let size = reg_type(elem_scalar(fr)).bytes();
        let s = self.scalar_of(index)?;
        let i = self.scalar(index)?;
        let i = match reg_type(s) {
            ct::I64 => i,
            _ if s.is_signed() => self.b.ins().sextend(ct::I64, i),
            _ => self.b.ins().uextend(ct::I64, i),
        };
        let n = i64::from(fr.num_elements());
        // Reduced already; kept in range again so that no index can leave the slot.
        let i = self.b.ins().urem_imm_s(i, n);
        let off = self.b.ins().imul_imm_s(i, i64::from(size));
        Ok(self.b.ins().iadd(slot, off))
    }

    /// The byte range `[lo, hi)` the elements of `array` occupy (negative strides included).
    pub(super) fn extent(&mut self, array: Handle<Expr>) -> R<(Value, Value)> {
        let at = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("extent of a non-array"))?;
        let size = super::expr::elem_size(&at.dtype) as i64;
        let n = usize::from(at.ndim);
        let d = self.expr(array)?;
        let zero = self.b.ins().iconst(ct::I64, 0);
        let (mut low, mut high) = (zero, zero);
        let mut empty = self.b.ins().iconst(ct::I8, 0);
        for k in 0..n {
            let (ext, stride) = (d[1 + k], d[1 + n + k]);
            let none = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedLessThanOrEqual, ext, 0);
            empty = self.b.ins().bor(empty, none);
            let last = self.b.ins().iadd_imm_s(ext, -1);
            let term = self.b.ins().imul(last, stride);
            let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, term, 0);
            let down = self.b.ins().select(neg, term, zero);
            let up = self.b.ins().select(neg, zero, term);
            low = self.b.ins().iadd(low, down);
            high = self.b.ins().iadd(high, up);
        }
        let low = self.b.ins().imul_imm_s(low, size);
        let high = self.b.ins().iadd_imm_s(high, 1);
        let high = self.b.ins().imul_imm_s(high, size);
        let lo = self.b.ins().iadd(d[0], low);
        let hi = self.b.ins().iadd(d[0], high);
        // An empty array: nothing is inside.
        let hi = self.b.ins().select(empty, lo, hi);
        Ok((lo, hi))
    }

    /// Records `code` (an out-of-range access) when `ok` is false.
    fn check_or_record(&mut self, ok: Value, code: i64) -> R<()> {
        let (bad, cont) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(ok, cont, &[], bad, &[]);
        self.b.switch_to_block(bad);
        self.record_error(code)?;
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
        Ok(())
    }

    /// `wmma.load_matrix_sync` (`store` is `None`) or `store_matrix_sync` of this lane's
    /// elements: element (i, j) of the tile is at `i * ldm + j` (row-major) or
    /// `j * ldm + i` (column-major) elements from the reference. As on the device, a tile
    /// whose first element is out of range is reported and skipped (a load reads zeros);
    /// on the CPU every other element is checked too, and one outside its array is
    /// skipped and reported the same way.
    fn load_store(
        &mut self,
        h: Handle<Expr>,
        fr: &Fragment,
        layout: MatrixLayout,
        r: Handle<Expr>,
        ldm: Value,
        store: Option<&[Value]>,
    ) -> R<Vec<Value>> {
        let Expr::ElementRef { array, indices } = &self.f.exprs[r] else {
            return Err(err("a tensor access without an element reference"));
        };
        let (array, indices) = (*array, indices.clone());
        let span = self.f.exprs.span(r);
        let (base, first_ok, code, _) = self.element(array, &indices, span)?;
        let _ = h;
        let (lo, hi) = self.extent(array)?;
        let s = fr.elem.scalar();
        let size = i64::from(mem_type(s).bytes());
        let (_, cols) = fr.rows_cols();
        let (rows, cols) = (i64::from(fr.rows_cols().0), i64::from(cols));
        let e = i64::from(fr.num_elements());
        let lane = self.ctx_u32(offset::LANE)?;
        let lane = self.b.ins().uextend(ct::I64, lane);
        let ldm_s = self.b.func.dfg.value_type(ldm);
        let ldm = if ldm_s == ct::I64 {
            ldm
        } else {
            self.b.ins().sextend(ct::I64, ldm)
        };
        // A word of zeros that an out-of-range load reads and a skipped store writes.
        let scratch = self.tensor_buffer(2)?;
        let mut all_ok = first_ok;
        let mut out = Vec::new();
        let first = self.b.ins().imul_imm_s(lane, e);
        for k in 0..e {
            let g = self.b.ins().iadd_imm_s(first, k);
            let idx = self.b.ins().urem_imm_s(g, rows * cols);
            let i = self.b.ins().udiv_imm_s(idx, cols);
            let j = self.b.ins().urem_imm_s(idx, cols);
            let (major, minor) = match layout {
                MatrixLayout::RowMajor => (i, j),
                MatrixLayout::ColMajor => (j, i),
            };
            let off = self.b.ins().imul(major, ldm);
            let off = self.b.ins().iadd(off, minor);
            let off = self.b.ins().imul_imm_s(off, size);
            let addr = self.b.ins().iadd(base, off);
            let above = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, addr, lo);
            let end = self.b.ins().iadd_imm_s(addr, size);
            let below = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, hi);
            let inside = self.b.ins().band(above, below);
            all_ok = self.b.ins().band(all_ok, inside);
            let inside = self.b.ins().band(inside, first_ok);
            let at = self.b.ins().select(inside, addr, scratch);
            match store {
                None => {
                    let raw = self.b.ins().load(mem_type(s), flags(), at, 0);
                    out.push(from_memory(self.m, &mut self.b, &mut self.imports, s, raw)?);
                }
                Some(vals) => {
                    let v = *vals
                        .get(k as usize)
                        .ok_or_else(|| err("a fragment with too few elements"))?;
                    let raw = to_memory(self.m, &mut self.b, &mut self.imports, s, v)?;
                    self.b.ins().store(flags(), raw, at, 0);
                    // Keep the scratch word zero for the loads after.
                    let zero = self.b.ins().iconst(ct::I64, 0);
                    self.b.ins().store(flags(), zero, scratch, 0);
                    self.b.ins().store(flags(), zero, scratch, 8);
                }
            }
        }
        self.check_or_record(all_ok, code)?;
        Ok(out)
    }
}

/// The fragment type `ty` is.
fn fragment(ty: &Type) -> R<Fragment> {
    match ty {
        Type::Fragment(f) => Ok(*f.clone()),
        other => Err(err(format!("a tensor operation on {other}"))),
    }
}

/// The scalar type of a fragment's leaves (TF32 is `float32`).
fn elem_scalar(fr: &Fragment) -> Scalar {
    match fr.elem {
        FragmentElem::TF32 => Scalar::Float32,
        e => e.scalar(),
    }
}
