//! IR → LLVM IR for the NVPTX target.
//!
//! Values: `bool` is `i1` in registers and `i8` in memory and inside aggregates; integers and
//! floats map directly; tuples and vectors are LLVM structs; an array is its descriptor
//! `{ ptr addrspace(N) data, [ndim x i64] shape, [ndim x i64] strides }` with strides in
//! elements (the spec's `interoperable_array_descriptor`). Kernels take aggregates `byval`, as
//! clang does for `__global__` functions, so their parameters match CUDA C++'s by-value ABI.
//! Locals are allocas that the optimizer promotes to registers.

use super::LowerError;
use crate::ir::{
    ArrayProp, Axis, BinaryOp, Expr, Function, FunctionKind, Handle, Index, Intrinsic, Literal,
    Program, Stmt, StmtKind, UnaryOp,
};
use crate::types::{ArrayType, Layout, MemSpace, Scalar, Type};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic as LlvmIntrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{AnyType, BasicMetadataTypeEnum, BasicType, BasicTypeEnum, StructType};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, FunctionValue, IntValue,
    PointerValue, ValueKind,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};

type R<T> = Result<T, LowerError>;

fn err(m: impl Into<String>) -> LowerError {
    LowerError::Llvm(m.into())
}

/// Emits every function of `program` into `module`; returns whether libdevice is needed.
pub fn emit<'ctx>(ctx: &'ctx Context, module: &Module<'ctx>, program: &Program) -> R<bool> {
    let mut e = Emitter {
        ctx,
        module,
        builder: ctx.create_builder(),
        fns: Vec::new(),
        uses_libdevice: false,
    };
    for (_, f) in program.functions.iter() {
        let llfn = e.declare(f)?;
        e.fns.push(llfn);
    }
    for (h, f) in program.functions.iter() {
        e.define(f, e.fns[h.index()])?;
    }
    Ok(e.uses_libdevice)
}

struct Emitter<'a, 'ctx> {
    ctx: &'ctx Context,
    module: &'a Module<'ctx>,
    builder: Builder<'ctx>,
    fns: Vec<FunctionValue<'ctx>>,
    uses_libdevice: bool,
}

fn addr_space(s: MemSpace) -> AddressSpace {
    AddressSpace::from(match s {
        MemSpace::Global => 1u16,
        MemSpace::Shared => 3,
        MemSpace::Local => 5,
    })
}

fn is_aggregate(t: &Type) -> bool {
    matches!(t, Type::Tuple(_) | Type::Vector { .. } | Type::Array(_))
}

