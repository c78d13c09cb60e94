//! `print` on the device: one `vprintf(format, args)` call, as CUDA C++ compiles `printf`.
//! The format string is a constant in the constant address space; the arguments are stored,
//! already promoted by the checker to 64-bit integers, doubles and string pointers (C's
//! variadic promotion), in a local buffer at their natural (8-byte) alignment.

use super::*;
use crate::ir::{PrintConv, PrintPiece};

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// A generic pointer to a NUL-terminated constant string (`shared`: one global of
    /// this name per module, reused).
    fn const_cstr(&self, text: &str, name: &str, shared: bool) -> R<PointerValue<'ctx>> {
        let ctx = self.e.ctx;
        let generic = ctx.ptr_type(AddressSpace::default());
        if shared && let Some(g) = self.e.module.get_global(name) {
            return Ok(self
                .b()
                .build_address_space_cast(g.as_pointer_value(), generic, "")?);
        }
        let init = ctx.const_string(text.as_bytes(), true);
        let g = self
            .e
            .module
            .add_global(init.get_type(), Some(AddressSpace::from(4u16)), name);
        g.set_linkage(Linkage::Private);
        g.set_constant(true);
        g.set_unnamed_addr(true);
        g.set_initializer(&init);
        g.set_alignment(1);
        Ok(self
            .b()
            .build_address_space_cast(g.as_pointer_value(), generic, "")?)
    }

    /// Emits a `print`: `vprintf` with the pieces' format and a buffer of their values.
    pub(super) fn print(&mut self, pieces: &[PrintPiece]) -> R<()> {
        let ctx = self.e.ctx;
        let ptr = ctx.ptr_type(AddressSpace::default());
        let vprintf = match self.e.module.get_function("vprintf") {
            Some(f) => f,
            None => self.e.module.add_function(
                "vprintf",
                ctx.i32_type().fn_type(&[ptr.into(), ptr.into()], false),
                None,
            ),
        };
        let format: String = pieces.iter().map(PrintPiece::printf).collect();
        let fmt = self.const_cstr(&format, "__pyd_fmt", false)?;
        let mut args = Vec::new();
        for p in pieces {
            if let PrintPiece::Value {
                value,
                conv,
                spec,
                letter,
            } = p
            {
                let v = self.value(*value)?;
                if *letter == PrintPiece::REPR {
                    // `%.Ng%s`: the value, then `.0` when it is integral and below 10**N
                    // (where `%.Ng` writes it without a point or an exponent).
                    let digits: i32 = spec.trim_start_matches('.').parse().unwrap_or(16);
                    let x = v.into_float_value();
                    let f64t = ctx.f64_type();
                    let fabs = self.e.intrinsic("llvm.fabs", &[f64t.into()])?;
                    let trunc = self.e.intrinsic("llvm.trunc", &[f64t.into()])?;
                    let a = self.call1(fabs, &[x.into()])?.into_float_value();
                    let t = self.call1(trunc, &[x.into()])?.into_float_value();
                    let limit = f64t.const_float(10f64.powi(digits));
                    let small = self
                        .b()
                        .build_float_compare(FloatPredicate::OLT, a, limit, "")?;
                    let whole = self
                        .b()
                        .build_float_compare(FloatPredicate::OEQ, x, t, "")?;
                    let point = self.b().build_and(small, whole, "")?;
                    let dot = self.const_cstr(".0", "__pyd_point0", true)?;
                    let none = self.const_cstr("", "__pyd_empty", true)?;
                    args.push(v);
                    args.push(self.b().build_select(point, dot, none, "")?);
                    continue;
                }
                let v: BasicValueEnum<'ctx> = match conv {
                    PrintConv::Signed | PrintConv::Unsigned | PrintConv::Float => v,
                    PrintConv::Bool => {
                        let t = self.const_cstr("True", "__pyd_true", true)?;
                        let f = self.const_cstr("False", "__pyd_false", true)?;
                        self.b().build_select(v.into_int_value(), t, f, "")?
                    }
                };
                args.push(v);
            }
        }
        let buf = if args.is_empty() {
            ptr.const_null()
        } else {
            let i64t = ctx.i64_type();
            let buf_t = i64t.array_type(args.len() as u32);
            let buf = self.entry_alloca(buf_t, "printf_args")?;
            buf.as_instruction_value()
                .ok_or_else(|| err("alloca without an instruction"))?
                .set_alignment(8)
                .map_err(|e| err(e.to_string()))?;
            for (k, v) in args.iter().enumerate() {
                // SAFETY: `k` is within the `args.len()`-element array `buf` points to.
                let slot = unsafe {
                    self.b().build_in_bounds_gep(
                        buf_t,
                        buf,
                        &[i64t.const_zero(), i64t.const_int(k as u64, false)],
                        "",
                    )?
                };
                self.b()
                    .build_store(slot, *v)?
                    .set_alignment(8)
                    .map_err(|e| err(e.to_string()))?;
            }
            buf
        };
        self.b()
            .build_call(vprintf, &[fmt.into(), buf.into()], "")?;
        Ok(())
    }
}
