//! Cooperative groups (`cuda.device.cg`, a pydevice extension; docs/semantics.md §17): the
//! group constructors, `tiled_partition`, `reduce` and `sync`, and the methods of group
//! values. A group's kind is part of its type (`Type::Group`), so every operation is
//! checked against the kind at compile time (E0720–E0722) and lowers to the instructions of
//! that kind.

use super::*;
use crate::diag::Code;
use crate::front::builtins::CgFn;
use crate::front::builtins::table;
use crate::ir::{CgOp, CgReduce, Shfl, Vote};
use crate::types::GroupKind;

impl FnCx<'_, '_> {
    fn cg_op(&mut self, op: CgOp, args: Vec<Handle<Expr>>, ty: Type, span: Span) -> Val {
        if op == CgOp::Sync(GroupKind::Grid) {
            self.s.grid_sync = true;
        }
        let e = self.push(Expr::Intrinsic(Intrinsic::Cg(op), args), ty.clone(), span);
        let mut v = self.val(e, ty, span);
        v.nonneg = matches!(
            op,
            CgOp::ThreadRank(_)
                | CgOp::NumThreads(_)
                | CgOp::MetaRank(_)
                | CgOp::MetaSize(_)
                | CgOp::BlockRank
                | CgOp::NumBlocks
        );
        v
    }

