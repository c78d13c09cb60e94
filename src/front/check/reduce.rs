//! NumPy's whole-array reductions in device code (§5.18): `np.sum(a)`, `a.sum()`, `np.nanmax(a)`
//! … Each (reduction, array type) becomes one synthesized device function of the program that
//! loops over every element, computing exactly what numba-cuda's implementation computes
//! (its accumulator types, its sequential order, its NaN rules), so results are bit-identical.
//!
//! This file builds that function's IR directly; it does not parse or type-check Python.

use super::*;
use crate::diag::Code;
use crate::types::{ArrayType, Layout};

/// A whole-array reduction of NumPy's.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// `np.all`: every element is non-zero.
    All,
    /// `np.any`: some element is non-zero.
    Any,
    /// `np.sum`: a sequential sum from zero.
    Sum,
    /// `np.prod`: a sequential product from one.
    Prod,
    /// `np.mean`: the sum over the size, in float64.
    Mean,
    /// `np.var`: the mean squared difference from the mean.
    Var,
    /// `np.std`: `var ** 0.5`.
    Std,
    /// `np.min` / `np.amin`: the first NaN, else the least element.
    Min,
    /// `np.max` / `np.amax`: the first NaN, else the greatest element.
    Max,
    /// `np.nanmin`: the least element that is not NaN (NaN if all are).
    NanMin,
    /// `np.nanmax`: the greatest element that is not NaN (NaN if all are).
    NanMax,
    /// `np.nansum`: the sum of the elements that are not NaN.
    NanSum,
    /// `np.nanprod`: the product of the elements that are not NaN.
    NanProd,
    /// `np.nanmean`: the mean of the elements that are not NaN.
    NanMean,
    /// `np.count_nonzero`: how many elements are non-zero.
    CountNonzero,
}

impl Reduce {
    /// The reduction a NumPy function name denotes.
    pub fn from_function(name: &str) -> Option<Reduce> {
        use Reduce::*;
        Some(match name {
            "all" => All,
            "any" => Any,
            "sum" => Sum,
            "prod" => Prod,
            "mean" => Mean,
            "var" => Var,
            "std" => Std,
            "min" | "amin" => Min,
            "max" | "amax" => Max,
            "nanmin" => NanMin,
            "nanmax" => NanMax,
            "nansum" => NanSum,
            "nanprod" => NanProd,
            "nanmean" => NanMean,
            "count_nonzero" => CountNonzero,
            _ => return None,
        })
    }

    /// The reduction an array method denotes (`a.sum()`); NumPy has no `a.nansum()`.
    pub fn from_method(name: &str) -> Option<Reduce> {
        use Reduce::*;
        match name {
            "all" | "any" | "sum" | "prod" | "mean" | "var" | "std" | "min" | "max" => {
                Reduce::from_function(name)
            }
            _ => None,
        }
        .filter(|r| {
            !matches!(
                r,
                NanMin | NanMax | NanSum | NanProd | NanMean | CountNonzero
            )
        })
    }

    /// NumPy's name for it.
    pub fn name(self) -> &'static str {
        use Reduce::*;
        match self {
            All => "all",
            Any => "any",
            Sum => "sum",
            Prod => "prod",
            Mean => "mean",
            Var => "var",
            Std => "std",
            Min => "min",
            Max => "max",
            NanMin => "nanmin",
            NanMax => "nanmax",
            NanSum => "nansum",
            NanProd => "nanprod",
            NanMean => "nanmean",
            CountNonzero => "count_nonzero",
        }
    }

    /// The result type for arrays of `d`, as numba types it: sums and products of integers
    /// are `int64` (`uint64` for unsigned `sum`/`prod`), means and variances `float64`,
    /// minima and maxima the dtype.
    fn result(self, d: Scalar) -> Scalar {
        use Reduce::*;
        match self {
            All | Any => Scalar::Bool,
            CountNonzero => Scalar::Int64,
            Mean | Var | Std | NanMean => Scalar::Float64,
            Min | Max | NanMin | NanMax => d,
            Sum | Prod if d.kind() == Kind::UInt => Scalar::UInt64,
            Sum | Prod | NanSum | NanProd if d.is_float() => d,
            Sum | Prod | NanSum | NanProd => Scalar::Int64,
        }
    }
}

