//! Assignments: a local's type from its assignments (per the dialect's rules), stores to
//! array elements, struct fields and sub-arrays, and augmented assignment.

use super::*;
use crate::diag::Code;
use crate::types::record::Text;

impl FnCx<'_, '_> {
    /// Records that `name` (a local, or `$return`) receives `v`, checks it against what is
    /// known, and returns `v` converted to the name's type.
    pub(super) fn merge(&mut self, name: &str, v: Val, span: Span) -> Option<Handle<Expr>> {
        let what = |n: &str| {
            if n == "$return" {
                "this function returns".to_string()
            } else {
                format!("`{}` is assigned", crate::front::webs::source_name(n))
            }
        };
        let cupyx = self.s.m.rules().fixed_local_types && name != "$return";
        let Some(h) = self.hints.get(name).cloned() else {
            let v = if cupyx { self.concrete(v)? } else { v };
            let ty = match v.weak {
                Some(w) => Type::Scalar(self.s.defaults.of(w)),
                None => v.ty.clone(),
            };
            self.hints.insert(
                name.to_string(),
                Hint {
                    ty: ty.clone(),
                    weak: v.weak,
                    first: span,
                    nonneg: v.nonneg,
                    konst: v.konst.clone(),
                },
            );
            // The function's result type is the hint's: a Python int that needs more
            // than the default int (a literal ≥ 2**31) is converted, so an out-of-range
            // one is E0204 here instead of a return that disagrees with the signature.
            if let (true, Type::Scalar(s)) = (name == "$return" && ty != v.ty, &ty) {
                return self.convert(&v, *s);
            }
            return Some(v.e);
        };
        let mut nh = h.clone();
        if cupyx {
            // cupyx.jit: the first assignment fixed the type; later ones convert to it, as
            // NumPy's `same_kind` casting allows (CuPy rejects the others).
            if let (Type::Scalar(t), Some(from)) = (&h.ty, v.ty.as_scalar()) {
                let t = *t;
                let from_kind = match v.weak {
                    Some(Weak::Int) => Kind::Int,
                    Some(Weak::Float) => Kind::Float,
                    Some(Weak::Complex) => Kind::Complex,
                    None => from.kind(),
                };
                if kind_rank(from_kind) > kind_rank(t.kind()) {
                    let shown = if v.weak.is_some() {
                        format!("a Python {}", from_kind_name(from_kind))
                    } else {
                        format!("`{}`", v.ty)
                    };
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0201,
                            span,
                            format!(
                                "cannot assign {shown} to `{name}` of type `{t}` (cupyx.jit fixes a local's type at its first assignment and converts later ones only with NumPy's `same_kind` casting)"
                            ),
                        )
                        .with_secondary(h.first, format!("`{name}` became `{t}` here"))
                        .with_note(format!(
                            "convert explicitly, e.g. `{name} = {t}(...)`, or make the first assignment the wider type"
                        )),
                    );
                    return None;
                }
                return self.convert(&v, t);
            }
        }
        let compatible = match (h.weak, v.weak) {
            (Some(hw), None) => match &v.ty {
                Type::Scalar(s) => {
                    let ok = match hw {
                        Weak::Int => s.kind() != Kind::Bool,
                        Weak::Float => s.is_float(),
                        Weak::Complex => s.is_complex(),
                    };
                    if ok {
                        nh.ty = v.ty.clone();
                        nh.weak = None;
                    }
                    ok
                }
                _ => false,
            },
            (Some(hw), Some(vw)) => {
                let w = promote_weak_weak(hw, vw);
                if w != hw {
                    nh.weak = Some(w);
                    nh.ty = Type::Scalar(self.s.defaults.of(w));
                }
                true
            }
            (None, Some(vw)) => match &h.ty {
                Type::Scalar(s) => match vw {
                    Weak::Int => s.kind() != Kind::Bool,
                    Weak::Float => s.is_float() || s.is_complex(),
                    Weak::Complex => s.is_complex(),
                },
                _ => false,
            },
            (None, None) => match (&h.ty, &v.ty) {
                // A `WarpMask` is an `int32` (the spec derives it from `int32`): an `int32`
                // local takes one, and a local given both is an `int32`.
                (Type::Scalar(Scalar::Int32), Type::WarpMask) => true,
                (Type::WarpMask, Type::Scalar(Scalar::Int32)) => {
                    nh.ty = Type::Scalar(Scalar::Int32);
                    true
                }
                // numba unifies a local's assignments to their common type.
                (Type::Scalar(a), Type::Scalar(b))
                    if self.s.m.rules().unify_assignments && a != b =>
                {
                    nh.ty = Type::Scalar(promote(*a, *b));
                    true
                }
                // ... and tuples of numbers element by element, where the value is a tuple
                // display whose elements can be converted one by one.
                (Type::Tuple(a), Type::Tuple(b))
                    if self.s.m.rules().unify_assignments
                        && a != b
                        && a.len() == b.len()
                        && matches!(self.exprs[v.e], Expr::Tuple(_))
                        && a.iter().chain(b).all(|t| matches!(t, Type::Scalar(_))) =>
                {
                    let ts = a
                        .iter()
                        .zip(b)
                        .map(|(x, y)| match (x, y) {
                            (Type::Scalar(x), Type::Scalar(y)) => Type::Scalar(promote(*x, *y)),
                            _ => x.clone(),
                        })
                        .collect();
                    nh.ty = Type::Tuple(ts);
                    true
                }
                _ => h.ty == v.ty,
            },
        };
        if !compatible {
            let describe = |w: Option<Weak>, t: &Type| match w {
                Some(Weak::Float) => "a Python float".to_string(),
                Some(Weak::Int) => "a Python int".to_string(),
                Some(Weak::Complex) => "a Python complex".to_string(),
                None => t.to_string(),
            };
            let had = describe(h.weak, &h.ty);
            let now = describe(v.weak, &v.ty);
            let first = if name == "$return" {
                "first return here"
            } else if self
                .scope
                .get(name)
                .is_some_and(|l| l.index() < self.params)
            {
                "the parameter is declared here"
            } else {
                "first assigned here"
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0201,
                    span,
                    format!("{} values of different types: {had} and {now}", what(name)),
                )
                .with_label(format!("this is {now}"))
                .with_secondary(h.first, format!("{first} ({had})"))
                .with_note(
                    "each local variable has one type; convert explicitly, e.g. `float32(x)`",
                ),
            );
            return None;
        }
        if h.nonneg && !v.nonneg {
            nh.nonneg = false;
        }
        if nh.ty != h.ty || nh.weak != h.weak || nh.nonneg != h.nonneg {
            self.hints.insert(name.to_string(), nh.clone());
            self.changed = true;
        }
        let target = self.materialize(&nh);
        match target {
            Type::Scalar(s) => self.convert(&v, s),
            Type::Tuple(ts) if v.ty != Type::Tuple(ts.clone()) => self.convert_tuple(&v, &ts),
            _ => Some(v.e),
        }
    }

    /// A tuple display converted element by element to the numbers `ts` (numba's unified
    /// tuple locals).
    pub(super) fn convert_tuple(&mut self, v: &Val, ts: &[Type]) -> Option<Handle<Expr>> {
        let (Expr::Tuple(es), Type::Tuple(from)) = (self.exprs[v.e].clone(), &v.ty) else {
            return Some(v.e);
        };
        let mut out = Vec::new();
        for ((e, f), t) in es.iter().zip(from).zip(ts) {
            let (Type::Scalar(_), Type::Scalar(s)) = (f, t) else {
                return Some(v.e);
            };
            let x = Val {
                e: *e,
                ty: f.clone(),
                weak: None,
                konst: None,
                nonneg: false,
                span: v.span,
            };
            out.push(self.convert(&x, *s)?);
        }
        Some(self.push(Expr::Tuple(out), Type::Tuple(ts.to_vec()), v.span))
    }

    pub(super) fn assign(&mut self, target: &ast::Expr, v: Val, out: &mut Block) {
        let span = sp(target);
        match target {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                self.seen_assigned.insert(name.to_string());
                if self.atomic_object_assigned(name, span) {
                    return;
                }
                let Some(e) = self.merge(name, v, span) else {
                    return;
                };
                let h = self.local(name, span);
                let want = self.locals[h].ty.clone();
                if self.types[e.index()] != want {
                    // The local's type was learned later in this pass; the next pass redoes it.
                    self.changed = true;
                    return;
                }
                out.push(Stmt {
                    kind: StmtKind::Assign(h, e),
                    span,
                });
            }
            ast::Expr::Subscript(s) if matches!(s.slice.as_ref(), ast::Expr::StringLiteral(_)) => {
                // `records[i]['x'] = v`: numba's spelling of `records[i].x = v`.
                if let ast::Expr::StringLiteral(k) = s.slice.as_ref() {
                    self.assign_field(&s.value, k.value.to_str(), v, span, out);
                }
            }
            ast::Expr::Subscript(s) => {
                let base = self.expr(&s.value);
                let Some(base) = self.value_of(base) else {
                    return;
                };
                match &base.ty {
                    Type::Array(at) => {
                        let dtype = at.dtype.clone();
                        if let DType::Atomic(_) = dtype {
                            self.atomic_element_assigned(&base.ty, span);
                            return;
                        }
                        if self.check_writable(&base, span).is_none() {
                            return;
                        }
                        let Some(indices) = self.indices(&base, &s.slice) else {
                            return;
                        };
                        let Some(value) = self.store_element(&v, &dtype) else {
                            return;
                        };
                        out.push(Stmt {
                            kind: StmtKind::Store {
                                array: base.e,
                                indices,
                                value,
                            },
                            span,
                        });
                    }
                    Type::WarpMask if matches!(s.value.as_ref(), ast::Expr::Name(_)) => {
                        // m[i] = v  →  m = (m & ~(1 << i)) | (int(bool(v)) << i)
                        let i32t = Type::Scalar(Scalar::Int32);
                        let iv = self.expr(&s.slice);
                        let Some(iv) = self.value_of(iv) else { return };
                        let Some(i) = self.mask_lane(&iv) else {
                            return;
                        };
                        // `val: bool`, as the spec hints it: a number is a type mismatch.
                        if v.ty != Type::Scalar(Scalar::Bool) {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::E0207,
                                    v.span,
                                    format!(
                                        "a warp mask's bit must be set to a bool (`val: bool`), found {}",
                                        if v.weak.is_some() {
                                            "a Python number".to_string()
                                        } else {
                                            v.ty.to_string()
                                        }
                                    ),
                                )
                                .with_note("write `True`/`False`, a comparison, or `bool(x)`"),
                            );
                            return;
                        }
                        let Some(b) = self.truthy(v) else { return };
                        let bit = self.push(Expr::Cast(b), i32t.clone(), span);
                        let one = self.push(Expr::Literal(Literal::Int(1)), i32t.clone(), span);
                        let i2 = self.push(self.exprs[i].clone(), i32t.clone(), span);
                        let sel =
                            self.push(Expr::Binary(BinaryOp::Shl, one, i), i32t.clone(), span);
                        let inv = self.push(Expr::Unary(UnaryOp::Invert, sel), i32t.clone(), span);
                        let m = self.push(Expr::Cast(base.e), i32t.clone(), span);
                        let cleared =
                            self.push(Expr::Binary(BinaryOp::BitAnd, m, inv), i32t.clone(), span);
                        let set =
                            self.push(Expr::Binary(BinaryOp::Shl, bit, i2), i32t.clone(), span);
                        let new =
                            self.push(Expr::Binary(BinaryOp::BitOr, cleared, set), i32t, span);
                        let e = self.push(Expr::Cast(new), Type::WarpMask, span);
                        let nv = self.val(e, Type::WarpMask, span);
                        self.assign(&s.value, nv, out);
                    }
                    Type::Fragment(_) if matches!(s.value.as_ref(), ast::Expr::Name(_)) => {
                        let Some(nv) = self.fragment_with(&base, &s.slice, &v, span) else {
                            return;
                        };
                        self.assign(&s.value, nv, out);
                    }
                    Type::Vector { .. } if matches!(s.value.as_ref(), ast::Expr::Name(_)) => {
                        let iv = self.expr(&s.slice);
                        let Some(iv) = self.value_of(iv) else { return };
                        let Some(nv) = self.vector_with(&base, &iv, &v, span) else {
                            return;
                        };
                        self.assign(&s.value, nv, out);
                    }
                    Type::Tuple(_) | Type::Vector { .. } => self.diags.push(
                        Diagnostic::error(Code::E0211, span, format!("{} is immutable", base.ty))
                            .with_note("build a new tuple or vector instead"),
                    ),
                    other => self.error(
                        Code::E0203,
                        sp(s.value.as_ref()),
                        format!("{other} cannot be indexed"),
                    ),
                }
            }
            ast::Expr::Tuple(ast::ExprTuple { elts, .. })
            | ast::Expr::List(ast::ExprList { elts, .. }) => {
                let n = match &v.ty {
                    Type::Tuple(ts) => ts.len(),
                    Type::Vector { len, .. } => *len as usize,
                    other => {
                        self.error(Code::E0203, v.span, format!("cannot unpack {other}"));
                        return;
                    }
                };
                if n != elts.len() {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0203,
                            span,
                            format!("cannot unpack {} values into {} names", n, elts.len()),
                        )
                        .with_secondary(v.span, format!("this is {}", v.ty)),
                    );
                    return;
                }
                let t = self.new_temp(v.ty.clone(), v.span);
                out.push(Stmt {
                    kind: StmtKind::Assign(t, v.e),
                    span,
                });
                for (i, el) in elts.iter().enumerate() {
                    let ety = element_type(&v.ty, i);
                    let base = self.push(Expr::Local(t), v.ty.clone(), v.span);
                    let e = self.push(Expr::Extract(base, i as u32), ety.clone(), v.span);
                    let mut ev = self.val(e, ety, v.span);
                    ev.nonneg |= v.nonneg;
                    self.assign(el, ev, out);
                }
            }
            ast::Expr::Attribute(attr) => {
                self.assign_field(&attr.value, attr.attr.id.as_str(), v, span, out)
            }
            _ => self.error(
                Code::E0301,
                span,
                "this assignment target is not supported in device code",
            ),
        }
    }

    /// `target.field = v` where `target` is an array element of struct type (or `self` of a
    /// method that received one): stored in place. Struct values themselves are immutable.
    fn assign_field(
        &mut self,
        target: &ast::Expr,
        field: &str,
        v: Val,
        span: Span,
        out: &mut Block,
    ) {
        // `array[i].x = v` (or `self.x = v` in a method of a struct in an array):
        // stored in place. Struct values themselves are immutable.
        let base = self.place_or_value(target);
        let base = match base {
            Value::Val(base) => base,
            Value::Err => return, // reported where the target was read
            Value::Item(item, _) => {
                // A builtin (`device.warp_size`, `device.thread_idx.w`), a module, a
                // class or a constant: none of them has attributes device code can set.
                let what = match &item {
                    Item::Builtin(_) => "a builtin",
                    Item::Const(_) => "a constant",
                    Item::Namespace(_) => "a module",
                    _ => "this object",
                };
                self.diags.push(
                    Diagnostic::error(
                        Code::E0211,
                        span,
                        format!("cannot assign attribute `{field}` of {what}"),
                    )
                    .with_note("attributes cannot be added or changed in device code"),
                );
                return;
            }
        };
        if let Type::StructRef {
            space: crate::types::MemSpace::Const,
            ..
        } = &base.ty
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0112,
                    span,
                    "this writes to a constant array, which device code can only read",
                )
                .with_note(
                    "module-level NumPy arrays are compile-time constants in constant memory",
                ),
            );
            return;
        }
        let Type::StructRef { st, .. } = &base.ty else {
            let note = if let Type::Vector { .. } = &base.ty {
                format!(
                    "vectors are immutable: build a new {} (on a local vector, `v[0] = x` rebinds it)",
                    base.ty
                )
            } else {
                "heterogeneous objects are immutable, and attributes cannot be added; fields of array elements can be assigned (`a[i].x = v`)".to_string()
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0211,
                    span,
                    "attributes cannot be assigned in device code",
                )
                .with_note(note),
            );
            return;
        };
        if let Some(i) = st.field(field)
            && !st.subarray_shape(i).is_empty()
        {
            let shape = st.subarray_shape(i).to_vec();
            if let Some(view) = self.field_of_ref(base, field, span) {
                self.assign_subarray(view, &shape, v, span, out);
            }
            return;
        }
        let fty = st.field(field).map(|i| st.fields[i].1.clone());
        let Some(Type::Scalar(fs)) = fty else {
            let what = match fty {
                Some(Type::Atomic { .. }) => "an Atomic field is written with `.store(value)`",
                Some(_) => "only number fields can be assigned in place in this version",
                None => "no such field",
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0211,
                    span,
                    format!("cannot assign field `{field}` of `{}`", st.name),
                )
                .with_note(what),
            );
            return;
        };
        let idx = st.field(field).unwrap_or(0) as u32;
        let space = match &base.ty {
            Type::StructRef { space, .. } => *space,
            _ => crate::types::MemSpace::Global,
        };
        if !matches!(v.ty, Type::Scalar(_) | Type::WarpMask) {
            self.error(
                Code::E0207,
                v.span,
                format!(
                    "cannot assign {} to field `{field}` of `{}` ({fs})",
                    v.ty, st.name
                ),
            );
            return;
        }
        let Some(value) = self.store_value(&v, fs) else {
            return;
        };
        let target = self.push(
            Expr::FieldRef(base.e, idx),
            Type::Ref {
                record: None,
                dtype: fs,
                space,
            },
            span,
        );
        out.push(Stmt {
            kind: StmtKind::StoreRef { target, value },
            span,
        });
    }

    /// `r.j = v` for a sub-array field `j` (its view is `view`): every element of the
    /// sub-array gets the element of array `v` at the same index, or the number `v`, as
    /// NumPy assigns a whole field. Unrolled: sub-arrays are small and their shape is known.
    /// `r["name"] = "abc"` (or `r.name = b"abc"`): a string literal stored into a fixed-width
    /// text field of a record (NumPy `S<n>`, `U<n>`; docs/semantics.md §5.16) as NumPy
    /// stores it: its code units (bytes, or UCS-4 code points), cut to the field's width and
    /// padded with zeros.
    pub(super) fn assign_text(
        &mut self,
        target: &ast::Expr,
        field: &str,
        lit: &ast::Expr,
        span: Span,
        out: &mut Block,
    ) {
        let lspan = sp(lit);
        let base = match self.place_or_value(target) {
            Value::Val(base) => base,
            Value::Err => return,
            Value::Item(..) => {
                self.error(
                    Code::E0207,
                    span,
                    format!("cannot assign a string to `{field}`"),
                );
                return;
            }
        };
        let found = match &base.ty {
            Type::StructRef { st, space } => st.field(field).and_then(|i| {
                st.field_text(i)
                    .map(|t| (i, t, st.subarray_shape(i)[0], *space))
            }),
            _ => None,
        };
        let Some((i, text, width, space)) = found else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0207,
                    lspan,
                    format!("cannot assign a string to `{field}` of {}", base.ty),
                )
                .with_note(
                    "strings are not values in device code; a string literal can only be stored into a fixed-width text field of a record (NumPy `S<n>` or `U<n>`)",
                ),
            );
            return;
        };
        let what = format!("field `{field}`");
        self.store_text(base, (i, text, width, space), &what, lit, span, out);
    }

    /// `strings[i] = "abc"`: a string literal stored into an element of an array of NumPy's
    /// text dtype (`U12`, `S12`; docs/semantics.md §5.16.2), as into a text field.
    pub(super) fn assign_text_element(
        &mut self,
        target: &ast::Expr,
        lit: &ast::Expr,
        span: Span,
        out: &mut Block,
    ) {
        let base = match self.place_or_value(target) {
            Value::Val(base) => base,
            Value::Err => return,
            Value::Item(..) => {
                self.error(Code::E0207, span, "cannot assign a string to this");
                return;
            }
        };
        let found = match &base.ty {
            Type::StructRef { st, space } => st.bare_text().map(|(t, n)| (0, t, n, *space)),
            _ => None,
        };
        let Some(found) = found else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0207,
                    sp(lit),
                    format!("cannot assign a string to an element of {}", base.ty),
                )
                .with_note(
                    "strings are not values in device code; a string literal can only be stored into an element of an array of NumPy's text dtype (`S<n>`, `U<n>`) or a text field of a record",
                ),
            );
            return;
        };
        self.store_text(base, found, "this element", lit, span, out);
    }

    /// Stores literal `lit` into text field `i` (`width` code units of `text`) of the record
    /// `base` refers to (`what` names it in messages).
    fn store_text(
        &mut self,
        base: Val,
        (i, text, width, space): (usize, Text, u64, crate::types::MemSpace),
        what: &str,
        lit: &ast::Expr,
        span: Span,
        out: &mut Block,
    ) {
        let lspan = sp(lit);
        if space == crate::types::MemSpace::Const {
            self.error(
                Code::E0112,
                span,
                "this writes to a constant array, which device code can only read",
            );
            return;
        }
        let units: Vec<u32> = match lit {
            ast::Expr::StringLiteral(s) => s.value.to_str().chars().map(u32::from).collect(),
            ast::Expr::BytesLiteral(b) => b.value.bytes().map(u32::from).collect(),
            _ => return,
        };
        // NumPy encodes a str into `S<n>` as ASCII and decodes bytes into `U<n>` as ASCII.
        let other_kind = matches!(
            (text, lit),
            (Text::Bytes, ast::Expr::StringLiteral(_))
                | (Text::Unicode, ast::Expr::BytesLiteral(_))
        );
        if other_kind && units.iter().any(|u| *u > 127) {
            self.error(
                Code::E0207,
                lspan,
                format!(
                    "{what} holds {}; this literal is not ASCII",
                    if text == Text::Bytes {
                        "bytes (`S`)"
                    } else {
                        "a str (`U`)"
                    }
                ),
            );
            return;
        }
        let unit = text.unit();
        let view_ty = Type::Array(crate::types::ArrayType {
            dtype: DType::Scalar(unit),
            ndim: 1,
            layout: crate::types::Layout::C,
            space,
        });
        let view = self.push(Expr::FieldArray(base.e, i as u32), view_ty, span);
        let i64t = Type::Scalar(Scalar::Int64);
        for k in 0..width {
            let code = units.get(k as usize).copied().unwrap_or(0);
            let index = Index {
                value: self.push(
                    Expr::Literal(Literal::Int(i128::from(k))),
                    i64t.clone(),
                    span,
                ),
                wrap: false,
            };
            let value = self.push(
                Expr::Literal(Literal::Int(i128::from(code))),
                Type::Scalar(unit),
                lspan,
            );
            out.push(Stmt {
                kind: StmtKind::Store {
                    array: view,
                    indices: vec![index],
                    value,
                },
                span,
            });
        }
    }

    fn assign_subarray(&mut self, view: Val, shape: &[u64], v: Val, span: Span, out: &mut Block) {
        const MAX_UNROLLED: u64 = 256;
        let Type::Array(at) = &view.ty else { return };
        let at = at.clone();
        let count: u64 = shape.iter().product();
        let src_ndim = match &v.ty {
            Type::Array(sa) => Some(sa.ndim),
            _ => None,
        };
        if count > MAX_UNROLLED || src_ndim.is_some_and(|n| usize::from(n) != shape.len()) {
            let why = if count > MAX_UNROLLED {
                format!(
                    "it has {count} elements (whole sub-arrays of at most {MAX_UNROLLED} are assigned)"
                )
            } else {
                format!(
                    "it is {}-dimensional and the sub-array is {}-dimensional",
                    src_ndim.unwrap_or(0),
                    shape.len()
                )
            };
            self.diags.push(
                Diagnostic::error(
                    Code::E0215,
                    span,
                    format!("cannot assign {} to this sub-array field: {why}", v.ty),
                )
                .with_label("the whole sub-array is assigned here")
                .with_note("assign its elements in a loop: `r.j[k] = v[k]`"),
            );
            return;
        }
        let i64t = Type::Scalar(Scalar::Int64);
        for flat in 0..count {
            let mut rest = flat;
            let mut idx = vec![0u64; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            let indices: Vec<Index> = idx
                .iter()
                .map(|k| Index {
                    value: self.push(
                        Expr::Literal(Literal::Int(i128::from(*k))),
                        i64t.clone(),
                        span,
                    ),
                    wrap: false,
                })
                .collect();
            let item = match &v.ty {
                Type::Array(sa) => {
                    let t = sa.dtype.ty();
                    let e = self.push(
                        Expr::Load {
                            array: v.e,
                            indices: indices.clone(),
                        },
                        t.clone(),
                        span,
                    );
                    self.val(e, t, span)
                }
                _ => v.clone(),
            };
            let Some(value) = self.store_element(&item, &at.dtype) else {
                return;
            };
            out.push(Stmt {
                kind: StmtKind::Store {
                    array: view.e,
                    indices,
                    value,
                },
                span,
            });
        }
    }

    /// A value converted for storing into an array element: numbers convert (as NumPy's item
    /// assignment does), a record must have the array's struct type, a vector the array's
    /// vector type.
    pub(super) fn store_element(&mut self, v: &Val, dtype: &DType) -> Option<Handle<Expr>> {
        match dtype {
            DType::Scalar(s) => self.store_value(v, *s),
            DType::Struct(st) if v.ty == Type::Struct(st.clone()) => Some(v.e),
            // A reference to a record (numba's `recs[j] = recs[i]`): its value.
            DType::Struct(st) if matches!(&v.ty, Type::StructRef { st: r, .. } if r == st) => {
                Some(self.push(Expr::Deref(v.e), Type::Struct(st.clone()), v.span))
            }
            DType::Struct(st) => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("cannot store {} into an array of `{}`", v.ty, st.name),
                );
                None
            }
            // A vector is stored whole and as it is: build one of the array's type.
            DType::Atomic(_) => {
                self.error(
                    Code::E0260,
                    v.span,
                    format!(
                        "cannot store {} into an array of {dtype}: its elements are atomic objects",
                        v.ty
                    ),
                );
                None
            }
            DType::Vector { .. } if v.ty == dtype.ty() => Some(v.e),
            DType::Vector { .. } => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0207,
                        v.span,
                        format!("cannot store {} into an array of {dtype}", v.ty),
                    )
                    .with_note(format!(
                        "an element of a vector array is a whole {dtype}: build one with `{dtype}(...)`"
                    )),
                );
                None
            }
        }
    }

    pub(super) fn store_value(&mut self, v: &Val, dtype: Scalar) -> Option<Handle<Expr>> {
        match (&v.ty, v.weak, &v.konst) {
            (Type::Scalar(_), Some(_), Some(Const::Float(f))) if dtype.is_integer() => {
                let c = Const::Int(f.trunc() as i128);
                self.literal(&c, dtype, v.span)
            }
            (Type::Scalar(_) | Type::WarpMask, _, _) => self.convert(v, dtype),
            (other, _, _) => {
                let mut d = Diagnostic::error(
                    Code::E0207,
                    v.span,
                    format!("cannot store {other} into an array of {dtype}"),
                );
                if matches!(other, Type::Ref { .. }) {
                    d = d.with_note("an atomic reference (or Atomic field) is read with `.load()`");
                }
                self.diags.push(d);
                None
            }
        }
    }

    /// The local for `name` in this pass, created on first use with its current type.
    pub(super) fn local(&mut self, name: &str, span: Span) -> Handle<Local> {
        if let Some(h) = self.scope.get(name) {
            return *h;
        }
        let ty = self
            .hints
            .get(name)
            .map(|h| self.materialize(h))
            .unwrap_or(Type::None);
        let h = self.locals.append(
            Local {
                name: name.to_string(),
                ty,
            },
            span,
        );
        self.scope.insert(name.to_string(), h);
        h
    }

    pub(super) fn aug_assign(&mut self, a: &ast::StmtAugAssign, out: &mut Block) {
        let span = sp(a);
        let Some(op) = binary_op(a.op) else {
            self.error(
                Code::E0202,
                span,
                "the `@` operator is not supported in device code",
            );
            return;
        };
        let rhs = self.expr(&a.value);
        let Some(rhs) = self.value_of(rhs) else {
            return;
        };
        match a.target.as_ref() {
            ast::Expr::Name(n) => {
                let cur = self.read_name(n.id.as_str(), sp(n));
                let Some(cur) = self.value_of(cur) else {
                    return;
                };
                if let Type::Ref { .. } = cur.ty {
                    let what = if self.atomic_objects.contains_key(n.id.as_str()) {
                        format!("the `Atomic` object `{}`", n.id)
                    } else {
                        format!("the atomic reference `{}`", n.id)
                    };
                    self.atomic_aug_assigned(&what, op, span);
                    return;
                }
                let Some(v) = self.binary(op, cur, rhs, span) else {
                    return;
                };
                self.assign(&a.target, v, out);
            }
            ast::Expr::Subscript(s) => {
                let base = self.expr(&s.value);
                let Some(base) = self.value_of(base) else {
                    return;
                };
                let Type::Array(at) = &base.ty else {
                    self.error(Code::E0211, span, format!("{} is immutable", base.ty));
                    return;
                };
                if let DType::Atomic(_) = at.dtype {
                    let what = format!("an element of {}", base.ty);
                    self.atomic_aug_assigned(&what, op, span);
                    return;
                }
                let Some(dtype) = at.dtype.scalar() else {
                    self.error(
                        Code::E0202,
                        span,
                        format!(
                            "`{}=` needs an array of numbers, found {}",
                            op.symbol(),
                            base.ty
                        ),
                    );
                    return;
                };
                if self.check_writable(&base, span).is_none() {
                    return;
                }
                let Some(indices) = self.indices(&base, &s.slice) else {
                    return;
                };
                // Evaluate the indices once: keep anything but locals and literals in temps.
                let mut fixed = Vec::new();
                for ix in indices {
                    let simple = matches!(self.exprs[ix.value], Expr::Local(_) | Expr::Literal(_));
                    let value = if simple {
                        ix.value
                    } else {
                        let ty = self.types[ix.value.index()].clone();
                        let t = self.new_temp(ty.clone(), span);
                        out.push(Stmt {
                            kind: StmtKind::Assign(t, ix.value),
                            span,
                        });
                        self.push(Expr::Local(t), ty, span)
                    };
                    fixed.push(Index {
                        value,
                        wrap: ix.wrap,
                    });
                }
                let again: Vec<Index> = fixed
                    .iter()
                    .map(|ix| {
                        let ty = self.types[ix.value.index()].clone();
                        let e = self.push(self.exprs[ix.value].clone(), ty, span);
                        Index {
                            value: e,
                            wrap: ix.wrap,
                        }
                    })
                    .collect();
                let load = self.push(
                    Expr::Load {
                        array: base.e,
                        indices: fixed,
                    },
                    Type::Scalar(dtype),
                    span,
                );
                let cur = self.val(load, Type::Scalar(dtype), span);
                let Some(v) = self.binary(op, cur, rhs, span) else {
                    return;
                };
                let Some(value) = self.store_value(&v, dtype) else {
                    return;
                };
                let array = self.push(self.exprs[base.e].clone(), base.ty.clone(), base.span);
                out.push(Stmt {
                    kind: StmtKind::Store {
                        array,
                        indices: again,
                        value,
                    },
                    span,
                });
            }
            _ => self.error(
                Code::E0211,
                span,
                "this augmented assignment target is not supported",
            ),
        }
    }
}

/// NumPy's kind order for `same_kind` casting: a value converts to a kind at or after its own.
fn kind_rank(k: Kind) -> u8 {
    match k {
        Kind::Bool => 0,
        Kind::UInt => 1,
        Kind::Int => 2,
        Kind::Float => 3,
        Kind::Complex => 4,
    }
}

fn from_kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Bool => "bool",
        Kind::UInt | Kind::Int => "int",
        Kind::Float => "float",
        Kind::Complex => "complex",
    }
}
