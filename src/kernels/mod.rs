//! Kernels from one line: CuPy's `ElementwiseKernel` and `ReductionKernel`, with bodies in
//! Python (docs/semantics.md §20).
//!
//! A definition is parameter lists and Python text. A call resolves the type placeholders
//! from its arguments (outputs first, as CuPy does), broadcasts the arguments, and
//! *generates* a kernel in the `cuda.device` dialect specialized for the dtypes, ranks and
//! layouts it sees. That source goes through the ordinary pipeline ([`crate::Module`] →
//! check → PTX) and [`crate::cache::KernelCache`]; nothing here compiles by itself.
//!
//! Diagnostics about the user's text point at that text: the definition is one
//! [`SourceFile`] (the parameter lists and expressions, one per line), and a diagnostic the
//! checker reports inside the generated kernel is mapped back to the body it came from
//! (`GeneratedSource::map`).
//!
//! This is the top layer: it uses the compiler's public API, the runtime and the cache.

pub mod elementwise;
pub mod gufunc;
pub mod reduction;

pub use elementwise::{ElementwiseKernel, ElementwiseLaunch, Output, Resolved};
pub use gufunc::{GuArg, GuResolved, GuVectorize};
pub use reduction::{ReductionKernel, ReductionLaunch, ReductionResolved, Strategy};

use crate::abi::ArgValue;
use crate::diag::{Code, Diagnostic, Diagnostics, SourceFile, Span};
use crate::runtime::{DeviceArray, RuntimeError};
use crate::types::{Kind, Scalar};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};
use ruff_text_size::Ranged;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The type of a parameter: a dtype, or a one-letter placeholder that a call resolves.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// A NumPy dtype name (`float32`).
    Fixed(Scalar),
    /// A one-letter placeholder (`T`).
    Placeholder(char),
}

/// One parameter of a definition: `[raw] TYPE NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The name the body uses.
    pub name: String,
    /// Its type.
    pub ty: ParamType,
    /// `raw`: indexed by hand, not broadcast.
    pub raw: bool,
    /// Where the name is in the definition's source.
    pub span: Span,
    /// Where the type is.
    pub type_span: Span,
}

/// A call's argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// An array: in device memory for a launch, in host memory (its `data` a host address)
    /// for the host calls (`run_host`, `call_host`, §20.8).
    Array(DeviceArray),
    /// A scalar.
    Scalar(ScalarArg),
    /// An output that was not given (it is allocated).
    Absent,
}

/// A scalar argument: its value and, for a typed scalar (`numpy.float32(2)`), its dtype. A
/// Python number (`dtype: None`) takes its kind from the value (`Bool`, `Int`, `Float`,
/// `Complex`) and NumPy's default type of that kind where it decides a placeholder.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalarArg {
    /// The value (`ArgValue::Bool`, `Int`, `UInt`, `Float` or `Complex`).
    pub value: ArgValue,
    /// The dtype of a typed scalar; `None` for a Python number.
    pub dtype: Option<Scalar>,
}

impl ScalarArg {
    /// A Python number.
    pub fn python(value: ArgValue) -> ScalarArg {
        ScalarArg { value, dtype: None }
    }

    /// The dtype the scalar has, or NumPy's default for a Python number of its kind.
    pub fn natural_dtype(&self) -> Scalar {
        if let Some(d) = self.dtype {
            return d;
        }
        match self.value {
            ArgValue::Bool(_) => Scalar::Bool,
            ArgValue::Int(_) => Scalar::Int64,
            ArgValue::UInt(_) => Scalar::UInt64,
            ArgValue::Complex(..) => Scalar::Complex128,
            _ => Scalar::Float64,
        }
    }
}

/// NumPy's kind order for `same_kind` casts: bool < unsigned < signed < float < complex.
fn kind_rank(s: Scalar) -> u8 {
    match s.kind() {
        Kind::Bool => 0,
        Kind::UInt => 1,
        Kind::Int => 2,
        Kind::Float => 3,
        Kind::Complex => 4,
    }
}

/// NumPy's `can_cast(from, to, 'same_kind')`: a cast to the same or a later kind.
pub fn can_cast_same_kind(from: Scalar, to: Scalar) -> bool {
    kind_rank(to) >= kind_rank(from)
}

/// A definition's text: its parts joined by newlines into one [`SourceFile`], so that a
/// diagnostic can point into any of them.
#[derive(Clone, Debug)]
pub(crate) struct Definition {
    pub file: SourceFile,
    /// Start offset of each part.
    pub starts: Vec<u32>,
}

impl Definition {
    pub fn new(name: &str, kind: &str, parts: &[&str]) -> Definition {
        let mut text = String::new();
        let mut starts = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            starts.push(text.len() as u32);
            text.push_str(p);
        }
        Definition {
            file: SourceFile::new(format!("<{kind} {name}>"), text),
            starts,
        }
    }

    pub fn part(&self, i: usize) -> &str {
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.file.text.len(), |&e| e as usize - 1);
        &self.file.text[self.starts[i] as usize..end]
    }

    pub fn part_span(&self, i: usize) -> Span {
        let s = self.starts[i];
        Span::new(s, s + self.part(i).len() as u32)
    }

    pub fn error(&self, list: Vec<Diagnostic>) -> crate::Error {
        crate::Error::Diagnostics(Diagnostics {
            file: self.file.clone(),
            list,
        })
    }
}

