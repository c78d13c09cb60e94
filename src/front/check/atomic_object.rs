//! `Atomic` objects (docs/semantics.md §9.7): `c = device.Atomic(int32)`, a thread's own
//! atomic object (a one-element local array of `Atomic[int32]` whose element starts at
//! zero, held as an atomic reference), and the rules that keep an `Atomic` object or an
//! element of an array of them from changing except through its methods.

use super::*;
use crate::diag::Code;
use crate::ir::{AtomicOp, MemoryOrder, Scope};
use crate::types::{ArrayType, Layout, MemSpace};

/// The method that does what an augmented assignment's operator does to an atomic object.
fn method_for(op: BinaryOp) -> Option<&'static str> {
    Some(match op {
        BinaryOp::Add => "add",
        BinaryOp::Sub => "sub",
        BinaryOp::BitAnd => "and_",
        BinaryOp::BitOr => "or_",
        BinaryOp::BitXor => "xor",
        _ => return None,
    })
}

impl FnCx<'_, '_> {
    /// Whether `e` is a call of `device.Atomic`.
    pub(super) fn is_atomic_class_call(&mut self, e: &ast::Expr) -> bool {
        matches!(e, ast::Expr::Call(c)
            if self.callee_item(&c.func) == Some(Item::Builtin(Builtin::AtomicClass)))
    }

    /// The number type of `device.Atomic(dtype)` as an object or an array's element type:
    /// any number type; `align=` belongs to `@struct` fields (E0262).
    pub(super) fn atomic_class_dtype(&mut self, c: &ast::ExprCall) -> Option<Scalar> {
        let a = self.bind(c, "Atomic", &["dtype", "align"], 1)?;
        if let Some(al) = a[1] {
            self.diags.push(
                Diagnostic::error(
                    Code::E0262,
                    sp(al),
                    "`align=` is for `Atomic` fields of a `@struct`, not for atomic objects or arrays",
                )
                .with_note("align an array of atomics with `shared_array(n, device.Atomic(dtype), align=N)`"),
            );
            return None;
        }
        let d = a[0]?;
        if let Some(Item::Struct(_) | Item::Builtin(Builtin::Vector(..))) = self.callee_item(d) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0262,
                    sp(d),
                    "an `Atomic` object holds a number; this is not a number type",
                )
                .with_note("use a number type (`device.Atomic(device.int32)`), or a @struct whose fields are `device.Atomic(dtype)`"),
            );
            return None;
        }
        self.dtype_arg(d)
    }

    /// `name = device.Atomic(dtype)`: a new atomic object, zero, that only this thread can
    /// reach (a one-element local array), held by `name` as an atomic reference to it.
    pub(super) fn atomic_object(
        &mut self,
        targets: &[ast::Expr],
        c: &ast::ExprCall,
        out: &mut Block,
    ) {
        let span = sp(c);
        let [ast::Expr::Name(n)] = targets else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0261,
                    span,
                    "an `Atomic` object is created by assigning it to one name",
                )
                .with_note("write `c = device.Atomic(dtype)` and use `c`"),
            );
            self.poison_targets(targets);
            return;
        };
        let Some(dtype) = self.atomic_class_dtype(c) else {
            self.poison_targets(targets);
            return;
        };
        let name = n.id.as_str();
        let arr_ty = Type::Array(ArrayType {
            dtype: DType::Atomic(dtype),
            ndim: 1,
            layout: Layout::C,
            space: MemSpace::Local,
        });
        let arr = self.push(
            Expr::StaticArray {
                shape: vec![1],
                align: 0,
            },
            arr_ty,
            span,
        );
        let i64t = Type::Scalar(Scalar::Int64);
        let zero_i = self.push(Expr::Literal(Literal::Int(0)), i64t, span);
        let ref_ty = Type::Ref {
            record: None,
            dtype,
            space: MemSpace::Local,
        };
        let r = self.push(
            Expr::ElementRef {
                array: arr,
                indices: vec![Index {
                    value: zero_i,
                    wrap: false,
                }],
            },
            ref_ty.clone(),
            span,
        );
        let v = self.val(r, ref_ty.clone(), span);
        // A new object: the name may be rebound to it even if it held another one.
        self.atomic_objects.remove(name);
        let before = out.len();
        self.assign(&targets[0], v, out);
        self.atomic_objects.insert(name.to_string(), span);
        if out.len() == before {
            return;
        }
        // It starts at zero, as C++20's `std::atomic<T>()` value-initializes (and as a
        // number local starts at zero, §4.2): `name.store(0)`, a plain store (§9.1).
        let Some(h) = self.scope.get(name).copied() else {
            return;
        };
        let Some(zero) = self.literal(&Const::Int(0), dtype, span) else {
            return;
        };
        let target = self.push(Expr::Local(h), ref_ty, span);
        let init = self.push(
            Expr::Atomic {
                op: AtomicOp::Store,
                order: MemoryOrder::Relaxed,
                scope: Scope::Thread,
                target,
                args: vec![zero],
            },
            Type::None,
            span,
        );
        out.push(Stmt {
            kind: StmtKind::Eval(init),
            span,
        });
    }

    fn poison_targets(&mut self, targets: &[ast::Expr]) {
        let mut names = HashSet::new();
        for t in targets {
            if let ast::Expr::Name(n) = t {
                names.insert(n.id.to_string());
            }
        }
        self.seen_assigned.extend(names.iter().cloned());
        self.poisoned.extend(names);
    }

    /// E0260 for `name = v` when `name` holds an `Atomic` object.
    pub(super) fn atomic_object_assigned(&mut self, name: &str, span: Span) -> bool {
        let Some(made) = self.atomic_objects.get(name).copied() else {
            return false;
        };
        self.diags.push(
            Diagnostic::error(
                Code::E0260,
                span,
                format!("`{name}` is an `Atomic` object; assigning it would replace the object"),
            )
            .with_secondary(made, "created here")
            .with_note(format!(
                "change its value with `{name}.store(v)` (or `.exch`, `.add`, …)"
            )),
        );
        true
    }

    /// E0260 for an augmented assignment (`c += 1`, `h[i] += 1`) to an atomic object, an
    /// atomic reference or an element of an array of `Atomic`.
    pub(super) fn atomic_aug_assigned(&mut self, what: &str, op: BinaryOp, span: Span) {
        let note = match method_for(op) {
            Some(m) => format!("update it atomically with `.{m}(v)`, which returns the old value"),
            None => format!(
                "atomic objects have no `{}=`; read with `.load()`, and write with `.store(v)` or in a `.cas(old, new)` loop",
                op.symbol()
            ),
        };
        self.diags.push(
            Diagnostic::error(
                Code::E0260,
                span,
                format!("`{}=` cannot update {what}", op.symbol()),
            )
            .with_note(note),
        );
    }

    /// E0260 for `h[i] = v` on an array of `Atomic`.
    pub(super) fn atomic_element_assigned(&mut self, ty: &Type, span: Span) {
        self.diags.push(
            Diagnostic::error(
                Code::E0260,
                span,
                format!("cannot assign an element of {ty}: its elements are atomic objects"),
            )
            .with_note("store into it atomically with `array[i].store(v)`"),
        );
    }
}
