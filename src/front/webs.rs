//! Splitting a function's locals into their def-use webs (numba's SSA renaming).
//!
//! numba types a function after converting it to SSA form: each assignment to a name makes
//! a new variable, and only the assignments that reach a common use (through a join of
//! control flow where the name is still live) must agree on a type. So numba accepts
//!
//! ```python
//! for v in (a2, b2):      # v: int8x2
//!     ...
//! for v in (a3, b3):      # v: int8x3, a new variable
//!     ...
//! ```
//!
//! In dialects whose rules ask for it ([`Rules::split_locals`](super::dialect::Rules)),
//! [`split_locals`] renames, before type checking, every name that has more than one web:
//! two assignments are in the same web when one use can see both (or when one is an
//! augmented assignment of the other). The web that holds a parameter (or else the one
//! assigned first in the source) keeps the name; the others become `name$1`, `name$2`, ...
//! The checker then gives each web its own local and its own type (docs/semantics.md §1.6).
//!
//! The analysis is a reaching-definitions pass over the structured statements (`if`,
//! `for`, `while`, `break`, `continue`, `return`, `with`). A function with anything it does
//! not model (nested `def`s, lambdas, comprehensions, `:=`, `global`, `nonlocal`, `del`,
//! `try`, `match`) keeps its names: merging webs is always safe (it is what happens without
//! this pass), splitting them is safe only where every path is known. A name given an
//! annotation (`x: float32`) is never split, so the annotation keeps applying to all its
//! assignments.

use ruff_python_ast::visitor::transformer::{Transformer, walk_expr as walk_expr_mut};
use ruff_python_ast::visitor::{Visitor, walk_expr};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The separator of a split name: `v$1` is the second web of `v`.
pub(crate) const SEP: char = '$';

/// The name as the user wrote it (`v` for the split name `v$1`).
pub(crate) fn source_name(name: &str) -> &str {
    match name.split_once(SEP) {
        Some((n, k)) if !n.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => name,
    }
}

/// Reaching definitions: for each name, the ids of the assignments that may have given
/// its current value.
type State = BTreeMap<String, BTreeSet<usize>>;

fn join(a: &mut State, b: &State) {
    for (k, v) in b {
        a.entry(k.clone()).or_default().extend(v.iter().copied());
    }
}

#[derive(Default)]
struct Analysis {
    /// Each definition's name and source position (parameters at their own).
    defs: Vec<(String, TextSize)>,
    /// Definition id of each `Name` store node, by position.
    def_at: HashMap<TextSize, usize>,
    /// The definitions each `Name` load can see, by position.
    uses: HashMap<TextSize, BTreeSet<usize>>,
    /// Union-find over definition ids.
    parent: Vec<usize>,
    /// Something the pass does not model was found: rename nothing.
    bail: bool,
    /// Names with an annotation somewhere: never split.
    annotated: HashSet<String>,
    /// States at `break` and `continue` of the innermost loops.
    loops: Vec<(State, State)>,
    /// `x += v` where no assignment of `x` reaches: it reads the zero-initialised local
    /// (docs/semantics.md §4.2), so it joins the web that keeps the name.
    unbound_augs: Vec<usize>,
}

