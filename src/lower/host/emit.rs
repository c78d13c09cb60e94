//! Typed IR → Cranelift IR for the host. Each IR function becomes one internal Cranelift
//! function whose parameters and results are the leaves of its values (see [`super::leaf`]);
//! locals are Cranelift variables, one per leaf, so SSA construction is left to
//! `cranelift-frontend`. Two wrappers sit on top of the entry: one with the platform C ABI
//! (the raw function pointer), one taking its arguments from a buffer (the typed call).
//!
//! Every operator mirrors what `lower::ptx::emit` does on the device (Python `//` and `%`,
//! shifts by the width or more, saturating float → int conversions, …), so that a `@func`
//! computes the same results on both sides; docs/semantics.md §16 lists where they differ.
//!
//! This file holds the driver, function signatures and statements; the submodules hold the
//! rest: `wrappers` (the C-ABI and buffer entries), `expr`, `arith` (operators and casts),
//! `intrinsics` (and math functions) and `atomics`.

mod arith;
mod atomics;
mod complex;
mod expr;
mod hopper;
mod intrinsics;
mod kernel;
mod print;
mod raise;
mod tensor;
mod wrappers;

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
pub(crate) use raise::{INTERRUPTED, STACK_EXHAUSTED};
use std::collections::HashMap;
use wrappers::{buffer_wrapper, c_abi_wrapper};

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
        // A complex number's parts (each complex value is two leaves).
        Scalar::Complex64 => ct::F32,
        Scalar::Complex128 => ct::F64,
        // The `float32` of the value, which holds every fp8 value exactly.
        Scalar::Float8E4M3 | Scalar::Float8E5M2 => ct::F32,
    }
}

/// The Cranelift type of a scalar in memory (`float16`/`bfloat16` as their bits).
fn mem_type(s: Scalar) -> ct::Type {
    match s {
        Scalar::Float16 | Scalar::BFloat16 => ct::I16,
        Scalar::Float8E4M3 | Scalar::Float8E5M2 => ct::I8,
        s => reg_type(s),
    }
}

