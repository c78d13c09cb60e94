//! Type checking and specialization: one entry function, given concrete argument types,
//! becomes an [`ir::Program`] in which every local, expression and called function has one
//! concrete type.
//!
//! Locals get their type from their assignments. A Python number (a literal, or a local only
//! ever bound to them) stays *weak* until a typed value is assigned to the same local, so
//! `acc = 0` followed by `acc += x[i]` makes `acc` a `float32` when `x` holds `float32`. When
//! an assignment changes what is known, the body is checked again; this converges because
//! knowledge only grows. Two typed assignments of different types are an error that points
//! at both.
//!
//! The checker also tracks which integer values are known to be non-negative, so that array
//! indexing only pays for Python's negative-index wrap-around where it can happen.

use super::builtins::{Builtin, Namespace};
use super::consts::{Const, fold_binary};
use super::{FunctionDecl, Item, ParsedModule, binary_op};
use crate::diag::Code;
use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::ir::{
    self, Arena, ArrayProp, Axis, BinaryOp, Block, Expr, Function, FunctionKind, Handle, Index,
    Intrinsic, Literal, Local, LoopForm, Stmt, StmtKind, UnaryOp,
};
use crate::types::promote::{Defaults, Weak, promote, promote_weak, promote_weak_weak};
use crate::types::{DType, Kind, Scalar, Type};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;
use std::collections::{HashMap, HashSet};

/// How many times a body is re-checked while local types are still being learned. Each
/// extra pass needs a local's type to have grown, so real programs need two or three.
const MAX_PASSES: usize = 12;

fn sp(node: &impl Ranged) -> Span {
    node.range().into()
}

/// Specializes `entry` for `args` and returns the typed program.
pub fn specialize(
    module: &ParsedModule,
    entry: &str,
    args: &[Type],
    constants: &[(String, Const)],
    defaults: Defaults,
    sm: u32,
) -> Result<ir::Program, Diagnostics> {
    let mut s = Specializer {
        m: module,
        defaults,
        sm,
        target_used: false,
        grid_sync: false,
        split_barrier: false,
        arch_specific: false,
        cuda_shims: Vec::new(),
        shim_symbols: HashMap::new(),
        functions: Arena::default(),
        instances: HashMap::new(),
        reported: HashSet::new(),
        stack: Vec::new(),
        stack_keys: Vec::new(),
        pending: HashMap::new(),
        diags: Vec::new(),
        reductions: HashMap::new(),
        cub_functions: HashMap::new(),
        wraparound: true,
    };
    let fail = |list| Diagnostics {
        file: module.file.clone(),
        list,
    };
    let Some((idx, decl)) = module.function(entry) else {
        let names: Vec<_> = module
            .functions
            .iter()
            .filter(|f| f.kind.is_some())
            .map(|f| format!("`{}`", f.name))
            .collect();
        let note = if names.is_empty() {
            "the module defines no @kernel or @func".to_string()
        } else {
            format!("device functions in this module: {}", names.join(", "))
        };
        return Err(fail(vec![
            Diagnostic::error(
                Code::E0110,
                Span::default(),
                format!("no function named `{entry}` in this module"),
            )
            .with_note(note),
        ]));
    };
    if decl.kind.is_none() {
        return Err(fail(vec![not_device_function(decl)]));
    }
    s.wraparound = !decl.options.no_wraparound;
    if let Some(ext) = &decl.options.external {
        return Err(fail(vec![
            Diagnostic::error(
                Code::E0527,
                decl.name_span,
                format!("`{entry}` is declared `extern`: there is no body to compile"),
            )
            .with_secondary(ext.span, "defined in another language")
            .with_note("compile a kernel or function that calls it, and link it with the code that defines it"),
        ]));
    }
    let statics = match entry_statics(module, idx, constants) {
        Ok(s) => s,
        Err(d) => return Err(fail(d)),
    };
    let nparams = statics.iter().filter(|s| s.is_none()).count();
    if nparams != args.len() {
        return Err(fail(vec![Diagnostic::error(
            Code::E0107,
            decl.name_span,
            format!(
                "`{entry}` takes {nparams} argument{}, but {} type{} given",
                if nparams == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { " was" } else { "s were" }
            ),
        )]));
    }
    let key = (idx, args.to_vec(), statics_key(&statics));
    let handle = s.instantiate(idx, args.to_vec(), statics, decl.name_span);
    s.commit(&key);
    if let Some((_, span)) = decl.options.cluster {
        s.require_sm90("`cluster=`", span);
    }
    match handle {
        Ok(entry) if s.diags.is_empty() => {
            let o = &decl.options;
            let program = ir::Program {
                functions: s.functions,
                entry,
                options: ir::ProgramOptions {
                    max_threads: o.max_threads,
                    min_blocks: o.min_blocks,
                    max_registers: o.max_registers,
                    fastmath: o.fastmath,
                    no_contract: o.no_contract,
                    lineinfo: o.lineinfo,
                    debug: o.debug,
                    bounds_check: o.bounds_check,
                    restrict: o.restrict,
                    skip_assertions: o.skip_assertions,
                    cluster: o.cluster.map(|(d, _)| d),
                },
                file: module.file.clone(),
                target_sm: s.target_used.then_some(sm),
                cooperative: s.grid_sync,
                split_barrier: s.split_barrier,
                arch_specific: s.arch_specific,
                cuda_shims: s.cuda_shims.iter().map(|(_, body)| body.clone()).collect(),
            };
            let found = crate::ir::analysis::check(&program);
            if found.is_empty() {
                Ok(program)
            } else {
                Err(fail(found))
            }
        }
        _ => {
            if s.diags.is_empty() {
                // Defensive: a failed instance always reports why.
                s.diags.push(Diagnostic::error(
                    Code::E0999,
                    decl.name_span,
                    "internal error: specialization failed without a diagnostic",
                ));
            }
            Err(fail(s.diags))
        }
    }
}

