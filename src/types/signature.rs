//! Parsing argument types written in Numba's notation: `float32[:]`, `float64[:, ::1]`,
//! `int32`, `(int32, float32)`, and whole signatures such as `void(float32[:], int32)`.

use super::{Layout, Scalar, Type};

/// Parses a comma-separated list of argument types, optionally wrapped as a whole Numba
/// signature `ret(args)`; the return type, if any, must be `void`/`none` for kernels and is
/// returned beside the arguments.
///
/// ```
/// use pydevice::types::{signature::parse_signature, Type, Scalar, Layout};
/// let (args, ret) = parse_signature("void(float32[::1], int32)").unwrap();
/// assert_eq!(args, vec![Type::array(Scalar::Float32, 1, Layout::C), Type::Scalar(Scalar::Int32)]);
/// assert_eq!(ret, Some(Type::None));
/// ```
pub fn parse_signature(text: &str) -> Result<(Vec<Type>, Option<Type>), String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
        records: 0,
    };
    p.ws();
    // A whole signature: NAME '(' ... ')'
    let save = p.i;
    if let Some(name) = p.ident().filter(|n| n != "Record") {
        p.ws();
        if p.eat(b'(') {
            let ret = if matches!(name.as_str(), "void" | "none" | "None") {
                Type::None
            } else {
                p.i = save;
                let t = p.ty()?;
                p.ws();
                p.expect(b'(')?;
                t
            };
            let args = p.list(b')')?;
            p.expect(b')')?;
            p.end()?;
            validate(&args)?;
            return Ok((args, Some(ret)));
        }
    }
    p.i = save;
    let args = p.list(0)?;
    p.end()?;
    validate(&args)?;
    Ok((args, None))
}

fn validate(types: &[Type]) -> Result<(), String> {
    types.iter().try_for_each(Type::validate)
}

/// Parses one type in Numba's notation.
pub fn parse_type(text: &str) -> Result<Type, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
        records: 0,
    };
    p.ws();
    let t = p.ty()?;
    p.end()?;
    t.validate()?;
    Ok(t)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Tuples and records open around the current position: bounded by
    /// [`super::MAX_TYPE_DEPTH`], so that deep input is an error, not a stack overflow.
    depth: usize,
    /// Records open around the current position (each costs more stack than a tuple).
    records: usize,
}

/// The deepest nesting of `Record(...)` accepted (as for `.npy` structured dtypes).
const MAX_RECORD_DEPTH: usize = 16;