/// Names the body cannot use as parameters: the loop index, CuPy's reserved `n`, and names
/// with a leading underscore (the generated code's).
fn reserved(name: &str) -> bool {
    name == "i" || name == "n" || name.starts_with('_')
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Python keywords, which cannot name a parameter.
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Parses the parameter list in part `part` of `def` (`"float32 x, raw T y"`).
pub(crate) fn parse_params(def: &Definition, part: usize, out: &mut Vec<Diagnostic>) -> Vec<Param> {
    let text = def.part(part);
    let base = def.starts[part];
    let mut params = Vec::new();
    if text.trim().is_empty() {
        return params;
    }
    let mut pos = 0usize;
    for item in text.split(',') {
        let item_start = pos;
        pos += item.len() + 1;
        // Words with their offsets.
        let mut words = Vec::new();
        let mut off = 0;
        for w in item.split_whitespace() {
            let at = item[off..].find(w).map_or(off, |k| off + k);
            words.push((w, base + (item_start + at) as u32));
            off = at + w.len();
        }
        let span_of = |(w, s): (&str, u32)| Span::new(s, s + w.len() as u32);
        let whole = Span::new(
            base + item_start as u32,
            base + (item_start + item.len()) as u32,
        );
        let (raw, rest) = match words.first() {
            Some(&("raw", _)) => (true, &words[1..]),
            _ => (false, &words[..]),
        };
        if rest.len() != 2 {
            out.push(
                Diagnostic::error(
                    Code::E0700,
                    whole,
                    format!(
                        "a parameter is `[raw] TYPE NAME`, such as `float32 x` or `raw T y`; found `{}`",
                        item.trim()
                    ),
                )
                .with_label("expected a type and a name"),
            );
            continue;
        }
        let (tname, tspan) = (rest[0].0, span_of(rest[0]));
        let (name, nspan) = (rest[1].0, span_of(rest[1]));
        let ty = if tname.len() == 1 && tname.chars().all(|c| c.is_ascii_alphabetic()) {
            Some(ParamType::Placeholder(tname.chars().next().unwrap_or('T')))
        } else {
            Scalar::from_name(tname)
                .filter(|s| !s.is_fp8())
                .map(ParamType::Fixed)
        };
        let Some(ty) = ty else {
            out.push(
                Diagnostic::error(
                    Code::E0700,
                    tspan,
                    format!("`{tname}` is not a type: write a NumPy dtype name (`float32`, `int64`, `complex64`, …) or a one-letter placeholder (`T`)"),
                )
                .with_label("unknown type"),
            );
            continue;
        };
        if !is_identifier(name) || KEYWORDS.contains(&name) {
            out.push(
                Diagnostic::error(
                    Code::E0700,
                    nspan,
                    format!("`{name}` is not a Python identifier"),
                )
                .with_label("parameter name"),
            );
            continue;
        }
        if reserved(name) {
            out.push(
                Diagnostic::error(
                    Code::E0700,
                    nspan,
                    format!("`{name}` is reserved: `i`, `n` and names starting with `_` are the kernel's own"),
                )
                .with_label("reserved name"),
            );
            continue;
        }
        params.push(Param {
            name: name.to_string(),
            ty,
            raw,
            span: nspan,
            type_span: tspan,
        });
    }
    params
}

/// Reports parameters named twice across the lists.
pub(crate) fn check_duplicates(params: &[&Param], out: &mut Vec<Diagnostic>) {
    for (k, p) in params.iter().enumerate() {
        if let Some(first) = params[..k].iter().find(|q| q.name == p.name) {
            out.push(
                Diagnostic::error(
                    Code::E0700,
                    p.span,
                    format!("parameter `{}` is declared twice", p.name),
                )
                .with_secondary(first.span, "first declared here"),
            );
        }
    }
}

/// The C type names a C++ declaration may start with (besides dtype names and placeholders).
const CXX_TYPES: &[&str] = &[
    "float",
    "double",
    "int",
    "long",
    "short",
    "char",
    "unsigned",
    "signed",
    "auto",
    "const",
    "bool",
    "half",
    "size_t",
    "ptrdiff_t",
    "complex",
];

/// A C++ construct in a Python body: where, what it is, and how Python spells it.
fn cxx_construct(line: &str, placeholders: &[char]) -> Option<(usize, usize, String)> {
    let code = match line.find('#') {
        Some(h) => &line[..h],
        None => line,
    };
    let trimmed = code.trim_end();
    let lead = code.len() - code.trim_start().len();
    // A declaration: `T name = expr;` or `float name;`.
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    if words.len() >= 2 {
        let mut k = 0;
        while k < words.len() && (words[k] == "const" || words[k] == "unsigned") {
            k += 1;
        }
        let ty = words.get(k).copied().unwrap_or("");
        let is_type = (ty.len() == 1 && ty.chars().all(|c| placeholders.contains(&c)))
            || Scalar::from_name(ty).is_some()
            || CXX_TYPES.contains(&ty);
        let name_word = words.get(k + 1).copied().unwrap_or("");
        let name: String = name_word
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if is_type && is_identifier(&name) && !KEYWORDS.contains(&ty) {
            let rest = trimmed[lead..]
                .split_once('=')
                .map(|(_, r)| r.trim().trim_end_matches(';').trim().to_string());
            let py_ty = if ty.len() == 1 || Scalar::from_name(ty).is_some() {
                ty.to_string()
            } else {
                match ty {
                    "double" => "float64".into(),
                    "float" => "float32".into(),
                    "int" => "int32".into(),
                    "long" => "int64".into(),
                    "bool" => "bool".into(),
                    _ => String::new(),
                }
            };
            let spelling = match (rest, py_ty.is_empty()) {
                (Some(r), false) => format!("{name} = {py_ty}({r})"),
                (Some(r), true) => format!("{name} = {r}"),
                (None, _) => format!("{name} = ... (a local is declared by its first assignment)"),
            };
            return Some((
                lead,
                trimmed.len(),
                format!("a C++ declaration; Python declares a local by assigning it: `{spelling}`"),
            ));
        }
    }
    if let Some(q) = trimmed.find('?')
        && let Some(c) = trimmed[q..].find(':')
    {
        let (lhs, cond) = match trimmed[lead..q].split_once('=') {
            Some((l, r)) if !r.starts_with('=') && !l.ends_with(['<', '>', '!', '=']) => {
                (format!("{} = ", l.trim()), r.trim().to_string())
            }
            _ => (String::new(), trimmed[lead..q].trim().to_string()),
        };
        let a = trimmed[q + 1..q + c].trim();
        let b = trimmed[q + c + 1..].trim().trim_end_matches(';').trim();
        return Some((
            lead,
            trimmed.len(),
            format!("C++'s conditional operator `?:`; Python writes `{lhs}{a} if {cond} else {b}`"),
        ));
    }
    for (op, py) in [("&&", "and"), ("||", "or"), ("++", "+= 1"), ("--", "-= 1")] {
        if let Some(k) = trimmed.find(op) {
            return Some((k, k + 2, format!("C++'s `{op}`; Python writes `{py}`")));
        }
    }
    if let Some(k) = trimmed.find(['{', '}']) {
        return Some((
            k,
            k + 1,
            "a C++ brace; Python blocks are a `:` and an indented body".to_string(),
        ));
    }
    if let Some(k) = trimmed.find('!')
        && !trimmed[k + 1..].starts_with('=')
    {
        return Some((k, k + 1, "C++'s `!`; Python writes `not`".to_string()));
    }
    if trimmed.ends_with(';') {
        let k = trimmed.len() - 1;
        return Some((
            k,
            k + 1,
            format!(
                "a C++ statement terminator; Python ends a statement at the end of the line: `{}`",
                trimmed[lead..k].trim_end()
            ),
        ));
    }
    None
}

/// What a Python body reads and writes.
#[derive(Clone, Debug, Default)]
pub(crate) struct BodyNames {
    /// Names assigned (plain, annotated or augmented assignment, `for` targets).
    pub stored: BTreeSet<String>,
    /// Names read (including augmented-assignment targets).
    pub loaded: BTreeSet<String>,
    /// A `break` or `continue` outside any loop of the body (it would leave or restart the
    /// generated loop).
    pub loose_jump: Option<Span>,
    /// Whether the body branches or loops (`if`, `for`, `while`, `match`, `try`, `with`), so
    /// that an output it assigns may be left unassigned on some path.
    pub branches: bool,
    /// Whether the body has a `return` (it ends the thread: a kernel whose threads take
    /// several elements would skip the thread's others, so such a body gets one per thread).
    pub returns: bool,
}

fn collect_names(body: &[Stmt], expr: Option<&Expr>) -> BodyNames {
    use ast::visitor::{Visitor, walk_expr, walk_stmt};
    struct V(BodyNames, usize);
    impl<'a> Visitor<'a> for V {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let Stmt::AugAssign(a) = s
                && let Expr::Name(n) = &*a.target
            {
                self.0.loaded.insert(n.id.to_string());
            }
            if matches!(s, Stmt::Return(_)) {
                self.0.returns = true;
            }
            if matches!(s, Stmt::Break(_) | Stmt::Continue(_)) && self.1 == 0 {
                self.0.loose_jump.get_or_insert(s.range().into());
            }
            let is_loop = matches!(s, Stmt::For(_) | Stmt::While(_));
            if is_loop
                || matches!(
                    s,
                    Stmt::If(_) | Stmt::Match(_) | Stmt::Try(_) | Stmt::With(_)
                )
            {
                self.0.branches = true;
            }
            self.1 += usize::from(is_loop);
            crate::stack::deep(|| walk_stmt(self, s));
            self.1 -= usize::from(is_loop);
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Name(n) = e {
                let set = match n.ctx {
                    ExprContext::Load => &mut self.0.loaded,
                    _ => &mut self.0.stored,
                };
                set.insert(n.id.to_string());
            }
            crate::stack::deep(|| walk_expr(self, e));
        }
    }
    let mut v = V(BodyNames::default(), 0);
    v.visit_body(body);
    if let Some(e) = expr {
        v.visit_expr(e);
    }
    v.0
}

