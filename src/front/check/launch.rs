//! Launching a kernel from device code (CUDA's dynamic parallelism, CDP2), a pydevice
//! extension of the specification (§18.3): `launch(kernel, *args, grid, block, shared=0)`,
//! the spec's host-side `launch` without `stream`, called in a kernel or device function.
//!
//! The child is a `@kernel` of the same module, instantiated for the argument types as for
//! a host launch and compiled into the same PTX; the call is lowered to the device
//! runtime's CDP2 entry points, as nvcc lowers it (`lower::ptx`), and the runtime
//! links `libcudadevrt` when it loads the module.

use super::*;
use crate::diag::Code;
use crate::types::MemSpace;

impl FnCx<'_, '_> {
    /// `launch(kernel, *args, grid=..., block=..., shared=0)`: the `cudaError_t` (int32) of
    /// the launch, 0 when it was queued.
    pub(super) fn device_launch(&mut self, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let Some((first, rest)) = c.arguments.args.split_first() else {
            self.error(Code::E0107, span, "`launch` needs the kernel to launch");
            return None;
        };
        let m = self.s.m;
        let idx = match self.callee_item(first) {
            Some(Item::Function(i)) if m.functions[i].kind == Some(FunctionKind::Kernel) => i,
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0745,
                        sp(first),
                        "`launch` in device code needs a `@kernel` of this module",
                    )
                    .with_note("launch a kernel defined with `@device.kernel` in the same file"),
                );
                return None;
            }
        };
        let decl = &m.functions[idx];
        let (mut grid, mut block, mut shared) = (None, None, None);
        for k in c.arguments.keywords.iter() {
            let slot = match k.arg.as_ref().map(|a| a.id.as_str()) {
                Some("grid") => &mut grid,
                Some("block") => &mut block,
                Some("shared") => &mut shared,
                other => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0107,
                            sp(k),
                            match other {
                                Some("stream") => "`launch` in device code takes no `stream`: the child runs on the launching block's default stream".to_string(),
                                Some(n) => format!("`launch` has no parameter `{n}`"),
                                None => "`**` arguments are not accepted by `launch`".to_string(),
                            },
                        )
                        .suggesting(other.unwrap_or(""), ["grid", "block", "shared"])
                        .with_note("device-side launch: `launch(kernel, *args, grid=..., block=..., shared=0)`"),
                    );
                    return None;
                }
            };
            *slot = Some(&k.value);
        }
        let (Some(grid_e), Some(block_e)) = (grid, block) else {
            self.error(
                Code::E0107,
                span,
                format!(
                    "`launch` is missing its argument `{}`",
                    if grid.is_none() { "grid" } else { "block" }
                ),
            );
            return None;
        };
        let grid = self.dim3_arg(grid_e, "grid")?;
        let block = self.dim3_arg(block_e, "block")?;
        let u32t = Type::Scalar(Scalar::UInt32);
        let shared = match shared {
            None => self.push(Expr::Literal(Literal::Int(0)), u32t, span),
            Some(e) => {
                let v = self.eval(e)?;
                match v.ty.as_scalar() {
                    Some(s) if s.is_integer() => self.convert(&v, Scalar::UInt32)?,
                    _ => {
                        self.error(
                            Code::E0207,
                            v.span,
                            format!("`shared` is a count of bytes, an integer, not {}", v.ty),
                        );
                        return None;
                    }
                }
            }
        };
        let def = m.def(decl);
        let nparams = def.parameters.args.len() + def.parameters.posonlyargs.len();
        if rest.len() != nparams {
            self.diags.push(
                Diagnostic::error(
                    Code::E0107,
                    span,
                    format!(
                        "`{}` takes {nparams} argument{}, but {} were given",
                        decl.name,
                        if nparams == 1 { "" } else { "s" },
                        rest.len()
                    ),
                )
                .with_secondary(decl.name_span, "defined here"),
            );
            return None;
        }
        let mut args = Vec::new();
        for e in rest {
            let v = self.eval(e)?;
            let v = self.concrete(v)?;
            if let Type::Array(at) = &v.ty
                && at.space != MemSpace::Global
            {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0746,
                        v.span,
                        format!("a kernel launched from device code cannot take {}", v.ty),
                    )
                    .with_label("not in global memory")
                    .with_note("a child grid cannot see its parent's shared, local or cluster memory: pass global arrays"),
                );
                return None;
            }
            if v.ty == Type::None {
                self.error(Code::E0207, v.span, "`None` cannot be passed to a kernel");
                return None;
            }
            args.push(v);
        }
        let types: Vec<Type> = args.iter().map(|v| v.ty.clone()).collect();
        let statics: Statics = vec![None; nparams];
        let key = (idx, types.clone(), statics_key(&statics));
        let result = self.s.instantiate(idx, types, statics, span);
        self.callees.push(key);
        let kernel = match result {
            Ok(h) => h,
            Err(Some(d)) => {
                self.diags.push(*d);
                return None;
            }
            Err(None) => return None,
        };
        let ty = Type::Scalar(Scalar::Int32);
        let e = self.push(
            Expr::Launch(Box::new(crate::ir::DeviceLaunch {
                kernel,
                grid,
                block,
                shared,
                args: args.iter().map(|v| v.e).collect(),
            })),
            ty.clone(),
            span,
        );
        Some(self.val(e, ty, span))
    }

    /// A `Dim3Like` launch shape (an integer, a tuple of 1 to 3 integers, or a `Dim3`) as a
    /// `uint32x3` with missing extents 1.
    fn dim3_arg(&mut self, e: &ast::Expr, what: &str) -> Option<Handle<Expr>> {
        let v = self.eval(e)?;
        let span = v.span;
        let dim3 = Type::Vector {
            elem: Scalar::UInt32,
            len: 3,
        };
        if v.ty == dim3 {
            return Some(v.e);
        }
        let parts: Vec<Val> = match &v.ty {
            Type::Scalar(s) if s.is_integer() => vec![v.clone()],
            Type::Tuple(ts)
                if (1..=3).contains(&ts.len())
                    && ts
                        .iter()
                        .all(|t| t.as_scalar().is_some_and(|s| s.is_integer())) =>
            {
                ts.clone()
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), span);
                        let x = self.push(Expr::Extract(base, i as u32), t.clone(), span);
                        self.val(x, t, span)
                    })
                    .collect()
            }
            other => {
                self.error(
                    Code::E0207,
                    span,
                    format!("`{what}` must be an integer, a tuple of 1 to 3 integers or a Dim3, not {other}"),
                );
                return None;
            }
        };
        let mut es = Vec::new();
        for p in &parts {
            es.push(self.convert(p, Scalar::UInt32)?);
        }
        while es.len() < 3 {
            es.push(self.push(
                Expr::Literal(Literal::Int(1)),
                Type::Scalar(Scalar::UInt32),
                span,
            ));
        }
        Some(self.push(Expr::Tuple(es), dim3, span))
    }
}
