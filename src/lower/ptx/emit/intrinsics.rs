//! Device intrinsics: special registers, inline PTX, warp shuffles and the math functions
//! (LLVM intrinsics or libdevice).

use super::atomics::ptx_scope;
use super::*;

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    fn sreg(&self, name: &str) -> R<BasicValueEnum<'ctx>> {
        let f = self.e.intrinsic(name, &[])?;
        self.call1(f, &[])
    }

    pub(super) fn intrinsic(
        &mut self,
        op: Intrinsic,
        args: &[Handle<Expr>],
        ty: &Type,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        if let Intrinsic::Tensor(t) = op {
            return self.tensor(t, args, ty);
        }
        if let Intrinsic::Hopper(h) = op {
            return self.hopper(h, args);
        }
        let sreg = |kind: &str, a: Axis| format!("llvm.nvvm.read.ptx.sreg.{kind}.{}", a.letter());
        let ctx = self.e.ctx;
        let i32t = ctx.i32_type();
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.value(*a)?);
        }
        let v: BasicValueEnum<'ctx> = match op {
            Intrinsic::ThreadIdx(a) => self.sreg(&sreg("tid", a))?,
            Intrinsic::BlockIdx(a) => self.sreg(&sreg("ctaid", a))?,
            Intrinsic::BlockDim(a) => self.sreg(&sreg("ntid", a))?,
            Intrinsic::GridDim(a) => self.sreg(&sreg("nctaid", a))?,
            Intrinsic::LaneId => self.sreg("llvm.nvvm.read.ptx.sreg.laneid")?,
            Intrinsic::LaneMaskLt => self.sreg("llvm.nvvm.read.ptx.sreg.lanemask.lt")?,
            Intrinsic::WarpSize => i32t.const_int(32, false).into(),
            Intrinsic::SyncThreads => {
                let f = self.e.intrinsic("llvm.nvvm.barrier0", &[])?;
                self.b().build_call(f, &[], "")?;
                return Ok(None);
            }
            Intrinsic::SyncThreadsCount | Intrinsic::SyncThreadsAnd | Intrinsic::SyncThreadsOr => {
                let name = match op {
                    Intrinsic::SyncThreadsCount => "llvm.nvvm.barrier0.popc",
                    Intrinsic::SyncThreadsAnd => "llvm.nvvm.barrier0.and",
                    _ => "llvm.nvvm.barrier0.or",
                };
                let p = self
                    .b()
                    .build_int_z_extend(vals[0].into_int_value(), i32t, "")?;
                let f = self.e.intrinsic(name, &[])?;
                let r = self.call1(f, &[p.into()])?.into_int_value();
                if op == Intrinsic::SyncThreadsCount {
                    r.into()
                } else {
                    self.b()
                        .build_int_compare(IntPredicate::NE, r, i32t.const_zero(), "")?
                        .into()
                }
            }
            Intrinsic::ThreadFence(order, scope) => {
                if order != MemoryOrder::Relaxed {
                    let sem = if order == MemoryOrder::SeqCst {
                        "sc"
                    } else {
                        "acq_rel"
                    };
                    self.asm(
                        &format!("fence.{sem}.{};", ptx_scope(scope)),
                        "~{memory}",
                        None,
                        &[],
                    )?;
                }
                return Ok(None);
            }
            Intrinsic::ActiveMask => self
                .asm("activemask.b32 $0;", "=r,~{memory}", Some(i32t.into()), &[])?
                .ok_or_else(|| err("activemask"))?,
            Intrinsic::SyncWarp => {
                let f = self.e.intrinsic("llvm.nvvm.bar.warp.sync", &[])?;
                self.b().build_call(f, &[vals[0].into()], "")?;
                return Ok(None);
            }
            Intrinsic::Vote(vote) => {
                let name = match vote {
                    Vote::All => "llvm.nvvm.vote.all.sync",
                    Vote::Any => "llvm.nvvm.vote.any.sync",
                    Vote::Uni => "llvm.nvvm.vote.uni.sync",
                    Vote::Ballot => "llvm.nvvm.vote.ballot.sync",
                };
                let f = self.e.intrinsic(name, &[])?;
                self.call1(f, &[vals[0].into(), vals[1].into()])?
            }
            // A fourth operand is the `c` of a shuffle within segments (cupyx's `width`).
            Intrinsic::Shfl(kind) if vals.len() == 4 => self.shfl_with(
                kind,
                vals[0].into_int_value(),
                vals[1],
                vals[2].into_int_value(),
                vals[3].into_int_value(),
            )?,
            Intrinsic::Shfl(kind) => self.shfl(
                kind,
                vals[0].into_int_value(),
                vals[1],
                vals[2].into_int_value(),
            )?,
            Intrinsic::MatchAny | Intrinsic::MatchAll => {
                let x = self.as_int_bits(vals[1])?;
                let w = x.get_type().get_bit_width();
                let name = match (op, w) {
                    (Intrinsic::MatchAny, 64) => "llvm.nvvm.match.any.sync.i64",
                    (Intrinsic::MatchAny, _) => "llvm.nvvm.match.any.sync.i32",
                    (_, 64) => "llvm.nvvm.match.all.sync.i64p",
                    _ => "llvm.nvvm.match.all.sync.i32p",
                };
                let f = self.e.intrinsic(name, &[])?;
                let r = self.call1(f, &[vals[0].into(), x.into()])?;
                if op == Intrinsic::MatchAny {
                    r
                } else {
                    let agg = r.into_struct_value();
                    let mask = self.b().build_extract_value(agg, 0, "")?;
                    let pred = self.b().build_extract_value(agg, 1, "")?;
                    let st = self
                        .e
                        .ty(ty)
                        .ok_or_else(|| err("match_all type"))?
                        .into_struct_type();
                    let (i0, i1) = (self.e.field_index(ty, 0), self.e.field_index(ty, 1));
                    let out = self.b().build_insert_value(st.get_undef(), mask, i0, "")?;
                    let pred = self.mem_repr(pred, &Type::Scalar(Scalar::Bool))?;
                    self.b()
                        .build_insert_value(out, pred, i1, "")?
                        .as_basic_value_enum()
                }
            }
            Intrinsic::BitCast => {
                let to = self.e.ty(ty).ok_or_else(|| err("bitcast type"))?;
                self.b().build_bit_cast(vals[0], to, "")?
            }
            Intrinsic::Popc | Intrinsic::Clz | Intrinsic::Ffs | Intrinsic::Brev => {
                let x = vals[0].into_int_value();
                let t = x.get_type();
                let f = |name: &str| self.e.intrinsic(name, &[t.into()]);
                let fls = ctx.bool_type().const_zero();
                match op {
                    Intrinsic::Brev => self.call1(f("llvm.bitreverse")?, &[x.into()])?,
                    Intrinsic::Popc => {
                        let r = self.call1(f("llvm.ctpop")?, &[x.into()])?.into_int_value();
                        self.b()
                            .build_int_cast_sign_flag(r, i32t, false, "")?
                            .into()
                    }
                    Intrinsic::Clz => {
                        let r = self
                            .call1(f("llvm.ctlz")?, &[x.into(), fls.into()])?
                            .into_int_value();
                        self.b()
                            .build_int_cast_sign_flag(r, i32t, false, "")?
                            .into()
                    }
                    _ => {
                        let r = self
                            .call1(f("llvm.cttz")?, &[x.into(), fls.into()])?
                            .into_int_value();
                        let r = self.b().build_int_cast_sign_flag(r, i32t, false, "")?;
                        let r1 = self.b().build_int_add(r, i32t.const_int(1, false), "")?;
                        let zero =
                            self.b()
                                .build_int_compare(IntPredicate::EQ, x, t.const_zero(), "")?;
                        self.b().build_select(zero, i32t.const_zero(), r1, "")?
                    }
                }
            }
            // LLVM's funnel shifts take the high word first and the count modulo 32, as
            // CUDA's do (`shf.l.wrap.b32` / `shf.r.wrap.b32`).
            Intrinsic::FunnelShiftL | Intrinsic::FunnelShiftR => {
                let name = if op == Intrinsic::FunnelShiftL {
                    "llvm.fshl"
                } else {
                    "llvm.fshr"
                };
                let f = self.e.intrinsic(name, &[i32t.into()])?;
                self.call1(f, &[vals[1].into(), vals[0].into(), vals[2].into()])?
            }
            Intrinsic::Fma => {
                let t = vals[0].get_type();
                let f = self.e.intrinsic("llvm.fma", &[t])?;
                self.call1(f, &[vals[0].into(), vals[1].into(), vals[2].into()])?
            }
            Intrinsic::Math(f) => self.math(f, &vals)?,
            Intrinsic::RoundDigits => self.round_digits(vals[0], vals[1])?,
            Intrinsic::Ldexp | Intrinsic::Frexp | Intrinsic::Modf | Intrinsic::Sincos => {
                self.math_pair(op, &vals, ty)?
            }
            Intrinsic::Sad => {
                let i32t = self.e.ctx.i32_type();
                let f = self.e.libdevice_fn("__nv_sad", i32t.into(), 3);
                self.call1(f, &[vals[0].into(), vals[1].into(), vals[2].into()])?
            }
            Intrinsic::Complex(op) => self.complex_op(op, &vals)?,
            Intrinsic::Rand
            | Intrinsic::Randn
            | Intrinsic::RandSeed
            | Intrinsic::RandThread
            | Intrinsic::RandCall => self.random(op)?,
            Intrinsic::Cg(op) => return self.cg(op, &vals, ty),
            Intrinsic::Tensor(_) => return Err(err("tensor operation lowered twice")),
            Intrinsic::DynamicSharedSize => self
                .asm(
                    "mov.u32 $0, %dynamic_smem_size;",
                    "=r",
                    Some(i32t.into()),
                    &[],
                )?
                .ok_or_else(|| err("dynamic_smem_size"))?,
            Intrinsic::ClusterIdx(a) => self.sreg(&sreg("clusterid", a))?,
            Intrinsic::ClusterDim(a) => self.sreg(&sreg("cluster.nctaid", a))?,
            Intrinsic::BlockIdxInCluster(a) => self.sreg(&sreg("cluster.ctaid", a))?,
            Intrinsic::BlockRankInCluster => {
                self.sreg("llvm.nvvm.read.ptx.sreg.cluster.ctarank")?
            }
            Intrinsic::ClusterSize => self.sreg("llvm.nvvm.read.ptx.sreg.cluster.nctarank")?,
            Intrinsic::ClusterArrive(_) | Intrinsic::ClusterWait | Intrinsic::ClusterSync => {
                // The non-`.aligned` forms: correct when threads of a warp diverge (§18.1).
                let names: &[&str] = match op {
                    Intrinsic::ClusterArrive(false) => &["llvm.nvvm.barrier.cluster.arrive"],
                    Intrinsic::ClusterArrive(true) => &["llvm.nvvm.barrier.cluster.arrive.relaxed"],
                    Intrinsic::ClusterWait => &["llvm.nvvm.barrier.cluster.wait"],
                    _ => &[
                        "llvm.nvvm.barrier.cluster.arrive",
                        "llvm.nvvm.barrier.cluster.wait",
                    ],
                };
                for name in names {
                    let f = self.e.intrinsic(name, &[])?;
                    self.b().build_call(f, &[], "")?;
                }
                return Ok(None);
            }
            Intrinsic::MapSharedRank => self.map_shared_rank(vals[0], vals[1], ty)?,
            Intrinsic::Hopper(_) => return Err(err("Hopper operation lowered twice")),
        };
        Ok(Some(v))
    }

    /// `map_shared_rank(array, rank)`: the descriptor of a shared array with its data
    /// pointer made generic (`cvta.shared`) and mapped by `mapa` to the same offset in the
    /// shared memory of the cluster's block `rank`; shape and strides are kept (§18.1).
    fn map_shared_rank(
        &mut self,
        array: BasicValueEnum<'ctx>,
        rank: BasicValueEnum<'ctx>,
        ty: &Type,
    ) -> R<BasicValueEnum<'ctx>> {
        let Type::Array(at) = ty else {
            return Err(err("map_shared_rank of a non-array"));
        };
        let agg = array.into_struct_value();
        let data = self
            .b()
            .build_extract_value(agg, 0, "")?
            .into_pointer_value();
        let generic = self.e.ctx.ptr_type(AddressSpace::from(0u16));
        let data = self.b().build_address_space_cast(data, generic, "")?;
        let f = self.e.intrinsic("llvm.nvvm.mapa", &[])?;
        let remote = self.call1(f, &[data.into(), rank.into()])?;
        let st = self.e.descriptor_type(at);
        let mut out = self.b().build_insert_value(st.get_undef(), remote, 0, "")?;
        for i in 1..3 {
            let part = self.b().build_extract_value(agg, i, "")?;
            out = self.b().build_insert_value(out, part, i, "")?;
        }
        Ok(out.as_basic_value_enum())
    }

    /// Emits inline PTX that is `convergent` (warp and block operations); `ret` is the result
    /// type, if any.
    pub(super) fn asm(
        &self,
        text: &str,
        constraints: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        self.asm_call(text, constraints, ret, args, true)
    }

    /// Emits inline PTX; `convergent` only for operations whose result depends on which
    /// threads execute them together. A `convergent` call keeps LLVM from unrolling the loop
    /// around it, so memory operations (atomics) are emitted without it.
    pub(super) fn asm_call(
        &self,
        text: &str,
        constraints: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicValueEnum<'ctx>],
        convergent: bool,
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let params: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| a.get_type().into()).collect();
        let fn_ty = match ret {
            Some(r) => r.fn_type(&params, false),
            None => self.e.ctx.void_type().fn_type(&params, false),
        };
        let ptr = self.e.ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            constraints.to_string(),
            true,
            false,
            None,
            false,
        );
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        let call = self.b().build_indirect_call(fn_ty, ptr, &margs, "")?;
        // Convergent: the result may depend on which threads execute it (`activemask`), so
        // LLVM must not merge copies from both sides of a branch into one before it.
        if convergent {
            let kind = Attribute::get_named_enum_kind_id("convergent");
            call.add_attribute(
                AttributeLoc::Function,
                self.e.ctx.create_enum_attribute(kind, 0),
            );
        }
        Ok(match call.try_as_basic_value() {
            ValueKind::Basic(v) => Some(v),
            _ => None,
        })
    }

    /// A float or integer as an integer of the same width.
    pub(super) fn as_int_bits(&self, v: BasicValueEnum<'ctx>) -> R<IntValue<'ctx>> {
        Ok(match v {
            BasicValueEnum::IntValue(i) => i,
            BasicValueEnum::FloatValue(f) => {
                let t = f.get_type();
                let w = if t == self.e.ctx.f64_type() {
                    64
                } else if t == self.e.ctx.f32_type() {
                    32
                } else {
                    16
                };
                self.b()
                    .build_bit_cast(f, self.e.int_t(w), "")?
                    .into_int_value()
            }
            // A complex64 (`<2 x float>`): its 64 bits, real part low.
            BasicValueEnum::VectorValue(v) => {
                let t = v.get_type();
                let w = t.get_size() * t.get_element_type().into_float_type().get_bit_width();
                self.b()
                    .build_bit_cast(v, self.e.int_t(w), "")?
                    .into_int_value()
            }
            _ => return Err(err("bits of a non-number")),
        })
    }

    pub(super) fn int_bits_as(
        &self,
        i: IntValue<'ctx>,
        like: BasicTypeEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        Ok(match like {
            BasicTypeEnum::FloatType(t) => self.b().build_bit_cast(i, t, "")?,
            BasicTypeEnum::VectorType(t) => self.b().build_bit_cast(i, t, "")?,
            _ => i.into(),
        })
    }

    fn shfl(
        &mut self,
        kind: Shfl,
        mask: IntValue<'ctx>,
        v: BasicValueEnum<'ctx>,
        lane: IntValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let c = match kind {
            Shfl::Up => 0,
            _ => 0x1f,
        };
        let c = self.e.ctx.i32_type().const_int(c, false);
        self.shfl_with(kind, mask, v, lane, c)
    }

    /// A shuffle with an explicit `c` operand (segment mask and clamp, as CUDA's `width`
    /// sets them: `((32 - width) << 8) | clamp`); 64-bit values travel as two halves.
    pub(super) fn shfl_with(
        &mut self,
        kind: Shfl,
        mask: IntValue<'ctx>,
        v: BasicValueEnum<'ctx>,
        lane: IntValue<'ctx>,
        c: IntValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let i32t = self.e.ctx.i32_type();
        let name = match kind {
            Shfl::Idx => "llvm.nvvm.shfl.sync.idx.i32",
            Shfl::Up => "llvm.nvvm.shfl.sync.up.i32",
            Shfl::Down => "llvm.nvvm.shfl.sync.down.i32",
            Shfl::Xor => "llvm.nvvm.shfl.sync.bfly.i32",
        };
        let f = self.e.intrinsic(name, &[])?;
        // A tuple or vector of at most 8 bytes: each element is shuffled on its own, with
        // the same mask and lane (§10.3).
        if let BasicValueEnum::StructValue(sv) = v {
            let mut agg = sv.get_type().get_undef();
            for k in 0..sv.get_type().count_fields() {
                let field = self.b().build_extract_value(sv, k, "")?;
                // Padding and the zero-length alignment member (arrays) carry no value.
                let r = if field.is_array_value() {
                    field
                } else {
                    self.shfl_with(kind, mask, field, lane, c)?
                };
                agg = self
                    .b()
                    .build_insert_value(agg, r, k, "")?
                    .into_struct_value();
            }
            return Ok(agg.into());
        }
        let bits = self.as_int_bits(v)?;
        let width = bits.get_type().get_bit_width();
        if width < 32 {
            // An element narrower than 32 bits (inside a tuple or vector) travels widened.
            let wide = self.b().build_int_z_extend(bits, i32t, "")?;
            let r = self
                .call1(f, &[mask.into(), wide.into(), lane.into(), c.into()])?
                .into_int_value();
            let r = self.b().build_int_truncate(r, bits.get_type(), "")?;
            return self.int_bits_as(r, v.get_type());
        }
        let r = if width == 64 {
            let i64t = self.e.ctx.i64_type();
            let lo = self.b().build_int_truncate(bits, i32t, "")?;
            let hi = self
                .b()
                .build_right_shift(bits, i64t.const_int(32, false), false, "")?;
            let hi = self.b().build_int_truncate(hi, i32t, "")?;
            let lo = self
                .call1(f, &[mask.into(), lo.into(), lane.into(), c.into()])?
                .into_int_value();
            let hi = self
                .call1(f, &[mask.into(), hi.into(), lane.into(), c.into()])?
                .into_int_value();
            let lo = self.b().build_int_z_extend(lo, i64t, "")?;
            let hi = self.b().build_int_z_extend(hi, i64t, "")?;
            let hi = self
                .b()
                .build_left_shift(hi, i64t.const_int(32, false), "")?;
            self.b().build_or(hi, lo, "")?
        } else {
            self.call1(f, &[mask.into(), bits.into(), lane.into(), c.into()])?
                .into_int_value()
        };
        self.int_bits_as(r, v.get_type())
    }

    fn math(&mut self, f: MathFn, vals: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let x = vals[0].into_float_value();
        let ft = x.get_type();
        let is64 = ft == self.e.ctx.f64_type();
        let llvm = |cx: &Self, name: &str| cx.e.intrinsic(name, &[ft.into()]);
        let inf = ft.const_float(f64::INFINITY);
        Ok(match f {
            MathFn::Sqrt => self.call1(llvm(self, "llvm.sqrt")?, &[x.into()])?,
            MathFn::Floor => self.call1(llvm(self, "llvm.floor")?, &[x.into()])?,
            MathFn::Ceil => self.call1(llvm(self, "llvm.ceil")?, &[x.into()])?,
            MathFn::Trunc => self.call1(llvm(self, "llvm.trunc")?, &[x.into()])?,
            MathFn::Fabs => self.call1(llvm(self, "llvm.fabs")?, &[x.into()])?,
            MathFn::Rint => self.call1(llvm(self, "llvm.rint")?, &[x.into()])?,
            MathFn::Degrees | MathFn::Radians => {
                let k = if f == MathFn::Degrees {
                    180.0 / std::f64::consts::PI
                } else {
                    std::f64::consts::PI / 180.0
                };
                self.b().build_float_mul(x, ft.const_float(k), "")?.into()
            }
            MathFn::Copysign => {
                self.call1(llvm(self, "llvm.copysign")?, &[x.into(), vals[1].into()])?
            }
            MathFn::Isnan => self
                .b()
                .build_float_compare(FloatPredicate::UNO, x, x, "")?
                .into(),
            MathFn::Isinf | MathFn::Isfinite => {
                let a = self
                    .call1(llvm(self, "llvm.fabs")?, &[x.into()])?
                    .into_float_value();
                let p = if f == MathFn::Isinf {
                    FloatPredicate::OEQ
                } else {
                    FloatPredicate::OLT
                };
                self.b().build_float_compare(p, a, inf, "")?.into()
            }
            _ => {
                let name = crate::lower::ptx::libdevice::function_for(f, is64)
                    .ok_or_else(|| err(format!("no lowering for math.{}", f.name())))?;
                let func = self.e.libdevice_fn(&name, ft.into(), f.arity());
                let args: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
                self.call1(func, &args)?
            }
        })
    }
}