impl Analysis {
    fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.parent[r] != r {
            r = self.parent[r];
        }
        let mut y = x;
        while self.parent[y] != r {
            let next = self.parent[y];
            self.parent[y] = r;
            y = next;
        }
        r
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The smaller id (earlier in the source, parameters first) is the root.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi] = lo;
        }
    }

    fn new_def(&mut self, name: &str, at: TextSize) -> usize {
        // A node revisited (a loop body analysed again) keeps its id.
        if let Some(&d) = self.def_at.get(&at) {
            return d;
        }
        let d = self.defs.len();
        self.defs.push((name.to_string(), at));
        self.parent.push(d);
        self.def_at.insert(at, d);
        d
    }

    /// A use of `name` at `at`: every definition that reaches it joins one web.
    fn use_name(&mut self, name: &str, at: TextSize, st: &State) {
        let Some(ds) = st.get(name) else {
            return;
        };
        let ds: Vec<usize> = ds.iter().copied().collect();
        for w in ds.windows(2) {
            self.union(w[0], w[1]);
        }
        self.uses.entry(at).or_default().extend(ds);
    }

    /// The loads in an expression.
    fn expr(&mut self, e: &Expr, st: &State) {
        struct Loads<'a> {
            names: Vec<(String, TextSize)>,
            bail: bool,
            _p: std::marker::PhantomData<&'a ()>,
        }
        impl<'a> Visitor<'a> for Loads<'a> {
            fn visit_expr(&mut self, e: &'a Expr) {
                match e {
                    Expr::Name(n) => {
                        if n.ctx == ast::ExprContext::Load {
                            self.names.push((n.id.to_string(), n.range.start()));
                        }
                    }
                    Expr::Lambda(_)
                    | Expr::Named(_)
                    | Expr::ListComp(_)
                    | Expr::SetComp(_)
                    | Expr::DictComp(_)
                    | Expr::Generator(_) => self.bail = true,
                    _ => walk_expr(self, e),
                }
            }
        }
        let mut l = Loads {
            names: Vec::new(),
            bail: false,
            _p: std::marker::PhantomData,
        };
        l.visit_expr(e);
        self.bail |= l.bail;
        for (n, at) in l.names {
            self.use_name(&n, at, st);
        }
    }

    /// An assignment target: names are defined, the rest (`a[i]`, `r.x`) is read.
    fn target(&mut self, t: &Expr, st: &mut State) {
        match t {
            Expr::Name(n) => {
                let d = self.new_def(n.id.as_str(), n.range.start());
                st.insert(n.id.to_string(), BTreeSet::from([d]));
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.target(e, st)),
            Expr::List(t) => t.elts.iter().for_each(|e| self.target(e, st)),
            Expr::Starred(s) => self.target(&s.value, st),
            e => self.expr(e, st),
        }
    }

    /// Runs a block from `st`; `None` when no path falls off its end.
    fn block(&mut self, body: &[Stmt], mut st: Option<State>) -> Option<State> {
        for s in body {
            let cur = st?;
            st = self.stmt(s, cur);
        }
        st
    }

    fn stmt(&mut self, s: &Stmt, mut st: State) -> Option<State> {
        match s {
            Stmt::Expr(e) => self.expr(&e.value, &st),
            Stmt::Pass(_) => {}
            Stmt::Assert(a) => {
                self.expr(&a.test, &st);
                if let Some(m) = &a.msg {
                    self.expr(m, &st);
                }
            }
            Stmt::Assign(a) => {
                self.expr(&a.value, &st);
                for t in &a.targets {
                    self.target(t, &mut st);
                }
            }
            Stmt::AnnAssign(a) => {
                if let Expr::Name(n) = a.target.as_ref() {
                    self.annotated.insert(n.id.to_string());
                }
                if let Some(v) = &a.value {
                    self.expr(v, &st);
                    self.target(&a.target, &mut st);
                }
            }
            Stmt::AugAssign(a) => {
                self.expr(&a.value, &st);
                if let Expr::Name(n) = a.target.as_ref() {
                    // `x += v` reads x and updates the same variable.
                    let at = n.range.start();
                    self.use_name(n.id.as_str(), at, &st);
                    let d = self.new_def(n.id.as_str(), at);
                    match st.get(n.id.as_str()).cloned() {
                        Some(prev) if !prev.is_empty() => {
                            for p in prev {
                                self.union(p, d);
                            }
                        }
                        _ => self.unbound_augs.push(d),
                    }
                    st.insert(n.id.to_string(), BTreeSet::from([d]));
                } else {
                    self.expr(&a.target, &st);
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.expr(v, &st);
                }
                return None;
            }
            Stmt::Raise(r) => {
                if let Some(e) = &r.exc {
                    self.expr(e, &st);
                }
                return None;
            }
            Stmt::If(i) => {
                self.expr(&i.test, &st);
                let mut out = self.block(&i.body, Some(st.clone()));
                let mut rest = Some(st);
                let mut has_else = false;
                for c in &i.elif_else_clauses {
                    let Some(cur) = rest.take() else { break };
                    if let Some(t) = &c.test {
                        self.expr(t, &cur);
                        let b = self.block(&c.body, Some(cur.clone()));
                        out = merge(out, b);
                        rest = Some(cur);
                    } else {
                        has_else = true;
                        let b = self.block(&c.body, Some(cur));
                        out = merge(out, b);
                    }
                }
                if !has_else {
                    out = merge(out, rest);
                }
                return out;
            }
            Stmt::For(f) => {
                self.expr(&f.iter, &st);
                let target = f.target.as_ref();
                return self.looped(st, &f.body, &f.orelse, |me, head| {
                    let mut s = head.clone();
                    me.target(target, &mut s);
                    s
                });
            }
            Stmt::While(w) => {
                let test = w.test.as_ref();
                self.expr(test, &st);
                return self.looped(st, &w.body, &w.orelse, |me, head| {
                    me.expr(test, head);
                    head.clone()
                });
            }
            Stmt::Break(_) => {
                if let Some(l) = self.loops.last_mut() {
                    join(&mut l.0, &st);
                } else {
                    self.bail = true;
                }
                return None;
            }
            Stmt::Continue(_) => {
                if let Some(l) = self.loops.last_mut() {
                    join(&mut l.1, &st);
                } else {
                    self.bail = true;
                }
                return None;
            }
            Stmt::With(w) => {
                for item in &w.items {
                    self.expr(&item.context_expr, &st);
                    if let Some(v) = &item.optional_vars {
                        self.target(v, &mut st);
                    }
                }
                return self.block(&w.body, Some(st));
            }
            _ => {
                self.bail = true;
            }
        }
        Some(st)
    }

    /// A loop entered with `entry`: `start` gives the body's first state from the loop
    /// head's (the `for` target assigned, or the `while` test read). Iterates to a fixed
    /// point; the loop exits from its head (then runs `orelse`) or at a `break`.
    fn looped(
        &mut self,
        entry: State,
        body: &[Stmt],
        orelse: &[Stmt],
        start: impl Fn(&mut Self, &State) -> State,
    ) -> Option<State> {
        let mut head = entry;
        let mut breaks;
        let mut rounds = 0;
        loop {
            self.loops.push((State::new(), State::new()));
            let first = start(self, &head);
            let end = self.block(body, Some(first));
            let (b, c) = self.loops.pop().unwrap_or_default();
            breaks = b;
            let mut next = head.clone();
            if let Some(e) = &end {
                join(&mut next, e);
            }
            join(&mut next, &c);
            rounds += 1;
            if next == head || rounds > 64 {
                if rounds > 64 {
                    self.bail = true;
                }
                break;
            }
            head = next;
        }
        let after = self.block(orelse, Some(head));
        let brk = if breaks.is_empty() {
            None
        } else {
            Some(breaks)
        };
        merge(after, brk)
    }
}

