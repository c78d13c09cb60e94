//! The `cuda.device` entities of the specification's "Local, Shared, and Const Memory",
//! "Synchronization" and "Numeric Intrinsics" sections, and Python's `math` module: their
//! argument rules (each User Requirement is a diagnostic) and the IR they become.

use super::*;
use crate::diag::Code;
use crate::front::builtins::table::{self, Op, Rule};
use crate::ir::{AtomicOp, MathFn, MemoryOrder, Scope, Shfl, Vote};
use crate::types::{ArrayType, DType, Layout, MemSpace};

/// Static shared memory a block may declare (larger needs dynamic shared memory).
const STATIC_SHARED_LIMIT: u64 = 48 * 1024;

/// Local memory one thread may have on every architecture pydevice targets (CUDA C++
/// Programming Guide, "Technical Specifications per Compute Capability": 512 KB from
/// compute capability 2.0 on).
const LOCAL_MEMORY_LIMIT: u64 = 512 * 1024;

impl FnCx<'_, '_> {
    /// The `c` operand of `shfl.sync` for a shuffle within segments of `width` lanes (CUDA's
    /// `width`): `((32 - width) << 8) | clamp`, the clamp 0 for `up` and 31 otherwise, as an
    /// int32. A constant width must be a power of two from 1 to 32 (E0401); a run-time one is
    /// the program's to get right, as in CUDA.
    fn shfl_segment(&mut self, kind: Shfl, w: &ast::Expr) -> Option<Handle<Expr>> {
        let v = self.eval(w)?;
        if let Some(n) = v.konst.as_ref().and_then(|k| k.as_int())
            && !((1..=32).contains(&n) && n & (n - 1) == 0)
        {
            self.diags.push(
                Diagnostic::error(
                    Code::E0401,
                    v.span,
                    format!("a shuffle's `width` is a power of two from 1 to 32, not {n}"),
                )
                .with_note(
                    "the lanes are split into segments of `width` lanes, as CUDA's `__shfl_sync`",
                ),
            );
            return None;
        }
        if !v.ty.as_scalar().is_some_and(|s| s.is_integer()) {
            self.diags.push(Diagnostic::error(
                Code::E0207,
                v.span,
                format!("a shuffle's `width` must be an integer, not {}", v.ty),
            ));
            return None;
        }
        let i32t = Type::Scalar(Scalar::Int32);
        let w = self.convert(&v, Scalar::Int32)?;
        let span = v.span;
        let lit =
            |cx: &mut Self, n: i128| cx.push(Expr::Literal(Literal::Int(n)), i32t.clone(), span);
        let k32 = lit(self, 32);
        let d = self.push(Expr::Binary(BinaryOp::Sub, k32, w), i32t.clone(), span);
        let k8 = lit(self, 8);
        let hi = self.push(Expr::Binary(BinaryOp::Shl, d, k8), i32t.clone(), span);
        let clamp = lit(self, if kind == Shfl::Up { 0 } else { 0x1f });
        Some(self.push(Expr::Binary(BinaryOp::BitOr, hi, clamp), i32t, span))
    }

