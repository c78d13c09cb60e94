//! Array subscripts and views (docs/semantics.md §5.1, §5.9, §5.12–§5.14): element indices,
//! views made by slices or by fewer indices than dimensions (`a[:, 0]`, `a[1:3, ::2]`, the
//! row `a[i]` of a 2-D array), `reshape` and `astype`. Views never copy: they are array
//! values whose descriptor points into the same memory.

use super::*;
use crate::diag::Code;
use crate::ir::Subscript;
use crate::types::{ArrayType, Layout};

/// One evaluated subscript of an array access, before it is known whether the access is an
/// element or a view.
enum Part {
    Index(Val),
    Slice {
        start: Option<Handle<Expr>>,
        stop: Option<Handle<Expr>>,
        step: i64,
        span: Span,
    },
}

impl FnCx<'_, '_> {
    /// Evaluates the subscripts of `array[slice]` left to right. An integer tuple value
    /// (`a[device.tid(2)]`) gives one index per element.
    fn parts(&mut self, slice: &ast::Expr) -> Option<Vec<Part>> {
        let exprs: Vec<&ast::Expr> = match slice {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            e => vec![e],
        };
        let mut parts = Vec::new();
        for p in exprs {
            if let ast::Expr::Slice(s) = p {
                parts.push(self.slice_part(s)?);
                continue;
            }
            let v = self.expr(p);
            let v = self.value_of(v)?;
            match &v.ty {
                Type::Tuple(ts)
                    if ts
                        .iter()
                        .all(|t| t.as_scalar().is_some_and(|s| s.is_integer())) =>
                {
                    for (i, t) in ts.iter().enumerate() {
                        let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), v.span);
                        let e = self.push(Expr::Extract(base, i as u32), t.clone(), v.span);
                        let mut ev = self.val(e, t.clone(), v.span);
                        ev.nonneg |= v.nonneg;
                        parts.push(Part::Index(ev));
                    }
                }
                _ => parts.push(Part::Index(v)),
            }
        }
        Some(parts)
    }

    /// `start:stop:step`: integer bounds (as `int64`) and a constant non-zero step.
    fn slice_part(&mut self, s: &ast::ExprSlice) -> Option<Part> {
        let step = match &s.step {
            None => 1,
            Some(e) => match self.const_int(e, "step")? {
                0 => {
                    self.error(Code::E0203, sp(e.as_ref()), "a slice step cannot be zero");
                    return None;
                }
                n if n.unsigned_abs() <= i64::MAX as u128 => n as i64,
                n => {
                    self.error(
                        Code::E0203,
                        sp(e.as_ref()),
                        format!("slice step {n} does not fit int64"),
                    );
                    return None;
                }
            },
        };
        let bound = |cx: &mut Self, e: &Option<Box<ast::Expr>>| -> Option<Option<Handle<Expr>>> {
            let Some(e) = e else { return Some(None) };
            let v = cx.eval(e)?;
            match v.ty.as_scalar() {
                Some(s) if s.is_integer() => Some(Some(cx.convert(&v, Scalar::Int64)?)),
                _ => {
                    cx.error(
                        Code::E0203,
                        v.span,
                        format!("slice bounds must be integers, found {}", v.ty),
                    );
                    None
                }
            }
        };
        let start = bound(self, &s.lower)?;
        let stop = bound(self, &s.upper)?;
        Some(Part::Slice {
            start,
            stop,
            step,
            span: sp(s),
        })
    }

    /// An integer index value as an IR index (weak Python numbers become `int64`).
    fn index_of(&mut self, v: Val) -> Option<Index> {
        match v.ty.as_scalar() {
            Some(s) if s.is_integer() => {}
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0203,
                        v.span,
                        format!("array indices must be integers, found {}", v.ty),
                    )
                    .with_label("not an integer"),
                );
                return None;
            }
        }
        if !self.s.wraparound
            && let Some(n) = v.konst.as_ref().and_then(|c| c.as_int())
            && n < 0
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0290,
                    v.span,
                    format!("the index {n} is negative, and the kernel is compiled with `wraparound=False`"),
                )
                .with_label("would be out of range")
                .with_note(
                    "under `wraparound=False` an index does not count from the end; write `a[len(a) - 1]` or drop the option",
                ),
            );
            return None;
        }
        let e = if v.weak.is_some() {
            self.convert(&v, Scalar::Int64)?
        } else {
            v.e
        };
        Some(Index {
            value: e,
            wrap: !v.nonneg && self.s.wraparound,
        })
    }

    /// The indices of an element access (a load, a store, an element reference): exactly
    /// one integer per dimension.
    pub(super) fn indices(&mut self, array: &Val, slice: &ast::Expr) -> Option<Vec<Index>> {
        let Type::Array(at) = &array.ty else {
            return None;
        };
        let ndim = at.ndim as usize;
        let parts = self.parts(slice)?;
        if let Some(span) = parts.iter().find_map(|p| match p {
            Part::Slice { span, .. } => Some(*span),
            Part::Index(_) => None,
        }) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0203,
                    span,
                    "assigning to a slice (or taking `atomic_ref` of one) is not supported",
                )
                .with_note("assign the elements one by one, e.g. in a loop over `range`"),
            );
            return None;
        }
        if parts.len() != ndim {
            let d = Diagnostic::error(
                Code::E0203,
                sp(slice),
                format!(
                    "{} has {ndim} dimension{}, but {} ind{} given",
                    array.ty,
                    if ndim == 1 { "" } else { "s" },
                    parts.len(),
                    if parts.len() == 1 {
                        "ex was"
                    } else {
                        "ices were"
                    }
                ),
            );
            let d = if parts.len() < ndim {
                d.with_note(
                    "with fewer indices the subscript is a view (a row), which cannot be assigned to; index every dimension",
                )
            } else {
                d
            };
            self.diags.push(d);
            return None;
        }
        let mut out = Vec::new();
        for p in parts {
            if let Part::Index(v) = p {
                out.push(self.index_of(v)?);
            }
        }
        Some(out)
    }

    /// `array[...]` read as a value: an element when every dimension has an integer index,
    /// otherwise a view (slices keep their dimension, integers drop theirs, missing trailing
    /// dimensions are kept whole).
    pub(super) fn array_subscript(
        &mut self,
        base: &Val,
        slice: &ast::Expr,
        span: Span,
    ) -> Option<Val> {
        let Type::Array(at) = &base.ty else {
            return None;
        };
        let at = at.clone();
        let ndim = at.ndim as usize;
        let parts = self.parts(slice)?;
        if parts.len() > ndim {
            self.error(
                Code::E0203,
                sp(slice),
                format!(
                    "{} has {ndim} dimension{}, but {} subscripts were given",
                    base.ty,
                    if ndim == 1 { "" } else { "s" },
                    parts.len()
                ),
            );
            return None;
        }
        let is_element = parts.len() == ndim && parts.iter().all(|p| matches!(p, Part::Index(_)));
        let mut subs = Vec::new();
        for p in parts {
            subs.push(match p {
                Part::Index(v) => Subscript::Index(self.index_of(v)?),
                Part::Slice {
                    start, stop, step, ..
                } => Subscript::Slice { start, stop, step },
            });
        }
        if is_element {
            let indices = subs
                .iter()
                .filter_map(|s| match s {
                    Subscript::Index(i) => Some(*i),
                    Subscript::Slice { .. } => None,
                })
                .collect();
            if let DType::Atomic(dtype) = at.dtype {
                // An element of an array of `Atomic` is the atomic object itself (§9.5).
                let ty = Type::Ref {
                    record: None,
                    dtype,
                    space: at.space,
                };
                let e = self.push(
                    Expr::ElementRef {
                        array: base.e,
                        indices,
                    },
                    ty.clone(),
                    span,
                );
                return Some(self.val(e, ty, span));
            }
            let ty = at.dtype.ty();
            let e = self.push(
                Expr::Load {
                    array: base.e,
                    indices,
                },
                ty.clone(),
                span,
            );
            return Some(self.val(e, ty, span));
        }
        while subs.len() < ndim {
            subs.push(Subscript::Slice {
                start: None,
                stop: None,
                step: 1,
            });
        }
        let ty = Type::Array(view_type(&at, &subs));
        let e = self.push(
            Expr::View {
                array: base.e,
                subs,
            },
            ty.clone(),
            span,
        );
        Some(self.val(e, ty, span))
    }

    /// `array.reshape(shape)`, `array.reshape(d0, d1, …)`, with `order='C'` (default) or
    /// `'F'`: the same memory with another shape, checked for contiguity when it runs.
    pub(super) fn reshape(&mut self, v: &Val, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let Type::Array(at) = &v.ty else {
            return None;
        };
        let at = at.clone();
        let mut fortran = false;
        for k in c.arguments.keywords.iter() {
            match k.arg.as_ref().map(|a| a.id.as_str()) {
                Some("order") => match &k.value {
                    ast::Expr::StringLiteral(s) if s.value.to_str() == "C" => fortran = false,
                    ast::Expr::StringLiteral(s) if s.value.to_str() == "F" => fortran = true,
                    other => {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0420,
                                sp(other),
                                "`reshape`'s `order` must be 'C' or 'F'",
                            )
                            .with_note("'A' and 'K' depend on the array's layout at run time"),
                        );
                        return None;
                    }
                },
                Some("copy") => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0420,
                            sp(k),
                            "`reshape` never copies in device code; leave out `copy`",
                        )
                        .with_note("device code cannot allocate"),
                    );
                    return None;
                }
                _ => {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0107,
                            sp(k),
                            "`reshape` takes only `order` by keyword",
                        )
                        .with_note("the shape is positional: `a.reshape((n, m))`"),
                    );
                    return None;
                }
            }
        }
        let args = &c.arguments.args;
        if args.is_empty() {
            self.error(Code::E0107, span, "`reshape` needs a shape");
            return None;
        }
        let mut dims: Vec<Val> = Vec::new();
        let items: Vec<&ast::Expr> = match &args[..] {
            [ast::Expr::Tuple(t)] => t.elts.iter().collect(),
            _ => args.iter().collect(),
        };
        for e in items {
            let x = self.eval(e)?;
            match &x.ty {
                Type::Tuple(ts)
                    if ts
                        .iter()
                        .all(|t| t.as_scalar().is_some_and(|s| s.is_integer())) =>
                {
                    for (i, t) in ts.iter().enumerate() {
                        let base = self.push(self.exprs[x.e].clone(), x.ty.clone(), x.span);
                        let e = self.push(Expr::Extract(base, i as u32), t.clone(), x.span);
                        let mut ev = self.val(e, t.clone(), x.span);
                        if let Some(Const::Tuple(items)) = &x.konst {
                            ev.konst = items.get(i).cloned();
                        }
                        dims.push(ev);
                    }
                }
                _ => dims.push(x),
            }
        }
        if dims.is_empty() || dims.len() > 255 {
            self.error(
                Code::E0420,
                span,
                format!("`reshape` needs 1 to 255 extents, found {}", dims.len()),
            );
            return None;
        }
        let mut shape = Vec::new();
        let mut inferred = false;
        for d in dims {
            if !d.ty.as_scalar().is_some_and(|s| s.is_integer()) {
                self.error(
                    Code::E0420,
                    d.span,
                    format!("`reshape` extents must be integers, found {}", d.ty),
                );
                return None;
            }
            match d.konst.as_ref().and_then(|k| k.as_int()) {
                Some(-1) if inferred => {
                    self.error(
                        Code::E0420,
                        d.span,
                        "only one extent of `reshape` can be -1",
                    );
                    return None;
                }
                Some(-1) => {
                    inferred = true;
                    shape.push(None);
                }
                Some(n) if n < 0 => {
                    self.error(
                        Code::E0420,
                        d.span,
                        format!("`reshape` extents cannot be negative, found {n}"),
                    );
                    return None;
                }
                _ => shape.push(Some(self.convert(&d, Scalar::Int64)?)),
            }
        }
        let ndim = shape.len() as u8;
        let layout = if ndim == 1 || !fortran {
            Layout::C
        } else {
            Layout::F
        };
        let ty = Type::Array(ArrayType { ndim, layout, ..at });
        let e = self.push(
            Expr::Reshape {
                array: v.e,
                shape,
                fortran,
            },
            ty.clone(),
            span,
        );
        Some(self.val(e, ty, span))
    }

    /// `array.astype(dtype, copy=False)` with the array's own dtype is the array itself;
    /// anything that would copy is E0421 (device code cannot allocate).
    pub(super) fn astype(&mut self, v: &Val, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let Type::Array(at) = &v.ty else {
            return None;
        };
        let at = at.clone();
        let a = self.bind(
            c,
            "astype",
            &["dtype", "order", "casting", "subok", "copy"],
            1,
        )?;
        let dtype = self.element_dtype_arg(a[0]?)?;
        for (i, name) in [(1, "order"), (2, "casting"), (3, "subok")] {
            if let Some(e) = a[i] {
                self.error(
                    Code::E0421,
                    sp(e),
                    format!("`astype`'s `{name}` is not supported in device code"),
                );
                return None;
            }
        }
        let no_copy = matches!(a[4], Some(ast::Expr::BooleanLiteral(b)) if !b.value);
        if dtype != at.dtype {
            self.diags.push(
                Diagnostic::error(
                    Code::E0421,
                    span,
                    format!("`astype({dtype})` of {} would copy the array", v.ty),
                )
                .with_note("device code cannot allocate: convert element by element into another array, or use `view(dtype)` to reinterpret the bytes"),
            );
            return None;
        }
        if !no_copy {
            self.diags.push(
                Diagnostic::error(
                    Code::E0421,
                    span,
                    "`astype` copies unless `copy=False` is given, and device code cannot allocate",
                )
                .with_note(format!(
                    "the dtype is already {dtype}: `astype({dtype}, copy=False)` is the array itself"
                )),
            );
            return None;
        }
        Some(v.clone())
    }
}

