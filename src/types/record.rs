//! Records: the element type of arrays with a NumPy structured dtype (numba's `Record`),
//! such as `np.dtype([('x', '<f4'), ('y', '<i4', (3, 2))], align=True)`.
//!
//! A record is a [`StructType`] of number fields, nested records and sub-arrays of those,
//! at the byte offsets NumPy gives them ([`RecordLayout`]). NumPy's layout is C's except
//! that a complex number is aligned to its parts (`complex64` to 4 bytes) and that a dtype
//! made without `align=True` packs its fields. Kernels read fields with aligned loads, so a
//! record is accepted when every field sits at a multiple of its NumPy alignment and the
//! item size is a multiple of the largest one: what `align=True` always gives, and what a
//! packed dtype gives when its fields happen to fall so (`[('i', '<i4'), ('j', '<f4', (3,
//! 2))]`).

use super::{RecordLayout, StructType, Type};

/// The most elements a sub-array field may have (its C type is a nested tuple).
pub const MAX_SUBARRAY_ELEMENTS: u64 = 4096;

/// A fixed-width text field of a structured dtype (docs/semantics.md §5.16): NumPy's `S<n>`
/// (`n` bytes) or `U<n>` (`n` UCS-4 code points, each a `uint32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Text {
    /// `S<n>`: bytes.
    Bytes,
    /// `U<n>`: UCS-4 code points.
    Unicode,
}

impl Text {
    /// The kind and width of a NumPy type string (`|S12`, `<U12`); `None` for others.
    pub fn of_typestr(typestr: &str) -> Option<(Text, u64)> {
        let t = typestr.trim_start_matches(['<', '|', '=']);
        let (kind, n) = if let Some(n) = t.strip_prefix('S') {
            (Text::Bytes, n)
        } else if let Some(n) = t.strip_prefix('U') {
            (Text::Unicode, n)
        } else {
            return None;
        };
        n.parse().ok().filter(|n| *n > 0).map(|n| (kind, n))
    }

    /// The code unit: `uint8` for bytes, `uint32` for code points.
    pub fn unit(self) -> super::Scalar {
        match self {
            Text::Bytes => super::Scalar::UInt8,
            Text::Unicode => super::Scalar::UInt32,
        }
    }

    /// NumPy's type string of a field of `n` code units (`|S12`, `<U12`).
    pub fn typestr(self, n: u64) -> String {
        match self {
            Text::Bytes => format!("|S{n}"),
            Text::Unicode => format!("<U{n}"),
        }
    }
}

/// One named field of a structured dtype, at a byte offset in the element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordField {
    /// The field name (a Python identifier).
    pub name: String,
    /// The field's type, or its element type when it is a sub-array: a number, or a nested
    /// record (`Type::Struct` made by [`record`]).
    pub ty: Type,
    /// Byte offset in the element.
    pub offset: u64,
    /// The sub-array shape (`[3, 2]` for `('j', '<f4', (3, 2))`); empty for a plain field.
    pub shape: Vec<u64>,
    /// A text field (`S<n>`, `U<n>`): `ty` is its code unit and `shape` is `[n]`.
    pub text: Option<Text>,
}

impl RecordField {
    /// A plain (not sub-array) field.
    pub fn new(name: &str, ty: Type, offset: u64) -> RecordField {
        RecordField {
            name: name.into(),
            ty,
            offset,
            shape: Vec::new(),
            text: None,
        }
    }
}

