//! The front end: Python source → a module table → (per specialization) typed IR.
//!
//! [`parse`] reads a module with ruff's parser and records what device code can refer to:
//! imports of `cuda.device`, module-level constants, and the functions decorated with
//! `@kernel` or `@func`. It accepts host code around them (it is simply not compiled) and
//! only reports what is wrong with the device parts. [`check::specialize`] then types one
//! entry for concrete argument types and produces an [`ir::Program`](crate::ir::Program).

pub mod builtins;
pub mod check;
pub mod const_array;
pub mod consts;
pub mod dialect;
mod external;
mod webs;

use crate::diag::Code;
use crate::diag::{Diagnostic, Diagnostics, SourceFile, Span};
use crate::ir::{BinaryOp, FunctionKind};
use builtins::{Builtin, Namespace};
use consts::Const;
use dialect::{Dialect, Rules};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use std::collections::HashMap;

/// What a module-level name refers to.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// A function defined in the module (index into `functions`).
    Function(usize),
    /// A `@struct` class defined in the module (index into `structs`).
    Struct(usize),
    /// A constant known at compile time.
    Const(Const),
    /// An imported namespace.
    Namespace(Namespace),
    /// A compiler-provided entity.
    Builtin(Builtin),
    /// A name from a module device code cannot use (`numpy`, say).
    Foreign(String),
    /// A name from `cuda.device` the compiler does not provide yet.
    Planned(String),
    /// A global bound to something only host code can compute.
    Host,
    /// `None` passed as an argument to a `@func` (§5.3), or a module global bound to `None`
    /// (§15.4): a compile-time value, which only `is None` / `is not None` (and `== None`)
    /// can test.
    NoneArg,
}

/// Options given to `@kernel(...)` or `@func(...)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DecoratorOptions {
    /// `interop=True`
    pub interop: bool,
    /// `max_threads=N` (kernels): the most threads per block it will be launched with.
    pub max_threads: Option<u32>,
    /// `min_blocks=N` (kernels): blocks per SM the compiler should keep room for.
    pub min_blocks: Option<u32>,
    /// `fastmath=True` (kernels)
    pub fastmath: bool,
    /// `contract=False` (kernels): `a * b + c` is never one fused multiply-add (§3.13).
    pub no_contract: bool,
    /// `lineinfo=True` or `debug=True` (kernels): source lines in the PTX.
    pub lineinfo: bool,
    /// `debug=True` (kernels): full DWARF for cuda-gdb, compiled at -O0 (implies `lineinfo`).
    pub debug: bool,
    /// `bounds_check=True` (kernels): out-of-range indices are reported, not executed.
    pub bounds_check: bool,
    /// `wraparound=False` (kernels): negative indices do not count from the end (§5.1).
    pub no_wraparound: bool,
    /// `restrict=True` (kernels): array parameters do not overlap when one is written (§12).
    pub restrict: bool,
    /// `assertions=False` (kernels): `assert` statements are compiled out.
    pub skip_assertions: bool,
    /// numba's `max_registers=N`.
    pub max_registers: Option<u32>,
    /// numba's signature argument of `@cuda.jit`.
    pub signature: Option<Vec<crate::types::Type>>,
    /// The result type of that signature, where it gives one (`"int64(int64)"`).
    pub signature_ret: Option<crate::types::Type>,
    /// `extern=True` / `extern="symbol"` (`@func`): defined in another language.
    pub external: Option<external::ExternDecl>,
    /// `cluster=(x, y, z)` (kernels, sm_90): the thread block cluster shape, with the
    /// option's span (§18.1).
    pub cluster: Option<([u32; 3], Span)>,
}

/// A function defined at module level.
#[derive(Clone, Debug)]
pub(crate) struct FunctionDecl {
    pub name: String,
    /// `None` for functions without `@kernel` or `@func` (host code).
    pub kind: Option<FunctionKind>,
    pub options: DecoratorOptions,
    /// Index of its `def` in the module body (of its class, for a method).
    pub stmt: usize,
    /// For a method: its index in the class body.
    pub member: Option<usize>,
    /// Argument types given by the decorator (numba's `@cuda.jit("void(float32[:])")`).
    pub signature: Option<Vec<crate::types::Type>>,
    /// The `def` line's name.
    pub name_span: Span,
}

/// A `@struct` class defined at module level.
#[derive(Clone, Debug)]
pub(crate) struct StructDecl {
    /// Its type, once its fields resolved (`None` after an error in them).
    pub ty: Option<crate::types::StructType>,
    /// Each field's default value (`x: float32 = 0.0`), used when a constructor omits it.
    pub defaults: Vec<Option<Const>>,
}

/// A parsed module: the source, its syntax tree and its module-level names.
#[derive(Debug)]
pub struct ParsedModule {
    pub(crate) file: SourceFile,
    pub(crate) body: Vec<Stmt>,
    pub(crate) items: HashMap<String, Item>,
    pub(crate) functions: Vec<FunctionDecl>,
    pub(crate) structs: Vec<StructDecl>,
    /// `from cuda.device import *` was seen.
    pub(crate) star_device: bool,
    /// The module's dialect, from its imports (numba's, cupyx's or `cuda.device`'s).
    pub(crate) dialect: Dialect,
    /// Bytes of constant memory the module's constant arrays take so far (§1.3).
    pub(crate) const_bytes: u64,
}

impl ParsedModule {
    /// The rules of the module's dialect.
    pub(crate) fn rules(&self) -> &'static Rules {
        self.dialect.rules()
    }

    /// The source file.
    pub fn file(&self) -> &SourceFile {
        &self.file
    }

    pub(crate) fn def(&self, f: &FunctionDecl) -> &ast::StmtFunctionDef {
        match (&self.body[f.stmt], f.member) {
            (Stmt::FunctionDef(d), None) => d,
            (Stmt::ClassDef(c), Some(m)) => match &c.body[m] {
                Stmt::FunctionDef(d) => d,
                _ => unreachable!("FunctionDecl::member always indexes a def"),
            },
            _ => unreachable!("FunctionDecl::stmt always indexes a def or a class"),
        }
    }

    /// The type of a `@struct` class.
    pub(crate) fn struct_type(&self, idx: usize) -> Option<&crate::types::StructType> {
        self.structs.get(idx).and_then(|s| s.ty.as_ref())
    }

    /// A method of a `@struct` class, by name.
    pub(crate) fn method(&self, struct_name: &str, method: &str) -> Option<usize> {
        let full = format!("{struct_name}.{method}");
        self.functions.iter().position(|f| f.name == full)
    }

    pub(crate) fn function(&self, name: &str) -> Option<(usize, &FunctionDecl)> {
        self.functions
            .iter()
            .enumerate()
            .find(|(_, f)| f.name == name)
    }

    /// The expression a module-level name is bound to, when one plain assignment at the
    /// top level binds it (`NEWER = provides(sm80)`).
    pub(crate) fn global_value(&self, name: &str) -> Option<&Expr> {
        let mut found = None;
        for s in &self.body {
            if let Stmt::Assign(a) = s
                && a.targets
                    .iter()
                    .any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name))
            {
                if found.is_some() || a.targets.len() != 1 {
                    return None;
                }
                found = Some(a.value.as_ref());
            }
        }
        found
    }

    /// Looks a module-level name up: the module's own names, then `from cuda.device import *`,
    /// then Python's builtins.
    pub(crate) fn lookup(&self, name: &str) -> Option<Item> {
        if let Some(i) = self.items.get(name) {
            return Some(i.clone());
        }
        if self.star_device
            && let Some(b) = builtins::table::member(Namespace::Device, name)
        {
            return Some(Item::Builtin(b));
        }
        builtins::table::member(Namespace::Builtins, name).map(Item::Builtin)
    }
}

/// E0113: a kernel, interoperable or `extern` function whose name is not ASCII. Its name is
/// its PTX symbol and its C++ name (§1.2.1, the ABI header), and PTX identifiers are ASCII.
fn non_ascii_symbol(def: &ast::StmtFunctionDef) -> Diagnostic {
    Diagnostic::error(
        Code::E0113,
        def.name.range.into(),
        format!(
            "`{}` names a kernel or an interoperable function, whose name must be ASCII",
            def.name.id
        ),
    )
    .with_note("the name is the PTX symbol and the C++ name, and PTX identifiers are ASCII; private `@func`s may have any name")
}

/// The deepest nesting of expressions and statements a module may have (§1.1): CPython
/// itself refuses more than 200 nested parentheses and runs out of recursion on chains of
/// some thousands of operators. Below it, every stage handles the depth on any thread (the
/// recursive walks grow their stack, see `crate::stack`).
pub const MAX_NESTING: usize = 10_000;

