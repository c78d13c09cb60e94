//! Lowering of the extensions of §17 that are expressions: inline PTX (`asm`) and kernel
//! launches from device code (CUDA's dynamic parallelism through the device runtime).

use super::*;
use crate::ir::{DeviceLaunch, InlineAsm};

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// Inline PTX: 16-bit floats travel in `h` registers as `i16` bits; several outputs come
    /// back as an LLVM struct and become the result tuple. Every call is `convergent`, as
    /// clang marks CUDA's inline assembly, since the PTX may hold warp-synchronous
    /// instructions.
    pub(super) fn inline_asm(
        &mut self,
        a: &InlineAsm,
        ty: &Type,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let ctx = self.e.ctx;
        let i16t = ctx.i16_type();
        let mut vals = Vec::new();
        for x in &a.args {
            let v = self.value(*x)?;
            let v = if v.is_float_value() && v.into_float_value().get_type().get_bit_width() == 16 {
                self.b().build_bit_cast(v, i16t, "")?
            } else {
                v
            };
            vals.push(v);
        }
        let outs: Vec<Scalar> = match ty {
            Type::None => Vec::new(),
            Type::Scalar(s) => vec![*s],
            Type::Tuple(ts) => ts.iter().filter_map(|t| t.as_scalar()).collect(),
            _ => return Err(err("inline PTX with a non-number result")),
        };
        let reg = |s: Scalar| -> BasicTypeEnum<'ctx> {
            if s.size() == 2 {
                i16t.into()
            } else {
                self.e.scalar_type(s)
            }
        };
        let ret: Option<BasicTypeEnum<'ctx>> = match outs.as_slice() {
            [] => None,
            [s] => Some(reg(*s)),
            many => {
                let fields: Vec<BasicTypeEnum> = many.iter().map(|s| reg(*s)).collect();
                Some(ctx.struct_type(&fields, false).into())
            }
        };
        let params: Vec<BasicMetadataTypeEnum> = vals.iter().map(|v| v.get_type().into()).collect();
        let fn_ty = match ret {
            Some(r) => r.fn_type(&params, false),
            None => ctx.void_type().fn_type(&params, false),
        };
        let asm = ctx.create_inline_asm(
            fn_ty,
            a.template.clone(),
            a.constraints.clone(),
            a.volatile,
            false,
            None,
            false,
        );
        let margs: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
        let call = self.b().build_indirect_call(fn_ty, asm, &margs, "")?;
        let kind = Attribute::get_named_enum_kind_id("convergent");
        call.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(kind, 0));
        let ValueKind::Basic(r) = call.try_as_basic_value() else {
            return Ok(None);
        };
        // Back from register bits to the result's types.
        let from_reg = |cx: &Self, v: BasicValueEnum<'ctx>, s: Scalar| -> R<BasicValueEnum<'ctx>> {
            if s.size() == 2 && s.is_float() {
                Ok(cx.b().build_bit_cast(v, cx.e.scalar_type(s), "")?)
            } else {
                Ok(v)
            }
        };
        if let [s] = outs.as_slice() {
            return Ok(Some(from_reg(self, r, *s)?));
        }
        let st = self
            .e
            .ty(ty)
            .ok_or_else(|| err("inline PTX result type"))?
            .into_struct_type();
        let mut out = st.get_undef();
        for (i, s) in outs.iter().enumerate() {
            let part = self
                .b()
                .build_extract_value(r.into_struct_value(), i as u32, "")?;
            let part = from_reg(self, part, *s)?;
            let at = self.e.field_index(ty, i as u32);
            out = self
                .b()
                .build_insert_value(out, part, at, "")?
                .into_struct_value();
        }
        Ok(Some(out.into()))
    }

    /// A launch from device code: `cudaGetParameterBuffer(align, size)` gives a buffer that
    /// is filled with the arguments at the offsets of the child's parameters (the kernel
    /// parameter ABI), then `cudaLaunchDevice(kernel, buffer, grid, block, shared, 0)` queues
    /// the child on the default stream; its `cudaError_t` is the result.
    pub(super) fn device_launch(&mut self, l: &DeviceLaunch) -> R<BasicValueEnum<'ctx>> {
        let ctx = self.e.ctx;
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        let ptr = ctx.ptr_type(AddressSpace::default());
        let child = &self.e.program.functions[l.kernel];
        let mut offsets = Vec::new();
        let (mut size, mut align) = (0u64, 8u64);
        for lo in child.param_locals() {
            let (s, a) = crate::abi::size_align(&child.locals[lo].ty);
            let a = a.max(1);
            size = size.div_ceil(a) * a;
            offsets.push((size, a));
            size += s;
            align = align.max(a);
        }
        let module = &self.e.module;
        let get_buffer = module
            .get_function("cudaGetParameterBuffer")
            .unwrap_or_else(|| {
                let t = ptr.fn_type(&[i64t.into(), i64t.into()], false);
                module.add_function("cudaGetParameterBuffer", t, None)
            });
        let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
        let launch = module.get_function("cudaLaunchDevice").unwrap_or_else(|| {
            let t = i32t.fn_type(
                &[
                    ptr.into(),
                    ptr.into(),
                    dim3.into(),
                    dim3.into(),
                    i32t.into(),
                    ptr.into(),
                ],
                false,
            );
            module.add_function("cudaLaunchDevice", t, None)
        });
        let buf = self
            .call1(
                get_buffer,
                &[
                    i64t.const_int(align, false).into(),
                    i64t.const_int(size.max(1), false).into(),
                ],
            )?
            .into_pointer_value();
        let params: Vec<_> = child.param_locals().collect();
        for ((x, lo), (off, a)) in l.args.iter().zip(params).zip(offsets) {
            let t = self.e.program.functions[l.kernel].locals[lo].ty.clone();
            let v = self.value(*x)?;
            let v = self.mem_repr(v, &t)?;
            // SAFETY of the GEP: `off` is inside the buffer of `size` bytes asked for above.
            let at = unsafe {
                self.b()
                    .build_gep(ctx.i8_type(), buf, &[i64t.const_int(off, false)], "")?
            };
            let st = self.b().build_store(at, v)?;
            st.set_alignment(a as u32).map_err(|e| err(e.to_string()))?;
        }
        let as_dim3 = |cx: &mut Self, h: Handle<Expr>| -> R<BasicValueEnum<'ctx>> {
            let ty = Type::Vector {
                elem: Scalar::UInt32,
                len: 3,
            };
            let v = cx.value(h)?.into_struct_value();
            let mut d = dim3.get_undef();
            for i in 0..3u32 {
                let at = cx.e.field_index(&ty, i);
                let c = cx.b().build_extract_value(v, at, "")?;
                d = cx.b().build_insert_value(d, c, i, "")?.into_struct_value();
            }
            Ok(d.into())
        };
        let grid = as_dim3(self, l.grid)?;
        let block = as_dim3(self, l.block)?;
        let shared = self.value(l.shared)?;
        let kernel = self.e.fns[l.kernel.index()]
            .as_global_value()
            .as_pointer_value();
        self.call1(
            launch,
            &[
                kernel.into(),
                buf.into(),
                grid.into(),
                block.into(),
                shared.into(),
                ptr.const_null().into(),
            ],
        )
    }
}
