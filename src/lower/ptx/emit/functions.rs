//! Declaring and defining functions: each IR function's LLVM signature (kernels, device
//! functions, the interoperable C++ ABI), its body's prologue, the bounds-checking globals,
//! and the LLVM intrinsics and libdevice functions that bodies call.

use super::*;

impl<'ctx> Emitter<'_, 'ctx> {
    pub(super) fn declare(&self, f: &Function) -> R<FunctionValue<'ctx>> {
        let kernel = f.kind == FunctionKind::Kernel;
        let mut params: Vec<BasicMetadataTypeEnum> = Vec::new();
        for l in f.param_locals() {
            let t = &f.locals[l].ty;
            let p: BasicTypeEnum = if (kernel && kernel_byval(t)) || by_reference(f, t) {
                self.ctx.ptr_type(AddressSpace::default()).into()
            } else if boxed_fp8(f, t) {
                self.fp8_box().into()
            } else if kernel {
                self.mem_type(t)
            } else {
                self.ty(t).ok_or_else(|| err("a parameter of type None"))?
            };
            params.push(p.into());
        }
        if self.draws_random(f) {
            // The launch's seed (kernels) or the generator state (functions): `random.rs`.
            params.push(if kernel {
                self.ctx.i64_type().into()
            } else {
                self.ctx.ptr_type(AddressSpace::default()).into()
            });
        }
        let fn_ty = match self.ty(&f.ret) {
            Some(_) if boxed_fp8(f, &f.ret) => self.fp8_box().fn_type(&params, false),
            Some(r) => r.fn_type(&params, false),
            None => self.ctx.void_type().fn_type(&params, false),
        };
        // An interoperable function is defined (`.visible`) by the module compiled for it;
        // a module whose entry calls it holds a `.weak` copy, so modules of several entries
        // link together (the linker keeps the definition over the copies). Any `@func`
        // compiled as the entry stays visible (`.visible .func`) for linking.
        let entry = std::ptr::eq(f, &self.program.functions[self.program.entry]);
        let linkage = if kernel || f.external || entry {
            None
        } else if f.interop {
            Some(Linkage::WeakODR)
        } else {
            Some(Linkage::Internal)
        };
        let llfn = self.module.add_function(&f.symbol, fn_ty, linkage);
        if kernel {
            let byval = Attribute::get_named_enum_kind_id("byval");
            let align = Attribute::get_named_enum_kind_id("align");
            for (i, l) in f.param_locals().enumerate() {
                let t = &f.locals[l].ty;
                if kernel_byval(t) {
                    let at = self
                        .ctx
                        .create_type_attribute(byval, self.mem_type(t).as_any_type_enum());
                    llfn.add_attribute(AttributeLoc::Param(i as u32), at);
                    // The parameter's alignment is the type's CUDA C++ alignment (float4: 16).
                    let a = crate::abi::size_align(t).1.max(1);
                    llfn.add_attribute(
                        AttributeLoc::Param(i as u32),
                        self.ctx.create_enum_attribute(align, a),
                    );
                }
            }
            // `hopper.TensorMap` parameters are `__grid_constant__` (§18.4): NVPTX then takes
            // their address in parameter space (`cvta.param`) instead of copying them to
            // local memory. LLVM 19 reads the (1-based) indices from this annotation.
            let grid_constants: Vec<_> = f
                .param_locals()
                .enumerate()
                .filter(|(_, l)| f.locals[*l].ty.is_tensor_map())
                .map(|(i, _)| self.ctx.i32_type().const_int(i as u64 + 1, false).into())
                .collect();
            if !grid_constants.is_empty() {
                let md = self.ctx.metadata_node(&[
                    llfn.as_global_value().as_pointer_value().into(),
                    self.ctx.metadata_string("grid_constant").into(),
                    self.ctx.metadata_node(&grid_constants).into(),
                ]);
                self.module
                    .add_global_metadata("nvvm.annotations", &md)
                    .map_err(|e| err(e.to_string()))?;
            }
            let md = self.ctx.metadata_node(&[
                llfn.as_global_value().as_pointer_value().into(),
                self.ctx.metadata_string("kernel").into(),
                self.ctx.i32_type().const_int(1, false).into(),
            ]);
            self.module
                .add_global_metadata("nvvm.annotations", &md)
                .map_err(|e| err(e.to_string()))?;
            // The entry's options; a kernel it launches (§18.3) has none of them.
            let o = &self.program.options;
            for (key, value) in [
                ("maxntidx", o.max_threads),
                ("minctasm", o.min_blocks),
                ("maxnreg", o.max_registers),
            ] {
                if let Some(v) = value.filter(|_| entry) {
                    let md = self.ctx.metadata_node(&[
                        llfn.as_global_value().as_pointer_value().into(),
                        self.ctx.metadata_string(key).into(),
                        self.ctx.i32_type().const_int(u64::from(v), false).into(),
                    ]);
                    self.module
                        .add_global_metadata("nvvm.annotations", &md)
                        .map_err(|e| err(e.to_string()))?;
                }
            }
        }
        if self.program.options.fastmath {
            for (k, v) in [
                ("unsafe-fp-math", "true"),
                ("no-infs-fp-math", "true"),
                ("no-nans-fp-math", "true"),
                ("no-signed-zeros-fp-math", "true"),
                ("denormal-fp-math-f32", "preserve-sign,preserve-sign"),
            ] {
                llfn.add_attribute(
                    AttributeLoc::Function,
                    self.ctx.create_string_attribute(k, v),
                );
            }
        }
        Ok(llfn)
    }

    pub(super) fn define(&mut self, f: &Function, llfn: FunctionValue<'ctx>) -> R<()> {
        let entry = self.ctx.append_basic_block(llfn, "entry");
        self.builder.position_at_end(entry);
        if let Some((dib, cu)) = &self.debug {
            let (line, _) = self.program.file.line_col(f.span.start);
            let ty = dib.create_subroutine_type(cu.get_file(), None, &[], 0);
            let sp = dib.create_function(
                cu.as_debug_info_scope(),
                &f.name,
                Some(&f.symbol),
                cu.get_file(),
                line as u32,
                ty,
                f.kind != FunctionKind::Kernel && !f.interop,
                true,
                line as u32,
                0,
                !self.program.options.debug,
            );
            llfn.set_subprogram(sp);
            let loc =
                dib.create_debug_location(self.ctx, line as u32, 0, sp.as_debug_info_scope(), None);
            self.builder.set_current_debug_location(loc);
        }
        // A parameter the body never assigns stays an SSA value; every other local is a
        // stack slot (which SROA promotes). Leaving the optimizer fewer slots to split and
        // fewer loads to forward makes small kernels compile ~6% faster.
        let assigned = assigned_locals(f);
        let kernel = f.kind == FunctionKind::Kernel;
        // Stack slots first (none for the parameters that stay values), then the
        // parameters' values, which fill their slots or stand for them.
        let mut slots = Vec::with_capacity(f.locals.len());
        for (i, (_, l)) in f.locals.iter().enumerate() {
            // (Under `debug=True` every parameter gets a slot, for the debugger to show.)
            if kernel && i < f.params && !assigned[i] && !self.program.options.debug {
                slots.push(None);
                continue;
            }
            let t = self.mem_type(&l.ty);
            let slot = self.builder.build_alloca(t, &l.name)?;
            // Parameters are stored below; every other local starts at zero.
            if i >= f.params {
                self.builder.build_store(slot, t.const_zero())?;
            }
            slots.push(Some(slot));
        }
        let mut locals = Vec::with_capacity(f.locals.len());
        for (i, l) in f.param_locals().enumerate() {
            let p = llfn
                .get_nth_param(i as u32)
                .ok_or_else(|| err("missing parameter"))?;
            let ty = &f.locals[l].ty;
            let v = if (kernel && kernel_byval(ty)) || by_reference(f, ty) {
                let ld =
                    self.builder
                        .build_load(self.mem_type(ty), p.into_pointer_value(), "arg")?;
                if let Some(i) = ld.as_instruction_value() {
                    let a = crate::abi::size_align(ty).1.max(1) as u32;
                    i.set_alignment(a).map_err(|e| err(e.to_string()))?;
                }
                ld
            } else if boxed_fp8(f, ty) {
                self.builder
                    .build_extract_value(p.into_struct_value(), 0, "")?
            } else if ty == &Type::Scalar(Scalar::Bool) && kernel {
                p // already a byte
            } else if ty == &Type::Scalar(Scalar::Bool) {
                self.builder
                    .build_int_z_extend(p.into_int_value(), self.ctx.i8_type(), "")?
                    .into()
            } else {
                p
            };
            locals.push(match slots[l.index()] {
                Some(slot) => {
                    self.builder.build_store(slot, v)?;
                    LocalSlot::Memory(slot)
                }
                None => LocalSlot::Value(v),
            });
        }
        for slot in &slots[f.params..] {
            let slot = slot.ok_or_else(|| err("a local without a stack slot"))?;
            locals.push(LocalSlot::Memory(slot));
        }
        if self.program.options.debug {
            self.declare_variables(f, llfn, &slots)?;
        }
        let rng = if self.draws_random(f) {
            let last = llfn
                .get_last_param()
                .ok_or_else(|| err("missing generator parameter"))?;
            if kernel {
                // The state starts at call 0 of the launch's seed.
                let st = self.rand_state_type();
                let slot = self.builder.build_alloca(st, "rng")?;
                let i64t = self.ctx.i64_type();
                let seed = last.into_int_value();
                let v =
                    st.const_named_struct(&[i64t.const_zero().into(), i64t.const_zero().into()]);
                let v = self.builder.build_insert_value(v, seed, 0, "")?;
                self.builder.build_store(slot, v.into_struct_value())?;
                Some(slot)
            } else {
                Some(last.into_pointer_value())
            }
        } else {
            None
        };
        let restrict = self.restrict_for(f);
        let mut fx = FnEmitter {
            restrict,
            e: self,
            f,
            llfn,
            locals,
            loops: Vec::new(),
            rng,
        };
        if kernel && fx.e.program.split_barrier {
            fx.init_split_barrier()?;
        }
        fx.block(&f.body)?;
        let end =
            fx.e.builder
                .get_insert_block()
                .ok_or_else(|| err("no block"))?;
        if end.get_terminator().is_none() {
            if f.ret == Type::None {
                fx.e.builder.build_return(None)?;
            } else {
                fx.e.builder.build_unreachable()?;
            }
        }
        Ok(())
    }

    /// Whether `f` (one of the program's functions) draws random numbers, so takes the
    /// generator state. Most programs draw none: then no search.
    fn draws_random(&self, f: &Function) -> bool {
        self.random.contains(&true)
            && self
                .program
                .functions
                .iter()
                .position(|(_, g)| std::ptr::eq(g, f))
                .is_some_and(|h| self.random[h])
    }

    /// `debug=True`: a `DILocalVariable` for each number-typed local and parameter in a stack
    /// slot, with a `dbg.declare` of its slot, so cuda-gdb can print it (compiler temporaries,
    /// whose names start with `$`, are left out).
    fn declare_variables(
        &self,
        f: &Function,
        llfn: FunctionValue<'ctx>,
        slots: &[Option<PointerValue<'ctx>>],
    ) -> R<()> {
        use inkwell::debug_info::{AsDIScope, DIFlags, DIFlagsConstants};
        let (Some((dib, cu)), Some(sp)) = (&self.debug, llfn.get_subprogram()) else {
            return Ok(());
        };
        let block = self
            .builder
            .get_insert_block()
            .ok_or_else(|| err("no block"))?;
        let (line, _) = self.program.file.line_col(f.span.start);
        let line = line as u32;
        let scope = sp.as_debug_info_scope();
        let file = cu.get_file();
        for (i, (_, l)) in f.locals.iter().enumerate() {
            let (Some(slot), Type::Scalar(s)) = (slots[i], &l.ty) else {
                continue;
            };
            if l.name.starts_with('$') {
                continue;
            }
            // DWARF base type encodings: boolean, float, signed, unsigned.
            let (encoding, bits) = match s {
                Scalar::Bool => (0x02, 8),
                s if s.is_complex() => continue,
                s if s.is_float() => (0x04, s.size() * 8),
                s if s.is_signed() => (0x05, s.size() * 8),
                s => (0x08, s.size() * 8),
            };
            let ty = dib
                .create_basic_type(s.name(), bits, encoding, DIFlags::ZERO)
                .map_err(|e| err(e.to_string()))?;
            let var = if i < f.params {
                dib.create_parameter_variable(
                    scope,
                    &l.name,
                    i as u32 + 1,
                    file,
                    line,
                    ty.as_type(),
                    true,
                    DIFlags::ZERO,
                )
            } else {
                dib.create_auto_variable(
                    scope,
                    &l.name,
                    file,
                    line,
                    ty.as_type(),
                    true,
                    DIFlags::ZERO,
                    0,
                )
            };
            let loc = dib.create_debug_location(self.ctx, line, 0, scope, None);
            let expr = dib.create_expression(vec![]);
            // LLVM 19 modules hold debug records or intrinsics: insert the kind it uses.
            // SAFETY: every handle is alive and belongs to this module's context.
            unsafe {
                use inkwell::llvm_sys::core::LLVMIsNewDbgInfoFormat;
                use inkwell::llvm_sys::debuginfo::LLVMDIBuilderInsertDeclareRecordAtEnd;
                use inkwell::values::AsValueRef;
                if LLVMIsNewDbgInfoFormat(self.module.as_mut_ptr()) != 0 {
                    LLVMDIBuilderInsertDeclareRecordAtEnd(
                        dib.as_mut_ptr(),
                        slot.as_value_ref(),
                        var.as_mut_ptr(),
                        expr.as_mut_ptr(),
                        loc.as_mut_ptr(),
                        block.as_mut_ptr(),
                    );
                } else {
                    dib.insert_declare_at_end(slot, Some(var), Some(expr), loc, block);
                }
            }
        }
        Ok(())
    }

    /// The global where bounds-checked kernels record their first out-of-range access.
    pub(super) fn bounds_error_global(&self) -> PointerValue<'ctx> {
        let name = crate::ir::BOUNDS_ERROR_SYMBOL;
        let g = self.module.get_global(name).unwrap_or_else(|| {
            let i64t = self.ctx.i64_type();
            let g = self
                .module
                .add_global(i64t, Some(AddressSpace::from(1u16)), name);
            g.set_initializer(&i64t.const_zero());
            g.set_alignment(8);
            g
        });
        g.as_pointer_value()
    }

    /// A device global of at least 16 and at least `bytes` bytes that out-of-range element
    /// references (atomics, struct elements) act on in bounds-checking mode.
    pub(super) fn bounds_scratch(&self, bytes: u64) -> PointerValue<'ctx> {
        // At least the element's size: a reference to a struct element is written field by
        // field, so a smaller scratch would let an out-of-range one corrupt other globals.
        let words = bytes.div_ceil(8).max(2);
        let name = if words == 2 {
            "__pyd_bounds_scratch".to_string()
        } else {
            format!("__pyd_bounds_scratch_{words}")
        };
        let name = name.as_str();
        let g = self.module.get_global(name).unwrap_or_else(|| {
            let t = self.ctx.i64_type().array_type(words as u32);
            let g = self
                .module
                .add_global(t, Some(AddressSpace::from(1u16)), name);
            g.set_initializer(&t.const_zero());
            g.set_linkage(Linkage::Internal);
            // Aligned for any element of that size (an alignment divides the size).
            g.set_alignment((words * 8).next_power_of_two().min(4096) as u32);
            g
        });
        g.as_pointer_value()
    }

    /// `fastmath=True`: every floating-point instruction may be reassociated, contracted,
    /// approximated, and assume finite, non-NaN values.
    pub(super) fn relax_floating_point(&self) {
        use inkwell::values::{FastMathFlags, InstructionOpcode as Op};
        let mut f = self.module.get_first_function();
        while let Some(func) = f {
            for bb in func.get_basic_blocks() {
                let mut i = bb.get_first_instruction();
                while let Some(inst) = i {
                    let float = matches!(
                        inst.get_opcode(),
                        Op::FAdd | Op::FSub | Op::FMul | Op::FDiv | Op::FRem | Op::FNeg | Op::FCmp
                    ) || (inst.get_opcode() == Op::Call
                        && inst.get_type().is_float_type());
                    if float {
                        let _ = inst.set_fast_math_flags(FastMathFlags::all());
                    }
                    i = inst.get_next_instruction();
                }
            }
            f = func.get_next_function();
        }
    }

    pub(super) fn intrinsic(
        &self,
        name: &str,
        types: &[BasicTypeEnum<'ctx>],
    ) -> R<FunctionValue<'ctx>> {
        LlvmIntrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, types))
            .ok_or_else(|| err(format!("LLVM intrinsic {name} not found")))
    }

    pub(super) fn libdevice_fn(
        &mut self,
        name: &str,
        ty: BasicTypeEnum<'ctx>,
        arity: usize,
    ) -> FunctionValue<'ctx> {
        self.uses_libdevice = true;
        if let Some(f) = self.module.get_function(name) {
            return f;
        }
        let params: Vec<BasicMetadataTypeEnum> = vec![ty.into(); arity];
        self.module
            .add_function(name, ty.fn_type(&params, false), None)
    }
}