/// A Python body taken from part `part` of a definition: dedented, with `_ind.size()`
/// replaced, checked for C++ and for syntax, with what it reads and writes.
#[derive(Clone, Debug)]
pub(crate) struct Body {
    /// The dedented lines (`_ind.size()` replaced by the same-length `(_ind_size)`).
    pub lines: Vec<String>,
    /// For each line, the definition offset of its first character after the removed indent.
    pub origins: Vec<u32>,
    /// Names read and written.
    pub names: BodyNames,
}

/// The expression text CuPy's `_ind.size()` is replaced with: the same length, so that
/// columns map back unchanged.
const IND_SIZE: (&str, &str) = ("_ind.size()", "(_ind_size)");

impl Body {
    /// Reads part `part` of `def` as Python statements (`expression`: as one expression).
    pub fn new(
        def: &Definition,
        part: usize,
        placeholders: &[char],
        expression: bool,
        out: &mut Vec<Diagnostic>,
    ) -> Option<Body> {
        let text = def.part(part);
        let base = def.starts[part];
        let raw_lines: Vec<(usize, &str)> = {
            let mut v = Vec::new();
            let mut at = 0;
            for l in text.split('\n') {
                v.push((at, l));
                at += l.len() + 1;
            }
            v
        };
        let indent = raw_lines
            .iter()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(_, l)| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        let mut lines = Vec::new();
        let mut origins = Vec::new();
        let first = raw_lines.iter().position(|(_, l)| !l.trim().is_empty());
        let last = raw_lines.iter().rposition(|(_, l)| !l.trim().is_empty());
        let (Some(first), Some(last)) = (first, last) else {
            out.push(Diagnostic::error(
                Code::E0701,
                def.part_span(part),
                if expression {
                    "the expression is empty"
                } else {
                    "the operation is empty: write Python statements that assign the outputs"
                },
            ));
            return None;
        };
        let mut cxx = Vec::new();
        for &(at, l) in &raw_lines[first..=last] {
            let (cut, l) = if l.trim().is_empty() {
                (0, "")
            } else {
                (indent, l[indent..].trim_end_matches('\r'))
            };
            let origin = base + (at + cut) as u32;
            if let Some((s, e, why)) = cxx_construct(l, placeholders) {
                cxx.push(
                    Diagnostic::error(
                        Code::E0701,
                        Span::new(origin + s as u32, origin + e as u32),
                        format!("the body is Python, not C++: {why}"),
                    )
                    .with_label("C++ syntax"),
                );
            }
            lines.push(l.replace(IND_SIZE.0, IND_SIZE.1));
            origins.push(origin);
        }
        if !cxx.is_empty() {
            out.extend(cxx);
            return None;
        }
        let joined = lines.join("\n");
        let mode = if expression {
            ruff_python_parser::Mode::Expression
        } else {
            ruff_python_parser::Mode::Module
        };
        let parsed = ruff_python_parser::parse_unchecked(
            &joined,
            ruff_python_parser::ParseOptions::from(mode),
        );
        let body = Body {
            lines,
            origins,
            names: BodyNames::default(),
        };
        if !parsed.errors().is_empty() {
            for e in parsed.errors() {
                let span: Span = e.location.into();
                out.push(Diagnostic::error(
                    Code::E0001,
                    body.map_joined(span),
                    format!("syntax error: {}", e.error),
                ));
            }
            return None;
        }
        let names = match parsed.into_syntax() {
            ast::Mod::Module(m) => collect_names(&m.body, None),
            ast::Mod::Expression(x) => collect_names(&[], Some(&x.body)),
        };
        if let Some(span) = names.loose_jump {
            out.push(
                Diagnostic::error(
                    Code::E0704,
                    body.map_joined(span),
                    "`break` and `continue` outside a loop of the body: the body runs once per element, there is no loop to leave",
                )
                .with_label("outside a loop")
                .with_note("skip an element with `if`"),
            );
            return None;
        }
        Some(Body { names, ..body })
    }