/// The IR of one synthesized function under construction.
pub(super) struct Builder {
    /// The (first) parameter.
    pub(super) param: Handle<Local>,
    pub(super) locals: Arena<Local>,
    pub(super) exprs: Arena<Expr>,
    pub(super) types: Vec<Type>,
    pub(super) span: Span,
}

impl Builder {
    pub(super) fn local(&mut self, name: &str, ty: Type) -> Handle<Local> {
        self.locals.append(
            Local {
                name: name.to_string(),
                ty,
            },
            self.span,
        )
    }
    pub(super) fn e(&mut self, e: Expr, ty: Type) -> Handle<Expr> {
        self.types.push(ty);
        self.exprs.append(e, self.span)
    }
    pub(super) fn get(&mut self, l: Handle<Local>) -> Handle<Expr> {
        let ty = self.locals[l].ty.clone();
        self.e(Expr::Local(l), ty)
    }
    pub(super) fn lit(&mut self, lit: Literal, s: Scalar) -> Handle<Expr> {
        self.e(Expr::Literal(lit), Type::Scalar(s))
    }
    pub(super) fn bin(&mut self, op: BinaryOp, a: Handle<Expr>, b: Handle<Expr>) -> Handle<Expr> {
        let ty = match op {
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => Type::Scalar(Scalar::Bool),
            _ => self.types[a.index()].clone(),
        };
        self.e(Expr::Binary(op, a, b), ty)
    }
    pub(super) fn cast(&mut self, a: Handle<Expr>, s: Scalar) -> Handle<Expr> {
        if self.types[a.index()] == Type::Scalar(s) {
            return a;
        }
        self.e(Expr::Cast(a), Type::Scalar(s))
    }
    pub(super) fn select(
        &mut self,
        cond: Handle<Expr>,
        then: Handle<Expr>,
        otherwise: Handle<Expr>,
    ) -> Handle<Expr> {
        let ty = self.types[then.index()].clone();
        self.e(
            Expr::Select {
                cond,
                then,
                otherwise,
            },
            ty,
        )
    }
    fn not(&mut self, a: Handle<Expr>) -> Handle<Expr> {
        self.e(Expr::Unary(UnaryOp::Not, a), Type::Scalar(Scalar::Bool))
    }
    pub(super) fn set(&self, l: Handle<Local>, v: Handle<Expr>) -> Stmt {
        Stmt {
            kind: StmtKind::Assign(l, v),
            span: self.span,
        }
    }
    pub(super) fn when(&self, cond: Handle<Expr>, then: Block, otherwise: Block) -> Stmt {
        Stmt {
            kind: StmtKind::If {
                cond,
                then,
                otherwise,
            },
            span: self.span,
        }
    }
    /// Zero (or one) of `s`.
    fn number(&mut self, s: Scalar, v: i128) -> Handle<Expr> {
        if s.is_float() {
            self.lit(Literal::Float(v as f64), s)
        } else if s == Scalar::Bool {
            self.lit(Literal::Bool(v != 0), s)
        } else {
            self.lit(Literal::Int(v), s)
        }
    }
    /// Whether element `x` is non-zero (NaN is).
    fn nonzero(&mut self, x: Handle<Expr>, d: Scalar) -> Handle<Expr> {
        if d == Scalar::Bool {
            return x;
        }
        let z = self.number(d, 0);
        self.bin(BinaryOp::Ne, x, z)
    }
    /// Whether `x` is not NaN (always, for integers).
    fn not_nan(&mut self, x: Handle<Expr>, d: Scalar) -> Option<Handle<Expr>> {
        d.is_float().then(|| self.bin(BinaryOp::Eq, x, x))
    }

