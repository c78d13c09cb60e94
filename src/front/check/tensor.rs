//! The tensor-core entities of `device.wmma` and `device.mma` (§19, a pydevice extension of
//! the spec): fragment types, their loads, stores and multiply-accumulates, `mma.sync` on
//! explicit registers and `ldmatrix`. Every combination CUDA does not have, every
//! architecture that lacks a type, and every argument of the wrong kind is a diagnostic
//! (E0760–E0765) here, so the back end only sees operations LLVM has.

use super::*;
use crate::front::builtins::table::{self, Rule};
use crate::ir::TensorOp;
use crate::types::MemSpace;
use crate::types::tensor::{Fragment, FragmentElem, FragmentUse, MatrixLayout, MmaShape};

impl FnCx<'_, '_> {
    /// A call of a [`Rule::Tensor`] builtin, or of a [`Rule::TensorInPlace`] one used as a
    /// value (E0763).
    pub(super) fn tensor_call(&mut self, b: Builtin, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let name = super::calls::builtin_name(b);
        let entry = table::entry(b);
        if entry.rule() == Rule::TensorInPlace {
            self.diags.push(
                Diagnostic::error(
                    Code::E0763,
                    span,
                    format!("`{name}` writes its first argument and has no value"),
                )
                .with_note(format!("call it as a statement: `{name}(frag, ...)`")),
            );
            return None;
        }
        let a = self.bind(c, &name, entry.params(), entry.required())?;
        match b {
            Builtin::WmmaFragment => {
                let fr = self.fragment_type(a[0]?, a[1]?, a[2]?, a[3], span)?;
                let zero = self.zero_of(fr.elem.scalar(), span);
                let ty = Type::Fragment(Box::new(fr));
                Some(self.tensor_op(TensorOp::Fill, vec![zero], ty, span))
            }
            Builtin::WmmaStoreMatrix => {
                let (fv, fr) = self.fragment_arg(a[2]?, Some(FragmentUse::Accumulator))?;
                let layout = self.layout_arg(a[4]?)?;
                let ldm = self.ldm_arg(a[3]?, fr.elem.scalar())?;
                let r = self.tensor_ref(a[0]?, a[1]?, fr.elem.scalar(), true, span)?;
                Some(self.tensor_op(
                    TensorOp::Store(layout),
                    vec![r, fv.e, ldm],
                    Type::None,
                    span,
                ))
            }
            Builtin::MmaM16n8k16 => {
                if self.s.sm != crate::ir::HOST_TARGET && self.s.sm < 80 {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0761,
                            span,
                            format!("`mma.sync.m16n8k16` needs sm_80 or newer; this compilation is for sm_{}", self.s.sm),
                        )
                        .with_note("compile for sm_80 or newer, or guard the call with `if device.target(device.provides(device.sm_80))`"),
                    );
                    return None;
                }
                let av = self.eval(a[0]?)?;
                let elem = match &av.ty {
                    Type::Tuple(ts)
                        if ts.len() == 4
                            && ts.iter().all(|t| t == &ts[0])
                            && matches!(
                                ts[0],
                                Type::Vector {
                                    elem: Scalar::Float16 | Scalar::BFloat16,
                                    len: 2
                                }
                            ) =>
                    {
                        match ts[0] {
                            Type::Vector { elem, .. } => elem,
                            _ => Scalar::Float16,
                        }
                    }
                    other => {
                        self.diags.push(
                            Diagnostic::error(Code::E0765, av.span, format!("the A operand of `mma_sync_m16n8k16` is four `float16x2` or four `bfloat16x2` registers, not {other}"))
                                .with_note("a tuple such as `mma.ldmatrix(a_tile, i, 4)` gives (§19.2)"),
                        );
                        return None;
                    }
                };
                let pair = Type::Vector { elem, len: 2 };
                let bv = self.eval(a[1]?)?;
                if bv.ty != Type::Tuple(vec![pair.clone(); 2]) {
                    self.error(
                        Code::E0765,
                        bv.span,
                        format!(
                            "the B operand of `mma_sync_m16n8k16` is two `{pair}` registers, like A's, not {}",
                            bv.ty
                        ),
                    );
                    return None;
                }
                let f32t = Type::Scalar(Scalar::Float32);
                let acc = Type::Tuple(vec![f32t; 4]);
                let cv = self.eval(a[2]?)?;
                if cv.ty != acc {
                    self.error(
                        Code::E0765,
                        cv.span,
                        format!(
                            "the C operand of `mma_sync_m16n8k16` is four `float32` registers, not {}",
                            cv.ty
                        ),
                    );
                    return None;
                }
                Some(self.tensor_op(TensorOp::MmaM16n8k16, vec![av.e, bv.e, cv.e], acc, span))
            }
            Builtin::Ldmatrix => {
                let count = self.const_int(a[2]?, "count")?;
                if ![1, 2, 4].contains(&count) {
                    self.error(
                        Code::E0765,
                        sp(a[2]?),
                        format!("`ldmatrix` loads 1, 2 or 4 matrices, not {count}"),
                    );
                    return None;
                }
                let trans = match a[3] {
                    None => false,
                    Some(e) => self.const_bool(e, "trans")?,
                };
                let arr = self.eval(a[0]?)?;
                let dtype = match &arr.ty {
                    Type::Array(at) if at.space == MemSpace::Shared => at.dtype.scalar(),
                    _ => None,
                };
                let Some(dtype) = dtype.filter(|s| {
                    matches!(
                        s,
                        Scalar::Float16 | Scalar::BFloat16 | Scalar::Int16 | Scalar::UInt16
                    )
                }) else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0764,
                            arr.span,
                            format!(
                                "`ldmatrix` reads a shared array of 16-bit numbers, not {}",
                                arr.ty
                            ),
                        )
                        .with_note(
                            "float16, bfloat16, int16 or uint16 elements in a `shared_array`",
                        ),
                    );
                    return None;
                };
                let r = self.element_ref(&arr, a[1]?, dtype, span)?;
                let ty = Type::Tuple(vec![
                    Type::Vector {
                        elem: dtype,
                        len: 2
                    };
                    count as usize
                ]);
                Some(self.tensor_op(
                    TensorOp::Ldmatrix {
                        count: count as u8,
                        trans,
                    },
                    vec![r],
                    ty,
                    span,
                ))
            }
            _ => self.table_mismatch(b, span),
        }
    }

    /// A statement calling a [`Rule::TensorInPlace`] builtin: the operation's result is
    /// assigned to its first argument, a local.
    pub(super) fn tensor_stmt(&mut self, b: Builtin, c: &ast::ExprCall, out: &mut Block) {
        let span = sp(c);
        let name = super::calls::builtin_name(b);
        let entry = table::entry(b);
        let Some(a) = self.bind(c, &name, entry.params(), entry.required()) else {
            return;
        };
        let Some(target) = a[0] else { return };
        if !matches!(target, ast::Expr::Name(_)) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0763,
                    sp(target),
                    format!("`{name}` writes its first argument, which must be a local name"),
                )
                .with_note("assign the fragment to a local first"),
            );
            return;
        }
        let v = match b {
            Builtin::WmmaFillFragment => (|| {
                let (_, fr) = self.fragment_arg(target, None)?;
                let value = self.eval(a[1]?)?;
                let x = self.convert(&value, fr.elem.scalar())?;
                Some(self.tensor_op(TensorOp::Fill, vec![x], Type::Fragment(Box::new(fr)), span))
            })(),
            Builtin::WmmaLoadMatrix => (|| {
                let (_, fr) = self.fragment_arg(target, None)?;
                let layout = match (fr.layout, a[4]) {
                    (Some(l), None) => l,
                    (fl, Some(e)) => {
                        let l = self.layout_arg(e)?;
                        if fl.is_some_and(|fl| fl != l) {
                            self.error(
                                Code::E0760,
                                sp(e),
                                format!(
                                    "this {fr} is {}: its loads cannot be {}",
                                    fl.map_or("", |l| l.name()),
                                    l.name()
                                ),
                            );
                            return None;
                        }
                        l
                    }
                    (None, None) => {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0760,
                                span,
                                "loading an accumulator fragment needs a `layout`",
                            )
                            .with_note("add `layout='row_major'` or `layout='col_major'`"),
                        );
                        return None;
                    }
                };
                let ldm = self.ldm_arg(a[3]?, fr.elem.scalar())?;
                let r = self.tensor_ref(a[1]?, a[2]?, fr.elem.scalar(), false, span)?;
                let ty = Type::Fragment(Box::new(fr));
                Some(self.tensor_op(TensorOp::Load(layout), vec![r, ldm], ty, span))
            })(),
            Builtin::WmmaMmaSync => self.mma_sync(target, &a, span),
            _ => self.table_mismatch(b, span),
        };
        if let Some(v) = v {
            self.assign(target, v, out);
        }
    }

    /// `frag[i]`: element `i` of this thread's part of a fragment (CUDA's `frag.x[i]`).
    pub(super) fn fragment_element(
        &mut self,
        base: &Val,
        slice: &ast::Expr,
        span: Span,
    ) -> Option<Val> {
        let (fr, i) = self.fragment_index(base, slice)?;
        let ty = Type::Scalar(fr.elem.scalar());
        Some(self.tensor_op(TensorOp::Element, vec![base.e, i], ty, span))
    }

    /// `frag[i] = x`: the fragment with element `i` replaced by `x` (converted to the
    /// element type), for the caller to assign to the fragment's local.
    pub(super) fn fragment_with(
        &mut self,
        base: &Val,
        slice: &ast::Expr,
        x: &Val,
        span: Span,
    ) -> Option<Val> {
        let (fr, i) = self.fragment_index(base, slice)?;
        let v = self.convert(x, fr.elem.scalar())?;
        Some(self.tensor_op(
            TensorOp::SetElement,
            vec![base.e, i, v],
            base.ty.clone(),
            span,
        ))
    }

    /// A fragment's element index as an int32 reduced modulo the (power-of-two) number of
    /// elements, which is Python's wrap for `-n <= i < n` (a constant outside is E0765).
    fn fragment_index(
        &mut self,
        base: &Val,
        slice: &ast::Expr,
    ) -> Option<(Fragment, Handle<Expr>)> {
        let Type::Fragment(fr) = &base.ty else {
            return None;
        };
        let fr = (**fr).clone();
        let n = i128::from(fr.num_elements());
        let iv = self.eval(slice)?;
        if !iv.ty.as_scalar().is_some_and(|s| s.is_integer()) {
            self.error(
                Code::E0765,
                iv.span,
                format!(
                    "a fragment's elements are indexed by integers, not {}",
                    iv.ty
                ),
            );
            return None;
        }
        if let Some(k) = iv.konst.as_ref().and_then(|c| c.as_int())
            && !(-n..n).contains(&k)
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0765,
                    iv.span,
                    format!("index {k} is out of range for {fr}"),
                )
                .with_note(format!("each thread holds {n} elements (`num_elements`)")),
            );
            return None;
        }
        let i32t = Type::Scalar(Scalar::Int32);
        let i = self.convert(&iv, Scalar::Int32)?;
        let mask = self.push(Expr::Literal(Literal::Int(n - 1)), i32t.clone(), iv.span);
        let e = self.push(Expr::Binary(BinaryOp::BitAnd, i, mask), i32t, iv.span);
        Some((fr, e))
    }

    /// `wmma.mma_sync(d, a, b, c, satfinite)`: `a·b + c` as `d`'s type (or `c`'s, for a new
    /// `d`).
    fn mma_sync(
        &mut self,
        target: &ast::Expr,
        a: &[Option<&ast::Expr>],
        span: Span,
    ) -> Option<Val> {
        use FragmentElem::*;
        let (av, fa) = self.fragment_arg(a[1]?, Some(FragmentUse::MatrixA))?;
        let (bv, fb) = self.fragment_arg(a[2]?, Some(FragmentUse::MatrixB))?;
        let (cv, fc) = self.fragment_arg(a[3]?, Some(FragmentUse::Accumulator))?;
        let satfinite = match a[4] {
            None => false,
            Some(e) => self.const_bool(e, "satfinite")?,
        };
        let fd = match target {
            ast::Expr::Name(n) => {
                match self.hints.get(n.id.as_str()).map(|h| h.ty.clone()) {
                    Some(Type::Fragment(f)) if f.usage == FragmentUse::Accumulator => (*f).clone(),
                    Some(other) => {
                        self.error(
                        Code::E0765,
                        sp(target),
                        format!("`wmma.mma_sync` writes an accumulator fragment, and `{}` is {other}", n.id),
                    );
                        return None;
                    }
                    None => fc.clone(),
                }
            }
            _ => fc.clone(),
        };
        let accs: &[FragmentElem] = match fa.elem {
            F16 => &[F16, F32],
            BF16 | TF32 => &[F32],
            S8 | U8 => &[S32],
            F64 => &[F64],
            F32 | S32 => &[],
        };
        let problem = if fa.shape != fb.shape || fa.shape != fc.shape || fa.shape != fd.shape {
            Some(format!(
                "the fragments have different shapes: a {}, b {}, c {}, d {}",
                fa.shape, fb.shape, fc.shape, fd.shape
            ))
        } else if fa.elem != fb.elem {
            Some(format!(
                "a holds {} and b {}; WMMA multiplies matrices of one type",
                fa.elem.name(),
                fb.elem.name()
            ))
        } else if !accs.contains(&fc.elem) || !accs.contains(&fd.elem) {
            let names: Vec<&str> = accs.iter().map(|e| e.name()).collect();
            Some(format!(
                "{} products accumulate in {}, but c holds {} and d {}",
                fa.elem.name(),
                names.join(" or "),
                fc.elem.name(),
                fd.elem.name()
            ))
        } else if satfinite && !matches!(fa.elem, S8 | U8) {
            Some(format!(
                "`satfinite` saturates integer accumulators; {} products have none",
                fa.elem.name()
            ))
        } else {
            None
        };
        if let Some(p) = problem {
            self.error(Code::E0762, span, p);
            return None;
        }
        let ty = Type::Fragment(Box::new(fd));
        Some(self.tensor_op(
            TensorOp::Mma { satfinite },
            vec![av.e, bv.e, cv.e],
            ty,
            span,
        ))
    }

    /// `wmma.fragment(use, shape, dtype, layout)`'s type, checked against CUDA's list and
    /// the architecture.
    fn fragment_type(
        &mut self,
        use_e: &ast::Expr,
        shape_e: &ast::Expr,
        dtype_e: &ast::Expr,
        layout_e: Option<&ast::Expr>,
        span: Span,
    ) -> Option<Fragment> {
        let u = self.str_arg_tensor(use_e, "use")?;
        let Some(usage) = FragmentUse::from_name(&u) else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0760,
                    sp(use_e),
                    format!("'{u}' is not a fragment use"),
                )
                .with_note("uses: 'matrix_a', 'matrix_b', 'accumulator'"),
            );
            return None;
        };
        let sv = self.eval(shape_e)?;
        let dims: Option<Vec<u8>> = match &sv.konst {
            Some(Const::Tuple(items)) if items.len() == 3 => items
                .iter()
                .map(|c| c.as_int().and_then(|n| u8::try_from(n).ok()))
                .collect(),
            _ => None,
        };
        let Some(dims) = dims else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0760,
                    sv.span,
                    "a fragment's shape is a constant tuple `(m, n, k)`",
                )
                .with_note("for example `(16, 16, 16)`"),
            );
            return None;
        };
        let elem = if self.callee_item(dtype_e) == Some(Item::Builtin(Builtin::WmmaTf32)) {
            FragmentElem::TF32
        } else {
            let s = self.dtype_arg(dtype_e)?;
            let Some(e) = FragmentElem::of(s) else {
                self.diags.push(
                    Diagnostic::error(Code::E0760, sp(dtype_e), format!("fragments cannot hold {s}"))
                        .with_note("fragments hold float16, bfloat16, wmma.tf32, float64, int8 and uint8; accumulators float16, float32, float64 and int32"),
                );
                return None;
            };
            e
        };
        let layout = match layout_e {
            None => None,
            Some(e) => Some(self.layout_arg(e)?),
        };
        let fr = Fragment {
            usage,
            shape: MmaShape {
                m: dims[0],
                n: dims[1],
                k: dims[2],
            },
            elem,
            layout,
        };
        if let Err(why) = fr.check() {
            self.error(Code::E0760, span, why);
            return None;
        }
        // The host refuses tensor operations as device-only (E0500) after checking.
        if self.s.sm != crate::ir::HOST_TARGET && self.s.sm < elem.min_sm() {
            self.diags.push(
                Diagnostic::error(
                    Code::E0761,
                    sp(dtype_e),
                    format!(
                        "{} tensor cores need sm_{} or newer; this compilation is for sm_{}",
                        elem.name(),
                        elem.min_sm(),
                        self.s.sm
                    ),
                )
                .with_note("compile for a newer architecture, or guard the code with `if device.target(device.provides(device.sm_80))`"),
            );
            return None;
        }
        Some(fr)
    }

    /// A fragment argument, of use `want` if given.
    fn fragment_arg(
        &mut self,
        e: &ast::Expr,
        want: Option<FragmentUse>,
    ) -> Option<(Val, Fragment)> {
        let v = self.eval(e)?;
        let fr = match &v.ty {
            Type::Fragment(f) if want.is_none_or(|u| u == f.usage) => (**f).clone(),
            other => {
                let what = want.map_or("a fragment".to_string(), |u| {
                    format!("{} fragment", u.with_article())
                });
                self.diags.push(
                    Diagnostic::error(
                        Code::E0765,
                        v.span,
                        format!("expected {what}, found {other}"),
                    )
                    .with_note("make one with `wmma.fragment(use, (m, n, k), dtype, layout)`"),
                );
                return None;
            }
        };
        Some((v, fr))
    }

    /// A `layout` argument: `'row_major'` or `'col_major'`.
    fn layout_arg(&mut self, e: &ast::Expr) -> Option<MatrixLayout> {
        let s = self.str_arg_tensor(e, "layout")?;
        MatrixLayout::from_name(&s).or_else(|| {
            self.diags.push(
                Diagnostic::error(Code::E0760, sp(e), format!("'{s}' is not a matrix layout"))
                    .with_note("layouts: 'row_major', 'col_major'"),
            );
            None
        })
    }

    /// A string literal argument of a tensor entity.
    fn str_arg_tensor(&mut self, e: &ast::Expr, what: &str) -> Option<String> {
        match e {
            ast::Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => {
                self.error(
                    Code::E0760,
                    sp(e),
                    format!("`{what}` must be a string literal"),
                );
                None
            }
        }
    }

    /// A constant `True`/`False` argument.
    fn const_bool(&mut self, e: &ast::Expr, what: &str) -> Option<bool> {
        let v = self.eval(e)?;
        match v.konst {
            Some(Const::Bool(b)) => Some(b),
            _ => {
                self.error(
                    Code::E0765,
                    v.span,
                    format!("`{what}` must be a constant `True` or `False`"),
                );
                None
            }
        }
    }

    /// The leading dimension `ldm` of a tile of `elem`s: an integer, as an int32; a constant
    /// one must be a positive multiple of 16 bytes (PTX's rule for `wmma.load`/`store`).
    fn ldm_arg(&mut self, e: &ast::Expr, elem: Scalar) -> Option<Handle<Expr>> {
        let v = self.eval(e)?;
        let per = 16 / elem.size() as i128;
        if let Some(n) = v.konst.as_ref().and_then(|c| c.as_int())
            && (n <= 0 || n % per != 0)
        {
            self.diags.push(
                Diagnostic::error(Code::E0765, v.span, format!("`ldm` is {n}; for {elem} elements it must be a positive multiple of {per} (16 bytes)"))
                    .with_note("pad the rows of the array"),
            );
            return None;
        }
        if !v.ty.as_scalar().is_some_and(|s| s.is_integer()) {
            self.error(
                Code::E0765,
                v.span,
                format!("`ldm` is an integer count of elements, not {}", v.ty),
            );
            return None;
        }
        self.convert(&v, Scalar::Int32)
    }

    /// A reference to `array[index]`, the first element of a tile, for a load or store of
    /// elements of type `dtype`.
    fn tensor_ref(
        &mut self,
        array_e: &ast::Expr,
        index_e: &ast::Expr,
        dtype: Scalar,
        store: bool,
        span: Span,
    ) -> Option<Handle<Expr>> {
        let arr = self.eval(array_e)?;
        let ok = matches!(&arr.ty, Type::Array(at) if at.dtype.scalar() == Some(dtype));
        if !ok {
            self.error(
                Code::E0764,
                arr.span,
                format!(
                    "this fragment's elements are in an array of {dtype}, not {}",
                    arr.ty
                ),
            );
            return None;
        }
        if matches!(&arr.ty, Type::Array(at) if at.space == MemSpace::Const) {
            self.diags.push(
                Diagnostic::error(Code::E0764, arr.span, "a constant array cannot be a tensor-core operand")
                    .with_note("its alignment is not the 256 bits WMMA needs; copy the tile to a shared array first"),
            );
            return None;
        }
        if store {
            self.check_writable(&arr, span)?;
        }
        self.element_ref(&arr, index_e, dtype, span)
    }

    fn element_ref(
        &mut self,
        arr: &Val,
        index_e: &ast::Expr,
        dtype: Scalar,
        span: Span,
    ) -> Option<Handle<Expr>> {
        let space = arr.ty.as_array()?.space;
        let indices = self.indices(arr, index_e)?;
        Some(self.push(
            Expr::ElementRef {
                array: arr.e,
                indices,
            },
            Type::Ref {
                record: None,
                dtype,
                space,
            },
            span,
        ))
    }

    fn zero_of(&mut self, s: Scalar, span: Span) -> Handle<Expr> {
        let lit = if s.is_float() {
            Literal::Float(0.0)
        } else {
            Literal::Int(0)
        };
        self.push(Expr::Literal(lit), Type::Scalar(s), span)
    }

    fn tensor_op(&mut self, op: TensorOp, args: Vec<Handle<Expr>>, ty: Type, span: Span) -> Val {
        let e = self.push(
            Expr::Intrinsic(Intrinsic::Tensor(op), args),
            ty.clone(),
            span,
        );
        self.val(e, ty, span)
    }
}
