//! cupyx.jit's `jit.cub` collectives inside kernels (docs/semantics.md §15.6):
//! `jit.cub.WarpReduce[T]` and `jit.cub.BlockReduce[T, threads]`, their `TempStorage`, an
//! instance made from it, and its `Sum(v)` and `Reduce(v, jit.cub.Sum() | Max() | Min())`.
//!
//! They are lowered natively, not through CUB: each (reducer, operator) becomes one
//! synthesized device function of the program (its IR built here, as `reduce.rs` does), so
//! they run on the CPU back end too. The order of the operations is CUB's, so results match
//! CuPy's bit for bit where rounding depends on it:
//! - a warp reduction combines `v` with `shfl_down(v, d)` for `d` = 1, 2, 4, 8, 16 (CUB's
//!   `WarpReduceShfl`); the result is valid in lane 0 (CUB: "only valid in lane 0");
//! - a block reduction reduces each warp so, stores each warp's result in shared memory,
//!   and thread 0 folds them in warp order (CUB's `BLOCK_REDUCE_WARP_REDUCTIONS`); the result
//!   is valid in thread 0. A barrier follows, so the function's shared array may be reused by
//!   the next call without the `syncthreads()` CUB asks for between uses of its storage.
//!
//! `Max()` is CUB's `b > a ? b : a` and `Min()` its `b < a ? b : a`; complex numbers compare
//! as NumPy orders them (real part first, then imaginary). The values travel through the
//! shuffles as the warp shuffles take them (small integers and float16 widened to 32 bits,
//! complex128 as its two parts).
//!
//! The scratch: pydevice's warp reduction needs none, and the block reduction's (one value
//! per warp) is a shared array of the synthesized function. `X.TempStorage` is therefore
//! the element type `T`: `jit.shared_memory(X.TempStorage, 1)` is accepted as CuPy's code
//! writes it, and the element passed to the constructor is type-checked, not used.

use super::reduce::Builder;
use super::*;
use crate::ir::{ComplexOp, Shfl};
use crate::types::{ArrayType, Layout, MemSpace, StructType};

/// The prefix of the reserved struct types that stand for `jit.cub` values.
const PREFIX: &str = "cupyx.jit.cub.";

/// A reduction operator of `jit.cub`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum CubOp {
    /// `jit.cub.Sum()`: `a + b`.
    Sum,
    /// `jit.cub.Max()`: `b > a ? b : a`.
    Max,
    /// `jit.cub.Min()`: `b < a ? b : a`.
    Min,
}

/// `WarpReduce[dtype]` (`block` None) or `BlockReduce[dtype, block]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
struct Reducer {
    dtype: Scalar,
    block: Option<u32>,
}

/// What a reserved `jit.cub` struct type stands for.
enum CubValue {
    /// The class `jit.cub.WarpReduce[T]` (its `TempStorage`, its constructor).
    Class(Reducer),
    /// An instance, `WarpReduce(temp_storage[0])` (its `Sum`, `Reduce`).
    Instance(Reducer),
    /// An operator object, `jit.cub.Sum()`.
    Op(CubOp),
}

impl Reducer {
    fn name(self) -> String {
        match self.block {
            None => format!("WarpReduce[{}]", self.dtype.name()),
            Some(n) => format!("BlockReduce[{}, {n}]", self.dtype.name()),
        }
    }
}

fn reserved(name: &str) -> Type {
    Type::Struct(Box::new(StructType {
        name: format!("{PREFIX}{name}"),
        fields: vec![("tag".to_string(), Type::Scalar(Scalar::UInt8))],
        align: None,
        field_align: Vec::new(),
        record: None,
    }))
}