impl<'ctx> Emitter<'_, 'ctx> {
    fn scalar_type(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        let c = self.ctx;
        match s {
            Scalar::Bool => c.bool_type().into(),
            Scalar::Int8 | Scalar::UInt8 => c.i8_type().into(),
            Scalar::Int16 | Scalar::UInt16 => c.i16_type().into(),
            Scalar::Int32 | Scalar::UInt32 => c.i32_type().into(),
            Scalar::Int64 | Scalar::UInt64 => c.i64_type().into(),
            Scalar::Float32 => c.f32_type().into(),
            Scalar::Float64 => c.f64_type().into(),
        }
    }

    /// The register type of a value (`None` has none).
    fn ty(&self, t: &Type) -> Option<BasicTypeEnum<'ctx>> {
        Some(match t {
            Type::None => return None,
            Type::Scalar(s) => self.scalar_type(*s),
            Type::Vector { elem, len } => {
                let e = self.mem_type(&Type::Scalar(*elem));
                self.ctx.struct_type(&vec![e; *len as usize], false).into()
            }
            Type::Tuple(ts) => {
                let fields: Vec<_> = ts.iter().map(|t| self.mem_type(t)).collect();
                self.ctx.struct_type(&fields, false).into()
            }
            Type::Array(a) => self.descriptor_type(a).into(),
        })
    }

    /// The in-memory type: like `ty`, but `bool` is a byte.
    fn mem_type(&self, t: &Type) -> BasicTypeEnum<'ctx> {
        match t {
            Type::Scalar(Scalar::Bool) => self.ctx.i8_type().into(),
            Type::None => self.ctx.struct_type(&[], false).into(),
            t => self.ty(t).unwrap_or_else(|| self.ctx.i8_type().into()),
        }
    }

    fn descriptor_type(&self, a: &ArrayType) -> StructType<'ctx> {
        let i64t = self.ctx.i64_type();
        let dims = i64t.array_type(u32::from(a.ndim));
        self.ctx.struct_type(
            &[
                self.ctx.ptr_type(addr_space(a.space)).into(),
                dims.into(),
                dims.into(),
            ],
            false,
        )
    }

    fn declare(&self, f: &Function) -> R<FunctionValue<'ctx>> {
        let kernel = f.kind == FunctionKind::Kernel;
        let mut params: Vec<BasicMetadataTypeEnum> = Vec::new();
        for l in f.param_locals() {
            let t = &f.locals[l].ty;
            let p: BasicTypeEnum = if kernel && is_aggregate(t) {
                self.ctx.ptr_type(AddressSpace::default()).into()
            } else if kernel {
                self.mem_type(t)
            } else {
                self.ty(t).ok_or_else(|| err("a parameter of type None"))?
            };
            params.push(p.into());
        }
        let fn_ty = match self.ty(&f.ret) {
            Some(r) => r.fn_type(&params, false),
            None => self.ctx.void_type().fn_type(&params, false),
        };
        let linkage = if kernel || f.interop {
            None
        } else {
            Some(Linkage::Internal)
        };
        let llfn = self.module.add_function(&f.symbol, fn_ty, linkage);
        if kernel {
            let byval = Attribute::get_named_enum_kind_id("byval");
            let align = Attribute::get_named_enum_kind_id("align");
            for (i, l) in f.param_locals().enumerate() {
                let t = &f.locals[l].ty;
                if is_aggregate(t) {
                    let at = self
                        .ctx
                        .create_type_attribute(byval, self.mem_type(t).as_any_type_enum());
                    llfn.add_attribute(AttributeLoc::Param(i as u32), at);
                    llfn.add_attribute(
                        AttributeLoc::Param(i as u32),
                        self.ctx.create_enum_attribute(align, 8),
                    );
                }
            }
            let md = self.ctx.metadata_node(&[
                llfn.as_global_value().as_pointer_value().into(),
                self.ctx.metadata_string("kernel").into(),
                self.ctx.i32_type().const_int(1, false).into(),
            ]);
            self.module
                .add_global_metadata("nvvm.annotations", &md)
                .map_err(|e| err(e.to_string()))?;
        }
        Ok(llfn)
    }

    fn define(&mut self, f: &Function, llfn: FunctionValue<'ctx>) -> R<()> {
        let entry = self.ctx.append_basic_block(llfn, "entry");
        self.builder.position_at_end(entry);
        let mut locals = Vec::new();
        for (_, l) in f.locals.iter() {
            let t = self.mem_type(&l.ty);
            let slot = self.builder.build_alloca(t, &l.name)?;
            self.builder.build_store(slot, t.const_zero())?;
            locals.push(slot);
        }
        let kernel = f.kind == FunctionKind::Kernel;
        for (i, l) in f.param_locals().enumerate() {
            let p = llfn
                .get_nth_param(i as u32)
                .ok_or_else(|| err("missing parameter"))?;
            let ty = &f.locals[l].ty;
            let v = if kernel && is_aggregate(ty) {
                self.builder
                    .build_load(self.mem_type(ty), p.into_pointer_value(), "arg")?
            } else if ty == &Type::Scalar(Scalar::Bool) && kernel {
                p // already a byte
            } else if ty == &Type::Scalar(Scalar::Bool) {
                self.builder
                    .build_int_z_extend(p.into_int_value(), self.ctx.i8_type(), "")?
                    .into()
            } else {
                p
            };
            self.builder.build_store(locals[l.index()], v)?;
        }
        let mut fx = FnEmitter {
            e: self,
            f,
            llfn,
            locals,
            loops: Vec::new(),
        };
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

    fn intrinsic(&self, name: &str, types: &[BasicTypeEnum<'ctx>]) -> R<FunctionValue<'ctx>> {
        LlvmIntrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, types))
            .ok_or_else(|| err(format!("LLVM intrinsic {name} not found")))
    }

    fn libdevice_fn(
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

struct FnEmitter<'a, 'b, 'ctx> {
    e: &'a mut Emitter<'b, 'ctx>,
    f: &'a Function,
    llfn: FunctionValue<'ctx>,
    locals: Vec<PointerValue<'ctx>>,
    /// (continue target, break target) of enclosing loops.
    loops: Vec<(BasicBlock<'ctx>, BasicBlock<'ctx>)>,
}

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    fn b(&self) -> &Builder<'ctx> {
        &self.e.builder
    }

    fn new_block(&self, name: &str) -> BasicBlock<'ctx> {
        self.e.ctx.append_basic_block(self.llfn, name)
    }

    /// After a terminator: continue emitting into a fresh block nothing jumps to.
    fn dead_block(&self) {
        let bb = self.new_block("dead");
        self.b().position_at_end(bb);
    }

    fn block(&mut self, stmts: &[Stmt]) -> R<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Eval(e) => {
                self.expr(*e)?;
            }
            StmtKind::Assign(l, e) => {
                if let Some(v) = self.expr(*e)? {
                    let v = self.mem_repr(v, &self.f.locals[*l].ty)?;
                    self.b().build_store(self.locals[l.index()], v)?;
                }
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => {
                let (ptr, at) = self.element_ptr(*array, indices)?;
                let v = self.value(*value)?;
                let v = self.mem_repr(v, &Type::Scalar(at.dtype))?;
                let st = self.b().build_store(ptr, v)?;
                st.set_alignment(at.dtype.size() as u32)
                    .map_err(|e| err(e.to_string()))?;
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.value(*cond)?.into_int_value();
                let tb = self.new_block("then");
                let eb = self.new_block("else");
                let mb = self.new_block("endif");
                self.b().build_conditional_branch(c, tb, eb)?;
                self.b().position_at_end(tb);
                self.block(then)?;
                self.branch_if_open(mb)?;
                self.b().position_at_end(eb);
                self.block(otherwise)?;
                self.branch_if_open(mb)?;
                self.b().position_at_end(mb);
            }
            StmtKind::Loop {
                cond,
                body,
                continuing,
            } => {
                let head = self.new_block("loop");
                let bodyb = self.new_block("body");
                let cont = self.new_block("continue");
                let exit = self.new_block("endloop");
                self.b().build_unconditional_branch(head)?;
                self.b().position_at_end(head);
                let c = self.value(*cond)?.into_int_value();
                self.b().build_conditional_branch(c, bodyb, exit)?;
                self.b().position_at_end(bodyb);
                self.loops.push((cont, exit));
                self.block(body)?;
                self.loops.pop();
                self.branch_if_open(cont)?;
                self.b().position_at_end(cont);
                self.block(continuing)?;
                self.branch_if_open(head)?;
                self.b().position_at_end(exit);
            }
            StmtKind::Break | StmtKind::Continue => {
                let (cont, exit) = *self
                    .loops
                    .last()
                    .ok_or_else(|| err("break outside a loop"))?;
                let target = if s.kind == StmtKind::Break {
                    exit
                } else {
                    cont
                };
                self.b().build_unconditional_branch(target)?;
                self.dead_block();
            }
            StmtKind::Return(v) => {
                match v {
                    Some(e) => {
                        let v = self.value(*e)?;
                        self.b().build_return(Some(&v))?;
                    }
                    None => {
                        self.b().build_return(None)?;
                    }
                }
                self.dead_block();
            }
        }
        Ok(())
    }

    fn branch_if_open(&self, target: BasicBlock<'ctx>) -> R<()> {
        let bb = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        if bb.get_terminator().is_none() {
            self.b().build_unconditional_branch(target)?;
        }
        Ok(())
    }

    /// Register value → memory value (bool to byte).
    fn mem_repr(&self, v: BasicValueEnum<'ctx>, t: &Type) -> R<BasicValueEnum<'ctx>> {
        if t == &Type::Scalar(Scalar::Bool) && v.into_int_value().get_type().get_bit_width() == 1 {
            return Ok(self
                .b()
                .build_int_z_extend(v.into_int_value(), self.e.ctx.i8_type(), "")?
                .into());
        }
        Ok(v)
    }

    /// Memory value → register value (byte to bool).
    fn reg_repr(&self, v: BasicValueEnum<'ctx>, t: &Type) -> R<BasicValueEnum<'ctx>> {
        if t == &Type::Scalar(Scalar::Bool) {
            let z = self.e.ctx.i8_type().const_zero();
            return Ok(self
                .b()
                .build_int_compare(IntPredicate::NE, v.into_int_value(), z, "")?
                .into());
        }
        Ok(v)
    }

    fn value(&mut self, e: Handle<Expr>) -> R<BasicValueEnum<'ctx>> {
        self.expr(e)?.ok_or_else(|| err("a None value was used"))
    }

    fn ty(&self, e: Handle<Expr>) -> &Type {
        self.f.ty(e)
    }

    fn scalar(&self, e: Handle<Expr>) -> R<Scalar> {
        self.ty(e)
            .as_scalar()
            .ok_or_else(|| err("expected a scalar"))
    }

    fn expr(&mut self, h: Handle<Expr>) -> R<Option<BasicValueEnum<'ctx>>> {
        let ty = self.ty(h).clone();
        let v: BasicValueEnum<'ctx> = match &self.f.exprs[h] {
            Expr::Literal(lit) => {
                let s = ty.as_scalar().ok_or_else(|| err("non-scalar literal"))?;
                let t = self.e.scalar_type(s);
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
                    (Literal::Int(i), true) => t.into_float_type().const_float(*i as f64).into(),
                    (Literal::Float(x), true) => t.into_float_type().const_float(*x).into(),
                    (Literal::Float(x), false) => {
                        t.into_int_type().const_int(*x as i64 as u64, true).into()
                    }
                }
            }
            Expr::Local(l) => {
                let lt = &self.f.locals[*l].ty;
                if lt == &Type::None {
                    return Ok(None);
                }
                let v = self
                    .b()
                    .build_load(self.e.mem_type(lt), self.locals[l.index()], "")?;
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
                let mut vals: Vec<BasicMetadataValueEnum> = Vec::new();
                for a in args {
                    vals.push(self.value(*a)?.into());
                }
                let callee = self.e.fns[callee.index()];
                let call = self.b().build_call(callee, &vals, "")?;
                match call.try_as_basic_value() {
                    ValueKind::Basic(v) => v,
                    _ => return Ok(None),
                }
            }
            Expr::Intrinsic(op, _args) => return self.intrinsic(*op),
            Expr::Load { array, indices } => {
                let (ptr, at) = self.element_ptr(*array, indices)?;
                let t = Type::Scalar(at.dtype);
                let ld = self.b().build_load(self.e.mem_type(&t), ptr, "")?;
                if let Some(i) = ld.as_instruction_value() {
                    i.set_alignment(at.dtype.size() as u32)
                        .map_err(|e| err(e.to_string()))?;
                }
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
                        let size = i64t.const_int(at.dtype.size(), false);
                        self.b().build_int_mul(s, size, "")?.into()
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
                    Type::Vector { elem, len } => vec![Type::Scalar(*elem); *len as usize],
                    _ => return Err(err("tuple of a non-tuple type")),
                };
                for (i, (item, et)) in items.iter().zip(elems.iter()).enumerate() {
                    let v = self.value(*item)?;
                    let v = self.mem_repr(v, et)?;
                    agg = self
                        .b()
                        .build_insert_value(agg.into_struct_value(), v, i as u32, "")?
                        .as_basic_value_enum();
                }
                agg
            }
            Expr::Extract(a, i) => {
                let agg = self.value(*a)?.into_struct_value();
                let v = self.b().build_extract_value(agg, *i, "")?;
                self.reg_repr(v, &ty)?
            }
        };
        Ok(Some(v))
    }

    fn dim(
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
    fn stride(
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

    fn element_ptr(
        &mut self,
        array: Handle<Expr>,
        indices: &[Index],
    ) -> R<(PointerValue<'ctx>, ArrayType)> {
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
        for (d, ix) in indices.iter().enumerate() {
            let s = self.scalar(ix.value)?;
            let v = self.value(ix.value)?.into_int_value();
            let mut i = self
                .b()
                .build_int_cast_sign_flag(v, i64t, s.is_signed(), "")?;
            if ix.wrap && s.is_signed() {
                let n = self.dim(desc, 1, d as u8)?;
                let neg =
                    self.b()
                        .build_int_compare(IntPredicate::SLT, i, i64t.const_zero(), "")?;
                let wrapped = self.b().build_int_add(i, n, "")?;
                i = self.b().build_select(neg, wrapped, i, "")?.into_int_value();
            }
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
        let et = self.e.mem_type(&Type::Scalar(at.dtype));
        // SAFETY of the GEP: the index is in elements of `et`; bounds are the program's
        // responsibility (as in CUDA C++), and no `inbounds` is claimed.
        let ptr = unsafe { self.b().build_gep(et, data, &[offset], "elem")? };
        Ok((ptr, at))
    }

    fn intrinsic(&mut self, op: Intrinsic) -> R<Option<BasicValueEnum<'ctx>>> {
        let sreg = |kind: &str, a: Axis| format!("llvm.nvvm.read.ptx.sreg.{kind}.{}", a.letter());
        let name = match op {
            Intrinsic::ThreadIdx(a) => sreg("tid", a),
            Intrinsic::BlockIdx(a) => sreg("ctaid", a),
            Intrinsic::BlockDim(a) => sreg("ntid", a),
            Intrinsic::GridDim(a) => sreg("nctaid", a),
            Intrinsic::LaneId => "llvm.nvvm.read.ptx.sreg.laneid".to_string(),
            Intrinsic::WarpSize => {
                return Ok(Some(self.e.ctx.i32_type().const_int(32, false).into()));
            }
            Intrinsic::SyncThreads => {
                let f = self.e.intrinsic("llvm.nvvm.barrier0", &[])?;
                self.b().build_call(f, &[], "")?;
                return Ok(None);
            }
        };
        let f = self.e.intrinsic(&name, &[])?;
        let call = self.b().build_call(f, &[], "")?;
        match call.try_as_basic_value() {
            ValueKind::Basic(v) => Ok(Some(v)),
            _ => Err(err(format!("{name} returned nothing"))),
        }
    }

    fn truthy(&self, v: BasicValueEnum<'ctx>, s: Scalar) -> R<IntValue<'ctx>> {
        Ok(match s {
            Scalar::Bool => v.into_int_value(),
            s if s.is_float() => {
                let fv = v.into_float_value();
                self.b().build_float_compare(
                    FloatPredicate::UNE,
                    fv,
                    fv.get_type().const_zero(),
                    "",
                )?
            }
            _ => {
                let iv = v.into_int_value();
                self.b()
                    .build_int_compare(IntPredicate::NE, iv, iv.get_type().const_zero(), "")?
            }
        })
    }

    fn cast(
        &mut self,
        v: BasicValueEnum<'ctx>,
        from: Scalar,
        to: Scalar,
    ) -> R<BasicValueEnum<'ctx>> {
        if from == to {
            return Ok(v);
        }
        let tt = self.e.scalar_type(to);
        Ok(match (from.is_float(), to.is_float()) {
            _ if to == Scalar::Bool => self.truthy(v, from)?.into(),
            (false, false) => {
                let signed = from.is_signed();
                self.b()
                    .build_int_cast_sign_flag(v.into_int_value(), tt.into_int_type(), signed, "")?
                    .into()
            }
            (false, true) => {
                let iv = v.into_int_value();
                if from.is_signed() {
                    self.b()
                        .build_signed_int_to_float(iv, tt.into_float_type(), "")?
                        .into()
                } else {
                    self.b()
                        .build_unsigned_int_to_float(iv, tt.into_float_type(), "")?
                        .into()
                }
            }
            (true, false) => {
                // Saturating, NaN to 0: one `cvt.rzi` instruction, never poison.
                let name = if to.is_signed() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                let f = self.e.intrinsic(name, &[tt, v.get_type()])?;
                self.call1(f, &[v.into()])?
            }
            (true, true) => self
                .b()
                .build_float_cast(v.into_float_value(), tt.into_float_type(), "")?
                .into(),
        })
    }

    fn call1(
        &self,
        f: FunctionValue<'ctx>,
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        match self.b().build_call(f, args, "")?.try_as_basic_value() {
            ValueKind::Basic(v) => Ok(v),
            _ => Err(err("call returned nothing")),
        }
    }

    fn unary(
        &mut self,
        op: UnaryOp,
        s: Scalar,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        Ok(if s.is_float() {
            let f = v.into_float_value();
            match op {
                UnaryOp::Neg => self.b().build_float_neg(f, "")?.into(),
                UnaryOp::Abs => {
                    let fabs = self.e.intrinsic("llvm.fabs", &[f.get_type().into()])?;
                    self.call1(fabs, &[f.into()])?
                }
                UnaryOp::Not | UnaryOp::Invert => return Err(err("bitwise op on a float")),
            }
        } else {
            let i = v.into_int_value();
            match op {
                UnaryOp::Neg => self.b().build_int_neg(i, "")?.into(),
                UnaryOp::Not | UnaryOp::Invert => self.b().build_not(i, "")?.into(),
                UnaryOp::Abs => {
                    if s.is_signed() {
                        let neg = self.b().build_int_compare(
                            IntPredicate::SLT,
                            i,
                            i.get_type().const_zero(),
                            "",
                        )?;
                        let n = self.b().build_int_neg(i, "")?;
                        self.b().build_select(neg, n, i, "")?
                    } else {
                        i.into()
                    }
                }
            }
        })
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if s.is_float() {
            self.float_binary(op, s, x.into_float_value(), y.into_float_value())
        } else {
            self.int_binary(op, s, x.into_int_value(), y.into_int_value())
        }
    }

    fn float_binary(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        use BinaryOp::*;
        let b = &self.e.builder;
        let cmp = |p| -> R<BasicValueEnum<'ctx>> { Ok(b.build_float_compare(p, x, y, "")?.into()) };
        Ok(match op {
            Add => b.build_float_add(x, y, "")?.into(),
            Sub => b.build_float_sub(x, y, "")?.into(),
            Mul => b.build_float_mul(x, y, "")?.into(),
            Div => b.build_float_div(x, y, "")?.into(),
            Eq => cmp(FloatPredicate::OEQ)?,
            Ne => cmp(FloatPredicate::UNE)?,
            Lt => cmp(FloatPredicate::OLT)?,
            Le => cmp(FloatPredicate::OLE)?,
            Gt => cmp(FloatPredicate::OGT)?,
            Ge => cmp(FloatPredicate::OGE)?,
            Min | Max => {
                // Python: min(a, b) is b if b < a else a (so NaN handling follows argument order).
                let p = if op == Min {
                    FloatPredicate::OLT
                } else {
                    FloatPredicate::OGT
                };
                let c = b.build_float_compare(p, y, x, "")?;
                b.build_select(c, y, x, "")?
            }
            Pow => {
                let name = if s == Scalar::Float32 {
                    "__nv_powf"
                } else {
                    "__nv_pow"
                };
                let f = self.e.libdevice_fn(name, x.get_type().into(), 2);
                self.call1(f, &[x.into(), y.into()])?
            }
            FloorDiv | Mod => self.float_divmod(op, s, x, y)?,
            BitAnd | BitOr | BitXor | Shl | Shr => return Err(err("bitwise op on floats")),
        })
    }

    /// CPython's `float_divmod`: the remainder takes the divisor's sign, and the quotient is
    /// rounded so that `q * y + r == x` as closely as floats allow.
    fn float_divmod(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let ft = x.get_type();
        let name = if s == Scalar::Float32 {
            "__nv_fmodf"
        } else {
            "__nv_fmod"
        };
        let fmod = self.e.libdevice_fn(name, ft.into(), 2);
        let m = self.call1(fmod, &[x.into(), y.into()])?.into_float_value();
        let b = &self.e.builder;
        let zero = ft.const_zero();
        let m_nonzero = b.build_float_compare(FloatPredicate::UNE, m, zero, "")?;
        let y_neg = b.build_float_compare(FloatPredicate::OLT, y, zero, "")?;
        let m_neg = b.build_float_compare(FloatPredicate::OLT, m, zero, "")?;
        let signs_differ = b.build_xor(y_neg, m_neg, "")?;
        let adjust = b.build_and(m_nonzero, signs_differ, "")?;
        if op == BinaryOp::Mod {
            let m_adj = b.build_float_add(m, y, "")?;
            let r = b.build_select(adjust, m_adj, m, "")?.into_float_value();
            // A zero remainder takes the divisor's sign.
            let copysign = self.e.intrinsic("llvm.copysign", &[ft.into()])?;
            let signed_zero = self
                .call1(copysign, &[zero.into(), y.into()])?
                .into_float_value();
            let b = &self.e.builder;
            return Ok(b.build_select(m_nonzero, r, signed_zero, "")?);
        }
        let diff = b.build_float_sub(x, m, "")?;
        let div = b.build_float_div(diff, y, "")?;
        let one = ft.const_float(1.0);
        let div_m1 = b.build_float_sub(div, one, "")?;
        let div = b.build_select(adjust, div_m1, div, "")?.into_float_value();
        let floor = self.e.intrinsic("llvm.floor", &[ft.into()])?;
        let fl = self.call1(floor, &[div.into()])?.into_float_value();
        let b = &self.e.builder;
        let frac = b.build_float_sub(div, fl, "")?;
        let half = ft.const_float(0.5);
        let up = b.build_float_compare(FloatPredicate::OGT, frac, half, "")?;
        let fl1 = b.build_float_add(fl, one, "")?;
        let q = b.build_select(up, fl1, fl, "")?.into_float_value();
        let q_zero = b.build_float_compare(FloatPredicate::OEQ, div, zero, "")?;
        let xy = b.build_float_div(x, y, "")?;
        let copysign = self.e.intrinsic("llvm.copysign", &[ft.into()])?;
        let z = self
            .call1(copysign, &[zero.into(), xy.into()])?
            .into_float_value();
        Ok(self.e.builder.build_select(q_zero, z, q, "")?)
    }

    fn int_binary(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        use BinaryOp::*;
        let signed = s.is_signed();
        let t = x.get_type();
        let bits = t.get_bit_width();
        let b = &self.e.builder;
        let icmp = |p: IntPredicate, a: IntValue<'ctx>, c: IntValue<'ctx>| {
            b.build_int_compare(p, a, c, "")
        };
        let (lt, le, gt, ge) = if signed {
            (
                IntPredicate::SLT,
                IntPredicate::SLE,
                IntPredicate::SGT,
                IntPredicate::SGE,
            )
        } else {
            (
                IntPredicate::ULT,
                IntPredicate::ULE,
                IntPredicate::UGT,
                IntPredicate::UGE,
            )
        };
        Ok(match op {
            Add => b.build_int_add(x, y, "")?.into(),
            Sub => b.build_int_sub(x, y, "")?.into(),
            Mul => b.build_int_mul(x, y, "")?.into(),
            BitAnd => b.build_and(x, y, "")?.into(),
            BitOr => b.build_or(x, y, "")?.into(),
            BitXor => b.build_xor(x, y, "")?.into(),
            Eq => icmp(IntPredicate::EQ, x, y)?.into(),
            Ne => icmp(IntPredicate::NE, x, y)?.into(),
            Lt => icmp(lt, x, y)?.into(),
            Le => icmp(le, x, y)?.into(),
            Gt => icmp(gt, x, y)?.into(),
            Ge => icmp(ge, x, y)?.into(),
            Min => {
                let c = icmp(lt, y, x)?;
                b.build_select(c, y, x, "")?
            }
            Max => {
                let c = icmp(gt, y, x)?;
                b.build_select(c, y, x, "")?
            }
            Shl | Shr => {
                // Shifting by the width or more gives 0 (or the sign) as in NumPy; LLVM
                // would give poison.
                let width = t.const_int(u64::from(bits), false);
                let big = icmp(IntPredicate::UGE, y, width)?;
                let (shifted, saturated) = if op == Shl {
                    (b.build_left_shift(x, y, "")?, t.const_zero())
                } else if signed {
                    let sign =
                        b.build_right_shift(x, t.const_int(u64::from(bits - 1), false), true, "")?;
                    (b.build_right_shift(x, y, true, "")?, sign)
                } else {
                    (b.build_right_shift(x, y, false, "")?, t.const_zero())
                };
                b.build_select(big, saturated, shifted, "")?
            }
            FloorDiv | Mod => {
                // Python semantics: floor division, remainder with the divisor's sign.
                // Division by zero gives 0 (as NumPy does); MIN // -1 wraps.
                let zero = t.const_zero();
                let one = t.const_int(1, false);
                let y_zero = icmp(IntPredicate::EQ, y, zero)?;
                let bad = if signed {
                    let m1 = icmp(IntPredicate::EQ, y, t.const_all_ones())?;
                    b.build_or(y_zero, m1, "")?
                } else {
                    y_zero
                };
                let y1 = b.build_select(bad, one, y, "")?.into_int_value();
                let result = if signed {
                    let q = b.build_int_signed_div(x, y1, "")?;
                    let r = b.build_int_signed_rem(x, y1, "")?;
                    let r_nz = icmp(IntPredicate::NE, r, zero)?;
                    let rx = b.build_xor(r, y1, "")?;
                    let differ = icmp(IntPredicate::SLT, rx, zero)?;
                    let adjust = b.build_and(r_nz, differ, "")?;
                    if op == FloorDiv {
                        let q1 = b.build_int_sub(q, one, "")?;
                        let q = b.build_select(adjust, q1, q, "")?.into_int_value();
                        let m1 = icmp(IntPredicate::EQ, y, t.const_all_ones())?;
                        let negx = b.build_int_neg(x, "")?;
                        b.build_select(m1, negx, q, "")?.into_int_value()
                    } else {
                        let r1 = b.build_int_add(r, y1, "")?;
                        b.build_select(adjust, r1, r, "")?.into_int_value()
                    }
                } else if op == FloorDiv {
                    b.build_int_unsigned_div(x, y1, "")?
                } else {
                    b.build_int_unsigned_rem(x, y1, "")?
                };
                b.build_select(y_zero, zero, result, "")?
            }
            Pow => {
                let f = self.ipow_fn(s)?;
                self.call1(f, &[x.into(), y.into()])?
            }
            Div => return Err(err("true division on integers reached the back end")),
        })
    }

    /// `x ** y` on integers by repeated squaring (wrapping), as an internal helper function
    /// per type. A negative exponent gives 1 for 1, ±1 for -1, and 0 otherwise.
    fn ipow_fn(&mut self, s: Scalar) -> R<FunctionValue<'ctx>> {
        let name = format!("__pyd_ipow_{}", s.name());
        if let Some(f) = self.e.module.get_function(&name) {
            return Ok(f);
        }
        let ctx = self.e.ctx;
        let t = self.e.scalar_type(s).into_int_type();
        let f = self.e.module.add_function(
            &name,
            t.fn_type(&[t.into(), t.into()], false),
            Some(Linkage::Internal),
        );
        let saved = self.b().get_insert_block();
        let b = ctx.create_builder();
        let entry = ctx.append_basic_block(f, "entry");
        let neg = ctx.append_basic_block(f, "neg");
        let lp = ctx.append_basic_block(f, "loop");
        let done = ctx.append_basic_block(f, "done");
        let base = f
            .get_nth_param(0)
            .ok_or_else(|| err("ipow"))?
            .into_int_value();
        let exp = f
            .get_nth_param(1)
            .ok_or_else(|| err("ipow"))?
            .into_int_value();
        let zero = t.const_zero();
        let one = t.const_int(1, false);
        b.position_at_end(entry);
        let is_neg = if s.is_signed() {
            b.build_int_compare(IntPredicate::SLT, exp, zero, "")?
        } else {
            ctx.bool_type().const_zero()
        };
        b.build_conditional_branch(is_neg, neg, lp)?;
        b.position_at_end(neg);
        let is_one = b.build_int_compare(IntPredicate::EQ, base, one, "")?;
        let is_m1 = b.build_int_compare(IntPredicate::EQ, base, t.const_all_ones(), "")?;
        let odd = b.build_and(exp, one, "")?;
        let odd = b.build_int_compare(IntPredicate::NE, odd, zero, "")?;
        let m1r = b
            .build_select(odd, t.const_all_ones(), one, "")?
            .into_int_value();
        let r = b.build_select(is_m1, m1r, zero, "")?.into_int_value();
        let r = b.build_select(is_one, one, r, "")?;
        b.build_return(Some(&r))?;
        b.position_at_end(lp);
        let acc = b.build_phi(t, "acc")?;
        let bb = b.build_phi(t, "base")?;
        let e = b.build_phi(t, "exp")?;
        let ev = e.as_basic_value().into_int_value();
        let bv = bb.as_basic_value().into_int_value();
        let av = acc.as_basic_value().into_int_value();
        let low = b.build_and(ev, one, "")?;
        let low = b.build_int_compare(IntPredicate::NE, low, zero, "")?;
        let prod = b.build_int_mul(av, bv, "")?;
        let acc2 = b.build_select(low, prod, av, "")?.into_int_value();
        let base2 = b.build_int_mul(bv, bv, "")?;
        let exp2 = b.build_right_shift(ev, one, false, "")?;
        let more = b.build_int_compare(IntPredicate::NE, exp2, zero, "")?;
        b.build_conditional_branch(more, lp, done)?;
        acc.add_incoming(&[(&one, entry), (&acc2, lp)]);
        bb.add_incoming(&[(&base, entry), (&base2, lp)]);
        e.add_incoming(&[(&exp, entry), (&exp2, lp)]);
        b.position_at_end(done);
        // exp == 0 on entry: the loop runs once with exp's low bit 0, leaving acc = 1.
        let res = b.build_phi(t, "")?;
        res.add_incoming(&[(&acc2, lp)]);
        b.build_return(Some(&res.as_basic_value()))?;
        if let Some(bb) = saved {
            self.b().position_at_end(bb);
        }
        Ok(f)
    }
}