/// The compile-time arguments of an entry (docs/semantics.md §5.6): each parameter hinted
/// `ConstExpr` takes its value from `constants`, by name, converted to its hint; E0218 for a
/// `ConstExpr` parameter without a value, a value for another name, or a value its hint
/// does not take.
fn entry_statics(
    module: &ParsedModule,
    idx: usize,
    constants: &[(String, Const)],
) -> Result<Statics, Vec<Diagnostic>> {
    let decl = &module.functions[idx];
    let def = module.def(decl);
    let params: Vec<&ast::ParameterWithDefault> = def
        .parameters
        .posonlyargs
        .iter()
        .chain(def.parameters.args.iter())
        .collect();
    let mut diags = Vec::new();
    let mut statics = Vec::new();
    for p in &params {
        let name = p.parameter.name.id.as_str();
        let Some(hint) = p
            .parameter
            .annotation
            .as_deref()
            .and_then(|a| module.const_hint(a))
        else {
            statics.push(None);
            continue;
        };
        let span = sp(&p.parameter);
        // A hint whose type is not a number type is wrong whatever the value.
        if let Err(why) = module.const_for_hint(hint, &Const::Int(0))
            && why.starts_with("`ConstExpr[")
        {
            diags.push(Diagnostic::error(Code::E0218, span, why));
            statics.push(None);
            continue;
        }
        let Some((_, c)) = constants.iter().find(|(n, _)| n == name) else {
            diags.push(
                Diagnostic::error(
                    Code::E0218,
                    span,
                    format!("parameter `{name}` of `{}` is `ConstExpr`, but no value was given for it", decl.name),
                )
                .with_label("needs a compile-time value")
                .with_note(format!(
                    "the value is part of the specialization: `--const {name}=VALUE` on the command line, `CompileOptions::constants` in Rust, the argument itself in Python"
                )),
            );
            statics.push(None);
            continue;
        };
        match module.const_for_hint(hint, c) {
            Ok(c) => statics.push(Some(Item::Const(c))),
            Err(want) => {
                diags.push(
                    Diagnostic::error(
                        Code::E0218,
                        span,
                        format!("the value given for `ConstExpr` parameter `{name}` is not {want}"),
                    )
                    .with_label(format!("given {}", const_text(c))),
                );
                statics.push(None);
            }
        }
    }
    for (name, _) in constants {
        let hinted = params.iter().any(|p| {
            p.parameter.name.id.as_str() == name
                && p.parameter
                    .annotation
                    .as_deref()
                    .and_then(|a| module.const_hint(a))
                    .is_some()
        });
        if !hinted {
            diags.push(
                Diagnostic::error(
                    Code::E0218,
                    decl.name_span,
                    format!("a compile-time value was given for `{name}`, but `{}` has no `ConstExpr` parameter of that name", decl.name),
                )
                .with_note("only parameters hinted `ConstExpr` or `ConstExpr[T]` take compile-time values"),
            );
        }
    }
    if diags.is_empty() {
        Ok(statics)
    } else {
        Err(diags)
    }
}

/// A constant as Python would write it, for diagnostics.
fn const_text(c: &Const) -> String {
    match c {
        Const::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Const::Int(i) => i.to_string(),
        Const::Float(f) => format!("{f:?}"),
        Const::Complex(re, im) => format!("({re:?}+{im:?}j)"),
        Const::Typed(s, c) => format!("{s}({})", const_text(c)),
        Const::Tuple(_) => "a tuple".to_string(),
        Const::Array(_) => "an array".to_string(),
    }
}

fn not_device_function(decl: &FunctionDecl) -> Diagnostic {
    Diagnostic::error(
        Code::E0104,
        decl.name_span,
        format!("`{}` is not a device function", decl.name),
    )
    .with_note("decorate it with `@device.kernel` or `@device.func`")
}

struct Instance {
    handle: Option<Handle<Function>>,
    diags: Vec<Diagnostic>,
    /// Instances this one's final pass called, whose diagnostics it depends on.
    callees: Vec<InstanceKey>,
}

struct Specializer<'m> {
    m: &'m ParsedModule,
    defaults: Defaults,
    /// The GPU architecture being compiled for (90 for sm_90), for `target(...)`.
    sm: u32,
    /// Whether any `target(...)` was decided (the program is then specific to `sm`).
    target_used: bool,
    /// Whether any `cg.this_grid().sync()` was checked (the kernel needs a cooperative
    /// launch).
    grid_sync: bool,
    /// Whether any `cg.barrier_arrive` was checked (the kernel initializes the block's
    /// split barrier on entry).
    split_barrier: bool,
    /// Whether any sm_90a-only operation (`hopper.wgmma`, `hopper.setmaxnreg`) was checked
    /// (the PTX then targets sm_90a).
    arch_specific: bool,
    /// The `extern` functions declared for `jit.thrust.*` calls: each one's IR handle and
    /// CUDA C++ definition, by symbol (`thrust.rs`).
    cuda_shims: Vec<(Handle<Function>, String)>,
    /// Their symbols, for finding one already declared.
    shim_symbols: HashMap<String, Handle<Function>>,
    functions: Arena<Function>,
    instances: HashMap<InstanceKey, Instance>,
    reported: HashSet<InstanceKey>,
    stack: Vec<(usize, Span)>,
    /// The instance key of each entry of `stack`.
    stack_keys: Vec<InstanceKey>,
    /// Instances called recursively while being checked (§1.4): the handle their calls
    /// use, reserved at the first recursive call and filled when the check succeeds.
    pending: HashMap<InstanceKey, Handle<Function>>,
    diags: Vec<Diagnostic>,
    /// The functions computing NumPy reductions, by reduction and array type (§5.18).
    reductions: HashMap<(reduce::Reduce, crate::types::ArrayType), Handle<Function>>,
    /// The functions computing `jit.cub` reductions, by reducer and operator (§15.6).
    cub_functions: HashMap<String, Handle<Function>>,
    /// Whether negative indices count from the end (§5.1): false under the entry kernel's
    /// `wraparound=False`, for it and every `@func` it calls.
    wraparound: bool,
}

