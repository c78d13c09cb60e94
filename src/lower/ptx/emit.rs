//! IR → LLVM IR for the NVPTX target.
//!
//! Values: `bool` is `i1` in registers and `i8` in memory and inside aggregates; integers and
//! floats map directly; tuples and vectors are LLVM structs; an array is its descriptor
//! `{ ptr addrspace(N) data, [ndim x i64] shape, [ndim x i64] strides }` with strides in
//! elements (the spec's `interoperable_array_descriptor`). Kernels take aggregates `byval`, as
//! clang does for `__global__` functions, so their parameters match CUDA C++'s by-value ABI.
//! Locals are allocas that the optimizer promotes to registers.

mod cmath;
mod numbers;

use super::LowerError;
use crate::ir::{
    ArrayProp, AtomicOp, Axis, BinaryOp, Expr, Function, FunctionKind, Handle, Index, Intrinsic,
    Literal, MathFn, MemoryOrder, Program, Scope, Shfl, Stmt, StmtKind, UnaryOp, Vote,
};
use crate::types::{ArrayType, Layout, MemSpace, Scalar, Type};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::debug_info::AsDIScope;
use inkwell::intrinsics::Intrinsic as LlvmIntrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{AnyType, BasicMetadataTypeEnum, BasicType, BasicTypeEnum, StructType};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, FunctionValue, IntValue,
    PointerValue, ValueKind,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};

mod views;

type R<T> = Result<T, LowerError>;

fn err(m: impl Into<String>) -> LowerError {
    LowerError::Llvm(m.into())
}

/// Emits every function of `program` into `module`; returns whether libdevice is needed.
/// `sm` is the architecture's number (90 for sm_90): instructions that only newer ones have
/// (the fp8 conversions) are used where it allows.
pub fn emit<'ctx>(
    ctx: &'ctx Context,
    module: &Module<'ctx>,
    program: &Program,
    sm: u32,
) -> R<bool> {
    let debug = if program.options.lineinfo {
        module.add_basic_value_flag(
            "Debug Info Version",
            inkwell::module::FlagBehavior::Warning,
            ctx.i32_type().const_int(3, false),
        );
        let path = std::path::Path::new(&program.file.name);
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path
            .parent()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        Some(module.create_debug_info_builder(
            true,
            inkwell::debug_info::DWARFSourceLanguage::Python,
            &file,
            &dir,
            "pydevice",
            true,
            "",
            0,
            "",
            inkwell::debug_info::DWARFEmissionKind::LineTablesOnly,
            0,
            false,
            false,
            "",
            "",
        ))
    } else {
        None
    };
    let mut e = Emitter {
        ctx,
        module,
        builder: ctx.create_builder(),
        fns: Vec::new(),
        uses_libdevice: false,
        program,
        debug,
        sm,
    };
    for (_, f) in program.functions.iter() {
        let llfn = e.declare(f)?;
        e.fns.push(llfn);
    }
    for (h, f) in program.functions.iter() {
        // An `extern` function stays a declaration: PTX `.extern .func`, resolved at link time.
        if !f.external {
            e.define(f, e.fns[h.index()])?;
        }
    }
    if program.options.fastmath {
        e.relax_floating_point();
    }
    if let Some((dib, _)) = &e.debug {
        dib.finalize();
    }
    Ok(e.uses_libdevice)
}

struct Emitter<'a, 'ctx> {
    ctx: &'ctx Context,
    module: &'a Module<'ctx>,
    builder: Builder<'ctx>,
    fns: Vec<FunctionValue<'ctx>>,
    uses_libdevice: bool,
    program: &'a Program,
    /// Line information, when `lineinfo=True`.
    debug: Option<(
        inkwell::debug_info::DebugInfoBuilder<'ctx>,
        inkwell::debug_info::DICompileUnit<'ctx>,
    )>,
    /// The target architecture's number (90 for sm_90).
    sm: u32,
}

fn addr_space(s: MemSpace) -> AddressSpace {
    AddressSpace::from(match s {
        MemSpace::Global => 1u16,
        MemSpace::Shared => 3,
        // Allocas are generic pointers that NVPTX places in local memory.
        MemSpace::Local => 0,
        MemSpace::Const => 4,
    })
}

/// The `.sem` qualifier of an `atom` instruction for `order`, and the fence that a
/// sequentially consistent one needs before it (PTX has no `.seq_cst` atom).
fn atomic_semantics(order: MemoryOrder, sc: &str) -> (&'static str, String) {
    let sem = match order {
        MemoryOrder::Relaxed => "relaxed",
        MemoryOrder::Acquire | MemoryOrder::Consume => "acquire",
        MemoryOrder::Release => "release",
        MemoryOrder::AcqRel | MemoryOrder::SeqCst => "acq_rel",
    };
    let fence = if order == MemoryOrder::SeqCst {
        format!("fence.sc.{sc}; ")
    } else {
        String::new()
    };
    (sem, fence)
}

/// The PTX name of a thread scope (a thread's own accesses need no more than its block's).
fn ptx_scope(s: Scope) -> &'static str {
    match s {
        Scope::Thread | Scope::Block => "cta",
        Scope::Device => "gpu",
        Scope::System => "sys",
    }
}

/// Whether a parameter of `f` is passed by reference: nvcc passes values that are not
/// trivially copyable in C++ (those holding `__half2` / `__nv_bfloat162`) to `__device__`
/// functions as a pointer, and interoperable functions follow it.
fn by_reference(f: &Function, t: &Type) -> bool {
    f.kind == FunctionKind::Device && f.interop && crate::abi::passed_indirectly(t)
}

/// Alignment of an array's elements.
fn elem_align(d: &crate::types::DType) -> u64 {
    crate::abi::layout_of(&d.ty()).align.max(1)
}

/// The alignment a load or store through a reference may assume: the type's, except that a
/// complex number may be a record field aligned only to its parts, as NumPy places them.
fn ref_align(t: &Type) -> u32 {
    match t {
        Type::Scalar(s) if s.is_complex() => s.component().size() as u32,
        t => crate::abi::layout_of(t).align.max(1) as u32,
    }
}

/// Bytes per element of an array (a struct's C++ size).
fn elem_size(d: &crate::types::DType) -> u64 {
    crate::abi::layout_of(&d.ty()).size
}

/// Whether a kernel takes a parameter of this type through a `byval` pointer. In PTX every
/// aggregate parameter is a `.param .align A .b8 p[N]`; `byval` carries the CUDA C++
/// alignment (float4: 16, `device.align`), which LLVM's own layout of the struct need not
/// have. An array's descriptor ({data, shape, strides}, aligned to 8 either way) is instead
/// a struct argument: NVPTX loads each field it uses straight from the parameter
/// (`ld.param.u64 %rd1, [k_param_0+8]`), and the optimizer has no memory to look through
/// (7% of `vector_add`'s compile; PTX with fewer moves). The fp8 types are one-member
/// structs in CUDA C++ (`__nv_fp8_e4m3` holds `__x`), which nvcc declares as
/// `.param .align 1 .b8 p[1]`, so they go by `byval` too.
fn kernel_byval(t: &Type) -> bool {
    matches!(t, Type::Tuple(_) | Type::Vector { .. } | Type::Struct(_)) || is_fp8(t)
}

