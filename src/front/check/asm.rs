//! Inline PTX, a pydevice extension of the specification (§18.2):
//! `asm(template, result, args=(), constraints=None, volatile=False, memory=False)`.
//!
//! The checks CUDA C++ leaves to ptxas or to luck are diagnostics here: every `$N` of the
//! template names an operand (outputs first, then inputs) and every output is written; each
//! operand has a PTX register class (`h`, `r`, `l`, `f`, `d`) or is an immediate (`n`), and a
//! constraint the program spells must fit its operand's type; the result is `None`, a
//! number type, or a tuple of them.

use super::*;
use crate::diag::Code;
use crate::front::builtins::table;
use crate::ir::InlineAsm;

/// The PTX register class of a number type: `h` (16 bits), `r` (32-bit integers), `l`
/// (64-bit integers), `f` (`float32`), `d` (`float64`); `None` for types PTX operands cannot
/// have (`bool`: predicates are not operands; 8-bit integers: PTX has no 8-bit registers;
/// complex and fp8 numbers).
pub(crate) fn register_class(s: Scalar) -> Option<char> {
    use Scalar::*;
    Some(match s {
        Int16 | UInt16 | Float16 | BFloat16 => 'h',
        Int32 | UInt32 => 'r',
        Int64 | UInt64 => 'l',
        Float32 => 'f',
        Float64 => 'd',
        _ => return None,
    })
}

/// The type a weak Python number becomes for constraint `c`.
fn natural_type(c: char, float: bool) -> Option<Scalar> {
    Some(match (c, float) {
        ('r' | 'n', false) => Scalar::Int32,
        ('l', false) => Scalar::Int64,
        ('h', false) => Scalar::Int16,
        ('h', true) => Scalar::Float16,
        ('f', _) => Scalar::Float32,
        ('d', _) => Scalar::Float64,
        _ => return None,
    })
}

