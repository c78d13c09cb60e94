//! Typed IR → Cranelift IR for the host. Each IR function becomes one internal Cranelift
//! function whose parameters and results are the leaves of its values (see [`super::leaf`]);
//! locals are Cranelift variables, one per leaf, so SSA construction is left to
//! `cranelift-frontend`. Two wrappers sit on top of the entry: one with the platform C ABI
//! (the raw function pointer), one taking its arguments from a buffer (the typed call).
//!
//! Every operator mirrors what `lower::ptx::emit` does on the device (Python `//` and `%`,
//! shifts by the width or more, saturating float → int conversions, …), so that a `@func`
//! computes the same results on both sides; docs/semantics.md §16 lists where they differ.

use super::HostError;
use super::leaf::{Class, Passing, classify, element_leaves, leaves};
use crate::ir::{
    ArrayProp, AtomicOp, BinaryOp, Expr, Function, Handle, Index, Intrinsic, Literal, MathFn,
    Program, Stmt, StmtKind, UnaryOp,
};
use crate::types::{Scalar, Type};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, ArgumentExtension, ArgumentPurpose, AtomicRmwOp, Block, BlockArg, FuncRef,
    InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind, TrapCode, Value,
    types as ct,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::HashMap;

type R<T> = Result<T, HostError>;

fn err(m: impl Into<String>) -> HostError {
    HostError::Codegen(m.into())
}

/// The Cranelift type that holds a scalar in a register (`float16`/`bfloat16` as `f32`).
pub(crate) fn reg_type(s: Scalar) -> ct::Type {
    match s {
        Scalar::Bool | Scalar::Int8 | Scalar::UInt8 => ct::I8,
        Scalar::Int16 | Scalar::UInt16 => ct::I16,
        Scalar::Int32 | Scalar::UInt32 => ct::I32,
        Scalar::Int64 | Scalar::UInt64 => ct::I64,
        Scalar::Float16 | Scalar::BFloat16 | Scalar::Float32 => ct::F32,
        Scalar::Float64 => ct::F64,
        // Refused by the host check (`leaf::host_scalar`); never lowered.
        Scalar::Complex64 | Scalar::Complex128 | Scalar::Float8E4M3 | Scalar::Float8E5M2 => ct::I64,
    }
}

/// The Cranelift type of a scalar in memory (`float16`/`bfloat16` as their bits).
fn mem_type(s: Scalar) -> ct::Type {
    match s {
        Scalar::Float16 | Scalar::BFloat16 => ct::I16,
        s => reg_type(s),
    }
}

fn is_half(s: Scalar) -> bool {
    matches!(s, Scalar::Float16 | Scalar::BFloat16)
}

fn flags() -> MemFlagsData {
    MemFlagsData::new()
}

/// The internal signature of an IR function: the address of the call's error word (where
/// the first out-of-range array access is recorded), its parameters' leaves, then its
/// result's.
fn internal_signature(m: &JITModule, f: &Function) -> R<Signature> {
    let mut sig = m.make_signature();
    sig.call_conv = CallConv::SystemV;
    sig.params.push(AbiParam::new(ct::I64));
    for l in f.param_locals() {
        for leaf in leaves(&f.locals[l].ty).ok_or_else(|| err("parameter type"))? {
            sig.params.push(AbiParam::new(reg_type(leaf.scalar)));
        }
    }
    for leaf in leaves(&f.ret).ok_or_else(|| err("result type"))? {
        sig.returns.push(AbiParam::new(reg_type(leaf.scalar)));
    }
    Ok(sig)
}

/// Declares and defines every function of `program`, then the two wrappers of the entry;
/// returns (C ABI wrapper, buffer wrapper).
pub(crate) fn lower(m: &mut JITModule, program: &Program) -> R<(FuncId, FuncId)> {
    let mut ids = Vec::new();
    for (h, f) in program.functions.iter() {
        let sig = internal_signature(m, f)?;
        let name = format!("__pyd_host_{}_{}", h.index(), f.symbol);
        ids.push(
            m.declare_function(&name, Linkage::Local, &sig)
                .map_err(|e| err(e.to_string()))?,
        );
    }
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = m.make_context();
    let cfg = m.isa().frontend_config();
    for (h, f) in program.functions.iter() {
        ctx.func.signature = internal_signature(m, f)?;
        {
            let b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let mut cx = FnCx {
                m,
                program,
                f,
                ids: &ids,
                error_word: None,
                b,
                vars: Vec::new(),
                loops: Vec::new(),
                imports: HashMap::new(),
            };
            cx.define()?;
            cx.b.finalize(cfg);
        }
        m.define_function(ids[h.index()], &mut ctx)
            .map_err(|e| err(format!("{e:?}")))?;
        m.clear_context(&mut ctx);
    }
    let entry = &program.functions[program.entry];
    let c_abi = c_abi_wrapper(m, entry, ids[program.entry.index()], &mut fctx)?;
    let buffer = buffer_wrapper(m, entry, ids[program.entry.index()], &mut fctx)?;
    Ok((c_abi, buffer))
}

/// Calls a helper by symbol (a libm function or one of `super::runtime`'s).
fn import(
    m: &mut JITModule,
    b: &mut FunctionBuilder,
    imports: &mut HashMap<String, FuncRef>,
    name: &str,
    params: &[ct::Type],
    ret: ct::Type,
) -> R<FuncRef> {
    if let Some(r) = imports.get(name) {
        return Ok(*r);
    }
    let mut sig = m.make_signature();
    for p in params {
        sig.params.push(AbiParam::new(*p));
    }
    sig.returns.push(AbiParam::new(ret));
    let id = m
        .declare_function(name, Linkage::Import, &sig)
        .map_err(|e| err(e.to_string()))?;
    let r = m.declare_func_in_func(id, b.func);
    imports.insert(name.to_string(), r);
    Ok(r)
}

/// Reads the leaves of a `t` stored at `ptr + base` (C++ layout).
fn load_leaves(
    m: &mut JITModule,
    b: &mut FunctionBuilder,
    imports: &mut HashMap<String, FuncRef>,
    t: &Type,
    ptr: Value,
    base: u64,
) -> R<Vec<Value>> {
    let mut out = Vec::new();
    for l in leaves(t).ok_or_else(|| err("load of a type without leaves"))? {
        let off = i32::try_from(base + l.offset).map_err(|_| err("offset"))?;
        let raw = b.ins().load(mem_type(l.scalar), flags(), ptr, off);
        out.push(from_memory(m, b, imports, l.scalar, raw)?);
    }
    Ok(out)
}

/// Stores the leaves of a `t` at `ptr + base` (C++ layout).
fn store_leaves(
    m: &mut JITModule,
    b: &mut FunctionBuilder,
    imports: &mut HashMap<String, FuncRef>,
    t: &Type,
    vals: &[Value],
    ptr: Value,
    base: u64,
) -> R<()> {
    let ls = leaves(t).ok_or_else(|| err("store of a type without leaves"))?;
    for (l, v) in ls.iter().zip(vals) {
        let off = i32::try_from(base + l.offset).map_err(|_| err("offset"))?;
        let raw = to_memory(m, b, imports, l.scalar, *v)?;
        b.ins().store(flags(), raw, ptr, off);
    }
    Ok(())
}

