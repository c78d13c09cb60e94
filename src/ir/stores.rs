//! Which parameters a function may store through: the fact that lets a caller pass memory
//! it must not write (a read-only NumPy array, a CUDA Array Interface array marked
//! read-only, a read-only DLPack tensor) and refuse the call only when the function could
//! write it (docs/semantics.md §5.4.1).
//!
//! The analysis is a may-analysis: it answers "never stores" only when it can see every use
//! of the parameter. A parameter holds memory when its type is an array, a reference, an
//! atomic or a struct reference, or a tuple or struct holding one. Starting from the
//! parameter, the values derived from it (views, reshapes, reinterpretations, tuple
//! elements, element and field references, locals assigned from them, and the results of
//! calls taking them) are followed; the parameter may be stored through when one of them is
//! the target of a store, a reference store or an atomic, is passed to a callee parameter
//! that may be stored through, or reaches anything the analysis does not follow (an
//! intrinsic, inline PTX, a device-side launch, a value stored into memory). Callees are
//! solved together, as a least fixed point, so recursion is handled.
//!
//! It must not decide language rules; it only reports what the IR does.

use super::*;

/// Whether a value of type `t` refers to memory (an array, a reference, ...), itself or
/// through a tuple or struct element.
pub fn holds_memory(t: &Type) -> bool {
    match t {
        Type::Array(_) | Type::Ref { .. } | Type::StructRef { .. } | Type::Atomic { .. } => true,
        Type::Tuple(items) => items.iter().any(holds_memory),
        Type::Struct(st) => st.fields.iter().any(|(_, t)| holds_memory(t)),
        _ => false,
    }
}

impl Program {
    /// For each parameter of the entry function: whether it holds memory that the function
    /// (or a function it calls) may store to. `false` for a parameter that holds no memory.
    pub fn entry_param_stores(&self) -> Vec<bool> {
        let all = self.param_stores();
        all[self.entry.index()].clone()
    }