/// The deepest indentation a module may have: CPython's tokenizer refuses more than 100
/// levels ("too many levels of indentation"). LLVM's loop passes take time quadratic in the
/// depth of a loop nest, so deeper nests of loops would compile slowly for no program
/// CPython accepts.
pub const MAX_INDENTATION: usize = 100;

/// The deepest nesting of expressions and statements in `body`, and where it is; then the
/// deepest indentation (statements nested in compound statements), and where it is.
fn nesting_depth(body: &[Stmt]) -> (usize, Span, usize, Span) {
    use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
    struct Depth {
        now: usize,
        max: usize,
        at: Span,
        stmts: usize,
        max_stmts: usize,
        stmt_at: Span,
    }
    impl Depth {
        fn enter(&mut self, span: Span) {
            self.now += 1;
            if self.now > self.max {
                self.max = self.now;
                self.at = span;
            }
        }
    }
    impl<'a> Visitor<'a> for Depth {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            self.enter(s.range().into());
            self.stmts += 1;
            if self.stmts > self.max_stmts {
                self.max_stmts = self.stmts;
                self.stmt_at = s.range().into();
            }
            crate::stack::deep(|| walk_stmt(self, s));
            self.stmts -= 1;
            self.now -= 1;
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            self.enter(e.range().into());
            crate::stack::deep(|| walk_expr(self, e));
            self.now -= 1;
        }
    }
    let mut d = Depth {
        now: 0,
        max: 0,
        at: Span::default(),
        stmts: 0,
        max_stmts: 0,
        stmt_at: Span::default(),
    };
    d.visit_body(body);
    (d.max, d.at, d.max_stmts.saturating_sub(1), d.stmt_at)
}

/// The names a top-level compound statement (`if`, `for`, `while`, `with`, `try`,
/// `match`) may bind in the module's scope: assignment, loop and `with` targets, walrus
/// targets. Function and class bodies and comprehensions have scopes of their own; `def`,
/// `class` and imports inside such blocks are not followed.
fn block_bindings(stmt: &Stmt) -> Vec<String> {
    use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
    struct Names(Vec<String>);
    impl<'a> Visitor<'a> for Names {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            match s {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                s => crate::stack::deep(|| walk_stmt(self, s)),
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Name(n) if n.ctx == ast::ExprContext::Store => self.0.push(n.id.to_string()),
                Expr::Lambda(_)
                | Expr::ListComp(_)
                | Expr::SetComp(_)
                | Expr::DictComp(_)
                | Expr::Generator(_) => {}
                e => crate::stack::deep(|| walk_expr(self, e)),
            }
        }
    }
    let mut v = Names(Vec::new());
    v.visit_stmt(stmt);
    v.0
}

/// The options `@kernel(...)` takes (decorator keywords).
const KERNEL_OPTIONS: &[&str] = &[
    "interop",
    "max_threads",
    "min_blocks",
    "fastmath",
    "contract",
    "lineinfo",
    "debug",
    "bounds_check",
    "wraparound",
    "restrict",
    "assertions",
    "cluster",
];

/// The options `@func(...)` takes.
const FUNC_OPTIONS: &[&str] = &["interop", "extern"];

/// Parses a module and records its device functions; syntax errors and errors in decorators
/// or imports are returned together.
pub fn parse(file: SourceFile) -> Result<ParsedModule, Diagnostics> {
    let parsed = ruff_python_parser::parse_unchecked(
        &file.text,
        ruff_python_parser::ParseOptions::from(ruff_python_parser::Mode::Module),
    );
    let errors = parsed.errors();
    let mut diags: Vec<Diagnostic> = errors
        .iter()
        .take(crate::diag::MAX_RENDERED - 1)
        .map(|e| {
            Diagnostic::error(
                Code::E0001,
                e.location.into(),
                format!("syntax error: {}", e.error),
            )
        })
        .collect();
    // A file of stray tokens has an error per token: past the first hundred, one
    // diagnostic counts the rest, so the messages stay small (the CLI and Python alike).
    if let Some(next) = errors.get(crate::diag::MAX_RENDERED - 1) {
        let more = errors.len() - (crate::diag::MAX_RENDERED - 1);
        diags.push(
            Diagnostic::error(
                Code::E0001,
                next.location.into(),
                format!("{more} more syntax errors from here on are not shown"),
            )
            .with_note("fix the errors above first; many of the later ones may follow from them"),
        );
    }
    if !diags.is_empty() {
        return Err(Diagnostics { file, list: diags });
    }
    let body = match parsed.into_syntax() {
        ast::Mod::Module(m) => m.body.into_iter().collect::<Vec<_>>(),
        ast::Mod::Expression(_) => Vec::new(),
    };
    let (depth, deepest, indent, indented) = nesting_depth(&body);
    if indent > MAX_INDENTATION {
        diags.push(Diagnostic::error(
            Code::E0002,
            indented,
            format!(
                "this statement is indented {indent} levels deep; at most {MAX_INDENTATION} are allowed (CPython refuses about as many)"
            ),
        ).with_note("move the inner blocks into functions"));
    }
    if depth > MAX_NESTING {
        diags.push(
            Diagnostic::error(
                Code::E0002,
                deepest,
                format!("this is nested {depth} levels deep; at most {MAX_NESTING} are allowed"),
            )
            .with_note("split the expression with locals, or the statement into functions"),
        );
        // Dropping a syntax tree recurses once per level: give it the stack it needs.
        stacker::grow((1 << 20) + depth * 1024, move || drop(body));
        return Err(Diagnostics { file, list: diags });
    }
    if !diags.is_empty() {
        return Err(Diagnostics { file, list: diags });
    }
    let mut module = ParsedModule {
        file,
        body: Vec::new(),
        items: HashMap::new(),
        functions: Vec::new(),
        structs: Vec::new(),
        star_device: false,
        dialect: Dialect::CudaDevice,
        const_bytes: 0,
    };
    for (index, stmt) in body.iter().enumerate() {
        module.declare(index, stmt, &mut diags);
    }
    module.body = body;
    if module.rules().split_locals {
        let sites: Vec<(usize, Option<usize>)> = module
            .functions
            .iter()
            .filter(|f| f.kind.is_some())
            .map(|f| (f.stmt, f.member))
            .collect();
        for (stmt, member) in sites {
            match (&mut module.body[stmt], member) {
                (Stmt::FunctionDef(d), None) => webs::split_locals(d),
                (Stmt::ClassDef(c), Some(m)) => {
                    if let Some(Stmt::FunctionDef(d)) = c.body.get_mut(m) {
                        webs::split_locals(d);
                    }
                }
                _ => {}
            }
        }
    }
    if diags.is_empty() {
        Ok(module)
    } else {
        Err(Diagnostics {
            file: module.file,
            list: diags,
        })
    }
}

