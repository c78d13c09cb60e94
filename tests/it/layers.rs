//! The stages of the compiler import only downward.
//!
//! Every `crate::…` and `super::…` path in `src/**` (`use` declarations, paths in code and
//! types, and `crate::` paths inside macro invocations) is resolved to the unit it names, and
//! a unit may only name units of a strictly lower layer (or itself). Code under `#[cfg(test)]`
//! is exempt: unit tests may drive the whole pipeline. `src/bin` is a client of the public
//! API and is not scanned.
//!
//! The layers, lowest first (README.md, "Design", says the same):
//!
//! | layer | units | what it is |
//! |---|---|---|
//! | 0 | `diag`, `target`, `stack`, `random` | diagnostics; the GPU architecture; stack growth for deep recursion; the Philox reference |
//! | 1 | `types`, `toolkit` | the type lattice; finding the CUDA toolkit |
//! | 2 | `ir`, `cccl` | the typed IR; the CUDA C++ prelude and NVRTC options of `jit.thrust` shims |
//! | 3 | `abi` | parameter layouts (of types and IR functions) |
//! | 4 | `front`, `lower`, `kernel` | source → IR; IR → PTX and host code; a compiled kernel |
//! | 5 | `runtime` | the CUDA driver: loading and launching compiled kernels |
//! | 6 | the crate root | the compiler's API (`Module`, `CompileOptions`, `Error`) |
//! | 7 | `cache` | the specialization cache, a client of that API (and of the runtime) |
//! | 8 | `kernels` | ElementwiseKernel and ReductionKernel: generate source, then compile through the cache |
//!
//! Units of one layer are peers: `front` and `lower` meet only in `ir`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The layers, lowest first. A unit is a module path (`lower::ptx`); a path belongs to
/// the longest unit that prefixes it, and `crate` is the root's own items.
const LAYERS: &[&[&str]] = &[
    &["diag", "target", "stack", "random"],
    &["types", "toolkit"],
    &["ir", "cccl"],
    &["abi"],
    &["front", "lower", "kernel"],
    &["runtime"],
    &["crate"],
    &["cache"],
    &["kernels"],
];

/// The unit a module path (without the leading `crate`) belongs to.
fn unit_of(path: &[String]) -> String {
    let mut best = "crate".to_string();
    let mut best_len = 0;
    for unit in LAYERS.iter().flat_map(|l| l.iter()) {
        let segs: Vec<&str> = unit.split("::").collect();
        if *unit != "crate"
            && segs.len() > best_len
            && path.len() >= segs.len()
            && segs.iter().zip(path).all(|(a, b)| a == b)
        {
            best = unit.to_string();
            best_len = segs.len();
        }
    }
    best
}

fn layer_of(unit: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&unit))
        .unwrap_or_else(|| panic!("unit `{unit}` is in no layer"))
}

/// The module path of a source file (`src/lower/ptx/emit/atomics.rs` → lower::ptx::emit::atomics).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().split_whitespace().any(|t| t == "test"))
    })
}

struct Scan<'a> {
    file: &'a str,
    /// The module the visitor is in (the file's, plus inline modules).
    module: Vec<String>,
    /// (file, line, path as written, resolved module path)
    found: Vec<(String, usize, String, Vec<String>)>,
}