    /// Maps a span of the joined lines to the definition.
    fn map_joined(&self, span: Span) -> Span {
        let map = |o: u32| {
            let mut at = 0u32;
            for (l, origin) in self.lines.iter().zip(&self.origins) {
                let len = l.len() as u32;
                if o <= at + len {
                    return origin + (o - at);
                }
                at += len + 1;
            }
            self.origins
                .last()
                .map_or(0, |&x| x + self.lines.last().map_or(0, |l| l.len() as u32))
        };
        Span::new(map(span.start), map(span.end))
    }

    /// The body as one line (for expressions).
    pub fn one_line(&self) -> String {
        self.lines.join(" ")
    }
}

/// Names the generated module imports for a body: `math` functions and `cuda.device` members
/// (number types, `min`-like builtins come from Python) the body reads and does not define.
pub(crate) fn imports_for(names: &BodyNames, defined: &[&str]) -> (Vec<String>, Vec<String>) {
    use crate::front::builtins::{Namespace, member};
    let mut math = Vec::new();
    let mut device = Vec::new();
    for n in &names.loaded {
        if names.stored.contains(n) || defined.contains(&n.as_str()) {
            continue;
        }
        if member(Namespace::Builtins, n).is_some() {
            continue;
        }
        if member(Namespace::Math, n).is_some() {
            math.push(n.clone());
        } else if member(Namespace::Device, n).is_some() {
            device.push(n.clone());
        }
    }
    (math, device)
}

