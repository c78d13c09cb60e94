//! Arrays of records (NumPy structured dtypes) as kernel arguments: read from `.npy` files
//! and from the CUDA Array Interface's `descr`, checked for aligned fields
//! ([`crate::types::record`]), and passed as arrays of the record struct.
//!
//! DLPack has no record dtype, so a record array comes through DLPack as a `uint8` array of
//! its bytes (one more dimension, the record size) and takes its layout from the parameter
//! ([`bytes_as_records`], docs/semantics.md §5.16).

use super::RuntimeError;
use super::cai::CudaArrayInterface;
pub use super::device_array::bytes_as_records;
use super::device_array::c_strides;
use super::npy::{NpyError, descr_scalar, header_shape, split_header};
use crate::abi::{ArgValue, ArrayArg, ParamAbi, layout_of};
use crate::types::record::{RecordField, Text, record, record_fields};
use crate::types::{DType, StructType, Type};

/// The type of one entry of a NumPy `descr` list: a type string (`'<f4'`; `'|V4'` for
/// padding), the fields of a nested record, or a sub-array of either.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Descr {
    /// A type string.
    Type(String),
    /// A nested record's entries.
    Fields(Vec<DescrEntry>),
    /// A sub-array field (`('j', '<f4', (3, 2))`): its element and shape.
    Sub(Box<Descr>, Vec<u64>),
}

/// One entry of a NumPy `descr` list: a name (empty for padding) and its type.
pub type DescrEntry = (String, Descr);

/// The element type of one field's `descr` (a number or a nested record).
fn element_of_descr(name: &str, d: &Descr) -> Result<Type, String> {
    match d {
        Descr::Fields(inner) => {
            let st = record_of_descr(inner, None).map_err(|e| format!("`{name}`: {e}"))?;
            Ok(Type::Struct(Box::new(st)))
        }
        Descr::Type(typestr) => {
            let t = typestr.trim_start_matches(['<', '|', '=']);
            if typestr.starts_with('>') && !t.ends_with('1') {
                return Err(format!("field `{name}` is big-endian"));
            }
            let dtype = descr_scalar(typestr).ok_or_else(|| {
                format!(
                    "field `{name}` has type `{typestr}`; record fields must be numbers, records, \
                     text (`S<n>`, `U<n>`) or sub-arrays of numbers and records"
                )
            })?;
            Ok(Type::Scalar(dtype))
        }
        Descr::Sub(..) => Err(format!("field `{name}`: a sub-array of sub-arrays")),
    }
}

/// The record struct of a `descr` list: fields in order, padding entries skipped, offsets
/// counted from the entries' sizes, nested records and sub-arrays recursively. `itemsize` is
/// the element size when known (`|V24`); otherwise the entries' total.
pub fn record_of_descr(
    entries: &[DescrEntry],
    itemsize: Option<u64>,
) -> Result<StructType, String> {
    let mut fields = Vec::new();
    let mut off = 0u64;
    for (name, d) in entries {
        if let (true, Descr::Type(typestr)) = (name.is_empty(), d) {
            let t = typestr.trim_start_matches(['<', '|', '=']);
            let n: u64 = t
                .strip_prefix('V')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("padding entry `{typestr}` is not `|Vn`"))?;
            off = off
                .checked_add(n)
                .filter(|o| *o <= i64::MAX as u64)
                .ok_or("the record is too large")?;
            continue;
        }
        let (elem, shape) = match d {
            Descr::Sub(inner, shape) => (inner.as_ref(), shape.clone()),
            d => (d, Vec::new()),
        };
        // A text field (`|S12`, `<U12`): a sub-array of its code units, marked as text.
        if let Descr::Type(typestr) = elem
            && let Some((text, n)) = Text::of_typestr(typestr)
        {
            if !shape.is_empty() {
                return Err(format!("field `{name}`: a sub-array of text ({typestr})"));
            }
            if typestr.starts_with('>') && text == Text::Unicode {
                return Err(format!("field `{name}` is big-endian"));
            }
            let ty = Type::Scalar(text.unit());
            let size = super::npy::checked_size(&[n], layout_of(&ty).size)
                .ok_or_else(|| format!("field `{name}`: {typestr} is too large"))?;
            fields.push(RecordField {
                name: name.clone(),
                ty,
                offset: off,
                shape: vec![n],
                text: Some(text),
            });
            off = off
                .checked_add(size)
                .filter(|o| *o <= i64::MAX as u64)
                .ok_or("the record is too large")?;
            continue;
        }
        let ty = element_of_descr(name, elem)?;
        let size = super::npy::checked_size(&shape, layout_of(&ty).size)
            .ok_or_else(|| format!("field `{name}`: sub-array shape {shape:?} is too large"))?;
        fields.push(RecordField {
            name: name.clone(),
            ty,
            offset: off,
            shape,
            text: None,
        });
        off = off
            .checked_add(size)
            .filter(|o| *o <= i64::MAX as u64)
            .ok_or("the record is too large")?;
    }
    record(&fields, itemsize.unwrap_or(off))
}

