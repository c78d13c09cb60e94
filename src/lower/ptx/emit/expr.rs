//! Lowering of IR expressions: one arm per expression kind, each delegating to the
//! operator, array, intrinsic and atomic helpers of the sibling modules.

use super::*;

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    pub(super) fn expr(&mut self, h: Handle<Expr>) -> R<Option<BasicValueEnum<'ctx>>> {
        crate::stack::deep(|| self.expr_inner(h))
    }

    fn expr_inner(&mut self, h: Handle<Expr>) -> R<Option<BasicValueEnum<'ctx>>> {
        let ty = self.ty(h).clone();
        let v: BasicValueEnum<'ctx> = match &self.f.exprs[h] {
            Expr::Asm(a) => {
                let a = a.clone();
                return self.inline_asm(&a, &ty);
            }
            Expr::Launch(l) => {
                let l = l.clone();
                self.device_launch(&l)?
            }
            Expr::Literal(lit) => {
                let s = ty.as_scalar().ok_or_else(|| err("non-scalar literal"))?;
                let t = self.e.scalar_type(s);
                let real = match lit {
                    Literal::Int(i) => Some(*i as f64),
                    Literal::Float(x) => Some(*x),
                    Literal::Bool(b) => Some(f64::from(u8::from(*b))),
                    Literal::Complex(..) => None,
                };
                if let Literal::Complex(re, im) = lit {
                    self.complex_literal(s, *re, *im)?
                } else if s.is_complex() {
                    self.complex_literal(s, real.unwrap_or(0.0), 0.0)?
                } else if s.is_fp8() {
                    self.fp8_literal(s, real.unwrap_or(0.0))?
                } else {
                    match (lit, s.is_float()) {
                        (Literal::Bool(b), _) => self
                            .e
                            .ctx
                            .bool_type()
                            .const_int(u64::from(*b), false)
                            .into(),
                        (Literal::Int(i), false) => {
                            t.into_int_type().const_int(*i as u64, s.is_signed()).into()
                        }
                        (Literal::Int(i), true) => {
                            t.into_float_type().const_float(*i as f64).into()
                        }
                        (Literal::Float(x), true) => t.into_float_type().const_float(*x).into(),
                        (Literal::Float(x), false) => {
                            t.into_int_type().const_int(*x as i64 as u64, true).into()
                        }
                        (Literal::Complex(..), _) => {
                            return Err(err("complex literal of a real type"));
                        }
                    }
                }
            }
            Expr::Local(l) => {
                let lt = &self.f.locals[*l].ty;
                if lt == &Type::None {
                    return Ok(None);
                }
                let v = match self.locals[l.index()] {
                    LocalSlot::Memory(slot) => {
                        self.b().build_load(self.e.mem_type(lt), slot, "")?
                    }
                    LocalSlot::Value(v) => v,
                };
                self.reg_repr(v, lt)?
            }
            Expr::Unary(op, a) => {
                let s = self.scalar(*a)?;
                let v = self.value(*a)?;
                self.unary(*op, s, v)?
            }
            Expr::Binary(op, a, b) => {
                let s = self.scalar(*a)?;
                let x = self.value(*a)?;
                let y = self.value(*b)?;
                self.binary(*op, s, x, y)?
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let is_and = matches!(self.f.exprs[h], Expr::And(..));
                let s = ty
                    .as_scalar()
                    .ok_or_else(|| err("and/or on a non-scalar"))?;
                let x = self.value(*a)?;
                let truth = self.truthy(x, s)?;
                let from = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                let rhs = self.new_block(if is_and { "and.rhs" } else { "or.rhs" });
                let merge = self.new_block("bool.end");
                if is_and {
                    self.b().build_conditional_branch(truth, rhs, merge)?;
                } else {
                    self.b().build_conditional_branch(truth, merge, rhs)?;
                }
                self.b().position_at_end(rhs);
                let y = self.value(*b)?;
                let rhs_end = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                self.b().build_unconditional_branch(merge)?;
                self.b().position_at_end(merge);
                let phi = self.b().build_phi(x.get_type(), "")?;
                phi.add_incoming(&[(&x, from), (&y, rhs_end)]);
                phi.as_basic_value()
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = self.value(*cond)?.into_int_value();
                let tb = self.new_block("sel.then");
                let eb = self.new_block("sel.else");
                let mb = self.new_block("sel.end");
                self.b().build_conditional_branch(c, tb, eb)?;
                self.b().position_at_end(tb);
                let x = self.value(*then)?;
                let tend = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                self.b().build_unconditional_branch(mb)?;
                self.b().position_at_end(eb);
                let y = self.value(*otherwise)?;
                let eend = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                self.b().build_unconditional_branch(mb)?;
                self.b().position_at_end(mb);
                let phi = self.b().build_phi(x.get_type(), "")?;
                phi.add_incoming(&[(&x, tend), (&y, eend)]);
                phi.as_basic_value()
            }
            Expr::Cast(a) => {
                let from = self.scalar(*a)?;
                let to = ty.as_scalar().ok_or_else(|| err("cast to a non-scalar"))?;
                let v = self.value(*a)?;
                self.cast(v, from, to)?
            }
            Expr::Call(callee, args) => {
                let target = &self.e.program.functions[*callee];
                let mut vals: Vec<BasicMetadataValueEnum> = Vec::new();
                for (a, l) in args.iter().zip(target.param_locals()) {
                    let v = self.value(*a)?;
                    let pt = &target.locals[l].ty;
                    if by_reference(target, pt) {
                        // nvcc's convention: the caller passes the address of a copy.
                        let slot = self.entry_alloca(self.e.mem_type(pt), "byref")?;
                        self.b().build_store(slot, v)?;
                        vals.push(slot.into());
                    } else if target.interop && pt == &Type::Scalar(Scalar::BFloat16) {
                        // LLVM 19's NVPTX back end crashes selecting a constant `bfloat` call
                        // argument (a non-inlined call: interoperable and `extern` callees),
                        // and the optimizer folds anything transparent back into one: pass the
                        // bits through an opaque move.
                        let i16t = self.e.ctx.i16_type();
                        let bits = self.b().build_bit_cast(v, i16t, "")?;
                        let moved = self
                            .asm("mov.b16 $0, $1;", "=h,h", Some(i16t.into()), &[bits])?
                            .ok_or_else(|| err("mov.b16 without a result"))?;
                        let bf = self.b().build_bit_cast(moved, self.e.ctx.bf16_type(), "")?;
                        vals.push(bf.into());
                    } else if boxed_fp8(target, pt) {
                        let boxed = self.e.fp8_box().get_undef();
                        let b = self.b().build_insert_value(boxed, v, 0, "")?;
                        vals.push(b.as_basic_value_enum().into());
                    } else {
                        vals.push(v.into());
                    }
                }
                if self.e.random[callee.index()] {
                    vals.push(
                        self.rng
                            .ok_or_else(|| err("a call that draws random numbers without state"))?
                            .into(),
                    );
                }
                let boxed_ret = boxed_fp8(target, &target.ret);
                let callee = self.e.fns[callee.index()];
                let call = self.b().build_call(callee, &vals, "")?;
                match call.try_as_basic_value() {
                    ValueKind::Basic(v) if boxed_ret => {
                        self.b().build_extract_value(v.into_struct_value(), 0, "")?
                    }
                    ValueKind::Basic(v) => v,
                    _ => return Ok(None),
                }
            }
            Expr::Intrinsic(op, args) => {
                let args = args.clone();
                return self.intrinsic(*op, &args, &ty);
            }
            Expr::Load { array, indices } => {
                let span = self.f.exprs.span(h);
                let (ptr, at, ok) = self.element_ptr_checked(*array, indices, span)?;
                let t = at.dtype.ty();
                let mt = self.e.mem_type(&t);
                let before = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                let cont = self.guard(ok)?;
                let ld = self.b().build_load(mt, ptr, "")?;
                if let Some(i) = ld.as_instruction_value() {
                    i.set_alignment(elem_align(&at.dtype) as u32)
                        .map_err(|e| err(e.to_string()))?;
                    self.mark_restrict(i, *array, true)?;
                }
                let ld = match cont {
                    None => ld,
                    Some(cont) => {
                        // An out-of-range load reads zero (after recording the error).
                        let loaded = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                        self.b().build_unconditional_branch(cont)?;
                        self.b().position_at_end(cont);
                        let phi = self.b().build_phi(mt, "")?;
                        let fail = cont
                            .get_previous_basic_block()
                            .filter(|b| *b != loaded)
                            .unwrap_or(before);
                        phi.add_incoming(&[(&ld, loaded), (&mt.const_zero(), fail)]);
                        phi.as_basic_value()
                    }
                };
                self.reg_repr(ld, &t)?
            }
            Expr::ArrayProp(a, p) => {
                let at = self
                    .ty(*a)
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("property of a non-array"))?;
                let desc = self.value(*a)?.into_struct_value();
                let i64t = self.e.ctx.i64_type();
                match p {
                    ArrayProp::Shape(d) => self.dim(desc, 1, *d)?.into(),
                    ArrayProp::Stride(d) => {
                        let s = self.stride(desc, &at, *d)?;
                        let size = i64t.const_int(elem_size(&at.dtype), false);
                        self.b().build_int_mul(s, size, "")?.into()
                    }
                    ArrayProp::Address => {
                        // A generic address, whatever space the array lives in.
                        let data = self
                            .b()
                            .build_extract_value(desc, 0, "")?
                            .into_pointer_value();
                        let generic =
                            if data.get_type().get_address_space() == AddressSpace::default() {
                                data
                            } else {
                                self.b().build_address_space_cast(
                                    data,
                                    self.e.ctx.ptr_type(AddressSpace::default()),
                                    "",
                                )?
                            };
                        self.b().build_ptr_to_int(generic, i64t, "")?.into()
                    }
                    ArrayProp::Size => {
                        let mut acc = i64t.const_int(1, false);
                        for d in 0..at.ndim {
                            let n = self.dim(desc, 1, d)?;
                            acc = self.b().build_int_mul(acc, n, "")?;
                        }
                        acc.into()
                    }
                }
            }
            Expr::Tuple(items) => {
                let st = self
                    .e
                    .ty(&ty)
                    .ok_or_else(|| err("tuple of None"))?
                    .into_struct_type();
                let mut agg = st.get_undef().as_basic_value_enum();
                let elems: Vec<Type> = match &ty {
                    Type::Tuple(ts) => ts.clone(),
                    Type::Struct(st) => st.fields.iter().map(|(_, t)| t.clone()).collect(),
                    Type::Vector { elem, len } => vec![Type::Scalar(*elem); *len as usize],
                    _ => return Err(err("tuple of a non-tuple type")),
                };
                for (i, (item, et)) in items.iter().zip(elems.iter()).enumerate() {
                    let v = self.value(*item)?;
                    let v = self.mem_repr(v, et)?;
                    let at = self.e.field_index(&ty, i as u32);
                    agg = self
                        .b()
                        .build_insert_value(agg.into_struct_value(), v, at, "")?
                        .as_basic_value_enum();
                }
                agg
            }
            Expr::Extract(a, i) => {
                let at = self.e.field_index(self.f.ty(*a), *i);
                let agg = self.value(*a)?.into_struct_value();
                let v = self.b().build_extract_value(agg, at, "")?;
                self.reg_repr(v, &ty)?
            }
            Expr::StaticArray { shape, align } => {
                let at = ty
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("static array of a non-array type"))?;
                self.static_array(h, &at, shape, *align)?
            }
            Expr::DynamicShared => self.dynamic_shared(&ty)?,
            Expr::ConstArray(a) => {
                let at = ty
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("constant array of a non-array type"))?;
                self.const_array(&at, a)?
            }
            Expr::View { array, subs } => self.view(*array, subs, &ty, self.f.exprs.span(h))?,
            Expr::Reshape {
                array,
                shape,
                fortran,
            } => self.reshape(*array, shape, *fortran, &ty)?,
            Expr::Reinterpret(a) => {
                let from = self
                    .ty(*a)
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("view of a non-array"))?;
                let to = ty
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("view to a non-array"))?;
                let desc = self.value(*a)?.into_struct_value();
                let data = self
                    .b()
                    .build_extract_value(desc, 0, "")?
                    .into_pointer_value();
                let n = self.dim(desc, 1, 0)?;
                let i64t = self.e.ctx.i64_type();
                let bytes =
                    self.b()
                        .build_int_mul(n, i64t.const_int(elem_size(&from.dtype), false), "")?;
                let n2 = self.b().build_int_unsigned_div(
                    bytes,
                    i64t.const_int(elem_size(&to.dtype), false),
                    "",
                )?;
                self.descriptor(&to, data, &[n2], &[i64t.const_int(1, false)])?
            }
            Expr::FieldRef(base, i) => {
                let st = match self.ty(*base) {
                    Type::StructRef { st, .. } => Type::Struct(st.clone()),
                    _ => return Err(err("field reference through a non-struct reference")),
                };
                let lt = self
                    .e
                    .ty(&st)
                    .ok_or_else(|| err("struct type"))?
                    .into_struct_type();
                let at = self.e.field_index(&st, *i);
                let ptr = self.value(*base)?.into_pointer_value();
                self.b().build_struct_gep(lt, ptr, at, "field")?.into()
            }
            Expr::FieldArray(base, i) => {
                let (st, space) = match self.ty(*base) {
                    Type::StructRef { st, space } => (st.clone(), *space),
                    _ => return Err(err("sub-array of a non-struct reference")),
                };
                let at = ty
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("sub-array view of a non-array type"))?;
                let shape = st.subarray_shape(*i as usize).to_vec();
                let lt = self
                    .e
                    .ty(&Type::Struct(st.clone()))
                    .ok_or_else(|| err("struct type"))?
                    .into_struct_type();
                let at_field = self.e.field_index(&Type::Struct(st), *i);
                let ptr = self.value(*base)?.into_pointer_value();
                let field = self.b().build_struct_gep(lt, ptr, at_field, "sub")?;
                let data = self.b().build_address_space_cast(
                    field,
                    self.e.ctx.ptr_type(addr_space(space)),
                    "",
                )?;
                let i64t = self.e.ctx.i64_type();
                let dims: Vec<_> = shape.iter().map(|n| i64t.const_int(*n, false)).collect();
                let strides: Vec<_> = (0..shape.len())
                    .map(|d| i64t.const_int(shape[d + 1..].iter().product(), false))
                    .collect();
                self.descriptor(&at, data, &dims, &strides)?
            }
            Expr::Deref(r) => {
                let ptr = self.value(*r)?.into_pointer_value();
                let ld = self.b().build_load(self.e.mem_type(&ty), ptr, "")?;
                if let Some(i) = ld.as_instruction_value() {
                    i.set_alignment(ref_align(&ty))
                        .map_err(|e| err(e.to_string()))?;
                }
                self.reg_repr(ld, &ty)?
            }
            Expr::ElementRef { array, indices } => {
                let span = self.f.exprs.span(h);
                let (ptr, _, ok) = self.element_ptr_checked(*array, indices, span)?;
                let generic = self.e.ctx.ptr_type(AddressSpace::default());
                let ptr = self.b().build_address_space_cast(ptr, generic, "")?;
                let before = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                match self.guard(ok)? {
                    None => ptr.into(),
                    Some(cont) => {
                        // Out of range: the atomic operates on a scratch word instead, so it
                        // cannot corrupt memory; the error is recorded.
                        let inside = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                        self.b().build_unconditional_branch(cont)?;
                        self.b().position_at_end(cont);
                        let bytes = match self.ty(*array).as_array() {
                            Some(at) => elem_size(&at.dtype),
                            None => 16,
                        };
                        let scratch = self.e.bounds_scratch(bytes);
                        let scratch = self.b().build_address_space_cast(scratch, generic, "")?;
                        let phi = self.b().build_phi(generic, "")?;
                        let fail = cont
                            .get_previous_basic_block()
                            .filter(|b| *b != inside)
                            .unwrap_or(before);
                        phi.add_incoming(&[(&ptr, inside), (&scratch, fail)]);
                        phi.as_basic_value()
                    }
                }
            }
            Expr::Atomic {
                op,
                order,
                scope,
                target,
                args,
            } => {
                let (dtype, space, record) = match self.ty(*target) {
                    Type::Ref {
                        dtype,
                        space,
                        record,
                    } => (*dtype, *space, record.clone()),
                    _ => return Err(err("atomic on a non-reference")),
                };
                let ptr = self.value(*target)?.into_pointer_value();
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.value(*a)?);
                }
                let Some(st) = record else {
                    return self.atomic(*op, *order, *scope, dtype, space, ptr, &vals);
                };
                // A struct element (§9.2): the atomic moves its bits as the number type of
                // the same size, and the operands and the result are converted through a
                // stack slot (which LLVM folds into register moves).
                let (st, bits) = (Type::Struct(st), Type::Scalar(dtype));
                for v in &mut vals {
                    *v = self.same_bits(*v, &st, &bits)?;
                }
                let r = self.atomic(*op, *order, *scope, dtype, space, ptr, &vals)?;
                return r.map(|r| self.same_bits(r, &bits, &st)).transpose();
            }
        };
        Ok(Some(v))
    }
}
