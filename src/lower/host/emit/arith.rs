//! Operators on numbers, mirroring `lower::ptx::emit`: truthiness, casts (saturating float →
//! int), unary and binary operators with Python's semantics (floor division and modulo,
//! shifts by the width or more, integer powers).

use super::*;

impl FnCx<'_, '_> {
    pub(super) fn truthy(&mut self, v: Value, s: Scalar) -> Value {
        match s {
            Scalar::Bool => v,
            s if s.is_float() => {
                let z = self.zero(reg_type(s));
                self.b.ins().fcmp(FloatCC::NotEqual, v, z)
            }
            _ => self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0),
        }
    }

    pub(super) fn cast(&mut self, v: Value, from: Scalar, to: Scalar) -> R<Value> {
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

    pub(super) fn unary(&mut self, op: UnaryOp, s: Scalar, v: Value) -> R<Value> {
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

    pub(super) fn binary(&mut self, op: BinaryOp, s: Scalar, x: Value, y: Value) -> R<Value> {
        if s.is_float() {
            self.float_binary(op, s, x, y)
        } else {
            self.int_binary(op, s, x, y)
        }
    }

    pub(super) fn float_binary(&mut self, op: BinaryOp, s: Scalar, x: Value, y: Value) -> R<Value> {
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
            FloorDiv | Mod => {
                return Err(err(
                    "float `//` or `%` reached the back end (ir::expand lowers it)",
                ));
            }
            BitAnd | BitOr | BitXor | Shl | Shr => return Err(err("bitwise op on floats")),
        })
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
}