    /// Binds a call's arguments to parameter names (positional, then keyword); the first
    /// `required` must be given. Returns one slot per parameter.
    pub(super) fn bind<'a>(
        &mut self,
        c: &'a ast::ExprCall,
        name: &str,
        params: &[&str],
        required: usize,
    ) -> Option<Vec<Option<&'a ast::Expr>>> {
        let span = sp(c);
        let mut slots: Vec<Option<&ast::Expr>> = vec![None; params.len()];
        if c.arguments.args.len() > params.len() {
            self.error(
                Code::E0107,
                span,
                format!(
                    "`{name}` takes at most {} positional argument{}, but {} were given",
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    c.arguments.args.len()
                ),
            );
            return None;
        }
        for (i, a) in c.arguments.args.iter().enumerate() {
            slots[i] = Some(a);
        }
        for k in c.arguments.keywords.iter() {
            let Some(kname) = &k.arg else {
                self.error(
                    Code::E0107,
                    sp(k),
                    format!("`**` arguments are not accepted by `{name}`"),
                );
                return None;
            };
            let Some(pos) = params.iter().position(|p| *p == kname.id.as_str()) else {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0107,
                        sp(k),
                        format!("`{name}` has no parameter `{}`", kname.id),
                    )
                    .suggesting(kname.id.as_str(), params.iter().copied())
                    .with_note(format!("parameters: {}", params.join(", "))),
                );
                return None;
            };
            if slots[pos].is_some() {
                self.error(
                    Code::E0107,
                    sp(k),
                    format!("argument `{}` is given twice", kname.id),
                );
                return None;
            }
            slots[pos] = Some(&k.value);
        }
        if let Some(missing) = (0..required).find(|i| slots[*i].is_none()) {
            self.error(
                Code::E0107,
                span,
                format!("`{name}` is missing its argument `{}`", params[missing]),
            );
            return None;
        }
        Some(slots)
    }

    pub(super) fn eval(&mut self, e: &ast::Expr) -> Option<Val> {
        let v = self.expr(e);
        self.value_of(v)
    }

    /// A string literal argument.
    pub(super) fn str_arg(&mut self, e: &ast::Expr, what: &str) -> Option<String> {
        match e {
            ast::Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => {
                self.error(
                    Code::E0401,
                    sp(e),
                    format!("`{what}` must be a string literal"),
                );
                None
            }
        }
    }

    pub(super) fn memory_order(&mut self, e: Option<&ast::Expr>) -> Option<MemoryOrder> {
        let Some(e) = e else {
            return Some(MemoryOrder::SeqCst);
        };
        let s = self.str_arg(e, "memory")?;
        MemoryOrder::from_name(&s).or_else(|| {
            self.diags.push(
                Diagnostic::error(Code::E0401, sp(e), format!("`{s}` is not a memory order"))
                    .with_note("memory orders: 'relaxed', 'consume', 'acquire', 'release', 'acq_rel', 'seq_cst'"),
            );
            None
        })
    }

    fn scope(&mut self, e: Option<&ast::Expr>) -> Option<Scope> {
        let Some(e) = e else {
            return Some(Scope::System);
        };
        let s = self.str_arg(e, "scope")?;
        Scope::from_name(&s).or_else(|| {
            self.diags.push(
                Diagnostic::error(Code::E0401, sp(e), format!("`{s}` is not a thread scope"))
                    .with_note("thread scopes: 'system', 'device', 'block', 'thread'"),
            );
            None
        })
    }

    /// A dtype argument that may also be a `@struct` class or a vector type (the element
    /// type of arrays).
    pub(super) fn element_dtype_arg(&mut self, e: &ast::Expr) -> Option<DType> {
        match self.callee_item(e) {
            Some(Item::Struct(i)) => {
                return self
                    .s
                    .m
                    .struct_type(i)
                    .map(|t| DType::Struct(Box::new(t.clone())));
            }
            Some(Item::Builtin(Builtin::Vector(elem, len))) => {
                return Some(DType::Vector { elem, len });
            }
            _ => {}
        }
        if let ast::Expr::StringLiteral(s) = e
            && let Some((elem, len)) = crate::types::vector_name(s.value.to_str())
        {
            return Some(DType::Vector { elem, len });
        }
        if let ast::Expr::Call(c) = e
            && self.callee_item(&c.func) == Some(Item::Builtin(Builtin::AtomicClass))
        {
            // An array of atomic objects (§9.5).
            return self.atomic_class_dtype(c).map(DType::Atomic);
        }
        self.dtype_arg(e).map(DType::Scalar)
    }

    /// A dtype argument: a type (`float32`, `int`) or its name as a string.
    pub(super) fn dtype_arg(&mut self, e: &ast::Expr) -> Option<Scalar> {
        if let Some(s) = self.cub_temp_storage(e) {
            return Some(s);
        }
        let d = self.s.defaults;
        let found = match e {
            ast::Expr::StringLiteral(s) => Scalar::from_name(s.value.to_str()),
            // `ary.dtype` of an array local or parameter (numba: `local.array(n, ary.dtype)`),
            // and `v.dtype` of a vector.
            ast::Expr::Attribute(a)
                if a.attr.id.as_str() == "dtype"
                    && matches!(a.value.as_ref(), ast::Expr::Name(n) if self.scope.contains_key(n.id.as_str())) =>
            {
                match self.eval(&a.value).map(|v| v.ty) {
                    Some(Type::Array(at)) => at.dtype.scalar(),
                    Some(Type::Vector { elem, .. }) => Some(elem),
                    Some(Type::Ref {
                        dtype,
                        record: None,
                        ..
                    }) => Some(dtype),
                    _ => None,
                }
            }
            e => match self.callee_item(e) {
                Some(Item::Builtin(Builtin::Scalar(s))) => Some(s),
                Some(Item::Builtin(Builtin::Int)) => Some(d.int),
                Some(Item::Builtin(Builtin::Float)) => Some(d.float),
                Some(Item::Builtin(Builtin::Complex)) => Some(d.complex),
                Some(Item::Builtin(Builtin::Bool)) => Some(Scalar::Bool),
                _ => None,
            },
        };
        if found.is_none() {
            self.error(
                Code::E0401,
                sp(e),
                "expected a dtype such as `device.float32`",
            );
        }
        found
    }

    /// A compile-time constant integer argument (a ConstExpr).
    pub(super) fn const_int(&mut self, e: &ast::Expr, what: &str) -> Option<i128> {
        let v = self.eval(e)?;
        match (&v.konst, v.ty.as_scalar()) {
            (Some(c), Some(s)) if !s.is_float() => c.as_int(),
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0400,
                        v.span,
                        format!("`{what}` must be a constant expression"),
                    )
                    .with_note(
                        "a literal, a local bound once to a constant, or a module-level constant",
                    ),
                );
                None
            }
        }
    }

    /// A mask argument: a WarpMask, or any integer (its low 32 bits), as an int32 handle.
    pub(super) fn mask_arg(&mut self, e: Option<&ast::Expr>) -> Option<Handle<Expr>> {
        let Some(e) = e else {
            let span = self.decl.name_span;
            return Some(self.push(Expr::Literal(Literal::Int(-1)), Type::WarpMask, span));
        };
        let v = self.eval(e)?;
        if let (Some(Const::Int(i)), Some(_)) = (&v.konst, v.weak) {
            if !(-(1i128 << 31)..(1i128 << 32)).contains(i) {
                self.error(
                    Code::E0204,
                    v.span,
                    format!("{i} is not a 32-bit warp mask"),
                );
                return None;
            }
            let bits = if *i >= 1 << 31 { i - (1 << 32) } else { *i };
            return Some(self.push(Expr::Literal(Literal::Int(bits)), Type::WarpMask, v.span));
        }
        match &v.ty {
            Type::WarpMask => Some(v.e),
            Type::Scalar(s) if s.is_integer() => {
                Some(self.push(Expr::Cast(v.e), Type::WarpMask, v.span))
            }
            other => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("a warp mask must be a WarpMask or an integer, found {other}"),
                );
                None
            }
        }
    }

    /// The mask of a warp operation (`syncwarp`, a vote, a shuffle, a match): as
    /// [`Self::mask_arg`], and E0240 when it is the constant 0. CUDA requires the mask to
    /// name the calling thread, so a zero mask is never valid (docs/semantics.md §10.3).
    pub(super) fn warp_mask_arg(
        &mut self,
        e: Option<&ast::Expr>,
        name: &str,
    ) -> Option<Handle<Expr>> {
        let m = self.mask_arg(e)?;
        let zero = |x: &Expr| matches!(x, Expr::Literal(Literal::Int(0)));
        let constant_zero = match &self.exprs[m] {
            Expr::Cast(x) => zero(&self.exprs[*x]),
            x => zero(x),
        };
        if constant_zero {
            self.diags.push(
                Diagnostic::error(
                    Code::E0240,
                    self.exprs.span(m),
                    format!("`{name}` with the constant mask 0: no thread takes part, not even the calling one"),
                )
                .with_label("a warp mask must include the calling thread")
                .with_note("pass `0xFFFFFFFF` for the whole warp, `activemask()` for the threads active here, or a mask built from `lane_id`"),
            );
            return None;
        }
        Some(m)
    }

    /// An `int32` argument (converted from any integer).
    pub(super) fn int32_arg(&mut self, e: &ast::Expr) -> Option<Handle<Expr>> {
        self.lane_arg(e).map(|(h, _)| h)
    }

    /// A shuffle's lane argument (`src_lane`, `delta`, `flag`) as `int32`, with its value
    /// when it is a compile-time constant.
    fn lane_arg(&mut self, e: &ast::Expr) -> Option<(Handle<Expr>, Option<i128>)> {
        let v = self.eval(e)?;
        let known = match (&v.konst, v.ty.as_scalar()) {
            (Some(c), Some(s)) if s.is_integer() || v.ty == Type::WarpMask => c.as_int(),
            _ => None,
        };
        let h = match v.ty.as_scalar() {
            Some(s) if s.is_integer() => self.convert(&v, Scalar::Int32)?,
            _ => {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("expected an integer, found {}", v.ty),
                );
                return None;
            }
        };
        Some((h, known))
    }

    /// The spec's User Requirements on a shuffle, where they can be decided: a constant
    /// `src_lane`/`delta`/`flag` lies in `0..31`, and with a constant `mask`, every lane in
    /// the mask whose source lane is inside the warp reads from a lane in the mask
    /// (`mask[src_lane] == True`). E0240 otherwise.
    fn check_shfl_lanes(
        &mut self,
        kind: Shfl,
        name: &str,
        param: &str,
        mask: Handle<Expr>,
        lane: Option<i128>,
        lane_expr: &ast::Expr,
    ) -> Option<()> {
        let Some(k) = lane else { return Some(()) };
        if !(0..32).contains(&k) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0240,
                    sp(lane_expr),
                    format!("`{name}`'s `{param}` is {k}, outside the warp's lanes 0..31"),
                )
                .with_label("a constant lane argument must be in 0..31"),
            );
            return None;
        }
        let Expr::Literal(Literal::Int(bits)) = self.exprs[mask] else {
            return Some(());
        };
        let m = (bits as u32) as u64;
        let has = |l: i128| (0..32).contains(&l) && m & (1 << l) != 0;
        for l in (0..32).filter(|&l| has(l)) {
            let src = match kind {
                Shfl::Idx => k,
                Shfl::Up => l - k,
                Shfl::Down => l + k,
                Shfl::Xor => l ^ k,
            };
            if (0..32).contains(&src) && !has(src) {
                let span = self.exprs.span(mask);
                self.diags.push(
                    Diagnostic::error(
                        Code::E0240,
                        span,
                        format!(
                            "lane {l} of mask {m:#010x} reads lane {src}, which is not in the mask"
                        ),
                    )
                    .with_secondary(sp(lane_expr), format!("`{param}` is {k}"))
                    .with_note(format!(
                        "`{name}` requires the source lane to be in `mask` (`mask[src_lane] == True`)"
                    )),
                );
                return None;
            }
        }
        Some(())
    }

    /// A predicate: a callable with no arguments (a lambda, a nested `def` returning one
    /// expression, or a `@func`), evaluated here as a `bool`.
    pub(super) fn predicate(&mut self, e: &ast::Expr) -> Option<Handle<Expr>> {
        let bad = |cx: &mut Self| {
            cx.diags.push(
                Diagnostic::error(
                    Code::E0405,
                    sp(e),
                    "a predicate must be a function callable with no arguments",
                )
                .with_note(
                    "write `lambda: <condition>`, or pass a nested `def` or a `@device.func`",
                ),
            );
            None
        };
        match e {
            ast::Expr::Lambda(l) => {
                if l.parameters.as_ref().is_some_and(|p| !p.is_empty()) {
                    return bad(self);
                }
                let v = self.eval(&l.body)?;
                self.truthy(v)
            }
            ast::Expr::Name(n) if self.local_defs.contains_key(n.id.as_str()) => {
                let body = self.local_defs[n.id.as_str()].clone();
                let v = self.eval(&body)?;
                self.truthy(v)
            }
            e => match self.callee_item(e) {
                Some(Item::Function(_)) => {
                    let call = ast::ExprCall {
                        node_index: Default::default(),
                        range_start: e.range().start(),
                        func: Box::new(e.clone()),
                        arguments: ast::Arguments {
                            range: e.range(),
                            node_index: Default::default(),
                            args: Box::new([]),
                            keywords: Default::default(),
                        },
                    };
                    let v = self.call(&call);
                    let v = self.value_of(v)?;
                    self.truthy(v)
                }
                _ => bad(self),
            },
        }
    }

    pub(super) fn intrinsic(
        &mut self,
        op: Intrinsic,
        args: Vec<Handle<Expr>>,
        ty: Type,
        span: Span,
    ) -> Val {
        let e = self.push(Expr::Intrinsic(op, args), ty.clone(), span);
        self.val(e, ty, span)
    }

    /// A call of a `cuda.device` builtin typed by `rule` (the table's rules of the spec's
    /// memory, synchronization, warp and numeric sections, and of `math`).
    pub(super) fn device_call(
        &mut self,
        rule: Rule,
        entry: table::Entry,
        b: Builtin,
        c: &ast::ExprCall,
    ) -> Option<Val> {
        let span = sp(c);
        let name = super::calls::builtin_name(b);
        let bool_t = Type::Scalar(Scalar::Bool);
        // The intrinsic the table says this builtin produces.
        let op = match entry.op() {
            Op::Intrinsic(op) => Some(op),
            _ => None,
        };
        match rule {
            Rule::LocalMemory => {
                let a = self.bind(c, &name, &["shape", "dtype", "order", "align"], 2)?;
                let (shape_e, dtype_e) = (a[0]?, a[1]?);
                let sv = self.eval(shape_e)?;
                let dims: Vec<i128> = match &sv.konst {
                    Some(Const::Int(n)) if sv.ty.as_scalar().is_some_and(|s| !s.is_float()) => {
                        vec![*n]
                    }
                    Some(Const::Tuple(items)) => items
                        .iter()
                        .map(|c| c.as_int())
                        .collect::<Option<Vec<_>>>()
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                if let Some(n) = dims.iter().find(|n| **n < 0) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0400,
                            sv.span,
                            format!("array dimensions cannot be negative, and this one is {n}"),
                        )
                        .with_note("the shape of a local or shared array is a count of elements"),
                    );
                    return None;
                }
                let Ok(shape) = dims
                    .iter()
                    .map(|n| u64::try_from(*n))
                    .collect::<Result<Vec<u64>, _>>()
                else {
                    self.error(Code::E0400, sv.span, "this array dimension is too large");
                    return None;
                };
                if shape.is_empty() || shape.len() > 255 {
                    self.diags.push(
                        Diagnostic::error(Code::E0400, sv.span, "`shape` must be a constant integer or a tuple of constant integers")
                            .with_note("a literal, a local bound once to a constant, or a module-level constant"),
                    );
                    return None;
                }
                let (dtype, dtype_align) = self.aligned_dtype_arg(dtype_e)?;
                let layout = match a[2] {
                    None => Layout::C,
                    Some(o) => match self.str_arg(o, "order")?.as_str() {
                        "C" => Layout::C,
                        "F" if shape.len() > 1 => Layout::F,
                        "F" => Layout::C,
                        other => {
                            self.error(
                                Code::E0401,
                                sp(o),
                                format!("order must be 'C' or 'F', not '{other}'"),
                            );
                            return None;
                        }
                    },
                };
                let align = match a[3] {
                    None => 0,
                    Some(e) => {
                        let n = self.const_int(e, "align")?;
                        if n < 0 || (n != 0 && (n & (n - 1)) != 0) || n > 4096 {
                            self.error(
                                Code::E0401,
                                sp(e),
                                format!("align must be a power of two up to 4096, not {n}"),
                            );
                            return None;
                        }
                        n as u64
                    }
                }
                .max(dtype_align);
                let space = if b == Builtin::SharedArray {
                    MemSpace::Shared
                } else {
                    MemSpace::Local
                };
                let elem = crate::abi::layout_of(&dtype.ty()).size;
                let bytes = shape.iter().try_fold(elem, |acc, n| acc.checked_mul(*n));
                let total = bytes.and_then(|b| b.checked_add(self.shared_bytes));
                if space == MemSpace::Shared {
                    self.shared_bytes = total.unwrap_or(u64::MAX);
                }
                if space == MemSpace::Shared && total.is_none_or(|b| b > STATIC_SHARED_LIMIT) {
                    self.diags.push(
                        Diagnostic::error(Code::E0407, sv.span, format!("the shared arrays of this function need more than the {} KiB of static shared memory a block may have", STATIC_SHARED_LIMIT / 1024))
                            .with_note("use `dynamic_shared_array()` and launch with `shared=` bytes"),
                    );
                    return None;
                }
                if space == MemSpace::Local && bytes.is_none_or(|b| b > LOCAL_MEMORY_LIMIT) {
                    let size = bytes.map_or("more than 2**64 bytes".to_string(), |b| {
                        format!("{b} bytes")
                    });
                    self.diags.push(
                        Diagnostic::error(Code::E0411, sv.span, format!("this local array needs {size}, more than the {} KiB of local memory a thread may have", LOCAL_MEMORY_LIMIT / 1024))
                            .with_note("share a large buffer between threads with `shared_array`, or pass a global array"),
                    );
                    return None;
                }
                let ty = Type::Array(ArrayType {
                    dtype,
                    ndim: shape.len() as u8,
                    layout,
                    space,
                });
                let e = self.push(Expr::StaticArray { shape, align }, ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            Rule::DynamicShared => {
                self.bind(c, &name, &[], 0)?;
                let ty = Type::Array(ArrayType {
                    dtype: Scalar::UInt8.into(),
                    ndim: 1,
                    layout: Layout::C,
                    space: MemSpace::Shared,
                });
                let e = self.push(Expr::DynamicShared, ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            Rule::SyncPredicate => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let p = self.predicate(a[0]?)?;
                let Some(op) = op else {
                    return self.table_mismatch(b, span);
                };
                let ty = if op == Intrinsic::SyncThreadsCount {
                    Type::Scalar(Scalar::Int32)
                } else {
                    bool_t
                };
                let mut v = self.intrinsic(op, vec![p], ty, span);
                v.nonneg = true;
                Some(v)
            }
            Rule::Fence => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let order = self.memory_order(a[0])?;
                let scope = self.scope(a[1])?;
                Some(self.intrinsic(
                    Intrinsic::ThreadFence(order, scope),
                    vec![],
                    Type::None,
                    span,
                ))
            }
            Rule::AtomicRef => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let arr = self.eval(a[0]?)?;
                let Type::Array(at) = &arr.ty else {
                    self.error(
                        Code::E0408,
                        arr.span,
                        format!("`atomic_ref` needs an array, found {}", arr.ty),
                    );
                    return None;
                };
                let space = at.space;
                if let DType::Struct(st) = &at.dtype {
                    let st = st.clone();
                    let dtype = self.struct_atomic_carrier(&st, &arr)?;
                    self.check_writable(&arr, span)?;
                    let indices = self.indices(&arr, a[1]?)?;
                    let ty = Type::Ref {
                        dtype,
                        space,
                        record: Some(st),
                    };
                    let e = self.push(
                        Expr::ElementRef {
                            array: arr.e,
                            indices,
                        },
                        ty.clone(),
                        span,
                    );
                    return Some(self.val(e, ty, span));
                }
                let Some(dtype) = at.dtype.atomic_scalar() else {
                    self.diags.push(
                        Diagnostic::error(Code::E0408, arr.span, format!("`atomic_ref` needs an array of numbers, found {}", arr.ty))
                            .with_note("for records, declare the field `device.Atomic(dtype)` and use `array[i].field`"),
                    );
                    return None;
                };
                self.check_writable(&arr, span)?;
                let indices = self.indices(&arr, a[1]?)?;
                let ty = Type::Ref {
                    record: None,
                    dtype,
                    space,
                };
                let e = self.push(
                    Expr::ElementRef {
                        array: arr.e,
                        indices,
                    },
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
            Rule::Nullary => {
                let Some(op) = op else {
                    return self.table_mismatch(b, span);
                };
                if op == Intrinsic::SyncThreads {
                    self.args(c, &name, 0, 0)?;
                } else {
                    self.bind(c, &name, &[], 0)?;
                }
                let ty = match op {
                    Intrinsic::SyncThreads => Type::None,
                    Intrinsic::LaneId => Type::Scalar(Scalar::Int32),
                    _ => Type::WarpMask,
                };
                let mut v = self.intrinsic(op, vec![], ty, span);
                v.nonneg = op == Intrinsic::LaneId;
                Some(v)
            }
            Rule::Random => {
                let Some(op) = op else {
                    return self.table_mismatch(b, span);
                };
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let dtype = match a[0] {
                    Some(e) => self.dtype_arg(e)?,
                    None => self.s.defaults.float,
                };
                if !matches!(dtype, Scalar::Float32 | Scalar::Float64) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0780,
                            a[0].map_or(span, sp),
                            format!("`{name}` draws `float32` or `float64` numbers, not `{}`", dtype.name()),
                        )
                        .with_note("convert the result (`int32(rand() * n)` for an integer below n), or draw in float64 and narrow it"),
                    );
                    return None;
                }
                Some(self.intrinsic(op, vec![], Type::Scalar(dtype), span))
            }
            Rule::SyncWarp => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let m = self.warp_mask_arg(a[0], &name)?;
                Some(self.intrinsic(Intrinsic::SyncWarp, vec![m], Type::None, span))
            }
            Rule::Vote => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let m = self.warp_mask_arg(a[0], &name)?;
                let p = self.predicate(a[1]?)?;
                let Some(op @ Intrinsic::Vote(vote)) = op else {
                    return self.table_mismatch(b, span);
                };
                let ty = if vote == Vote::Ballot {
                    Type::WarpMask
                } else {
                    bool_t
                };
                Some(self.intrinsic(op, vec![m, p], ty, span))
            }
            Rule::Shfl => {
                let Some(op @ Intrinsic::Shfl(_)) = op else {
                    return self.table_mismatch(b, span);
                };
                // cupyx's shuffles take CUDA's `width` too (§15.4).
                let mut params = entry.params().to_vec();
                if self.s.m.rules().shfl_width {
                    params.push("width");
                }
                let a = self.bind(c, &name, &params, entry.required())?;
                let m = self.warp_mask_arg(a[0], &name)?;
                let v = self.eval(a[1]?)?;
                let v = self.concrete(v)?;
                let (lane, lane_const) = self.lane_arg(a[2]?)?;
                let Intrinsic::Shfl(kind) = op else {
                    return self.table_mismatch(b, span);
                };
                self.check_shfl_lanes(kind, &name, entry.params()[2], m, lane_const, a[2]?)?;
                let (wide, back) = self.widen_for_warp(&v, &name)?;
                let wty = self.types[wide.index()].clone();
                let mut operands = vec![m, wide, lane];
                if let Some(w) = a.get(3).copied().flatten() {
                    operands.push(self.shfl_segment(kind, w)?);
                }
                let r = self.push(Expr::Intrinsic(op, operands), wty, span);
                let e = if back {
                    self.push(Expr::Cast(r), v.ty.clone(), span)
                } else {
                    r
                };
                Some(self.val(e, v.ty.clone(), span))
            }
            Rule::Match => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let m = self.warp_mask_arg(a[0], &name)?;
                let v = self.eval(a[1]?)?;
                let v = self.concrete(v)?;
                let (wide, _) = self.widen_for_warp(&v, &name)?;
                // The spec's `flag: int32`, which it does not describe (CUDA's
                // `__match_*_sync` have none): a constant integer, without effect (§10.4).
                if let Some(f) = a[2] {
                    self.const_int(f, "flag")?;
                }
                if op == Some(Intrinsic::MatchAny) {
                    Some(self.intrinsic(Intrinsic::MatchAny, vec![m, wide], Type::WarpMask, span))
                } else {
                    let ty = Type::Tuple(vec![Type::WarpMask, bool_t]);
                    Some(self.intrinsic(Intrinsic::MatchAll, vec![m, wide], ty, span))
                }
            }
            Rule::Bits => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let v = self.eval(a[0]?)?;
                let v = self.concrete(v)?;
                let Some(s) = v.ty.as_scalar().filter(|s| s.is_integer()) else {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0406,
                            v.span,
                            format!("`{name}` needs an integer, found {}", v.ty),
                        )
                        .with_label("not an integer type"),
                    );
                    return None;
                };
                let Some(op) = op else {
                    return self.table_mismatch(b, span);
                };
                // A reversal keeps the type; the counts are int32.
                let ty = if op == Intrinsic::Brev {
                    s
                } else {
                    Scalar::Int32
                };
                let mut r = self.intrinsic(op, vec![v.e], Type::Scalar(ty), span);
                r.nonneg = op != Intrinsic::Brev;
                Some(r)
            }
            Rule::FloatOp => {
                let params = entry.params();
                let a = self.bind(c, &name, params, params.len())?;
                let mut vals = Vec::new();
                for e in a.iter().flatten() {
                    let v = self.eval(e)?;
                    let float =
                        v.ty.as_scalar().is_some_and(|s| s.is_float()) && v.weak != Some(Weak::Int);
                    if !float {
                        self.diags.push(
                            Diagnostic::error(
                                Code::E0406,
                                v.span,
                                format!(
                                    "`{name}` needs floating-point arguments, found {}",
                                    if v.weak == Some(Weak::Int) {
                                        "a Python int".to_string()
                                    } else {
                                        v.ty.to_string()
                                    }
                                ),
                            )
                            .with_note(
                                "write a float literal (`2.0`) or convert with `float32(x)`",
                            ),
                        );
                        return None;
                    }
                    vals.push(v);
                }
                let refs: Vec<&Val> = vals.iter().collect();
                let (common, _) = self.common(&refs);
                let args = vals
                    .iter()
                    .map(|v| self.convert(v, common))
                    .collect::<Option<Vec<_>>>()?;
                let op = match b {
                    Builtin::Cbrt => Intrinsic::Math(MathFn::Cbrt),
                    Builtin::Rsqrt => Intrinsic::Math(MathFn::Rsqrt),
                    _ => Intrinsic::Fma,
                };
                if matches!(b, Builtin::Cbrt | Builtin::Rsqrt) && common.bits() == 16 {
                    let wide = self.push(Expr::Cast(args[0]), Type::Scalar(Scalar::Float32), span);
                    let r = self.push(
                        Expr::Intrinsic(op, vec![wide]),
                        Type::Scalar(Scalar::Float32),
                        span,
                    );
                    let e = self.push(Expr::Cast(r), Type::Scalar(common), span);
                    return Some(self.val(e, Type::Scalar(common), span));
                }
                Some(self.intrinsic(op, args, Type::Scalar(common), span))
            }
            Rule::WarpMask => {
                let a = self.bind(c, &name, entry.params(), entry.required())?;
                let m = match a[0] {
                    Some(e) => self.mask_arg(Some(e))?,
                    None => self.push(Expr::Literal(Literal::Int(0)), Type::WarpMask, span),
                };
                Some(self.val(m, Type::WarpMask, span))
            }
            Rule::Math => match b {
                Builtin::Math(f) => self.math_call(f, c),
                _ => self.table_mismatch(b, span),
            },
            Rule::MathPair => match op {
                Some(op) => self.math_pair(op, c),
                None => self.table_mismatch(b, span),
            },
            Rule::Declared => {
                let (Some(op), Some(sig)) = (op, op.and_then(Intrinsic::signature)) else {
                    return self.table_mismatch(b, span);
                };
                let a = self.bind(c, &name, entry.params(), sig.params.len())?;
                let mut args = Vec::new();
                for (e, want) in a.into_iter().zip(sig.params) {
                    let v = self.eval(e?)?;
                    let fits =
                        v.ty.as_scalar()
                            .is_some_and(|s| s.is_integer() || s == Scalar::Bool)
                            || !want.is_integer();
                    if !fits {
                        self.error(
                            Code::E0406,
                            v.span,
                            format!("`{name}` takes {want} arguments, found {}", v.ty),
                        );
                        return None;
                    }
                    args.push(self.convert(&v, *want)?);
                }
                Some(self.intrinsic(op, args, Type::Scalar(sig.result), span))
            }
            // Rules typed elsewhere (`builtin_call`, `numba_call`).
            Rule::NotCallable
            | Rule::Conversion
            | Rule::Cmath
            | Rule::NpReduce
            | Rule::UnrollOnly
            | Rule::LoopOnly
            | Rule::PrintOnly
            | Rule::TargetOnly
            | Rule::AlignType
            | Rule::AtomicField
            | Rule::Len
            | Rule::TupleOf
            | Rule::StringOnly
            | Rule::Abs
            | Rule::Pow
            | Rule::OperatorBinary
            | Rule::OperatorUnary
            | Rule::MinMax
            | Rule::Positions
            | Rule::Vector
            | Rule::Cg
            | Rule::NumbaSyncthreads
            | Rule::NumbaVote
            | Rule::NumbaAtomic
            | Rule::Fp16
            | Rule::CacheHint
            | Rule::ConstArrayLike
            | Rule::Round
            | Rule::NumbaFence
            | Rule::Selp
            | Rule::ToFixedTuple
            | Rule::CupyxSharedMemory
            | Rule::ClusterBarrier
            | Rule::MapSharedRank
            | Rule::Asm
            | Rule::DeviceLaunch
            | Rule::Tensor
            | Rule::Hopper
            | Rule::TensorInPlace => self.table_mismatch(b, span),
        }
    }

    /// A value for a warp shuffle or match: bool and integers narrower than 32 bits are
    /// widened to 32 bits (the flag says to narrow the result back); at most 8 bytes.
    pub(super) fn widen_for_warp(&mut self, v: &Val, name: &str) -> Option<(Handle<Expr>, bool)> {
        // A tuple or vector of numbers of at most 8 bytes is shuffled element by element
        // (the lowering splits it), and a complex64 as its 64 bits.
        let shuffle = name.starts_with("shfl");
        if matches!(v.ty, Type::Tuple(_) | Type::Vector { .. })
            && shuffle
            && crate::abi::size_align(&v.ty).0 <= 8
            && warp_leaves(&v.ty).is_some()
        {
            return Some((v.e, false));
        }
        if shuffle && v.ty == Type::Scalar(Scalar::Complex64) {
            return Some((v.e, false));
        }
        let Some(s) = v.ty.as_scalar() else {
            self.diags.push(
                Diagnostic::error(
                    Code::E0409,
                    v.span,
                    format!("`{name}` needs a number of at most 8 bytes, found {}", v.ty),
                )
                .with_note("a tuple or vector of numbers of at most 8 bytes is shuffled whole; shuffle larger ones field by field"),
            );
            return None;
        };
        if s.is_complex() {
            self.diags.push(
                Diagnostic::error(
                    Code::E0253,
                    v.span,
                    format!("`{name}` does not take complex numbers ({s})"),
                )
                .with_note(
                    "exchange the parts: `z.real` and `z.imag`, then rebuild the complex number",
                ),
            );
            return None;
        }
        if v.ty == Type::WarpMask || s.bits() >= 32 {
            return Some((v.e, false));
        }
        if s.is_float() {
            // float16/bfloat16 travel as float32, which holds them exactly.
            return Some((
                self.push(Expr::Cast(v.e), Type::Scalar(Scalar::Float32), v.span),
                true,
            ));
        }
        let wide = if s.is_signed() {
            Scalar::Int32
        } else {
            Scalar::UInt32
        };
        Some((self.push(Expr::Cast(v.e), Type::Scalar(wide), v.span), true))
    }

    /// `math.frexp(x)` -> `(float, int32)`, `math.ldexp(x, n)` -> float, `math.modf(x)` ->
    /// `(float, float)`: `x` as `math`'s other functions take it (an integer becomes a float;
    /// float16 and bfloat16 are computed in float32), `n` any integer, converted to int32 as
    /// numba's `ldexp(float, intc)` does.
    fn math_pair(&mut self, op: Intrinsic, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        if op == Intrinsic::Sad {
            return self.libdevice_sad(c);
        }
        let fname = if op == Intrinsic::Sincos {
            "libdevice.sincos".to_string()
        } else {
            format!("math.{}", op.name())
        };
        let n = if op == Intrinsic::Ldexp { 2 } else { 1 };
        let params: &[&str] = if n == 2 { &["x", "i"] } else { &["x"] };
        let a = self.bind(c, &fname, params, n)?;
        let x = self.eval(a[0]?)?;
        let Some(s) = x.ty.as_scalar().filter(|s| !s.is_complex()) else {
            self.error(
                Code::E0207,
                x.span,
                format!("`{fname}` needs a real number, found {}", x.ty),
            );
            return None;
        };
        let ft = match (x.weak, s) {
            (Some(_), _) => self.s.defaults.float,
            (None, Scalar::Float32 | Scalar::Float64) => s,
            (None, s) if s.is_float() => Scalar::Float32,
            (None, s) if s.bits() >= 32 && s != Scalar::Int32 => Scalar::Float64,
            (None, _) => self.s.defaults.float,
        };
        let xe = self.convert(&x, ft)?;
        let fty = Type::Scalar(ft);
        match op {
            Intrinsic::Ldexp => {
                let i = self.eval(a[1]?)?;
                if !i
                    .ty
                    .as_scalar()
                    .is_some_and(|s| s.is_integer() || s == Scalar::Bool)
                {
                    self.error(
                        Code::E0207,
                        i.span,
                        format!("`{fname}`'s exponent must be an integer, found {}", i.ty),
                    );
                    return None;
                }
                let ie = self.convert(&i, Scalar::Int32)?;
                Some(self.intrinsic(op, vec![xe, ie], fty, span))
            }
            Intrinsic::Frexp => {
                let t = Type::Tuple(vec![fty, Type::Scalar(Scalar::Int32)]);
                Some(self.intrinsic(op, vec![xe], t, span))
            }
            _ => {
                let t = Type::Tuple(vec![fty.clone(), fty]);
                Some(self.intrinsic(op, vec![xe], t, span))
            }
        }
    }

    /// numba's `libdevice.sad(x, y, z)`: libdevice's `__nv_sad(int, int, int) -> int`, the
    /// arguments converted to int32 as numba converts them to the declared parameter types.
    fn libdevice_sad(&mut self, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let a = self.bind(c, "libdevice.sad", &["x", "y", "z"], 3)?;
        let mut es = Vec::new();
        for e in a.into_iter().flatten() {
            let v = self.eval(e)?;
            if !v
                .ty
                .as_scalar()
                .is_some_and(|s| s.is_integer() || s == Scalar::Bool)
            {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("`libdevice.sad` takes integers, found {}", v.ty),
                );
                return None;
            }
            es.push(self.convert(&v, Scalar::Int32)?);
        }
        Some(self.intrinsic(Intrinsic::Sad, es, Type::Scalar(Scalar::Int32), span))
    }

    fn math_call(&mut self, f: MathFn, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let name = format!("math.{}", f.name());
        let params: &[&str] = if f.arity() == 2 { &["x", "y"] } else { &["x"] };
        let a = self.bind(c, &name, params, f.arity())?;
        let d = self.s.defaults;
        let mut vals = Vec::new();
        for e in a.iter().flatten() {
            let v = self.eval(e)?;
            let Some(s) = v.ty.as_scalar() else {
                self.error(
                    Code::E0207,
                    v.span,
                    format!("`{name}` needs a number, found {}", v.ty),
                );
                return None;
            };
            // Integers become floats as Python's math does (int64 and uint32+ need float64).
            let v = match (v.weak, s.is_float()) {
                (Some(_), _) | (None, true) => v,
                (None, false) => {
                    let to = if s.bits() >= 32 && s != Scalar::Int32 {
                        Scalar::Float64
                    } else {
                        d.float
                    };
                    let e = self.convert(&v, to)?;
                    Val {
                        e,
                        ty: Type::Scalar(to),
                        weak: None,
                        konst: None,
                        ..v
                    }
                }
            };
            vals.push(v);
        }
        let refs: Vec<&Val> = vals.iter().collect();
        let (mut common, _) = self.common(&refs);
        if !common.is_float() {
            common = d.float;
        }
        // 16-bit floats are computed in float32 and rounded back (libdevice has no 16-bit math).
        let narrow = (common.bits() == 16).then_some(common);
        if narrow.is_some() {
            common = Scalar::Float32;
        }
        let args = vals
            .iter()
            .map(|v| self.convert(v, common))
            .collect::<Option<Vec<_>>>()?;
        let result = match f {
            MathFn::Isnan | MathFn::Isinf | MathFn::Isfinite => Type::Scalar(Scalar::Bool),
            _ => Type::Scalar(common),
        };
        let mut r = self.intrinsic(Intrinsic::Math(f), args, result.clone(), span);
        if let (Some(n), Type::Scalar(rs)) = (narrow, &result)
            && rs.is_float()
            && !matches!(f, MathFn::Floor | MathFn::Ceil | MathFn::Trunc)
        {
            let e = self.push(Expr::Cast(r.e), Type::Scalar(n), span);
            r = self.val(e, Type::Scalar(n), span);
        }
        if matches!(f, MathFn::Floor | MathFn::Ceil | MathFn::Trunc) {
            // Python returns an int: int32 for float32 arguments, int64 for float64.
            let to = if common == Scalar::Float64 {
                Scalar::Int64
            } else {
                Scalar::Int32
            };
            let e = self.push(Expr::Cast(r.e), Type::Scalar(to), span);
            r = self.val(e, Type::Scalar(to), span);
        }
        Some(r)
    }

    /// Methods of values: the atomic operations of an `atomic_ref`, and `view` of arrays.
    pub(super) fn method_call(&mut self, v: Val, method: &str, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        if let Some(r) = self.number_method(&v, method, c) {
            return r;
        }
        if let Some(r) = self.cub_method(&v, method, c) {
            return r;
        }
        match v.ty.clone() {
            Type::Array(_)
                if matches!(method, "begin" | "end")
                    && self.s.m.dialect == crate::front::dialect::Dialect::Cupyx =>
            {
                self.array_iterator(&v, method == "end", c)
            }
            Type::Group(k) => self.group_method(k, v, method, c),
            // `v.dtype(x)`: the element type's conversion.
            Type::Vector { elem, .. } if method == "dtype" => {
                self.builtin_call(Builtin::Scalar(elem), c)
            }
            Type::Array(at) if method == "dtype" && at.dtype.scalar().is_some() => {
                self.builtin_call(Builtin::Scalar(at.dtype.scalar()?), c)
            }
            Type::Scalar(s) if method == "dtype" => self.builtin_call(Builtin::Scalar(s), c),
            Type::Ref { dtype, record, .. } => {
                let Some(op) = AtomicOp::from_method(method) else {
                    self.error(
                        Code::E0212,
                        span,
                        format!("atomic references have no method `{method}`"),
                    );
                    return None;
                };
                let params: &[&str] = match op {
                    AtomicOp::Load | AtomicOp::Notify => &["memory", "scope"],
                    AtomicOp::Wait => &["old", "memory", "scope"],
                    AtomicOp::Cas => &["old", "val", "memory", "scope"],
                    _ => &["val", "memory", "scope"],
                };
                let nvals = params.len() - 2;
                let a = self.bind(c, method, params, nvals)?;
                match &record {
                    Some(st) => self.check_struct_atomic(op, st, dtype, method, v.span)?,
                    None => self.check_atomic_dtype(op, dtype, method, v.span)?,
                }
                let order = self.memory_order(a[nvals])?;
                let scope = self.scope(a[nvals + 1])?;
                let bad_order = match op {
                    AtomicOp::Load | AtomicOp::Wait => {
                        matches!(order, MemoryOrder::Release | MemoryOrder::AcqRel)
                    }
                    AtomicOp::Store => matches!(
                        order,
                        MemoryOrder::Acquire | MemoryOrder::Consume | MemoryOrder::AcqRel
                    ),
                    _ => false,
                };
                if bad_order {
                    let e = a[nvals].map(sp).unwrap_or(span);
                    self.error(
                        Code::E0404,
                        e,
                        format!(
                            "an atomic `{method}` cannot have '{}' ordering",
                            order.name()
                        ),
                    );
                    return None;
                }
                let mut args = Vec::new();
                for e in a[..nvals].iter().flatten() {
                    let x = self.eval(e)?;
                    match &record {
                        // A struct element's operands are values of the struct.
                        Some(st) if x.ty != Type::Struct(st.clone()) => {
                            self.error(
                                Code::E0207,
                                x.span,
                                format!("atomic `{method}` on a `{}` element needs a `{}` value, found {}", st.name, st.name, x.ty),
                            );
                            return None;
                        }
                        Some(_) => {
                            let x = self.concrete(x)?;
                            args.push(x.e);
                        }
                        None => args.push(self.store_value(&x, dtype)?),
                    }
                }
                let ty = if matches!(op, AtomicOp::Store | AtomicOp::Wait | AtomicOp::Notify) {
                    Type::None
                } else if let Some(st) = record {
                    Type::Struct(st)
                } else {
                    Type::Scalar(dtype)
                };
                let e = self.push(
                    Expr::Atomic {
                        op,
                        order,
                        scope,
                        target: v.e,
                        args,
                    },
                    ty.clone(),
                    span,
                );
                Some(self.val(e, ty, span))
            }
            Type::Struct(st) | Type::StructRef { st, .. } => {
                match self.s.m.method(&st.name, method) {
                    Some(idx) => self.user_call(idx, c, Some(v)),
                    None => {
                        self.error(
                            Code::E0212,
                            span,
                            format!("`{}` has no method `{method}`", st.name),
                        );
                        None
                    }
                }
            }
            // A copy of a constant array that nothing can write is the array itself (writing
            // it is E0112, §1.3.1).
            Type::Array(at) if method == "copy" && at.space == crate::types::MemSpace::Const => {
                self.bind(c, method, &[], 0)?;
                Some(v)
            }
            Type::Array(_) if super::reduce::Reduce::from_method(method).is_some() => {
                let r = super::reduce::Reduce::from_method(method)?;
                self.bind(c, method, &[], 0)?;
                self.reduce_call(r, v, span)
            }
            Type::Array(_) if method == "reshape" => self.reshape(&v, c),
            Type::Array(_) if method == "astype" => self.astype(&v, c),
            Type::Array(at) if method == "view" => {
                let a = self.bind(c, "view", &["dtype"], 1)?;
                // A number type, or a vector type (`view(uint32x4)`: 16-byte accesses, §19.3).
                let dtype = match self.element_dtype_arg(a[0]?)? {
                    d @ (DType::Scalar(_) | DType::Vector { .. }) => d,
                    DType::Struct(_) | DType::Atomic(_) => {
                        self.error(
                            Code::E0203,
                            span,
                            "`view(dtype)` takes a number or vector type, not a struct or `Atomic`",
                        );
                        return None;
                    }
                };
                if at.ndim != 1 || at.layout != Layout::C {
                    self.diags.push(
                        Diagnostic::error(
                            Code::E0203,
                            span,
                            format!("`view(dtype)` needs a contiguous 1-D array, found {}", v.ty),
                        )
                        .with_note(
                            "declare the parameter contiguous (`uint8[::1]`) or slice with step 1",
                        ),
                    );
                    return None;
                }
                if at.dtype.scalar().is_none() {
                    self.error(Code::E0203, span, "`view(dtype)` needs an array of numbers");
                    return None;
                }
                let ty = Type::Array(ArrayType { dtype, ..at });
                let e = self.push(Expr::Reinterpret(v.e), ty.clone(), span);
                Some(self.val(e, ty, span))
            }
            // Python's `int.bit_count()`, which numba-cuda lowers to `cuda.popc`.
            Type::Scalar(s)
                if s.is_integer() && method == "bit_count" && self.s.m.rules().int_bit_count =>
            {
                self.bind(c, "bit_count", &[], 0)?;
                let v = self.concrete(v)?;
                let mut r = self.intrinsic(
                    Intrinsic::Popc,
                    vec![v.e],
                    Type::Scalar(Scalar::Int32),
                    span,
                );
                r.nonneg = true;
                Some(r)
            }
            other => {
                self.error(
                    Code::E0212,
                    span,
                    format!("{other} has no method `{method}` in device code"),
                );
                None
            }
        }
    }

    /// The number type whose bits an `atomic_ref` on an element of struct `st` moves: the
    /// struct must be 4, 8 or 16 bytes, aligned to its size (as C++'s
    /// `atomic_ref<T>::required_alignment`), and hold no `Atomic` field (§9.2). E0408
    /// otherwise, at the array.
    fn struct_atomic_carrier(
        &mut self,
        st: &crate::types::StructType,
        arr: &Val,
    ) -> Option<Scalar> {
        fn has_atomic(t: &Type) -> bool {
            match t {
                Type::Atomic { .. } => true,
                Type::Struct(st) => st.fields.iter().any(|(_, t)| has_atomic(t)),
                _ => false,
            }
        }
        if st.fields.iter().any(|(_, t)| has_atomic(t)) {
            self.diags.push(
                Diagnostic::error(
                    Code::E0408,
                    arr.span,
                    format!(
                        "`atomic_ref` on an element of `{}`, which has `Atomic` fields",
                        st.name
                    ),
                )
                .with_note("use the fields' own atomic methods: `array[i].field.add(1)`"),
            );
            return None;
        }
        let (size, align) = crate::abi::size_align(&Type::Struct(Box::new(st.clone())));
        let carrier = match size {
            4 => Scalar::UInt32,
            8 => Scalar::UInt64,
            16 => Scalar::Complex128,
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0408,
                        arr.span,
                        format!(
                            "`atomic_ref` on an element of `{}` ({size} bytes): atomic structs must be 4, 8 or 16 bytes",
                            st.name
                        ),
                    )
                    .with_note("the GPU accesses 4, 8 or 16 bytes atomically; pad the struct to one of these sizes, or use `Atomic` fields"),
                );
                return None;
            }
        };
        if align < size {
            self.diags.push(
                Diagnostic::error(
                    Code::E0408,
                    arr.span,
                    format!(
                        "`atomic_ref` on an element of `{}` needs it aligned to its {size} bytes, but its alignment is {align}",
                        st.name
                    ),
                )
                .with_note(format!("declare the struct `@device.struct(align={size})`, as C++'s `atomic_ref<T>::required_alignment` asks")),
            );
            return None;
        }
        Some(carrier)
    }

    /// The rules of atomic `method` on an element of struct `st` (§9.2): `load` and `store`
    /// up to 16 bytes (16 from sm_90 on), `exch` and `cas` up to 8; E0402 otherwise.
    fn check_struct_atomic(
        &mut self,
        op: AtomicOp,
        st: &crate::types::StructType,
        dtype: Scalar,
        method: &str,
        span: Span,
    ) -> Option<()> {
        let size = dtype.size();
        let why = match op {
            AtomicOp::Load | AtomicOp::Store | AtomicOp::Notify => None,
            AtomicOp::Exch | AtomicOp::Cas if size <= 8 => None,
            AtomicOp::Exch | AtomicOp::Cas => Some(
                "`exch` and `cas` need a struct of at most 8 bytes (the spec's rule); 16-byte structs take `load` and `store`",
            ),
            _ => Some(
                "structs take `load`, `store`, `exch` and `cas` (bit copies); the other atomic methods need a number element",
            ),
        };
        if let Some(why) = why {
            self.diags.push(
                Diagnostic::error(
                    Code::E0402,
                    span,
                    format!(
                        "atomic `{method}` is not available for struct `{}` ({size} bytes)",
                        st.name
                    ),
                )
                .with_note(why),
            );
            return None;
        }
        if size == 16 {
            self.check_b128_arch(method, &format!("struct `{}`", st.name), span)?;
        }
        Some(())
    }

    /// 16-byte atomic loads and stores are PTX's `ld`/`st` `.b128` (PTX ISA 8.3, sm_90 on):
    /// E0402 below sm_90. The host refuses them later (E0502), so only device targets are
    /// checked here.
    fn check_b128_arch(&mut self, method: &str, what: &str, span: Span) -> Option<()> {
        if self.s.sm == crate::ir::HOST_TARGET || self.s.sm >= 90 {
            return Some(());
        }
        self.diags.push(
            Diagnostic::error(
                Code::E0402,
                span,
                format!(
                    "a 16-byte atomic `{method}` ({what}) needs sm_90 or newer; this compilation is for sm_{}",
                    self.s.sm
                ),
            )
            .with_note("PTX has 128-bit atomic loads and stores (`ld`/`st` `.b128`) from sm_90 on: compile for sm_90, or guard the code with `if device.target(device.provides(device.sm_90))`"),
        );
        None
    }

    pub(super) fn check_atomic_dtype(
        &mut self,
        op: AtomicOp,
        dtype: Scalar,
        method: &str,
        span: Span,
    ) -> Option<()> {
        // complex64 travels as its 64 bits: load, store, exch and cas; complex128 as its
        // 128 bits: load and store (PTX's `.b128`, sm_90 on) (§9.2).
        let complex_bits = match dtype {
            Scalar::Complex64 => matches!(
                op,
                AtomicOp::Load | AtomicOp::Store | AtomicOp::Exch | AtomicOp::Cas
            ),
            Scalar::Complex128 => {
                matches!(op, AtomicOp::Load | AtomicOp::Store | AtomicOp::Notify)
            }
            _ => false,
        };
        if (dtype.is_complex() || dtype.is_fp8()) && !complex_bits {
            self.diags.push(
                Diagnostic::error(
                    Code::E0253,
                    span,
                    format!("atomic `{method}` on {dtype} is not supported"),
                )
                .with_note("complex64 elements take `load`, `store`, `exch` and `cas`; complex128 elements (16 bytes) `load` and `store` only (the spec's 16-byte rule; `exch` and `cas` need at most 8 bytes); fp8 elements have no atomic instructions: use a lock, or atomics on a float32 or int32 array"),
            );
            return None;
        }
        if dtype.size() == 16 {
            self.check_b128_arch(method, dtype.name(), span)?;
        }
        use Scalar::*;
        let arith = [UInt32, Int32, UInt64, Int64, Float32, Float64];
        let bits = [UInt32, Int32, UInt64, Int64];
        let (ok, rule): (bool, &str) = match op {
            AtomicOp::Load | AtomicOp::Store | AtomicOp::Notify => (true, ""),
            AtomicOp::Wait => (
                dtype.size() >= 4,
                "pydevice supports `wait` on 4- and 8-byte types",
            ),
            // 1- and 2-byte elements take a CAS loop on their 32-bit word.
            AtomicOp::Exch | AtomicOp::Cas => (true, ""),
            // float16 adds in hardware (`atom.add.noftz.f16`, sm_70 on), as CUDA's and CuPy's
            // `atomicAdd(__half*, __half)` do.
            AtomicOp::Add | AtomicOp::Sub => (
                arith.contains(&dtype) || dtype == Float16,
                "the dtype must be uint32, int32, uint64, int64, float16, float32 or float64",
            ),
            AtomicOp::Max | AtomicOp::Min | AtomicOp::NanMax | AtomicOp::NanMin => (
                arith.contains(&dtype),
                "the dtype must be uint32, int32, uint64, int64, float32 or float64",
            ),
            AtomicOp::Inc | AtomicOp::Dec => (
                matches!(dtype, UInt32 | UInt64),
                "`inc` and `dec` need uint32 or uint64 (as CUDA's atomicInc/atomicDec)",
            ),
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => (
                bits.contains(&dtype),
                "the dtype must be uint32, int32, uint64 or int64",
            ),
        };
        if ok {
            return Some(());
        }
        self.diags.push(
            Diagnostic::error(
                Code::E0402,
                span,
                format!("atomic `{method}` is not available for {dtype}"),
            )
            .with_note(rule),
        );
        None
    }

    /// `float32x3(a, b, c)`: one argument per element, each converted to the element type.
    pub(super) fn vector_new(&mut self, elem: Scalar, len: u8, c: &ast::ExprCall) -> Option<Val> {
        let span = sp(c);
        let name = format!("{elem}x{len}");
        let args = self.args(c, &name, 0, usize::MAX)?;
        // Each argument gives one element, or (numba dialect) a vector all of its elements, in
        // order, as numba's vector constructors take them: `float32x4(f2, z, w)`.
        let mut parts: Vec<Val> = Vec::new();
        for a in &args {
            match &a.ty {
                Type::Scalar(_) => parts.push(a.clone()),
                Type::Vector { elem: ae, len: al } if self.s.m.rules().vectors_from_vectors => {
                    for k in 0..*al {
                        let base = self.push(self.exprs[a.e].clone(), a.ty.clone(), a.span);
                        let ety = Type::Scalar(*ae);
                        let e = self.push(Expr::Extract(base, u32::from(k)), ety.clone(), a.span);
                        parts.push(self.val(e, ety, a.span));
                    }
                }
                other => {
                    self.error(
                        Code::E0207,
                        a.span,
                        format!("a {name} element cannot be made from {other}"),
                    );
                    return None;
                }
            }
        }
        if parts.len() != len as usize {
            self.diags.push(
                Diagnostic::error(
                    Code::E0107,
                    span,
                    format!(
                        "`{name}` takes {len} element{}, but {} were given",
                        if len == 1 { "" } else { "s" },
                        parts.len()
                    ),
                )
                .with_note("the number of arguments must equal the vector's size"),
            );
            return None;
        }
        let mut es = Vec::new();
        for a in parts {
            let sp_ = a.span;
            es.push(self.conversion(a, elem, sp_)?.e);
        }
        let ty = Type::Vector { elem, len };
        let e = self.push(Expr::Tuple(es), ty.clone(), span);
        Some(self.val(e, ty, span))
    }

    /// `v[i]` with an index known only at run time: a choice among the elements
    /// (`0 <= i < len` is the program's responsibility, as the spec requires).
    pub(super) fn vector_element(&mut self, v: &Val, i: &Val, span: Span) -> Option<Val> {
        let Type::Vector { elem, len } = v.ty else {
            return None;
        };
        let ety = Type::Scalar(elem);
        let i32t = Type::Scalar(Scalar::Int32);
        let bool_t = Type::Scalar(Scalar::Bool);
        let idx = self.convert(i, Scalar::Int32)?;
        let mut acc = self.push(Expr::Extract(v.e, u32::from(len) - 1), ety.clone(), span);
        for k in (0..len - 1).rev() {
            let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), span);
            let ek = self.push(Expr::Extract(base, u32::from(k)), ety.clone(), span);
            let ii = self.push(self.exprs[idx].clone(), i32t.clone(), span);
            let kk = self.push(
                Expr::Literal(Literal::Int(i128::from(k))),
                i32t.clone(),
                span,
            );
            let is_k = self.push(Expr::Binary(BinaryOp::Eq, ii, kk), bool_t.clone(), span);
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
        Some(self.val(acc, ety, span))
    }

    /// `v[i] = x` on a local vector: vectors are immutable values, so this binds `v` to a new
    /// vector with element `i` replaced (as `n += 1` binds `n` to a new int).
    pub(super) fn vector_with(&mut self, v: &Val, i: &Val, x: &Val, span: Span) -> Option<Val> {
        let Type::Vector { elem, len } = v.ty else {
            return None;
        };
        let ety = Type::Scalar(elem);
        let i32t = Type::Scalar(Scalar::Int32);
        let bool_t = Type::Scalar(Scalar::Bool);
        let value = self.conversion(x.clone(), elem, x.span)?;
        if let Some(k) = i.konst.as_ref().and_then(|c| c.as_int())
            && !(0..i128::from(len)).contains(&k)
        {
            self.error(
                Code::E0203,
                i.span,
                format!("index {k} is out of range for {}", v.ty),
            );
            return None;
        }
        let idx = self.convert(i, Scalar::Int32)?;
        let mut es = Vec::new();
        for k in 0..len {
            let base = self.push(self.exprs[v.e].clone(), v.ty.clone(), span);
            let old = self.push(Expr::Extract(base, u32::from(k)), ety.clone(), span);
            let ii = self.push(self.exprs[idx].clone(), i32t.clone(), span);
            let kk = self.push(
                Expr::Literal(Literal::Int(i128::from(k))),
                i32t.clone(),
                span,
            );
            let is_k = self.push(Expr::Binary(BinaryOp::Eq, ii, kk), bool_t.clone(), span);
            let nv = self.push(self.exprs[value.e].clone(), ety.clone(), span);
            es.push(self.push(
                Expr::Select {
                    cond: is_k,
                    then: nv,
                    otherwise: old,
                },
                ety.clone(),
                span,
            ));
        }
        let e = self.push(Expr::Tuple(es), v.ty.clone(), span);
        Some(self.val(e, v.ty.clone(), span))
    }
}

/// The numbers a tuple or vector is made of, in order (nested tuples flattened); `None` when
/// it holds anything else (an array, a struct, a reference).
fn warp_leaves(t: &Type) -> Option<Vec<Scalar>> {
    match t {
        Type::Scalar(s) => Some(vec![*s]),
        Type::WarpMask => Some(vec![Scalar::Int32]),
        Type::Vector { elem, len } => Some(vec![*elem; *len as usize]),
        Type::Tuple(ts) => {
            let mut out = Vec::new();
            for t in ts {
                out.extend(warp_leaves(t)?);
            }
            Some(out)
        }
        _ => None,
    }
}
