//! Alignment overrides and record dtypes in device code: `device.align(t, n)` as the dtype
//! of a `local_array`/`shared_array` (docs/semantics.md §5.15), and the fields of arrays of
//! records (§5.16).

use super::*;

impl FnCx<'_, '_> {
    /// A dtype argument that may be `device.align(t, n)`: the element type and the minimum
    /// alignment of the array (0 when not given). C++'s `alignas(n) T a[k]` aligns the
    /// array, not each element, so the elements keep `t`'s size.
    pub(super) fn aligned_dtype_arg(&mut self, e: &ast::Expr) -> Option<(DType, u64)> {
        if let ast::Expr::Call(c) = e
            && self.callee_item(&c.func) == Some(Item::Builtin(Builtin::Align))
        {
            return match self.s.m.align_call(c) {
                Ok((t, n)) => {
                    let d = self.element_dtype_arg(t)?;
                    Some((d, n))
                }
                Err(d) => {
                    self.diags.push(*d);
                    None
                }
            };
        }
        self.element_dtype_arg(e).map(|d| (d, 0))
    }
}