fn is_fp8(t: &Type) -> bool {
    matches!(t, Type::Scalar(s) if s.is_fp8())
}

/// Whether an fp8 parameter or result of `f` crosses the call boundary as a one-byte struct,
/// as nvcc passes `__nv_fp8_e4m3` to and from `__device__` functions (interoperable
/// functions only; internal ones pass the byte).
fn boxed_fp8(f: &Function, t: &Type) -> bool {
    f.kind == FunctionKind::Device && f.interop && is_fp8(t)
}

impl<'ctx> Emitter<'_, 'ctx> {
    fn int_t(&self, bits: u32) -> inkwell::types::IntType<'ctx> {
        match bits {
            1 => self.ctx.bool_type(),
            8 => self.ctx.i8_type(),
            16 => self.ctx.i16_type(),
            32 => self.ctx.i32_type(),
            _ => self.ctx.i64_type(),
        }
    }

    fn scalar_type(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        let c = self.ctx;
        match s {
            Scalar::Bool => c.bool_type().into(),
            Scalar::Int8 | Scalar::UInt8 => c.i8_type().into(),
            Scalar::Int16 | Scalar::UInt16 => c.i16_type().into(),
            Scalar::Int32 | Scalar::UInt32 => c.i32_type().into(),
            Scalar::Int64 | Scalar::UInt64 => c.i64_type().into(),
            Scalar::Float16 => c.f16_type().into(),
            Scalar::BFloat16 => c.bf16_type().into(),
            Scalar::Float32 => c.f32_type().into(),
            Scalar::Float64 => c.f64_type().into(),
            Scalar::Complex64 => c.f32_type().vec_type(2).into(),
            Scalar::Complex128 => c.f64_type().vec_type(2).into(),
            Scalar::Float8E4M3 | Scalar::Float8E5M2 => c.i8_type().into(),
        }
    }

    /// `{ i8 }`: an fp8 value as interoperable functions pass it (see `boxed_fp8`).
    fn fp8_box(&self) -> StructType<'ctx> {
        self.ctx.struct_type(&[self.ctx.i8_type().into()], false)
    }

    /// The register type of a value (`None` has none).
    fn ty(&self, t: &Type) -> Option<BasicTypeEnum<'ctx>> {
        Some(match t {
            Type::None => return None,
            Type::Scalar(s) => self.scalar_type(*s),
            Type::Vector { .. } | Type::Tuple(_) | Type::Struct(_) => self.aggregate(t).0.into(),
            Type::Array(a) => self.descriptor_type(a).into(),
            Type::WarpMask => self.ctx.i32_type().into(),
            Type::Atomic { dtype, .. } => self.mem_type(&Type::Scalar(*dtype)),
            Type::Ref { .. } | Type::StructRef { .. } => {
                self.ctx.ptr_type(AddressSpace::default()).into()
            }
        })
    }

    /// A tuple, struct or vector as an LLVM struct laid out byte for byte as CUDA C++ lays it
    /// out (`abi::layout_of`): explicit padding before members that sit further than their
    /// natural place (over-aligned members such as `float4`), and a zero-length leading member
    /// that gives the whole struct its C++ alignment, so parameters, results and memory
    /// accesses all use it. Returns the type and, for each field, its element index.
    fn aggregate(&self, t: &Type) -> (StructType<'ctx>, Vec<u32>) {
        let fields: Vec<Type> = match t {
            Type::Tuple(ts) => ts.clone(),
            Type::Struct(st) => st.fields.iter().map(|(_, t)| t.clone()).collect(),
            Type::Vector { elem, len } => vec![Type::Scalar(*elem); *len as usize],
            _ => Vec::new(),
        };
        let layout = crate::abi::layout_of(t);
        // A record has NumPy's offsets (a complex64 may sit at 12), so it is a packed
        // struct with explicit padding; its accesses carry their own alignments.
        let packed = matches!(t, Type::Struct(st) if st.record.is_some());
        let mut elems: Vec<BasicTypeEnum<'ctx>> = Vec::new();
        let natural = layout
            .fields
            .iter()
            .zip(&fields)
            .map(|(_, f)| crate::abi::layout_of(f).align)
            .max()
            .unwrap_or(1);
        if layout.align > natural && !packed {
            elems.push(self.align_forcer(layout.align));
        }
        let mut index = Vec::new();
        let mut at = 0u64;
        let pad = |elems: &mut Vec<BasicTypeEnum<'ctx>>, n: u64| {
            if n > 0 {
                elems.push(self.ctx.i8_type().array_type(n as u32).into());
            }
        };
        for (f, ft) in layout.fields.iter().zip(&fields) {
            pad(&mut elems, f.offset.saturating_sub(at));
            index.push(elems.len() as u32);
            elems.push(self.mem_type(ft));
            at = f.offset + f.size;
        }
        pad(&mut elems, layout.size.saturating_sub(at));
        (self.ctx.struct_type(&elems, packed), index)
    }

    /// A zero-size member whose alignment is `align` bytes (NVPTX: i16..i128, then vectors).
    fn align_forcer(&self, align: u64) -> BasicTypeEnum<'ctx> {
        let c = self.ctx;
        let t: BasicTypeEnum<'ctx> = match align {
            0..=2 => c.i16_type().into(),
            3..=4 => c.i32_type().into(),
            5..=8 => c.i64_type().into(),
            9..=16 => c.i128_type().into(),
            a => c.i32_type().vec_type((a / 4) as u32).into(),
        };
        t.array_type(0).into()
    }

    /// The LLVM element index of field `i` of a tuple, struct or vector.
    fn field_index(&self, t: &Type, i: u32) -> u32 {
        match t {
            Type::Tuple(_) | Type::Struct(_) | Type::Vector { .. } => {
                self.aggregate(t).1.get(i as usize).copied().unwrap_or(i)
            }
            _ => i,
        }
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
                    let a = crate::abi::layout_of(t).align.max(1);
                    llfn.add_attribute(
                        AttributeLoc::Param(i as u32),
                        self.ctx.create_enum_attribute(align, a),
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
            let o = &self.program.options;
            for (key, value) in [
                ("maxntidx", o.max_threads),
                ("minctasm", o.min_blocks),
                ("maxnreg", o.max_registers),
            ] {
                if let Some(v) = value {
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

    fn define(&mut self, f: &Function, llfn: FunctionValue<'ctx>) -> R<()> {
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
                true,
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
            if kernel && i < f.params && !assigned[i] {
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
                    let a = crate::abi::layout_of(ty).align.max(1) as u32;
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

    /// The global where bounds-checked kernels record their first out-of-range access.
    fn bounds_error_global(&self) -> PointerValue<'ctx> {
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
    fn bounds_scratch(&self, bytes: u64) -> PointerValue<'ctx> {
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
    fn relax_floating_point(&self) {
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

/// In bounds-checking mode: whether an access is in range, and the code to record if not
/// (`line << 32 | column`).
type BoundsCheck<'ctx> = (IntValue<'ctx>, u64);

/// Where a local lives.
#[derive(Copy, Clone)]
enum LocalSlot<'ctx> {
    /// A stack slot (in memory representation), for locals that are assigned.
    Memory(PointerValue<'ctx>),
    /// The value of a parameter the body never assigns (in memory representation).
    Value(BasicValueEnum<'ctx>),
}

/// Which locals some statement of `f` assigns (indexed like `f.locals`).
fn assigned_locals(f: &Function) -> Vec<bool> {
    fn walk(block: &[Stmt], out: &mut [bool]) {
        for s in block {
            match &s.kind {
                StmtKind::Assign(l, _) => out[l.index()] = true,
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    walk(then, out);
                    walk(otherwise, out);
                }
                StmtKind::Loop {
                    body, continuing, ..
                } => {
                    walk(body, out);
                    walk(continuing, out);
                }
                StmtKind::Eval(_)
                | StmtKind::Store { .. }
                | StmtKind::StoreRef { .. }
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Return(_) => {}
            }
        }
    }
    let mut out = vec![false; f.locals.len()];
    walk(&f.body, &mut out);
    out
}

struct FnEmitter<'a, 'b, 'ctx> {
    e: &'a mut Emitter<'b, 'ctx>,
    f: &'a Function,
    llfn: FunctionValue<'ctx>,
    locals: Vec<LocalSlot<'ctx>>,
    /// (continue target, break target) of enclosing loops.
    loops: Vec<(BasicBlock<'ctx>, BasicBlock<'ctx>)>,
}

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    fn b(&self) -> &Builder<'ctx> {
        &self.e.builder
    }

    /// A stack slot allocated at the top of the function's entry block, so that it is
    /// allocated once per call however often the code that needs it runs.
    fn entry_alloca(&self, ty: impl BasicType<'ctx>, name: &str) -> R<PointerValue<'ctx>> {
        let entry = self
            .llfn
            .get_first_basic_block()
            .ok_or_else(|| err("no entry block"))?;
        let b = self.e.ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => b.position_before(&i),
            None => b.position_at_end(entry),
        }
        Ok(b.build_alloca(ty, name)?)
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
        if let (Some((dib, _)), Some(sp)) = (&self.e.debug, self.llfn.get_subprogram()) {
            let (line, col) = self.e.program.file.line_col(s.span.start);
            let loc = dib.create_debug_location(
                self.e.ctx,
                line as u32,
                col as u32,
                sp.as_debug_info_scope(),
                None,
            );
            self.e.builder.set_current_debug_location(loc);
        }
        match &s.kind {
            StmtKind::Eval(e) => {
                self.expr(*e)?;
            }
            StmtKind::Assign(l, e) => {
                if let Some(v) = self.expr(*e)? {
                    let v = self.mem_repr(v, &self.f.locals[*l].ty)?;
                    let LocalSlot::Memory(slot) = self.locals[l.index()] else {
                        return Err(err("assignment to a local without a stack slot"));
                    };
                    self.b().build_store(slot, v)?;
                }
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => {
                let (ptr, at, ok) = self.element_ptr_checked(*array, indices, s.span)?;
                let v = self.value(*value)?;
                let v = self.mem_repr(v, &at.dtype.ty())?;
                let cont = self.guard(ok)?;
                let st = self.b().build_store(ptr, v)?;
                st.set_alignment(elem_align(&at.dtype) as u32)
                    .map_err(|e| err(e.to_string()))?;
                if let Some(cont) = cont {
                    self.b().build_unconditional_branch(cont)?;
                    self.b().position_at_end(cont);
                }
            }
            StmtKind::StoreRef { target, value } => {
                let ptr = self.value(*target)?.into_pointer_value();
                let vt = self.ty(*value).clone();
                let v = self.value(*value)?;
                let v = self.mem_repr(v, &vt)?;
                let st = self.b().build_store(ptr, v)?;
                st.set_alignment(ref_align(&vt))
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
                        let mut v = self.value(*e)?;
                        if boxed_fp8(self.f, &self.f.ret) {
                            let boxed = self.e.fp8_box().get_undef();
                            v = self
                                .b()
                                .build_insert_value(boxed, v, 0, "")?
                                .as_basic_value_enum();
                        }
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
                let dtype = match self.ty(*target) {
                    Type::Ref { dtype, .. } => *dtype,
                    _ => return Err(err("atomic on a non-reference")),
                };
                let ptr = self.value(*target)?.into_pointer_value();
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.value(*a)?);
                }
                return self.atomic(*op, *order, *scope, dtype, ptr, &vals);
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

    /// Like `element_ptr`, and in bounds-checking mode also whether every index is in range
    /// (`0 <= i < shape`, after Python's wrap of negative indices).
    fn element_ptr_checked(
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
        for (d, i) in idx.iter().enumerate() {
            let n = self.dim(desc, 1, d as u8)?;
            let inb = self.b().build_int_compare(IntPredicate::ULT, *i, n, "")?;
            ok = self.b().build_and(ok, inb, "")?;
        }
        let (line, col) = self.e.program.file.line_col(span.start);
        Ok((p, at, Some((ok, (line as u64) << 32 | col as u64))))
    }

    /// In bounds-checking mode: branch on `ok`; the failing side records the error (the
    /// first one wins) and skips the access. Returns the block where both sides meet, with
    /// the builder positioned where the access goes.
    fn guard(&mut self, ok: Option<BoundsCheck<'ctx>>) -> R<Option<BasicBlock<'ctx>>> {
        let Some((ok, code)) = ok else {
            return Ok(None);
        };
        let access = self.new_block("inbounds");
        let fail = self.new_block("out_of_bounds");
        let cont = self.new_block("bounds.end");
        self.b().build_conditional_branch(ok, access, fail)?;
        self.b().position_at_end(fail);
        let g = self.e.bounds_error_global();
        let i64t = self.e.ctx.i64_type();
        self.b().build_cmpxchg(
            g,
            i64t.const_zero(),
            i64t.const_int(code, false),
            inkwell::AtomicOrdering::Monotonic,
            inkwell::AtomicOrdering::Monotonic,
        )?;
        self.b().build_unconditional_branch(cont)?;
        // The failing block must directly precede `cont` for the load's phi to find it.
        fail.move_before(cont).map_err(|_| err("block order"))?;
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

    fn sreg(&self, name: &str) -> R<BasicValueEnum<'ctx>> {
        let f = self.e.intrinsic(name, &[])?;
        self.call1(f, &[])
    }

    fn intrinsic(
        &mut self,
        op: Intrinsic,
        args: &[Handle<Expr>],
        ty: &Type,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let sreg = |kind: &str, a: Axis| format!("llvm.nvvm.read.ptx.sreg.{kind}.{}", a.letter());
        let ctx = self.e.ctx;
        let i32t = ctx.i32_type();
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.value(*a)?);
        }
        let v: BasicValueEnum<'ctx> = match op {
            Intrinsic::ThreadIdx(a) => self.sreg(&sreg("tid", a))?,
            Intrinsic::BlockIdx(a) => self.sreg(&sreg("ctaid", a))?,
            Intrinsic::BlockDim(a) => self.sreg(&sreg("ntid", a))?,
            Intrinsic::GridDim(a) => self.sreg(&sreg("nctaid", a))?,
            Intrinsic::LaneId => self.sreg("llvm.nvvm.read.ptx.sreg.laneid")?,
            Intrinsic::LaneMaskLt => self.sreg("llvm.nvvm.read.ptx.sreg.lanemask.lt")?,
            Intrinsic::WarpSize => i32t.const_int(32, false).into(),
            Intrinsic::SyncThreads => {
                let f = self.e.intrinsic("llvm.nvvm.barrier0", &[])?;
                self.b().build_call(f, &[], "")?;
                return Ok(None);
            }
            Intrinsic::SyncThreadsCount | Intrinsic::SyncThreadsAnd | Intrinsic::SyncThreadsOr => {
                let name = match op {
                    Intrinsic::SyncThreadsCount => "llvm.nvvm.barrier0.popc",
                    Intrinsic::SyncThreadsAnd => "llvm.nvvm.barrier0.and",
                    _ => "llvm.nvvm.barrier0.or",
                };
                let p = self
                    .b()
                    .build_int_z_extend(vals[0].into_int_value(), i32t, "")?;
                let f = self.e.intrinsic(name, &[])?;
                let r = self.call1(f, &[p.into()])?.into_int_value();
                if op == Intrinsic::SyncThreadsCount {
                    r.into()
                } else {
                    self.b()
                        .build_int_compare(IntPredicate::NE, r, i32t.const_zero(), "")?
                        .into()
                }
            }
            Intrinsic::ThreadFence(order, scope) => {
                if order != MemoryOrder::Relaxed {
                    let sem = if order == MemoryOrder::SeqCst {
                        "sc"
                    } else {
                        "acq_rel"
                    };
                    self.asm(
                        &format!("fence.{sem}.{};", ptx_scope(scope)),
                        "~{memory}",
                        None,
                        &[],
                    )?;
                }
                return Ok(None);
            }
            Intrinsic::ActiveMask => self
                .asm("activemask.b32 $0;", "=r,~{memory}", Some(i32t.into()), &[])?
                .ok_or_else(|| err("activemask"))?,
            Intrinsic::SyncWarp => {
                let f = self.e.intrinsic("llvm.nvvm.bar.warp.sync", &[])?;
                self.b().build_call(f, &[vals[0].into()], "")?;
                return Ok(None);
            }
            Intrinsic::Vote(vote) => {
                let name = match vote {
                    Vote::All => "llvm.nvvm.vote.all.sync",
                    Vote::Any => "llvm.nvvm.vote.any.sync",
                    Vote::Uni => "llvm.nvvm.vote.uni.sync",
                    Vote::Ballot => "llvm.nvvm.vote.ballot.sync",
                };
                let f = self.e.intrinsic(name, &[])?;
                self.call1(f, &[vals[0].into(), vals[1].into()])?
            }
            Intrinsic::Shfl(kind) => self.shfl(
                kind,
                vals[0].into_int_value(),
                vals[1],
                vals[2].into_int_value(),
            )?,
            Intrinsic::MatchAny | Intrinsic::MatchAll => {
                let x = self.as_int_bits(vals[1])?;
                let w = x.get_type().get_bit_width();
                let name = match (op, w) {
                    (Intrinsic::MatchAny, 64) => "llvm.nvvm.match.any.sync.i64",
                    (Intrinsic::MatchAny, _) => "llvm.nvvm.match.any.sync.i32",
                    (_, 64) => "llvm.nvvm.match.all.sync.i64p",
                    _ => "llvm.nvvm.match.all.sync.i32p",
                };
                let f = self.e.intrinsic(name, &[])?;
                let r = self.call1(f, &[vals[0].into(), x.into()])?;
                if op == Intrinsic::MatchAny {
                    r
                } else {
                    let agg = r.into_struct_value();
                    let mask = self.b().build_extract_value(agg, 0, "")?;
                    let pred = self.b().build_extract_value(agg, 1, "")?;
                    let st = self
                        .e
                        .ty(ty)
                        .ok_or_else(|| err("match_all type"))?
                        .into_struct_type();
                    let (i0, i1) = (self.e.field_index(ty, 0), self.e.field_index(ty, 1));
                    let out = self.b().build_insert_value(st.get_undef(), mask, i0, "")?;
                    let pred = self.mem_repr(pred, &Type::Scalar(Scalar::Bool))?;
                    self.b()
                        .build_insert_value(out, pred, i1, "")?
                        .as_basic_value_enum()
                }
            }
            Intrinsic::Popc | Intrinsic::Clz | Intrinsic::Ffs | Intrinsic::Brev => {
                let x = vals[0].into_int_value();
                let t = x.get_type();
                let f = |name: &str| self.e.intrinsic(name, &[t.into()]);
                let fls = ctx.bool_type().const_zero();
                match op {
                    Intrinsic::Brev => self.call1(f("llvm.bitreverse")?, &[x.into()])?,
                    Intrinsic::Popc => {
                        let r = self.call1(f("llvm.ctpop")?, &[x.into()])?.into_int_value();
                        self.b()
                            .build_int_cast_sign_flag(r, i32t, false, "")?
                            .into()
                    }
                    Intrinsic::Clz => {
                        let r = self
                            .call1(f("llvm.ctlz")?, &[x.into(), fls.into()])?
                            .into_int_value();
                        self.b()
                            .build_int_cast_sign_flag(r, i32t, false, "")?
                            .into()
                    }
                    _ => {
                        let r = self
                            .call1(f("llvm.cttz")?, &[x.into(), fls.into()])?
                            .into_int_value();
                        let r = self.b().build_int_cast_sign_flag(r, i32t, false, "")?;
                        let r1 = self.b().build_int_add(r, i32t.const_int(1, false), "")?;
                        let zero =
                            self.b()
                                .build_int_compare(IntPredicate::EQ, x, t.const_zero(), "")?;
                        self.b().build_select(zero, i32t.const_zero(), r1, "")?
                    }
                }
            }
            Intrinsic::Fma => {
                let t = vals[0].get_type();
                let f = self.e.intrinsic("llvm.fma", &[t])?;
                self.call1(f, &[vals[0].into(), vals[1].into(), vals[2].into()])?
            }
            Intrinsic::Math(f) => self.math(f, &vals)?,
            Intrinsic::RoundDigits => self.round_digits(vals[0], vals[1])?,
            Intrinsic::Ldexp | Intrinsic::Frexp | Intrinsic::Modf | Intrinsic::Sincos => {
                self.math_pair(op, &vals, ty)?
            }
            Intrinsic::Sad => {
                let i32t = self.e.ctx.i32_type();
                let f = self.e.libdevice_fn("__nv_sad", i32t.into(), 3);
                self.call1(f, &[vals[0].into(), vals[1].into(), vals[2].into()])?
            }
            Intrinsic::Complex(op) => self.complex_op(op, &vals)?,
            Intrinsic::DynamicSharedSize => self
                .asm(
                    "mov.u32 $0, %dynamic_smem_size;",
                    "=r",
                    Some(i32t.into()),
                    &[],
                )?
                .ok_or_else(|| err("dynamic_smem_size"))?,
        };
        Ok(Some(v))
    }

    /// Emits inline PTX; `ret` is the result type, if any.
    fn asm(
        &self,
        text: &str,
        constraints: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let params: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| a.get_type().into()).collect();
        let fn_ty = match ret {
            Some(r) => r.fn_type(&params, false),
            None => self.e.ctx.void_type().fn_type(&params, false),
        };
        let ptr = self.e.ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            constraints.to_string(),
            true,
            false,
            None,
            false,
        );
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        let call = self.b().build_indirect_call(fn_ty, ptr, &margs, "")?;
        // Convergent: the result may depend on which threads execute it (`activemask`), so
        // LLVM must not merge copies from both sides of a branch into one before it.
        let convergent = Attribute::get_named_enum_kind_id("convergent");
        call.add_attribute(
            AttributeLoc::Function,
            self.e.ctx.create_enum_attribute(convergent, 0),
        );
        Ok(match call.try_as_basic_value() {
            ValueKind::Basic(v) => Some(v),
            _ => None,
        })
    }

    /// A float or integer as an integer of the same width.
    fn as_int_bits(&self, v: BasicValueEnum<'ctx>) -> R<IntValue<'ctx>> {
        Ok(match v {
            BasicValueEnum::IntValue(i) => i,
            BasicValueEnum::FloatValue(f) => {
                let t = f.get_type();
                let w = if t == self.e.ctx.f64_type() {
                    64
                } else if t == self.e.ctx.f32_type() {
                    32
                } else {
                    16
                };
                self.b()
                    .build_bit_cast(f, self.e.int_t(w), "")?
                    .into_int_value()
            }
            _ => return Err(err("bits of a non-number")),
        })
    }

    fn int_bits_as(&self, i: IntValue<'ctx>, like: BasicTypeEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        Ok(match like {
            BasicTypeEnum::FloatType(t) => self.b().build_bit_cast(i, t, "")?,
            _ => i.into(),
        })
    }

    fn shfl(
        &mut self,
        kind: Shfl,
        mask: IntValue<'ctx>,
        v: BasicValueEnum<'ctx>,
        lane: IntValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let i32t = self.e.ctx.i32_type();
        let (name, c) = match kind {
            Shfl::Idx => ("llvm.nvvm.shfl.sync.idx.i32", 0x1f),
            Shfl::Up => ("llvm.nvvm.shfl.sync.up.i32", 0),
            Shfl::Down => ("llvm.nvvm.shfl.sync.down.i32", 0x1f),
            Shfl::Xor => ("llvm.nvvm.shfl.sync.bfly.i32", 0x1f),
        };
        let f = self.e.intrinsic(name, &[])?;
        let c = i32t.const_int(c, false);
        let bits = self.as_int_bits(v)?;
        let r = if bits.get_type().get_bit_width() == 64 {
            let i64t = self.e.ctx.i64_type();
            let lo = self.b().build_int_truncate(bits, i32t, "")?;
            let hi = self
                .b()
                .build_right_shift(bits, i64t.const_int(32, false), false, "")?;
            let hi = self.b().build_int_truncate(hi, i32t, "")?;
            let lo = self
                .call1(f, &[mask.into(), lo.into(), lane.into(), c.into()])?
                .into_int_value();
            let hi = self
                .call1(f, &[mask.into(), hi.into(), lane.into(), c.into()])?
                .into_int_value();
            let lo = self.b().build_int_z_extend(lo, i64t, "")?;
            let hi = self.b().build_int_z_extend(hi, i64t, "")?;
            let hi = self
                .b()
                .build_left_shift(hi, i64t.const_int(32, false), "")?;
            self.b().build_or(hi, lo, "")?
        } else {
            self.call1(f, &[mask.into(), bits.into(), lane.into(), c.into()])?
                .into_int_value()
        };
        self.int_bits_as(r, v.get_type())
    }

    fn math(&mut self, f: MathFn, vals: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let x = vals[0].into_float_value();
        let ft = x.get_type();
        let is64 = ft == self.e.ctx.f64_type();
        let llvm = |cx: &Self, name: &str| cx.e.intrinsic(name, &[ft.into()]);
        let inf = ft.const_float(f64::INFINITY);
        Ok(match f {
            MathFn::Sqrt => self.call1(llvm(self, "llvm.sqrt")?, &[x.into()])?,
            MathFn::Floor => self.call1(llvm(self, "llvm.floor")?, &[x.into()])?,
            MathFn::Ceil => self.call1(llvm(self, "llvm.ceil")?, &[x.into()])?,
            MathFn::Trunc => self.call1(llvm(self, "llvm.trunc")?, &[x.into()])?,
            MathFn::Fabs => self.call1(llvm(self, "llvm.fabs")?, &[x.into()])?,
            MathFn::Rint => self.call1(llvm(self, "llvm.rint")?, &[x.into()])?,
            MathFn::Degrees | MathFn::Radians => {
                let k = if f == MathFn::Degrees {
                    180.0 / std::f64::consts::PI
                } else {
                    std::f64::consts::PI / 180.0
                };
                self.b().build_float_mul(x, ft.const_float(k), "")?.into()
            }
            MathFn::Copysign => {
                self.call1(llvm(self, "llvm.copysign")?, &[x.into(), vals[1].into()])?
            }
            MathFn::Isnan => self
                .b()
                .build_float_compare(FloatPredicate::UNO, x, x, "")?
                .into(),
            MathFn::Isinf | MathFn::Isfinite => {
                let a = self
                    .call1(llvm(self, "llvm.fabs")?, &[x.into()])?
                    .into_float_value();
                let p = if f == MathFn::Isinf {
                    FloatPredicate::OEQ
                } else {
                    FloatPredicate::OLT
                };
                self.b().build_float_compare(p, a, inf, "")?.into()
            }
            _ => {
                let name = f
                    .libdevice(is64)
                    .ok_or_else(|| err(format!("no lowering for math.{}", f.name())))?;
                let func = self.e.libdevice_fn(&name, ft.into(), f.arity());
                let args: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
                self.call1(func, &args)?
            }
        })
    }

    /// A descriptor value from its parts.
    fn descriptor(
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

    fn static_array(
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
        let align = align.max(elem_align(&at.dtype)) as u32;
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
    fn const_array(
        &mut self,
        at: &ArrayType,
        a: &crate::front::const_array::ConstArray,
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

    fn dynamic_shared(&mut self, ty: &Type) -> R<BasicValueEnum<'ctx>> {
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

    /// Atomic operations as inline PTX with explicit semantics and scope (`atom.<sem>.<scope>`,
    /// `ld.acquire`, `st.release`, `fence.sc` for seq_cst); float max/min are CAS loops.
    fn atomic(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let sc = ptx_scope(scope);
        let (rmw_sem, fence) = atomic_semantics(order, sc);
        let bits = dtype.bits();
        let it = self.e.int_t(bits.max(16));
        let reg = match bits {
            8 | 16 => "h",
            32 => "r",
            _ => "l",
        };
        let vt = self.e.mem_type(&Type::Scalar(dtype));
        let to_bits = |cx: &Self, v: BasicValueEnum<'ctx>| -> R<IntValue<'ctx>> {
            let v = cx.mem_repr(v, &Type::Scalar(dtype))?;
            let i = cx.as_int_bits(v)?;
            Ok(if i.get_type().get_bit_width() < 16 {
                cx.b().build_int_z_extend(i, it, "")?
            } else {
                i
            })
        };
        let from_bits = |cx: &Self, i: IntValue<'ctx>| -> R<BasicValueEnum<'ctx>> {
            let i = if bits < 16 {
                cx.b().build_int_truncate(i, cx.e.ctx.i8_type(), "")?
            } else {
                i
            };
            let v = cx.int_bits_as(i, vt)?;
            cx.reg_repr(v, &Type::Scalar(dtype))
        };
        match op {
            AtomicOp::Load => {
                let sem = if order == MemoryOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let text = format!("{fence}ld.{sem}.{sc}.b{bits} $0, [$1];");
                let r = self
                    .asm(
                        &text,
                        &format!("={reg},l,~{{memory}}"),
                        Some(it.into()),
                        &[ptr.into()],
                    )?
                    .ok_or_else(|| err("atomic load"))?;
                Ok(Some(from_bits(self, r.into_int_value())?))
            }
            AtomicOp::Store => {
                let sem = if order == MemoryOrder::Release {
                    "release"
                } else {
                    "relaxed"
                };
                let sem = if order == MemoryOrder::SeqCst {
                    "relaxed"
                } else {
                    sem
                };
                let text = format!("{fence}st.{sem}.{sc}.b{bits} [$0], $1;");
                let v = to_bits(self, vals[0])?;
                self.asm(
                    &text,
                    &format!("l,{reg},~{{memory}}"),
                    None,
                    &[ptr.into(), v.into()],
                )?;
                Ok(None)
            }
            AtomicOp::Notify => Ok(None),
            AtomicOp::Wait => {
                // while load(order) == old: nanosleep(backoff), doubling up to 1 µs.
                let sem = if order == MemoryOrder::Relaxed {
                    "relaxed"
                } else {
                    "acquire"
                };
                let text = format!("{fence}ld.{sem}.{sc}.b{bits} $0, [$1];");
                let old = to_bits(self, vals[0])?;
                let i32t = self.e.ctx.i32_type();
                let entry = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                let lp = self.new_block("wait.loop");
                let sleep = self.new_block("wait.sleep");
                let done = self.new_block("wait.done");
                self.b().build_unconditional_branch(lp)?;
                self.b().position_at_end(lp);
                let backoff = self.b().build_phi(i32t, "backoff")?;
                let cur = self
                    .asm(
                        &text,
                        &format!("={reg},l,~{{memory}}"),
                        Some(it.into()),
                        &[ptr.into()],
                    )?
                    .ok_or_else(|| err("wait load"))?
                    .into_int_value();
                let same = self.b().build_int_compare(IntPredicate::EQ, cur, old, "")?;
                self.b().build_conditional_branch(same, sleep, done)?;
                self.b().position_at_end(sleep);
                let ns = backoff.as_basic_value().into_int_value();
                self.asm("nanosleep.u32 $0;", "r,~{memory}", None, &[ns.into()])?;
                let doubled = self
                    .b()
                    .build_left_shift(ns, i32t.const_int(1, false), "")?;
                let cap = i32t.const_int(1024, false);
                let over = self
                    .b()
                    .build_int_compare(IntPredicate::UGT, doubled, cap, "")?;
                let next = self
                    .b()
                    .build_select(over, cap, doubled, "")?
                    .into_int_value();
                self.b().build_unconditional_branch(lp)?;
                backoff.add_incoming(&[(&i32t.const_int(32, false), entry), (&next, sleep)]);
                self.b().position_at_end(done);
                Ok(None)
            }
            AtomicOp::Inc | AtomicOp::Dec => {
                let v = to_bits(self, vals[0])?;
                let old = self.atomic_inc_dec(op, order, scope, bits, ptr, v)?;
                Ok(Some(from_bits(self, old)?))
            }
            AtomicOp::Max | AtomicOp::Min | AtomicOp::NanMax | AtomicOp::NanMin
                if dtype.is_float() =>
            {
                Ok(Some(self.atomic_float_minmax(
                    op, order, scope, dtype, ptr, vals[0],
                )?))
            }
            _ => {
                let sem = rmw_sem;
                let signed = dtype.is_signed();
                let (name, ty) = match op {
                    AtomicOp::Exch => ("exch", format!("b{bits}")),
                    AtomicOp::Cas => ("cas", format!("b{bits}")),
                    AtomicOp::Add | AtomicOp::Sub => (
                        "add",
                        if dtype.is_float() {
                            format!("f{bits}")
                        } else if bits == 32 && signed {
                            "s32".into()
                        } else {
                            format!("u{bits}")
                        },
                    ),
                    AtomicOp::And => ("and", format!("b{bits}")),
                    AtomicOp::Or => ("or", format!("b{bits}")),
                    AtomicOp::Xor => ("xor", format!("b{bits}")),
                    AtomicOp::Max | AtomicOp::NanMax => {
                        ("max", format!("{}{bits}", if signed { "s" } else { "u" }))
                    }
                    AtomicOp::Min | AtomicOp::NanMin => {
                        ("min", format!("{}{bits}", if signed { "s" } else { "u" }))
                    }
                    AtomicOp::Load
                    | AtomicOp::Store
                    | AtomicOp::Wait
                    | AtomicOp::Notify
                    | AtomicOp::Inc
                    | AtomicOp::Dec => {
                        unreachable!("handled above")
                    }
                };
                let mut operand = vals[0];
                if op == AtomicOp::Sub {
                    operand = match operand {
                        BasicValueEnum::FloatValue(f) => self.b().build_float_neg(f, "")?.into(),
                        BasicValueEnum::IntValue(i) => self.b().build_int_neg(i, "")?.into(),
                        other => other,
                    };
                }
                let a = to_bits(self, operand)?;
                let (text, cons, args) = if op == AtomicOp::Cas {
                    let b = to_bits(self, vals[1])?;
                    (
                        format!("{fence}atom.{sem}.{sc}.cas.{ty} $0, [$1], $2, $3;"),
                        format!("={reg},l,{reg},{reg},~{{memory}}"),
                        vec![ptr.into(), a.into(), b.into()],
                    )
                } else {
                    (
                        format!("{fence}atom.{sem}.{sc}.{name}.{ty} $0, [$1], $2;"),
                        format!("={reg},l,{reg},~{{memory}}"),
                        vec![ptr.into(), a.into()],
                    )
                };
                let r = self
                    .asm(&text, &cons, Some(it.into()), &args)?
                    .ok_or_else(|| err("atomic"))?;
                Ok(Some(from_bits(self, r.into_int_value())?))
            }
        }
    }

    /// `max`/`min`/`nanmax`/`nanmin` on floats: a compare-and-swap loop. Returns the old value.
    fn atomic_float_minmax(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        dtype: Scalar,
        ptr: PointerValue<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let bits = dtype.bits();
        let it = self.e.int_t(bits);
        let ft = v.get_type().into_float_type();
        let v = v.into_float_value();
        let old_bits = self.atomic_cas_loop(order, scope, bits, ptr, &|cx, old_bits| {
            let b = cx.b();
            let old = b.build_bit_cast(old_bits, ft, "")?.into_float_value();
            let better = match op {
                AtomicOp::Max => b.build_float_compare(FloatPredicate::OGT, v, old, "")?,
                AtomicOp::Min => b.build_float_compare(FloatPredicate::OLT, v, old, "")?,
                _ => {
                    // NaN is a missing value: take v if old is NaN, keep old if v is NaN.
                    let p = if op == AtomicOp::NanMax {
                        FloatPredicate::OGT
                    } else {
                        FloatPredicate::OLT
                    };
                    let c = b.build_float_compare(p, v, old, "")?;
                    let old_nan = b.build_float_compare(FloatPredicate::UNO, old, old, "")?;
                    b.build_or(c, old_nan, "")?
                }
            };
            let new = b.build_select(better, v, old, "")?.into_float_value();
            Ok(b.build_bit_cast(new, it, "")?.into_int_value())
        })?;
        Ok(self.b().build_bit_cast(old_bits, ft, "")?)
    }

    /// numba's `inc` and `dec` on unsigned integers: `inc` stores `old >= v ? 0 : old + 1`,
    /// `dec` stores `old == 0 || old > v ? v : old - 1` (CUDA's `atomicInc`/`atomicDec`).
    /// 32 bits have PTX instructions; 64 bits use a compare-and-swap loop. Returns the old
    /// value.
    fn atomic_inc_dec(
        &mut self,
        op: AtomicOp,
        order: MemoryOrder,
        scope: Scope,
        bits: u32,
        ptr: PointerValue<'ctx>,
        v: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let name = if op == AtomicOp::Inc { "inc" } else { "dec" };
        if bits == 32 {
            let sc = ptx_scope(scope);
            let (sem, fence) = atomic_semantics(order, sc);
            return Ok(self
                .asm(
                    &format!("{fence}atom.{sem}.{sc}.{name}.u32 $0, [$1], $2;"),
                    "=r,l,r,~{memory}",
                    Some(self.e.int_t(32).into()),
                    &[ptr.into(), v.into()],
                )?
                .ok_or_else(|| err(name))?
                .into_int_value());
        }
        self.atomic_cas_loop(order, scope, bits, ptr, &|cx, old| {
            let b = cx.b();
            let one = old.get_type().const_int(1, false);
            let zero = old.get_type().const_zero();
            Ok(if op == AtomicOp::Inc {
                let wrap = b.build_int_compare(IntPredicate::UGE, old, v, "")?;
                let next = b.build_int_add(old, one, "")?;
                b.build_select(wrap, zero, next, "")?.into_int_value()
            } else {
                let is_zero = b.build_int_compare(IntPredicate::EQ, old, zero, "")?;
                let above = b.build_int_compare(IntPredicate::UGT, old, v, "")?;
                let reset = b.build_or(is_zero, above, "")?;
                let next = b.build_int_sub(old, one, "")?;
                b.build_select(reset, v, next, "")?.into_int_value()
            })
        })
    }

    /// A read-modify-write as a compare-and-swap loop on a `bits`-wide word: `new_of`
    /// computes the value to store from the old one (both as integers). Returns the old
    /// value that was replaced.
    fn atomic_cas_loop(
        &mut self,
        order: MemoryOrder,
        scope: Scope,
        bits: u32,
        ptr: PointerValue<'ctx>,
        new_of: &dyn Fn(&Self, IntValue<'ctx>) -> R<IntValue<'ctx>>,
    ) -> R<IntValue<'ctx>> {
        let it = self.e.int_t(bits);
        let reg = if bits == 32 { "r" } else { "l" };
        let sc = ptx_scope(scope);
        let first = self
            .asm(
                &format!("ld.relaxed.{sc}.b{bits} $0, [$1];"),
                &format!("={reg},l,~{{memory}}"),
                Some(it.into()),
                &[ptr.into()],
            )?
            .ok_or_else(|| err("load"))?
            .into_int_value();
        let entry = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        let lp = self.new_block("atomic.loop");
        let done = self.new_block("atomic.done");
        self.b().build_unconditional_branch(lp)?;
        self.b().position_at_end(lp);
        let phi = self.b().build_phi(it, "old")?;
        let old_bits = phi.as_basic_value().into_int_value();
        let new_bits = new_of(self, old_bits)?;
        let same = self
            .b()
            .build_int_compare(IntPredicate::EQ, new_bits, old_bits, "")?;
        let cas_block = self.new_block("atomic.cas");
        self.b().build_conditional_branch(same, done, cas_block)?;
        self.b().position_at_end(cas_block);
        let (sem, fence) = atomic_semantics(order, sc);
        let prev = self
            .asm(
                &format!("{fence}atom.{sem}.{sc}.cas.b{bits} $0, [$1], $2, $3;"),
                &format!("={reg},l,{reg},{reg},~{{memory}}"),
                Some(it.into()),
                &[ptr.into(), old_bits.into(), new_bits.into()],
            )?
            .ok_or_else(|| err("cas"))?
            .into_int_value();
        let ok = self
            .b()
            .build_int_compare(IntPredicate::EQ, prev, old_bits, "")?;
        let cas_end = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        self.b().build_conditional_branch(ok, done, lp)?;
        phi.add_incoming(&[(&first, entry), (&prev, cas_end)]);
        self.b().position_at_end(done);
        let res = self.b().build_phi(it, "")?;
        res.add_incoming(&[(&old_bits, lp), (&old_bits, cas_end)]);
        Ok(res.as_basic_value().into_int_value())
    }

    fn truthy(&self, v: BasicValueEnum<'ctx>, s: Scalar) -> R<IntValue<'ctx>> {
        Ok(match s {
            Scalar::Bool => v.into_int_value(),
            s if s.is_complex() => self.complex_truthy(v)?,
            s if s.is_fp8() => {
                let iv = v.into_int_value();
                let mag = self
                    .b()
                    .build_and(iv, iv.get_type().const_int(0x7f, false), "")?;
                self.b()
                    .build_int_compare(IntPredicate::NE, mag, iv.get_type().const_zero(), "")?
            }
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
        if from.is_complex() || to.is_complex() {
            return self.complex_cast(v, from, to);
        }
        if from.is_fp8() || to.is_fp8() {
            return self.fp8_cast(v, from, to);
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
            (true, true) => {
                let x = v.into_float_value();
                let tt = tt.into_float_type();
                if x.get_type() != tt && x.get_type().get_bit_width() == tt.get_bit_width() {
                    // float16 <-> bfloat16: LLVM has no cast between equal widths; float32
                    // holds every float16 exactly, so this rounds once.
                    let f32t = self.e.ctx.f32_type();
                    let wide = self.b().build_float_ext(x, f32t, "")?;
                    self.b().build_float_trunc(wide, tt, "")?.into()
                } else {
                    self.b().build_float_cast(x, tt, "")?.into()
                }
            }
        })
    }

    /// `ldexp`, `frexp` and `modf` through libdevice (`__nv_frexpf(float, int*)` …): the
    /// out-parameter is a stack slot of the entry block; the pairs are built as tuples.
    fn math_pair(
        &mut self,
        op: Intrinsic,
        vals: &[BasicValueEnum<'ctx>],
        ty: &Type,
    ) -> R<BasicValueEnum<'ctx>> {
        let x = vals[0].into_float_value();
        let ft = x.get_type();
        let suffix = if ft == self.e.ctx.f32_type() { "f" } else { "" };
        let i32t = self.e.ctx.i32_type();
        let ptr = self.e.ctx.ptr_type(inkwell::AddressSpace::default());
        let (base, second): (&str, BasicTypeEnum<'ctx>) = match op {
            Intrinsic::Ldexp => ("ldexp", i32t.into()),
            Intrinsic::Frexp => ("frexp", ptr.into()),
            _ => ("modf", ptr.into()),
        };
        let name = format!("__nv_{base}{suffix}");
        self.e.uses_libdevice = true;
        if op == Intrinsic::Sincos {
            // void __nv_sincos(double x, double *s, double *c)
            let name = format!("__nv_sincos{suffix}");
            let func = match self.e.module.get_function(&name) {
                Some(f) => f,
                None => self.e.module.add_function(
                    &name,
                    self.e
                        .ctx
                        .void_type()
                        .fn_type(&[ft.into(), ptr.into(), ptr.into()], false),
                    None,
                ),
            };
            let s = self.entry_alloca(ft, "sin")?;
            let c = self.entry_alloca(ft, "cos")?;
            self.b()
                .build_call(func, &[x.into(), s.into(), c.into()], "")?;
            let sv = self.b().build_load(ft, s, "")?;
            let cv = self.b().build_load(ft, c, "")?;
            return self.pair_tuple(ty, [sv, cv]);
        }
        let func = match self.e.module.get_function(&name) {
            Some(f) => f,
            None => self.e.module.add_function(
                &name,
                ft.fn_type(&[ft.into(), second.into()], false),
                None,
            ),
        };
        if op == Intrinsic::Ldexp {
            return self.call1(func, &[x.into(), vals[1].into()]);
        }
        let slot_ty: BasicTypeEnum<'ctx> = if op == Intrinsic::Frexp {
            i32t.into()
        } else {
            ft.into()
        };
        let slot = self.entry_alloca(slot_ty, base)?;
        let first = self.call1(func, &[x.into(), slot.into()])?;
        let other = self.b().build_load(slot_ty, slot, "")?;
        self.pair_tuple(ty, [first, other])
    }

    /// A two-element tuple value of type `ty`.
    fn pair_tuple(
        &mut self,
        ty: &Type,
        items: [BasicValueEnum<'ctx>; 2],
    ) -> R<BasicValueEnum<'ctx>> {
        let st = self
            .e
            .ty(ty)
            .ok_or_else(|| err("math pair of None"))?
            .into_struct_type();
        let mut agg = st.get_undef().as_basic_value_enum();
        for (i, v) in items.into_iter().enumerate() {
            let at = self.e.field_index(ty, i as u32);
            agg = self
                .b()
                .build_insert_value(agg.into_struct_value(), v, at, "")?
                .as_basic_value_enum();
        }
        Ok(agg)
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
        if s.is_complex() {
            return self.complex_unary(op, v);
        }
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
        if s.is_complex() {
            self.complex_binary(op, x, y)
        } else if s.is_float() {
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
        if s.bits() == 16 && matches!(op, BinaryOp::Pow | BinaryOp::FloorDiv | BinaryOp::Mod) {
            // No 16-bit libdevice functions: compute in float32 and round once.
            let f32t = self.e.ctx.f32_type();
            let xe = self.b().build_float_ext(x, f32t, "")?;
            let ye = self.b().build_float_ext(y, f32t, "")?;
            let r = self
                .float_binary(op, Scalar::Float32, xe, ye)?
                .into_float_value();
            return Ok(self.b().build_float_trunc(r, x.get_type(), "")?.into());
        }
        use BinaryOp::*;
        let b = &self.e.builder;
        let cmp = |p| -> R<BasicValueEnum<'ctx>> { Ok(b.build_float_compare(p, x, y, "")?.into()) };
        Ok(match op {
            Add | AddNoWrap => b.build_float_add(x, y, "")?.into(),
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
            AddNoWrap if signed => b.build_int_nsw_add(x, y, "")?.into(),
            AddNoWrap => b.build_int_nuw_add(x, y, "")?.into(),
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
