//! `assert` and `raise` on the host: the failing call records `RAISE_BIT | line << 32 |
//! column` (bit 63 is `RAISE_BIT`, tested as the word shifted right by 63) in the call's error word (over an out-of-range index recorded before it, not
//! over an earlier `raise`) and returns at once; in a program with an `assert` or a `raise`,
//! every call of a `@func` is followed by a test of the word, so the whole host call stops,
//! as a Python exception would. `HostFunction::call` turns the word into
//! `HostError::Raised`.

use super::*;
use crate::ir::RAISE_BIT;

/// The error word of a host call that ran out of stack: `RAISE_BIT` with line and column
/// all ones (no source position has them).
pub(crate) const STACK_EXHAUSTED: u64 = u64::MAX;
/// The error word of a host call stopped by an interrupt (`host::interrupt`, Ctrl-C in
/// Python): `RAISE_BIT` with line all ones and column all ones but the lowest bit.
pub(crate) const INTERRUPTED: u64 = u64::MAX - 1;

impl FnCx<'_, '_> {
    /// `assert cond, message` (nothing with `assertions=False`).
    pub(super) fn assert(&mut self, cond: Handle<Expr>, span: crate::diag::Span) -> R<()> {
        if self.program.options.skip_assertions {
            return Ok(());
        }
        let c = self.scalar(cond)?;
        let ok = self.b.create_block();
        let fail = self.b.create_block();
        self.b.ins().brif(c, ok, &[], fail, &[]);
        self.b.switch_to_block(fail);
        self.record_and_return(span)?;
        self.b.switch_to_block(ok);
        Ok(())
    }

    /// `raise E("message")`: record and return; code after it is dead.
    pub(super) fn raise(&mut self, span: crate::diag::Span) -> R<()> {
        self.record_and_return(span)?;
        self.dead_block();
        Ok(())
    }

    /// Records the error and ends the current block with a return.
    fn record_and_return(&mut self, span: crate::diag::Span) -> R<()> {
        let (line, col) = self.program.file.line_col(span.start);
        let code = (RAISE_BIT | (line as u64) << 32 | col as u64) as i64;
        let word = self.error_word.ok_or_else(|| err("error word"))?;
        let old = self.b.ins().load(ct::I64, flags(), word, 0);
        let raised = self.b.ins().ushr_imm_u(old, 63);
        let code = self.b.ins().iconst(ct::I64, code);
        let new = self.b.ins().select(raised, old, code);
        self.b.ins().store(flags(), new, word, 0);
        self.return_zeros()
    }

    /// The function's stack check, after its frame is allocated: the word after the error
    /// word is the lowest stack address the call may use (0: no limit). Below it, the
    /// function records [`STACK_EXHAUSTED`] and returns, and the callers return in turn
    /// (every program tests the word after its calls), so deep recursion or a frame too
    /// large for the stack left (a big `local_array`) ends the host call with an error, as
    /// CPython's `RecursionError`, instead of overflowing the native stack. The frame itself
    /// is only reserved, not touched, before this check.
    pub(super) fn check_stack(&mut self) -> R<()> {
        let word = self.error_word.ok_or_else(|| err("error word"))?;
        let sp = self.b.ins().get_stack_pointer(ct::I64);
        let limit = self.b.ins().load(ct::I64, flags(), word, 8);
        let low = self.b.ins().icmp(IntCC::UnsignedLessThan, sp, limit);
        let fail = self.b.create_block();
        let ok = self.b.create_block();
        self.b.ins().brif(low, fail, &[], ok, &[]);
        self.b.switch_to_block(fail);
        let code = self.b.ins().iconst(ct::I64, STACK_EXHAUSTED as i64);
        self.b.ins().store(flags(), code, word, 0);
        self.return_zeros()?;
        self.b.switch_to_block(ok);
        Ok(())
    }

    /// At a loop's back-edge in a host call: when the flag the call's context points to
    /// (its third word, loaded on entry) is set, record [`INTERRUPTED`] and return; the
    /// callers return in turn (every program with a call tests the word after it). One
    /// load and a branch per iteration, so an endless loop can be stopped (Ctrl-C).
    pub(super) fn poll_interrupt(&mut self) -> R<()> {
        let Some(flag) = self.interrupt else {
            return Ok(());
        };
        let word = self.error_word.ok_or_else(|| err("error word"))?;
        let set = self.b.ins().load(ct::I32, flags(), flag, 0);
        let stop = self.b.create_block();
        let go = self.b.create_block();
        self.b.ins().brif(set, stop, &[], go, &[]);
        self.b.set_cold_block(stop);
        self.b.switch_to_block(stop);
        let code = self.b.ins().iconst(ct::I64, INTERRUPTED as i64);
        self.b.ins().store(flags(), code, word, 0);
        self.return_zeros()?;
        self.b.switch_to_block(go);
        Ok(())
    }

    /// After a call, in a program that can raise: return at once if the callee raised.
    pub(super) fn propagate_raise(&mut self) -> R<()> {
        let word = self.error_word.ok_or_else(|| err("error word"))?;
        let w = self.b.ins().load(ct::I64, flags(), word, 0);
        let raised = self.b.ins().ushr_imm_u(w, 63);
        let stop = self.b.create_block();
        let go = self.b.create_block();
        self.b.ins().brif(raised, stop, &[], go, &[]);
        self.b.switch_to_block(stop);
        self.return_zeros()?;
        self.b.switch_to_block(go);
        Ok(())
    }

    /// Returns zeros of the function's result type (the caller ignores them).
    fn return_zeros(&mut self) -> R<()> {
        let mut vals = Vec::new();
        if self.f.ret != Type::None {
            for leaf in leaves(&self.f.ret).ok_or_else(|| err("result type"))? {
                let t = reg_type(leaf.scalar);
                vals.push(self.zero(t));
            }
        }
        self.b.ins().return_(&vals);
        Ok(())
    }
}

/// Whether `b` has a loop (at any depth): its function polls the interrupt flag.
pub(super) fn has_loop(b: &crate::ir::Block) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Loop { .. } => true,
        StmtKind::If {
            then, otherwise, ..
        } => has_loop(then) || has_loop(otherwise),
        _ => false,
    })
}

/// Whether `program` has an `assert` (that is compiled in) or a `raise`.
pub(super) fn can_raise(program: &Program) -> bool {
    fn any(b: &crate::ir::Block, asserts: bool) -> bool {
        b.iter().any(|s| match &s.kind {
            StmtKind::Raise { .. } => true,
            StmtKind::Assert { .. } => asserts,
            StmtKind::If {
                then, otherwise, ..
            } => any(then, asserts) || any(otherwise, asserts),
            StmtKind::Loop {
                body, continuing, ..
            } => any(body, asserts) || any(continuing, asserts),
            _ => false,
        })
    }
    let asserts = !program.options.skip_assertions;
    // A call may also run out of stack (`FnCx::check_stack`): every program with a call
    // tests the word after it.
    let calls = program
        .functions
        .iter()
        .any(|(_, f)| f.exprs.iter().any(|(_, e)| matches!(e, Expr::Call(..))));
    calls || program.functions.iter().any(|(_, f)| any(&f.body, asserts))
}
