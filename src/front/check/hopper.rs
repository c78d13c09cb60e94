//! The functions of `cuda.device.hopper` (docs/semantics.md §18.4, a pydevice extension):
//! mbarriers with transaction counts, the async-proxy fences, `elect_one`, `setmaxnreg`,
//! bulk asynchronous copies and warpgroup MMA (`wgmma`).
//!
//! Everything decidable at compile time is a diagnostic here, so the back end only spells
//! instructions ptxas accepts: the architecture (E0747), the memory an mbarrier or a copy
//! names (E0748), the constants of `setmaxnreg` and the wait groups (E0749), the shapes and
//! types of `wgmma` (E0766) and the fields of a matrix descriptor (E0767).

use super::*;
use crate::front::builtins::HopperFn;
use crate::front::builtins::table::{self, Op};
use crate::ir::{HopperOp, Swizzle, Wgmma, WgmmaInput};
use crate::types::MemSpace;

impl FnCx<'_, '_> {
    /// E0747 unless compiling for sm_90 or newer (or, for the sm_90a-only operations, for
    /// sm_90 exactly: the PTX then targets sm_90a).
    fn require_hopper(&mut self, name: &str, specific: bool, span: Span) -> Option<()> {
        let sm = self.s.sm;
        if sm == crate::ir::HOST_TARGET {
            return Some(());
        }
        self.s.target_used = true;
        let ok = if specific { sm == 90 } else { sm >= 90 };
        if ok {
            if specific {
                self.s.arch_specific = true;
            }
            return Some(());
        }
        let (need, note) = if specific {
            (
                "sm_90a, the architecture-specific Hopper target",
                "compile for sm_90 (its PTX then targets sm_90a); newer architectures do not have it",
            )
        } else {
            (
                "sm_90 or newer",
                "compile for sm_90 or newer, or guard the code with `if target(provides(sm90)):`",
            )
        };
        self.diags.push(
            Diagnostic::error(
                Code::E0747,
                span,
                format!("`{name}` needs {need}; this compiles for sm_{sm}"),
            )
            .with_note(note),
        );
        None
    }

