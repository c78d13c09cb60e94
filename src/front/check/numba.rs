//! The numba-cuda dialect's entities that differ in form from `cuda.device`'s: positions
//! as int64 (`cuda.grid`), predicates given as values, atomics as free functions on
//! `(array, index, value)` with CUDA's relaxed device-scope semantics, and `selp`.

use super::*;
use crate::diag::Code;
use crate::front::builtins::table::{self, Rule};
use crate::ir::{AtomicOp, MathFn, MemoryOrder, Scope, Vote};

/// Small IR builders for [`FnCx::bf16_conversion`]'s bit manipulation.
impl FnCx<'_, '_> {
    fn lit_int(&mut self, v: i128, s: Scalar, span: Span) -> Handle<Expr> {
        self.push(Expr::Literal(Literal::Int(v)), Type::Scalar(s), span)
    }

    fn bin_as(
        &mut self,
        op: BinaryOp,
        a: Handle<Expr>,
        b: Handle<Expr>,
        s: Scalar,
        span: Span,
    ) -> Handle<Expr> {
        self.push(Expr::Binary(op, a, b), Type::Scalar(s), span)
    }

    fn cast_as(&mut self, e: Handle<Expr>, s: Scalar, span: Span) -> Handle<Expr> {
        self.push(Expr::Cast(e), Type::Scalar(s), span)
    }

    fn bits_as(&mut self, e: Handle<Expr>, s: Scalar, span: Span) -> Handle<Expr> {
        self.push(
            Expr::Intrinsic(Intrinsic::BitCast, vec![e]),
            Type::Scalar(s),
            span,
        )
    }

    fn select_as(
        &mut self,
        cond: Handle<Expr>,
        then: Handle<Expr>,
        otherwise: Handle<Expr>,
        s: Scalar,
        span: Span,
    ) -> Handle<Expr> {
        self.push(
            Expr::Select {
                cond,
                then,
                otherwise,
            },
            Type::Scalar(s),
            span,
        )
    }