/// Generated Python source with the map from its lines back to the definition.
#[derive(Clone, Debug)]
pub(crate) struct GeneratedSource {
    pub text: String,
    /// For each line of the text: where its code comes from — the definition offset of the
    /// character at column `indent` (a body line), or a span to blame (a wrapper line).
    lines: Vec<LineOrigin>,
}

#[derive(Clone, Copy, Debug)]
enum LineOrigin {
    Body { indent: u32, origin: u32 },
    Wrapper(Span),
}

/// Builds generated source line by line.
#[derive(Debug)]
pub(crate) struct SourceBuilder {
    src: GeneratedSource,
    /// The span blamed for wrapper lines pushed from now on.
    pub blame: Span,
}

impl SourceBuilder {
    pub fn new(blame: Span) -> SourceBuilder {
        SourceBuilder {
            src: GeneratedSource {
                text: String::new(),
                lines: Vec::new(),
            },
            blame,
        }
    }

    /// A line of wrapper code, blamed on `self.blame`.
    pub fn line(&mut self, indent: usize, text: &str) {
        let blame = self.blame;
        self.push(indent, text, LineOrigin::Wrapper(blame));
    }

    /// A wrapper line blamed on `span`.
    pub fn line_at(&mut self, indent: usize, text: &str, span: Span) {
        self.push(indent, text, LineOrigin::Wrapper(span));
    }

    /// The body's lines, indented.
    pub fn body(&mut self, indent: usize, body: &Body) {
        for (l, &o) in body.lines.iter().zip(&body.origins) {
            self.push(
                indent,
                l,
                LineOrigin::Body {
                    indent: indent as u32,
                    origin: o,
                },
            );
        }
    }

    /// A line of `prefix` + the expression body + `suffix`: columns inside the expression
    /// map back to it.
    pub fn expr_line(&mut self, indent: usize, prefix: &str, body: &Body, suffix: &str) {
        let col = indent + prefix.len();
        let origin = body.origins.first().copied().unwrap_or(0);
        let text = format!("{prefix}{}{suffix}", body.one_line());
        self.push(
            indent,
            &text,
            LineOrigin::Body {
                indent: col as u32,
                origin,
            },
        );
    }

    fn push(&mut self, indent: usize, text: &str, origin: LineOrigin) {
        for _ in 0..indent {
            self.src.text.push(' ');
        }
        self.src.text.push_str(text);
        self.src.text.push('\n');
        self.src.lines.push(origin);
    }

    pub fn finish(self) -> GeneratedSource {
        self.src
    }
}

impl GeneratedSource {
    /// Maps a span of the generated text back to the definition.
    fn map_span(&self, span: Span) -> Span {
        let line_of = |o: u32| {
            let mut start = 0u32;
            for (k, l) in self.text.split('\n').enumerate() {
                let len = l.len() as u32;
                if o <= start + len {
                    return (k, o - start);
                }
                start += len + 1;
            }
            (self.lines.len().saturating_sub(1), 0)
        };
        let (l0, c0) = line_of(span.start);
        let (l1, c1) = line_of(span.end);
        match (self.lines.get(l0), self.lines.get(l1)) {
            (Some(LineOrigin::Body { indent, origin }), _) if c0 >= *indent => {
                let start = origin + (c0 - indent);
                let end = match self.lines.get(l1) {
                    Some(LineOrigin::Body {
                        indent: i1,
                        origin: o1,
                    }) if c1 >= *i1 => o1 + (c1 - i1),
                    _ => start + 1,
                };
                Span::new(start, end.max(start))
            }
            (Some(LineOrigin::Body { origin, .. }), _) => Span::new(*origin, *origin),
            (Some(LineOrigin::Wrapper(s)), _) => *s,
            _ => Span::default(),
        }
    }

