//! Records: the element type of arrays with a NumPy structured dtype (numba's `Record`),
//! such as `np.dtype([('x', '<f4'), ('y', '<i4')], align=True)`.
//!
//! A record is a [`StructType`] of number fields and nested records. Kernels use C struct
//! layout, so a record is accepted only when its fields sit where C puts them, which is what
//! NumPy's `align=True` gives (and what any dtype of fields in size order without gaps
//! gives).

use super::{StructType, Type};

/// One named field of a structured dtype, at a byte offset in the element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordField {
    /// The field name (a Python identifier).
    pub name: String,
    /// The field's type: a number, or a nested record (`Type::Struct` made by [`record`]).
    pub ty: Type,
    /// Byte offset in the element.
    pub offset: u64,
}

/// The struct type of a structured dtype with these fields and item size, named after its
/// fields (`record_x_float32_y_int32`). `Err` says why the dtype cannot be a kernel's
/// element type: a field name that is not an identifier, two fields with one name, or
/// fields that are not where C struct layout (NumPy's `align=True`) puts them.
///
/// ```
/// use pydevice::types::record::{record, RecordField};
/// use pydevice::types::Scalar;
/// let f = |name: &str, s: Scalar, offset| RecordField { name: name.into(), ty: s.into(), offset };
/// let r = record(&[f("x", Scalar::Float32, 0), f("n", Scalar::Int64, 8)], 16).unwrap();
/// assert_eq!(r.name, "record_x_float32_n_int64");
/// // Packed (NumPy's default without align=True): n at 4 is not where C puts it.
/// assert!(record(&[f("x", Scalar::Float32, 0), f("n", Scalar::Int64, 4)], 12).is_err());
/// ```
pub fn record(fields: &[RecordField], itemsize: u64) -> Result<StructType, String> {
    if fields.is_empty() {
        return Err("a structured dtype needs at least one field".into());
    }
    let mut off = 0u64;
    let mut align = 1u64;
    let mut name = String::from("record");
    for (i, f) in fields.iter().enumerate() {
        let ident = f
            .name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && f.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(format!(
                "field name `{}` is not an identifier, so kernels cannot name it",
                f.name
            ));
        }
        if fields[..i].iter().any(|g| g.name == f.name) {
            return Err(format!("field `{}` appears twice", f.name));
        }
        let (fsize, a) = size_align(&f.ty)
            .ok_or_else(|| format!("field `{}` is {}, not a number or a record", f.name, f.ty))?;
        off = off.div_ceil(a) * a;
        align = align.max(a);
        if f.offset != off {
            return Err(format!(
                "field `{}` is at byte {}, but C struct layout puts it at {off}; make the dtype \
                 with `align=True` (np.dtype([...], align=True))",
                f.name, f.offset
            ));
        }
        off += fsize;
        name.push('_');
        name.push_str(&f.name);
        name.push('_');
        match &f.ty {
            Type::Struct(st) => name.push_str(&st.name),
            t => name.push_str(&t.to_string()),
        }
    }
    let size = off.div_ceil(align) * align;
    if itemsize != size {
        return Err(format!(
            "the item size is {itemsize} bytes, but C struct layout gives {size}; make the dtype \
             with `align=True` (np.dtype([...], align=True))"
        ));
    }
    Ok(StructType {
        name,
        fields: fields
            .iter()
            .map(|f| (f.name.clone(), f.ty.clone()))
            .collect(),
        align: None,
        field_align: Vec::new(),
    })
}

/// The C size and alignment of a record field's type: a number, or a record (fields of
/// those, C struct rules). `None` for anything else.
fn size_align(t: &Type) -> Option<(u64, u64)> {
    match t {
        Type::Scalar(s) => Some((s.size(), s.size())),
        Type::Struct(st) if st.align.is_none() && st.field_align.is_empty() => {
            let (mut off, mut align) = (0u64, 1u64);
            for (_, f) in &st.fields {
                let (size, a) = size_align(f)?;
                off = off.div_ceil(a) * a + size;
                align = align.max(a);
            }
            Some((off.max(1).div_ceil(align) * align, align))
        }
        _ => None,
    }
}

/// The fields of a record struct with their C offsets (the inverse of [`record`]), for
/// writing a NumPy `descr` back. `None` when a field is not a number or a record.
pub fn record_fields(st: &StructType) -> Option<Vec<RecordField>> {
    let mut off = 0u64;
    let mut out = Vec::new();
    for (name, t) in &st.fields {
        let (size, a) = size_align(t)?;
        off = off.div_ceil(a) * a;
        out.push(RecordField {
            name: name.clone(),
            ty: t.clone(),
            offset: off,
        });
        off += size;
    }
    Some(out)
}
