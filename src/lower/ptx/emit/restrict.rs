//! `@kernel(restrict=True)` (docs/semantics.md §12): what CUDA C++ says with `__restrict__`
//! on every pointer parameter, and with `const __restrict__` on those only read.
//!
//! For each global-memory array parameter of such a kernel that the body never reassigns,
//! every element load and store indexed straight through the parameter (`a[i]`, not through
//! a view or a copy of it) carries LLVM scoped no-alias metadata: `!alias.scope` names the
//! parameter's scope, `!noalias` every other parameter's, so the optimizer may keep a value
//! read from one array in a register across stores to another, as nvcc does. A parameter the
//! kernel provably only reads ([`read_only_params`]) has its loads marked `!invariant.load`,
//! which NVPTX lowers to `ld.global.nc` (the read-only data cache), as nvcc does for a
//! `const __restrict__` pointer. Without the option nothing is marked: another argument may
//! be the same memory, and then neither fact holds.
//!
//! This module decides nothing about the program beyond that; it must not change what a
//! program computes when the promise holds.

use super::*;
use inkwell::values::MetadataValue;

/// The no-alias metadata of one array parameter of a `restrict=True` kernel.
pub(super) struct ParamAlias<'ctx> {
    /// `!{scope}`: the parameter's own scope, for `!alias.scope`.
    scope: MetadataValue<'ctx>,
    /// Every other parameter's scope, for `!noalias`.
    others: MetadataValue<'ctx>,
    /// Whether the kernel only reads through it (its loads get `!invariant.load`).
    read_only: bool,
}

/// Per local of a kernel (indexed by the local's index), the no-alias metadata of its array
/// parameters; empty for kernels without `restrict=True` and for device functions.
pub(super) type Restrict<'ctx> = Vec<Option<ParamAlias<'ctx>>>;

/// Which parameters of `f` the body only reads, by local index: array parameters never
/// reassigned, whose every use is an element load (`a[i, j]`) or a property of the array
/// (`a.shape`, `len(a)`). A parameter passed to a function, viewed, sliced, copied to
/// another local, atomically updated or stored to is not read-only.
pub(crate) fn read_only_params(f: &Function) -> Vec<bool> {
    let assigned = assigned_locals(f);
    let mut out: Vec<bool> = f
        .locals
        .iter()
        .enumerate()
        .map(|(i, (_, l))| i < f.params && !assigned[i] && l.ty.as_array().is_some())
        .collect();
    // The expressions that read a parameter, and whether each is used only as a load's array
    // or a property's operand.
    let param_of = |h: Handle<Expr>| match &f.exprs[h] {
        Expr::Local(l) if l.index() < f.params => Some(l.index()),
        _ => None,
    };
    for (_, e) in f.exprs.iter() {
        let allowed: &[Handle<Expr>] = match e {
            Expr::Load { array, .. } | Expr::ArrayProp(array, _) => std::slice::from_ref(array),
            _ => &[],
        };
        for op in e.operands() {
            if let Some(p) = param_of(op)
                && !allowed.contains(&op)
            {
                out[p] = false;
            }
        }
        // A load's indices are operands too: an array there is not an element load's array.
        if let Expr::Load { indices, .. } = e {
            for ix in indices {
                if let Some(p) = param_of(ix.value) {
                    out[p] = false;
                }
            }
        }
    }
    fn walk(block: &[Stmt], f: &Function, out: &mut [bool]) {
        let mut escape = |h: Handle<Expr>| {
            if let Expr::Local(l) = &f.exprs[h]
                && l.index() < f.params
            {
                out[l.index()] = false;
            }
        };
        let mut nested = Vec::new();
        for s in block {
            match &s.kind {
                StmtKind::Eval(e) | StmtKind::Assign(_, e) | StmtKind::Return(Some(e)) => {
                    escape(*e)
                }
                StmtKind::Store {
                    array,
                    indices,
                    value,
                } => {
                    escape(*array);
                    escape(*value);
                    indices.iter().for_each(|i| escape(i.value));
                }
                StmtKind::StoreRef { target, value } => {
                    escape(*target);
                    escape(*value);
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    escape(*cond);
                    nested.push(then);
                    nested.push(otherwise);
                }
                StmtKind::Loop {
                    cond,
                    body,
                    continuing,
                    ..
                } => {
                    escape(*cond);
                    nested.push(body);
                    nested.push(continuing);
                }
                StmtKind::Assert { cond, .. } => escape(*cond),
                StmtKind::Print(pieces) => {
                    for p in pieces {
                        if let crate::ir::PrintPiece::Value { value, .. } = p {
                            escape(*value);
                        }
                    }
                }
                StmtKind::Return(None)
                | StmtKind::Raise { .. }
                | StmtKind::Break
                | StmtKind::Continue => {}
            }
        }
        for b in nested {
            walk(b, f, out);
        }
    }
    walk(&f.body, f, &mut out);
    out
}

impl<'ctx> Emitter<'_, 'ctx> {
    /// The no-alias metadata of `f`'s global array parameters when `f` is a kernel compiled
    /// with `restrict=True` (else empty).
    pub(super) fn restrict_for(&self, f: &Function) -> Restrict<'ctx> {
        if f.kind != FunctionKind::Kernel || !self.program.options.restrict {
            return Vec::new();
        }
        let assigned = assigned_locals(f);
        let read_only = read_only_params(f);
        let md = |m: MetadataValue<'ctx>| BasicMetadataValueEnum::MetadataValue(m);
        let domain = self.ctx.metadata_node(&[md(self
            .ctx
            .metadata_string(&format!("pydevice.restrict {}", f.symbol)))]);
        // One scope per global array parameter never reassigned.
        let scopes: Vec<Option<MetadataValue<'ctx>>> = f
            .locals
            .iter()
            .enumerate()
            .map(|(i, (_, l))| {
                let global = l.ty.as_array().is_some_and(|a| a.space == MemSpace::Global);
                (i < f.params && !assigned[i] && global).then(|| {
                    let name = format!("pydevice.restrict {} {}", f.symbol, l.name);
                    self.ctx
                        .metadata_node(&[md(self.ctx.metadata_string(&name)), md(domain)])
                })
            })
            .collect();
        scopes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let scope = (*s)?;
                let others: Vec<_> = scopes
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .filter_map(|(_, o)| o.map(md))
                    .collect();
                Some(ParamAlias {
                    scope: self.ctx.metadata_node(&[md(scope)]),
                    others: self.ctx.metadata_node(&others),
                    read_only: read_only[i],
                })
            })
            .collect()
    }
}

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// Marks a load (`load`) or store of an element of `array` with what `restrict=True`
    /// lets the kernel promise about it (nothing when `array` is not a parameter with
    /// no-alias metadata).
    pub(super) fn mark_restrict(
        &self,
        inst: InstructionValue<'ctx>,
        array: Handle<Expr>,
        load: bool,
    ) -> R<()> {
        let Expr::Local(l) = &self.f.exprs[array] else {
            return Ok(());
        };
        let Some(Some(p)) = self.restrict.get(l.index()) else {
            return Ok(());
        };
        let kind = |name: &str| self.e.ctx.get_kind_id(name);
        inst.set_metadata(p.scope, kind("alias.scope"))
            .map_err(|e| err(e.to_string()))?;
        inst.set_metadata(p.others, kind("noalias"))
            .map_err(|e| err(e.to_string()))?;
        if load && p.read_only {
            inst.set_metadata(self.e.ctx.metadata_node(&[]), kind("invariant.load"))
                .map_err(|e| err(e.to_string()))?;
        }
        Ok(())
    }
}