    /// A loop over every element of the array parameter (local 0), in memory order for C
    /// and Fortran layouts (C order otherwise): `body(x)` gives the statements for one
    /// element `x`.
    fn each(
        &mut self,
        at: &ArrayType,
        body: impl FnOnce(&mut Builder, Handle<Expr>) -> Block,
    ) -> Block {
        let n = usize::from(at.ndim);
        let a = self.param;
        let counters: Vec<Handle<Local>> = (0..n)
            .map(|d| self.local(&format!("$i{d}"), Type::Scalar(Scalar::Int64)))
            .collect();
        let arr = self.get(a);
        let idx: Vec<Index> = counters
            .iter()
            .map(|c| Index {
                value: self.get(*c),
                wrap: false,
            })
            .collect();
        let dtype = at.dtype.ty();
        let x = self.e(
            Expr::Load {
                array: arr,
                indices: idx,
            },
            dtype,
        );
        let mut inner = body(self, x);
        // Innermost loop first: the last dimension for C order, the first for Fortran.
        let dims: Vec<usize> = if at.layout == Layout::F {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        let i64t = Type::Scalar(Scalar::Int64);
        for d in dims {
            let c = counters[d];
            let arr = self.get(a);
            let extent = self.e(
                Expr::ArrayProp(arr, ArrayProp::Shape(d as u8)),
                i64t.clone(),
            );
            let cur = self.get(c);
            let cond = self.bin(BinaryOp::Lt, cur, extent);
            let cur = self.get(c);
            let one = self.lit(Literal::Int(1), Scalar::Int64);
            let inc = self.bin(BinaryOp::AddNoWrap, cur, one);
            let zero = self.lit(Literal::Int(0), Scalar::Int64);
            inner = vec![
                self.set(c, zero),
                Stmt {
                    kind: StmtKind::Loop {
                        cond,
                        body: inner,
                        continuing: vec![self.set(c, inc)],
                        form: LoopForm::Plain,
                    },
                    span: self.span,
                },
            ];
        }
        inner
    }

    /// `float64(acc) / float64(a.size)` (or over `count`, a local).
    fn over(
        &mut self,
        acc: Handle<Expr>,
        count: Option<Handle<Local>>,
        at: &ArrayType,
    ) -> Handle<Expr> {
        let num = self.cast(acc, Scalar::Float64);
        let den = match count {
            Some(c) => self.get(c),
            None => self.size(at),
        };
        let den = self.cast(den, Scalar::Float64);
        self.bin(BinaryOp::Div, num, den)
    }

    fn size(&mut self, at: &ArrayType) -> Handle<Expr> {
        let mut total = self.lit(Literal::Int(1), Scalar::Int64);
        for d in 0..at.ndim {
            let arr = self.get(self.param);
            let ext = self.e(
                Expr::ArrayProp(arr, ArrayProp::Shape(d)),
                Type::Scalar(Scalar::Int64),
            );
            total = self.bin(BinaryOp::Mul, total, ext);
        }
        total
    }
}

/// The body of the function computing `r` over an array of type `at` (whose dtype is `d`),
/// returning the result.
fn build_body(b: &mut Builder, r: Reduce, at: &ArrayType, d: Scalar) -> Block {
    use Reduce::*;
    let rt = r.result(d);
    let mut out = Vec::new();
    match r {
        All | Any | CountNonzero | Sum | Prod | NanSum | NanProd | Mean | NanMean => {
            let (acc_ty, init) = match r {
                All => (Scalar::Bool, 1),
                Any => (Scalar::Bool, 0),
                CountNonzero => (Scalar::Int64, 0),
                Prod | NanProd => (rt, 1),
                Mean if d.is_float() => (d, 0),
                Mean | NanMean => (Scalar::Float64, 0),
                _ => (rt, 0),
            };
            let acc = b.local("$acc", Type::Scalar(acc_ty));
            let count = (r == NanMean).then(|| b.local("$count", Type::Scalar(Scalar::Int64)));
            let v = b.number(acc_ty, init);
            out.push(b.set(acc, v));
            if let Some(c) = count {
                let z = b.lit(Literal::Int(0), Scalar::Int64);
                out.push(b.set(c, z));
            }
            let lp = b.each(at, |b, x| {
                let cur = b.get(acc);
                match r {
                    All | Any => {
                        let nz = b.nonzero(x, d);
                        let konst = b.number(Scalar::Bool, i128::from(r == Any));
                        let v = if r == All {
                            b.select(nz, cur, konst)
                        } else {
                            b.select(nz, konst, cur)
                        };
                        vec![b.set(acc, v)]
                    }
                    CountNonzero => {
                        let nz = b.nonzero(x, d);
                        let one = b.lit(Literal::Int(1), Scalar::Int64);
                        let v = b.bin(BinaryOp::Add, cur, one);
                        vec![b.when(nz, vec![b.set(acc, v)], Vec::new())]
                    }
                    _ => {
                        let op = if matches!(r, Prod | NanProd) {
                            BinaryOp::Mul
                        } else {
                            BinaryOp::Add
                        };
                        let xv = b.cast(x, acc_ty);
                        let v = b.bin(op, cur, xv);
                        let mut st = vec![b.set(acc, v)];
                        if let Some(c) = count {
                            let cv = b.get(c);
                            let one = b.lit(Literal::Int(1), Scalar::Int64);
                            let inc = b.bin(BinaryOp::Add, cv, one);
                            st.push(b.set(c, inc));
                        }
                        match (matches!(r, NanSum | NanProd | NanMean), b.not_nan(x, d)) {
                            (true, Some(ok)) => vec![b.when(ok, st, Vec::new())],
                            _ => st,
                        }
                    }
                }
            });
            out.extend(lp);
            let acc_v = b.get(acc);
            let ret = match r {
                Mean | NanMean => b.over(acc_v, count, at),
                _ => acc_v,
            };
            out.push(Stmt {
                kind: StmtKind::Return(Some(ret)),
                span: b.span,
            });
        }
        Var | Std => {
            // numba: m = a.mean(); ssd = sum((x - m) ** 2) in order; ssd / a.size.
            let acc_ty = if d.is_float() { d } else { Scalar::Float64 };
            let acc = b.local("$acc", Type::Scalar(acc_ty));
            let z = b.number(acc_ty, 0);
            out.push(b.set(acc, z));
            let lp = b.each(at, |b, x| {
                let cur = b.get(acc);
                let xv = b.cast(x, acc_ty);
                let v = b.bin(BinaryOp::Add, cur, xv);
                vec![b.set(acc, v)]
            });
            out.extend(lp);
            let mean = b.local("$mean", Type::Scalar(Scalar::Float64));
            let acc_v = b.get(acc);
            let m = b.over(acc_v, None, at);
            out.push(b.set(mean, m));
            let ssd = b.local("$ssd", Type::Scalar(Scalar::Float64));
            let z = b.number(Scalar::Float64, 0);
            out.push(b.set(ssd, z));
            let lp = b.each(at, |b, x| {
                let xv = b.cast(x, Scalar::Float64);
                let mv = b.get(mean);
                let diff = b.bin(BinaryOp::Sub, xv, mv);
                let sq = b.bin(BinaryOp::Mul, diff, diff);
                let cur = b.get(ssd);
                let v = b.bin(BinaryOp::Add, cur, sq);
                vec![b.set(ssd, v)]
            });
            out.extend(lp);
            let s = b.get(ssd);
            let mut ret = b.over(s, None, at);
            if r == Std {
                let half = b.lit(Literal::Float(0.5), Scalar::Float64);
                ret = b.bin(BinaryOp::Pow, ret, half);
            }
            out.push(Stmt {
                kind: StmtKind::Return(Some(ret)),
                span: b.span,
            });
        }
        Min | Max | NanMin | NanMax => {
            let best = b.local("$best", Type::Scalar(d));
            let started = b.local("$started", Type::Scalar(Scalar::Bool));
            let init = if d.is_float() {
                b.lit(Literal::Float(f64::NAN), d)
            } else {
                b.number(d, 0)
            };
            out.push(b.set(best, init));
            let f = b.number(Scalar::Bool, 0);
            out.push(b.set(started, f));
            let lp = b.each(at, |b, x| {
                let t = b.number(Scalar::Bool, 1);
                let first = vec![b.set(best, x), b.set(started, t)];
                let cur = b.get(best);
                let later = match r {
                    Min | Max => {
                        // The first NaN wins; otherwise a strictly better element.
                        let op = if r == Min { BinaryOp::Lt } else { BinaryOp::Gt };
                        let better = b.bin(op, x, cur);
                        let mut v = b.select(better, x, cur);
                        if let Some(x_ok) = b.not_nan(x, d) {
                            let cur2 = b.get(best);
                            v = b.select(x_ok, v, x);
                            let cur_ok = b.not_nan(cur2, d).unwrap_or(x_ok);
                            let cur3 = b.get(best);
                            v = b.select(cur_ok, v, cur3);
                        }
                        vec![b.set(best, v)]
                    }
                    _ => {
                        // numba: `if not isnan(v): if not best < v (> v): best = v`.
                        let op = if r == NanMin {
                            BinaryOp::Lt
                        } else {
                            BinaryOp::Gt
                        };
                        let keep = b.bin(op, cur, x);
                        let mut take = b.not(keep);
                        if let Some(ok) = b.not_nan(x, d) {
                            let f = b.number(Scalar::Bool, 0);
                            take = b.select(ok, take, f);
                        }
                        vec![b.when(take, vec![b.set(best, x)], Vec::new())]
                    }
                };
                let st = b.get(started);
                vec![b.when(st, later, first)]
            });
            out.extend(lp);
            let ret = b.get(best);
            out.push(Stmt {
                kind: StmtKind::Return(Some(ret)),
                span: b.span,
            });
        }
    }
    out
}

impl FnCx<'_, '_> {
    /// `np.<r>(a)` or `a.<r>()`: a call of the program's function computing `r` over arrays
    /// of `a`'s type (made on first use). E0306 for dtypes it does not support.
    pub(super) fn reduce_call(&mut self, r: Reduce, arr: Val, span: Span) -> Option<Val> {
        let Type::Array(at) = &arr.ty else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0306,
                    arr.span,
                    format!("`np.{}` needs an array, found {}", r.name(), arr.ty),
                )
                .with_note("NumPy's reductions work on whole arrays in device code"),
            );
            return None;
        };
        let d = match at.dtype.scalar() {
            Some(
                s @ (Scalar::Bool
                | Scalar::Int8
                | Scalar::Int16
                | Scalar::Int32
                | Scalar::Int64
                | Scalar::UInt8
                | Scalar::UInt16
                | Scalar::UInt32
                | Scalar::UInt64
                | Scalar::Float32
                | Scalar::Float64),
            ) => s,
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0306,
                        arr.span,
                        format!("`np.{}` of {} is not supported in device code", r.name(), arr.ty),
                    )
                    .with_note("reductions take arrays of bool, integers, float32 or float64 in this version"),
                );
                return None;
            }
        };
        let key = (r, at.clone());
        let f = match self.s.reductions.get(&key) {
            Some(h) => *h,
            None => {
                let mut locals = Arena::default();
                let param = locals.append(
                    Local {
                        name: "a".into(),
                        ty: arr.ty.clone(),
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
                let body = build_body(&mut b, r, at, d);
                let n = self.s.functions.len();
                let func = Function {
                    name: format!("np.{}", r.name()),
                    symbol: format!("_pyd_np_{}_{n}", r.name()),
                    kind: FunctionKind::Device,
                    interop: false,
                    external: false,
                    expansion: false,
                    locals: b.locals,
                    params: 1,
                    ret: Type::Scalar(r.result(d)),
                    exprs: b.exprs,
                    types: b.types,
                    body,
                    span,
                };
                let h = self.s.functions.append(func, span);
                self.s.reductions.insert(key, h);
                h
            }
        };
        let ty = Type::Scalar(r.result(d));
        let arr = self.concrete(arr)?;
        let e = self.push(Expr::Call(f, vec![arr.e]), ty.clone(), span);
        Some(self.val(e, ty, span))
    }
}