/// The `descr` list of a record struct, with padding entries where the layout has gaps (what
/// NumPy writes for a dtype made with `align=True`).
pub fn descr_of_record(st: &StructType) -> Option<Vec<DescrEntry>> {
    let fields = record_fields(st)?;
    let size = layout_of(&Type::Struct(Box::new(st.clone()))).size;
    let mut out = Vec::new();
    let mut at = 0u64;
    let pad = |n: u64| (String::new(), Descr::Type(format!("|V{n}")));
    for f in fields {
        if f.offset > at {
            out.push(pad(f.offset - at));
        }
        if let Some(text) = f.text {
            let n = f.shape.first().copied().unwrap_or(0);
            out.push((f.name.clone(), Descr::Type(text.typestr(n))));
            at = f.offset + layout_of(&f.ty).size * n;
            continue;
        }
        let d = match &f.ty {
            Type::Scalar(s) => Descr::Type(s.numpy_descr().to_string()),
            Type::Struct(inner) => Descr::Fields(descr_of_record(inner)?),
            _ => return None,
        };
        let count: u64 = f.shape.iter().product();
        let d = if f.shape.is_empty() {
            d
        } else {
            Descr::Sub(Box::new(d), f.shape.clone())
        };
        out.push((f.name.clone(), d));
        at = f.offset + layout_of(&f.ty).size * count;
    }
    if size > at {
        out.push(pad(size - at));
    }
    Some(out)
}

/// The Python literal of a `descr` list, as NumPy writes it in `.npy` headers.
fn descr_text(entries: &[DescrEntry]) -> String {
    fn ty(d: &Descr) -> String {
        match d {
            Descr::Type(t) => format!("'{t}'"),
            Descr::Fields(inner) => descr_text(inner),
            Descr::Sub(inner, shape) => {
                let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
                let comma = if dims.len() == 1 { "," } else { "" };
                format!("{}, ({}{comma})", ty(inner), dims.join(", "))
            }
        }
    }
    let items: Vec<String> = entries
        .iter()
        .map(|(n, d)| format!("('{n}', {})", ty(d)))
        .collect();
    format!("[{}]", items.join(", "))
}

