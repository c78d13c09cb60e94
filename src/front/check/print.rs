//! `print(*args, sep=' ', end='\n')` as a statement: each argument becomes printf pieces
//! (`ir::PrintPiece`), values promoted as C passes variadic arguments (integers to 64 bits,
//! floats to `float64`), bools written `True`/`False`, tuples, vectors and structs spelled
//! out piece by piece, f-strings split into their literal text and replacement fields, and
//! each field's format spec translated from Python's mini-language to a printf directive.
//! What printf cannot write is E0308, at the offending argument or spec.

use super::*;
use crate::ir::{PrintConv, PrintPiece};

/// A Python format spec translated to printf: flags, width and precision, and the
/// presentation type (`None` for the default).
struct Spec {
    printf: String,
    precision: bool,
    ty: Option<char>,
}

/// Translates a format spec (`>8.3f`) to printf, or says why printf cannot do it.
fn translate(spec: &str) -> Result<Spec, String> {
    let c: Vec<char> = spec.chars().collect();
    let mut i = 0;
    let mut flags = String::new();
    let align_at = |k: usize| c.get(k).is_some_and(|a| "<>=^".contains(*a));
    let (fill, align) = if align_at(1) {
        i = 2;
        (Some(c[0]), Some(c[1]))
    } else if align_at(0) {
        i = 1;
        (None, Some(c[0]))
    } else {
        (None, None)
    };
    match (fill, align) {
        (_, Some('^')) => return Err("centring (`^`) has no printf equivalent".into()),
        (Some('0'), Some('=')) => flags.push('0'),
        (Some(f), _) if f != ' ' => {
            return Err(format!("the fill character `{f}` has no printf equivalent"));
        }
        (_, Some('=')) => {
            return Err("padding after the sign (`=`) needs the fill `0` for printf".into());
        }
        (_, Some('<')) => flags.push('-'),
        _ => {}
    }
    if let Some(s @ ('+' | ' ' | '-')) = c.get(i) {
        if *s != '-' {
            flags.push(*s);
        }
        i += 1;
    }
    if c.get(i) == Some(&'z') {
        return Err("`z` (negative zero as zero) has no printf equivalent".into());
    }
    if c.get(i) == Some(&'#') {
        flags.push('#');
        i += 1;
    }
    if c.get(i) == Some(&'0') {
        flags.push('0');
        i += 1;
    }
    while let Some(d) = c.get(i).filter(|d| d.is_ascii_digit()) {
        flags.push(*d);
        i += 1;
    }
    if let Some(g @ (',' | '_')) = c.get(i) {
        return Err(format!("digit grouping (`{g}`) has no printf equivalent"));
    }
    let mut precision = false;
    if c.get(i) == Some(&'.') {
        flags.push('.');
        i += 1;
        let start = i;
        while let Some(d) = c.get(i).filter(|d| d.is_ascii_digit()) {
            flags.push(*d);
            i += 1;
        }
        if i == start {
            return Err("a `.` without a precision".into());
        }
        precision = true;
    }
    let ty = match &c[i..] {
        [] => None,
        [t @ ('d' | 'x' | 'X' | 'o' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G')] => Some(*t),
        [t @ ('b' | 'c' | 'n' | '%' | 's')] => {
            return Err(format!(
                "the presentation type `{t}` has no printf equivalent"
            ));
        }
        _ => return Err(format!("`{spec}` is not a format spec")),
    };
    if ty == Some('o') && flags.contains('#') {
        return Err("`#o` writes `0o` in Python but `0` in printf".into());
    }
    Ok(Spec {
        printf: flags,
        precision,
        ty,
    })
}

impl FnCx<'_, '_> {
    /// Checks a `print(...)` statement and appends its `StmtKind::Print`.
    pub(super) fn print(&mut self, c: &ast::ExprCall, span: Span, out: &mut Block) {
        let mut sep = " ".to_string();
        let mut end = "\n".to_string();
        let mut ok = true;
        for kw in &c.arguments.keywords {
            let name = kw.arg.as_ref().map(|a| a.id.as_str());
            let text = match &kw.value {
                ast::Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
                ast::Expr::NoneLiteral(_) => None,
                _ => {
                    self.error(
                        Code::E0308,
                        sp(&kw.value),
                        "`sep` and `end` of `print` must be string literals (or `None`)",
                    );
                    ok = false;
                    continue;
                }
            };
            match name {
                Some("sep") => sep = text.unwrap_or_else(|| " ".into()),
                Some("end") => end = text.unwrap_or_else(|| "\n".into()),
                _ => {
                    self.error(
                        Code::E0308,
                        sp(kw),
                        "`print` in device code takes only the keywords `sep` and `end` (no `file`, no `flush`)",
                    );
                    ok = false;
                }
            }
        }
        let mut pieces = Vec::new();
        for (k, a) in c.arguments.args.iter().enumerate() {
            if k > 0 {
                text(&mut pieces, &sep);
            }
            ok &= self.print_arg(a, &mut pieces).is_some();
        }
        text(&mut pieces, &end);
        if ok {
            out.push(Stmt {
                kind: StmtKind::Print(pieces),
                span,
            });
        }
    }

    fn print_arg(&mut self, a: &ast::Expr, pieces: &mut Vec<PrintPiece>) -> Option<()> {
        match a {
            ast::Expr::StringLiteral(s) => {
                text(pieces, s.value.to_str());
                Some(())
            }
            ast::Expr::FString(f) => {
                let mut ok = true;
                for part in f.value.iter() {
                    match part {
                        ast::FStringPart::Literal(s) => text(pieces, &s.value),
                        ast::FStringPart::FString(fs) => {
                            for el in fs.elements.iter() {
                                ok &= self.fstring_element(el, pieces).is_some();
                            }
                        }
                    }
                }
                ok.then_some(())
            }
            ast::Expr::Starred(_) => {
                self.error(
                    Code::E0308,
                    sp(a),
                    "`print(*args)` with a starred argument is not supported in device code",
                );
                None
            }
            _ => {
                let v = self.expr(a);
                let v = self.value_of(v)?;
                self.print_value(&v, None, pieces)
            }
        }
    }

    fn fstring_element(
        &mut self,
        el: &ast::InterpolatedStringElement,
        pieces: &mut Vec<PrintPiece>,
    ) -> Option<()> {
        let f = match el {
            ast::InterpolatedStringElement::Literal(l) => {
                text(pieces, &l.value);
                return Some(());
            }
            ast::InterpolatedStringElement::Interpolation(f) => f,
        };
        if f.debug_text.is_some() {
            self.error(
                Code::E0308,
                sp(f),
                "self-documenting f-string fields (`{x=}`) are not supported in device code",
            );
            return None;
        }
        if f.conversion != ast::ConversionFlag::None {
            self.error(
                Code::E0308,
                sp(f),
                "f-string conversions (`!r`, `!s`, `!a`) are not supported in device code",
            );
            return None;
        }
        let spec = match &f.format_spec {
            None => None,
            Some(s) => {
                let mut t = String::new();
                for e in s.elements.iter() {
                    match e {
                        ast::InterpolatedStringElement::Literal(l) => t.push_str(&l.value),
                        ast::InterpolatedStringElement::Interpolation(n) => {
                            self.error(Code::E0308, sp(n), "a format spec computed at run time (nested `{...}`) is not supported in device code");
                            return None;
                        }
                    }
                }
                Some((t, sp(s.as_ref())))
            }
        };
        if let ast::Expr::StringLiteral(s) = f.expression.as_ref() {
            if let Some((_, at)) = spec {
                self.error(
                    Code::E0308,
                    at,
                    "a format spec on a string is not supported in device code",
                );
                return None;
            }
            text(pieces, s.value.to_str());
            return Some(());
        }
        let v = self.expr(&f.expression);
        let v = self.value_of(v)?;
        self.print_value(&v, spec.as_ref().map(|(t, s)| (t.as_str(), *s)), pieces)
    }

    /// Appends the pieces that write `v` (with a format spec from an f-string field).
    fn print_value(
        &mut self,
        v: &Val,
        spec: Option<(&str, Span)>,
        pieces: &mut Vec<PrintPiece>,
    ) -> Option<()> {
        let scalar = match &v.ty {
            Type::Scalar(s) => Some(*s),
            Type::WarpMask => Some(Scalar::UInt32),
            _ => None,
        };
        let Some(s) = scalar else {
            return self.print_aggregate(v, spec, pieces);
        };
        let spec = match spec {
            None => None,
            Some((t, at)) => match translate(t) {
                Ok(x) => Some((x, at)),
                Err(why) => {
                    self.error(Code::E0308, at, format!("format spec `{t}`: {why}"));
                    return None;
                }
            },
        };
        let bad = |me: &mut Self, at: Span, what: &str| {
            me.error(Code::E0308, at, what.to_string());
            None
        };
        let (conv, letter) = match s.kind() {
            Kind::Bool => {
                if let Some((_, at)) = spec {
                    return bad(
                        self,
                        at,
                        "a format spec on a bool is not supported in device code",
                    );
                }
                (PrintConv::Bool, 's')
            }
            Kind::Int | Kind::UInt => {
                let unsigned = s.kind() == Kind::UInt;
                match spec.as_ref().and_then(|(x, _)| x.ty) {
                    None | Some('d') => {
                        if let Some((x, at)) = &spec
                            && x.precision
                        {
                            return bad(
                                self,
                                *at,
                                "Python allows no precision in an integer's format spec",
                            );
                        }
                        if unsigned {
                            (PrintConv::Unsigned, 'u')
                        } else {
                            (PrintConv::Signed, 'd')
                        }
                    }
                    Some(t @ ('x' | 'X' | 'o')) => {
                        // Negative values print as two's complement (documented).
                        if unsigned {
                            (PrintConv::Unsigned, t)
                        } else {
                            (PrintConv::Signed, t)
                        }
                    }
                    Some(t) => (PrintConv::Float, t),
                }
            }
            // A float printed without a spec is written as Python's `repr` writes it
            // (`PrintPiece::REPR`): the shortest digits that read back to the value at its
            // width. A spec without a type keeps `%g`'s rule.
            Kind::Float if spec.is_none() => (PrintConv::Float, PrintPiece::REPR),
            Kind::Float => match spec.as_ref().and_then(|(x, _)| x.ty) {
                None => (PrintConv::Float, 'g'),
                Some(t @ ('d' | 'x' | 'X' | 'o')) => {
                    let at = spec.as_ref().map_or(v.span, |(_, at)| *at);
                    return bad(
                        self,
                        at,
                        &format!("Python refuses the format `{t}` for a float"),
                    );
                }
                Some(t) => (PrintConv::Float, t),
            },
            Kind::Complex => {
                return bad(
                    self,
                    v.span,
                    "printing a complex number is not supported in device code",
                );
            }
        };
        if s.is_fp8() {
            return bad(
                self,
                v.span,
                "printing an fp8 number is not supported in device code",
            );
        }
        let target = match conv {
            PrintConv::Signed => Scalar::Int64,
            PrintConv::Unsigned => Scalar::UInt64,
            PrintConv::Float => Scalar::Float64,
            PrintConv::Bool => Scalar::Bool,
        };
        let value = self.convert(v, target)?;
        pieces.push(PrintPiece::Value {
            value,
            conv,
            spec: if letter == PrintPiece::REPR {
                format!(".{}", PrintPiece::repr_digits(s))
            } else {
                spec.map(|(x, _)| x.printf).unwrap_or_default()
            },
            letter,
        });
        Some(())
    }

    /// Tuples (`(1, 2.5)`), vectors (`float32x2(1, 2.5)`) and structs
    /// (`point(x=1, y=2.5)`), element by element.
    fn print_aggregate(
        &mut self,
        v: &Val,
        spec: Option<(&str, Span)>,
        pieces: &mut Vec<PrintPiece>,
    ) -> Option<()> {
        let (open, names, elems): (String, Vec<Option<String>>, Vec<Type>) = match &v.ty {
            Type::Tuple(ts) => ("(".into(), vec![None; ts.len()], ts.clone()),
            Type::Vector { elem, len } => (
                format!("{}(", v.ty),
                vec![None; usize::from(*len)],
                vec![Type::Scalar(*elem); usize::from(*len)],
            ),
            Type::Struct(st) => (
                format!("{}(", st.name),
                st.fields.iter().map(|(n, _)| Some(n.clone())).collect(),
                st.fields.iter().map(|(_, t)| t.clone()).collect(),
            ),
            t => {
                self.error(
                    Code::E0308,
                    v.span,
                    format!("cannot print a value of type {t} in device code"),
                );
                return None;
            }
        };
        if let Some((_, at)) = spec {
            self.error(
                Code::E0308,
                at,
                format!(
                    "a format spec on a value of type {} is not supported in device code",
                    v.ty
                ),
            );
            return None;
        }
        text(pieces, &open);
        for (i, (name, t)) in names.iter().zip(elems).enumerate() {
            if i > 0 {
                text(pieces, ", ");
            }
            if let Some(n) = name {
                text(pieces, &format!("{n}="));
            }
            let e = self.push(Expr::Extract(v.e, i as u32), t.clone(), v.span);
            let ev = self.val(e, t, v.span);
            self.print_value(&ev, None, pieces)?;
        }
        if matches!(v.ty, Type::Tuple(ref ts) if ts.len() == 1) {
            text(pieces, ",");
        }
        text(pieces, ")");
        Some(())
    }
}

/// Appends literal text, merged with a text piece before it.
fn text(pieces: &mut Vec<PrintPiece>, t: &str) {
    if t.is_empty() {
        return;
    }
    if let Some(PrintPiece::Text(prev)) = pieces.last_mut() {
        prev.push_str(t);
    } else {
        pieces.push(PrintPiece::Text(t.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::translate;

    fn printf(s: &str) -> Result<(String, Option<char>), String> {
        translate(s).map(|x| (x.printf, x.ty))
    }

    #[test]
    fn format_specs_translate_to_printf() {
        assert_eq!(printf(".3f"), Ok((".3".into(), Some('f'))));
        assert_eq!(printf(">8.2e"), Ok(("8.2".into(), Some('e'))));
        assert_eq!(printf("<6d"), Ok(("-6".into(), Some('d'))));
        assert_eq!(printf("+08x"), Ok(("+08".into(), Some('x'))));
        assert_eq!(printf("0=10"), Ok(("010".into(), None)));
        assert_eq!(printf("#X"), Ok(("#".into(), Some('X'))));
        assert_eq!(printf(""), Ok(("".into(), None)));
    }

    #[test]
    fn specs_printf_cannot_do_are_refused() {
        for s in [
            "^10", "*>5", ",d", "_x", "b", "%", "c", "#o", "z.2f", "5.q", ".",
        ] {
            assert!(translate(s).is_err(), "{s}");
        }
    }
}