impl Specializer<'_> {
    /// Moves the diagnostics of an instance and of what it calls into the result, once.
    fn commit(&mut self, key: &InstanceKey) {
        if !self.reported.insert(key.clone()) {
            return;
        }
        let Some(inst) = self.instances.get(key) else {
            return;
        };
        let callees = inst.callees.clone();
        self.diags.extend(inst.diags.iter().cloned());
        for c in callees {
            self.commit(&c);
        }
    }

    /// Instantiates function `idx` for argument types. A recursive call is returned as the
    /// caller's own diagnostic; other failures were recorded with the instance.
    fn instantiate(
        &mut self,
        idx: usize,
        args: Vec<Type>,
        statics: Statics,
        call: Span,
    ) -> Result<Handle<Function>, Option<Box<Diagnostic>>> {
        let key = (idx, args.clone(), statics_key(&statics));
        if let Some(inst) = self.instances.get(&key) {
            return inst.handle.ok_or(None);
        }
        let m = self.m;
        let decl = &m.functions[idx];
        if let Some(ext) = &decl.options.external {
            return Ok(self.declare_external(idx, ext, key));
        }
        if let Some(pos) = self.stack.iter().position(|(i, _)| *i == idx) {
            // A call of an instance being checked, with its own argument types: a real
            // (recursive) call, whose result type the return annotation gives.
            // The return annotation, or numba's explicit signature (`"int64(int64)"`).
            let declared = m
                .def(decl)
                .returns
                .as_deref()
                .and_then(|a| match a {
                    ast::Expr::NoneLiteral(_) => Some(Type::None),
                    a => m.annotation_type(a, self.defaults),
                })
                .or_else(|| decl.options.signature_ret.clone());
            if self.stack_keys[pos] == key
                && let Some(ret) = declared
            {
                if let Some(h) = self.pending.get(&key) {
                    return Ok(*h);
                }
                let h = self.placeholder(idx, &args, ret);
                self.pending.insert(key, h);
                return Ok(h);
            }
            let note = if self.stack_keys[pos] == key {
                format!(
                    "a recursive function needs a return annotation (`def {}(...) -> int32:`): its result type must be known before its body is checked",
                    decl.name
                )
            } else {
                "a recursive call must pass the argument types the function is being checked for (convert them, e.g. `int32(n - 1)`)".to_string()
            };
            let mut d = Diagnostic::error(
                Code::E0105,
                call,
                format!("recursive call of `{}`", decl.name),
            )
            .with_label("this call recurses")
            .with_note(note);
            for (i, span) in self.stack[pos + 1..].iter() {
                d = d.with_secondary(*span, format!("`{}` is called here", m.functions[*i].name));
            }
            return Err(Some(Box::new(d)));
        }
        self.stack.push((idx, call));
        self.stack_keys.push(key.clone());
        let mut hints: HashMap<String, Hint> = HashMap::new();
        let mut pass = 0;
        let outcome = loop {
            let mut cx = FnCx::new(self, idx, &args, &statics, &mut hints);
            cx.run();
            pass += 1;
            if !cx.changed || pass == MAX_PASSES {
                break cx.finish();
            }
        };
        self.stack.pop();
        self.stack_keys.pop();
        let (mut func, diags, callees) = outcome;
        let callee_failed = callees
            .iter()
            .any(|k| self.instances.get(k).is_some_and(|i| i.handle.is_none()));
        let mut diags = diags;
        // The recursive calls were typed with the declared result: the body must agree.
        if let Some(h) = self.pending.get(&key)
            && diags.is_empty()
            && self.functions[*h].ret != func.ret
        {
            diags.push(
                Diagnostic::error(
                    Code::E0105,
                    decl.name_span,
                    format!(
                        "`{}` is called recursively as returning {}, but it returns {}",
                        decl.name, self.functions[*h].ret, func.ret
                    ),
                )
                .with_note(
                    "make the returned values match the declared result type (convert them)",
                ),
            );
        }
        let handle = if diags.is_empty() && !callee_failed {
            let span = func.span;
            match self.pending.remove(&key) {
                // Called recursively: the body goes where the calls point, and a private
                // symbol is numbered by that place, as every other is by its own.
                Some(h) => {
                    if let Some(stem) = func
                        .symbol
                        .strip_prefix("_pyd_")
                        .and_then(|s| s.rsplit_once('_'))
                        .map(|(stem, _)| stem.to_string())
                    {
                        func.symbol = format!("_pyd_{stem}_{}", h.index());
                    }
                    self.functions[h] = func;
                    Some(h)
                }
                None => Some(self.functions.append(func, span)),
            }
        } else {
            None
        };
        self.instances.insert(
            key,
            Instance {
                handle,
                diags,
                callees,
            },
        );
        handle.ok_or(None)
    }
}

impl Specializer<'_> {
    /// The function a recursive call refers to until its instance is checked (§1.4): its
    /// parameters and declared result, no body. The instance replaces it when it succeeds;
    /// when it fails, the program fails with it.
    fn placeholder(&mut self, idx: usize, args: &[Type], ret: Type) -> Handle<Function> {
        let decl = &self.m.functions[idx];
        let def = self.m.def(decl);
        let mut locals = Arena::default();
        let names = def
            .parameters
            .posonlyargs
            .iter()
            .chain(def.parameters.args.iter())
            .map(|p| p.parameter.name.id.to_string());
        for (name, ty) in names.zip(args) {
            locals.append(
                Local {
                    name,
                    ty: ty.clone(),
                },
                decl.name_span,
            );
        }
        let func = Function {
            name: decl.name.clone(),
            symbol: format!("_pyd_{}_pending", decl.name),
            kind: FunctionKind::Device,
            interop: decl.options.interop,
            external: false,
            expansion: false,
            locals,
            params: args.len(),
            ret,
            exprs: Arena::default(),
            types: Vec::new(),
            body: Vec::new(),
            span: decl.name_span,
        };
        self.functions.append(func, decl.name_span)
    }

    /// The IR of an `extern` function: its parameters and result, no body. Its one
    /// instance has the declared parameter types (calls convert their arguments to them).
    fn declare_external(
        &mut self,
        idx: usize,
        ext: &super::external::ExternDecl,
        key: InstanceKey,
    ) -> Handle<Function> {
        let decl = &self.m.functions[idx];
        let def = self.m.def(decl);
        let mut locals = Arena::default();
        for (p, ty) in def
            .parameters
            .posonlyargs
            .iter()
            .chain(def.parameters.args.iter())
            .zip(&ext.params)
        {
            locals.append(
                Local {
                    name: p.parameter.name.id.to_string(),
                    ty: ty.clone(),
                },
                sp(&p.parameter),
            );
        }
        let func = Function {
            name: decl.name.clone(),
            symbol: ext.symbol.clone(),
            kind: FunctionKind::Device,
            interop: true,
            external: true,
            expansion: false,
            locals,
            params: ext.params.len(),
            ret: ext.ret.clone(),
            exprs: Arena::default(),
            types: Vec::new(),
            body: Vec::new(),
            span: decl.name_span,
        };
        let h = self.functions.append(func, decl.name_span);
        self.instances.insert(
            key,
            Instance {
                handle: Some(h),
                diags: Vec::new(),
                callees: Vec::new(),
            },
        );
        h
    }
}

/// An instantiation's identity: the function, its argument types, and the compile-time
/// arguments it was specialized on (see [`Statics`]).
type InstanceKey = (usize, Vec<Type>, Vec<String>);

/// Compile-time arguments of a device-function call, one per parameter: an entity (a dtype,
/// a builtin such as `cuda.atomic.add`, a device function) or a constant, which the callee
/// sees under the parameter's name instead of a run-time value, as numba specializes on
/// them. `None` for a run-time argument.
pub(super) type Statics = Vec<Option<Item>>;

/// The part of an instance key that identifies its compile-time arguments.
fn statics_key(statics: &Statics) -> Vec<String> {
    statics
        .iter()
        .map(|s| s.as_ref().map(|i| format!("{i:?}")).unwrap_or_default())
        .collect()
}