/// A reader of the Python literal `[('x', '<f4'), ('', '|V4'), ('p', [...]), ...]`.
struct DescrParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl DescrParser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let hit = self.s.get(self.i) == Some(&c);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` {what} in descr", c as char))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.ws();
        let q = match self.s.get(self.i) {
            Some(q @ (b'\'' | b'"')) => *q,
            _ => return Err("expected a string in descr".into()),
        };
        let start = self.i + 1;
        let len = self.s[start..]
            .iter()
            .position(|c| *c == q)
            .ok_or("unterminated string in descr")?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn number(&mut self) -> Result<u64, String> {
        self.ws();
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| "expected a number in a sub-array shape".into())
    }

    /// A sub-array shape: `(3, 2)`, `(5,)` or a bare `5`.
    fn shape(&mut self) -> Result<Vec<u64>, String> {
        if !self.eat(b'(') {
            return Ok(vec![self.number()?]);
        }
        let mut dims = Vec::new();
        while !self.eat(b')') {
            dims.push(self.number()?);
            if !self.eat(b',') {
                self.expect(b')', "after a sub-array shape")?;
                break;
            }
        }
        Ok(dims)
    }

    fn list(&mut self, depth: usize) -> Result<Vec<DescrEntry>, String> {
        if depth > 16 {
            return Err("records nested too deeply".into());
        }
        self.expect(b'[', "at the start of a field list")?;
        let mut out = Vec::new();
        loop {
            if self.eat(b']') {
                return Ok(out);
            }
            self.expect(b'(', "before a field")?;
            let name = self.string()?;
            self.expect(b',', "after a field name")?;
            self.ws();
            let d = if self.s.get(self.i) == Some(&b'[') {
                Descr::Fields(self.list(depth + 1)?)
            } else {
                Descr::Type(self.string()?)
            };
            let mut d = d;
            if !self.eat(b')') {
                self.expect(b',', "after a field's type")?;
                if !self.eat(b')') {
                    // A third element is a sub-array's shape: `(3, 2)`, `(5,)` or `5`.
                    d = Descr::Sub(Box::new(d), self.shape()?);
                    self.eat(b',');
                    self.expect(b')', "after a field")?;
                }
            }
            out.push((name, d));
            self.eat(b',');
        }
    }
}

/// Reads the Python literal `[('x', '<f4'), ('', '|V4'), ...]` at the start of `text`.
fn parse_descr_list(text: &str) -> Result<Vec<DescrEntry>, String> {
    DescrParser {
        s: text.as_bytes(),
        i: 0,
    }
    .list(0)
}

/// A `descr` in the CUDA Array Interface's JSON form: `[["x", "<f4"], ["p", [...]], ...]`.
fn descr_of_json(items: &[serde_json::Value]) -> Result<Vec<DescrEntry>, String> {
    let mut out = Vec::new();
    for item in items {
        match item.as_array().map(Vec::as_slice) {
            Some([serde_json::Value::String(n), serde_json::Value::String(t)]) => {
                out.push((n.clone(), Descr::Type(t.clone())))
            }
            Some(
                [
                    serde_json::Value::String(n),
                    serde_json::Value::Array(inner),
                ],
            ) => out.push((n.clone(), Descr::Fields(descr_of_json(inner)?))),
            Some(
                [
                    serde_json::Value::String(n),
                    elem,
                    serde_json::Value::Array(dims),
                ],
            ) => {
                // A sub-array field: `["j", "<f4", [3, 2]]`.
                let d = match elem {
                    serde_json::Value::String(t) => Descr::Type(t.clone()),
                    serde_json::Value::Array(inner) => Descr::Fields(descr_of_json(inner)?),
                    _ => return Err(format!("descr entry {item} has no type")),
                };
                let shape = dims
                    .iter()
                    .map(serde_json::Value::as_u64)
                    .collect::<Option<Vec<u64>>>()
                    .ok_or_else(|| format!("descr entry {item}: the shape is not integers"))?;
                out.push((n.clone(), Descr::Sub(Box::new(d), shape)));
            }
            _ => {
                return Err(format!(
                    "descr entry {item} is not [name, typestr], [name, fields] or [name, \
                     typestr, shape]"
                ));
            }
        }
    }
    Ok(out)
}

/// The text dtype (`'<U12'`, `'|S12'`: an array of strings) of a `.npy` header, if that is
/// its `descr`.
pub fn text_descr(header: &str) -> Option<(Text, u64)> {
    let at = header.find("'descr':")?;
    let rest = header[at + 8..].trim_start().strip_prefix('\'')?;
    Text::of_typestr(&rest[..rest.find('\'')?])
}

/// An array of records read from (or to be written to) a `.npy` file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyRecords {
    /// The element type.
    pub record: StructType,
    /// Extent of each dimension.
    pub shape: Vec<u64>,
    /// True when stored in Fortran order.
    pub fortran_order: bool,
    /// The raw element bytes, in storage order.
    pub data: Vec<u8>,
}

impl NpyRecords {
    /// Parses a `.npy` file whose `descr` is a list of aligned fields (a NumPy dtype made
    /// with `align=True`, or packed fields that fall aligned), sub-arrays included.
    ///
    /// ```
    /// use pydevice::runtime::records::NpyRecords;
    /// let header = "{'descr': [('x', '<f4'), ('', '|V4'), ('w', '<f8')], \
    ///               'fortran_order': False, 'shape': (2,), }";
    /// let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    /// bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    /// bytes.extend_from_slice(header.as_bytes());
    /// bytes.extend_from_slice(&[0u8; 32]);
    /// let r = NpyRecords::parse(&bytes).unwrap();
    /// assert_eq!(r.record.name, "record_x_float32_w_float64");
    /// assert_eq!(NpyRecords::parse(&r.to_bytes()).unwrap(), r);
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<NpyRecords, NpyError> {
        let (header, hstart, hlen) = split_header(bytes)?;
        let at = header
            .find("'descr':")
            .ok_or_else(|| NpyError("header has no descr".into()))?;
        let record = if let Some((kind, n)) = text_descr(header) {
            crate::types::record::text_element(kind, n)
                .map_err(|e| NpyError(format!("text dtype: {e}")))?
        } else {
            let entries = parse_descr_list(header[at + 8..].trim_start())
                .map_err(|e| NpyError(format!("structured dtype: {e}")))?;
            record_of_descr(&entries, None)
                .map_err(|e| NpyError(format!("structured dtype: {e}")))?
        };
        let (shape, fortran_order) = header_shape(header)?;
        let size = layout_of(&Type::Struct(Box::new(record.clone()))).size;
        let data = &bytes[hstart + hlen..];
        let want = super::npy::checked_size(&shape, size)
            .filter(|w| *w <= data.len() as u64)
            .ok_or_else(|| NpyError("file is shorter than its shape says".into()))?;
        Ok(NpyRecords {
            record,
            shape,
            fortran_order,
            data: data[..want as usize].to_vec(),
        })
    }

    /// Strides in elements for the storage order (saturating for a shape too large to
    /// parse, which no parsed array has).
    pub fn element_strides(&self) -> Vec<i64> {
        super::npy::element_strides(&self.shape, self.fortran_order)
    }

    /// The array type of a kernel parameter that takes this array.
    pub fn array_type(&self) -> Type {
        let layout = if self.fortran_order && self.shape.len() > 1 {
            crate::types::Layout::F
        } else {
            crate::types::Layout::C
        };
        Type::array_of(
            &Type::Struct(Box::new(self.record.clone())),
            self.shape.len().clamp(1, 255) as u8,
            layout,
        )
        .unwrap_or(Type::None)
    }

    /// The bytes of a version-1 `.npy` file with the record's `descr` (padding included; a
    /// text dtype's own type string for an array of strings).
    pub fn to_bytes(&self) -> Vec<u8> {
        let descr = match self.record.bare_text() {
            Some((kind, n)) => format!("'{}'", kind.typestr(n)),
            None => descr_text(&descr_of_record(&self.record).unwrap_or_default()),
        };
        super::npy::npy_bytes(&descr, &self.shape, self.fortran_order, &self.data)
    }
}