impl ParsedModule {
    fn declare(&mut self, index: usize, stmt: &Stmt, diags: &mut Vec<Diagnostic>) {
        match stmt {
            Stmt::Import(imp) => {
                for alias in &imp.names {
                    let path = alias.name.id.as_str();
                    match &alias.asname {
                        Some(asname) => {
                            self.dialect = self.dialect.with_import(path);
                            let item = match path {
                                "cuda.device" => Item::Namespace(Namespace::Device),
                                "cuda.device.random" => Item::Namespace(Namespace::DeviceRandom),
                                "cuda" => Item::Namespace(Namespace::Cuda),
                                "math" => Item::Namespace(Namespace::Math),
                                "cmath" => Item::Namespace(Namespace::Cmath),
                                "operator" => Item::Namespace(Namespace::Operator),
                                "numba" => Item::Namespace(Namespace::Numba),
                                "numba.cuda" => Item::Namespace(Namespace::NumbaCuda),
                                "cupyx.jit" => Item::Namespace(Namespace::CupyxJit),
                                "numpy" | "cupy" => Item::Namespace(Namespace::Numpy),
                                other => Item::Foreign(other.to_string()),
                            };
                            self.items.insert(asname.id.to_string(), item);
                        }
                        None => {
                            let head = path.split('.').next().unwrap_or(path);
                            self.dialect = self.dialect.with_import(head);
                            let item = if head == "cuda" {
                                Item::Namespace(Namespace::Cuda)
                            } else if head == "numba" {
                                Item::Namespace(Namespace::Numba)
                            } else if head == "cupyx" {
                                Item::Namespace(Namespace::Cupyx)
                            } else if head == "numpy" || head == "cupy" {
                                Item::Namespace(Namespace::Numpy)
                            } else if head == "math" {
                                Item::Namespace(Namespace::Math)
                            } else if head == "cmath" {
                                Item::Namespace(Namespace::Cmath)
                            } else if head == "operator" {
                                Item::Namespace(Namespace::Operator)
                            } else {
                                Item::Foreign(head.to_string())
                            };
                            self.items.insert(head.to_string(), item);
                        }
                    }
                }
            }
            Stmt::ImportFrom(imp) => {
                let module = imp.module.as_ref().map(|m| m.id.as_str()).unwrap_or("");
                self.dialect = self.dialect.with_import(module);
                for alias in &imp.names {
                    let name = alias.name.id.as_str();
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).id.to_string();
                    // numba, cupyx and NumPy names map onto the same entities.
                    if let Some(item) =
                        dialect_namespace(module).and_then(|ns| builtins::member(ns, name))
                    {
                        self.items.insert(bound, item);
                        continue;
                    }
                    // A dialect module imported from its parent (`from numba.core import
                    // types`, as numba-cuda's own code imports it).
                    if let Some(ns) = dialect_namespace(&format!("{module}.{name}")) {
                        self.items.insert(bound, Item::Namespace(ns));
                        continue;
                    }
                    let item = match (module, name) {
                        ("cuda.device", "*") => {
                            self.star_device = true;
                            continue;
                        }
                        ("cuda", "device") => Item::Namespace(Namespace::Device),
                        ("math", n) => match builtins::member(Namespace::Math, n) {
                            Some(item) => item,
                            None => {
                                diags.push(Diagnostic::error(
                                    Code::E0102,
                                    alias.range().into(),
                                    format!("`math.{n}` is not available in device code"),
                                ));
                                continue;
                            }
                        },
                        ("cmath", n) => match builtins::member(Namespace::Cmath, n) {
                            Some(item) => item,
                            None => {
                                diags.push(Diagnostic::error(
                                    Code::E0102,
                                    alias.range().into(),
                                    format!("`cmath.{n}` is not available in device code"),
                                ));
                                continue;
                            }
                        },
                        ("cuda.device", n) => match builtins::member(Namespace::Device, n) {
                            Some(item) => item,
                            None => {
                                diags.push(
                                    Diagnostic::error(
                                        Code::E0102,
                                        alias.range().into(),
                                        format!("`cuda.device` has no member `{n}`"),
                                    )
                                    .with_label("not defined by the cuda.device specification"),
                                );
                                continue;
                            }
                        },
                        (m, _) => Item::Foreign(m.to_string()),
                    };
                    self.items.insert(bound, item);
                }
            }
            Stmt::FunctionDef(def) => {
                let (kind, mut options) = self.decorators(def, diags);
                if let Some(ext) = options.external.as_mut() {
                    self.declare_extern(def, ext, diags);
                }
                let exported = kind == Some(FunctionKind::Kernel)
                    || options.interop
                    || options
                        .external
                        .as_ref()
                        .is_some_and(|e| e.symbol == def.name.id.as_str());
                if exported && !def.name.id.is_ascii() {
                    diags.push(non_ascii_symbol(def));
                }
                let decl = FunctionDecl {
                    name: def.name.id.to_string(),
                    kind,
                    signature: options.signature.clone(),
                    options,
                    stmt: index,
                    member: None,
                    name_span: def.name.range.into(),
                };
                self.define_function(decl);
            }
            Stmt::Assign(a) => {
                let value = self.eval_const(&a.value);
                let none = matches!(a.value.as_ref(), Expr::NoneLiteral(_));
                for t in &a.targets {
                    if let Expr::Name(n) = t
                        && value.is_none()
                    {
                        // `x = None`, and `T = numpy.float16`: an alias of a scalar type
                        // (§15.4).
                        let item = if none {
                            Item::NoneArg
                        } else if let Some(st) = self.dtype_record(&a.value) {
                            // A structured dtype (`np.dtype([...])`): the record struct,
                            // usable as a dtype like a `@struct` class (§5.16).
                            let defaults = vec![None; st.fields.len()];
                            self.structs.push(StructDecl {
                                ty: Some(st),
                                defaults,
                            });
                            Item::Struct(self.structs.len() - 1)
                        } else {
                            match self.resolve_static(&a.value) {
                                Some(item @ Item::Builtin(Builtin::Scalar(_))) => item,
                                _ => Item::Host,
                            }
                        };
                        self.bind(n.id.as_str(), item);
                        continue;
                    }
                    self.bind_target(t, value.clone(), const_array::span_of(a));
                }
            }
            Stmt::AugAssign(a) => {
                // `N += 1` at the top level: folded when both sides are constants.
                if let Expr::Name(n) = a.target.as_ref() {
                    let value = match (self.items.get(n.id.as_str()), binary_op(a.op)) {
                        (Some(Item::Const(c)), Some(op)) => {
                            let c = c.clone();
                            self.eval_const(&a.value)
                                .and_then(|v| consts::fold_binary(op, &c, &v))
                        }
                        _ => None,
                    };
                    self.bind(n.id.as_str(), value.map(Item::Const).unwrap_or(Item::Host));
                }
            }
            Stmt::If(_)
            | Stmt::For(_)
            | Stmt::While(_)
            | Stmt::With(_)
            | Stmt::Try(_)
            | Stmt::Match(_) => {
                // A name a top-level block may bind (`if FAST: N = 8`) has no one value at
                // compile time: it is a host global from here on (E0106 if device code reads
                // it) rather than the value of an earlier binding.
                for name in block_bindings(stmt) {
                    if !matches!(
                        self.items.get(&name),
                        Some(Item::Function(_) | Item::Struct(_))
                    ) {
                        self.bind(&name, Item::Host);
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                if let Expr::Name(n) = a.target.as_ref() {
                    let value = a
                        .value
                        .as_deref()
                        .and_then(|v| self.eval_const(v))
                        .map(|c| self.name_const_arrays(c, n.id.as_str(), const_array::span_of(a)));
                    self.bind(n.id.as_str(), value.map(Item::Const).unwrap_or(Item::Host));
                }
            }
            Stmt::ClassDef(c) => self.declare_struct(index, c, diags),
            _ => {}
        }
    }

    /// Records a module-level function. A name bound to a function before (`def f` twice,
    /// decorated or not) is rebound as Python rebinds it: the later definition replaces the
    /// earlier one in place, so every lookup by name (compile, check, the host path and
    /// [`ParsedModule::function`]) sees the last body (docs/semantics.md §1.2.2).
    fn define_function(&mut self, decl: FunctionDecl) {
        if let Some(Item::Function(i)) = self.items.get(&decl.name)
            && self.functions[*i].member.is_none()
        {
            let i = *i;
            self.functions[i] = decl;
            return;
        }
        // A name bound to something else before (a constant, a class) loses that binding;
        // an earlier function of this name rebound since then (`def f`, `f = 3`, `def f`)
        // is no longer reachable by name.
        self.unbind_function(&decl.name);
        self.items
            .insert(decl.name.clone(), Item::Function(self.functions.len()));
        self.functions.push(decl);
    }

    /// Binds an assignment target to its value: a name to the constant (or to a host global
    /// without one), a tuple or list of targets element by element when the value is a
    /// constant tuple of as many elements (`A, B, C = 32, 8, 4`), every name of it to a host
    /// global otherwise (`a, *rest = ...`, a run-time value).
    fn bind_target(&mut self, target: &Expr, value: Option<Const>, span: Span) {
        match target {
            Expr::Name(n) => {
                let value = value.map(|c| self.name_const_arrays(c, n.id.as_str(), span));
                self.bind(n.id.as_str(), value.map(Item::Const).unwrap_or(Item::Host));
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let parts = match value {
                    Some(Const::Tuple(items))
                        if items.len() == elts.len()
                            && !elts.iter().any(|e| matches!(e, Expr::Starred(_))) =>
                    {
                        items.into_iter().map(Some).collect()
                    }
                    _ => vec![None; elts.len()],
                };
                for (e, v) in elts.iter().zip(parts) {
                    match e {
                        Expr::Starred(s) => self.bind_target(&s.value, None, span),
                        e => self.bind_target(e, v, span),
                    }
                }
            }
            _ => {}
        }
    }

    /// Binds a module-level name to a non-function item, as an assignment does.
    fn bind(&mut self, name: &str, item: Item) {
        if matches!(self.items.get(name), Some(Item::Function(_))) {
            self.unbind_function(name);
        }
        self.items.insert(name.to_string(), item);
    }

    /// Forgets the module-level function bound to `name`, if any, when the name is bound to
    /// something else (`f = 3` after `def f`): lookups by name must not find its body.
    fn unbind_function(&mut self, name: &str) {
        for f in self.functions.iter_mut() {
            if f.member.is_none() && f.name == name {
                f.name = format!("<rebound {name}>");
                f.kind = None;
            }
        }
    }

    /// A class: a `@struct` (fields from its annotations, `@func` methods), or host code.
    fn declare_struct(&mut self, index: usize, c: &ast::StmtClassDef, diags: &mut Vec<Diagnostic>) {
        let name = c.name.id.to_string();
        // A class redefined under the same name: the earlier one's methods are gone, as in
        // Python (§1.2.2).
        let prefix = format!("{name}.");
        for f in self.functions.iter_mut() {
            if f.member.is_some() && f.name.starts_with(&prefix) {
                f.name = format!("<rebound {}>", f.name);
                f.kind = None;
            }
        }
        let mut align = None;
        let mut is_struct = false;
        for dec in &c.decorator_list {
            let (target, call) = match &dec.expression {
                Expr::Call(call) => (call.func.as_ref(), Some(call)),
                e => (e, None),
            };
            if self.resolve_static(target) != Some(Item::Builtin(Builtin::Struct)) {
                continue;
            }
            is_struct = true;
            let Some(call) = call else { continue };
            for a in call.arguments.args.iter() {
                diags.push(Diagnostic::error(
                    Code::E0103,
                    a.range().into(),
                    "`@struct` takes only the keyword argument `align`",
                ));
            }
            for kw in call.arguments.keywords.iter() {
                match (
                    kw.arg.as_ref().map(|a| a.id.as_str()),
                    self.eval_const(&kw.value),
                ) {
                    (Some("align"), Some(Const::Int(n)))
                        if n > 0 && n <= 4096 && n & (n - 1) == 0 =>
                    {
                        align = Some(n as u64)
                    }
                    (Some("align"), _) => diags.push(Diagnostic::error(
                        Code::E0103,
                        kw.value.range().into(),
                        "`align` must be a constant power of two up to 4096",
                    )),
                    _ => diags.push(
                        Diagnostic::error(
                            Code::E0103,
                            kw.range().into(),
                            "unknown keyword argument for `@struct`",
                        )
                        .with_note("supported options: align"),
                    ),
                }
            }
        }
        if !is_struct {
            self.bind(&name, Item::Host);
            return;
        }
        let mut fields: Vec<(String, crate::types::Type)> = Vec::new();
        let mut defaults: Vec<Option<Const>> = Vec::new();
        let mut field_align: Vec<u64> = Vec::new();
        let mut ok = true;
        for (m, stmt) in c.body.iter().enumerate() {
            match stmt {
                Stmt::AnnAssign(a) => {
                    let Expr::Name(n) = a.target.as_ref() else {
                        continue;
                    };
                    let mut annotation = a.annotation.as_ref();
                    let mut falign = 0;
                    if let Expr::Call(c) = annotation
                        && self.resolve_static(&c.func) == Some(Item::Builtin(Builtin::Align))
                    {
                        match self.align_call(c) {
                            Ok((t, n)) => {
                                annotation = t;
                                falign = n;
                            }
                            Err(d) => {
                                diags.push(*d);
                                ok = false;
                                continue;
                            }
                        }
                    }
                    match self
                        .annotation_type(annotation, crate::types::promote::Defaults::CUDA_DEVICE)
                    {
                        Some(t) => {
                            field_align.push(falign);
                            match a.value.as_deref() {
                                Some(v) => match self.field_default(&n.id, &t, v) {
                                    Ok(c) => defaults.push(Some(c)),
                                    Err(d) => {
                                        diags.push(*d);
                                        ok = false;
                                    }
                                },
                                None if defaults.iter().any(Option::is_some) => {
                                    diags.push(
                                        Diagnostic::error(
                                            Code::E0422,
                                            a.range().into(),
                                            format!("field `{}` has no default, but an earlier field has one", n.id),
                                        )
                                        .with_note("as in a dataclass, fields with defaults come after those without"),
                                    );
                                    ok = false;
                                }
                                None => defaults.push(None),
                            }
                            fields.push((n.id.to_string(), t));
                        }
                        None if matches!(a.annotation.as_ref(), Expr::Call(c)
                            if self.resolve_static(&c.func) == Some(Item::Builtin(Builtin::AtomicClass))) =>
                        {
                            diags.push(
                                Diagnostic::error(Code::E0213, a.annotation.range().into(), format!("field `{}`: unsupported `Atomic` declaration", n.id))
                                    .with_note("write `device.Atomic(dtype)` or `device.Atomic(dtype, align=N)`: dtype a number type of at most 8 bytes, N a constant power of two up to 4096"),
                            );
                            ok = false;
                        }
                        None => {
                            diags.push(self.bad_field_hint(&n.id, &a.annotation));
                            ok = false;
                        }
                    }
                }
                Stmt::FunctionDef(def) => {
                    let (kind, options) = self.decorators(def, diags);
                    if kind == Some(FunctionKind::Kernel) {
                        diags.push(Diagnostic::error(
                            Code::E0213,
                            def.name.range.into(),
                            "a `@struct` method cannot be a kernel",
                        ));
                        continue;
                    }
                    if let Some(ext) = &options.external {
                        diags.push(
                            Diagnostic::error(
                                Code::E0525,
                                ext.span,
                                "a `@struct` method cannot be `extern`",
                            )
                            .with_note("declare the C++ function at module level and pass the struct to it"),
                        );
                        continue;
                    }
                    if (kind == Some(FunctionKind::Kernel) || options.interop)
                        && !(name.is_ascii() && def.name.id.is_ascii())
                    {
                        diags.push(non_ascii_symbol(def));
                    }
                    let decl = FunctionDecl {
                        name: format!("{name}.{}", def.name.id),
                        kind,
                        options,
                        stmt: index,
                        member: Some(m),
                        signature: None,
                        name_span: def.name.range.into(),
                    };
                    // A method defined twice in one class: the later `def` wins, as in
                    // Python (docs/semantics.md §1.2.2).
                    match self
                        .functions
                        .iter()
                        .position(|f| f.stmt == index && f.member.is_some() && f.name == decl.name)
                    {
                        Some(i) => self.functions[i] = decl,
                        None => self.functions.push(decl),
                    }
                }
                Stmt::Expr(_) | Stmt::Pass(_) => {}
                other => diags.push(Diagnostic::error(
                    Code::E0213,
                    other.range().into(),
                    "a `@struct` class may contain only field annotations and methods",
                )),
            }
        }
        if field_align.iter().all(|a| *a == 0) {
            field_align.clear();
        }
        let ty = ok.then(|| crate::types::StructType {
            name: name.clone(),
            fields,
            align,
            field_align,
            record: None,
        });
        self.bind(&name, Item::Struct(self.structs.len()));
        self.structs.push(StructDecl { ty, defaults });
    }

    /// `device.align(t, n)`: the type expression `t` and the constant power of two `n` (up
    /// to 4096). E0423 otherwise.
    pub(crate) fn align_call<'e>(
        &self,
        c: &'e ast::ExprCall,
    ) -> Result<(&'e Expr, u64), Box<Diagnostic>> {
        let bad =
            |span: crate::diag::Span, msg: &str| {
                Box::new(Diagnostic::error(Code::E0423, span, msg.to_string()).with_note(
                "write `device.align(t, n)`: t a type, n a constant power of two up to 4096",
            ))
            };
        let span: crate::diag::Span = c.range().into();
        let (t, n) = match (&c.arguments.args[..], &c.arguments.keywords[..]) {
            ([t, n], []) => (t, n),
            ([t], [k]) if k.arg.as_ref().is_some_and(|a| a.id.as_str() == "n") => (t, &k.value),
            _ => return Err(bad(span, "`align` takes a type and an alignment")),
        };
        match self.eval_const(n) {
            Some(Const::Int(n)) if n > 0 && n <= 4096 && n & (n - 1) == 0 => Ok((t, n as u64)),
            _ => Err(bad(
                n.range().into(),
                "the alignment must be a constant power of two up to 4096",
            )),
        }
    }