impl FnCx<'_, '_> {
    /// `asm(template, result, args, constraints, volatile, memory)`.
    pub(super) fn asm_call(&mut self, entry: table::Entry, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let a = self.bind(c, "asm", entry.params(), entry.required())?;
        fn bad<T>(cx: &mut FnCx<'_, '_>, at: Span, msg: String, note: &str) -> Option<T> {
            cx.diags
                .push(Diagnostic::error(Code::E0742, at, msg).with_note(note.to_string()));
            None
        }
        let Some(ast::Expr::StringLiteral(t)) = a[0] else {
            return bad(
                self,
                a[0].map_or(span, sp),
                "the `asm` template must be a string literal".into(),
                "write the PTX with `$0`, `$1`, … for the operands, outputs first",
            );
        };
        let template = t.value.to_str().to_string();
        let tspan = sp(a[0]?);
        // The result: None, a number type, or a tuple of them.
        let outputs: Vec<Scalar> = match a[1]? {
            ast::Expr::NoneLiteral(_) => Vec::new(),
            ast::Expr::Tuple(tu) => {
                let mut v = Vec::new();
                for e in tu.elts.iter() {
                    v.push(self.dtype_arg(e)?);
                }
                v
            }
            e => vec![self.dtype_arg(e)?],
        };
        let flag = |cx: &mut Self, e: Option<&ast::Expr>, what: &str| -> Option<bool> {
            match e {
                None => Some(false),
                Some(ast::Expr::BooleanLiteral(b)) => Some(b.value),
                Some(e) => bad(
                    cx,
                    sp(e),
                    format!("`{what}` must be the constant `True` or `False`"),
                    "it is decided when compiling",
                ),
            }
        };
        let volatile = flag(self, a[4], "volatile")?;
        let memory = flag(self, a[5], "memory")?;
        // The inputs: a tuple of values, or one value.
        let arg_exprs: Vec<&ast::Expr> = match a[2] {
            None => Vec::new(),
            Some(ast::Expr::Tuple(tu)) => tu.elts.iter().collect(),
            Some(e) => vec![e],
        };
        let mut inputs = Vec::new();
        for e in &arg_exprs {
            inputs.push(self.eval(e)?);
        }
        let total = outputs.len() + inputs.len();
        // The constraints the program spells, if any, one per operand.
        let spelled: Option<Vec<String>> = match a[3] {
            None | Some(ast::Expr::NoneLiteral(_)) => None,
            Some(ast::Expr::StringLiteral(s)) => Some(
                s.value
                    .to_str()
                    .split(',')
                    .map(|p| p.trim().to_string())
                    .collect(),
            ),
            Some(e) => {
                return bad(
                    self,
                    sp(e),
                    "`constraints` must be a string literal such as \"=r,r,r\"".into(),
                    "one constraint per operand, outputs (`=r`) first",
                );
            }
        };
        let cspan = a[3].map_or(span, sp);
        fn constraint_error<T>(cx: &mut FnCx<'_, '_>, cspan: Span, msg: String) -> Option<T> {
            cx.diags.push(
                Diagnostic::error(Code::E0744, cspan, msg).with_note(
                    "constraints: `h` 16-bit, `r` 32-bit integer, `l` 64-bit integer, `f` float32, `d` float64, `n` an integer constant (inputs only); outputs are written `=r`",
                ),
            );
            None
        }
        let mut letters: Vec<char> = Vec::new();
        if let Some(cs) = &spelled {
            if cs.len() != total {
                return constraint_error(
                    self,
                    cspan,
                    format!(
                        "{} constraint{} for {total} operand{} ({} output{}, {} input{})",
                        cs.len(),
                        if cs.len() == 1 { "" } else { "s" },
                        if total == 1 { "" } else { "s" },
                        outputs.len(),
                        if outputs.len() == 1 { "" } else { "s" },
                        inputs.len(),
                        if inputs.len() == 1 { "" } else { "s" },
                    ),
                );
            }
            for (i, c) in cs.iter().enumerate() {
                let out = i < outputs.len();
                let body = match (out, c.strip_prefix('=')) {
                    (true, Some(b)) => b,
                    (true, None) => {
                        return constraint_error(
                            self,
                            cspan,
                            format!("operand {i} is an output: its constraint is written `={c}`"),
                        );
                    }
                    (false, Some(_)) => {
                        return constraint_error(
                            self,
                            cspan,
                            format!(
                                "operand {i} is an input: its constraint `{c}` cannot start with `=`"
                            ),
                        );
                    }
                    (false, None) => c.as_str(),
                };
                let ok = matches!(body, "h" | "r" | "l" | "f" | "d") || (!out && body == "n");
                if !ok {
                    return constraint_error(
                        self,
                        cspan,
                        format!("`{c}` is not a constraint pydevice knows for operand {i}"),
                    );
                }
                letters.push(body.chars().next()?);
            }
        }
        // Outputs: the result types must have register classes that fit the constraints.
        for (i, s) in outputs.iter().enumerate() {
            let Some(class) = register_class(*s) else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0743,
                        sp(a[1]?),
                        format!("an inline PTX output cannot be {s}"),
                    )
                    .with_note("PTX operands are 16-, 32- or 64-bit numbers: take an int32 and convert (`bool(x)`, `int8(x)`)"),
                );
                return None;
            };
            if spelled.is_none() {
                letters.push(class);
            } else if letters[i] != class {
                return constraint_error(
                    self,
                    cspan,
                    format!(
                        "output {i} is {s}, which takes `={class}`, not `={}`",
                        letters[i]
                    ),
                );
            }
        }
        // Inputs: numbers with a register class (weak Python numbers take the constraint's
        // type), or integer constants for `n`.
        let mut args = Vec::new();
        for (j, v) in inputs.into_iter().enumerate() {
            let i = outputs.len() + j;
            let Some(s) = v.ty.as_scalar().filter(|_| matches!(v.ty, Type::Scalar(_))) else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0743,
                        v.span,
                        format!("an inline PTX operand cannot be {}", v.ty),
                    )
                    .with_note("PTX operands are 16-, 32- or 64-bit numbers"),
                );
                return None;
            };
            let want = spelled.as_ref().map(|_| letters[i]);
            let v = match (want, v.weak) {
                (Some(c), Some(_)) => {
                    let Some(t) = natural_type(c, s.is_float()) else {
                        return constraint_error(
                            self,
                            cspan,
                            format!(
                                "input {j} is a Python {}, which `{c}` cannot take",
                                if s.is_float() { "float" } else { "int" }
                            ),
                        );
                    };
                    let e = self.convert(&v, t)?;
                    Val {
                        e,
                        ty: Type::Scalar(t),
                        weak: None,
                        ..v
                    }
                }
                _ => self.concrete(v)?,
            };
            let s = v.ty.as_scalar()?;
            if want == Some('n') {
                if !(s.is_integer() && matches!(v.konst, Some(Const::Int(_)))) {
                    self.diags.push(
                        Diagnostic::error(Code::E0744, v.span, format!("input {j} has the constraint `n`, so it must be an integer constant"))
                            .with_note("an immediate operand is known when compiling: a literal or a module constant"),
                    );
                    return None;
                }
                args.push(v.e);
                continue;
            }
            let Some(class) = register_class(s) else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0743,
                        v.span,
                        format!("an inline PTX operand cannot be {s}"),
                    )
                    .with_note(
                        "PTX operands are 16-, 32- or 64-bit numbers: convert it (`int32(x)`)",
                    ),
                );
                return None;
            };
            match want {
                None => letters.push(class),
                Some(c) if c != class => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0744,
                            v.span,
                            format!("input {j} is {s}, which takes the constraint `{class}`, not `{c}`"),
                        )
                        .with_secondary(cspan, "constraints given here")
                        .with_note("convert the operand (`int64(x)`, `float32(x)`), or change its constraint"),
                    );
                    return None;
                }
                Some(_) => {}
            }
            args.push(v.e);
        }
        // The template: `$N` names operand N, `$$` is a `$`; every output must be written.
        let mut used = vec![false; total];
        let mut chars = template.char_indices().peekable();
        while let Some((_, ch)) = chars.next() {
            if ch != '$' {
                continue;
            }
            let mut digits = String::new();
            while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
                digits.push(d);
                chars.next();
            }
            if digits.is_empty() {
                if chars.peek().map(|p| p.1) == Some('$') {
                    chars.next();
                    continue;
                }
                return bad(
                    self,
                    tspan,
                    "a `$` in the `asm` template must start an operand `$N` (or be doubled: `$$`)"
                        .into(),
                    "operands are `$0`, `$1`, …; PTX registers are written with `%` as usual",
                );
            }
            match digits.parse::<usize>() {
                Ok(n) if n < total => used[n] = true,
                _ => {
                    return bad(
                        self,
                        tspan,
                        format!(
                            "the template names operand ${digits}, but there {} {total} operand{} ({} output{}, then {} input{})",
                            if total == 1 { "is" } else { "are" },
                            if total == 1 { "" } else { "s" },
                            outputs.len(),
                            if outputs.len() == 1 { "" } else { "s" },
                            total - outputs.len(),
                            if total - outputs.len() == 1 { "" } else { "s" },
                        ),
                        "operands are numbered from $0, outputs first",
                    );
                }
            }
        }
        if let Some(i) = (0..outputs.len()).find(|i| !used[*i]) {
            return bad(
                self,
                tspan,
                format!("output ${i} is never written by the template"),
                "each output's value is what the PTX writes to it",
            );
        }
        let mut constraints: Vec<String> = letters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < outputs.len() {
                    format!("={c}")
                } else {
                    c.to_string()
                }
            })
            .collect();
        if memory {
            constraints.push("~{memory}".into());
        }
        let ty = match outputs.as_slice() {
            [] => Type::None,
            [s] => Type::Scalar(*s),
            many => Type::Tuple(many.iter().map(|s| Type::Scalar(*s)).collect()),
        };
        let e = self.push(
            Expr::Asm(Box::new(InlineAsm {
                template,
                constraints: constraints.join(","),
                // PTX without outputs is kept for its effects, as GCC's rule.
                volatile: volatile || outputs.is_empty(),
                args,
            })),
            ty.clone(),
            span,
        );
        Some(self.val(e, ty, span))
    }
}