/// A checked function, its diagnostics, and the instances it calls.
type Finished = (Function, Vec<Diagnostic>, Vec<InstanceKey>);

/// What earlier passes learned about a local (or, under `$return`, the return value).
#[derive(Clone, Debug)]
struct Hint {
    ty: Type,
    weak: Option<Weak>,
    first: Span,
    nonneg: bool,
    /// The value of a local assigned once, to a constant.
    konst: Option<Const>,
}

/// A value of device code during checking.
#[derive(Clone, Debug)]
struct Val {
    e: Handle<Expr>,
    ty: Type,
    /// A Python number whose type adapts to the other operand.
    weak: Option<Weak>,
    /// The value, when known at compile time.
    konst: Option<Const>,
    /// Known to be an integer >= 0.
    nonneg: bool,
    span: Span,
}

/// What an expression denotes: a value, or an entity that only some uses accept.
#[derive(Clone, Debug)]
enum Value {
    Val(Val),
    Item(Item, Span),
    /// Already reported.
    Err,
}

struct FnCx<'s, 'm> {
    s: &'s mut Specializer<'m>,
    decl: &'m FunctionDecl,
    def: &'m ast::StmtFunctionDef,
    kind: FunctionKind,
    exprs: Arena<Expr>,
    types: Vec<Type>,
    locals: Arena<Local>,
    scope: HashMap<String, Handle<Local>>,
    params: usize,
    hints: &'s mut HashMap<String, Hint>,
    diags: Vec<Diagnostic>,
    callees: Vec<InstanceKey>,
    changed: bool,
    /// The no-break flags of the enclosing `for … else` loops, with the loop depth each
    /// belongs to: a `break` at that depth clears its flag.
    pub(super) else_flags: Vec<(usize, crate::ir::Handle<crate::ir::Local>)>,
    loops: usize,
    temps: usize,
    body: Option<Block>,
    /// Names the function assigns somewhere (its locals).
    assigned: HashSet<String>,
    /// Locals read before any assignment was seen in this pass.
    unresolved: Vec<(String, Span)>,
    /// Names assigned so far in this pass, in source order (parameters included).
    seen_assigned: HashSet<String>,
    /// Names whose assignment had an error already reported: reading them reports nothing.
    poisoned: HashSet<String>,
    /// Static shared memory this function's `shared_array`s take so far in this pass.
    shared_bytes: u64,
    /// Nested `def`s usable as predicates: name → the expression they return.
    local_defs: HashMap<String, ast::Expr>,
    /// How many places assign each local (a local assigned once to a constant is a
    /// constant expression).
    assign_sites: HashMap<String, usize>,
    /// For each enclosing loop, the names its body assigns (a read there may see the value
    /// of a previous iteration).
    loop_assigned: Vec<HashSet<String>>,
    /// Parameters bound to compile-time arguments (see [`Statics`]).
    statics: HashMap<String, Item>,
    /// Whether the code being checked would also run on the host: false inside the branch
    /// of a `target(...)` test that the host does not take (E0243).
    host_reachable: bool,
    /// Locals holding an `Atomic` object (`c = device.Atomic(int32)`), with where it was
    /// made: assigning them is E0260 (§9.5).
    atomic_objects: HashMap<String, Span>,
    /// The local arrays `hopper.wgmma` has accumulated into so far in this pass, with their
    /// register counts: `wgmma_wait_group` pins them after the wait (§18.4).
    wgmma_accs: Vec<(String, ast::Expr, u32)>,
    /// Set while the tensor-map argument of a TMA function is read: the only place a
    /// `hopper.TensorMap` parameter may be named (§18.4).
    tensor_map_use: bool,
}

impl<'s, 'm> FnCx<'s, 'm> {
    fn new(
        s: &'s mut Specializer<'m>,
        idx: usize,
        args: &[Type],
        statics: &Statics,
        hints: &'s mut HashMap<String, Hint>,
    ) -> Self {
        let m = s.m;
        let decl = &m.functions[idx];
        let def = m.def(decl);
        let kind = decl.kind.unwrap_or(FunctionKind::Device);
        let mut cx = FnCx {
            s,
            decl,
            def,
            kind,
            exprs: Arena::default(),
            types: Vec::new(),
            locals: Arena::default(),
            scope: HashMap::new(),
            params: args.len(),
            hints,
            diags: Vec::new(),
            callees: Vec::new(),
            changed: false,
            loops: 0,
            else_flags: Vec::new(),
            temps: 0,
            body: None,
            assigned: HashSet::new(),
            unresolved: Vec::new(),
            seen_assigned: HashSet::new(),
            poisoned: HashSet::new(),
            local_defs: HashMap::new(),
            shared_bytes: 0,
            assign_sites: HashMap::new(),
            loop_assigned: Vec::new(),
            statics: HashMap::new(),
            host_reachable: true,
            atomic_objects: HashMap::new(),
            wgmma_accs: Vec::new(),
            tensor_map_use: false,
        };
        assigned_names(&def.body, &mut cx.assigned);
        count_assignments(&def.body, &mut cx.assign_sites);
        let params: Vec<&ast::ParameterWithDefault> = def
            .parameters
            .posonlyargs
            .iter()
            .chain(def.parameters.args.iter())
            .collect();
        // Run-time arguments' types in order, after the compile-time ones are set aside.
        let mut args = args.iter();
        for ann in params
            .iter()
            .filter_map(|p| p.parameter.annotation.as_deref())
            .chain(def.returns.as_deref())
        {
            cx.exposition_only(ann);
        }
        for (i, p) in params.iter().enumerate() {
            let name = p.parameter.name.id.to_string();
            if let Some(Some(item)) = statics.get(i) {
                cx.statics.insert(name, item.clone());
                continue;
            }
            let Some(ty) = args.next() else {
                break;
            };
            let span = sp(&p.parameter);
            let h = cx.locals.append(
                Local {
                    name: name.clone(),
                    ty: ty.clone(),
                },
                span,
            );
            cx.scope.insert(name.clone(), h);
            cx.seen_assigned.insert(name.clone());
            let nonneg = matches!(ty, Type::Scalar(s) if s.kind() == Kind::UInt);
            cx.hints.entry(name).or_insert(Hint {
                ty: ty.clone(),
                weak: None,
                first: span,
                nonneg,
                konst: None,
            });
            if let Some(ann) = &p.parameter.annotation {
                cx.check_annotation(ann, ty);
            }
            if let Some(d) = &p.default {
                cx.error(
                    Code::E0301,
                    sp(d.as_ref()),
                    "default parameter values are not supported in device functions",
                );
            }
        }
        // `-> T` with a number, vector, struct or tuple type: the return value has that type,
        // as a local annotated `x: T` has (§1.5): returned Python numbers adapt to it, and
        // values of another type are E0201.
        if kind != FunctionKind::Kernel
            && let Some(ann) = def.returns.as_deref()
            && let Some(ty) = m.annotation_type(ann, cx.s.defaults)
        {
            cx.hints.entry("$return".to_string()).or_insert(Hint {
                ty,
                weak: None,
                first: sp(ann),
                nonneg: false,
                konst: None,
            });
        }
        if kind == FunctionKind::Kernel {
            cx.check_param_space(&params);
        }
        let pr = &def.parameters;
        if let Some(v) = &pr.vararg {
            cx.error(
                Code::E0301,
                sp(v.as_ref()),
                "`*args` is not supported in device functions",
            );
        }
        if let Some(v) = &pr.kwarg {
            cx.error(
                Code::E0301,
                sp(v.as_ref()),
                "`**kwargs` is not supported in device functions",
            );
        }
        if !pr.kwonlyargs.is_empty() {
            cx.error(
                Code::E0301,
                sp(&pr.kwonlyargs[0]),
                "keyword-only parameters are not supported in device functions",
            );
        }
        cx
    }

