//! IR-to-IR expansions that every back end shares: operations whose meaning is an
//! algorithm, not one machine instruction, are rewritten here once into simpler IR, so that
//! the PTX lowering, the host lowering and the CPU kernel back end only map operations and
//! no back end states the algorithm again (issue 33): Smith's complex division
//! (`complex`), the `cmath` functions and the other complex operations that are algorithms
//! (`cmath`), Python's `//` and `%` on floats (`divmod`), and `random.rand`/`randn`, Philox
//! and its conversions (`philox`).
//!
//! [`run`] runs after the front end's checks and analyses (the divergence and escape checks
//! see the program as written) and before validation and lowering. An expansion that needs
//! its operands more than once becomes a call of a helper function added to the program
//! ([`Function::expansion`] is set on it): a call evaluates each argument once, in order,
//! as the replaced expression did, and the optimizer inlines it. A helper's floating-point
//! operations round one by one (never contracted into a fused multiply-add), as the
//! back ends' own expansions always did.
//!
//! This module rewrites IR only: it knows nothing of LLVM or Cranelift.

use super::*;

mod cmath;
mod complex;
mod divmod;
mod philox;

/// Expands every operation of `program` that has an IR expansion. Idempotent: a second run
/// finds nothing left to expand.
pub fn run(program: &mut Program) {
    let mut helpers = Helpers::default();
    let handles: Vec<Handle<Function>> = program.functions.iter().map(|(h, _)| h).collect();
    for h in handles {
        let mut k = 0;
        while k < program.functions[h].exprs.len() {
            let e = Handle::new(k);
            k += 1;
            let f = &program.functions[h];
            let found = complex::wants_helper(f, e)
                .or_else(|| cmath::wants_helper(f, e))
                .or_else(|| divmod::wants_helper(f, e))
                .or_else(|| philox::wants_helper(f, e))
                .map(|k| (k, f.exprs.span(e)));
            if let Some((helper, span)) = found {
                let callee = helpers.get(program, helper, span);
                let f = &mut program.functions[h];
                let args = f.exprs[e].operands();
                f.exprs[e] = Expr::Call(callee, args);
            }
        }
    }
}

/// A helper function an expansion calls, one per kind and type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Helper {
    /// Smith's complex division, for a complex scalar type.
    ComplexDiv(Scalar),
    /// A complex operation other than construction and the parts, for a complex type.
    Cmath(ComplexOp, Scalar),
    /// Python's `//` or `%` on a float type.
    FloatDivMod(BinaryOp, Scalar),
    /// `rand` (false) or `randn` (true) of a float type.
    Random(bool, Scalar),
}

/// The helpers added so far, made on first use.
#[derive(Default)]
struct Helpers {
    made: Vec<(Helper, Handle<Function>)>,
}

impl Helpers {
    fn get(&mut self, program: &mut Program, helper: Helper, span: Span) -> Handle<Function> {
        if let Some((_, h)) = self.made.iter().find(|(k, _)| *k == helper) {
            return *h;
        }
        let f = match helper {
            Helper::ComplexDiv(s) => complex::division(s, span),
            Helper::Cmath(op, s) => cmath::function(op, s, span),
            Helper::FloatDivMod(op, s) => divmod::float_divmod(op, s, span),
            Helper::Random(normal, s) => philox::function(normal, s, span),
        };
        let h = program.functions.append(f, span);
        self.made.push((helper, h));
        h
    }
}

/// A small builder for helper functions: expressions get their type and the helper's span.
struct Builder {
    f: Function,
}

impl Builder {
    /// A device function `name` with parameters `params` returning `ret`.
    fn new(name: &str, params: &[(&str, Type)], ret: Type, span: Span) -> Builder {
        let mut locals = Arena::default();
        for (n, t) in params {
            locals.append(
                Local {
                    name: (*n).to_string(),
                    ty: t.clone(),
                },
                span,
            );
        }
        Builder {
            f: Function {
                name: name.to_string(),
                symbol: format!("_pyd_{name}"),
                kind: FunctionKind::Device,
                interop: false,
                external: false,
                expansion: true,
                locals,
                params: params.len(),
                ret,
                exprs: Arena::default(),
                types: Vec::new(),
                body: Vec::new(),
                span,
            },
        }
    }

    fn expr(&mut self, e: Expr, ty: Type) -> Handle<Expr> {
        self.f.types.push(ty);
        self.f.exprs.append(e, self.f.span)
    }

    /// A read of parameter or local `l`.
    fn read(&mut self, l: Handle<Local>) -> Handle<Expr> {
        let ty = self.f.locals[l].ty.clone();
        self.expr(Expr::Local(l), ty)
    }

