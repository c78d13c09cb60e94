//! `assert` and `raise` on the device. The failing thread records the error in the word the
//! bounds check uses (`ir::BOUNDS_ERROR_SYMBOL`, `RAISE_BIT | line << 32 | column`, the first
//! error of the launch wins through a compare-and-swap), and the winner fills
//! `ir::ERROR_INFO_SYMBOL` with its thread and block indices, the file name and the message.
//! Then the thread executes PTX `exit`: it stops without a trap, so the context stays usable;
//! the other threads run on.

use super::*;
use crate::ir::{ERROR_INFO_SYMBOL, ERROR_INFO_WORDS, RAISE_BIT};

impl<'ctx> FnEmitter<'_, '_, 'ctx> {
    /// `assert cond, message` (nothing with `assertions=False`).
    pub(super) fn assert(
        &mut self,
        cond: Handle<Expr>,
        message: &str,
        span: crate::diag::Span,
    ) -> R<()> {
        if self.e.program.options.skip_assertions {
            return Ok(());
        }
        let c = self.value(cond)?.into_int_value();
        let fail = self.new_block("assert.fail");
        let ok = self.new_block("assert.ok");
        self.b().build_conditional_branch(c, ok, fail)?;
        self.b().position_at_end(fail);
        self.record_and_exit(message, span)?;
        self.b().position_at_end(ok);
        Ok(())
    }

    /// `raise E("message")`: record, then stop the thread; code after it is dead.
    pub(super) fn raise(&mut self, message: &str, span: crate::diag::Span) -> R<()> {
        self.record_and_exit(message, span)?;
        self.dead_block();
        Ok(())
    }

    /// Records the error and ends the current block with PTX `exit`.
    fn record_and_exit(&mut self, message: &str, span: crate::diag::Span) -> R<()> {
        let ctx = self.e.ctx;
        let i64t = ctx.i64_type();
        let (line, col) = self.e.program.file.line_col(span.start);
        let code = RAISE_BIT | (line as u64) << 32 | col as u64;
        let g = self.e.bounds_error_global();
        let r = self.b().build_cmpxchg(
            g,
            i64t.const_zero(),
            i64t.const_int(code, false),
            inkwell::AtomicOrdering::Monotonic,
            inkwell::AtomicOrdering::Monotonic,
        )?;
        let won = self.b().build_extract_value(r, 1, "won")?.into_int_value();
        let record = self.new_block("raise.record");
        let stop = self.new_block("raise.stop");
        self.b().build_conditional_branch(won, record, stop)?;
        self.b().position_at_end(record);
        self.write_error_info(Vec::new(), message)?;
        self.b().build_unconditional_branch(stop)?;
        self.b().position_at_end(stop);
        self.asm("exit;", "", None, &[])?;
        self.b().build_unreachable()?;
        Ok(())
    }

    /// Fills `ERROR_INFO_SYMBOL`: the thread and block indices (3 words), then `extra`
    /// words, then the file name and `text`, each NUL-terminated (truncated to fit).
    pub(super) fn write_error_info(&mut self, extra: Vec<IntValue<'ctx>>, text: &str) -> R<()> {
        let i64t = self.e.ctx.i64_type();
        let info = self.error_info_global();
        let info_t = i64t.array_type(ERROR_INFO_WORDS as u32);
        let mut ids = Vec::new();
        for kind in ["tid", "ctaid"] {
            for a in ["x", "y", "z"] {
                let v = self.read_sreg(&format!("llvm.nvvm.read.ptx.sreg.{kind}.{a}"))?;
                ids.push(self.b().build_int_z_extend(v, i64t, "")?);
            }
        }
        let mut words = Vec::new();
        for pair in ids.chunks(2) {
            let hi = self
                .b()
                .build_left_shift(pair[1], i64t.const_int(32, false), "")?;
            words.push(self.b().build_or(pair[0], hi, "")?);
        }
        words.extend(extra);
        let mut bytes = self.e.program.file.name.as_bytes().to_vec();
        bytes.push(0);
        bytes.extend_from_slice(text.as_bytes());
        let room = (ERROR_INFO_WORDS - words.len()) * 8 - 1;
        bytes.truncate(room);
        bytes.push(0);
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            words.push(i64t.const_int(u64::from_le_bytes(b), false));
        }
        for (k, w) in words.iter().enumerate() {
            // SAFETY: `k < ERROR_INFO_WORDS`, the length of the array `info` points to.
            let slot = unsafe {
                self.b().build_in_bounds_gep(
                    info_t,
                    info,
                    &[i64t.const_zero(), i64t.const_int(k as u64, false)],
                    "",
                )?
            };
            self.b().build_store(slot, *w)?;
        }
        Ok(())
    }

    fn read_sreg(&self, name: &str) -> R<IntValue<'ctx>> {
        let f = self.e.intrinsic(name, &[])?;
        Ok(self.call1(f, &[])?.into_int_value())
    }

    /// The module's `ERROR_INFO_SYMBOL` global.
    fn error_info_global(&self) -> PointerValue<'ctx> {
        let i64t = self.e.ctx.i64_type();
        let t = i64t.array_type(ERROR_INFO_WORDS as u32);
        let g = self
            .e
            .module
            .get_global(ERROR_INFO_SYMBOL)
            .unwrap_or_else(|| {
                let g =
                    self.e
                        .module
                        .add_global(t, Some(AddressSpace::from(1u16)), ERROR_INFO_SYMBOL);
                g.set_initializer(&t.const_zero());
                g.set_alignment(8);
                g
            });
        g.as_pointer_value()
    }
}