    /// For each function (indexed like `functions`), for each parameter: whether it holds
    /// memory that the function may store to, itself or through its callees.
    pub fn param_stores(&self) -> Vec<Vec<bool>> {
        let mut facts: Vec<Vec<bool>> = self
            .functions
            .iter()
            .map(|(_, f)| vec![false; f.params])
            .collect();
        // A least fixed point: facts only turn from false to true.
        loop {
            let mut changed = false;
            for (h, f) in self.functions.iter() {
                for p in 0..f.params {
                    if facts[h.index()][p] {
                        continue;
                    }
                    let local = f.param_locals().nth(p);
                    let Some(local) = local else { continue };
                    if !holds_memory(&f.locals[local].ty) {
                        continue;
                    }
                    if f.external || may_store(f, local, &facts) {
                        facts[h.index()][p] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                return facts;
            }
        }
    }
}

/// Whether `f` may store through the memory local `param` holds, given the callees' facts.
fn may_store(f: &Function, param: Handle<Local>, facts: &[Vec<bool>]) -> bool {
    let mut exprs = vec![false; f.exprs.len()];
    let mut locals = vec![false; f.locals.len()];
    locals[param.index()] = true;
    loop {
        let mut changed = false;
        for (h, e) in f.exprs.iter() {
            if exprs[h.index()] {
                continue;
            }
            let t = |x: &Handle<Expr>| exprs[x.index()];
            let derived = match e {
                Expr::Local(l) => locals[l.index()],
                // (A load yields memory only for an element that is a reference.)
                Expr::View { array, .. }
                | Expr::Reshape { array, .. }
                | Expr::ElementRef { array, .. }
                | Expr::Load { array, .. } => t(array),
                Expr::Reinterpret(a)
                | Expr::Extract(a, _)
                | Expr::FieldRef(a, _)
                | Expr::FieldArray(a, _)
                | Expr::Deref(a)
                | Expr::Cast(a) => t(a),
                Expr::Select {
                    then, otherwise, ..
                } => t(then) || t(otherwise),
                Expr::Tuple(items) => items.iter().any(t),
                // A callee may return a view of its argument.
                Expr::Call(_, args) => args.iter().any(t),
                _ => false,
            };
            // Only memory is followed: a number computed from the array is not.
            if derived && holds_memory(&f.types[h.index()]) {
                exprs[h.index()] = true;
                changed = true;
            }
        }
        if assigns(&f.body, &exprs, &mut locals) {
            changed = true;
        }
        if !changed {
            break;
        }
    }
    let t = |x: &Handle<Expr>| exprs[x.index()];
    for (_, e) in f.exprs.iter() {
        let stores = match e {
            Expr::Atomic { target, args, .. } => t(target) || args.iter().any(t),
            Expr::Call(callee, args) => args
                .iter()
                .enumerate()
                .any(|(k, a)| t(a) && facts[callee.index()].get(k).copied().unwrap_or(true)),
            Expr::Intrinsic(_, args) => args.iter().any(t),
            Expr::Asm(a) => a.args.iter().any(t),
            Expr::Launch(l) => l.args.iter().any(t),
            _ => false,
        };
        if stores {
            return true;
        }
    }
    stores_in(&f.body, &exprs)
}

/// Marks the locals assigned a tracked value; returns whether any was new.
fn assigns(b: &Block, exprs: &[bool], locals: &mut [bool]) -> bool {
    let mut changed = false;
    for s in b {
        match &s.kind {
            StmtKind::Assign(l, e) if exprs[e.index()] && !locals[l.index()] => {
                locals[l.index()] = true;
                changed = true;
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                changed |= assigns(then, exprs, locals);
                changed |= assigns(otherwise, exprs, locals);
            }
            StmtKind::Loop {
                body, continuing, ..
            } => {
                changed |= assigns(body, exprs, locals);
                changed |= assigns(continuing, exprs, locals);
            }
            _ => {}
        }
    }
    changed
}

/// Whether a statement of `b` stores through a tracked value (or stores a tracked value
/// into memory, where the analysis loses it).
fn stores_in(b: &Block, exprs: &[bool]) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Store { array, value, .. } => exprs[array.index()] || exprs[value.index()],
        StmtKind::StoreRef { target, value } => exprs[target.index()] || exprs[value.index()],
        StmtKind::If {
            then, otherwise, ..
        } => stores_in(then, exprs) || stores_in(otherwise, exprs),
        StmtKind::Loop {
            body, continuing, ..
        } => stores_in(body, exprs) || stores_in(continuing, exprs),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use crate::types::signature::parse_signature;

    /// The entry's per-parameter store facts for `source` specialized for `sig`.
    fn stores(source: &str, entry: &str, sig: &str) -> Vec<bool> {
        let (types, _) = parse_signature(sig).unwrap();
        crate::Module::parse("t.py", source)
            .unwrap()
            .specialize(entry, &types)
            .unwrap()
            .program()
            .entry_param_stores()
    }

    const SRC: &str = "\
from cuda import device
from cuda.device import float32

@device.func
def put(o, i, v):
    o[i] = v

@device.func
def get(a, i):
    return a[i]

@device.func
def view_of(a):
    return a[1:]

@device.func
def fact(a, n) -> float32:
    if n == 0:
        return a[0]
    return fact(a, n - 1)

@device.func
def zero_last(a, n) -> None:
    if n == 0:
        a[0] = 0.0
    else:
        zero_last(a, n - 1)

@device.kernel
def direct(x, y, n):
    y[0] = x[0] + n

@device.kernel
def through_calls(x, y):
    put(y, 0, get(x, 0))

@device.kernel
def through_local_and_view(x, y):
    z = y
    w = z[1:]
    w[0] = x[0]

@device.kernel
def through_returned_view(x, y):
    v = view_of(y)
    v[0] = get(x, 0)

@device.kernel
def atomic(x, y):
    device.atomic_ref(y, 0).add(x[0])

@device.kernel
def recursive_read(x, y):
    y[0] = fact(x, 3)

@device.kernel
def recursive_store(x, y):
    zero_last(y, 3)
    y[1] = x[0]

@device.kernel
def tuple_param(t, out):
    out[0] = t[0][0]
    t[1][0] = 1.0
";

    #[test]
    fn stores_are_followed_through_calls_locals_views_and_atomics() {
        let two = "float32[:], float32[:]";
        assert_eq!(
            stores(SRC, "direct", "float32[:], float32[:], float32"),
            [false, true, false]
        );
        for k in [
            "through_calls",
            "through_local_and_view",
            "through_returned_view",
            "atomic",
            "recursive_read",
            "recursive_store",
        ] {
            assert_eq!(stores(SRC, k, two), [false, true], "{k}");
        }
        assert_eq!(
            stores(SRC, "tuple_param", "(float32[:], float32[:]), float32[:]"),
            [true, true]
        );
    }
}