    /// `name = value` into a new local of `value`'s type; returns the local.
    fn let_(&mut self, name: &str, value: Handle<Expr>) -> Handle<Local> {
        let ty = self.f.types[value.index()].clone();
        let l = self.f.locals.append(
            Local {
                name: name.to_string(),
                ty,
            },
            self.f.span,
        );
        self.f.body.push(Stmt {
            kind: StmtKind::Assign(l, value),
            span: self.f.span,
        });
        l
    }

    /// `l = value` for an existing local.
    fn set(&mut self, l: Handle<Local>, value: Handle<Expr>) {
        self.f.body.push(Stmt {
            kind: StmtKind::Assign(l, value),
            span: self.f.span,
        });
    }

    fn binary(&mut self, op: BinaryOp, a: Handle<Expr>, b: Handle<Expr>) -> Handle<Expr> {
        let ty = if op.is_comparison() {
            Type::Scalar(Scalar::Bool)
        } else {
            self.f.types[a.index()].clone()
        };
        self.expr(Expr::Binary(op, a, b), ty)
    }

    /// `op(read(a), read(b))`.
    fn binary_l(&mut self, op: BinaryOp, a: Handle<Local>, b: Handle<Local>) -> Handle<Expr> {
        let (a, b) = (self.read(a), self.read(b));
        self.binary(op, a, b)
    }

    /// `then if cond else otherwise`, all three locals.
    fn select_l(
        &mut self,
        cond: Handle<Local>,
        then: Handle<Local>,
        otherwise: Handle<Local>,
    ) -> Handle<Expr> {
        let ty = self.f.locals[then].ty.clone();
        let (cond, then, otherwise) = (self.read(cond), self.read(then), self.read(otherwise));
        self.expr(
            Expr::Select {
                cond,
                then,
                otherwise,
            },
            ty,
        )
    }

    fn ret(mut self, value: Handle<Expr>) -> Function {
        self.f.body.push(Stmt {
            kind: StmtKind::Return(Some(value)),
            span: self.f.span,
        });
        self.f
    }
}

/// A value in a helper: a local, or a constant.
#[derive(Copy, Clone, Debug)]
enum V {
    /// A local.
    L(Handle<Local>),
    /// A constant of the computing float type.
    K(f64),
    /// An integer constant of an integer type.
    I(u64, Scalar),
}

/// A pair of values: a complex number as its parts.
type P = (V, V);

/// A builder of straight-line code over [`Builder`]: each operation is assigned to a new local
/// (an IR expression is used once, so a value used twice is a local read twice), and
/// constants are written inline. The expansions of `cmath` and Philox are written with it.
struct Calc {
    /// The helper under construction.
    b: Builder,
    /// The float type constants have and the code computes in.
    t: Scalar,
}

impl Calc {
    /// The type of `v`.
    fn ty(&self, v: V) -> Type {
        match v {
            V::L(l) => self.b.f.locals[l].ty.clone(),
            V::K(_) => Type::Scalar(self.t),
            V::I(_, s) => Type::Scalar(s),
        }
    }

    /// An expression reading `v`.
    fn get(&mut self, v: V) -> Handle<Expr> {
        match v {
            V::L(l) => self.b.read(l),
            V::K(x) => self
                .b
                .expr(Expr::Literal(Literal::Float(x)), Type::Scalar(self.t)),
            V::I(x, s) => self
                .b
                .expr(Expr::Literal(Literal::Int(i128::from(x))), Type::Scalar(s)),
        }
    }

    /// `e` assigned to a new local.
    fn bind(&mut self, e: Handle<Expr>) -> V {
        let n = self.b.f.locals.len();
        V::L(self.b.let_(&format!("t{n}"), e))
    }

    /// `a op b`.
    fn bin(&mut self, op: BinaryOp, a: V, b: V) -> V {
        let ty = if op.is_comparison() {
            Type::Scalar(Scalar::Bool)
        } else {
            self.ty(a)
        };
        let (a, b) = (self.get(a), self.get(b));
        let e = self.b.expr(Expr::Binary(op, a, b), ty);
        self.bind(e)
    }