fn cub_of(t: &Type) -> Option<CubValue> {
    let Type::Struct(st) = t else { return None };
    let rest = st.name.strip_prefix(PREFIX)?;
    match rest {
        "Sum" => return Some(CubValue::Op(CubOp::Sum)),
        "Max" => return Some(CubValue::Op(CubOp::Max)),
        "Min" => return Some(CubValue::Op(CubOp::Min)),
        _ => {}
    }
    let (rest, instance) = match rest.strip_suffix(" instance") {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let (kind, args) = rest.split_once('[')?;
    let mut args = args.strip_suffix(']')?.split(", ");
    let dtype = Scalar::from_name(args.next()?)?;
    let block = match kind {
        "WarpReduce" => None,
        "BlockReduce" => Some(args.next()?.parse().ok()?),
        _ => return None,
    };
    let r = Reducer { dtype, block };
    Some(if instance {
        CubValue::Instance(r)
    } else {
        CubValue::Class(r)
    })
}

/// The number types the reductions take.
fn supported(s: Scalar) -> bool {
    s != Scalar::Bool
}

impl FnCx<'_, '_> {
    /// Whether `e` is `jit.cub` of the cupyx dialect's `jit`.
    fn is_cub_namespace(&self, e: &ast::Expr) -> bool {
        matches!(e, ast::Expr::Attribute(a) if a.attr.id.as_str() == "cub"
            && matches!(self.s.m.resolve_static(&a.value),
                Some(Item::Namespace(crate::front::builtins::Namespace::CupyxJit))))
    }

    /// The reducer a local holds, when `e` names one: its class or an instance.
    fn local_cub(&self, e: &ast::Expr) -> Option<CubValue> {
        let ast::Expr::Name(n) = e else { return None };
        let h = self.scope.get(n.id.as_str())?;
        cub_of(&self.locals[*h].ty)
    }

    fn reserved_val(&mut self, name: &str, span: Span) -> Val {
        let ty = reserved(name);
        let z = self.push(
            Expr::Literal(Literal::Int(0)),
            Type::Scalar(Scalar::UInt8),
            span,
        );
        let t = self.push(Expr::Tuple(vec![z]), ty.clone(), span);
        self.val(t, ty, span)
    }

    fn cub_missing(&mut self, name: &str, span: Span) {
        self.diags.push(
            Diagnostic::error(
                Code::E0102,
                span,
                format!("`cupyx.jit.cub.{name}` is not available in device code (cupyx dialect)"),
            )
            .with_note("pydevice provides `jit.cub.WarpReduce[T]` and `jit.cub.BlockReduce[T, threads]` with `Sum` and `Reduce`, and the operators `jit.cub.Sum()`, `Max()` and `Min()`"),
        );
    }

    /// `jit.cub.WarpReduce[T]` or `jit.cub.BlockReduce[T, threads]`; `None` when `s` is
    /// another subscript.
    pub(super) fn cub_subscript(&mut self, s: &ast::ExprSubscript) -> Option<Option<Val>> {
        let ast::Expr::Attribute(a) = s.value.as_ref() else {
            return None;
        };
        if !self.is_cub_namespace(&a.value) {
            return None;
        }
        Some(self.reducer_class(a.attr.id.as_str(), &s.slice, sp(s)))
    }

    fn reducer_class(&mut self, name: &str, slice: &ast::Expr, span: Span) -> Option<Val> {
        let elts: Vec<&ast::Expr> = match slice {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            e => vec![e],
        };
        let want = match name {
            "WarpReduce" => 1,
            "BlockReduce" => 2,
            _ => {
                self.cub_missing(name, span);
                return None;
            }
        };
        if elts.len() != want {
            let form = if want == 1 {
                "`jit.cub.WarpReduce[T]`"
            } else {
                "`jit.cub.BlockReduce[T, threads]`"
            };
            self.error(
                Code::E0107,
                sp(slice),
                format!(
                    "{form} takes {want} parameter{}, {} given (pydevice takes no algorithm or other parameters)",
                    if want == 1 { "" } else { "s" },
                    elts.len()
                ),
            );
            return None;
        }
        let dtype = self.dtype_arg(elts[0])?;
        if !supported(dtype) {
            self.error(
                Code::E0212,
                sp(elts[0]),
                format!("`jit.cub.{name}` reduces numbers, not {}", dtype.name()),
            );
            return None;
        }
        let block = if want == 2 {
            let n = self.const_int(elts[1], "threads")?;
            if !(32..=1024).contains(&n) || n % 32 != 0 {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0212,
                        sp(elts[1]),
                        format!("`jit.cub.BlockReduce` of {n} threads: pydevice takes a multiple of 32 from 32 to 1024"),
                    )
                    .with_note("the block's x dimension must be this many threads, as CUB requires"),
                );
                return None;
            }
            Some(n as u32)
        } else {
            None
        };
        let r = Reducer { dtype, block };
        Some(self.reserved_val(&r.name(), span))
    }

    /// `X.TempStorage` of a local `X` holding a reducer class: its element type (module
    /// documentation). `None` when `e` is something else.
    pub(super) fn cub_temp_storage(&mut self, e: &ast::Expr) -> Option<Scalar> {
        let ast::Expr::Attribute(a) = e else {
            return None;
        };
        if a.attr.id.as_str() != "TempStorage" {
            return None;
        }
        match self.local_cub(&a.value)? {
            CubValue::Class(r) => Some(r.dtype),
            _ => None,
        }
    }

    /// `jit.cub.Sum()` / `Max()` / `Min()`, or `X(temp)` of a local `X` holding a reducer
    /// class; `None` when the call is something else.
    pub(super) fn cub_call(&mut self, c: &ast::ExprCall) -> Option<Option<Val>> {
        let span = sp(c);
        if let ast::Expr::Attribute(a) = c.func.as_ref()
            && self.is_cub_namespace(&a.value)
        {
            let name = a.attr.id.as_str();
            if !matches!(name, "Sum" | "Max" | "Min") {
                self.cub_missing(name, sp(c.func.as_ref()));
                return Some(None);
            }
            if self.args(c, &format!("jit.cub.{name}"), 0, 0).is_none() {
                return Some(None);
            }
            return Some(Some(self.reserved_val(name, span)));
        }
        let class = match c.func.as_ref() {
            ast::Expr::Subscript(s) => match self.cub_subscript(s)? {
                Some(v) => cub_of(&v.ty),
                None => return Some(None),
            },
            e => self.local_cub(e),
        };
        let Some(CubValue::Class(r)) = class else {
            return None;
        };
        let what = r.name();
        let Some(args) = self.args(c, &what, 1, 1) else {
            return Some(None);
        };
        if args[0].ty != Type::Scalar(r.dtype) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0207,
                    args[0].span,
                    format!(
                        "`{what}(...)` takes its temporary storage, found {}",
                        args[0].ty
                    ),
                )
                .with_note(format!(
                    "pass an element of `jit.shared_memory({}.TempStorage, 1)`",
                    match &c.func.as_ref() {
                        ast::Expr::Name(n) => n.id.as_str(),
                        _ => "X",
                    }
                )),
            );
            return Some(None);
        }
        Some(Some(self.reserved_val(&format!("{what} instance"), span)))
    }

    /// `r.Sum(v)` or `r.Reduce(v, op)` of a reducer instance; `None` when `v` is not one.
    pub(super) fn cub_method(
        &mut self,
        v: &Val,
        method: &str,
        c: &ast::ExprCall,
    ) -> Option<Option<Val>> {
        let Some(CubValue::Instance(r)) = cub_of(&v.ty) else {
            return None;
        };
        Some(self.reducer_method(r, method, c))
    }

    fn reducer_method(&mut self, r: Reducer, method: &str, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let what = r.name();
        let (x, op) = match method {
            "Sum" => {
                let a = self.args(c, &format!("{what}.Sum"), 1, 1)?;
                (a[0].clone(), CubOp::Sum)
            }
            "Reduce" => {
                let a = self.args(c, &format!("{what}.Reduce"), 2, 2)?;
                let Some(CubValue::Op(op)) = cub_of(&a[1].ty) else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0207,
                            a[1].span,
                            format!(
                                "`{what}.Reduce` takes a `jit.cub` operator, found {}",
                                a[1].ty
                            ),
                        )
                        .with_note("pass `jit.cub.Sum()`, `jit.cub.Max()` or `jit.cub.Min()`"),
                    );
                    return None;
                };
                (a[0].clone(), op)
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0212,
                        span,
                        format!("`{what}` has no method `{method}` in pydevice"),
                    )
                    .with_note("pydevice provides `Sum(value)` and `Reduce(value, op)`; a partial reduction (`num_valid`) is not supported"),
                );
                return None;
            }
        };
        let e = self.convert(&x, r.dtype)?;
        let f = self.cub_function(r, op, span);
        let ty = Type::Scalar(r.dtype);
        let call = self.push(Expr::Call(f, vec![e]), ty.clone(), span);
        Some(self.val(call, ty, span))
    }

    /// The program's function computing `op` with reducer `r` (made on first use).
    fn cub_function(&mut self, r: Reducer, op: CubOp, span: Span) -> Handle<Function> {
        let key = format!("{}.{op:?}", r.name());
        if let Some(h) = self.s.cub_functions.get(&key) {
            return *h;
        }
        let ty = Type::Scalar(r.dtype);
        let mut locals = Arena::default();
        let param = locals.append(
            Local {
                name: "value".into(),
                ty: ty.clone(),
            },
            span,
        );
        let mut b = Builder {
            param,
            locals,
            exprs: Arena::default(),
            types: Vec::new(),
            span,
        };
        let body = build(&mut b, r, op);
        let n = self.s.functions.len();
        let kind = if r.block.is_some() { "block" } else { "warp" };
        let func = Function {
            name: format!("jit.cub.{key}"),
            symbol: format!(
                "_pyd_cub_{kind}_{}_{}_{n}",
                format!("{op:?}").to_lowercase(),
                r.dtype.name()
            ),
            kind: FunctionKind::Device,
            interop: false,
            external: false,
            expansion: false,
            locals: b.locals,
            params: 1,
            ret: ty,
            exprs: b.exprs,
            types: b.types,
            body,
            span,
        };
        let h = self.s.functions.append(func, span);
        self.s.cub_functions.insert(key, h);
        h
    }
}