    /// A call of a `cuda.device.hopper` function.
    pub(super) fn hopper_call(
        &mut self,
        entry: table::Entry,
        b: Builtin,
        c: &ast::ExprCall,
    ) -> Option<Val> {
        let span = sp(c);
        let name = super::calls::builtin_name(b);
        let Builtin::Hopper(f) = b else {
            return self.table_mismatch(b, span);
        };
        let a = self.bind(c, &name, entry.params(), entry.required())?;
        let specific = matches!(f, HopperFn::SetMaxNReg) || f.is_wgmma();
        self.require_hopper(&name, specific, span)?;
        let none = Type::None;
        let u64t = Type::Scalar(Scalar::UInt64);
        let boolt = Type::Scalar(Scalar::Bool);
        let table_op = match entry.op() {
            Op::Intrinsic(Intrinsic::Hopper(op)) => Some(op),
            _ => None,
        };
        let simple = |me: &mut Self, op: HopperOp, args: Vec<Handle<Expr>>, ty: Type| {
            Some(me.intrinsic(Intrinsic::Hopper(op), args, ty, span))
        };
        match f {
            HopperFn::MbarrierInit
            | HopperFn::MbarrierArriveExpectTx
            | HopperFn::MbarrierExpectTx
            | HopperFn::MbarrierTryWaitParity
            | HopperFn::MbarrierWaitParity => {
                let op = table_op?;
                let bar = self.mbarrier_ref(a[0]?, &name)?;
                let (n, known) = self.u32_arg(a[1]?)?;
                match (f, known) {
                    (HopperFn::MbarrierInit, Some(k)) if !(1..(1 << 20)).contains(&k) => {
                        self.hopper_error(
                            Code::E0748,
                            sp(a[1]?),
                            format!(
                                "an mbarrier's expected arrival count is 1 to 2**20 - 1, not {k}"
                            ),
                        );
                        return None;
                    }
                    (HopperFn::MbarrierArriveExpectTx | HopperFn::MbarrierExpectTx, Some(k))
                        if !(0..(1 << 20)).contains(&k) =>
                    {
                        self.hopper_error(
                            Code::E0748,
                            sp(a[1]?),
                            format!("a transaction count is 0 to 2**20 - 1 bytes, not {k}"),
                        );
                        return None;
                    }
                    _ => {}
                }
                let ty = match f {
                    HopperFn::MbarrierArriveExpectTx => u64t,
                    HopperFn::MbarrierTryWaitParity => boolt,
                    _ => none,
                };
                simple(self, op, vec![bar, n], ty)
            }
            HopperFn::MbarrierArrive => {
                let bar = self.mbarrier_ref(a[0]?, &name)?;
                simple(self, HopperOp::MbarrierArrive, vec![bar], u64t)
            }
            HopperFn::FenceMbarrierInit
            | HopperFn::FenceProxyAsync
            | HopperFn::BulkCommit
            | HopperFn::WgmmaFence
            | HopperFn::WgmmaCommit => simple(self, table_op?, vec![], none),
            HopperFn::ElectOne => simple(self, HopperOp::ElectOne, vec![], boolt),
            HopperFn::SetMaxNReg => {
                let count = self.const_int(a[0]?, "count")?;
                if !(24..=256).contains(&count) || count % 8 != 0 {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0749,
                            sp(a[0]?),
                            format!("`setmaxnreg` sets 24 to 256 registers, a multiple of 8, not {count}"),
                        )
                        .with_note("the register budget is per thread, in steps of 8"),
                    );
                    return None;
                }
                let inc = self.hopper_bool(a[1]?, "inc")?;
                let op = HopperOp::SetMaxNReg {
                    inc,
                    count: count as u16,
                };
                simple(self, op, vec![], none)
            }
            HopperFn::BulkWait | HopperFn::WgmmaWait => {
                let n = match a[0] {
                    Some(e) => self.wait_count(e)?,
                    None => 0,
                };
                let op = if f == HopperFn::WgmmaWait {
                    // With every group retired (n = 0), the accumulators of earlier
                    // `wgmma`s are re-read here and passed to the wait, which pins them: no
                    // read of them moves above it. (With groups still in flight they are
                    // not read until the next wait.)
                    let mut args = Vec::new();
                    let accs = if n == 0 {
                        self.wgmma_accs.clone()
                    } else {
                        Vec::new()
                    };
                    for (_, e, regs) in accs {
                        let v = self.eval(&e)?;
                        let count = self.push(
                            Expr::Literal(Literal::Int(i128::from(regs))),
                            Type::Scalar(Scalar::Int32),
                            span,
                        );
                        args.extend([v.e, count]);
                    }
                    return simple(self, HopperOp::WgmmaWait(n), args, none);
                } else {
                    let read = match a[1] {
                        Some(e) => self.hopper_bool(e, "read")?,
                        None => false,
                    };
                    HopperOp::BulkWait { n, read }
                };
                simple(self, op, vec![], none)
            }
            HopperFn::BulkCopyToShared | HopperFn::BulkCopyToGlobal => {
                let to_shared = f == HopperFn::BulkCopyToShared;
                let (dst_space, src_space) = if to_shared {
                    (MemSpace::Shared, MemSpace::Global)
                } else {
                    (MemSpace::Global, MemSpace::Shared)
                };
                let (dst, dt) = self.space_ref(a[0]?, dst_space, "dst", &name, true)?;
                let (src, st) = self.space_ref(a[1]?, src_space, "src", &name, false)?;
                if dt != st {
                    self.hopper_error(
                        Code::E0748,
                        sp(a[1]?),
                        format!("`{name}` copies between arrays of one dtype; `dst` holds {dt}, `src` {st}"),
                    );
                    return None;
                }
                let (bytes, known) = self.u32_arg(a[2]?)?;
                if let Some(k) = known
                    && (k <= 0 || k % 16 != 0)
                {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0748,
                            sp(a[2]?),
                            format!("a bulk copy moves a positive multiple of 16 bytes, not {k}"),
                        )
                        .with_note("both addresses must be 16-byte aligned too"),
                    );
                    return None;
                }
                let mut args = vec![dst, src, bytes];
                if to_shared {
                    args.push(self.mbarrier_ref(a[3]?, &name)?);
                }
                simple(self, table_op?, args, none)
            }
            HopperFn::TmaLoad => {
                let multicast = a[4].is_some();
                if multicast {
                    // `.multicast::cluster` is tuned for sm_90a (ptxas advises so).
                    self.require_hopper(&name, true, span)?;
                }
                let (dst, _) = self.space_ref(a[0]?, MemSpace::Shared, "dst", &name, true)?;
                let tmap = self.tensor_map_ref(a[1]?, &name)?;
                let coords = self.tma_coords(a[2]?)?;
                let bar = self.mbarrier_ref(a[3]?, &name)?;
                let op = HopperOp::TmaLoad {
                    dims: coords.len() as u8,
                    multicast,
                };
                let mut args = vec![dst, tmap, bar];
                args.extend(coords);
                if let Some(m) = a[4] {
                    let v = self.eval(m)?;
                    if !v.ty.as_scalar().is_some_and(|s| s.is_integer()) {
                        self.error(
                            Code::E0748,
                            v.span,
                            format!("`multicast` is a mask of the cluster's blocks (an integer), not {}", v.ty),
                        );
                        return None;
                    }
                    args.push(self.convert(&v, Scalar::UInt16)?);
                }
                simple(self, op, args, none)
            }
            HopperFn::TmaStore | HopperFn::TmaReduceAdd => {
                let tmap = self.tensor_map_ref(a[0]?, &name)?;
                let coords = self.tma_coords(a[1]?)?;
                let (src, _) = self.space_ref(a[2]?, MemSpace::Shared, "src", &name, false)?;
                let op = HopperOp::TmaStore {
                    dims: coords.len() as u8,
                    reduce: f == HopperFn::TmaReduceAdd,
                };
                let mut args = vec![tmap, src];
                args.extend(coords);
                simple(self, op, args, none)
            }
            HopperFn::TmaPrefetch => {
                let tmap = self.tensor_map_ref(a[0]?, &name)?;
                simple(self, HopperOp::TmaPrefetch, vec![tmap], none)
            }
            HopperFn::SharedAddress => {
                let (r, _) = self.space_ref(a[0]?, MemSpace::Shared, "element", &name, false)?;
                let mut v = self.intrinsic(
                    Intrinsic::Hopper(HopperOp::SharedAddress),
                    vec![r],
                    Type::Scalar(Scalar::UInt32),
                    span,
                );
                v.nonneg = true;
                Some(v)
            }
            HopperFn::WgmmaDesc => {
                let arr = self.eval(a[0]?)?;
                let Some(dtype) = (match &arr.ty {
                    Type::Array(at) if at.space == MemSpace::Shared => at.dtype.scalar(),
                    _ => None,
                }) else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0767,
                            arr.span,
                            format!(
                                "a matrix descriptor describes a shared array of numbers, not {}",
                                arr.ty
                            ),
                        )
                        .with_note("wgmma reads its A and B tiles from this block's shared memory"),
                    );
                    return None;
                };
                let indices = self.indices(&arr, a[1]?)?;
                let space = MemSpace::Shared;
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
                let lead = self.desc_offset(a[2]?, "leading")?;
                let stride = self.desc_offset(a[3]?, "stride")?;
                let sw = self.const_int(a[4]?, "swizzle")?;
                let Some(sw) = Swizzle::from_bytes(sw) else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0767,
                            sp(a[4]?),
                            format!("the swizzle is 0 (none), 32, 64 or 128 bytes, not {sw}"),
                        )
                        .with_note("it must match how the tile was written (a TMA map's swizzle, or the kernel's own layout)"),
                    );
                    return None;
                };
                simple(self, HopperOp::WgmmaDesc(sw), vec![r, lead, stride], u64t)
            }
            HopperFn::Wgmma => self.wgmma(&a, &name, span),
            HopperFn::TensorMap => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0748,
                        span,
                        "`hopper.TensorMap` is a type: annotate a kernel parameter with it",
                    )
                    .with_note("the map is built on the host (`pydevice.hopper.tensor_map(array, box)` or `Device::tensor_map_tiled`) and passed as that argument"),
                );
                None
            }
        }
    }

    /// `hopper.wgmma(acc, a_desc, b_desc, n, a_type, b_type, scale_d, trans_a, trans_b)`.
    fn wgmma(&mut self, a: &[Option<&ast::Expr>], name: &str, span: Span) -> Option<Val> {
        let acc_e = a[0]?;
        let acc = self.eval(acc_e)?;
        let acc_dtype = match &acc.ty {
            Type::Array(at) if at.space == MemSpace::Local && at.ndim == 1 => at.dtype.scalar(),
            _ => None,
        };
        let Some(acc_dtype) =
            acc_dtype.filter(|s| matches!(s, Scalar::Float32 | Scalar::Float16 | Scalar::Int32))
        else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0766,
                    acc.span,
                    format!("the accumulator of `{name}` is a 1-D `local_array` of float32, float16 or int32, not {}", acc.ty),
                )
                .with_note("`acc = device.local_array(N // 2, device.float32)`: each thread of the warpgroup holds N/2 elements of the 64×N tile, in registers"),
            );
            return None;
        };
        let n = self.const_int(a[3]?, "n")?;
        let ty_of = |me: &mut Self, e: &ast::Expr, what: &str| -> Option<WgmmaInput> {
            let s = me.str_arg(e, what)?;
            WgmmaInput::from_name(&s).or_else(|| {
                me.diags.push(
                    Diagnostic::error(
                        Code::E0766,
                        sp(e),
                        format!("`{s}` is not a wgmma input type"),
                    )
                    .with_note("input types: 'f16', 'bf16', 'tf32', 'e4m3', 'e5m2', 's8', 'u8'"),
                );
                None
            })
        };
        let at = match a[4] {
            Some(e) => ty_of(self, e, "a_type")?,
            None => WgmmaInput::BF16,
        };
        let bt = match a[5] {
            Some(e) => ty_of(self, e, "b_type")?,
            None => WgmmaInput::BF16,
        };
        let trans_a = match a[7] {
            Some(e) => self.hopper_bool(e, "trans_a")?,
            None => false,
        };
        let trans_b = match a[8] {
            Some(e) => self.hopper_bool(e, "trans_b")?,
            None => false,
        };
        let bad = |me: &mut Self, at_span: Span, msg: String, note: &str| {
            me.diags
                .push(Diagnostic::error(Code::E0766, at_span, msg).with_note(note.to_string()));
            None::<Val>
        };
        let types_span = a[5].or(a[4]).map(sp).unwrap_or(span);
        // Mixed s8 × u8 needs PTX ISA 8.4; the back end emits 8.0 for sm_90a.
        if at.family() != bt.family() || (at.family() != 2 && at != bt) {
            return bad(
                self,
                types_span,
                format!("`{name}` has no `{}` × `{}` form", at.ptx(), bt.ptx()),
                "A and B are both f16, both bf16, both tf32, fp8 (e4m3/e5m2, mixed allowed), both s8 or both u8",
            );
        }
        let acc_ok = match at.family() {
            0 => {
                acc_dtype == Scalar::Float32
                    || (acc_dtype == Scalar::Float16 && at == WgmmaInput::F16)
            }
            1 => acc_dtype == Scalar::Float32,
            2 => matches!(acc_dtype, Scalar::Float32 | Scalar::Float16),
            _ => acc_dtype == Scalar::Int32,
        };
        if !acc_ok {
            return bad(
                self,
                acc.span,
                format!(
                    "`{name}` on `{}` inputs has no {acc_dtype} accumulator",
                    at.ptx()
                ),
                "accumulators: f16 → float32 or float16; bf16, tf32 → float32; e4m3/e5m2 → float32 or float16; s8/u8 → int32",
            );
        }
        let n_ok =
            (8..=256).contains(&n) && n % 8 == 0 && (at.family() != 3 || n <= 32 || n % 16 == 0);
        if !n_ok {
            let rule = if at.family() == 3 {
                "8, 16, 24, 32, then multiples of 16 up to 256"
            } else {
                "a multiple of 8 from 8 to 256"
            };
            return bad(
                self,
                sp(a[3]?),
                format!(
                    "`{name}` has no m64n{n}k{} shape for `{}`: N is {rule}",
                    at.k(),
                    at.ptx()
                ),
                "M is always 64 (one warpgroup); K is 32 bytes of the input type",
            );
        }
        if (trans_a || trans_b) && at.family() != 0 {
            let e = if trans_a { a[7] } else { a[8] };
            return bad(
                self,
                e.map(sp).unwrap_or(span),
                format!(
                    "only f16 and bf16 tiles may be transposed, not `{}`",
                    at.ptx()
                ),
                "other input types are K-major in shared memory",
            );
        }
        let acc_ref = {
            let zero = self.push(
                Expr::Literal(Literal::Int(0)),
                Type::Scalar(Scalar::Int64),
                acc.span,
            );
            self.push(
                Expr::ElementRef {
                    array: acc.e,
                    indices: vec![Index {
                        value: zero,
                        wrap: false,
                    }],
                },
                Type::Ref {
                    record: None,
                    dtype: acc_dtype,
                    space: MemSpace::Local,
                },
                acc.span,
            )
        };
        let desc = |me: &mut Self, e: &ast::Expr| -> Option<Handle<Expr>> {
            let v = me.eval(e)?;
            if !matches!(v.ty.as_scalar(), Some(s) if s.is_integer() && s.size() == 8) {
                me.diags.push(
                    Diagnostic::error(
                        Code::E0767,
                        v.span,
                        format!("a matrix descriptor is a 64-bit integer, not {}", v.ty),
                    )
                    .with_note(
                        "make one with `hopper.wgmma_desc(array, index, leading, stride, swizzle)`",
                    ),
                );
                return None;
            }
            me.convert(&v, Scalar::UInt64)
        };
        let ad = desc(self, a[1]?)?;
        let bd = desc(self, a[2]?)?;
        let scale = match a[6] {
            Some(e) => {
                let v = self.eval(e)?;
                if v.ty != Type::Scalar(Scalar::Bool) {
                    self.error(
                        Code::E0766,
                        v.span,
                        format!(
                            "`scale_d` is a bool (accumulate into `acc`, or overwrite it), not {}",
                            v.ty
                        ),
                    );
                    return None;
                }
                v.e
            }
            None => self.push(
                Expr::Literal(Literal::Bool(true)),
                Type::Scalar(Scalar::Bool),
                span,
            ),
        };
        let w = Wgmma {
            n: n as u16,
            a: at,
            b: bt,
            acc: acc_dtype,
            trans_a,
            trans_b,
        };
        if let ast::Expr::Name(nm) = acc_e {
            let regs = w.acc_regs();
            let id = nm.id.to_string();
            match self.wgmma_accs.iter_mut().find(|(n, ..)| *n == id) {
                Some(entry) => entry.2 = entry.2.max(regs),
                None => self.wgmma_accs.push((id, acc_e.clone(), regs)),
            }
        }
        let op = HopperOp::Wgmma(w);
        Some(self.intrinsic(
            Intrinsic::Hopper(op),
            vec![acc_ref, ad, bd, scale],
            Type::None,
            span,
        ))
    }

    /// A reference to the mbarrier `bars[i]`: an element of a shared array of 64-bit
    /// integers (E0748 otherwise).
    fn mbarrier_ref(&mut self, e: &ast::Expr, name: &str) -> Option<Handle<Expr>> {
        let bad = |me: &mut Self, what: String| {
            me.diags.push(
                Diagnostic::error(
                    Code::E0748,
                    sp(e),
                    format!("the mbarrier of `{name}` is an element of a shared uint64 array, not {what}"),
                )
                .with_note("`bars = device.shared_array(2, device.uint64)`, then pass `bars[0]`"),
            );
            None
        };
        let ast::Expr::Subscript(s) = e else {
            return bad(self, "this expression".into());
        };
        let arr = self.eval(&s.value)?;
        let dtype = match &arr.ty {
            Type::Array(at) if at.space == MemSpace::Shared => at.dtype.scalar(),
            _ => None,
        };
        let Some(dtype) = dtype.filter(|d| matches!(d, Scalar::UInt64 | Scalar::Int64)) else {
            return bad(self, format!("an element of {}", arr.ty));
        };
        let indices = self.indices(&arr, &s.slice)?;
        let span = sp(e);
        Some(self.push(
            Expr::ElementRef {
                array: arr.e,
                indices,
            },
            Type::Ref {
                record: None,
                dtype,
                space: MemSpace::Shared,
            },
            span,
        ))
    }

    /// The tensor map of a TMA operation: a global array holding the 128-byte `CUtensorMap`
    /// (`hopper.tensor_map(...)` on the host), as a reference to its first element.
    ///
    /// Or a `hopper.TensorMap` kernel parameter named directly: the map's bytes stay in the
    /// kernel's parameter space (`__grid_constant__`) and the operand is the parameter
    /// itself (`Expr::Local`), whose generic address (`cvta.param`) the copy reads.
    fn tensor_map_ref(&mut self, e: &ast::Expr, name: &str) -> Option<Handle<Expr>> {
        let v = if matches!(e, ast::Expr::Name(_)) {
            self.tensor_map_use = true;
            let v = self.eval(e);
            self.tensor_map_use = false;
            v?
        } else {
            self.eval(e)?
        };
        if v.ty.is_tensor_map() {
            let param = match self.exprs[v.e] {
                Expr::Local(h) if h.index() < self.params => Some(h),
                _ => None,
            };
            if param.is_none() || self.kind != FunctionKind::Kernel {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0748,
                        v.span,
                        format!("the tensor map of `{name}` must be a kernel's `hopper.TensorMap` parameter"),
                    )
                    .with_note("a map passed by value is a grid constant: only a kernel's own parameter has an address in parameter space that TMA can read; pass the map to the kernel and name that parameter here"),
                );
                return None;
            }
            return Some(v.e);
        }
        let dtype = match &v.ty {
            Type::Array(at) if at.space == MemSpace::Global && at.ndim == 1 => at.dtype.scalar(),
            _ => None,
        };
        let Some(dtype) = dtype else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0748,
                    v.span,
                    format!("the tensor map of `{name}` is a `hopper.TensorMap` kernel parameter or a 1-D global array holding its 128 bytes, not {}", v.ty),
                )
                .with_note("build it on the host with `pydevice.hopper.tensor_map(array, box)` (or `Device::tensor_map_tiled`) and pass it as an argument"),
            );
            return None;
        };
        let zero = self.push(
            Expr::Literal(Literal::Int(0)),
            Type::Scalar(Scalar::Int64),
            v.span,
        );
        Some(self.push(
            Expr::ElementRef {
                array: v.e,
                indices: vec![Index {
                    value: zero,
                    wrap: false,
                }],
            },
            Type::Ref {
                record: None,
                dtype,
                space: MemSpace::Global,
            },
            v.span,
        ))
    }

    /// TMA coordinates: one integer or a tuple of 1 to 5, innermost dimension first, each as
    /// an int32 (E0748 otherwise).
    fn tma_coords(&mut self, e: &ast::Expr) -> Option<Vec<Handle<Expr>>> {
        let items: Vec<&ast::Expr> = match e {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        if !(1..=5).contains(&items.len()) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0748,
                    sp(e),
                    format!("a tensor map has 1 to 5 dimensions; {} coordinates given", items.len()),
                )
                .with_note("write the coordinates as a tuple literal, innermost dimension first: `(col, row)`"),
            );
            return None;
        }
        let mut out = Vec::new();
        for it in items {
            out.push(self.int32_arg(it)?);
        }
        Some(out)
    }

    /// A reference to `a[i]`, an element of an array in `space`, and the array's dtype.
    fn space_ref(
        &mut self,
        e: &ast::Expr,
        space: MemSpace,
        what: &str,
        name: &str,
        store: bool,
    ) -> Option<(Handle<Expr>, Scalar)> {
        let where_ = match space {
            MemSpace::Shared => "a shared",
            _ => "a global",
        };
        let bad = |me: &mut Self| {
            me.diags.push(
                Diagnostic::error(
                    Code::E0748,
                    sp(e),
                    format!("`{what}` of `{name}` is an element of {where_} array (`a[i]`), where the copy starts"),
                )
                .with_note("the bulk copy unit moves data between global and shared memory"),
            );
            None
        };
        let ast::Expr::Subscript(s) = e else {
            return bad(self);
        };
        let arr = self.eval(&s.value)?;
        let dtype = match &arr.ty {
            Type::Array(at) if at.space == space => at.dtype.scalar(),
            _ => None,
        };
        let Some(dtype) = dtype else {
            return bad(self);
        };
        if store {
            self.check_writable(&arr, sp(e))?;
        }
        let indices = self.indices(&arr, &s.slice)?;
        let h = self.push(
            Expr::ElementRef {
                array: arr.e,
                indices,
            },
            Type::Ref {
                record: None,
                dtype,
                space,
            },
            sp(e),
        );
        Some((h, dtype))
    }

    /// An integer argument as a uint32, with its value when known.
    fn u32_arg(&mut self, e: &ast::Expr) -> Option<(Handle<Expr>, Option<i128>)> {
        let v = self.eval(e)?;
        let known = match (&v.konst, v.ty.as_scalar()) {
            (Some(c), Some(s)) if s.is_integer() => c.as_int(),
            _ => None,
        };
        if !v.ty.as_scalar().is_some_and(|s| s.is_integer()) {
            self.error(
                Code::E0207,
                v.span,
                format!("expected an integer, found {}", v.ty),
            );
            return None;
        }
        Some((self.convert(&v, Scalar::UInt32)?, known))
    }

    /// A descriptor's byte offset: a uint32; a constant one is a multiple of 16 below 2**18
    /// (E0767).
    fn desc_offset(&mut self, e: &ast::Expr, what: &str) -> Option<Handle<Expr>> {
        let (h, known) = self.u32_arg(e)?;
        if let Some(k) = known
            && (!(0..(1 << 18)).contains(&k) || k % 16 != 0)
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0767,
                    sp(e),
                    format!("the {what} byte offset of a matrix descriptor is a multiple of 16 below 2**18, not {k}"),
                )
                .with_note("the descriptor keeps it in 14 bits, in units of 16 bytes"),
            );
            return None;
        }
        Some(h)
    }

    /// A wait group's count: a constant 0 to 7 (E0749).
    fn wait_count(&mut self, e: &ast::Expr) -> Option<u8> {
        let n = self.const_int(e, "n")?;
        if !(0..=7).contains(&n) {
            self.hopper_error(
                Code::E0749,
                sp(e),
                format!("a wait group's count is a constant 0 to 7, not {n}"),
            );
            return None;
        }
        Some(n as u8)
    }

    /// A constant `True` or `False` (E0749).
    fn hopper_bool(&mut self, e: &ast::Expr, what: &str) -> Option<bool> {
        let v = self.eval(e)?;
        match v.konst {
            Some(Const::Bool(b)) => Some(b),
            _ => {
                self.hopper_error(
                    Code::E0749,
                    v.span,
                    format!("`{what}` must be a constant `True` or `False`"),
                );
                None
            }
        }
    }

    fn hopper_error(&mut self, code: Code, span: Span, msg: String) {
        self.diags.push(Diagnostic::error(code, span, msg));
    }
}

impl HopperFn {
    /// Whether it is one of the `wgmma` functions (sm_90a only).
    fn is_wgmma(self) -> bool {
        matches!(
            self,
            HopperFn::Wgmma | HopperFn::WgmmaFence | HopperFn::WgmmaCommit | HopperFn::WgmmaWait
        )
    }
}