    /// A field's default value: a constant the field's number type accepts as a constructor
    /// argument (an `int` for integer and float fields, a `float` for float fields, a `bool`
    /// for `bool` fields), within range. E0422 otherwise.
    fn field_default(
        &self,
        field: &str,
        ty: &crate::types::Type,
        value: &Expr,
    ) -> Result<Const, Box<Diagnostic>> {
        use crate::types::{Kind, Type};
        let span: crate::diag::Span = value.range().into();
        let bad = |msg: String| {
            Box::new(
                Diagnostic::error(Code::E0422, span, msg)
                    .with_note("a default is a constant: an int for integer and float fields, a float for float fields, True or False for bool fields"),
            )
        };
        let Type::Scalar(s) = ty else {
            return Err(bad(format!(
                "field `{field}` is {ty}; only number fields can have defaults in this version"
            )));
        };
        let Some(c) = self.eval_const(value) else {
            return Err(bad(format!(
                "the default of field `{field}` must be a constant"
            )));
        };
        let fits = match (&c, s.kind()) {
            (Const::Bool(_), Kind::Bool) => true,
            (Const::Int(i), Kind::Int | Kind::UInt) => {
                crate::ir::literal_fits(crate::ir::Literal::Int(*i), *s)
            }
            (Const::Int(_) | Const::Float(_), Kind::Float) => true,
            (Const::Int(_) | Const::Float(_) | Const::Complex(..), Kind::Complex) => true,
            _ => false,
        };
        if !fits {
            let what = match &c {
                Const::Bool(b) => (if *b { "True" } else { "False" }).to_string(),
                Const::Int(i) => format!("{i}"),
                Const::Float(f) => format!("{f:?}"),
                Const::Complex(re, im) => format!("complex({re:?}, {im:?})"),
                Const::Tuple(_) => "a tuple".to_string(),
                Const::Array(_) => "an array".to_string(),
                Const::Typed(t, v) => format!("{t}({v:?})"),
            };
            return Err(bad(format!(
                "the default of field `{field}`, {what}, is not a valid {s} value"
            )));
        }
        Ok(c)
    }