/// Whether `s` is a narrow float held as `float32` and rounded on conversion (float16,
/// bfloat16 and the 8-bit formats).
fn is_half(s: Scalar) -> bool {
    matches!(
        s,
        Scalar::Float16 | Scalar::BFloat16 | Scalar::Float8E4M3 | Scalar::Float8E5M2
    )
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
/// returns (C ABI wrapper, buffer wrapper). For a kernel run whole on the CPU (`kernel`, the
/// layout of its static shared memory) there is no C ABI wrapper, and the hidden first
/// parameter of every function is the thread's context (`super::kernel::ThreadContext`).
pub(crate) fn lower(
    m: &mut JITModule,
    program: &Program,
    kernel: Option<&super::kernel::SharedLayout>,
) -> R<(Option<FuncId>, FuncId)> {
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
    let can_raise = raise::can_raise(program);
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
                can_raise,
                kernel,
                fn_index: h.index(),
                interrupt: None,
            };
            cx.define()?;
            cx.b.finalize(cfg);
        }
        m.define_function(ids[h.index()], &mut ctx)
            .map_err(|e| err(format!("{e:?}")))?;
        m.clear_context(&mut ctx);
    }
    let entry = &program.functions[program.entry];
    let c_abi = if kernel.is_some() {
        None
    } else {
        Some(c_abi_wrapper(
            m,
            entry,
            ids[program.entry.index()],
            &mut fctx,
        )?)
    };
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
    // cranelift-jit panics on a symbol it cannot resolve when the module is finalized:
    // refuse unknown helpers here, as an error value.
    if !super::runtime::symbols().iter().any(|(n, _)| *n == name)
        && !super::kernel::runtime_symbols().contains(&name)
    {
        return Err(err(format!(
            "no host implementation of `{name}` (a compiler bug; please report it)"
        )));
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
        Scalar::Float8E4M3 | Scalar::Float8E5M2 => {
            let name = if s == Scalar::Float8E4M3 {
                "__pyd_e4m3_value"
            } else {
                "__pyd_e5m2_value"
            };
            let f = import(m, b, imports, name, &[ct::I8], ct::F32)?;
            let c = b.ins().call(f, &[raw]);
            b.inst_results(c)[0]
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
        Scalar::Float8E4M3 | Scalar::Float8E5M2 => {
            let name = if s == Scalar::Float8E4M3 {
                "__pyd_e4m3_bits"
            } else {
                "__pyd_e5m2_bits"
            };
            let f = import(m, b, imports, name, &[ct::F32], ct::I8)?;
            let c = b.ins().call(f, &[v]);
            b.inst_results(c)[0]
        }
        _ => v,
    })
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
    /// The program has an `assert` or a `raise`: test the error word after each call.
    can_raise: bool,
    /// A kernel run whole on the CPU: the layout of its static shared memory (the error
    /// word is then the first field of the thread's context).
    kernel: Option<&'a super::kernel::SharedLayout>,
    /// The function's index in the program (to find its shared arrays in `kernel`).
    fn_index: usize,
    /// The address of the call's interrupt flag (the context's third word, loaded on
    /// entry), polled at every loop back-edge of a host call (`FnCx::poll_interrupt`);
    /// `None` in a kernel run whole on the CPU and in functions without loops.
    interrupt: Option<Value>,
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
        self.check_stack()?;
        if raise::has_loop(&f.body) {
            // A host call's context has the flag's address in its third word; a kernel's
            // thread context has it in its own field.
            let at = if self.kernel.is_some() {
                super::kernel::offset::INTERRUPT as i32
            } else {
                16
            };
            let word = self.error_word.ok_or_else(|| err("error word"))?;
            self.interrupt = Some(self.b.ins().load(ct::I64, flags(), word, at));
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
            } if self
                .ty(*array)
                .as_array()
                .is_some_and(|a| a.dtype.atomic_scalar().is_none()) =>
            {
                // A whole record (or vector) element, leaf by leaf; skipped when out of range.
                let (addr, ok, code, _) = self.element(*array, indices, s.span)?;
                let ty = self.ty(*value).clone();
                let vals = self.expr(*value)?;
                let (inb, oob, merge) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(ok, inb, &[], oob, &[]);
                self.b.switch_to_block(inb);
                self.store_leaves(addr, &ty, &vals)?;
                self.b.ins().jump(merge, &[]);
                self.b.switch_to_block(oob);
                self.record_error(code)?;
                self.b.ins().jump(merge, &[]);
                self.b.switch_to_block(merge);
            }
            StmtKind::Store {
                array,
                indices,
                value,
            } => {
                let (addr, ok, code, dtype) = self.element(*array, indices, s.span)?;
                let space = self.ty(*array).as_array().map(|a| a.space);
                // A complex element is its two parts, one after the other.
                let vals = self.expr(*value)?;
                let part = dtype.component();
                let (inb, oob, merge) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(ok, inb, &[], oob, &[]);
                self.b.switch_to_block(inb);
                if let Some(space) = space {
                    self.race_check(space, addr, dtype.size(), true, code)?;
                }
                for (k, v) in vals.iter().enumerate() {
                    let raw = to_memory(self.m, &mut self.b, &mut self.imports, part, *v)?;
                    let off = (k as u64 * part.size()) as i32;
                    self.b.ins().store(flags(), raw, addr, off);
                }
                self.b.ins().jump(merge, &[]);
                self.b.switch_to_block(oob);
                self.record_error(code)?;
                self.b.ins().jump(merge, &[]);
                self.b.switch_to_block(merge);
            }
            StmtKind::StoreRef { target, value } => {
                // `array[i].x = v`: a plain store through the reference.
                let addr = self.scalar(*target)?;
                let ty = self.ty(*value).clone();
                let vals = self.expr(*value)?;
                self.store_leaves(addr, &ty, &vals)?;
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
                ..
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
                self.poll_interrupt()?;
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
            }
            StmtKind::Print(pieces) => self.print(pieces)?,
            StmtKind::Assert { cond, .. } => self.assert(*cond, s.span)?,
            StmtKind::Raise { .. } => self.raise(s.span)?,
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
            Scalar::Float8E4M3 => {
                use crate::types::fp8::E4M3;
                self.b.ins().f32const(E4M3.decode(E4M3.encode(x)) as f32)
            }
            Scalar::Float8E5M2 => {
                use crate::types::fp8::E5M2;
                self.b.ins().f32const(E5M2.decode(E5M2.encode(x)) as f32)
            }
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
        let name = match s {
            Scalar::Float16 => "__pyd_round_f16",
            Scalar::Float8E4M3 => "__pyd_round_e4m3",
            Scalar::Float8E5M2 => "__pyd_round_e5m2",
            _ => "__pyd_round_bf16",
        };
        self.call_helper(name, &[ct::F64], ct::F32, &[wide])
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
}

/// The C library function for a `math` function (`sinf` / `sin`; `gamma` is `tgamma`).
pub(crate) fn libm_name(f: MathFn, f64: bool) -> String {
    let base = match f {
        MathFn::Gamma => "tgamma",
        f => f.name(),
    };
    format!("{base}{}", if f64 { "" } else { "f" })
}