    /// The checker's diagnostics about the generated text, pointing at the definition
    /// instead; generated names (`_p_x`) read as the parameters they stand for.
    pub fn map(
        &self,
        d: Diagnostics,
        def: &Definition,
        renames: &HashMap<String, String>,
    ) -> crate::Error {
        let fix = |m: &str| {
            let mut m = m.to_string();
            for (from, to) in renames {
                m = m.replace(from.as_str(), to);
            }
            m
        };
        let list = d
            .list
            .into_iter()
            .map(|mut x| {
                x.message = fix(&x.message);
                x.primary.span = self.map_span(x.primary.span);
                x.primary.message = fix(&x.primary.message);
                for s in &mut x.secondary {
                    s.span = self.map_span(s.span);
                    s.message = fix(&s.message);
                }
                x.notes = x.notes.iter().map(|n| fix(n)).collect();
                x
            })
            .collect::<Vec<_>>();
        // A body the kernel repeats (two elements per iteration, §20.3; the reduction's
        // unrolled loops) reports the same problem once.
        let mut unique: Vec<crate::diag::Diagnostic> = Vec::new();
        for x in list {
            if !unique.contains(&x) {
                unique.push(x);
            }
        }
        def.error(unique)
    }
}

/// The broadcast shape of `shapes` (NumPy's rules), or the first pair that does not
/// broadcast.
pub fn broadcast_shapes(shapes: &[&[u64]]) -> Result<Vec<u64>, String> {
    let n = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1u64; n];
    for s in shapes {
        for (k, &d) in s.iter().enumerate() {
            let o = &mut out[n - s.len() + k];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(format!(
                    "shapes {:?} do not broadcast together",
                    shapes.iter().map(|s| s.to_vec()).collect::<Vec<_>>()
                ));
            }
        }
    }
    // Inputs that fit can broadcast to a shape that does not: `(2**40, 1)` with `(1, 2**40)`.
    // Sizes computed from it (the loop bound, an output's bytes) must not wrap.
    let fits = out
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .is_some_and(|n| n.checked_mul(16).is_some_and(|b| b <= i64::MAX as u64));
    if !fits {
        return Err(format!(
            "the broadcast shape {out:?} has too many elements to index or allocate"
        ));
    }
    Ok(out)
}

/// `a` viewed with the broadcast `shape`: strides 0 on new and stretched dimensions.
pub fn broadcast_to(a: &DeviceArray, shape: &[u64]) -> DeviceArray {
    let lead = shape.len() - a.ndim();
    let strides = (0..shape.len())
        .map(|k| {
            if k < lead || a.shape[k - lead] != shape[k] {
                0
            } else {
                a.strides[k - lead]
            }
        })
        .collect();
    DeviceArray {
        shape: shape.to_vec(),
        strides,
        ..a.clone()
    }
}

/// Merges dimensions of arrays that share `shape`: drops extents of 1 and joins a dimension
/// with the next where every array's stride allows (CuPy's `_reduce_dims`). Returns the new
/// shape and each array's strides; at least one dimension.
pub fn collapse_dims(shape: &[u64], strides: &[Vec<i64>]) -> (Vec<u64>, Vec<Vec<i64>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
    let mut out_shape: Vec<u64> = Vec::new();
    let mut out_strides: Vec<Vec<i64>> = vec![Vec::new(); strides.len()];
    for &d in &keep {
        let joinable = !out_shape.is_empty()
            && strides.iter().enumerate().all(|(a, s)| {
                let prev = *out_strides[a].last().unwrap_or(&0);
                prev == s[d].wrapping_mul(shape[d] as i64)
            });
        if joinable {
            let last = out_shape.len() - 1;
            out_shape[last] *= shape[d];
            for (a, s) in strides.iter().enumerate() {
                let l = out_strides[a].len() - 1;
                out_strides[a][l] = s[d];
            }
        } else {
            out_shape.push(shape[d]);
            for (a, s) in strides.iter().enumerate() {
                out_strides[a].push(s[d]);
            }
        }
    }
    if out_shape.is_empty() || shape.contains(&0) {
        let n: u64 = shape.iter().product();
        return (vec![n], vec![vec![1]; strides.len()]);
    }
    (out_shape, out_strides)
}

/// A builder's kernel compiled for the host (§20.8): a `@device.func` that runs the whole
/// loop on the calling thread, JIT-compiled through Cranelift. `Send + Sync`; cheap to
/// clone.
#[derive(Clone, Debug)]
pub struct HostKernel {
    f: crate::HostFunction,
    /// The generated source and the definition, to report an error's position in the
    /// definition.
    origin: Arc<(GeneratedSource, SourceFile)>,
}

impl HostKernel {
    /// The compiled function (its parameters are the launch's argument types).
    pub fn function(&self) -> &crate::HostFunction {
        &self.f
    }