    /// numba's `cuda.bf16` conversions (CUDA's `__float2bfloat16_rz`, `__int2bfloat16_rd`,
    /// `__bfloat162int_ru`, `__bfloat16_as_short`, ...), built from casts and bit operations
    /// so that both back ends run them:
    ///
    /// - to bfloat16 with a directed rounding: the value as a `float32` that rounds to
    ///   bfloat16 as the exact value does (integers wider than 24 bits keep their top 24
    ///   bits and a sticky bit), whose low 16 bits are dropped (`rz`) or round the top 16
    ///   away from zero when not all zero (`rd` for negatives, `ru` for positives); a NaN
    ///   gives the canonical NaN `0x7fff`. `rn` is the ordinary (round-to-nearest) cast of
    ///   that float32.
    /// - from bfloat16 to an integer: `rint`/`floor`/`ceil` (or nothing, for `rz`) in
    ///   float32, then the saturating cast (NaN gives 0), as CUDA's `cvt` does.
    pub(super) fn bf16_conversion(
        &mut self,
        c: &ast::ExprCall,
        cvt: crate::front::builtins::Bf16Cvt,
        span: Span,
    ) -> Option<Val> {
        use crate::front::builtins::{Bf16Cvt, Rounding};
        let name = format!("cuda.bf16.{}", cvt.name());
        let a = self.bind(c, &name, &["a"], 1)?;
        let v = self.eval(a[0]?)?;
        let bf = Scalar::BFloat16;
        let (from, to) = match cvt {
            Bf16Cvt::To(s, _) => (s, bf),
            Bf16Cvt::From(s, _) => (bf, s),
            Bf16Cvt::Bits(s, true) => (s, bf),
            Bf16Cvt::Bits(s, false) => (bf, s),
        };
        // Like numba's typed signatures, other real numbers convert to the parameter's type
        // by value (`bfloat16_as_int16(int16(16320))` is the bits of bfloat16 16320.0).
        let x = {
            match &v.ty {
                Type::Scalar(s) if !s.is_complex() => self.convert(&v, from)?,
                _ => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0207,
                            v.span,
                            format!("`{name}` takes a {from} value, found {}", v.ty),
                        )
                        .with_note(format!("convert with `numba.{from}(x)`")),
                    );
                    return None;
                }
            }
        };
        let e = match cvt {
            Bf16Cvt::Bits(..) => self.bits_as(x, to, span),
            Bf16Cvt::From(s, r) => {
                let f32s = Scalar::Float32;
                let w = self.cast_as(x, f32s, span);
                if s == f32s {
                    w
                } else {
                    let f = match r {
                        Rounding::Nearest => Some(MathFn::Rint),
                        Rounding::Zero => None,
                        Rounding::Down => Some(MathFn::Floor),
                        Rounding::Up => Some(MathFn::Ceil),
                    };
                    let w = match f {
                        Some(f) => self.push(
                            Expr::Intrinsic(Intrinsic::Math(f), vec![w]),
                            Type::Scalar(f32s),
                            span,
                        ),
                        None => w,
                    };
                    self.cast_as(w, s, span)
                }
            }
            Bf16Cvt::To(s, r) => {
                let f = self.float32_rounding_like(x, s, span);
                self.float32_to_bf16(f, r, span)
            }
        };
        Some(self.val(e, Type::Scalar(to), span))
    }

    /// A float32 that rounds to bfloat16 (in any direction) as `x` of type `s` does: `x`
    /// itself for float32, an exact conversion for narrow integers, and for wide integers
    /// and float64 the top 24 significant bits with a sticky bit for the rest.
    fn float32_rounding_like(&mut self, x: Handle<Expr>, s: Scalar, span: Span) -> Handle<Expr> {
        let (f32s, u64s, u32s, i32s) = (
            Scalar::Float32,
            Scalar::UInt64,
            Scalar::UInt32,
            Scalar::Int32,
        );
        match s {
            Scalar::Float32 => x,
            Scalar::Float64 => {
                // The 29 bits below float32's last one become one sticky bit (exact for
                // values in float32's normal range).
                let bits = self.bits_as(x, u64s, span);
                let low_mask = self.lit_int((1 << 29) - 1, u64s, span);
                let low = self.bin_as(BinaryOp::BitAnd, bits, low_mask, u64s, span);
                let zero = self.lit_int(0, u64s, span);
                let inexact = self.bin_as(BinaryOp::Ne, low, zero, Scalar::Bool, span);
                let high_mask =
                    self.lit_int(!((1i128 << 29) - 1) & 0xffff_ffff_ffff_ffff, u64s, span);
                let high = self.bin_as(BinaryOp::BitAnd, bits, high_mask, u64s, span);
                let sticky_bit = self.lit_int(1 << 29, u64s, span);
                let zero = self.lit_int(0, u64s, span);
                let sticky = self.select_as(inexact, sticky_bit, zero, u64s, span);
                let kept = self.bin_as(BinaryOp::BitOr, high, sticky, u64s, span);
                let kept = self.bits_as(kept, Scalar::Float64, span);
                self.cast_as(kept, f32s, span)
            }
            s if s.bits() <= 16 => self.cast_as(x, f32s, span),
            s => {
                // |x| as uint64, shifted right by max(0, bit length - 24) with a sticky bit,
                // converted exactly and scaled back by a power of two.
                let signed = s.kind() == Kind::Int;
                let wide = self.cast_as(x, u64s, span);
                let mag = if signed {
                    let zero = self.lit_int(0, s, span);
                    let neg = self.bin_as(BinaryOp::Lt, x, zero, Scalar::Bool, span);
                    let zero = self.lit_int(0, u64s, span);
                    let minus = self.bin_as(BinaryOp::Sub, zero, wide, u64s, span);
                    self.select_as(neg, minus, wide, u64s, span)
                } else {
                    wide
                };
                let lz = self.push(
                    Expr::Intrinsic(Intrinsic::Clz, vec![mag]),
                    Type::Scalar(i32s),
                    span,
                );
                let forty = self.lit_int(40, i32s, span);
                let sh = self.bin_as(BinaryOp::Sub, forty, lz, i32s, span);
                let zero = self.lit_int(0, i32s, span);
                let sh = self.bin_as(BinaryOp::Max, sh, zero, i32s, span);
                let sh64 = self.cast_as(sh, u64s, span);
                let kept = self.bin_as(BinaryOp::Shr, mag, sh64, u64s, span);
                let one = self.lit_int(1, u64s, span);
                let pow = self.bin_as(BinaryOp::Shl, one, sh64, u64s, span);
                let one = self.lit_int(1, u64s, span);
                let mask = self.bin_as(BinaryOp::Sub, pow, one, u64s, span);
                let low = self.bin_as(BinaryOp::BitAnd, mag, mask, u64s, span);
                let zero = self.lit_int(0, u64s, span);
                let inexact = self.bin_as(BinaryOp::Ne, low, zero, Scalar::Bool, span);
                let one = self.lit_int(1, u64s, span);
                let zero = self.lit_int(0, u64s, span);
                let sticky = self.select_as(inexact, one, zero, u64s, span);
                let kept = self.bin_as(BinaryOp::BitOr, kept, sticky, u64s, span);
                let f = self.cast_as(kept, f32s, span);
                // 2**sh as float32: exponent field 127 + sh.
                let sh32 = self.cast_as(sh, u32s, span);
                let bias = self.lit_int(127, u32s, span);
                let ex = self.bin_as(BinaryOp::Add, sh32, bias, u32s, span);
                let k23 = self.lit_int(23, u32s, span);
                let ex = self.bin_as(BinaryOp::Shl, ex, k23, u32s, span);
                let scale = self.bits_as(ex, f32s, span);
                let f = self.bin_as(BinaryOp::Mul, f, scale, f32s, span);
                if signed {
                    let zero = self.lit_int(0, s, span);
                    let neg = self.bin_as(BinaryOp::Lt, x, zero, Scalar::Bool, span);
                    let minus = self.push(Expr::Unary(UnaryOp::Neg, f), Type::Scalar(f32s), span);
                    self.select_as(neg, minus, f, f32s, span)
                } else {
                    f
                }
            }
        }
    }

    /// The float32 `f` rounded to bfloat16 in direction `r` (see [`Self::bf16_conversion`]).
    fn float32_to_bf16(
        &mut self,
        f: Handle<Expr>,
        r: crate::front::builtins::Rounding,
        span: Span,
    ) -> Handle<Expr> {
        use crate::front::builtins::Rounding;
        let (bf, u32s, boo) = (Scalar::BFloat16, Scalar::UInt32, Scalar::Bool);
        if r == Rounding::Nearest {
            return self.cast_as(f, bf, span);
        }
        let bits = self.bits_as(f, u32s, span);
        let k16 = self.lit_int(16, u32s, span);
        let hi = self.bin_as(BinaryOp::Shr, bits, k16, u32s, span);
        let r = if r == Rounding::Zero {
            hi
        } else {
            let m = self.lit_int(0xffff, u32s, span);
            let low = self.bin_as(BinaryOp::BitAnd, bits, m, u32s, span);
            let zero = self.lit_int(0, u32s, span);
            let inexact = self.bin_as(BinaryOp::Ne, low, zero, boo, span);
            let k31 = self.lit_int(31, u32s, span);
            let sign = self.bin_as(BinaryOp::Shr, bits, k31, u32s, span);
            let want = self.lit_int(i128::from(r == Rounding::Down), u32s, span);
            let away = self.bin_as(BinaryOp::Eq, sign, want, boo, span);
            let bump = self.push(Expr::And(inexact, away), Type::Scalar(boo), span);
            let one = self.lit_int(1, u32s, span);
            let zero = self.lit_int(0, u32s, span);
            let inc = self.select_as(bump, one, zero, u32s, span);
            self.bin_as(BinaryOp::Add, hi, inc, u32s, span)
        };
        let nan = self.bin_as(BinaryOp::Ne, f, f, boo, span);
        let canon = self.lit_int(0x7fff, u32s, span);
        let r = self.select_as(nan, canon, r, u32s, span);
        let r16 = self.cast_as(r, Scalar::UInt16, span);
        self.bits_as(r16, bf, span)
    }

    /// Another use of the value `e` computes: a copy of its node (as vector indexing does).
    fn again(&mut self, e: Handle<Expr>, ty: &Type, span: Span) -> Handle<Expr> {
        self.push(self.exprs[e].clone(), ty.clone(), span)
    }

    /// Another use of the half value `e`, widened (exactly) to `float32` for a comparison.
    fn again_wide(&mut self, e: Handle<Expr>, ty: &Type, span: Span) -> Handle<Expr> {
        let x = self.again(e, ty, span);
        self.push(Expr::Cast(x), Type::Scalar(Scalar::Float32), span)
    }

    /// CUDA's `__hmax`/`__hmin` on half values (`a > b ? a : b`, `a < b ? a : b`; a NaN
    /// operand gives the other one, two NaNs a NaN), or with `nan` `__hmax_nan`/`__hmin_nan`
    /// (a NaN when either operand is one).
    fn half_extreme(
        &mut self,
        op: BinaryOp,
        a: Handle<Expr>,
        b: Handle<Expr>,
        nan: bool,
        half: &Type,
        span: Span,
    ) -> Handle<Expr> {
        let bool_t = Type::Scalar(Scalar::Bool);
        let cmp = if op == BinaryOp::Max {
            BinaryOp::Gt
        } else {
            BinaryOp::Lt
        };
        let (a1, b1) = (
            self.again_wide(a, half, span),
            self.again_wide(b, half, span),
        );
        let c = self.push(Expr::Binary(cmp, a1, b1), bool_t.clone(), span);
        let (a2, b2) = (self.again(a, half, span), self.again(b, half, span));
        let pick = self.push(
            Expr::Select {
                cond: c,
                then: a2,
                otherwise: b2,
            },
            half.clone(),
            span,
        );
        let (b3, b4) = (
            self.again_wide(b, half, span),
            self.again_wide(b, half, span),
        );
        let b_nan = self.push(Expr::Binary(BinaryOp::Ne, b3, b4), bool_t.clone(), span);
        // b NaN: a (hmax), or b itself (hmax_nan)
        let on_b_nan = if nan {
            self.again(b, half, span)
        } else {
            self.again(a, half, span)
        };
        let r = self.push(
            Expr::Select {
                cond: b_nan,
                then: on_b_nan,
                otherwise: pick,
            },
            half.clone(),
            span,
        );
        if !nan {
            return r;
        }
        let (a3, a4) = (
            self.again_wide(a, half, span),
            self.again_wide(a, half, span),
        );
        let a_nan = self.push(Expr::Binary(BinaryOp::Ne, a3, a4), bool_t, span);
        let a5 = self.again(a, half, span);
        self.push(
            Expr::Select {
                cond: a_nan,
                then: a5,
                otherwise: r,
            },
            half.clone(),
            span,
        )
    }

    pub(super) fn numba_call(&mut self, rule: Rule, b: Builtin, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let bool_t = Type::Scalar(Scalar::Bool);
        match rule {
            Rule::NumbaSyncthreads => {
                let Builtin::NumbaSyncthreads(k) = b else {
                    return self.table_mismatch(b, span);
                };
                let a = self.bind(c, "syncthreads_count", &["predicate"], 1)?;
                let v = self.eval(a[0]?)?;
                let p = self.truthy(v)?;
                let (op, ty) = match k {
                    0 => (Intrinsic::SyncThreadsCount, Type::Scalar(Scalar::Int32)),
                    1 => (Intrinsic::SyncThreadsAnd, bool_t),
                    _ => (Intrinsic::SyncThreadsOr, bool_t),
                };
                let e = self.push(Expr::Intrinsic(op, vec![p]), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            Rule::NumbaVote => {
                let Builtin::NumbaVote(k) = b else {
                    return self.table_mismatch(b, span);
                };
                let a = self.bind(c, "vote", &["mask", "predicate"], 2)?;
                let m = self.warp_mask_arg(a[0], "vote")?;
                let v = self.eval(a[1]?)?;
                let p = self.truthy(v)?;
                let (vote, ty) = match k {
                    0 => (Vote::All, bool_t),
                    1 => (Vote::Any, bool_t),
                    2 => (Vote::Uni, bool_t),
                    _ => (Vote::Ballot, Type::WarpMask),
                };
                let e = self.push(
                    Expr::Intrinsic(Intrinsic::Vote(vote), vec![m, p]),
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
            Rule::NumbaAtomic => {
                let op = match b {
                    Builtin::NumbaAtomic(op) => op,
                    _ => AtomicOp::Cas,
                };
                // cuda.atomic.add(ary, idx, val) is atomicAdd: relaxed, device scope.
                let cas_first = b == Builtin::NumbaCompareAndSwap;
                let params: &[&str] = match (cas_first, op) {
                    (true, _) => &["ary", "old", "val"],
                    (false, AtomicOp::Cas) => &["ary", "idx", "old", "val"],
                    _ => &["ary", "idx", "val"],
                };
                let a = self.bind(c, "cuda.atomic", params, params.len())?;
                let arr = self.eval(a[0]?)?;
                let Type::Array(at) = &arr.ty else {
                    self.error(
                        Code::E0408,
                        arr.span,
                        format!("numba atomics need an array, found {}", arr.ty),
                    );
                    return None;
                };
                let space = at.space;
                let Some(dtype) = at.dtype.scalar() else {
                    self.error(
                        Code::E0408,
                        arr.span,
                        format!("numba atomics need an array of numbers, found {}", arr.ty),
                    );
                    return None;
                };
                let indices = if cas_first {
                    let zero = self.push(
                        Expr::Literal(Literal::Int(0)),
                        Type::Scalar(Scalar::Int64),
                        span,
                    );
                    let ndim = at.ndim as usize;
                    vec![
                        Index {
                            value: zero,
                            wrap: false
                        };
                        ndim
                    ]
                } else {
                    self.indices(&arr, a[1]?)?
                };
                self.check_writable(&arr, span)?;
                let r = self.push(
                    Expr::ElementRef {
                        array: arr.e,
                        indices,
                    },
                    Type::Ref {
                        record: None,
                        dtype,
                        space,
                    },
                    span,
                );
                let first_val = if cas_first { 1 } else { 2 };
                let mut args = Vec::new();
                for e in a[first_val..].iter().flatten() {
                    let x = self.eval(e)?;
                    args.push(self.store_value(&x, dtype)?);
                }
                let name = format!("{op:?}").to_lowercase();
                self.check_atomic_dtype(op, dtype, &name, span)?;
                let e = self.push(
                    Expr::Atomic {
                        op,
                        order: MemoryOrder::Relaxed,
                        scope: Scope::Device,
                        target: r,
                        args,
                    },
                    Type::Scalar(dtype),
                    span,
                );
                Some(self.val(e, Type::Scalar(dtype), span))
            }
            Rule::Fp16 => {
                if let Builtin::NumbaBf16Cvt(cvt) = b {
                    return self.bf16_conversion(c, cvt, span);
                }
                let (Builtin::NumbaFp16(op) | Builtin::NumbaBf16(op)) = b else {
                    return self.table_mismatch(b, span);
                };
                use crate::front::builtins::Fp16Op;
                let (module, prec) = match b {
                    Builtin::NumbaBf16(_) => ("bf16", Scalar::BFloat16),
                    _ => ("fp16", Scalar::Float16),
                };
                let name = match c.func.as_ref() {
                    ast::Expr::Attribute(a) => format!("cuda.{module}.{}", a.attr.id),
                    ast::Expr::Name(n) => n.id.to_string(),
                    _ => format!("cuda.{module}"),
                };
                let n = op.arity();
                let a = self.bind(c, &name, &["a", "b", "c"][..n], n)?;
                let half = Type::Scalar(prec);
                let mut vals = Vec::new();
                for e in a.iter().flatten() {
                    let v = self.eval(e)?;
                    if v.ty != half || v.weak.is_some() {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0207,
                                v.span,
                                format!("`{name}` takes {prec} values, found {}", v.ty),
                            )
                            .with_note(format!(
                                "convert with `numba.{prec}(x)`, as numba requires"
                            )),
                        );
                        return None;
                    }
                    vals.push(v);
                }
                match op {
                    Fp16Op::Binary(bop @ (BinaryOp::Max | BinaryOp::Min))
                    | Fp16Op::NanBinary(bop) => {
                        let nan = matches!(op, Fp16Op::NanBinary(_));
                        let e = self.half_extreme(bop, vals[0].e, vals[1].e, nan, &half, span);
                        Some(self.val(e, half, span))
                    }
                    Fp16Op::Binary(bop) => {
                        let r = vals.pop()?;
                        let l = vals.pop()?;
                        self.binary(bop, l, r, span)
                    }
                    Fp16Op::IsNan => {
                        let x = vals[0].e;
                        let (a, b) = (
                            self.again_wide(x, &half, span),
                            self.again_wide(x, &half, span),
                        );
                        let bool_t = Type::Scalar(Scalar::Bool);
                        let e = self.push(Expr::Binary(BinaryOp::Ne, a, b), bool_t.clone(), span);
                        Some(self.val(e, bool_t, span))
                    }
                    Fp16Op::IsInf => {
                        // CUDA's `__hisinf`: 1 for +inf, -1 for -inf, else 0.
                        let i32t = Type::Scalar(Scalar::Int32);
                        let bool_t = Type::Scalar(Scalar::Bool);
                        let mut acc = self.push(Expr::Literal(Literal::Int(0)), i32t.clone(), span);
                        for (inf, val) in [(f64::NEG_INFINITY, -1), (f64::INFINITY, 1)] {
                            let x = self.again_wide(vals[0].e, &half, span);
                            let f32t = Type::Scalar(Scalar::Float32);
                            let lim = self.push(Expr::Literal(Literal::Float(inf)), f32t, span);
                            let is =
                                self.push(Expr::Binary(BinaryOp::Eq, x, lim), bool_t.clone(), span);
                            let v = self.push(Expr::Literal(Literal::Int(val)), i32t.clone(), span);
                            acc = self.push(
                                Expr::Select {
                                    cond: is,
                                    then: v,
                                    otherwise: acc,
                                },
                                i32t.clone(),
                                span,
                            );
                        }
                        Some(self.val(acc, i32t, span))
                    }
                    Fp16Op::Neg => self.unary(ast::UnaryOp::USub, vals.pop()?, span),
                    Fp16Op::Abs => {
                        let e = self.push(Expr::Unary(UnaryOp::Abs, vals[0].e), half.clone(), span);
                        Some(self.val(e, half, span))
                    }
                    Fp16Op::Math(_) | Fp16Op::Rcp | Fp16Op::Rsqrt => {
                        // In float32, rounded to float16 once (as `math` on float16 does).
                        let f32t = Type::Scalar(Scalar::Float32);
                        let wide = self.push(Expr::Cast(vals[0].e), f32t.clone(), span);
                        let f = match op {
                            Fp16Op::Math(f) => f,
                            _ => MathFn::Sqrt,
                        };
                        let mut r = wide;
                        if op != Fp16Op::Rcp {
                            r = self.push(
                                Expr::Intrinsic(Intrinsic::Math(f), vec![wide]),
                                f32t.clone(),
                                span,
                            );
                        }
                        if op != Fp16Op::Math(f) {
                            let one =
                                self.push(Expr::Literal(Literal::Float(1.0)), f32t.clone(), span);
                            r = self.push(Expr::Binary(BinaryOp::Div, one, r), f32t.clone(), span);
                        }
                        let e = self.push(Expr::Cast(r), half.clone(), span);
                        Some(self.val(e, half, span))
                    }
                    Fp16Op::Fma | Fp16Op::FmaSat | Fp16Op::FmaRelu | Fp16Op::SatBinary(_) => {
                        let r = if let Fp16Op::SatBinary(bop) = op {
                            let r = vals.pop()?;
                            let l = vals.pop()?;
                            self.binary(bop, l, r, span)?.e
                        } else {
                            let args = vals.iter().map(|v| v.e).collect();
                            self.push(Expr::Intrinsic(Intrinsic::Fma, args), half.clone(), span)
                        };
                        // `max(0, r)` is `r if r > 0 else 0` (NaN gives 0) and `max(r, 0)` is
                        // `0 if 0 > r else r` (NaN stays NaN): §15.1.
                        let lit = |me: &mut Self, x: f64| {
                            me.push(Expr::Literal(Literal::Float(x)), half.clone(), span)
                        };
                        let e = match op {
                            Fp16Op::Fma => r,
                            Fp16Op::FmaRelu => {
                                let zero = lit(self, 0.0);
                                self.push(Expr::Binary(BinaryOp::Max, r, zero), half.clone(), span)
                            }
                            _ => {
                                let zero = lit(self, 0.0);
                                let one = lit(self, 1.0);
                                let lo = self.push(
                                    Expr::Binary(BinaryOp::Max, zero, r),
                                    half.clone(),
                                    span,
                                );
                                self.push(Expr::Binary(BinaryOp::Min, lo, one), half.clone(), span)
                            }
                        };
                        Some(self.val(e, half, span))
                    }
                }
            }
            Rule::CacheHint => {
                let Builtin::NumbaCacheHint(store) = b else {
                    return self.table_mismatch(b, span);
                };
                let name = called_name(c, "cuda.ldcg");
                if store {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0600,
                            span,
                            format!("`{name}` stores and gives no value"),
                        )
                        .with_note("call it as a statement: `cuda.stcg(array, i, value)`"),
                    );
                    return None;
                }
                let a = self.bind(c, &name, &["array", "i"], 2)?;
                let arr = self.cache_hint_array(&name, a[0]?)?;
                let Type::Array(at) = &arr.ty else {
                    return None;
                };
                let ty = at.dtype.ty();
                let indices = self.indices(&arr, a[1]?)?;
                let e = self.push(
                    Expr::Load {
                        array: arr.e,
                        indices,
                    },
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
            Rule::ConstArrayLike => {
                // A module-level constant array is already in constant memory: the call is
                // the array itself. Anything else has no values at compile time.
                let a = self.bind(c, "cuda.const.array_like", &["ary"], 1)?;
                let arg = a[0]?;
                let host = matches!(arg, ast::Expr::Name(n)
                    if !self.scope.contains_key(n.id.as_str())
                        && !self.assigned.contains(n.id.as_str())
                        && self.s.m.lookup(n.id.as_str()) == Some(super::super::Item::Host));
                if !host {
                    let v = self.eval(arg)?;
                    if let Some(Const::Array(_)) = &v.konst {
                        return Some(v);
                    }
                }
                self.diags.push(
                    Diagnostic::error(
                        Code::E0602,
                        span,
                        "`cuda.const.array_like` needs a module-level constant array",
                    )
                    .with_note("a module-level `NAME = np.array([...], dtype=...)` written out in the source is one (§1.3); pydevice compiles the source without running it, so arrays computed at run time have no values at compile time")
                    .with_note("pass the array as a kernel argument instead (read it only)"),
                );
                None
            }
            Rule::Round => {
                let a = self.bind(c, "round", &["number", "ndigits"], 1)?;
                let v = self.eval(a[0]?)?;
                if let Some(nd) = a[1] {
                    return self.round_digits(v, nd, span);
                }
                let Some(s) = v.ty.as_scalar() else {
                    self.error(
                        Code::E0207,
                        v.span,
                        format!("`round` needs a number, found {}", v.ty),
                    );
                    return None;
                };
                if !s.is_float() {
                    return Some(v); // round(int) is the int
                }
                // Nearest, ties to even (as Python and numba's llrint), then the dialect's int.
                let wide = if s.bits() == 16 { Scalar::Float32 } else { s };
                let x = self.convert(&v, wide)?;
                let r = self.push(
                    Expr::Intrinsic(Intrinsic::Math(MathFn::Rint), vec![x]),
                    Type::Scalar(wide),
                    span,
                );
                let int = Type::Scalar(self.s.defaults.int);
                let e = self.push(Expr::Cast(r), int.clone(), span);
                Some(self.val(e, int, span))
            }
            Rule::NumbaFence => {
                let Builtin::NumbaFence(k) = b else {
                    return self.table_mismatch(b, span);
                };
                self.bind(c, "threadfence", &[], 0)?;
                let scope = match k {
                    0 => Scope::Device,
                    1 => Scope::Block,
                    _ => Scope::System,
                };
                let e = self.push(
                    Expr::Intrinsic(Intrinsic::ThreadFence(MemoryOrder::SeqCst, scope), vec![]),
                    Type::None,
                    span,
                );
                Some(self.val(e, Type::None, span))
            }
            Rule::ToFixedTuple => {
                let a = self.bind(c, "to_fixed_tuple", &["array", "length"], 2)?;
                let arr = self.eval(a[0]?)?;
                let n = self.const_int(a[1]?, "the length of `to_fixed_tuple`")?;
                let dtype = match &arr.ty {
                    Type::Array(at) if at.ndim == 1 => at.dtype.scalar(),
                    _ => None,
                };
                let Some(dtype) = dtype else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0203,
                            arr.span,
                            format!(
                                "`to_fixed_tuple` takes a 1-D array of numbers, found {}",
                                arr.ty
                            ),
                        )
                        .with_note("numba's `to_fixed_tuple(array, n)` reads `array[0:n]`"),
                    );
                    return None;
                };
                if !(0..=64).contains(&n) {
                    self.error(
                        Code::E0203,
                        sp(a[1]?),
                        format!("`to_fixed_tuple` makes tuples of 0 to 64 elements, not {n}"),
                    );
                    return None;
                }
                let ety = Type::Scalar(dtype);
                let i64t = Type::Scalar(Scalar::Int64);
                let mut items = Vec::new();
                for k in 0..n {
                    let idx = self.push(Expr::Literal(Literal::Int(k)), i64t.clone(), span);
                    items.push(self.push(
                        Expr::Load {
                            array: arr.e,
                            indices: vec![crate::ir::Index {
                                value: idx,
                                wrap: false,
                            }],
                        },
                        ety.clone(),
                        span,
                    ));
                }
                let ty = Type::Tuple(vec![ety; items.len()]);
                let e = self.push(Expr::Tuple(items), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            Rule::Selp => {
                let a = self.bind(c, "selp", &["cond", "a", "b"], 3)?;
                let cv = self.eval(a[0]?)?;
                let cond = self.truthy(cv)?;
                let t = self.eval(a[1]?)?;
                let f = self.eval(a[2]?)?;
                let (common, weak) = self.common(&[&t, &f]);
                let (te, fe) = (self.convert(&t, common)?, self.convert(&f, common)?);
                let e = self.push(
                    Expr::Select {
                        cond,
                        then: te,
                        otherwise: fe,
                    },
                    Type::Scalar(common),
                    span,
                );
                let mut r = self.val(e, Type::Scalar(common), span);
                r.weak = weak;
                Some(r)
            }
            Rule::CupyxSharedMemory => {
                // jit.shared_memory(dtype, size, alignment=None); size None: dynamic.
                let a = self.bind(c, "shared_memory", &["dtype", "size", "alignment"], 2)?;
                let dtype = self.dtype_arg(a[0]?)?;
                if let ast::Expr::NoneLiteral(_) = a[1]? {
                    let bytes = Type::Array(crate::types::ArrayType {
                        dtype: Scalar::UInt8.into(),
                        ndim: 1,
                        layout: crate::types::Layout::C,
                        space: crate::types::MemSpace::Shared,
                    });
                    let raw = self.push(Expr::DynamicShared, bytes, span);
                    let ty = Type::Array(crate::types::ArrayType {
                        dtype: dtype.into(),
                        ndim: 1,
                        layout: crate::types::Layout::C,
                        space: crate::types::MemSpace::Shared,
                    });
                    let e = self.push(Expr::Reinterpret(raw), ty.clone(), span);
                    return Some(self.val(e, ty, span));
                }
                let call = ast::ExprCall {
                    node_index: Default::default(),
                    range_start: c.range().start(),
                    func: c.func.clone(),
                    arguments: ast::Arguments {
                        range: c.arguments.range,
                        node_index: Default::default(),
                        args: vec![a[1]?.clone(), a[0]?.clone()].into_boxed_slice(),
                        keywords: a[2]
                            .map(|al| ast::Keyword {
                                range: al.range(),
                                node_index: Default::default(),
                                arg: Some(ast::Identifier::new("align", al.range())),
                                value: al.clone(),
                            })
                            .into_iter()
                            .collect(),
                    },
                };
                let entry = table::entry(Builtin::SharedArray);
                self.device_call(Rule::LocalMemory, entry, Builtin::SharedArray, &call)
            }
            // Rules typed elsewhere (`builtin_call`, `device_call`).
            Rule::NotCallable
            | Rule::Conversion
            | Rule::Cmath
            | Rule::NpReduce
            | Rule::UnrollOnly
            | Rule::LoopOnly
            | Rule::PrintOnly
            | Rule::TargetOnly
            | Rule::AlignType
            | Rule::AtomicField
            | Rule::Len
            | Rule::TupleOf
            | Rule::StringOnly
            | Rule::Abs
            | Rule::Pow
            | Rule::OperatorBinary
            | Rule::OperatorUnary
            | Rule::MinMax
            | Rule::Positions
            | Rule::Nullary
            | Rule::Random
            | Rule::LocalMemory
            | Rule::DynamicShared
            | Rule::SyncPredicate
            | Rule::Fence
            | Rule::AtomicRef
            | Rule::SyncWarp
            | Rule::Vote
            | Rule::Shfl
            | Rule::Match
            | Rule::Bits
            | Rule::Declared
            | Rule::FloatOp
            | Rule::WarpMask
            | Rule::Math
            | Rule::MathPair
            | Rule::Vector
            | Rule::Cg
            | Rule::ClusterBarrier
            | Rule::MapSharedRank
            | Rule::Asm
            | Rule::DeviceLaunch
            | Rule::Tensor
            | Rule::Hopper
            | Rule::TensorInPlace => self.table_mismatch(b, span),
        }
    }
}

