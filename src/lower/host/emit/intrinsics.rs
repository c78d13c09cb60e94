//! The intrinsics a host function can run, and the math functions (Cranelift instructions
//! where there is one, the C library's `libm` otherwise).

use super::*;

impl FnCx<'_, '_> {
    pub(super) fn intrinsic(
        &mut self,
        op: Intrinsic,
        scalars: &[Scalar],
        vals: &[Value],
        ty: &Type,
    ) -> R<Value> {
        if let Intrinsic::RandSeed | Intrinsic::RandThread | Intrinsic::RandCall = op {
            // The OS thread's stream (`crate::random::host_stream`), in the runtime.
            let name = match op {
                Intrinsic::RandSeed => "__pyd_rand_seed",
                Intrinsic::RandThread => "__pyd_rand_thread",
                _ => "__pyd_rand_call",
            };
            return self.call_helper(name, &[], ct::I64, &[]);
        }
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
            // `bfloat16` lives in an `f32` register (its bits on top): shift them out or in.
            Intrinsic::BitCast => {
                let from = *scalars.first().ok_or_else(|| err("bitcast operand"))?;
                let to = ty.as_scalar().ok_or_else(|| err("bitcast type"))?;
                match (from, to) {
                    (Scalar::BFloat16, Scalar::Int16 | Scalar::UInt16) => {
                        let w = self.b.ins().bitcast(ct::I32, flags(), x);
                        let w = self.b.ins().ushr_imm_u(w, 16);
                        self.b.ins().ireduce(ct::I16, w)
                    }
                    (Scalar::Int16 | Scalar::UInt16, Scalar::BFloat16) => {
                        let w = self.b.ins().uextend(ct::I32, x);
                        let w = self.b.ins().ishl_imm_u(w, 16);
                        self.b.ins().bitcast(ct::F32, flags(), w)
                    }
                    (f, t)
                        if !is_half(f)
                            && !is_half(t)
                            && reg_type(f).bits() == reg_type(t).bits() =>
                    {
                        if reg_type(f) == reg_type(t) {
                            x
                        } else {
                            self.b.ins().bitcast(reg_type(t), flags(), x)
                        }
                    }
                    (f, t) => return Err(err(format!("bitcast of {f} to {t}"))),
                }
            }
            Intrinsic::Ffs => {
                let r = self.b.ins().ctz(x);
                let r = to_i32(self, r);
                let r1 = self.b.ins().iadd_imm_s(r, 1);
                let z = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
                let zero = self.b.ins().iconst(ct::I32, 0);
                self.b.ins().select(z, zero, r1)
            }
            // `hi:lo` as one 64-bit word, shifted by `shift & 31`.
            Intrinsic::FunnelShiftL | Intrinsic::FunnelShiftR => {
                let [lo, hi, k] = vals[..] else {
                    return Err(err("a funnel shift takes three operands"));
                };
                let lo = self.b.ins().uextend(ct::I64, lo);
                let hi = self.b.ins().uextend(ct::I64, hi);
                let hi = self.b.ins().ishl_imm_u(hi, 32);
                let both = self.b.ins().bor(hi, lo);
                let k = self.b.ins().band_imm_u(k, 31);
                let k = self.b.ins().uextend(ct::I64, k);
                let r = if op == Intrinsic::FunnelShiftL {
                    let r = self.b.ins().ishl(both, k);
                    self.b.ins().ushr_imm_u(r, 32)
                } else {
                    self.b.ins().ushr(both, k)
                };
                self.b.ins().ireduce(ct::I32, r)
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

    pub(super) fn math(&mut self, f: MathFn, s: Scalar, vals: &[Value]) -> R<Value> {
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
            // `1 / sqrt(x)`: both correctly rounded, so within one ulp of the exact value
            // (the device's `rsqrtf` is within two).
            MathFn::Rsqrt => {
                let one = if t == ct::F64 {
                    self.b.ins().f64const(1.0)
                } else {
                    self.b.ins().f32const(1.0)
                };
                let r = self.b.ins().sqrt(x);
                self.b.ins().fdiv(one, r)
            }
            MathFn::Degrees | MathFn::Radians => {
                // One multiplication by the constant rounded to the type, as the device does.
                let k = if f == MathFn::Degrees {
                    180.0 / std::f64::consts::PI
                } else {
                    std::f64::consts::PI / 180.0
                };
                let c = if t == ct::F64 {
                    self.b.ins().f64const(k)
                } else {
                    self.b.ins().f32const(k as f32)
                };
                self.b.ins().fmul(x, c)
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