    fn run(&mut self) {
        let def = self.def;
        let mut body = self.record_params_in_memory();
        body.extend(self.block(&def.body));
        for (name, span) in std::mem::take(&mut self.unresolved) {
            if self.hints.contains_key(&name) {
                self.changed = true; // learned later in this pass: check again
            } else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0111,
                        span,
                        format!(
                            "`{}` is used before it is assigned",
                            crate::front::webs::source_name(&name)
                        ),
                    )
                    .with_note("assign it before this point on every path"),
                );
            }
        }
        // A value is expected where a `return` gives one, or where the function is
        // annotated `-> T` for a T other than `None`.
        let returns_value = self
            .hints
            .get("$return")
            .filter(|h| h.ty != Type::None)
            .map(|h| {
                let declared = def.returns.as_deref().is_some_and(|a| sp(a) == h.first);
                (
                    h.first,
                    if declared {
                        "it is declared to return a value here"
                    } else {
                        "it returns a value here"
                    },
                )
            })
            .or_else(|| match def.returns.as_deref() {
                Some(ann) if !matches!(ann, ast::Expr::NoneLiteral(_)) => {
                    Some((sp(ann), "it is declared to return a value here"))
                }
                _ => None,
            });
        if let Some((first, label)) = returns_value
            && self.kind != FunctionKind::Kernel
            && !always_returns(&body, &self.exprs)
            && self.diags.is_empty()
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0206,
                    self.decl.name_span,
                    format!("`{}` does not return a value on every path", self.decl.name),
                )
                .with_secondary(first, label)
                .with_note("add a `return` at the end; falling off the end would return `None`"),
            );
        }
        self.body = Some(body);
    }

    /// numba passes a record argument by reference, so its sub-array fields are views and
    /// its fields can be assigned. In the numba dialect a parameter of record type is
    /// therefore copied into a one-element local array on entry, and its name refers to that
    /// element (`ref[record_…]`), like `r = recs[i]` (docs/semantics.md §5.16). Stores
    /// change the kernel's copy: the caller's record is not written back.
    fn record_params_in_memory(&mut self) -> Block {
        let mut out = Vec::new();
        if !self.s.m.rules().records_by_reference {
            return out;
        }
        let params: Vec<Handle<Local>> = self
            .locals
            .iter()
            .map(|(h, _)| h)
            .take(self.params)
            .collect();
        for p in params {
            let (name, ty) = (self.locals[p].name.clone(), self.locals[p].ty.clone());
            let Type::Struct(st) = &ty else { continue };
            if st.record.is_none() || self.assigned.contains(&name) {
                continue;
            }
            let span = self.locals.span(p);
            let at = Type::Array(crate::types::ArrayType {
                dtype: DType::Struct(st.clone()),
                ndim: 1,
                layout: crate::types::Layout::C,
                space: crate::types::MemSpace::Local,
            });
            let arr = self.push(
                Expr::StaticArray {
                    shape: vec![1],
                    align: 0,
                },
                at.clone(),
                span,
            );
            let slot = self.locals.append(
                Local {
                    name: format!("{name}$record"),
                    ty: at.clone(),
                },
                span,
            );
            out.push(Stmt {
                kind: StmtKind::Assign(slot, arr),
                span,
            });
            let i64t = Type::Scalar(Scalar::Int64);
            let zero = self.push(Expr::Literal(Literal::Int(0)), i64t, span);
            let index = vec![Index {
                value: zero,
                wrap: false,
            }];
            let whole = self.push(Expr::Local(p), ty.clone(), span);
            let array = self.push(Expr::Local(slot), at.clone(), span);
            out.push(Stmt {
                kind: StmtKind::Store {
                    array,
                    indices: index.clone(),
                    value: whole,
                },
                span,
            });
            let rt = Type::StructRef {
                st: st.clone(),
                space: crate::types::MemSpace::Local,
            };
            let array = self.push(Expr::Local(slot), at, span);
            let r = self.push(
                Expr::ElementRef {
                    array,
                    indices: index,
                },
                rt.clone(),
                span,
            );
            let rl = self.locals.append(
                Local {
                    name: name.clone(),
                    ty: rt,
                },
                span,
            );
            out.push(Stmt {
                kind: StmtKind::Assign(rl, r),
                span,
            });
            self.scope.insert(name, rl);
        }
        out
    }

    fn finish(self) -> Finished {
        let ret = match (self.kind, self.hints.get("$return")) {
            (FunctionKind::Kernel, _) | (_, None) => Type::None,
            (_, Some(h)) => self.materialize(h),
        };
        let symbol = if self.kind == FunctionKind::Kernel || self.decl.options.interop {
            // A method `point.dot` becomes `point_dot`: PTX names have no dots.
            self.decl.name.replace('.', "_")
        } else {
            // A private symbol: any other character becomes `_uXXXX` (PTX identifiers are
            // ASCII letters, digits, `_` and `$`).
            let mut name = String::new();
            for c in self.decl.name.chars() {
                match c {
                    '.' => name.push('_'),
                    c if c.is_ascii_alphanumeric() || c == '_' => name.push(c),
                    c => name.push_str(&format!("_u{:04x}", u32::from(c))),
                }
            }
            format!("_pyd_{name}_{}", self.s.functions.len())
        };
        let func = Function {
            name: self.decl.name.clone(),
            symbol,
            kind: self.kind,
            interop: self.decl.options.interop,
            external: false,
            expansion: false,
            locals: self.locals,
            params: self.params,
            ret,
            exprs: self.exprs,
            types: self.types,
            body: self.body.unwrap_or_default(),
            span: self.decl.name_span,
        };
        (func, self.diags, self.callees)
    }
}

