//! Tensor cores (§19): `device.wmma`'s fragments through LLVM's `llvm.nvvm.wmma.*`
//! intrinsics, and `device.mma`'s `mma.sync` and `ldmatrix` through `llvm.nvvm.mma.*` and
//! `llvm.nvvm.ldmatrix.*`. The front end has checked every combination (shape, element
//! types, layouts, architecture), so an intrinsic LLVM does not have is a compiler bug.

use super::*;
use crate::ir::TensorOp;
use crate::types::tensor::{Fragment, FragmentElem, FragmentReg};
use inkwell::values::StructValue;

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    pub(super) fn tensor(
        &mut self,
        op: TensorOp,
        args: &[Handle<Expr>],
        ty: &Type,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let frag = |t: &Type| match t {
            Type::Fragment(f) => Ok((**f).clone()),
            _ => Err(err("a tensor operation on a non-fragment")),
        };
        match op {
            TensorOp::Fill => {
                let fr = frag(ty)?;
                let v = self.value(args[0])?;
                Ok(Some(self.fragment_fill(&fr, v)?.into()))
            }
            TensorOp::Load(layout) => {
                let fr = frag(ty)?;
                let layout = fr.layout.unwrap_or(layout);
                let ldm = self.value(args[1])?;
                let st = self.e.fragment_type(&fr);
                self.guarded_access(args[0], Some(st.into()), |me, ptr| {
                    let name = format!(
                        "llvm.nvvm.wmma.{}.load.{}.{}.stride.{}",
                        fr.shape,
                        fr.usage.letter(),
                        layout.ptx(),
                        fr.elem.ptx()
                    );
                    let f = me.e.intrinsic(&name, &[ptr.get_type().into()])?;
                    let r = me.call1(f, &[ptr.into(), ldm.into()])?;
                    // A fragment of one register comes back as that register.
                    let v = match r {
                        BasicValueEnum::StructValue(v) => v,
                        one => me
                            .b()
                            .build_insert_value(st.get_undef(), one, 0, "")?
                            .into_struct_value(),
                    };
                    if fr.elem == FragmentElem::TF32 {
                        return Ok(Some(me.round_tf32(v)?.into()));
                    }
                    Ok(Some(v.into()))
                })
            }
            TensorOp::Store(layout) => {
                let fr = frag(self.ty(args[1]))?;
                let v = self.value(args[1])?.into_struct_value();
                let ldm = self.value(args[2])?;
                self.guarded_access(args[0], None, |me, ptr| {
                    let name = format!(
                        "llvm.nvvm.wmma.{}.store.d.{}.stride.{}",
                        fr.shape,
                        layout.ptx(),
                        fr.elem.ptx()
                    );
                    let f = me.e.intrinsic(&name, &[ptr.get_type().into()])?;
                    let mut call: Vec<BasicMetadataValueEnum<'ctx>> = vec![ptr.into()];
                    for i in 0..fr.regs().1 {
                        call.push(me.b().build_extract_value(v, i, "")?.into());
                    }
                    call.push(ldm.into());
                    me.b().build_call(f, &call, "")?;
                    Ok(None)
                })?;
                Ok(None)
            }
            TensorOp::Mma { satfinite } => {
                let d = frag(ty)?;
                let a = frag(self.ty(args[0]))?;
                let b = frag(self.ty(args[1]))?;
                let c = frag(self.ty(args[2]))?;
                let (al, bl) = match (a.layout, b.layout) {
                    (Some(al), Some(bl)) => (al, bl),
                    _ => return Err(err("wmma.mma_sync without layouts")),
                };
                let sig = if a.elem == FragmentElem::F16 {
                    format!(".{}.{}", d.elem.ptx(), c.elem.ptx())
                } else {
                    format!(".{}", a.elem.ptx())
                };
                let name = format!(
                    "llvm.nvvm.wmma.{}.mma.{}.{}{sig}{}",
                    a.shape,
                    al.ptx(),
                    bl.ptx(),
                    if satfinite { ".satfinite" } else { "" }
                );
                let mut call: Vec<BasicMetadataValueEnum<'ctx>> = Vec::new();
                for (h, fr) in [(args[0], &a), (args[1], &b), (args[2], &c)] {
                    let v = self.value(h)?.into_struct_value();
                    for i in 0..fr.regs().1 {
                        call.push(self.b().build_extract_value(v, i, "")?.into());
                    }
                }
                let f = self.e.intrinsic(&name, &[])?;
                Ok(Some(self.call1(f, &call)?))
            }
            TensorOp::Element | TensorOp::SetElement => {
                // Through memory: the registers are the elements in order (two float16 a
                // `<2 x half>`, two bfloat16 or four int8 an `i32`, low bytes first), so
                // element i is at byte i * size; SROA turns constant indices back into
                // register operations.
                let fr = frag(self.ty(args[0]))?;
                let st = self.e.fragment_type(&fr);
                let v = self.value(args[0])?;
                let i = self.value(args[1])?.into_int_value();
                let slot = self.entry_alloca(st, "fragment")?;
                self.b().build_store(slot, v)?;
                let es = fr.elem.scalar();
                let et = self.e.scalar_type(es);
                let size = self.e.ctx.i64_type().const_int(es.size(), false);
                let i64v = self.b().build_int_z_extend(i, self.e.ctx.i64_type(), "")?;
                let off = self.b().build_int_mul(i64v, size, "")?;
                // SAFETY: the index was reduced modulo the element count by the checker.
                let at = unsafe { self.b().build_gep(self.e.ctx.i8_type(), slot, &[off], "")? };
                if op == TensorOp::Element {
                    return Ok(Some(self.b().build_load(et, at, "")?));
                }
                let mut x = self.value(args[2])?;
                if fr.elem == FragmentElem::TF32 {
                    let r = self.tf32(x.into_float_value())?;
                    x = self.b().build_bit_cast(r, et, "")?;
                }
                self.b().build_store(at, x)?;
                Ok(Some(self.b().build_load(st, slot, "")?))
            }
            TensorOp::MmaM16n8k16 => {
                let Type::Tuple(ats) = self.ty(args[0]).clone() else {
                    return Err(err("mma_sync_m16n8k16 without a tuple"));
                };
                let elem = match ats.first() {
                    Some(Type::Vector { elem, .. }) => *elem,
                    _ => return Err(err("mma_sync_m16n8k16 without vectors")),
                };
                let name = if elem == Scalar::BFloat16 {
                    "llvm.nvvm.mma.m16n8k16.row.col.bf16"
                } else {
                    "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
                };
                let mut call: Vec<BasicMetadataValueEnum<'ctx>> = Vec::new();
                for &h in &args[..2] {
                    let t = self.ty(h).clone();
                    let n = match &t {
                        Type::Tuple(ts) => ts.len() as u32,
                        _ => 0,
                    };
                    let tv = self.value(h)?.into_struct_value();
                    for i in 0..n {
                        let at = self.e.field_index(&t, i);
                        let vec = self
                            .b()
                            .build_extract_value(tv, at, "")?
                            .into_struct_value();
                        call.push(self.pack_b16x2(vec, elem)?.into());
                    }
                }
                let ct = self.ty(args[2]).clone();
                let cv = self.value(args[2])?.into_struct_value();
                for i in 0..4 {
                    let at = self.e.field_index(&ct, i);
                    call.push(self.b().build_extract_value(cv, at, "")?.into());
                }
                let f = self.e.intrinsic(name, &[])?;
                let d = self.call1(f, &call)?.into_struct_value();
                let st = self.e.ty(ty).ok_or_else(|| err("mma of None"))?;
                let mut agg = st.into_struct_type().get_undef();
                for i in 0..4 {
                    let x = self.b().build_extract_value(d, i, "")?;
                    let at = self.e.field_index(ty, i);
                    agg = self
                        .b()
                        .build_insert_value(agg, x, at, "")?
                        .into_struct_value();
                }
                Ok(Some(agg.into()))
            }
            TensorOp::Ldmatrix { count, trans } => {
                let name = format!(
                    "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{}.b16",
                    if trans { ".trans" } else { "" }
                );
                let rt = self.e.ty(ty).ok_or_else(|| err("ldmatrix of None"))?;
                let ty = ty.clone();
                self.guarded_access(args[0], Some(rt), |me, ptr| {
                    let f = me.e.intrinsic(&name, &[ptr.get_type().into()])?;
                    let r = me.call1(f, &[ptr.into()])?;
                    let mut agg = rt.into_struct_type().get_undef();
                    let Type::Tuple(vts) = &ty else {
                        return Err(err("ldmatrix without a tuple"));
                    };
                    for (i, vt) in vts.iter().enumerate() {
                        let word = if count == 1 {
                            r.into_int_value()
                        } else {
                            me.b()
                                .build_extract_value(r.into_struct_value(), i as u32, "")?
                                .into_int_value()
                        };
                        let v = me.unpack_b16x2(word, vt)?;
                        let at = me.e.field_index(&ty, i as u32);
                        agg = me
                            .b()
                            .build_insert_value(agg, v, at, "")?
                            .into_struct_value();
                    }
                    Ok(Some(agg.into()))
                })
            }
        }
    }

    /// Calls `access` with the address of the element `r` (an `ElementRef`) in its own
    /// address space (generic for local and constant memory). In bounds-checking mode only
    /// that first element is checked; when it is out of range the error is recorded, the
    /// access is skipped, and a result (of type `result`) is zero.
    fn guarded_access(
        &mut self,
        r: Handle<Expr>,
        result: Option<BasicTypeEnum<'ctx>>,
        access: impl FnOnce(&mut Self, PointerValue<'ctx>) -> R<Option<BasicValueEnum<'ctx>>>,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let Expr::ElementRef { array, indices } = &self.f.exprs[r] else {
            return Err(err("a tensor access without an element reference"));
        };
        let (array, indices) = (*array, indices.clone());
        let span = self.f.exprs.span(r);
        let (ptr, at, ok) = self.element_ptr_checked(array, &indices, span)?;
        let ptr = match at.space {
            MemSpace::Global | MemSpace::Shared => ptr,
            // `map_shared_rank` views hold generic addresses already (§18.1).
            MemSpace::Cluster => ptr,
            MemSpace::Local | MemSpace::Const => self.b().build_address_space_cast(
                ptr,
                self.e.ctx.ptr_type(AddressSpace::default()),
                "",
            )?,
        };
        let before = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        let cont = self.guard(ok)?;
        let v = access(self, ptr)?;
        let Some(cont) = cont else {
            return Ok(v);
        };
        let inside = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        self.b().build_unconditional_branch(cont)?;
        self.b().position_at_end(cont);
        let (Some(v), Some(t)) = (v, result) else {
            return Ok(None);
        };
        let fail = cont
            .get_previous_basic_block()
            .filter(|b| *b != inside)
            .unwrap_or(before);
        let phi = self.b().build_phi(t, "")?;
        phi.add_incoming(&[(&v, inside), (&t.const_zero(), fail)]);
        Ok(Some(phi.as_basic_value()))
    }

    /// A fragment whose every element is `v` (of the fragment's element type).
    fn fragment_fill(&mut self, fr: &Fragment, v: BasicValueEnum<'ctx>) -> R<StructValue<'ctx>> {
        let ctx = self.e.ctx;
        let i32t = ctx.i32_type();
        let splat = |me: &Self, n: u32| -> R<inkwell::values::VectorValue<'ctx>> {
            let vt = match v.get_type() {
                BasicTypeEnum::FloatType(t) => t.vec_type(n),
                BasicTypeEnum::IntType(t) => t.vec_type(n),
                _ => return Err(err("fill of a non-number")),
            };
            let mut vec = vt.get_undef();
            for i in 0..n {
                vec =
                    me.b()
                        .build_insert_element(vec, v, i32t.const_int(u64::from(i), false), "")?;
            }
            Ok(vec)
        };
        let (reg, n) = fr.regs();
        let r: BasicValueEnum<'ctx> = match (reg, fr.elem) {
            (FragmentReg::F16x2, _) => splat(self, 2)?.into(),
            (FragmentReg::I32, FragmentElem::BF16) => {
                let p = splat(self, 2)?;
                self.b().build_bit_cast(p, i32t, "")?
            }
            (FragmentReg::I32, FragmentElem::S8 | FragmentElem::U8) => {
                let p = splat(self, 4)?;
                self.b().build_bit_cast(p, i32t, "")?
            }
            (FragmentReg::I32, FragmentElem::TF32) => self.tf32(v.into_float_value())?.into(),
            _ => v,
        };
        let st = self.e.fragment_type(fr);
        let mut agg = st.get_undef();
        for i in 0..n {
            agg = self
                .b()
                .build_insert_value(agg, r, i, "")?
                .into_struct_value();
        }
        Ok(agg)
    }

    /// A float32 rounded to TF32 (`cvt.rna.tf32.f32`), as the `b32` register the tensor
    /// cores read.
    fn tf32(&mut self, x: inkwell::values::FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        let f = self.e.intrinsic("llvm.nvvm.f2tf32.rna", &[])?;
        Ok(self.call1(f, &[x.into()])?.into_int_value())
    }

    /// Each register of a loaded TF32 fragment (float32 bits) rounded to TF32, so the
    /// multiplication sees defined TF32 values (CUDA's `__float_to_tf32`).
    fn round_tf32(&mut self, v: StructValue<'ctx>) -> R<StructValue<'ctx>> {
        let f32t = self.e.ctx.f32_type();
        let mut out = v;
        for i in 0..v.get_type().count_fields() {
            let w = self.b().build_extract_value(v, i, "")?;
            let x = self.b().build_bit_cast(w, f32t, "")?.into_float_value();
            let r = self.tf32(x)?;
            out = self
                .b()
                .build_insert_value(out, r, i, "")?
                .into_struct_value();
        }
        Ok(out)
    }

    /// A two-element 16-bit vector value as the register `mma.sync` takes: `<2 x half>` for
    /// float16, an `i32` for bfloat16.
    fn pack_b16x2(&mut self, vec: StructValue<'ctx>, elem: Scalar) -> R<BasicValueEnum<'ctx>> {
        let vt = Type::Vector { elem, len: 2 };
        let ctx = self.e.ctx;
        let et = self.e.scalar_type(elem);
        let mut p = match et {
            BasicTypeEnum::FloatType(t) => t.vec_type(2).get_undef(),
            _ => return Err(err("mma operand of a non-float vector")),
        };
        for i in 0..2 {
            let at = self.e.field_index(&vt, i);
            let x = self.b().build_extract_value(vec, at, "")?;
            p = self.b().build_insert_element(
                p,
                x,
                ctx.i32_type().const_int(u64::from(i), false),
                "",
            )?;
        }
        Ok(if elem == Scalar::BFloat16 {
            self.b().build_bit_cast(p, ctx.i32_type(), "")?
        } else {
            p.into()
        })
    }

    /// An `i32` register of two 16-bit elements as the dialect's vector `vt` (element 0 in
    /// the low half).
    fn unpack_b16x2(&mut self, w: IntValue<'ctx>, vt: &Type) -> R<BasicValueEnum<'ctx>> {
        let Type::Vector { elem, .. } = vt else {
            return Err(err("ldmatrix into a non-vector"));
        };
        let ctx = self.e.ctx;
        let et = self.e.scalar_type(*elem);
        let pair = match et {
            BasicTypeEnum::FloatType(t) => t.vec_type(2),
            BasicTypeEnum::IntType(t) => t.vec_type(2),
            _ => return Err(err("ldmatrix into a non-number vector")),
        };
        let p = self.b().build_bit_cast(w, pair, "")?.into_vector_value();
        let st = self
            .e
            .ty(vt)
            .ok_or_else(|| err("vector"))?
            .into_struct_type();
        let mut agg = st.get_undef();
        for i in 0..2 {
            let x = self.b().build_extract_element(
                p,
                ctx.i32_type().const_int(u64::from(i), false),
                "",
            )?;
            let at = self.e.field_index(vt, i);
            agg = self
                .b()
                .build_insert_value(agg, x, at, "")?
                .into_struct_value();
        }
        Ok(agg.into())
    }
}