/// The struct type of a structured dtype with these fields and item size, named after its
/// fields (`record_x_float32_y_int32`; a sub-array field `j_float32_3x2`; a layout that
/// is not C's adds its offsets and size, `_o0_8_12_s24`). `Err` says why the dtype cannot be
/// a kernel's element type: a field name that is not an identifier, two fields with one
/// name, overlapping fields, or a field at an offset that is not a multiple of its
/// alignment (make the dtype with `align=True`).
///
/// ```
/// use pydevice::types::record::{record, RecordField};
/// use pydevice::types::Scalar;
/// let f = |name: &str, s: Scalar, offset| RecordField::new(name, s.into(), offset);
/// let r = record(&[f("x", Scalar::Float32, 0), f("n", Scalar::Int64, 8)], 16).unwrap();
/// assert_eq!(r.name, "record_x_float32_n_int64");
/// // Packed (NumPy's default without align=True): n at 4 is not aligned.
/// assert!(record(&[f("x", Scalar::Float32, 0), f("n", Scalar::Int64, 4)], 12).is_err());
/// // A 3×2 sub-array of float32 after an int32 (packed, but aligned in fact).
/// let j = RecordField { shape: vec![3, 2], ..f("j", Scalar::Float32, 4) };
/// let r = record(&[f("i", Scalar::Int32, 0), j], 28).unwrap();
/// assert_eq!(r.name, "record_i_int32_j_float32_3x2");
/// assert_eq!(r.subarray_shape(1), &[3, 2]);
/// ```
pub fn record(fields: &[RecordField], itemsize: u64) -> Result<StructType, String> {
    if fields.is_empty() {
        return Err("a structured dtype needs at least one field".into());
    }
    let mut end = 0u64;
    let mut align = 1u64;
    let mut c_off = 0u64;
    let mut c_max = 1u64;
    let mut c_layout = true;
    let mut name = String::from("record");
    let mut out = Vec::new();
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
        let (esize, a) = numpy_size_align(&f.ty)
            .ok_or_else(|| format!("field `{}` is {}, not a number or a record", f.name, f.ty))?;
        let count = f
            .shape
            .iter()
            .try_fold(1u64, |n, d| n.checked_mul(*d))
            .filter(|n| *n <= MAX_SUBARRAY_ELEMENTS)
            .ok_or_else(|| {
                format!(
                    "field `{}` is a sub-array of more than {MAX_SUBARRAY_ELEMENTS} elements",
                    f.name
                )
            })?;
        if !f.shape.is_empty() && count == 0 {
            return Err(format!("field `{}` is an empty sub-array", f.name));
        }
        if f.offset < end {
            return Err(format!(
                "field `{}` at byte {} overlaps the field before it",
                f.name, f.offset
            ));
        }
        if !f.offset.is_multiple_of(a) {
            return Err(format!(
                "field `{}` is at byte {}, which is not a multiple of its alignment {a}; make \
                 the dtype with `align=True` (np.dtype([...], align=True))",
                f.name, f.offset
            ));
        }
        let ty = subarray_type(&f.ty, &f.shape);
        // The C++ struct of the same fields (complex numbers there are aligned to their size).
        let ca = c_align(&ty);
        if !f.shape.is_empty() && !f.offset.is_multiple_of(ca) {
            return Err(format!(
                "field `{}` is a sub-array of {} at byte {}; a sub-array of this type must sit \
                 at a multiple of {ca} bytes",
                f.name, f.ty, f.offset
            ));
        }
        c_off = c_off.div_ceil(ca) * ca;
        c_layout &= c_off == f.offset;
        c_off += esize * count;
        c_max = c_max.max(ca);
        // A sub-array is read with its elements' C++ alignment (a complex64 sub-array with
        // 8-byte loads), so every record in an array must keep it there.
        align = align.max(if f.shape.is_empty() { a } else { ca });
        end = f.offset + esize * count;
        name.push('_');
        name.push_str(&f.name);
        name.push('_');
        match &f.ty {
            Type::Struct(st) => name.push_str(&st.name),
            t => name.push_str(&t.to_string()),
        }
        if !f.shape.is_empty() {
            let dims: Vec<String> = f.shape.iter().map(u64::to_string).collect();
            name.push('_');
            name.push_str(&dims.join("x"));
        }
        if let Some(t) = f.text {
            if f.shape.len() != 1 || f.ty != Type::Scalar(t.unit()) {
                return Err(format!(
                    "text field `{}` must be a sub-array of {} code units",
                    f.name,
                    t.unit()
                ));
            }
            name.push_str(if t == Text::Bytes { "_S" } else { "_U" });
        }
        out.push((f.name.clone(), ty));
    }
    if itemsize < end || !itemsize.is_multiple_of(align) {
        return Err(format!(
            "the item size is {itemsize} bytes, but the fields end at byte {end} and are \
             aligned to {align}; make the dtype with `align=True` (np.dtype([...], align=True))"
        ));
    }
    if !c_layout || c_off.div_ceil(c_max) * c_max != itemsize {
        name.push_str("_o");
        for f in fields {
            name.push_str(&format!("{}_", f.offset));
        }
        name.push_str(&format!("s{itemsize}"));
    }
    Ok(StructType {
        name,
        fields: out,
        align: None,
        field_align: Vec::new(),
        record: Some(Box::new(RecordLayout {
            offsets: fields.iter().map(|f| f.offset).collect(),
            size: itemsize,
            align,
            shapes: fields.iter().map(|f| f.shape.clone()).collect(),
            text: if fields.iter().any(|f| f.text.is_some()) {
                fields.iter().map(|f| f.text).collect()
            } else {
                Vec::new()
            },
            bare: false,
        })),
    })
}

