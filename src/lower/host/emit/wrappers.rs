//! The two entries on top of a program's entry function: one with the platform C ABI
//! (System V x86-64, arguments classified as gcc classifies the equivalent C types), and one
//! that takes its arguments from a buffer and writes its result there (the typed call).

use super::*;

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
pub(super) fn c_abi_wrapper(
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
        // records them is local to the call. The word after it is the stack limit, 0 here:
        // a C caller's stack is its own (see `FnCx::check_stack`); the third word is the
        // interrupt flag its loops poll, one that is never set (`interrupt::NEVER`).
        let word =
            b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 24, 3));
        let word = b.ins().stack_addr(ct::I64, word, 0);
        let zero = b.ins().iconst(ct::I64, 0);
        b.ins().store(flags(), zero, word, 0);
        b.ins().store(flags(), zero, word, 8);
        let never = b.ins().iconst(
            ct::I64,
            crate::lower::host::interrupt::NEVER.as_ptr() as i64,
        );
        b.ins().store(flags(), never, word, 16);
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
pub(super) fn buffer_wrapper(
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
