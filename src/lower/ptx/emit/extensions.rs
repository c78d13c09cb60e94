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

    /// A launch from device code, as nvcc lowers `kernel<<<grid, block, shared>>>(args)` in
    /// device code under CDP2: `__cudaCDP2GetParameterBufferV2(kernel, grid, block, shared)`
    /// gives a buffer for the child's parameters (null when the launch cannot be queued),
    /// which is filled with the arguments at the offsets of the child's parameter ABI and
    /// launched by `__cudaCDP2LaunchDeviceV2(buffer, 0)` on the default stream. The result
    /// is that call's `cudaError_t`, or `__cudaCDP2GetLastError()` when there was no buffer.
    /// (The `cudaLaunchDevice`/`cudaGetParameterBuffer` symbols of `libcudadevrt` are CDP1's,
    /// which sm_90 does not support; CUDA's headers map those names to these functions.)
    pub(super) fn device_launch(&mut self, l: &DeviceLaunch) -> R<BasicValueEnum<'ctx>> {
        let ctx = self.e.ctx;
        let (i32t, i64t) = (ctx.i32_type(), ctx.i64_type());
        let ptr = ctx.ptr_type(AddressSpace::default());
        let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
        let extern_fn = |name: &str, t: inkwell::types::FunctionType<'ctx>| {
            self.e
                .module
                .get_function(name)
                .unwrap_or_else(|| self.e.module.add_function(name, t, None))
        };
        let get_buffer = extern_fn(
            "__cudaCDP2GetParameterBufferV2",
            ptr.fn_type(&[ptr.into(), dim3.into(), dim3.into(), i32t.into()], false),
        );
        let launch = extern_fn(
            "__cudaCDP2LaunchDeviceV2",
            i32t.fn_type(&[ptr.into(), ptr.into()], false),
        );
        let last_error = extern_fn("__cudaCDP2GetLastError", i32t.fn_type(&[], false));
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
        let mut args = Vec::new();
        for x in &l.args {
            args.push(self.value(*x)?);
        }
        let kernel = self.e.fns[l.kernel.index()]
            .as_global_value()
            .as_pointer_value();
        let buf = self
            .call1(
                get_buffer,
                &[kernel.into(), grid.into(), block.into(), shared.into()],
            )?
            .into_pointer_value();
        let (fill, failed, done) = (
            self.new_block("launch"),
            self.new_block("no_buffer"),
            self.new_block("launched"),
        );
        let null = self.b().build_is_null(buf, "")?;
        self.b().build_conditional_branch(null, failed, fill)?;
        // The arguments at the offsets of the child's parameters, each at its alignment.
        self.b().position_at_end(fill);
        let child = &self.e.program.functions[l.kernel];
        let types: Vec<Type> = child
            .param_locals()
            .map(|lo| child.locals[lo].ty.clone())
            .collect();
        let mut off = 0u64;
        for (v, t) in args.into_iter().zip(&types) {
            let (size, align) = crate::abi::size_align(t);
            let align = align.max(1);
            off = off.div_ceil(align) * align;
            let v = self.mem_repr(v, t)?;
            // SAFETY of the GEP: `off` is inside the buffer, which the device runtime sizes
            // for the child's parameters.
            let at = unsafe {
                self.b()
                    .build_gep(ctx.i8_type(), buf, &[i64t.const_int(off, false)], "")?
            };
            let st = self.b().build_store(at, v)?;
            st.set_alignment(align as u32)
                .map_err(|e| err(e.to_string()))?;
            off += size;
        }
        let queued = self
            .call1(launch, &[buf.into(), ptr.const_null().into()])?
            .into_int_value();
        let fill_end = self
            .b()
            .get_insert_block()
            .ok_or_else(|| err("launch block"))?;
        self.b().build_unconditional_branch(done)?;
        self.b().position_at_end(failed);
        let error = self.call1(last_error, &[])?.into_int_value();
        self.b().build_unconditional_branch(done)?;
        self.b().position_at_end(done);
        let phi = self.b().build_phi(i32t, "")?;
        phi.add_incoming(&[(&queued, fill_end), (&error, failed)]);
        Ok(phi.as_basic_value())
    }
}