    /// Resolves a name or attribute chain at module level without evaluating anything.
    /// E0213 for a `@struct` field whose type hint is not a field type, saying why: a name
    /// that is not defined (a `cuda.device` type not imported: the import to add), an array
    /// type (structs hold numbers, vectors and structs), or another kind of hint.
    fn bad_field_hint(&self, field: &str, hint: &Expr) -> Diagnostic {
        let span: Span = hint.range().into();
        let root = match hint {
            Expr::Subscript(s) => &*s.value,
            e => e,
        };
        // Python's own container and object types are defined, just not field types.
        const PYTHON_TYPES: &[&str] = &[
            "list",
            "dict",
            "set",
            "frozenset",
            "tuple",
            "str",
            "bytes",
            "bytearray",
            "object",
        ];
        if let Expr::Name(name) = root
            && self.resolve_static(root).is_none()
            && !PYTHON_TYPES.contains(&name.id.as_str())
        {
            let id = name.id.as_str();
            let d = Diagnostic::error(
                Code::E0213,
                name.range.into(),
                format!("field `{field}`: `{id}` is not defined"),
            );
            return if builtins::member(Namespace::Device, id).is_some() {
                d.with_label("not imported")
                    .with_note(format!("import it: `from cuda.device import {id}`"))
            } else {
                d.suggesting(id, self.items.keys().map(String::as_str))
            };
        }
        if let Expr::Subscript(sub) = hint
            && matches!(
                self.resolve_static(&sub.value),
                Some(Item::Builtin(
                    Builtin::Scalar(_) | Builtin::Int | Builtin::Float | Builtin::Bool
                ))
            )
        {
            return Diagnostic::error(
                Code::E0213,
                span,
                format!("field `{field}` is an array: a `@struct` holds numbers, vectors and other structs"),
            )
            .with_label("an array type")
            .with_note("pass the array as a parameter of its own, or hold a few values in a vector type (`float32x4`) or a nested `@struct`");
        }
        Diagnostic::error(
            Code::E0213,
            span,
            format!(
                "field `{field}`: `{}` is not a field type",
                &self.file.text[hint.range().start().to_usize()..hint.range().end().to_usize()]
            ),
        )
        .with_note("a field is a number type (`int`, `float32`, ...), a vector type, or another `@struct` class")
    }