    /// Runs on `args`, the launch's argument values, arrays as descriptors of host memory
    /// (any strides, 0 for broadcast dimensions, negative ones included).
    ///
    /// # Safety
    ///
    /// Every array's `data` must be a host address valid for every element its shape and
    /// strides reach, readable, and writable for the outputs, with no other thread writing
    /// the memory during the call.
    ///
    /// An out-of-range access (a `raw` index) is [`crate::HostError::IndexOutOfBounds`] at
    /// its line and column in the definition (`<ElementwiseKernel NAME>`: the input list,
    /// the output list, then the body, as diagnostics count them).
    pub unsafe fn run(&self, args: &[ArgValue]) -> Result<(), crate::Error> {
        // SAFETY: forwarded from the caller.
        match unsafe { self.f.call_raw(args) } {
            Ok(_) => Ok(()),
            Err(crate::HostError::IndexOutOfBounds { line, column }) => {
                let (source, def) = &*self.origin;
                // The generated text's offset of (line, column), both 1-based.
                let start: usize = source
                    .text
                    .split('\n')
                    .take(line.saturating_sub(1) as usize)
                    .map(|l| l.len() + 1)
                    .sum();
                let at = (start + column.saturating_sub(1) as usize) as u32;
                let mapped = source.map_span(Span::new(at, at + 1));
                let (l, c) = def.line_col(mapped.start);
                Err(crate::Error::Host(crate::HostError::IndexOutOfBounds {
                    line: l as u32,
                    column: c as u32,
                }))
            }
            Err(e) => Err(crate::Error::Host(e)),
        }
    }
}

/// Host memory for an output the host call allocated: zeroed, 8-byte aligned.
#[derive(Clone, Debug)]
pub struct HostBuffer {
    words: Vec<u64>,
    len: usize,
}

impl HostBuffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> HostBuffer {
        HostBuffer {
            words: vec![0; len.div_ceil(8).max(1)],
            len,
        }
    }

    /// The contents.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` initialized bytes; u8 has no alignment need.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }

    /// The host address of the first byte.
    pub fn address(&mut self) -> u64 {
        self.words.as_mut_ptr() as u64
    }
}

/// An output of a host call (`call_host`): the array (its `data` a host address) and, when
/// the call allocated it, its memory.
#[derive(Clone, Debug)]
pub struct HostOutput {
    /// The array.
    pub array: DeviceArray,
    /// The memory the call allocated for it (C-contiguous).
    pub buffer: Option<HostBuffer>,
}

/// Allocates zeroed C-contiguous host outputs.
pub(crate) fn allocate_host(
    missing: &[usize],
    dtypes: &[Scalar],
    shape: &[u64],
) -> Result<(Vec<DeviceArray>, Vec<HostBuffer>), crate::Error> {
    let mut arrays = Vec::new();
    let mut buffers = Vec::new();
    for &k in missing {
        let n: u64 = shape.iter().product();
        let bytes = n
            .checked_mul(dtypes[k].size())
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| arg_error(format!("an output of shape {shape:?} is too large")))?;
        let mut buf = HostBuffer::zeroed(bytes);
        arrays.push(DeviceArray::contiguous(buf.address(), dtypes[k], shape));
        buffers.push(buf);
    }
    Ok((arrays, buffers))
}

/// Pairs the outputs with the buffers allocated for the `missing` ones.
pub(crate) fn host_outputs(
    outputs: Vec<DeviceArray>,
    missing: &[usize],
    buffers: &mut [HostBuffer],
) -> Vec<HostOutput> {
    outputs
        .into_iter()
        .enumerate()
        .map(|(k, array)| HostOutput {
            array,
            buffer: missing
                .iter()
                .position(|&m| m == k)
                .map(|j| std::mem::replace(&mut buffers[j], HostBuffer::zeroed(0))),
        })
        .collect()
}

/// The host kernel of a builder's launch (§20.8): `cache`'s entry for `key`, else the
/// source `generate` gives, parsed and JIT-compiled through Cranelift for `types` (its
/// diagnostics pointing into the definition, as the device's do) and remembered.
pub(crate) fn cached_host_kernel<K: Eq + std::hash::Hash>(
    cache: &std::sync::Mutex<HashMap<K, HostKernel>>,
    key: K,
    file: &str,
    def: &Definition,
    entry: &str,
    types: &[crate::types::Type],
    generate: impl FnOnce() -> (GeneratedSource, HashMap<String, String>),
) -> Result<HostKernel, crate::Error> {
    if let Some(k) = lock(cache).get(&key) {
        return Ok(k.clone());
    }
    let (source, renames) = generate();
    let compiled = crate::Module::parse(file, &source.text)
        .map_err(crate::Error::from)
        .and_then(|module| module.host_function(entry, types));
    let f = match compiled {
        Ok(f) => HostKernel {
            f,
            origin: Arc::new((source, def.file.clone())),
        },
        Err(crate::Error::Diagnostics(d)) => {
            return Err(source.map(d, def, &renames));
        }
        Err(e) => return Err(e),
    };
    lock(cache).insert(key, f.clone());
    Ok(f)
}

