//! The random stream's position on the device, the three primitives `ir::expand::philox`
//! computes `rand()` and `randn()` from (Philox4x32-10 and its conversions are IR, stated once
//! for every back end).
//!
//! A function that draws random numbers (itself or through a callee, `Program::uses_random`)
//! takes the thread's generator state as a trailing pointer to `{ i64 seed, i64 call }`; a
//! kernel that does takes the launch's seed as a trailing `i64` parameter and keeps the state
//! in a stack slot (which the optimizer promotes to registers once the calls are inlined).

use super::*;

impl<'ctx> Emitter<'_, 'ctx> {
    /// The type of the generator state: `{ i64 seed, i64 call }`.
    pub(super) fn rand_state_type(&self) -> StructType<'ctx> {
        let i64t = self.ctx.i64_type();
        self.ctx.struct_type(&[i64t.into(), i64t.into()], false)
    }
}

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// `RandSeed`, `RandThread` or `RandCall` (uint64).
    pub(super) fn random(&mut self, op: Intrinsic) -> R<BasicValueEnum<'ctx>> {
        let state = self
            .rng
            .ok_or_else(|| err("random numbers in a function without generator state"))?;
        let ctx = self.e.ctx;
        let i64t = ctx.i64_type();
        let st = self.e.rand_state_type();
        match op {
            Intrinsic::RandSeed => {
                let p = self.b().build_struct_gep(st, state, 0, "")?;
                Ok(self.b().build_load(i64t, p, "seed")?)
            }
            Intrinsic::RandCall => {
                let p = self.b().build_struct_gep(st, state, 1, "")?;
                let call = self.b().build_load(i64t, p, "call")?.into_int_value();
                let next = self.b().build_int_add(call, i64t.const_int(1, false), "")?;
                self.b().build_store(p, next)?;
                Ok(call.into())
            }
            Intrinsic::RandThread => {
                // The global linear thread index: (block linear index) · (threads per block) +
                // (thread linear index in its block), x fastest.
                let sreg = |name: &str| -> R<IntValue<'ctx>> {
                    let i = self
                        .e
                        .intrinsic(&format!("llvm.nvvm.read.ptx.sreg.{name}"), &[])?;
                    let v = self.call1(i, &[])?.into_int_value();
                    Ok(self.b().build_int_z_extend(v, i64t, "")?)
                };
                let (ntx, nty, ntz) = (sreg("ntid.x")?, sreg("ntid.y")?, sreg("ntid.z")?);
                let (bz, by, bx) = (sreg("ctaid.z")?, sreg("ctaid.y")?, sreg("ctaid.x")?);
                let (nby, nbx) = (sreg("nctaid.y")?, sreg("nctaid.x")?);
                let (tz, ty, tx) = (sreg("tid.z")?, sreg("tid.y")?, sreg("tid.x")?);
                let b = self.b();
                let linear = |z: IntValue<'ctx>,
                              y: IntValue<'ctx>,
                              x: IntValue<'ctx>,
                              ny: IntValue<'ctx>,
                              nx: IntValue<'ctx>|
                 -> R<IntValue<'ctx>> {
                    let zy = b.build_int_mul(z, ny, "")?;
                    let zy = b.build_int_add(zy, y, "")?;
                    let zyx = b.build_int_mul(zy, nx, "")?;
                    Ok(b.build_int_add(zyx, x, "")?)
                };
                let block = linear(bz, by, bx, nby, nbx)?;
                let inside = linear(tz, ty, tx, nty, ntx)?;
                let per_block = b.build_int_mul(b.build_int_mul(ntx, nty, "")?, ntz, "")?;
                let thread = b.build_int_add(b.build_int_mul(block, per_block, "")?, inside, "")?;
                Ok(thread.into())
            }
            other => Err(err(format!(
                "{other:?} reached the back end unexpanded (ir::expand::philox)"
            ))),
        }
    }
}
