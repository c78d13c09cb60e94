//! IR → LLVM IR for the NVPTX target.
//!
//! Values: `bool` is `i1` in registers and `i8` in memory and inside aggregates; integers and
//! floats map directly; tuples and vectors are LLVM structs; an array is its descriptor
//! `{ ptr addrspace(N) data, [ndim x i64] shape, [ndim x i64] strides }` with strides in
//! elements (the spec's `interoperable_array_descriptor`). Kernels take aggregates `byval`, as
//! clang does for `__global__` functions, so their parameters match CUDA C++'s by-value ABI.
//! Locals are allocas that the optimizer promotes to registers.
//!
//! This file holds the driver, statements and locals; the submodules hold the rest: `types`
//! (LLVM types), `functions` (signatures and prologues), `expr`, `arith` (operators and
//! casts), `arrays` (elements and array storage), `views`, `intrinsics`, `atomics`, `numbers`
//! (complex and fp8), `print`, `raise` (asserts and
//! errors) and `random` (`cuda.device.random`: Philox and its conversions).

mod arith;
mod arrays;
mod atomics;
mod expr;
mod extensions;
mod functions;
mod groups;
mod hopper;
mod intrinsics;
mod numbers;
mod print;
mod raise;
mod random;
mod restrict;
mod tensor;
mod types;
mod views;

use super::LowerError;
use crate::ir::{
    ArrayProp, AtomicOp, Axis, BinaryOp, Expr, Function, FunctionKind, Handle, Index, Intrinsic,
    Literal, LoopForm, MathFn, MemoryOrder, Program, Scope, Shfl, Stmt, StmtKind, UnaryOp, Vote,
};
use crate::types::{ArrayType, Layout, MemSpace, Scalar, Type};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::{AsContextRef, Context};
use inkwell::debug_info::AsDIScope;
use inkwell::intrinsics::Intrinsic as LlvmIntrinsic;
use inkwell::module::{Linkage, Module};
use inkwell::types::{AnyType, BasicMetadataTypeEnum, BasicType, BasicTypeEnum, StructType};
use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, FunctionValue,
    InstructionValue, IntValue, PointerValue, ValueKind,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};

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
            !program.options.debug,
            "",
            0,
            "",
            if program.options.debug {
                inkwell::debug_info::DWARFEmissionKind::Full
            } else {
                inkwell::debug_info::DWARFEmissionKind::LineTablesOnly
            },
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
        aggregates: Default::default(),
        random: program.uses_random(),
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

/// The mark of a run-time-stride loop's ID, which pipeline.cpp's `RuntimeStrideUnrollPass`
/// reads ([`LoopForm::RuntimeStride`]).
const RUNTIME_STRIDE: &str = "pydevice.loop.runtime_stride";

/// The loop mark that says a loop terminates (LLVM's `mustprogress`, per loop).
const MUST_PROGRESS: &str = "llvm.loop.mustprogress";

/// Whether `stmts` hold a loop, at any depth.
fn has_loop(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Loop { .. } => true,
        StmtKind::If {
            then, otherwise, ..
        } => has_loop(then) || has_loop(otherwise),
        _ => false,
    })
}

/// The functions that stand for signed 64-bit floor division and Python's modulo until the
/// optimizer expands them (pipeline.cpp's `FloorDivPass`, which knows these names).
pub(crate) const FLOORDIV_I64: &str = "__pyd_floordiv.i64";
/// See [`FLOORDIV_I64`].
pub(crate) const FLOORMOD_I64: &str = "__pyd_floormod.i64";

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
    /// The LLVM struct of each aggregate type met so far, with its fields' element indices
    /// (see `aggregate`): computed once per type, so nested tuples lower in time linear in
    /// the program's size.
    aggregates: std::cell::RefCell<std::collections::HashMap<Type, (StructType<'ctx>, Vec<u32>)>>,
    /// For each function: whether it draws random numbers (`Program::uses_random`), so takes
    /// the generator state (a kernel: the launch's seed) as a trailing parameter.
    random: Vec<bool>,
}