/// Memory form → register form: a bool byte becomes 0/1, half-precision bits an `f32`.
fn from_memory(
    m: &mut JITModule,
    b: &mut FunctionBuilder,
    imports: &mut HashMap<String, FuncRef>,
    s: Scalar,
    raw: Value,
) -> R<Value> {
    Ok(match s {
        Scalar::Bool => b.ins().icmp_imm_s(IntCC::NotEqual, raw, 0),
        Scalar::Float16 => {
            let f = import(m, b, imports, "__pyd_f16_value", &[ct::I16], ct::F32)?;
            let c = b.ins().call(f, &[raw]);
            b.inst_results(c)[0]
        }
        Scalar::BFloat16 => {
            let w = b.ins().uextend(ct::I32, raw);
            let w = b.ins().ishl_imm_u(w, 16);
            b.ins().bitcast(ct::F32, flags(), w)
        }
        _ => raw,
    })
}

/// Register form → memory form.
fn to_memory(
    m: &mut JITModule,
    b: &mut FunctionBuilder,
    imports: &mut HashMap<String, FuncRef>,
    s: Scalar,
    v: Value,
) -> R<Value> {
    Ok(match s {
        Scalar::Float16 => {
            let f = import(m, b, imports, "__pyd_f16_bits", &[ct::F32], ct::I16)?;
            let c = b.ins().call(f, &[v]);
            b.inst_results(c)[0]
        }
        Scalar::BFloat16 => {
            let w = b.ins().bitcast(ct::I32, flags(), v);
            let w = b.ins().ushr_imm_u(w, 16);
            b.ins().ireduce(ct::I16, w)
        }
        _ => v,
    })
}

fn extension(s: Scalar) -> ArgumentExtension {
    if s.is_signed() {
        ArgumentExtension::Sext
    } else if s.is_integer() || s == Scalar::Bool || is_half(s) {
        ArgumentExtension::Uext
    } else {
        ArgumentExtension::None
    }
}

/// The System V parameter of a scalar (half precision as its bits, like CUDA's `__half`).
fn scalar_param(s: Scalar) -> AbiParam {
    let mut p = AbiParam::new(mem_type(s));
    p.extension = extension(s);
    p
}

fn eightbyte_type(c: Class) -> ct::Type {
    match c {
        Class::Integer => ct::I64,
        Class::Sse => ct::F64,
    }
}

/// The entry with the platform C ABI (System V x86-64): arguments and result classified as
/// gcc classifies the equivalent C types.
fn c_abi_wrapper(
    m: &mut JITModule,
    entry: &Function,
    inner: FuncId,
    fctx: &mut FunctionBuilderContext,
) -> R<FuncId> {
    let mut sig = m.make_signature();
    sig.call_conv = CallConv::SystemV;
    let ret = classify(&entry.ret).ok_or_else(|| err("result type"))?;
    let (mut gprs, mut xmms) = (6usize, 8usize);
    let sret = matches!(ret, Passing::Memory { .. });
    if sret {
        sig.params
            .push(AbiParam::special(ct::I64, ArgumentPurpose::StructReturn));
        gprs -= 1;
    }
    // How each parameter arrives: its Passing, with Registers demoted to Memory when the
    // registers left cannot hold all of it (the ABI then passes the whole of it on the stack).
    let mut passing = Vec::new();
    for l in entry.param_locals() {
        let t = &entry.locals[l].ty;
        let mut p = classify(t).ok_or_else(|| err("parameter type"))?;
        match &p {
            Passing::Nothing => {}
            Passing::Scalar(s) => {
                if matches!(s, Scalar::Float32 | Scalar::Float64) {
                    xmms = xmms.saturating_sub(1);
                } else {
                    gprs = gprs.saturating_sub(1);
                }
                sig.params.push(scalar_param(*s));
            }
            Passing::Registers(cs) => {
                let ni = cs.iter().filter(|c| **c == Class::Integer).count();
                let ns = cs.len() - ni;
                if ni <= gprs && ns <= xmms {
                    gprs -= ni;
                    xmms -= ns;
                    for c in cs {
                        sig.params.push(AbiParam::new(eightbyte_type(*c)));
                    }
                } else {
                    p = Passing::Memory {
                        size: crate::abi::layout_of(t).size,
                    };
                }
            }
            Passing::Memory { .. } => {}
        }
        if let Passing::Memory { size } = p {
            let size = u32::try_from(size.div_ceil(8) * 8).map_err(|_| err("size"))?;
            sig.params.push(AbiParam::special(
                ct::I64,
                ArgumentPurpose::StructArgument(size),
            ));
        }
        passing.push(p);
    }
    match &ret {
        Passing::Scalar(s) => sig.returns.push(scalar_param(*s)),
        Passing::Registers(cs) => {
            for c in cs {
                sig.returns.push(AbiParam::new(eightbyte_type(*c)));
            }
        }
        Passing::Nothing | Passing::Memory { .. } => {}
    }
    let name = format!("__pyd_host_c_{}", entry.symbol);
    let id = m
        .declare_function(&name, Linkage::Local, &sig)
        .map_err(|e| err(e.to_string()))?;
    let cfg = m.isa().frontend_config();
    let mut ctx = m.make_context();
    ctx.func.signature = sig;
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
        let mut imports = HashMap::new();
        let block = b.create_block();
        b.append_block_params_for_function_params(block);
        b.switch_to_block(block);
        let params: Vec<Value> = b.block_params(block).to_vec();
        let mut at = 0;
        let sret_ptr = if sret {
            at = 1;
            Some(params[0])
        } else {
            None
        };
        let mut args = Vec::new();
        for (l, p) in entry.param_locals().zip(&passing) {
            let t = &entry.locals[l].ty;
            match p {
                Passing::Nothing => {}
                Passing::Scalar(s) => {
                    let v = params[at];
                    at += 1;
                    args.push(from_memory(m, &mut b, &mut imports, *s, v)?);
                }
                Passing::Registers(cs) => {
                    let size = (cs.len() * 8) as u32;
                    let slot = b.create_sized_stack_slot(StackSlotData::new(
                        StackSlotKind::ExplicitSlot,
                        size,
                        3,
                    ));
                    let ptr = b.ins().stack_addr(ct::I64, slot, 0);
                    for k in 0..cs.len() {
                        b.ins().store(flags(), params[at], ptr, (k * 8) as i32);
                        at += 1;
                    }
                    args.extend(load_leaves(m, &mut b, &mut imports, t, ptr, 0)?);
                }
                Passing::Memory { .. } => {
                    let ptr = params[at];
                    at += 1;
                    args.extend(load_leaves(m, &mut b, &mut imports, t, ptr, 0)?);
                }
            }
        }
        // Out-of-range accesses through the C pointer are skipped; the error word that
        // records them is local to the call.
        let word = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        let word = b.ins().stack_addr(ct::I64, word, 0);
        let zero = b.ins().iconst(ct::I64, 0);
        b.ins().store(flags(), zero, word, 0);
        args.insert(0, word);
        let f = m.declare_func_in_func(inner, b.func);
        let call = b.ins().call(f, &args);
        let results: Vec<Value> = b.inst_results(call).to_vec();
        match &ret {
            Passing::Nothing => {
                b.ins().return_(&[]);
            }
            Passing::Scalar(s) => {
                let v = to_memory(m, &mut b, &mut imports, *s, results[0])?;
                b.ins().return_(&[v]);
            }
            Passing::Registers(cs) => {
                let size = (cs.len() * 8) as u32;
                let slot = b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    size,
                    3,
                ));
                let ptr = b.ins().stack_addr(ct::I64, slot, 0);
                store_leaves(m, &mut b, &mut imports, &entry.ret, &results, ptr, 0)?;
                let mut out = Vec::new();
                for (k, c) in cs.iter().enumerate() {
                    out.push(
                        b.ins()
                            .load(eightbyte_type(*c), flags(), ptr, (k * 8) as i32),
                    );
                }
                b.ins().return_(&out);
            }
            Passing::Memory { .. } => {
                let ptr = sret_ptr.ok_or_else(|| err("sret"))?;
                store_leaves(m, &mut b, &mut imports, &entry.ret, &results, ptr, 0)?;
                b.ins().return_(&[]);
            }
        }
        b.seal_all_blocks();
        b.finalize(cfg);
    }
    m.define_function(id, &mut ctx)
        .map_err(|e| err(format!("{e:?}")))?;
    Ok(id)
}