/// NumPy's text dtype itself (`S<n>`, `U<n>`: an array of strings, `np.zeros(9, "U12")`):
/// a record named `S12` / `U12` of one text field `text`, marked bare so that it is read
/// and written as the plain dtype (docs/semantics.md §5.16.2).
pub fn text_element(kind: Text, n: u64) -> Result<StructType, String> {
    let unit = kind.unit();
    let field = RecordField {
        shape: vec![n],
        text: Some(kind),
        ..RecordField::new("text", Type::Scalar(unit), 0)
    };
    let mut st = record(&[field], n * unit.size())?;
    st.name = format!("{}{n}", if kind == Text::Bytes { 'S' } else { 'U' });
    if let Some(r) = st.record.as_mut() {
        r.bare = true;
    }
    Ok(st)
}

/// The C type a sub-array of `elem` with this shape occupies: nested tuples, outermost
/// dimension first (`elem` itself for an empty shape).
pub fn subarray_type(elem: &Type, shape: &[u64]) -> Type {
    shape
        .iter()
        .rev()
        .fold(elem.clone(), |t, n| Type::Tuple(vec![t; *n as usize]))
}

/// The element type of a sub-array field's C type (`subarray_type` undone).
pub fn subarray_elem(ty: &Type, ndim: usize) -> Option<&Type> {
    let mut t = ty;
    for _ in 0..ndim {
        t = match t {
            Type::Tuple(ts) => ts.first()?,
            _ => return None,
        };
    }
    Some(t)
}

/// The C++ alignment of a record field's type (a complex number aligned to its size, a
/// nested record to its NumPy alignment, a sub-array to its element's).
fn c_align(t: &Type) -> u64 {
    match t {
        Type::Scalar(s) => s.size(),
        Type::Struct(st) => st.record.as_ref().map_or(1, |r| r.align),
        Type::Tuple(ts) => ts.first().map_or(1, c_align),
        _ => 1,
    }
}

/// The NumPy size and alignment of a record field's (element) type: a number (a complex
/// number is aligned to its parts), or a record. `None` for anything else.
fn numpy_size_align(t: &Type) -> Option<(u64, u64)> {
    match t {
        Type::Scalar(s) => Some((s.size(), s.component().size())),
        Type::Struct(st) => st.record.as_ref().map(|r| (r.size, r.align)),
        _ => None,
    }
}