// ---- helpers ------------------------------------------------------------------------------

impl FnCx<'_, '_> {
    /// A kernel's parameters must fit CUDA's parameter space, 32,764 bytes (E0412). Over
    /// 4 KiB needs PTX ISA 8.1 and sm_70, which every supported architecture is; the back
    /// end then declares PTX 8.1 where the architecture's usual version is older.
    fn check_param_space(&mut self, params: &[&ast::ParameterWithDefault]) {
        const LIMIT: u64 = 32_764;
        let mut off = 0u64;
        for p in params {
            let Some(l) = self.scope.get(p.parameter.name.id.as_str()) else {
                continue; // a compile-time argument takes no space
            };
            let (size, align) = crate::abi::size_align(&self.locals[*l].ty);
            off = off.div_ceil(align.max(1)) * align.max(1) + size;
            if off > LIMIT {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0412,
                        sp(&p.parameter),
                        format!(
                            "the parameters of this kernel up to `{}` take {off} bytes, more than the {LIMIT} bytes CUDA allows",
                            p.parameter.name.id
                        ),
                    )
                    .with_note("pass large values in global arrays instead"),
                );
                return;
            }
        }
    }

    /// Whether this pass has reported an error, here or in a function it called: a check
    /// that gives up without a value (`Value::Err`, `None`) must make this true.
    fn has_failed(&self) -> bool {
        self.diags
            .iter()
            .any(|d| d.severity == crate::diag::Severity::Error)
            || self.callees.iter().any(|k| {
                self.s
                    .instances
                    .get(k)
                    .is_some_and(|i| i.handle.is_none())
            })
            || !self.s.diags.is_empty()
            // A read before any assignment is reported (or the body checked again) at
            // the end of the pass.
            || !self.unresolved.is_empty()
    }

    fn error(&mut self, code: Code, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(code, span, msg));
    }

    fn push(&mut self, e: Expr, ty: Type, span: Span) -> Handle<Expr> {
        self.types.push(ty);
        self.exprs.append(e, span)
    }

    fn materialize(&self, h: &Hint) -> Type {
        match h.weak {
            Some(w) => Type::Scalar(self.s.defaults.of(w)),
            None => h.ty.clone(),
        }
    }

    fn val(&self, e: Handle<Expr>, ty: Type, span: Span) -> Val {
        let nonneg = matches!(ty, Type::Scalar(s) if s.kind() == Kind::UInt);
        Val {
            e,
            ty,
            weak: None,
            konst: None,
            nonneg,
            span,
        }
    }

    /// A hidden integer local of type `ty`, set to 0 by a statement appended to `out`: the
    /// counter of a loop the checker builds.
    fn counter_from_zero(&mut self, ty: &Type, span: Span, out: &mut Block) -> Handle<Local> {
        let ctr = self.new_temp(ty.clone(), span);
        let zero = self.push(Expr::Literal(Literal::Int(0)), ty.clone(), span);
        out.push(Stmt {
            kind: StmtKind::Assign(ctr, zero),
            span,
        });
        ctr
    }

    fn new_temp(&mut self, ty: Type, span: Span) -> Handle<Local> {
        self.temps += 1;
        self.locals.append(
            Local {
                name: format!("${}", self.temps),
                ty,
            },
            span,
        )
    }

    /// A literal of scalar type `s` for a constant, or an error when it does not fit.
    fn literal(&mut self, c: &Const, s: Scalar, span: Span) -> Option<Handle<Expr>> {
        if let Const::Typed(_, inner) = c {
            return self.literal(inner, s, span);
        }
        let lit = match (c, s.kind()) {
            (Const::Complex(re, im), Kind::Complex) => Literal::Complex(*re, *im),
            (c, Kind::Complex) if c.as_f64().is_some() => {
                Literal::Complex(c.as_f64().unwrap_or(0.0), 0.0)
            }
            (Const::Complex(..), _) => {
                self.diags
                    .push(complex_to_real(span, "a Python complex", s));
                return None;
            }
            (Const::Bool(b), Kind::Bool) => Literal::Bool(*b),
            (c, Kind::Bool) => Literal::Bool(c.as_f64().is_some_and(|v| v != 0.0)),
            (Const::Bool(b), Kind::Float) => Literal::Float(f64::from(u8::from(*b))),
            (Const::Int(i), Kind::Float) => Literal::Float(*i as f64),
            (Const::Float(f), Kind::Float) => {
                // The largest finite value of each format (values beyond half an ulp past it
                // round to infinity).
                let limit = match s {
                    Scalar::Float16 => 65520.0,
                    Scalar::BFloat16 => 3.3961e38,
                    Scalar::Float32 => f64::from(f32::MAX) * (1.0 + f64::EPSILON * 2f64.powi(28)),
                    // Half an ulp past the largest finite value, where rounding would leave
                    // the format (the conversion would saturate).
                    Scalar::Float8E4M3 => 464.0,
                    Scalar::Float8E5M2 => 61440.0,
                    _ => f64::INFINITY,
                };
                if f.is_finite() && f.abs() >= limit {
                    self.error(Code::E0204, span, format!("{f} is out of range for {s}"));
                    return None;
                }
                Literal::Float(*f)
            }
            (Const::Bool(b), _) => Literal::Int(i128::from(*b)),
            (Const::Int(i), _) => {
                if !ir::literal_fits(Literal::Int(*i), s) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0204,
                            span,
                            format!("Python integer {i} is out of bounds for {s}"),
                        )
                        .with_label(format!("does not fit in {s}"))
                        .with_note("NumPy 2 raises OverflowError here; write an explicit conversion if wrap-around is meant"),
                    );
                    return None;
                }
                Literal::Int(*i)
            }
            (Const::Float(_), _) => {
                self.error(
                    Code::E0207,
                    span,
                    format!("a float cannot be used as {s} implicitly"),
                );
                return None;
            }
            (Const::Tuple(_), _) => {
                self.error(Code::E0207, span, format!("a tuple cannot be used as {s}"));
                return None;
            }
            (Const::Array(_), _) => {
                self.error(Code::E0207, span, format!("an array cannot be used as {s}"));
                return None;
            }
            (Const::Typed(..), _) => return None,
        };
        Some(self.push(Expr::Literal(lit), Type::Scalar(s), span))
    }

    /// The value of a compile-time constant, as a weak Python number (or a tuple of them).
    fn const_val(&mut self, c: &Const, span: Span) -> Option<Val> {
        let (ty, weak) = match c {
            Const::Typed(t, inner) => {
                // A typed NumPy scalar: a literal of its type, not a weak number.
                let e = self.literal(inner, *t, span)?;
                let mut v = self.val(e, Type::Scalar(*t), span);
                v.konst = Some(c.clone());
                v.nonneg = inner.as_int().is_some_and(|i| i >= 0);
                return Some(v);
            }
            Const::Array(a) => {
                let ty = Type::Array(crate::types::ArrayType {
                    dtype: a.dtype.clone(),
                    ndim: a.shape.len() as u8,
                    layout: if a.fortran && a.shape.len() > 1 {
                        crate::types::Layout::F
                    } else {
                        crate::types::Layout::C
                    },
                    space: a.space,
                });
                if a.space != crate::types::MemSpace::Const {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0114,
                            span,
                            format!("the constant array `{}` does not fit in the 64 KiB constant bank", a.name),
                        )
                        .with_secondary(a.span, format!("`{}` is assigned here ({} bytes)", a.name, a.bytes.len()))
                        .with_note("the module's constant arrays are placed in the bank in source order; together they may take at most 65536 bytes")
                        .with_note("pass a large table as a kernel argument instead"),
                    );
                    return None;
                }
                let e = self.push(Expr::ConstArray(a.clone()), ty.clone(), span);
                let mut v = self.val(e, ty, span);
                v.konst = Some(c.clone());
                return Some(v);
            }
            Const::Bool(_) => (Scalar::Bool, None),
            Const::Int(_) => (self.s.defaults.int, Some(Weak::Int)),
            Const::Float(_) => (self.s.defaults.float, Some(Weak::Float)),
            Const::Complex(..) => (self.s.defaults.complex, Some(Weak::Complex)),
            Const::Tuple(items) => {
                let mut es = Vec::new();
                let mut tys = Vec::new();
                for it in items {
                    let v = self.const_val(it, span)?;
                    let v = self.concrete(v)?;
                    es.push(v.e);
                    tys.push(v.ty);
                }
                let e = self.push(Expr::Tuple(es), Type::Tuple(tys.clone()), span);
                let mut v = self.val(e, Type::Tuple(tys), span);
                v.konst = Some(c.clone());
                return Some(v);
            }
        };
        let e = match c {
            Const::Int(i) if !ir::literal_fits(Literal::Int(*i), ty) => {
                // Too big for `int`: keep it exact in int64 (from 2**63, uint64) until it
                // meets a typed operand, which types it as NumPy types a Python int
                // (`uint64(18446744073709551615)` is the largest uint64).
                let lit = Literal::Int(*i);
                let wide = if ir::literal_fits(lit, Scalar::Int64) {
                    Scalar::Int64
                } else if ir::literal_fits(lit, Scalar::UInt64) {
                    Scalar::UInt64
                } else {
                    self.error(
                        Code::E0204,
                        span,
                        format!("Python integer {i} is out of bounds for int64 and uint64"),
                    );
                    return None;
                };
                self.push(Expr::Literal(lit), Type::Scalar(wide), span)
            }
            Const::Float(f)
                if ty == Scalar::Float32 && f.is_finite() && !(*f as f32).is_finite() =>
            {
                // Too big for float32: keep it in float64 until it meets a typed operand.
                self.push(
                    Expr::Literal(Literal::Float(*f)),
                    Type::Scalar(Scalar::Float64),
                    span,
                )
            }
            _ => self.literal(c, ty, span)?,
        };
        let ty = self.types[e.index()].clone();
        Some(Val {
            e,
            ty,
            weak,
            konst: Some(c.clone()),
            nonneg: c.as_f64().is_some_and(|v| v >= 0.0) && c.as_int().is_some(),
            span,
        })
    }

    /// A weak value turned into its dialect default type (`int32`, `float32`).
    fn concrete(&mut self, v: Val) -> Option<Val> {
        match v.weak {
            None => Some(v),
            Some(w) => {
                let s = self.s.defaults.of(w);
                let e = self.convert(&v, s)?;
                Some(Val {
                    e,
                    ty: Type::Scalar(s),
                    weak: None,
                    ..v
                })
            }
        }
    }

    /// Converts a scalar value to `s`: constants become literals (checked to fit), others
    /// a cast.
    fn convert(&mut self, v: &Val, s: Scalar) -> Option<Handle<Expr>> {
        if v.ty == Type::Scalar(s) {
            return Some(v.e);
        }
        if v.weak.is_some()
            && let Some(c) = &v.konst
        {
            return self.literal(c, s, v.span);
        }
        if let Type::Scalar(from) = v.ty
            && from.is_complex()
            && !s.is_complex()
        {
            self.diags
                .push(complex_to_real(v.span, &from.to_string(), s));
            return None;
        }
        match v.ty {
            Type::Scalar(_) | Type::WarpMask => {
                Some(self.push(Expr::Cast(v.e), Type::Scalar(s), v.span))
            }
            _ => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("expected a number of type {s}, found {}", v.ty),
                );
                None
            }
        }
    }

    /// Turns an entity into a value where one can stand for it.
    fn value_of(&mut self, v: Value) -> Option<Val> {
        match v {
            Value::Val(v) => Some(v),
            Value::Err => {
                debug_assert!(
                    self.has_failed(),
                    "a failed check reported no error (a checker path drops code silently) in `{}`",
                    self.decl.name
                );
                None
            }
            Value::Item(item, span) => match item {
                Item::Const(c) => self.const_val(&c, span),
                Item::Builtin(b @ (Builtin::LaneId | Builtin::WarpSize)) => {
                    let op = if b == Builtin::LaneId {
                        Intrinsic::LaneId
                    } else {
                        Intrinsic::WarpSize
                    };
                    let e = self.push(
                        Expr::Intrinsic(op, vec![]),
                        Type::Scalar(Scalar::Int32),
                        span,
                    );
                    let mut v = self.val(e, Type::Scalar(Scalar::Int32), span);
                    v.nonneg = true;
                    Some(v)
                }
                Item::Builtin(
                    b @ (Builtin::ClusterIdx
                    | Builtin::ClusterDim
                    | Builtin::BlockIdxInCluster
                    | Builtin::BlockRankInCluster
                    | Builtin::ClusterSize),
                ) => self.cluster_position(b, None, span),
                Item::Builtin(
                    b @ (Builtin::ThreadIdx
                    | Builtin::BlockIdx
                    | Builtin::BlockDim
                    | Builtin::GridDim),
                ) => {
                    let es: Vec<_> = [Axis::X, Axis::Y, Axis::Z]
                        .into_iter()
                        .map(|a| {
                            self.push(
                                Expr::Intrinsic(dim3_intrinsic(b, a), vec![]),
                                Type::Scalar(Scalar::UInt32),
                                span,
                            )
                        })
                        .collect();
                    let ty = Type::Vector {
                        elem: Scalar::UInt32,
                        len: 3,
                    };
                    let e = self.push(Expr::Tuple(es), ty.clone(), span);
                    Some(self.val(e, ty, span))
                }
                other => {
                    self.not_a_value(&other, span);
                    None
                }
            },
        }
    }

    /// E0112 when `array` is a constant array (§1.3), which device code cannot write: `span`
    /// is the write, and a note points at the global when it is known.
    pub(super) fn check_writable(&mut self, array: &Val, span: Span) -> Option<()> {
        let Type::Array(at) = &array.ty else {
            return Some(());
        };
        if at.space != crate::types::MemSpace::Const {
            return Some(());
        }
        let mut d = Diagnostic::error(
            Code::E0112,
            span,
            "this writes to a constant array, which device code can only read",
        );
        d = match &array.konst {
            Some(Const::Array(a)) => d.with_secondary(
                a.span,
                format!("`{}` is a module-level constant array", a.name),
            ),
            _ => d.with_note(
                "module-level NumPy arrays are compile-time constants in constant memory",
            ),
        };
        self.diags.push(d.with_note(
            "copy it into a `local.array` (or pass a device array as an argument) to modify it",
        ));
        None
    }

    fn not_a_value(&mut self, item: &Item, span: Span) {
        let d = match item {
            Item::Builtin(Builtin::Dim3Like) => exposition_only(span),
            Item::NoneArg => Diagnostic::error(
                Code::E0207,
                span,
                "this parameter was given `None`, which is not a device value",
            )
            .with_note("test it first: `if x is None:` is decided when compiling, and the other branch is not checked"),
            Item::Foreign(m) => Diagnostic::error(
                Code::E0106,
                span,
                format!("names from module `{m}` cannot be used in device code"),
            )
            .with_note(
                "device code can use `cuda.device`, Python's builtins and module-level constants",
            ),
            Item::Planned(n) => planned(n, span),
            Item::Host => Diagnostic::error(
                Code::E0106,
                span,
                "this global is not a compile-time constant, so device code cannot use it",
            )
            .with_note(
                "module-level globals used in device code must be literals or arithmetic on them",
            ),
            Item::Function(_) => Diagnostic::error(
                Code::E0202,
                span,
                "a function is not a value in device code",
            )
            .with_note("call it instead"),
            Item::Builtin(Builtin::Scalar(s)) => Diagnostic::error(
                Code::E0202,
                span,
                format!("the type {s} is not a value"),
            )
            .with_note(format!(
                "a type can be called (`{s}(x)`) or given as a dtype (`local_array(n, {s})`)"
            )),
            _ => Diagnostic::error(Code::E0202, span, "this is not a value"),
        };
        self.diags.push(d);
    }

    /// E0219 for each exposition-only name of the spec (`Dim3Like`) in an annotation: the
    /// spec forbids using them ("shall not be used").
    fn exposition_only(&mut self, ann: &ast::Expr) {
        use ruff_python_ast::visitor::{Visitor, walk_expr};
        struct Find<'a>(&'a ParsedModule, Vec<Span>);
        impl<'a> Visitor<'a> for Find<'_> {
            fn visit_expr(&mut self, e: &'a ast::Expr) {
                if matches!(e, ast::Expr::Name(_) | ast::Expr::Attribute(_))
                    && self.0.resolve_static(e) == Some(Item::Builtin(Builtin::Dim3Like))
                {
                    self.1.push(sp(e));
                    return;
                }
                walk_expr(self, e);
            }
        }
        let mut f = Find(self.s.m, Vec::new());
        f.visit_expr(ann);
        for span in f.1 {
            self.diags.push(exposition_only(span));
        }
    }

    fn check_annotation(&mut self, ann: &ast::Expr, ty: &Type) {
        let Some(want) = self.s.m.annotation_type(ann, self.s.defaults) else {
            return; // other annotations are documentation only
        };
        // `c: device.Atomic(int32)`: an Atomic object (or an element of an array of them, or
        // an `atomic_ref`) of that dtype, passed by reference (§9.7).
        let atomic_ok = matches!((&want, ty), (Type::Atomic { dtype: a, .. }, Type::Ref { dtype: b, record: None, .. }) if a == b);
        if &want != ty && !atomic_ok {
            self.diags.push(
                Diagnostic::error(
                    Code::E0207,
                    sp(ann),
                    format!("this parameter is annotated {want}, but the argument is {ty}"),
                )
                .with_label(format!("expects {want}")),
            );
        }
    }
}

