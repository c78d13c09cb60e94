//! Complex numbers on the host, mirroring `lower::ptx::emit::numbers`: a complex value is
//! two leaves (its real and imaginary parts, of the component type), arithmetic is the
//! same formulas (textbook `*`, `==`/`!=` part by part). Division, the `cmath` functions and
//! the other complex operations that are algorithms are `ir::expand`'s, over the C
//! library's real functions where the device has libdevice's (docs/semantics.md §16.4
//! bounds the difference).

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
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.expr(*a)?);
                }
                self.complex_op(*op, &vals)?
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

    /// Construction and the two parts: the operations the back end maps. Every other complex
    /// operation (the `cmath` functions, `abs`, `phase`, `rect`, `**`, ...) was expanded into
    /// IR before lowering (`ir::expand::cmath`).
    fn complex_op(&mut self, op: ComplexOp, vals: &[Vec<Value>]) -> R<Vec<Value>> {
        let first = vals
            .first()
            .ok_or_else(|| err("complex operation without operands"))?;
        match (op, first.as_slice()) {
            (ComplexOp::New, [x]) => {
                let y = match vals.get(1).map(Vec::as_slice) {
                    Some([y]) => *y,
                    _ => return Err(err("complex construction needs two parts")),
                };
                Ok(vec![*x, y])
            }
            (ComplexOp::Real, [x, _]) => Ok(vec![*x]),
            (ComplexOp::Imag, [_, y]) => Ok(vec![*y]),
            (other, _) => Err(err(format!(
                "{other:?} reached the host back end unexpanded (ir::expand::cmath)"
            ))),
        }
    }
}