impl FnCx<'_, '_> {
    /// `a.real` / `a.imag` of a contiguous 1-D complex array: NumPy's view of one part of
    /// every element, which shares the array's memory (writes and atomics go to the complex
    /// array). Built as the array's bytes read as the part's float type
    /// (`a.view(float64)`, twice as long) sliced `0::2` or `1::2` (docs/semantics.md §5.19).
    pub(super) fn complex_array_part(&mut self, v: &Val, imag: bool, span: Span) -> Option<Val> {
        let Type::Array(at) = &v.ty else {
            return None;
        };
        let part = at.dtype.scalar().filter(|s| s.is_complex())?.component();
        if at.ndim != 1 || at.layout != Layout::C {
            self.diags.push(
                Diagnostic::error(
                    Code::E0203,
                    span,
                    format!(
                        "`.{}` of a complex array needs a contiguous 1-D array, found {}",
                        if imag { "imag" } else { "real" },
                        v.ty
                    ),
                )
                .with_note("declare the parameter contiguous (`complex128[::1]`)"),
            );
            return None;
        }
        let floats = ArrayType {
            dtype: DType::Scalar(part),
            ..at.clone()
        };
        let raw = self.push(Expr::Reinterpret(v.e), Type::Array(floats.clone()), span);
        let start = if imag {
            Some(self.literal(&Const::Int(1), Scalar::Int64, span)?)
        } else {
            None
        };
        let subs = vec![Subscript::Slice {
            start,
            stop: None,
            step: 2,
        }];
        let ty = Type::Array(view_type(&floats, &subs));
        let e = self.push(Expr::View { array: raw, subs }, ty.clone(), span);
        Some(self.val(e, ty, span))
    }
}

/// The type of a view: the kept dimensions, contiguous where the array's unit-stride
/// dimension is kept whole-stepped in the same place.
fn view_type(at: &ArrayType, subs: &[Subscript]) -> ArrayType {
    let kept: Vec<(usize, i64)> = subs
        .iter()
        .enumerate()
        .filter_map(|(d, s)| match s {
            Subscript::Slice { step, .. } => Some((d, *step)),
            Subscript::Index(_) => None,
        })
        .collect();
    let n = at.ndim as usize;
    let unit = match at.layout {
        Layout::C => Some(n - 1),
        Layout::F => Some(0),
        Layout::Any => None,
    };
    let contiguous = |d: usize| unit == Some(d) && kept.contains(&(d, 1));
    let layout = match (kept.first(), kept.last()) {
        (_, Some((d, _))) if kept.len() == 1 && contiguous(*d) => Layout::C,
        (_, Some((d, _))) if at.layout == Layout::C && contiguous(*d) => Layout::C,
        (Some((d, _)), _) if at.layout == Layout::F && contiguous(*d) => Layout::F,
        _ => Layout::Any,
    };
    ArrayType {
        ndim: kept.len() as u8,
        layout,
        ..at.clone()
    }
}