impl FnCx<'_, '_> {
    /// The array argument of a cache-hinted load or store: global memory, of numbers.
    fn cache_hint_array(&mut self, name: &str, e: &ast::Expr) -> Option<Val> {
        let arr = self.eval(e)?;
        match &arr.ty {
            Type::Array(at) if at.dtype.scalar().is_some() => Some(arr),
            other => {
                self.error(
                    Code::E0207,
                    arr.span,
                    format!("`{name}` needs an array of numbers, found {other}"),
                );
                None
            }
        }
    }

    /// `cuda.stcg(array, i, value)` (and `stcs`, `stwb`, `stwt`) as a statement: a plain
    /// store of `value` to `array[i]` (the cache hint is not emitted).
    pub(super) fn numba_store_hint(&mut self, c: &ast::ExprCall, out: &mut Vec<Stmt>) {
        let span = sp(c);
        let name = called_name(c, "cuda.stcg");
        let Some(a) = self.bind(c, &name, &["array", "i", "value"], 3) else {
            return;
        };
        let (Some(ae), Some(ie), Some(ve)) = (a[0], a[1], a[2]) else {
            return;
        };
        let Some(arr) = self.cache_hint_array(&name, ae) else {
            return;
        };
        let Type::Array(at) = &arr.ty else {
            return;
        };
        let Some(dtype) = at.dtype.scalar() else {
            return;
        };
        if self.check_writable(&arr, span).is_none() {
            return;
        }
        let Some(indices) = self.indices(&arr, ie) else {
            return;
        };
        let Some(v) = self.eval(ve) else {
            return;
        };
        let Some(value) = self.store_value(&v, dtype) else {
            return;
        };
        out.push(Stmt {
            kind: StmtKind::Store {
                array: arr.e,
                indices,
                value,
            },
            span,
        });
    }