/// A real or imaginary part of a complex value.
fn part(b: &mut Builder, z: Handle<Expr>, s: Scalar, imag: bool) -> Handle<Expr> {
    let op = if imag {
        ComplexOp::Imag
    } else {
        ComplexOp::Real
    };
    b.e(
        Expr::Intrinsic(Intrinsic::Complex(op), vec![z]),
        Type::Scalar(s.component()),
    )
}

/// `shfl_down_sync(0xffffffff, x, delta)` of a value of type `s`, widened as the shuffle
/// takes it.
fn shfl_down(b: &mut Builder, x: Handle<Expr>, s: Scalar, delta: i128) -> Handle<Expr> {
    let one = |b: &mut Builder, x: Handle<Expr>, t: Scalar| {
        let mask = b.e(Expr::Literal(Literal::Int(-1)), Type::WarpMask);
        let d = b.lit(Literal::Int(delta), Scalar::Int32);
        b.e(
            Expr::Intrinsic(Intrinsic::Shfl(Shfl::Down), vec![mask, x, d]),
            Type::Scalar(t),
        )
    };
    if s == Scalar::Complex128 {
        let c = s.component();
        let re = part(b, x, s, false);
        let re = one(b, re, c);
        let im = part(b, x, s, true);
        let im = one(b, im, c);
        return b.e(
            Expr::Intrinsic(Intrinsic::Complex(ComplexOp::New), vec![re, im]),
            Type::Scalar(s),
        );
    }
    if s.is_complex() || s.bits() >= 32 {
        return one(b, x, s);
    }
    let wide = if s.is_float() {
        Scalar::Float32
    } else if s.is_signed() {
        Scalar::Int32
    } else {
        Scalar::UInt32
    };
    let w = b.cast(x, wide);
    let r = one(b, w, wide);
    b.cast(r, s)
}