    fn add(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::Add, a, b)
    }
    fn sub(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::Sub, a, b)
    }
    fn mul(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::Mul, a, b)
    }
    fn div(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::Div, a, b)
    }
    fn and(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::BitAnd, a, b)
    }
    fn or(&mut self, a: V, b: V) -> V {
        self.bin(BinaryOp::BitOr, a, b)
    }

    /// `-a`.
    fn neg(&mut self, a: V) -> V {
        let ty = self.ty(a);
        let a = self.get(a);
        let e = self.b.expr(Expr::Unary(UnaryOp::Neg, a), ty);
        self.bind(e)
    }

    /// `math.f(args...)`: a float of the first argument's type, or a `bool` for the tests.
    fn math(&mut self, f: MathFn, args: &[V]) -> V {
        let ty = if matches!(f, MathFn::Isnan | MathFn::Isinf | MathFn::Isfinite) {
            Type::Scalar(Scalar::Bool)
        } else {
            self.ty(args[0])
        };
        let args = args.iter().map(|a| self.get(*a)).collect();
        let e = self.b.expr(Expr::Intrinsic(Intrinsic::Math(f), args), ty);
        self.bind(e)
    }
    fn fabs(&mut self, a: V) -> V {
        self.math(MathFn::Fabs, &[a])
    }
    fn copysign(&mut self, a: V, b: V) -> V {
        self.math(MathFn::Copysign, &[a, b])
    }

    /// `a if c else b`.
    fn sel(&mut self, c: V, a: V, b: V) -> V {
        let ty = self.ty(a);
        let (cond, then, otherwise) = (self.get(c), self.get(a), self.get(b));
        let e = self.b.expr(
            Expr::Select {
                cond,
                then,
                otherwise,
            },
            ty,
        );
        self.bind(e)
    }

    /// [`Calc::sel`] on both parts.
    fn sel2(&mut self, c: V, a: P, b: P) -> P {
        (self.sel(c, a.0, b.0), self.sel(c, a.1, b.1))
    }

    /// `a` converted to type `to` (as [`Expr::Cast`]: integers wrap, floats round).
    fn cast(&mut self, a: V, to: Scalar) -> V {
        let a = self.get(a);
        let e = self.b.expr(Expr::Cast(a), Type::Scalar(to));
        self.bind(e)
    }

    /// The bits of `a` as a number of type `to`, of the same size.
    fn bitcast(&mut self, a: V, to: Scalar) -> V {
        let a = self.get(a);
        let e = self.b.expr(
            Expr::Intrinsic(Intrinsic::BitCast, vec![a]),
            Type::Scalar(to),
        );
        self.bind(e)
    }

    /// The parts of the complex local `z`.
    fn parts(&mut self, z: Handle<Local>, part: Scalar) -> P {
        let mut get = |op| {
            let r = self.b.read(z);
            let e = self.b.expr(
                Expr::Intrinsic(Intrinsic::Complex(op), vec![r]),
                Type::Scalar(part),
            );
            self.bind(e)
        };
        (get(ComplexOp::Real), get(ComplexOp::Imag))
    }

    /// Returns the complex number `(re, im)` of type `s`.
    fn ret_complex(mut self, (re, im): P, s: Scalar) -> Function {
        let (re, im) = (self.get(re), self.get(im));
        let q = self.b.expr(
            Expr::Intrinsic(Intrinsic::Complex(ComplexOp::New), vec![re, im]),
            Type::Scalar(s),
        );
        self.b.ret(q)
    }

    /// Returns `v`.
    fn ret(mut self, v: V) -> Function {
        let e = self.get(v);
        self.b.ret(e)
    }
}

#[cfg(test)]
mod tests {
    use crate::types::signature::parse_signature;
    use crate::{CompileOptions, Module};

    const SRC: &str = "from cuda import device\n\n\n@device.kernel(DECO)\ndef k(z, w, x, y, out, h):\n    i = device.tid(1)\n    z[i] = z[i] / w[i]\n    out[i] = x[i] // y[i] + x[i] % y[i]\n    h[i] = h[i] % h[0]\n";
    const SIG: &str =
        "complex64[::1], complex64[::1], float64[::1], float64[::1], float64[::1], float16[::1]";

    #[test]
    fn expansion_is_idempotent_and_valid() {
        let m = Module::parse("k.py", &SRC.replace("(DECO)", "")).expect("parse");
        let (args, _) = parse_signature(SIG).expect("sig");
        let spec = m.specialize("k", &args).expect("specialize");
        let mut p = spec.program().clone();
        let before = p.to_string();
        // One helper each: complex64 division, float64 // and %, float16 %.
        assert_eq!(p.functions.len(), 5, "{before}");
        assert!(p.functions.iter().skip(1).all(|(_, f)| f.expansion));
        super::run(&mut p);
        assert_eq!(p.to_string(), before, "a second run changed the program");
        crate::ir::validate(&p).expect("valid");
    }

    #[test]
    #[cfg(feature = "ptx")]
    fn helpers_compile_with_debug_information_and_line_info() {
        for deco in ["(debug=True)", "(lineinfo=True)", "(fastmath=True)"] {
            let m = Module::parse("k.py", &SRC.replace("(DECO)", deco)).expect("parse");
            let (args, _) = parse_signature(SIG).expect("sig");
            let k = m
                .compile("k", &args, &CompileOptions::default())
                .unwrap_or_else(|e| panic!("{deco}: {e}"));
            assert!(k.ptx.contains(".entry k"), "{deco}");
        }
    }
}