/// The generated kernel `entry` of a builder's launch compiled for the CPU back end
/// (docs/semantics.md §22.4): `cache`'s entry for `key`, else the device source `generate`
/// gives, parsed and JIT-compiled whole for the CPU for `types` (its diagnostics pointing
/// into the definition) and remembered.
pub(crate) fn cached_cpu_kernel<K: Eq + std::hash::Hash>(
    cache: &std::sync::Mutex<HashMap<K, Arc<crate::runtime::cpu::CpuKernel>>>,
    key: K,
    file: &str,
    def: &Definition,
    entry: &str,
    types: &[crate::types::Type],
    generate: impl FnOnce() -> (GeneratedSource, HashMap<String, String>),
) -> Result<Arc<crate::runtime::cpu::CpuKernel>, crate::Error> {
    if let Some(k) = lock(cache).get(&key) {
        return Ok(k.clone());
    }
    let (source, renames) = generate();
    let compiled = crate::Module::parse(file, &source.text)
        .map_err(crate::Error::from)
        .and_then(|module| module.cpu_kernel(entry, types));
    let k = match compiled {
        Ok(k) => Arc::new(k),
        Err(crate::Error::Diagnostics(d)) => return Err(source.map(d, def, &renames)),
        Err(e) => return Err(e),
    };
    lock(cache).insert(key, k.clone());
    Ok(k)
}

/// Runs a generated kernel on the CPU back end on `args` (host memory) with `config`'s
/// grid, block and dynamic shared memory; a failure is a launch error naming the kernel.
///
/// # Safety
///
/// As [`crate::runtime::cpu::CpuKernel::launch_raw`]: every array of `args` is host memory
/// valid for every element its shape and strides reach.
pub(crate) unsafe fn launch_on_cpu(
    k: &crate::runtime::cpu::CpuKernel,
    args: &[ArgValue],
    config: &crate::runtime::LaunchConfig,
) -> Result<(), crate::Error> {
    let mut c = crate::runtime::cpu::CpuLaunch::new(config.grid, config.block);
    c.shared_bytes = config.shared_bytes;
    // SAFETY: the caller's promise.
    unsafe { k.launch_raw(args, &c) }.map_err(|e| {
        crate::Error::Runtime(RuntimeError::Launch {
            kernel: k.name().to_string(),
            message: e.to_string(),
        })
    })
}

/// A mutex's guard, also after a panic elsewhere poisoned it (the caches hold no
/// half-made entries: an entry is inserted whole).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An argument error of a call (a [`RuntimeError::Argument`]).
pub(crate) fn arg_error(msg: impl Into<String>) -> crate::Error {
    crate::Error::Runtime(RuntimeError::Argument(msg.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cxx_constructs_get_their_python_spelling() {
        let t = |l: &str| cxx_construct(l, &['T']).map(|x| x.2);
        assert!(t("T diff = x - y;").unwrap().contains("`diff = T(x - y)`"));
        assert!(t("float d = x;").unwrap().contains("`d = float32(x)`"));
        assert!(
            t("z = x > 0 ? x : -x;")
                .unwrap()
                .contains("`z = x if x > 0 else -x`")
        );
        assert!(t("z = a && b").unwrap().contains("`and`"));
        assert!(t("z = x + y;").unwrap().contains("`z = x + y`"));
        assert!(t("z = !a").unwrap().contains("`not`"));
        assert_eq!(t("z = (x - y) * (x - y)"), None);
        assert_eq!(t("z = x if x != 0 else y"), None);
        assert_eq!(t("z = x  # a comment; with ?: in it"), None);
    }

    #[test]
    fn broadcasting_and_collapsing() {
        assert_eq!(broadcast_shapes(&[&[2, 5], &[5]]), Ok(vec![2, 5]));
        assert_eq!(broadcast_shapes(&[&[], &[3, 1], &[1, 4]]), Ok(vec![3, 4]));
        assert!(broadcast_shapes(&[&[2, 5], &[4]]).is_err());
        // Each input fits; their broadcast does not: an error, not a wrapped size.
        let big = 1u64 << 40;
        let e = broadcast_shapes(&[&[big, 1], &[1, big]]).unwrap_err();
        assert!(e.contains("too many elements"), "{e}");
        // Two C-contiguous arrays collapse to 1-D.
        let (s, st) = collapse_dims(&[2, 3, 4], &[vec![12, 4, 1], vec![12, 4, 1]]);
        assert_eq!((s, st), (vec![24], vec![vec![1], vec![1]]));
        // A broadcast row does not.
        let (s, st) = collapse_dims(&[2, 5], &[vec![5, 1], vec![0, 1]]);
        assert_eq!((s, st), (vec![2, 5], vec![vec![5, 1], vec![0, 1]]));
        // Extents of 1 vanish; a 0-d operation is one element.
        let (s, _) = collapse_dims(&[1, 1], &[vec![1, 1]]);
        assert_eq!(s, vec![1]);
        let (s, _) = collapse_dims(&[], &[vec![]]);
        assert_eq!(s, vec![1]);
    }

    #[test]
    fn same_kind_casts_follow_numpy() {
        assert!(can_cast_same_kind(Scalar::Float64, Scalar::Float32));
        assert!(can_cast_same_kind(Scalar::Int32, Scalar::Float32));
        assert!(!can_cast_same_kind(Scalar::Float32, Scalar::Int32));
        assert!(can_cast_same_kind(Scalar::UInt8, Scalar::Int8));
        assert!(!can_cast_same_kind(Scalar::Int8, Scalar::UInt8));
    }
}