/// `op(a, x)` of two locals as CUB computes it: `a + x`, `x > a ? x : a`, `x < a ? x : a`.
/// Every use reads the local afresh, so nothing is evaluated twice.
fn apply(
    b: &mut Builder,
    op: CubOp,
    s: Scalar,
    a: Handle<Local>,
    x: Handle<Local>,
) -> Handle<Expr> {
    let cmp = match op {
        CubOp::Sum => {
            let (a, x) = (b.get(a), b.get(x));
            return b.bin(BinaryOp::Add, a, x);
        }
        CubOp::Max => BinaryOp::Gt,
        CubOp::Min => BinaryOp::Lt,
    };
    let parts = |b: &mut Builder, imag: bool, op: BinaryOp| {
        let (xe, ae) = (b.get(x), b.get(a));
        let (xp, ap) = (part(b, xe, s, imag), part(b, ae, s, imag));
        b.bin(op, xp, ap)
    };
    let pick = if s.is_complex() {
        // NumPy's order: the real parts, then the imaginary parts.
        let first = parts(b, false, cmp);
        let same = parts(b, false, BinaryOp::Eq);
        let second = parts(b, true, cmp);
        let tie = b.e(Expr::And(same, second), Type::Scalar(Scalar::Bool));
        b.e(Expr::Or(first, tie), Type::Scalar(Scalar::Bool))
    } else {
        let (xe, ae) = (b.get(x), b.get(a));
        b.bin(cmp, xe, ae)
    };
    let (xe, ae) = (b.get(x), b.get(a));
    b.select(pick, xe, ae)
}