    /// `round(x, ndigits)` on a float `x` (float32 and float64, as numba-cuda's
    /// `round_to_impl`; float16/bfloat16 are computed in float64 too): the result has `x`'s
    /// type. An integer `x` or a non-integer `ndigits` is E0207.
    fn round_digits(&mut self, v: Val, nd: &ast::Expr, span: Span) -> Option<Val> {
        let n = self.eval(nd)?;
        let s = match v.ty.as_scalar() {
            Some(s) if s.is_float() && !s.is_fp8() => s,
            Some(s) if s.is_float() => Scalar::Float32,
            _ => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("`round(x, ndigits)` needs a float `x`, found {}", v.ty),
                );
                return None;
            }
        };
        let s = if v.weak.is_some() {
            self.s.defaults.float
        } else {
            s
        };
        if !matches!(n.ty.as_scalar(), Some(t) if t.kind() == Kind::Int || t.kind() == Kind::UInt) {
            self.error(
                Code::E0207,
                n.span,
                format!("`round`'s `ndigits` must be an integer, found {}", n.ty),
            );
            return None;
        }
        let x = self.convert(&v, Scalar::Float64)?;
        let n = self.convert(&n, Scalar::Int64)?;
        let f64t = Type::Scalar(Scalar::Float64);
        let r = self.push(
            Expr::Intrinsic(Intrinsic::RoundDigits, vec![x, n]),
            f64t.clone(),
            span,
        );
        let r = self.val(r, f64t, span);
        if s == Scalar::Float64 {
            return Some(r);
        }
        let e = self.convert(&r, s)?;
        Some(self.val(e, Type::Scalar(s), span))
    }
}

/// The name a call was written with (`cuda.ldcg`, or an alias), for diagnostics.
fn called_name(c: &ast::ExprCall, fallback: &str) -> String {
    match c.func.as_ref() {
        ast::Expr::Attribute(a) => match a.value.as_ref() {
            ast::Expr::Name(n) => format!("{}.{}", n.id, a.attr.id),
            _ => a.attr.id.to_string(),
        },
        ast::Expr::Name(n) => n.id.to_string(),
        _ => fallback.to_string(),
    }
}