fn merge(a: Option<State>, b: Option<State>) -> Option<State> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            join(&mut a, &b);
            Some(a)
        }
        (a, None) => a,
        (None, b) => b,
    }
}

/// Whether a statement list holds something that makes names non-local or hides uses
/// (`global`, `nonlocal`, nested `def`/`class`, `del`, `try`, `match`, ...): the pass
/// leaves such a function alone.
fn unmodelled(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::If(i) => {
            unmodelled(&i.body) || i.elif_else_clauses.iter().any(|c| unmodelled(&c.body))
        }
        Stmt::For(f) => f.is_async || unmodelled(&f.body) || unmodelled(&f.orelse),
        Stmt::While(w) => unmodelled(&w.body) || unmodelled(&w.orelse),
        Stmt::With(w) => w.is_async || unmodelled(&w.body),
        Stmt::Expr(_)
        | Stmt::Pass(_)
        | Stmt::Assert(_)
        | Stmt::Assign(_)
        | Stmt::AnnAssign(_)
        | Stmt::AugAssign(_)
        | Stmt::Return(_)
        | Stmt::Raise(_)
        | Stmt::Break(_)
        | Stmt::Continue(_) => false,
        _ => true,
    })
}

/// Renames the locals of `def` that have more than one web (see the module docs).
pub(crate) fn split_locals(def: &mut ast::StmtFunctionDef) {
    if unmodelled(&def.body) {
        return;
    }
    let mut a = Analysis::default();
    let mut st = State::new();
    let p = &def.parameters;
    let params: Vec<&ast::Parameter> = p
        .posonlyargs
        .iter()
        .chain(p.args.iter())
        .chain(p.kwonlyargs.iter())
        .map(|x| &x.parameter)
        .chain(p.vararg.as_deref())
        .chain(p.kwarg.as_deref())
        .collect();
    let mut param_names = HashSet::new();
    for prm in params {
        let d = a.new_def(prm.name.id.as_str(), prm.range.start());
        st.insert(prm.name.id.to_string(), BTreeSet::from([d]));
        param_names.insert(prm.name.id.to_string());
    }
    a.block(&def.body, Some(st));
    if a.bail {
        return;
    }
    // An augmented assignment that no assignment reaches (`c += 1` on a path where `c` was
    // never assigned, as in numba's test_ssa) reads the local's zero: it is the first web's
    // variable, not a web of its own that the checker would see read before any assignment.
    for d in std::mem::take(&mut a.unbound_augs) {
        let name = a.defs[d].0.clone();
        if let Some(first) = (0..a.defs.len()).find(|&e| e != d && a.defs[e].0 == name) {
            a.union(first, d);
        }
    }
    // Webs of each name, by their root (the earliest definition).
    let mut webs: HashMap<String, BTreeSet<usize>> = HashMap::new();
    for d in 0..a.defs.len() {
        let r = a.find(d);
        webs.entry(a.defs[d].0.clone()).or_default().insert(r);
    }
    let mut new_name: HashMap<usize, String> = HashMap::new();
    for (name, roots) in &webs {
        if roots.len() < 2 || a.annotated.contains(name) || name.contains(SEP) {
            continue;
        }
        // The first root keeps the name: parameters come first, then source order.
        for (k, r) in roots.iter().enumerate().skip(1) {
            new_name.insert(*r, format!("{name}{SEP}{k}"));
        }
    }
    if new_name.is_empty() {
        return;
    }
    let mut rename: HashMap<TextSize, String> = HashMap::new();
    let defs: Vec<(TextSize, usize)> = a.def_at.iter().map(|(&at, &d)| (at, d)).collect();
    for (at, d) in defs {
        let r = a.find(d);
        if let Some(n) = new_name.get(&r) {
            rename.insert(at, n.clone());
        }
    }
    let uses: Vec<(TextSize, usize)> = a
        .uses
        .iter()
        .filter_map(|(at, ds)| ds.iter().next().map(|d| (*at, *d)))
        .collect();
    for (at, d) in uses {
        let r = a.find(d);
        if let Some(n) = new_name.get(&r) {
            rename.insert(at, n.clone());
        }
    }
    struct Rename(HashMap<TextSize, String>);
    impl Transformer for Rename {
        fn visit_expr(&self, e: &mut Expr) {
            if let Expr::Name(n) = e
                && let Some(new) = self.0.get(&n.range().start())
            {
                n.id = new.as_str().into();
                return;
            }
            walk_expr_mut(self, e);
        }
    }
    let r = Rename(rename);
    for s in def.body.iter_mut() {
        r.visit_stmt(s);
    }
}