/// The entry as `extern "C" fn(args: *const u8, ret: *mut u8)`: the arguments laid out as
/// a C++ struct of the parameters, the result in its own C++ layout.
fn buffer_wrapper(
    m: &mut JITModule,
    entry: &Function,
    inner: FuncId,
    fctx: &mut FunctionBuilderContext,
) -> R<FuncId> {
    let mut sig = m.make_signature();
    sig.call_conv = CallConv::SystemV;
    for _ in 0..3 {
        sig.params.push(AbiParam::new(ct::I64));
    }
    let name = format!("__pyd_host_buf_{}", entry.symbol);
    let id = m
        .declare_function(&name, Linkage::Local, &sig)
        .map_err(|e| err(e.to_string()))?;
    let params: Vec<Type> = entry
        .param_locals()
        .map(|l| entry.locals[l].ty.clone())
        .collect();
    let frame = crate::abi::layout_of(&Type::Tuple(params.clone()));
    let cfg = m.isa().frontend_config();
    let mut ctx = m.make_context();
    ctx.func.signature = sig;
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
        let mut imports = HashMap::new();
        let block = b.create_block();
        b.append_block_params_for_function_params(block);
        b.switch_to_block(block);
        let (argp, retp, word) = (
            b.block_params(block)[0],
            b.block_params(block)[1],
            b.block_params(block)[2],
        );
        let mut args = vec![word];
        for (t, f) in params.iter().zip(&frame.fields) {
            args.extend(load_leaves(m, &mut b, &mut imports, t, argp, f.offset)?);
        }
        let f = m.declare_func_in_func(inner, b.func);
        let call = b.ins().call(f, &args);
        let results: Vec<Value> = b.inst_results(call).to_vec();
        store_leaves(m, &mut b, &mut imports, &entry.ret, &results, retp, 0)?;
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(cfg);
    }
    m.define_function(id, &mut ctx)
        .map_err(|e| err(format!("{e:?}")))?;
    Ok(id)
}

struct FnCx<'a, 'b> {
    m: &'a mut JITModule,
    program: &'a Program,
    f: &'a Function,
    /// The address of the call's error word (the hidden first parameter).
    error_word: Option<Value>,
    ids: &'a [FuncId],
    b: FunctionBuilder<'b>,
    vars: Vec<Vec<Variable>>,
    /// (continue target, break target) of enclosing loops.
    loops: Vec<(Block, Block)>,
    imports: HashMap<String, FuncRef>,
}

impl FnCx<'_, '_> {
    fn define(&mut self) -> R<()> {
        let f = self.f;
        let entry = self.b.create_block();
        self.b.append_block_params_for_function_params(entry);
        self.b.switch_to_block(entry);
        for (_, l) in f.locals.iter() {
            let mut vs = Vec::new();
            for leaf in leaves(&l.ty).ok_or_else(|| err(format!("local {}", l.name)))? {
                let t = reg_type(leaf.scalar);
                let v = self.b.declare_var(t);
                let zero = self.zero(t);
                self.b.def_var(v, zero);
                vs.push(v);
            }
            self.vars.push(vs);
        }
        let params: Vec<Value> = self.b.block_params(entry).to_vec();
        self.error_word = params.first().copied();
        let mut at = 1;
        for l in f.param_locals() {
            for v in self.vars[l.index()].clone() {
                self.b.def_var(v, params[at]);
                at += 1;
            }
        }
        self.block(&f.body)?;
        if f.ret == Type::None {
            self.b.ins().return_(&[]);
        } else {
            self.b.ins().trap(TrapCode::unwrap_user(1));
        }
        self.b.seal_all_blocks();
        Ok(())
    }

    fn zero(&mut self, t: ct::Type) -> Value {
        match t {
            ct::F32 => self.b.ins().f32const(0.0),
            ct::F64 => self.b.ins().f64const(0.0),
            t => self.b.ins().iconst(t, 0),
        }
    }