/// The body: the warp reduction, then for a block the fold of the warps' results.
fn build(b: &mut Builder, r: Reducer, op: CubOp) -> Block {
    // A float16 sum accumulates in float32 and rounds once at the end, as CuPy's does (its
    // results equal NumPy's float16 sums, which accumulate in float32; measured on the H200
    // against CuPy 14.2's `jit.cub`, and a float16 running sum would be off by several ulps).
    let s = if r.dtype == Scalar::Float16 && op == CubOp::Sum {
        Scalar::Float32
    } else {
        r.dtype
    };
    let ty = Type::Scalar(s);
    let v = b.local("$v", ty.clone());
    // The other value of each step: a lane's neighbour, or (thread 0) a warp's result.
    let o = b.local("$other", ty.clone());
    let mut out = Vec::new();
    let p = b.get(b.param);
    let p = if s == r.dtype { p } else { b.cast(p, s) };
    out.push(b.set(v, p));
    for delta in [1, 2, 4, 8, 16] {
        let cur = b.get(v);
        let other = shfl_down(b, cur, s, delta);
        out.push(b.set(o, other));
        let next = apply(b, op, s, v, o);
        out.push(b.set(v, next));
    }
    if let Some(n) = r.block
        && n > 32
    {
        let warps = u64::from(n / 32);
        let u32t = Scalar::UInt32;
        let arr_ty = Type::Array(ArrayType {
            dtype: s.into(),
            ndim: 1,
            layout: Layout::C,
            space: MemSpace::Shared,
        });
        let arr = b.local("$warps", arr_ty.clone());
        let alloc = b.e(
            Expr::StaticArray {
                shape: vec![warps],
                align: 0,
            },
            arr_ty,
        );
        out.push(b.set(arr, alloc));
        let tid = b.local("$tid", Type::Scalar(u32t));
        let t = b.e(
            Expr::Intrinsic(Intrinsic::ThreadIdx(Axis::X), vec![]),
            Type::Scalar(u32t),
        );
        out.push(b.set(tid, t));
        // Lane 0 of each warp stores the warp's result.
        let t = b.get(tid);
        let m = b.lit(Literal::Int(31), u32t);
        let lane = b.bin(BinaryOp::BitAnd, t, m);
        let z = b.lit(Literal::Int(0), u32t);
        let lead = b.bin(BinaryOp::Eq, lane, z);
        let t = b.get(tid);
        let five = b.lit(Literal::Int(5), u32t);
        let w = b.bin(BinaryOp::Shr, t, five);
        let w = b.cast(w, Scalar::Int64);
        let a = b.get(arr);
        let val = b.get(v);
        let store = Stmt {
            kind: StmtKind::Store {
                array: a,
                indices: vec![Index {
                    value: w,
                    wrap: false,
                }],
                value: val,
            },
            span: b.span,
        };
        out.push(b.when(lead, vec![store], Vec::new()));
        let sync = |b: &mut Builder| {
            let e = b.e(Expr::Intrinsic(Intrinsic::SyncThreads, vec![]), Type::None);
            Stmt {
                kind: StmtKind::Eval(e),
                span: b.span,
            }
        };
        out.push(sync(b));
        // Thread 0 folds the warps' results in order.
        let mut fold = Vec::new();
        let load = |b: &mut Builder, k: u64| {
            let a = b.get(arr);
            let i = b.lit(Literal::Int(i128::from(k)), Scalar::Int64);
            b.e(
                Expr::Load {
                    array: a,
                    indices: vec![Index {
                        value: i,
                        wrap: false,
                    }],
                },
                ty.clone(),
            )
        };
        let first = load(b, 0);
        fold.push(b.set(v, first));
        for k in 1..warps {
            let x = load(b, k);
            fold.push(b.set(o, x));
            let next = apply(b, op, s, v, o);
            fold.push(b.set(v, next));
        }
        let t = b.get(tid);
        let z = b.lit(Literal::Int(0), u32t);
        let first_thread = b.bin(BinaryOp::Eq, t, z);
        out.push(b.when(first_thread, fold, Vec::new()));
        // The next call may store into the array again.
        out.push(sync(b));
    }
    let ret = b.get(v);
    let ret = if s == r.dtype {
        ret
    } else {
        b.cast(ret, r.dtype)
    };
    out.push(Stmt {
        kind: StmtKind::Return(Some(ret)),
        span: b.span,
    });
    out
}