    pub(crate) fn resolve_static(&self, e: &Expr) -> Option<Item> {
        match e {
            Expr::Name(n) => self.lookup(n.id.as_str()),
            Expr::Attribute(a) => match self.resolve_static(&a.value)? {
                Item::Namespace(ns) => builtins::member(ns, a.attr.id.as_str()),
                // `np.dtype(t).type` is the scalar type `t` (§15.4).
                item @ Item::Builtin(Builtin::Scalar(_)) if a.attr.id.as_str() == "type" => {
                    Some(item)
                }
                _ => None,
            },
            // `np.dtype(t)` / `cupy.dtype(t)` of a scalar type `t` names `t` (§15.4).
            Expr::Call(c)
                if c.arguments.keywords.is_empty()
                    && c.arguments.args.len() == 1
                    && matches!(c.func.as_ref(), Expr::Attribute(a)
                        if a.attr.id.as_str() == "dtype"
                            && self.resolve_static(&a.value)
                                == Some(Item::Namespace(Namespace::Numpy))) =>
            {
                match self.resolve_static(&c.arguments.args[0])? {
                    item @ Item::Builtin(Builtin::Scalar(_)) => Some(item),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn decorators(
        &self,
        def: &ast::StmtFunctionDef,
        diags: &mut Vec<Diagnostic>,
    ) -> (Option<FunctionKind>, DecoratorOptions) {
        let mut kind: Option<(FunctionKind, Span)> = None;
        let mut options = DecoratorOptions::default();
        for dec in &def.decorator_list {
            let (target, call) = match &dec.expression {
                Expr::Call(c) => (c.func.as_ref(), Some(c)),
                e => (e, None),
            };
            let this = match self.resolve_static(target) {
                Some(Item::Builtin(Builtin::Kernel)) => FunctionKind::Kernel,
                Some(Item::Builtin(Builtin::Func)) => FunctionKind::Device,
                Some(Item::Builtin(Builtin::RawKernel)) => {
                    let mut k = FunctionKind::Kernel;
                    for kw in call
                        .map(|c| c.arguments.keywords.iter().collect::<Vec<_>>())
                        .unwrap_or_default()
                    {
                        match (
                            kw.arg.as_ref().map(|a| a.id.as_str()),
                            self.eval_const(&kw.value),
                        ) {
                            (Some("device"), Some(Const::Bool(true))) => k = FunctionKind::Device,
                            (Some("device"), Some(Const::Bool(false))) => {}
                            (Some("mode"), _) => {}
                            _ => diags.push(
                                Diagnostic::error(
                                    Code::E0103,
                                    kw.range().into(),
                                    "unsupported keyword argument for `@jit.rawkernel`",
                                )
                                .with_note("supported: device, mode"),
                            ),
                        }
                    }
                    if kind.is_some() {
                        diags.push(Diagnostic::error(
                            Code::E0103,
                            dec.range().into(),
                            "a function can have only one kernel decorator",
                        ));
                        continue;
                    }
                    kind = Some((k, dec.range().into()));
                    continue;
                }
                Some(Item::Builtin(Builtin::Jit)) => {
                    let (k, o) = self.numba_jit(call, diags);
                    if kind.is_some() {
                        diags.push(Diagnostic::error(
                            Code::E0103,
                            dec.range().into(),
                            "a function can have only one of `@kernel`, `@func` and `@cuda.jit`",
                        ));
                        continue;
                    }
                    kind = Some((k, dec.range().into()));
                    options = o;
                    continue;
                }
                _ => continue, // a host-side decorator: not ours to judge
            };
            let span: Span = dec.range().into();
            if let Some((prev, prev_span)) = kind {
                let msg = if prev == this {
                    "the same decorator is applied twice".to_string()
                } else {
                    "a function cannot be both `@kernel` and `@func`".to_string()
                };
                diags.push(
                    Diagnostic::error(Code::E0103, span, msg)
                        .with_secondary(prev_span, "first decorator here"),
                );
                continue;
            }
            kind = Some((this, span));
            let Some(call) = call else { continue };
            let what = if this == FunctionKind::Kernel {
                "@kernel"
            } else {
                "@func"
            };
            for arg in call.arguments.args.iter() {
                diags.push(
                    Diagnostic::error(
                        Code::E0103,
                        arg.range().into(),
                        format!("`{what}` takes only keyword arguments"),
                    )
                    .with_note("write, for example, `interop=True`"),
                );
            }
            for kw in call.arguments.keywords.iter() {
                let Some(name) = &kw.arg else {
                    diags.push(Diagnostic::error(
                        Code::E0103,
                        kw.range().into(),
                        format!("`**` arguments are not accepted by `{what}`"),
                    ));
                    continue;
                };
                let kernel_only = [
                    "max_threads",
                    "min_blocks",
                    "fastmath",
                    "contract",
                    "lineinfo",
                    "debug",
                    "bounds_check",
                    "wraparound",
                    "restrict",
                    "assertions",
                    "cluster",
                ];
                let key = name.id.as_str();
                if key == "extern" {
                    options.external = self.extern_option(this, def, kw, diags);
                    continue;
                }
                if this == FunctionKind::Device && kernel_only.contains(&key) {
                    diags.push(
                        Diagnostic::error(
                            Code::E0103,
                            kw.range().into(),
                            format!("`{key}` is an option of `@kernel`, not of `@func`"),
                        )
                        .with_note(
                            "device functions take the options of the kernel that calls them",
                        ),
                    );
                    continue;
                }
                let value = self.eval_const(&kw.value);
                let vspan: Span = kw.value.range().into();
                let flag = |diags: &mut Vec<Diagnostic>| match value {
                    Some(Const::Bool(b)) => Some(b),
                    _ => {
                        diags.push(Diagnostic::error(
                            Code::E0103,
                            vspan,
                            format!("`{key}` must be the constant `True` or `False`"),
                        ));
                        None
                    }
                };
                let count = |diags: &mut Vec<Diagnostic>, max: i128| match value
                    .as_ref()
                    .and_then(Const::as_int)
                {
                    Some(n) if (1..=max).contains(&n) && !matches!(value, Some(Const::Bool(_))) => {
                        Some(n as u32)
                    }
                    _ => {
                        diags.push(Diagnostic::error(
                            Code::E0103,
                            vspan,
                            format!("`{key}` must be a constant integer from 1 to {max}"),
                        ));
                        None
                    }
                };
                match key {
                    "interop" => options.interop = flag(diags).unwrap_or(options.interop),
                    "fastmath" => options.fastmath = flag(diags).unwrap_or(false),
                    "contract" => options.no_contract = !flag(diags).unwrap_or(true),
                    "lineinfo" => options.lineinfo |= flag(diags).unwrap_or(false),
                    "debug" => {
                        let on = flag(diags).unwrap_or(false);
                        options.lineinfo |= on;
                        options.debug |= on;
                    }
                    "bounds_check" => options.bounds_check = flag(diags).unwrap_or(false),
                    "wraparound" => options.no_wraparound = !flag(diags).unwrap_or(true),
                    "restrict" => options.restrict = flag(diags).unwrap_or(false),
                    "assertions" => options.skip_assertions = !flag(diags).unwrap_or(true),
                    "max_threads" => options.max_threads = count(diags, 1024),
                    "min_blocks" => options.min_blocks = count(diags, 64),
                    "cluster" => {
                        options.cluster = cluster_shape(value.as_ref(), vspan, diags)
                            .map(|d| (d, kw.range().into()))
                    }
                    other => diags.push(
                        Diagnostic::error(
                            Code::E0103,
                            kw.range().into(),
                            format!("unknown keyword argument `{other}` for `{what}`"),
                        )
                        .with_label("not a supported option")
                        .suggesting(
                            other,
                            if this == FunctionKind::Kernel {
                                KERNEL_OPTIONS
                            } else {
                                FUNC_OPTIONS
                            }
                            .iter()
                            .copied(),
                        )
                        .with_note(format!(
                            "supported options: {}",
                            if this == FunctionKind::Kernel {
                                KERNEL_OPTIONS
                            } else {
                                FUNC_OPTIONS
                            }
                            .join(", ")
                        )),
                    ),
                }
            }
            if options.min_blocks.is_some() && options.max_threads.is_none() {
                diags.push(
                    Diagnostic::error(
                        Code::E0103,
                        span,
                        "`min_blocks` needs `max_threads` as well",
                    )
                    .with_note("PTX's .minnctapersm only has an effect together with .maxntid"),
                );
            }
        }
        (kind.map(|(k, _)| k), options)
    }

    /// numba's `@cuda.jit`, `@cuda.jit(sig)`, `@cuda.jit(device=True, fastmath=True, ...)`.
    fn numba_jit(
        &self,
        call: Option<&ast::ExprCall>,
        diags: &mut Vec<Diagnostic>,
    ) -> (FunctionKind, DecoratorOptions) {
        let mut options = DecoratorOptions::default();
        let mut kind = FunctionKind::Kernel;
        let Some(call) = call else {
            return (kind, options);
        };
        let mut args = call.arguments.args.iter();
        if let Some(sig) = args.next() {
            match self.numba_signature(sig) {
                Ok((types, ret)) => {
                    options.signature = Some(types);
                    options.signature_ret = ret;
                }
                Err(m) => diags.push(Diagnostic::error(
                    Code::E0103,
                    sig.range().into(),
                    format!("cannot read this signature: {m}"),
                )),
            }
        }
        for extra in args {
            diags.push(Diagnostic::error(Code::E0103, extra.range().into(), "`@cuda.jit` takes one signature; several signatures (eager overloads) are not supported"));
        }
        for kw in call.arguments.keywords.iter() {
            let key = kw.arg.as_ref().map(|a| a.id.as_str()).unwrap_or("**");
            let value = self.eval_const(&kw.value);
            let vspan: Span = kw.value.range().into();
            let flag = |diags: &mut Vec<Diagnostic>| match value {
                Some(Const::Bool(b)) => b,
                _ => {
                    diags.push(Diagnostic::error(
                        Code::E0103,
                        vspan,
                        format!("`{key}` must be the constant `True` or `False`"),
                    ));
                    false
                }
            };
            match key {
                "device" => {
                    if flag(diags) {
                        kind = FunctionKind::Device;
                    }
                }
                "fastmath" => options.fastmath = flag(diags),
                "lineinfo" => options.lineinfo |= flag(diags),
                "debug" => {
                    let on = flag(diags);
                    options.lineinfo |= on;
                    options.debug |= on;
                }
                // Always optimized; the embedder's KernelCache caches.
                "opt" | "cache" => {
                    let _ = flag(diags);
                }
                "inline" => {}
                "max_registers" => match value.as_ref().and_then(Const::as_int) {
                    Some(n) if (1..=255).contains(&n) => options.max_registers = Some(n as u32),
                    _ => diags.push(Diagnostic::error(Code::E0103, vspan, "`max_registers` must be a constant integer from 1 to 255")),
                },
                other => diags.push(
                    Diagnostic::error(Code::E0103, kw.range().into(), format!("unsupported keyword argument `{other}` for `@cuda.jit`"))
                        .with_note("supported: device, fastmath, lineinfo, debug, opt, cache, max_registers, inline"),
                ),
            }
        }
        (kind, options)
    }

    /// A numba signature: a string (`"void(float32[:], int32)"`) or type objects
    /// (`void(float32[::1], int32)`, `float32(float32, float32)`).
    fn numba_signature(
        &self,
        e: &Expr,
    ) -> Result<(Vec<crate::types::Type>, Option<crate::types::Type>), String> {
        use crate::types::Type;
        match e {
            Expr::StringLiteral(s) => {
                let text = s.value.to_str().trim();
                // numba's `"(int64, int64)"`: argument types without a result type, not
                // one tuple argument.
                let mut depth = 0i32;
                let closes_at = text.char_indices().find_map(|(i, ch)| {
                    depth += match ch {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    (depth == 0).then_some(i)
                });
                match closes_at {
                    Some(i) if text.starts_with('(') && i + 1 == text.len() => {
                        crate::types::signature::parse_signature(&text[1..i])
                    }
                    _ => crate::types::signature::parse_signature(text),
                }
                .map_err(String::from)
            }
            Expr::Call(c) => {
                let ret = match self.resolve_static(&c.func) {
                    Some(Item::Builtin(Builtin::Void)) => Type::None,
                    _ => self.numba_type_expr(&c.func)?,
                };
                let args = c
                    .arguments
                    .args
                    .iter()
                    .map(|a| self.numba_type_expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((args, Some(ret)))
            }
            Expr::Tuple(t) => Ok((
                t.elts
                    .iter()
                    .map(|a| self.numba_type_expr(a))
                    .collect::<Result<Vec<_>, _>>()?,
                None,
            )),
            _ => Err("expected a string or a call such as `void(float32[:])`".into()),
        }
    }

    /// A numba type expression: `float32`, `float32[:]`, `int32[:, ::1]`.
    fn numba_type_expr(&self, e: &Expr) -> Result<crate::types::Type, String> {
        use crate::types::{Layout, Scalar, Type};
        let scalar = |x: &Expr| match self.resolve_static(x) {
            Some(Item::Builtin(Builtin::Scalar(s))) => Ok(s),
            Some(Item::Builtin(Builtin::Int)) => Ok(Scalar::Int64),
            Some(Item::Builtin(Builtin::Float)) => Ok(Scalar::Float64),
            Some(Item::Builtin(Builtin::Complex)) => Ok(Scalar::Complex128),
            Some(Item::Builtin(Builtin::Bool)) => Ok(Scalar::Bool),
            _ => Err("expected a numba type such as `float32`".to_string()),
        };
        match e {
            Expr::Subscript(sub) => {
                let s = scalar(&sub.value)?;
                let dims: Vec<&Expr> = match sub.slice.as_ref() {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    x => vec![x],
                };
                let contiguous: Vec<bool> = dims
                    .iter()
                    .map(|d| match d {
                        Expr::Slice(sl) if sl.lower.is_none() && sl.upper.is_none() => match sl.step.as_deref() {
                            None => Ok(false),
                            Some(Expr::NumberLiteral(n)) if matches!(&n.value, ast::Number::Int(i) if i.as_u64() == Some(1)) => Ok(true),
                            _ => Err("array dimensions are `:` or `::1`".to_string()),
                        },
                        _ => Err("array dimensions are `:` or `::1`".to_string()),
                    })
                    .collect::<Result<_, _>>()?;
                let n = contiguous.len();
                let layout = match contiguous.iter().position(|c| *c) {
                    None => Layout::Any,
                    Some(p) if p + 1 == n => Layout::C,
                    Some(0) => Layout::F,
                    Some(_) => return Err("`::1` must be the first or last dimension".into()),
                };
                Ok(Type::array(s, n as u8, layout))
            }
            x => scalar(x).map(Type::Scalar),
        }
    }

    /// Evaluates a module-level constant expression (literals, other constants, arithmetic,
    /// tuples); `None` when it is not one.
    pub(crate) fn eval_const(&self, e: &Expr) -> Option<Const> {
        crate::stack::deep(|| self.eval_const_inner(e))
    }

    fn eval_const_inner(&self, e: &Expr) -> Option<Const> {
        match e {
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => i
                    .as_i64()
                    .map(|v| Const::Int(i128::from(v)))
                    .or_else(|| i.as_u64().map(|v| Const::Int(i128::from(v)))),
                ast::Number::Float(f) => Some(Const::Float(*f)),
                ast::Number::Complex { real, imag } => Some(Const::Complex(*real, *imag)),
            },
            Expr::BooleanLiteral(b) => Some(Const::Bool(b.value)),
            Expr::Name(n) => match self.items.get(n.id.as_str()) {
                Some(Item::Const(c)) => Some(c.clone()),
                _ => None,
            },
            // `math.pi`, `np.e`, `cmath.infj`: constants of an imported namespace.
            Expr::Attribute(_) => match self.resolve_static(e)? {
                Item::Const(c) => Some(c),
                _ => None,
            },
            Expr::Tuple(t) => t
                .elts
                .iter()
                .map(|x| self.eval_const(x))
                .collect::<Option<Vec<_>>>()
                .map(Const::Tuple),
            Expr::UnaryOp(u) => {
                let v = self.eval_const(&u.operand)?;
                match (u.op, v) {
                    (ast::UnaryOp::USub, Const::Int(i)) => Some(Const::Int(-i)),
                    (ast::UnaryOp::USub, Const::Float(f)) => Some(Const::Float(-f)),
                    (ast::UnaryOp::USub, Const::Complex(re, im)) => Some(Const::Complex(-re, -im)),
                    (ast::UnaryOp::USub, Const::Bool(b)) => Some(Const::Int(-i128::from(b))),
                    (
                        ast::UnaryOp::UAdd,
                        v @ (Const::Int(_) | Const::Float(_) | Const::Complex(..)),
                    ) => Some(v),
                    (ast::UnaryOp::Invert, Const::Int(i)) => Some(Const::Int(!i)),
                    (ast::UnaryOp::Not, v) => match v {
                        Const::Bool(b) => Some(Const::Bool(!b)),
                        Const::Int(i) => Some(Const::Bool(i == 0)),
                        Const::Float(f) => Some(Const::Bool(f == 0.0)),
                        Const::Complex(re, im) => Some(Const::Bool(re == 0.0 && im == 0.0)),
                        Const::Tuple(t) => Some(Const::Bool(t.is_empty())),
                        Const::Array(_) => None,
                        Const::Typed(_, c) => Some(Const::Bool(c.as_f64()? == 0.0)),
                    },
                    _ => None,
                }
            }
            Expr::BinOp(b) => {
                let l = self.eval_const(&b.left)?;
                let r = self.eval_const(&b.right)?;
                consts::fold_binary(binary_op(b.op)?, &l, &r)
            }
            Expr::If(i) => {
                let test = match self.eval_const(&i.test)? {
                    Const::Tuple(t) => !t.is_empty(),
                    Const::Array(_) => return None,
                    c => c.as_f64()? != 0.0,
                };
                self.eval_const(if test { &i.body } else { &i.orelse })
            }
            Expr::Subscript(s) => match (self.eval_const(&s.value)?, self.eval_const(&s.slice)?) {
                (Const::Tuple(items), Const::Int(i)) => {
                    let n = items.len() as i128;
                    let i = if i < 0 { i + n } else { i };
                    usize::try_from(i).ok().and_then(|i| items.get(i).cloned())
                }
                _ => None,
            },
            Expr::Call(c) => self.eval_const_call(c),
            _ => None,
        }
    }
}

/// A parameter's `ConstExpr` hint (docs/semantics.md §5.6).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ConstHint<'a> {
    /// `ConstExpr`: any constant.
    Any,
    /// `ConstExpr[T]`: a constant of type `T` (the annotation inside the brackets).
    Of(&'a Expr),
}

impl ParsedModule {
    /// The `ConstExpr` hint an annotation gives (`ConstExpr`, `device.ConstExpr[int32]`),
    /// `None` for any other annotation.
    pub(crate) fn const_hint<'a>(&self, ann: &'a Expr) -> Option<ConstHint<'a>> {
        let is_const = |e: &Expr| self.resolve_static(e) == Some(Item::Builtin(Builtin::ConstExpr));
        match ann {
            Expr::Subscript(s) if is_const(&s.value) => Some(ConstHint::Of(&s.slice)),
            e if is_const(e) => Some(ConstHint::Any),
            _ => None,
        }
    }

    /// The constant a `ConstExpr` parameter sees for a given constant `c`: `c` itself for a
    /// bare `ConstExpr`; for `ConstExpr[T]`, `c` as a value of `T`: an integer for `int`
    /// (and for every integer type, which must hold it: the parameter is then that type, as
    /// `int32(5)` is), a number for `float`/`complex` and the float types, `True`/`False` for
    /// `bool`. `Err` with the reason otherwise.
    pub(crate) fn const_for_hint(&self, hint: ConstHint<'_>, c: &Const) -> Result<Const, String> {
        use crate::types::Scalar;
        let ConstHint::Of(t) = hint else {
            return Ok(c.clone());
        };
        // The plain value of a typed constant (`int32(5)` given to `ConstExpr[int]`).
        let plain = match c {
            Const::Typed(_, inner) => inner.as_ref(),
            c => c,
        };
        let want = match self.resolve_static(t) {
            Some(Item::Builtin(Builtin::Int)) => None,
            Some(Item::Builtin(Builtin::Float)) => {
                return plain
                    .as_f64()
                    .map(Const::Float)
                    .filter(|_| !matches!(plain, Const::Bool(_)))
                    .ok_or_else(|| "a `float`".to_string());
            }
            Some(Item::Builtin(Builtin::Complex)) => {
                return match plain {
                    Const::Bool(_) => Err("a `complex`".to_string()),
                    p => p
                        .as_complex()
                        .map(|(re, im)| Const::Complex(re, im))
                        .ok_or_else(|| "a `complex`".to_string()),
                };
            }
            Some(Item::Builtin(Builtin::Bool)) => Some(Scalar::Bool),
            Some(Item::Builtin(Builtin::Scalar(s))) => Some(s),
            _ => {
                return Err(format!(
                    "`ConstExpr[{}]`: the type must be a number type (`int`, `float`, `bool`, `complex`, `int32`, …)",
                    self.file
                        .text
                        .get(t.range().start().to_usize()..t.range().end().to_usize())
                        .unwrap_or("?")
                ));
            }
        };
        let Some(s) = want else {
            // `ConstExpr[int]`: a Python integer (not a bool), kept weak.
            return match plain {
                Const::Int(i) => Ok(Const::Int(*i)),
                _ => Err("an integer".to_string()),
            };
        };
        let ok = match plain {
            Const::Bool(_) => s == Scalar::Bool,
            Const::Int(_) => s != Scalar::Bool,
            Const::Float(_) => s.is_float(),
            _ => false,
        };
        let what = || format!("a value of type `{s}`");
        if !ok {
            return Err(what());
        }
        Const::typed(s, plain).ok_or_else(what)
    }

    /// The `ConstExpr` hint of each parameter of function `idx` (positional parameters in
    /// order).
    pub(crate) fn const_hints(&self, idx: usize) -> Vec<Option<ConstHint<'_>>> {
        let def = self.def(&self.functions[idx]);
        def.parameters
            .posonlyargs
            .iter()
            .chain(def.parameters.args.iter())
            .map(|p| {
                p.parameter
                    .annotation
                    .as_deref()
                    .and_then(|a| self.const_hint(a))
            })
            .collect()
    }
    /// The type an annotation names: a scalar type (`float32`, `int`), or a string in
    /// Numba's notation (`"float32[:, ::1]"`). `None` for anything else.
    pub(crate) fn annotation_type(
        &self,
        e: &Expr,
        d: crate::types::promote::Defaults,
    ) -> Option<crate::types::Type> {
        use crate::types::{Scalar, Type};
        match e {
            Expr::StringLiteral(s) => crate::types::signature::parse_type(s.value.to_str()).ok(),
            Expr::Call(c)
                if self.resolve_static(&c.func) == Some(Item::Builtin(Builtin::AtomicClass)) =>
            {
                // `Atomic(dtype, align=N)`: at most 8 bytes here (the spec allows 16; no
                // 16-byte number type exists yet).
                let dtype = match self.annotation_type(c.arguments.args.first()?, d)? {
                    Type::Scalar(s) => s,
                    _ => return None,
                };
                let align = match c
                    .arguments
                    .keywords
                    .iter()
                    .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == "align"))
                {
                    Some(k) => match self.eval_const(&k.value)? {
                        Const::Int(n) if n > 0 && n <= 4096 && n & (n - 1) == 0 => n as u64,
                        _ => return None,
                    },
                    None => 0,
                };
                Some(Type::Atomic { dtype, align })
            }
            // `tuple[float32, int32]`
            Expr::Subscript(sub)
                if self.resolve_static(&sub.value) == Some(Item::Builtin(Builtin::TupleType)) =>
            {
                let elts: Vec<&Expr> = match sub.slice.as_ref() {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    e => vec![e],
                };
                elts.into_iter()
                    .map(|e| self.annotation_type(e, d))
                    .collect::<Option<Vec<_>>>()
                    .map(Type::Tuple)
            }
            e => match self.resolve_static(e)? {
                Item::Builtin(Builtin::Scalar(s)) => Some(Type::Scalar(s)),
                Item::Builtin(Builtin::Int) => Some(Type::Scalar(d.int)),
                Item::Builtin(Builtin::Float) => Some(Type::Scalar(d.float)),
                Item::Builtin(Builtin::Complex) => Some(Type::Scalar(d.complex)),
                Item::Builtin(Builtin::Bool) => Some(Type::Scalar(Scalar::Bool)),
                Item::Builtin(Builtin::Vector(elem, len)) => Some(Type::Vector { elem, len }),
                Item::Builtin(Builtin::Hopper(builtins::HopperFn::TensorMap)) => {
                    Some(Type::tensor_map())
                }
                Item::Struct(i) => self
                    .struct_type(i)
                    .map(|t| Type::Struct(Box::new(t.clone()))),
                _ => None,
            },
        }
    }
}