/// E0251: a complex number where a real one is needed. NumPy and the Array API standard
/// convert complex to real only explicitly, and then by dropping the imaginary part with a
/// warning; device code has no warnings, so it asks for the part it means.
fn complex_to_real(span: Span, what: &str, to: Scalar) -> Diagnostic {
    Diagnostic::error(
        Code::E0251,
        span,
        format!("{what} cannot be converted to {to}"),
    )
    .with_label("complex")
    .with_note("take the part you mean: `z.real`, `z.imag` or `abs(z)`")
}

/// E0219: the spec's exposition-only `Dim3Like` named in a program.
fn exposition_only(span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::E0219,
        span,
        "`Dim3Like` is exposition only: the spec describes it but programs may not use it",
    )
    .with_note("write the type itself: `int32`, or `tuple[int32, int32]`, …")
}

fn planned(name: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::E0102,
        span,
        format!("`cuda.device.{name}` is not supported by this version of pydevice yet"),
    )
    .with_note("see the feature table in README.md")
}

fn dim3_intrinsic(b: Builtin, a: Axis) -> Intrinsic {
    match b {
        Builtin::ThreadIdx => Intrinsic::ThreadIdx(a),
        Builtin::BlockIdx => Intrinsic::BlockIdx(a),
        Builtin::BlockDim => Intrinsic::BlockDim(a),
        _ => Intrinsic::GridDim(a),
    }
}

mod asm;
mod assign;
mod atomic_object;
mod calls;
mod cluster;
mod complex;
mod cub;
mod device;
mod groups;
mod hopper;
mod numba;
use complex::complex_unsupported;
use stmt::{always_returns, assigned_names, contains_call, count_assignments, element_type};
mod expr;
mod launch;
mod loops;
mod ops;
mod print;
mod records;
pub(crate) mod reduce;
mod stmt;
mod tensor;
mod thrust;
mod views;
