//! Complex numbers on the host, mirroring `lower::ptx::emit::numbers`: a complex value is
//! two leaves (its real and imaginary parts, of the component type), arithmetic is the
//! same formulas (textbook `*`, `==`/`!=` part by part; division is `ir::expand`'s), and the `cmath`
//! functions the same textbook formulas over the C library's real functions that the
//! device computes over libdevice's, or CPython's algorithms in the runtime
//! (`host::cmath`), as the device computes them (docs/semantics.md §16.4 bounds the
//! difference).

use super::*;
use crate::ir::ComplexOp;

/// Real and imaginary parts.
type Parts = (Value, Value);

impl FnCx<'_, '_> {
    /// The parts of a complex expression.
    pub(super) fn parts(&mut self, e: Handle<Expr>) -> R<Parts> {
        let v = self.expr(e)?;
        match v.as_slice() {
            [re, im] => Ok((*re, *im)),
            _ => Err(err("a complex value without two parts")),
        }
    }

    fn m(&mut self, f: MathFn, part: Scalar, args: &[Value]) -> R<Value> {
        self.math(f, part, args)
    }

    /// Lowers `h` if it computes on complex numbers (`None` otherwise).
    pub(super) fn complex_expr(&mut self, h: Handle<Expr>, ty: &Type) -> R<Option<Vec<Value>>> {
        let is_c = |t: &Type| t.as_scalar().is_some_and(Scalar::is_complex);
        let f = self.f;
        Ok(Some(match &f.exprs[h] {
            Expr::Literal(lit) if is_c(ty) => {
                let part = ty
                    .as_scalar()
                    .map(Scalar::component)
                    .unwrap_or(Scalar::Float64);
                let (re, im) = match *lit {
                    Literal::Complex(re, im) => (re, im),
                    Literal::Float(x) => (x, 0.0),
                    Literal::Int(i) => (i as f64, 0.0),
                    Literal::Bool(b) => (f64::from(u8::from(b)), 0.0),
                };
                vec![self.fconst(part, re), self.fconst(part, im)]
            }
            Expr::Unary(op, a) if is_c(f.ty(*a)) => {
                let part = self.scalar_of(*a)?.component();
                let (re, im) = self.parts(*a)?;
                match op {
                    UnaryOp::Neg => vec![self.b.ins().fneg(re), self.b.ins().fneg(im)],
                    UnaryOp::Abs => vec![self.m(MathFn::Hypot, part, &[re, im])?],
                    UnaryOp::Not | UnaryOp::Invert => {
                        return Err(err("bitwise op on a complex number"));
                    }
                }
            }
            Expr::Binary(op, a, b) if is_c(f.ty(*a)) => {
                let (x, y) = (self.parts(*a)?, self.parts(*b)?);
                self.complex_binary(*op, x, y)?
            }
            Expr::Cast(a) if is_c(f.ty(*a)) || is_c(ty) => {
                let from = self.scalar_of(*a)?;
                let to = ty.as_scalar().ok_or_else(|| err("cast to a non-scalar"))?;
                if from.is_complex() {
                    let (re, im) = self.parts(*a)?;
                    if to == Scalar::Bool {
                        vec![self.complex_truthy((re, im))]
                    } else if to.is_complex() {
                        let (pf, pt) = (from.component(), to.component());
                        vec![self.cast(re, pf, pt)?, self.cast(im, pf, pt)?]
                    } else {
                        return Err(err(format!("{from} to {to} reached the host back end")));
                    }
                } else {
                    // A real number becomes the real part, with a zero imaginary part.
                    let x = self.scalar(*a)?;
                    let part = to.component();
                    let re = self.cast(x, from, part)?;
                    let zero = self.zero(reg_type(part));
                    vec![re, zero]
                }
            }
            Expr::Intrinsic(Intrinsic::Complex(op), args) => {
                let part = match args.first().map(|a| f.ty(*a).as_scalar()) {
                    Some(Some(s)) => s.component(),
                    _ => return Err(err("complex operation without operands")),
                };
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.expr(*a)?);
                }
                self.complex_op(*op, part, &vals)?
            }
            Expr::And(a, b) | Expr::Or(a, b) if is_c(ty) => {
                // Python's `x and y` / `x or y`: `x` itself, or `y`, by `x`'s truth.
                let is_and = matches!(f.exprs[h], Expr::And(..));
                let part = ty
                    .as_scalar()
                    .map(Scalar::component)
                    .unwrap_or(Scalar::Float64);
                let x = self.parts(*a)?;
                let truth = self.complex_truthy(x);
                let rhs = self.b.create_block();
                let merge = self.b.create_block();
                self.b.append_block_param(merge, reg_type(part));
                self.b.append_block_param(merge, reg_type(part));
                let xs = [BlockArg::from(x.0), BlockArg::from(x.1)];
                if is_and {
                    self.b.ins().brif(truth, rhs, &[], merge, &xs);
                } else {
                    self.b.ins().brif(truth, merge, &xs, rhs, &[]);
                }
                self.b.switch_to_block(rhs);
                let y = self.parts(*b)?;
                self.b
                    .ins()
                    .jump(merge, &[BlockArg::from(y.0), BlockArg::from(y.1)]);
                self.b.switch_to_block(merge);
                self.b.block_params(merge).to_vec()
            }
            _ => return Ok(None),
        }))
    }

    /// Whether a complex value is nonzero.
    fn complex_truthy(&mut self, (re, im): Parts) -> Value {
        let t = self.b.func.dfg.value_type(re);
        let z = self.zero(t);
        let r = self.b.ins().fcmp(FloatCC::NotEqual, re, z);
        let i = self.b.ins().fcmp(FloatCC::NotEqual, im, z);
        self.b.ins().bor(r, i)
    }

    /// `+ - *`, `==` and `!=` as the device computes them (`/` was expanded into a call of
    /// Smith's algorithm before lowering, `ir::expand`).
    fn complex_binary(&mut self, op: BinaryOp, (a, b): Parts, (c, d): Parts) -> R<Vec<Value>> {
        Ok(match op {
            BinaryOp::Add | BinaryOp::AddNoWrap => {
                vec![self.b.ins().fadd(a, c), self.b.ins().fadd(b, d)]
            }
            BinaryOp::Sub => vec![self.b.ins().fsub(a, c), self.b.ins().fsub(b, d)],
            BinaryOp::Mul => {
                let ac = self.b.ins().fmul(a, c);
                let bd = self.b.ins().fmul(b, d);
                let ad = self.b.ins().fmul(a, d);
                let bc = self.b.ins().fmul(b, c);
                vec![self.b.ins().fsub(ac, bd), self.b.ins().fadd(ad, bc)]
            }
            BinaryOp::Eq => {
                let r = self.b.ins().fcmp(FloatCC::Equal, a, c);
                let i = self.b.ins().fcmp(FloatCC::Equal, b, d);
                vec![self.b.ins().band(r, i)]
            }
            BinaryOp::Ne => {
                let r = self.b.ins().fcmp(FloatCC::NotEqual, a, c);
                let i = self.b.ins().fcmp(FloatCC::NotEqual, b, d);
                vec![self.b.ins().bor(r, i)]
            }
            other => {
                return Err(err(format!(
                    "`{}` on complex numbers reached the host back end",
                    other.symbol()
                )));
            }
        })
    }

    /// Construction, parts and the `cmath` functions, by the device's formulas
    /// (`lower::ptx::emit::numbers::complex_op`). `part` is the operands' component type.
    fn complex_op(&mut self, op: ComplexOp, part: Scalar, vals: &[Vec<Value>]) -> R<Vec<Value>> {
        let one = |v: &Vec<Value>| v.first().copied().ok_or_else(|| err("complex operand"));
        let first = vals
            .first()
            .ok_or_else(|| err("complex operation without operands"))?;
        if matches!(op, ComplexOp::New | ComplexOp::Rect) {
            let x = one(first)?;
            let y = one(vals.get(1).ok_or_else(|| err("two parts"))?)?;
            if op == ComplexOp::New {
                return Ok(vec![x, y]);
            }
            let (re, im) = self.rect(part, x, y)?;
            return Ok(vec![re, im]);
        }
        let (x, y) = match first.as_slice() {
            [x, y] => (*x, *y),
            _ => return Err(err("a complex operand without two parts")),
        };
        Ok(match op {
            ComplexOp::New | ComplexOp::Rect => return Err(err("handled above")),
            ComplexOp::Pow => {
                let (c, d) = match vals.get(1).map(Vec::as_slice) {
                    Some([c, d]) => (*c, *d),
                    _ => return Err(err("complex power needs two complex operands")),
                };
                let (re, im) = self.complex_pow(part, (x, y), (c, d))?;
                vec![re, im]
            }
            ComplexOp::Real => vec![x],
            ComplexOp::Imag => vec![y],
            ComplexOp::Conj => vec![x, self.b.ins().fneg(y)],
            ComplexOp::Abs => vec![self.m(MathFn::Hypot, part, &[x, y])?],
            ComplexOp::Phase => vec![self.m(MathFn::Atan2, part, &[y, x])?],
            ComplexOp::IsFinite | ComplexOp::IsNan | ComplexOp::IsInf => {
                let t = self.b.func.dfg.value_type(x);
                let inf = if t == ct::F32 {
                    self.b.ins().f32const(f32::INFINITY)
                } else {
                    self.b.ins().f64const(f64::INFINITY)
                };
                let mut tests = Vec::new();
                for p in [x, y] {
                    tests.push(match op {
                        ComplexOp::IsNan => self.b.ins().fcmp(FloatCC::Unordered, p, p),
                        ComplexOp::IsFinite => {
                            let a = self.b.ins().fabs(p);
                            self.b.ins().fcmp(FloatCC::LessThan, a, inf)
                        }
                        _ => {
                            let a = self.b.ins().fabs(p);
                            self.b.ins().fcmp(FloatCC::Equal, a, inf)
                        }
                    });
                }
                if op == ComplexOp::IsFinite {
                    vec![self.b.ins().band(tests[0], tests[1])]
                } else {
                    vec![self.b.ins().bor(tests[0], tests[1])]
                }
            }
            ComplexOp::Exp => {
                let m = self.m(MathFn::Exp, part, &[x])?;
                let c = self.m(MathFn::Cos, part, &[y])?;
                let s = self.m(MathFn::Sin, part, &[y])?;
                vec![self.b.ins().fmul(m, c), self.b.ins().fmul(m, s)]
            }
            ComplexOp::Log => {
                let m = self.m(MathFn::Hypot, part, &[x, y])?;
                let re = self.m(MathFn::Log, part, &[m])?;
                let im = self.m(MathFn::Atan2, part, &[y, x])?;
                vec![re, im]
            }
            ComplexOp::Sin | ComplexOp::Cos => {
                let sx = self.m(MathFn::Sin, part, &[x])?;
                let cx = self.m(MathFn::Cos, part, &[x])?;
                let shy = self.m(MathFn::Sinh, part, &[y])?;
                let chy = self.m(MathFn::Cosh, part, &[y])?;
                if op == ComplexOp::Sin {
                    vec![self.b.ins().fmul(sx, chy), self.b.ins().fmul(cx, shy)]
                } else {
                    let im = self.b.ins().fmul(sx, shy);
                    vec![self.b.ins().fmul(cx, chy), self.b.ins().fneg(im)]
                }
            }
            ComplexOp::Sqrt => {
                let t_ = self.b.func.dfg.value_type(x);
                let m = self.m(MathFn::Hypot, part, &[x, y])?;
                let ax = self.b.ins().fabs(x);
                let ay = self.b.ins().fabs(y);
                let half = if t_ == ct::F32 {
                    self.b.ins().f32const(0.5)
                } else {
                    self.b.ins().f64const(0.5)
                };
                let s = self.b.ins().fadd(ax, m);
                let s = self.b.ins().fmul(s, half);
                let t = self.b.ins().sqrt(s);
                let two_t = self.b.ins().fadd(t, t);
                let q = self.b.ins().fdiv(y, two_t);
                let aq = self.b.ins().fdiv(ay, two_t);
                let st = self.b.ins().fcopysign(t, y);
                let zero = self.zero(t_);
                let nonneg = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, zero);
                let re = self.b.ins().select(nonneg, t, aq);
                let im = self.b.ins().select(nonneg, q, st);
                // sqrt(0 + 0i): the answer is 0 with y's sign.
                let z = self.b.ins().fcmp(FloatCC::Equal, t, zero);
                vec![self.b.ins().select(z, t, re), self.b.ins().select(z, y, im)]
            }
            ComplexOp::Tan
            | ComplexOp::Asin
            | ComplexOp::Acos
            | ComplexOp::Atan
            | ComplexOp::Sinh
            | ComplexOp::Cosh
            | ComplexOp::Tanh
            | ComplexOp::Asinh
            | ComplexOp::Acosh
            | ComplexOp::Atanh => {
                // CPython's algorithms in double, in the runtime (`host::cmath`), as the
                // device computes them in double; complex64 results are rounded once.
                let c = crate::lower::host::cmath::code(op)
                    .ok_or_else(|| err("a cmath function without a runtime code"))?;
                let wide = part == Scalar::Float32;
                let (xd, yd) = if wide {
                    (
                        self.b.ins().fpromote(ct::F64, x),
                        self.b.ins().fpromote(ct::F64, y),
                    )
                } else {
                    (x, y)
                };
                let code = self.b.ins().iconst(ct::I32, i64::from(c));
                let sig = [ct::I32, ct::F64, ct::F64];
                let re = self.call_helper("__pyd_cmath_re", &sig, ct::F64, &[code, xd, yd])?;
                let im = self.call_helper("__pyd_cmath_im", &sig, ct::F64, &[code, xd, yd])?;
                if wide {
                    vec![
                        self.b.ins().fdemote(ct::F32, re),
                        self.b.ins().fdemote(ct::F32, im),
                    ]
                } else {
                    vec![re, im]
                }
            }
        })
    }

    /// `cmath.rect(r, phi)` with numba-cuda's special values (see the device's `rect`).
    fn rect(&mut self, part: Scalar, r: Value, phi: Value) -> R<Parts> {
        let t = self.b.func.dfg.value_type(r);
        let c = self.m(MathFn::Cos, part, &[phi])?;
        let s = self.m(MathFn::Sin, part, &[phi])?;
        let abs_r = self.b.ins().fabs(r);
        let abs_phi = self.b.ins().fabs(phi);
        let inf = if t == ct::F32 {
            self.b.ins().f32const(f32::INFINITY)
        } else {
            self.b.ins().f64const(f64::INFINITY)
        };
        let zero = self.zero(t);
        let r_inf = self.b.ins().fcmp(FloatCC::Equal, abs_r, inf);
        let r_zero = self.b.ins().fcmp(FloatCC::Equal, r, zero);
        let phi_finite = self.b.ins().fcmp(FloatCC::LessThan, abs_phi, inf);
        let part_of = |cx: &mut Self, v: Value| {
            let is_zero = cx.b.ins().fcmp(FloatCC::Equal, v, zero);
            let keep_zero = cx.b.ins().band(is_zero, r_inf);
            let div = cx.b.ins().fdiv(v, r);
            let mul = cx.b.ins().fmul(v, r);
            cx.b.ins().select(keep_zero, div, mul)
        };
        let re = part_of(self, c);
        let im = part_of(self, s);
        let re_special = self.b.ins().select(r_inf, r, re);
        let re_special = self.b.ins().select(r_zero, abs_r, re_special);
        let im_special = self.b.ins().select(r_inf, phi, im);
        let im_special = self.b.ins().select(r_zero, zero, im_special);
        let re = self.b.ins().select(phi_finite, re, re_special);
        let im = self.b.ins().select(phi_finite, im, im_special);
        Ok((re, im))
    }

    /// `z ** w` as CPython's `c_pow` (see the device's `complex_pow`).
    fn complex_pow(&mut self, part: Scalar, (a, b): Parts, (c, d): Parts) -> R<Parts> {
        let t = self.b.func.dfg.value_type(a);
        let zero = self.zero(t);
        let one = if t == ct::F32 {
            self.b.ins().f32const(1.0)
        } else {
            self.b.ins().f64const(1.0)
        };
        let vabs = self.m(MathFn::Hypot, part, &[a, b])?;
        let len = self.m(MathFn::Pow, part, &[vabs, c])?;
        let at = self.m(MathFn::Atan2, part, &[b, a])?;
        let atd = self.b.ins().fmul(at, d);
        let shrink = self.m(MathFn::Exp, part, &[atd])?;
        let logr = self.m(MathFn::Log, part, &[vabs])?;
        let phase = self.b.ins().fmul(at, c);
        let turn = self.b.ins().fmul(d, logr);
        let d_nonzero = self.b.ins().fcmp(FloatCC::NotEqual, d, zero);
        let len_d = self.b.ins().fdiv(len, shrink);
        let len = self.b.ins().select(d_nonzero, len_d, len);
        let phase_d = self.b.ins().fadd(phase, turn);
        let phase = self.b.ins().select(d_nonzero, phase_d, phase);
        let cos = self.m(MathFn::Cos, part, &[phase])?;
        let sin = self.m(MathFn::Sin, part, &[phase])?;
        let re = self.b.ins().fmul(len, cos);
        let im = self.b.ins().fmul(len, sin);
        let cz = self.b.ins().fcmp(FloatCC::Equal, c, zero);
        let dz = self.b.ins().fcmp(FloatCC::Equal, d, zero);
        let w_zero = self.b.ins().band(cz, dz);
        let az = self.b.ins().fcmp(FloatCC::Equal, a, zero);
        let bz = self.b.ins().fcmp(FloatCC::Equal, b, zero);
        let z_zero = self.b.ins().band(az, bz);
        let re = self.b.ins().select(z_zero, zero, re);
        let im = self.b.ins().select(z_zero, zero, im);
        let re = self.b.ins().select(w_zero, one, re);
        let im = self.b.ins().select(w_zero, zero, im);
        Ok((re, im))
    }
}
