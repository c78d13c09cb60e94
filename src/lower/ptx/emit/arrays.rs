//! Array elements and array storage: extents and strides read from a descriptor, element
//! addresses (with the bounds checks of `boundscheck=True`), and the descriptors of local,
//! shared, constant and dynamic shared arrays.

use super::*;

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    pub(super) fn dim(
        &self,
        desc: inkwell::values::StructValue<'ctx>,
        field: u32,
        d: u8,
    ) -> R<IntValue<'ctx>> {
        let arr = self
            .b()
            .build_extract_value(desc, field, "")?
            .into_array_value();
        Ok(self
            .b()
            .build_extract_value(arr, u32::from(d), "")?
            .into_int_value())
    }

    /// The stride of dimension `d` in elements (a constant 1 where the layout says so).
    pub(super) fn stride(
        &self,
        desc: inkwell::values::StructValue<'ctx>,
        at: &ArrayType,
        d: u8,
    ) -> R<IntValue<'ctx>> {
        let contiguous = match at.layout {
            Layout::C => d + 1 == at.ndim,
            Layout::F => d == 0,
            Layout::Any => false,
        };
        if contiguous {
            Ok(self.e.ctx.i64_type().const_int(1, false))
        } else {
            self.dim(desc, 2, d)
        }
    }

    /// Like `element_ptr`, and in bounds-checking mode also whether every index is in range
    /// (`0 <= i < shape`, after Python's wrap of negative indices).
    pub(super) fn element_ptr_checked(
        &mut self,
        array: Handle<Expr>,
        indices: &[Index],
        span: crate::diag::Span,
    ) -> R<(PointerValue<'ctx>, ArrayType, Option<BoundsCheck<'ctx>>)> {
        if !self.e.program.options.bounds_check {
            let (p, at) = self.element_ptr(array, indices)?;
            return Ok((p, at, None));
        }
        let (p, at, idx) = self.element_ptr_indices(array, indices)?;
        let desc = self.value(array)?.into_struct_value();
        let mut ok = self.e.ctx.bool_type().const_int(1, false);
        let mut shape = Vec::new();
        for (d, i) in idx.iter().enumerate() {
            let n = self.dim(desc, 1, d as u8)?;
            let inb = self.b().build_int_compare(IntPredicate::ULT, *i, n, "")?;
            ok = self.b().build_and(ok, inb, "")?;
            shape.push(n);
        }
        let i64t = self.e.ctx.i64_type();
        let mut written = Vec::new();
        for ix in indices {
            let s = self.scalar(ix.value)?;
            let v = self.value(ix.value)?.into_int_value();
            written.push(
                self.b()
                    .build_int_cast_sign_flag(v, i64t, s.is_signed(), "")?,
            );
        }
        let (line, col) = self.e.program.file.line_col(span.start);
        let check = BoundsCheck {
            ok,
            code: (line as u64) << 32 | col as u64,
            array: self.array_name(array),
            indices: written,
            shape,
        };
        Ok((p, at, Some(check)))
    }

    /// The name a bounds report gives an array: the local or parameter it is read from.
    pub(super) fn array_name(&self, array: Handle<Expr>) -> String {
        match &self.f.exprs[array] {
            Expr::Local(l) => self.f.locals[*l].name.clone(),
            _ => "an array".to_string(),
        }
    }

    /// In bounds-checking mode: branch on `ok`; the failing side records the error (the
    /// first one wins) and skips the access. Returns the block where both sides meet, with
    /// the builder positioned where the access goes.
    ///
    /// The thread whose error wins also fills `ir::ERROR_INFO_SYMBOL`: its thread and block
    /// indices, the number of dimensions recorded (at most 8), the indices as written, the
    /// shape, then the file and array names.
    pub(super) fn guard(&mut self, ok: Option<BoundsCheck<'ctx>>) -> R<Option<BasicBlock<'ctx>>> {
        let Some(check) = ok else {
            return Ok(None);
        };
        let access = self.new_block("inbounds");
        let fail = self.new_block("out_of_bounds");
        let record = self.new_block("bounds.record");
        let merge = self.new_block("bounds.recorded");
        let cont = self.new_block("bounds.end");
        self.b().build_conditional_branch(check.ok, access, fail)?;
        self.b().position_at_end(fail);
        let g = self.e.bounds_error_global();
        let i64t = self.e.ctx.i64_type();
        let r = self.b().build_cmpxchg(
            g,
            i64t.const_zero(),
            i64t.const_int(check.code, false),
            inkwell::AtomicOrdering::Monotonic,
            inkwell::AtomicOrdering::Monotonic,
        )?;
        let won = self.b().build_extract_value(r, 1, "won")?.into_int_value();
        self.b().build_conditional_branch(won, record, merge)?;
        self.b().position_at_end(record);
        let dims = check.indices.len().min(8);
        let mut words: Vec<IntValue<'ctx>> = vec![i64t.const_int(dims as u64, false)];
        words.extend(&check.indices[..dims]);
        words.extend(&check.shape[..dims]);
        self.write_error_info(words, &check.array)?;
        self.b().build_unconditional_branch(merge)?;
        self.b().position_at_end(merge);
        self.b().build_unconditional_branch(cont)?;
        // The block the failing path leaves from must directly precede `cont` for the
        // load's phi to find it.
        fail.move_before(cont).map_err(|_| err("block order"))?;
        record.move_before(cont).map_err(|_| err("block order"))?;
        merge.move_before(cont).map_err(|_| err("block order"))?;
        self.b().position_at_end(access);
        Ok(Some(cont))
    }

    fn element_ptr(
        &mut self,
        array: Handle<Expr>,
        indices: &[Index],
    ) -> R<(PointerValue<'ctx>, ArrayType)> {
        let (p, at, _) = self.element_ptr_indices(array, indices)?;
        Ok((p, at))
    }

    /// The element's address, with each index as an `i64` after the negative wrap.
    fn element_ptr_indices(
        &mut self,
        array: Handle<Expr>,
        indices: &[Index],
    ) -> R<(PointerValue<'ctx>, ArrayType, Vec<IntValue<'ctx>>)> {
        let at = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("indexing a non-array"))?;
        let desc = self.value(array)?.into_struct_value();
        let data = self
            .b()
            .build_extract_value(desc, 0, "data")?
            .into_pointer_value();
        let i64t = self.e.ctx.i64_type();
        let mut offset: Option<IntValue<'ctx>> = None;
        let mut idx = Vec::new();
        for (d, ix) in indices.iter().enumerate() {
            let s = self.scalar(ix.value)?;
            let v = self.value(ix.value)?.into_int_value();
            let mut i = self
                .b()
                .build_int_cast_sign_flag(v, i64t, s.is_signed(), "")?;
            if !s.is_signed() && at.space != MemSpace::Global {
                self.mark_small_space_index(i);
            }
            if ix.wrap && s.is_signed() {
                let n = self.dim(desc, 1, d as u8)?;
                let neg =
                    self.b()
                        .build_int_compare(IntPredicate::SLT, i, i64t.const_zero(), "")?;
                let wrapped = self.b().build_int_add(i, n, "")?;
                i = self.b().build_select(neg, wrapped, i, "")?.into_int_value();
            }
            idx.push(i);
            let stride = self.stride(desc, &at, d as u8)?;
            let term = if stride.is_const() && stride.get_zero_extended_constant() == Some(1) {
                i
            } else {
                self.b().build_int_mul(i, stride, "")?
            };
            offset = Some(match offset {
                None => term,
                Some(o) => self.b().build_int_add(o, term, "")?,
            });
        }
        let offset = offset.unwrap_or_else(|| i64t.const_zero());
        let et = self.e.mem_type(&at.dtype.ty());
        // SAFETY of the GEP: the index is in elements of `et`; bounds are the program's
        // responsibility (as in CUDA C++), and no `inbounds` is claimed.
        let ptr = unsafe { self.b().build_gep(et, data, &[offset], "elem")? };
        Ok((ptr, at, idx))
    }

    /// Marks the zero extension `i` of an unsigned index into a shared, local, constant or
    /// cluster array `nneg` (the operand is below 2^31 as a signed number, so the zero and the
    /// sign extension agree). An index in bounds there is below 2^31: those spaces hold at
    /// most a few hundred KiB, and an out-of-bounds index is the program's error (§5.1), so
    /// only in bounds-checking mode, where such an index must reach its check, is nothing
    /// marked. With the mark, LLVM sees `s[i]` and `s[i + 4]` (whose add it proves does not
    /// overflow, and writes as `sext(i) + 4`) as one base plus offsets, where a plain zero
    /// extension of `i` next to `sext(i)` kept two addresses live (bitonic_sort, bench/NOTES.md
    /// session 16).
    fn mark_small_space_index(&self, i: IntValue<'ctx>) {
        if self.e.program.options.bounds_check {
            return;
        }
        let Some(inst) = i.as_instruction() else {
            return;
        };
        if inst.get_opcode() == inkwell::values::InstructionOpcode::ZExt {
            use inkwell::values::AsValueRef;
            // SAFETY: `inst` is a live zext instruction of this module.
            unsafe { inkwell::llvm_sys::core::LLVMSetNNeg(inst.as_value_ref(), 1) };
        }
    }

    /// A descriptor value from its parts.
    pub(super) fn descriptor(
        &self,
        at: &ArrayType,
        data: PointerValue<'ctx>,
        shape: &[IntValue<'ctx>],
        strides: &[IntValue<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        let st = self.e.descriptor_type(at);
        let mut agg = self.b().build_insert_value(st.get_undef(), data, 0, "")?;
        let dims = self.e.ctx.i64_type().array_type(u32::from(at.ndim));
        let mut sh = dims.get_undef();
        let mut sd = dims.get_undef();
        for (d, (n, s)) in shape.iter().zip(strides).enumerate() {
            sh = self
                .b()
                .build_insert_value(sh, *n, d as u32, "")?
                .into_array_value();
            sd = self
                .b()
                .build_insert_value(sd, *s, d as u32, "")?
                .into_array_value();
        }
        agg = self.b().build_insert_value(agg, sh, 1, "")?;
        agg = self.b().build_insert_value(agg, sd, 2, "")?;
        Ok(agg.as_basic_value_enum())
    }

    pub(super) fn static_array(
        &mut self,
        h: Handle<Expr>,
        at: &ArrayType,
        shape: &[u64],
        align: u64,
    ) -> R<BasicValueEnum<'ctx>> {
        let i64t = self.e.ctx.i64_type();
        let count: u64 = shape.iter().product();
        let et = self.e.mem_type(&at.dtype.ty());
        let arr_t = et.array_type(count as u32);
        // A function with tensor-core operations gets its shared and local tiles 32-byte
        // aligned, the most WMMA and ldmatrix need (§19); other functions are unchanged.
        let tensor = self
            .f
            .exprs
            .iter()
            .any(|(_, e)| matches!(e, Expr::Intrinsic(Intrinsic::Tensor(_), _)));
        let ealign = elem_align(&at.dtype);
        // A shared tile of 16 bytes or more is 16-byte aligned (issue 31): LLVM's load/store
        // vectorizer joins `t[r, 4 * k + 0..4]` into one `ld.shared.v4` only when it can
        // prove the first address 16-byte aligned, and alignment inference derives that
        // from the index's known bits only up to the array's own alignment. With 4, the
        // 8x8 register tile of llm.c's matmul_forward_kernel4 read its shared tiles with 64
        // scalar loads where nvcc's code uses 16 `LDS.128`.
        let vector = if at.space == MemSpace::Shared && count.saturating_mul(ealign) >= 16 {
            16
        } else {
            0
        };
        let align = align
            .max(ealign)
            .max(vector)
            .max(if tensor { 32 } else { 0 }) as u32;
        let data = if at.space == MemSpace::Shared {
            let name = format!("__pyd_shared_{}_{}", self.f.symbol, h.index());
            let g = match self.e.module.get_global(&name) {
                Some(g) => g,
                None => {
                    let g = self
                        .e
                        .module
                        .add_global(arr_t, Some(AddressSpace::from(3u16)), &name);
                    g.set_linkage(Linkage::Internal);
                    g.set_initializer(&arr_t.get_undef());
                    g.set_alignment(align);
                    g
                }
            };
            g.as_pointer_value()
        } else {
            // Thread-local arrays live in the entry block so each call site allocates once.
            let slot = self.entry_alloca(arr_t, "local_array")?;
            slot.as_instruction()
                .ok_or_else(|| err("alloca"))?
                .set_alignment(align)
                .map_err(|e| err(e.to_string()))?;
            slot
        };
        let n = shape.len();
        let mut strides = vec![1u64; n];
        if at.layout == Layout::F {
            for d in 1..n {
                strides[d] = strides[d - 1] * shape[d - 1];
            }
        } else {
            for d in (0..n.saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * shape[d + 1];
            }
        }
        let sh: Vec<_> = shape.iter().map(|x| i64t.const_int(*x, false)).collect();
        let sd: Vec<_> = strides.iter().map(|x| i64t.const_int(*x, false)).collect();
        self.descriptor(at, data, &sh, &sd)
    }

    /// A module-level constant array: one read-only global per array in the program (in
    /// the constant bank, or global memory past 64 KiB), initialized with its bytes.
    pub(super) fn const_array(
        &mut self,
        at: &ArrayType,
        a: &crate::ir::ConstArray,
    ) -> R<BasicValueEnum<'ctx>> {
        let name = a.symbol();
        let g = match self.e.module.get_global(&name) {
            Some(g) => g,
            None => {
                let i8t = self.e.ctx.i8_type();
                let bytes: Vec<_> = a
                    .bytes
                    .iter()
                    .map(|b| i8t.const_int(u64::from(*b), false))
                    .collect();
                let init = i8t.const_array(&bytes);
                let g = self.e.module.add_global(
                    i8t.array_type(a.bytes.len() as u32),
                    Some(addr_space(at.space)),
                    &name,
                );
                g.set_linkage(Linkage::Internal);
                g.set_constant(true);
                g.set_initializer(&init);
                g.set_alignment(elem_align(&at.dtype).max(8) as u32);
                g
            }
        };
        let i64t = self.e.ctx.i64_type();
        let n = a.shape.len();
        let mut strides = vec![1u64; n];
        if at.layout == Layout::F {
            for d in 1..n {
                strides[d] = strides[d - 1] * a.shape[d - 1];
            }
        } else {
            for d in (0..n.saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * a.shape[d + 1];
            }
        }
        let sh: Vec<_> = a.shape.iter().map(|x| i64t.const_int(*x, false)).collect();
        let sd: Vec<_> = strides.iter().map(|x| i64t.const_int(*x, false)).collect();
        self.descriptor(at, g.as_pointer_value(), &sh, &sd)
    }

    pub(super) fn dynamic_shared(&mut self, ty: &Type) -> R<BasicValueEnum<'ctx>> {
        let at = ty
            .as_array()
            .cloned()
            .ok_or_else(|| err("dynamic shared of a non-array"))?;
        let name = "__pyd_dynamic_shared";
        let g = match self.e.module.get_global(name) {
            Some(g) => g,
            None => {
                let t = self.e.ctx.i8_type().array_type(0);
                let g = self
                    .e
                    .module
                    .add_global(t, Some(AddressSpace::from(3u16)), name);
                g.set_linkage(Linkage::External);
                g.set_alignment(16);
                g
            }
        };
        let i64t = self.e.ctx.i64_type();
        let size = self
            .asm(
                "mov.u32 $0, %dynamic_smem_size;",
                "=r",
                Some(self.e.ctx.i32_type().into()),
                &[],
            )?
            .ok_or_else(|| err("dynamic_smem_size"))?
            .into_int_value();
        let size = self.b().build_int_z_extend(size, i64t, "")?;
        self.descriptor(
            &at,
            g.as_pointer_value(),
            &[size],
            &[i64t.const_int(1, false)],
        )
    }
}