/// The namespace a dialect package's module path names (`numba.cuda`, `cupyx.jit`, `numpy`).
fn dialect_namespace(module: &str) -> Option<Namespace> {
    Some(match module {
        "numba" => Namespace::Numba,
        "numba.cuda" => Namespace::NumbaCuda,
        "numba.cuda.fp16" => Namespace::NumbaFp16,
        "numba.cuda.cg" => Namespace::NumbaCg,
        "numba.cuda.bf16" => Namespace::NumbaBf16,
        "numba.cuda.libdevice" => Namespace::NumbaLibdevice,
        "numba.types" | "numba.core.types" | "numba.cuda.types" => Namespace::NumbaTypes,
        // `literal_unroll`'s home; its other members are numba's too.
        "numba.cuda.misc.special" | "numba.misc.special" => Namespace::Numba,
        // `to_fixed_tuple`'s home.
        "numba.cuda.np.unsafe.ndarray" | "numba.np.unsafe.ndarray" => Namespace::Numba,
        "cupyx" => Namespace::Cupyx,
        "cupyx.jit" => Namespace::CupyxJit,
        "numpy" | "cupy" => Namespace::Numpy,
        "operator" => Namespace::Operator,
        "cuda.device.random" => Namespace::DeviceRandom,
        _ => return None,
    })
}

