//! Declarations of device functions written in another language:
//! `@device.func(extern=True)` (or `extern="c_symbol"`) on a `def` whose body is `...`.
//!
//! Such a function is an `extern "C" __device__` function of CUDA C++ (or any code with its
//! calling convention). Its parameter and result types come from the annotations, which must
//! all be present and name heterogeneous types; calls to it are ordinary calls that the PTX
//! back end lowers with the interoperable convention, and the PTX gets an `.extern .func`
//! that a linker resolves ([`crate::runtime::link`]). This file only reads and validates the
//! declaration; the checker and the back end treat the result like any interoperable
//! function without a body.

use super::ParsedModule;
use crate::diag::Code;
use crate::diag::{Diagnostic, Span};
use crate::ir::FunctionKind;
use crate::types::Type;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

/// A function defined elsewhere: its C symbol and its declared signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExternDecl {
    /// The `extern "C"` symbol (the Python name unless `extern="name"` gives another).
    pub symbol: String,
    /// Parameter types, from the annotations.
    pub params: Vec<Type>,
    /// Result type, from the return annotation (`None` for `-> None`).
    pub ret: Type,
    /// The `extern=` keyword.
    pub span: Span,
}

/// Whether `s` is a C identifier (what an `extern "C"` symbol must be).
fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ParsedModule {
    /// Reads the `extern=` keyword of `@kernel`/`@func`: `Some` declaration (signature still
    /// empty) for `extern=True` or `extern="symbol"`, `None` for `extern=False` or an error.
    pub(super) fn extern_option(
        &self,
        kind: FunctionKind,
        def: &ast::StmtFunctionDef,
        kw: &ast::Keyword,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<ExternDecl> {
        let span: Span = kw.range().into();
        if kind == FunctionKind::Kernel {
            diags.push(
                Diagnostic::error(Code::E0520, span, "a kernel cannot be declared `extern`")
                    .with_note(
                        "only device functions can be called across languages; launch a CUDA \
                         C++ kernel from the host, or declare the `__device__` function it \
                         calls with `@device.func(extern=True)`",
                    ),
            );
            return None;
        }
        let symbol = match &kw.value {
            Expr::BooleanLiteral(b) if b.value => def.name.id.to_string(),
            Expr::BooleanLiteral(_) => return None,
            Expr::StringLiteral(s) => s.value.to_str().to_string(),
            other => {
                diags.push(
                    Diagnostic::error(
                        Code::E0524,
                        other.range().into(),
                        "`extern` must be `True` or a string naming the C symbol",
                    )
                    .with_note("write `extern=True` (the symbol is the Python name) or `extern=\"c_name\"`"),
                );
                return None;
            }
        };
        if !is_c_identifier(&symbol) {
            diags.push(
                Diagnostic::error(
                    Code::E0524,
                    kw.value.range().into(),
                    format!(
                        "`{symbol}` is not a C identifier, so it cannot be an `extern \"C\"` symbol"
                    ),
                )
                .with_note("a symbol is letters, digits and `_`, not starting with a digit"),
            );
            return None;
        }
        Some(ExternDecl {
            symbol,
            params: Vec::new(),
            ret: Type::None,
            span,
        })
    }

    /// Checks an `extern` declaration's `def` and fills in its signature: the body must be
    /// `...` (a docstring may come first), every parameter and the result annotated with a
    /// type that can cross languages, and no defaults or variadic parameters.
    pub(super) fn declare_extern(
        &self,
        def: &ast::StmtFunctionDef,
        decl: &mut ExternDecl,
        diags: &mut Vec<Diagnostic>,
    ) {
        let defaults = crate::types::promote::Defaults::of_dialect(self.numba);
        let name = def.name.id.as_str();
        let body: Vec<&Stmt> = def
            .body
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                // A leading docstring is documentation.
                !(*i == 0
                    && matches!(s, Stmt::Expr(e) if matches!(e.value.as_ref(), Expr::StringLiteral(_))))
            })
            .map(|(_, s)| s)
            .collect();
        let ellipsis = matches!(body.as_slice(), [Stmt::Expr(e)] if matches!(e.value.as_ref(), Expr::EllipsisLiteral(_)));
        if !ellipsis {
            let at: Span = body
                .first()
                .map(|s| s.range().into())
                .unwrap_or_else(|| def.name.range.into());
            diags.push(
                Diagnostic::error(
                    Code::E0521,
                    at,
                    format!("`extern` function `{name}` cannot have a body"),
                )
                .with_secondary(decl.span, "declared `extern` here")
                .with_note(
                    "its definition is CUDA C++ code linked in later; write the body as `...`",
                ),
            );
        }
        let p = &def.parameters;
        let extra: Option<Span> = p
            .vararg
            .as_deref()
            .map(|v| v.range().into())
            .or_else(|| p.kwarg.as_deref().map(|v| v.range().into()))
            .or_else(|| p.kwonlyargs.first().map(|v| v.range().into()))
            .or_else(|| {
                p.posonlyargs
                    .iter()
                    .chain(p.args.iter())
                    .find_map(|a| a.default.as_deref().map(|d| d.range().into()))
            });
        if let Some(at) = extra {
            diags.push(
                Diagnostic::error(
                    Code::E0525,
                    at,
                    format!("`extern` function `{name}` can only have plain positional parameters"),
                )
                .with_note(
                    "C has no default values, `*args`, `**kwargs` or keyword-only parameters",
                ),
            );
        }
        for a in p.posonlyargs.iter().chain(p.args.iter()) {
            let pname = a.parameter.name.id.as_str();
            match a.parameter.annotation.as_deref() {
                None => diags.push(
                    Diagnostic::error(
                        Code::E0522,
                        a.parameter.range().into(),
                        format!("parameter `{pname}` of `extern` function `{name}` needs a type annotation"),
                    )
                    .with_note("the C signature comes from the annotations: write, for example, `x: float32`"),
                ),
                Some(ann) => match self.annotation_type(ann, defaults) {
                    Some(t) if crosses_languages(&t) => decl.params.push(t),
                    Some(t) => diags.push(
                        Diagnostic::error(
                            Code::E0522,
                            ann.range().into(),
                            format!("{t} cannot be passed to CUDA C++"),
                        )
                        .with_note("parameters of `extern` functions are numbers, vectors, tuples, `@struct` values and arrays"),
                    ),
                    None => diags.push(self.unknown_annotation(ann, pname, name)),
                },
            }
        }
        match def.returns.as_deref() {
            None => diags.push(
                Diagnostic::error(
                    Code::E0523,
                    def.name.range.into(),
                    format!("`extern` function `{name}` needs a return annotation"),
                )
                .with_note("write `-> None` when it returns nothing"),
            ),
            Some(Expr::NoneLiteral(_)) => decl.ret = Type::None,
            Some(ann) => match self.annotation_type(ann, defaults) {
                Some(Type::Array(_)) => diags.push(
                    Diagnostic::error(
                        Code::E0523,
                        ann.range().into(),
                        "an `extern` function cannot return an array",
                    )
                    .with_note("take the array as a parameter and write into it"),
                ),
                Some(t) if crate::abi::passed_indirectly(&t) => diags.push(
                    Diagnostic::error(
                        Code::E0523,
                        ann.range().into(),
                        format!("returning {t} from an `extern` function is not supported yet"),
                    )
                    .with_note("nvcc returns values holding `__half2` or `__nv_bfloat162` through a hidden pointer, which pydevice does not lower yet"),
                ),
                Some(t) if crosses_languages(&t) => decl.ret = t,
                Some(t) => diags.push(Diagnostic::error(
                    Code::E0523,
                    ann.range().into(),
                    format!("{t} cannot be returned from CUDA C++"),
                )),
                None => diags.push(self.unknown_annotation(ann, "the result", name)),
            },
        }
    }

    fn unknown_annotation(&self, ann: &Expr, what: &str, name: &str) -> Diagnostic {
        let what = if what == "the result" {
            what.to_string()
        } else {
            format!("`{what}`")
        };
        Diagnostic::error(
            Code::E0522,
            ann.range().into(),
            format!("the annotation of {what} of `extern` function `{name}` is not a type"),
        )
        .with_note(
            "write a number type (`float32`), a vector type (`float32x3`), a `@struct` class \
             defined above the declaration, or an array in Numba's notation (`\"float32[:]\"`)",
        )
    }
}

/// Whether values of `t` can be passed to CUDA C++ (`extern "C"` has a representation for it).
fn crosses_languages(t: &Type) -> bool {
    match t {
        Type::Scalar(_) | Type::Vector { .. } | Type::Array(_) => true,
        Type::Tuple(ts) => !ts.is_empty() && ts.iter().all(crosses_languages),
        Type::Struct(st) => st.fields.iter().all(|(_, f)| crosses_languages(f)),
        _ => false,
    }
}