    /// After a terminator: go on in a fresh block that nothing jumps to.
    fn dead_block(&mut self) {
        let b = self.b.create_block();
        self.b.switch_to_block(b);
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
                let vals = self.expr(*e)?;
                for (var, v) in self.vars[l.index()].clone().into_iter().zip(vals) {
                    self.b.def_var(var, v);
                }
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => {
                let (addr, ok, code, dtype) = self.element(*array, indices, s.span)?;
                let v = self.scalar(*value)?;
                let (inb, oob, merge) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(ok, inb, &[], oob, &[]);
                self.b.switch_to_block(inb);
                let raw = to_memory(self.m, &mut self.b, &mut self.imports, dtype, v)?;
                self.b.ins().store(flags(), raw, addr, 0);
                self.b.ins().jump(merge, &[]);
                self.b.switch_to_block(oob);
                self.record_error(code)?;
                self.b.ins().jump(merge, &[]);
                self.b.switch_to_block(merge);
            }
            StmtKind::StoreRef { .. } => {
                return Err(err("stores through references reached the host back end"));
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.scalar(*cond)?;
                let (tb, eb, mb) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c, tb, &[], eb, &[]);
                self.b.switch_to_block(tb);
                self.block(then)?;
                self.b.ins().jump(mb, &[]);
                self.b.switch_to_block(eb);
                self.block(otherwise)?;
                self.b.ins().jump(mb, &[]);
                self.b.switch_to_block(mb);
            }
            StmtKind::Loop {
                cond,
                body,
                continuing,
            } => {
                let (head, bodyb, cont, exit) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(head);
                let c = self.scalar(*cond)?;
                self.b.ins().brif(c, bodyb, &[], exit, &[]);
                self.b.switch_to_block(bodyb);
                self.loops.push((cont, exit));
                self.block(body)?;
                self.loops.pop();
                self.b.ins().jump(cont, &[]);
                self.b.switch_to_block(cont);
                self.block(continuing)?;
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
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
                self.b.ins().jump(target, &[]);
                self.dead_block();
            }
            StmtKind::Return(v) => {
                let vals = match v {
                    Some(e) => self.expr(*e)?,
                    None => Vec::new(),
                };
                self.b.ins().return_(&vals);
                self.dead_block();
            }
        }
        Ok(())
    }

    fn ty(&self, e: Handle<Expr>) -> &Type {
        self.f.ty(e)
    }

    fn scalar_of(&self, e: Handle<Expr>) -> R<Scalar> {
        self.ty(e)
            .as_scalar()
            .ok_or_else(|| err("expected a scalar"))
    }

    /// The one leaf of a scalar expression.
    fn scalar(&mut self, e: Handle<Expr>) -> R<Value> {
        self.expr(e)?
            .first()
            .copied()
            .ok_or_else(|| err("expected a value"))
    }

    fn call_helper(
        &mut self,
        name: &str,
        params: &[ct::Type],
        ret: ct::Type,
        args: &[Value],
    ) -> R<Value> {
        let f = import(self.m, &mut self.b, &mut self.imports, name, params, ret)?;
        let c = self.b.ins().call(f, args);
        Ok(self.b.inst_results(c)[0])
    }

    fn fconst(&mut self, s: Scalar, x: f64) -> Value {
        match s {
            Scalar::Float64 => self.b.ins().f64const(x),
            Scalar::Float16 => self.b.ins().f32const(super::leaf::round_f16(x)),
            Scalar::BFloat16 => self.b.ins().f32const(super::leaf::round_bf16(x)),
            _ => self.b.ins().f32const(x as f32),
        }
    }

    fn iconst(&mut self, s: Scalar, i: i128) -> Value {
        let bits = s.bits();
        let v = if bits >= 64 {
            i as i64
        } else {
            (i as i64) & ((1i64 << bits) - 1)
        };
        self.b.ins().iconst(reg_type(s), v)
    }

    /// Rounds an `f32`/`f64` value to a half-precision scalar (held as `f32`).
    fn round_half(&mut self, s: Scalar, v: Value) -> R<Value> {
        let wide = if self.b.func.dfg.value_type(v) == ct::F32 {
            self.b.ins().fpromote(ct::F64, v)
        } else {
            v
        };
        let name = if s == Scalar::Float16 {
            "__pyd_round_f16"
        } else {
            "__pyd_round_bf16"
        };
        self.call_helper(name, &[ct::F64], ct::F32, &[wide])
    }

    fn expr(&mut self, h: Handle<Expr>) -> R<Vec<Value>> {
        let ty = self.ty(h).clone();
        let v = match &self.f.exprs[h] {
            Expr::Literal(lit) => {
                let s = ty.as_scalar().ok_or_else(|| err("non-scalar literal"))?;
                match (*lit, s.is_float()) {
                    (Literal::Bool(b), _) => self.b.ins().iconst(ct::I8, i64::from(b)),
                    (Literal::Int(i), false) => self.iconst(s, i),
                    (Literal::Int(i), true) => self.fconst(s, i as f64),
                    (Literal::Float(x), true) => self.fconst(s, x),
                    (Literal::Float(x), false) => self.iconst(s, i128::from(x as i64)),
                    (Literal::Complex(..), _) => {
                        return Err(err("a complex literal reached the host back end"));
                    }
                }
            }
            Expr::Local(l) => {
                let vars = self.vars[l.index()].clone();
                return Ok(vars.into_iter().map(|v| self.b.use_var(v)).collect());
            }
            Expr::Unary(op, a) => {
                let s = self.scalar_of(*a)?;
                let x = self.scalar(*a)?;
                self.unary(*op, s, x)?
            }
            Expr::Binary(op, a, b) => {
                let s = self.scalar_of(*a)?;
                let x = self.scalar(*a)?;
                let y = self.scalar(*b)?;
                self.binary(*op, s, x, y)?
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let is_and = matches!(self.f.exprs[h], Expr::And(..));
                let s = ty
                    .as_scalar()
                    .ok_or_else(|| err("and/or on a non-scalar"))?;
                let x = self.scalar(*a)?;
                let truth = self.truthy(x, s);
                let rhs = self.b.create_block();
                let merge = self.b.create_block();
                self.b.append_block_param(merge, reg_type(s));
                let xs = [BlockArg::from(x)];
                if is_and {
                    self.b.ins().brif(truth, rhs, &[], merge, &xs);
                } else {
                    self.b.ins().brif(truth, merge, &xs, rhs, &[]);
                }
                self.b.switch_to_block(rhs);
                let y = self.scalar(*b)?;
                self.b.ins().jump(merge, &[BlockArg::from(y)]);
                self.b.switch_to_block(merge);
                self.b.block_params(merge)[0]
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = self.scalar(*cond)?;
                let (tb, eb, mb) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                for l in leaves(&ty).ok_or_else(|| err("select type"))? {
                    self.b.append_block_param(mb, reg_type(l.scalar));
                }
                self.b.ins().brif(c, tb, &[], eb, &[]);
                self.b.switch_to_block(tb);
                let x: Vec<BlockArg> = self.expr(*then)?.into_iter().map(BlockArg::from).collect();
                self.b.ins().jump(mb, &x);
                self.b.switch_to_block(eb);
                let y: Vec<BlockArg> = self
                    .expr(*otherwise)?
                    .into_iter()
                    .map(BlockArg::from)
                    .collect();
                self.b.ins().jump(mb, &y);
                self.b.switch_to_block(mb);
                return Ok(self.b.block_params(mb).to_vec());
            }
            Expr::Cast(a) => {
                let from = self.scalar_of(*a)?;
                let to = ty.as_scalar().ok_or_else(|| err("cast to a non-scalar"))?;
                let x = self.scalar(*a)?;
                self.cast(x, from, to)?
            }
            Expr::Call(callee, args) => {
                let mut vals = vec![self.error_word.ok_or_else(|| err("error word"))?];
                for a in args {
                    vals.extend(self.expr(*a)?);
                }
                let id = self.ids[callee.index()];
                let fr = self.m.declare_func_in_func(id, self.b.func);
                let c = self.b.ins().call(fr, &vals);
                return Ok(self.b.inst_results(c).to_vec());
            }
            Expr::Intrinsic(op, args) => {
                let mut vals = Vec::new();
                let mut scalars = Vec::new();
                for a in args {
                    scalars.push(self.scalar_of(*a)?);
                    vals.push(self.scalar(*a)?);
                }
                self.intrinsic(*op, &scalars, &vals, &ty)?
            }
            Expr::Tuple(items) => {
                let mut out = Vec::new();
                for i in items {
                    out.extend(self.expr(*i)?);
                }
                return Ok(out);
            }
            Expr::Load { array, indices } => {
                let span = self.f.exprs.span(h);
                let (addr, ok, code, dtype) = self.element(*array, indices, span)?;
                let (inb, oob, merge) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.append_block_param(merge, reg_type(dtype));
                self.b.ins().brif(ok, inb, &[], oob, &[]);
                self.b.switch_to_block(inb);
                let raw = self.b.ins().load(mem_type(dtype), flags(), addr, 0);
                let v = from_memory(self.m, &mut self.b, &mut self.imports, dtype, raw)?;
                self.b.ins().jump(merge, &[BlockArg::from(v)]);
                self.b.switch_to_block(oob);
                // An out-of-range load reads zero, after recording the error.
                self.record_error(code)?;
                let z = self.zero(reg_type(dtype));
                self.b.ins().jump(merge, &[BlockArg::from(z)]);
                self.b.switch_to_block(merge);
                self.b.block_params(merge)[0]
            }
            Expr::ArrayProp(a, p) => {
                let at = self
                    .ty(*a)
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("property of a non-array"))?;
                let d = self.expr(*a)?;
                let n = usize::from(at.ndim);
                match p {
                    ArrayProp::Shape(k) => d[1 + usize::from(*k)],
                    ArrayProp::Stride(k) => {
                        let es = at.dtype.scalar().map_or(1, Scalar::size);
                        self.b
                            .ins()
                            .imul_imm_s(d[1 + n + usize::from(*k)], es as i64)
                    }
                    ArrayProp::Size => {
                        let mut acc = self.b.ins().iconst(ct::I64, 1);
                        for k in 0..n {
                            acc = self.b.ins().imul(acc, d[1 + k]);
                        }
                        acc
                    }
                }
            }
            Expr::StaticArray { shape, align } => {
                // A local array: a stack slot of the function (one per call site, as on the
                // device), zeroed at each evaluation so no stale data is ever read.
                let at = ty
                    .as_array()
                    .cloned()
                    .ok_or_else(|| err("local array type"))?;
                let dtype = at
                    .dtype
                    .scalar()
                    .ok_or_else(|| err("local array of structs"))?;
                let count = shape
                    .iter()
                    .try_fold(1u64, |acc, d| acc.checked_mul(*d))
                    .ok_or_else(|| err("local array too large"))?;
                let bytes = u32::try_from(count.saturating_mul(dtype.size()))
                    .map_err(|_| err("local array too large for the host stack"))?;
                let align = (*align).max(dtype.size()).max(1);
                let shift = align.trailing_zeros().min(12) as u8;
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    bytes.max(1),
                    shift,
                ));
                let ptr = self.b.ins().stack_addr(ct::I64, slot, 0);
                let zero = self.b.ins().iconst(ct::I8, 0);
                let size = self.b.ins().iconst(ct::I64, i64::from(bytes));
                let cfg = self.m.isa().frontend_config();
                self.b.call_memset(cfg, ptr, zero, size);
                let n = shape.len();
                let mut strides = vec![1u64; n];
                match at.layout {
                    crate::types::Layout::F => {
                        for k in 1..n {
                            strides[k] = strides[k - 1] * shape[k - 1];
                        }
                    }
                    _ => {
                        for k in (0..n.saturating_sub(1)).rev() {
                            strides[k] = strides[k + 1] * shape[k + 1];
                        }
                    }
                }
                let mut out = vec![ptr];
                for d in shape.iter().chain(&strides) {
                    out.push(self.b.ins().iconst(ct::I64, *d as i64));
                }
                return Ok(out);
            }
            Expr::ElementRef { array, indices } => {
                // Out of range: the error is recorded and the atomic acts on a scratch word
                // of the function instead, as on the device in bounds-checking mode.
                let span = self.f.exprs.span(h);
                let (addr, ok, code, _) = self.element(*array, indices, span)?;
                let word = self.error_word.ok_or_else(|| err("error word"))?;
                let old = self.b.ins().load(ct::I64, flags(), word, 0);
                let code = self.b.ins().iconst(ct::I64, code);
                let first = self.b.ins().icmp_imm_s(IntCC::Equal, old, 0);
                let new = self.b.ins().select(first, code, old);
                let new = self.b.ins().select(ok, old, new);
                self.b.ins().store(flags(), new, word, 0);
                let scratch = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    16,
                    4,
                ));
                let scratch = self.b.ins().stack_addr(ct::I64, scratch, 0);
                self.b.ins().select(ok, addr, scratch)
            }
            Expr::Atomic {
                op, target, args, ..
            } => {
                let dtype = match self.ty(*target) {
                    Type::Ref { dtype, .. } => *dtype,
                    _ => return Err(err("atomic on a non-reference")),
                };
                let ptr = self.scalar(*target)?;
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.scalar(*a)?);
                }
                return self.atomic(*op, dtype, ptr, &vals);
            }
            Expr::Extract(a, i) => {
                let at = self.ty(*a).clone();
                let range = element_leaves(&at, *i).ok_or_else(|| err("extract"))?;
                let vals = self.expr(*a)?;
                return vals
                    .get(range)
                    .map(<[Value]>::to_vec)
                    .ok_or_else(|| err("extract out of range"));
            }
            other => {
                return Err(err(format!(
                    "{other:?} reached the host back end (the host check should have refused it)"
                )));
            }
        };
        Ok(vec![v])
    }

    /// The address of `array[indices]`, whether every index is in range (after Python's
    /// wrap of negative indices), the error code of the access (`line << 32 | column`), and
    /// the element type. The host always checks: an out-of-range access must not touch
    /// memory.
    fn element(
        &mut self,
        array: Handle<Expr>,
        indices: &[Index],
        span: crate::diag::Span,
    ) -> R<(Value, Value, i64, Scalar)> {
        let at = self
            .ty(array)
            .as_array()
            .cloned()
            .ok_or_else(|| err("indexing a non-array"))?;
        let dtype = at.dtype.scalar().ok_or_else(|| err("array of structs"))?;
        let n = usize::from(at.ndim);
        let d = self.expr(array)?;
        let mut offset = self.b.ins().iconst(ct::I64, 0);
        let mut ok = self.b.ins().iconst(ct::I8, 1);
        for (k, ix) in indices.iter().enumerate() {
            let s = self.scalar_of(ix.value)?;
            let v = self.scalar(ix.value)?;
            let mut i = match reg_type(s) {
                ct::I64 => v,
                _ if s.is_signed() => self.b.ins().sextend(ct::I64, v),
                _ => self.b.ins().uextend(ct::I64, v),
            };
            let shape = d[1 + k];
            if ix.wrap && s.is_signed() {
                let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, i, 0);
                let w = self.b.ins().iadd(i, shape);
                i = self.b.ins().select(neg, w, i);
            }
            let inb = self.b.ins().icmp(IntCC::UnsignedLessThan, i, shape);
            ok = self.b.ins().band(ok, inb);
            let term = self.b.ins().imul(i, d[1 + n + k]);
            offset = self.b.ins().iadd(offset, term);
        }
        let bytes = self.b.ins().imul_imm_s(offset, dtype.size() as i64);
        let addr = self.b.ins().iadd(d[0], bytes);
        let (line, col) = self.program.file.line_col(span.start);
        Ok((addr, ok, ((line as i64) << 32) | col as i64, dtype))
    }

    /// Register value → integer bits of its memory form.
    fn bits_of(&mut self, s: Scalar, v: Value) -> R<Value> {
        let raw = to_memory(self.m, &mut self.b, &mut self.imports, s, v)?;
        Ok(match s {
            Scalar::Float32 => self.b.ins().bitcast(ct::I32, flags(), raw),
            Scalar::Float64 => self.b.ins().bitcast(ct::I64, flags(), raw),
            _ => raw,
        })
    }

    /// Integer bits of a memory form → register value.
    fn value_of_bits(&mut self, s: Scalar, bits: Value) -> R<Value> {
        let raw = match s {
            Scalar::Float32 => self.b.ins().bitcast(ct::F32, flags(), bits),
            Scalar::Float64 => self.b.ins().bitcast(ct::F64, flags(), bits),
            _ => bits,
        };
        from_memory(self.m, &mut self.b, &mut self.imports, s, raw)
    }

    /// An atomic operation on the element at `ptr` (x86-64's locked instructions are
    /// sequentially consistent, at least as strong as any order asked for). Returns the old
    /// value, or nothing for `store` and `notify`.
    fn atomic(&mut self, op: AtomicOp, dtype: Scalar, ptr: Value, vals: &[Value]) -> R<Vec<Value>> {
        // The integer type of the element's bits.
        let it = match dtype {
            Scalar::Float32 => ct::I32,
            Scalar::Float64 => ct::I64,
            s => mem_type(s),
        };
        let arg = |cx: &mut Self, k: usize| -> R<Value> {
            let v = *vals.get(k).ok_or_else(|| err("atomic operand"))?;
            cx.bits_of(dtype, v)
        };
        let old = match op {
            AtomicOp::Notify => return Ok(Vec::new()),
            AtomicOp::Load => self.b.ins().atomic_load(it, flags(), ptr),
            AtomicOp::Store => {
                let v = arg(self, 0)?;
                self.b.ins().atomic_store(flags(), v, ptr);
                return Ok(Vec::new());
            }
            AtomicOp::Cas => {
                let expected = arg(self, 0)?;
                let new = arg(self, 1)?;
                self.b.ins().atomic_cas(flags(), ptr, expected, new)
            }
            AtomicOp::Add | AtomicOp::Sub if dtype.is_float() => {
                // old + v (or old - v), rounded as the device's `atom.add` rounds.
                let v = *vals.first().ok_or_else(|| err("atomic operand"))?;
                let bop = if op == AtomicOp::Add {
                    BinaryOp::Add
                } else {
                    BinaryOp::Sub
                };
                self.cas_loop(dtype, it, ptr, &|cx, old| {
                    cx.float_binary(bop, dtype, old, v)
                })?
            }
            AtomicOp::Max | AtomicOp::Min | AtomicOp::NanMax | AtomicOp::NanMin
                if dtype.is_float() =>
            {
                // Python's order: v replaces old when v > old (max) or v < old (min); for
                // nanmax/nanmin a NaN old is replaced too (NaN is a missing value).
                let v = *vals.first().ok_or_else(|| err("atomic operand"))?;
                let cc = if matches!(op, AtomicOp::Max | AtomicOp::NanMax) {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                };
                let nan_aware = matches!(op, AtomicOp::NanMax | AtomicOp::NanMin);
                self.cas_loop(dtype, it, ptr, &|cx, old| {
                    let better = cx.b.ins().fcmp(cc, v, old);
                    let better = if nan_aware {
                        let nan = cx.b.ins().fcmp(FloatCC::Unordered, old, old);
                        cx.b.ins().bor(better, nan)
                    } else {
                        better
                    };
                    Ok(cx.b.ins().select(better, v, old))
                })?
            }
            AtomicOp::Inc | AtomicOp::Dec => {
                // numba's inc: old >= v ? 0 : old + 1; dec: old == 0 || old > v ? v : old - 1.
                let v = *vals.first().ok_or_else(|| err("atomic operand"))?;
                self.cas_loop(dtype, it, ptr, &|cx, old| {
                    let b = &mut cx.b;
                    Ok(if op == AtomicOp::Inc {
                        let wrap = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, old, v);
                        let next = b.ins().iadd_imm_s(old, 1);
                        let zero = b.ins().iconst(it, 0);
                        b.ins().select(wrap, zero, next)
                    } else {
                        let is_zero = b.ins().icmp_imm_s(IntCC::Equal, old, 0);
                        let above = b.ins().icmp(IntCC::UnsignedGreaterThan, old, v);
                        let reset = b.ins().bor(is_zero, above);
                        let next = b.ins().iadd_imm_s(old, -1);
                        b.ins().select(reset, v, next)
                    })
                })?
            }
            _ => {
                let rmw = match op {
                    AtomicOp::Exch => AtomicRmwOp::Xchg,
                    AtomicOp::Add => AtomicRmwOp::Add,
                    AtomicOp::Sub => AtomicRmwOp::Sub,
                    AtomicOp::And => AtomicRmwOp::And,
                    AtomicOp::Or => AtomicRmwOp::Or,
                    AtomicOp::Xor => AtomicRmwOp::Xor,
                    AtomicOp::Max if dtype.is_signed() => AtomicRmwOp::Smax,
                    AtomicOp::Max => AtomicRmwOp::Umax,
                    AtomicOp::Min if dtype.is_signed() => AtomicRmwOp::Smin,
                    AtomicOp::Min => AtomicRmwOp::Umin,
                    other => {
                        return Err(err(format!("atomic {other:?} reached the host back end")));
                    }
                };
                let v = arg(self, 0)?;
                self.b.ins().atomic_rmw(it, flags(), rmw, ptr, v)
            }
        };
        Ok(vec![self.value_of_bits(dtype, old)?])
    }

    /// A read-modify-write as a compare-and-swap loop on the element's bits: `new_of`
    /// computes the new value from the old one (register forms). Returns the old bits.
    fn cas_loop(
        &mut self,
        dtype: Scalar,
        it: ct::Type,
        ptr: Value,
        new_of: &dyn Fn(&mut Self, Value) -> R<Value>,
    ) -> R<Value> {
        let first = self.b.ins().atomic_load(it, flags(), ptr);
        let (lp, done) = (self.b.create_block(), self.b.create_block());
        self.b.append_block_param(lp, it);
        self.b.append_block_param(done, it);
        self.b.ins().jump(lp, &[BlockArg::from(first)]);
        self.b.switch_to_block(lp);
        let cur = self.b.block_params(lp)[0];
        let old = self.value_of_bits(dtype, cur)?;
        let new = new_of(self, old)?;
        let new = self.bits_of(dtype, new)?;
        let seen = self.b.ins().atomic_cas(flags(), ptr, cur, new);
        let same = self.b.ins().icmp(IntCC::Equal, seen, cur);
        self.b.ins().brif(
            same,
            done,
            &[BlockArg::from(cur)],
            lp,
            &[BlockArg::from(seen)],
        );
        self.b.switch_to_block(done);
        Ok(self.b.block_params(done)[0])
    }

    /// Records an out-of-range access in the call's error word, unless one is recorded.
    fn record_error(&mut self, code: i64) -> R<()> {
        let word = self.error_word.ok_or_else(|| err("error word"))?;
        let old = self.b.ins().load(ct::I64, flags(), word, 0);
        let code = self.b.ins().iconst(ct::I64, code);
        let first = self.b.ins().icmp_imm_s(IntCC::Equal, old, 0);
        let v = self.b.ins().select(first, code, old);
        self.b.ins().store(flags(), v, word, 0);
        Ok(())
    }

    fn truthy(&mut self, v: Value, s: Scalar) -> Value {
        match s {
            Scalar::Bool => v,
            s if s.is_float() => {
                let z = self.zero(reg_type(s));
                self.b.ins().fcmp(FloatCC::NotEqual, v, z)
            }
            _ => self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0),
        }
    }

    fn cast(&mut self, v: Value, from: Scalar, to: Scalar) -> R<Value> {
        if from == to {
            return Ok(v);
        }
        let tt = reg_type(to);
        Ok(match (from.is_float(), to.is_float()) {
            _ if to == Scalar::Bool => self.truthy(v, from),
            (false, false) => {
                let (fb, tb) = (from.bits(), to.bits());
                if tb < fb {
                    self.b.ins().ireduce(tt, v)
                } else if tb == fb {
                    v
                } else if from.is_signed() {
                    self.b.ins().sextend(tt, v)
                } else {
                    self.b.ins().uextend(tt, v)
                }
            }
            (false, true) => {
                let target = if is_half(to) { ct::F64 } else { tt };
                let f = if from.is_signed() {
                    self.b.ins().fcvt_from_sint(target, v)
                } else {
                    self.b.ins().fcvt_from_uint(target, v)
                };
                if is_half(to) {
                    self.round_half(to, f)?
                } else {
                    f
                }
            }
            (true, false) => {
                // Saturating, NaN to 0, as the device's `cvt.rzi.sat`.
                if to.bits() >= 32 {
                    if to.is_signed() {
                        self.b.ins().fcvt_to_sint_sat(tt, v)
                    } else {
                        self.b.ins().fcvt_to_uint_sat(tt, v)
                    }
                } else {
                    let (lo, hi) = if to.is_signed() {
                        (-(1i64 << (to.bits() - 1)), (1i64 << (to.bits() - 1)) - 1)
                    } else {
                        (0, (1i64 << to.bits()) - 1)
                    };
                    let w = self.b.ins().fcvt_to_sint_sat(ct::I32, v);
                    let lo = self.b.ins().iconst(ct::I32, lo);
                    let hi = self.b.ins().iconst(ct::I32, hi);
                    let w = self.b.ins().smax(w, lo);
                    let w = self.b.ins().smin(w, hi);
                    self.b.ins().ireduce(tt, w)
                }
            }
            (true, true) => {
                let ft = reg_type(from);
                if is_half(to) {
                    self.round_half(to, v)?
                } else if ft == tt {
                    v // half → float32: already held as float32
                } else if tt == ct::F64 {
                    self.b.ins().fpromote(ct::F64, v)
                } else {
                    self.b.ins().fdemote(ct::F32, v)
                }
            }
        })
    }

    fn unary(&mut self, op: UnaryOp, s: Scalar, v: Value) -> R<Value> {
        Ok(if s.is_float() {
            match op {
                UnaryOp::Neg => self.b.ins().fneg(v),
                UnaryOp::Abs => self.b.ins().fabs(v),
                UnaryOp::Not | UnaryOp::Invert => return Err(err("bitwise op on a float")),
            }
        } else if s == Scalar::Bool {
            match op {
                UnaryOp::Not | UnaryOp::Invert => self.b.ins().bxor_imm_u(v, 1),
                UnaryOp::Neg => self.b.ins().ineg(v),
                UnaryOp::Abs => v,
            }
        } else {
            match op {
                UnaryOp::Neg => self.b.ins().ineg(v),
                UnaryOp::Not | UnaryOp::Invert => self.b.ins().bnot(v),
                UnaryOp::Abs if s.is_signed() => self.b.ins().iabs(v),
                UnaryOp::Abs => v,
            }
        })
    }

    fn binary(&mut self, op: BinaryOp, s: Scalar, x: Value, y: Value) -> R<Value> {
        if s.is_float() {
            self.float_binary(op, s, x, y)
        } else {
            self.int_binary(op, s, x, y)
        }
    }

    fn float_binary(&mut self, op: BinaryOp, s: Scalar, x: Value, y: Value) -> R<Value> {
        use BinaryOp::*;
        if is_half(s) && !op.is_comparison() && !matches!(op, Min | Max) {
            // Computed in float32 and rounded once, as the device does.
            let r = self.float_binary(op, Scalar::Float32, x, y)?;
            return self.round_half(s, r);
        }
        let cmp = |cx: &mut Self, cc| cx.b.ins().fcmp(cc, x, y);
        Ok(match op {
            Add | AddNoWrap => self.b.ins().fadd(x, y),
            Sub => self.b.ins().fsub(x, y),
            Mul => self.b.ins().fmul(x, y),
            Div => self.b.ins().fdiv(x, y),
            Eq => cmp(self, FloatCC::Equal),
            Ne => cmp(self, FloatCC::NotEqual),
            Lt => cmp(self, FloatCC::LessThan),
            Le => cmp(self, FloatCC::LessThanOrEqual),
            Gt => cmp(self, FloatCC::GreaterThan),
            Ge => cmp(self, FloatCC::GreaterThanOrEqual),
            Min | Max => {
                // Python: min(a, b) is b if b < a else a.
                let cc = if op == Min {
                    FloatCC::LessThan
                } else {
                    FloatCC::GreaterThan
                };
                let c = self.b.ins().fcmp(cc, y, x);
                self.b.ins().select(c, y, x)
            }
            Pow => {
                let t = reg_type(s);
                let name = if t == ct::F32 { "powf" } else { "pow" };
                self.call_helper(name, &[t, t], t, &[x, y])?
            }
            FloorDiv | Mod => self.float_divmod(op, s, x, y)?,
            BitAnd | BitOr | BitXor | Shl | Shr => return Err(err("bitwise op on floats")),
        })
    }

    /// CPython's `float_divmod`, step for step as the device computes it.
    fn float_divmod(&mut self, op: BinaryOp, s: Scalar, x: Value, y: Value) -> R<Value> {
        let t = reg_type(s);
        let name = if t == ct::F32 { "fmodf" } else { "fmod" };
        let m = self.call_helper(name, &[t, t], t, &[x, y])?;
        let zero = self.zero(t);
        let b = &mut self.b;
        let m_nonzero = b.ins().fcmp(FloatCC::NotEqual, m, zero);
        let y_neg = b.ins().fcmp(FloatCC::LessThan, y, zero);
        let m_neg = b.ins().fcmp(FloatCC::LessThan, m, zero);
        let differ = b.ins().bxor(y_neg, m_neg);
        let adjust = b.ins().band(m_nonzero, differ);
        if op == BinaryOp::Mod {
            let m_adj = b.ins().fadd(m, y);
            let r = b.ins().select(adjust, m_adj, m);
            let signed_zero = b.ins().fcopysign(zero, y);
            return Ok(b.ins().select(m_nonzero, r, signed_zero));
        }
        let one = if t == ct::F32 {
            b.ins().f32const(1.0)
        } else {
            b.ins().f64const(1.0)
        };
        let half = if t == ct::F32 {
            b.ins().f32const(0.5)
        } else {
            b.ins().f64const(0.5)
        };
        let diff = b.ins().fsub(x, m);
        let div = b.ins().fdiv(diff, y);
        let div_m1 = b.ins().fsub(div, one);
        let div = b.ins().select(adjust, div_m1, div);
        let fl = b.ins().floor(div);
        let frac = b.ins().fsub(div, fl);
        let up = b.ins().fcmp(FloatCC::GreaterThan, frac, half);
        let fl1 = b.ins().fadd(fl, one);
        let q = b.ins().select(up, fl1, fl);
        let q_zero = b.ins().fcmp(FloatCC::Equal, div, zero);
        let xy = b.ins().fdiv(x, y);
        let z = b.ins().fcopysign(zero, xy);
        Ok(b.ins().select(q_zero, z, q))
    }

    fn int_binary(&mut self, op: BinaryOp, s: Scalar, x: Value, y: Value) -> R<Value> {
        use BinaryOp::*;
        let signed = s.is_signed();
        let t = reg_type(s);
        let bits = i64::from(t.bits());
        let (lt, le, gt, ge) = if signed {
            (
                IntCC::SignedLessThan,
                IntCC::SignedLessThanOrEqual,
                IntCC::SignedGreaterThan,
                IntCC::SignedGreaterThanOrEqual,
            )
        } else {
            (
                IntCC::UnsignedLessThan,
                IntCC::UnsignedLessThanOrEqual,
                IntCC::UnsignedGreaterThan,
                IntCC::UnsignedGreaterThanOrEqual,
            )
        };
        let b = &mut self.b;
        Ok(match op {
            Add | AddNoWrap => b.ins().iadd(x, y),
            Sub => b.ins().isub(x, y),
            Mul => b.ins().imul(x, y),
            BitAnd => b.ins().band(x, y),
            BitOr => b.ins().bor(x, y),
            BitXor => b.ins().bxor(x, y),
            Eq => b.ins().icmp(IntCC::Equal, x, y),
            Ne => b.ins().icmp(IntCC::NotEqual, x, y),
            Lt => b.ins().icmp(lt, x, y),
            Le => b.ins().icmp(le, x, y),
            Gt => b.ins().icmp(gt, x, y),
            Ge => b.ins().icmp(ge, x, y),
            Min => {
                let c = b.ins().icmp(lt, y, x);
                b.ins().select(c, y, x)
            }
            Max => {
                let c = b.ins().icmp(gt, y, x);
                b.ins().select(c, y, x)
            }
            Shl | Shr => {
                // Shifting by the width or more (or by a negative count) gives 0, or the
                // sign for `>>` of a signed value, as on the device (Cranelift masks it).
                let big = b
                    .ins()
                    .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, y, bits);
                let (shifted, saturated) = if op == Shl {
                    (b.ins().ishl(x, y), b.ins().iconst(t, 0))
                } else if signed {
                    (b.ins().sshr(x, y), b.ins().sshr_imm_u(x, bits - 1))
                } else {
                    (b.ins().ushr(x, y), b.ins().iconst(t, 0))
                };
                b.ins().select(big, saturated, shifted)
            }
            FloorDiv | Mod => {
                // Python semantics; division by zero gives 0; MIN // -1 wraps.
                let zero = b.ins().iconst(t, 0);
                let one = b.ins().iconst(t, 1);
                let y_zero = b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                let bad = if signed {
                    let m1 = b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                    b.ins().bor(y_zero, m1)
                } else {
                    y_zero
                };
                let y1 = b.ins().select(bad, one, y);
                let result = if signed {
                    let q = b.ins().sdiv(x, y1);
                    let r = b.ins().srem(x, y1);
                    let r_nz = b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
                    let rx = b.ins().bxor(r, y1);
                    let differ = b.ins().icmp_imm_s(IntCC::SignedLessThan, rx, 0);
                    let adjust = b.ins().band(r_nz, differ);
                    if op == FloorDiv {
                        let q1 = b.ins().isub(q, one);
                        let q = b.ins().select(adjust, q1, q);
                        let m1 = b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                        let negx = b.ins().ineg(x);
                        b.ins().select(m1, negx, q)
                    } else {
                        let r1 = b.ins().iadd(r, y1);
                        b.ins().select(adjust, r1, r)
                    }
                } else if op == FloorDiv {
                    b.ins().udiv(x, y1)
                } else {
                    b.ins().urem(x, y1)
                };
                b.ins().select(y_zero, zero, result)
            }
            Pow => {
                let (xw, yw) = if t == ct::I64 {
                    (x, y)
                } else if signed {
                    (b.ins().sextend(ct::I64, x), b.ins().sextend(ct::I64, y))
                } else {
                    (b.ins().uextend(ct::I64, x), b.ins().uextend(ct::I64, y))
                };
                let sg = b.ins().iconst(ct::I8, i64::from(signed));
                let r = self.call_helper(
                    "__pyd_ipow",
                    &[ct::I64, ct::I64, ct::I8],
                    ct::I64,
                    &[xw, yw, sg],
                )?;
                if t == ct::I64 {
                    r
                } else {
                    self.b.ins().ireduce(t, r)
                }
            }
            Div => return Err(err("true division on integers reached the back end")),
        })
    }

    fn intrinsic(
        &mut self,
        op: Intrinsic,
        scalars: &[Scalar],
        vals: &[Value],
        ty: &Type,
    ) -> R<Value> {
        let x = *vals
            .first()
            .ok_or_else(|| err("intrinsic without operands"))?;
        let to_i32 = |cx: &mut Self, r: Value| {
            let t = cx.b.func.dfg.value_type(r);
            if t.bits() > 32 {
                cx.b.ins().ireduce(ct::I32, r)
            } else if t.bits() < 32 {
                cx.b.ins().uextend(ct::I32, r)
            } else {
                r
            }
        };
        Ok(match op {
            Intrinsic::Popc => {
                let r = self.b.ins().popcnt(x);
                to_i32(self, r)
            }
            Intrinsic::Clz => {
                let r = self.b.ins().clz(x);
                to_i32(self, r)
            }
            Intrinsic::Brev => self.b.ins().bitrev(x),
            Intrinsic::Ffs => {
                let r = self.b.ins().ctz(x);
                let r = to_i32(self, r);
                let r1 = self.b.ins().iadd_imm_s(r, 1);
                let z = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
                let zero = self.b.ins().iconst(ct::I32, 0);
                self.b.ins().select(z, zero, r1)
            }
            Intrinsic::Fma => {
                let s = ty.as_scalar().ok_or_else(|| err("fma type"))?;
                if is_half(s) {
                    let w: Vec<Value> = vals
                        .iter()
                        .map(|v| self.b.ins().fpromote(ct::F64, *v))
                        .collect();
                    let r = self.b.ins().fma(w[0], w[1], w[2]);
                    self.round_half(s, r)?
                } else {
                    self.b.ins().fma(vals[0], vals[1], vals[2])
                }
            }
            Intrinsic::Math(f) => {
                let s = *scalars.first().ok_or_else(|| err("math operand"))?;
                self.math(f, s, vals)?
            }
            other => return Err(err(format!("{other:?} reached the host back end"))),
        })
    }

    fn math(&mut self, f: MathFn, s: Scalar, vals: &[Value]) -> R<Value> {
        let x = vals[0];
        let t = reg_type(s);
        let inf = if t == ct::F32 {
            self.b.ins().f32const(f32::INFINITY)
        } else {
            self.b.ins().f64const(f64::INFINITY)
        };
        let r = match f {
            MathFn::Sqrt => self.b.ins().sqrt(x),
            MathFn::Floor => self.b.ins().floor(x),
            MathFn::Ceil => self.b.ins().ceil(x),
            MathFn::Trunc => self.b.ins().trunc(x),
            MathFn::Fabs => self.b.ins().fabs(x),
            MathFn::Copysign => self.b.ins().fcopysign(x, vals[1]),
            MathFn::Isnan => return Ok(self.b.ins().fcmp(FloatCC::Unordered, x, x)),
            MathFn::Isinf | MathFn::Isfinite => {
                let a = self.b.ins().fabs(x);
                let cc = if f == MathFn::Isinf {
                    FloatCC::Equal
                } else {
                    FloatCC::LessThan
                };
                return Ok(self.b.ins().fcmp(cc, a, inf));
            }
            _ => {
                let name = libm_name(f, t == ct::F64);
                let params = vec![t; f.arity()];
                self.call_helper(&name, &params, t, vals)?
            }
        };
        if is_half(s) && !matches!(f, MathFn::Fabs | MathFn::Copysign) {
            return self.round_half(s, r);
        }
        Ok(r)
    }
}

/// The C library function for a `math` function (`sinf` / `sin`; `gamma` is `tgamma`).
pub(crate) fn libm_name(f: MathFn, f64: bool) -> String {
    let base = match f {
        MathFn::Gamma => "tgamma",
        f => f.name(),
    };
    format!("{base}{}", if f64 { "" } else { "f" })
}