/// The record struct a CUDA Array Interface describes: `typestr` `|Vn` with a `descr` list
/// of fields (JSON: `[["x", "<f4"], ["", "|V4"], ...]`). `None` when it is not structured.
pub fn cai_record(cai: &CudaArrayInterface) -> Option<Result<StructType, RuntimeError>> {
    let t = cai.typestr.trim_start_matches(['<', '|', '=']);
    let size: u64 = t.strip_prefix('V')?.parse().ok()?;
    let bad = |why: String| {
        RuntimeError::Argument(format!(
            "__cuda_array_interface__ structured dtype is not supported: {why}"
        ))
    };
    let Some(serde_json::Value::Array(items)) = &cai.descr else {
        return Some(Err(bad(format!(
            "typestr `{}` needs a `descr` list of fields",
            cai.typestr
        ))));
    };
    let entries = match descr_of_json(items) {
        Ok(e) => e,
        Err(e) => return Some(Err(bad(e))),
    };
    Some(record_of_descr(&entries, Some(size)).map_err(bad))
}

/// The kernel argument for a record-array parameter from a CUDA Array Interface: the
/// `descr` must give the parameter's struct (same fields, types and layout); byte strides
/// are divided by the record size.
pub fn cai_record_arg(
    cai: &CudaArrayInterface,
    param: &ParamAbi,
) -> Result<ArgValue, RuntimeError> {
    let Some(at) = param.ty.as_array() else {
        return Err(RuntimeError::Argument(format!(
            "`{}` is a {}, not an array, but an array was given",
            param.name, param.ty
        )));
    };
    let DType::Struct(want) = &at.dtype else {
        return Err(RuntimeError::Argument(format!(
            "`{}` is {}, but the array holds records",
            param.name, param.ty
        )));
    };
    let got = match cai_record(cai) {
        Some(r) => r?,
        None => {
            return Err(RuntimeError::Argument(format!(
                "`{}` is an array of records ({}), but the array's typestr is `{}`",
                param.name, want.name, cai.typestr
            )));
        }
    };
    if got.fields != want.fields || got.record != want.record {
        return Err(RuntimeError::Argument(format!(
            "`{}` holds {} records, but the array's fields are {}",
            param.name, want.name, got.name
        )));
    }
    let l = layout_of(&Type::Struct(want.clone()));
    if l.size != layout_of(&Type::Struct(Box::new(got))).size {
        return Err(RuntimeError::Argument(format!(
            "`{}`: the array's record size differs from {}'s layout",
            param.name, want.name
        )));
    }
    if cai.version > 3 || cai.mask.as_ref().is_some_and(|m| !m.is_null()) {
        return Err(RuntimeError::Argument(
            "unsupported CUDA Array Interface version or a mask".into(),
        ));
    }
    let size = l.size as i64;
    let strides = match &cai.strides {
        None => c_strides(&cai.shape),
        Some(bytes) => {
            let mut out = Vec::new();
            for (d, &b) in bytes.iter().enumerate() {
                if b % size != 0 {
                    return Err(RuntimeError::Argument(format!(
                        "stride {b} bytes of dimension {d} is not a multiple of the record size \
                         ({size} bytes); kernels index whole records"
                    )));
                }
                out.push(b / size);
            }
            out
        }
    };
    if strides.len() != cai.shape.len() || cai.shape.len() != usize::from(at.ndim) {
        return Err(RuntimeError::Argument(format!(
            "`{}` is {} ({} dimensions), but the array has shape {:?}",
            param.name, param.ty, at.ndim, cai.shape
        )));
    }
    if cai.data.0 == 0 && !cai.shape.contains(&0) {
        return Err(RuntimeError::Argument(
            "__cuda_array_interface__ has a NULL data pointer for a non-empty array".into(),
        ));
    }
    let arg = ArgValue::Array(ArrayArg {
        data: cai.data.0,
        shape: cai.shape.clone(),
        strides,
    });
    // The unit-stride promise of a `::1` parameter, checked as for arrays of numbers.
    crate::abi::pack(&param.ty, &arg)
        .map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", param.name)))?;
    Ok(arg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_fields_and_text_arrays_round_trip() {
        // A record with `<U3` and `|S2` fields: code-unit sub-arrays, written back as text.
        let e = |n: &str, t: &str| (n.to_string(), Descr::Type(t.to_string()));
        let fields = [e("x", "<i4"), e("u", "<U3"), e("s", "|S2"), e("", "|V2")];
        let r = record_of_descr(&fields, Some(20)).unwrap();
        assert_eq!(r.subarray_shape(1), &[3]);
        assert_eq!(r.field_text(1), Some(Text::Unicode));
        assert_eq!(r.field_text(2), Some(Text::Bytes));
        assert_eq!(descr_of_record(&r).unwrap(), fields.to_vec());
        assert!(record_of_descr(&[e("t", ">U3")], None).is_err());
        // An array of NumPy's `<U2` itself: its own descr, not a list of fields.
        let data: Vec<u8> = [65u32, 66, 67, 0]
            .iter()
            .flat_map(|c| c.to_le_bytes())
            .collect();
        let bytes = super::super::npy::npy_bytes("'<U2'", &[2], false, &data);
        let head = String::from_utf8_lossy(&bytes[..64]).into_owned();
        assert_eq!(text_descr(&head), Some((Text::Unicode, 2)));
        let recs = NpyRecords::parse(&bytes).unwrap();
        assert_eq!(recs.record.bare_text(), Some((Text::Unicode, 2)));
        assert_eq!(recs.data, data);
        assert_eq!(recs.to_bytes(), bytes);
    }

    #[test]
    fn aligned_descr_round_trips_and_packed_is_refused() {
        let e = |n: &str, t: &str| (n.to_string(), Descr::Type(t.to_string()));
        let aligned = [e("a", "|i1"), e("", "|V3"), e("b", "<f4"), e("c", "<f8")];
        let r = record_of_descr(&aligned, Some(16)).unwrap();
        assert_eq!(descr_of_record(&r).unwrap(), aligned.to_vec());
        let packed = [e("a", "|i1"), e("b", "<f4")];
        let err = record_of_descr(&packed, Some(5)).unwrap_err();
        assert!(err.contains("align=True"), "{err}");
        assert_eq!(
            parse_descr_list("[('a', '<f4', (2,))]").unwrap(),
            vec![(
                "a".to_string(),
                Descr::Sub(Box::new(Descr::Type("<f4".into())), vec![2])
            )]
        );
        assert_eq!(
            parse_descr_list("[('x', '<f4'), (\"\", '|V4')]").unwrap(),
            vec![e("x", "<f4"), e("", "|V4")]
        );
    }

    /// The header NumPy 2.4 writes for `np.save` of
    /// `np.dtype([('a','i1'),('b','<f8'),('c','u2')], align=True)` with shape (2, 2).
    #[test]
    fn reads_what_numpy_writes() {
        let header = "{'descr': [('a', '|i1'), ('', '|V7'), ('b', '<f8'), ('c', '<u2'), \
                      ('', '|V6')], 'fortran_order': False, 'shape': (2, 2), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend((0..4 * 24).map(|i| i as u8));
        let r = NpyRecords::parse(&bytes).unwrap();
        assert_eq!(r.record.name, "record_a_int8_b_float64_c_uint16");
        assert_eq!((r.shape.clone(), r.data.len()), (vec![2, 2], 96));
        assert_eq!(r.element_strides(), vec![2, 1]);
        let again = NpyRecords::parse(&r.to_bytes()).unwrap();
        assert_eq!(again, r);
        assert!(String::from_utf8_lossy(&r.to_bytes()).contains(
            "'descr': [('a', '|i1'), ('', '|V7'), ('b', '<f8'), ('c', '<u2'), ('', '|V6')]"
        ));
    }

    /// NumPy 2.4's header for `np.dtype([('id', 'i1'), ('pos', np.dtype([('x', '<f4'),
    /// ('y', '<f8')], align=True)), ('k', '<u2')], align=True)`.
    #[test]
    fn nested_records() {
        let text = "[('id', '|i1'), ('', '|V7'), ('pos', [('x', '<f4'), ('', '|V4'), \
                    ('y', '<f8')]), ('k', '<u2'), ('', '|V6')]";
        let entries = parse_descr_list(text).unwrap();
        let r = record_of_descr(&entries, Some(32)).unwrap();
        assert_eq!(
            r.name,
            "record_id_int8_pos_record_x_float32_y_float64_k_uint16"
        );
        assert_eq!(descr_text(&descr_of_record(&r).unwrap()), text);
        let l = layout_of(&Type::Struct(Box::new(r)));
        assert_eq!(
            (
                l.size,
                l.fields.iter().map(|f| f.offset).collect::<Vec<_>>()
            ),
            (32, vec![0, 8, 24])
        );
        let json = serde_json::json!([
            ["id", "|i1"],
            ["", "|V7"],
            ["pos", [["x", "<f4"], ["", "|V4"], ["y", "<f8"]]],
            ["k", "<u2"],
            ["", "|V6"]
        ]);
        let serde_json::Value::Array(items) = json else {
            panic!("not a list")
        };
        assert_eq!(descr_of_json(&items).unwrap(), entries);
    }

    /// The header NumPy 2 writes for `np.save` of
    /// `np.zeros(2, np.dtype([('a','f8'),('b','i4'),('c','c8'),('d','u1',(5,))], align=True))`
    /// (numba-cuda's `test_record_dtype` record): fields at 0, 8, 12 and 20, itemsize 32.
    #[test]
    fn subarray_fields_round_trip() {
        let header = "{'descr': [('a', '<f8'), ('b', '<i4'), ('c', '<c8'), ('d', '|u1', (5,)), \
                      ('', '|V7')], 'fortran_order': False, 'shape': (2,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend((0..2 * 32).map(|i| i as u8));
        let r = NpyRecords::parse(&bytes).unwrap();
        let l = layout_of(&Type::Struct(Box::new(r.record.clone())));
        assert_eq!(
            (
                l.size,
                l.fields.iter().map(|f| f.offset).collect::<Vec<_>>()
            ),
            (32, vec![0, 8, 12, 20])
        );
        assert_eq!(r.record.subarray_shape(3), &[5]);
        assert_eq!(NpyRecords::parse(&r.to_bytes()).unwrap(), r);
        assert!(String::from_utf8_lossy(&r.to_bytes()).contains(
            "'descr': [('a', '<f8'), ('b', '<i4'), ('c', '<c8'), ('d', '|u1', (5,)), ('', '|V7')]"
        ));
        // 2-D, packed: np.dtype([('i', np.int32), ('j', np.float32, (3, 2))]), itemsize 28.
        let entries = parse_descr_list("[('i', '<i4'), ('j', '<f4', (3, 2))]").unwrap();
        let r = record_of_descr(&entries, Some(28)).unwrap();
        assert_eq!(r.subarray_shape(1), &[3, 2]);
        assert_eq!(
            descr_text(&descr_of_record(&r).unwrap()),
            "[('i', '<i4'), ('j', '<f4', (3, 2))]"
        );
        // The CUDA Array Interface's JSON form of the same.
        let json = serde_json::json!([["i", "<i4"], ["j", "<f4", [3, 2]]]);
        let serde_json::Value::Array(items) = json else {
            panic!("not a list")
        };
        assert_eq!(descr_of_json(&items).unwrap(), entries);
        // Other types stay unsupported (text fields: `text_fields_and_text_arrays_round_trip`).
        let s = parse_descr_list("[('x', '<i4'), ('y', '|O8')]").unwrap();
        assert!(record_of_descr(&s, None).unwrap_err().contains("|O8"));
    }

    #[test]
    fn cai_descr_gives_the_record() {
        let cai = CudaArrayInterface::from_json(
            r#"{"shape": [3], "typestr": "|V16", "data": [4096, false], "version": 3,
                "descr": [["x", "<f4"], ["", "|V4"], ["w", "<f8"]]}"#,
        )
        .unwrap();
        let r = cai_record(&cai).unwrap().unwrap();
        let param = ParamAbi {
            name: "recs".into(),
            ty: Type::array_of(
                &Type::Struct(Box::new(r.clone())),
                1,
                crate::types::Layout::C,
            )
            .unwrap(),
            layout: layout_of(&Type::None),
        };
        let ArgValue::Array(a) = cai_record_arg(&cai, &param).unwrap() else {
            panic!("not an array")
        };
        assert_eq!((a.data, a.shape, a.strides), (4096, vec![3], vec![1]));
        let wrong = CudaArrayInterface {
            descr: Some(serde_json::json!([["x", "<f4"], ["", "|V4"], ["v", "<f8"]])),
            ..cai
        };
        assert!(cai_record_arg(&wrong, &param).is_err());

        // The same records as bytes (what DLPack can carry): shape (3, 16) of uint8.
        let bytes =
            super::super::DeviceArray::contiguous(8192, crate::types::Scalar::UInt8, &[3, 16]);
        let ArgValue::Array(b) = bytes.to_arg(&param).unwrap() else {
            panic!("not an array")
        };
        assert_eq!((b.data, b.shape, b.strides), (8192, vec![3], vec![1]));
        let short =
            super::super::DeviceArray::contiguous(8192, crate::types::Scalar::UInt8, &[3, 12]);
        assert!(short.to_arg(&param).is_err());
    }
}
