//! Expressions: literals, names, attributes, subscripts and array indices.

use super::*;
use crate::diag::Code;

impl FnCx<'_, '_> {
    pub(super) fn expr(&mut self, e: &ast::Expr) -> Value {
        crate::stack::deep(|| self.expr_inner(e))
    }

    fn expr_inner(&mut self, e: &ast::Expr) -> Value {
        let span = sp(e);
        use ast::Expr as E;
        let v = match e {
            E::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| i.as_u64().map(i128::from))
                {
                    Some(v) => self.const_val(&Const::Int(v), span),
                    None => {
                        self.error(
                            Code::E0204,
                            span,
                            "this integer literal does not fit in 64 bits",
                        );
                        None
                    }
                },
                ast::Number::Float(f) => self.const_val(&Const::Float(*f), span),
                ast::Number::Complex { real, imag } => {
                    self.const_val(&Const::Complex(*real, *imag), span)
                }
            },
            E::BooleanLiteral(b) => self.const_val(&Const::Bool(b.value), span),
            E::Name(n) => return self.read_name(n.id.as_str(), span),
            E::Attribute(a) => return self.attribute(a),
            E::Subscript(s) => self.subscript(s),
            E::BinOp(b) => {
                let Some(op) = binary_op(b.op) else {
                    self.error(
                        Code::E0202,
                        span,
                        "the `@` operator is not supported in device code",
                    );
                    return Value::Err;
                };
                let l = self.expr(&b.left);
                let r = self.expr(&b.right);
                match (self.value_of(l), self.value_of(r)) {
                    (Some(l), Some(r)) => self.binary(op, l, r, span),
                    _ => None,
                }
            }
            E::UnaryOp(u) => {
                let v = self.expr(&u.operand);
                self.value_of(v).and_then(|v| self.unary(u.op, v, span))
            }
            E::BoolOp(b) => self.bool_op(b),
            E::Compare(c) => self.compare(c),
            E::If(i) => self.if_expr(i),
            E::Call(c) => return self.call(c),
            E::Tuple(t) => {
                let mut es = Vec::new();
                let mut tys = Vec::new();
                let mut konsts = Vec::new();
                let mut all_nonneg = true;
                for x in &t.elts {
                    let v = self.expr(x);
                    let Some(v) = self.value_of(v) else {
                        return Value::Err;
                    };
                    konsts.push(
                        v.konst
                            .clone()
                            .filter(|_| v.weak.is_some() || v.ty == Type::Scalar(Scalar::Bool)),
                    );
                    all_nonneg &= v.nonneg;
                    let Some(v) = self.concrete(v) else {
                        return Value::Err;
                    };
                    es.push(v.e);
                    tys.push(v.ty);
                }
                let limit = crate::types::MAX_AGGREGATE_ELEMENTS;
                let mut count = 0usize;
                for t in &tys {
                    count = count.saturating_add(t.element_count(limit));
                    if count > limit {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0002,
                                span,
                                format!("this tuple has more than {limit} elements (counted through nested tuples and structs), more than the compiler allows"),
                            )
                            .with_note("a tuple lives in registers; keep large data in an array (`local_array`, `shared_array` or a parameter)"),
                        );
                        return Value::Err;
                    }
                }
                let ty = Type::Tuple(tys);
                let e = self.push(Expr::Tuple(es), ty.clone(), span);
                let mut v = self.val(e, ty, span);
                v.konst = konsts
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .map(Const::Tuple);
                v.nonneg = all_nonneg;
                Some(v)
            }
            E::NoneLiteral(_) => {
                self.error(
                    Code::E0202,
                    span,
                    "`None` can only be returned in device code",
                );
                None
            }
            other => {
                let what = match other {
                    E::StringLiteral(_) | E::FString(_) | E::TString(_) | E::BytesLiteral(_) => {
                        "strings are"
                    }
                    E::List(_) | E::ListComp(_) => "lists are",
                    E::Dict(_) | E::DictComp(_) => "dicts are",
                    E::Set(_) | E::SetComp(_) => "sets are",
                    E::Lambda(_) => "lambdas (other than predicates) are",
                    E::Generator(_) => "generators are",
                    E::Named(_) => "assignment expressions (`:=`) are",
                    E::Slice(_) => "slices are",
                    _ => "this expression is",
                };
                self.error(
                    Code::E0202,
                    span,
                    format!("{what} not supported in device code"),
                );
                None
            }
        };
        v.map(Value::Val).unwrap_or(Value::Err)
    }

    pub(super) fn read_name(&mut self, name: &str, span: Span) -> Value {
        if let Some(item) = self.statics.get(name).cloned() {
            if let Item::Builtin(b) = item {
                self.device_only_use(b, span);
            }
            return Value::Item(item, span);
        }
        if self.poisoned.contains(name) && !self.hints.contains_key(name) {
            return Value::Err;
        }
        if self.scope.contains_key(name) || self.assigned.contains(name) {
            let reachable = self.seen_assigned.contains(name)
                || self.loop_assigned.iter().any(|names| names.contains(name));
            if !reachable {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0111,
                        span,
                        format!(
                            "`{}` is used before it is assigned",
                            crate::front::webs::source_name(name)
                        ),
                    )
                    .with_note("assign it before this point on every path"),
                );
                return Value::Err;
            }
            let Some(hint) = self.hints.get(name).cloned() else {
                self.unresolved.push((name.to_string(), span));
                return Value::Err;
            };
            let h = self.local(name, span);
            let ty = self.locals[h].ty.clone();
            if ty.is_tensor_map() && !self.tensor_map_use {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0748,
                        span,
                        format!("the tensor map `{name}` is a grid constant: it can only be the tensor map of a TMA function"),
                    )
                    .with_note("a `hopper.TensorMap` parameter lives in the kernel's parameter space, which PTX does not let a kernel write; TMA reads it there by address, so it is not copied, assigned, passed to functions or read field by field"),
                );
                return Value::Err;
            }
            let e = self.push(Expr::Local(h), ty.clone(), span);
            let single = self.assign_sites.get(name).copied() == Some(1);
            return Value::Val(Val {
                e,
                ty,
                weak: hint.weak,
                konst: if single { hint.konst } else { None },
                nonneg: hint.nonneg,
                span,
            });
        }
        match self.s.m.lookup(name) {
            Some(item) => {
                if let Item::Builtin(b) = item {
                    self.device_only_use(b, span);
                }
                Value::Item(item, span)
            }
            None => {
                let candidates = self
                    .scope
                    .keys()
                    .chain(self.assigned.iter())
                    .chain(self.s.m.items.keys())
                    .map(String::as_str);
                let d =
                    Diagnostic::error(Code::E0101, span, format!("name `{name}` is not defined"))
                        .suggesting(name, candidates);
                self.diags.push(d);
                Value::Err
            }
        }
    }

    /// What a call's callee names, without evaluating it (locals shadow module names).
    /// `v.dtype` of a local vector `v` names its element type (`v.dtype(x)`,
    /// `local_array(n, v.dtype)`).
    pub(super) fn callee_item(&mut self, e: &ast::Expr) -> Option<Item> {
        if let ast::Expr::Attribute(a) = e
            && a.attr.id.as_str() == "dtype"
            && let ast::Expr::Name(n) = a.value.as_ref()
            && (self.scope.contains_key(n.id.as_str()) || self.assigned.contains(n.id.as_str()))
        {
            return match self.read_name(n.id.as_str(), sp(n)) {
                Value::Val(Val {
                    ty: Type::Vector { elem, .. } | Type::Ref { dtype: elem, .. },
                    ..
                }) => Some(Item::Builtin(Builtin::Scalar(elem))),
                Value::Val(v) => dtype_of(&v.ty).map(|s| Item::Builtin(Builtin::Scalar(s))),
                _ => None,
            };
        }
        if let ast::Expr::Name(n) = e
            && let Some(item) = self.statics.get(n.id.as_str())
        {
            return Some(item.clone());
        }
        if let ast::Expr::Name(n) = e
            && self.scope.contains_key(n.id.as_str())
        {
            return None;
        }
        self.s.m.resolve_static(e)
    }

    pub(super) fn attribute(&mut self, a: &ast::ExprAttribute) -> Value {
        let base = self.place_or_value(&a.value);
        self.attr_of(base, a.attr.id.as_str(), sp(a))
    }

    /// The attribute `attr` of an evaluated base.
    pub(super) fn attr_of(&mut self, base: Value, attr: &str, span: Span) -> Value {
        let v = match base {
            Value::Err => return Value::Err,
            // Every namespace's members come from the one resolver, `builtins::member`.
            Value::Item(Item::Namespace(ns), _) => {
                let missing = match ns {
                    Namespace::Math => format!("`math.{attr}` is not available in device code"),
                    Namespace::Cmath => {
                        format!("`cmath.{attr}` is not available in device code")
                    }
                    Namespace::Device => format!("`cuda.device` has no member `{attr}`"),
                    Namespace::Cuda | Namespace::Operator | Namespace::Builtins => String::new(),
                    _ => format!(
                        "`{}.{attr}` is not available in device code ({} dialect)",
                        ns.path(),
                        self.s.m.dialect.name()
                    ),
                };
                match crate::front::builtins::member(ns, attr) {
                    Some(Item::Planned(n)) => {
                        self.diags.push(planned(&n, span));
                        return Value::Err;
                    }
                    Some(item) => {
                        if let Item::Builtin(b) = item {
                            self.device_only_use(b, span);
                        }
                        return Value::Item(item, span);
                    }
                    None if !missing.is_empty() => {
                        let names = crate::front::builtins::member_names(ns);
                        self.diags.push(
                            Diagnostic::error(Code::E0102, span, missing)
                                .suggesting(attr, names.iter().copied()),
                        );
                        return Value::Err;
                    }
                    // Not a member: the namespace itself is not a value (below).
                    None => self.value_of(base),
                }
            }
            Value::Item(
                Item::Builtin(
                    b @ (Builtin::ThreadIdx
                    | Builtin::BlockIdx
                    | Builtin::BlockDim
                    | Builtin::GridDim),
                ),
                _,
            ) if matches!(attr, "x" | "y" | "z") => {
                let axis = match attr {
                    "x" => Axis::X,
                    "y" => Axis::Y,
                    _ => Axis::Z,
                };
                let ty = Type::Scalar(Scalar::UInt32);
                let e = self.push(
                    Expr::Intrinsic(dim3_intrinsic(b, axis), vec![]),
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
            Value::Item(
                Item::Builtin(
                    b @ (Builtin::ClusterIdx | Builtin::ClusterDim | Builtin::BlockIdxInCluster),
                ),
                _,
            ) if matches!(attr, "x" | "y" | "z") => {
                let axis = match attr {
                    "x" => Axis::X,
                    "y" => Axis::Y,
                    _ => Axis::Z,
                };
                self.cluster_position(b, Some(axis), span)
            }
            other => {
                let Some(v) = self.value_of(other) else {
                    return Value::Err;
                };
                // A vector's `.dtype` is a type, usable where types are (called, or given
                // as a dtype), not a value.
                if attr == "dtype"
                    && let Some(elem) = dtype_of(&v.ty)
                {
                    return Value::Item(Item::Builtin(Builtin::Scalar(elem)), span);
                }
                // `AtomicInterface.dtype`: the dtype of the atomic's object, a type too.
                // A struct element's reference has no number dtype: its bits travel as one
                // of the same size, which is not the element's type (§9.2).
                if let (
                    Type::Ref {
                        record: Some(st), ..
                    },
                    "dtype",
                ) = (&v.ty, attr)
                {
                    self.error(
                        Code::E0212,
                        span,
                        format!("`dtype` of an atomic reference to a `{}` element is not available: use `{}` itself", st.name, st.name),
                    );
                    return Value::Err;
                }
                if let (Type::Ref { dtype, .. }, "dtype") = (&v.ty, attr) {
                    return Value::Item(Item::Builtin(Builtin::Scalar(*dtype)), span);
                }
                self.value_attribute(v, attr, span)
            }
        };
        v.map(Value::Val).unwrap_or(Value::Err)
    }

    pub(super) fn value_attribute(&mut self, v: Val, attr: &str, span: Span) -> Option<Val> {
        let i64t = Type::Scalar(Scalar::Int64);
        if let Some(r) = self.number_part(&v, attr, span) {
            return r;
        }
        match (&v.ty, attr) {
            (Type::Array(at), "shape" | "strides") => {
                let n = at.ndim;
                let es: Vec<_> = (0..n)
                    .map(|d| {
                        let p = if attr == "shape" {
                            ArrayProp::Shape(d)
                        } else {
                            ArrayProp::Stride(d)
                        };
                        let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), v.span);
                        self.push(Expr::ArrayProp(base, p), i64t.clone(), span)
                    })
                    .collect();
                let ty = Type::Tuple(vec![i64t; n as usize]);
                let e = self.push(Expr::Tuple(es), ty.clone(), span);
                let mut r = self.val(e, ty, span);
                r.nonneg = attr == "shape";
                Some(r)
            }
            (Type::Array(at), "real" | "imag")
                if at.dtype.scalar().is_some_and(|s| s.is_complex()) =>
            {
                self.complex_array_part(&v, attr == "imag", span)
            }
            (Type::Array(_), "size") => {
                let e = self.push(Expr::ArrayProp(v.e, ArrayProp::Size), i64t.clone(), span);
                let mut r = self.val(e, i64t, span);
                r.nonneg = true;
                Some(r)
            }
            // `ndims` is the spec's spelling (§5.3).
            (Type::Array(at), "ndim" | "ndims") => {
                self.const_val(&Const::Int(i128::from(at.ndim)), span)
            }
            // A fixed-format number is a zero-dimensional array (NumPy's scalars have the
            // same attributes): `ndim` 0, `shape` and `strides` `()`, `size` 1.
            (Type::Scalar(_), "ndim" | "ndims") => self.const_val(&Const::Int(0), span),
            (Type::Scalar(_), "size") => self.const_val(&Const::Int(1), span),
            (Type::Scalar(_), "shape" | "strides") => {
                self.const_val(&Const::Tuple(Vec::new()), span)
            }
            (Type::StructRef { .. }, field) => self.field_of_ref(v, field, span),
            (Type::Struct(st), field)
                if st
                    .field(field)
                    .is_some_and(|i| !st.subarray_shape(i).is_empty()) =>
            {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0214,
                        span,
                        format!(
                            "sub-array field `{field}` of a record value: a sub-array is a view \
                             of the record's memory, and this record is a copy"
                        ),
                    )
                    .with_label("a record value, not a record in memory")
                    .with_note(
                        "use the field of the array element in place, `recs[i].field`, or \
                         of a record argument in the numba dialect",
                    ),
                );
                None
            }
            (Type::Struct(st), field) if st.field(field).is_some() => {
                let i = st.field(field)?;
                let ty = st.fields[i].1.clone();
                let e = self.push(Expr::Extract(v.e, i as u32), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            (Type::Vector { len, .. }, "size") => {
                self.const_val(&Const::Int(i128::from(*len)), span)
            }
            (Type::Fragment(fr), "num_elements") => {
                self.const_val(&Const::Int(i128::from(fr.num_elements())), span)
            }

            (Type::Vector { elem, len }, "x" | "y" | "z" | "w") => {
                let i = match attr {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    _ => 3,
                };
                if i >= *len {
                    self.error(
                        Code::E0212,
                        span,
                        format!("{} has no attribute `{attr}`", v.ty),
                    );
                    return None;
                }
                let ty = Type::Scalar(*elem);
                let e = self.push(Expr::Extract(v.e, i as u32), ty.clone(), span);
                let mut r = self.val(e, ty, span);
                r.nonneg |= v.nonneg;
                Some(r)
            }
            (ty, _) => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0212,
                        span,
                        format!("{ty} has no attribute `{attr}` in device code"),
                    )
                    .with_label("unknown attribute"),
                );
                None
            }
        }
    }

    pub(super) fn subscript(&mut self, s: &ast::ExprSubscript) -> Option<Val> {
        if let Some(v) = self.cub_subscript(s) {
            return v;
        }
        if let ast::Expr::StringLiteral(k) = s.slice.as_ref() {
            // `records[i]['x']`: numba's spelling of a field, `records[i].x`.
            let base = self.place_or_value(&s.value);
            let v = self.attr_of(base, k.value.to_str(), sp(s));
            return self.value_of(v);
        }
        let base = self.expr(&s.value);
        let base = self.value_of(base)?;
        let v = if self.s.m.rules().records_by_reference {
            // numba's records are references into their array, as NumPy's are: `r = recs[i]`
            // sees later stores to `recs[i]`, and `r.x = v` stores into the array.
            self.element_place(base, s)
        } else {
            self.subscript_with(base, s)
        }?;
        if let Type::StructRef { st, .. } | Type::Struct(st) = &v.ty
            && st.bare_text().is_some()
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0214,
                    sp(s),
                    format!("an element of an array of {} (text) cannot be read in device code", st.name),
                )
                .with_note("an array of NumPy's text dtype (`S<n>`, `U<n>`) can only be assigned string literals (`a[i] = \"abc\"`)"),
            );
            return None;
        }
        Some(v)
    }

    /// `e`, except that an element of an array of structs is a reference to it (so its
    /// fields are read and written in place and its methods receive it by reference).
    pub(super) fn place_or_value(&mut self, e: &ast::Expr) -> Value {
        let ast::Expr::Subscript(s) = e else {
            return self.expr(e);
        };
        if let ast::Expr::StringLiteral(k) = s.slice.as_ref() {
            // `records[i]['pos']`: a field, in place when the record is.
            let base = self.place_or_value(&s.value);
            return self.attr_of(base, k.value.to_str(), sp(s));
        }
        let base = self.expr(&s.value);
        let Some(base) = self.value_of(base) else {
            return Value::Err;
        };
        self.element_place(base, s)
            .map(Value::Val)
            .unwrap_or(Value::Err)
    }

    /// `base[...]` where an element of an array of structs is a reference to it; anything
    /// else as `subscript_with`.
    fn element_place(&mut self, base: Val, s: &ast::ExprSubscript) -> Option<Val> {
        match &base.ty {
            Type::Array(at) if !matches!(s.slice.as_ref(), ast::Expr::Slice(_)) => {
                match &at.dtype {
                    DType::Struct(st) => {
                        let ty = Type::StructRef {
                            st: st.clone(),
                            space: at.space,
                        };
                        let span = sp(s);
                        // An element becomes a reference to it; a view stays a view.
                        self.array_subscript(&base, &s.slice, span).map(|v| {
                            match self.exprs[v.e].clone() {
                                Expr::Load { array, indices } => {
                                    let e = self.push(
                                        Expr::ElementRef { array, indices },
                                        ty.clone(),
                                        span,
                                    );
                                    self.val(e, ty, span)
                                }
                                _ => v,
                            }
                        })
                    }
                    DType::Scalar(_) | DType::Vector { .. } | DType::Atomic(_) => {
                        self.subscript_with(base, s)
                    }
                }
            }
            _ => self.subscript_with(base, s),
        }
    }

    /// A field of the struct a reference refers to: `Atomic` fields as atomic references,
    /// struct fields as references, other fields as their values.
    pub(super) fn field_of_ref(&mut self, r: Val, field: &str, span: Span) -> Option<Val> {
        let Type::StructRef { st, space } = &r.ty else {
            return None;
        };
        let Some(i) = st.field(field) else {
            self.error(
                Code::E0212,
                span,
                format!("`{}` has no field `{field}`", st.name),
            );
            return None;
        };
        let fty = st.fields[i].1.clone();
        let space = *space;
        let shape = st.subarray_shape(i);
        if st.field_text(i).is_some() {
            self.diags.push(
                Diagnostic::error(
                    Code::E0214,
                    span,
                    format!("text field `{field}` of `{}` cannot be read in device code", st.name),
                )
                .with_note(
                    "a fixed-width text field (NumPy `S<n>`, `U<n>`) can only be assigned a string literal (`r[\"name\"] = \"abc\"`)",
                ),
            );
            return None;
        }
        if !shape.is_empty() {
            // A sub-array field: an array view of the record's bytes (numba's nested arrays).
            let elem = crate::types::record::subarray_elem(&fty, shape.len())?;
            let dtype = match elem {
                Type::Scalar(s) => DType::Scalar(*s),
                Type::Struct(inner) => DType::Struct(inner.clone()),
                _ => return None,
            };
            let ty = Type::Array(crate::types::ArrayType {
                dtype,
                ndim: shape.len() as u8,
                layout: crate::types::Layout::C,
                space,
            });
            let e = self.push(Expr::FieldArray(r.e, i as u32), ty.clone(), span);
            return Some(self.val(e, ty, span));
        }
        let (ref_ty, deref) = match &fty {
            Type::Atomic { dtype, .. } => (
                Type::Ref {
                    record: None,
                    dtype: *dtype,
                    space,
                },
                false,
            ),
            Type::Struct(inner) => (
                Type::StructRef {
                    st: inner.clone(),
                    space,
                },
                false,
            ),
            Type::Scalar(s) => (
                Type::Ref {
                    record: None,
                    dtype: *s,
                    space,
                },
                true,
            ),
            other => {
                // Vectors and tuples: read the whole element and take the field.
                let whole = self.push(Expr::Deref(r.e), Type::Struct(st.clone()), span);
                let e = self.push(Expr::Extract(whole, i as u32), other.clone(), span);
                return Some(self.val(e, other.clone(), span));
            }
        };
        let e = self.push(Expr::FieldRef(r.e, i as u32), ref_ty.clone(), span);
        if deref {
            let v = self.push(Expr::Deref(e), fty.clone(), span);
            return Some(self.val(v, fty, span));
        }
        Some(self.val(e, ref_ty, span))
    }

    /// `base[...]` on an evaluated base.
    pub(super) fn subscript_with(&mut self, base: Val, s: &ast::ExprSubscript) -> Option<Val> {
        let span = sp(s);
        if thrust::iter_of(&base.ty).is_some() {
            return self.iterator_subscript(&base, s);
        }
        match &base.ty {
            Type::Array(_) => self.array_subscript(&base, &s.slice, span),
            Type::Fragment(_) => self.fragment_element(&base, &s.slice, span),
            // `x[()]` of a number (a zero-dimensional array): the number itself.
            Type::Scalar(_) if matches!(s.slice.as_ref(), ast::Expr::Tuple(t) if t.elts.is_empty()) => {
                Some(base)
            }
            Type::WarpMask => {
                let i = self.expr(&s.slice);
                let i = self.value_of(i)?;
                let iv = self.mask_lane(&i)?;
                let one = self.push(
                    Expr::Literal(Literal::Int(1)),
                    Type::Scalar(Scalar::Int32),
                    span,
                );
                let m = self.push(Expr::Cast(base.e), Type::Scalar(Scalar::Int32), span);
                let sh = self.push(
                    Expr::Binary(BinaryOp::Shr, m, iv),
                    Type::Scalar(Scalar::Int32),
                    span,
                );
                let bit = self.push(
                    Expr::Binary(BinaryOp::BitAnd, sh, one),
                    Type::Scalar(Scalar::Int32),
                    span,
                );
                let e = self.push(Expr::Cast(bit), Type::Scalar(Scalar::Bool), span);
                Some(self.val(e, Type::Scalar(Scalar::Bool), span))
            }
            Type::Tuple(_) | Type::Vector { .. } => {
                let n = match &base.ty {
                    Type::Tuple(ts) => ts.len(),
                    Type::Vector { len, .. } => *len as usize,
                    _ => 0,
                };
                let iv = self.expr(&s.slice);
                let iv = self.value_of(iv)?;
                if matches!(base.ty, Type::Vector { .. })
                    && iv.konst.is_none()
                    && iv.ty.as_scalar().is_some_and(|s| s.is_integer())
                {
                    return self.vector_element(&base, &iv, span);
                }
                // numba: a tuple whose elements share one type (a `UniTuple`, such as
                // `a.shape`) takes a run-time index (docs/semantics.md §7.1; negative
                // indices count from the end).
                if let Type::Tuple(ts) = &base.ty
                    && self.s.m.rules().runtime_tuple_index
                    && iv.konst.is_none()
                    && iv.ty.as_scalar().is_some_and(|s| s.is_integer())
                    && ts
                        .first()
                        .is_some_and(|t| matches!(t, Type::Scalar(_)) && ts.iter().all(|u| u == t))
                {
                    let ety = ts[0].clone();
                    let i64s = Scalar::Int64;
                    let i64t = Type::Scalar(i64s);
                    let bool_t = Type::Scalar(Scalar::Bool);
                    let idx = self.convert(&iv, i64s)?;
                    let zero = self.push(Expr::Literal(Literal::Int(0)), i64t.clone(), span);
                    let neg =
                        self.push(Expr::Binary(BinaryOp::Lt, idx, zero), bool_t.clone(), span);
                    let len = self.push(Expr::Literal(Literal::Int(n as i128)), i64t.clone(), span);
                    let up = self.push(Expr::Binary(BinaryOp::Add, idx, len), i64t.clone(), span);
                    let idx = self.push(
                        Expr::Select {
                            cond: neg,
                            then: up,
                            otherwise: idx,
                        },
                        i64t.clone(),
                        span,
                    );
                    let mut acc = self.push(Expr::Extract(base.e, n as u32 - 1), ety.clone(), span);
                    for k in (0..n - 1).rev() {
                        let ek = self.push(Expr::Extract(base.e, k as u32), ety.clone(), span);
                        let kk =
                            self.push(Expr::Literal(Literal::Int(k as i128)), i64t.clone(), span);
                        let is_k =
                            self.push(Expr::Binary(BinaryOp::Eq, idx, kk), bool_t.clone(), span);
                        acc = self.push(
                            Expr::Select {
                                cond: is_k,
                                then: ek,
                                otherwise: acc,
                            },
                            ety.clone(),
                            span,
                        );
                    }
                    let mut r = self.val(acc, ety, span);
                    r.nonneg |= base.nonneg;
                    return Some(r);
                }
                let Some(i) = iv
                    .konst
                    .as_ref()
                    .and_then(|c| c.as_int())
                    .filter(|_| iv.ty.as_scalar().is_some_and(|s| s.kind() != Kind::Float))
                else {
                    self.diags.push(
                        Diagnostic::error(Code::E0203, iv.span, format!("{} can only be indexed by a constant integer", base.ty))
                            .with_note("the elements may have different types, so the index must be known when compiling"),
                    );
                    return None;
                };
                let idx = if i < 0 { i + n as i128 } else { i };
                if idx < 0 || idx >= n as i128 {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0203,
                            iv.span,
                            format!("index {i} is out of range for {}", base.ty),
                        )
                        .with_label(format!(
                            "valid indices are {} to {}",
                            -(n as i64),
                            n as i64 - 1
                        )),
                    );
                    return None;
                }
                let ty = element_type(&base.ty, idx as usize);
                let e = self.push(Expr::Extract(base.e, idx as u32), ty.clone(), span);
                let mut r = self.val(e, ty, span);
                r.nonneg |= base.nonneg;
                if let Some(Const::Tuple(items)) = &base.konst {
                    r.konst = items.get(idx as usize).cloned();
                    if let Some(c) = &r.konst {
                        return self.const_val(&c.clone(), span);
                    }
                }
                Some(r)
            }
            Type::StructRef { st, .. } if st.record.is_some() => {
                // numba: `rec[0]` is a record's first field, as in NumPy.
                let st = st.clone();
                let iv = self.expr(&s.slice);
                let iv = self.value_of(iv)?;
                let n = st.fields.len() as i128;
                let i = iv
                    .konst
                    .as_ref()
                    .and_then(|c| c.as_int())
                    .filter(|_| iv.ty.as_scalar().is_some_and(|s| s.is_integer()))
                    .map(|i| if i < 0 { i + n } else { i })
                    .filter(|i| (0..n).contains(i));
                let Some(i) = i else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0216,
                            iv.span,
                            format!("a record is indexed by a field name or a constant field number (0 to {})", n - 1),
                        )
                        .with_label(format!("not a field of `{}`", st.name)),
                    );
                    return None;
                };
                let name = st.fields[i as usize].0.clone();
                self.field_of_ref(base, &name, span)
            }
            other => {
                self.error(Code::E0203, base.span, format!("{other} cannot be indexed"));
                None
            }
        }
    }

    /// A constant warp-mask index must be a lane, `0 <= i < 32` (spec: WarpMask.__getitem__).
    /// The lane of `WarpMask.__getitem__`/`__setitem__` (`i: int32`): an integer (a float
    /// is E0207, as for every hinted parameter of a spec function), constant lanes in
    /// `0..31` (E0203); converted to `int32`.
    pub(super) fn mask_lane(&mut self, i: &Val) -> Option<Handle<Expr>> {
        if !i.ty.as_scalar().is_some_and(|s| s.is_integer()) || i.ty == Type::WarpMask {
            self.diags.push(
                Diagnostic::error(
                    Code::E0207,
                    i.span,
                    format!(
                        "a warp mask's lane must be an integer (`i: int32`), found {}",
                        i.ty
                    ),
                )
                .with_note("convert it with `int32(x)`"),
            );
            return None;
        }
        self.check_lane(i)?;
        self.convert(i, Scalar::Int32)
    }

    pub(super) fn check_lane(&mut self, i: &Val) -> Option<()> {
        match i.konst.as_ref().and_then(|c| c.as_int()) {
            Some(k) if !(0..32).contains(&k) => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0203,
                        i.span,
                        format!("lane {k} is outside a warp mask"),
                    )
                    .with_label("must satisfy 0 <= i < 32"),
                );
                None
            }
            _ => Some(()),
        }
    }
}

/// The number type a value's `.dtype` names: a vector's or an array's element type (arrays
/// of numbers), or a number's own type (§5.3).
fn dtype_of(ty: &Type) -> Option<Scalar> {
    match ty {
        Type::Vector { elem, .. } => Some(*elem),
        Type::Array(at) => at.dtype.scalar(),
        Type::Scalar(s) => Some(*s),
        _ => None,
    }
}