fn addr_space(s: MemSpace) -> AddressSpace {
    AddressSpace::from(match s {
        MemSpace::Global => 1u16,
        MemSpace::Shared => 3,
        // Allocas are generic pointers that NVPTX places in local memory.
        MemSpace::Local => 0,
        MemSpace::Const => 4,
        // Another block's shared memory: generic addresses from `mapa` (§18.1).
        MemSpace::Cluster => 0,
    })
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
        t => crate::abi::size_align(t).1.max(1) as u32,
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

/// In bounds-checking mode: whether an access is in range, the code to record if not
/// (`line << 32 | column`), and what the report names: the array, the indices as written
/// (before the wrap of negative ones) and the shape.
struct BoundsCheck<'ctx> {
    ok: IntValue<'ctx>,
    code: u64,
    array: String,
    indices: Vec<IntValue<'ctx>>,
    shape: Vec<IntValue<'ctx>>,
}

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
                | StmtKind::Print(_)
                | StmtKind::Assert { .. }
                | StmtKind::Raise { .. }
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
    /// The thread's random generator state, in functions that draw random numbers.
    rng: Option<PointerValue<'ctx>>,
    /// The no-alias metadata of a `restrict=True` kernel's array parameters (`restrict.rs`).
    restrict: restrict::Restrict<'ctx>,
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
                self.mark_restrict(st, *array, false)?;
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
                form,
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
                let latch = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
                if latch.get_terminator().is_none() {
                    let back = self.b().build_unconditional_branch(head)?;
                    match *form {
                        // An innermost run-time-stride loop terminates (it counts its
                        // iterations, or steps towards a bound within 32 bits, loops.rs), so
                        // its ID also says `llvm.loop.mustprogress`: with it, ScalarEvolution
                        // computes the trip count of `while i < stop: ...; i += step` with
                        // a step of unknown sign, and the loop is unrolled as nvcc unrolls
                        // C's `for (i = tid; i < n; i += step)`.
                        LoopForm::RuntimeStride if !has_loop(body) => self
                            .mark_loop_with(back, &[(RUNTIME_STRIDE, None), (MUST_PROGRESS, None)]),
                        LoopForm::RuntimeStride => self.mark_loop(back, RUNTIME_STRIDE, None),
                        LoopForm::Unroll(0) => self.mark_loop(back, "llvm.loop.unroll.full", None),
                        LoopForm::Unroll(1) => {
                            self.mark_loop(back, "llvm.loop.unroll.disable", None)
                        }
                        LoopForm::Unroll(n) => {
                            self.mark_loop(back, "llvm.loop.unroll.count", Some(n))
                        }
                        LoopForm::Plain => {}
                    }
                }
                self.b().position_at_end(exit);
            }
            StmtKind::Print(pieces) => self.print(pieces)?,
            StmtKind::Assert { cond, message } => self.assert(*cond, message, s.span)?,
            StmtKind::Raise { message } => self.raise(message, s.span)?,
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

    /// Marks the loop whose back edge is `back`: its loop ID (`llvm.loop`) holds
    /// `!{!"MARK"}` (or `!{!"MARK", i32 n}`). [`LoopForm::RuntimeStride`]'s mark is
    /// `!{!"pydevice.loop.runtime_stride"}`, which the optimizer's `RuntimeStrideUnrollPass`
    /// (pipeline.cpp) turns into how LLVM unrolls the loop; [`LoopForm::Unroll`]'s are LLVM's
    /// own unrolling requests.
    fn mark_loop(&self, back: InstructionValue<'ctx>, mark_name: &str, n: Option<u32>) {
        self.mark_loop_with(back, &[(mark_name, n)]);
    }

    /// [`Self::mark_loop`] with several marks, each `!{!"MARK"}` or `!{!"MARK", i32 n}`.
    fn mark_loop_with(&self, back: InstructionValue<'ctx>, marks: &[(&str, Option<u32>)]) {
        use inkwell::llvm_sys::core::{
            LLVMGetMDKindIDInContext, LLVMMDNodeInContext2, LLVMMDStringInContext2,
            LLVMMetadataAsValue, LLVMSetMetadata, LLVMValueAsMetadata,
        };
        use inkwell::llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
        const KIND: &str = "llvm.loop";
        let ctx = self.e.ctx.as_ctx_ref();
        // A loop's ID is a node whose first operand is itself: built around a temporary
        // node that is then replaced by the ID, which LLVM turns into a distinct node with
        // the self-reference (`MDNode::handleChangedOperand`).
        // SAFETY: every node is of this context, the strings outlive the calls, and the
        // temporary node is freed by the replacement and not used after it.
        unsafe {
            let temp = LLVMTemporaryMDNode(ctx, std::ptr::null_mut(), 0);
            let mut ops = vec![temp];
            for &(mark_name, n) in marks {
                let mut mark = vec![LLVMMDStringInContext2(
                    ctx,
                    mark_name.as_ptr().cast(),
                    mark_name.len(),
                )];
                if let Some(n) = n {
                    let c = self.e.ctx.i32_type().const_int(u64::from(n), false);
                    mark.push(LLVMValueAsMetadata(c.as_value_ref()));
                }
                ops.push(LLVMMDNodeInContext2(ctx, mark.as_mut_ptr(), mark.len()));
            }
            let id = LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len());
            LLVMMetadataReplaceAllUsesWith(temp, id);
            let kind = LLVMGetMDKindIDInContext(ctx, KIND.as_ptr().cast(), KIND.len() as u32);
            LLVMSetMetadata(back.as_value_ref(), kind, LLVMMetadataAsValue(ctx, id));
        }
    }

    fn branch_if_open(&self, target: BasicBlock<'ctx>) -> R<()> {
        let bb = self.b().get_insert_block().ok_or_else(|| err("no block"))?;
        if bb.get_terminator().is_none() {
            self.b().build_unconditional_branch(target)?;
        }
        Ok(())
    }

    /// Value `v` of type `from` as a value of type `to`, of the same size: stored to a
    /// 16-byte-aligned stack slot as `from`, loaded as `to` (a struct element's bits for an
    /// atomic, §9.2).
    fn same_bits(
        &self,
        v: BasicValueEnum<'ctx>,
        from: &Type,
        to: &Type,
    ) -> R<BasicValueEnum<'ctx>> {
        let slot = self.entry_alloca(self.e.ctx.i8_type().array_type(16), "bits")?;
        if let Some(i) = slot.as_instruction() {
            i.set_alignment(16).map_err(|e| err(e.to_string()))?;
        }
        let v = self.mem_repr(v, from)?;
        self.b().build_store(slot, v)?;
        let r = self.b().build_load(self.e.mem_type(to), slot, "")?;
        self.reg_repr(r, to)
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
}