impl Parser<'_> {
    /// Enters a tuple or record.
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > super::MAX_TYPE_DEPTH {
            return Err(format!(
                "types nest deeper than {} levels at column {}",
                super::MAX_TYPE_DEPTH,
                self.i + 1
            ));
        }
        Ok(())
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` at column {}", c as char, self.i + 1))
        }
    }

    fn end(&mut self) -> Result<(), String> {
        self.ws();
        if self.i == self.s.len() {
            Ok(())
        } else {
            Err(format!("unexpected text at column {}", self.i + 1))
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.ws();
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    /// Types separated by commas up to (not consuming) `close`, or the end when `close` is 0.
    fn list(&mut self, close: u8) -> Result<Vec<Type>, String> {
        let mut out = Vec::new();
        self.ws();
        if self.s.get(self.i).copied() == Some(close) || (close == 0 && self.i == self.s.len()) {
            return Ok(out);
        }
        loop {
            out.push(self.ty()?);
            if !self.eat(b',') {
                return Ok(out);
            }
            self.ws();
            if self.s.get(self.i).copied() == Some(close) {
                return Ok(out);
            }
        }
    }

    fn ty(&mut self) -> Result<Type, String> {
        if self.eat(b'(') {
            self.enter()?;
            let elems = self.list(b')')?;
            self.expect(b')')?;
            self.depth -= 1;
            return Ok(Type::Tuple(elems));
        }
        let col = self.i + 1;
        let name = self
            .ident()
            .ok_or_else(|| format!("expected a type at column {col}"))?;
        let elem = match name.as_str() {
            "int" => Type::Scalar(Scalar::Int32),
            "float" => Type::Scalar(Scalar::Float32),
            "Record" if self.eat(b'(') => Type::Struct(Box::new(self.record()?)),
            n => match super::vector_name(n) {
                Some((elem, len)) => Type::Vector { elem, len },
                None => {
                    Type::Scalar(Scalar::from_name(n).ok_or_else(|| format!("unknown type `{n}`"))?)
                }
            },
        };
        if !self.eat(b'[') {
            return Ok(elem);
        }
        // Dimensions: `:` or `::1`, separated by commas.
        let mut contiguous = Vec::new();
        loop {
            self.expect(b':')?;
            if self.eat(b':') {
                self.ws();
                if self.s.get(self.i) == Some(&b'1') {
                    self.i += 1;
                    contiguous.push(true);
                } else {
                    return Err(format!("expected `::1` at column {}", self.i + 1));
                }
            } else {
                contiguous.push(false);
            }
            if !self.eat(b',') {
                break;
            }
        }
        self.expect(b']')?;
        let n = contiguous.len();
        let layout = match contiguous.iter().position(|&c| c) {
            None => Layout::Any,
            Some(p) if contiguous.iter().filter(|&&c| c).count() > 1 => {
                return Err(format!(
                    "only one dimension can be `::1` (found at {p} and more)"
                ));
            }
            Some(p) if p + 1 == n => Layout::C,
            Some(0) => Layout::F,
            Some(_) => return Err("`::1` must be the first or last dimension".into()),
        };
        if n > 255 {
            return Err("too many dimensions".into());
        }
        Type::array_of(&elem, n as u8, layout).ok_or_else(|| format!("no arrays of {elem}"))
    }

    /// A decimal number.
    fn number(&mut self) -> Result<u64, String> {
        self.ws();
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("expected a number at column {}", start + 1))
    }

    /// The inside of numba's `Record(x[type=float32;offset=0],y[type=int32;offset=4];8;True)`
    /// (what `str(numba.from_dtype(dtype))` prints), after `Record(`.
    fn record(&mut self) -> Result<crate::types::StructType, String> {
        self.enter()?;
        self.records += 1;
        if self.records > MAX_RECORD_DEPTH {
            return Err(format!(
                "records nest deeper than {MAX_RECORD_DEPTH} levels at column {}",
                self.i + 1
            ));
        }
        let r = self.record_fields();
        self.records -= 1;
        self.depth -= 1;
        r
    }

    fn record_fields(&mut self) -> Result<crate::types::StructType, String> {
        use crate::types::record::{RecordField, record};
        let mut fields = Vec::new();
        loop {
            let col = self.i + 1;
            let name = self
                .ident()
                .ok_or_else(|| format!("expected a field name at column {col}"))?;
            self.expect(b'[')?;
            if self.ident().as_deref() != Some("type") {
                return Err(format!("expected `type=` at column {}", self.i + 1));
            }
            self.expect(b'=')?;
            let col = self.i + 1;
            if self.s.get(self.i) == Some(&b'[') {
                // numba's `[char x 12]` / `[unichr x 12]`: a string field.
                return Err(format!(
                    "field `{name}` is a string; record fields must be numbers, records or \
                     sub-arrays of those"
                ));
            }
            let t = self
                .ident()
                .ok_or_else(|| format!("expected a type at column {col}"))?;
            let (t, shape, nested) = if t == "nestedarray" && self.eat(b'(') {
                // A sub-array field: `nestedarray(float32, (3, 2))`.
                let col = self.i + 1;
                let elem = self
                    .ident()
                    .ok_or_else(|| format!("expected a type at column {col}"))?;
                let nested = if elem == "Record" && self.eat(b'(') {
                    Some(Type::Struct(Box::new(self.record()?)))
                } else {
                    None
                };
                self.expect(b',')?;
                self.expect(b'(')?;
                let mut shape = Vec::new();
                while !self.eat(b')') {
                    shape.push(self.number()?);
                    if !self.eat(b',') {
                        self.expect(b')')?;
                        break;
                    }
                }
                self.expect(b')')?;
                (elem, shape, nested)
            } else {
                (t, Vec::new(), None)
            };
            let ty = if let Some(n) = nested {
                n
            } else if t == "Record" && self.eat(b'(') {
                Type::Struct(Box::new(self.record()?))
            } else {
                Type::Scalar(
                    Scalar::from_name(&t)
                        .ok_or_else(|| format!("field `{name}`: unknown type `{t}`"))?,
                )
            };
            self.expect(b';')?;
            if self.ident().as_deref() != Some("offset") {
                return Err(format!("expected `offset=` at column {}", self.i + 1));
            }
            self.expect(b'=')?;
            let offset = self.number()?;
            self.expect(b']')?;
            fields.push(RecordField {
                name,
                ty,
                offset,
                shape,
            });
            if !self.eat(b',') {
                break;
            }
        }
        self.expect(b';')?;
        let size = self.number()?;
        if self.eat(b';') {
            self.ident();
        }
        self.expect(b')')?;
        record(&fields, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numba_notation() {
        let (args, ret) = parse_signature("float32[:], float64[:, :], int32[::1], uint8").unwrap();
        assert_eq!(ret, None);
        assert_eq!(
            args,
            vec![
                Type::array(Scalar::Float32, 1, Layout::Any),
                Type::array(Scalar::Float64, 2, Layout::Any),
                Type::array(Scalar::Int32, 1, Layout::C),
                Type::Scalar(Scalar::UInt8),
            ]
        );
        assert_eq!(
            parse_type("f8[::1, :]").unwrap(),
            Type::array(Scalar::Float64, 2, Layout::F)
        );
        assert_eq!(
            parse_signature("float32(float32, (int32, int64))").unwrap(),
            (
                vec![
                    Type::Scalar(Scalar::Float32),
                    Type::Tuple(vec![Scalar::Int32.into(), Scalar::Int64.into()])
                ],
                Some(Type::Scalar(Scalar::Float32))
            )
        );
        assert_eq!(parse_signature("").unwrap(), (vec![], None));
        assert_eq!(
            parse_signature("void()").unwrap(),
            (vec![], Some(Type::None))
        );
    }

    #[test]
    fn parses_arrays_of_vectors() {
        for text in ["float8e4m3x4[::1]", "float32x3[:, :]", "uint8x2[::1, :]"] {
            let t = parse_type(text).unwrap();
            assert_eq!(t.to_string(), text);
        }
        let t = parse_type("float8e5m2x3[:]").unwrap();
        let Type::Array(a) = &t else { panic!("{t:?}") };
        assert_eq!(
            a.dtype.ty(),
            Type::Vector {
                elem: Scalar::Float8E5M2,
                len: 3
            }
        );
        assert!(parse_type("float32x5[:]").is_err());
    }

    #[test]
    fn rejects_bad_notation() {
        assert!(parse_type("float33").is_err());
        assert!(parse_type("float32[:").is_err());
        assert!(parse_type("float32[:, ::1, :]").is_err());
        assert!(parse_type("float32[::2]").is_err());
        assert!(parse_signature("int32 int32").is_err());
        // Packed records are not C layout.
        assert!(
            parse_type("Record(a[type=int8;offset=0],b[type=float32;offset=1];5;False)[:]")
                .is_err()
        );
    }

    #[test]
    fn parses_numba_records() {
        let t = parse_type("Record(x[type=float32;offset=0],n[type=int64;offset=8];16;True)[::1]")
            .unwrap();
        assert_eq!(t.to_string(), "record_x_float32_n_int64[::1]");
        let nested = parse_type(
            "Record(id[type=int8;offset=0],pos[type=Record(x[type=float32;offset=0],\
             y[type=float32;offset=4];8;True);offset=4];12;True)",
        )
        .unwrap();
        assert_eq!(
            nested.to_string(),
            "record_id_int8_pos_record_x_float32_y_float32"
        );
    }

    #[test]
    fn parses_numba_nested_arrays() {
        // `str(numba.from_dtype(np.dtype([('i', np.int32), ('j', np.float32, (3, 2))])))`.
        let t = parse_type(
            "Record(i[type=int32;offset=0],j[type=nestedarray(float32, (3, 2));offset=4];28;False)",
        )
        .unwrap();
        let Type::Struct(st) = &t else { panic!("{t}") };
        assert_eq!(st.name, "record_i_int32_j_float32_3x2");
        assert_eq!(st.subarray_shape(1), &[3, 2]);
        let one = parse_type(
            "Record(g[type=int32;offset=0],h[type=nestedarray(float32, (2,));offset=4];12;True)",
        )
        .unwrap();
        assert_eq!(one.to_string(), "record_g_int32_h_float32_2");
        // numba-cuda test_const_string's record: strings are refused with the field named.
        let e = parse_type(
            "Record(x[type=float32;offset=0],y[type=[char x 12];offset=4];16;False)[::1]",
        )
        .unwrap_err();
        assert!(e.contains("`y` is a string"), "{e}");
    }
}