/// A NumPy / CuPy dtype object by name (`float32`, `int_`, `bool_`).
pub(crate) fn numpy_scalar(n: &str) -> Option<crate::types::Scalar> {
    match n {
        "int_" | "intp" => Some(crate::types::Scalar::Int64),
        "float_" => Some(crate::types::Scalar::Float64),
        n => crate::types::Scalar::from_name(n),
    }
}

/// The IR operator of a Python binary operator (`@` has none).
pub(crate) fn binary_op(op: ast::Operator) -> Option<BinaryOp> {
    use ast::Operator as O;
    Some(match op {
        O::Add => BinaryOp::Add,
        O::Sub => BinaryOp::Sub,
        O::Mult => BinaryOp::Mul,
        O::Div => BinaryOp::Div,
        O::FloorDiv => BinaryOp::FloorDiv,
        O::Mod => BinaryOp::Mod,
        O::Pow => BinaryOp::Pow,
        O::LShift => BinaryOp::Shl,
        O::RShift => BinaryOp::Shr,
        O::BitOr => BinaryOp::BitOr,
        O::BitXor => BinaryOp::BitXor,
        O::BitAnd => BinaryOp::BitAnd,
        O::MatMult => return None,
    })
}

/// The blocks a thread block cluster may hold without the non-portable cluster size
/// attribute (CUDA C++ Programming Guide, "Thread Block Clusters").
pub(crate) const MAX_PORTABLE_CLUSTER: u32 = 8;

/// The value of `@kernel(cluster=...)`: a constant positive integer or a tuple of one to three,
/// padded with 1s, of at most [`MAX_PORTABLE_CLUSTER`] blocks in all (E0103 otherwise).
fn cluster_shape(
    value: Option<&Const>,
    span: Span,
    diags: &mut Vec<Diagnostic>,
) -> Option<[u32; 3]> {
    let dims: Option<Vec<i128>> = match value {
        Some(Const::Bool(_)) => None,
        Some(Const::Tuple(items)) if (1..=3).contains(&items.len()) => items
            .iter()
            .map(|c| match c {
                Const::Bool(_) => None,
                c => c.as_int(),
            })
            .collect(),
        Some(c) => c.as_int().map(|n| vec![n]),
        None => None,
    };
    let ok = dims.filter(|d| {
        d.iter()
            .all(|n| (1..=i128::from(MAX_PORTABLE_CLUSTER)).contains(n))
    });
    let Some(d) = ok else {
        diags.push(
            Diagnostic::error(
                Code::E0103,
                span,
                "`cluster` must be a constant positive integer or a tuple of one to three of them",
            )
            .with_note("write, for example, `cluster=(2, 1, 1)` (blocks per cluster in x, y, z)"),
        );
        return None;
    };
    let mut shape = [1u32; 3];
    for (i, n) in d.iter().enumerate() {
        shape[i] = *n as u32;
    }
    let blocks: u32 = shape.iter().product();
    if blocks > MAX_PORTABLE_CLUSTER {
        diags.push(
            Diagnostic::error(
                Code::E0103,
                span,
                format!("a cluster of {blocks} blocks is more than the portable {MAX_PORTABLE_CLUSTER}"),
            )
            .with_note("larger clusters need the non-portable cluster size attribute, which pydevice does not set"),
        );
        return None;
    }
    Some(shape)
}