    /// A group argument: its kind and value.
    fn group_arg(&mut self, e: &ast::Expr, what: &str) -> Option<(GroupKind, Val)> {
        let v = self.eval(e)?;
        match v.ty {
            Type::Group(k) => Some((k, v)),
            ref other => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0721,
                        v.span,
                        format!("`{what}` takes a group, found {other}"),
                    )
                    .with_note("make one with `cg.this_thread_block()`, `cg.tiled_partition(...)` or `cg.coalesced_threads()`"),
                );
                None
            }
        }
    }

    /// A call of a function of `cg`.
    pub(super) fn cg_call(&mut self, b: Builtin, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let name = super::calls::builtin_name(b);
        let entry = table::entry(b);
        let Builtin::Cg(f) = b else {
            return self.table_mismatch(b, span);
        };
        let a = self.bind(c, &name, entry.params(), entry.required())?;
        match f {
            CgFn::ThisThreadBlock | CgFn::ThisGrid | CgFn::CoalescedThreads => {
                let kind = match f {
                    CgFn::ThisThreadBlock => GroupKind::Block,
                    CgFn::ThisGrid => GroupKind::Grid,
                    _ => GroupKind::Coalesced,
                };
                Some(self.cg_op(CgOp::Make(kind), vec![], Type::Group(kind), span))
            }
            CgFn::TiledPartition => {
                let (parent, _) = self.group_arg(a[0]?, &name)?;
                let size_e = a[1]?;
                let n = self.const_int(size_e, "size")?;
                let ok_n = [1, 2, 4, 8, 16, 32].contains(&n);
                let parent_ok = match parent {
                    GroupKind::Block => true,
                    GroupKind::Tile(m) => ok_n && n <= i128::from(m),
                    _ => false,
                };
                if !ok_n {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0720,
                            sp(size_e),
                            format!("a tile has 1, 2, 4, 8, 16 or 32 threads, not {n}"),
                        )
                        .with_note(
                            "tiles lie inside one warp: their size is a power of two up to 32",
                        ),
                    );
                    return None;
                }
                if !parent_ok {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0720,
                            sp(a[0]?),
                            format!("`tiled_partition` of a {} into tiles of {n}", parent.name()),
                        )
                        .with_note(
                            "partition a thread block, or a tile into tiles no larger than it",
                        ),
                    );
                    return None;
                }
                let kind = GroupKind::Tile(n as u8);
                Some(self.cg_op(CgOp::Make(kind), vec![], Type::Group(kind), span))
            }
            CgFn::BarrierArrive | CgFn::BarrierWait => {
                let what = if f == CgFn::BarrierArrive {
                    "barrier_arrive"
                } else {
                    "barrier_wait"
                };
                let (kind, g) = self.group_arg(a[0]?, &name)?;
                if kind != GroupKind::Block {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0721,
                            sp(a[0]?),
                            format!("a {} has no split barrier (`{what}`)", kind.name()),
                        )
                        .with_note("`barrier_arrive`/`barrier_wait` take `cg.this_thread_block()`"),
                    );
                    return None;
                }
                self.s.split_barrier = true;
                if f == CgFn::BarrierArrive {
                    let t = Type::Scalar(Scalar::UInt64);
                    return Some(self.cg_op(CgOp::BarrierArrive, vec![g.e], t, span));
                }
                let tok = self.eval(a[1]?)?;
                if tok.ty != Type::Scalar(Scalar::UInt64) || tok.konst.is_some() {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0721,
                            tok.span,
                            format!("`barrier_wait` takes the token `barrier_arrive` returned, found {}", tok.ty),
                        )
                        .with_note("write `t = cg.barrier_arrive(block)` … `cg.barrier_wait(block, t)`"),
                    );
                    return None;
                }
                Some(self.cg_op(CgOp::BarrierWait, vec![g.e, tok.e], Type::None, span))
            }
            CgFn::AsyncCommit => Some(self.cg_op(CgOp::AsyncCommit, vec![], Type::None, span)),
            CgFn::AsyncWaitAll => Some(self.cg_op(CgOp::AsyncWaitAll, vec![], Type::None, span)),
            CgFn::AsyncWait => {
                let n = match a[0] {
                    Some(e) => self.const_int(e, "n")?,
                    None => 0,
                };
                if !(0..=7).contains(&n) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0723,
                            a[0].map(sp).unwrap_or(span),
                            format!("`memcpy_async_wait(n)` waits for all but the last 0 to 7 committed groups, not {n}"),
                        )
                        .with_note("`cp.async.wait_group` takes an immediate from 0 to 7"),
                    );
                    return None;
                }
                Some(self.cg_op(CgOp::AsyncWait(n as u8), vec![], Type::None, span))
            }
            CgFn::MemcpyAsync => self.memcpy_async(&a, span),
            CgFn::GroupMemcpy => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0723,
                        span,
                        "`jit.cg.memcpy_async(...)` gives no value: call it as a statement",
                    )
                    .with_note("then `jit.cg.wait(group)` before reading the destination"),
                );
                None
            }
            CgFn::GroupWait | CgFn::GroupWaitPrior => {
                let (kind, g) = self.group_arg(a[0]?, &name)?;
                if kind != GroupKind::Block {
                    self.not_a_block(kind, &format!("jit.cg.{name}"), sp(a[0]?));
                    return None;
                }
                if f == CgFn::GroupWaitPrior {
                    let step = self.const_int(a[1]?, "step")?;
                    if step < 0 {
                        self.diags.push(Diagnostic::error(
                            Code::E0723,
                            sp(a[1]?),
                            format!("`wait_prior` waits for all but the last `step` copies; {step} is negative"),
                        ));
                        return None;
                    }
                }
                // The group's copies are synchronous (`group_memcpy`): waiting is the group's
                // barrier, after which every thread's stores are visible to the group.
                Some(self.cg_op(CgOp::Sync(kind), vec![g.e], Type::None, span))
            }
            CgFn::Sync => {
                let (kind, g) = self.group_arg(a[0]?, &name)?;
                Some(self.cg_op(CgOp::Sync(kind), vec![g.e], Type::None, span))
            }
            CgFn::Reduce => {
                let (kind, g) = self.group_arg(a[0]?, &name)?;
                if !matches!(kind, GroupKind::Tile(_) | GroupKind::Coalesced) {
                    self.wrong_group(kind, "reduce", sp(a[0]?));
                    return None;
                }
                let op_e = a[2]?;
                let red = match op_e {
                    ast::Expr::StringLiteral(s) => CgReduce::from_name(s.value.to_str()),
                    _ => None,
                };
                let Some(red) = red else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0722,
                            sp(op_e),
                            "`cg.reduce` takes the operation as 'add', 'min' or 'max'",
                        )
                        .with_note("write `cg.reduce(tile, x, 'add')`"),
                    );
                    return None;
                };
                let v = self.eval(a[1]?)?;
                let v = self.concrete(v)?;
                let s = match v.ty {
                    Type::Scalar(s)
                        if s.is_integer() || s == Scalar::Float32 || s == Scalar::Float64 =>
                    {
                        s
                    }
                    ref other => {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0722,
                                v.span,
                                format!(
                                    "`cg.reduce` reduces integers, float32 or float64, not {other}"
                                ),
                            )
                            .with_note("convert the value first, e.g. `float32(x)`"),
                        );
                        return None;
                    }
                };
                // Narrow integers are reduced as 32-bit ones of the same signedness; the
                // result wraps back, as the narrow type's arithmetic would.
                let wide = match s {
                    s if s.is_integer() && s.bits() < 32 => {
                        if s.is_signed() {
                            Scalar::Int32
                        } else {
                            Scalar::UInt32
                        }
                    }
                    s => s,
                };
                let x = self.convert(&v, wide)?;
                let r = self.cg_op(
                    CgOp::Reduce(kind, red),
                    vec![g.e, x],
                    Type::Scalar(wide),
                    span,
                );
                if wide == s {
                    return Some(r);
                }
                let e = self.push(Expr::Cast(r.e), Type::Scalar(s), span);
                Some(self.val(e, Type::Scalar(s), span))
            }
        }
    }

    /// `cg.memcpy_async(dst, dst_index, src, src_index, count=1)`: `count` elements from a
    /// contiguous 1-D global array to a 1-D shared array, 4, 8 or 16 bytes in all.
    fn memcpy_async(&mut self, a: &[Option<&ast::Expr>], span: Span) -> Option<Val> {
        use crate::types::{Layout, MemSpace};
        let count = match a[4] {
            Some(e) => self.const_int(e, "count")?,
            None => 1,
        };
        let dst = self.eval(a[0]?)?;
        let src = self.eval(a[2]?)?;
        let bad = |cx: &mut Self, s: Span, m: String, note: &str| {
            cx.diags
                .push(Diagnostic::error(Code::E0723, s, m).with_note(note.to_string()));
            None
        };
        let (dt, st) = match (&dst.ty, &src.ty) {
            (Type::Array(d), Type::Array(s)) => (d.clone(), s.clone()),
            (Type::Array(_), other) => {
                return bad(
                    self,
                    src.span,
                    format!("`memcpy_async` copies from an array, not {other}"),
                    "pass a global array and an index",
                );
            }
            (other, _) => {
                return bad(
                    self,
                    dst.span,
                    format!("`memcpy_async` copies to an array, not {other}"),
                    "pass a shared array and an index",
                );
            }
        };
        if dt.space != MemSpace::Shared || dt.ndim != 1 || dt.layout != Layout::C {
            return bad(
                self,
                dst.span,
                format!(
                    "`memcpy_async` copies to a 1-D shared array, not {}",
                    dst.ty
                ),
                "make one with `device.shared_array(n, dtype, align=16)`",
            );
        }
        if st.space != MemSpace::Global || st.ndim != 1 || st.layout != Layout::C {
            return bad(
                self,
                src.span,
                format!(
                    "`memcpy_async` copies from a contiguous 1-D global array, not {}",
                    src.ty
                ),
                "declare the parameter contiguous (`float32[::1]`)",
            );
        }
        if dt.dtype != st.dtype {
            return bad(
                self,
                src.span,
                format!(
                    "`memcpy_async` copies between arrays of one dtype, not from {} to {}",
                    st.dtype, dt.dtype
                ),
                "cp.async copies bytes: convert after the copy",
            );
        }
        let item = crate::abi::layout_of(&dt.dtype.ty()).size;
        let bytes = i128::from(item as u32) * count;
        if count < 1 || ![4, 8, 16].contains(&bytes) {
            return bad(
                self,
                a[4].map(sp).unwrap_or(span),
                format!(
                    "`memcpy_async` copies 4, 8 or 16 bytes; {count} element(s) of {} are {bytes}",
                    dt.dtype
                ),
                "choose `count` so that count × itemsize is 4, 8 or 16",
            );
        }
        let mut offsets = Vec::new();
        for e in [a[1]?, a[3]?] {
            let v = self.eval(e)?;
            if let (Some(k), Some(_)) = (&v.konst, v.ty.as_scalar())
                && let Some(i) = k.as_int()
                && (i < 0 || i % count != 0)
            {
                return bad(
                    self,
                    v.span,
                    format!(
                        "index {i} is not a multiple of {count}: the copy of {bytes} bytes would not be aligned to {bytes}"
                    ),
                    "`memcpy_async` copies to and from addresses aligned to the copy's size",
                );
            }
            let Some(s) =
                v.ty.as_scalar()
                    .filter(|s| s.is_integer() || *s == Scalar::Bool)
            else {
                return bad(
                    self,
                    v.span,
                    format!("an index must be an integer, not {}", v.ty),
                    "index with an integer",
                );
            };
            let _ = s;
            let i = self.convert(&v, Scalar::Int64)?;
            let k = self.push(
                Expr::Literal(Literal::Int(i128::from(item as u32))),
                Type::Scalar(Scalar::Int64),
                v.span,
            );
            offsets.push(self.push(
                Expr::Binary(BinaryOp::Mul, i, k),
                Type::Scalar(Scalar::Int64),
                v.span,
            ));
        }
        Some(self.cg_op(
            CgOp::MemcpyAsync(bytes as u8),
            vec![dst.e, offsets[0], src.e, offsets[1]],
            Type::None,
            span,
        ))
    }

    /// cupyx's `jit.cg.memcpy_async(group, dst, dst_idx, src, src_idx, size, aligned_size=None)`
    /// as a statement: the thread block's threads copy the `size // itemsize` elements
    /// `src[src_idx + k]` to `dst[dst_idx + k]`, thread `thread_rank` taking every
    /// `num_threads`-th `k` (docs/semantics.md §15.4). The copy is synchronous: each thread's
    /// part is done when the call returns, and `jit.cg.wait(group)` (a barrier) makes every
    /// part visible, which is all CUDA's `cg::memcpy_async` promises after `cg::wait`.
    pub(super) fn group_memcpy(&mut self, c: &ast::ExprCall, out: &mut Block) {
        let b = Builtin::Cg(CgFn::GroupMemcpy);
        let entry = table::entry(b);
        let _ = self.group_memcpy_inner(c, entry.params(), entry.required(), out);
    }

    fn group_memcpy_inner(
        &mut self,
        c: &ast::ExprCall,
        params: &[&'static str],
        required: usize,
        out: &mut Block,
    ) -> Option<()> {
        let span = sp(c);
        let what = "jit.cg.memcpy_async";
        let a = self.bind(c, what, params, required)?;
        let (kind, g) = self.group_arg(a[0]?, what)?;
        if kind != GroupKind::Block {
            self.not_a_block(kind, what, sp(a[0]?));
            return None;
        }
        if let Some(e) = a[6] {
            // A promise about alignment, which a plain copy does not need; it must still be
            // a constant, as CuPy requires.
            if !matches!(e, ast::Expr::NoneLiteral(_)) {
                self.const_int(e, "aligned_size")?;
            }
        }
        let dst = self.eval(a[1]?)?;
        let src = self.eval(a[3]?)?;
        let mut arrays = Vec::new();
        for v in [&dst, &src] {
            match &v.ty {
                Type::Array(at) if at.ndim == 1 => arrays.push(at.clone()),
                other => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0723,
                            v.span,
                            format!("`{what}` copies between 1-D arrays, not {other}"),
                        )
                        .with_note("pass a 1-D array (a `jit.shared_memory` array or a 1-D argument) and an index"),
                    );
                    return None;
                }
            }
        }
        if arrays[0].dtype != arrays[1].dtype {
            self.diags.push(
                Diagnostic::error(
                    Code::E0723,
                    src.span,
                    format!(
                        "`{what}` copies between arrays of one dtype, not from {} to {}",
                        arrays[1].dtype, arrays[0].dtype
                    ),
                )
                .with_note("copy into an array of the source's dtype, then convert"),
            );
            return None;
        }
        let item = i128::from(crate::abi::layout_of(&arrays[0].dtype.ty()).size as u32);
        let i64t = Type::Scalar(Scalar::Int64);
        let bool_t = Type::Scalar(Scalar::Bool);
        let mut ints = Vec::new();
        for (e, name) in [(a[2]?, "dst_idx"), (a[4]?, "src_idx"), (a[5]?, "size")] {
            let v = self.eval(e)?;
            if !v
                .ty
                .as_scalar()
                .is_some_and(|s| s.is_integer() || s == Scalar::Bool)
            {
                self.diags.push(Diagnostic::error(
                    Code::E0207,
                    v.span,
                    format!("`{name}` must be an integer, not {}", v.ty),
                ));
                return None;
            }
            if name == "size"
                && let Some(n) = v.konst.as_ref().and_then(|k| k.as_int())
                && (n < 0 || n % item != 0)
            {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0723,
                        v.span,
                        format!(
                            "`{what}` copies whole elements: {n} bytes is not a multiple of the {item} bytes of a {}",
                            arrays[0].dtype
                        ),
                    )
                    .with_note("give `size` in bytes, a multiple of the element size"),
                );
                return None;
            }
            let h = self.convert(&v, Scalar::Int64)?;
            let t = self.new_temp(i64t.clone(), v.span);
            out.push(Stmt {
                kind: StmtKind::Assign(t, h),
                span,
            });
            ints.push(t);
        }
        let (d0, s0, size) = (ints[0], ints[1], ints[2]);
        let mut temps = Vec::new();
        for v in [&dst, &src] {
            let t = self.new_temp(v.ty.clone(), v.span);
            out.push(Stmt {
                kind: StmtKind::Assign(t, v.e),
                span,
            });
            temps.push((t, v.ty.clone()));
        }
        // n = size // itemsize; k = thread_rank; step = num_threads
        let n = self.new_temp(i64t.clone(), span);
        let sz = self.push(Expr::Local(size), i64t.clone(), span);
        let it = self.push(Expr::Literal(Literal::Int(item)), i64t.clone(), span);
        let q = self.push(Expr::Binary(BinaryOp::FloorDiv, sz, it), i64t.clone(), span);
        out.push(Stmt {
            kind: StmtKind::Assign(n, q),
            span,
        });
        let g2 = self.push(self.exprs[g.e].clone(), g.ty.clone(), span);
        let rank = self.cg_op(
            CgOp::ThreadRank(kind),
            vec![g.e],
            Type::Scalar(Scalar::Int32),
            span,
        );
        let rank = self.push(Expr::Cast(rank.e), i64t.clone(), span);
        let k = self.new_temp(i64t.clone(), span);
        out.push(Stmt {
            kind: StmtKind::Assign(k, rank),
            span,
        });
        let step = self.cg_op(
            CgOp::NumThreads(kind),
            vec![g2],
            Type::Scalar(Scalar::Int32),
            span,
        );
        let step = self.push(Expr::Cast(step.e), i64t.clone(), span);
        let st = self.new_temp(i64t.clone(), span);
        out.push(Stmt {
            kind: StmtKind::Assign(st, step),
            span,
        });
        let kc = self.push(Expr::Local(k), i64t.clone(), span);
        let nc = self.push(Expr::Local(n), i64t.clone(), span);
        let cond = self.push(Expr::Binary(BinaryOp::Lt, kc, nc), bool_t, span);
        let index = |cx: &mut Self, base: Handle<Local>| {
            let b = cx.push(Expr::Local(base), i64t.clone(), span);
            let kk = cx.push(Expr::Local(k), i64t.clone(), span);
            Index {
                value: cx.push(Expr::Binary(BinaryOp::Add, b, kk), i64t.clone(), span),
                wrap: false,
            }
        };
        let si = index(self, s0);
        let sa = self.push(Expr::Local(temps[1].0), temps[1].1.clone(), span);
        let load = self.push(
            Expr::Load {
                array: sa,
                indices: vec![si],
            },
            arrays[1].dtype.ty(),
            span,
        );
        let di = index(self, d0);
        let da = self.push(Expr::Local(temps[0].0), temps[0].1.clone(), span);
        let kc = self.push(Expr::Local(k), i64t.clone(), span);
        let sc = self.push(Expr::Local(st), i64t.clone(), span);
        let inc = self.push(Expr::Binary(BinaryOp::AddNoWrap, kc, sc), i64t, span);
        out.push(Stmt {
            kind: StmtKind::Loop {
                cond,
                body: vec![Stmt {
                    kind: StmtKind::Store {
                        array: da,
                        indices: vec![di],
                        value: load,
                    },
                    span,
                }],
                continuing: vec![Stmt {
                    kind: StmtKind::Assign(k, inc),
                    span,
                }],
                form: LoopForm::Plain,
            },
            span,
        });
        Some(())
    }

    /// E0721: cupyx's group copy and waits take a thread block.
    fn not_a_block(&mut self, kind: GroupKind, what: &str, span: Span) {
        self.diags.push(
            Diagnostic::error(
                Code::E0721,
                span,
                format!("`{what}` takes a thread block, not a {}", kind.name()),
            )
            .with_note("as CUDA's `cg::memcpy_async`, `cg::wait` and `cg::wait_prior`: pass `jit.cg.this_thread_block()`"),
        );
    }

    fn wrong_group(&mut self, kind: GroupKind, method: &str, span: Span) {
        let note = match kind {
            GroupKind::Block | GroupKind::Grid => {
                "warp collectives need a tile (`cg.tiled_partition(block, 32)`) or `cg.coalesced_threads()`"
            }
            GroupKind::Coalesced => {
                "a coalesced group's members need not be consecutive lanes: use `shfl` with a rank"
            }
            GroupKind::Tile(_) => "see docs/semantics.md §17 for each group's methods",
        };
        self.diags.push(
            Diagnostic::error(
                Code::E0721,
                span,
                format!("a {} has no `{method}`", kind.name()),
            )
            .with_note(note),
        );
    }

    /// A method of a group value (`g.thread_rank()`, `tile.shfl_down(x, 1)`).
    pub(super) fn group_method(
        &mut self,
        kind: GroupKind,
        g: Val,
        method: &str,
        c: &ast::ExprCall,
    ) -> Option<Val> {
        let span = sp(c);
        let i32t = Type::Scalar(Scalar::Int32);
        let wide = |k: GroupKind| {
            if k == GroupKind::Grid {
                Type::Scalar(Scalar::Int64)
            } else {
                Type::Scalar(Scalar::Int32)
            }
        };
        let warp = matches!(kind, GroupKind::Tile(_) | GroupKind::Coalesced);
        let dim3 = |cx: &mut Self, b: Builtin| {
            let es: Vec<_> = [Axis::X, Axis::Y, Axis::Z]
                .into_iter()
                .map(|a| {
                    cx.push(
                        Expr::Intrinsic(super::dim3_intrinsic(b, a), vec![]),
                        Type::Scalar(Scalar::UInt32),
                        span,
                    )
                })
                .collect();
            let ty = Type::Vector {
                elem: Scalar::UInt32,
                len: 3,
            };
            let e = cx.push(Expr::Tuple(es), ty.clone(), span);
            cx.val(e, ty, span)
        };
        match method {
            "thread_rank" | "num_threads" | "size" | "sync" => {
                self.bind(c, method, &[], 0)?;
                Some(match method {
                    "thread_rank" => {
                        self.cg_op(CgOp::ThreadRank(kind), vec![g.e], wide(kind), span)
                    }
                    "sync" => self.cg_op(CgOp::Sync(kind), vec![g.e], Type::None, span),
                    _ => self.cg_op(CgOp::NumThreads(kind), vec![g.e], wide(kind), span),
                })
            }
            "meta_group_rank" | "meta_group_size" if warp => {
                self.bind(c, method, &[], 0)?;
                let op = if method == "meta_group_rank" {
                    CgOp::MetaRank(kind)
                } else {
                    CgOp::MetaSize(kind)
                };
                Some(self.cg_op(op, vec![g.e], i32t, span))
            }
            "block_rank" | "num_blocks" if kind == GroupKind::Grid => {
                self.bind(c, method, &[], 0)?;
                let op = if method == "block_rank" {
                    CgOp::BlockRank
                } else {
                    CgOp::NumBlocks
                };
                Some(self.cg_op(op, vec![], i32t, span))
            }
            "group_index" | "thread_index" | "dim_threads" | "group_dim"
                if kind == GroupKind::Block =>
            {
                self.bind(c, method, &[], 0)?;
                let b = match method {
                    "group_index" => Builtin::BlockIdx,
                    "thread_index" => Builtin::ThreadIdx,
                    _ => Builtin::BlockDim,
                };
                Some(dim3(self, b))
            }
            // cupyx's grid group: `is_valid()` (a grid-synchronizing kernel is launched
            // cooperatively, §15.4, so the group is valid) and `group_dim()`, CUDA's
            // older name of `dim_blocks()`.
            "is_valid" if kind == GroupKind::Grid => {
                self.bind(c, method, &[], 0)?;
                let ty = Type::Scalar(Scalar::Bool);
                let e = self.push(Expr::Literal(Literal::Bool(true)), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            "block_index" | "dim_blocks" | "group_dim" if kind == GroupKind::Grid => {
                self.bind(c, method, &[], 0)?;
                let b = if method == "block_index" {
                    Builtin::BlockIdx
                } else {
                    Builtin::GridDim
                };
                Some(dim3(self, b))
            }
            "shfl" | "shfl_up" | "shfl_down" | "shfl_xor"
                if warp && !(kind == GroupKind::Coalesced && method == "shfl_xor") =>
            {
                let (shfl, param) = match method {
                    "shfl" => (Shfl::Idx, "src_rank"),
                    "shfl_up" => (Shfl::Up, "delta"),
                    "shfl_down" => (Shfl::Down, "delta"),
                    _ => (Shfl::Xor, "mask"),
                };
                let a = self.bind(c, method, &["value", param], 2)?;
                let v = self.eval(a[0]?)?;
                let v = self.concrete(v)?;
                let lane = self.int32_arg(a[1]?)?;
                let (wv, back) = self.widen_for_warp(&v, method)?;
                let wty = self.types[wv.index()].clone();
                let r = self.cg_op(CgOp::Shfl(kind, shfl), vec![g.e, wv, lane], wty, span);
                if !back {
                    return Some(Val {
                        ty: v.ty.clone(),
                        ..r
                    });
                }
                let e = self.push(Expr::Cast(r.e), v.ty.clone(), span);
                Some(self.val(e, v.ty.clone(), span))
            }
            "any" | "all" | "ballot" if warp => {
                let a = self.bind(c, method, &["pred"], 1)?;
                let pe = a[0]?;
                let p = match pe {
                    ast::Expr::Lambda(_) => self.predicate(pe)?,
                    _ => {
                        let v = self.eval(pe)?;
                        self.truthy(v)?
                    }
                };
                let (vote, ty) = match method {
                    "any" => (Vote::Any, Type::Scalar(Scalar::Bool)),
                    "all" => (Vote::All, Type::Scalar(Scalar::Bool)),
                    _ => (Vote::Ballot, Type::WarpMask),
                };
                Some(self.cg_op(CgOp::Vote(kind, vote), vec![g.e, p], ty, span))
            }
            "meta_group_rank" | "meta_group_size" | "block_rank" | "num_blocks" | "group_index"
            | "thread_index" | "dim_threads" | "group_dim" | "block_index" | "dim_blocks"
            | "shfl" | "shfl_up" | "shfl_down" | "shfl_xor" | "any" | "all" | "ballot"
            | "is_valid" => {
                self.wrong_group(kind, method, span);
                None
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0212,
                        span,
                        format!("a {} has no method `{method}`", kind.name()),
                    )
                    .with_note("see docs/semantics.md §17 for each group's methods"),
                );
                None
            }
        }
    }
}
