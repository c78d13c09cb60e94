//! Analyses of a checked program that report what the language forbids but the types do
//! not show: barriers under thread-dependent control (E0241, [`divergence`]) and references
//! that outlive their storage (E0242, [`escape`]). They read the IR and the intrinsics'
//! declarations ([`crate::ir::Intrinsic::flags`]) only, never the AST, so every front end
//! shares them; the front end runs them on each specialization before it is expanded and
//! lowered.

pub mod divergence;
pub mod escape;

use crate::diag::Diagnostic;
use crate::ir::Program;

/// Every analysis's diagnostics for `program`, escapes first.
pub fn check(program: &Program) -> Vec<Diagnostic> {
    let mut found = escape::check(program);
    found.extend(divergence::check(program));
    found
}