impl Scan<'_> {
    /// Records a path given as segments, if it starts from `crate` or `super`.
    fn record(&mut self, segs: &[String], line: usize) {
        let resolved = match segs.first().map(String::as_str) {
            Some("crate") => segs[1..].to_vec(),
            Some("super") => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let Some(keep) = self.module.len().checked_sub(ups) else {
                    return;
                };
                let mut p = self.module[..keep].to_vec();
                p.extend_from_slice(&segs[ups..]);
                p
            }
            _ => return,
        };
        if resolved.is_empty() {
            // `pub(crate)` spelled inside a macro's tokens.
            return;
        }
        self.found
            .push((self.file.to_string(), line, segs.join("::"), resolved));
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, t: &syn::UseTree, line: usize) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut p = prefix.clone();
                if n.ident != "self" {
                    p.push(n.ident.to_string());
                }
                self.record(&p, line);
            }
            syn::UseTree::Rename(r) => {
                let mut p = prefix.clone();
                p.push(r.ident.to_string());
                self.record(&p, line);
            }
            syn::UseTree::Glob(_) => self.record(prefix, line),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Scan<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Fn(x) => &x.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            syn::Item::Mod(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, i);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    /// `pub(crate)`, `pub(super)`: not imports.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = p
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.record(&segs, line);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // `crate :: a :: b` inside the tokens of `matches!`, `format!`, ….
        fn walk(s: &mut Scan<'_>, ts: proc_macro2::TokenStream) {
            let toks: Vec<proc_macro2::TokenTree> = ts.into_iter().collect();
            let mut i = 0;
            while i < toks.len() {
                match &toks[i] {
                    proc_macro2::TokenTree::Group(g) => walk(s, g.stream()),
                    proc_macro2::TokenTree::Ident(id) if id == "crate" || id == "super" => {
                        let line = id.span().start().line;
                        let mut segs = vec![id.to_string()];
                        let mut j = i + 1;
                        while let (
                            Some(proc_macro2::TokenTree::Punct(a)),
                            Some(proc_macro2::TokenTree::Punct(b)),
                            Some(proc_macro2::TokenTree::Ident(n)),
                        ) = (toks.get(j), toks.get(j + 1), toks.get(j + 2))
                            && a.as_char() == ':'
                            && b.as_char() == ':'
                        {
                            segs.push(n.to_string());
                            j += 3;
                        }
                        s.record(&segs, line);
                        i = j;
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        walk(self, m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::`/`super::` path outside `#[cfg(test)]` code of the library, resolved.
fn scan() -> Vec<(String, usize, String, Vec<String>)> {
    scan_crate("src")
}

/// Every `crate::`/`super::` path outside `#[cfg(test)]` code of the crate whose root module
/// is in `dir` (relative to the repository), resolved; `dir/bin` is left out.
fn scan_crate(dir: &str) -> Vec<(String, usize, String, Vec<String>)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.retain(|f| !f.starts_with(src.join("bin")));
    files.sort();
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read source");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f
            .strip_prefix(&src)
            .expect("under src")
            .display()
            .to_string();
        let mut s = Scan {
            file: &name,
            module: module_of(&src, &f),
            found: Vec::new(),
        };
        s.visit_file(&ast);
        found.extend(s.found);
    }
    found
}

#[test]
fn no_stage_imports_a_higher_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = BTreeSet::new();
    for (file, line, written, resolved) in scan() {
        let from = unit_of(&module_of(&src, &src.join(&file)));
        let to = unit_of(&resolved);
        if from != to && layer_of(&to) >= layer_of(&from) {
            bad.insert(format!(
                "src/{file}:{line}: `{written}`: {from} (layer {}) uses {to} (layer {})",
                layer_of(&from),
                layer_of(&to)
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} import(s) against the layer order (see tests/layers.rs):\n{}",
        bad.len(),
        bad.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// Module names ranked lowest first; one rank's modules are peers.
type Ranks = &'static [&'static [&'static str]];

/// Files that once imported each other in a circle, and the order that broke it, lowest
/// first: (the crate's directory, the parent module, the ranks of its child modules). A child
/// listed here may name another listed child of the same parent only when that one has a
/// strictly lower rank, directly or through a name the parent re-exports (`pub use`), so
/// the circle cannot return. Children not listed are not constrained by this table.
///
/// - `front`: `consts` (constant values and folding) < `builtins` (the entities and namespace
///   members, `math.pi` among them; folding a builtin's call) < `const_array` (array
///   constants, folded through both);
/// - `runtime`: `device_array` (`DeviceArray` and the argument made from it) < `cai`,
///   `dlpack` (the sources, read into a `DeviceArray`) < `records` (record arrays, CAI's
///   included) < `array` (`ArraySource` and the CAI argument, which may be records);
/// - the Python package's extension (`python/src`): `calls` (the repeated-call fast path) <
///   `kernels` (`ElementwiseKernel`, `ReductionKernel`) < `fuse` (`fuse`'s dispatch to them).
const INNER: &[(&str, &[&str], Ranks)] = &[
    (
        "src",
        &["front"],
        &[&["consts"], &["builtins"], &["const_array"]],
    ),
    (
        "src",
        &["runtime"],
        &[
            &["device_array"],
            &["cai", "dlpack"],
            &["records"],
            &["array"],
        ],
    ),
    ("python/src", &[], &[&["calls"], &["kernels"], &["fuse"]]),
];

/// The rank of the child of `parent` that `path` lies in, if `INNER`'s `order` lists it.
fn inner_rank(parent: &[&str], order: &[&[&str]], path: &[String]) -> Option<(usize, String)> {
    if path.len() <= parent.len() || !parent.iter().zip(path).all(|(a, b)| a == b) {
        return None;
    }
    let child = &path[parent.len()];
    order
        .iter()
        .position(|rank| rank.contains(&child.as_str()))
        .map(|r| (r, child.clone()))
}

/// The names a module file re-exports or imports from its children (`pub use array::{A, B}`
/// in `runtime/mod.rs` gives `A` -> `runtime::array::A`), so that `super::A` from a child
/// resolves to the child that defines `A`.
fn child_imports(dir: &str, parent: &[&str]) -> Vec<(String, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let file = if parent.is_empty() {
        ["lib.rs", "main.rs"]
            .iter()
            .map(|f| root.join(f))
            .find(|f| f.exists())
            .expect("a crate root")
    } else {
        let base = root.join(parent.join("/"));
        if base.join("mod.rs").exists() {
            base.join("mod.rs")
        } else {
            base.with_extension("rs")
        }
    };
    fn walk(prefix: &mut Vec<String>, t: &syn::UseTree, out: &mut Vec<(String, Vec<String>)>) {
        match t {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(prefix, &p.tree, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut p = prefix.clone();
                p.push(n.ident.to_string());
                out.push((n.ident.to_string(), p));
            }
            syn::UseTree::Rename(r) => {
                let mut p = prefix.clone();
                p.push(r.ident.to_string());
                out.push((r.rename.to_string(), p));
            }
            syn::UseTree::Glob(_) => {}
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    walk(prefix, t, out);
                }
            }
        }
    }
    let text = std::fs::read_to_string(&file).expect("read source");
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut out = Vec::new();
    for item in &ast.items {
        if let syn::Item::Use(u) = item {
            walk(&mut Vec::new(), &u.tree, &mut out);
        }
    }
    // `use self::x::A` and `use x::A` both name the child `x`.
    out.into_iter()
        .map(|(name, mut path)| {
            if path.first().is_some_and(|s| s == "self") {
                path.remove(0);
            }
            let mut full: Vec<String> = parent.iter().map(|s| s.to_string()).collect();
            full.extend(path);
            (name, full)
        })
        .collect()
}

/// The violations of `INNER`: a listed child naming a listed sibling of the same or a
/// higher rank.
fn inner_violations() -> BTreeSet<String> {
    let mut bad = BTreeSet::new();
    for &(dir, parent, order) in INNER {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let imports = child_imports(dir, parent);
        for (file, line, written, resolved) in scan_crate(dir) {
            let module = module_of(&src, &src.join(&file));
            let Some((from_rank, from)) = inner_rank(parent, order, &module) else {
                continue;
            };
            // `super::A` where the parent has `pub use child::A`: the child that defines it.
            let mut target = resolved.clone();
            if resolved.len() == parent.len() + 1
                && let Some((_, full)) = imports.iter().find(|(n, _)| *n == resolved[parent.len()])
            {
                target = full.clone();
            }
            let Some((to_rank, to)) = inner_rank(parent, order, &target) else {
                continue;
            };
            if from != to && to_rank >= from_rank {
                bad.insert(format!(
                    "{dir}/{file}:{line}: `{written}`: {from} (rank {from_rank}) uses {to} (rank {to_rank})"
                ));
            }
        }
    }
    bad
}

#[test]
fn no_former_circle_returns() {
    let bad = inner_violations();
    assert!(
        bad.is_empty(),
        "{} import(s) against the order that broke a circle (INNER in tests/it/layers.rs):\n{}",
        bad.len(),
        bad.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The inner check sees the files it orders (every listed child exists and is scanned), and
/// ranks as it must.
#[test]
fn the_inner_order_is_checked() {
    for &(dir, parent, order) in INNER {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let modules: Vec<Vec<String>> = scan_crate(dir)
            .iter()
            .map(|(f, ..)| module_of(&src, &src.join(f)))
            .collect();
        for child in order.iter().flat_map(|r| r.iter()) {
            let mut want: Vec<String> = parent.iter().map(|s| s.to_string()).collect();
            want.push(child.to_string());
            assert!(
                modules.iter().any(|m| m.starts_with(&want)),
                "{dir}: no import seen in {}; is the module still there?",
                want.join("::")
            );
        }
    }
    let order: &[&[&str]] = &[&["consts"], &["builtins"], &["const_array"]];
    let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        inner_rank(&["front"], order, &p(&["front", "builtins", "Builtin"])),
        Some((1, "builtins".into()))
    );
    assert_eq!(inner_rank(&["front"], order, &p(&["front", "check"])), None);
    assert_eq!(
        inner_rank(&["front"], order, &p(&["runtime", "consts"])),
        None
    );
    // `super::DeviceArray` from a runtime child is `device_array`'s, re-exported by the parent.
    let imports = child_imports("src", &["runtime"]);
    assert!(
        imports.iter().any(|(n, full)| n == "DeviceArray"
            && full == &p(&["runtime", "device_array", "DeviceArray"]))
    );
}

/// The scan sees what it must: paths in `use` trees, in code, in macros, and `super` chains.
#[test]
fn the_scan_finds_known_imports() {
    let found = scan();
    let has = |file: &str, to: &[&str]| {
        found
            .iter()
            .any(|(f, _, _, r)| f == file && r.len() >= to.len() && r[..to.len()] == *to)
    };
    // `use crate::types::{...}` in a group.
    assert!(has("ir/mod.rs", &["types", "Type"]));
    // `use super::LowerError` from lower/ptx/libdevice.rs resolves to lower::ptx.
    assert!(has(
        "lower/ptx/libdevice.rs",
        &["lower", "ptx", "LowerError"]
    ));
    // A path in code: `crate::abi::layout_of(...)`.
    assert!(has("lower/ptx/emit.rs", &["abi", "layout_of"]));
    // Every file of the crate was read (none are left out by a parse error).
    assert!(found.iter().any(|(f, ..)| f == "cache.rs"));
}

/// The checker fails on an upward import: resolved by hand, as the test above does.
#[test]
fn an_upward_import_is_caught() {
    let from = unit_of(&["ir".to_string()]);
    let to = unit_of(&["front".into(), "const_array".into(), "ConstArray".into()]);
    assert!(layer_of(&to) >= layer_of(&from));
    assert_eq!(unit_of(&["cache".into(), "KernelCache".into()]), "cache");
    assert_eq!(unit_of(&["runtime".into(), "Device".into()]), "runtime");
    assert_eq!(unit_of(&["Module".into()]), "crate");
    assert!(layer_of("front") == layer_of("lower"), "peers");
}