/// The fields of a record struct with their offsets and sub-array shapes (the inverse of
/// [`record`]), for writing a NumPy `descr` back. `None` when it is not a record.
pub fn record_fields(st: &StructType) -> Option<Vec<RecordField>> {
    let r = st.record.as_ref()?;
    st.fields
        .iter()
        .enumerate()
        .map(|(i, (name, t))| {
            let shape = r.shapes.get(i)?.clone();
            Some(RecordField {
                name: name.clone(),
                ty: subarray_elem(t, shape.len())?.clone(),
                offset: *r.offsets.get(i)?,
                shape,
                text: r.text.get(i).copied().flatten(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::layout_of;
    use crate::types::Scalar;

    fn f(name: &str, s: Scalar, offset: u64, shape: &[u64]) -> RecordField {
        RecordField {
            name: name.into(),
            ty: s.into(),
            offset,
            shape: shape.to_vec(),
            text: None,
        }
    }

    /// (offsets, item size, alignment) of a record, as `layout_of` gives them.
    fn layout(st: &StructType) -> (Vec<u64>, u64, u64) {
        let l = layout_of(&Type::Struct(Box::new(st.clone())));
        (l.fields.iter().map(|f| f.offset).collect(), l.size, l.align)
    }

    // Every expected value below was printed by python3 with NumPy 2:
    // `dt.itemsize, dt.alignment, {k: v[1] for k, v in dt.fields.items()}`. (NumPy reports
    // alignment 1 for packed dtypes; kernels align a record to its largest field alignment.)

    #[test]
    fn packed_2d_subarray_matches_numpy() {
        // np.dtype([('i', np.int32), ('j', np.float32, (3, 2))]): i 0, j 4, itemsize 28.
        let st = record(
            &[
                f("i", Scalar::Int32, 0, &[]),
                f("j", Scalar::Float32, 4, &[3, 2]),
            ],
            28,
        )
        .unwrap();
        assert_eq!(layout(&st), (vec![0, 4], 28, 4));
        assert_eq!(st.fields[1].1.to_string(), {
            let row = "tuple[float32, float32]";
            format!("tuple[{row}, {row}, {row}]")
        });
        assert_eq!(record_fields(&st).unwrap()[1].shape, vec![3, 2]);
    }

    #[test]
    fn aligned_complex_and_subarray_match_numpy() {
        // np.dtype([('a','f8'),('b','i4'),('c','c8'),('d','u1',(5,))], align=True):
        // a 0, b 8, c 12, d 20, itemsize 32, alignment 8.
        let st = record(
            &[
                f("a", Scalar::Float64, 0, &[]),
                f("b", Scalar::Int32, 8, &[]),
                f("c", Scalar::Complex64, 12, &[]),
                f("d", Scalar::UInt8, 20, &[5]),
            ],
            32,
        )
        .unwrap();
        assert_eq!(layout(&st), (vec![0, 8, 12, 20], 32, 8));
        // C++ would put the complex64 at 16, so the name carries NumPy's layout.
        assert_eq!(
            st.name,
            "record_a_float64_b_int32_c_complex64_d_uint8_5_o0_8_12_20_s32"
        );
    }

    #[test]
    fn aligned_1d_subarray_matches_numpy() {
        // np.dtype([('g','i4'),('h','f4',(2,))], align=True): g 0, h 4, itemsize 12, align 4.
        let st = record(
            &[
                f("g", Scalar::Int32, 0, &[]),
                f("h", Scalar::Float32, 4, &[2]),
            ],
            12,
        )
        .unwrap();
        assert_eq!(layout(&st), (vec![0, 4], 12, 4));
        // np.dtype([('a','i1'),('j','f8',(2,))], align=True): a 0, j 8, itemsize 24.
        let st = record(
            &[
                f("a", Scalar::Int8, 0, &[]),
                f("j", Scalar::Float64, 8, &[2]),
            ],
            24,
        )
        .unwrap();
        assert_eq!(layout(&st), (vec![0, 8], 24, 8));
        // The packed np.dtype([('a','i1'),('j','f8',(2,))]) puts j at 1 (itemsize 17).
        let e = record(
            &[
                f("a", Scalar::Int8, 0, &[]),
                f("j", Scalar::Float64, 1, &[2]),
            ],
            17,
        )
        .unwrap_err();
        assert!(e.contains("align=True"), "{e}");
    }

    #[test]
    fn subarray_of_records_matches_numpy() {
        // p = np.dtype([('x','f4'),('y','i2')], align=True): x 0, y 4, itemsize 8.
        // np.dtype([('n','i1'),('p',p,(2,))], align=True): n 0, p 4, itemsize 20, align 4.
        let p = record(
            &[
                f("x", Scalar::Float32, 0, &[]),
                f("y", Scalar::Int16, 4, &[]),
            ],
            8,
        )
        .unwrap();
        let pf = RecordField {
            name: "p".into(),
            ty: Type::Struct(Box::new(p)),
            offset: 4,
            shape: vec![2],
            text: None,
        };
        let st = record(&[f("n", Scalar::Int8, 0, &[]), pf], 20).unwrap();
        assert_eq!(layout(&st), (vec![0, 4], 20, 4));
    }

    #[test]
    fn complex_subarrays_keep_their_cxx_alignment() {
        // np.dtype([('z','c8',(2,)),('b','i4')], align=True): z 0, b 16, itemsize 20 (NumPy
        // aligns complex64 to 4), so the second record's z would sit at 20: refused.
        let e = record(
            &[
                f("z", Scalar::Complex64, 0, &[2]),
                f("b", Scalar::Int32, 16, &[]),
            ],
            20,
        )
        .unwrap_err();
        assert!(e.contains("item size"), "{e}");
        // np.dtype({'names': ['z', 'b'], 'formats': [('c8', (2,)), 'i4'], 'offsets': [0, 16],
        // 'itemsize': 24}) keeps every z 8-aligned.
        let st = record(
            &[
                f("z", Scalar::Complex64, 0, &[2]),
                f("b", Scalar::Int32, 16, &[]),
            ],
            24,
        )
        .unwrap();
        assert_eq!(layout(&st), (vec![0, 16], 24, 8));
    }
}
